//! Storage: the event schema, the tape log, the SQLite projection's store,
//! redaction, forgetting, sharing and checkpoint files. Uses [`crate::base`].

pub mod event;
pub mod forget;
pub mod journal;
pub mod models;
pub mod redact;
pub mod share;
pub mod store;
pub mod tape;
