//! `engram-scorer`: the predictor sidecar a daemon spawns, speaking JSON-RPC
//! 2.0 over stdin/stdout, one object per line.
//!
//! It is a drop-in replacement for Signet's `signet-predictor` (same methods,
//! field names, JSON types and flags: `status`, `score`, `train`,
//! `train_from_db`, `save_checkpoint`, `--native-dim`, `--checkpoint`) without
//! its faults, and serves Engram's own ranking pipeline (`rank`, `reload`,
//! `shutdown`). The protocol is described, with examples, in
//! `docs/protocol.md`.
//!
//! # Codemap
//!
//! | module | what it holds |
//! |---|---|
//! | [`server`] | [`run`] / [`serve`]: the main loop, dispatch, hot reload, the drain path |
//! | [`protocol`] | [`protocol::Request`] (one variant per method), params and results |
//! | [`score_line`] | the fast reader of `score` request lines (most of a request is numbers) |
//! | [`serving`] | the serving weights behind an `Arc` ([`serving::Slot`]), `models/current` watching |
//! | [`signet`] | Signet's 17 features → Engram signals, list building for `score`/`train` |
//! | [`training`] | the training thread: `train`, `train_from_db` with gates, checkpoint saving |
//! | [`db`] | training lists from a Signet `memories.db` or an Engram projection |
//! | [`native`] | `rank` against the data home (journal, configuration) |
//! | [`recorder`] | the thread that records served rankings after `rank` answers (group commit) |
//! | [`fixtures`] | synthetic Signet databases for tests and benchmarks |
//! | [`hook`] | `engram-scorer hook …`: the agents' read-side hooks (injection) |
//! | [`mcp`] | `engram-scorer mcp`: the MCP server and its memory tools |
//! | [`search`] | memory search (CLI `search`, MCP `memory_search`), recorded |
//! | [`cli`] | `engram-scorer search` and `context` on the command line |
//! | [`web`] | `engram-scorer web`: the local web UI and REST API |
//! | [`provenance`] | `engram-scorer explain` and `view`: why a span of code exists |
//! | [`error`] | [`Error`] and its JSON-RPC codes |
//!
//! **Architecture invariants.** Stdout carries only protocol lines; logs go to
//! stderr. Serving weights are immutable; training publishes new ones by
//! swapping an `Arc`. State changes only through the journal (`rank`'s
//! recorder thread appends `ranking.served`). One bad request never ends the
//! process.

pub mod cli;
pub mod db;
pub mod error;
pub mod fixtures;
pub mod hook;
pub mod mcp;
pub mod native;
pub mod protocol;
pub mod provenance;
pub mod recorder;
pub mod score_line;
pub mod search;
pub mod server;
pub mod serving;
pub mod signet;
pub mod training;
pub mod web;

pub use error::{Error, Result};
pub use server::{ServeOptions, run, serve};
