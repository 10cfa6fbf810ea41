//! Near-duplicate memories (seed 000, "Dedup Pipeline"): two memories are the
//! same when their embeddings' cosine similarity is ≥ 0.85 (both must have
//! one), else when their word overlap is ≥ 0.70.
//!
//! Word overlap is `|A ∩ B| / max(|A|, |B|)` over the sets of lower-case
//! alphanumeric words of at least two characters, minus a short stop-word
//! list, so "Use pnpm, not npm, in this repo." and "In this repo use pnpm not
//! npm" match while a short text is not swallowed by a long one.
//!
//! Existing memories are reached through [`MemoryLookup`], so the store can
//! answer from an FTS query or an in-memory list; a slice of
//! [`ExistingMemory`] is a lookup that scans everything.

use std::collections::BTreeSet;

use shared::ids::{MemoryId, SessionKey};

/// Cosine similarity at or above which two embedded memories are duplicates.
pub const EMBEDDING_THRESHOLD: f32 = 0.85;
/// Word overlap at or above which two memories are duplicates.
pub const WORD_OVERLAP_THRESHOLD: f32 = 0.70;

const STOP: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "be", "to", "of", "in", "on", "at", "it", "this", "that", "and", "or", "for",
    "with", "as", "by", "we", "you", "i", "our", "your", "so", "do", "if", "when",
];

/// A memory already known to the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExistingMemory {
    /// Its id.
    pub id: MemoryId,
    /// Its text.
    pub text: String,
    /// Its embedding, when one was computed.
    pub embedding: Option<Vec<f32>>,
    /// Sessions it was learned from or seen in (so re-extraction does not
    /// count a session twice).
    pub sessions: Vec<SessionKey>,
}

/// Access to existing memories for dedup.
pub trait MemoryLookup {
    /// Memories that may be near-duplicates of `text` (a superset is fine;
    /// the caller applies the thresholds). A memory with id `id` must be
    /// returned when it exists.
    fn candidates(&self, text: &str, id: &MemoryId) -> Vec<ExistingMemory>;
}

impl MemoryLookup for [ExistingMemory] {
    fn candidates(&self, _text: &str, _id: &MemoryId) -> Vec<ExistingMemory> {
        self.to_vec()
    }
}

impl MemoryLookup for Vec<ExistingMemory> {
    fn candidates(&self, text: &str, id: &MemoryId) -> Vec<ExistingMemory> {
        self.as_slice().candidates(text, id)
    }
}

/// The words compared by [`word_overlap`].
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// `|A ∩ B| / max(|A|, |B|)`; 0 when either is empty.
pub fn word_overlap(a: &str, b: &str) -> f32 {
    let (wa, wb) = (words(a), words(b));
    let max = wa.len().max(wb.len());
    if wa.is_empty() || wb.is_empty() {
        return 0.0;
    }
    wa.intersection(&wb).count() as f32 / max as f32
}

/// Cosine similarity; 0 for mismatched lengths or zero vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}

/// How similar two memories are, and whether that makes them duplicates:
/// cosine when both have embeddings, else word overlap.
pub fn similarity(a_text: &str, a_emb: Option<&[f32]>, b_text: &str, b_emb: Option<&[f32]>) -> (f32, bool) {
    match (a_emb, b_emb) {
        (Some(x), Some(y)) => {
            let s = cosine(x, y);
            (s, s >= EMBEDDING_THRESHOLD)
        }
        _ => {
            let s = word_overlap(a_text, b_text);
            (s, s >= WORD_OVERLAP_THRESHOLD)
        }
    }
}

/// The most similar duplicate of a text among `existing`, if any.
pub fn best_duplicate<'e>(
    text: &str,
    emb: Option<&[f32]>,
    existing: &'e [ExistingMemory],
) -> Option<&'e ExistingMemory> {
    existing
        .iter()
        .map(|m| (m, similarity(text, emb, &m.text, m.embedding.as_deref())))
        .filter(|(_, (_, dup))| *dup)
        .max_by(|a, b| a.1.0.total_cmp(&b.1.0))
        .map(|(m, _)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_thresholds() {
        let a = "Use pnpm, not npm, in this repo.";
        let b = "In this repo use pnpm not npm";
        assert!(word_overlap(a, b) >= WORD_OVERLAP_THRESHOLD);
        assert!(word_overlap(a, "Run cargo fmt before committing.") < 0.2);
        // A short text is not a duplicate of a long one containing it.
        assert!(
            word_overlap("use pnpm", "use pnpm for installs and run vitest for tests in ci") < WORD_OVERLAP_THRESHOLD
        );
        assert_eq!(word_overlap("", "x y"), 0.0);
    }

    #[test]
    fn embeddings_win_when_both_exist() {
        let (s, dup) = similarity("a b c", Some(&[1.0, 0.0]), "x y z", Some(&[0.9, 0.1]));
        assert!(s > 0.99 && dup);
        let (_, dup) = similarity("a b c", Some(&[1.0, 0.0]), "a b c", Some(&[0.0, 1.0]));
        assert!(!dup);
        let (_, dup) = similarity("alpha beta gamma", None, "gamma beta alpha", Some(&[0.0, 1.0]));
        assert!(dup);
    }
}
