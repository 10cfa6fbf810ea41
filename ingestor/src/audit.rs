//! `engram-ingestor session audit`: Engrammar's `session_audit` (seed 000),
//! per session the memories shown to the agent, the repository and
//! environment tags it ran with, and the transcript it was read from with
//! how far the per-turn pipeline has read it (the `session_audit` view of
//! migration 0011, a projection of events like every table).

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use shared::base::error::SqlContext;
use shared::base::time::Ts;
use shared::storage::store::Store;

use crate::error::Error;

/// One session's audit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionAudit {
    /// `harness:id`.
    pub session: String,
    /// The harness.
    pub harness: String,
    /// The transcript the session was read from.
    pub transcript_path: Option<String>,
    /// Bytes of it read (the per-turn byte offset).
    pub transcript_offset: Option<u64>,
    /// Its size when last read.
    pub transcript_size: Option<u64>,
    /// The project (repository) it ran in.
    pub repo: Option<String>,
    /// Its environment tags.
    pub env_tags: Vec<String>,
    /// Memories injected into it, in the order first shown.
    pub shown_engram_ids: Vec<String>,
    /// Start (RFC 3339).
    pub started_at: String,
    /// Last event (RFC 3339).
    pub last_event_at: String,
}

const COLUMNS: &str = "session_key, harness, transcript_path, transcript_offset, transcript_size, repo, env_tags,
    shown_engram_ids, started_ms, last_event_ms";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionAudit> {
    let list = |i: usize| -> rusqlite::Result<Vec<String>> {
        Ok(r.get::<_, Option<String>>(i)?.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default())
    };
    let bytes =
        |i: usize| -> rusqlite::Result<Option<u64>> { Ok(r.get::<_, Option<i64>>(i)?.map(|v| v.max(0) as u64)) };
    Ok(SessionAudit {
        session: r.get(0)?,
        harness: r.get(1)?,
        transcript_path: r.get(2)?,
        transcript_offset: bytes(3)?,
        transcript_size: bytes(4)?,
        repo: r.get(5)?,
        env_tags: list(6)?,
        shown_engram_ids: list(7)?,
        started_at: Ts(r.get(8)?).to_rfc3339(),
        last_event_at: Ts(r.get(9)?).to_rfc3339(),
    })
}

/// The audit of one session (`harness:id`, or the harness's id alone).
pub fn one(store: &Store, session: &str) -> Result<Option<SessionAudit>, Error> {
    store
        .conn()
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM session_audit WHERE session_key = ?1
             OR session_key IN (SELECT session_key FROM sessions WHERE harness_session_id = ?1)
             ORDER BY last_event_ms DESC LIMIT 1"
        ))
        .and_then(|mut s| s.query_row([session], row).optional())
        .sql("read the session audit")
        .map_err(|e| Error::engram("audit a session", e))
}

/// The audits of the `limit` sessions with the latest activity.
pub fn recent(store: &Store, limit: usize) -> Result<Vec<SessionAudit>, Error> {
    let fail = |e: rusqlite::Error| {
        Error::engram("audit sessions", shared::base::error::Error::sqlite("read the session audit", e))
    };
    let mut stmt = store
        .conn()
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM session_audit ORDER BY last_event_ms DESC, session_key LIMIT ?1"
        ))
        .map_err(fail)?;
    let rows = stmt.query_map(params![limit as i64], row).map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

/// An audit for people.
pub fn render(a: &SessionAudit) -> String {
    let none = || "(none)".to_owned();
    let read = match (a.transcript_offset, a.transcript_size) {
        (Some(o), Some(s)) => format!(" (read to byte {o} of {s})"),
        _ => String::new(),
    };
    format!(
        "session: {}\n  repo: {}\n  tags: {}\n  transcript: {}{read}\n  shown: {}\n  active: {} .. {}\n",
        a.session,
        a.repo.clone().unwrap_or_else(none),
        if a.env_tags.is_empty() { none() } else { a.env_tags.join(", ") },
        a.transcript_path.clone().unwrap_or_else(none),
        if a.shown_engram_ids.is_empty() { none() } else { a.shown_engram_ids.join(", ") },
        a.started_at,
        a.last_event_at,
    )
}
