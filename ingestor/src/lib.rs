//! The Engram ingestor: harness adapters that turn agent session logs into
//! redacted tape events, discovery of those logs, deterministic extraction of
//! memories with near-duplicate merging, and the `engram-ingestor` commands
//! built on them (scan, memory, replay, tapes, compact).
//!
//! The adapters and extraction are pure: they take bytes (or, for whole-file
//! formats, a path they read) and return events plus diagnostics and a resume
//! state, or memory events. Only [`scan`], [`memories`] and [`tapes`] touch
//! the journal (tape log and projection); [`cli`] maps the command line onto
//! them and the binary is a thin `main`.
//!
//! - [`adapter`]: parse context and output, JSONL line handling, the event
//!   emitter (derived ids, redaction), diagnostics.
//! - [`adapters`]: Claude Code, Codex CLI, Gemini CLI, OpenCode.
//! - [`discover`]: where the logs are, from explicit roots.
//! - [`redact`]: secret redaction, path exclusion, size caps.
//! - [`patch`]: `apply_patch`, unified diff and `structuredPatch` hunks.
//! - [`extract`]: friction-moment memory extraction; [`dedup`]: merging
//!   near-duplicates at write time; [`dedup_run`]: seed 000's dedup pipeline;
//!   [`external`]: the external extractor's JSON contract; [`runner`]: asking
//!   the extractor model; [`probe`]: `extractor test`; [`spans`]: the spans it answered for or must be asked again.
//! - [`hook`]: the write-side hooks and their detached ingestion worker;
//!   [`install`]: wiring hooks and the MCP server into Claude Code and Codex,
//!   [`plugin`]: the Claude Code plugin with seed 004's skills, and
//!   [`schedule`]: a timer for the trainer;
//!   [`quickstart`]: the first run, on the user's history or [`demo`]'s corpus.
//! - [`record`]: `record` (a command or a piped transcript as a session) and
//!   `link` (an agent's `span.link`).

pub mod adapter;
pub mod adapters;
pub mod audit;
pub mod cli;
pub mod dedup;
pub mod dedup_run;
pub mod demo;
pub mod demo_data;
pub mod discover;
pub mod error;
pub mod external;
pub mod extract;
pub mod hook;
pub mod install;
pub mod memories;
pub mod patch;
pub mod plugin;
pub mod probe;
pub mod quickstart;
pub mod record;
pub mod redact;
pub mod render;
pub mod runner;
pub mod scan;
pub mod schedule;
pub mod sentences;
pub mod spans;
pub mod tapes;

pub use error::Error;
