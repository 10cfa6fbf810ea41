//! Ranking metrics: DCG/NDCG@k (binary and graded labels), recall@k and MRR.
//!
//! A *ranking* is a list of candidate indices, best first; labels are indexed by
//! candidate. Gains are linear in the label (`DCG@k = Σ_{i<k} rel_i / log2(i + 2)`,
//! seed 002), negative labels count as 0, binary labels are 0/1 graded labels.
//! The ideal DCG is computed over **all** known labels, not only the ranked ones,
//! and NDCG is 0 when the ideal DCG is 0.

use crate::fusion::order_by_score;

fn gain(label: f32) -> f32 {
    if label.is_finite() { label.max(0.0) } else { 0.0 }
}

/// DCG@k of `ranking` under `labels` (indices out of range count as gain 0).
pub fn dcg_at_k(ranking: &[usize], labels: &[f32], k: usize) -> f32 {
    ranking
        .iter()
        .take(k)
        .enumerate()
        .map(|(pos, &i)| gain(labels.get(i).copied().unwrap_or(0.0)) / (pos as f32 + 2.0).log2())
        .sum()
}

/// NDCG@k of `ranking`; the ideal ordering sorts all `labels` by gain.
pub fn ndcg_at_k(ranking: &[usize], labels: &[f32], k: usize) -> f32 {
    let mut ideal: Vec<f32> = labels.iter().map(|&l| gain(l)).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f32 = ideal.iter().take(k).enumerate().map(|(pos, &g)| g / (pos as f32 + 2.0).log2()).sum();
    if idcg <= 0.0 { 0.0 } else { dcg_at_k(ranking, labels, k) / idcg }
}

/// NDCG@k of the ordering induced by `scores` (descending, ties by index).
pub fn ndcg_from_scores(scores: &[f32], labels: &[f32], k: usize) -> f32 {
    ndcg_at_k(&order_by_score(scores), labels, k)
}

/// Share of the relevant candidates (label > 0) found in the top `k`; 0 when none is relevant.
pub fn recall_at_k(ranking: &[usize], labels: &[f32], k: usize) -> f32 {
    let relevant = labels.iter().filter(|&&l| gain(l) > 0.0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranking.iter().take(k).filter(|&&i| labels.get(i).is_some_and(|&l| gain(l) > 0.0)).count();
    found as f32 / relevant as f32
}

/// Reciprocal rank of the first relevant candidate (label > 0); 0 when none is ranked.
pub fn mrr(ranking: &[usize], labels: &[f32]) -> f32 {
    ranking.iter().position(|&i| labels.get(i).is_some_and(|&l| gain(l) > 0.0)).map_or(0.0, |p| 1.0 / (p as f32 + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndcg_binary_and_graded() {
        let labels = [0.0, 1.0, 0.0, 1.0];
        assert!((ndcg_at_k(&[1, 3, 0, 2], &labels, 10) - 1.0).abs() < 1e-6);
        // Relevant at positions 2 and 4: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3).
        let expect = (1.0 / 3f32.log2() + 1.0 / 5f32.log2()) / (1.0 + 1.0 / 3f32.log2());
        assert!((ndcg_at_k(&[0, 1, 2, 3], &labels, 10) - expect).abs() < 1e-6);
        let graded = [0.2, 1.0, 0.5];
        let dcg = 0.2 + 1.0 / 3f32.log2() + 0.5 / 2.0;
        let idcg = 1.0 + 0.5 / 3f32.log2() + 0.2 / 2.0;
        assert!((ndcg_at_k(&[0, 1, 2], &graded, 10) - dcg / idcg).abs() < 1e-6);
    }

    #[test]
    fn ideal_uses_all_labels_and_negatives_clamp() {
        // Only item 0 is ranked, but item 2 (unranked) is the best one.
        let labels = [0.5, -0.3, 1.0];
        let v = ndcg_at_k(&[0], &labels, 10);
        assert!((v - 0.5 / (1.0 + 0.5 / 3f32.log2())).abs() < 1e-6);
        assert_eq!(ndcg_at_k(&[0, 1], &[0.0, -0.5], 10), 0.0);
        assert_eq!(ndcg_at_k(&[], &[], 10), 0.0);
        // k cuts the ideal too.
        assert!((ndcg_at_k(&[1, 0], &[1.0, 1.0], 1) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn recall_and_mrr() {
        let labels = [0.0, 1.0, 0.0, 0.3];
        assert_eq!(recall_at_k(&[0, 1, 2, 3], &labels, 2), 0.5);
        assert_eq!(recall_at_k(&[0, 1, 2, 3], &labels, 4), 1.0);
        assert_eq!(recall_at_k(&[0], &[0.0], 1), 0.0);
        assert_eq!(mrr(&[0, 2, 3, 1], &labels), 1.0 / 3.0);
        assert_eq!(mrr(&[0, 2], &labels), 0.0);
        assert!((ndcg_from_scores(&[0.1, 0.9, 0.0, 0.5], &labels, 10) - 1.0).abs() < 1e-6);
    }
}
