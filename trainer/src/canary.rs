//! The canary set, evaluation of models and the baseline on it, and its metrics.
//!
//! **Membership** is a fixed rule on the session key, so it survives replays and
//! needs no state: a session is a canary session when the first byte of
//! `blake3("engram-canary-v1:" ‖ key)` is below 43 (about one session in six).
//! Canary sessions are scored and compared like any other but **never trained
//! on**, so the canary measures generalisation.
//!
//! **The frozen set** evaluated at a moment `t` changes once a week (seed 002
//! "Canary Evaluation Set"): the (up to) 25 canary sessions scored with
//! confidence ≥ 0.6 and at least one positive label before the start of `t`'s
//! week (Monday 00:00 UTC), highest confidence first (then newest, then key).
//! While fewer than 5 qualify that way (a new installation's first week), the
//! sessions scored before `t` are used instead. Each ranking of a set session
//! is one list: its recorded query and candidates, rebuilt with
//! [`shared::domain::training::data::build_list`], labelled with the session's outcome.
//!
//! A dataset file can replace the set (the hook for the LoCoMo evaluation):
//! JSON lines of `{"query": "…", "memory_ids": ["mem_…"], "labels": [1, 0],
//! "project": null, "at_ms": 1760000000000}` naming memories of the store.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use predictor::fusion::order_by_score;
use predictor::metrics::ndcg_at_k;
use predictor::model::{Model, ModelConfig, OwnedCandidate};
use serde::Deserialize;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::time::Ts;
use shared::domain::rank::state::MIN_SCORER_CONFIDENCE;
use shared::domain::training::data::{self, BuiltList, ListOptions, ListSpec, ScoredSession};
use shared::storage::event::CanaryMetrics;
use shared::storage::store::Store;

use crate::continuity::SUPERSEDED_LABEL;
use crate::error::{Error, Result};

/// Sessions in the frozen set.
pub const SET_SIZE: usize = 25;
/// Below this many sessions before the week's start, the set is taken up to now.
pub const MIN_FROZEN: usize = 5;
/// Gates need at least this many lists with something relevant.
pub const MIN_LISTS: usize = 3;
const CANARY_SALT: &[u8] = b"engram-canary-v1:";
const CANARY_BYTE_BELOW: u8 = 43;
const DAY_MS: i64 = 86_400_000;

/// Whether `session` belongs to the canary (never trained on).
pub fn is_canary(session: &SessionKey) -> bool {
    let mut h = blake3::Hasher::new();
    h.update(CANARY_SALT);
    h.update(session.as_str().as_bytes());
    h.finalize().as_bytes()[0] < CANARY_BYTE_BELOW
}

/// Monday 00:00 UTC of the week holding `t`.
pub fn week_start(t: Ts) -> Ts {
    let days = t.0.div_euclid(DAY_MS);
    // 1970-01-01 was a Thursday (Monday-based weekday 3).
    let weekday = (days + 3).rem_euclid(7);
    Ts((days - weekday) * DAY_MS)
}

fn has_positive_label(store: &Store, session: &SessionKey) -> Result<bool> {
    Ok(data::session_labels(store, session)?.values().any(|&l| l > 0.0))
}

/// The frozen canary sessions at `at` (see the module docs) and the moment
/// they were frozen at.
pub fn frozen_sessions(store: &Store, at: Ts) -> Result<(Vec<ScoredSession>, Ts)> {
    let all: Vec<ScoredSession> = data::scored_sessions(store, MIN_SCORER_CONFIDENCE)?
        .into_iter()
        .filter(|s| is_canary(&s.session_key))
        .collect();
    let mut eligible = Vec::new();
    for s in all {
        if has_positive_label(store, &s.session_key)? {
            eligible.push(s);
        }
    }
    let pick = |before: Ts| -> Vec<ScoredSession> {
        let mut v: Vec<ScoredSession> = eligible.iter().filter(|s| s.scored_ms < before.0).cloned().collect();
        v.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then(b.scored_ms.cmp(&a.scored_ms))
                .then_with(|| a.session_key.cmp(&b.session_key))
        });
        v.truncate(SET_SIZE);
        v
    };
    let week = week_start(at);
    let frozen = pick(week);
    if frozen.len() >= MIN_FROZEN {
        return Ok((frozen, week));
    }
    Ok((pick(Ts(at.0.saturating_add(1))), at))
}

/// Labels of a session for evaluation and training: the recorded outcome, with
/// memories superseded since then labelled −0.3.
pub fn apply_negatives(list: &mut BuiltList) {
    for (label, superseded) in list.sample.labels.iter_mut().zip(&list.superseded) {
        if *superseded {
            *label = SUPERSEDED_LABEL;
        }
    }
}

/// One list per ranking of `sessions`, built for a model of `opts`' shape.
pub fn session_lists(
    store: &Store,
    sessions: &[ScoredSession],
    weight_by_confidence: bool,
    opts: &ListOptions<'_>,
) -> Result<Vec<BuiltList>> {
    let mut out = Vec::new();
    for s in sessions {
        let labels = data::session_labels(store, &s.session_key)?;
        let label = |id: &MemoryId| labels.get(id).copied().unwrap_or(0.0);
        let weight = if weight_by_confidence { s.confidence.clamp(0.0, 1.0) } else { 1.0 };
        for r in data::session_rankings(store, &s.session_key)? {
            let ids: Vec<MemoryId> = r.candidates.iter().map(|c| c.memory_id.clone()).collect();
            let spec = ListSpec {
                query: &r.query,
                project: r.project.as_deref().or(s.project.as_deref()),
                session: Some(&s.session_key),
                at: Ts(r.served_ms),
                memory_ids: &ids,
            };
            if let Some(mut list) = data::build_list(store, &spec, &label, weight, opts)? {
                apply_negatives(&mut list);
                out.push(list);
            }
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct DatasetLine {
    query: String,
    memory_ids: Vec<MemoryId>,
    labels: Vec<f32>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    at_ms: Option<i64>,
}

/// Lists from a dataset file (see the module docs); `at` is used for lines without `at_ms`.
pub fn dataset_lists(store: &Store, path: &Path, at: Ts, opts: &ListOptions<'_>) -> Result<Vec<BuiltList>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| Error::Dataset { path: path.to_path_buf(), line: i + 1, reason };
        let d: DatasetLine = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        if d.memory_ids.len() != d.labels.len() {
            return Err(bad(format!("{} memory ids but {} labels", d.memory_ids.len(), d.labels.len())));
        }
        if d.labels.iter().any(|l| !l.is_finite()) {
            return Err(bad("a label is not finite".into()));
        }
        let labels: BTreeMap<&MemoryId, f32> = d.memory_ids.iter().zip(d.labels.iter().copied()).collect();
        let label = |id: &MemoryId| labels.get(id).copied().unwrap_or(0.0);
        let spec = ListSpec {
            query: &d.query,
            project: d.project.as_deref(),
            session: None,
            at: d.at_ms.map_or(at, Ts),
            memory_ids: &d.memory_ids,
        };
        out.extend(data::build_list(store, &spec, &label, 1.0, opts)?);
    }
    Ok(out)
}

/// List options for a model's shape.
pub fn options_for<'a>(config: &ModelConfig, tz: &'a jiff::tz::TimeZone) -> ListOptions<'a> {
    ListOptions { tz, hash_buckets: config.hash_buckets, native_dim: config.native_dim }
}

/// A model's scores on each list (`Err` names the list that failed).
pub fn score_lists(model: &Model, lists: &[BuiltList]) -> Result<Vec<Vec<f32>>> {
    lists
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let cands: Vec<_> = l.sample.candidates.iter().map(OwnedCandidate::as_candidate).collect();
            model
                .score(&l.sample.query.as_query(), &cands)
                .map_err(|e| Error::predictor(format!("score canary list {i}"), e))
        })
        .collect()
}

/// Mean NDCG@10 over the lists with a positive label; `None` when there are none.
pub fn mean_ndcg(lists: &[BuiltList], scores: &[Vec<f32>]) -> Option<f32> {
    let mut sum = 0.0f64;
    let mut n = 0usize;
    for (l, s) in lists.iter().zip(scores) {
        if l.sample.labels.iter().any(|&x| x > 0.0) {
            sum += f64::from(ndcg_at_k(&order_by_score(s), &l.sample.labels, 10));
            n += 1;
        }
    }
    (n > 0).then(|| (sum / n as f64) as f32)
}

/// Lists with something relevant to rank.
pub fn evaluable(lists: &[BuiltList]) -> usize {
    lists.iter().filter(|l| l.sample.labels.iter().any(|&x| x > 0.0)).count()
}

fn variance(xs: &[f32]) -> f32 {
    if xs.is_empty() {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    (xs.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n) as f32
}

fn top5(ids: &[MemoryId], scores: &[f32]) -> HashSet<MemoryId> {
    order_by_score(scores).into_iter().take(5).filter_map(|i| ids.get(i).cloned()).collect()
}

/// Canary metrics of a candidate against the serving model and the baseline.
/// `serving` pairs the serving model's lists (built for its shape) with its scores.
pub fn metrics(
    lists: &[BuiltList],
    candidate: &[Vec<f32>],
    serving: Option<(&[BuiltList], &[Vec<f32>])>,
) -> CanaryMetrics {
    let baseline: Vec<Vec<f32>> = lists.iter().map(|l| l.baseline.clone()).collect();
    let ndcg = mean_ndcg(lists, candidate);
    let serving_ndcg = serving.and_then(|(l, s)| mean_ndcg(l, s));
    let score_variance = (!lists.is_empty())
        .then(|| candidate.iter().map(|s| f64::from(variance(s))).sum::<f64>() / candidate.len().max(1) as f64)
        .map(|v| v as f32);
    let (mut overlap, mut churn, mut n) = (0.0f64, 0usize, 0usize);
    if let Some((serving_lists, serving_scores)) = serving {
        let by_ranking: BTreeMap<Vec<&MemoryId>, usize> =
            serving_lists.iter().enumerate().map(|(i, l)| (l.memory_ids.iter().collect::<Vec<_>>(), i)).collect();
        for (l, s) in lists.iter().zip(candidate) {
            let key: Vec<&MemoryId> = l.memory_ids.iter().collect();
            let Some(&j) = by_ranking.get(&key) else { continue };
            let a = top5(&l.memory_ids, s);
            let b = top5(&serving_lists[j].memory_ids, &serving_scores[j]);
            let denom = a.len().min(b.len()).max(1);
            overlap += a.intersection(&b).count() as f64 / denom as f64;
            churn += usize::from(a != b);
            n += 1;
        }
    }
    CanaryMetrics {
        ndcg,
        ndcg_delta: ndcg.zip(serving_ndcg).map(|(c, s)| c - s),
        serving_ndcg,
        baseline_ndcg: mean_ndcg(lists, &baseline),
        score_variance: score_variance.filter(|v| v.is_finite()),
        topk_churn: (n > 0).then(|| churn as f32 / n as f32),
        top5_overlap: (n > 0).then(|| (overlap / n as f64) as f32),
        sessions: u32::try_from(lists.len()).unwrap_or(u32::MAX),
    }
}

/// Distinct memories across lists (for messages).
pub fn distinct_memories(lists: &[BuiltList]) -> usize {
    lists.iter().flat_map(|l| l.memory_ids.iter()).collect::<BTreeSet<_>>().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canary_membership_is_stable_and_about_one_in_six() {
        let keys: Vec<SessionKey> = (0..3000).map(|i| SessionKey::new("claude", &format!("s{i}"))).collect();
        let n = keys.iter().filter(|k| is_canary(k)).count();
        assert!((400..600).contains(&n), "{n} of 3000");
        assert_eq!(is_canary(&keys[7]), is_canary(&SessionKey::new("claude", "s7")));
    }

    #[test]
    fn weeks_start_on_monday_utc() {
        // 2026-03-04 is a Wednesday.
        let wed = Ts::from_civil(2026, 3, 4, 15, 30, 0);
        assert_eq!(week_start(wed), Ts::from_civil(2026, 3, 2, 0, 0, 0));
        let mon = Ts::from_civil(2026, 3, 2, 0, 0, 0);
        assert_eq!(week_start(mon), mon);
        assert_eq!(week_start(Ts(mon.0 - 1)), Ts::from_civil(2026, 2, 23, 0, 0, 0));
    }
}
