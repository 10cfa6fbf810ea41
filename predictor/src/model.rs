//! The cross-attention memory scorer of seed 002: two candidate encoders, Q/K/V, a session-modulated gate and a learned exact-match term.
//!
//! # Forward pass (one list)
//!
//! Notation: `d` = [`ModelConfig::dim`], `F` = [`NUM_FEATURES`],
//! `S` = [`NUM_SESSION_FEATURES`], `LN_e`/`LN_t` = layer norm with learnable
//! gain and bias of the pre-embedded and text path respectively.
//!
//! ```text
//! encode(x)   = mean of the available paths:
//!                 LN_e(D · embedding)                       (pre-embedded path, if native_dim > 0)
//!                 LN_t(mean_{t ∈ tokens} H[:, t])           (text path, HashTrick buckets)
//! u           = W_s · s + P[:, project_slot]                session context (s: S session features)
//! q           = Q · encode(query) + u                       (just u when the query has neither text nor embedding)
//! e_i         = encode(candidate i);  k_i = K · e_i;  v_i = V · e_i
//! gate        = g + G · u                                   session-modulated gate, (value_dim + F) × 1
//! lex_i       = Σ_{b ∈ uniq(query tokens) ∩ uniq(candidate i tokens)} λ_b
//! mlp_i       = w_o · σ(W_h · [1 ; f_i])                    feature MLP, H = FEATURE_HIDDEN sigmoid units
//! logit_i     = q·k_i / √d  +  gate · [v_i ; f_i]  +  lex_i  +  mlp_i
//! ```
//!
//! * **The query is never derived from the candidates**: it is the caller's
//!   prompt or session-context text (hashed) and/or its embedding.
//! * **Session signals interact with every candidate.** Anything equal for
//!   all candidates of a list would add the same constant to every logit and
//!   be cancelled by the softmax (the peer's time features and project
//!   embedding are dead for that reason). Here the session context `u`
//!   enters twice, both times multiplied by a per-candidate quantity: as part
//!   of the query (`u · k_i`) and through the gate (`(G·u) · [v_i; f_i]`), so
//!   the time of day can, e.g., re-weight recency or a project can prefer
//!   certain memories.
//! * **Lexical match.** `λ` is a learned per-bucket weight (a learned IDF):
//!   shared rare words can be promoted and shared common words demoted,
//!   which mean-pooled embeddings alone do poorly. BM25, its rank and the
//!   caller's lexical-overlap and neighbour scores are features that reach
//!   the logit through the gate.
//! * **Feature interactions.** The gate is linear in the features, so it
//!   cannot express "a neighbour of a strong hit matters when the memory
//!   itself is not a hit". A small MLP over the same features adds those
//!   interactions as a residual term (its output weights start at 0, so a
//!   new or widened model scores exactly as the linear gate does).
//! * The softmax is not part of the model: [`Model::score`] returns logits;
//!   higher is more relevant.
//! * **Evaluation order.** With `gate = [gate_v; gate_f]`, the terms that
//!   read the encoding are linear in it: `q·k_i/√d + gate_v·v_i = w·e_i` with
//!   `w = Kᵀq/√d + Vᵀgate_v`. The forward computes `w` once per list and never
//!   forms the keys and values: `d·(d + value_dim)` multiply-adds instead of
//!   `n·d·(d + value_dim)`, in training as in inference.
//!
//! # Initialisation
//!
//! Seeded [`ChaCha8Rng`], normal draws by Box–Muller. `D ~ N(0, 1/native_dim)`
//! (a random projection, roughly cosine-preserving), `H ~ N(0, 1)`,
//! `Q = K = 0.5·I + N(0, 0.05²)` (so an untrained model ranks by the
//! similarity of the encodings), `V ~ N(0, 1/d)`, `W_s ~ N(0, 0.25/S)`,
//! `P ~ N(0, 0.25)`, `G ~ N(0, 0.02²)`, `λ = 0.5`, layer-norm gains 1 and
//! biases 0, `W_h ~ N(0, 1)` (bias column included), `w_o = 0`. The gate starts from a prior that reproduces a lexical
//! baseline: `+1` on `bm25_norm` and `lexical_overlap`, `+0.5` on
//! `bm25_rank`, `neighbor_score` and `effective_rel`, `−1` on `superseded`,
//! 0 on the other features, `N(0, 0.1²)` on the value part.

use nalgebra::DMatrix;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::autograd::{Gradients, Mat, ParamId, Tape, Var};
use crate::error::{ConfigDifference, Error, check_all_finite};
use crate::features::{
    CandidateSignals, NUM_FEATURES, NUM_SESSION_FEATURES, SessionSignals, encode_candidates, encode_session,
    feature_index,
};

/// Shape of a model. Stored in checkpoints and compared on load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Dimension of pre-embedded vectors; 0 disables the pre-embedded path.
    pub native_dim: usize,
    /// Internal dimension `d` (seed 002: 64).
    pub dim: usize,
    /// Dimension of the value projection (seed 002: 32).
    pub value_dim: usize,
    /// Number of HashTrick buckets (seed 002: 16,384).
    pub hash_buckets: u32,
    /// Rows of the project embedding table (seed 002: 32).
    pub project_slots: u32,
    /// Number of encoded candidate features; must equal [`NUM_FEATURES`].
    pub features: usize,
    /// Number of encoded session features; must equal [`NUM_SESSION_FEATURES`].
    pub session_features: usize,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            native_dim: 768,
            dim: 64,
            value_dim: 32,
            hash_buckets: crate::tokenizer::DEFAULT_BUCKETS,
            project_slots: 32,
            features: NUM_FEATURES,
            session_features: NUM_SESSION_FEATURES,
        }
    }
}

impl ModelConfig {
    /// Checks that a model can be built from this config.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if self.dim == 0 {
            return bad("dim must be > 0".into());
        }
        if self.value_dim == 0 {
            return bad("value_dim must be > 0".into());
        }
        if self.hash_buckets == 0 {
            return bad("hash_buckets must be > 0".into());
        }
        if self.project_slots == 0 {
            return bad("project_slots must be > 0".into());
        }
        if self.features != NUM_FEATURES {
            return bad(format!("features is {}, this build encodes {NUM_FEATURES}", self.features));
        }
        if self.session_features != NUM_SESSION_FEATURES {
            return bad(format!(
                "session_features is {}, this build encodes {NUM_SESSION_FEATURES}",
                self.session_features
            ));
        }
        Ok(())
    }

    /// The fields in which `found` differs from `self` (the expected config).
    pub fn differences(&self, found: &ModelConfig) -> Vec<ConfigDifference> {
        let mut out = Vec::new();
        let mut cmp = |field: &'static str, e: String, f: String| {
            if e != f {
                out.push(ConfigDifference { field, expected: e, found: f });
            }
        };
        cmp("native_dim", self.native_dim.to_string(), found.native_dim.to_string());
        cmp("dim", self.dim.to_string(), found.dim.to_string());
        cmp("value_dim", self.value_dim.to_string(), found.value_dim.to_string());
        cmp("hash_buckets", self.hash_buckets.to_string(), found.hash_buckets.to_string());
        cmp("project_slots", self.project_slots.to_string(), found.project_slots.to_string());
        cmp("features", self.features.to_string(), found.features.to_string());
        cmp("session_features", self.session_features.to_string(), found.session_features.to_string());
        out
    }

    /// Shapes of the parameter tensors, in [`PARAM_NAMES`] order.
    pub fn param_shapes(&self) -> [(usize, usize); NUM_PARAMS] {
        let (d, g) = (self.dim, self.value_dim + self.features);
        [
            (d, self.native_dim),
            (d, 1),
            (d, 1),
            (d, self.hash_buckets as usize),
            (d, 1),
            (d, 1),
            (d, d),
            (d, d),
            (self.value_dim, d),
            (g, 1),
            (d, self.session_features),
            (d, self.project_slots as usize),
            (g, d),
            (1, self.hash_buckets as usize),
            (FEATURE_HIDDEN, 1 + self.features),
            (1, FEATURE_HIDDEN),
        ]
    }
}

/// Number of parameter tensors.
pub const NUM_PARAMS: usize = 16;

/// Hidden units of the feature MLP.
pub const FEATURE_HIDDEN: usize = 16;

/// Names of the parameter tensors, in storage (and checkpoint) order.
pub const PARAM_NAMES: [&str; NUM_PARAMS] = [
    "down_proj",
    "ln_embed_gain",
    "ln_embed_bias",
    "hash_embed",
    "ln_text_gain",
    "ln_text_bias",
    "q_proj",
    "k_proj",
    "v_proj",
    "gate",
    "session_proj",
    "project_embed",
    "gate_session",
    "lexical_weight",
    "feature_hidden",
    "feature_out",
];

/// Tensors read only through embedding bags; their gradients are sparse and
/// Adam updates them lazily, column by column.
pub const SPARSE_PARAMS: [ParamId; 3] = [P_HASH, P_PROJECT, P_LEXICAL];

pub(crate) const P_DOWN: ParamId = ParamId(0);
pub(crate) const P_LNE_G: ParamId = ParamId(1);
pub(crate) const P_LNE_B: ParamId = ParamId(2);
pub(crate) const P_HASH: ParamId = ParamId(3);
pub(crate) const P_LNT_G: ParamId = ParamId(4);
pub(crate) const P_LNT_B: ParamId = ParamId(5);
pub(crate) const P_Q: ParamId = ParamId(6);
pub(crate) const P_K: ParamId = ParamId(7);
pub(crate) const P_V: ParamId = ParamId(8);
pub(crate) const P_GATE: ParamId = ParamId(9);
pub(crate) const P_SESSION: ParamId = ParamId(10);
pub(crate) const P_PROJECT: ParamId = ParamId(11);
pub(crate) const P_GATE_SESSION: ParamId = ParamId(12);
pub(crate) const P_LEXICAL: ParamId = ParamId(13);
pub(crate) const P_FEATURE_HIDDEN: ParamId = ParamId(14);
pub(crate) const P_FEATURE_OUT: ParamId = ParamId(15);

/// Whether parameter `id` is a sparse (lazily updated) table.
pub fn is_sparse(id: ParamId) -> bool {
    SPARSE_PARAMS.contains(&id)
}

/// The query of a list: the prompt or session-context text (hashed) and/or its embedding, and the session.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// Token ids from [`crate::tokenizer::token_ids`] with the model's bucket count; may be empty.
    pub tokens: &'a [u32],
    /// Pre-computed embedding of the query (length `native_dim`), if any.
    pub embedding: Option<&'a [f32]>,
    /// The session the list is ranked for.
    pub session: &'a SessionSignals,
}

/// One candidate memory to rank.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Token ids of the memory's text; may be empty if it has an embedding.
    pub tokens: &'a [u32],
    /// Stored embedding (length `native_dim`), if any.
    pub embedding: Option<&'a [f32]>,
    /// Raw per-candidate signals.
    pub signals: CandidateSignals,
}

/// Owned form of [`Query`], for training data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OwnedQuery {
    /// See [`Query::tokens`].
    pub tokens: Vec<u32>,
    /// See [`Query::embedding`].
    pub embedding: Option<Vec<f32>>,
    /// See [`Query::session`].
    pub session: SessionSignals,
}

impl OwnedQuery {
    /// Borrowed view.
    pub fn as_query(&self) -> Query<'_> {
        Query { tokens: &self.tokens, embedding: self.embedding.as_deref(), session: &self.session }
    }
}

/// Owned form of [`Candidate`], for training data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OwnedCandidate {
    /// See [`Candidate::tokens`].
    pub tokens: Vec<u32>,
    /// See [`Candidate::embedding`].
    pub embedding: Option<Vec<f32>>,
    /// See [`Candidate::signals`].
    pub signals: CandidateSignals,
}

impl OwnedCandidate {
    /// Borrowed view.
    pub fn as_candidate(&self) -> Candidate<'_> {
        Candidate { tokens: &self.tokens, embedding: self.embedding.as_deref(), signals: self.signals }
    }
}

/// The scorer: a config and its parameter tensors. Immutable while serving;
/// `Send + Sync + Clone`, so it can be published behind an `Arc` while a clone trains.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    config: ModelConfig,
    pub(crate) params: Vec<Mat>,
}

struct Rng(ChaCha8Rng);

impl Rng {
    /// Standard normal by Box–Muller (portable: only ChaCha8 output and f32 libm functions).
    fn normal(&mut self) -> f32 {
        let u1: f32 = 1.0 - self.0.random::<f32>(); // (0, 1]
        let u2: f32 = self.0.random::<f32>();
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }

    fn fill(&mut self, shape: (usize, usize), sigma: f32) -> Mat {
        let mut data = Vec::with_capacity(shape.0 * shape.1);
        for _ in 0..shape.0 * shape.1 {
            data.push(self.normal() * sigma);
        }
        Mat::from_vec(shape.0, shape.1, data)
    }
}

impl Model {
    /// A freshly initialised model (see the module documentation); same seed ⇒ bit-identical weights.
    pub fn new(config: ModelConfig, seed: u64) -> Result<Model, Error> {
        config.validate()?;
        let shapes = config.param_shapes();
        let mut rng = Rng(ChaCha8Rng::seed_from_u64(seed));
        let d = config.dim;
        let s = config.session_features as f32;
        let mut params = Vec::with_capacity(NUM_PARAMS);
        for (i, &shape) in shapes.iter().enumerate() {
            let id = ParamId(i);
            let m = match id {
                P_DOWN => rng.fill(shape, 1.0 / (config.native_dim.max(1) as f32).sqrt()),
                P_LNE_G | P_LNT_G => Mat::from_element(d, 1, 1.0),
                P_LNE_B | P_LNT_B => Mat::zeros(d, 1),
                P_HASH => rng.fill(shape, 1.0),
                P_Q | P_K => rng.fill(shape, 0.05) + Mat::identity(d, d) * 0.5,
                P_V => rng.fill(shape, 1.0 / (d as f32).sqrt()),
                P_GATE => {
                    let mut g = rng.fill(shape, 0.1);
                    g.rows_mut(config.value_dim, config.features).fill(0.0);
                    for (name, w) in GATE_PRIOR {
                        let k = feature_index(name).expect("prior names are features");
                        g[config.value_dim + k] = w;
                    }
                    g
                }
                P_SESSION => rng.fill(shape, 0.5 / s.sqrt()),
                P_PROJECT => rng.fill(shape, 0.5),
                P_GATE_SESSION => rng.fill(shape, 0.02),
                P_LEXICAL => Mat::from_element(shape.0, shape.1, 0.5),
                P_FEATURE_HIDDEN => feature_hidden_init(&mut rng, shape),
                P_FEATURE_OUT => Mat::zeros(shape.0, shape.1),
                _ => unreachable!("every parameter id is handled"),
            };
            params.push(m);
        }
        Ok(Model { config, params })
    }

    /// Builds a model from tensors in [`PARAM_NAMES`] order, checking every shape.
    pub fn from_tensors(config: ModelConfig, tensors: Vec<Mat>) -> Result<Model, Error> {
        config.validate()?;
        if tensors.len() != NUM_PARAMS {
            return Err(Error::DimensionMismatch {
                input: "model tensors".into(),
                expected: NUM_PARAMS,
                actual: tensors.len(),
            });
        }
        for (i, (t, shape)) in tensors.iter().zip(config.param_shapes()).enumerate() {
            if t.shape() != shape {
                return Err(Error::DimensionMismatch {
                    input: format!(
                        "tensor {} ({}×{} expected, {}×{} given; entry count)",
                        PARAM_NAMES[i],
                        shape.0,
                        shape.1,
                        t.nrows(),
                        t.ncols()
                    ),
                    expected: shape.0 * shape.1,
                    actual: t.len(),
                });
            }
            check_all_finite(|| format!("tensor {}", PARAM_NAMES[i]), t.as_slice())?;
        }
        Ok(Model { config, params: tensors })
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The parameter tensors, in [`PARAM_NAMES`] order.
    pub fn tensors(&self) -> &[Mat] {
        &self.params
    }

    /// A parameter tensor by name.
    pub fn tensor(&self, name: &str) -> Option<&Mat> {
        PARAM_NAMES.iter().position(|&n| n == name).map(|i| &self.params[i])
    }

    /// Sets the named parameter tensor to zero; `false` if no tensor has that name.
    pub fn zero_tensor(&mut self, name: &str) -> bool {
        match PARAM_NAMES.iter().position(|&n| n == name) {
            Some(i) => {
                self.params[i].fill(0.0);
                true
            }
            None => false,
        }
    }

    /// Moves every weight a fraction `t` of the way to `other`'s (`t` = 1
    /// copies it): the step of a running mean of models of one configuration.
    pub fn move_towards(&mut self, other: &Model, t: f32) {
        debug_assert_eq!(self.config, other.config, "models of one configuration");
        for (a, b) in self.params.iter_mut().zip(&other.params) {
            a.as_mut_slice().iter_mut().zip(b.as_slice()).for_each(|(x, y)| *x += t * (*y - *x));
        }
    }

    /// Total number of scalar parameters.
    pub fn param_count(&self) -> usize {
        self.params.iter().map(|m| m.len()).sum()
    }

    /// One logit per candidate (higher = more relevant), computed without a tape.
    ///
    /// Errors name the offending input: a token id ≥ `hash_buckets`, an
    /// embedding of the wrong length or with NaN/Inf, a candidate with neither
    /// tokens nor a usable embedding, an invalid signal. An empty list gives
    /// an empty vector. With `native_dim == 0`, embeddings are ignored.
    pub fn score(&self, query: &Query<'_>, candidates: &[Candidate<'_>]) -> Result<Vec<f32>, Error> {
        if candidates.is_empty() {
            self.validate_query(query, None)?;
            return Ok(Vec::new());
        }
        let mut tape = Tape::inference(&self.params);
        let logits = self.forward(&mut tape, query, candidates)?;
        Ok(tape.into_value(logits).as_slice().to_vec())
    }

    /// Listwise loss `weight · KL(softmax(labels/T) ‖ softmax(logits/T))` and its parameter gradients.
    pub fn loss_and_gradients(
        &self,
        query: &Query<'_>,
        candidates: &[Candidate<'_>],
        labels: &[f32],
        temperature: f32,
        weight: f32,
    ) -> Result<(f32, Gradients), Error> {
        if labels.len() != candidates.len() {
            return Err(Error::DimensionMismatch {
                input: "labels".into(),
                expected: candidates.len(),
                actual: labels.len(),
            });
        }
        check_all_finite(|| "labels".into(), labels)?;
        if candidates.is_empty() {
            return Ok((0.0, Gradients::empty(NUM_PARAMS)));
        }
        let mut tape = Tape::new(&self.params);
        let logits = self.forward(&mut tape, query, candidates)?;
        let loss = tape.listnet_loss(logits, labels, temperature, weight);
        let value = tape.value(loss)[(0, 0)];
        Ok((value, tape.backward(loss)))
    }

    fn check_tokens(&self, input: impl Fn() -> String, tokens: &[u32]) -> Result<(), Error> {
        let buckets = self.config.hash_buckets;
        match tokens.iter().find(|&&t| t >= buckets) {
            None => Ok(()),
            Some(&token) => Err(Error::TokenOutOfRange { input: input(), token, buckets }),
        }
    }

    /// Whether an embedding is used, after checking its length and values; a used
    /// embedding is appended to `sink`, if given.
    ///
    /// Checking and copying one embedding at a time lets the copy read what the
    /// check has just brought into the cache (a list of 100 × 768 floats does not fit).
    fn check_embedding(
        &self,
        input: impl Fn() -> String,
        embedding: Option<&[f32]>,
        sink: Option<&mut Vec<f32>>,
    ) -> Result<bool, Error> {
        let Some(e) = embedding else { return Ok(false) };
        if self.config.native_dim == 0 {
            return Ok(false);
        }
        if e.len() != self.config.native_dim {
            return Err(Error::DimensionMismatch { input: input(), expected: self.config.native_dim, actual: e.len() });
        }
        check_all_finite(&input, e)?;
        if let Some(sink) = sink {
            sink.extend_from_slice(e);
        }
        Ok(true)
    }

    fn validate_query(&self, query: &Query<'_>, sink: Option<&mut Vec<f32>>) -> Result<bool, Error> {
        self.check_tokens(|| "query tokens".into(), query.tokens)?;
        let used = self.check_embedding(|| "query embedding".into(), query.embedding, sink)?;
        encode_session(query.session, self.config.project_slots)?;
        Ok(used)
    }

    /// Checks a list without scoring it: token ids, embedding sizes and values,
    /// candidates without any path, raw signals and session signals. The error
    /// names the first offending input.
    pub fn validate(&self, query: &Query<'_>, candidates: &[Candidate<'_>]) -> Result<(), Error> {
        self.check_list(query, candidates, None)?;
        let signals: Vec<CandidateSignals> = candidates.iter().map(|c| c.signals).collect();
        encode_candidates(&signals)?;
        Ok(())
    }

    /// Checks a list and says which encoder paths it uses. With `embeddings`, every
    /// used pre-embedded vector (query first) is appended to it, in column order.
    fn check_list(
        &self,
        query: &Query<'_>,
        candidates: &[Candidate<'_>],
        mut embeddings: Option<&mut Vec<f32>>,
    ) -> Result<ListLayout, Error> {
        let query_emb = self.validate_query(query, embeddings.as_deref_mut())?;
        let mut emb_idx = Vec::new();
        let mut text_idx = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            self.check_tokens(|| format!("candidate {i} tokens"), c.tokens)?;
            let has_emb =
                self.check_embedding(|| format!("candidate {i} embedding"), c.embedding, embeddings.as_deref_mut())?;
            if !has_emb && c.tokens.is_empty() {
                return Err(Error::EmptyCandidate { index: i });
            }
            if has_emb {
                emb_idx.push(i);
            }
            if !c.tokens.is_empty() {
                text_idx.push(i);
            }
        }
        Ok(ListLayout { query_emb, emb_idx, text_idx })
    }

    /// Builds the logits (`1 × n`) on `tape`; the same code serves inference and training.
    ///
    /// Parameters are read only through the tape (which may hold perturbed
    /// copies, as the finite-difference tests do); `self` supplies the config.
    pub(crate) fn forward<'p>(
        &self,
        tape: &mut Tape<'p>,
        query: &Query<'_>,
        candidates: &[Candidate<'_>],
    ) -> Result<Var, Error> {
        let cfg = &self.config;
        let offered =
            usize::from(query.embedding.is_some()) + candidates.iter().filter(|c| c.embedding.is_some()).count();
        let mut embeddings = Vec::with_capacity(cfg.native_dim * offered);
        let layout = self.check_list(query, candidates, Some(&mut embeddings))?;
        let ListLayout { query_emb, emb_idx, text_idx } = layout;
        let signals: Vec<CandidateSignals> = candidates.iter().map(|c| c.signals).collect();
        let features = encode_candidates(&signals)?;
        let session = encode_session(query.session, cfg.project_slots)?;

        // ---- session context u = W_s·s + P[slot] ----
        let ws = tape.param(P_SESSION);
        let s = tape.input(DMatrix::from_column_slice(cfg.session_features, 1, session.features.as_slice()));
        let mut u = tape.matmul(ws, s);
        if let Some(slot) = session.project_slot {
            let p = tape.embedding_bag(P_PROJECT, vec![vec![(slot, 1.0)]]);
            u = tape.add(u, p);
        }

        // ---- encoders: every pre-embedded vector (query first) in one GEMM, every
        // text (query first) in one embedding bag; then each item averages its paths ----
        let n = candidates.len();
        let q_emb_cols = usize::from(query_emb);
        let q_text_cols = usize::from(!query.tokens.is_empty());
        let n_emb = q_emb_cols + emb_idx.len();
        let n_text = q_text_cols + text_idx.len();
        let e1 = (n_emb > 0).then(|| {
            let x = tape.input(Mat::from_vec(cfg.native_dim, n_emb, embeddings));
            self.embed_path(tape, x)
        });
        let e2 = (n_text > 0).then(|| {
            let mut bags = Vec::with_capacity(n_text);
            if q_text_cols == 1 {
                bags.push(mean_bag(query.tokens));
            }
            bags.extend(text_idx.iter().map(|&i| mean_bag(candidates[i].tokens)));
            self.text_path(tape, bags)
        });
        let all = match (e1, e2) {
            (Some(a), Some(b)) => tape.concat_cols(a, b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => unreachable!("every candidate has a path"),
        };
        // Column layout of `all`: [query emb?, candidate embs..., query text?, candidate texts...].
        let mut q_group = Vec::with_capacity(2);
        if query_emb {
            q_group.push(0);
        }
        if q_text_cols == 1 {
            q_group.push(n_emb);
        }
        // When every candidate has one path, its encodings are already a column
        // range of `all`, in candidate order: no per-candidate groups to build or pool.
        let enc = if text_idx.is_empty() && emb_idx.len() == n {
            tape.cols(all, q_emb_cols, n)
        } else if emb_idx.is_empty() && text_idx.len() == n {
            tape.cols(all, n_emb + q_text_cols, n)
        } else {
            let mut groups = vec![Vec::with_capacity(2); n];
            for (pos, &i) in emb_idx.iter().enumerate() {
                groups[i].push(q_emb_cols + pos);
            }
            for (pos, &i) in text_idx.iter().enumerate() {
                groups[i].push(n_emb + q_text_cols + pos);
            }
            tape.mean_pool(all, groups)
        };

        // ---- query: q = Q·encode(query) + u ----
        let q = if q_group.is_empty() {
            u
        } else {
            let e_q = tape.mean_pool(all, vec![q_group]);
            let qw = tape.param(P_Q);
            let qe = tape.matmul(qw, e_q);
            tape.add(qe, u)
        };

        // ---- session-modulated gate over [v; f] ----
        let g0 = tape.param(P_GATE);
        let gs = tape.param(P_GATE_SESSION);
        let gu = tape.matmul(gs, u);
        let gate = tape.add(g0, gu);

        // ---- q·k_i/√d + gate_v·v_i = w·e_i with w = (qᵀK/√d + gate_vᵀV)ᵀ: one
        // row vector instead of the d × n keys and value_dim × n values ----
        let q_t = tape.transpose(q);
        let kw = tape.param(P_K);
        let qk = tape.matmul(q_t, kw);
        let qk = tape.scale(qk, 1.0 / (cfg.dim as f32).sqrt());
        let gate_v = tape.rows(gate, 0, cfg.value_dim);
        let gate_v_t = tape.transpose(gate_v);
        let vw = tape.param(P_V);
        let gv = tape.matmul(gate_v_t, vw);
        let w = tape.add(qk, gv);
        let attended = tape.matmul(w, enc);

        // ---- gate_f·f_i ----
        let features_1 = with_bias_row(&features);
        let f = tape.input(features);
        let gate_f = tape.rows(gate, cfg.value_dim, cfg.features);
        let gate_f_t = tape.transpose(gate_f);
        let gated = tape.matmul(gate_f_t, f);
        let mut logits = tape.add(attended, gated);

        // ---- feature MLP: w_o · σ(W_h · [1; f]) ----
        let fa = tape.input(features_1);
        let wh = tape.param(P_FEATURE_HIDDEN);
        let pre = tape.matmul(wh, fa);
        let hidden = tape.sigmoid(pre);
        let wo = tape.param(P_FEATURE_OUT);
        let mlp = tape.matmul(wo, hidden);
        logits = tape.add(logits, mlp);

        // ---- learned exact-match term ----
        if !query.tokens.is_empty() {
            let mut qset = query.tokens.to_vec();
            qset.sort_unstable();
            qset.dedup();
            let bags: Vec<Vec<(u32, f32)>> = candidates
                .iter()
                .map(|c| {
                    let mut shared: Vec<u32> =
                        c.tokens.iter().copied().filter(|t| qset.binary_search(t).is_ok()).collect();
                    shared.sort_unstable();
                    shared.dedup();
                    shared.into_iter().map(|t| (t, 1.0)).collect()
                })
                .collect();
            if bags.iter().any(|b| !b.is_empty()) {
                let lex = tape.embedding_bag(P_LEXICAL, bags);
                logits = tape.add(logits, lex);
            }
        }
        Ok(logits)
    }

    fn embed_path<'p>(&self, tape: &mut Tape<'p>, x: Var) -> Var {
        let dw = tape.param(P_DOWN);
        let h = tape.matmul(dw, x);
        let g = tape.param(P_LNE_G);
        let b = tape.param(P_LNE_B);
        tape.layer_norm(h, g, b)
    }

    fn text_path<'p>(&self, tape: &mut Tape<'p>, bags: Vec<Vec<(u32, f32)>>) -> Var {
        let h = tape.embedding_bag(P_HASH, bags);
        let g = tape.param(P_LNT_G);
        let b = tape.param(P_LNT_B);
        tape.layer_norm(h, g, b)
    }
}

/// `[1; f]`: the features with a leading row of ones (the MLP's bias input).
fn with_bias_row(f: &Mat) -> Mat {
    f.clone().insert_row(0, 1.0)
}

/// Initial hidden weights of the feature MLP, `N(0, 1)`; also used to add the
/// MLP to a checkpoint written before it existed (with a fixed seed).
fn feature_hidden_init(rng: &mut Rng, shape: (usize, usize)) -> Mat {
    rng.fill(shape, 1.0)
}

/// The two feature-MLP tensors for a model that has none (a checkpoint from
/// before the MLP): deterministic hidden weights and zero output weights, so
/// the model scores exactly as before and the MLP can still learn.
pub(crate) fn feature_mlp_tensors(features: usize) -> [Mat; 2] {
    let mut rng = Rng(ChaCha8Rng::seed_from_u64(0x6d6c_7066));
    [feature_hidden_init(&mut rng, (FEATURE_HIDDEN, 1 + features)), Mat::zeros(1, FEATURE_HIDDEN)]
}

/// Which encoder paths a validated list uses.
struct ListLayout {
    query_emb: bool,
    emb_idx: Vec<usize>,
    text_idx: Vec<usize>,
}

const GATE_PRIOR: [(&str, f32); 6] = [
    ("bm25_norm", 1.0),
    ("lexical_overlap", 1.0),
    ("bm25_rank", 0.5),
    ("neighbor_score", 0.5),
    ("effective_rel", 0.5),
    ("superseded", -1.0),
];

/// Mean-pooling bag: every token with weight `1/len`.
fn mean_bag(tokens: &[u32]) -> Vec<(u32, f32)> {
    let w = 1.0 / tokens.len() as f32;
    tokens.iter().map(|&t| (t, w)).collect()
}

#[cfg(test)]
mod tests;
