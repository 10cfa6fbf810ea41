//! Operational telemetry that is not state: how long hooks and rankings take,
//! and the warnings and errors the processes logged. It lives in the data
//! home's `logs/` (never on the tapes: replay must not depend on it, and it
//! may be lost), written by the processes that do the work and read by the
//! web UI's diagnostics (`engram-scorer web`).
//!
//! * [`latency`] — one JSON line per timed operation in `logs/latency.jsonl`
//!   (rotated at 1 MiB), and the percentiles and histograms read from it.
//! * [`errors`] — the last warnings and errors of `logs/hooks.log` and
//!   `logs/trainer.log`.

pub mod errors;
pub mod latency;
