//! Training lists from a database with Signet's tables: a Signet
//! `memories.db` or an Engram projection (which uses the same names).
//!
//! Reads `session_scores`, `session_memories`, `memories` and `embeddings`
//! (reference §9, §12), read-only; optional columns are used when present
//! (Signet's graph columns and agent feedback; Engram's `label`,
//! `baseline_rank` and the `rankings` table).
//!
//! # Honest lists
//!
//! Each qualifying session (scorer confidence ≥ `min_confidence`, newest
//! first, one list per session) becomes one list whose features are exactly
//! what Signet's daemon would have sent at the session's start, so training
//! and serving see the same inputs:
//!
//! * **Query.** The mean of the embeddings of the session's top 10 candidates
//!   *in baseline order* — what the daemon sends as `context_embedding` at
//!   serving time, fixed before anything was injected or used. Never the mean
//!   of the injected memories (the peer's label leak: the query then points at
//!   the answer). For an Engram projection, the text of the session's first
//!   served ranking (the real session-start or prompt query) as well.
//! * **Time.** The session's start (its first candidate row), not the time it
//!   was scored; ages are `start − created` (never negative).
//! * **Access count** as of the session: today's count minus the injections
//!   recorded since the session began (the peer reads today's count, which
//!   includes the session's own injection).
//! * **Superseded** is 0, as at serving time (deleted memories are never
//!   candidates); the peer sets it from `is_deleted`, which is also what makes
//!   its label −0.3: a feature that is the label.
//!
//! Labels: an Engram outcome label (`session_memories.label`) when present;
//! otherwise Signet's rule without its leak: deleted −0.3; injected →
//! relevance (or the session score), ±0.1 for FTS hits / a poor session, and
//! Signet's agent-feedback blend (`0.7·agent + 0.2·min(1, 0.3·fts) + 0.1·base`)
//! when an agent rated it; not injected → 0.6 for two FTS hits or more, 0.3 for
//! one, +0.1 with novel context. The peer's "+0.05 when accessed more than 10
//! times" is dropped: that count is read after the fact and is also a feature.
//! Each list is weighted by the scorer's confidence.

use std::collections::BTreeSet;
use std::path::Path;

use predictor::model::{Model, OwnedCandidate, OwnedQuery};
use predictor::train::Sample;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use shared::base::time::Ts;

use crate::error::{Error, Result};
use crate::signet::{FeatureRow, List, SignetInputs};

/// Candidates of a session used for the query embedding.
const QUERY_TOP: usize = 10;

/// One candidate row as stored.
#[derive(Clone, Debug, Default)]
struct Row {
    memory_id: String,
    was_injected: bool,
    relevance: Option<f64>,
    fts_hits: i64,
    source: String,
    rank: i64,
    baseline_rank: Option<i64>,
    created_at: Option<String>,
    importance: f64,
    memory_created: Option<String>,
    access_count: i64,
    is_deleted: bool,
    content: String,
    vector: Option<Vec<u8>>,
    entity_slot: Option<f64>,
    aspect_slot: Option<f64>,
    is_constraint: bool,
    structural_density: Option<f64>,
    label: Option<f64>,
    agent_relevance: Option<f64>,
}

/// One qualifying session.
#[derive(Clone, Debug)]
struct Session {
    key: String,
    score: f64,
    confidence: f64,
    novel: i64,
    created_at: String,
}

/// The lists read from a database.
#[derive(Debug)]
pub struct DbLists {
    /// One list per qualifying session that has candidates, newest first.
    pub samples: Vec<Sample>,
    /// The same lists as Signet's `score` would receive them (to score them
    /// with Signet's weights too).
    pub inputs: Vec<SignetInputs>,
    /// `session_scores` rows below the confidence threshold.
    pub skipped: u64,
}

fn columns(conn: &Connection, table: &str) -> BTreeSet<String> {
    let Ok(mut stmt) = conn.prepare(&format!("PRAGMA table_info({table})")) else { return BTreeSet::new() };
    stmt.query_map([], |r| r.get::<_, String>(1))
        .map(|rows| rows.filter_map(std::result::Result::ok).collect())
        .unwrap_or_default()
}

fn ms(text: &str) -> Option<i64> {
    Ts::parse(text).map(Ts::millis)
}

/// Opens `path` read-only and checks it has the tables training needs.
pub fn open(path: &Path) -> Result<Connection> {
    if !path.exists() {
        return Err(Error::params("db_path", format!("{} does not exist", path.display())));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| Error::db(path, "open read-only", e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(|e| Error::db(path, "set busy timeout", e))?;
    for table in ["session_scores", "session_memories", "memories"] {
        if columns(&conn, table).is_empty() {
            return Err(Error::params(
                "db_path",
                format!("{} has no {table} table: not a Signet memories.db or an Engram projection", path.display()),
            ));
        }
    }
    Ok(conn)
}

fn col(set: &BTreeSet<String>, name: &str, expr: &str, fallback: &str) -> String {
    if set.contains(name) { expr.to_owned() } else { fallback.to_owned() }
}

/// Reads the training lists (see the module documentation).
pub fn read_lists(
    path: &Path,
    model: &Model,
    native_dim: usize,
    limit: u64,
    min_confidence: f64,
    tz: &jiff::tz::TimeZone,
) -> Result<DbLists> {
    let conn = open(path)?;
    let err = |context: &str| {
        let context = context.to_owned();
        move |e| Error::db(path, context.clone(), e)
    };
    let skipped: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM session_scores
             WHERE confidence IS NOT NULL AND score IS NOT NULL AND confidence < ?1",
            [min_confidence],
            |r| r.get(0),
        )
        .map_err(err("count low-confidence sessions"))?;
    let sessions: Vec<Session> = {
        let mut stmt = conn
            .prepare(
                "SELECT session_key, score, confidence, COALESCE(novel_context_count, 0), created_at
                 FROM session_scores
                 WHERE confidence IS NOT NULL AND score IS NOT NULL AND confidence >= ?1
                 ORDER BY created_at DESC",
            )
            .map_err(err("prepare sessions"))?;
        let rows = stmt
            .query_map([min_confidence], |r| {
                Ok(Session {
                    key: r.get(0)?,
                    score: r.get(1)?,
                    confidence: r.get(2)?,
                    novel: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })
            .map_err(err("read sessions"))?;
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for row in rows {
            let s = row.map_err(err("read sessions"))?;
            // A session scored twice counts once, with its newest score.
            if seen.insert(s.key.clone()) {
                out.push(s);
            }
            if out.len() as u64 >= limit {
                break;
            }
        }
        out
    };

    let sm = columns(&conn, "session_memories");
    let mem = columns(&conn, "memories");
    let has_embeddings = !columns(&conn, "embeddings").is_empty();
    let sql = format!(
        "SELECT sm.memory_id, sm.was_injected, sm.relevance_score, COALESCE(sm.fts_hit_count, 0), sm.source, sm.rank,
                {baseline_rank}, sm.created_at, {importance}, m.created_at, {access}, {deleted}, {pinned},
                COALESCE(m.content, ''), {vector}, {entity}, {aspect}, {constraint}, {density}, {label}, {agent}
         FROM session_memories sm JOIN memories m ON sm.memory_id = m.id
         WHERE sm.session_key = ?1 ORDER BY sm.rank ASC, sm.memory_id",
        baseline_rank = col(&sm, "baseline_rank", "sm.baseline_rank", "NULL"),
        importance = col(&mem, "importance", "COALESCE(m.importance, 0.5)", "0.5"),
        access = col(&mem, "access_count", "COALESCE(m.access_count, 0)", "0"),
        deleted = col(&mem, "is_deleted", "COALESCE(m.is_deleted, 0)", "0"),
        pinned = col(&mem, "pinned", "COALESCE(m.pinned, 0)", "0"),
        vector = "NULL",
        entity = col(&sm, "entity_slot", "sm.entity_slot", "NULL"),
        aspect = col(&sm, "aspect_slot", "sm.aspect_slot", "NULL"),
        constraint = col(&sm, "is_constraint", "COALESCE(sm.is_constraint, 0)", "NULL"),
        density = col(&sm, "structural_density", "sm.structural_density", "NULL"),
        label = col(&sm, "label", "sm.label", "NULL"),
        agent = col(&sm, "agent_relevance_score", "sm.agent_relevance_score", "NULL"),
    );
    let mut cand_stmt = conn.prepare(&sql).map_err(err("prepare candidates"))?;
    let mut later_stmt = conn
        .prepare(
            "SELECT COUNT(*) FROM session_memories
             WHERE memory_id = ?1 AND was_injected = 1 AND created_at >= ?2",
        )
        .map_err(err("prepare access history"))?;
    let mut gap_stmt = conn
        .prepare("SELECT MAX(created_at) FROM session_scores WHERE created_at < ?1")
        .map_err(err("prepare session gap"))?;
    let has_rankings = !columns(&conn, "rankings").is_empty();
    let mut query_stmt = if has_rankings {
        Some(
            conn.prepare("SELECT query FROM rankings WHERE session_key = ?1 ORDER BY served_ms LIMIT 1")
                .map_err(err("prepare ranking queries"))?,
        )
    } else {
        None
    };

    let mut per_session: Vec<(&Session, Vec<Row>)> = Vec::with_capacity(sessions.len());
    for s in &sessions {
        let rows: Vec<Row> = cand_stmt
            .query_map([&s.key], |r| {
                let constraint: Option<i64> = r.get(17)?;
                let pinned: i64 = r.get(12)?;
                Ok(Row {
                    memory_id: r.get(0)?,
                    was_injected: r.get::<_, i64>(1)? != 0,
                    relevance: r.get(2)?,
                    fts_hits: r.get(3)?,
                    source: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                    rank: r.get::<_, Option<i64>>(5)?.unwrap_or(0),
                    baseline_rank: r.get(6)?,
                    created_at: r.get(7)?,
                    importance: r.get(8)?,
                    memory_created: r.get(9)?,
                    access_count: r.get(10)?,
                    is_deleted: r.get::<_, i64>(11)? != 0,
                    content: r.get(13)?,
                    vector: r.get(14)?,
                    entity_slot: r.get(15)?,
                    aspect_slot: r.get(16)?,
                    // Engram has no constraints: pinning is the counterpart.
                    is_constraint: constraint.map_or(pinned != 0, |c| c != 0),
                    structural_density: r.get(18)?,
                    label: r.get(19)?,
                    agent_relevance: r.get(20)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<Row>>>())
            .map_err(err("read candidates"))?;
        if !rows.is_empty() {
            per_session.push((s, rows));
        }
    }
    // One pass over the embeddings: Signet indexes them by content hash only,
    // and a lookup per candidate would scan the table (and its blobs) each time.
    if has_embeddings {
        let wanted: BTreeSet<&str> =
            per_session.iter().flat_map(|(_, rows)| rows.iter().map(|r| r.memory_id.as_str())).collect();
        let mut vectors: std::collections::HashMap<String, Vec<u8>> = std::collections::HashMap::new();
        let mut stmt = conn
            .prepare("SELECT source_id, vector FROM embeddings WHERE source_type = 'memory'")
            .map_err(err("prepare embeddings"))?;
        let mut q = stmt.query([]).map_err(err("read embeddings"))?;
        while let Some(r) = q.next().map_err(err("read embeddings"))? {
            let id: String = r.get(0).map_err(err("read embeddings"))?;
            if wanted.contains(id.as_str()) && !vectors.contains_key(&id) {
                vectors.insert(id, r.get(1).map_err(err("read embeddings"))?);
            }
        }
        for (_, rows) in &mut per_session {
            for r in rows.iter_mut() {
                r.vector = vectors.get(&r.memory_id).cloned();
            }
        }
    }

    let mut samples = Vec::new();
    let mut all_inputs = Vec::new();
    for (s, rows) in per_session {
        // The session began with its first served candidate (FTS-only rows come later).
        let start_text = rows
            .iter()
            .filter(|r| r.source != "fts_only")
            .filter_map(|r| r.created_at.clone())
            .min()
            .or_else(|| rows.iter().filter_map(|r| r.created_at.clone()).min())
            .unwrap_or_else(|| s.created_at.clone());
        let start_ms = ms(&start_text).or_else(|| ms(&s.created_at)).unwrap_or(0);
        let previous: Option<String> =
            gap_stmt.query_row([&start_text], |r| r.get(0)).optional().map_err(err("read session gap"))?.flatten();
        let gap_days = previous.as_deref().and_then(ms).map_or(0.0, |p| (start_ms - p).max(0) as f64 / 86_400_000.0);
        let parts = Ts(start_ms).local_parts(tz);
        let dow_sunday0 = f64::from((parts.weekday + 1) % 7);

        let mut features = Vec::with_capacity(rows.len());
        let mut embeddings = Vec::with_capacity(rows.len());
        let mut texts = Vec::with_capacity(rows.len());
        let mut labels = Vec::with_capacity(rows.len());
        for r in &rows {
            let vector = r.vector.as_deref().map(shared::domain::rank::pool::blob_to_vector);
            let later: i64 = later_stmt
                .query_row(params![r.memory_id, start_text], |q| q.get(0))
                .map_err(err("read access history"))?;
            let age_days =
                r.memory_created.as_deref().and_then(ms).map_or(0.0, |c| (start_ms - c).max(0) as f64 / 86_400_000.0);
            features.push(Some(
                FeatureRow {
                    age_days,
                    importance: r.importance,
                    access_count: (r.access_count - later).max(0) as f64,
                    hour: f64::from(parts.hour),
                    dow_sunday0,
                    month0: f64::from(parts.month0),
                    gap_days,
                    is_embedded: r.vector.is_some(),
                    superseded: false,
                    entity_slot: r.entity_slot.unwrap_or(0.0),
                    aspect_slot: r.aspect_slot.unwrap_or(0.0),
                    is_constraint: r.is_constraint,
                    structural_density: r.structural_density.unwrap_or(0.0),
                    ka_traversal: r.source == "ka_traversal",
                }
                .values(),
            ));
            let usable = vector.as_ref().is_some_and(|v| v.len() == native_dim && native_dim > 0);
            // Signet's rule: the embedding when there is one, the text otherwise.
            texts.push((!usable).then(|| r.content.clone()));
            embeddings.push(vector.filter(|_| usable));
            labels.push(label(r, s) as f32);
        }
        let mut by_baseline: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].source != "fts_only").collect();
        by_baseline.sort_by_key(|&i| (rows[i].baseline_rank.unwrap_or(rows[i].rank), i));
        let top: Vec<&Vec<f32>> = by_baseline.iter().filter_map(|&i| embeddings[i].as_ref()).take(QUERY_TOP).collect();
        let context_embedding = (!top.is_empty()).then(|| {
            let mut mean = vec![0.0f32; native_dim];
            for v in &top {
                for (m, x) in mean.iter_mut().zip(v.iter()) {
                    *m += x;
                }
            }
            mean.iter_mut().for_each(|m| *m /= top.len() as f32);
            mean
        });
        let context_text = match query_stmt.as_mut() {
            Some(stmt) => {
                stmt.query_row([&s.key], |r| r.get::<_, String>(0)).optional().map_err(err("read ranking query"))?
            }
            None => None,
        };
        let n = rows.len();
        let inputs = SignetInputs { context_embedding, context_text, n, embeddings, texts, features, project_slot: 0 };
        all_inputs.push(inputs.clone());
        let list = List::build(model, native_dim, inputs, Ts(start_ms), tz)?;
        let query = list.query();
        let candidates = list.candidates();
        samples.push(Sample {
            query: OwnedQuery {
                tokens: query.tokens.to_vec(),
                embedding: query.embedding.map(<[f32]>::to_vec),
                session: list.session().clone(),
            },
            candidates: candidates
                .iter()
                .map(|c| OwnedCandidate {
                    tokens: c.tokens.to_vec(),
                    embedding: c.embedding.map(<[f32]>::to_vec),
                    signals: c.signals,
                })
                .collect(),
            labels,
            weight: s.confidence.clamp(0.0, 1.0) as f32,
        });
    }
    Ok(DbLists { samples, inputs: all_inputs, skipped: skipped.max(0) as u64 })
}

/// The label of one candidate (see the module documentation).
fn label(r: &Row, s: &Session) -> f64 {
    if let Some(l) = r.label.filter(|l| l.is_finite()) {
        return l.clamp(-1.0, 1.0);
    }
    if r.is_deleted {
        return -0.3;
    }
    let fts = r.fts_hits;
    if r.was_injected {
        let base =
            r.relevance.filter(|v| v.is_finite()).unwrap_or(if s.score >= 0.5 { s.score } else { s.score * 0.5 });
        let base = if fts > 0 {
            (base + 0.1).min(1.0)
        } else if s.score < 0.3 {
            (base - 0.1).max(0.0)
        } else {
            base
        };
        return match r.agent_relevance.filter(|v| v.is_finite()) {
            Some(agent) => (agent * 0.7 + (0.3 * fts as f64).min(1.0) * 0.2 + base * 0.1).clamp(-1.0, 1.0),
            None => base,
        };
    }
    let mut l = match fts {
        f if f >= 2 => 0.6,
        1 => 0.3,
        _ => 0.0,
    };
    if s.novel > 0 && fts > 0 {
        l = (l + 0.1f64).min(1.0);
    }
    l
}
