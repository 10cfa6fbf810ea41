//! `engram-trainer`: turns what happened in sessions into labels, compares the
//! learned predictor with the baseline, trains it behind validation gates,
//! promotes new weights atomically, and reports.
//!
//! # Codemap
//!
//! | module | what it holds |
//! |---|---|
//! | [`terms`] | distinctive terms of a memory (paths, identifiers, quantities, words) and text indexes |
//! | [`continuity`] | the deterministic continuity scorer: evidence of use and need → relevance, labels, score, confidence |
//! | [`judge`] | the optional external judge command (JSON in, JSON out, timeout) |
//! | [`sessions`] | finding ended, unscored sessions and reading them from the tapes and the projection |
//! | [`compare`] | NDCG@10 of both rankers over a session's labelled pools |
//! | [`tracker`] | success-rate EMA, cold start, early-active ramp, α, drift |
//! | [`canary`] | canary membership, the frozen set, dataset lists, evaluation metrics |
//! | [`training`] | data selection, training within the budget, the gates, atomic promotion |
//! | [`history`] | `engram-trainer history`: recorded sessions replayed through the read side, labelled (told twice, continuity) |
//! | [`run`] | `engram-trainer run`: lock, scoring, comparisons, training |
//! | [`evaluate`] | `engram-trainer canary` |
//! | [`eval`] | `engram-trainer eval locomo`: the public benchmark, both protocols |
//! | [`report`] | `engram-trainer report --html` |
//!
//! # Decisions
//!
//! * **Labels** come from a deterministic scorer of the session's tape, see
//!   [`continuity`] for exactly how evidence is weighed; an external judge is
//!   optional and blended in at most half ([`judge`]).
//! * **Time.** Outcome events (`session.scored`, `comparison.recorded`,
//!   `drift.reset`, `training.run`, `model.promoted`) are stamped with the
//!   moment the trainer decided them (`run --now` for simulations), strictly
//!   increasing and never before an earlier outcome, so "the latest
//!   comparison" that serving reads is well defined.
//! * **No leak.** Training lists use the rankings' recorded queries, outcome
//!   labels, and signals as of the moment each ranking was served
//!   ([`shared::domain::training::data`]).
//! * **Canary** sessions are one in six by a hash of the session key, never
//!   trained on; the evaluated set is frozen per week ([`canary`]).
//! * **Gates and promotion**: [`training`]. **α, cold start, drift**: [`tracker`].
//! * **Training is due** when at least `train_interval_sessions` trainable
//!   (non-canary, confidence ≥ 0.6) sessions were scored since the last
//!   training run, when no model exists and new data does, or after a drift
//!   reset that has not been followed by a retrain.
//!
//! **Architecture Invariant:** the trainer changes state only by appending
//! events through [`shared::storage::journal::Journal`] and by writing model files
//! under `models/` (checkpoints first, then events, then the `current`
//! pointer), all under the trainer lock.

pub mod canary;
pub mod compare;
pub mod continuity;
pub mod error;
pub mod eval;
pub mod evaluate;
pub mod history;
pub mod judge;
pub mod report;
pub mod run;
pub mod sessions;
pub mod terms;
pub mod tracker;
pub mod training;

pub use error::{Error, Result};
