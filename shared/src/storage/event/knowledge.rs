//! Knowledge bodies: graph edges, the observation buffer, conversations,
//! checkpoints, topic shifts, summaries and the dedup merge log.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::MemoryAdded;
use crate::base::ids::MemoryId;

/// `knowledge.edge`: `from` → `to` with a relation (see
/// `crate::domain::knowledge::graph::Relation`) and a strength in `[0, 1]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgeAdded {
    /// Id of the edge (`edge_…`, derived from its ends and relation).
    pub edge_id: String,
    /// Source memory.
    pub from: MemoryId,
    /// Target memory.
    pub to: MemoryId,
    /// `derives_from`, `leads_to`, `supports`, `contradicts`, `refines`, `supersedes`.
    pub relation: String,
    /// Confidence in the relation, `[0, 1]`.
    pub strength: f32,
    /// Who made it: `source` (named by the writer), `discovery`, `external`, `resolve`, `user`, `dedup`.
    pub origin: String,
    /// Why (free text).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `knowledge.edge_removed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgeRemoved {
    /// The edge.
    pub edge_id: String,
    /// Why.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `knowledge.staged`: a memory in the observation buffer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryStaged {
    /// Id of the buffer entry (`obs_…`).
    pub stage_id: String,
    /// `needs_clarification` (a conflict), `pending` (awaiting curation) or
    /// `discarded` (a duplicate, kept for the record).
    pub status: String,
    /// The memory it becomes when persisted (its id reserved).
    pub memory: MemoryAdded,
    /// The existing memory it is similar to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict_with: Option<MemoryId>,
    /// How similar, `[0, 1]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// Why it was staged.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `knowledge.resolved`: what became of a staged memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageResolved {
    /// The buffer entry.
    pub stage_id: String,
    /// `merge`, `keep_both`, `replace`, `skip` (seed 004 `memory_resolve`),
    /// `persist` or `discard` (curation).
    pub action: String,
    /// The existing memory it was resolved against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_id: Option<MemoryId>,
    /// The memory it ended up in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<MemoryId>,
    /// `user`, `agent`, `curation`.
    pub by: String,
}

/// `knowledge.surfaced`: a staged conflict was shown at a prompt of the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConflictSurfaced {
    /// The buffer entry.
    pub stage_id: String,
}

/// `conversation.stashed`: the event's session from `started_ms` to
/// `ended_ms`, parked under a label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConversationStashed {
    /// Id (`conv_…`).
    pub conversation_id: String,
    /// The user's label, or one made from the topic.
    pub label: String,
    /// Stashed by topic-shift detection rather than asked for.
    pub auto: bool,
    /// The topic-shift score that stashed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// Project of the session.
    pub project: Option<String>,
    /// Stash group (the session's).
    pub stash_group: String,
    /// Start of the thread (ms).
    pub started_ms: i64,
    /// End of the thread (ms).
    pub ended_ms: i64,
    /// What it was about.
    pub summary: String,
    /// Its user prompts, oldest first (cut).
    pub prompts: Vec<String>,
    /// Files it read or edited.
    pub files: Vec<String>,
}

/// `conversation.resumed`: resumed in the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConversationResumed {
    /// A conversation (`conv_…`) or a checkpoint (`fork_…`).
    pub conversation_id: String,
}

/// What a checkpoint captured of its session (seed 004 `SessionFork.snapshot`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointSnapshot {
    /// Tool calls of the session so far.
    pub observation_count: u64,
    /// Its stashed conversations so far.
    pub conversation_ids: Vec<String>,
    /// The last tool call recorded.
    pub last_observation_id: Option<String>,
    /// The last user prompt.
    pub last_prompt: Option<String>,
    /// Files read or edited so far, most recent first.
    pub files: Vec<String>,
    /// Memories staged and not yet resolved.
    pub staged: u64,
}

/// `checkpoint.created`: a save point of the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointCreated {
    /// Id (`fork_…`).
    pub checkpoint_id: String,
    /// The user's label, or why it was made.
    pub label: String,
    /// Made automatically (before a destructive command, or by the buffer).
    pub auto: bool,
    /// The command that triggered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Project of the session.
    pub project: Option<String>,
    /// The snapshot.
    pub snapshot: CheckpointSnapshot,
}

/// `topic.shift`: the decision at a prompt of the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TopicShift {
    /// `[0, 1]`.
    pub score: f32,
    /// `ignore`, `ask` or `trust`.
    pub tier: String,
    /// Each signal's value (the detector's own names).
    pub signals: BTreeMap<String, f32>,
    /// Thresholds used.
    pub ask_threshold: f32,
    /// See `ask_threshold`.
    pub trust_threshold: f32,
    /// Project of the session.
    pub project: Option<String>,
    /// The conversation stashed by a `trust` decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
}

/// `session.summarized`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionSummarized {
    /// The summary.
    pub summary: String,
    /// `extractive` or `external`.
    pub method: String,
    /// The first observation (prompt or tool use).
    pub first: Option<String>,
    /// The last one.
    pub last: Option<String>,
    /// Files touched.
    pub files: Vec<String>,
    /// Tool uses by tool.
    pub tools: BTreeMap<String, u32>,
    /// Tags of what it learned.
    pub tags: Vec<String>,
}

/// `memory.merged`: `absorbed` merged into `survivor` (seed 000 "Merge Semantics").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoriesMerged {
    /// The memory that stays.
    pub survivor: MemoryId,
    /// The memories merged into it (deprecated, superseded by it).
    pub absorbed: Vec<MemoryId>,
    /// The survivor's new text, if it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `bootstrap` or `incremental`.
    pub mode: String,
    /// Pass of the run (1-based).
    pub pass: u32,
    /// `deterministic` or `external`.
    pub by: String,
    /// The judge's confidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    /// Why.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `dedup.checked`: memories the dedup pipeline verified, or failed on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DedupChecked {
    /// Compared and found distinct (or merged).
    pub verified: Vec<MemoryId>,
    /// An attempt failed (the judge's error), to be retried.
    pub failed: BTreeMap<MemoryId, String>,
    /// Memories whose text changed: back in the queue.
    pub requeued: Vec<MemoryId>,
}
