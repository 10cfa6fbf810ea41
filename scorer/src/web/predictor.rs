//! The predictor's page and `/api/predictor/*` (seed 002 §4.6, §4.8), and the
//! diagnostics of §4.1–4.3: the health domain with its score, latency
//! percentiles and histograms of hooks and scoring (from
//! [`shared::base::telemetry::latency`]) and the last errors (the logs'
//! warnings and errors, projection apply errors, failed training runs).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, Row, params};
use serde_json::{Value, json};
use shared::base::telemetry::{errors as log_errors, latency};
use shared::base::time::Ts;
use shared::domain::rank::PredictorState;
use shared::storage::store::cap;

use super::api::{ApiError, ApiResult};
use super::queries::{HELPED, round3};
use super::state::Ctx;

/// A margin within this of zero is a tie (the trainer's own epsilon).
const TIE: f64 = 1e-6;
/// Seed 002 §4.1's scoring budget (its `score_timeout_ms` default): a
/// ranking p95 over it is slow. Rankings run in process, so nothing times out.
pub const SCORE_BUDGET_MS: f64 = 120.0;
/// Seed 002 §4.1's crash limit (its `crash_disable_threshold` default): this
/// many failed hooks in an hour make the predictor's health 0.
pub const CRASHES_PER_HOUR: usize = 3;

fn rfc(ms: i64) -> String {
    Ts(ms).to_rfc3339()
}

/// The predictor's mode, as the dashboard names it.
pub fn mode(s: &PredictorState) -> &'static str {
    if !s.enabled {
        "disabled"
    } else if s.drift_reset_pending {
        "retraining"
    } else if s.model_version.is_none() {
        "collecting"
    } else if !s.cold_start_exited {
        "warming"
    } else {
        "active"
    }
}

/// `GET /api/predictor/status`: model state, configuration, health.
pub fn status(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let s = PredictorState::load(ctx.store, &ctx.config.predictor)?;
    let conn = ctx.store.conn();
    let scored_any: i64 = conn.query_row("SELECT COUNT(DISTINCT session_key) FROM session_scores", [], |r| r.get(0))?;
    let last_run: Option<Value> = conn
        .query_row(
            "SELECT created_ms, loss, valid_loss, model_version, gates_passed, failure, duration_ms
             FROM predictor_training_log ORDER BY created_ms DESC, id DESC LIMIT 1",
            [],
            |r| {
                Ok(json!({
                    "at": rfc(r.get(0)?), "loss": r.get::<_, f64>(1)?, "valid_loss": r.get::<_, Option<f64>>(2)?,
                    "model_version": r.get::<_, i64>(3)?, "gates_passed": r.get::<_, bool>(4)?,
                    "failure": r.get::<_, Option<String>>(5)?, "duration_ms": r.get::<_, i64>(6)?,
                }))
            },
        )
        .optional()?;
    let params_count = ctx.model().map(|m| m.model.param_count());
    let (runs, promoted, drift_resets): (i64, i64, i64) = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM predictor_training_log), (SELECT COUNT(*) FROM models),
                (SELECT COUNT(*) FROM drift_resets)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(json!({
        "mode": mode(&s),
        "status_line": s.status_line(),
        "enabled": s.enabled,
        "model_version": s.model_version,
        "checkpoint": s.checkpoint,
        "parameters": params_count,
        "alpha": s.alpha,
        "success_rate": s.success_rate,
        "comparisons": s.comparisons,
        "scored_sessions": s.scored_sessions,
        "scored_sessions_any_confidence": scored_any,
        "min_training_sessions": s.min_sessions,
        "cold_start": s.cold_start(),
        "cold_start_exited": s.cold_start_exited,
        "sessions_after_cold_start": s.sessions_after_cold_start,
        "drift_reset_pending": s.drift_reset_pending,
        "drift_resets": drift_resets,
        "training_runs": runs,
        "models_promoted": promoted,
        "last_run": last_run,
        "config": ctx.config.predictor,
        "projects": project_slices(ctx)?,
        "health": health(ctx)?,
    }))
}

/// Per-project results (top projects by comparisons): not used for α, but
/// they show a predictor that wins in one project and loses in another.
fn project_slices(ctx: &Ctx<'_>) -> ApiResult<Vec<Value>> {
    let rows = ctx
        .store
        .conn()
        .prepare(
            "SELECT COALESCE(project, '(no project)'), COUNT(*), SUM(ema_updated),
                    SUM(ema_updated AND margin > ?1), SUM(ema_updated AND margin < -?1), AVG(margin)
             FROM predictor_comparisons GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 5",
        )?
        .query_map([TIE], |r| {
            let compared: i64 = r.get(2)?;
            let wins: i64 = r.get(3)?;
            let losses: i64 = r.get(4)?;
            Ok(json!({
                "project": r.get::<_, String>(0)?, "sessions": r.get::<_, i64>(1)?, "compared": compared,
                "wins": wins, "losses": losses, "ties": compared - wins - losses,
                "win_rate": if compared > 0 { Some((wins as f64 + 0.5 * (compared - wins - losses) as f64) / compared as f64) } else { None },
                "mean_margin": r.get::<_, Option<f64>>(5)?,
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Filters of `GET /api/predictor/comparisons`.
#[derive(Clone, Debug, Default)]
pub struct ComparisonFilter {
    /// `predictor`, `baseline` or `tie`.
    pub winner: Option<String>,
    /// Only sessions that did (or did not) update the success rate.
    pub ema_updated: Option<bool>,
    /// Only margins at least this large (in absolute value).
    pub min_margin: Option<f64>,
    /// From this time.
    pub since: Option<Ts>,
    /// Up to this time.
    pub until: Option<Ts>,
    /// Only this project.
    pub project: Option<String>,
    /// Page size.
    pub limit: usize,
    /// Page start.
    pub offset: usize,
}

const COMPARISON_COLUMNS: &str = "id, session_key, project, predictor_ndcg, baseline_ndcg, predictor_won, margin, \
    alpha, ema_updated, success_rate, scorer_confidence, candidate_count, fts_overlap_score, \
    sessions_after_cold_start, cold_start_exited, created_ms";

fn comparison_row(r: &Row<'_>) -> rusqlite::Result<Value> {
    let margin: f64 = r.get(6)?;
    let updated: bool = r.get(8)?;
    let winner = if margin > TIE {
        "predictor"
    } else if margin < -TIE {
        "baseline"
    } else {
        "tie"
    };
    Ok(json!({
        "id": r.get::<_, String>(0)?, "session": r.get::<_, String>(1)?, "project": r.get::<_, Option<String>>(2)?,
        "predictor_ndcg": r.get::<_, f64>(3)?, "baseline_ndcg": r.get::<_, f64>(4)?,
        "predictor_won": r.get::<_, Option<bool>>(5)?, "margin": margin, "winner": winner,
        "alpha": r.get::<_, f64>(7)?, "ema_updated": updated, "success_rate": r.get::<_, f64>(9)?,
        "confidence": r.get::<_, f64>(10)?, "candidates": r.get::<_, i64>(11)?,
        "fts_overlap": r.get::<_, Option<f64>>(12)?, "sessions_after_cold_start": r.get::<_, i64>(13)?,
        "cold_start_exited": r.get::<_, bool>(14)?, "at": rfc(r.get(15)?), "at_ms": r.get::<_, i64>(15)?,
    }))
}

/// `GET /api/predictor/comparisons`: oldest first within the page (a page is
/// counted from the newest).
pub fn comparisons(ctx: &Ctx<'_>, f: &ComparisonFilter) -> ApiResult<Value> {
    let filter = "(?1 IS NULL OR (?1 = 'predictor' AND margin > ?9) OR (?1 = 'baseline' AND margin < -?9)
             OR (?1 = 'tie' AND ABS(margin) <= ?9))
         AND (?2 IS NULL OR ema_updated = ?2) AND (?3 IS NULL OR ABS(margin) >= ?3)
         AND (?4 IS NULL OR created_ms >= ?4) AND (?5 IS NULL OR created_ms <= ?5) AND (?6 IS NULL OR project = ?6)";
    let conn = ctx.store.conn();
    let sql = format!(
        "SELECT * FROM (SELECT {COMPARISON_COLUMNS} FROM predictor_comparisons WHERE {filter}
         ORDER BY created_ms DESC, id DESC LIMIT ?7 OFFSET ?8) ORDER BY created_ms, id"
    );
    let (since, until) = (f.since.map(|t| t.0), f.until.map(|t| t.0));
    // ?7 and ?8 (the page) are bound in both queries; the count ignores them.
    let args =
        params![f.winner, f.ema_updated, f.min_margin, since, until, f.project, f.limit as i64, f.offset as i64, TIE];
    let rows: Vec<Value> = conn.prepare(&sql)?.query_map(args, comparison_row)?.collect::<rusqlite::Result<_>>()?;
    let total: i64 =
        conn.query_row(&format!("SELECT COUNT(*) FROM predictor_comparisons WHERE {filter}"), args, |r| r.get(0))?;
    Ok(json!({"comparisons": rows, "total": total, "limit": f.limit, "offset": f.offset}))
}

fn memory_brief(ctx: &Ctx<'_>, id: &str) -> rusqlite::Result<Value> {
    let row = ctx
        .store
        .conn()
        .prepare_cached("SELECT type, content, is_deleted FROM memories WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?)))
        .optional()?;
    Ok(match row {
        Some((t, c, false)) => json!({"id": id, "type": t, "text": cap(&c, 200)}),
        _ => json!({"id": id, "type": null, "text": null, "forgotten": true}),
    })
}

/// A comparison with its full detail: both top lists side by side with each
/// memory's label, whether it was injected, and FTS hits.
fn detail(ctx: &Ctx<'_>, mut v: Value) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    let id = v["id"].as_str().unwrap_or_default().to_owned();
    let session = v["session"].as_str().unwrap_or_default().to_owned();
    let (p_top, b_top, rel): (String, String, String) = conn.query_row(
        "SELECT predictor_top_ids, baseline_top_ids, relevance_scores FROM predictor_comparisons WHERE id = ?1",
        [&id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let relevance: BTreeMap<String, f64> = serde_json::from_str(&rel).unwrap_or_default();
    let mut per: BTreeMap<String, (bool, i64, Option<f64>)> = BTreeMap::new();
    let mut stmt = conn.prepare(
        "SELECT memory_id, was_injected, fts_hit_count, COALESCE(label, relevance_score) FROM session_memories
         WHERE session_key = ?1",
    )?;
    for row in stmt.query_map([&session], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))? {
        let (m, x) = row?;
        per.insert(m, x);
    }
    let list = |ids: &str| -> ApiResult<Vec<Value>> {
        let ids: Vec<String> = serde_json::from_str(ids).unwrap_or_default();
        let mut out = Vec::new();
        for (i, m) in ids.iter().enumerate() {
            let mut b = memory_brief(ctx, m)?;
            let p = per.get(m);
            b["rank"] = json!(i + 1);
            b["label"] = json!(relevance.get(m));
            b["injected"] = json!(p.is_some_and(|p| p.0));
            b["fts_hits"] = json!(p.map_or(0, |p| p.1));
            out.push(b);
        }
        Ok(out)
    };
    v["predictor_top"] = json!(list(&p_top)?);
    v["baseline_top"] = json!(list(&b_top)?);
    let fts_only: Vec<Value> = per
        .iter()
        .filter(|(_, p)| p.1 > 0 && !p.0)
        .take(20)
        .map(|(m, _)| memory_brief(ctx, m))
        .collect::<rusqlite::Result<_>>()?;
    v["fts_not_injected"] = json!(fts_only);
    v["injected_matched_by_fts"] = json!(per.values().filter(|p| p.0 && p.1 > 0).count());
    v["injected_total"] = json!(per.values().filter(|p| p.0).count());
    v["relevance"] = json!(relevance);
    v["judge"] = conn
        .query_row(
            "SELECT score, confidence, reasoning, continuity_reasoning, scorer FROM session_scores
             WHERE session_key = ?1 ORDER BY created_ms DESC LIMIT 1",
            [&session],
            |r| {
                Ok(json!({"score": r.get::<_, f64>(0)?, "confidence": r.get::<_, Option<f64>>(1)?,
                          "reasoning": r.get::<_, Option<String>>(2)?,
                          "continuity_reasoning": r.get::<_, Option<String>>(3)?,
                          "scorer": r.get::<_, Option<String>>(4)?}))
            },
        )
        .optional()?
        .unwrap_or(Value::Null);
    let confident =
        v["confidence"].as_f64().unwrap_or(0.0) >= f64::from(shared::domain::rank::state::MIN_SCORER_CONFIDENCE);
    v["confidence_gate"] = json!({
        "passed": confident,
        "min_confidence": shared::domain::rank::state::MIN_SCORER_CONFIDENCE,
        "why_not": if confident { Value::Null } else { json!("the continuity scorer's confidence is below the gate") },
    });
    Ok(v)
}

/// `GET /api/predictor/comparisons/:id`.
pub fn comparison(ctx: &Ctx<'_>, id: &str) -> ApiResult<Value> {
    let sql = format!("SELECT {COMPARISON_COLUMNS} FROM predictor_comparisons WHERE id = ?1");
    let v = ctx
        .store
        .conn()
        .query_row(&sql, [id], comparison_row)
        .optional()?
        .ok_or_else(|| ApiError::not_found(format!("no comparison {id:?}")))?;
    detail(ctx, v)
}

/// `GET /api/predictor/audit/:session_key`: the session's comparison in
/// full, its rankings (both rankers' ranks of every injected memory) and the
/// labels of every candidate.
pub fn audit(ctx: &Ctx<'_>, key: &str) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    let sql = format!(
        "SELECT {COMPARISON_COLUMNS} FROM predictor_comparisons WHERE session_key = ?1 ORDER BY created_ms DESC LIMIT 1"
    );
    let cmp = conn.query_row(&sql, [key], comparison_row).optional()?;
    let exists: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM sessions WHERE session_key = ?1)", [key], |r| r.get(0))?;
    if cmp.is_none() && !exists {
        return Err(ApiError::not_found(format!("no session {key:?}")));
    }
    let comparison = match cmp {
        Some(c) => detail(ctx, c)?,
        None => Value::Null,
    };
    let candidates: Vec<Value> = conn
        .prepare(
            "SELECT memory_id, source, effective_score, predictor_score, final_score, rank, predictor_rank,
                    baseline_rank, was_injected, relevance_score, label, fts_hit_count, agent_relevance_score
             FROM session_memories WHERE session_key = ?1 ORDER BY rank LIMIT 200",
        )?
        .query_map([key], |r| {
            let judged = r.get::<_, Option<f64>>(10)?.or(r.get::<_, Option<f64>>(9)?);
            Ok(json!({
                "memory_id": r.get::<_, String>(0)?, "source": r.get::<_, String>(1)?,
                "baseline_score": r.get::<_, Option<f64>>(2)?, "predictor_score": r.get::<_, Option<f64>>(3)?,
                "final_score": r.get::<_, f64>(4)?, "rank": r.get::<_, i64>(5)?,
                "predictor_rank": r.get::<_, Option<i64>>(6)?, "baseline_rank": r.get::<_, Option<i64>>(7)?,
                "injected": r.get::<_, bool>(8)?, "relevance": r.get::<_, Option<f64>>(9)?,
                "label": r.get::<_, Option<f64>>(10)?, "fts_hits": r.get::<_, i64>(11)?,
                "agent_relevance": r.get::<_, Option<f64>>(12)?, "helped": judged.map(|x| x >= HELPED),
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let rankings: Vec<Value> = conn
        .prepare(
            "SELECT ranking_id, served_ms, trigger, alpha, model_version, cold_start, candidate_count, injected_count
             FROM rankings WHERE session_key = ?1 ORDER BY served_ms",
        )?
        .query_map([key], |r| {
            Ok(json!({"ranking_id": r.get::<_, String>(0)?, "at": rfc(r.get(1)?), "trigger": r.get::<_, String>(2)?,
                      "alpha": r.get::<_, f64>(3)?, "model_version": r.get::<_, Option<i64>>(4)?,
                      "cold_start": r.get::<_, bool>(5)?, "candidates": r.get::<_, i64>(6)?,
                      "injected": r.get::<_, i64>(7)?}))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(json!({"session": key, "comparison": comparison, "rankings": rankings, "candidates": candidates}))
}

/// `GET /api/predictor/training`: every run (loss, validation loss, canary
/// NDCG of candidate, serving model and baseline, gates), models, drift resets.
pub fn training(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    let runs: Vec<Value> = conn
        .prepare(
            "SELECT id, model_version, loss, valid_loss, sample_count, epochs, steps, duration_ms, canary_ndcg,
                    canary_serving_ndcg, canary_baseline_ndcg, canary_top5_overlap, gates_passed, failure, promoted,
                    drift_retrain, created_ms
             FROM predictor_training_log ORDER BY created_ms, id",
        )?
        .query_map([], |r| {
            let loss: f64 = r.get(2)?;
            Ok(json!({
                "id": r.get::<_, String>(0)?, "model_version": r.get::<_, i64>(1)?,
                "loss": if loss >= 0.0 && loss.is_finite() { Some(loss) } else { None },
                "valid_loss": r.get::<_, Option<f64>>(3)?, "samples": r.get::<_, i64>(4)?,
                "epochs": r.get::<_, i64>(5)?, "steps": r.get::<_, i64>(6)?, "duration_ms": r.get::<_, i64>(7)?,
                "canary": {"candidate": r.get::<_, Option<f64>>(8)?, "serving": r.get::<_, Option<f64>>(9)?,
                           "baseline": r.get::<_, Option<f64>>(10)?, "top5_overlap": r.get::<_, Option<f64>>(11)?},
                "gates_passed": r.get::<_, bool>(12)?, "failure": r.get::<_, Option<String>>(13)?,
                "promoted": r.get::<_, bool>(14)?, "drift_retrain": r.get::<_, bool>(15)?,
                "at": rfc(r.get(16)?), "at_ms": r.get::<_, i64>(16)?,
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let models: Vec<Value> = conn
        .prepare("SELECT model_version, checkpoint, run_id, promoted_ms FROM models ORDER BY model_version")?
        .query_map([], |r| {
            Ok(json!({"model_version": r.get::<_, i64>(0)?, "checkpoint": r.get::<_, String>(1)?,
                      "run_id": r.get::<_, String>(2)?, "promoted_at": rfc(r.get(3)?), "at_ms": r.get::<_, i64>(3)?}))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(json!({"runs": runs, "models": models, "drift_resets": drift_resets(ctx)?}))
}

fn drift_resets(ctx: &Ctx<'_>) -> ApiResult<Vec<Value>> {
    Ok(ctx
        .store
        .conn()
        .prepare("SELECT created_ms, success_rate, window FROM drift_resets ORDER BY created_ms")?
        .query_map([], |r| {
            Ok(json!({"at": rfc(r.get(0)?), "at_ms": r.get::<_, i64>(0)?, "success_rate": r.get::<_, f64>(1)?,
                      "window": r.get::<_, i64>(2)?}))
        })?
        .collect::<rusqlite::Result<_>>()?)
}

/// Seed 002 §4.10's calibration drift: the mean judged relevance of memories
/// under 7 days old minus that of memories over 30 days old, over the
/// sessions started in `[from, to)`.
fn drift_signal(ctx: &Ctx<'_>, from: i64, to: i64) -> rusqlite::Result<Option<f64>> {
    const DAY: i64 = 86_400_000;
    let (young, old): (Option<f64>, Option<f64>) = ctx.store.conn().query_row(
        "SELECT AVG(CASE WHEN s.started_ms - m.created_ms < 7 * ?3 THEN COALESCE(sm.relevance_score, sm.label) END),
                AVG(CASE WHEN s.started_ms - m.created_ms > 30 * ?3 THEN COALESCE(sm.relevance_score, sm.label) END)
         FROM session_memories sm JOIN sessions s ON s.session_key = sm.session_key
         JOIN memories m ON m.id = sm.memory_id
         WHERE s.started_ms >= ?1 AND s.started_ms < ?2 AND COALESCE(sm.relevance_score, sm.label) IS NOT NULL",
        params![from, to, DAY],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(young.zip(old).map(|(y, o)| y - o))
}

/// `GET /api/predictor/drift`: the current signal (last 30 days), one per
/// week for the last 12 weeks, and the resets.
pub fn drift(ctx: &Ctx<'_>) -> ApiResult<Value> {
    const WEEK: i64 = 7 * 86_400_000;
    let now = ctx.now.0;
    let current = drift_signal(ctx, now - 30 * 86_400_000, now + 1)?;
    let mut history = Vec::new();
    for w in (0..12).rev() {
        let to = now + 1 - w * WEEK;
        history.push(json!({"week_ending": rfc(to), "signal": drift_signal(ctx, to - WEEK, to)?}));
    }
    Ok(json!({
        "signal": current,
        "definition": "mean judged relevance of memories under 7 days old minus that of memories over 30 days old",
        "history": history,
        "resets": drift_resets(ctx)?,
        "drift_reset_window": ctx.config.predictor.drift_reset_window,
    }))
}

fn score_samples(ctx: &Ctx<'_>, hours: u64) -> Vec<latency::Sample> {
    latency::read(ctx.paths, ctx.now.0 - hours as i64 * 3_600_000)
}

/// `GET /api/diagnostics/predictor` (seed 002 §4.1): the health domain.
pub fn health(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let s = PredictorState::load(ctx.store, &ctx.config.predictor)?;
    let conn = ctx.store.conn();
    let samples = score_samples(ctx, 24);
    let hour_ago = ctx.now.0 - 3_600_000;
    let scores: Vec<&latency::Sample> = samples.iter().filter(|x| x.op.starts_with("score.")).collect();
    let mut ms: Vec<f64> = scores.iter().map(|x| x.us as f64 / 1000.0).collect();
    let last = ms.last().copied();
    let avg = if ms.is_empty() { None } else { Some(ms.iter().sum::<f64>() / ms.len() as f64) };
    ms.sort_by(f64::total_cmp);
    let p95 = if ms.is_empty() { None } else { Some(latency::percentile(&ms, 95.0)) };
    let crashes = samples.iter().filter(|x| x.ts >= hour_ago && x.op.starts_with("hook.") && !x.ok).count();
    let crash_disabled = crashes >= CRASHES_PER_HOUR;
    let last_run: Option<(i64, f64)> = conn
        .query_row(
            "SELECT created_ms, loss FROM predictor_training_log WHERE gates_passed = 1
             ORDER BY created_ms DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let drift_resets: i64 = conn.query_row("SELECT COUNT(*) FROM drift_resets", [], |r| r.get(0))?;
    let drift = drift_signal(ctx, ctx.now.0 - 30 * 86_400_000, ctx.now.0 + 1)?;
    let timeout = SCORE_BUDGET_MS;
    let status = mode(&s);
    // Seed 002 §4.1: dead or crash-disabled 0; cold start 0.6; trained and
    // winning 0.8+; slow scoring −0.2; drift −0.1.
    let mut score: f64 = match status {
        "disabled" => 0.0,
        _ if crash_disabled => 0.0,
        "collecting" | "warming" | "retraining" => 0.6,
        _ if s.success_rate > 0.4 => 0.8 + 0.2 * f64::from((s.success_rate - 0.4) / 0.6).clamp(0.0, 1.0),
        _ => 0.5,
    };
    let slow = p95.is_some_and(|p| p > timeout);
    if slow {
        score -= 0.2;
    }
    let drifting = drift.is_some_and(|d| d.abs() > 0.3);
    if drifting {
        score -= 0.1;
    }
    let score = score.clamp(0.0, 1.0);
    let label = match status {
        "disabled" => "disabled",
        _ if crash_disabled => "unhealthy",
        "collecting" | "warming" => "cold_start",
        _ if score >= 0.8 => "healthy",
        _ if score >= 0.5 => "degraded",
        _ => "unhealthy",
    };
    let mut warnings = Vec::new();
    if slow {
        warnings
            .push(format!("scoring p95 ({:.0} ms) is over the scoring budget ({timeout:.0} ms)", p95.unwrap_or(0.0)));
    } else if p95.is_some_and(|p| p > 0.8 * timeout) {
        warnings.push(format!(
            "scoring p95 ({:.0} ms) approaches the scoring budget ({timeout:.0} ms)",
            p95.unwrap_or(0.0)
        ));
    }
    if crashes > 0 {
        warnings.push(format!("{crashes} hook failure(s) in the last hour (see the error feed)"));
    }
    if drifting {
        warnings.push("the judge's relevance drifts with memory age (calibration drift)".into());
    }
    Ok(json!({
        "score": round3(score),
        "status": label,
        "mode": status,
        "ranking_in_process": true,
        "last_score_latency_ms": last,
        "avg_score_latency_ms": avg,
        "p95_score_latency_ms": p95,
        "score_budget_ms": SCORE_BUDGET_MS,
        "crash_count": crashes,
        "crash_disabled": crash_disabled,
        "model_version": s.model_version,
        "training_sessions": s.scored_sessions,
        "min_training_sessions": s.min_sessions,
        "success_rate": s.success_rate,
        "alpha": s.alpha,
        "last_trained_at": last_run.map(|r| rfc(r.0)),
        "last_train_loss": last_run.map(|r| r.1),
        "drift_resets": drift_resets,
        "scorer_drift_signal": drift,
        "warnings": warnings,
    }))
}

/// `GET /api/diagnostics`: the predictor domain, the projection's state and storage.
pub fn diagnostics(ctx: &Ctx<'_>) -> ApiResult<Value> {
    let conn = ctx.store.conn();
    let one = |sql: &str| -> rusqlite::Result<i64> { conn.query_row(sql, [], |r| r.get(0)) };
    let last_ingest: Option<i64> = conn.query_row("SELECT MAX(updated_ms) FROM ingest_cursors", [], |r| r.get(0))?;
    Ok(json!({
        "predictor": health(ctx)?,
        "projection": {
            "schema_version": ctx.store.schema_version()?,
            "applied_lsn": ctx.store.applied_lsn()?,
            "apply_errors": one("SELECT COUNT(*) FROM apply_errors")?,
            "unknown_events": one("SELECT COUNT(*) FROM unknown_events")?,
            "file": ctx.store.file().display().to_string(),
        },
        "ingest": {
            "files": one("SELECT COUNT(*) FROM ingest_cursors")?,
            "last_ingest_at": last_ingest.map(rfc),
        },
        "storage": {
            "tapes": super::queries::dir_size(&ctx.paths.tapes()),
            "projection": super::queries::dir_size(&ctx.paths.db_generations()),
            "models": super::queries::dir_size(&ctx.paths.models()),
        },
        "data_home": ctx.paths.home().display().to_string(),
        "server": {"started_at": ctx.started().to_rfc3339(), "pid": std::process::id()},
    }))
}

/// `GET /api/analytics/latency` (seed 002 §4.2): p50/p95/p99 and histograms of
/// every timed operation over the last `hours`, plus training runs' durations
/// (`predictor.train`).
pub fn latency(ctx: &Ctx<'_>, hours: u64) -> Value {
    let mut samples = score_samples(ctx, hours);
    let since = ctx.now.0 - hours as i64 * 3_600_000;
    if let Ok(mut stmt) = ctx
        .store
        .conn()
        .prepare("SELECT created_ms, duration_ms, gates_passed FROM predictor_training_log WHERE created_ms >= ?1")
        && let Ok(rows) = stmt.query_map([since], |r| {
            Ok(latency::Sample {
                ts: r.get(0)?,
                op: "predictor.train".into(),
                us: r.get::<_, i64>(1)?.max(0) as u64 * 1000,
                ok: r.get(2)?,
            })
        })
    {
        samples.extend(rows.flatten());
    }
    json!({
        "since": rfc(since),
        "buckets_ms": latency::BUCKETS_MS,
        "operations": latency::summarize(&samples),
        "score_budget_ms": SCORE_BUDGET_MS,
        "source": "logs/latency.jsonl (hooks and their rankings) and the training log",
    })
}

/// `GET /api/analytics/errors` (seed 002 §4.3): the latest warnings and errors
/// of the hooks' and trainer's logs, projection apply errors and training
/// runs that failed, newest first.
pub fn errors(ctx: &Ctx<'_>, limit: usize) -> ApiResult<Value> {
    let mut out: Vec<Value> = log_errors::recent(ctx.paths, limit)
        .into_iter()
        .map(|e| json!({"at": e.at, "level": e.level, "stage": e.source, "message": e.message}))
        .collect();
    let conn = ctx.store.conn();
    let applied: Vec<Value> = conn
        .prepare("SELECT lsn, kind, error, event_id FROM apply_errors ORDER BY lsn DESC LIMIT ?1")?
        .query_map([limit as i64], |r| {
            Ok(json!({"at": null, "level": "ERROR", "stage": "projection",
                      "message": format!("event {} ({}) at LSN {}: {}", r.get::<_, String>(3)?, r.get::<_, String>(1)?,
                                         r.get::<_, i64>(0)?, r.get::<_, String>(2)?)}))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let failed: Vec<Value> = conn
        .prepare(
            "SELECT created_ms, model_version, failure FROM predictor_training_log WHERE failure IS NOT NULL
             ORDER BY created_ms DESC LIMIT ?1",
        )?
        .query_map([limit as i64], |r| {
            Ok(json!({"at": rfc(r.get(0)?), "level": "WARN", "stage": "predictor",
                      "message": format!("predictor_train_failure: run for v{} not promoted: {}",
                                         r.get::<_, i64>(1)?, r.get::<_, String>(2)?)}))
        })?
        .collect::<rusqlite::Result<_>>()?;
    out.extend(failed);
    out.sort_by(|a, b| b["at"].as_str().cmp(&a["at"].as_str()));
    out.truncate(limit);
    out.extend(applied);
    Ok(json!({"errors": out}))
}
