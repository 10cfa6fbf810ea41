//! How learning events change the projection: session outcomes (and what
//! they say of each memory), comparisons with the baseline, training runs,
//! promotions and drift resets.

use rusqlite::{Connection, OptionalExtension, params};

use crate::base::ids::MemoryId;
use crate::storage::event::{ComparisonRecorded, DriftReset, Event, ModelPromoted, SessionScored, TrainingRun};
use crate::storage::store::{Step, data, finite_or};

/// `session.scored`: the outcome, and what it says of each memory.
pub(crate) fn scored(conn: &Connection, event: &Event, b: &SessionScored) -> Step<()> {
    let Some(session) = &event.session else {
        return data("session.scored without a session");
    };
    if !b.score.is_finite() || !b.confidence.is_finite() {
        return data("session.scored with a non-finite score or confidence");
    }
    let (project, harness): (Option<String>, Option<String>) = conn
        .prepare_cached("SELECT project, harness FROM sessions WHERE session_key = ?1")?
        .query_row([session.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((None, Some(session.harness().to_owned())));
    conn.prepare_cached(
        "INSERT INTO session_scores (id, session_key, project, harness, score, memories_recalled,
                memories_used, novel_context_count, reasoning, created_at, confidence, continuity_reasoning,
                scorer, created_ms, content_events)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?9, ?12, ?13, ?14)",
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
        event.ts.0,
        b.content_events.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
    ])?;
    for (memory, relevance) in &b.relevance {
        let relevance = finite_or(*relevance, 0.0);
        let before = crate::domain::memory::apply::usage_contribution(conn, session, memory)?;
        conn.prepare_cached(
            "UPDATE session_memories SET relevance_score = ?3 WHERE session_key = ?1 AND memory_id = ?2",
        )?
        .execute(params![session.as_str(), memory.as_str(), relevance])?;
        if let Some((label, old)) = before {
            crate::domain::memory::apply::change_usage(
                conn,
                memory.as_str(),
                (label, old),
                (label, Some(f64::from(relevance))),
            )?;
        }
    }
    for (memory, label) in &b.labels {
        let label = finite_or(*label, 0.0);
        let before = crate::domain::memory::apply::usage_contribution(conn, session, memory)?;
        conn.prepare_cached("UPDATE session_memories SET label = ?3 WHERE session_key = ?1 AND memory_id = ?2")?
            .execute(params![session.as_str(), memory.as_str(), label])?;
        if let Some((old, relevance)) = before {
            crate::domain::memory::apply::change_usage(
                conn,
                memory.as_str(),
                (old, relevance),
                (Some(f64::from(label)), relevance),
            )?;
        }
    }
    crate::domain::env::stats::on_session_scored(conn, event, b)?;
    Ok(())
}

/// `comparison.recorded`.
pub(crate) fn comparison(conn: &Connection, event: &Event, b: &ComparisonRecorded) -> Step<()> {
    let Some(session) = &event.session else {
        return data("comparison.recorded without a session");
    };
    let ids = |v: &[MemoryId]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
    let id = if b.comparison_id.is_empty() { event.id.as_str() } else { b.comparison_id.as_str() };
    conn.prepare_cached(
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

/// `training.run`.
pub(crate) fn training_run(conn: &Connection, event: &Event, b: &TrainingRun) -> Step<()> {
    let id = if b.run_id.is_empty() { event.id.as_str() } else { b.run_id.as_str() };
    let (failures, drifts): (i64, i64) = conn
        .prepare_cached(
            "SELECT (SELECT COUNT(*) FROM predictor_training_log WHERE gates_passed = 0),
                    (SELECT COUNT(*) FROM drift_resets)",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let c = &b.canary;
    conn.prepare_cached(
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

/// `model.promoted`.
pub(crate) fn promoted(conn: &Connection, event: &Event, b: &ModelPromoted) -> Step<()> {
    let ts = event.ts;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO models (model_version, checkpoint, run_id, promoted_at, promoted_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![b.model_version as i64, b.checkpoint, b.run_id, ts.to_rfc3339(), ts.0])?;
    conn.prepare_cached("UPDATE predictor_training_log SET promoted = 1 WHERE id = ?1")?.execute([&b.run_id])?;

    Ok(())
}

/// `drift.reset`.
pub(crate) fn drift_reset(conn: &Connection, event: &Event, b: &DriftReset) -> Step<()> {
    let ts = event.ts;
    conn.prepare_cached(
        "INSERT INTO drift_resets (event_id, success_rate, window, created_at, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![event.id.as_str(), b.success_rate, b.window, ts.to_rfc3339(), ts.0])?;

    Ok(())
}
