//! How alike two memories are: the one measure behind conflict detection,
//! the discovery engine and the dedup pipeline, in `[0, 1]`.
//!
//! With an embedding on both sides it is their cosine. Otherwise it is word
//! overlap, `|A ∩ B| / max(|A|, |B|)` over the sets of lower-case
//! alphanumeric words of at least two characters (or digits) minus a short stop-word
//! list: "Use pnpm, not npm, in this repo." and "In this repo use pnpm not
//! npm" are the same (1.0), one word changed in a ten-word note gives 0.9,
//! and a short text is never swallowed by a long one that contains it.
//!
//! Candidates come from the full-text index ([`similar_memories`]): a
//! memory sharing no word with the text cannot overlap it.

use std::collections::BTreeSet;

use rusqlite::params;
use serde::Serialize;

use crate::base::error::{Result, SqlContext};
use crate::base::ids::MemoryId;
use crate::storage::event::MemoryType;
use crate::storage::store::Store;

const STOP: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "be", "to", "of", "in", "on", "at", "it", "this", "that", "and", "or", "for",
    "with", "as", "by", "we", "you", "i", "our", "your", "so", "do", "if", "when",
];

/// Full-text candidates read per comparison.
const CANDIDATES: usize = 60;

/// The words compared by [`word_overlap`] (single digits count: "Python 2"
/// and "Python 3" differ).
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2 || w.bytes().next().is_some_and(|b| b.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// `|A ∩ B| / max(|A|, |B|)`; 0 when either is empty.
pub fn word_overlap(a: &str, b: &str) -> f32 {
    overlap_of(&words(a), &words(b))
}

/// [`word_overlap`] of word sets already made.
pub fn overlap_of(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    a.intersection(b).count() as f32 / a.len().max(b.len()) as f32
}

/// Share of `inner`'s words that `outer` contains (1 when `outer` says
/// everything `inner` says); 0 when `inner` is empty.
pub fn containment(inner: &BTreeSet<String>, outer: &BTreeSet<String>) -> f32 {
    if inner.is_empty() {
        return 0.0;
    }
    inner.intersection(outer).count() as f32 / inner.len() as f32
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

/// How alike two memories are (see the module docs).
pub fn similarity(a_text: &str, a_emb: Option<&[f32]>, b_text: &str, b_emb: Option<&[f32]>) -> f32 {
    match (a_emb, b_emb) {
        (Some(x), Some(y)) => cosine(x, y).max(0.0),
        _ => word_overlap(a_text, b_text),
    }
}

/// A stored memory and how alike it is to the text asked about.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scored {
    /// The memory.
    pub id: MemoryId,
    /// Its text.
    pub content: String,
    /// Its type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    /// Its project.
    pub project: Option<String>,
    /// Similarity, `[0, 1]`.
    pub similarity: f32,
    /// When it was created (ms).
    pub created_ms: i64,
}

/// Live, current (not deprecated) memories alike to `text`, most alike
/// first, at least `min` similar, at most `limit`. Only memories of
/// `project` or of no project are compared when a project is given.
/// `exclude` are left out (the memory itself).
pub fn similar_memories(
    store: &Store,
    text: &str,
    embedding: Option<&[f32]>,
    project: Option<&str>,
    exclude: &[&str],
    min: f32,
    limit: usize,
) -> Result<Vec<Scored>> {
    let mine = words(text);
    let Some(query) = crate::domain::memory::queries::any_word_query(&mine.iter().collect::<Vec<_>>()) else {
        return Ok(Vec::new());
    };
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT m.id, m.content, m.type, m.project,
                    (SELECT vector FROM embeddings WHERE source_type = 'memory' AND source_id = m.id), m.created_ms
             FROM memories_fts f JOIN memories m ON m.rowid = f.rowid
             WHERE memories_fts MATCH ?1 AND m.is_deleted = 0 AND m.deprecated = 0 AND m.superseded_by IS NULL
               AND (?2 IS NULL OR m.project IS NULL OR m.project = ?2)
             ORDER BY bm25(memories_fts), m.id LIMIT ?3",
        )
        .sql("prepare similar memories")?;
    let rows = stmt
        .query_map(params![query, project, CANDIDATES as i64], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, MemoryType>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<Vec<u8>>>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })
        .sql("find similar memories")?;
    let mut out = Vec::new();
    for row in rows {
        let (id, content, memory_type, project, blob, created_ms) = row.sql("find similar memories")?;
        if exclude.contains(&id.as_str()) {
            continue;
        }
        let other: Option<Vec<f32>> =
            blob.map(|b| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
        let score = match (embedding, other.as_deref()) {
            (Some(x), Some(y)) => cosine(x, y).max(0.0),
            _ => overlap_of(&mine, &words(&content)),
        };
        if score >= min {
            out.push(Scored { id: MemoryId(id), content, memory_type, project, similarity: score, created_ms });
        }
    }
    out.sort_by(|a, b| b.similarity.total_cmp(&a.similarity).then_with(|| a.id.cmp(&b.id)));
    out.truncate(limit);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_thresholds() {
        let a = "Use pnpm, not npm, in this repo.";
        let b = "In this repo use pnpm not npm";
        assert_eq!(word_overlap(a, b), 1.0);
        assert!(word_overlap(a, "Run cargo fmt before committing.") < 0.2);
        assert!(word_overlap("use pnpm", "use pnpm for installs and run vitest for tests in ci") < 0.5);
        assert_eq!(word_overlap("", "x y"), 0.0);
        assert!(word_overlap("Use Python 3 here", "Use Python 2 here") < 0.95);
        let one_changed = word_overlap(
            "The staging deploy needs VPN access from the ops repo",
            "The staging deploy needs VPN access from the infra repo",
        );
        assert!((0.65..0.95).contains(&one_changed), "{one_changed}");
    }

    #[test]
    fn embeddings_win_when_both_exist() {
        assert!(similarity("a b c", Some(&[1.0, 0.0]), "x y z", Some(&[0.9, 0.1])) > 0.99);
        assert_eq!(similarity("a b c", Some(&[1.0, 0.0]), "a b c", Some(&[-1.0, 0.0])), 0.0);
        assert_eq!(similarity("alpha beta gamma", None, "gamma beta alpha", Some(&[0.0, 1.0])), 1.0);
    }

    #[test]
    fn containment_is_directional() {
        let short = words("use pnpm");
        let long = words("use pnpm for installs");
        assert_eq!(containment(&short, &long), 1.0);
        assert!((containment(&long, &short) - 2.0 / 3.0).abs() < 1e-6, "\"for\" is a stop word");
    }
}
