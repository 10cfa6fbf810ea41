//! Learning bodies: outcomes of finished sessions, comparisons with the
//! baseline, training runs, promotions and drift resets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::ids::MemoryId;

/// `session.scored`: the outcome of a finished session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionScored {
    /// Overall continuity score, 0..=1.
    pub score: f32,
    /// How sure the scorer is, 0..=1.
    pub confidence: f32,
    /// Memories that were injected.
    pub memories_recalled: u32,
    /// Injected memories judged used.
    pub memories_used: u32,
    /// Times the user had to re-explain something memory should have covered.
    pub novel_context_count: u32,
    /// Per-memory relevance judged from the transcript.
    pub relevance: BTreeMap<MemoryId, f32>,
    /// Final training labels (relevance combined with behavioural signals).
    pub labels: BTreeMap<MemoryId, f32>,
    /// The scorer's explanation.
    pub reasoning: String,
    /// Which scorer produced it (`continuity-v1`, `continuity-v1+judge`).
    pub scorer: String,
    /// How many of the session's content events (messages, tool calls and
    /// results, reads, edits) the scorer read: once the projection holds
    /// more (a transcript ingested after the session was labelled), the
    /// session waits to be labelled again. A count, not a log position, so
    /// it keeps its meaning in a home that imported the event. `None` from
    /// builds that did not record it (such a score is final).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_events: Option<u64>,
}

/// `comparison.recorded`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparisonRecorded {
    /// Id of the comparison row.
    pub comparison_id: String,
    /// NDCG@10 of the predictor's ranking over the labelled pool.
    pub predictor_ndcg: f32,
    /// NDCG@10 of the baseline's ranking.
    pub baseline_ndcg: f32,
    /// `None` when the session was excluded (low confidence, no predictor).
    pub predictor_won: Option<bool>,
    /// predictor − baseline.
    pub margin: f32,
    /// Continuity scorer confidence.
    pub scorer_confidence: f32,
    /// Whether this session updated the success-rate EMA.
    pub ema_updated: bool,
    /// Success rate after this session.
    pub success_rate: f32,
    /// α after this session.
    pub alpha: f32,
    /// Predictor top-10 ids, in order.
    pub predictor_top_ids: Vec<MemoryId>,
    /// Baseline top-10 ids, in order.
    pub baseline_top_ids: Vec<MemoryId>,
    /// Labels used.
    pub relevance_scores: BTreeMap<MemoryId, f32>,
    /// Share of injected memories later matched by FTS.
    pub fts_overlap_score: Option<f32>,
    /// Project of the session.
    pub project: Option<String>,
    /// Candidates in the labelled pool.
    pub candidate_count: u32,
    /// Sessions since cold-start exit, counting this one (0 while in cold start).
    pub sessions_after_cold_start: u32,
    /// Whether cold start has been exited as of this session.
    pub cold_start_exited: bool,
}

/// Canary metrics of a training run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CanaryMetrics {
    /// NDCG@10 of the candidate model on the canary set.
    pub ndcg: Option<f32>,
    /// Candidate minus serving model.
    pub ndcg_delta: Option<f32>,
    /// NDCG@10 of the serving model.
    pub serving_ndcg: Option<f32>,
    /// NDCG@10 of the baseline.
    pub baseline_ndcg: Option<f32>,
    /// Variance of candidate scores on the canary set.
    pub score_variance: Option<f32>,
    /// Share of canary lists whose top-5 changed from the serving model.
    pub topk_churn: Option<f32>,
    /// Mean top-5 overlap with the serving model.
    pub top5_overlap: Option<f32>,
    /// Lists in the canary set.
    pub sessions: u32,
}

/// `training.run`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainingRun {
    /// Id of the run.
    pub run_id: String,
    /// Version the weights would get if promoted.
    pub model_version: u64,
    /// Final training loss.
    pub loss: f32,
    /// Final validation loss.
    pub valid_loss: Option<f32>,
    /// Training lists used.
    pub sample_count: u32,
    /// Epochs completed.
    pub epochs: u32,
    /// Steps taken.
    pub steps: u64,
    /// Wall time.
    pub duration_ms: u64,
    /// Canary evaluation.
    pub canary: CanaryMetrics,
    /// All validation gates passed.
    pub gates_passed: bool,
    /// Why a gate failed.
    pub failure: Option<String>,
    /// blake3 of the checkpoint written (when gates passed).
    pub checkpoint: Option<String>,
    /// The run was a drift-recovery retrain.
    pub drift_retrain: bool,
}

/// `model.promoted`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelPromoted {
    /// New serving version.
    pub model_version: u64,
    /// blake3 of the checkpoint file (its name under `models/`).
    pub checkpoint: String,
    /// The training run.
    pub run_id: String,
}

/// `drift.reset`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DriftReset {
    /// Success rate that triggered it.
    pub success_rate: f32,
    /// Consecutive low sessions.
    pub window: u32,
}

/// One list of a replayed session: the moment's query and the pool the read
/// side ranked for it (with the memories of that moment), and its labels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplayedList {
    /// `session_start`, `prompt` or `tool`.
    pub trigger: String,
    /// The query the rankers saw.
    pub query: String,
    /// When the moment was (ms).
    pub at_ms: i64,
    /// The pool, in the baseline's order (what the read side ranked).
    pub memory_ids: Vec<MemoryId>,
    /// How many of the pool the read side would have injected (its first ones).
    pub injected: u32,
    /// Confident labels (memories not named are 0).
    pub labels: BTreeMap<MemoryId, f32>,
    /// Where the labels came from: `told_twice`, `continuity`, or both
    /// (`told_twice+continuity`).
    pub source: String,
    /// Training weight (below a served list's).
    pub weight: f32,
}

/// `history.replayed`: one recorded session replayed as if the hooks had been
/// installed (`trainer::history`). Derived from the tapes and never served:
/// it counts in no α, success rate or comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryReplayed {
    /// Which replay produced it (`history-v1`).
    pub replayer: String,
    /// The session's project.
    pub project: Option<String>,
    /// When the session started (ms).
    pub started_ms: i64,
    /// Moments the hooks would have seen (start, prompts, tool calls).
    pub moments: u32,
    /// Moments ranked (repeated queries of a session are ranked once).
    pub ranked: u32,
    /// Lists with a confident label (the others are skipped).
    pub lists: Vec<ReplayedList>,
    /// Lessons given again in this session that a memory of an earlier
    /// session already held: `(memory, when it was given again, ms)`.
    pub told_twice: Vec<(MemoryId, i64)>,
    /// The continuity judge's confidence on the session.
    pub confidence: f32,
}
