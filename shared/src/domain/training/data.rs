//! Training and evaluation lists rebuilt from the projection: served rankings,
//! the outcome labels of their sessions, and each candidate's signals as they
//! were when the ranking was served.
//!
//! **No label leak.** A list's query is the ranking's recorded query text (the
//! prompt or the session-context text the rankers saw), never anything derived
//! from the candidates. Labels come only from the session's outcome
//! (`session.scored`, projected into `session_memories.label`). The signals
//! that outcomes feed back into (`times_useful`, `times_injected`,
//! `access_count`) are recomputed *as of the moment the ranking was served*:
//! only rankings served before it and sessions scored before it count, so a
//! session's own labels never reach its own features, and later usage never
//! leaks into earlier lists. Ages are measured at the serving time too.

use std::collections::{BTreeMap, HashMap};

use predictor::model::{OwnedCandidate, OwnedQuery};
use predictor::tokenizer::token_ids;
use predictor::train::Sample;
use rusqlite::OptionalExtension;

use crate::base::error::{Result, SqlContext};
use crate::base::ids::{MemoryId, SessionKey};
use crate::base::time::Ts;
use crate::domain::rank::{self, PoolQuery};
use crate::storage::store::Store;

/// One candidate of a served ranking, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCandidate {
    /// The memory.
    pub memory_id: MemoryId,
    /// Baseline score.
    pub baseline_score: f32,
    /// 1-based baseline rank.
    pub baseline_rank: u32,
    /// Predictor score, when a model scored.
    pub predictor_score: Option<f32>,
    /// 1-based predictor rank, when a model scored.
    pub predictor_rank: Option<u32>,
    /// 1-based final rank.
    pub rank: u32,
    /// Put into the agent's context.
    pub injected: bool,
}

/// A served ranking, as recorded in `rankings` and `ranking_candidates`.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRanking {
    /// Id of the ranking.
    pub ranking_id: String,
    /// The session it was served in, if any.
    pub session_key: Option<SessionKey>,
    /// What triggered it.
    pub trigger: String,
    /// The query text the rankers saw.
    pub query: String,
    /// The session's project.
    pub project: Option<String>,
    /// When it was served.
    pub served_ms: i64,
    /// α used.
    pub alpha: f32,
    /// Serving model version, if any.
    pub model_version: Option<u64>,
    /// Candidates in final-rank order.
    pub candidates: Vec<RecordedCandidate>,
}

impl RecordedRanking {
    /// Whether every candidate carries a predictor rank (a model scored the pool).
    pub fn has_predictor(&self) -> bool {
        !self.candidates.is_empty() && self.candidates.iter().all(|c| c.predictor_rank.is_some())
    }
}

/// The rankings served in `session`, oldest first.
pub fn session_rankings(store: &Store, session: &SessionKey) -> Result<Vec<RecordedRanking>> {
    let ids: Vec<String> = {
        let mut stmt = store
            .conn()
            .prepare_cached("SELECT ranking_id FROM rankings WHERE session_key = ?1 ORDER BY served_ms, ranking_id")
            .sql("list rankings")?;
        stmt.query_map([session.as_str()], |r| r.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<_>>())
            .sql("list rankings")?
    };
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        out.extend(ranking(store, &id)?);
    }
    Ok(out)
}

/// One served ranking by id.
pub fn ranking(store: &Store, ranking_id: &str) -> Result<Option<RecordedRanking>> {
    let head = store
        .conn()
        .prepare_cached(
            "SELECT session_key, trigger, query, project, served_ms, alpha, model_version
             FROM rankings WHERE ranking_id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([ranking_id], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, f64>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                ))
            })
            .optional()
        })
        .sql("read ranking")?;
    let Some((session, trigger, query, project, served_ms, alpha, model_version)) = head else {
        return Ok(None);
    };
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT memory_id, baseline_score, baseline_rank, predictor_score, predictor_rank, rank, injected
             FROM ranking_candidates WHERE ranking_id = ?1 ORDER BY rank, memory_id",
        )
        .sql("read ranking candidates")?;
    let candidates = stmt
        .query_map([ranking_id], |r| {
            Ok(RecordedCandidate {
                memory_id: MemoryId(r.get(0)?),
                baseline_score: r.get::<_, f64>(1)? as f32,
                baseline_rank: r.get(2)?,
                predictor_score: r.get::<_, Option<f64>>(3)?.map(|s| s as f32),
                predictor_rank: r.get(4)?,
                rank: r.get(5)?,
                injected: r.get(6)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .sql("read ranking candidates")?;
    Ok(Some(RecordedRanking {
        ranking_id: ranking_id.to_owned(),
        session_key: session.map(SessionKey),
        trigger,
        query,
        project,
        served_ms,
        alpha: alpha as f32,
        model_version: model_version.map(|v| v.max(0) as u64),
        candidates,
    }))
}

/// A session with an outcome score.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoredSession {
    /// The session.
    pub session_key: SessionKey,
    /// Its project.
    pub project: Option<String>,
    /// Continuity score.
    pub score: f32,
    /// Scorer confidence.
    pub confidence: f32,
    /// When it was scored.
    pub scored_ms: i64,
}

/// Sessions scored with at least `min_confidence`, oldest score first (the
/// latest score of a session counts if it was scored more than once).
pub fn scored_sessions(store: &Store, min_confidence: f32) -> Result<Vec<ScoredSession>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT session_key, project, score, confidence, created_ms FROM session_scores ss
             WHERE confidence >= ?1 AND NOT EXISTS (
                 SELECT 1 FROM session_scores later WHERE later.session_key = ss.session_key
                 AND (later.created_ms, later.id) > (ss.created_ms, ss.id))
             ORDER BY created_ms, session_key",
        )
        .sql("list scored sessions")?;
    stmt.query_map([f64::from(min_confidence)], |r| {
        Ok(ScoredSession {
            session_key: SessionKey(r.get(0)?),
            project: r.get(1)?,
            score: r.get::<_, f64>(2)? as f32,
            confidence: r.get::<_, Option<f64>>(3)?.unwrap_or(0.0) as f32,
            scored_ms: r.get(4)?,
        })
    })
    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
    .sql("list scored sessions")
}

/// The outcome labels recorded for `session` (`session_memories.label`).
pub fn session_labels(store: &Store, session: &SessionKey) -> Result<BTreeMap<MemoryId, f32>> {
    let mut stmt = store
        .conn()
        .prepare_cached("SELECT memory_id, label FROM session_memories WHERE session_key = ?1 AND label IS NOT NULL")
        .sql("read labels")?;
    stmt.query_map([session.as_str()], |r| Ok((MemoryId(r.get(0)?), r.get::<_, f64>(1)? as f32)))
        .and_then(|rows| rows.collect::<rusqlite::Result<_>>())
        .sql("read labels")
}

/// What a list is built for: a query, a moment and a fixed set of memories.
#[derive(Clone, Copy, Debug)]
pub struct ListSpec<'a> {
    /// The query text (a ranking's recorded query, or a dataset's question).
    pub query: &'a str,
    /// The session's project.
    pub project: Option<&'a str>,
    /// The session, if any (for the gap since the previous session).
    pub session: Option<&'a SessionKey>,
    /// The moment the list is ranked at: signals are computed as of it.
    pub at: Ts,
    /// The candidates, in the order the list keeps.
    pub memory_ids: &'a [MemoryId],
}

/// How lists are encoded for a model.
#[derive(Clone, Copy, Debug)]
pub struct ListOptions<'a> {
    /// Time zone of the session-level signals.
    pub tz: &'a jiff::tz::TimeZone,
    /// The model's hash buckets.
    pub hash_buckets: u32,
    /// The model's pre-embedded dimension (0: text only).
    pub native_dim: usize,
}

/// A list ready for the predictor, with what evaluation needs beside it.
#[derive(Clone, Debug)]
pub struct BuiltList {
    /// Candidates kept (memories since forgotten, or with no text, are dropped), in list order.
    pub memory_ids: Vec<MemoryId>,
    /// Query, candidates, labels (aligned with `memory_ids`) and weight.
    pub sample: Sample,
    /// The baseline's scores of the same candidates.
    pub baseline: Vec<f32>,
    /// Which candidates are superseded or deprecated now.
    pub superseded: Vec<bool>,
}

/// Builds one list: the pool of `spec.memory_ids` with their signals as of
/// `spec.at`, encoded for a model, labelled by `label` (0 for memories it
/// does not know). `None` when fewer than two candidates remain.
pub fn build_list(
    store: &Store,
    spec: &ListSpec<'_>,
    label: &dyn Fn(&MemoryId) -> f32,
    weight: f32,
    opts: &ListOptions<'_>,
) -> Result<Option<BuiltList>> {
    let mut pool = rank::pool::gather_fixed(
        store,
        &PoolQuery { text: spec.query, embedding: None, project: spec.project, session: None, now: spec.at },
        spec.memory_ids,
    )?;
    let history = history_as_of(store, spec.memory_ids, spec.at)?;
    for m in &mut pool.memories {
        let h = history.get(&m.id).copied().unwrap_or_default();
        m.signals.access_count = h.access_count;
        m.signals.times_injected = h.injected_sessions;
        m.signals.times_useful = h.useful;
    }
    // The session's environment, with tag relevance as of before it (a list
    // never sees its own outcome): see `shared::domain::env::rank`.
    if let Some(session) = spec.session
        && let Some(env) = crate::domain::env::store::session_env_detected(store.conn(), session.as_str())
            .sql("read a session's environment")?
    {
        let relevance =
            crate::domain::env::rank::Relevance::AsOf { before_ms: spec.at.0, session: Some(session.as_str()) };
        crate::domain::env::rank::apply(store, &mut pool, &env, relevance)?;
    }
    let embeddings = if opts.native_dim > 0 && pool.memories.iter().any(|m| m.signals.has_embedding) {
        rank::pool_embeddings(store, &pool)?
    } else {
        vec![None; pool.memories.len()]
    };
    let baseline_all = rank::baseline_scores(&pool);
    let session = rank::session_signals(store, spec.session, spec.project, spec.at, opts.tz)?;
    let mut out = BuiltList {
        memory_ids: Vec::with_capacity(pool.memories.len()),
        sample: Sample {
            query: OwnedQuery { tokens: token_ids(spec.query, opts.hash_buckets), embedding: None, session },
            candidates: Vec::with_capacity(pool.memories.len()),
            labels: Vec::with_capacity(pool.memories.len()),
            weight,
        },
        baseline: Vec::with_capacity(pool.memories.len()),
        superseded: Vec::with_capacity(pool.memories.len()),
    };
    for ((m, emb), base) in pool.memories.into_iter().zip(embeddings).zip(baseline_all) {
        let tokens = token_ids(&m.content, opts.hash_buckets);
        let embedding = emb.filter(|e| opts.native_dim > 0 && e.len() == opts.native_dim);
        if tokens.is_empty() && embedding.is_none() {
            continue;
        }
        let l = label(&m.id);
        out.sample.labels.push(if l.is_finite() { l } else { 0.0 });
        out.sample.candidates.push(OwnedCandidate { tokens, embedding, signals: m.signals });
        out.baseline.push(base);
        out.superseded.push(m.superseded);
        out.memory_ids.push(m.id);
    }
    Ok((out.memory_ids.len() >= 2).then_some(out))
}

/// Usage history of memories as it stood at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HistoryAsOf {
    /// Injections in rankings served before the moment (`memories.access_count` then).
    pub access_count: u32,
    /// Sessions that had injected the memory before the moment.
    pub injected_sessions: u32,
    /// Sum of the positive labels (or relevance) of sessions scored before the moment.
    pub useful: f32,
}

/// [`HistoryAsOf`] of each memory of `ids` at `at` (memories without history are absent).
pub fn history_as_of(store: &Store, ids: &[MemoryId], at: Ts) -> Result<HashMap<MemoryId, HistoryAsOf>> {
    let json =
        serde_json::to_string(&ids.iter().map(MemoryId::as_str).collect::<Vec<_>>()).unwrap_or_else(|_| "[]".into());
    let mut out: HashMap<MemoryId, HistoryAsOf> = HashMap::new();
    {
        let mut stmt = store
            .conn()
            .prepare_cached(
                "SELECT rc.memory_id, COUNT(*), COUNT(DISTINCT r.session_key)
                 FROM ranking_candidates rc JOIN rankings r ON r.ranking_id = rc.ranking_id
                 WHERE rc.memory_id IN (SELECT value FROM json_each(?1)) AND rc.injected = 1 AND r.served_ms < ?2
                 GROUP BY rc.memory_id",
            )
            .sql("prepare injection history")?;
        let rows = stmt
            .query_map(rusqlite::params![json, at.0], |r| {
                Ok((MemoryId(r.get(0)?), r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .sql("injection history")?;
        for row in rows {
            let (id, access, sessions) = row.sql("injection history")?;
            let h = out.entry(id).or_default();
            h.access_count = u32::try_from(access.max(0)).unwrap_or(u32::MAX);
            h.injected_sessions = u32::try_from(sessions.max(0)).unwrap_or(u32::MAX);
        }
    }
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT sm.memory_id, SUM(MAX(COALESCE(sm.label, sm.relevance_score, 0), 0))
             FROM session_memories sm
             WHERE sm.memory_id IN (SELECT value FROM json_each(?1))
               AND EXISTS (SELECT 1 FROM session_scores ss WHERE ss.session_key = sm.session_key AND ss.created_ms < ?2)
             GROUP BY sm.memory_id",
        )
        .sql("prepare usefulness history")?;
    let rows = stmt
        .query_map(rusqlite::params![json, at.0], |r| Ok((MemoryId(r.get(0)?), r.get::<_, f64>(1)?)))
        .sql("usefulness history")?;
    for row in rows {
        let (id, useful) = row.sql("usefulness history")?;
        out.entry(id).or_default().useful = useful as f32;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::paths::Paths;
    use crate::storage::event::*;
    use crate::storage::journal::Journal;

    const T: i64 = 1_780_000_000_000;
    const HOUR: i64 = 3_600_000;

    fn served(session: &SessionKey, id: &str, query: &str, at: i64, injected: &[&str], all: &[&str]) -> Event {
        let candidates = all
            .iter()
            .enumerate()
            .map(|(i, m)| ServedCandidate {
                memory_id: (*m).into(),
                sources: vec![source::EFFECTIVE.into()],
                baseline_score: 1.0 - i as f32 * 0.1,
                baseline_rank: i as u32 + 1,
                final_score: 1.0 - i as f32 * 0.1,
                rank: i as u32 + 1,
                injected: injected.contains(m),
                ..ServedCandidate::default()
            })
            .collect();
        Event::new(
            Ts(at),
            "test",
            Some(session.clone()),
            Body::RankingServed(RankingServed {
                ranking_id: id.into(),
                trigger: trigger::PROMPT.into(),
                query: query.into(),
                alpha: 1.0,
                cold_start: true,
                project: Some("app".into()),
                candidates,
                ..RankingServed::default()
            }),
        )
    }

    fn setup() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let mut j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        let mut events: Vec<Event> = [
            ("a", "Raise AUTH_TIMEOUT to 30s for slow logins"),
            ("b", "The build uses two cores"),
            ("c", "Deploy with the release script"),
            ("d", "A memory that will be forgotten"),
        ]
        .iter()
        .map(|(id, text)| {
            Event::new(
                Ts(T - 10 * 24 * HOUR),
                "test",
                None,
                Body::MemoryAdded(MemoryAdded {
                    memory_id: (*id).into(),
                    content: (*text).into(),
                    importance: 0.5,
                    project: Some("app".into()),
                    ..MemoryAdded::default()
                }),
            )
        })
        .collect();
        let (s1, s2) = (SessionKey::new("claude", "s1"), SessionKey::new("claude", "s2"));
        let all = ["a", "b", "c", "d"];
        events.push(served(&s1, "r1", "why do logins hang", T, &["a"], &all));
        events.push(Event::new(
            Ts(T + HOUR),
            "trainer",
            Some(s1.clone()),
            Body::SessionScored(SessionScored {
                score: 0.8,
                confidence: 0.9,
                labels: [("a".into(), 1.0), ("b".into(), 0.0), ("c".into(), 0.6)].into(),
                ..SessionScored::default()
            }),
        ));
        events.push(served(&s2, "r2", "deploy the release", T + 2 * HOUR, &["a", "c"], &all));
        events.push(Event::new(
            Ts(T + 3 * HOUR),
            "test",
            None,
            Body::MemoryForgotten(MemoryForgotten { memory_id: "d".into(), reason: "test".into(), relearnable: false }),
        ));
        j.append(&events).unwrap();
        (dir, j)
    }

    fn list(j: &Journal, ranking_id: &str, labels: &BTreeMap<MemoryId, f32>) -> BuiltList {
        let r = ranking(j.store(), ranking_id).unwrap().unwrap();
        let ids: Vec<MemoryId> = r.candidates.iter().map(|c| c.memory_id.clone()).collect();
        let spec = ListSpec {
            query: &r.query,
            project: r.project.as_deref(),
            session: r.session_key.as_ref(),
            at: Ts(r.served_ms),
            memory_ids: &ids,
        };
        let tz = jiff::tz::TimeZone::UTC;
        let opts = ListOptions { tz: &tz, hash_buckets: 4096, native_dim: 0 };
        build_list(j.store(), &spec, &|id| labels.get(id).copied().unwrap_or(0.0), 0.9, &opts).unwrap().unwrap()
    }

    fn signals(l: &BuiltList, id: &str) -> predictor::features::CandidateSignals {
        let i = l.memory_ids.iter().position(|m| m.as_str() == id).unwrap();
        l.sample.candidates[i].signals
    }

    #[test]
    fn the_query_is_the_rankings_and_the_labels_the_outcomes() {
        let (_d, j) = setup();
        let s1 = SessionKey::new("claude", "s1");
        let labels = session_labels(j.store(), &s1).unwrap();
        let l = list(&j, "r1", &labels);
        assert_eq!(l.sample.query.tokens, token_ids("why do logins hang", 4096));
        assert_eq!(l.sample.weight, 0.9);
        let ids: Vec<&str> = l.memory_ids.iter().map(MemoryId::as_str).collect();
        assert_eq!(ids, ["a", "b", "c"], "the forgotten memory has left the list");
        assert_eq!(l.sample.labels, vec![1.0, 0.0, 0.6]);
        assert_eq!(l.baseline.len(), 3);
        let rankings = session_rankings(j.store(), &s1).unwrap();
        assert_eq!(rankings.len(), 1);
        assert!(!rankings[0].has_predictor());
        assert!(rankings[0].candidates[0].injected);
    }

    #[test]
    fn outcome_signals_are_taken_as_of_serving_time() {
        let (_d, j) = setup();
        // The projection now counts every injection and label, including s1's own.
        let access: i64 =
            j.store().conn().query_row("SELECT access_count FROM memories WHERE id = 'a'", [], |r| r.get(0)).unwrap();
        assert_eq!(access, 2);
        // r1's list must not see its own session's label nor its own injection.
        let l1 = list(&j, "r1", &BTreeMap::new());
        let a1 = signals(&l1, "a");
        assert_eq!((a1.access_count, a1.times_injected, a1.times_useful), (0, 0, 0.0));
        assert!(l1.sample.labels.iter().all(|&x| x == 0.0), "labels only from the given outcome");
        // r2 was served after s1 was scored: it sees s1's injection and label.
        let l2 = list(&j, "r2", &BTreeMap::new());
        let a2 = signals(&l2, "a");
        assert_eq!((a2.access_count, a2.times_injected, a2.times_useful), (1, 1, 1.0));
        let c2 = signals(&l2, "c");
        assert_eq!((c2.access_count, c2.times_useful), (0, 0.6));
        assert!((a2.age_days - (10.0 + 2.0 / 24.0)).abs() < 1e-3, "ages at serving time: {}", a2.age_days);
    }

    #[test]
    fn scored_sessions_and_unknown_rankings() {
        let (_d, j) = setup();
        let scored = scored_sessions(j.store(), 0.6).unwrap();
        assert_eq!(scored.len(), 1);
        assert_eq!(scored[0].session_key.as_str(), "claude:s1");
        assert!(scored_sessions(j.store(), 0.95).unwrap().is_empty());
        assert!(ranking(j.store(), "nope").unwrap().is_none());
    }
}
