//! The projection of seed 004's events (called by `store::apply` inside its
//! transaction, in log order): edges, the observation buffer, conversations,
//! checkpoints, topic-shift decisions and their per-project counters,
//! summaries, and dedup merges.
//!
//! Nothing here reads the clock or the configuration: times come from the
//! events, and thresholds are applied by the writers (the decision is in the
//! event). An event that does not fit (an unknown memory, a second
//! resolution of one staged memory) is a [`Reject::Data`]: rolled back
//! alone and recorded in `apply_errors`.

use rusqlite::{Connection, OptionalExtension, params};

use crate::base::ids::SessionKey;
use crate::domain::knowledge::graph::{Relation, edge_id};
use crate::storage::event::{
    Body, CheckpointCreated, ConflictSurfaced, ConversationResumed, ConversationStashed, DedupChecked, EdgeAdded,
    EdgeRemoved, Event, MemoriesMerged, MemoryStaged, SessionSummarized, StageResolved, TopicShift,
};

/// Why an event was not applied.
#[derive(Debug)]
pub enum Reject {
    /// The event does not fit the projection.
    Data(String),
    /// The database failed.
    Sql(rusqlite::Error),
}

impl From<Reject> for crate::storage::store::Failure {
    fn from(r: Reject) -> crate::storage::store::Failure {
        match r {
            Reject::Data(msg) => crate::storage::store::Failure::Data(msg),
            Reject::Sql(e) => crate::storage::store::Failure::from(e),
        }
    }
}

impl From<rusqlite::Error> for Reject {
    fn from(e: rusqlite::Error) -> Reject {
        Reject::Sql(e)
    }
}

type Applied = Result<(), Reject>;

fn reject<T>(msg: impl Into<String>) -> Result<T, Reject> {
    Err(Reject::Data(msg.into()))
}

/// Statuses of a staged memory (seed 004 "Observation Buffer").
pub mod status {
    /// Awaiting curation or review.
    pub const PENDING: &str = "pending";
    /// Saved as a memory.
    pub const PERSISTED: &str = "persisted";
    /// Rejected.
    pub const DISCARDED: &str = "discarded";
    /// Flagged by conflict detection.
    pub const NEEDS_CLARIFICATION: &str = "needs_clarification";
}

/// Resolutions of a staged memory.
pub mod action {
    /// Combine into the existing memory.
    pub const MERGE: &str = "merge";
    /// Keep both as separate memories.
    pub const KEEP_BOTH: &str = "keep_both";
    /// The new one replaces (supersedes) the existing one.
    pub const REPLACE: &str = "replace";
    /// Discard the new one.
    pub const SKIP: &str = "skip";
    /// Curation kept it.
    pub const PERSIST: &str = "persist";
    /// Curation dropped it.
    pub const DISCARD: &str = "discard";
    /// Seed 004's four choices.
    pub const CHOICES: [&str; 4] = [MERGE, KEEP_BOTH, REPLACE, SKIP];
    /// Every resolution.
    pub const ALL: [&str; 6] = [MERGE, KEEP_BOTH, REPLACE, SKIP, PERSIST, DISCARD];
}

/// Topic-shift tiers (seed 004 "Three-Tier Decision").
pub mod tier {
    /// Same topic.
    pub const IGNORE: &str = "ignore";
    /// Suggest a stash.
    pub const ASK: &str = "ask";
    /// Stash automatically.
    pub const TRUST: &str = "trust";
}

/// Applies one of seed 004's events (other bodies are ignored).
pub fn apply(conn: &Connection, event: &Event) -> Applied {
    match &event.body {
        Body::EdgeAdded(b) => edge_added(conn, event, b),
        Body::EdgeRemoved(b) => edge_removed(conn, b),
        Body::MemoryStaged(b) => staged(conn, event, b),
        Body::StageResolved(b) => resolved(conn, event, b),
        Body::ConflictSurfaced(b) => surfaced(conn, event, b),
        Body::ConversationStashed(b) => stashed(conn, event, b),
        Body::ConversationResumed(b) => resumed(conn, event, b),
        Body::CheckpointCreated(b) => checkpoint(conn, event, b),
        Body::TopicShift(b) => topic_shift(conn, event, b),
        Body::SessionSummarized(b) => summarized(conn, event, b),
        Body::MemoriesMerged(b) => merged(conn, event, b),
        Body::DedupChecked(b) => dedup_checked(conn, event, b),
        _ => Ok(()),
    }
}

fn session_of(event: &Event) -> Result<&SessionKey, Reject> {
    match &event.session {
        Some(s) => Ok(s),
        None => reject(format!("{} without a session", event.kind())),
    }
}

/// `(is_deleted)` of a memory, or a data error naming it.
fn memory_deleted(conn: &Connection, id: &str) -> Result<bool, Reject> {
    let row: Option<bool> = conn
        .prepare_cached("SELECT is_deleted FROM memories WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    match row {
        Some(d) => Ok(d),
        None => reject(format!("unknown memory {id}")),
    }
}

fn edge_added(conn: &Connection, event: &Event, b: &EdgeAdded) -> Applied {
    let Some(relation) = Relation::parse(&b.relation) else {
        return reject(format!("unknown relation {:?}", b.relation));
    };
    if b.from == b.to {
        return reject(format!("an edge from {} to itself", b.from));
    }
    if !b.strength.is_finite() {
        return reject("knowledge.edge with a non-finite strength");
    }
    memory_deleted(conn, b.from.as_str())?;
    memory_deleted(conn, b.to.as_str())?;
    let id = if b.edge_id.is_empty() { edge_id(b.from.as_str(), b.to.as_str(), relation) } else { b.edge_id.clone() };
    conn.prepare_cached(
        "INSERT INTO knowledge_edges (id, from_id, to_id, relation, strength, origin, reason, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(from_id, to_id, relation) DO UPDATE SET
            strength = excluded.strength, origin = excluded.origin, reason = excluded.reason",
    )?
    .execute(params![
        id,
        b.from.as_str(),
        b.to.as_str(),
        relation.as_str(),
        b.strength.clamp(0.0, 1.0),
        b.origin,
        b.reason,
        event.ts.0
    ])?;
    Ok(())
}

fn edge_removed(conn: &Connection, b: &EdgeRemoved) -> Applied {
    let n = conn.prepare_cached("DELETE FROM knowledge_edges WHERE id = ?1")?.execute([&b.edge_id])?;
    if n == 0 {
        return reject(format!("unknown edge {}", b.edge_id));
    }
    Ok(())
}

fn staged(conn: &Connection, event: &Event, b: &MemoryStaged) -> Applied {
    if b.stage_id.is_empty() || b.memory.memory_id.as_str().is_empty() {
        return reject("knowledge.staged without an id");
    }
    if ![status::PENDING, status::NEEDS_CLARIFICATION, status::DISCARDED].contains(&b.status.as_str()) {
        return reject(format!("knowledge.staged with status {:?}", b.status));
    }
    if !b.memory.importance.is_finite() || b.similarity.is_some_and(|s| !s.is_finite()) {
        return reject("knowledge.staged with a non-finite number");
    }
    let memory = serde_json::to_string(&b.memory).map_err(|e| Reject::Data(e.to_string()))?;
    let inserted = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO staged_memories (id, memory_id, session_key, project, content, type, importance,
                tags, source, memory, status, conflict_with, similarity, reason, created_ms, updated_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15)",
        )?
        .execute(params![
            b.stage_id,
            b.memory.memory_id.as_str(),
            event.session.as_ref().map(SessionKey::as_str),
            b.memory.project,
            b.memory.content,
            b.memory.memory_type,
            b.memory.importance.clamp(0.0, 1.0),
            serde_json::to_string(&b.memory.tags).unwrap_or_else(|_| "[]".into()),
            b.memory.source,
            memory,
            b.status,
            b.conflict_with.as_ref().map(|m| m.as_str()),
            b.similarity,
            b.reason,
            event.ts.0
        ])?;
    if inserted == 0 {
        return reject(format!("{} is already staged", b.stage_id));
    }
    Ok(())
}

fn resolved(conn: &Connection, event: &Event, b: &StageResolved) -> Applied {
    if !action::ALL.contains(&b.action.as_str()) {
        return reject(format!("unknown resolution {:?}", b.action));
    }
    let current: Option<String> = conn
        .prepare_cached("SELECT status FROM staged_memories WHERE id = ?1")?
        .query_row([&b.stage_id], |r| r.get(0))
        .optional()?;
    match current.as_deref() {
        None => return reject(format!("nothing staged as {}", b.stage_id)),
        Some(status::PENDING | status::NEEDS_CLARIFICATION) => {}
        Some(s) => return reject(format!("{} was already resolved ({s})", b.stage_id)),
    }
    let new_status = match b.action.as_str() {
        action::SKIP | action::DISCARD => status::DISCARDED,
        _ => status::PERSISTED,
    };
    conn.prepare_cached(
        "UPDATE staged_memories SET status = ?2, resolution = ?3, resolved_by = ?4, result_id = ?5,
            conflict_with = COALESCE(?6, conflict_with), updated_ms = ?7
         WHERE id = ?1",
    )?
    .execute(params![
        b.stage_id,
        new_status,
        b.action,
        b.by,
        b.memory_id.as_ref().map(|m| m.as_str()),
        b.existing_id.as_ref().map(|m| m.as_str()),
        event.ts.0
    ])?;
    Ok(())
}

fn surfaced(conn: &Connection, event: &Event, b: &ConflictSurfaced) -> Applied {
    let session = session_of(event)?;
    let n = conn
        .prepare_cached("UPDATE staged_memories SET surfaced = surfaced + 1 WHERE id = ?1")?
        .execute([&b.stage_id])?;
    if n == 0 {
        return reject(format!("nothing staged as {}", b.stage_id));
    }
    conn.prepare_cached(
        "INSERT INTO staged_surfaced (stage_id, session_key, count, last_ms) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT(stage_id, session_key) DO UPDATE SET count = count + 1, last_ms = excluded.last_ms",
    )?
    .execute(params![b.stage_id, session.as_str(), event.ts.0])?;
    Ok(())
}

/// Adds to a project's topic-shift counters.
fn bump(conn: &Connection, project: Option<&str>, column: &str, ts: i64) -> Applied {
    // `column` is one of the four names below, never input.
    debug_assert!(
        ["auto_stash_count", "false_positive_count", "suggestion_shown_count", "suggestion_accepted_count"]
            .contains(&column)
    );
    conn.prepare_cached(&format!(
        "INSERT INTO adaptive_thresholds (project, {column}, updated_ms) VALUES (?1, 1, ?2)
         ON CONFLICT(project) DO UPDATE SET {column} = {column} + 1, updated_ms = excluded.updated_ms"
    ))?
    .execute(params![project.unwrap_or(""), ts])?;
    Ok(())
}

/// The session's latest topic-shift suggestion still waiting for an answer.
fn pending_suggestion(conn: &Connection, session: &SessionKey) -> rusqlite::Result<Option<(String, Option<String>)>> {
    conn.prepare_cached(
        "SELECT event_id, project FROM topic_shifts WHERE session_key = ?1 AND outcome = 'pending'
         ORDER BY created_ms DESC, event_id DESC LIMIT 1",
    )?
    .query_row([session.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

fn set_outcome(conn: &Connection, shift: &str, outcome: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE topic_shifts SET outcome = ?2 WHERE event_id = ?1")?.execute([shift, outcome])?;
    Ok(())
}

fn stashed(conn: &Connection, event: &Event, b: &ConversationStashed) -> Applied {
    let session = session_of(event)?;
    if b.conversation_id.is_empty() || b.label.trim().is_empty() {
        return reject("conversation.stashed without an id or a label");
    }
    if b.score.is_some_and(|s| !s.is_finite()) {
        return reject("conversation.stashed with a non-finite score");
    }
    let inserted = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO conversations (id, session_key, project, label, status, auto, score, stash_group,
                started_ms, ended_ms, summary, prompts, files)
             VALUES (?1, ?2, ?3, ?4, 'stashed', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            b.conversation_id,
            session.as_str(),
            b.project,
            b.label,
            b.auto,
            b.score,
            b.stash_group,
            b.started_ms,
            b.ended_ms,
            b.summary,
            serde_json::to_string(&b.prompts).unwrap_or_else(|_| "[]".into()),
            serde_json::to_string(&b.files).unwrap_or_else(|_| "[]".into())
        ])?;
    if inserted == 0 {
        return reject(format!("conversation {} is already stashed", b.conversation_id));
    }
    if !b.auto
        && let Some((shift, project)) = pending_suggestion(conn, session)?
    {
        set_outcome(conn, &shift, "accepted")?;
        bump(conn, project.as_deref(), "suggestion_accepted_count", event.ts.0)?;
    }
    Ok(())
}

fn resumed(conn: &Connection, event: &Event, b: &ConversationResumed) -> Applied {
    let session = event.session.as_ref();
    if b.conversation_id.starts_with(super::CHECKPOINT_PREFIX) {
        let n = conn
            .prepare_cached("UPDATE session_forks SET resume_count = resume_count + 1 WHERE id = ?1")?
            .execute([&b.conversation_id])?;
        if n == 0 {
            return reject(format!("no checkpoint {}", b.conversation_id));
        }
        return Ok(());
    }
    let row: Option<(String, bool)> = conn
        .prepare_cached("SELECT session_key, auto FROM conversations WHERE id = ?1")?
        .query_row([&b.conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((stashed_in, auto)) = row else {
        return reject(format!("no conversation {}", b.conversation_id));
    };
    conn.prepare_cached(
        "UPDATE conversations SET status = 'resumed', resume_count = resume_count + 1, resumed_session = ?2,
            resumed_ms = ?3 WHERE id = ?1",
    )?
    .execute(params![b.conversation_id, session.map(SessionKey::as_str), event.ts.0])?;
    // Taking back an automatic stash in the session that made it: the
    // detector was wrong.
    if auto && session.is_some_and(|s| s.as_str() == stashed_in) {
        let shift: Option<(String, Option<String>)> = conn
            .prepare_cached(
                "SELECT event_id, project FROM topic_shifts WHERE conversation_id = ?1 AND outcome = 'auto' LIMIT 1",
            )?
            .query_row([&b.conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((shift, project)) = shift {
            set_outcome(conn, &shift, "undone")?;
            bump(conn, project.as_deref(), "false_positive_count", event.ts.0)?;
        }
    }
    Ok(())
}

fn checkpoint(conn: &Connection, event: &Event, b: &CheckpointCreated) -> Applied {
    let session = session_of(event)?;
    if !b.checkpoint_id.starts_with(super::CHECKPOINT_PREFIX) {
        return reject(format!("checkpoint id {:?} does not start with {}", b.checkpoint_id, super::CHECKPOINT_PREFIX));
    }
    let inserted = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO session_forks (id, session_key, project, label, auto, trigger, snapshot, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            b.checkpoint_id,
            session.as_str(),
            b.project,
            b.label,
            b.auto,
            b.trigger,
            serde_json::to_string(&b.snapshot).unwrap_or_else(|_| "{}".into()),
            event.ts.0
        ])?;
    if inserted == 0 {
        return reject(format!("checkpoint {} exists", b.checkpoint_id));
    }
    Ok(())
}

fn topic_shift(conn: &Connection, event: &Event, b: &TopicShift) -> Applied {
    let session = session_of(event)?;
    if ![tier::IGNORE, tier::ASK, tier::TRUST].contains(&b.tier.as_str()) {
        return reject(format!("unknown topic-shift tier {:?}", b.tier));
    }
    if !b.score.is_finite() || b.signals.values().any(|v| !v.is_finite()) {
        return reject("topic.shift with a non-finite score");
    }
    // A suggestion the session moved on from without stashing was not wanted.
    if let Some((shift, project)) = pending_suggestion(conn, session)? {
        set_outcome(conn, &shift, "rejected")?;
        bump(conn, project.as_deref(), "false_positive_count", event.ts.0)?;
    }
    let outcome = match (b.tier.as_str(), &b.conversation_id) {
        (tier::IGNORE, _) => None,
        (_, Some(_)) => Some("auto"),
        _ => Some("pending"),
    };
    conn.prepare_cached(
        "INSERT OR IGNORE INTO topic_shifts (event_id, session_key, project, score, tier, signals, conversation_id,
            outcome, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        event.id.as_str(),
        session.as_str(),
        b.project,
        b.score,
        b.tier,
        serde_json::to_string(&b.signals).unwrap_or_else(|_| "{}".into()),
        b.conversation_id,
        outcome,
        event.ts.0
    ])?;
    match outcome {
        Some("auto") => bump(conn, b.project.as_deref(), "auto_stash_count", event.ts.0)?,
        Some("pending") => bump(conn, b.project.as_deref(), "suggestion_shown_count", event.ts.0)?,
        _ => {}
    }
    Ok(())
}

fn summarized(conn: &Connection, event: &Event, b: &SessionSummarized) -> Applied {
    let session = session_of(event)?;
    conn.prepare_cached(
        "INSERT INTO session_summaries (session_key, summary, method, first_text, last_text, files, tools, tags,
            created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT(session_key) DO UPDATE SET summary = excluded.summary, method = excluded.method,
            first_text = excluded.first_text, last_text = excluded.last_text, files = excluded.files,
            tools = excluded.tools, tags = excluded.tags, created_ms = excluded.created_ms",
    )?
    .execute(params![
        session.as_str(),
        b.summary,
        b.method,
        b.first,
        b.last,
        serde_json::to_string(&b.files).unwrap_or_else(|_| "[]".into()),
        serde_json::to_string(&b.tools).unwrap_or_else(|_| "{}".into()),
        serde_json::to_string(&b.tags).unwrap_or_else(|_| "[]".into()),
        event.ts.0
    ])?;
    Ok(())
}

/// Seed 000's merge semantics, in the apply's transaction: the survivor
/// takes the new text (if any), the sum of the occurrence counts, the union
/// of tags, categories and sessions, the highest importance and any pin; each absorbed
/// memory is deprecated and superseded by the survivor, its graph edges
/// move to the survivor, staged conflicts naming it name the survivor; the
/// merge is logged; absorbed memories are verified (never compared again),
/// the survivor goes back into the queue.
fn merged(conn: &Connection, event: &Event, b: &MemoriesMerged) -> Applied {
    let survivor = b.survivor.as_str();
    if b.absorbed.is_empty() {
        return reject("memory.merged absorbs nothing");
    }
    if b.confidence.is_some_and(|c| !c.is_finite()) {
        return reject("memory.merged with a non-finite confidence");
    }
    if memory_deleted(conn, survivor)? {
        return reject(format!("memory {survivor} was forgotten"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for a in &b.absorbed {
        if a.as_str() == survivor || !seen.insert(a.as_str()) {
            return reject(format!("memory.merged names {a} twice"));
        }
        if memory_deleted(conn, a.as_str())? {
            return reject(format!("memory {a} was forgotten"));
        }
    }
    let (rowid, content, tags, importance, pinned): (i64, String, String, f64, bool) = conn
        .prepare_cached("SELECT rowid, content, tags, importance, pinned FROM memories WHERE id = ?1")?
        .query_row([survivor], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
    if let Some(new) = b.content.as_deref().filter(|c| *c != content) {
        if new.trim().is_empty() {
            return reject("memory.merged with an empty text");
        }
        crate::domain::memory::apply::replace_content(conn, rowid, &content, new)?;
    }
    let mut all_tags: std::collections::BTreeSet<String> =
        serde_json::from_str::<Vec<String>>(&tags).unwrap_or_default().into_iter().collect();
    let (mut occurrences, mut importance, mut pinned) = (0i64, importance, pinned);
    for a in &b.absorbed {
        let (a_tags, a_occ, a_imp, a_pin): (String, i64, f64, bool) = conn
            .prepare_cached("SELECT tags, occurrence_count, importance, pinned FROM memories WHERE id = ?1")?
            .query_row([a.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        all_tags.extend(serde_json::from_str::<Vec<String>>(&a_tags).unwrap_or_default());
        occurrences += a_occ;
        importance = importance.max(a_imp);
        pinned |= a_pin;
        conn.prepare_cached(
            "INSERT OR IGNORE INTO memory_sessions (memory_id, session_key, first_seen_ms)
             SELECT ?1, session_key, first_seen_ms FROM memory_sessions WHERE memory_id = ?2",
        )?
        .execute([survivor, a.as_str()])?;
        // Categories: the union (seed 000's `engram_categories`).
        conn.prepare_cached(
            "INSERT OR IGNORE INTO engram_categories (engram_id, category_path)
             SELECT ?1, category_path FROM engram_categories WHERE engram_id = ?2",
        )?
        .execute([survivor, a.as_str()])?;
        conn.prepare_cached(
            "UPDATE memories SET deprecated = 1, deprecated_reason = ?2, superseded_by = ?3, pinned = 0,
                updated_at = ?4 WHERE id = ?1",
        )?
        .execute(params![a.as_str(), format!("merged into {survivor}"), survivor, event.ts.to_rfc3339()])?;
        move_edges(conn, a.as_str(), survivor)?;
        conn.prepare_cached("UPDATE staged_memories SET conflict_with = ?2 WHERE conflict_with = ?1")?
            .execute([a.as_str(), survivor])?;
        conn.prepare_cached(
            "INSERT INTO knowledge_edges (id, from_id, to_id, relation, strength, origin, reason, created_ms)
             VALUES (?1, ?2, ?3, 'supersedes', 1.0, 'dedup', 'merged duplicate', ?4)
             ON CONFLICT(from_id, to_id, relation) DO UPDATE SET strength = 1.0, origin = 'dedup'",
        )?
        .execute(params![
            edge_id(survivor, a.as_str(), Relation::Supersedes),
            survivor,
            a.as_str(),
            event.ts.0
        ])?;
        conn.prepare_cached(
            "INSERT INTO dedup_state (memory_id, verified, attempts, last_error, updated_ms) VALUES (?1, 1, 0, NULL, ?2)
             ON CONFLICT(memory_id) DO UPDATE SET verified = 1, last_error = NULL, updated_ms = excluded.updated_ms",
        )?
        .execute(params![a.as_str(), event.ts.0])?;
    }
    let importance = importance.clamp(0.0, 1.0);
    conn.prepare_cached(
        "UPDATE memories SET occurrence_count = occurrence_count + ?2, tags = ?3, importance = ?4, pinned = ?5,
            decay_key = ?6, updated_at = ?7 WHERE id = ?1",
    )?
    .execute(params![
        survivor,
        occurrences,
        serde_json::to_string(&all_tags).unwrap_or_else(|_| "[]".into()),
        importance,
        pinned,
        crate::domain::memory::apply::decay_key(importance as f32, created_ms(conn, survivor)?),
        event.ts.to_rfc3339()
    ])?;
    conn.prepare_cached("DELETE FROM dedup_state WHERE memory_id = ?1")?.execute([survivor])?;
    conn.prepare_cached(
        "INSERT INTO memory_merges (event_id, survivor_id, absorbed, mode, pass, by, confidence, reason, content,
            created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        event.id.as_str(),
        survivor,
        serde_json::to_string(&b.absorbed).unwrap_or_else(|_| "[]".into()),
        b.mode,
        b.pass,
        b.by,
        b.confidence,
        b.reason,
        b.content,
        event.ts.0
    ])?;
    Ok(())
}

fn created_ms(conn: &Connection, id: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT created_ms FROM memories WHERE id = ?1")?.query_row([id], |r| r.get(0))
}

/// A `knowledge_edges` row: id, from, to, relation, strength, origin, reason, created_ms.
type EdgeRow = (String, String, String, String, f64, String, String, i64);

/// Moves every edge of `from` to `to` (ids re-derived; an edge that would
/// join `to` to itself, or that `to` already has, is dropped).
fn move_edges(conn: &Connection, from: &str, to: &str) -> Applied {
    let rows: Vec<EdgeRow> = conn
        .prepare_cached(
            "SELECT id, from_id, to_id, relation, strength, origin, reason, created_ms FROM knowledge_edges
             WHERE from_id = ?1 OR to_id = ?1",
        )?
        .query_map([from], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (id, a, b, relation, strength, origin, reason, created) in rows {
        conn.prepare_cached("DELETE FROM knowledge_edges WHERE id = ?1")?.execute([&id])?;
        let a = if a == from { to.to_owned() } else { a };
        let b = if b == from { to.to_owned() } else { b };
        let Some(rel) = Relation::parse(&relation) else { continue };
        if a == b {
            continue;
        }
        conn.prepare_cached(
            "INSERT OR IGNORE INTO knowledge_edges (id, from_id, to_id, relation, strength, origin, reason, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![edge_id(&a, &b, rel), a, b, relation, strength, origin, reason, created])?;
    }
    Ok(())
}

fn dedup_checked(conn: &Connection, event: &Event, b: &DedupChecked) -> Applied {
    for id in &b.verified {
        memory_deleted(conn, id.as_str())?;
        conn.prepare_cached(
            "INSERT INTO dedup_state (memory_id, verified, attempts, last_error, updated_ms) VALUES (?1, 1, 0, NULL, ?2)
             ON CONFLICT(memory_id) DO UPDATE SET verified = 1, last_error = NULL, updated_ms = excluded.updated_ms",
        )?
        .execute(params![id.as_str(), event.ts.0])?;
    }
    for (id, error) in &b.failed {
        memory_deleted(conn, id.as_str())?;
        conn.prepare_cached(
            "INSERT INTO dedup_state (memory_id, verified, attempts, last_error, updated_ms) VALUES (?1, 0, 1, ?2, ?3)
             ON CONFLICT(memory_id) DO UPDATE SET verified = 0, attempts = attempts + 1, last_error = excluded.last_error,
                updated_ms = excluded.updated_ms",
        )?
        .execute(params![id.as_str(), error, event.ts.0])?;
    }
    for id in &b.requeued {
        conn.prepare_cached("DELETE FROM dedup_state WHERE memory_id = ?1")?.execute([id.as_str()])?;
    }
    Ok(())
}
