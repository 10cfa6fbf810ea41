//! Read queries of sessions: per-file ingestion cursors, which events and
//! sessions the projection already holds, idle sessions, a session's recent
//! events. Nothing here writes: every state change goes through the journal.

use std::collections::HashSet;

use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use crate::base::error::{Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::storage::store::Store;
use crate::storage::tape::Lsn;

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ids::EventId;
    use crate::base::time::Ts;
    use crate::storage::event::{Body, Event, MsgIn, SessionEnded, SourceCursor};

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
        crate::projection::apply(&mut store, &batch).unwrap();
        (dir, store)
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
}
