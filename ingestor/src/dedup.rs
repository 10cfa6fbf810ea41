//! Near-duplicate memories at write time (seed 000, "Dedup Pipeline": the
//! inline check; seed 004, "Conflict Detection").
//!
//! The measure is [`shared::domain::knowledge::similarity`]: cosine of embeddings
//! when both memories have one, else word overlap. With conflict detection
//! on (the default, `knowledge.conflicts`), a candidate more than 0.95 alike
//! to an existing memory is a duplicate (merged into it: one more
//! occurrence), more than the conflict threshold (0.65) alike is a conflict
//! (staged for the user, see [`conflict_event`]), else new. With it off,
//! seed 000's inline thresholds decide duplicates: cosine ≥ 0.85, or word
//! overlap ≥ 0.70 without embeddings.
//!
//! Existing memories are reached through [`MemoryLookup`], so the store can
//! answer from an FTS query or an in-memory list; a slice of
//! [`ExistingMemory`] is a lookup that scans everything.
//!
//! The batch pipeline (`engram-ingestor dedup`) is [`crate::dedup_run`].

use shared::base::ids::{EventId, MemoryId, SessionKey};
use shared::domain::knowledge::buffer::DUPLICATE_SIMILARITY;
use shared::domain::knowledge::similarity::Scored;
pub use shared::domain::knowledge::similarity::{cosine, word_overlap, words};
use shared::storage::event::{Event, MemoryAdded, SCHEMA_VERSION};

use crate::adapter::WRITER;

/// Cosine similarity at or above which two embedded memories are duplicates
/// when conflict detection is off.
pub const EMBEDDING_THRESHOLD: f32 = 0.85;
/// Word overlap at or above which two memories are duplicates when conflict
/// detection is off.
pub const WORD_OVERLAP_THRESHOLD: f32 = 0.70;
/// The conflict threshold of a lookup that does not say (seed 004's default).
pub const DEFAULT_CONFLICT_THRESHOLD: f32 = 0.65;

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
    /// Its project (`None`: a memory of no project). Extraction stages a
    /// conflict only with a memory of the candidate's own project.
    pub project: Option<String>,
}

/// Access to existing memories for dedup.
pub trait MemoryLookup {
    /// Memories that may be near-duplicates of `text` (a superset is fine;
    /// the caller applies the thresholds). A memory with id `id` must be
    /// returned when it exists.
    fn candidates(&self, text: &str, id: &MemoryId) -> Vec<ExistingMemory>;

    /// The similarity above which a new memory is flagged as a conflict;
    /// `None` when conflict detection is off.
    fn conflict_threshold(&self) -> Option<f32> {
        Some(DEFAULT_CONFLICT_THRESHOLD)
    }

    /// Whether a candidate of `project` (learned in `session`) and an
    /// existing memory of `existing` belong to the same project: only then
    /// is their likeness a conflict worth asking the user about.
    fn same_project(&self, project: Option<&str>, _session: &SessionKey, existing: Option<&str>) -> bool {
        project == existing
    }

    /// Whether `text` already waits for the user, staged against `with`
    /// (learned again in another session: nothing new to ask).
    fn already_staged(&self, _text: &str, _with: &MemoryId) -> bool {
        false
    }
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

/// What a write-time candidate is, given the existing memories.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Classified<'e> {
    /// A duplicate of this memory (merge into it).
    Duplicate(&'e ExistingMemory, f32),
    /// Alike to this memory above the conflict threshold (stage it).
    Conflict(&'e ExistingMemory, f32),
    /// Neither.
    New,
}

/// Classifies a candidate against `existing` (see the module docs);
/// `conflict_threshold` is `None` when conflict detection is off.
pub fn classify<'e>(
    text: &str,
    emb: Option<&[f32]>,
    existing: &'e [ExistingMemory],
    conflict_threshold: Option<f32>,
) -> Classified<'e> {
    let Some(threshold) = conflict_threshold else {
        return best_duplicate(text, emb, existing).map_or(Classified::New, |m| {
            Classified::Duplicate(m, similarity(text, emb, &m.text, m.embedding.as_deref()).0)
        });
    };
    let best = existing
        .iter()
        .map(|m| (m, shared::domain::knowledge::similarity::similarity(text, emb, &m.text, m.embedding.as_deref())))
        .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.id.cmp(&a.0.id)));
    match best {
        Some((m, s)) if s > DUPLICATE_SIMILARITY => Classified::Duplicate(m, s),
        Some((m, s)) if s > threshold => Classified::Conflict(m, s),
        _ => Classified::New,
    }
}

/// The `knowledge.staged` event of an extracted memory flagged against
/// `with` (ids derived from the memory's, so extracting again is harmless).
pub fn conflict_event(
    memory: MemoryAdded,
    with: &ExistingMemory,
    similarity: f32,
    ts: shared::base::time::Ts,
) -> Event {
    let session = memory.source_session.clone();
    let scored = Scored {
        id: with.id.clone(),
        content: with.text.clone(),
        memory_type: shared::storage::event::MemoryType::Fact,
        project: with.project.clone(),
        similarity,
        created_ms: 0,
    };
    Event {
        v: SCHEMA_VERSION,
        id: EventId::derived(&[memory.memory_id.as_str(), "knowledge.staged"]),
        ts,
        writer: WRITER.to_owned(),
        session,
        body: shared::domain::knowledge::buffer::conflict_body(memory, &scored),
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
