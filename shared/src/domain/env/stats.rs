//! Match statistics, tag relevance and the pin decisions they drive (seed 000
//! "Database Schema", "Auto-Pin Algorithm", "Tag Relevance Filter"), derived
//! by the projection from the outcomes the log already holds.
//!
//! **What counts.** When a finished session is scored (`session.scored`),
//! each memory that was injected in it and has a label is evaluated once per
//! session (`engram_session_evals`), if the scorer's confidence reaches
//! [`MIN_CONFIDENCE`]: the memory *matched* when its label reaches
//! [`MATCH_LABEL`] (the trainer's "used"). Explicit feedback with a session
//! (`memory.feedback`) is evidence too, with relevance in place of the label.
//!
//! **Match statistics** (Engrammar's `update_match_stats`): a match adds one
//! to `memories.times_matched`, to `engram_repo_stats` for the session's
//! project and to `engram_tag_stats` for its tag set, then runs the auto-pin
//! algorithm ([`super::autopin::minimal_subset`], threshold 15): a qualifying
//! subset pins an unpinned memory with that subset as its tag prerequisite.
//!
//! **Tag relevance** (Engrammar's `update_tag_relevance`): each evaluation
//! moves the score of every tag of the session's environment,
//! `score ← clamp(score·(1 − 0.3) + raw·0.3·weight, −3, 3)` (weight 1 for the
//! trainer's labels, 2 for explicit feedback), and counts a positive or
//! negative evaluation. The raw score of a label is the label itself when the
//! memory was used (≥ 0.3), else `label − 0.5` (at least −1): shown and not
//! used is evidence against it in this environment. Afterwards the
//! tag-relevance rule may pin or (only an auto-pin) unpin it
//! ([`super::autopin::relevance_decision`]).
//!
//! All constants are the seeds' and live in code, never in the
//! configuration: the projection must give the same tables on every replay.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

use super::autopin::{self, PinDecision, TagRelevance};
use super::store::{parse_tags, tags_json};
use crate::base::ids::{MemoryId, SessionKey};
use crate::base::time::Ts;
use crate::storage::event::{Event, MemoryFeedback, SessionScored};

/// Smoothing of the tag relevance EMA.
pub const EMA_ALPHA: f64 = 0.3;
/// Tag relevance scores stay within ±this.
pub const SCORE_CLAMP: f64 = 3.0;
/// Weight of an evaluation from the trainer's labels.
pub const EVAL_WEIGHT: f64 = 1.0;
/// Weight of explicit feedback.
pub const FEEDBACK_WEIGHT: f64 = 2.0;
/// A label (or feedback relevance) from which an injected memory counts as
/// matched (the trainer's `USED_THRESHOLD`).
pub const MATCH_LABEL: f32 = 0.3;
/// Scorer confidence a session needs before its labels count.
pub const MIN_CONFIDENCE: f32 = 0.6;

/// The environment a session was detected in.
struct SessionEnv {
    project: String,
    tags: Vec<String>,
}

fn session_env(conn: &Connection, session: &SessionKey) -> rusqlite::Result<Option<SessionEnv>> {
    conn.prepare_cached("SELECT project, tags FROM session_env WHERE session_key = ?1")?
        .query_row([session.as_str()], |r| {
            Ok(SessionEnv { project: r.get(0)?, tags: parse_tags(&r.get::<_, String>(1)?) })
        })
        .optional()
}

/// The raw relevance of a label (see the module docs), in `[-1, 1]`.
pub fn raw_score(label: f32) -> f64 {
    let l = f64::from(label);
    if label >= MATCH_LABEL { l.min(1.0) } else { (l - 0.5).max(-1.0) }
}

/// Evaluates the injected, labelled memories of a scored session.
pub fn on_session_scored(conn: &Connection, event: &Event, b: &SessionScored) -> rusqlite::Result<()> {
    let Some(session) = &event.session else { return Ok(()) };
    // NaN confidence counts as too low.
    if b.confidence.partial_cmp(&MIN_CONFIDENCE).is_none_or(std::cmp::Ordering::is_lt) {
        return Ok(());
    }
    let env = session_env(conn, session)?;
    for (memory, label) in &b.labels {
        if !label.is_finite() {
            continue;
        }
        let injected: Option<bool> = conn
            .prepare_cached("SELECT was_injected FROM session_memories WHERE session_key = ?1 AND memory_id = ?2")?
            .query_row(params![session.as_str(), memory.as_str()], |r| r.get(0))
            .optional()?;
        if injected != Some(true) {
            continue;
        }
        evaluate(conn, memory, session, env.as_ref(), *label, Source::Labels, event.ts)?;
    }
    Ok(())
}

/// Explicit feedback given within a session.
pub fn on_feedback(conn: &Connection, event: &Event, b: &MemoryFeedback) -> rusqlite::Result<()> {
    let Some(session) = &event.session else { return Ok(()) };
    if !b.relevance.is_finite() {
        return Ok(());
    }
    let env = session_env(conn, session)?;
    evaluate(conn, &b.memory_id, session, env.as_ref(), b.relevance.clamp(0.0, 1.0), Source::Feedback, event.ts)
}

/// Where an evaluation comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The trainer's labels of a scored session: once per session.
    Labels,
    /// Explicit feedback: every time, at twice the weight.
    Feedback,
}

/// One evaluation of `memory` in `session`: match statistics once per
/// session, tag relevance at every evaluation, then the pin decisions.
fn evaluate(
    conn: &Connection,
    memory: &MemoryId,
    session: &SessionKey,
    env: Option<&SessionEnv>,
    label: f32,
    source: Source,
    ts: Ts,
) -> rusqlite::Result<()> {
    let live: Option<bool> = conn
        .prepare_cached("SELECT is_deleted = 0 AND deprecated = 0 FROM memories WHERE id = ?1")?
        .query_row([memory.as_str()], |r| r.get(0))
        .optional()?;
    if live != Some(true) {
        return Ok(());
    }
    let matched = label >= MATCH_LABEL;
    let raw = raw_score(label);
    let first = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO engram_session_evals (engram_id, session_key, matched, relevance)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![memory.as_str(), session.as_str(), matched, raw])?
        == 1;
    // A session scored again (or scored after feedback) never counts twice;
    // explicit feedback always moves the relevance.
    if !first && source == Source::Labels {
        return Ok(());
    }
    let weight = if source == Source::Feedback { FEEDBACK_WEIGHT } else { EVAL_WEIGHT };
    let at = ts.to_rfc3339();
    if first && matched {
        update_match_stats(conn, memory, env, &at)?;
    }
    if let Some(env) = env.filter(|e| !e.tags.is_empty()) {
        update_tag_relevance(conn, memory, &env.tags, raw, weight, &at)?;
    }
    pin_decisions(conn, memory)
}

/// Engrammar's `update_match_stats`, then the auto-pin check.
fn update_match_stats(
    conn: &Connection,
    memory: &MemoryId,
    env: Option<&SessionEnv>,
    at: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE memories SET times_matched = times_matched + 1, last_matched = ?2 WHERE id = ?1")?
        .execute(params![memory.as_str(), at])?;
    let Some(env) = env else { return Ok(()) };
    conn.prepare_cached(
        "INSERT INTO engram_repo_stats (engram_id, repo, times_matched, last_matched) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT(engram_id, repo) DO UPDATE SET times_matched = times_matched + 1, last_matched = excluded.last_matched",
    )?
    .execute(params![memory.as_str(), env.project, at])?;
    if env.tags.is_empty() {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO engram_tag_stats (engram_id, tag_set, times_matched, last_matched) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT(engram_id, tag_set) DO UPDATE SET times_matched = times_matched + 1,
            last_matched = excluded.last_matched",
    )?
    .execute(params![memory.as_str(), tags_json(env.tags.iter()), at])?;
    let pinned: bool =
        conn.prepare_cached("SELECT pinned FROM memories WHERE id = ?1")?.query_row([memory.as_str()], |r| r.get(0))?;
    if pinned {
        return Ok(());
    }
    let sets: Vec<(Vec<String>, i64)> = conn
        .prepare_cached("SELECT tag_set, times_matched FROM engram_tag_stats WHERE engram_id = ?1")?
        .query_map([memory.as_str()], |r| Ok((parse_tags(&r.get::<_, String>(0)?), r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    if let Some(tags) = autopin::minimal_subset(&sets, autopin::THRESHOLD) {
        auto_pin(conn, memory, &tags)?;
    }
    Ok(())
}

/// Engrammar's `update_tag_relevance` for the tags of one environment.
fn update_tag_relevance(
    conn: &Connection,
    memory: &MemoryId,
    tags: &[String],
    raw: f64,
    weight: f64,
    at: &str,
) -> rusqlite::Result<()> {
    for tag in tags {
        let old: Option<f64> = conn
            .prepare_cached("SELECT score FROM engram_tag_relevance WHERE engram_id = ?1 AND tag = ?2")?
            .query_row(params![memory.as_str(), tag], |r| r.get(0))
            .optional()?;
        let score =
            (old.unwrap_or(0.0) * (1.0 - EMA_ALPHA) + raw * EMA_ALPHA * weight).clamp(-SCORE_CLAMP, SCORE_CLAMP);
        conn.prepare_cached(
            "INSERT INTO engram_tag_relevance (engram_id, tag, score, positive_evals, negative_evals, last_evaluated)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(engram_id, tag) DO UPDATE SET score = excluded.score,
                positive_evals = positive_evals + excluded.positive_evals,
                negative_evals = negative_evals + excluded.negative_evals, last_evaluated = excluded.last_evaluated",
        )?
        .execute(params![memory.as_str(), tag, score, i64::from(raw > 0.0), i64::from(raw < 0.0), at])?;
    }
    Ok(())
}

/// The tag-relevance pin rule over all of a memory's tags.
fn pin_decisions(conn: &Connection, memory: &MemoryId) -> rusqlite::Result<()> {
    let rows: Vec<TagRelevance> = conn
        .prepare_cached(
            "SELECT tag, score, positive_evals + negative_evals FROM engram_tag_relevance WHERE engram_id = ?1
             ORDER BY tag",
        )?
        .query_map([memory.as_str()], |r| Ok(TagRelevance { tag: r.get(0)?, score: r.get(1)?, evals: r.get(2)? }))?
        .collect::<rusqlite::Result<_>>()?;
    let (pinned, auto): (bool, bool) = conn
        .prepare_cached("SELECT pinned, auto_pinned FROM memories WHERE id = ?1")?
        .query_row([memory.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
    match autopin::relevance_decision(&rows, pinned, auto) {
        Some(PinDecision::Pin(tags)) => auto_pin(conn, memory, &tags),
        Some(PinDecision::Unpin) => {
            conn.prepare_cached("UPDATE memories SET pinned = 0, auto_pinned = 0 WHERE id = ?1")?
                .execute([memory.as_str()])?;
            Ok(())
        }
        None => Ok(()),
    }
}

/// Pins `memory` as an auto-pin with `tags` as its tag prerequisite (other
/// prerequisites kept; no tags: none required).
fn auto_pin(conn: &Connection, memory: &MemoryId, tags: &[String]) -> rusqlite::Result<()> {
    let old: Option<String> = conn
        .prepare_cached("SELECT prerequisites FROM memories WHERE id = ?1")?
        .query_row([memory.as_str()], |r| r.get(0))?;
    let mut prereq: Map<String, Value> = old.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default();
    if tags.is_empty() {
        prereq.remove("tags");
    } else {
        prereq.insert("tags".into(), Value::from(tags.to_vec()));
    }
    let prereq = (!prereq.is_empty()).then(|| Value::Object(prereq).to_string());
    conn.prepare_cached("UPDATE memories SET pinned = 1, auto_pinned = 1, prerequisites = ?2 WHERE id = ?1")?
        .execute(params![memory.as_str(), prereq])?;
    Ok(())
}

/// A memory's relevance in an environment (Engrammar's
/// `get_tag_relevance_with_evidence`): the sum of its scores for `tags`
/// divided by the number of `tags` (a tag never evaluated counts 0), and the
/// evaluations behind them, counted in sessions: the most any one of `tags`
/// has. Engrammar sums the tags' counts, which it can since it keys relevance
/// by a memory's few content tags; an environment here has ten or more tags,
/// and one session's evaluation moves each of them, so a sum would make one
/// session (one misjudged "not used", say) the seed's three evaluations of
/// evidence and hide a project's own lesson from every later session.
pub fn relevance_in(rows: &BTreeMap<String, (f64, i64)>, tags: &[String]) -> (f64, i64) {
    if tags.is_empty() {
        return (0.0, 0);
    }
    let (sum, evals) =
        tags.iter().filter_map(|t| rows.get(t)).fold((0.0, 0), |(s, e), (score, n)| (s + score, e.max(*n)));
    (sum / tags.len() as f64, evals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(tags: &[&str], score: f64, evals: i64) -> BTreeMap<String, (f64, i64)> {
        tags.iter().map(|t| ((*t).to_owned(), (score, evals))).collect()
    }

    fn strings(tags: &[&str]) -> Vec<String> {
        tags.iter().map(|t| (*t).to_owned()).collect()
    }

    /// node/monorepo-subfolder: a lesson shown once in a session with eleven
    /// tags and judged unused was filtered from every later session of its
    /// own project, as if three sessions had judged it.
    #[test]
    fn one_session_is_one_evaluation_whatever_its_tags() {
        let tags = ["eslint", "frontend", "github", "monorepo", "nodejs", "pnpm", "react", "testing", "vite"];
        let (avg, evals) = relevance_in(&rows(&tags, -0.12, 1), &strings(&tags));
        assert!((avg + 0.12).abs() < 1e-9);
        assert_eq!(evals, 1, "one session");
        assert!(evals < crate::domain::env::rank::MIN_EVALS_FOR_FILTER);
        // Three sessions of the same environment are the seed's evidence.
        let (_, evals) = relevance_in(&rows(&tags, -0.3, 3), &strings(&tags));
        assert_eq!(evals, crate::domain::env::rank::MIN_EVALS_FOR_FILTER);
        // A tag never evaluated counts 0 in the average, and nothing in the evidence.
        let (avg, evals) = relevance_in(&rows(&["rust"], -0.4, 2), &strings(&["rust", "cli"]));
        assert!((avg + 0.2).abs() < 1e-9 && evals == 2);
        assert_eq!(relevance_in(&rows(&["rust"], -0.4, 2), &[]), (0.0, 0));
    }
}
