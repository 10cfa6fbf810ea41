//! Signet compatibility: its 17 feature values mapped onto Engram's signals,
//! the lists `score` and `train` build from Signet-shaped params, and
//! [`signet_logits`], which scores those params with Signet's own weights
//! (an `SGPT` checkpoint) exactly as its sidecar does.
//!
//! # Feature mapping (reference §3 order)
//!
//! | # | Signet | Engram |
//! |---|---|---|
//! | 0 | `ln(age_days+1)` | `age_days = e^f − 1` (≥ 0) |
//! | 1 | importance | `importance` |
//! | 2 | `ln(access_count+1)` | `access_count = round(e^f − 1)` |
//! | 3, 4 | `sin/cos(2π·hour/24)` | session `hour = atan2(sin, cos)·24/2π` (fractional, local) |
//! | 5, 6 | `sin/cos(2π·dow/7)` | session `weekday`; the daemon sends JS `getDay()` (Sunday = 0), converted to Monday = 0 |
//! | 7, 8 | `sin/cos(2π·month0/12)` | session `month0` |
//! | 9 | `ln(max(0, gap_days)+1)` | session `gap_hours = 24·(e^f − 1)`; 0 means unknown |
//! | 10 | is_embedded | not read: `has_embedding` is whether the embedding is actually used |
//! | 11 | is_superseded | `superseded` |
//! | 12, 13 | entity / aspect slot ÷ 255 | no counterpart (hashed graph ids, not ordinal): ignored |
//! | 14 | is_constraint | `pinned` (a rule that always applies is what pinning means here) |
//! | 15 | `ln(structural_density+1)` | no counterpart: ignored |
//! | 16 | source = `ka_traversal` | `neighbor_score` (reached from a strong match through the graph) |
//!
//! Derived: `effective_score = importance·0.95^age` (1 when pinned, ÷10 when
//! superseded), exactly Signet's baseline. Unknown to Signet and left at
//! their defaults: BM25, lexical overlap, project match, tags, usage history.
//! The session signals come from the first row whose time features are set
//! (they are equal on every row); without any, from the clock. `project_slot`
//! `n > 0` becomes the project `signet-slot-n` (Signet's slot is a hash of the
//! project name, so equal slots stay equal); 0 means no project.
//!
//! # Missing inputs
//!
//! A candidate's embedding is used when its row has the model's `native_dim`
//! values; a text, when it has any token. A candidate with neither (Signet's
//! daemon sends `null` for memories without an embedding, and no texts) gets
//! the mean of the list's usable embeddings as a neutral stand-in, so its
//! similarity is average and its features decide; with no usable embedding
//! in the list at all, it gets one reserved "no content" token.

use std::f32::consts::TAU;

use predictor::baseline::effective_score;
use predictor::features::{CandidateSignals, SessionSignals};
use predictor::model::{Candidate, Model, Query};
use predictor::signet::{SignetCandidate, SignetModel};
use predictor::tokenizer::{fnv1a64, token_ids};
use shared::base::time::Ts;

use crate::error::{Error, Result};
use crate::protocol::SIGNET_FEATURES;

/// The reserved token of a candidate with no usable content.
pub fn no_content_token(buckets: u32) -> u32 {
    u32::try_from(fnv1a64(b"\0engram:no-content") % u64::from(buckets.max(1))).unwrap_or(0)
}

/// A candidate's signals from its Signet feature row (see the module table).
/// `has_embedding` is left false: the caller sets it.
pub fn candidate_signals(f: &[f32]) -> CandidateSignals {
    let get = |i: usize| f.get(i).copied().filter(|v| v.is_finite()).unwrap_or(0.0);
    let age_days = (get(0).clamp(0.0, 20.0).exp() - 1.0).max(0.0);
    let importance = get(1);
    let access = (get(2).clamp(0.0, 20.0).exp() - 1.0).round().max(0.0);
    let superseded = get(11) >= 0.5;
    let pinned = get(14) >= 0.5;
    let effective = effective_score(importance, age_days, pinned);
    CandidateSignals {
        age_days,
        importance,
        access_count: if access >= u32::MAX as f32 { u32::MAX } else { access as u32 },
        pinned,
        superseded,
        effective_score: if superseded { effective * 0.1 } else { effective },
        neighbor_score: get(16).clamp(0.0, 1.0),
        ..CandidateSignals::default()
    }
}

fn angle_fraction(sin: f32, cos: f32) -> f32 {
    (sin.atan2(cos) / TAU).rem_euclid(1.0)
}

/// Whether a row carries session time features (`sin² + cos²` of the hour ≈ 1).
fn has_time(f: &[f32]) -> bool {
    f.len() >= 10 && f[3].is_finite() && f[4].is_finite() && (f[3] * f[3] + f[4] * f[4]) > 0.25
}

/// The session signals from a Signet row with time features, or from `now`.
pub fn session_signals(row: Option<&[f32]>, project_slot: u64, now: Ts, tz: &jiff::tz::TimeZone) -> SessionSignals {
    let project = (project_slot > 0).then(|| format!("signet-slot-{project_slot}"));
    let Some(f) = row.filter(|f| has_time(f)) else {
        let parts = now.local_parts(tz);
        return SessionSignals {
            hour: parts.hour,
            weekday: parts.weekday,
            month0: parts.month0,
            gap_hours: None,
            project,
        };
    };
    let mut hour = angle_fraction(f[3], f[4]) * 24.0;
    if !(0.0..24.0).contains(&hour) {
        hour = 0.0;
    }
    let sunday0 = (angle_fraction(f[5], f[6]) * 7.0).round() as u8 % 7;
    let month0 = (angle_fraction(f[7], f[8]) * 12.0).round() as u8 % 12;
    let gap = f[9];
    SessionSignals {
        hour,
        weekday: (sunday0 + 6) % 7,
        month0,
        gap_hours: (gap.is_finite() && gap > 0.0).then(|| (gap.min(20.0).exp() - 1.0) * 24.0),
        project,
    }
}

/// Signet-shaped inputs of one list, before validation.
#[derive(Clone, Debug, Default)]
pub struct SignetInputs {
    /// Query embedding.
    pub context_embedding: Option<Vec<f32>>,
    /// Query text (Engram extension).
    pub context_text: Option<String>,
    /// Number of candidates.
    pub n: usize,
    /// Embedding rows (empty, or one per candidate).
    pub embeddings: Vec<Option<Vec<f32>>>,
    /// Texts (empty, or one per candidate).
    pub texts: Vec<Option<String>>,
    /// Feature rows (empty, or one per candidate).
    pub features: Vec<Option<Vec<f32>>>,
    /// Signet's project slot.
    pub project_slot: u64,
}

/// A validated list, ready for the model.
#[derive(Debug)]
pub struct List {
    query_tokens: Vec<u32>,
    query_embedding: Option<Vec<f32>>,
    session: SessionSignals,
    tokens: Vec<Vec<u32>>,
    embeddings: Vec<Option<Vec<f32>>>,
    /// The stand-in embedding of candidates without content.
    stand_in: Option<Vec<f32>>,
    uses_stand_in: Vec<bool>,
    signals: Vec<CandidateSignals>,
}

fn check_len(field: &str, got: usize, n: usize) -> Result<()> {
    if got != 0 && got != n {
        return Err(Error::params(field, format!("{got} rows for {n} candidates (give one per candidate, or none)")));
    }
    Ok(())
}

/// The largest magnitude a client's embedding or feature value may have.
/// Embeddings are unit-scale and features logarithms or fractions; values
/// near `f32::MAX` made the model's sums overflow to infinity.
pub const MAX_INPUT: f32 = 1e6;

fn check_finite(field: impl Fn() -> String, values: &[f32]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite() || v.abs() > MAX_INPUT) {
        Some(i) if values[i].is_finite() => Err(Error::params(
            field(),
            format!("value {i} ({}) is out of range (at most {MAX_INPUT:e} in magnitude)", values[i]),
        )),
        Some(i) => Err(Error::params(field(), format!("value {i} is not a finite number"))),
        None => Ok(()),
    }
}

/// Checks Signet-shaped inputs against the protocol's `native_dim`: one row
/// per candidate (or none) in each list, a context embedding of `native_dim`
/// values, 17-value feature rows, finite numbers everywhere they are used
/// (an embedding row of another length means "no embedding", as in Signet).
pub fn validate(inputs: &SignetInputs, native_dim: usize) -> Result<()> {
    let n = inputs.n;
    check_len("candidate_embeddings", inputs.embeddings.len(), n)?;
    check_len("candidate_texts", inputs.texts.len(), n)?;
    check_len("candidate_features", inputs.features.len(), n)?;
    if let Some(e) = &inputs.context_embedding {
        if e.len() != native_dim {
            return Err(Error::params(
                "context_embedding",
                format!("expected {native_dim} values (--native-dim), got {}", e.len()),
            ));
        }
        check_finite(|| "context_embedding".into(), e)?;
    }
    for (i, row) in inputs.features.iter().enumerate() {
        if let Some(row) = row {
            if row.len() != SIGNET_FEATURES {
                return Err(Error::params(
                    format!("candidate_features[{i}]"),
                    format!("expected {SIGNET_FEATURES} values, got {}", row.len()),
                ));
            }
            check_finite(|| format!("candidate_features[{i}]"), row)?;
        }
    }
    for (i, e) in inputs.embeddings.iter().enumerate() {
        if let Some(v) = e.as_ref().filter(|v| v.len() == native_dim) {
            check_finite(|| format!("candidate_embeddings[{i}]"), v)?;
        }
    }
    Ok(())
}

/// The mean of the usable rows, the stand-in of a candidate with no content
/// (see the module documentation).
fn mean_row<'a>(rows: impl Iterator<Item = &'a Vec<f32>>, dim: usize) -> Option<Vec<f32>> {
    let mut mean = vec![0.0f32; dim];
    let mut k = 0usize;
    for v in rows {
        for (m, x) in mean.iter_mut().zip(v.iter()) {
            *m += x;
        }
        k += 1;
    }
    (k > 0).then(|| {
        mean.iter_mut().for_each(|m| *m /= k as f32);
        mean
    })
}

/// Logits of Signet's own model for `inputs` (validated as [`validate`]
/// does), computed exactly as its sidecar computes them (reference §3), with
/// what Signet refuses made usable: a missing context embedding is zeros (no
/// similarity term), a candidate with neither a usable embedding nor a text
/// gets the mean of the list's usable embeddings (else an empty text, which
/// encodes to zeros), a missing feature row is zeros (as in Signet).
pub fn signet_logits(model: &SignetModel, native_dim: usize, inputs: &SignetInputs) -> Result<Vec<f64>> {
    validate(inputs, native_dim)?;
    let dim = model.config.native_dim;
    let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let context = inputs.context_embedding.as_deref().filter(|e| e.len() == dim).map_or(vec![0.0; dim], wide);
    let usable = |i: usize| inputs.embeddings.get(i).and_then(Option::as_ref).filter(|v| v.len() == dim);
    let text = |i: usize| inputs.texts.get(i).and_then(Option::as_deref);
    let stand_in = mean_row((0..inputs.n).filter_map(usable), dim).map(|m| wide(&m));
    let embeddings: Vec<Option<Vec<f64>>> = (0..inputs.n)
        .map(|i| match usable(i) {
            Some(v) => Some(wide(v)),
            None if text(i).is_none() => stand_in.clone(),
            None => None,
        })
        .collect();
    let features: Vec<Option<Vec<f64>>> =
        (0..inputs.n).map(|i| inputs.features.get(i).and_then(Option::as_deref).map(wide)).collect();
    let candidates: Vec<SignetCandidate<'_>> = (0..inputs.n)
        .map(|i| SignetCandidate {
            embedding: embeddings[i].as_deref(),
            text: text(i).or(embeddings[i].is_none().then_some("")),
            features: features[i].as_deref(),
        })
        .collect();
    let slot = usize::try_from(inputs.project_slot).unwrap_or(usize::MAX);
    Ok(model.logits(&context, &candidates, slot)?)
}

impl List {
    /// Validates `inputs` against the protocol's `native_dim` and builds the
    /// model inputs (see the module documentation).
    pub fn build(
        model: &Model,
        native_dim: usize,
        inputs: SignetInputs,
        now: Ts,
        tz: &jiff::tz::TimeZone,
    ) -> Result<List> {
        validate(&inputs, native_dim)?;
        let cfg = *model.config();
        let n = inputs.n;
        let usable = |len: usize| cfg.native_dim > 0 && len == cfg.native_dim && len == native_dim;
        let query_embedding = inputs.context_embedding.filter(|e| usable(e.len()));
        let query_tokens = inputs.context_text.as_deref().map(|t| token_ids(t, cfg.hash_buckets)).unwrap_or_default();
        let session_row = inputs.features.iter().flatten().map(Vec::as_slice).find(|f| has_time(f));
        let session = session_signals(session_row, inputs.project_slot, now, tz);
        let mut embeddings: Vec<Option<Vec<f32>>> =
            if inputs.embeddings.is_empty() { vec![None; n] } else { inputs.embeddings };
        for e in &mut embeddings {
            // Signet: a row of another length means "no embedding".
            if !e.as_ref().is_some_and(|v| usable(v.len())) {
                *e = None;
            }
        }
        let mut tokens: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (t, text) in tokens.iter_mut().zip(&inputs.texts) {
            if let Some(text) = text {
                *t = token_ids(text, cfg.hash_buckets);
            }
        }
        let mut signals: Vec<CandidateSignals> = (0..n)
            .map(|i| inputs.features.get(i).and_then(Option::as_deref).map(candidate_signals).unwrap_or_default())
            .collect();
        for (s, e) in signals.iter_mut().zip(&embeddings) {
            s.has_embedding = e.is_some();
        }
        // Stand-ins for candidates with no usable content.
        let empty: Vec<bool> = (0..n).map(|i| embeddings[i].is_none() && tokens[i].is_empty()).collect();
        let mut stand_in = None;
        if empty.iter().any(|&e| e) {
            stand_in = mean_row(embeddings.iter().flatten(), cfg.native_dim);
            if stand_in.is_none() {
                let token = no_content_token(cfg.hash_buckets);
                for (t, _) in tokens.iter_mut().zip(&empty).filter(|(_, e)| **e) {
                    t.push(token);
                }
            }
        }
        let uses_stand_in = if stand_in.is_some() { empty } else { vec![false; n] };
        Ok(List { query_tokens, query_embedding, session, tokens, embeddings, stand_in, uses_stand_in, signals })
    }

    /// The query view.
    pub fn query(&self) -> Query<'_> {
        Query { tokens: &self.query_tokens, embedding: self.query_embedding.as_deref(), session: &self.session }
    }

    /// The candidate views.
    pub fn candidates(&self) -> Vec<Candidate<'_>> {
        (0..self.tokens.len())
            .map(|i| Candidate {
                tokens: &self.tokens[i],
                embedding: if self.uses_stand_in[i] { self.stand_in.as_deref() } else { self.embeddings[i].as_deref() },
                signals: self.signals[i],
            })
            .collect()
    }

    /// The session signals used.
    pub fn session(&self) -> &SessionSignals {
        &self.session
    }

    /// Model logits for the list.
    pub fn logits(&self, model: &Model) -> Result<Vec<f32>> {
        Ok(model.score(&self.query(), &self.candidates())?)
    }
}

/// Softmax of `logits` in f64 (what Signet returns as `score`).
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    softmax64(&logits.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>())
}

/// Softmax of f64 logits (Signet's weights score in f64).
pub fn softmax64(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
    let e: Vec<f64> = logits.iter().map(|&v| (v - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}

/// Positions sorted by descending score, ties in input order.
pub fn order_desc(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

/// Builds the 17 Signet features of one candidate, the way Signet's daemon
/// does at serving time (`buildCandidateFeatures`), from raw values.
#[derive(Clone, Copy, Debug, Default)]
pub struct FeatureRow {
    /// Memory age at the session, in days.
    pub age_days: f64,
    /// Importance.
    pub importance: f64,
    /// Access count at the session.
    pub access_count: f64,
    /// Local hour (fractional).
    pub hour: f64,
    /// Day of week, Sunday = 0 (JS `getDay()`, as the daemon sends).
    pub dow_sunday0: f64,
    /// Month, January = 0.
    pub month0: f64,
    /// Days since the previous session (0 when unknown).
    pub gap_days: f64,
    /// Has an embedding row.
    pub is_embedded: bool,
    /// Superseded.
    pub superseded: bool,
    /// Entity slot (0..=255).
    pub entity_slot: f64,
    /// Aspect slot (0..=255).
    pub aspect_slot: f64,
    /// A constraint (or, for Engram data, pinned).
    pub is_constraint: bool,
    /// Structural density.
    pub structural_density: f64,
    /// Came from knowledge-graph traversal.
    pub ka_traversal: bool,
}

impl FeatureRow {
    /// The 17 values.
    pub fn values(&self) -> Vec<f32> {
        let b = |x: bool| if x { 1.0 } else { 0.0 };
        let tau = std::f64::consts::TAU;
        [
            (self.age_days.max(0.0) + 1.0).ln(),
            self.importance,
            (self.access_count.max(0.0) + 1.0).ln(),
            (tau * self.hour / 24.0).sin(),
            (tau * self.hour / 24.0).cos(),
            (tau * self.dow_sunday0 / 7.0).sin(),
            (tau * self.dow_sunday0 / 7.0).cos(),
            (tau * self.month0 / 12.0).sin(),
            (tau * self.month0 / 12.0).cos(),
            (self.gap_days.max(0.0) + 1.0).ln(),
            b(self.is_embedded),
            b(self.superseded),
            self.entity_slot / 255.0,
            self.aspect_slot / 255.0,
            b(self.is_constraint),
            (self.structural_density.max(0.0) + 1.0).ln(),
            b(self.ka_traversal),
        ]
        .iter()
        .map(|&v| v as f32)
        .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use predictor::model::ModelConfig;

    fn row(f: FeatureRow) -> Vec<f32> {
        f.values()
    }

    #[test]
    fn features_round_trip_through_the_mapping() {
        let r = row(FeatureRow {
            age_days: 12.5,
            importance: 0.7,
            access_count: 9.0,
            hour: 14.5,
            dow_sunday0: 0.0,
            month0: 10.0,
            gap_days: 2.0,
            superseded: true,
            is_constraint: true,
            ka_traversal: true,
            ..FeatureRow::default()
        });
        let s = candidate_signals(&r);
        assert!((s.age_days - 12.5).abs() < 1e-3, "{}", s.age_days);
        assert_eq!(s.access_count, 9);
        assert!(s.superseded && s.pinned);
        assert_eq!(s.neighbor_score, 1.0);
        assert!((s.effective_score - 0.1).abs() < 1e-6, "pinned → 1, superseded → ÷10");
        let ses = session_signals(Some(&r), 5, Ts(0), &jiff::tz::TimeZone::UTC);
        assert!((ses.hour - 14.5).abs() < 1e-3, "{}", ses.hour);
        assert_eq!(ses.weekday, 6, "Sunday (JS 0) is 6 with Monday = 0");
        assert_eq!(ses.month0, 10);
        assert!((ses.gap_hours.unwrap() - 48.0).abs() < 1e-2);
        assert_eq!(ses.project.as_deref(), Some("signet-slot-5"));
        // Unknown time features fall back to the clock; slot 0 is no project.
        let ses = session_signals(Some(&[0.0; 17]), 0, Ts::from_civil(2026, 3, 4, 9, 30, 0), &jiff::tz::TimeZone::UTC);
        assert!((ses.hour - 9.5).abs() < 1e-3);
        assert_eq!((ses.weekday, ses.month0, ses.project), (2, 2, None));
    }

    #[test]
    fn missing_embeddings_get_a_neutral_stand_in() {
        let model = Model::new(ModelConfig { native_dim: 4, ..ModelConfig::default() }, 1).unwrap();
        let inputs = SignetInputs {
            context_embedding: Some(vec![1.0, 0.0, 0.0, 0.0]),
            n: 3,
            embeddings: vec![Some(vec![1.0, 0.0, 0.0, 0.0]), None, Some(vec![0.0, 1.0])],
            ..SignetInputs::default()
        };
        let list = List::build(&model, 4, inputs, Ts(0), &jiff::tz::TimeZone::UTC).unwrap();
        let c = list.candidates();
        assert_eq!(c[0].embedding.unwrap(), &[1.0, 0.0, 0.0, 0.0]);
        assert_eq!(c[1].embedding.unwrap(), &[1.0, 0.0, 0.0, 0.0], "mean of the usable rows");
        assert!(!c[1].signals.has_embedding);
        assert!(c[2].embedding.is_some(), "a row of the wrong length is missing, then stood in for");
        assert_eq!(list.logits(&model).unwrap().len(), 3);
        // Nothing usable at all: the reserved token.
        let inputs = SignetInputs { n: 2, ..SignetInputs::default() };
        let list = List::build(&model, 4, inputs, Ts(0), &jiff::tz::TimeZone::UTC).unwrap();
        assert_eq!(list.candidates()[1].tokens, &[no_content_token(model.config().hash_buckets)]);
        assert_eq!(list.logits(&model).unwrap().len(), 2);
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let model = Model::new(ModelConfig { native_dim: 4, ..ModelConfig::default() }, 1).unwrap();
        let tz = jiff::tz::TimeZone::UTC;
        let err = |inputs| List::build(&model, 4, inputs, Ts(0), &tz).unwrap_err().to_string();
        let e = err(SignetInputs { context_embedding: Some(vec![0.0; 3]), n: 1, ..SignetInputs::default() });
        assert!(e.starts_with("context_embedding:"), "{e}");
        let e = err(SignetInputs { n: 2, features: vec![None, Some(vec![0.0; 10])], ..SignetInputs::default() });
        assert!(e.starts_with("candidate_features[1]:"), "{e}");
        let e = err(SignetInputs { n: 2, texts: vec![None], ..SignetInputs::default() });
        assert!(e.starts_with("candidate_texts:"), "{e}");
        let e = err(SignetInputs {
            n: 1,
            embeddings: vec![Some(vec![0.0, f32::INFINITY, 0.0, 0.0])],
            ..SignetInputs::default()
        });
        assert!(e.starts_with("candidate_embeddings[0]:"), "{e}");
    }

    #[test]
    fn softmax_sums_to_one_and_order_is_stable() {
        let p = softmax(&[1.0, 3.0, 1.0]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(order_desc(&p), vec![1, 0, 2]);
    }
}
