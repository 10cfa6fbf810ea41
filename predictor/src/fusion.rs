//! Reciprocal rank fusion of the baseline's and the predictor's rankings, and ranks from scores.

/// Default RRF constant `k` (seed 002, tuned for ~50 candidates).
pub const DEFAULT_K: f32 = 12.0;

/// Engrammar's RRF constant for its hybrid search (seed 000 "Reciprocal Rank
/// Fusion"): `k = max(1, n / 5)` for `n` items ranked, so that a small corpus
/// keeps about a 2× spread between ranks 0 and 9 where k = 60 would squeeze
/// it to ~15%. Only the hybrid relevance (BM25 + vector) uses it; the fusion
/// of the baseline with the predictor keeps seed 002's [`DEFAULT_K`].
pub fn dynamic_k(n: usize) -> f32 {
    (n / 5).max(1) as f32
}

/// Engrammar's hybrid fusion: for each item, `Σ 1/(k + rank)` over the
/// lists that rank it (0-based ranks as in the seed; an item a list does not
/// rank gets nothing from it), `k` = [`dynamic_k`] of `n`.
pub fn hybrid(lists: &[Vec<Option<u32>>], n: usize) -> Vec<f32> {
    let k = dynamic_k(n);
    (0..n)
        .map(|i| lists.iter().filter_map(|l| l.get(i).copied().flatten()).map(|r| 1.0 / (k + r as f32)).sum())
        .collect()
}

/// 0-based ranks by descending value of the items that have one (ties by index).
pub fn ranks_of_present(values: &[Option<f32>]) -> Vec<Option<u32>> {
    let mut order: Vec<usize> = (0..values.len()).filter(|&i| values[i].is_some_and(f32::is_finite)).collect();
    order.sort_by(|&a, &b| values[b].unwrap_or(0.0).total_cmp(&values[a].unwrap_or(0.0)).then(a.cmp(&b)));
    let mut ranks = vec![None; values.len()];
    for (pos, &i) in order.iter().enumerate() {
        ranks[i] = Some(u32::try_from(pos).unwrap_or(u32::MAX));
    }
    ranks
}

/// `α/(k + r_b) + (1 − α)/(k + r_p)`; a missing rank counts as `pool_size + 1`. Ranks are 1-based.
pub fn rrf(alpha: f32, k: f32, rank_baseline: Option<u32>, rank_predictor: Option<u32>, pool_size: u32) -> f32 {
    let missing = pool_size as f32 + 1.0;
    let rb = rank_baseline.map_or(missing, |r| r as f32);
    let rp = rank_predictor.map_or(missing, |r| r as f32);
    alpha / (k + rb) + (1.0 - alpha) / (k + rp)
}

/// 1-based ranks of `scores` in descending order; ties (and NaNs, which rank last) are broken by index.
pub fn ranks_from_scores(scores: &[f32]) -> Vec<u32> {
    let order = order_by_score(scores);
    let mut ranks = vec![0u32; scores.len()];
    for (pos, &i) in order.iter().enumerate() {
        ranks[i] = u32::try_from(pos + 1).unwrap_or(u32::MAX);
    }
    ranks
}

/// Indices of `scores` sorted by descending score; ties by ascending index; NaNs last.
pub fn order_by_score(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (scores[a], scores[b]);
        match (x.is_nan(), y.is_nan()) {
            (true, true) => a.cmp(&b),
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => y.total_cmp(&x).then(a.cmp(&b)),
        }
    });
    order
}

/// Fuses two full score lists over the same pool: each side is ranked with
/// [`ranks_from_scores`]; a side given as `None` counts every item as missing.
pub fn fuse(
    alpha: f32,
    k: f32,
    baseline_scores: Option<&[f32]>,
    predictor_scores: Option<&[f32]>,
    pool_size: usize,
) -> Vec<f32> {
    let rb = baseline_scores.map(ranks_from_scores);
    let rp = predictor_scores.map(ranks_from_scores);
    let pool = u32::try_from(pool_size).unwrap_or(u32::MAX);
    (0..pool_size)
        .map(|i| {
            rrf(
                alpha,
                k,
                rb.as_ref().and_then(|r| r.get(i).copied()),
                rp.as_ref().and_then(|r| r.get(i).copied()),
                pool,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_k_and_the_hybrid_fusion() {
        assert_eq!(dynamic_k(0), 1.0);
        assert_eq!(dynamic_k(9), 1.0);
        assert_eq!(dynamic_k(50), 10.0);
        // The seed's point: about 2x between ranks 0 and 9 of a 50-item corpus.
        let k = dynamic_k(50);
        assert!(((1.0 / k) / (1.0 / (k + 9.0)) - 1.9).abs() < 1e-6);
        let bm25 = ranks_of_present(&[Some(3.0), None, Some(5.0), Some(f32::NAN)]);
        assert_eq!(bm25, [Some(1), None, Some(0), None]);
        let vector = ranks_of_present(&[Some(0.9), Some(0.8), None, None]);
        let h = hybrid(&[bm25, vector], 4);
        assert_eq!(h, [1.0 / 2.0 + 1.0, 1.0 / 2.0, 1.0, 0.0]);
    }

    #[test]
    fn rrf_formula() {
        assert!((rrf(1.0, 12.0, Some(1), Some(50), 50) - 1.0 / 13.0).abs() < 1e-7);
        assert!((rrf(0.0, 12.0, Some(1), Some(50), 50) - 1.0 / 62.0).abs() < 1e-7);
        let v = rrf(0.3, 12.0, Some(2), None, 9);
        assert!((v - (0.3 / 14.0 + 0.7 / 22.0)).abs() < 1e-7);
        // Spread the seed quotes: rank 1 vs 50 at k=12 is ~4.8×.
        assert!((rrf(1.0, 12.0, Some(1), None, 50) / rrf(1.0, 12.0, Some(50), None, 50) - 62.0 / 13.0).abs() < 1e-4);
    }

    #[test]
    fn ranks_break_ties_by_index_and_put_nan_last() {
        assert_eq!(ranks_from_scores(&[0.5, 0.9, 0.5, f32::NAN, 1.0]), vec![3, 2, 4, 5, 1]);
        assert_eq!(ranks_from_scores(&[]), Vec::<u32>::new());
    }

    #[test]
    fn fuse_with_alpha_one_keeps_the_baseline_order() {
        let b = [0.9, 0.1, 0.5];
        let p = [0.0, 1.0, 0.2];
        let f = fuse(1.0, DEFAULT_K, Some(&b), Some(&p), 3);
        assert_eq!(ranks_from_scores(&f), ranks_from_scores(&b));
        let f = fuse(0.0, DEFAULT_K, Some(&b), Some(&p), 3);
        assert_eq!(ranks_from_scores(&f), ranks_from_scores(&p));
        let f = fuse(0.5, DEFAULT_K, Some(&b), None, 3);
        assert!((f[0] - (0.5 / 13.0 + 0.5 / 16.0)).abs() < 1e-7);
    }
}
