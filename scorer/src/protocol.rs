//! The sidecar's methods: one request enum, typed params and results.
//!
//! Signet-compatible (reference §2, same field names and JSON types):
//! [`Request::Status`], [`Request::Score`], [`Request::Train`],
//! [`Request::TrainFromDb`], [`Request::SaveCheckpoint`]. Engram's own:
//! [`Request::Rank`], [`Request::Reload`], [`Request::Shutdown`]. Unknown
//! params (Signet's daemon adds `agent_id`) are ignored everywhere. The full
//! description, with examples, is `docs/protocol.md`.

use serde::de::{DeserializeOwned, Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::base::rpc::Params;

/// Number of Signet feature values per candidate.
pub const SIGNET_FEATURES: usize = 17;

/// One request, by method.
#[derive(Debug)]
pub enum Request {
    /// `status`: the model's state (params ignored).
    Status,
    /// `score`: Signet scoring of a candidate list.
    Score(ScoreParams),
    /// `train`: one listwise step on one labelled list.
    Train(TrainParams),
    /// `train_from_db`: training from a Signet `memories.db` or an Engram projection.
    TrainFromDb(TrainFromDbParams),
    /// `save_checkpoint`: write the serving weights atomically.
    SaveCheckpoint(SaveCheckpointParams),
    /// `rank`: the whole ranking pipeline against the data home's store.
    Rank(RankParams),
    /// `reload`: re-read the model pointer and the configuration.
    Reload,
    /// `shutdown`: answer, finish what is in hand, exit 0.
    Shutdown,
    /// Any other method (answered with -32601).
    Unknown(String),
}

/// Params of `score`.
#[derive(Debug, Default, Deserialize)]
pub struct ScoreParams {
    /// Query embedding (`native_dim` values). Signet requires it; here it may
    /// be absent or null when `context_text` is given or neither is known.
    #[serde(default)]
    pub context_embedding: Option<Vec<f32>>,
    /// Candidate ids, in the caller's order.
    pub candidate_ids: Vec<String>,
    /// One row per candidate or empty; a `null` row, or one whose length is
    /// not `native_dim`, means "no embedding".
    #[serde(default)]
    pub candidate_embeddings: Option<Vec<Option<Vec<f32>>>>,
    /// One text per candidate or empty; `null` allowed.
    #[serde(default)]
    pub candidate_texts: Option<Vec<Option<String>>>,
    /// One 17-value Signet feature row per candidate or empty; a `null` row
    /// means "unknown" (default features).
    #[serde(default)]
    pub candidate_features: Option<Vec<Option<Vec<f32>>>>,
    /// Signet's project slot (`fnv1a(project) % 32`); 0 means none.
    #[serde(default)]
    pub project_slot: Option<u64>,
    /// Engram extension: the query as text (the prompt or session context).
    #[serde(default)]
    pub context_text: Option<String>,
}

/// Params of `train`.
#[derive(Debug, Default, Deserialize)]
pub struct TrainParams {
    /// Query embedding (`native_dim` values), or null.
    #[serde(default)]
    pub context_embedding: Option<Vec<f32>>,
    /// One row per candidate (`null` rows allowed here).
    pub candidate_embeddings: Vec<Option<Vec<f32>>>,
    /// Optional 17-value feature rows.
    #[serde(default)]
    pub candidate_features: Option<Vec<Option<Vec<f32>>>>,
    /// One label per candidate; higher is more relevant.
    pub labels: Vec<f32>,
    /// Signet's project slot.
    #[serde(default)]
    pub project_slot: Option<u64>,
    /// ListNet temperature (default 0.5; finite and > 0).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Engram extension: candidate texts (`null` allowed).
    #[serde(default)]
    pub candidate_texts: Option<Vec<Option<String>>>,
    /// Engram extension: the query as text.
    #[serde(default)]
    pub context_text: Option<String>,
}

/// Params of `train_from_db`.
#[derive(Debug, Default, Deserialize)]
pub struct TrainFromDbParams {
    /// A Signet `memories.db` or an Engram projection (`engram.db`).
    pub db_path: String,
    /// Where to write the checkpoint when the gates pass.
    #[serde(default)]
    pub checkpoint_path: Option<String>,
    /// Newest qualifying sessions read (default 5000).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Epochs (default 3).
    #[serde(default)]
    pub epochs: Option<u64>,
    /// ListNet temperature (default 0.5).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Sessions whose scorer confidence is below this are skipped (default 0.6).
    #[serde(default)]
    pub min_confidence: Option<f64>,
}

/// Params of `save_checkpoint`.
#[derive(Debug, Default, Deserialize)]
pub struct SaveCheckpointParams {
    /// Destination file (replaced atomically).
    pub path: String,
    /// Signet flags: bit 0 pretrained base, bit 1 fine-tuned.
    #[serde(default)]
    pub flags: Option<u32>,
}

/// Params of `rank`.
#[derive(Debug, Default, Deserialize)]
pub struct RankParams {
    /// The prompt text, or the session-context text at session start.
    pub query: String,
    /// `<harness>:<session id>`; memories already injected in it are not repeated.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The session's project.
    #[serde(default)]
    pub project: Option<String>,
    /// `session_start`, `prompt`, `tool`, `search` or `rpc` (default).
    #[serde(default)]
    pub trigger: Option<String>,
    /// Most memories to inject (default from the configuration, by trigger).
    #[serde(default)]
    pub k: Option<u64>,
    /// Character budget of the injected memories (default `injection.budget_chars`).
    #[serde(default)]
    pub budget_chars: Option<u64>,
    /// Query embedding, if the client has one.
    #[serde(default)]
    pub embedding: Option<Vec<f32>>,
    /// The moment of the request (default: now).
    #[serde(default)]
    pub now_ms: Option<i64>,
    /// Inject only memories with evidence of relevance (default: on except at session start).
    #[serde(default)]
    pub require_match: Option<bool>,
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." { inner.to_string() } else { format!("{path}: {inner}") }
    })
}

impl Params for Request {
    fn deserialize<'de, D: Deserializer<'de>>(method: &str, d: D) -> Result<Request, D::Error> {
        Ok(match method {
            "score" => Request::Score(ScoreParams::deserialize(d)?),
            "train" => Request::Train(TrainParams::deserialize(d)?),
            "train_from_db" => Request::TrainFromDb(TrainFromDbParams::deserialize(d)?),
            "save_checkpoint" => Request::SaveCheckpoint(SaveCheckpointParams::deserialize(d)?),
            "rank" => Request::Rank(RankParams::deserialize(d)?),
            other => {
                IgnoredAny::deserialize(d)?;
                match other {
                    "status" => Request::Status,
                    "reload" => Request::Reload,
                    "shutdown" | "exit" => Request::Shutdown,
                    _ => Request::Unknown(other.to_owned()),
                }
            }
        })
    }

    fn read_line(line: &[u8]) -> Option<shared::base::rpc::Message<Request>> {
        crate::score_line::read(line)
    }

    fn explain(method: &str, params: Value) -> Result<Request, String> {
        Ok(match method {
            "score" => Request::Score(typed(params)?),
            "train" => Request::Train(typed(params)?),
            "train_from_db" => Request::TrainFromDb(typed(params)?),
            "save_checkpoint" => Request::SaveCheckpoint(typed(params)?),
            "rank" => Request::Rank(typed(params)?),
            "status" => Request::Status,
            "reload" => Request::Reload,
            "shutdown" | "exit" => Request::Shutdown,
            other => Request::Unknown(other.to_owned()),
        })
    }
}

/// Result of `status` (Signet's six fields, then Engram's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusResult {
    /// The serving weights are trained ones (trained in this process, loaded
    /// from a checkpoint, or promoted by the trainer).
    pub trained: bool,
    /// Sessions trained on in this process (for `train`, the labels), as Signet counts.
    pub training_pairs: u64,
    /// Version of the serving weights: 1 for fresh ones, +1 for each training
    /// published; persisted in Engram checkpoints (an SGPT file is version 1).
    pub model_version: u64,
    /// When they were last trained, `YYYY-MM-DDThh:mm:ssZ`, or null.
    pub last_trained: Option<String>,
    /// Embedding size accepted (`--native-dim`).
    pub native_dimensions: usize,
    /// Signet feature values per candidate (17).
    pub feature_dimensions: usize,
    /// Engram: the program and version.
    pub engine: String,
    /// Engram: where the serving weights come from (`fresh`, `checkpoint`, `promoted`, `trained`).
    pub weights: String,
    /// Engram: blake3 of the serving checkpoint, when it came from the data home.
    pub checkpoint: Option<String>,
    /// Engram: embedding size the serving weights use (0 = text only).
    pub model_native_dimensions: usize,
    /// Engram: a training run is in progress.
    pub training: bool,
    /// Engram: the serving weights' format, `engram` or `signet-sgpt-v1`.
    pub format: String,
}

/// One scored candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreEntry {
    /// Candidate id.
    pub id: String,
    /// Softmax probability over the list (the scores sum to 1).
    pub score: f64,
}

/// Result of `score`: best first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreResult {
    /// One entry per candidate, sorted by descending score (ties keep input order).
    pub scores: Vec<ScoreEntry>,
}

/// Result of `train`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainResult {
    /// Listwise loss of the list before the step: `KL(softmax(labels/T) ‖
    /// softmax(logits/T))` in nats.
    pub loss: f64,
    /// Optimizer steps taken in this process.
    pub step: u64,
}

/// Result of `train_from_db` (Signet's eight fields, then Engram's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainFromDbResult {
    /// Mean listwise loss (KL in nats at the temperature) over the last
    /// epoch's lists, weighted by confidence (0 without samples).
    pub loss: f64,
    /// Optimizer steps taken in this process (one per list, as Signet's).
    pub step: u64,
    /// Sessions in the training split.
    pub samples_used: u64,
    /// `session_scores` rows below `min_confidence` (whole table).
    pub samples_skipped: u64,
    /// Wall time of the call.
    pub duration_ms: u64,
    /// Population variance of the new model's softmax scores over the canary lists.
    pub canary_score_variance: f64,
    /// Mean top-5 overlap between the weights before and after, on the canary lists (1 if none).
    pub canary_topk_stability: f64,
    /// The gates passed and the checkpoint was written to `checkpoint_path`.
    pub checkpoint_saved: bool,
    /// Engram: every gate passed.
    pub gates_passed: bool,
    /// Engram: the new weights now serve.
    pub published: bool,
    /// Engram: why the run was not published.
    pub failure: Option<String>,
    /// Engram: sessions in the held-out canary split.
    pub canary_sessions: u64,
    /// Engram: canary NDCG@10 of the new weights, and of the weights before.
    pub canary_ndcg: Option<f64>,
    /// Engram: canary NDCG@10 of the weights before.
    pub canary_ndcg_before: Option<f64>,
    /// Engram: the serving model version after the call.
    pub model_version: u64,
    /// Engram: the file written when `checkpoint_saved`: `checkpoint_path`,
    /// or beside it when that file holds another format (see `save_checkpoint`).
    pub checkpoint_file: Option<String>,
}

/// Result of `save_checkpoint`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SaveResult {
    /// Always true (failures are errors).
    pub saved: bool,
    /// Engram: bytes written.
    pub bytes: u64,
    /// Engram: version of the saved weights.
    pub model_version: u64,
    /// Engram: the file written: `path`, or beside it (`<path>.engram`,
    /// `<path>.sgpt`) when `path` holds another format.
    pub path: String,
    /// Engram: the format written, `engram` or `signet-sgpt-v1`.
    pub format: String,
}

/// One memory of a `rank` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedItem {
    /// Memory id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Memory type (`fact`, `decision`, …).
    #[serde(rename = "type")]
    pub memory_type: String,
    /// Project, if any.
    pub project: Option<String>,
    /// Pinned by the user.
    pub pinned: bool,
    /// Final score (fusion, then topic diversity).
    pub score: f32,
    /// 1-based final rank.
    pub rank: u32,
    /// Baseline score.
    pub baseline_score: f32,
    /// 1-based baseline rank.
    pub baseline_rank: u32,
    /// Predictor logit, when a trained model scored.
    pub predictor_score: Option<f32>,
    /// 1-based predictor rank.
    pub predictor_rank: Option<u32>,
    /// Why it is a candidate: `pinned`, `bm25`, `neighbor`, `vector`, `effective`, `exploration`.
    pub sources: Vec<String>,
    /// Why it ranks where it does.
    pub reasons: Vec<String>,
    /// Put into the agent's context.
    pub injected: bool,
    /// Put there by exploration.
    pub explored: bool,
}

/// Result of `rank`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankResult {
    /// Id of the recorded `ranking.served` event's ranking.
    pub ranking_id: String,
    /// Every candidate in final order.
    pub memories: Vec<RankedItem>,
    /// Ids of the injected memories, best first.
    pub injected: Vec<String>,
    /// Baseline weight used in fusion (1 = baseline only).
    pub alpha: f32,
    /// The predictor had no influence.
    pub cold_start: bool,
    /// Version of the model that scored, if any.
    pub model_version: Option<u64>,
    /// The one-line predictor status (seed 002 §4.7).
    pub status_line: String,
    /// The FTS5 expression used, if any.
    pub fts_query: Option<String>,
    /// The ranking was queued for recording (the recorder thread appends it
    /// to the tape log just after the answer; see [`crate::recorder`] for
    /// what a crash can lose). False only if the recorder is gone.
    pub recorded: bool,
}

/// Result of `reload`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReloadResult {
    /// The configuration was read (false: it is invalid and the old one stays).
    pub config_loaded: bool,
    /// The serving weights changed.
    pub model_changed: bool,
    /// Version of the serving weights.
    pub model_version: u64,
    /// blake3 of the serving checkpoint, when it came from the data home.
    pub checkpoint: Option<String>,
}

/// Result of `shutdown`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShutdownResult {
    /// Always true.
    pub shutting_down: bool,
}
