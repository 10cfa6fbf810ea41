//! Projection of events into tables, in log order, idempotently.
//!
//! A batch is applied in one transaction that also advances `applied_lsn`.
//! Events at or before the applied position are skipped; an event id seen
//! before is skipped (content events by `session_events.event_id`, all others
//! by `applied_events`), so applying an event twice changes nothing. Each
//! event runs inside a savepoint: an event that cannot be applied (it names an
//! unknown memory, say) is rolled back alone, recorded in `apply_errors` and
//! logged, and never blocks the log. Errors of the database itself (disk full,
//! I/O) abort the batch without advancing the position.

use std::collections::BTreeMap;

use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use super::{MEMORY_CONTENT_WRITES, Store, read_applied_lsn};
use crate::base::error::{Error, Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::domain::provenance::index::Indexer;
use crate::domain::rank::text::MemoryText;
use crate::storage::event::*;
use crate::storage::tape::Lsn;

/// What a batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Events applied.
    pub applied: u64,
    /// Events whose id had already been applied.
    pub duplicates: u64,
    /// Events at or before the applied position.
    pub already_applied: u64,
    /// Events of unknown kind (kept in the log, skipped here).
    pub unknown: u64,
    /// Events that could not be applied (recorded in `apply_errors`).
    pub errors: u64,
}

impl ApplyStats {
    /// Adds another batch's counts.
    pub fn add(&mut self, other: ApplyStats) {
        self.applied += other.applied;
        self.duplicates += other.duplicates;
        self.already_applied += other.already_applied;
        self.unknown += other.unknown;
        self.errors += other.errors;
    }
}

impl Store {
    /// Applies events in order in one transaction and advances the applied
    /// position to the last LSN given.
    pub fn apply(&mut self, batch: &[(Lsn, &Event)]) -> Result<ApplyStats> {
        // Fast pass without per-event savepoints (a savepoint makes FTS5 flush
        // its pending terms, which is what makes bulk indexing slow). If an
        // event fails, the batch is rolled back and redone with each event
        // isolated in a savepoint; both passes give the same result.
        if let Some(stats) = self.apply_pass(batch, false)? {
            return Ok(stats);
        }
        self.apply_pass(batch, true)?
            .ok_or_else(|| Error::InvalidInput("an isolated apply pass asked to be retried".into()))
    }

    /// One attempt at a batch; `None` when an event failed and `isolate` is off.
    fn apply_pass(&mut self, batch: &[(Lsn, &Event)], isolate: bool) -> Result<Option<ApplyStats>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).sql("begin apply")?;
        let applied = read_applied_lsn(&tx)?;
        let mut projector = Projector {
            conn: &tx,
            sessions: BTreeMap::new(),
            stats: ApplyStats::default(),
            isolate,
            provenance: Indexer::default(),
        };
        let mut last = applied;
        for (lsn, event) in batch {
            if *lsn <= applied {
                projector.stats.already_applied += 1;
                continue;
            }
            if !projector.apply_one(*lsn, event)? {
                // Dropping the transaction rolls it back.
                return Ok(None);
            }
            last = *lsn;
        }
        projector.flush_sessions()?;
        projector.provenance.flush(&tx).sql("write the evidence index")?;
        let stats = projector.stats;
        if last > applied {
            tx.execute(
                "INSERT INTO engram_state (key, value) VALUES ('applied_lsn', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [last.to_string()],
            )
            .sql("advance applied position")?;
        }
        tx.commit().sql("commit apply")?;
        Ok(Some(stats))
    }
}

/// Why one event could not be applied.
enum Failure {
    /// The event's data does not fit the projection; skip it and go on.
    Data(String),
    /// The database failed; abort the batch.
    Fatal(Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        match e.sqlite_error_code() {
            Some(ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch | ErrorCode::TooBig) | None => {
                Failure::Data(e.to_string())
            }
            Some(_) => Failure::Fatal(Error::sqlite("apply event", e)),
        }
    }
}

type Step<T> = std::result::Result<T, Failure>;

fn data<T>(msg: impl Into<String>) -> Step<T> {
    Err(Failure::Data(msg.into()))
}

/// Per-session counters accumulated over a batch and written once.
#[derive(Default)]
struct SessionDelta {
    min_ts: i64,
    max_ts: i64,
    events: i64,
    prompts: i64,
    msg_in: i64,
    msg_out: i64,
    tool_calls: i64,
    tool_errors: i64,
    reads: i64,
    edits: i64,
    compactions: i64,
    opaque: i64,
}

struct Projector<'c> {
    conn: &'c Connection,
    sessions: BTreeMap<String, SessionDelta>,
    stats: ApplyStats,
    /// Run each event in its own savepoint so that a failing one can be skipped.
    isolate: bool,
    /// Provenance: fingerprints, spans, lineage (`provenance::index`).
    provenance: Indexer,
}

impl Projector<'_> {
    /// Applies one event; `Ok(false)` asks for the batch to be redone isolated.
    fn apply_one(&mut self, lsn: Lsn, event: &Event) -> Result<bool> {
        if let Body::Unknown(u) = &event.body {
            tracing::warn!(lsn, kind = %u.kind, reason = %u.reason, "skipping an event this build cannot read");
            self.conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO unknown_events (lsn, event_id, kind, reason) VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut s| s.execute(params![lsn as i64, event.id.as_str(), u.kind, u.reason]))
                .sql("record unknown event")?;
            self.stats.unknown += 1;
            return Ok(true);
        }
        if matches!(event.body, Body::SessionEnded(_) | Body::EnvDetected(_)) {
            // Pending counters first (and outside any savepoint), so that an end
            // (or a detection that may create the session's row) sees the exact
            // `last_event_ms` however the events were batched.
            self.flush_sessions()?;
        }
        if self.isolate {
            self.exec("SAVEPOINT ev")?;
        }
        let outcome = self.apply_inner(lsn, event);
        if !self.isolate {
            match outcome {
                Ok(Some(delta)) => {
                    self.stats.applied += 1;
                    if let (Some(session), Some(delta)) = (&event.session, delta) {
                        self.add_delta(session, event.ts, delta);
                    }
                }
                Ok(None) => self.stats.duplicates += 1,
                Err(Failure::Data(_)) => return Ok(false),
                Err(Failure::Fatal(e)) => return Err(e),
            }
            return Ok(true);
        }
        match outcome {
            Ok(Some(delta)) => {
                self.exec("RELEASE ev")?;
                self.stats.applied += 1;
                if let (Some(session), Some(delta)) = (&event.session, delta) {
                    self.add_delta(session, event.ts, delta);
                }
            }
            Ok(None) => {
                self.exec("RELEASE ev")?;
                self.stats.duplicates += 1;
            }
            Err(Failure::Data(msg)) => {
                self.exec("ROLLBACK TO ev")?;
                self.exec("RELEASE ev")?;
                tracing::warn!(lsn, kind = event.kind(), id = %event.id, error = %msg, "event not applied");
                self.conn
                    .prepare_cached(
                        "INSERT OR IGNORE INTO apply_errors (lsn, event_id, kind, error) VALUES (?1, ?2, ?3, ?4)",
                    )
                    .and_then(|mut s| s.execute(params![lsn as i64, event.id.as_str(), event.kind(), msg]))
                    .sql("record apply error")?;
                self.stats.errors += 1;
            }
            Err(Failure::Fatal(e)) => {
                let _ = self.exec("ROLLBACK TO ev");
                return Err(e);
            }
        }
        Ok(true)
    }

    fn exec(&self, sql: &str) -> Result<()> {
        self.conn.prepare_cached(sql).and_then(|mut s| s.execute([])).sql(sql)?;
        Ok(())
    }

    fn add_delta(&mut self, session: &SessionKey, ts: Ts, d: SessionDelta) {
        let entry = self.sessions.entry(session.0.clone()).or_insert_with(|| SessionDelta {
            min_ts: ts.0,
            max_ts: ts.0,
            ..SessionDelta::default()
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

    fn flush_sessions(&mut self) -> Result<()> {
        let mut stmt = self
            .conn
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

    /// `Ok(Some(delta))` when applied, `Ok(None)` for a duplicate.
    fn apply_inner(&mut self, lsn: Lsn, event: &Event) -> Step<Option<Option<SessionDelta>>> {
        if let Some(row) = content_row(event) {
            return self.apply_content(lsn, event, row).map(|applied| applied.map(Some));
        }
        let fresh = self
            .conn
            .prepare_cached("INSERT OR IGNORE INTO applied_events (event_id) VALUES (?1)")?
            .execute([event.id.as_str()])?;
        if fresh == 0 {
            return Ok(None);
        }
        let ts = event.ts;
        let session = event.session.as_ref();
        let mut delta = None;
        match &event.body {
            Body::SessionStarted(b) => self.session_started(event, b)?,
            Body::SessionEnded(b) => {
                let Some(key) = session else {
                    return data("session.ended without a session");
                };
                self.ensure_session(key, ts)?;
                // An idle end is a guess ("no new content for a while"): content newer than it
                // reopens the session, and a stale idle end does not close a session that moved on.
                self.conn
                    .prepare_cached(
                        "UPDATE sessions SET ended_ms = ?2, end_reason = ?3
                         WHERE session_key = ?1 AND NOT (?3 = 'idle' AND last_event_ms > ?2)",
                    )?
                    .execute(params![key.as_str(), ts.0, b.reason])?;
                delta = Some(SessionDelta::default());
            }
            Body::Opaque(b) => {
                let harness = session.map_or("unknown", SessionKey::harness);
                self.conn
                    .prepare_cached(
                        "INSERT INTO ingest_diagnostics (harness, record_type, count) VALUES (?1, ?2, 1)
                         ON CONFLICT(harness, record_type) DO UPDATE SET count = count + 1",
                    )?
                    .execute(params![harness, b.record_type])?;
                delta = Some(SessionDelta { events: 1, opaque: 1, ..SessionDelta::default() });
            }
            Body::SourceCursor(b) => {
                self.conn
                    .prepare_cached(
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
            }
            Body::MemoryAdded(b) => self.memory_added(event, b)?,
            Body::MemoryUpdated(b) => self.memory_updated(ts, b)?,
            Body::MemoryPinned(b) => self.memory_flag(&b.memory_id, "pinned = 1, auto_pinned = 0", ts)?,
            Body::MemoryUnpinned(b) => self.memory_flag(&b.memory_id, "pinned = 0, auto_pinned = 0", ts)?,
            Body::MemoryDeprecated(b) => {
                self.require_memory(&b.memory_id)?;
                self.conn
                    .prepare_cached(
                        "UPDATE memories SET deprecated = 1, deprecated_reason = ?2, superseded_by = ?3, updated_at = ?4
                         WHERE id = ?1",
                    )?
                    .execute(params![
                        b.memory_id.as_str(),
                        b.reason,
                        b.superseded_by.as_ref().map(|m| m.as_str()),
                        ts.to_rfc3339()
                    ])?;
            }
            Body::MemoryForgotten(b) => self.memory_forgotten(ts, b)?,
            Body::MemoryFeedback(b) => self.memory_feedback(event, b)?,
            Body::MemoryEmbedded(b) => self.memory_embedded(ts, b)?,
            Body::RankingServed(b) => self.ranking_served(event, b)?,
            Body::FtsHits(b) => self.fts_hits(event, b)?,
            Body::SessionScored(b) => self.session_scored(event, b)?,
            Body::ComparisonRecorded(b) => self.comparison(event, b)?,
            Body::TrainingRun(b) => self.training_run(event, b)?,
            Body::ModelPromoted(b) => {
                self.conn
                    .prepare_cached(
                        "INSERT OR REPLACE INTO models (model_version, checkpoint, run_id, promoted_at, promoted_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?
                    .execute(params![b.model_version as i64, b.checkpoint, b.run_id, ts.to_rfc3339(), ts.0])?;
                self.conn
                    .prepare_cached("UPDATE predictor_training_log SET promoted = 1 WHERE id = ?1")?
                    .execute([&b.run_id])?;
            }
            Body::EnvDetected(b) => crate::domain::env::store::apply_detected(self.conn, event, b)?.or_else(data)?,
            Body::MemoryCategorized(b) => {
                self.require_memory(&b.memory_id)?;
                crate::domain::env::categories::apply(self.conn, b)?.or_else(data)?;
            }
            Body::MemoryPrerequisitesSet(b) => {
                self.require_memory(&b.memory_id)?;
                crate::domain::env::store::apply_prerequisites(self.conn, b)?;
            }
            Body::DriftReset(b) => {
                self.conn
                    .prepare_cached(
                        "INSERT INTO drift_resets (event_id, success_rate, window, created_at, created_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?
                    .execute(params![event.id.as_str(), b.success_rate, b.window, ts.to_rfc3339(), ts.0])?;
            }
            // Seed 004's memory model: see `crate::domain::knowledge::apply`.
            Body::EdgeAdded(_)
            | Body::EdgeRemoved(_)
            | Body::MemoryStaged(_)
            | Body::StageResolved(_)
            | Body::ConflictSurfaced(_)
            | Body::ConversationStashed(_)
            | Body::ConversationResumed(_)
            | Body::CheckpointCreated(_)
            | Body::TopicShift(_)
            | Body::SessionSummarized(_)
            | Body::MemoriesMerged(_)
            | Body::DedupChecked(_) => crate::domain::knowledge::apply::apply(self.conn, event)?,
            Body::ProvenanceNoted(b) => crate::domain::provenance::index::noted(self.conn, event, b)?,
            // vault: the tape log's own events change no table.
            Body::TapeLost(_) => {}
            Body::ForgetFingerprints(b) => {
                for fp in &b.fingerprints {
                    self.conn
                        .prepare_cached(
                            "INSERT OR IGNORE INTO forgotten_fingerprints (fingerprint, memory_id) VALUES (?1, ?2)",
                        )?
                        .execute(params![fp, b.memory_id.as_str()])?;
                }
            }
            Body::Meta(_)
            | Body::MsgIn(_)
            | Body::MsgOut(_)
            | Body::ToolCall(_)
            | Body::ToolResult(_)
            | Body::CodeRead(_)
            | Body::CodeEdit(_)
            | Body::SpanLink(_)
            | Body::Unknown(_) => unreachable_content(event)?,
        }
        Ok(Some(delta))
    }

    fn apply_content(&mut self, lsn: Lsn, event: &Event, row: ContentRow) -> Step<Option<SessionDelta>> {
        let Some(session) = &event.session else {
            return data(format!("{} event without a session", event.kind()));
        };
        let inserted = self
            .conn
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
        self.provenance.event(self.conn, lsn, event, self.isolate)?;
        if !row.text.is_empty() {
            self.conn
                .prepare_cached("INSERT INTO session_events_fts (rowid, text) VALUES (?1, ?2)")?
                .execute(params![lsn as i64, row.text])?;
        }
        if let Body::Meta(m) = &event.body {
            match m.label.as_str() {
                "title" => {
                    self.ensure_session(session, event.ts)?;
                    self.conn
                        .prepare_cached("UPDATE sessions SET title = ?2 WHERE session_key = ?1")?
                        .execute(params![session.as_str(), m.text])?;
                }
                "model" if m.model.is_some() => {
                    self.ensure_session(session, event.ts)?;
                    self.conn
                        .prepare_cached("UPDATE sessions SET model = ?2 WHERE session_key = ?1")?
                        .execute(params![session.as_str(), m.model])?;
                }
                // The agent's context was emptied (trust: injection after a compaction).
                label if context_reset::resets(label) => {
                    self.ensure_session(session, event.ts)?;
                    self.conn
                        .prepare_cached(
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

    fn ensure_session(&self, key: &SessionKey, ts: Ts) -> Step<()> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO sessions (session_key, harness, harness_session_id, started_ms, last_event_ms)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
            )?
            .execute(params![key.as_str(), key.harness(), key.harness_id(), ts.0])?;
        Ok(())
    }

    fn session_started(&self, event: &Event, b: &SessionStarted) -> Step<()> {
        let key = match &event.session {
            Some(k) => k.clone(),
            None if !b.harness.is_empty() => SessionKey::new(&b.harness, &b.harness_session_id),
            None => return data("session.started without a session key or harness"),
        };
        let harness = if b.harness.is_empty() { key.harness().to_owned() } else { b.harness.clone() };
        let hid =
            if b.harness_session_id.is_empty() { key.harness_id().to_owned() } else { b.harness_session_id.clone() };
        self.conn
            .prepare_cached(
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

    /// The memory's rowid, text and whether it was forgotten; a data error if unknown.
    fn require_memory(&self, id: &crate::base::ids::MemoryId) -> Step<(i64, String, bool)> {
        let row = self
            .conn
            .prepare_cached("SELECT rowid, content, is_deleted FROM memories WHERE id = ?1")?
            .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        match row {
            Some(r) => Ok(r),
            None => data(format!("unknown memory {id}")),
        }
    }

    fn memory_added(&self, event: &Event, b: &MemoryAdded) -> Step<()> {
        if b.memory_id.as_str().is_empty() {
            return data("memory.added without a memory id");
        }
        if !b.importance.is_finite() {
            return data("memory.added with a non-finite importance");
        }
        let importance = b.importance.clamp(0.0, 1.0);
        let tags = serde_json::to_string(&b.tags).unwrap_or_else(|_| "[]".into());
        let project =
            crate::domain::env::store::memory_project(self.conn, b.project.as_deref(), b.source_session.as_ref())?;
        let at = event.ts.to_rfc3339();
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO memories (id, content, type, importance, project, tags, pinned, source,
                    source_session, source_event, speaker, created_at, created_ms, updated_at, decay_key, text_terms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?12, ?14, ?15)",
            )?
            .execute(params![
                b.memory_id.as_str(),
                b.content,
                if b.memory_type.is_empty() { memory_type::FACT } else { b.memory_type.as_str() },
                importance,
                project,
                tags,
                b.pinned,
                b.source,
                b.source_session.as_ref().map(|s| s.as_str()),
                b.source_event.as_ref().map(|e| e.as_str()),
                b.speaker,
                at,
                event.ts.0,
                decay_key(importance, event.ts.0),
                MemoryText::of(&b.content).encode()
            ])?;
        if inserted == 0 {
            return data(format!("memory {} already exists", b.memory_id));
        }
        let rowid = self.conn.last_insert_rowid();
        self.conn
            .prepare_cached("INSERT INTO memories_fts (rowid, content) VALUES (?1, ?2)")?
            .execute(params![rowid, b.content])?;
        self.adjust_terms(&b.content, 1)?;
        self.count("live_memories", 1)?;
        self.count(MEMORY_CONTENT_WRITES, 1)?;
        if let Some(session) = &b.source_session {
            self.memory_seen(&b.memory_id, session, event.ts)?;
        }
        Ok(())
    }

    /// Adds `delta` to a counter (see [`MEMORY_CONTENT_WRITES`]).
    fn count(&self, name: &str, delta: i64) -> Step<()> {
        Ok(count(self.conn, name, delta)?)
    }

    /// Adds `delta` to the document frequency of each distinct term of `text`.
    fn adjust_terms(&self, text: &str, delta: i64) -> Step<()> {
        Ok(adjust_terms(self.conn, text, delta)?)
    }

    fn memory_seen(&self, id: &crate::base::ids::MemoryId, session: &SessionKey, ts: Ts) -> Step<()> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO memory_sessions (memory_id, session_key, first_seen_ms) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![id.as_str(), session.as_str(), ts.0])?;
        crate::domain::env::store::refresh_memory_env(self.conn, id.as_str())?;
        Ok(())
    }

    fn memory_updated(&self, ts: Ts, b: &MemoryUpdated) -> Step<()> {
        let (rowid, old_content, deleted) = self.require_memory(&b.memory_id)?;
        if deleted {
            return data(format!("memory {} was forgotten", b.memory_id));
        }
        let new_tags = b.tags.as_ref().map(|t| serde_json::to_string(t).unwrap_or_else(|_| "[]".into()));
        if let Some(content) = b.content.as_ref().filter(|c| **c != old_content) {
            replace_content(self.conn, rowid, &old_content, content)?;
        }
        if let Some(imp) = b.importance
            && !imp.is_finite()
        {
            return data("memory.updated with a non-finite importance");
        }
        self.conn
            .prepare_cached(
                "UPDATE memories SET
                    content = COALESCE(?2, content), type = COALESCE(?3, type),
                    importance = COALESCE(?4, importance), tags = COALESCE(?5, tags),
                    project = COALESCE(?6, project), occurrence_count = occurrence_count + ?7,
                    updated_at = ?8
                 WHERE id = ?1",
            )?
            .execute(params![
                b.memory_id.as_str(),
                b.content,
                b.memory_type,
                b.importance.map(|i| i.clamp(0.0, 1.0)),
                new_tags,
                b.project,
                b.occurrences,
                ts.to_rfc3339()
            ])?;
        if b.importance.is_some() {
            self.conn.prepare_cached("UPDATE memories SET decay_key = ?2 WHERE id = ?1")?.execute(params![
                b.memory_id.as_str(),
                self.conn
                    .prepare_cached("SELECT importance, created_ms FROM memories WHERE id = ?1")?
                    .query_row([b.memory_id.as_str()], |r| Ok(decay_key(r.get(0)?, r.get(1)?)))?
            ])?;
        }
        if let Some(session) = &b.seen_in {
            self.memory_seen(&b.memory_id, session, ts)?;
        }
        Ok(())
    }

    fn memory_flag(&self, id: &crate::base::ids::MemoryId, set: &str, ts: Ts) -> Step<()> {
        self.require_memory(id)?;
        let sql = format!("UPDATE memories SET {set}, updated_at = ?2 WHERE id = ?1");
        self.conn.prepare_cached(&sql)?.execute(params![id.as_str(), ts.to_rfc3339()])?;
        Ok(())
    }

    fn memory_forgotten(&self, ts: Ts, b: &MemoryForgotten) -> Step<()> {
        let (rowid, old_content, deleted) = self.require_memory(&b.memory_id)?;
        if !deleted {
            self.conn
                .prepare_cached("INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', ?1, ?2)")?
                .execute(params![rowid, old_content])?;
            self.adjust_terms(&old_content, -1)?;
            self.count("live_memories", -1)?;
            self.count(MEMORY_CONTENT_WRITES, 1)?;
        }
        self.conn
            .prepare_cached(
                "UPDATE memories SET content = '', tags = '[]', is_deleted = 1, pinned = 0, deleted_at = ?2,
                    updated_at = ?2, text_terms = ?3 WHERE id = ?1",
            )?
            .execute(params![b.memory_id.as_str(), ts.to_rfc3339(), MemoryText::of("").encode()])?;
        self.conn
            .prepare_cached("UPDATE memories SET has_embedding = 0 WHERE id = ?1")?
            .execute([b.memory_id.as_str()])?;
        self.conn
            .prepare_cached("DELETE FROM embeddings WHERE source_type = 'memory' AND source_id = ?1")?
            .execute([b.memory_id.as_str()])?;
        Ok(())
    }

    fn memory_feedback(&self, event: &Event, b: &MemoryFeedback) -> Step<()> {
        self.require_memory(&b.memory_id)?;
        if !b.relevance.is_finite() {
            return data("memory.feedback with a non-finite relevance");
        }
        let relevance = b.relevance.clamp(0.0, 1.0);
        self.conn
            .prepare_cached(
                "INSERT INTO memory_feedback (event_id, memory_id, session_key, relevance, reason, by, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                event.id.as_str(),
                b.memory_id.as_str(),
                event.session.as_ref().map(|s| s.as_str()),
                relevance,
                b.reason,
                b.by,
                event.ts.to_rfc3339()
            ])?;
        self.conn
            .prepare_cached(
                "UPDATE memories SET feedback_count = feedback_count + 1, feedback_sum = feedback_sum + ?2 WHERE id = ?1",
            )?
            .execute(params![b.memory_id.as_str(), relevance])?;
        if let Some(session) = &event.session {
            // Signet's running mean in session_memories (migration 025).
            self.conn
                .prepare_cached(
                    "UPDATE session_memories SET
                        agent_relevance_score = (COALESCE(agent_relevance_score, 0) * agent_feedback_count + ?3)
                                                / (agent_feedback_count + 1),
                        agent_feedback_count = agent_feedback_count + 1
                     WHERE session_key = ?1 AND memory_id = ?2",
                )?
                .execute(params![session.as_str(), b.memory_id.as_str(), relevance])?;
        }
        crate::domain::env::stats::on_feedback(self.conn, event, b)?;
        Ok(())
    }

    fn memory_embedded(&self, ts: Ts, b: &MemoryEmbedded) -> Step<()> {
        let (_, content, deleted) = self.require_memory(&b.memory_id)?;
        if deleted {
            return data(format!("memory {} was forgotten", b.memory_id));
        }
        if b.vector.0.is_empty() {
            return data("memory.embedded with an empty vector");
        }
        if b.vector.0.iter().any(|x| !x.is_finite()) {
            return data("memory.embedded with a non-finite component");
        }
        let mut blob = Vec::with_capacity(b.vector.0.len() * 4);
        for x in &b.vector.0 {
            blob.extend_from_slice(&x.to_le_bytes());
        }
        self.conn
            .prepare_cached(
                "INSERT INTO embeddings (id, content_hash, vector, dimensions, source_type, source_id, model, created_at)
                 VALUES (?1, ?2, ?3, ?4, 'memory', ?5, ?6, ?7)
                 ON CONFLICT(source_type, source_id) DO UPDATE SET content_hash = excluded.content_hash,
                    vector = excluded.vector, dimensions = excluded.dimensions, model = excluded.model,
                    created_at = excluded.created_at",
            )?
            .execute(params![
                format!("emb_{}", b.memory_id),
                blake3::hash(content.as_bytes()).to_hex().as_str(),
                blob,
                b.vector.0.len() as i64,
                b.memory_id.as_str(),
                b.model,
                ts.to_rfc3339()
            ])?;
        self.conn
            .prepare_cached("UPDATE memories SET has_embedding = 1 WHERE id = ?1")?
            .execute([b.memory_id.as_str()])?;
        Ok(())
    }

    fn ranking_served(&self, event: &Event, b: &RankingServed) -> Step<()> {
        if b.ranking_id.is_empty() {
            return data("ranking.served without a ranking id");
        }
        let injected = b.candidates.iter().filter(|c| c.injected).count() as i64;
        let at = event.ts.to_rfc3339();
        let session = event.session.as_ref();
        self.conn
            .prepare_cached(
                "INSERT INTO rankings (ranking_id, event_id, session_key, trigger, query, alpha, model_version,
                    cold_start, project, served_at, served_ms, candidate_count, injected_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?
            .execute(params![
                b.ranking_id,
                event.id.as_str(),
                session.map(|s| s.as_str()),
                b.trigger,
                b.query,
                finite_or(b.alpha, 1.0),
                b.model_version.map(|v| v as i64),
                b.cold_start,
                b.project,
                at,
                event.ts.0,
                b.candidates.len() as i64,
                injected
            ])?;
        let explored: Vec<&str> = b
            .candidates
            .iter()
            .filter(|c| c.sources.iter().any(|s| s == source::EXPLORATION))
            .map(|c| c.memory_id.as_str())
            .collect();
        for c in &b.candidates {
            let sources = c.sources.join("+");
            self.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO ranking_candidates (ranking_id, memory_id, sources, baseline_score,
                        baseline_rank, predictor_score, predictor_rank, final_score, rank, injected)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?
                .execute(params![
                    b.ranking_id,
                    c.memory_id.as_str(),
                    sources,
                    finite_or(c.baseline_score, 0.0),
                    c.baseline_rank,
                    c.predictor_score.map(|s| finite_or(s, 0.0)),
                    c.predictor_rank,
                    finite_or(c.final_score, 0.0),
                    c.rank,
                    c.injected
                ])?;
            if c.injected {
                self.conn
                    .prepare_cached(
                        "UPDATE memories SET access_count = access_count + 1, last_accessed = ?2 WHERE id = ?1",
                    )?
                    .execute(params![c.memory_id.as_str(), at])?;
            }
            if let Some(session) = session {
                if c.injected {
                    // A first injection in this session adds a session to the memory's usage.
                    let was: Option<bool> = self
                        .conn
                        .prepare_cached(
                            "SELECT was_injected FROM session_memories WHERE session_key = ?1 AND memory_id = ?2",
                        )?
                        .query_row(params![session.as_str(), c.memory_id.as_str()], |r| r.get(0))
                        .optional()?;
                    if was != Some(true) {
                        self.add_usage(c.memory_id.as_str(), 1, 0.0)?;
                    }
                }
                let signet_source =
                    if explored.contains(&c.memory_id.as_str()) { source::EXPLORATION.to_owned() } else { sources };
                self.conn
                    .prepare_cached(
                        "INSERT INTO session_memories (id, session_key, memory_id, source, effective_score,
                            predictor_score, final_score, rank, was_injected, created_at, predictor_rank,
                            baseline_rank, first_ranking_id, last_injected_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                         ON CONFLICT(session_key, memory_id) DO UPDATE SET
                            was_injected = MAX(was_injected, excluded.was_injected),
                            last_injected_ms = CASE WHEN excluded.last_injected_ms IS NULL THEN last_injected_ms
                                ELSE MAX(COALESCE(last_injected_ms, excluded.last_injected_ms), excluded.last_injected_ms) END,
                            source = CASE WHEN excluded.source = 'exploration' OR source = 'fts_only'
                                          THEN excluded.source ELSE source END,
                            effective_score = COALESCE(effective_score, excluded.effective_score),
                            predictor_score = COALESCE(predictor_score, excluded.predictor_score),
                            predictor_rank = COALESCE(predictor_rank, excluded.predictor_rank),
                            baseline_rank = COALESCE(baseline_rank, excluded.baseline_rank),
                            first_ranking_id = COALESCE(first_ranking_id, excluded.first_ranking_id)",
                    )?
                    .execute(params![
                        format!("{}|{}", session, c.memory_id),
                        session.as_str(),
                        c.memory_id.as_str(),
                        signet_source,
                        finite_or(c.baseline_score, 0.0),
                        c.predictor_score.map(|s| finite_or(s, 0.0)),
                        finite_or(c.final_score, 0.0),
                        c.rank,
                        c.injected,
                        at,
                        c.predictor_rank,
                        c.baseline_rank,
                        b.ranking_id,
                        c.injected.then_some(event.ts.0)
                    ])?;
            }
        }
        Ok(())
    }

    fn fts_hits(&self, event: &Event, b: &FtsHits) -> Step<()> {
        let at = event.ts.to_rfc3339();
        let ids: Vec<&str> = b.memory_ids.iter().map(|m| m.as_str()).collect();
        self.conn
            .prepare_cached(
                "INSERT INTO fts_hits (event_id, session_key, ranking_id, memory_ids, created_at, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                event.id.as_str(),
                event.session.as_ref().map(|s| s.as_str()),
                b.ranking_id,
                serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()),
                at,
                event.ts.0
            ])?;
        if let Some(session) = &event.session {
            for id in &b.memory_ids {
                // Signet's trackFtsHits: increment, or insert an fts_only row.
                self.conn
                    .prepare_cached(
                        "INSERT INTO session_memories (id, session_key, memory_id, source, effective_score,
                            final_score, rank, was_injected, fts_hit_count, created_at)
                         VALUES (?1, ?2, ?3, 'fts_only', 0, 0, 0, 0, 1, ?4)
                         ON CONFLICT(session_key, memory_id) DO UPDATE SET fts_hit_count = fts_hit_count + 1",
                    )?
                    .execute(params![format!("{}|{}", session, id), session.as_str(), id.as_str(), at])?;
            }
        }
        Ok(())
    }

    fn session_scored(&self, event: &Event, b: &SessionScored) -> Step<()> {
        let Some(session) = &event.session else {
            return data("session.scored without a session");
        };
        if !b.score.is_finite() || !b.confidence.is_finite() {
            return data("session.scored with a non-finite score or confidence");
        }
        let (project, harness): (Option<String>, Option<String>) = self
            .conn
            .prepare_cached("SELECT project, harness FROM sessions WHERE session_key = ?1")?
            .query_row([session.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .unwrap_or((None, Some(session.harness().to_owned())));
        self.conn
            .prepare_cached(
                "INSERT INTO session_scores (id, session_key, project, harness, score, memories_recalled,
                    memories_used, novel_context_count, reasoning, created_at, confidence, continuity_reasoning,
                    scorer, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?9, ?12, ?13)",
            )?
            .execute(params![
                event.id.as_str(),
                session.as_str(),
                project,
                harness,
                b.score,
                b.memories_recalled,
                b.memories_used,
                b.novel_context_count,
                b.reasoning,
                event.ts.to_rfc3339(),
                b.confidence,
                b.scorer,
                event.ts.0
            ])?;
        for (memory, relevance) in &b.relevance {
            let relevance = finite_or(*relevance, 0.0);
            let before = self.usage_contribution(session, memory)?;
            self.conn
                .prepare_cached(
                    "UPDATE session_memories SET relevance_score = ?3 WHERE session_key = ?1 AND memory_id = ?2",
                )?
                .execute(params![session.as_str(), memory.as_str(), relevance])?;
            if let Some((label, old)) = before {
                self.change_usage(memory.as_str(), (label, old), (label, Some(f64::from(relevance))))?;
            }
        }
        for (memory, label) in &b.labels {
            let label = finite_or(*label, 0.0);
            let before = self.usage_contribution(session, memory)?;
            self.conn
                .prepare_cached("UPDATE session_memories SET label = ?3 WHERE session_key = ?1 AND memory_id = ?2")?
                .execute(params![session.as_str(), memory.as_str(), label])?;
            if let Some((old, relevance)) = before {
                self.change_usage(memory.as_str(), (old, relevance), (Some(f64::from(label)), relevance))?;
            }
        }
        crate::domain::env::stats::on_session_scored(self.conn, event, b)?;
        Ok(())
    }

    /// The `(label, relevance_score)` of a session's row for `memory`, if any.
    fn usage_contribution(
        &self,
        session: &SessionKey,
        memory: &crate::base::ids::MemoryId,
    ) -> Step<Option<(Option<f64>, Option<f64>)>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT label, relevance_score FROM session_memories WHERE session_key = ?1 AND memory_id = ?2",
            )?
            .query_row(params![session.as_str(), memory.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    /// Moves a row's `useful` contribution (MAX(COALESCE(label, relevance), 0))
    /// in `memory_usage` from what `before` gave to what `after` gives.
    fn change_usage(
        &self,
        memory: &str,
        before: (Option<f64>, Option<f64>),
        after: (Option<f64>, Option<f64>),
    ) -> Step<()> {
        let useful = |(label, relevance): (Option<f64>, Option<f64>)| label.or(relevance).unwrap_or(0.0).max(0.0);
        let delta = useful(after) - useful(before);
        if delta != 0.0 {
            self.add_usage(memory, 0, delta)?;
        }
        Ok(())
    }

    /// Adds to a memory's `memory_usage` row (migration 0002).
    fn add_usage(&self, memory: &str, sessions_injected: i64, useful: f64) -> Step<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO memory_usage (memory_id, sessions_injected, useful) VALUES (?1, ?2, ?3)
                 ON CONFLICT (memory_id) DO UPDATE SET
                    sessions_injected = sessions_injected + excluded.sessions_injected,
                    useful = useful + excluded.useful",
            )?
            .execute(params![memory, sessions_injected, useful])?;
        Ok(())
    }

    fn comparison(&self, event: &Event, b: &ComparisonRecorded) -> Step<()> {
        let Some(session) = &event.session else {
            return data("comparison.recorded without a session");
        };
        let ids = |v: &[crate::base::ids::MemoryId]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        let id = if b.comparison_id.is_empty() { event.id.as_str() } else { b.comparison_id.as_str() };
        self.conn
            .prepare_cached(
                "INSERT INTO predictor_comparisons (id, session_key, predictor_ndcg, baseline_ndcg, predictor_won,
                    margin, alpha, ema_updated, project, candidate_count, created_at, scorer_confidence,
                    success_rate, predictor_top_ids, baseline_top_ids, relevance_scores, fts_overlap_score,
                    sessions_after_cold_start, cold_start_exited, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
            )?
            .execute(params![
                id,
                session.as_str(),
                finite_or(b.predictor_ndcg, 0.0),
                finite_or(b.baseline_ndcg, 0.0),
                b.predictor_won,
                finite_or(b.margin, 0.0),
                finite_or(b.alpha, 1.0),
                b.ema_updated,
                b.project,
                b.candidate_count,
                event.ts.to_rfc3339(),
                finite_or(b.scorer_confidence, 0.0),
                finite_or(b.success_rate, 0.5),
                ids(&b.predictor_top_ids),
                ids(&b.baseline_top_ids),
                serde_json::to_string(&b.relevance_scores).unwrap_or_else(|_| "{}".into()),
                b.fts_overlap_score,
                b.sessions_after_cold_start,
                b.cold_start_exited,
                event.ts.0
            ])?;
        Ok(())
    }

    fn training_run(&self, event: &Event, b: &TrainingRun) -> Step<()> {
        let id = if b.run_id.is_empty() { event.id.as_str() } else { b.run_id.as_str() };
        let (failures, drifts): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT (SELECT COUNT(*) FROM predictor_training_log WHERE gates_passed = 0),
                        (SELECT COUNT(*) FROM drift_resets)",
            )?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let c = &b.canary;
        self.conn
            .prepare_cached(
                "INSERT INTO predictor_training_log (id, model_version, loss, sample_count, duration_ms, canary_ndcg,
                    canary_ndcg_delta, canary_score_variance, canary_topk_churn, created_at, valid_loss, epochs,
                    steps, canary_serving_ndcg, canary_baseline_ndcg, canary_top5_overlap, canary_sessions,
                    gates_passed, failure, checkpoint, train_validation_failures, drift_resets, drift_retrain,
                    created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
                    ?21, ?22, ?23, ?24)",
            )?
            .execute(params![
                id,
                b.model_version as i64,
                // Signet's column is NOT NULL; a non-finite loss is stored as -1 (the
                // failure column says why).
                if b.loss.is_finite() { f64::from(b.loss) } else { -1.0 },
                b.sample_count,
                b.duration_ms as i64,
                c.ndcg,
                c.ndcg_delta,
                c.score_variance,
                c.topk_churn,
                event.ts.to_rfc3339(),
                b.valid_loss,
                b.epochs,
                b.steps as i64,
                c.serving_ndcg,
                c.baseline_ndcg,
                c.top5_overlap,
                c.sessions,
                b.gates_passed,
                b.failure,
                b.checkpoint,
                failures + i64::from(!b.gates_passed),
                drifts,
                b.drift_retrain,
                event.ts.0
            ])?;
        Ok(())
    }
}

/// Adds `delta` to a counter (see [`MEMORY_CONTENT_WRITES`]).
fn count(conn: &Connection, name: &str, delta: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO engram_counters (name, value) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
    )?
    .execute(params![name, delta])?;
    Ok(())
}

/// Adds `delta` to the document frequency of each distinct term of `text`.
fn adjust_terms(conn: &Connection, text: &str, delta: i64) -> rusqlite::Result<()> {
    let terms: std::collections::BTreeSet<String> = predictor::tokenizer::tokenize(text).into_iter().collect();
    for term in terms {
        conn.prepare_cached(
            "INSERT INTO memory_terms (term, df) VALUES (?1, ?2)
             ON CONFLICT(term) DO UPDATE SET df = df + excluded.df",
        )?
        .execute(params![term, delta])?;
    }
    if delta < 0 {
        conn.prepare_cached("DELETE FROM memory_terms WHERE df <= 0")?.execute([])?;
    }
    Ok(())
}

/// Replaces a live memory's text and everything derived from it: the
/// full-text index, the document frequencies, the stored analysis, the
/// index's write counter (also used by `knowledge::apply` for merges).
pub(crate) fn replace_content(conn: &Connection, rowid: i64, old: &str, new: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', ?1, ?2)")?
        .execute(params![rowid, old])?;
    conn.prepare_cached("INSERT INTO memories_fts (rowid, content) VALUES (?1, ?2)")?.execute(params![rowid, new])?;
    adjust_terms(conn, old, -1)?;
    adjust_terms(conn, new, 1)?;
    count(conn, MEMORY_CONTENT_WRITES, 1)?;
    conn.prepare_cached("UPDATE memories SET content = ?2, text_terms = ?3 WHERE rowid = ?1")?.execute(params![
        rowid,
        new,
        MemoryText::of(new).encode()
    ])?;
    // A changed text goes back into the dedup pipeline's queue (seed 000).
    conn.prepare_cached("DELETE FROM dedup_state WHERE memory_id = (SELECT id FROM memories WHERE rowid = ?1)")?
        .execute([rowid])?;
    Ok(())
}

impl From<crate::domain::knowledge::apply::Reject> for Failure {
    fn from(r: crate::domain::knowledge::apply::Reject) -> Failure {
        match r {
            crate::domain::knowledge::apply::Reject::Data(msg) => Failure::Data(msg),
            crate::domain::knowledge::apply::Reject::Sql(e) => Failure::from(e),
        }
    }
}

fn unreachable_content(event: &Event) -> Step<()> {
    data(format!("{} reached the non-content path", event.kind()))
}

/// ln(importance) + ln(1/0.95)·created_days (see the `memories.decay_key` column).
pub fn decay_key(importance: f32, created_ms: i64) -> f64 {
    let ln_inv_decay = -(0.95f64.ln());
    f64::from(importance.max(1e-6)).ln() + ln_inv_decay * created_ms as f64 / 86_400_000.0
}

fn finite_or(x: f32, fallback: f32) -> f32 {
    if x.is_finite() { x } else { fallback }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn cap(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What a content event contributes to `session_events` and session counters.
struct ContentRow {
    origin: Option<String>,
    tool: Option<String>,
    call_id: Option<String>,
    file: Option<String>,
    is_error: bool,
    text: String,
    delta: SessionDelta,
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
fn content_row(event: &Event) -> Option<ContentRow> {
    let one = SessionDelta { events: 1, ..SessionDelta::default() };
    let row = |text: &str, max: usize, delta: SessionDelta| ContentRow {
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
            let mut r = row(&m.text, max, SessionDelta { msg_in: 1, prompts: i64::from(prompt), ..one });
            r.origin = (!m.origin.is_empty()).then(|| m.origin.clone());
            r
        }
        Body::MsgOut(m) => {
            let max = if m.part.is_empty() || m.part == "text" { MESSAGE_TEXT } else { 0 };
            let mut r = row(&m.text, max, SessionDelta { msg_out: 1, ..one });
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
            let mut r = row(&text, SHORT_TEXT, SessionDelta { tool_calls: 1, ..one });
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
            let mut r = row(&text, SHORT_TEXT, SessionDelta { tool_errors: i64::from(t.is_error), ..one });
            r.tool = (!t.tool.is_empty()).then(|| t.tool.clone());
            r.call_id = Some(t.call_id.clone());
            r.is_error = t.is_error;
            r
        }
        Body::CodeRead(c) => {
            let mut r = row(&c.file, SHORT_TEXT, SessionDelta { reads: 1, ..one });
            r.file = Some(c.file.clone());
            r
        }
        Body::CodeEdit(c) => {
            let mut r = row(&c.file, SHORT_TEXT, SessionDelta { edits: 1, ..one });
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
            let mut r = row(&text, SHORT_TEXT, SessionDelta { compactions: compaction, ..one });
            r.origin = Some(m.label.clone());
            r
        }
        _ => return None,
    })
}
