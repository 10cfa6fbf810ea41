//! The domain: what the events mean. The environment and tags, memories,
//! the knowledge graph, provenance, ranking, injection, hooks and training
//! data. Uses [`crate::base`] and [`crate::storage`].

pub mod env;
pub mod hook;
pub mod injection;
pub mod knowledge;
pub mod memory;
pub mod moment;
pub mod provenance;
pub mod rank;
pub mod session;
pub mod training;
