//! The ranking pipeline every read path uses: hooks, the MCP server, the CLI,
//! the sidecar's `rank`, the trainer's canary runs and the LoCoMo evaluation.
//!
//! ```text
//! query ─► pool (pinned, BM25, neighbours, vector, effective; ≤ ~100)
//!        ─► baseline score        ─┐
//!        ─► predictor logits      ─┴► RRF(α, k) ─► topic diversity ─► injection (k, budget)
//!                                                                  └► exploration swap
//!        ─► ranking.served event (every candidate, both ranks, injected or not, sources)
//! ```
//!
//! The **baseline** is the cold-start heuristic: BM25 relevance (normalised to
//! the best hit; with a query embedding, BM25 and vector ranks fused by
//! Engrammar's RRF with dynamic k = max(1, n/5), normalised to the best) + 0.25 × the effective score (normalised to the best in the
//! pool) + 0.2 for the session's project + 1 for pinned; a superseded memory's
//! score is divided by ten. With no query words it is Signet's effective-score
//! ranking. α comes from [`state::PredictorState`]; until the predictor has
//! earned influence α = 1 and the fused order equals the baseline's, but the
//! predictor's ranking is still computed and recorded.

pub mod apply;
pub(crate) mod bm25;
pub mod pool;
pub mod state;

use std::collections::BTreeSet;

use predictor::diversity::{self, DiversityParams};
use predictor::features::SessionSignals;
use predictor::fusion::{order_by_score, ranks_from_scores, rrf};
use predictor::model::{Candidate, Model, Query};
use predictor::tokenizer::token_ids;
use rusqlite::OptionalExtension;

use crate::base::config::Config;
use crate::base::error::{Result, SqlContext};
use crate::base::ids::{MemoryId, SessionKey};
use crate::base::text;
use crate::base::time::Ts;
use crate::storage::event::{RankingServed, ServedCandidate, source, trigger};
use crate::storage::store::Store;
pub use pool::{Pool, PoolLimits, PoolMemory, PoolQuery};
pub use state::PredictorState;

/// Characters of the query kept in the recorded event.
const QUERY_RECORD_CHARS: usize = 2_000;

/// The query as a ranking records it: its first [`QUERY_RECORD_CHARS`]
/// bytes, and the cut mark when it was cut (so that compaction finds a
/// forgotten text cut short there, see `forget::Scrub`).
fn recorded_query(query: &str) -> String {
    let kept = crate::storage::store::cap(query, QUERY_RECORD_CHARS);
    if kept.len() == query.len() { kept.to_owned() } else { format!("{kept}{}", crate::storage::forget::CUT_MARK) }
}
/// Per-memory overhead in the injected text (bullet, id, type), for the budget.
const ITEM_OVERHEAD: usize = 48;
/// Candidates examined by the diversity pass (the rest keep their fused order).
const DIVERSITY_WINDOW: usize = 40;

/// What to rank for.
#[derive(Clone, Debug)]
pub struct RankRequest<'a> {
    /// The prompt text, or the session-context text at session start.
    pub query: &'a str,
    /// A pre-computed query embedding, if the client has one.
    pub query_embedding: Option<&'a [f32]>,
    /// The session, if any (its already-shown memories are not repeated).
    pub session: Option<&'a SessionKey>,
    /// The session's project.
    pub project: Option<&'a str>,
    /// What triggered the ranking (see [`crate::storage::event::trigger`]).
    pub trigger: &'a str,
    /// The moment of the request.
    pub now: Ts,
    /// Time zone for the session-level signals.
    pub tz: &'a jiff::tz::TimeZone,
    /// Most memories to inject.
    pub k: usize,
    /// Character budget of the injected memories.
    pub budget_chars: usize,
    /// Inject only memories with evidence of relevance to the query (a BM25
    /// hit, a neighbour of one, matching terms, a similar embedding) or pinned
    /// ones. On at prompts and tool calls; off at session start.
    pub require_match: bool,
    /// The caller's uniform draw in `[0, 1)` for exploration.
    pub explore_draw: f32,
    /// A reset of the session's context not yet in the projection (ms), such
    /// as the compaction a hook is answering: memories injected before it do
    /// not count as shown (see [`pool::PoolQuery::context_reset_ms`]).
    pub context_reset_ms: Option<i64>,
}

/// A model ready to score, with its version.
#[derive(Clone, Copy, Debug)]
pub struct ServingModel<'a> {
    /// The model.
    pub model: &'a Model,
    /// Its version.
    pub version: u64,
}

/// One ranked memory.
#[derive(Clone, Debug)]
pub struct RankedMemory {
    /// The pool entry (text, metadata, signals).
    pub memory: PoolMemory,
    /// Baseline score and 1-based rank.
    pub baseline_score: f32,
    /// Baseline rank.
    pub baseline_rank: u32,
    /// Predictor logit and rank, when a model scored.
    pub predictor_score: Option<f32>,
    /// Predictor rank.
    pub predictor_rank: Option<u32>,
    /// Fused score after diversity.
    pub final_score: f32,
    /// 1-based final rank.
    pub rank: u32,
    /// Put into the agent's context.
    pub injected: bool,
    /// Put there by exploration.
    pub explored: bool,
    /// Why it ranks where it does, for people and agents.
    pub reasons: Vec<String>,
    /// What the moment's tool call does that this memory is about, when it
    /// is (`shared::domain::injection::remind`).
    pub reminder: Option<Reminder>,
}

/// How a memory bears on the moment's tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reminder {
    /// What the call does, as a reminder says it ("runs `npm install`").
    pub says: String,
    /// The call repeats the mistake the memory warns against; otherwise it
    /// runs the command the memory is about, as the memory asks.
    pub mistake: bool,
}

/// The outcome of a ranking.
#[derive(Clone, Debug)]
pub struct Ranking {
    /// Id of the served ranking.
    pub ranking_id: String,
    /// Candidates in final order.
    pub items: Vec<RankedMemory>,
    /// The predictor's state used.
    pub state: PredictorState,
    /// α used.
    pub alpha: f32,
    /// The event to append (the caller appends it through the journal).
    pub served: RankingServed,
    /// The FTS5 expression used, if any.
    pub fts_query: Option<String>,
    /// The query's terms with their IDF, as the pool weighed them.
    pub query_terms: Vec<text::QueryTerm>,
    /// Live memories in the store when it was ranked.
    pub corpus: u64,
    /// When it was served (ms).
    pub served_ms: i64,
}

impl Ranking {
    /// The injected memories, best first.
    pub fn injected(&self) -> impl Iterator<Item = &RankedMemory> {
        self.items.iter().filter(|i| i.injected)
    }
}

/// Session-level signals at `now`: local time, and the gap since the previous
/// session of the same project (any project if none is given).
pub fn session_signals(
    store: &Store,
    session: Option<&SessionKey>,
    project: Option<&str>,
    now: Ts,
    tz: &jiff::tz::TimeZone,
) -> Result<SessionSignals> {
    let parts = now.local_parts(tz);
    let current = session.map_or("", SessionKey::as_str);
    let last: Option<i64> = store
        .conn()
        .prepare_cached(
            "SELECT MAX(last_event_ms) FROM sessions
             WHERE session_key != ?1 AND last_event_ms < ?2 AND (?3 IS NULL OR project = ?3)",
        )
        .and_then(|mut s| s.query_row(rusqlite::params![current, now.0, project], |r| r.get(0)).optional())
        .sql("read previous session")?
        .flatten();
    Ok(SessionSignals {
        hour: parts.hour,
        weekday: parts.weekday,
        month0: parts.month0,
        gap_hours: last.map(|t| ((now.0 - t).max(0) as f64 / 3_600_000.0) as f32),
        project: project.map(str::to_owned),
    })
}

/// With a vector search in the pool (a query embedding), Engrammar's hybrid
/// relevance: the BM25 and the vector ranks fused by RRF with its dynamic
/// `k = max(1, n / 5)` over the pool's `n` candidates
/// ([`predictor::fusion::hybrid`]), divided by the best so that it takes the
/// place of the normalised BM25 score. `None` without vector similarities.
fn hybrid_relevance(pool: &Pool) -> Option<Vec<f32>> {
    if !pool.memories.iter().any(|m| m.vector_similarity.is_some()) {
        return None;
    }
    let bm25: Vec<Option<f32>> = pool.memories.iter().map(|m| m.signals.bm25_score).collect();
    let vector: Vec<Option<f32>> = pool.memories.iter().map(|m| m.vector_similarity).collect();
    let lists = [predictor::fusion::ranks_of_present(&bm25), predictor::fusion::ranks_of_present(&vector)];
    let mut h = predictor::fusion::hybrid(&lists, pool.memories.len());
    let best = h.iter().copied().fold(0.0f32, f32::max);
    if best > 0.0 {
        h.iter_mut().for_each(|x| *x /= best);
    }
    Some(h)
}

/// Baseline scores of a pool (see the module docs).
pub fn baseline_scores(pool: &Pool) -> Vec<f32> {
    let max_bm25 = pool.memories.iter().filter_map(|m| m.signals.bm25_score).fold(0.0f32, f32::max);
    let max_eff = pool.memories.iter().map(|m| m.signals.effective_score).fold(0.0f32, f32::max);
    let hybrid = hybrid_relevance(pool);
    pool.memories
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let s = &m.signals;
            let rel = match (&hybrid, s.bm25_score, max_bm25 > 0.0) {
                (Some(h), _, _) => h[i],
                (None, Some(b), true) => (b / max_bm25).max(0.0),
                _ => 0.0,
            };
            let eff = if max_eff > 0.0 { s.effective_score / max_eff } else { 0.0 };
            let score = rel
                + 0.25 * eff
                + 0.2 * f32::from(u8::from(s.project_match || s.stack_match))
                + f32::from(u8::from(m.pinned));
            // The environment (shared::domain::env::rank): tag affinity multiplies,
            // tag relevance adds its seed weight; both 0 without an environment.
            let score = score * (1.0 + s.tag_affinity) + crate::domain::env::rank::RELEVANCE_WEIGHT * s.tag_relevance;
            if m.superseded { score * 0.1 } else { score }
        })
        .collect()
}

/// Predictor logits for a pool; `None` without a model or if scoring fails
/// or panics (logged; serving falls back to the baseline, so a faulty model
/// never costs a ranking).
pub fn predictor_scores(
    model: &Model,
    pool: &Pool,
    query: &str,
    query_embedding: Option<&[f32]>,
    embeddings: &[Option<Vec<f32>>],
    session: &SessionSignals,
) -> Option<Vec<f32>> {
    let cfg = model.config();
    let q_tokens = token_ids(query, cfg.hash_buckets);
    let q_emb = query_embedding.filter(|e| cfg.native_dim > 0 && e.len() == cfg.native_dim);
    let tokens: Vec<Vec<u32>> = pool.memories.iter().map(|m| token_ids(&m.content, cfg.hash_buckets)).collect();
    let candidates: Vec<Candidate<'_>> = pool
        .memories
        .iter()
        .zip(&tokens)
        .enumerate()
        .map(|(i, (m, t))| Candidate {
            tokens: t,
            embedding: embeddings
                .get(i)
                .and_then(|e| e.as_deref())
                .filter(|e| cfg.native_dim > 0 && e.len() == cfg.native_dim),
            signals: m.signals,
        })
        .collect();
    if candidates.is_empty() {
        return Some(Vec::new());
    }
    let scored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model.score(&Query { tokens: &q_tokens, embedding: q_emb, session }, &candidates)
    }));
    match scored {
        Ok(Ok(scores)) => Some(scores),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the predictor could not score this pool; using the baseline");
            None
        }
        Err(panic) => {
            let why = crate::base::logging::panic_message(panic.as_ref());
            tracing::error!(panic = %why, "the predictor panicked on this pool; using the baseline");
            None
        }
    }
}

/// Embeddings of the pool's memories (for the predictor's pre-embedded path and diversity).
pub fn pool_embeddings(store: &Store, pool: &Pool) -> Result<Vec<Option<Vec<f32>>>> {
    let mut stmt = store
        .conn()
        .prepare_cached("SELECT vector FROM embeddings WHERE source_type = 'memory' AND source_id = ?1")
        .sql("prepare embeddings")?;
    pool.memories
        .iter()
        .map(|m| {
            if !m.signals.has_embedding {
                return Ok(None);
            }
            let blob: Option<Vec<u8>> =
                stmt.query_row([m.id.as_str()], |r| r.get(0)).optional().sql("read embedding")?;
            Ok(blob.map(|b| pool::blob_to_vector(&b)))
        })
        .collect()
}

/// Runs the whole pipeline. The returned [`Ranking::served`] must be appended
/// by the caller (with the session key) so that the ranking is recorded.
pub fn rank(store: &Store, config: &Config, model: Option<ServingModel<'_>>, req: &RankRequest<'_>) -> Result<Ranking> {
    rank_after(store, config, model, req, &[])
}

/// A ranking served by this process whose `ranking.served` event may not be
/// in the projection yet: a caller that records rankings after answering
/// (the scorer's recorder thread) passes these to [`rank_after`].
#[derive(Clone, Debug, PartialEq)]
pub struct Unapplied {
    /// The ranking's id (the key of the `rankings` row once applied).
    pub ranking_id: String,
    /// The session it was served in.
    pub session: Option<SessionKey>,
    /// The memories it injected.
    pub injected: Vec<MemoryId>,
    /// When it was served (ms): a context reset after it makes its memories
    /// injectable again.
    pub served_ms: i64,
    /// Its trigger (`session_start`, `prompt`, `tool`, …).
    pub trigger: String,
}

impl Unapplied {
    /// What `ranking`, served in `session`, changes once applied.
    pub fn of(ranking: &Ranking, session: Option<&SessionKey>) -> Unapplied {
        Unapplied {
            ranking_id: ranking.ranking_id.clone(),
            session: session.cloned(),
            injected: ranking.injected().map(|i| i.memory.id.clone()).collect(),
            served_ms: ranking.served_ms,
            trigger: ranking.served.trigger.clone(),
        }
    }
}

/// [`rank`] as if the `unapplied` rankings had already been applied to the
/// projection: same result, whether or not their events are there yet.
///
/// Applying a `ranking.served` changes what later rankings read in three
/// places, each reproduced here for the rankings not yet in the projection:
/// an injected memory counts as shown in its session, its `access_count`
/// rises by one per ranking, and its `times_injected` (sessions it was
/// injected in) by one per ranking with a session (a memory shown in a
/// session is never injected there again, so each is a new session). The
/// pipeline reads one SQLite snapshot, in which it also looks up which of
/// `unapplied` are already applied (those are not counted twice).
pub fn rank_after(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    req: &RankRequest<'_>,
    unapplied: &[Unapplied],
) -> Result<Ranking> {
    rank_after_in(store, config, model, req, None, unapplied)
}

/// [`rank_after`] for a session in `env` (`shared::domain::env::rank`: prerequisites,
/// tag relevance, tag affinity, stack candidates).
pub fn rank_after_in(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    req: &RankRequest<'_>,
    env: Option<&crate::storage::event::EnvDetected>,
    unapplied: &[Unapplied],
) -> Result<Ranking> {
    // A read-only transaction: every query below sees the same snapshot, and
    // the ranking's few dozen statements share one read lock instead of each
    // taking and releasing its own (two fcntl calls and a check of the WAL
    // index apiece: about a tenth of a ranking). It is rolled back when
    // dropped. A caller already inside a transaction keeps its own.
    let snapshot = if store.conn().is_autocommit() {
        bm25::prepare(store);
        Some(store.conn().unchecked_transaction().sql("begin a read snapshot")?)
    } else {
        None
    };
    let ranking = rank_inner(store, config, model, req, env, unapplied);
    drop(snapshot);
    ranking
}

/// The `unapplied` rankings whose `rankings` row is not in the projection.
fn not_applied<'u>(store: &Store, unapplied: &'u [Unapplied]) -> Result<Vec<&'u Unapplied>> {
    let mut stmt =
        store.conn().prepare_cached("SELECT 1 FROM rankings WHERE ranking_id = ?1").sql("prepare ranking lookup")?;
    let mut out = Vec::with_capacity(unapplied.len());
    for u in unapplied {
        if !stmt.exists([u.ranking_id.as_str()]).sql("look up ranking")? {
            out.push(u);
        }
    }
    Ok(out)
}

/// The latest reset of `session`'s context (ms): the projection's, or
/// `pending` when later; -1 when it never was.
pub fn context_reset(store: &Store, session: &SessionKey, pending: Option<i64>) -> Result<i64> {
    let stored: Option<i64> = store
        .conn()
        .prepare_cached("SELECT context_reset_ms FROM sessions WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)).optional())
        .sql("read the session's context reset")?
        .flatten();
    Ok(stored.unwrap_or(-1).max(pending.unwrap_or(-1)))
}

/// Adds the effects of rankings not yet applied to a pool (see [`rank_after`]);
/// a ranking served before `reset` (the session's last context reset) no
/// longer makes its memories shown.
fn overlay(pool: &mut Pool, pending: &[&Unapplied], session: Option<&SessionKey>, reset: i64) {
    if pending.iter().all(|u| u.injected.is_empty()) {
        return;
    }
    for m in &mut pool.memories {
        let mut rankings = 0u32;
        let mut sessions = 0u32;
        for u in pending.iter().filter(|u| u.injected.contains(&m.id)) {
            rankings += 1;
            if let Some(s) = &u.session {
                sessions += 1;
                if session == Some(s) && u.served_ms > reset {
                    m.shown = true;
                }
            }
        }
        m.signals.access_count = m.signals.access_count.saturating_add(rankings);
        m.signals.times_injected = m.signals.times_injected.saturating_add(sessions);
    }
}

fn rank_inner(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    req: &RankRequest<'_>,
    env: Option<&crate::storage::event::EnvDetected>,
    unapplied: &[Unapplied],
) -> Result<Ranking> {
    let limits = PoolLimits::of(config);
    let mut pool = pool::gather_in(
        store,
        &PoolQuery {
            text: req.query,
            embedding: req.query_embedding,
            project: req.project,
            session: req.session.map(SessionKey::as_str),
            now: req.now,
        },
        env,
        &limits,
    )?;
    if let Some(env) = env {
        crate::domain::env::rank::apply(store, &mut pool, env, crate::domain::env::rank::Relevance::Current)?;
    }
    if let (Some(session), Some(_)) = (req.session, req.context_reset_ms) {
        // A reset the projection does not know yet: memories injected before
        // it are back in play.
        let ids = pool::memory_ids(&pool.memories);
        let still = pool::shown_in_session(store, Some(session.as_str()), &ids, req.context_reset_ms)?;
        for m in &mut pool.memories {
            m.shown &= still.contains(m.id.as_str());
        }
    }
    if !unapplied.is_empty() {
        let reset = match req.session {
            Some(s) => context_reset(store, s, req.context_reset_ms)?,
            None => -1,
        };
        overlay(&mut pool, &not_applied(store, unapplied)?, req.session, reset);
    }
    let state = PredictorState::load(store, &config.predictor)?;
    let session = session_signals(store, req.session, req.project, req.now, req.tz)?;
    let embeddings = if pool.memories.iter().any(|m| m.signals.has_embedding) {
        pool_embeddings(store, &pool)?
    } else {
        vec![None; pool.memories.len()]
    };
    let predicted = model.and_then(|m| {
        if config.predictor.enabled {
            predictor_scores(m.model, &pool, req.query, req.query_embedding, &embeddings, &session)
        } else {
            None
        }
    });
    let alpha = if predicted.is_some() { state.alpha } else { 1.0 };
    Ok(assemble(pool, state, alpha, predicted, &embeddings, model.map(|m| m.version), config, req))
}

/// Fusion, diversity, injection, exploration and the event, for a scored pool.
#[allow(clippy::too_many_arguments)]
fn assemble(
    pool: Pool,
    state: PredictorState,
    alpha: f32,
    predicted: Option<Vec<f32>>,
    embeddings: &[Option<Vec<f32>>],
    model_version: Option<u64>,
    config: &Config,
    req: &RankRequest<'_>,
) -> Ranking {
    let n = pool.memories.len();
    let baseline = baseline_scores(&pool);
    let rb = ranks_from_scores(&baseline);
    let rp = predicted.as_deref().map(ranks_from_scores);
    let pool_size = u32::try_from(n).unwrap_or(u32::MAX);
    let fused: Vec<f32> =
        (0..n).map(|i| rrf(alpha, config.predictor.rrf_k, Some(rb[i]), rp.as_ref().map(|r| r[i]), pool_size)).collect();

    // Topic diversity over the head of the fused order.
    let order = order_by_score(&fused);
    let window: Vec<usize> = order.iter().copied().take(DIVERSITY_WINDOW).collect();
    let head_scores: Vec<f32> = window.iter().map(|&i| fused[i]).collect();
    let adjusted_head = diversity::apply(
        &head_scores,
        |a, b| match (&embeddings[window[a]], &embeddings[window[b]]) {
            (Some(x), Some(y)) if x.len() == y.len() => diversity::cosine(x, y),
            _ => text::bag_cosine(&pool.memories[window[a]].bag, &pool.memories[window[b]].bag),
        },
        &DiversityParams::default(),
    );
    let mut final_scores = fused.clone();
    for (w, &i) in window.iter().enumerate() {
        final_scores[i] = adjusted_head[w];
    }
    let final_order = order_by_score(&final_scores);

    // Injection: best first, within k and the character budget.
    let eligible = |m: &PoolMemory| -> bool {
        if m.shown || m.superseded || m.excluded.is_some() || m.content.is_empty() {
            return false;
        }
        if !req.require_match || m.pinned {
            return true;
        }
        m.signals.bm25_score.is_some()
            || m.signals.neighbor_score > 0.0
            || m.signals.lexical_overlap >= 0.3
            || m.vector_similarity.is_some_and(|s| s >= 0.5)
    };
    let mut injected = vec![false; n];
    let mut used = 0usize;
    let mut count = 0usize;
    for &i in &final_order {
        if count >= req.k {
            break;
        }
        let m = &pool.memories[i];
        let cost = m.content.chars().count() + ITEM_OVERHEAD;
        if eligible(m) && used + cost <= req.budget_chars {
            injected[i] = true;
            used += cost;
            count += 1;
        }
    }

    // Exploration: only once the predictor has influence and a ranking.
    let mut explored = None;
    if let Some(rp) = &rp
        && !state.cold_start()
        && alpha < 1.0
        && let Some(swap) = predictor::explore::pick(
            &injected,
            &final_scores,
            &rb,
            rp,
            config.predictor.exploration_rate,
            req.explore_draw,
        )
        && eligible(&pool.memories[swap.add])
    {
        injected[swap.remove] = false;
        injected[swap.add] = true;
        explored = Some(swap.add);
    }

    let surfaces: foldhash::HashMap<String, String> = text::surface_tokens(req.query).into_iter().rev().collect();
    let mut items: Vec<RankedMemory> = Vec::with_capacity(n);
    let mut memories: Vec<Option<PoolMemory>> = pool.memories.into_iter().map(Some).collect();
    for (pos, &i) in final_order.iter().enumerate() {
        let Some(memory) = memories[i].take() else { continue };
        let mut item = RankedMemory {
            memory,
            baseline_score: baseline[i],
            baseline_rank: rb[i],
            predictor_score: predicted.as_ref().map(|p| p[i]),
            predictor_rank: rp.as_ref().map(|r| r[i]),
            final_score: final_scores[i],
            rank: u32::try_from(pos + 1).unwrap_or(u32::MAX),
            injected: injected[i],
            explored: explored == Some(i),
            reasons: Vec::new(),
            reminder: None,
        };
        if item.explored {
            item.memory.sources.insert(source::EXPLORATION);
        }
        item.reasons = reasons(&item, alpha, &surfaces);
        items.push(item);
    }

    let ranking_id = crate::base::ids::generate_with_prefix("rk", req.now);
    let served = RankingServed {
        ranking_id: ranking_id.clone(),
        trigger: req.trigger.to_owned(),
        query: recorded_query(req.query),
        alpha,
        model_version,
        cold_start: alpha >= 1.0,
        project: req.project.map(str::to_owned),
        candidates: items
            .iter()
            .map(|it| ServedCandidate {
                memory_id: it.memory.id.clone(),
                sources: it.memory.sources.iter().map(|s| (*s).to_owned()).collect(),
                baseline_score: it.baseline_score,
                baseline_rank: it.baseline_rank,
                predictor_score: it.predictor_score,
                predictor_rank: it.predictor_rank,
                final_score: it.final_score,
                rank: it.rank,
                injected: it.injected,
            })
            .collect(),
    };
    Ranking {
        ranking_id,
        items,
        state,
        alpha,
        served,
        fts_query: pool.fts_query,
        query_terms: pool.query_terms,
        corpus: pool.corpus,
        served_ms: req.now.0,
    }
}

/// Short explanations of why an item ranks where it does, in the query's own
/// words (`surfaces`: stem → word).
fn reasons(item: &RankedMemory, alpha: f32, surfaces: &foldhash::HashMap<String, String>) -> Vec<String> {
    let m = &item.memory;
    let s = &m.signals;
    let mut out = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    for t in &m.matched {
        // Pieces of a word cut at an apostrophe ("don", "t") say nothing.
        if t.chars().count() <= 2 || matches!(t.as_str(), "don" | "doesn" | "didn" | "isn" | "won" | "can") {
            continue;
        }
        let w = surfaces.get(t).map_or(t.as_str(), String::as_str);
        if !words.contains(&w) {
            words.push(w);
        }
    }
    let words = words.into_iter().take(6).collect::<Vec<_>>().join(", ");
    if item.explored {
        out.push("exploration: the rankers disagree most on it".to_owned());
    }
    if m.pinned {
        out.push("pinned".to_owned());
    }
    if let Some(r) = s.bm25_rank {
        if words.is_empty() {
            out.push(format!("keyword match #{r}"));
        } else {
            out.push(format!("keyword match #{r}: {words}"));
        }
    } else if !words.is_empty() && s.lexical_overlap >= 0.3 {
        out.push(format!("shares words: {words}"));
    }
    if s.neighbor_score > 0.0 && s.bm25_rank.is_none() {
        out.push("next to a strong match in the same session".to_owned());
    }
    if let Some(sim) = m.vector_similarity {
        out.push(format!("similar meaning (cosine {sim:.2})"));
    }
    if s.project_match {
        out.push("same project".to_owned());
    }
    if s.stack_match {
        out.push("learned in other projects of this stack".to_owned());
    }
    if s.tag_affinity >= 0.3 {
        out.push("its tags fit this environment".to_owned());
    } else if s.tag_affinity <= -0.3 {
        out.push("its tags do not fit this environment".to_owned());
    }
    if s.effective_score >= 0.5 && !m.pinned {
        out.push(format!("recent and important ({:.2})", s.effective_score));
    }
    if let (Some(r), true) = (item.predictor_rank, alpha < 1.0)
        && r <= 3
    {
        out.push(format!("learned ranking #{r}"));
    }
    if s.times_useful > 0.0 {
        out.push(format!("useful before ({:.1})", s.times_useful));
    }
    if m.superseded {
        out.push("superseded: never injected".to_owned());
    }
    out
}

/// The live memories learned from `session` itself (its user's corrections
/// and rules, its struggles): what the agent was told in it.
pub fn learned_in_session(store: &Store, session: &SessionKey) -> Result<BTreeSet<MemoryId>> {
    session_ids(
        store,
        "SELECT id FROM memories WHERE source_session = ?1 AND is_deleted = 0 AND deprecated = 0",
        session,
    )
}

/// Memories injected at a tool call of `session` after `since` (ms), in the
/// projection or in `unapplied`: reminded in this segment of the session.
pub fn injected_at_tools_since(
    store: &Store,
    session: &SessionKey,
    since: i64,
    unapplied: &[Unapplied],
) -> Result<BTreeSet<MemoryId>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT DISTINCT c.memory_id FROM rankings AS r
             JOIN ranking_candidates AS c ON c.ranking_id = r.ranking_id
             WHERE r.session_key = ?1 AND r.trigger = ?2 AND r.served_ms > ?3 AND c.injected = 1",
        )
        .sql("prepare the memories of a segment's tool calls")?;
    let rows = stmt
        .query_map(rusqlite::params![session.as_str(), trigger::TOOL, since], |r| r.get::<_, String>(0).map(MemoryId))
        .sql("the memories of a segment's tool calls")?;
    let mut out: BTreeSet<MemoryId> =
        rows.collect::<rusqlite::Result<_>>().sql("the memories of a segment's tool calls")?;
    for u in unapplied {
        if u.session.as_ref() == Some(session) && u.trigger == trigger::TOOL && u.served_ms > since {
            out.extend(u.injected.iter().cloned());
        }
    }
    Ok(out)
}

/// The queries of the tool-call rankings of `session` served after `since`
/// (ms), in order: what the session ran in that part of its context
/// (`injection::remind` reads the commands back from them).
pub fn tool_queries_since(store: &Store, session: &SessionKey, since: i64) -> Result<Vec<String>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT query FROM rankings WHERE session_key = ?1 AND trigger = ?2 AND served_ms > ?3
             ORDER BY served_ms",
        )
        .sql("prepare the tool calls of a segment")?;
    let rows = stmt
        .query_map(rusqlite::params![session.as_str(), trigger::TOOL, since], |r| r.get::<_, String>(0))
        .sql("the tool calls of a segment")?;
    rows.collect::<rusqlite::Result<_>>().sql("the tool calls of a segment")
}

/// Memories already injected in `session` (used by callers that list them).
pub fn shown_in_session(store: &Store, session: &SessionKey) -> Result<BTreeSet<MemoryId>> {
    session_ids(store, "SELECT memory_id FROM session_memories WHERE session_key = ?1 AND was_injected = 1", session)
}

/// The memory ids `sql` selects for `session` (its `?1`).
fn session_ids(store: &Store, sql: &str, session: &SessionKey) -> Result<BTreeSet<MemoryId>> {
    let mut stmt = store.conn().prepare_cached(sql).sql("prepare a session's memories")?;
    let rows =
        stmt.query_map([session.as_str()], |r| r.get::<_, String>(0).map(MemoryId)).sql("a session's memories")?;
    rows.collect::<rusqlite::Result<_>>().sql("a session's memories")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_query_cut_short_ends_with_the_cut_mark() {
        assert_eq!(recorded_query("short query"), "short query");
        let long = format!("{}é tail", "x".repeat(QUERY_RECORD_CHARS - 1));
        let recorded = recorded_query(&long);
        assert!(recorded.ends_with(crate::storage::forget::CUT_MARK), "{recorded}");
        assert_eq!(recorded.len(), QUERY_RECORD_CHARS - 1 + crate::storage::forget::CUT_MARK.len_utf8());
    }
}
