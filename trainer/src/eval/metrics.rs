//! Retrieval metrics of ranked item lists against relevant sets: recall at k,
//! NDCG@10 and MRR, accumulated per ranking and per category.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// The rankings an evaluation compares, in report order.
pub const RANKINGS: [&str; 4] = ["bm25", "baseline", "predictor", "fused"];

/// Means of the metrics over the queries added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Queries averaged.
    pub queries: u64,
    /// Share of a query's relevant items in the top 1.
    #[serde(rename = "r@1")]
    pub r1: f64,
    /// … in the top 5.
    #[serde(rename = "r@5")]
    pub r5: f64,
    /// … in the top 10.
    #[serde(rename = "r@10")]
    pub r10: f64,
    /// … in the top 50.
    #[serde(rename = "r@50")]
    pub r50: f64,
    /// Binary-relevance NDCG of the top 10; the ideal ranking holds every relevant item.
    #[serde(rename = "ndcg@10")]
    pub ndcg10: f64,
    /// Reciprocal rank of the first relevant item (0 if none is ranked).
    pub mrr: f64,
}

/// Sums of per-query metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct Accumulator {
    sums: Metrics,
}

/// The metrics of one ranked list: `ranked` best first (duplicates count once,
/// at their first position), `relevant` the relevant items.
pub fn query_metrics<T: Ord>(ranked: &[T], relevant: &BTreeSet<T>) -> Metrics {
    let mut seen: BTreeSet<&T> = BTreeSet::new();
    let mut hits_at: Vec<usize> = Vec::new(); // 0-based positions of relevant items, deduplicated
    let mut position = 0usize;
    for item in ranked {
        if !seen.insert(item) {
            continue;
        }
        if relevant.contains(item) {
            hits_at.push(position);
        }
        position += 1;
    }
    let n = relevant.len().max(1) as f64;
    let recall = |k: usize| hits_at.iter().filter(|&&p| p < k).count() as f64 / n;
    let dcg: f64 = hits_at.iter().filter(|&&p| p < 10).map(|&p| 1.0 / (p as f64 + 2.0).log2()).sum();
    let idcg: f64 = (0..relevant.len().min(10)).map(|p| 1.0 / (p as f64 + 2.0).log2()).sum();
    Metrics {
        queries: 1,
        r1: recall(1),
        r5: recall(5),
        r10: recall(10),
        r50: recall(50),
        ndcg10: if idcg > 0.0 { dcg / idcg } else { 0.0 },
        mrr: hits_at.first().map_or(0.0, |&p| 1.0 / (p as f64 + 1.0)),
    }
}

impl Accumulator {
    /// Adds one query's metrics.
    pub fn add(&mut self, m: &Metrics) {
        let s = &mut self.sums;
        s.queries += m.queries;
        s.r1 += m.r1;
        s.r5 += m.r5;
        s.r10 += m.r10;
        s.r50 += m.r50;
        s.ndcg10 += m.ndcg10;
        s.mrr += m.mrr;
    }

    /// The means.
    pub fn mean(&self) -> Metrics {
        let s = &self.sums;
        let n = s.queries.max(1) as f64;
        Metrics {
            queries: s.queries,
            r1: s.r1 / n,
            r5: s.r5 / n,
            r10: s.r10 / n,
            r50: s.r50 / n,
            ndcg10: s.ndcg10 / n,
            mrr: s.mrr / n,
        }
    }
}

/// Metrics of every ranking, overall and per category.
#[derive(Clone, Debug, Default)]
pub struct Table {
    overall: BTreeMap<&'static str, Accumulator>,
    by_category: BTreeMap<u8, BTreeMap<&'static str, Accumulator>>,
}

/// The means of a [`Table`], as reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TableMeans {
    /// Ranking name → metrics over every query.
    pub overall: BTreeMap<String, Metrics>,
    /// Category → ranking name → metrics.
    pub by_category: BTreeMap<String, BTreeMap<String, Metrics>>,
}

impl Table {
    /// Adds one query's metrics for `ranking`.
    pub fn add(&mut self, ranking: &'static str, category: u8, m: &Metrics) {
        self.overall.entry(ranking).or_default().add(m);
        self.by_category.entry(category).or_default().entry(ranking).or_default().add(m);
    }

    /// The means.
    pub fn means(&self) -> TableMeans {
        let conv =
            |m: &BTreeMap<&'static str, Accumulator>| m.iter().map(|(k, a)| ((*k).to_owned(), a.mean())).collect();
        TableMeans {
            overall: conv(&self.overall),
            by_category: self.by_category.iter().map(|(c, m)| (c.to_string(), conv(m))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_of_a_hand_computed_list() {
        let rel: BTreeSet<u32> = [2, 9].into_iter().collect();
        let m = query_metrics(&[1, 2, 3, 2, 4], &rel);
        assert_eq!(m.r1, 0.0);
        assert_eq!(m.r5, 0.5);
        assert_eq!(m.r50, 0.5);
        assert!((m.mrr - 0.5).abs() < 1e-12);
        let dcg = 1.0 / 3f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((m.ndcg10 - dcg / idcg).abs() < 1e-12);
        // The duplicate of 2 takes no position: 9 is third.
        let m = query_metrics(&[1, 2, 2, 9], &rel);
        assert_eq!(m.r5, 1.0);
        assert!((m.ndcg10 - (1.0 / 3f64.log2() + 1.0 / 4f64.log2()) / idcg).abs() < 1e-12);
    }

    #[test]
    fn perfect_and_empty_rankings() {
        let rel: BTreeSet<u32> = [1, 2].into_iter().collect();
        let m = query_metrics(&[1, 2, 3], &rel);
        assert_eq!((m.r1, m.r10, m.ndcg10, m.mrr), (0.5, 1.0, 1.0, 1.0));
        let m = query_metrics(&[], &rel);
        assert_eq!((m.r10, m.ndcg10, m.mrr), (0.0, 0.0, 0.0));
    }

    #[test]
    fn tables_average_per_ranking_and_category() {
        let mut t = Table::default();
        let rel: BTreeSet<u32> = [1].into_iter().collect();
        t.add("bm25", 1, &query_metrics(&[1], &rel));
        t.add("bm25", 2, &query_metrics(&[0], &rel));
        let m = t.means();
        assert_eq!(m.overall["bm25"].r1, 0.5);
        assert_eq!(m.overall["bm25"].queries, 2);
        assert_eq!(m.by_category["1"]["bm25"].r1, 1.0);
        assert_eq!(m.by_category["2"]["bm25"].r1, 0.0);
    }
}
