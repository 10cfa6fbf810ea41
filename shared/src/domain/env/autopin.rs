//! Auto-pin by minimal tag subset (seed 000 "Auto-Pin Algorithm", seed 001
//! `find_auto_pin_tag_subsets`), and the tag-relevance pin decisions.
//!
//! Given the tag sets a memory matched in and how often, find the minimal
//! common tag subset with at least [`THRESHOLD`] matches:
//!
//! 1. all tag sets where the memory matched (`engram_tag_stats`);
//! 2. the powerset of all their tags, subsets of size 1 to [`MAX_SUBSET`];
//! 3. each subset's matches: the sum over the tag sets that contain it;
//! 4. the minimal subsets: those meeting the threshold with no proper subset
//!    that also meets it;
//! 5. the smallest minimal subset (the first of that size in the sorted
//!    order of combinations), sorted.
//!
//! Every subset of a qualifying subset counts at least as many matches, so
//! the smallest qualifying size holds only minimal subsets: the search stops
//! at the first size with one, and its first qualifying combination is the
//! answer. (That size is always 1 when any subset qualifies: a tag set that
//! holds a pair holds each of its tags. The powerset is the seed's, and the
//! property tests hold this to it.) A memory then pins with that subset as
//! its tag prerequisite and reaches every environment that carries those
//! tags, until tag relevance filters it out where it does not help.

use std::collections::BTreeSet;

/// Matches a tag subset needs (seed 000).
pub const THRESHOLD: i64 = 15;
/// Largest subset considered (seed 000: "limit size=4 for performance").
pub const MAX_SUBSET: usize = 4;

/// Tag-relevance auto-pin: average score above this…
pub const RELEVANCE_PIN: f64 = 0.6;
/// …auto-unpin below this…
pub const RELEVANCE_UNPIN: f64 = 0.2;
/// …with at least this many evaluations.
pub const RELEVANCE_MIN_EVIDENCE: i64 = 5;

/// The smallest minimal tag subset with at least `threshold` matches over
/// `tag_sets` (tag set, matches), subsets of at most [`MAX_SUBSET`] tags;
/// `None` when none qualifies.
pub fn minimal_subset(tag_sets: &[(Vec<String>, i64)], threshold: i64) -> Option<Vec<String>> {
    let all: Vec<&str> = tag_sets
        .iter()
        .flat_map(|(tags, _)| tags.iter().map(String::as_str))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if all.is_empty() {
        return None;
    }
    // Each tag set as a bit set over `all`, with its matches.
    let words = all.len().div_ceil(64);
    let sets: Vec<(Vec<u64>, i64)> = tag_sets
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(tags, n)| {
            let mut bits = vec![0u64; words];
            for t in tags {
                if let Ok(i) = all.binary_search(&t.as_str()) {
                    bits[i / 64] |= 1 << (i % 64);
                }
            }
            (bits, *n)
        })
        .collect();
    let matches = |subset: &[usize]| -> i64 {
        sets.iter()
            .filter(|(bits, _)| subset.iter().all(|&i| bits[i / 64] & (1 << (i % 64)) != 0))
            .map(|(_, n)| *n)
            .sum()
    };
    for size in 1..=MAX_SUBSET.min(all.len()) {
        let mut found = None;
        combinations(all.len(), size, &mut |c| {
            if matches(c) >= threshold {
                found = Some(c.iter().map(|&i| all[i].to_owned()).collect());
                return false;
            }
            true
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Calls `f` with every `k`-combination of `0..n` in lexicographic order
/// (Python's `itertools.combinations`) until it returns `false`.
fn combinations(n: usize, k: usize, f: &mut dyn FnMut(&[usize]) -> bool) {
    if k == 0 || k > n {
        return;
    }
    let mut c: Vec<usize> = (0..k).collect();
    loop {
        if !f(&c) {
            return;
        }
        // The rightmost position that can still move right.
        let Some(i) = (0..k).rev().find(|&i| c[i] < n - k + i) else { return };
        c[i] += 1;
        for j in i + 1..k {
            c[j] = c[j - 1] + 1;
        }
    }
}

/// A tag's relevance with its evidence (`engram_tag_relevance`).
#[derive(Clone, Debug, PartialEq)]
pub struct TagRelevance {
    /// The tag.
    pub tag: String,
    /// EMA score, -3..=3.
    pub score: f64,
    /// Evaluations, positive plus negative.
    pub evals: i64,
}

/// What the tag-relevance rule decides for a memory (Engrammar's
/// `check_and_apply_pin_decisions`): over all its tags, an average above
/// [`RELEVANCE_PIN`] with at least [`RELEVANCE_MIN_EVIDENCE`] evaluations
/// pins an unpinned memory (with its positively scored tags as the
/// prerequisite); an average below [`RELEVANCE_UNPIN`] with that evidence
/// unpins one that was auto-pinned.
#[derive(Clone, Debug, PartialEq)]
pub enum PinDecision {
    /// Pin with these tags (none: no tag scored positively).
    Pin(Vec<String>),
    /// Remove an auto-pin.
    Unpin,
}

/// See [`PinDecision`]. `pinned` and `auto_pinned` are the memory's state.
pub fn relevance_decision(rows: &[TagRelevance], pinned: bool, auto_pinned: bool) -> Option<PinDecision> {
    if rows.is_empty() {
        return None;
    }
    let evals: i64 = rows.iter().map(|r| r.evals).sum();
    let avg = rows.iter().map(|r| r.score).sum::<f64>() / rows.len() as f64;
    if evals < RELEVANCE_MIN_EVIDENCE {
        return None;
    }
    if !pinned && avg > RELEVANCE_PIN {
        let mut tags: Vec<String> = rows.iter().filter(|r| r.score > 0.0).map(|r| r.tag.clone()).collect();
        tags.sort();
        return Some(PinDecision::Pin(tags));
    }
    if pinned && auto_pinned && avg < RELEVANCE_UNPIN {
        return Some(PinDecision::Unpin);
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn sets(rows: &[(&[&str], i64)]) -> Vec<(Vec<String>, i64)> {
        rows.iter().map(|(t, n)| (t.iter().map(|s| (*s).to_owned()).collect(), *n)).collect()
    }

    /// Seed 000's worked example.
    #[test]
    fn the_seed_example_pins_frontend() {
        let s = sets(&[
            (&["frontend", "acme", "typescript"], 6),
            (&["frontend", "acme", "react"], 5),
            (&["frontend", "personal", "typescript"], 4),
        ]);
        assert_eq!(minimal_subset(&s, THRESHOLD), Some(vec!["frontend".to_owned()]));
        // One match fewer and nothing qualifies (acme: 11, typescript: 10).
        let s = sets(&[
            (&["frontend", "acme", "typescript"], 6),
            (&["frontend", "acme", "react"], 5),
            (&["frontend", "personal", "typescript"], 3),
        ]);
        assert_eq!(minimal_subset(&s, THRESHOLD), None);
    }

    #[test]
    fn the_first_qualifying_tag_in_order_wins() {
        let s = sets(&[(&["b", "a"], 8), (&["a", "c"], 8), (&["b", "c"], 8)]);
        assert_eq!(minimal_subset(&s, 16), Some(vec!["a".to_owned()]));
        assert_eq!(minimal_subset(&s, 17), None);
        let s = sets(&[(&["a", "b"], 10), (&["a", "b", "c"], 6), (&["a", "c"], 1), (&["b", "d"], 1)]);
        assert_eq!(minimal_subset(&s, 17), Some(vec!["a".to_owned()]));
        assert_eq!(minimal_subset(&s, 18), None);
        assert_eq!(minimal_subset(&[], 1), None);
    }

    #[test]
    fn combinations_are_python_s() {
        let mut got = Vec::new();
        combinations(4, 2, &mut |c| {
            got.push(c.to_vec());
            true
        });
        assert_eq!(got, vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![1, 2], vec![1, 3], vec![2, 3]]);
    }

    #[test]
    fn relevance_pins_and_unpins() {
        let row = |tag: &str, score: f64, evals: i64| TagRelevance { tag: tag.into(), score, evals };
        let good = [row("react", 0.9, 3), row("frontend", 0.5, 2), row("rust", -0.1, 1)];
        // avg 0.433: not above 0.6.
        assert_eq!(relevance_decision(&good, false, false), None);
        let great = [row("react", 0.9, 3), row("frontend", 0.8, 2)];
        assert_eq!(
            relevance_decision(&great, false, false),
            Some(PinDecision::Pin(vec!["frontend".into(), "react".into()]))
        );
        assert_eq!(relevance_decision(&great[..1], false, false), None, "3 evaluations are not enough");
        let bad = [row("react", 0.1, 3), row("frontend", 0.2, 2)];
        assert_eq!(relevance_decision(&bad, true, true), Some(PinDecision::Unpin));
        assert_eq!(relevance_decision(&bad, true, false), None, "a manual pin stays");
    }

    /// Literal transcription of seed 001's `find_auto_pin_tag_subsets`.
    fn reference(tag_sets: &[(Vec<String>, i64)], threshold: i64) -> Option<Vec<String>> {
        let sets: Vec<(BTreeSet<&str>, i64)> =
            tag_sets.iter().map(|(t, n)| (t.iter().map(String::as_str).collect(), *n)).collect();
        let all: BTreeSet<&str> = sets.iter().flat_map(|(t, _)| t.iter().copied()).collect();
        let all: Vec<&str> = all.into_iter().collect();
        let mut candidates: Vec<BTreeSet<&str>> = Vec::new();
        for r in 1..=all.len().min(MAX_SUBSET) {
            combinations(all.len(), r, &mut |c| {
                candidates.push(c.iter().map(|&i| all[i]).collect());
                true
            });
        }
        let mut counts: Vec<BTreeSet<&str>> = Vec::new();
        for c in candidates {
            let total: i64 = sets.iter().filter(|(t, _)| c.is_subset(t)).map(|(_, n)| *n).sum();
            if total >= threshold {
                counts.push(c);
            }
        }
        if counts.is_empty() {
            return None;
        }
        counts.sort_by_key(BTreeSet::len);
        let mut minimal: Vec<BTreeSet<&str>> = Vec::new();
        for s in counts {
            if !minimal.iter().any(|o| o.is_subset(&s) && o.len() < s.len()) {
                minimal.push(s);
            }
        }
        let smallest = minimal.iter().min_by_key(|s| s.len())?;
        Some(smallest.iter().map(|s| (*s).to_owned()).collect())
    }

    fn tag_sets() -> impl Strategy<Value = Vec<(Vec<String>, i64)>> {
        let tag = prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "g", "h"]);
        prop::collection::vec((prop::collection::btree_set(tag, 1..6), 0i64..12), 0..7)
            .prop_map(|v| v.into_iter().map(|(t, n)| (t.into_iter().map(str::to_owned).collect(), n)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The result meets the threshold, is minimal (no proper subset meets
        /// it), no smaller subset meets it, and it equals the seed's algorithm.
        #[test]
        fn minimal_subsets(sets in tag_sets(), threshold in 1i64..30) {
            let got = minimal_subset(&sets, threshold);
            prop_assert_eq!(&got, &reference(&sets, threshold));
            let count = |s: &BTreeSet<&str>| -> i64 {
                sets.iter().filter(|(t, _)| s.iter().all(|x| t.iter().any(|y| y == x))).map(|(_, n)| *n).sum()
            };
            let all: BTreeSet<&str> = sets.iter().flat_map(|(t, _)| t.iter().map(String::as_str)).collect();
            let all: Vec<&str> = all.into_iter().collect();
            match got {
                Some(subset) => {
                    let s: BTreeSet<&str> = subset.iter().map(String::as_str).collect();
                    prop_assert!(!s.is_empty() && s.len() <= MAX_SUBSET);
                    prop_assert!(count(&s) >= threshold);
                    // No proper subset (it suffices to drop one tag) meets it.
                    for t in &s {
                        let mut smaller = s.clone();
                        smaller.remove(t);
                        prop_assert!(smaller.is_empty() || count(&smaller) < threshold, "{:?} ⊂ {:?}", smaller, s);
                    }
                    // No subset of fewer tags meets it.
                    for k in 1..s.len() {
                        combinations(all.len(), k, &mut |c| {
                            let other: BTreeSet<&str> = c.iter().map(|&i| all[i]).collect();
                            assert!(count(&other) < threshold, "{other:?} is smaller than {s:?}");
                            true
                        });
                    }
                    let mut sorted = subset.clone();
                    sorted.sort();
                    prop_assert_eq!(sorted, subset);
                }
                None => {
                    for k in 1..=all.len().min(MAX_SUBSET) {
                        combinations(all.len(), k, &mut |c| {
                            let other: BTreeSet<&str> = c.iter().map(|&i| all[i]).collect();
                            assert!(count(&other) < threshold, "{other:?} qualifies");
                            true
                        });
                    }
                }
            }
        }
    }
}
