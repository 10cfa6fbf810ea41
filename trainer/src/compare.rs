//! Predictor against baseline on one scored session.
//!
//! For every ranking served in the session, the *labelled pool* is both
//! rankers' top 10 plus the injected memories (seed 002 "Success Rate
//! Tracking"), labelled with the session's outcome labels (0 without
//! evidence; negative labels count as 0 in the gains). Each ranker's recorded
//! ranking is restricted to the pool and scored with NDCG@10 (ideal DCG over
//! the pool's labels). A ranking whose pool holds nothing relevant says
//! nothing about either ranker and is skipped. The session's NDCGs are the
//! means over the rankings the predictor scored; margin = predictor − baseline.
//! A session with no such ranking is recorded but not compared.

use std::collections::{BTreeMap, BTreeSet};

use predictor::metrics::ndcg_at_k;
use shared::base::ids::MemoryId;
use shared::domain::training::data::{RecordedCandidate, RecordedRanking};

use crate::continuity::POOL_TOP;

/// NDCG cut-off.
pub const K: usize = 10;

/// The comparison of one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Mean NDCG@10 of the predictor's rankings.
    pub predictor_ndcg: f32,
    /// Mean NDCG@10 of the baseline's rankings (same rankings).
    pub baseline_ndcg: f32,
    /// predictor − baseline, when the session can be compared.
    pub margin: Option<f32>,
    /// Why it cannot be, otherwise.
    pub excluded: Option<&'static str>,
    /// Rankings that entered the means.
    pub rankings_compared: u32,
    /// Predictor top 10 (of the first compared ranking), in order.
    pub predictor_top_ids: Vec<MemoryId>,
    /// Baseline top 10 (of the same ranking), in order.
    pub baseline_top_ids: Vec<MemoryId>,
    /// Labels of the union of the labelled pools.
    pub relevance_scores: BTreeMap<MemoryId, f32>,
    /// Size of that union.
    pub candidate_count: u32,
}

fn in_pool(c: &RecordedCandidate) -> bool {
    c.injected || c.baseline_rank <= POOL_TOP || c.predictor_rank.is_some_and(|p| p <= POOL_TOP)
}

fn top_ids(candidates: &[RecordedCandidate], rank: impl Fn(&RecordedCandidate) -> Option<u32>) -> Vec<MemoryId> {
    let mut ranked: Vec<(u32, &MemoryId)> =
        candidates.iter().filter_map(|c| rank(c).map(|r| (r, &c.memory_id))).collect();
    ranked.sort();
    ranked.into_iter().take(K).map(|(_, id)| id.clone()).collect()
}

fn ndcg_by(pool: &[&RecordedCandidate], labels: &[f32], rank: impl Fn(&RecordedCandidate) -> u32) -> f32 {
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| rank(pool[a]).cmp(&rank(pool[b])).then_with(|| pool[a].memory_id.cmp(&pool[b].memory_id)));
    ndcg_at_k(&order, labels, K)
}

/// Compares the rankers on a session's rankings with its labels.
pub fn compare(rankings: &[RecordedRanking], labels: &BTreeMap<MemoryId, f32>) -> Comparison {
    let label = |id: &MemoryId| labels.get(id).copied().unwrap_or(0.0);
    let mut union: BTreeSet<&MemoryId> = BTreeSet::new();
    let (mut p_sum, mut b_sum, mut n) = (0.0f32, 0.0f32, 0u32);
    let (mut b_only_sum, mut b_only_n) = (0.0f32, 0u32);
    let mut first: Option<&RecordedRanking> = None;
    for r in rankings {
        let pool: Vec<&RecordedCandidate> = r.candidates.iter().filter(|c| in_pool(c)).collect();
        union.extend(pool.iter().map(|c| &c.memory_id));
        let pool_labels: Vec<f32> = pool.iter().map(|c| label(&c.memory_id)).collect();
        if !pool_labels.iter().any(|&l| l > 0.0) {
            continue;
        }
        let b = ndcg_by(&pool, &pool_labels, |c| c.baseline_rank);
        if r.has_predictor() {
            let p = ndcg_by(&pool, &pool_labels, |c| c.predictor_rank.unwrap_or(u32::MAX));
            p_sum += p;
            b_sum += b;
            n += 1;
            first.get_or_insert(r);
        } else {
            b_only_sum += b;
            b_only_n += 1;
        }
    }
    let shown = first.or_else(|| rankings.first());
    let mut out = Comparison {
        predictor_top_ids: shown.map(|r| top_ids(&r.candidates, |c| c.predictor_rank)).unwrap_or_default(),
        baseline_top_ids: shown.map(|r| top_ids(&r.candidates, |c| Some(c.baseline_rank))).unwrap_or_default(),
        relevance_scores: union.iter().map(|id| ((*id).clone(), label(id))).collect(),
        candidate_count: u32::try_from(union.len()).unwrap_or(u32::MAX),
        rankings_compared: n,
        ..Comparison::default()
    };
    if n > 0 {
        out.predictor_ndcg = p_sum / n as f32;
        out.baseline_ndcg = b_sum / n as f32;
        out.margin = Some(out.predictor_ndcg - out.baseline_ndcg);
    } else if b_only_n > 0 {
        out.baseline_ndcg = b_only_sum / b_only_n as f32;
        out.excluded = Some("the predictor scored none of the session's rankings");
    } else {
        out.excluded = Some("nothing relevant in the labelled pool of any ranking");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: &str, b: u32, p: Option<u32>, injected: bool) -> RecordedCandidate {
        RecordedCandidate {
            memory_id: id.into(),
            baseline_score: 0.0,
            baseline_rank: b,
            predictor_score: p.map(|r| -(r as f32)),
            predictor_rank: p,
            rank: b,
            injected,
        }
    }

    fn ranking(candidates: Vec<RecordedCandidate>) -> RecordedRanking {
        RecordedRanking {
            ranking_id: "rk".into(),
            session_key: None,
            trigger: "prompt".into(),
            query: "q".into(),
            project: None,
            served_ms: 0,
            alpha: 1.0,
            model_version: Some(1),
            candidates,
        }
    }

    #[test]
    fn ndcg_over_the_labelled_pool() {
        // 12 candidates; the relevant one is baseline #3 and predictor #1.
        let mut cs: Vec<RecordedCandidate> = (1..=12)
            .map(|i| {
                cand(
                    &format!("m{i:02}"),
                    i,
                    Some(if i == 3 {
                        1
                    } else if i < 3 {
                        i + 1
                    } else {
                        i
                    }),
                    i <= 2,
                )
            })
            .collect();
        // m12: outside both top 10s and not injected: not in the pool even if relevant.
        cs[11].baseline_rank = 12;
        let labels: BTreeMap<MemoryId, f32> = [("m03".into(), 1.0), ("m12".into(), 1.0)].into();
        let c = compare(&[ranking(cs)], &labels);
        assert_eq!(c.candidate_count, 10);
        assert!((c.predictor_ndcg - 1.0).abs() < 1e-6);
        assert!((c.baseline_ndcg - 0.5).abs() < 1e-6, "1/log2(4) = 0.5: {}", c.baseline_ndcg);
        assert!((c.margin.unwrap() - 0.5).abs() < 1e-6);
        assert_eq!(c.predictor_top_ids[0].as_str(), "m03");
        assert_eq!(c.baseline_top_ids[0].as_str(), "m01");
        assert!(!c.relevance_scores.contains_key(&MemoryId::from("m12")));
    }

    #[test]
    fn rankings_without_relevance_or_predictor_are_not_compared() {
        let labels: BTreeMap<MemoryId, f32> = [("a".into(), 0.0)].into();
        let c = compare(&[ranking(vec![cand("a", 1, Some(1), true), cand("b", 2, Some(2), false)])], &labels);
        assert_eq!(c.margin, None);
        assert!(c.excluded.unwrap().contains("nothing relevant"));
        let labels: BTreeMap<MemoryId, f32> = [("b".into(), 0.6)].into();
        let c = compare(&[ranking(vec![cand("a", 1, None, true), cand("b", 2, None, false)])], &labels);
        assert_eq!(c.margin, None);
        assert!(c.excluded.unwrap().contains("predictor scored none"));
        assert!(c.baseline_ndcg > 0.0);
        // Negative labels are gains of zero.
        let labels: BTreeMap<MemoryId, f32> = [("a".into(), -0.5), ("b".into(), 0.6)].into();
        let c = compare(&[ranking(vec![cand("a", 1, Some(2), true), cand("b", 2, Some(1), false)])], &labels);
        assert!((c.predictor_ndcg - 1.0).abs() < 1e-6);
        assert!(c.margin.unwrap() > 0.3);
    }

    #[test]
    fn session_means_over_compared_rankings() {
        let labels: BTreeMap<MemoryId, f32> = [("a".into(), 1.0)].into();
        let good = ranking(vec![cand("a", 2, Some(1), false), cand("b", 1, Some(2), true)]);
        let tie = ranking(vec![cand("a", 1, Some(1), true), cand("b", 2, Some(2), false)]);
        let c = compare(&[good, tie], &labels);
        assert_eq!(c.rankings_compared, 2);
        let b = (1.0 / 3f32.log2() + 1.0) / 2.0;
        assert!((c.baseline_ndcg - b).abs() < 1e-6);
        assert!((c.predictor_ndcg - 1.0).abs() < 1e-6);
    }
}
