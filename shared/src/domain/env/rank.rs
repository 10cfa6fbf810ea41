//! The environment's part in a ranking (seed 000 "Search Architecture"
//! steps 3.1 and 3.5, seed 001 "Prerequisites"), applied to a pool before
//! either ranker scores it.
//!
//! - **Structural prerequisites** hard-gate ([`super::prereq`]): a memory
//!   whose `os`, `repos`, `paths` or `mcp_servers` the environment does not
//!   meet is excluded from injection.
//! - **Tag relevance filter and boost**: over the environment's tags, the
//!   memory's average EMA score (a tag never evaluated counts 0) and the
//!   evaluations behind it, in sessions (the most any one tag of the
//!   environment has: one session evaluates every tag it had, and one session
//!   is one piece of evidence); with at least 3 evaluations and an average below
//!   −0.1 it is excluded; otherwise the baseline adds `avg / 3 × 0.01` (the
//!   seed's `RELEVANCE_WEIGHT`), and the predictor sees `avg / 3`.
//! - **Tag affinity** (0.3× … 1.7×): the seed compares tag embeddings; we
//!   have no embedding model, so a tag is represented by the sessions it
//!   occurred in, and the similarity of two tags is the cosine of those
//!   incidence vectors, `n(a, b) / √(n(a)·n(b))` (`env_tags`,
//!   `env_tag_pairs`; 1 for a tag with itself). A memory's tags (its tag
//!   prerequisite, else the tags every session it was learned in shared) fit
//!   the environment by the mean, over its tags, of the best similarity to
//!   an environment tag. The seed's calibration points map it linearly:
//!   similarity 0.65 → 0.3×, 0.80 → 1.0×, 0.95 → 1.7× (clamped). A memory
//!   or an environment without tags is neutral (1.0×). React and frontend,
//!   which occur together, come out close; React and Rust, never together,
//!   at 0; npm and pnpm too.
//! - **Stack match**: a memory learned in two or more projects whose shared
//!   tags are all in the environment applies to this stack: it joins the
//!   pool at session start (source `stack`) and counts like the session's
//!   own project.
//! - **Pins with a tag prerequisite** pin only where the environment has
//!   those tags (seed 000: the pinned memory "shows in ALL frontend
//!   projects"); elsewhere it is an ordinary candidate.

use rusqlite::{Connection, params};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::stats::relevance_in;
use super::store::parse_tags;
use crate::base::error::{Result, SqlContext};
use crate::domain::rank::Pool;
use crate::storage::event::EnvDetected;
use crate::storage::event::Prerequisites;

/// Tag relevance: evaluations needed before filtering (seed 000).
pub const MIN_EVALS_FOR_FILTER: i64 = 3;
/// Tag relevance: filter below this average (seed 000).
pub const NEGATIVE_SCORE_THRESHOLD: f64 = -0.1;
/// Tag relevance: weight of the boost on the score (seed 000).
pub const RELEVANCE_WEIGHT: f32 = 0.01;
/// Tag affinity bounds (seed 000).
pub const AFFINITY_MIN: f32 = 0.3;
/// See [`AFFINITY_MIN`].
pub const AFFINITY_MAX: f32 = 1.7;

/// Why a candidate is not injected, when the environment excludes it.
pub const EXCLUDED_PREREQUISITES: &str = "its prerequisites (os, repository, path or MCP servers) are not met here";
/// See [`EXCLUDED_PREREQUISITES`].
pub const EXCLUDED_RELEVANCE: &str = "shown in environments like this one before without being used (tag relevance)";

/// The affinity multiplier of a tag similarity (see the module docs).
pub fn multiplier(similarity: f64) -> f32 {
    let m = 0.3 + (similarity - 0.65) * (1.4 / 0.30);
    (m as f32).clamp(AFFINITY_MIN, AFFINITY_MAX)
}

/// Session counts of tags and pairs of tags, for tag similarity.
#[derive(Clone, Debug, Default)]
pub struct Cooccurrence {
    counts: HashMap<String, i64>,
    pairs: HashMap<(String, String), i64>,
}

impl Cooccurrence {
    /// Reads the counts of `tags` and of their pairs.
    pub fn load(conn: &Connection, tags: &BTreeSet<&str>) -> rusqlite::Result<Cooccurrence> {
        let list = serde_json::to_string(&tags.iter().collect::<Vec<_>>()).unwrap_or_else(|_| "[]".into());
        let counts = conn
            .prepare_cached(
                "SELECT t.tag, t.sessions FROM json_each(?1) AS j CROSS JOIN env_tags AS t ON t.tag = j.value",
            )?
            .query_map([&list], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let pairs = conn
            .prepare_cached(
                "SELECT p.a, p.b, p.sessions FROM json_each(?1) AS j CROSS JOIN env_tag_pairs AS p ON p.a = j.value
                 WHERE p.b IN (SELECT value FROM json_each(?1))",
            )?
            .query_map([&list], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Cooccurrence { counts, pairs })
    }

    /// Cosine of the two tags' session incidence vectors (1 for a tag with itself).
    pub fn similarity(&self, a: &str, b: &str) -> f64 {
        if a == b {
            return 1.0;
        }
        let key = if a < b { (a.to_owned(), b.to_owned()) } else { (b.to_owned(), a.to_owned()) };
        let both = self.pairs.get(&key).copied().unwrap_or(0);
        let (na, nb) = (self.counts.get(a).copied().unwrap_or(0), self.counts.get(b).copied().unwrap_or(0));
        if both <= 0 || na <= 0 || nb <= 0 { 0.0 } else { both as f64 / ((na as f64) * (nb as f64)).sqrt() }
    }

    /// How well `memory` tags fit `env` tags: the mean over the memory's tags
    /// of the best similarity to an environment tag; `None` when either is empty.
    pub fn fit(&self, env: &[String], memory: &[String]) -> Option<f64> {
        if env.is_empty() || memory.is_empty() {
            return None;
        }
        let total: f64 = memory.iter().map(|t| env.iter().map(|e| self.similarity(t, e)).fold(0.0, f64::max)).sum();
        Some(total / memory.len() as f64)
    }
}

/// Where tag relevance is read from.
#[derive(Clone, Copy, Debug)]
pub enum Relevance<'a> {
    /// As it is now (serving).
    Current,
    /// Rebuilt from the sessions evaluated before `before_ms`, other than
    /// `session` (training lists: a list must not see its own outcome).
    AsOf {
        /// Only sessions whose last event is before this.
        before_ms: i64,
        /// Never this session.
        session: Option<&'a str>,
    },
}

/// Applies the environment to a pool (see the module docs): exclusions, pins
/// that apply here, and the signals `tag_affinity`, `tag_relevance`,
/// `stack_match`.
pub fn apply(
    store: &crate::storage::store::Store,
    pool: &mut Pool,
    env: &EnvDetected,
    relevance: Relevance<'_>,
) -> Result<()> {
    if pool.memories.is_empty() {
        return Ok(());
    }
    let conn = store.conn();
    let home = super::home_dir();
    let prereqs: Vec<Prerequisites> =
        pool.memories.iter().map(|m| Prerequisites::parse(m.prerequisites.as_deref())).collect();
    let own_tags: Vec<Vec<String>> = pool
        .memories
        .iter()
        .zip(&prereqs)
        .map(|(m, p)| if p.tags.is_empty() { m.env_tags.clone() } else { p.tags.clone() })
        .collect();
    let mut all: BTreeSet<&str> = env.tags.iter().map(String::as_str).collect();
    all.extend(own_tags.iter().flat_map(|t| t.iter().map(String::as_str)));
    let co = if own_tags.iter().any(|t| !t.is_empty()) && !env.tags.is_empty() {
        Cooccurrence::load(conn, &all).sql("read tag co-occurrence")?
    } else {
        Cooccurrence::default()
    };
    let ids: Vec<&str> = pool.memories.iter().map(|m| m.id.as_str()).collect();
    let scores = match relevance {
        Relevance::Current => current_relevance(conn, &ids).sql("read tag relevance")?,
        Relevance::AsOf { before_ms, session } => {
            relevance_as_of(conn, &ids, before_ms, session).sql("rebuild tag relevance")?
        }
    };
    let empty = BTreeMap::new();
    for ((m, p), tags) in pool.memories.iter_mut().zip(&prereqs).zip(&own_tags) {
        if !p.structural_ok(env, home.as_deref()) {
            m.excluded = Some(EXCLUDED_PREREQUISITES);
        }
        if m.pinned && !p.tags_met(&env.tags) {
            m.pinned = false;
            m.signals.pinned = false;
        }
        let (avg, evals) = relevance_in(scores.get(m.id.as_str()).unwrap_or(&empty), &env.tags);
        if evals >= MIN_EVALS_FOR_FILTER && avg < NEGATIVE_SCORE_THRESHOLD && m.excluded.is_none() {
            m.excluded = Some(EXCLUDED_RELEVANCE);
        }
        m.signals.tag_relevance = ((avg / 3.0) as f32).clamp(-1.0, 1.0);
        m.signals.tag_affinity = co.fit(&env.tags, tags).map_or(0.0, |s| multiplier(s) - 1.0);
        m.signals.stack_match = m.env_projects >= 2
            && !m.env_tags.is_empty()
            && m.env_tags.iter().all(|t| env.tags.binary_search(t).is_ok())
            && m.project.as_deref() != Some(env.project.as_str());
    }
    Ok(())
}

type Scores = HashMap<String, BTreeMap<String, (f64, i64)>>;

fn current_relevance(conn: &Connection, ids: &[&str]) -> rusqlite::Result<Scores> {
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut out: Scores = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT r.engram_id, r.tag, r.score, r.positive_evals + r.negative_evals
         FROM json_each(?1) AS j CROSS JOIN engram_tag_relevance AS r ON r.engram_id = j.value",
    )?;
    let rows =
        stmt.query_map([list], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get(3)?)))?;
    for row in rows {
        let (id, tag, score, evals) = row?;
        out.entry(id).or_default().insert(tag, (score, evals));
    }
    Ok(out)
}

/// Tag relevance replayed from the per-session evaluations (weight 1, the
/// sessions in the order they ended) of sessions before `before_ms`.
fn relevance_as_of(conn: &Connection, ids: &[&str], before_ms: i64, session: Option<&str>) -> rusqlite::Result<Scores> {
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut stmt = conn.prepare_cached(
        "SELECT v.engram_id, v.relevance, e.tags FROM json_each(?1) AS j
         CROSS JOIN engram_session_evals AS v ON v.engram_id = j.value
         JOIN session_env AS e ON e.session_key = v.session_key
         JOIN sessions AS s ON s.session_key = v.session_key
         WHERE v.relevance IS NOT NULL AND s.last_event_ms < ?2 AND v.session_key != ?3
         ORDER BY v.engram_id, s.last_event_ms, v.session_key",
    )?;
    let rows = stmt.query_map(params![list, before_ms, session.unwrap_or("")], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?, r.get::<_, String>(2)?))
    })?;
    let mut out: Scores = HashMap::new();
    for row in rows {
        let (id, raw, tags) = row?;
        let scores = out.entry(id).or_default();
        for tag in parse_tags(&tags) {
            let (score, evals) = scores.entry(tag).or_insert((0.0, 0));
            *score = (*score * (1.0 - super::stats::EMA_ALPHA) + raw * super::stats::EMA_ALPHA)
                .clamp(-super::stats::SCORE_CLAMP, super::stats::SCORE_CLAMP);
            *evals += i64::from(raw != 0.0);
        }
    }
    Ok(out)
}

/// The memories a session in `env` should see at its start because they
/// were learned in two or more projects whose shared tags `env` has (not
/// those of `env`'s own project), best effective score first: rowids.
pub fn stack_candidates(conn: &Connection, env: &EnvDetected, limit: usize) -> rusqlite::Result<Vec<i64>> {
    if env.tags.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, env_tags FROM memories
         WHERE env_projects >= 2 AND is_deleted = 0 AND deprecated = 0 AND (project IS NULL OR project != ?1)
         ORDER BY decay_key DESC LIMIT 500",
    )?;
    let rows = stmt.query_map([&env.project], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (rowid, tags) = row?;
        let tags = parse_tags(&tags);
        if !tags.is_empty() && tags.iter().all(|t| env.tags.binary_search(t).is_ok()) {
            out.push(rowid);
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_s_calibration_points() {
        assert!((multiplier(0.65) - 0.3).abs() < 1e-6);
        assert!((multiplier(0.80) - 1.0).abs() < 1e-6);
        assert!((multiplier(0.95) - 1.7).abs() < 1e-6);
        assert_eq!(multiplier(0.0), AFFINITY_MIN);
        assert_eq!(multiplier(1.0), AFFINITY_MAX);
    }

    #[test]
    fn co_occurring_tags_are_close_and_disjoint_ones_are_not() {
        let mut co = Cooccurrence::default();
        for (t, n) in [("react", 10), ("frontend", 12), ("rust", 8), ("npm", 6), ("pnpm", 4)] {
            co.counts.insert(t.into(), n);
        }
        for ((a, b), n) in [(("frontend", "react"), 10), (("npm", "react"), 6), (("pnpm", "react"), 4)] {
            co.pairs.insert((a.into(), b.into()), n);
        }
        assert!((co.similarity("react", "frontend") - 10.0 / 120f64.sqrt()).abs() < 1e-9);
        assert_eq!(co.similarity("react", "rust"), 0.0);
        assert_eq!(co.similarity("npm", "pnpm"), 0.0);
        let s = |v: &[&str]| v.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        assert_eq!(co.fit(&s(&["frontend", "react"]), &s(&["react"])), Some(1.0));
        assert_eq!(co.fit(&s(&["rust"]), &s(&["react", "frontend"])), Some(0.0));
        assert_eq!(co.fit(&s(&[]), &s(&["react"])), None);
        let half = co.fit(&s(&["frontend", "react", "pnpm"]), &s(&["react", "npm"])).unwrap();
        assert!(half > 0.5 && half < 1.0, "{half}");
    }
}
