//! Conflict detection and the observation buffer (seed 004 "Conflict
//! Detection", "Observation Buffer").
//!
//! Every memory written by a person or an agent (`memory_save`, `memory
//! add`) or by extraction is first compared with the current memories
//! ([`check`]): above [`DUPLICATE_SIMILARITY`] (0.95) it is an exact
//! duplicate and is not saved (the existing memory counts one more
//! occurrence); above `knowledge.conflicts.similarity_threshold` (0.65) it is
//! *staged* with status `needs_clarification` next to the memory it
//! resembles, and waits for the user; below, it is saved. A staged memory
//! keeps the id it will have and everything it will be saved with.
//!
//! Staged conflicts are put before the user one at a time at the next
//! prompt (see [`super::prompt`]) with seed 004's four choices, applied by
//! [`super::ops::resolve`]: `merge` (the existing memory absorbs it: its
//! text gains what the new one adds ([`super::ops::merged_text`]), one more
//! occurrence and the session, the union of tags, the higher importance), `keep_both`
//! (saved as its own memory), `replace` (saved, and the existing memory is
//! deprecated, superseded by it, with a `supersedes` edge: never injected
//! again, and a negative label for the trainer), `skip` (discarded).
//!
//! Statuses: `needs_clarification` (a conflict), `pending` (awaiting
//! curation), `persisted`, `discarded` ([`super::apply::status`]).

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::base::config::Config;
pub use crate::base::config::knowledge::DUPLICATE_SIMILARITY;
use crate::base::error::{Result, SqlContext};
use crate::base::ids::MemoryId;
use crate::base::time::Ts;
use crate::domain::knowledge::apply::status;
use crate::domain::knowledge::similarity::{Scored, similar_memories};
use crate::storage::event::{Body, MemoryAdded, MemoryStaged};
use crate::storage::store::Store;

/// What a write should do, given the memories already stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// An exact duplicate of `of`: not saved.
    Duplicate {
        /// The existing memory.
        of: Scored,
    },
    /// Alike to `with` above the conflict threshold: staged for the user.
    Conflict {
        /// The existing memory.
        with: Scored,
        /// The other memories alike to it (for edges once it is saved).
        related: Vec<Scored>,
    },
    /// Saved; `related` are the memories alike to it (for the discovery engine).
    New {
        /// Alike memories above the discovery threshold, most alike first.
        related: Vec<Scored>,
    },
}

/// Compares a text about to be saved with the current memories (see the
/// module docs). With conflict detection off, only the related memories are
/// looked up.
pub fn check(
    store: &Store,
    config: &Config,
    text: &str,
    embedding: Option<&[f32]>,
    project: Option<&str>,
    exclude: &[&str],
) -> Result<Verdict> {
    let c = &config.knowledge.conflicts;
    let g = &config.knowledge.graph;
    let floor = if c.enabled { g.related_similarity.min(c.similarity_threshold) } else { g.related_similarity };
    let mut alike = similar_memories(store, text, embedding, project, exclude, floor, 50)?;
    if c.enabled
        && let Some(best) = alike.first()
    {
        if best.similarity > DUPLICATE_SIMILARITY {
            return Ok(Verdict::Duplicate { of: alike.swap_remove(0) });
        }
        if best.similarity > c.similarity_threshold {
            let with = alike.remove(0);
            return Ok(Verdict::Conflict { with, related: alike });
        }
    }
    Ok(Verdict::New { related: alike })
}

/// The id of the buffer entry of a memory id (so a derived memory, from
/// extraction, is staged under a derived entry: extracting again stages it again
/// under the same id, which the projection ignores).
pub fn stage_id_for(memory: &MemoryId) -> String {
    crate::base::ids::derived_with_prefix("obs", &[memory.as_str()])
}

/// The `knowledge.staged` body of a memory flagged against `with`.
pub fn conflict_body(memory: MemoryAdded, with: &Scored) -> Body {
    Body::MemoryStaged(MemoryStaged {
        stage_id: stage_id_for(&memory.memory_id),
        status: status::NEEDS_CLARIFICATION.to_owned(),
        memory,
        conflict_with: Some(with.id.clone()),
        similarity: Some(with.similarity),
        reason: format!("{:.0}% alike to {}", with.similarity * 100.0, with.id),
    })
}

/// One entry of the observation buffer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StagedRecord {
    /// Id (`obs_…`).
    pub id: String,
    /// Status (see the module docs).
    pub status: String,
    /// The id the memory gets when saved.
    pub memory_id: String,
    /// Its text.
    pub content: String,
    /// Its type.
    #[serde(rename = "type")]
    pub memory_type: crate::storage::event::MemoryType,
    /// Its project.
    pub project: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// Where it came from (`mcp`, `explicit`, `extracted`, …).
    pub source: String,
    /// The session it was written in.
    pub session: Option<String>,
    /// The memory it resembles.
    pub conflict_with: Option<String>,
    /// That memory's text (empty if it was forgotten since).
    pub conflict_content: Option<String>,
    /// How alike.
    pub similarity: Option<f64>,
    /// Why it was staged.
    pub reason: String,
    /// How it was resolved.
    pub resolution: Option<String>,
    /// By whom.
    pub resolved_by: Option<String>,
    /// The memory it ended up in.
    pub result_id: Option<String>,
    /// Times it was put before the user.
    pub surfaced: i64,
    /// When it was staged (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// The memory it will be saved as (internal).
    #[serde(skip)]
    pub memory: MemoryAdded,
}

const COLUMNS: &str = "s.id, s.status, s.memory_id, s.content, s.type, s.project, s.tags, s.source, s.session_key,
    s.conflict_with, m.content, s.similarity, s.reason, s.resolution, s.resolved_by, s.result_id, s.surfaced,
    s.created_ms, s.updated_ms, s.memory";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StagedRecord> {
    let tags: String = r.get(6)?;
    let memory: String = r.get(19)?;
    Ok(StagedRecord {
        id: r.get(0)?,
        status: r.get(1)?,
        memory_id: r.get(2)?,
        content: r.get(3)?,
        memory_type: r.get(4)?,
        project: r.get(5)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        source: r.get(7)?,
        session: r.get(8)?,
        conflict_with: r.get(9)?,
        conflict_content: r.get(10)?,
        similarity: r.get(11)?,
        reason: r.get(12)?,
        resolution: r.get(13)?,
        resolved_by: r.get(14)?,
        result_id: r.get(15)?,
        surfaced: r.get(16)?,
        created_at: Ts(r.get(17)?).to_rfc3339(),
        updated_at: Ts(r.get(18)?).to_rfc3339(),
        memory: serde_json::from_str(&memory).unwrap_or_default(),
    })
}

/// One buffer entry.
pub fn get(store: &Store, id: &str) -> Result<Option<StagedRecord>> {
    store
        .conn()
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM staged_memories s LEFT JOIN memories m ON m.id = s.conflict_with WHERE s.id = ?1"
        ))
        .and_then(|mut s| s.query_row([id], row).optional())
        .sql("read a staged memory")
}

/// The unresolved entry staging exactly `content` against `with`, if any:
/// (stage id, staged memory id). Saving the same text again asks nothing new.
pub fn pending_same(store: &Store, content: &str, with: &MemoryId) -> Result<Option<(String, MemoryId)>> {
    store
        .conn()
        .prepare_cached(
            "SELECT id, memory_id FROM staged_memories
             WHERE content = ?1 AND conflict_with = ?2 AND status IN ('needs_clarification', 'pending')
             ORDER BY created_ms, id LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row(params![content, with.as_str()], |r| Ok((r.get(0)?, MemoryId(r.get(1)?)))).optional()
        })
        .sql("look up a staged memory")
}

/// Which entries [`list`] returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StagedFilter {
    /// Only this status.
    pub status: Option<String>,
    /// Only this project (and entries of no project).
    pub project: Option<String>,
    /// At most this many (0: 100).
    pub limit: usize,
}

/// Buffer entries, unresolved first, oldest first (seed `GET /api/staging`).
pub fn list(store: &Store, f: &StagedFilter) -> Result<Vec<StagedRecord>> {
    let limit = if f.limit == 0 { 100 } else { f.limit };
    let mut stmt = store
        .conn()
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM staged_memories s LEFT JOIN memories m ON m.id = s.conflict_with
             WHERE (?1 IS NULL OR s.status = ?1) AND (?2 IS NULL OR s.project IS NULL OR s.project = ?2)
             ORDER BY s.status NOT IN ('needs_clarification', 'pending'), s.created_ms, s.id LIMIT ?3"
        ))
        .sql("list staged memories")?;
    let rows = stmt.query_map(params![f.status, f.project, limit as i64], row).sql("list staged memories")?;
    rows.collect::<rusqlite::Result<_>>().sql("list staged memories")
}

/// Unresolved conflicts, oldest first (seed `getPendingConflicts`).
pub fn pending_conflicts(store: &Store, project: Option<&str>) -> Result<Vec<StagedRecord>> {
    list(
        store,
        &StagedFilter {
            status: Some(status::NEEDS_CLARIFICATION.into()),
            project: project.map(str::to_owned),
            limit: 100,
        },
    )
}

/// Entries by status, for statistics.
pub fn counts(store: &Store) -> Result<std::collections::BTreeMap<String, i64>> {
    let mut stmt = store
        .conn()
        .prepare_cached("SELECT status, COUNT(*) FROM staged_memories GROUP BY status")
        .sql("count staged memories")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).sql("count staged memories")?;
    rows.collect::<rusqlite::Result<_>>().sql("count staged memories")
}

/// Times `stage_id` was surfaced in `session`.
pub fn surfaced_in(store: &Store, stage_id: &str, session: &str) -> Result<i64> {
    Ok(store
        .conn()
        .prepare_cached("SELECT count FROM staged_surfaced WHERE stage_id = ?1 AND session_key = ?2")
        .and_then(|mut s| s.query_row([stage_id, session], |r| r.get(0)).optional())
        .sql("read surfaced count")?
        .unwrap_or(0))
}
