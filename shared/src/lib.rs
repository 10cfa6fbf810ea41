//! Infrastructure shared by the Engram binaries: the event schema, the tape
//! log, the SQLite projection, JSON-RPC framing, configuration and paths.

pub mod base64;
pub mod error;
pub mod event;
pub mod fsutil;
pub mod ids;
pub mod journal;
pub mod paths;
pub mod store;
pub mod tape;
pub mod testing;
pub mod time;
