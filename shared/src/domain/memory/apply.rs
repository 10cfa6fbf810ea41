//! How memory events change the projection: `memories` and everything derived
//! from a memory's text (its full-text index, document frequencies, stored
//! analysis), pins, deprecation, forgetting, feedback, embeddings and usage.

use rusqlite::{Connection, OptionalExtension, params};

use crate::base::ids::{MemoryId, SessionKey};
use crate::base::text::MemoryText;
use crate::base::time::Ts;
use crate::storage::event::{
    Event, MemoryAdded, MemoryDeprecated, MemoryEmbedded, MemoryFeedback, MemoryForgotten, MemoryUpdated,
};
use crate::storage::store::{MEMORY_CONTENT_WRITES, Step, count, data};

/// The memory's rowid, text and whether it was forgotten; a data error if unknown.
pub(crate) fn require(conn: &Connection, id: &MemoryId) -> Step<(i64, String, bool)> {
    let row = conn
        .prepare_cached("SELECT rowid, content, is_deleted FROM memories WHERE id = ?1")?
        .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    match row {
        Some(r) => Ok(r),
        None => data(format!("unknown memory {id}")),
    }
}

/// `memory.added`.
pub(crate) fn added(conn: &Connection, event: &Event, b: &MemoryAdded) -> Step<()> {
    if b.memory_id.as_str().is_empty() {
        return data("memory.added without a memory id");
    }
    if !b.importance.is_finite() {
        return data("memory.added with a non-finite importance");
    }
    let importance = b.importance.clamp(0.0, 1.0);
    let tags = serde_json::to_string(&b.tags).unwrap_or_else(|_| "[]".into());
    let project = crate::domain::env::store::memory_project(conn, b.project.as_deref(), b.source_session.as_ref())?;
    let at = event.ts.to_rfc3339();
    let inserted = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO memories (id, content, type, importance, project, tags, pinned, source,
                source_session, source_event, speaker, created_at, created_ms, updated_at, decay_key, text_terms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?12, ?14, ?15)",
        )?
        .execute(params![
            b.memory_id.as_str(),
            b.content,
            b.memory_type,
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
    let rowid = conn.last_insert_rowid();
    conn.prepare_cached("INSERT INTO memories_fts (rowid, content) VALUES (?1, ?2)")?
        .execute(params![rowid, b.content])?;
    adjust_terms(conn, &b.content, 1)?;
    count(conn, "live_memories", 1)?;
    count(conn, MEMORY_CONTENT_WRITES, 1)?;
    if let Some(session) = &b.source_session {
        seen(conn, &b.memory_id, session, event.ts)?;
    }
    Ok(())
}

/// A memory was learned or seen again in a session.
pub(crate) fn seen(conn: &Connection, id: &MemoryId, session: &SessionKey, ts: Ts) -> Step<()> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO memory_sessions (memory_id, session_key, first_seen_ms) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![id.as_str(), session.as_str(), ts.0])?;
    crate::domain::env::store::refresh_memory_env(conn, id.as_str())?;
    Ok(())
}

/// `memory.updated`.
pub(crate) fn updated(conn: &Connection, ts: Ts, b: &MemoryUpdated) -> Step<()> {
    let (rowid, old_content, deleted) = require(conn, &b.memory_id)?;
    if deleted {
        return data(format!("memory {} was forgotten", b.memory_id));
    }
    let new_tags = b.tags.as_ref().map(|t| serde_json::to_string(t).unwrap_or_else(|_| "[]".into()));
    if let Some(content) = b.content.as_ref().filter(|c| **c != old_content) {
        replace_content(conn, rowid, &old_content, content)?;
    }
    if let Some(imp) = b.importance
        && !imp.is_finite()
    {
        return data("memory.updated with a non-finite importance");
    }
    conn.prepare_cached(
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
        conn.prepare_cached("UPDATE memories SET decay_key = ?2 WHERE id = ?1")?.execute(params![
            b.memory_id.as_str(),
            conn.prepare_cached("SELECT importance, created_ms FROM memories WHERE id = ?1")?
                .query_row([b.memory_id.as_str()], |r| Ok(decay_key(r.get(0)?, r.get(1)?)))?
        ])?;
    }
    if let Some(session) = &b.seen_in {
        seen(conn, &b.memory_id, session, ts)?;
    }
    Ok(())
}

/// `memory.deprecated`.
pub(crate) fn deprecated(conn: &Connection, ts: Ts, b: &MemoryDeprecated) -> Step<()> {
    require(conn, &b.memory_id)?;
    conn.prepare_cached(
        "UPDATE memories SET deprecated = 1, deprecated_reason = ?2, superseded_by = ?3, updated_at = ?4
                 WHERE id = ?1",
    )?
    .execute(params![
        b.memory_id.as_str(),
        b.reason,
        b.superseded_by.as_ref().map(|m| m.as_str()),
        ts.to_rfc3339()
    ])?;

    Ok(())
}

/// Sets flags of a known memory (pins).
pub(crate) fn flag(conn: &Connection, id: &MemoryId, set: &str, ts: Ts) -> Step<()> {
    require(conn, id)?;
    let sql = format!("UPDATE memories SET {set}, updated_at = ?2 WHERE id = ?1");
    conn.prepare_cached(&sql)?.execute(params![id.as_str(), ts.to_rfc3339()])?;
    Ok(())
}

/// `memory.forgotten`: the text goes, the row stays (hidden).
pub(crate) fn forgotten(conn: &Connection, ts: Ts, b: &MemoryForgotten) -> Step<()> {
    let (rowid, old_content, deleted) = require(conn, &b.memory_id)?;
    if !deleted {
        conn.prepare_cached("INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', ?1, ?2)")?
            .execute(params![rowid, old_content])?;
        adjust_terms(conn, &old_content, -1)?;
        count(conn, "live_memories", -1)?;
        count(conn, MEMORY_CONTENT_WRITES, 1)?;
    }
    conn.prepare_cached(
        "UPDATE memories SET content = '', tags = '[]', is_deleted = 1, pinned = 0, deleted_at = ?2,
                updated_at = ?2, text_terms = ?3 WHERE id = ?1",
    )?
    .execute(params![b.memory_id.as_str(), ts.to_rfc3339(), MemoryText::of("").encode()])?;
    conn.prepare_cached("UPDATE memories SET has_embedding = 0 WHERE id = ?1")?.execute([b.memory_id.as_str()])?;
    conn.prepare_cached("DELETE FROM embeddings WHERE source_type = 'memory' AND source_id = ?1")?
        .execute([b.memory_id.as_str()])?;
    Ok(())
}

/// `memory.feedback`.
pub(crate) fn feedback(conn: &Connection, event: &Event, b: &MemoryFeedback) -> Step<()> {
    require(conn, &b.memory_id)?;
    if !b.relevance.is_finite() {
        return data("memory.feedback with a non-finite relevance");
    }
    let relevance = b.relevance.clamp(0.0, 1.0);
    conn.prepare_cached(
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
    conn.prepare_cached(
        "UPDATE memories SET feedback_count = feedback_count + 1, feedback_sum = feedback_sum + ?2 WHERE id = ?1",
    )?
    .execute(params![b.memory_id.as_str(), relevance])?;
    if let Some(session) = &event.session {
        // Signet's running mean in session_memories (migration 025).
        conn.prepare_cached(
            "UPDATE session_memories SET
                    agent_relevance_score = (COALESCE(agent_relevance_score, 0) * agent_feedback_count + ?3)
                                            / (agent_feedback_count + 1),
                    agent_feedback_count = agent_feedback_count + 1
                 WHERE session_key = ?1 AND memory_id = ?2",
        )?
        .execute(params![session.as_str(), b.memory_id.as_str(), relevance])?;
    }
    crate::domain::env::stats::on_feedback(conn, event, b)?;
    Ok(())
}

/// `memory.embedded`.
pub(crate) fn embedded(conn: &Connection, ts: Ts, b: &MemoryEmbedded) -> Step<()> {
    let (_, content, deleted) = require(conn, &b.memory_id)?;
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
    conn.prepare_cached(
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
    conn.prepare_cached("UPDATE memories SET has_embedding = 1 WHERE id = ?1")?.execute([b.memory_id.as_str()])?;
    Ok(())
}

/// The `(label, relevance_score)` of a session's row for `memory`, if any.
pub(crate) fn usage_contribution(
    conn: &Connection,
    session: &SessionKey,
    memory: &MemoryId,
) -> Step<Option<(Option<f64>, Option<f64>)>> {
    Ok(conn
        .prepare_cached(
            "SELECT label, relevance_score FROM session_memories WHERE session_key = ?1 AND memory_id = ?2",
        )?
        .query_row(params![session.as_str(), memory.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Moves a row's `useful` contribution (MAX(COALESCE(label, relevance), 0))
/// in `memory_usage` from what `before` gave to what `after` gives.
pub(crate) fn change_usage(
    conn: &Connection,
    memory: &str,
    before: (Option<f64>, Option<f64>),
    after: (Option<f64>, Option<f64>),
) -> Step<()> {
    let useful = |(label, relevance): (Option<f64>, Option<f64>)| label.or(relevance).unwrap_or(0.0).max(0.0);
    let delta = useful(after) - useful(before);
    if delta != 0.0 {
        add_usage(conn, memory, 0, delta)?;
    }
    Ok(())
}

/// Adds to a memory's `memory_usage` row (migration 0002).
pub(crate) fn add_usage(conn: &Connection, memory: &str, sessions_injected: i64, useful: f64) -> Step<()> {
    conn.prepare_cached(
        "INSERT INTO memory_usage (memory_id, sessions_injected, useful) VALUES (?1, ?2, ?3)
             ON CONFLICT (memory_id) DO UPDATE SET
                sessions_injected = sessions_injected + excluded.sessions_injected,
                useful = useful + excluded.useful",
    )?
    .execute(params![memory, sessions_injected, useful])?;
    Ok(())
}

/// Adds `delta` to the document frequency of each distinct term of `text`.
pub(crate) fn adjust_terms(conn: &Connection, text: &str, delta: i64) -> rusqlite::Result<()> {
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

/// ln(importance) + ln(1/0.95)·created_days (see the `memories.decay_key` column).
pub fn decay_key(importance: f32, created_ms: i64) -> f64 {
    let ln_inv_decay = -(0.95f64.ln());
    f64::from(importance.max(1e-6)).ln() + ln_inv_decay * created_ms as f64 / 86_400_000.0
}
