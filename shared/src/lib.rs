//! Infrastructure shared by the Engram binaries: the event schema, the tape
//! log, the SQLite projection, JSON-RPC framing, configuration and paths.

pub mod autotrain;
pub mod base64;
pub mod command;
pub mod config;
pub mod env;
pub mod error;
pub mod event;
pub mod forget;
pub mod fsutil;
pub mod hint;
pub mod hook;
pub mod ids;
pub mod injection;
pub mod journal;
mod json_scan;
pub mod knowledge;
pub mod logging;
pub mod memory_ops;
pub mod models;
pub mod paths;
pub mod provenance;
pub mod rank;
pub mod redact;
pub mod rpc;
pub mod share;
pub mod shell;
pub mod shutdown;
pub mod store;
pub mod tape;
pub mod telemetry;
pub mod testing;
pub mod time;
pub mod train_data;
