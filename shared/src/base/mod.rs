//! Infrastructure: errors, ids, time, paths, files, config, commands, model calls,
//! JSON-RPC framing, logging and telemetry. Uses nothing else in the crate.

pub mod base64;
pub mod command;
pub mod config;
pub mod error;
pub mod fsutil;
pub mod hint;
pub mod ids;
pub(crate) mod json_scan;
pub mod logging;
pub mod model;
pub mod paths;
pub mod rpc;
pub mod shell;
pub mod shutdown;
pub mod telemetry;
pub mod testing;
pub mod text;
pub mod time;
