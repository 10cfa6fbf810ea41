//! What two Engram binaries need that does IO, in four layers, each a
//! folder that may use only the layers below it:
//!
//! - [`base`]: infrastructure (errors, ids, time, paths, files, config,
//!   commands, JSON-RPC framing, logging, telemetry);
//! - [`storage`]: the event schema, the tape log, the SQLite projection's
//!   store, redaction, forgetting, sharing, checkpoint files;
//! - [`domain`]: what the events mean: environment and tags, memories,
//!   the knowledge graph, provenance, ranking, injection, hooks, training data;
//! - [`projection`]: which domain module applies each kind of event, and the
//!   journals and replays that apply with it.

pub mod base;
pub mod domain;
pub mod projection;
pub mod storage;
