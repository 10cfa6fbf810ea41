//! The `[knowledge]` section of `config.toml` (seed 004 "Configuration":
//! `conflictDetection`, `checkpoints`, `buffer`, `knowledgeGraph`; topic
//! shifts; seed 000's dedup pipeline; seed 004's curation). Every key has a
//! default; the optional models (LLM discovery, summaries, dedup
//! judgements, curation) are off.
//!
//! ```toml
//! [knowledge.conflicts]
//! similarity_threshold = 0.7
//!
//! [knowledge.topic]
//! auto_stash = false
//!
//! [knowledge.dedup]
//! command = ["my-local-llm", "--dedup"]
//!
//! [knowledge.curation]
//! preset = "claude"
//! model = "haiku"
//! ```

use serde::{Deserialize, Serialize};

use crate::base::command::CommandConfig;
use crate::base::model::{DEFAULT_DAILY_CALLS, ModelConfig, Preset};

/// The deepest a graph traversal may go, whatever the configuration says.
pub const HARD_MAX_DEPTH: u32 = 10;

/// All of seed 004's memory-model settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KnowledgeConfig {
    /// The knowledge graph and its discovery engine.
    pub graph: GraphConfig,
    /// Conflict detection when a memory is written.
    pub conflicts: ConflictConfig,
    /// Session checkpoints.
    pub checkpoints: CheckpointConfig,
    /// The observation buffer.
    pub buffer: BufferConfig,
    /// Topic-shift detection at prompts.
    pub topic: TopicConfig,
    /// Optional model writing session summaries (off by default; the
    /// summary is then extractive).
    pub summary: ModelConfig,
    /// Seed 000's dedup pipeline.
    pub dedup: DedupConfig,
    /// Seed 004's curation of the observation buffer at session end.
    pub curation: CurationConfig,
}

/// `[knowledge.graph]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphConfig {
    /// Keep the graph at all (edges named by writers are still recorded when off).
    pub enabled: bool,
    /// Default and largest depth of a traversal.
    pub max_depth: u32,
    /// Link each new memory to related ones (supports / refines / leads_to / contradicts).
    pub auto_discover: bool,
    /// Similarity above which memories are related.
    pub related_similarity: f32,
    /// At most this many discovery edges per new memory.
    pub related_limit: usize,
    /// Memories linked to the strongest text hits join the ranking's pool.
    pub rank_candidates: bool,
    /// Optional external discovery (an LLM command line; off by default).
    pub discovery: CommandConfig,
}

impl Default for GraphConfig {
    fn default() -> Self {
        GraphConfig {
            enabled: true,
            max_depth: 5,
            auto_discover: true,
            related_similarity: 0.5,
            related_limit: 5,
            rank_candidates: true,
            discovery: CommandConfig::default(),
        }
    }
}

/// `[knowledge.conflicts]` (seed 004 `conflictDetection`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConflictConfig {
    /// Check new memories against existing ones.
    pub enabled: bool,
    /// Above this similarity a new memory is flagged for the user to resolve
    /// (above [`DUPLICATE_SIMILARITY`] it is a duplicate and skipped).
    pub similarity_threshold: f32,
    /// Times one conflict is put before the user in a session before the next one's turn.
    pub max_surfaced_per_session: u32,
}

/// Above this similarity a new memory is an exact duplicate: skipped, never asked about.
pub const DUPLICATE_SIMILARITY: f32 = 0.95;

impl Default for ConflictConfig {
    fn default() -> Self {
        ConflictConfig { enabled: true, similarity_threshold: 0.65, max_surfaced_per_session: 3 }
    }
}

/// `[knowledge.checkpoints]` (seed 004 `checkpoints`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Checkpoints at all.
    pub enabled: bool,
    /// A checkpoint before every destructive Bash command (the PreToolUse hook).
    pub auto_fork_before_destructive: bool,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig { enabled: true, auto_fork_before_destructive: true }
    }
}

/// `[knowledge.buffer]` (seed 004 `buffer`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BufferConfig {
    /// A checkpoint every this many observations (tool uses) of a session; 0 turns it off.
    pub checkpoint_interval: u32,
}

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig { checkpoint_interval: 20 }
    }
}

/// `[knowledge.topic]` (seed 004 "Topic Shift Detection").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopicConfig {
    /// Detect topic shifts at prompts.
    pub enabled: bool,
    /// Base threshold of the `ask` tier (suggest a stash).
    pub ask_threshold: f32,
    /// Base threshold of the `trust` tier (stash automatically).
    pub trust_threshold: f32,
    /// Stash automatically in the `trust` tier (else only suggest).
    pub auto_stash: bool,
    /// Learn per-project thresholds from what the user does with suggestions.
    pub adaptive: bool,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig { enabled: true, ask_threshold: 0.4, trust_threshold: 0.85, auto_stash: true, adaptive: true }
    }
}

/// `[knowledge.dedup]` (seed 000 "Dedup Pipeline").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DedupConfig {
    /// The judge's preset (see [`crate::base::model`]; off by default: only
    /// pairs above `merge_similarity` are merged).
    pub preset: Option<Preset>,
    /// The model the preset asks for.
    pub model: Option<String>,
    /// The server of the `openai` preset (loopback only).
    pub base_url: Option<String>,
    /// A judge program speaking Engram's JSON protocol (instead of a preset).
    pub command: Vec<String>,
    /// Stop waiting for the judge after this long.
    pub timeout_ms: u64,
    /// Judge calls a day at most.
    pub daily_calls: u32,
    /// Candidates below this similarity are never compared.
    pub min_similarity: f32,
    /// Candidates per unverified memory.
    pub top_k: usize,
    /// Without a judge, pairs at or above this similarity are merged.
    pub merge_similarity: f32,
    /// Characters of memory text per judge request.
    pub batch_chars: usize,
    /// Passes of one run (a merged survivor is compared again).
    pub max_passes: u32,
    /// Below this many verified memories, every memory is compared with every other (bootstrap).
    pub bootstrap_below: usize,
    /// A memory whose judgement failed this many times is left out.
    pub max_attempts: u32,
}

impl Default for DedupConfig {
    fn default() -> Self {
        DedupConfig {
            preset: None,
            model: None,
            base_url: None,
            command: Vec::new(),
            timeout_ms: 60_000,
            daily_calls: DEFAULT_DAILY_CALLS,
            min_similarity: 0.5,
            top_k: 5,
            merge_similarity: DUPLICATE_SIMILARITY,
            batch_chars: 12_000,
            max_passes: 3,
            bootstrap_below: 3,
            max_attempts: 3,
        }
    }
}

impl DedupConfig {
    /// The judge's model.
    pub fn judge(&self) -> ModelConfig {
        ModelConfig {
            preset: self.preset,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            command: self.command.clone(),
            timeout_ms: self.timeout_ms,
            daily_calls: self.daily_calls,
        }
    }
}

/// `[knowledge.curation]` (seed 004 "Curation Agent"): with a model, the
/// memories extracted during a session wait in the observation buffer
/// (status `pending`) until the session ends, when the model keeps,
/// discards or merges them and may extract knowledge from the session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CurationConfig {
    /// The curator's preset (see [`crate::base::model`]; off by default:
    /// nothing waits, every memory is saved as it is learned).
    pub preset: Option<Preset>,
    /// The model the preset asks for.
    pub model: Option<String>,
    /// The server of the `openai` preset (loopback only).
    pub base_url: Option<String>,
    /// A curator program speaking Engram's JSON protocol (instead of a preset).
    pub command: Vec<String>,
    /// Stop waiting for the curator after this long.
    pub timeout_ms: u64,
    /// Curation calls a day at most.
    pub daily_calls: u32,
    /// A session with fewer observations (tool uses) has its buffer saved
    /// as it is, without asking the model (seed 004 `minObservations`).
    pub min_observations: u32,
}

impl Default for CurationConfig {
    fn default() -> Self {
        CurationConfig {
            preset: None,
            model: None,
            base_url: None,
            command: Vec::new(),
            timeout_ms: 60_000,
            daily_calls: DEFAULT_DAILY_CALLS,
            min_observations: 5,
        }
    }
}

impl CurationConfig {
    /// The curator's model.
    pub fn curator(&self) -> ModelConfig {
        ModelConfig {
            preset: self.preset,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            command: self.command.clone(),
            timeout_ms: self.timeout_ms,
            daily_calls: self.daily_calls,
        }
    }

    /// Curation is on (a model is configured).
    pub fn enabled(&self) -> bool {
        self.curator().enabled()
    }
}

fn unit(name: &str, x: f32) -> Result<(), String> {
    if (0.0..=1.0).contains(&x) { Ok(()) } else { Err(format!("knowledge.{name} must be in 0..=1, not {x}")) }
}

impl KnowledgeConfig {
    /// Checks ranges; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        unit("graph.related_similarity", self.graph.related_similarity)?;
        unit("conflicts.similarity_threshold", self.conflicts.similarity_threshold)?;
        unit("topic.ask_threshold", self.topic.ask_threshold)?;
        unit("topic.trust_threshold", self.topic.trust_threshold)?;
        unit("dedup.min_similarity", self.dedup.min_similarity)?;
        unit("dedup.merge_similarity", self.dedup.merge_similarity)?;
        if self.graph.max_depth == 0 || self.graph.max_depth > HARD_MAX_DEPTH {
            return Err(format!(
                "knowledge.graph.max_depth must be from 1 to {}, not {}",
                HARD_MAX_DEPTH, self.graph.max_depth
            ));
        }
        if self.topic.ask_threshold > self.topic.trust_threshold {
            return Err(format!(
                "knowledge.topic.ask_threshold ({}) exceeds knowledge.topic.trust_threshold ({})",
                self.topic.ask_threshold, self.topic.trust_threshold
            ));
        }
        self.summary.validate("knowledge.summary")?;
        self.dedup.judge().validate("knowledge.dedup")?;
        self.curation.curator().validate("knowledge.curation")?;
        if self.conflicts.similarity_threshold > DUPLICATE_SIMILARITY {
            return Err(format!(
                "knowledge.conflicts.similarity_threshold must not exceed the duplicate threshold {DUPLICATE_SIMILARITY}"
            ));
        }
        Ok(())
    }
}
