//! Read-only queries of the ingestor: per-file cursors, which events and
//! sessions the projection already holds, idle sessions, recent events of a
//! session, and memories (for dedup and for the memory commands).
//!
//! Nothing here writes: every state change goes through the journal.

use std::collections::HashSet;

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::Value;

use super::Store;
use crate::error::{Error, Result, SqlContext};
use crate::ids::SessionKey;
use crate::tape::Lsn;

/// How far one harness file has been ingested (`ingest_cursors`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IngestCursor {
    /// The file, directory or database.
    pub path: String,
    /// Harness name.
    pub harness: String,
    /// File identity as the ingestor wrote it.
    pub file_id: String,
    /// Bytes consumed.
    pub offset: u64,
    /// Size when last read.
    pub size: u64,
    /// Modification time when last read (ms).
    pub mtime_ms: i64,
    /// Adapter resume state (`Value::Null` when none).
    pub state: Value,
}

/// A session with no content since `last_event_ms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleSession {
    /// The session.
    pub key: SessionKey,
    /// Time of its latest event (ms).
    pub last_event_ms: i64,
}

/// One row of `memories`, as the memory commands show it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryRecord {
    /// Id.
    pub id: String,
    /// Text (empty once forgotten).
    pub content: String,
    /// Type (as stored: one of seed 004's knowledge types, or the kind
    /// extraction gave it).
    #[serde(rename = "type")]
    pub memory_type: String,
    /// Seed 004's knowledge type it is listed under
    /// ([`crate::knowledge::knowledge_type`]).
    pub knowledge_type: &'static str,
    /// 0..=1.
    pub importance: f64,
    /// Project.
    pub project: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Pinned.
    pub pinned: bool,
    /// How it was created.
    pub source: String,
    /// Session it was learned from.
    pub source_session: Option<String>,
    /// Event that triggered it.
    pub source_event: Option<String>,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Creation time (ms).
    pub created_ms: i64,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// Times seen (merged duplicates count here).
    pub occurrence_count: i64,
    /// Times injected.
    pub access_count: i64,
    /// Forgotten.
    pub is_deleted: bool,
    /// Deprecated.
    pub deprecated: bool,
    /// Why it was deprecated.
    pub deprecated_reason: Option<String>,
    /// The memory that replaces it.
    pub superseded_by: Option<String>,
    /// Explicit feedback events.
    pub feedback_count: i64,
    /// Sum of their relevance.
    pub feedback_sum: f64,
}

/// Which memories [`Store::memories`] lists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryFilter {
    /// Only this project.
    pub project: Option<String>,
    /// Only this type: a stored type exactly, a knowledge type with every
    /// kind listed under it ([`crate::knowledge::type_matches`]).
    pub memory_type: Option<String>,
    /// At most this many (0 = no limit).
    pub limit: usize,
    /// Include forgotten memories.
    pub include_forgotten: bool,
}

/// One explicit feedback on a memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FeedbackRecord {
    /// The session it was given in.
    pub session_key: Option<String>,
    /// 0..=1.
    pub relevance: f64,
    /// Free text.
    pub reason: String,
    /// Who gave it.
    pub by: String,
    /// When (RFC 3339).
    pub created_at: String,
}

const MEMORY_COLUMNS: &str = "m.id, m.content, m.type, m.importance, m.project, m.tags, m.pinned, m.source, \
    m.source_session, m.source_event, m.created_at, m.created_ms, m.updated_at, m.occurrence_count, m.access_count, \
    m.is_deleted, m.deprecated, m.deprecated_reason, m.superseded_by, m.feedback_count, m.feedback_sum";

/// Rounds a value stored from an `f32` to the precision it had (0.7, not 0.699999988).
fn f32_precision(x: f64) -> f64 {
    (x as f32).to_string().parse().unwrap_or(x)
}

fn memory_row(r: &Row<'_>) -> rusqlite::Result<MemoryRecord> {
    let tags: String = r.get(5)?;
    Ok(MemoryRecord {
        id: r.get(0)?,
        content: r.get(1)?,
        memory_type: r.get(2)?,
        knowledge_type: crate::knowledge::knowledge_type(r.get_ref(2)?.as_str().unwrap_or_default()),
        importance: f32_precision(r.get(3)?),
        project: r.get(4)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        pinned: r.get(6)?,
        source: r.get(7)?,
        source_session: r.get(8)?,
        source_event: r.get(9)?,
        created_at: r.get(10)?,
        created_ms: r.get(11)?,
        updated_at: r.get(12)?,
        occurrence_count: r.get(13)?,
        access_count: r.get(14)?,
        is_deleted: r.get(15)?,
        deprecated: r.get(16)?,
        deprecated_reason: r.get(17)?,
        superseded_by: r.get(18)?,
        feedback_count: r.get(19)?,
        feedback_sum: f32_precision(r.get(20)?),
    })
}

/// An FTS5 query matching any of `words` (each quoted, so no word is read as
/// syntax); `None` when no word is usable.
pub fn any_word_query<S: AsRef<str>>(words: &[S]) -> Option<String> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| w.as_ref().trim())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

impl Store {
    /// Every ingest cursor.
    pub fn ingest_cursors(&self) -> Result<Vec<IngestCursor>> {
        let mut stmt = self
            .conn()
            .prepare("SELECT path, harness, file_id, offset, size, mtime_ms, state FROM ingest_cursors ORDER BY path")
            .sql("list ingest cursors")?;
        let rows = stmt
            .query_map([], |r| {
                let state: Option<String> = r.get(6)?;
                Ok(IngestCursor {
                    path: r.get(0)?,
                    harness: r.get(1)?,
                    file_id: r.get(2)?,
                    offset: r.get::<_, i64>(3)?.max(0) as u64,
                    size: r.get::<_, i64>(4)?.max(0) as u64,
                    mtime_ms: r.get(5)?,
                    state: state.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or(Value::Null),
                })
            })
            .sql("list ingest cursors")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().sql("list ingest cursors")
    }

    /// Which of `ids` the projection already holds: applied (as content or
    /// not), or recorded as failing to apply or as of an unknown kind.
    pub fn known_event_ids<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Result<HashSet<String>> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM session_events WHERE event_id = ?1)
                     OR EXISTS (SELECT 1 FROM applied_events WHERE event_id = ?1)
                     OR EXISTS (SELECT 1 FROM apply_errors WHERE event_id = ?1)
                     OR EXISTS (SELECT 1 FROM unknown_events WHERE event_id = ?1)",
            )
            .sql("prepare event lookup")?;
        let mut known = HashSet::new();
        for id in ids {
            let found: bool = stmt.query_row([id], |r| r.get(0)).sql("look up event")?;
            if found {
                known.insert(id.to_owned());
            }
        }
        Ok(known)
    }

    /// The transcript a known session was read from: `None` when the
    /// projection has no such session, `Some(None)` when it has one without a
    /// source path (recorded by hooks or tools).
    pub fn session_source(&self, key: &str) -> Result<Option<Option<String>>> {
        use rusqlite::OptionalExtension;
        let mut stmt = self
            .conn()
            .prepare_cached("SELECT source_path FROM sessions WHERE session_key = ?1")
            .sql("prepare session source lookup")?;
        stmt.query_row([key], |r| r.get::<_, Option<String>>(0)).optional().sql("look up a session's source")
    }

    /// Which of `keys` have a row in `sessions`.
    pub fn known_sessions<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Result<HashSet<String>> {
        let mut stmt = self
            .conn()
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM sessions WHERE session_key = ?1)")
            .sql("prepare session lookup")?;
        let mut known = HashSet::new();
        for key in keys {
            let found: bool = stmt.query_row([key], |r| r.get(0)).sql("look up session")?;
            if found {
                known.insert(key.to_owned());
            }
        }
        Ok(known)
    }

    /// Sessions whose latest event is older than `before_ms` and that are open
    /// (never ended, or reopened by content newer than an idle end).
    pub fn idle_sessions(&self, before_ms: i64) -> Result<Vec<IdleSession>> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT session_key, last_event_ms FROM sessions
                 WHERE last_event_ms < ?1
                   AND ended_ms IS NULL
                 ORDER BY session_key",
            )
            .sql("list idle sessions")?;
        let rows = stmt
            .query_map([before_ms], |r| Ok(IdleSession { key: SessionKey(r.get(0)?), last_event_ms: r.get(1)? }))
            .sql("list idle sessions")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().sql("list idle sessions")
    }

    /// Log positions of the latest `limit` content events of a session, oldest first.
    pub fn recent_session_lsns(&self, session: &str, limit: usize) -> Result<Vec<Lsn>> {
        let mut stmt = self
            .conn()
            .prepare_cached("SELECT lsn FROM session_events WHERE session_key = ?1 ORDER BY lsn DESC LIMIT ?2")
            .sql("prepare recent events")?;
        let rows = stmt.query_map(params![session, limit as i64], |r| r.get::<_, i64>(0)).sql("list recent events")?;
        let mut lsns: Vec<Lsn> =
            rows.map(|r| r.map(|l| l.max(0) as Lsn)).collect::<rusqlite::Result<_>>().sql("list recent events")?;
        lsns.reverse();
        Ok(lsns)
    }

    /// One memory (forgotten ones included).
    pub fn memory(&self, id: &str) -> Result<Option<MemoryRecord>> {
        self.conn()
            .prepare_cached(&format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = ?1"))
            .and_then(|mut s| s.query_row([id], memory_row).optional())
            .sql("read memory")
    }

    /// How many memories are live (not forgotten): zero is a data home a
    /// person has still to fill ([`crate::hint::empty_store`]).
    pub fn live_memory_count(&self) -> Result<i64> {
        self.conn()
            .prepare_cached("SELECT COUNT(*) FROM memories WHERE is_deleted = 0")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .sql("count memories")
    }

    /// Memories, pinned first, then newest first.
    pub fn memories(&self, filter: &MemoryFilter) -> Result<Vec<MemoryRecord>> {
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM memories m
             WHERE (?1 OR m.is_deleted = 0) AND (?2 IS NULL OR m.project = ?2 OR m.project IN (SELECT key FROM projects WHERE name = ?2)) AND {types}
             ORDER BY m.pinned DESC, m.created_ms DESC, m.id
             LIMIT ?4",
            types = crate::knowledge::type_filter_sql("m.type", "?3", "?5", "?6"),
        );
        let limit = if filter.limit == 0 { -1 } else { filter.limit as i64 };
        let (types, others) = match filter.memory_type.as_deref() {
            Some(t) => {
                let (types, others) = crate::knowledge::stored_types(t);
                (Some(types), others)
            }
            None => (None, false),
        };
        let known = crate::knowledge::known_types_json();
        let mut stmt = self.conn().prepare(&sql).sql("list memories")?;
        let rows = stmt
            .query_map(params![filter.include_forgotten, filter.project, types, limit, others, known], memory_row)
            .sql("list memories")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().sql("list memories")
    }

    /// Live (not forgotten) memories matching any of `words` in full-text
    /// search, best first.
    pub fn memories_matching<S: AsRef<str>>(&self, words: &[S], limit: usize) -> Result<Vec<MemoryRecord>> {
        let Some(query) = any_word_query(words) else {
            return Ok(Vec::new());
        };
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM memories_fts f JOIN memories m ON m.rowid = f.rowid
             WHERE memories_fts MATCH ?1 AND m.is_deleted = 0
             ORDER BY bm25(memories_fts), m.id
             LIMIT ?2"
        );
        let mut stmt = self.conn().prepare_cached(&sql).sql("prepare memory search")?;
        let rows = stmt.query_map(params![query, limit as i64], memory_row).sql("search memories")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| Error::sqlite(format!("search memories for {query}"), e))
    }

    /// Sessions a memory was learned from or seen again in.
    pub fn memory_sessions(&self, id: &str) -> Result<Vec<SessionKey>> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT session_key FROM memory_sessions WHERE memory_id = ?1 ORDER BY first_seen_ms, session_key",
            )
            .sql("prepare memory sessions")?;
        let rows = stmt.query_map([id], |r| Ok(SessionKey(r.get(0)?))).sql("list memory sessions")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().sql("list memory sessions")
    }

    /// A memory's embedding, if one was recorded.
    pub fn memory_embedding(&self, id: &str) -> Result<Option<Vec<f32>>> {
        let blob: Option<Vec<u8>> = self
            .conn()
            .prepare_cached("SELECT vector FROM embeddings WHERE source_type = 'memory' AND source_id = ?1")
            .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
            .sql("read embedding")?;
        Ok(blob.map(|b| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
    }

    /// Explicit feedback given on a memory, oldest first.
    pub fn memory_feedback(&self, id: &str) -> Result<Vec<FeedbackRecord>> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT session_key, relevance, reason, by, created_at FROM memory_feedback
                 WHERE memory_id = ?1 ORDER BY created_at, event_id",
            )
            .sql("list feedback")?;
        let rows = stmt
            .query_map([id], |r| {
                Ok(FeedbackRecord {
                    session_key: r.get(0)?,
                    relevance: f32_precision(r.get(1)?),
                    reason: r.get(2)?,
                    by: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })
            .sql("list feedback")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().sql("list feedback")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Body, Event, MemoryAdded, MsgIn, SessionEnded, SourceCursor};
    use crate::ids::{EventId, MemoryId};
    use crate::time::Ts;

    fn event(id: &str, ts: i64, session: Option<&str>, body: Body) -> Event {
        Event {
            v: 1,
            id: EventId(id.into()),
            ts: Ts(ts),
            writer: "t".into(),
            session: session.map(SessionKey::from),
            body,
        }
    }

    fn store_with(events: &[Event]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("engram.db")).unwrap();
        let batch: Vec<(Lsn, &Event)> = events.iter().enumerate().map(|(i, e)| (i as Lsn + 1, e)).collect();
        store.apply(&batch).unwrap();
        (dir, store)
    }

    fn added(id: &str, text: &str) -> Body {
        Body::MemoryAdded(MemoryAdded {
            memory_id: MemoryId(id.into()),
            content: text.into(),
            memory_type: "convention".into(),
            importance: 0.6,
            tags: vec!["pnpm".into()],
            source_session: Some(SessionKey::from("claude:a")),
            ..MemoryAdded::default()
        })
    }

    #[test]
    fn known_events_sessions_and_cursors() {
        let msg = Body::MsgIn(MsgIn { text: "hello there".into(), ..MsgIn::default() });
        let cursor = Body::SourceCursor(SourceCursor {
            harness: "claude".into(),
            path: "/x/a.jsonl".into(),
            file_id: "1:2:3:abc".into(),
            offset: 10,
            size: 12,
            mtime_ms: 5,
            state: serde_json::json!({"line": 3}),
        });
        let (_dir, store) = store_with(&[
            event("ev_a", 1_000, Some("claude:a"), msg.clone()),
            event("ev_b", 2_000, Some("claude:b"), msg),
            event("ev_c", 3_000, None, cursor),
            event("ev_d", 2_500, Some("claude:b"), Body::SessionEnded(SessionEnded { reason: "idle".into() })),
        ]);
        let known = store.known_event_ids(["ev_a", "ev_c", "ev_zz"]).unwrap();
        assert_eq!(known, HashSet::from(["ev_a".to_owned(), "ev_c".to_owned()]));
        let sessions = store.known_sessions(["claude:a", "claude:nope"]).unwrap();
        assert_eq!(sessions, HashSet::from(["claude:a".to_owned()]));
        let cursors = store.ingest_cursors().unwrap();
        assert_eq!(cursors.len(), 1);
        assert_eq!((cursors[0].offset, cursors[0].state["line"].as_i64()), (10, Some(3)));
        // claude:b ended after its last event; claude:a never ended.
        let idle = store.idle_sessions(10_000).unwrap();
        assert_eq!(idle, vec![IdleSession { key: SessionKey::from("claude:a"), last_event_ms: 1_000 }]);
        assert!(store.idle_sessions(500).unwrap().is_empty());
        assert_eq!(store.recent_session_lsns("claude:b", 5).unwrap(), vec![2]);
    }

    #[test]
    fn memories_list_search_and_show() {
        let (_dir, store) = store_with(&[
            event("ev_1", 1_000, Some("claude:a"), added("mem_1", "Use pnpm, not npm, in this repo.")),
            event("ev_2", 2_000, Some("claude:a"), added("mem_2", "Run cargo fmt before committing.")),
        ]);
        let all = store.memories(&MemoryFilter::default()).unwrap();
        assert_eq!(all.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), vec!["mem_2", "mem_1"]);
        assert_eq!(all[1].tags, vec!["pnpm".to_owned()]);
        assert_eq!(all[1].importance, 0.6, "stored as f32, shown as given");
        let hits = store.memories_matching(&["npm", "repo\"x"], 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "mem_1");
        assert!(store.memories_matching::<&str>(&[], 5).unwrap().is_empty());
        assert_eq!(store.memory("mem_2").unwrap().map(|m| m.content), Some("Run cargo fmt before committing.".into()));
        assert!(store.memory("mem_x").unwrap().is_none());
        assert_eq!(store.memory_sessions("mem_1").unwrap(), vec![SessionKey::from("claude:a")]);
        assert_eq!(store.memory_embedding("mem_1").unwrap(), None);
        assert!(store.memory_feedback("mem_1").unwrap().is_empty());
        let one = store.memories(&MemoryFilter { limit: 1, ..MemoryFilter::default() }).unwrap();
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn word_queries_are_quoted() {
        assert_eq!(any_word_query(&["a", "b\"c", " "]), Some("\"a\" OR \"b\"\"c\"".into()));
        assert_eq!(any_word_query::<&str>(&[]), None);
    }
}
