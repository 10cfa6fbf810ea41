//! The read models of the page's views, from the projection: the dashboard's
//! counts, projects, sessions (with what was injected into each and whether
//! it helped), the timeline's session blocks, memories as cards and in
//! detail, and the export; plus the one bulk write (forget every memory).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, Row, params};
use serde_json::{Value, json};
use shared::base::ids::MemoryId;
use shared::base::time::Ts;
use shared::domain::memory::ops;
use shared::storage::event::{Body, MemoryForgotten};
use shared::storage::store::cap;

use super::api::{ApiError, ApiResult};
use super::state::{Ctx, WriteCtx};

/// A memory whose label (or judged relevance) in a session is at least this
/// helped that session.
pub const HELPED: f64 = 0.5;
/// Texts in lists are cut to this many characters.
const SNIPPET: usize = 240;

/// `x` to three decimals (a stored `f32`: 0.7, not 0.699999988).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn rfc(ms: i64) -> String {
    Ts(ms).to_rfc3339()
}

fn opt_rfc(ms: Option<i64>) -> Option<String> {
    ms.map(rfc)
}

/// Bytes of the files directly in `dir`.
pub fn dir_size(dir: &std::path::Path) -> u64 {
    crate::mcp::dir_size(dir)
}

/// The dashboard: counts, storage, top tags, pending items, the predictor.
pub fn stats(ctx: &Ctx<'_>, project: Option<&str>) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    // The counts over every memory, read again only when the projection changed.
    let mut v = ctx.counts(project, || {
        let mut v = crate::mcp::stats(ctx.store, project)?;
        v["knowledge"] = crate::mcp::knowledge_stats(ctx.store, project)?;
        Ok(v)
    })?;
    let idle_ms = ctx.config.scan.idle_end_minutes as i64 * 60_000;
    let one = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> rusqlite::Result<i64> { conn.query_row(sql, p, |r| r.get(0)) };
    v["sessions"]["active"] = json!(one(
        "SELECT COUNT(*) FROM sessions WHERE ended_ms IS NULL AND last_event_ms >= ?1 AND (?2 IS NULL OR project = ?2)",
        &[&(ctx.now.0 - idle_ms), &project]
    )?);
    v["projects"] = json!(one("SELECT COUNT(DISTINCT project) FROM sessions WHERE project IS NOT NULL", &[])?);
    let tapes = dir_size(&ctx.paths.tapes());
    let db = dir_size(&ctx.paths.db_generations());
    let models = dir_size(&ctx.paths.models());
    v["storage"] = json!({"tapes": tapes, "projection": db, "models": models, "total": tapes + db + models});
    v["storage_bytes"] = json!(tapes + db + models);
    let unscored = one(
        "SELECT COUNT(*) FROM sessions s WHERE s.ended_ms IS NOT NULL AND s.parent_session_key IS NULL
         AND (?1 IS NULL OR s.project = ?1)
         AND NOT EXISTS (SELECT 1 FROM session_scores c WHERE c.session_key = s.session_key)",
        &[&project],
    )?;
    let apply_errors = one("SELECT COUNT(*) FROM apply_errors", &[])?;
    let staging = shared::domain::knowledge::buffer::counts(ctx.store)?;
    let staged = |s: &str| staging.get(s).copied().unwrap_or(0);
    v["pending"] = json!({
        "unscored_sessions": unscored, "apply_errors": apply_errors,
        "conflicts": staged("needs_clarification"), "staged": staged("pending"),
    });
    let (injected, judged, helped): (i64, i64, i64) = conn.query_row(
        "SELECT COUNT(*), COUNT(COALESCE(sm.label, sm.relevance_score)),
                COALESCE(SUM(COALESCE(sm.label, sm.relevance_score) >= ?2), 0)
         FROM session_memories sm LEFT JOIN sessions s ON s.session_key = sm.session_key
         WHERE sm.was_injected = 1 AND (?1 IS NULL OR s.project = ?1)",
        params![project, HELPED],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    v["injections"] = json!({"injected": injected, "judged": judged, "helped": helped});
    let state = shared::domain::rank::PredictorState::load(ctx.store, &ctx.config.predictor)?;
    v["predictor"] = json!({
        "status_line": state.status_line(),
        "alpha": state.alpha,
        "success_rate": state.success_rate,
        "model_version": state.model_version,
        "scored_sessions": state.scored_sessions,
        "min_sessions": state.min_sessions,
        "comparisons": state.comparisons,
        "cold_start": state.cold_start(),
    });
    v["recent_sessions"] = json!(session_rows(ctx, project, None, 6)?);
    v["generated_at"] = json!(ctx.now.to_rfc3339());
    Ok(v)
}

/// Every project with its sessions, memories and last activity.
pub fn projects(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    let mut stmt = conn.prepare(
        "SELECT project, COUNT(*), MAX(last_event_ms), MIN(started_ms) FROM sessions
         WHERE project IS NOT NULL GROUP BY project",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?))
    })?;
    for row in rows {
        let (p, n, last, first) = row?;
        out.insert(
            p.clone(),
            json!({"project": p, "sessions": n, "memories": 0, "last_active": rfc(last), "first_seen": rfc(first)}),
        );
    }
    let mut stmt = conn.prepare(
        "SELECT project, COUNT(*) FROM memories WHERE is_deleted = 0 AND project IS NOT NULL GROUP BY project",
    )?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (p, n) = row?;
        out.entry(p.clone())
            .or_insert_with(|| json!({"project": p, "sessions": 0, "last_active": null, "first_seen": null}))["memories"] =
            json!(n);
    }
    let mut list: Vec<Value> = out.into_values().collect();
    list.sort_by(|a, b| b["last_active"].as_str().cmp(&a["last_active"].as_str()));
    Ok(json!({"projects": list}))
}

const SESSION_COLUMNS: &str = "s.session_key, s.harness, s.project, s.cwd, s.git_branch, s.title, s.started_ms, \
    s.last_event_ms, s.ended_ms, s.end_reason, s.prompt_count, s.tool_call_count, s.code_edit_count, \
    s.tool_error_count, s.event_count, s.parent_session_key, s.model, \
    (SELECT COUNT(*) FROM session_memories sm WHERE sm.session_key = s.session_key AND sm.was_injected = 1), \
    (SELECT COUNT(*) FROM session_memories sm WHERE sm.session_key = s.session_key AND sm.was_injected = 1 \
       AND COALESCE(sm.label, sm.relevance_score) >= 0.5), \
    (SELECT COUNT(*) FROM session_memories sm WHERE sm.session_key = s.session_key AND sm.was_injected = 1 \
       AND COALESCE(sm.label, sm.relevance_score) IS NOT NULL), \
    (SELECT score FROM session_scores c WHERE c.session_key = s.session_key ORDER BY c.created_ms DESC LIMIT 1), \
    (SELECT COUNT(*) FROM memories m WHERE m.source_session = s.session_key AND m.is_deleted = 0)";

fn session_row(r: &Row<'_>) -> rusqlite::Result<Value> {
    let started: i64 = r.get(6)?;
    let last: i64 = r.get(7)?;
    let ended: Option<i64> = r.get(8)?;
    Ok(json!({
        "session": r.get::<_, String>(0)?, "harness": r.get::<_, String>(1)?,
        "project": r.get::<_, Option<String>>(2)?, "cwd": r.get::<_, Option<String>>(3)?,
        "branch": r.get::<_, Option<String>>(4)?, "title": r.get::<_, Option<String>>(5)?,
        "started_at": rfc(started), "started_ms": started, "last_event_at": rfc(last),
        "ended_at": opt_rfc(ended), "end_reason": r.get::<_, Option<String>>(9)?,
        "duration_ms": ended.unwrap_or(last) - started,
        "prompts": r.get::<_, i64>(10)?, "tool_calls": r.get::<_, i64>(11)?, "edits": r.get::<_, i64>(12)?,
        "tool_errors": r.get::<_, i64>(13)?, "events": r.get::<_, i64>(14)?,
        "parent": r.get::<_, Option<String>>(15)?, "model": r.get::<_, Option<String>>(16)?,
        "injected": r.get::<_, i64>(17)?, "helped": r.get::<_, i64>(18)?, "judged": r.get::<_, i64>(19)?,
        "score": r.get::<_, Option<f64>>(20)?, "memories_learned": r.get::<_, i64>(21)?,
    }))
}

/// The first user prompt of a session and the files it edited.
fn summary_of(ctx: &Ctx<'_>, v: &mut Value) -> rusqlite::Result<()> {
    let Some(key) = v["session"].as_str().map(str::to_owned) else { return Ok(()) };
    let conn = ctx.store.conn();
    let prompt: Option<String> = conn
        .prepare_cached(
            "SELECT text FROM session_events WHERE session_key = ?1 AND kind = 'msg.in'
             AND (origin IS NULL OR origin = 'user') AND text != '' ORDER BY lsn LIMIT 1",
        )?
        .query_row([&key], |r| r.get(0))
        .optional()?;
    let files: Vec<String> = conn
        .prepare_cached(
            "SELECT file FROM session_events WHERE session_key = ?1 AND kind = 'code.edit' AND file IS NOT NULL
             GROUP BY file ORDER BY MIN(lsn) LIMIT 8",
        )?
        .query_map([&key], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let summary = v["title"].as_str().map(str::to_owned).or_else(|| prompt.as_deref().map(|p| cap(p, 160).to_owned()));
    v["first_prompt"] = json!(prompt.map(|p| cap(&p, SNIPPET).to_owned()));
    v["summary"] = json!(summary);
    v["files"] = json!(files);
    Ok(())
}

fn session_rows(ctx: &Ctx<'_>, project: Option<&str>, before: Option<Ts>, limit: usize) -> ApiResult<Vec<Value>> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.parent_session_key IS NULL
         AND (?1 IS NULL OR s.project = ?1) AND s.started_ms < ?2 ORDER BY s.started_ms DESC LIMIT ?3"
    );
    let mut rows: Vec<Value> = ctx
        .store
        .conn()
        .prepare_cached(&sql)?
        .query_map(params![project, before.map_or(i64::MAX, |t| t.0), limit as i64], session_row)?
        .collect::<rusqlite::Result<_>>()?;
    for v in &mut rows {
        summary_of(ctx, v)?;
    }
    Ok(rows)
}

/// Sessions, newest first, before `before`.
pub fn sessions(ctx: &Ctx<'_>, project: Option<&str>, before: Option<Ts>, limit: usize) -> ApiResult<Value> {
    let rows = session_rows(ctx, project, before, limit)?;
    let next =
        if rows.len() == limit { rows.last().and_then(|r| r["started_at"].as_str()).map(str::to_owned) } else { None };
    Ok(json!({"sessions": rows, "next_before": next}))
}

/// Sessions not ended whose last event is more recent than the idle limit.
pub fn active_sessions(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let idle_ms = ctx.config.scan.idle_end_minutes as i64 * 60_000;
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.ended_ms IS NULL AND s.last_event_ms >= ?1
         ORDER BY s.last_event_ms DESC LIMIT 100"
    );
    let mut rows: Vec<Value> = ctx
        .store
        .conn()
        .prepare(&sql)?
        .query_map([ctx.now.0 - idle_ms], session_row)?
        .collect::<rusqlite::Result<_>>()?;
    for v in &mut rows {
        summary_of(ctx, v)?;
    }
    Ok(json!({"sessions": rows, "idle_end_minutes": ctx.config.scan.idle_end_minutes}))
}

fn event_row(r: &Row<'_>) -> rusqlite::Result<Value> {
    let text: String = r.get(7)?;
    Ok(json!({
        "lsn": r.get::<_, i64>(0)?, "at": rfc(r.get(1)?), "kind": r.get::<_, String>(2)?,
        "origin": r.get::<_, Option<String>>(3)?, "tool": r.get::<_, Option<String>>(4)?,
        "file": r.get::<_, Option<String>>(5)?, "error": r.get::<_, bool>(6)?,
        "text": cap(&text, 300), "truncated": text.chars().count() > 300,
    }))
}

/// One session: its metadata and score, every ranking served in it with the
/// injected memories and whether each helped, the memories learned in it,
/// and its first `events` events.
pub fn session(ctx: &Ctx<'_>, key: &str, events: usize) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.session_key = ?1");
    let Some(mut v) = conn.query_row(&sql, [key], session_row).optional()? else {
        return Err(ApiError::not_found(format!("no session {key:?}")));
    };
    summary_of(ctx, &mut v)?;
    v["score"] = conn
        .query_row(
            "SELECT score, confidence, memories_recalled, memories_used, novel_context_count, reasoning,
                    continuity_reasoning, scorer, created_ms
             FROM session_scores WHERE session_key = ?1 ORDER BY created_ms DESC LIMIT 1",
            [key],
            |r| {
                Ok(json!({
                    "score": r.get::<_, f64>(0)?, "confidence": r.get::<_, Option<f64>>(1)?,
                    "memories_recalled": r.get::<_, Option<i64>>(2)?, "memories_used": r.get::<_, Option<i64>>(3)?,
                    "novel_context": r.get::<_, Option<i64>>(4)?, "reasoning": r.get::<_, Option<String>>(5)?,
                    "continuity_reasoning": r.get::<_, Option<String>>(6)?, "scorer": r.get::<_, Option<String>>(7)?,
                    "at": rfc(r.get(8)?),
                }))
            },
        )
        .optional()?
        .unwrap_or(Value::Null);
    v["comparison"] = conn
        .query_row(
            "SELECT id, predictor_ndcg, baseline_ndcg, predictor_won, margin, ema_updated, success_rate, alpha
             FROM predictor_comparisons WHERE session_key = ?1 ORDER BY created_ms DESC LIMIT 1",
            [key],
            |r| {
                Ok(json!({
                    "id": r.get::<_, String>(0)?, "predictor_ndcg": r.get::<_, f64>(1)?,
                    "baseline_ndcg": r.get::<_, f64>(2)?, "predictor_won": r.get::<_, Option<bool>>(3)?,
                    "margin": r.get::<_, f64>(4)?, "ema_updated": r.get::<_, bool>(5)?,
                    "success_rate": r.get::<_, f64>(6)?, "alpha": r.get::<_, f64>(7)?,
                }))
            },
        )
        .optional()?
        .unwrap_or(Value::Null);
    // What each injected memory did for the session.
    let mut outcome: BTreeMap<String, Value> = BTreeMap::new();
    let mut stmt = conn.prepare(
        "SELECT sm.memory_id, sm.label, sm.relevance_score, sm.fts_hit_count, sm.agent_relevance_score,
                sm.agent_feedback_count, sm.was_injected
         FROM session_memories sm WHERE sm.session_key = ?1",
    )?;
    for row in stmt.query_map([key], |r| {
        let label: Option<f64> = r.get(1)?;
        let relevance: Option<f64> = r.get(2)?;
        let judged = label.or(relevance);
        Ok((
            r.get::<_, String>(0)?,
            json!({
                "label": label, "relevance": relevance, "fts_hits": r.get::<_, i64>(3)?,
                "agent_relevance": r.get::<_, Option<f64>>(4)?, "agent_feedback": r.get::<_, i64>(5)?,
                "injected": r.get::<_, bool>(6)?, "helped": judged.map(|x| x >= HELPED),
            }),
        ))
    })? {
        let (id, o) = row?;
        outcome.insert(id, o);
    }
    let mut rankings: Vec<Value> = conn
        .prepare(
            "SELECT ranking_id, served_ms, trigger, query, alpha, model_version, cold_start, candidate_count
             FROM rankings WHERE session_key = ?1 ORDER BY served_ms, ranking_id",
        )?
        .query_map([key], |r| {
            Ok(json!({
                "ranking_id": r.get::<_, String>(0)?, "at": rfc(r.get(1)?), "trigger": r.get::<_, String>(2)?,
                "query": cap(&r.get::<_, String>(3)?, 400), "alpha": r.get::<_, f64>(4)?,
                "model_version": r.get::<_, Option<i64>>(5)?, "cold_start": r.get::<_, bool>(6)?,
                "candidates": r.get::<_, i64>(7)?,
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut inj = conn.prepare_cached(
        "SELECT c.memory_id, c.rank, c.final_score, c.baseline_rank, c.predictor_rank, m.type, m.content, m.is_deleted
         FROM ranking_candidates c LEFT JOIN memories m ON m.id = c.memory_id
         WHERE c.ranking_id = ?1 AND c.injected = 1 ORDER BY c.rank",
    )?;
    for rk in &mut rankings {
        let id = rk["ranking_id"].as_str().unwrap_or_default().to_owned();
        let injected: Vec<Value> = inj
            .query_map([&id], |r| {
                let mid: String = r.get(0)?;
                let forgotten = r.get::<_, Option<bool>>(7)?.unwrap_or(true);
                Ok(json!({
                    "memory_id": mid, "rank": r.get::<_, i64>(1)?, "final_score": r.get::<_, f64>(2)?,
                    "baseline_rank": r.get::<_, i64>(3)?, "predictor_rank": r.get::<_, Option<i64>>(4)?,
                    "type": r.get::<_, Option<String>>(5)?,
                    "text": if forgotten { Value::Null } else { json!(cap(&r.get::<_, Option<String>>(6)?.unwrap_or_default(), SNIPPET)) },
                    "forgotten": forgotten,
                    "outcome": outcome.get(&mid).cloned().unwrap_or(Value::Null),
                }))
            })?
            .collect::<rusqlite::Result<_>>()?;
        rk["injected"] = json!(injected);
    }
    v["rankings"] = json!(rankings);
    let learned: Vec<Value> = conn
        .prepare(
            "SELECT id, type, content, created_ms, pinned FROM memories
             WHERE source_session = ?1 AND is_deleted = 0 ORDER BY created_ms LIMIT 200",
        )?
        .query_map([key], |r| {
            Ok(json!({
                "id": r.get::<_, String>(0)?, "type": r.get::<_, String>(1)?,
                "text": cap(&r.get::<_, String>(2)?, SNIPPET), "created_at": rfc(r.get(3)?), "pinned": r.get::<_, bool>(4)?,
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    v["learned"] = json!(learned);
    let evs: Vec<Value> = conn
        .prepare(
            "SELECT lsn, ts_ms, kind, origin, tool, file, is_error, text FROM session_events
             WHERE session_key = ?1 ORDER BY lsn LIMIT ?2",
        )?
        .query_map(params![key, events as i64], event_row)?
        .collect::<rusqlite::Result<_>>()?;
    v["events_shown"] = json!(evs.len());
    v["events_list"] = json!(evs);
    Ok(v)
}

/// One recorded event of a session, with its whole stored text.
pub fn session_event(ctx: &Ctx<'_>, key: &str, lsn: i64) -> ApiResult<Value> {
    ctx.store
        .conn()
        .query_row(
            "SELECT lsn, ts_ms, kind, origin, tool, file, is_error, text, call_id, event_id FROM session_events
             WHERE session_key = ?1 AND lsn = ?2",
            params![key, lsn],
            |r| {
                let mut v = event_row(r)?;
                v["text"] = json!(r.get::<_, String>(7)?);
                v["truncated"] = json!(false);
                v["call_id"] = json!(r.get::<_, Option<String>>(8)?);
                v["event_id"] = json!(r.get::<_, String>(9)?);
                v["session"] = json!(key);
                Ok(v)
            },
        )
        .optional()?
        .ok_or_else(|| ApiError::not_found(format!("no event {lsn} in session {key:?}")))
}

/// The start of the `zoom` window (local day, Monday-started week, month)
/// holding `t`, and the start of the next.
pub fn window(t: Ts, zoom: &str, tz: &jiff::tz::TimeZone) -> (Ts, Ts) {
    let Ok(ts) = jiff::Timestamp::from_millisecond(t.0) else { return (t, t.plus_millis(1)) };
    let zoned = ts.to_zoned(tz.clone());
    let date = zoned.date();
    let (start, end) = match zoom {
        "day" => (date, date.tomorrow().ok()),
        "month" => {
            let first = date.first_of_month();
            (first, first.checked_add(jiff::Span::new().months(1)).ok())
        }
        _ => {
            let back = i64::from(date.weekday().to_monday_zero_offset());
            let monday = date.checked_sub(jiff::Span::new().days(back)).unwrap_or(date);
            (monday, monday.checked_add(jiff::Span::new().days(7)).ok())
        }
    };
    let ms = |d: jiff::civil::Date| d.to_zoned(tz.clone()).ok().map(|z| z.timestamp().as_millisecond());
    match (ms(start), end.and_then(ms)) {
        (Some(s), Some(e)) => (Ts(s), Ts(e)),
        _ => (t, t.plus_millis(1)),
    }
}

/// The timeline: up to `limit` non-empty windows of `zoom` before `before`,
/// newest first, each with its session blocks; `next_before` loads more.
pub fn timeline(
    ctx: &Ctx<'_>,
    zoom: &str,
    before: Option<Ts>,
    project: Option<&str>,
    limit: usize,
) -> ApiResult<Value> {
    let tz = shared::domain::injection::time_zone(ctx.config);
    let mut windows: Vec<Value> = Vec::new();
    let mut cursor = before.unwrap_or(ctx.now.plus_millis(1));
    let mut scanned = 0;
    while windows.len() < limit && scanned < 2000 {
        // The newest session before the cursor decides the next window.
        let Some(latest) = ctx.store.conn().query_row(
            "SELECT MAX(started_ms) FROM sessions WHERE parent_session_key IS NULL AND started_ms < ?1
                 AND (?2 IS NULL OR project = ?2)",
            params![cursor.0, project],
            |r| r.get::<_, Option<i64>>(0),
        )?
        else {
            cursor = Ts(i64::MIN);
            break;
        };
        let (start, end) = window(Ts(latest), zoom, &tz);
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.parent_session_key IS NULL
             AND (?1 IS NULL OR s.project = ?1) AND s.started_ms >= ?2 AND s.started_ms < ?3
             ORDER BY s.started_ms DESC LIMIT 300"
        );
        let mut rows: Vec<Value> = ctx
            .store
            .conn()
            .prepare_cached(&sql)?
            .query_map(params![project, start.0, end.0.min(cursor.0)], session_row)?
            .collect::<rusqlite::Result<_>>()?;
        for v in &mut rows {
            summary_of(ctx, v)?;
        }
        scanned += rows.len().max(1);
        let local = |t: Ts| jiff::Timestamp::from_millisecond(t.0).map(|x| x.to_zoned(tz.clone()));
        let label = match (zoom, local(start)) {
            ("day", Ok(z)) => z.strftime("%A %-d %B %Y").to_string(),
            ("month", Ok(z)) => z.strftime("%B %Y").to_string(),
            (_, Ok(z)) => format!("Week of {}", z.strftime("%-d %B %Y")),
            _ => start.to_rfc3339(),
        };
        windows.push(json!({"start": start.to_rfc3339(), "end": end.to_rfc3339(), "label": label, "sessions": rows}));
        cursor = start;
    }
    let more = cursor.0 != i64::MIN
        && ctx.store.conn().query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE parent_session_key IS NULL AND started_ms < ?1
             AND (?2 IS NULL OR project = ?2))",
            params![cursor.0, project],
            |r| r.get::<_, bool>(0),
        )?;
    Ok(json!({
        "zoom": zoom,
        "windows": windows,
        "next_before": if more { Some(cursor.to_rfc3339()) } else { None },
    }))
}

/// Which memories to list as cards.
#[derive(Clone, Debug, Default)]
pub struct MemoryQuery {
    /// Only these stored types (empty: every type).
    pub types: Vec<String>,
    /// Only this project.
    pub project: Option<String>,
    /// Only memories with every one of these tags.
    pub tags: Vec<String>,
    /// Only memories whose text holds every word of this.
    pub text: Option<String>,
    /// Only pinned (true) or unpinned (false) ones.
    pub pinned: Option<bool>,
    /// Forgotten ones too.
    pub include_forgotten: bool,
    /// Only memories with at least one graph edge.
    pub connected: bool,
    /// Most connected first (else pinned first, then newest).
    pub by_edges: bool,
    /// Page size.
    pub limit: usize,
    /// Page start.
    pub offset: usize,
}

fn card(r: &Row<'_>) -> rusqlite::Result<Value> {
    let tags: String = r.get(5)?;
    let feedback_count: i64 = r.get(12)?;
    let feedback_sum: f64 = r.get(13)?;
    Ok(json!({
        "id": r.get::<_, String>(0)?, "text": cap(&r.get::<_, String>(1)?, 600), "type": r.get::<_, String>(2)?,
        "importance": round3(r.get(3)?), "project": r.get::<_, Option<String>>(4)?,
        "tags": serde_json::from_str::<Value>(&tags).unwrap_or(json!([])), "pinned": r.get::<_, bool>(6)?,
        "source": r.get::<_, String>(7)?, "created_at": rfc(r.get(8)?), "deprecated": r.get::<_, bool>(9)?,
        "forgotten": r.get::<_, bool>(10)?, "superseded_by": r.get::<_, Option<String>>(11)?,
        "feedback_count": feedback_count,
        "feedback_mean": if feedback_count > 0 { Some(feedback_sum / feedback_count as f64) } else { None },
        "sessions_injected": r.get::<_, Option<i64>>(14)?.unwrap_or(0),
        "useful": r.get::<_, Option<f64>>(15)?.unwrap_or(0.0),
        "occurrences": r.get::<_, i64>(16)?,
        "knowledge_type": r.get::<_, shared::storage::event::MemoryType>(2)?.knowledge_type(),
        "edges": r.get::<_, i64>(17)?,
    }))
}

const CARD_COLUMNS: &str = "m.id, m.content, m.type, m.importance, m.project, m.tags, m.pinned, m.source, \
    m.created_ms, m.deprecated, m.is_deleted, m.superseded_by, m.feedback_count, m.feedback_sum, \
    u.sessions_injected, u.useful, m.occurrence_count, \
    (SELECT COUNT(*) FROM knowledge_edges e JOIN memories o ON o.id = iif(e.from_id = m.id, e.to_id, e.from_id) \
     WHERE (e.from_id = m.id OR e.to_id = m.id) AND o.is_deleted = 0) AS edge_count";

/// Memories as cards (pinned first, then newest; or most connected first),
/// with the counts per stored type.
pub fn memories(ctx: &Ctx<'_>, q: &MemoryQuery) -> ApiResult<Value> {
    let fts = match q.text.as_deref() {
        None => None,
        Some(t) => {
            let words: Vec<String> = t
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| format!("\"{}\"", w.to_lowercase()))
                .collect();
            if words.is_empty() {
                return Err(ApiError::bad_request(format!("q {t:?} has no searchable word")));
            }
            Some(words.join(" "))
        }
    };
    let tags = serde_json::to_string(&q.tags.iter().map(|t| t.to_lowercase()).collect::<Vec<_>>())
        .unwrap_or_else(|_| "[]".into());
    let types = serde_json::to_string(&q.types).unwrap_or_else(|_| "[]".into());
    let filter = "(json_array_length(?1) = 0 OR m.type IN (SELECT value FROM json_each(?1)))
         AND (?2 IS NULL OR m.project = ?2)
         AND (?3 IS NULL OR m.pinned = ?3) AND (?4 OR m.is_deleted = 0)
         AND NOT EXISTS (SELECT 1 FROM json_each(?5) t WHERE t.value NOT IN (SELECT value FROM json_each(m.tags)))
         AND (?6 IS NULL OR m.rowid IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?6))
         AND (NOT ?7 OR EXISTS (SELECT 1 FROM knowledge_edges e
                                JOIN memories o ON o.id = iif(e.from_id = m.id, e.to_id, e.from_id)
                                WHERE (e.from_id = m.id OR e.to_id = m.id) AND o.is_deleted = 0))";
    let order = if q.by_edges { "edge_count DESC, m.created_ms DESC" } else { "m.pinned DESC, m.created_ms DESC" };
    let conn = ctx.store.conn();
    let sql = format!(
        "SELECT {CARD_COLUMNS} FROM memories m LEFT JOIN memory_usage u ON u.memory_id = m.id WHERE {filter}
         ORDER BY {order}, m.id LIMIT ?8 OFFSET ?9"
    );
    let args = params![
        types,
        q.project,
        q.pinned,
        q.include_forgotten,
        tags,
        fts,
        q.connected,
        q.limit as i64,
        q.offset as i64
    ];
    let cards: Vec<Value> = conn.prepare(&sql)?.query_map(args, card)?.collect::<rusqlite::Result<_>>()?;
    let total: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM memories m WHERE {filter}"),
        params![types, q.project, q.pinned, q.include_forgotten, tags, fts, q.connected],
        |r| r.get(0),
    )?;
    let by_type: BTreeMap<String, i64> = conn
        .prepare(
            "SELECT type, COUNT(*) FROM memories m WHERE m.is_deleted = 0 AND (?1 IS NULL OR m.project = ?1) GROUP BY type",
        )?
        .query_map([&q.project], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(json!({
        "memories": cards, "total": total, "offset": q.offset, "limit": q.limit, "by_type": by_type,
        "types": shared::storage::event::MemoryType::ALL,
    }))
}

/// One memory in full: its row, sessions, feedback, where it was injected and
/// what that did, and its neighbours (supersession, same session).
pub fn memory(ctx: &Ctx<'_>, id: &str) -> ApiResult<Value> {
    let d = ops::show(ctx.store, id)?;
    let conn = ctx.store.conn();
    let mut v = serde_json::to_value(&d).map_err(|e| ApiError::internal(e.to_string()))?;
    let injections: Vec<Value> = conn
        .prepare(
            "SELECT r.ranking_id, r.served_ms, r.trigger, r.session_key, c.rank,
                    COALESCE(sm.label, sm.relevance_score)
             FROM ranking_candidates c JOIN rankings r ON r.ranking_id = c.ranking_id
             LEFT JOIN session_memories sm ON sm.session_key = r.session_key AND sm.memory_id = c.memory_id
             WHERE c.memory_id = ?1 AND c.injected = 1 ORDER BY r.served_ms DESC LIMIT 50",
        )?
        .query_map([id], |r| {
            let judged: Option<f64> = r.get(5)?;
            Ok(json!({
                "ranking_id": r.get::<_, String>(0)?, "at": rfc(r.get(1)?), "trigger": r.get::<_, String>(2)?,
                "session": r.get::<_, Option<String>>(3)?, "rank": r.get::<_, i64>(4)?,
                "judged": judged, "helped": judged.map(|x| x >= HELPED),
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    v["injections"] = json!(injections);
    let usage: Option<(i64, f64)> = conn
        .query_row("SELECT sessions_injected, useful FROM memory_usage WHERE memory_id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    v["sessions_injected"] = json!(usage.map_or(0, |u| u.0));
    v["useful"] = json!(usage.map_or(0.0, |u| u.1));
    let supersedes: Vec<String> = conn
        .prepare("SELECT id FROM memories WHERE superseded_by = ?1")?
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    v["supersedes"] = json!(supersedes);
    let siblings: Vec<Value> = match &d.memory.source_session {
        Some(s) => conn
            .prepare(
                "SELECT id, type, content FROM memories WHERE source_session = ?1 AND id != ?2 AND is_deleted = 0
                 ORDER BY created_ms LIMIT 20",
            )?
            .query_map([s, &d.memory.id], |r| {
                Ok(json!({"id": r.get::<_, String>(0)?, "type": r.get::<_, String>(1)?,
                          "text": cap(&r.get::<_, String>(2)?, 160)}))
            })?
            .collect::<rusqlite::Result<_>>()?,
        None => Vec::new(),
    };
    v["same_session"] = json!(siblings);
    Ok(v)
}

fn rows_as_json(ctx: &Ctx<'_>, sql: &str) -> ApiResult<Vec<Value>> {
    let mut stmt = ctx.store.conn().prepare(sql)?;
    let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let rows = stmt.query_map([], |r| {
        let mut obj = serde_json::Map::new();
        for (i, n) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                rusqlite::types::ValueRef::Null => Value::Null,
                rusqlite::types::ValueRef::Integer(x) => json!(x),
                rusqlite::types::ValueRef::Real(x) => json!(x),
                rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                rusqlite::types::ValueRef::Blob(b) => json!(b.len()),
            };
            obj.insert(n.clone(), v);
        }
        Ok(Value::Object(obj))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Everything a user may take away, as JSON: memories (live), their feedback,
/// sessions, scores, comparisons, training runs and models.
pub fn export(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let memories = ctx.store.memories(&shared::domain::memory::queries::MemoryFilter::default())?;
    Ok(json!({
        "format": "engram-export",
        "version": 1,
        "exported_at": ctx.now.to_rfc3339(),
        "memories": memories,
        "feedback": rows_as_json(ctx, "SELECT f.memory_id, f.session_key, f.relevance, f.reason, f.by, f.created_at
            FROM memory_feedback f JOIN memories m ON m.id = f.memory_id WHERE m.is_deleted = 0 ORDER BY f.created_at")?,
        "sessions": rows_as_json(ctx, "SELECT session_key, harness, harness_session_id, project, cwd, git_branch,
            parent_session_key, model, title, started_ms, last_event_ms, ended_ms, end_reason, prompt_count,
            tool_call_count, code_edit_count, event_count FROM sessions ORDER BY started_ms")?,
        "session_scores": rows_as_json(ctx, "SELECT session_key, project, score, confidence, memories_recalled,
            memories_used, novel_context_count, reasoning, scorer, created_at FROM session_scores ORDER BY created_ms")?,
        "comparisons": rows_as_json(ctx, "SELECT id, session_key, project, predictor_ndcg, baseline_ndcg, predictor_won,
            margin, alpha, ema_updated, success_rate, scorer_confidence, created_at FROM predictor_comparisons
            ORDER BY created_ms")?,
        "training_runs": rows_as_json(ctx, "SELECT id, model_version, loss, valid_loss, sample_count, epochs, steps,
            duration_ms, canary_ndcg, canary_serving_ndcg, canary_baseline_ndcg, gates_passed, failure, promoted,
            drift_retrain, created_at FROM predictor_training_log ORDER BY created_ms")?,
        "models": rows_as_json(ctx, "SELECT model_version, checkpoint, run_id, promoted_at FROM models ORDER BY model_version")?,
    }))
}

/// Forgets every live memory (`memory.forgotten` events, appended in batches
/// of a thousand, one fsync each).
pub fn forget_all(w: &mut WriteCtx<'_>) -> ApiResult<Value> {
    let ids: Vec<String> = w
        .journal
        .store()
        .conn()
        .prepare("SELECT id FROM memories WHERE is_deleted = 0 ORDER BY created_ms")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for chunk in ids.chunks(1000) {
        let events: Vec<_> = chunk
            .iter()
            .map(|id| {
                let body = Body::MemoryForgotten(MemoryForgotten {
                    memory_id: MemoryId::from(id.as_str()),
                    reason: "purged from the web UI".into(),
                    relearnable: false,
                });
                w.journal.event(w.now, None, body)
            })
            .collect();
        w.journal.append(&events).map_err(|e| ApiError::internal(format!("append to the tape log: {e}")))?;
    }
    Ok(json!({"forgotten": ids.len()}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn windows_are_local_calendar_days_weeks_and_months() {
        let tz = jiff::tz::TimeZone::UTC;
        // Wednesday 2026-01-14 15:30 UTC.
        let t = Ts::from_civil(2026, 1, 14, 15, 30, 0);
        assert_eq!(window(t, "day", &tz), (Ts::from_civil(2026, 1, 14, 0, 0, 0), Ts::from_civil(2026, 1, 15, 0, 0, 0)));
        assert_eq!(
            window(t, "week", &tz),
            (Ts::from_civil(2026, 1, 12, 0, 0, 0), Ts::from_civil(2026, 1, 19, 0, 0, 0))
        );
        assert_eq!(window(t, "month", &tz), (Ts::from_civil(2026, 1, 1, 0, 0, 0), Ts::from_civil(2026, 2, 1, 0, 0, 0)));
    }
}
