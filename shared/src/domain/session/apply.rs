//! How session events change the projection: the `sessions` rows and their
//! counters, `session_events` (and its full-text index) for content, harness
//! records no adapter interprets, and the ingestion cursors.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};

use crate::base::error::{Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::storage::event::{Body, Event, Opaque, SessionEnded, SessionStarted, SourceCursor, context_reset, origin};
use crate::storage::store::{Step, cap, data};
use crate::storage::tape::Lsn;

/// What one event adds to its session's counters.
#[derive(Debug, Default)]
pub(crate) struct Delta {
    pub(crate) min_ts: i64,
    pub(crate) max_ts: i64,
    pub(crate) events: i64,
    pub(crate) prompts: i64,
    pub(crate) msg_in: i64,
    pub(crate) msg_out: i64,
    pub(crate) tool_calls: i64,
    pub(crate) tool_errors: i64,
    pub(crate) reads: i64,
    pub(crate) edits: i64,
    pub(crate) compactions: i64,
    pub(crate) opaque: i64,
}

/// Per-session counters accumulated over a batch and written once.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    sessions: BTreeMap<String, Delta>,
}

impl Counters {
    pub(crate) fn add(&mut self, session: &SessionKey, ts: Ts, d: Delta) {
        let entry = self.sessions.entry(session.0.clone()).or_insert_with(|| Delta {
            min_ts: ts.0,
            max_ts: ts.0,
            ..Delta::default()
        });
        entry.min_ts = entry.min_ts.min(ts.0);
        entry.max_ts = entry.max_ts.max(ts.0);
        entry.events += d.events;
        entry.prompts += d.prompts;
        entry.msg_in += d.msg_in;
        entry.msg_out += d.msg_out;
        entry.tool_calls += d.tool_calls;
        entry.tool_errors += d.tool_errors;
        entry.reads += d.reads;
        entry.edits += d.edits;
        entry.compactions += d.compactions;
        entry.opaque += d.opaque;
    }

    /// Writes the accumulated counters (the sessions' rows).
    pub(crate) fn flush(&mut self, conn: &Connection) -> Result<()> {
        let mut stmt = conn
            .prepare_cached(
                "INSERT INTO sessions (session_key, harness, harness_session_id, started_ms, last_event_ms,
                    event_count, prompt_count, msg_in_count, msg_out_count, tool_call_count, tool_error_count,
                    code_read_count, code_edit_count, compaction_count, opaque_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                 ON CONFLICT(session_key) DO UPDATE SET
                    started_ms = MIN(started_ms, excluded.started_ms),
                    last_event_ms = MAX(last_event_ms, excluded.last_event_ms),
                    ended_ms = CASE WHEN end_reason = 'idle' AND excluded.last_event_ms > ended_ms
                                    THEN NULL ELSE ended_ms END,
                    end_reason = CASE WHEN end_reason = 'idle' AND excluded.last_event_ms > ended_ms
                                      THEN NULL ELSE end_reason END,
                    event_count = event_count + excluded.event_count,
                    prompt_count = prompt_count + excluded.prompt_count,
                    msg_in_count = msg_in_count + excluded.msg_in_count,
                    msg_out_count = msg_out_count + excluded.msg_out_count,
                    tool_call_count = tool_call_count + excluded.tool_call_count,
                    tool_error_count = tool_error_count + excluded.tool_error_count,
                    code_read_count = code_read_count + excluded.code_read_count,
                    code_edit_count = code_edit_count + excluded.code_edit_count,
                    compaction_count = compaction_count + excluded.compaction_count,
                    opaque_count = opaque_count + excluded.opaque_count",
            )
            .sql("prepare session counters")?;
        for (key, d) in std::mem::take(&mut self.sessions) {
            let sk = SessionKey(key);
            stmt.execute(params![
                sk.as_str(),
                sk.harness(),
                sk.harness_id(),
                d.min_ts,
                d.max_ts,
                d.events,
                d.prompts,
                d.msg_in,
                d.msg_out,
                d.tool_calls,
                d.tool_errors,
                d.reads,
                d.edits,
                d.compactions,
                d.opaque
            ])
            .sql("update session counters")?;
        }
        Ok(())
    }
}

/// Makes sure the session has a row.
pub(crate) fn ensure(conn: &Connection, key: &SessionKey, ts: Ts) -> Step<()> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO sessions (session_key, harness, harness_session_id, started_ms, last_event_ms)
             VALUES (?1, ?2, ?3, ?4, ?4)",
    )?
    .execute(params![key.as_str(), key.harness(), key.harness_id(), ts.0])?;
    Ok(())
}

/// `session.started`: the session's row, merged with what was known.
pub(crate) fn started(conn: &Connection, event: &Event, b: &SessionStarted) -> Step<()> {
    let key = match &event.session {
        Some(k) => k.clone(),
        None if !b.harness.is_empty() => SessionKey::new(&b.harness, &b.harness_session_id),
        None => return data("session.started without a session key or harness"),
    };
    let harness = if b.harness.is_empty() { key.harness().to_owned() } else { b.harness.clone() };
    let hid = if b.harness_session_id.is_empty() { key.harness_id().to_owned() } else { b.harness_session_id.clone() };
    conn.prepare_cached(
        "INSERT INTO sessions (session_key, harness, harness_session_id, project, cwd, git_branch,
                parent_session_key, parent_link, model, harness_version, source_path, started_ms, last_event_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)
             ON CONFLICT(session_key) DO UPDATE SET
                harness = excluded.harness, harness_session_id = excluded.harness_session_id,
                project = CASE WHEN EXISTS (SELECT 1 FROM session_env e WHERE e.session_key = ?1)
                               THEN project ELSE COALESCE(excluded.project, project) END,
                cwd = COALESCE(excluded.cwd, cwd),
                git_branch = COALESCE(excluded.git_branch, git_branch),
                parent_session_key = COALESCE(excluded.parent_session_key, parent_session_key),
                parent_link = COALESCE(excluded.parent_link, parent_link),
                model = COALESCE(excluded.model, model),
                harness_version = COALESCE(excluded.harness_version, harness_version),
                source_path = COALESCE(excluded.source_path, source_path),
                started_ms = MIN(started_ms, excluded.started_ms),
                last_event_ms = MAX(last_event_ms, excluded.last_event_ms)",
    )?
    .execute(params![
        key.as_str(),
        harness,
        hid,
        b.project,
        b.cwd,
        b.git_branch,
        b.parent.as_ref().map(|p| p.as_str()),
        b.parent_link,
        b.model,
        b.harness_version,
        b.source_path,
        event.ts.0
    ])?;
    Ok(())
}

/// `session.ended`: when and why (an idle end is a guess that newer content undoes).
pub(crate) fn ended(conn: &Connection, event: &Event, b: &SessionEnded) -> Step<()> {
    let ts = event.ts;
    let session = event.session.as_ref();
    let Some(key) = session else {
        return data("session.ended without a session");
    };
    ensure(conn, key, ts)?;
    // An idle end is a guess ("no new content for a while"): content newer than it
    // reopens the session, and a stale idle end does not close a session that moved on.
    conn.prepare_cached(
        "UPDATE sessions SET ended_ms = ?2, end_reason = ?3
                 WHERE session_key = ?1 AND NOT (?3 = 'idle' AND last_event_ms > ?2)",
    )?
    .execute(params![key.as_str(), ts.0, b.reason])?;
    Ok(())
}

/// `opaque`: a harness record the adapter does not interpret, counted per type.
pub(crate) fn opaque(conn: &Connection, event: &Event, b: &Opaque) -> Step<Delta> {
    let session = event.session.as_ref();
    let harness = session.map_or("unknown", SessionKey::harness);
    conn.prepare_cached(
        "INSERT INTO ingest_diagnostics (harness, record_type, count) VALUES (?1, ?2, 1)
                 ON CONFLICT(harness, record_type) DO UPDATE SET count = count + 1",
    )?
    .execute(params![harness, b.record_type])?;

    Ok(Delta { events: 1, opaque: 1, ..Delta::default() })
}

/// `source.cursor`: how far a harness file has been read.
pub(crate) fn cursor(conn: &Connection, event: &Event, b: &SourceCursor) -> Step<()> {
    let ts = event.ts;
    conn.prepare_cached(
        "INSERT INTO ingest_cursors (path, harness, file_id, offset, size, mtime_ms, state, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(path) DO UPDATE SET harness = excluded.harness, file_id = excluded.file_id,
                   offset = excluded.offset, size = excluded.size, mtime_ms = excluded.mtime_ms,
                   state = excluded.state, updated_ms = excluded.updated_ms",
    )?
    .execute(params![
        b.path,
        b.harness,
        b.file_id,
        b.offset as i64,
        b.size as i64,
        b.mtime_ms,
        (!b.state.is_null()).then(|| b.state.to_string()),
        ts.0
    ])?;

    Ok(())
}

/// Records a content event in `session_events` (and its searchable text);
/// `None` when the event id is already there.
pub(crate) fn content(conn: &Connection, lsn: Lsn, event: &Event, row: ContentRow) -> Step<Option<Delta>> {
    let Some(session) = &event.session else {
        return data(format!("{} event without a session", event.kind()));
    };
    let inserted = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO session_events
               (lsn, event_id, session_key, kind, ts_ms, origin, tool, call_id, file, is_error, text)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            lsn as i64,
            event.id.as_str(),
            session.as_str(),
            event.kind(),
            event.ts.0,
            row.origin,
            row.tool,
            row.call_id,
            row.file,
            row.is_error,
            row.text
        ])?;
    if inserted == 0 {
        return Ok(None);
    }
    if !row.text.is_empty() {
        conn.prepare_cached("INSERT INTO session_events_fts (rowid, text) VALUES (?1, ?2)")?
            .execute(params![lsn as i64, row.text])?;
    }
    if let Body::Meta(m) = &event.body {
        match m.label.as_str() {
            "title" => {
                ensure(conn, session, event.ts)?;
                conn.prepare_cached("UPDATE sessions SET title = ?2 WHERE session_key = ?1")?
                    .execute(params![session.as_str(), m.text])?;
            }
            "model" if m.model.is_some() => {
                ensure(conn, session, event.ts)?;
                conn.prepare_cached("UPDATE sessions SET model = ?2 WHERE session_key = ?1")?
                    .execute(params![session.as_str(), m.model])?;
            }
            // The agent's context was emptied (trust: injection after a compaction).
            label if context_reset::resets(label) => {
                ensure(conn, session, event.ts)?;
                conn.prepare_cached(
                    "UPDATE sessions SET context_reset_ms = MAX(COALESCE(context_reset_ms, ?2), ?2)
                         WHERE session_key = ?1",
                )?
                .execute(params![session.as_str(), event.ts.0])?;
            }
            _ => {}
        }
    }
    Ok(Some(row.delta))
}

/// What a content event contributes to `session_events` and session counters.
pub(crate) struct ContentRow {
    pub(crate) origin: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) call_id: Option<String>,
    pub(crate) file: Option<String>,
    pub(crate) is_error: bool,
    pub(crate) text: String,
    pub(crate) delta: Delta,
}

/// Bytes of a user prompt kept for search.
const PROMPT_TEXT: usize = 2048;
/// Bytes of other messages (assistant text, summaries) kept for search.
const MESSAGE_TEXT: usize = 1024;
/// Bytes of tool arguments, error output and metadata kept for search.
const SHORT_TEXT: usize = 300;

/// Tool arguments worth searching: paths, commands, patterns, queries.
const SALIENT_ARGS: &[&str] =
    &["file_path", "path", "filePath", "command", "cmd", "pattern", "query", "url", "description", "prompt"];

/// The searchable text of a content event. The projection indexes what finds a
/// conversation again (prompts, answers, what tools were pointed at, errors);
/// everything else (tool output, reasoning, Engram's own injected context)
/// stays only in the tapes, which `tapes show` prints in full.
pub(crate) fn content_row(event: &Event) -> Option<ContentRow> {
    let one = Delta { events: 1, ..Delta::default() };
    let row = |text: &str, max: usize, delta: Delta| ContentRow {
        origin: None,
        tool: None,
        call_id: None,
        file: None,
        is_error: false,
        text: cap(text, max).to_owned(),
        delta,
    };
    Some(match &event.body {
        Body::MsgIn(m) => {
            let prompt = m.is_user_prompt();
            let max = match m.origin.as_str() {
                _ if prompt => PROMPT_TEXT,
                origin::ENGRAM | origin::HOOK => 0,
                _ => MESSAGE_TEXT,
            };
            let mut r = row(&m.text, max, Delta { msg_in: 1, prompts: i64::from(prompt), ..one });
            r.origin = (!m.origin.is_empty()).then(|| m.origin.clone());
            r
        }
        Body::MsgOut(m) => {
            let max = if m.part.is_empty() || m.part == "text" { MESSAGE_TEXT } else { 0 };
            let mut r = row(&m.text, max, Delta { msg_out: 1, ..one });
            r.origin = (!m.part.is_empty()).then(|| m.part.clone());
            r
        }
        Body::ToolCall(t) => {
            let mut text = t.tool.clone();
            match &t.args {
                serde_json::Value::Object(map) => {
                    for key in SALIENT_ARGS {
                        if let Some(v) = map.get(*key) {
                            text.push(' ');
                            match v {
                                serde_json::Value::String(s) => text.push_str(cap(s, SHORT_TEXT)),
                                other => text.push_str(cap(&other.to_string(), SHORT_TEXT)),
                            }
                        }
                    }
                }
                serde_json::Value::String(s) => {
                    text.push(' ');
                    text.push_str(cap(s, SHORT_TEXT));
                }
                _ => {}
            }
            let mut r = row(&text, SHORT_TEXT, Delta { tool_calls: 1, ..one });
            r.tool = Some(t.tool.clone());
            r.call_id = Some(t.call_id.clone());
            r
        }
        Body::ToolResult(t) => {
            let text = if !t.is_error {
                String::new()
            } else if t.stderr.is_empty() {
                cap(&t.stdout, SHORT_TEXT).to_owned()
            } else {
                format!("{} {}", cap(&t.stderr, SHORT_TEXT), cap(&t.stdout, SHORT_TEXT))
            };
            let mut r = row(&text, SHORT_TEXT, Delta { tool_errors: i64::from(t.is_error), ..one });
            r.tool = (!t.tool.is_empty()).then(|| t.tool.clone());
            r.call_id = Some(t.call_id.clone());
            r.is_error = t.is_error;
            r
        }
        Body::CodeRead(c) => {
            let mut r = row(&c.file, SHORT_TEXT, Delta { reads: 1, ..one });
            r.file = Some(c.file.clone());
            r
        }
        Body::CodeEdit(c) => {
            let mut r = row(&c.file, SHORT_TEXT, Delta { edits: 1, ..one });
            r.file = Some(c.file.clone());
            r.call_id = c.call_id.clone();
            r
        }
        Body::SpanLink(s) => row(&format!("{} {} {}", s.note, s.from_file, s.to_file), SHORT_TEXT, one),
        Body::Meta(m) => {
            let compaction = i64::from(m.label == "compaction");
            let text = match &m.text {
                Some(t) => format!("{} {t}", m.label),
                None => m.label.clone(),
            };
            let mut r = row(&text, SHORT_TEXT, Delta { compactions: compaction, ..one });
            r.origin = Some(m.label.clone());
            r
        }
        _ => return None,
    })
}
