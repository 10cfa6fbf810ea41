//! Infrastructure shared by the Engram binaries: the event schema, the tape
//! log, the SQLite projection, JSON-RPC framing, configuration and paths.

pub mod base64;
pub mod event;
pub mod ids;
pub mod testing;
pub mod time;
