//! How serving events change the projection: `rankings`, their candidates,
//! the per-session `session_memories` rows (Signet's names) and FTS hits.

use rusqlite::{Connection, OptionalExtension, params};

use crate::storage::event::{Event, FtsHits, RankingServed, source};
use crate::storage::store::{Step, data, finite_or};

/// `ranking.served`.
pub(crate) fn served(conn: &Connection, event: &Event, b: &RankingServed) -> Step<()> {
    if b.ranking_id.is_empty() {
        return data("ranking.served without a ranking id");
    }
    let injected = b.candidates.iter().filter(|c| c.injected).count() as i64;
    let at = event.ts.to_rfc3339();
    let session = event.session.as_ref();
    conn.prepare_cached(
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
        conn.prepare_cached(
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
            conn.prepare_cached(
                "UPDATE memories SET access_count = access_count + 1, last_accessed = ?2 WHERE id = ?1",
            )?
            .execute(params![c.memory_id.as_str(), at])?;
        }
        if let Some(session) = session {
            if c.injected {
                // A first injection in this session adds a session to the memory's usage.
                let was: Option<bool> = conn
                    .prepare_cached(
                        "SELECT was_injected FROM session_memories WHERE session_key = ?1 AND memory_id = ?2",
                    )?
                    .query_row(params![session.as_str(), c.memory_id.as_str()], |r| r.get(0))
                    .optional()?;
                if was != Some(true) {
                    crate::domain::memory::apply::add_usage(conn, c.memory_id.as_str(), 1, 0.0)?;
                }
            }
            let signet_source =
                if explored.contains(&c.memory_id.as_str()) { source::EXPLORATION.to_owned() } else { sources };
            conn
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

/// `fts.hits`: Signet's trackFtsHits.
pub(crate) fn fts_hits(conn: &Connection, event: &Event, b: &FtsHits) -> Step<()> {
    let at = event.ts.to_rfc3339();
    let ids: Vec<&str> = b.memory_ids.iter().map(|m| m.as_str()).collect();
    conn.prepare_cached(
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
            conn.prepare_cached(
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
