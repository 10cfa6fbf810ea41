//! Serving bodies: what a ranking offered and what full-text search hit.

use serde::{Deserialize, Serialize};

use crate::base::ids::MemoryId;

/// Why a candidate entered the pool.
pub mod source {
    /// FTS5 BM25 match of the query.
    pub const BM25: &str = "bm25";
    /// Top of the baseline effective score.
    pub const EFFECTIVE: &str = "effective";
    /// Pinned.
    pub const PINNED: &str = "pinned";
    /// Vector similarity.
    pub const VECTOR: &str = "vector";
    /// Neighbour (same source session, adjacent in time) of a strong hit.
    pub const NEIGHBOR: &str = "neighbor";
    /// Put in an injection slot by exploration.
    pub const EXPLORATION: &str = "exploration";
    /// Matched by FTS during the session but never in a served pool.
    pub const FTS_ONLY: &str = "fts_only";
    /// Learned in two or more projects whose shared tags the session's
    /// environment has (`shared::domain::env::rank`).
    pub const STACK: &str = "stack";
    /// Linked in the knowledge graph to a strong hit (`crate::domain::knowledge`).
    pub const GRAPH: &str = "graph";
}

/// What triggered a ranking.
pub mod trigger {
    /// Session start.
    pub const SESSION_START: &str = "session_start";
    /// A user prompt.
    pub const PROMPT: &str = "prompt";
    /// Before a tool runs.
    pub const TOOL: &str = "tool";
    /// An MCP `memory_search` or CLI `search`.
    pub const SEARCH: &str = "search";
    /// A sidecar `rank` request.
    pub const RPC: &str = "rpc";
}

/// One candidate of a served ranking.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServedCandidate {
    /// The memory.
    pub memory_id: MemoryId,
    /// See [`source`]; a candidate can come from several.
    pub sources: Vec<String>,
    /// Baseline score.
    pub baseline_score: f32,
    /// 1-based baseline rank.
    pub baseline_rank: u32,
    /// Predictor score (absent during cold start without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictor_score: Option<f32>,
    /// 1-based predictor rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictor_rank: Option<u32>,
    /// Score after fusion and diversity.
    pub final_score: f32,
    /// 1-based final rank.
    pub rank: u32,
    /// Put into the agent's context.
    pub injected: bool,
}

/// `ranking.served`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankingServed {
    /// Id of this ranking.
    pub ranking_id: String,
    /// See [`trigger`].
    pub trigger: String,
    /// The query text the rankers saw (cut to a few KB).
    pub query: String,
    /// Baseline weight used in fusion.
    pub alpha: f32,
    /// Serving model version, if any.
    pub model_version: Option<u64>,
    /// The predictor had no influence (cold start).
    pub cold_start: bool,
    /// Project of the session.
    pub project: Option<String>,
    /// All candidates.
    pub candidates: Vec<ServedCandidate>,
}

/// `fts.hits`: FTS matches of a prompt within a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FtsHits {
    /// The ranking served for the same prompt, if any.
    pub ranking_id: Option<String>,
    /// Memories matched.
    pub memory_ids: Vec<MemoryId>,
}
