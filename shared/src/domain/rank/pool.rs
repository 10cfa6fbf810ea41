//! Candidate generation and per-candidate signals: the bounded pool both rankers see.
//!
//! Sources, in order of priority when the pool is full: pinned memories, the
//! FTS5 BM25 top-N for the query, the adjacent memories (same source session,
//! next in time) and the knowledge-graph neighbours of the strongest BM25
//! hits, the vector top-N when the query
//! has an embedding, and the top of the baseline's effective score (the
//! session's project first). The pool stays bounded (about 100) whatever the
//! store's size: every query is a top-N on an index.

use std::collections::{BTreeMap, BTreeSet};

use foldhash::{HashMap, HashMapExt};

use predictor::features::CandidateSignals;
use rusqlite::{OptionalExtension, params};

use super::bm25;
use crate::base::error::{Result, SqlContext};
use crate::base::ids::MemoryId;
use crate::base::text;
use crate::base::time::Ts;
use crate::storage::event::{EnvDetected, source};
use crate::storage::store::Store;

/// Sizes of the candidate sources.
#[derive(Clone, Copy, Debug)]
pub struct PoolLimits {
    /// Total pool size.
    pub pool: usize,
    /// BM25 hits.
    pub bm25: usize,
    /// Strongest BM25 hits whose neighbours are added.
    pub neighbor_hits: usize,
    /// Neighbours taken on each side of a hit.
    pub neighbor_window: usize,
    /// Vector hits.
    pub vector: usize,
    /// Pinned memories.
    pub pinned: usize,
    /// Effective-score top (per source: project, then global).
    pub effective: usize,
    /// Query terms sent to FTS5 (the rarest are kept).
    pub fts_terms: usize,
    /// Embeddings scanned for the vector source.
    pub vector_scan: usize,
    /// Bound on the documents BM25 scores (summed document frequency of the
    /// query words kept).
    pub max_postings: u64,
    /// Strongest BM25 hits whose knowledge-graph neighbours are added (0: none).
    pub graph_hits: usize,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits {
            pool: 100,
            bm25: 60,
            neighbor_hits: 20,
            neighbor_window: 2,
            vector: 20,
            pinned: 20,
            effective: 30,
            fts_terms: 24,
            vector_scan: 5_000,
            max_postings: 3_000,
            graph_hits: 10,
        }
    }
}

impl PoolLimits {
    /// The serving limits of a configuration (pool size; graph candidates
    /// when `knowledge.graph` has them on).
    pub fn of(config: &crate::base::config::Config) -> PoolLimits {
        let g = &config.knowledge.graph;
        let defaults = PoolLimits::default();
        PoolLimits {
            pool: config.predictor.candidate_pool_size,
            graph_hits: if g.enabled && g.rank_candidates { defaults.graph_hits } else { 0 },
            ..defaults
        }
    }
}

/// One memory of the pool with everything the rankers need.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolMemory {
    /// SQLite rowid (the FTS key).
    pub rowid: i64,
    /// Memory id.
    pub id: MemoryId,
    /// Text.
    pub content: String,
    /// Memory type.
    pub memory_type: crate::storage::event::MemoryType,
    /// Project.
    pub project: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Source session.
    pub source_session: Option<String>,
    /// Speaker, if a quoted turn.
    pub speaker: Option<String>,
    /// Creation time.
    pub created_ms: i64,
    /// Deprecated or superseded: never injected.
    pub superseded: bool,
    /// Pinned.
    pub pinned: bool,
    /// Why it is in the pool (see [`crate::storage::event::source`]).
    pub sources: BTreeSet<&'static str>,
    /// Raw signals.
    pub signals: CandidateSignals,
    /// Query terms found in it (for explanations).
    pub matched: Vec<String>,
    /// Cosine with the query embedding, when computed.
    pub vector_similarity: Option<f32>,
    /// Injected earlier in this session.
    pub shown: bool,
    /// Bag of words of the content, for topic diversity.
    pub bag: text::Bag,
    /// What the content's shape says (a question, names, numbers…).
    pub facts: text::TextFacts,
    /// Its prerequisites as stored (JSON), if any (`shared::domain::env::prereq`).
    pub prerequisites: Option<String>,
    /// The tags every session it was learned in shared (`shared::domain::env`).
    pub env_tags: Vec<String>,
    /// The distinct projects of those sessions.
    pub env_projects: u32,
    /// Why the session's environment keeps it from being injected, if it
    /// does (`shared::domain::env::rank`).
    pub excluded: Option<&'static str>,
}

/// The pool and the facts about the query it was built from.
#[derive(Clone, Debug, Default)]
pub struct Pool {
    /// Candidates.
    pub memories: Vec<PoolMemory>,
    /// Live memories in the store.
    pub corpus: u64,
    /// The FTS5 expression used, if any.
    pub fts_query: Option<String>,
    /// Query terms with their IDF weights.
    pub query_terms: Vec<text::QueryTerm>,
}

/// What the pool is built for.
#[derive(Clone, Debug)]
pub struct PoolQuery<'a> {
    /// Query text.
    pub text: &'a str,
    /// Query embedding, if the client supplied one.
    pub embedding: Option<&'a [f32]>,
    /// The session's project.
    pub project: Option<&'a str>,
    /// The session (to mark memories already shown in it).
    pub session: Option<&'a str>,
    /// The moment of the query.
    pub now: Ts,
}

/// Facts about the query shared by every source.
struct QueryInfo {
    corpus: u64,
    query_terms: Vec<text::QueryTerm>,
    fts_query: Option<String>,
    /// The words `fts_query` ORs, in its order.
    fts_phrases: Vec<String>,
}

fn query_info(store: &Store, text_: &str, limits: &PoolLimits) -> Result<QueryInfo> {
    let corpus: i64 = store
        .conn()
        .prepare_cached("SELECT value FROM engram_counters WHERE name = 'live_memories'")
        .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
        .sql("count memories")?
        .unwrap_or(0);
    let corpus = corpus.max(0) as u64;
    let terms = text::query_terms(text_);
    let words = text::fts_words(text_);
    let mut wanted: Vec<String> = terms.clone();
    wanted.extend(words.iter().cloned());
    let df = document_frequencies(store, &wanted)?;
    let query_terms = terms
        .iter()
        .map(|t| text::QueryTerm {
            text: t.clone(),
            hash: predictor::tokenizer::fnv1a64(t.as_bytes()),
            idf: text::idf(df.get(t).copied().unwrap_or(0), corpus),
        })
        .collect();
    // FTS5 scores every document matching any word, so the cost of BM25 is the
    // sum of the words' document frequencies. Keep the rarest words while that
    // sum stays under `max_postings` (common words carry almost no BM25 weight);
    // the rarest word is always kept.
    let mut by_df: Vec<(u64, &String)> = words.iter().map(|w| (df.get(w).copied().unwrap_or(0), w)).collect();
    by_df.sort();
    let mut budget = 0u64;
    let mut kept: Vec<&str> = Vec::new();
    for (d, w) in by_df {
        if !kept.is_empty() && budget + d > limits.max_postings {
            break;
        }
        budget += d;
        kept.push(w);
    }
    let fts_text = kept.join(" ");
    let fts_phrases = text::fts_phrases(&fts_text, &df, limits.fts_terms);
    let fts_query = text::phrase_query(&fts_phrases);
    Ok(QueryInfo { corpus, query_terms, fts_query, fts_phrases })
}

/// Builds the pool for a query. (Limits are written into the SQL rather than
/// bound, so that each source is one cached statement.)
pub fn gather(store: &Store, q: &PoolQuery<'_>, limits: &PoolLimits) -> Result<Pool> {
    gather_in(store, q, None, limits)
}

/// [`gather`] for a session in `env`: memories learned in projects of the
/// same stack join the pool (source `stack`, `shared::domain::env::rank`).
pub fn gather_in(store: &Store, q: &PoolQuery<'_>, env: Option<&EnvDetected>, limits: &PoolLimits) -> Result<Pool> {
    let info = query_info(store, q.text, limits)?;
    let mut order: Vec<i64> = Vec::new();
    let mut sources: HashMap<i64, BTreeSet<&'static str>> = HashMap::new();
    let mut add = |rowid: i64, src: &'static str| {
        let entry = sources.entry(rowid).or_default();
        if entry.is_empty() {
            order.push(rowid);
        }
        entry.insert(src);
    };
    for rowid in query_rowids(
        store,
        &format!(
            "SELECT rowid FROM memories WHERE pinned = 1 AND is_deleted = 0 ORDER BY decay_key DESC LIMIT {}",
            limits.pinned
        ),
        [],
    )? {
        add(rowid, source::PINNED);
    }
    let hits = match &info.fts_query {
        Some(expr) => bm25_top(store, expr, &info.fts_phrases, limits.bm25)?,
        None => Vec::new(),
    };
    for &(rowid, _) in &hits {
        add(rowid, source::BM25);
    }
    let neighbor = neighbor_scores(store, &hits, limits, None)?;
    for &rowid in neighbor.near.keys() {
        add(rowid, source::NEIGHBOR);
    }
    let graph = graph_scores(store, &hits, limits.graph_hits, None)?;
    for &rowid in graph.keys() {
        add(rowid, source::GRAPH);
    }
    let mut vector_sim: HashMap<i64, f32> = HashMap::new();
    if let Some(qe) = q.embedding {
        for (rowid, sim) in vector_top(store, qe, limits)? {
            vector_sim.insert(rowid, sim);
            add(rowid, source::VECTOR);
        }
    }
    if let Some(project) = q.project {
        for rowid in query_rowids(
            store,
            &format!(
                "SELECT rowid FROM memories WHERE project = ?1 AND is_deleted = 0 AND deprecated = 0
                 ORDER BY decay_key DESC LIMIT {}",
                limits.effective
            ),
            [project],
        )? {
            add(rowid, source::EFFECTIVE);
        }
    }
    for rowid in query_rowids(
        store,
        &format!(
            "SELECT rowid FROM memories WHERE is_deleted = 0 AND deprecated = 0 ORDER BY decay_key DESC LIMIT {}",
            limits.effective
        ),
        [],
    )? {
        add(rowid, source::EFFECTIVE);
    }
    if let Some(env) = env {
        let stack =
            crate::domain::env::rank::stack_candidates(store.conn(), env, limits.pinned).sql("stack candidates")?;
        for rowid in stack {
            add(rowid, source::STACK);
        }
    }
    if order.len() > limits.pool {
        // Only pinned and text candidates can outrank the others (see
        // `keep_best`): load the rest just for the places they leave.
        let first = |r: &i64| keep_class(sources.get(r)) < Keep::Other;
        let mut spare = limits.pool.saturating_sub(order.iter().filter(|r| first(r)).count());
        order.retain(|r| {
            first(r) || {
                let keep = spare > 0;
                spare = spare.saturating_sub(1);
                keep
            }
        });
    }
    let mut memories = load_rows(store, &order)?;
    let context = context_scores(&memories, &neighbor, &info.query_terms);
    if memories.len() > limits.pool {
        keep_best(&mut memories, limits.pool, &sources, &context, &neighbor, &graph);
    }
    finish(store, q, info, memories, sources, &hits, &neighbor, &context, &vector_sim, &graph)
}

/// Which candidates a full pool keeps first, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Keep {
    Pinned,
    /// BM25 hits and their neighbours, ordered among themselves by context.
    Text,
    Other,
}

fn keep_class(sources: Option<&BTreeSet<&'static str>>) -> Keep {
    let has = |s: &str| sources.is_some_and(|set| set.contains(s));
    if has(source::PINNED) || has(source::STACK) {
        Keep::Pinned
    } else if has(source::BM25) || has(source::NEIGHBOR) || has(source::GRAPH) {
        Keep::Text
    } else {
        Keep::Other
    }
}

/// Keeps the `keep` most promising candidates: pinned memories first, then
/// the text candidates (BM25 hits and their neighbours) by their context
/// scores, then the rest in gathering order. BM25 alone ranks a hit without
/// the turn before it, so the window read with its neighbours is the better
/// prior for what the rankers should see.
fn keep_best(
    memories: &mut Vec<PoolMemory>,
    keep: usize,
    sources: &HashMap<i64, BTreeSet<&'static str>>,
    context: &HashMap<i64, [f32; 4]>,
    neighbor: &Neighbours,
    graph: &HashMap<i64, f32>,
) {
    let max = |i: usize| context.values().map(|c| c[i]).fold(f32::MIN_POSITIVE, f32::max);
    let (before_max, wide_max) = (max(0), max(2));
    let prior = |m: &PoolMemory| match keep_class(sources.get(&m.rowid)) {
        Keep::Text => {
            let c = context.get(&m.rowid).copied().unwrap_or_default();
            let near = neighbor.near.get(&m.rowid).copied().unwrap_or(0.0);
            let linked = graph.get(&m.rowid).copied().unwrap_or(0.0);
            (Keep::Text, -(c[2] / wide_max + c[0] / before_max + 0.3 * near + 0.3 * linked))
        }
        class => (class, 0.0f32),
    };
    let mut keyed: Vec<((Keep, f32), usize)> = memories.iter().enumerate().map(|(i, m)| (prior(m), i)).collect();
    keyed.sort_by(|a, b| a.0.0.cmp(&b.0.0).then(a.0.1.total_cmp(&b.0.1)).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<usize> = keyed.into_iter().take(keep).map(|(_, i)| i).collect();
    chosen.sort_unstable();
    let mut slots: Vec<Option<PoolMemory>> = std::mem::take(memories).into_iter().map(Some).collect();
    *memories = chosen.into_iter().filter_map(|i| slots[i].take()).collect();
}

/// Scores each memory with BM25 over the windows of its source session (see
/// [`CandidateSignals::context_before`]): `[before, after, wide, answers]` by
/// rowid (`answers`: BM25 of the memory just before when that one is a
/// question, else 0). Adjacency comes from the neighbour queries; a
/// neighbour that is not loaded adds nothing to a window.
fn context_scores(memories: &[PoolMemory], neighbor: &Neighbours, query: &[text::QueryTerm]) -> HashMap<i64, [f32; 4]> {
    let bags: HashMap<i64, &text::Bag> = memories.iter().map(|m| (m.rowid, &m.bag)).collect();
    let avg_len = if memories.is_empty() {
        0.0
    } else {
        (memories.iter().map(|m| m.bag.total()).sum::<f32>() / memories.len() as f32).max(1.0)
    };
    let prev = |r: i64| neighbor.prev.get(&r).copied();
    let next = |r: i64| neighbor.next.get(&r).copied();
    let window = |members: &[Option<i64>]| -> f32 {
        let w: Vec<&text::Bag> = members.iter().flatten().filter_map(|r| bags.get(r).copied()).collect();
        text::window_bm25(query, &w, avg_len)
    };
    let questions: BTreeSet<i64> = memories.iter().filter(|m| m.facts.is_question).map(|m| m.rowid).collect();
    memories
        .iter()
        .map(|m| {
            let r = m.rowid;
            let p = prev(r);
            let before = window(&[p, Some(r)]);
            let after = window(&[Some(r), next(r)]);
            let wide = window(&[p.and_then(prev), p, Some(r), next(r)]);
            let answers = p.filter(|p| questions.contains(p)).map_or(0.0, |p| window(&[Some(p)]));
            (r, [before, after, wide, answers])
        })
        .collect()
}

/// Builds the pool for a fixed set of memories (re-scoring a recorded ranking,
/// canary sets, evaluation): the same signals, with BM25 ranks and neighbours
/// computed within the set, and the caller's order kept.
pub fn gather_fixed(store: &Store, q: &PoolQuery<'_>, ids: &[MemoryId]) -> Result<Pool> {
    let limits = PoolLimits::default();
    let info = query_info(store, q.text, &limits)?;
    let mut rowids = Vec::with_capacity(ids.len());
    for id in ids {
        let rowid: Option<i64> = store
            .conn()
            .prepare_cached("SELECT rowid FROM memories WHERE id = ?1")
            .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
            .sql("find memory")?;
        rowids.extend(rowid);
    }
    let hits = match &info.fts_query {
        Some(expr) => query_scored(
            store,
            "SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ?1
             AND rowid IN (SELECT value FROM json_each(?2)) ORDER BY rank",
            params![expr, serde_json::to_string(&rowids).unwrap_or_else(|_| "[]".into())],
        )?,
        None => Vec::new(),
    };
    let set: BTreeSet<i64> = rowids.iter().copied().collect();
    let neighbor = neighbor_scores(store, &hits, &limits, Some(&set))?;
    let mut sources: HashMap<i64, BTreeSet<&'static str>> = HashMap::new();
    for &(rowid, _) in &hits {
        sources.entry(rowid).or_default().insert(source::BM25);
    }
    for &rowid in neighbor.near.keys() {
        sources.entry(rowid).or_default().insert(source::NEIGHBOR);
    }
    let graph = graph_scores(store, &hits, limits.graph_hits, Some(&set))?;
    for &rowid in graph.keys() {
        sources.entry(rowid).or_default().insert(source::GRAPH);
    }
    let memories = load_rows(store, &rowids)?;
    let context = context_scores(&memories, &neighbor, &info.query_terms);
    finish(store, q, info, memories, sources, &hits, &neighbor, &context, &HashMap::new(), &graph)
}

/// Computes the signals of the loaded pool memories (their bags already made
/// by [`context_scores`]), keeping their order.
#[allow(clippy::too_many_arguments)]
fn finish(
    store: &Store,
    q: &PoolQuery<'_>,
    info: QueryInfo,
    mut memories: Vec<PoolMemory>,
    mut sources: HashMap<i64, BTreeSet<&'static str>>,
    hits: &[(i64, f32)],
    neighbor: &Neighbours,
    context: &HashMap<i64, [f32; 4]>,
    vector_sim: &HashMap<i64, f32>,
    graph: &HashMap<i64, f32>,
) -> Result<Pool> {
    let bm25: HashMap<i64, (f32, u32)> =
        hits.iter().enumerate().map(|(i, (rowid, s))| (*rowid, (*s, i as u32 + 1))).collect();
    let ids = memory_ids(&memories);
    let shown = shown_in_session(store, q.session, &ids, None)?;
    let history = usage_history(store, &ids)?;
    let query_tag_terms: BTreeSet<&str> = info.query_terms.iter().map(|t| t.text.as_str()).collect();
    // The best and second-best normalised hit per source session, to score
    // each memory by the *other* hits of its session.
    let max_hit = hits.iter().map(|h| h.1).fold(f32::MIN_POSITIVE, f32::max);
    let mut session_hits: HashMap<&str, [(i64, f32); 2]> = HashMap::new();
    for m in &memories {
        if let (Some(session), Some((score, _))) = (m.source_session.as_deref(), bm25.get(&m.rowid)) {
            let best = session_hits.entry(session).or_insert([(0, 0.0); 2]);
            let v = score / max_hit;
            if v > best[0].1 {
                best[1] = best[0];
                best[0] = (m.rowid, v);
            } else if v > best[1].1 {
                best[1] = (m.rowid, v);
            }
        }
    }
    let session_match: HashMap<i64, f32> = memories
        .iter()
        .filter_map(|m| {
            let best = session_hits.get(m.source_session.as_deref()?)?;
            Some((m.rowid, if best[0].0 == m.rowid { best[1].1 } else { best[0].1 }))
        })
        .collect();
    let asks_time = text::asks_about_time(q.text);
    let asks_quantity = text::asks_quantity(q.text);
    let query_dates = text::query_dates(q.text);
    for m in &mut memories {
        m.sources = sources.remove(&m.rowid).unwrap_or_default();
        let age_days = ((q.now.0 - m.created_ms).max(0) as f64 / 86_400_000.0) as f32;
        let tag_bag = text::bag_of_words(&m.tags.join(" "));
        let (overlap, matched) = text::lexical_overlap(&info.query_terms, &m.bag, &tag_bag);
        m.matched = matched.into_iter().map(str::to_owned).collect();
        // A tag matches when one of its tokens (same tokenizer, so stemmed
        // like the query) is a query term.
        let tag_overlap = if m.tags.is_empty() {
            0.0
        } else {
            let matches = |tag: &String| {
                let mut hit = false;
                predictor::tokenizer::for_each_token(tag, |t| hit |= query_tag_terms.contains(t));
                hit
            };
            m.tags.iter().filter(|t| matches(t)).count() as f32 / m.tags.len() as f32
        };
        let effective = predictor::baseline::effective_score(m.signals.importance, age_days, m.pinned);
        let (injected, useful) = history.get(&m.id).copied().unwrap_or((0, 0.0));
        let hit = bm25.get(&m.rowid);
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let ctx = context.get(&m.rowid).copied().unwrap_or_default();
        m.signals = CandidateSignals {
            age_days,
            bm25_score: hit.map(|h| h.0),
            bm25_rank: hit.map(|h| h.1),
            superseded: m.superseded,
            effective_score: if m.superseded { effective * 0.1 } else { effective },
            project_match: q.project.is_some() && m.project.as_deref() == q.project,
            tag_overlap,
            times_injected: injected,
            times_useful: useful,
            lexical_overlap: overlap,
            neighbor_score: neighbor.near.get(&m.rowid).copied().unwrap_or(0.0),
            session_match: session_match.get(&m.rowid).copied().unwrap_or(0.0),
            content_terms: u32::try_from(m.bag.len()).unwrap_or(u32::MAX),
            follows_hit: neighbor.follows.get(&m.rowid).copied().unwrap_or(0.0),
            precedes_hit: neighbor.precedes.get(&m.rowid).copied().unwrap_or(0.0),
            time_match: flag(asks_time && m.facts.states_time),
            context_before: ctx[0],
            context_after: ctx[1],
            context_wide: ctx[2],
            is_question: flag(m.facts.is_question),
            follows_question: ctx[3],
            quantity_match: flag(asks_quantity && m.facts.states_number),
            proper_nouns: m.facts.proper_nouns,
            states_number: flag(m.facts.states_number),
            states_time: flag(m.facts.states_time),
            first_person: flag(m.facts.first_person),
            date_match: text::date_fit(&query_dates, Ts(m.created_ms).civil_date()),
            graph_score: graph.get(&m.rowid).copied().unwrap_or(0.0),
            ..m.signals
        };
        m.vector_similarity = vector_sim.get(&m.rowid).copied();
        m.shown = shown.contains(m.id.as_str());
    }
    Ok(Pool { memories, corpus: info.corpus, fts_query: info.fts_query, query_terms: info.query_terms })
}

/// For the strongest `max_hits` hits, the memories one knowledge-graph edge
/// away (any relation but `supersedes`; forgotten ones left out), each with
/// the best normalised BM25 of a hit it is linked to times the edge's
/// strength. With `within`, only members of that set count.
fn graph_scores(
    store: &Store,
    hits: &[(i64, f32)],
    max_hits: usize,
    within: Option<&BTreeSet<i64>>,
) -> Result<HashMap<i64, f32>> {
    let mut out: HashMap<i64, f32> = HashMap::new();
    if max_hits == 0 || hits.is_empty() {
        return Ok(out);
    }
    let max_hit = hits.iter().map(|h| h.1).fold(f32::MIN_POSITIVE, f32::max);
    let strongest: Vec<(i64, f32)> = hits.iter().take(max_hits).copied().collect();
    let scores: HashMap<i64, f32> = strongest.iter().map(|&(r, s)| (r, s / max_hit)).collect();
    let list = serde_json::to_string(&strongest.iter().map(|h| h.0).collect::<Vec<i64>>()).unwrap_or_default();
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT h.value, o.rowid, e.strength FROM json_each(?1) h
             CROSS JOIN memories s ON s.rowid = h.value
             CROSS JOIN knowledge_edges e ON e.from_id = s.id
             CROSS JOIN memories o ON o.id = e.to_id
             WHERE e.relation != 'supersedes' AND o.is_deleted = 0
             UNION ALL
             SELECT h.value, o.rowid, e.strength FROM json_each(?1) h
             CROSS JOIN memories s ON s.rowid = h.value
             CROSS JOIN knowledge_edges e ON e.to_id = s.id
             CROSS JOIN memories o ON o.id = e.from_id
             WHERE e.relation != 'supersedes' AND o.is_deleted = 0
             LIMIT 400",
        )
        .sql("prepare graph neighbours")?;
    let rows = stmt
        .query_map([&list], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, f64>(2)?)))
        .sql("read graph neighbours")?;
    for row in rows {
        let (hit, other, strength) = row.sql("read graph neighbours")?;
        if within.is_some_and(|w| !w.contains(&other)) {
            continue;
        }
        let v = scores.get(&hit).copied().unwrap_or(0.0) * strength as f32;
        let e = out.entry(other).or_insert(0.0);
        *e = e.max(v);
    }
    Ok(out)
}

/// Scores from the neighbours of the strongest `limits.neighbor_hits` hits.
#[derive(Debug, Default)]
struct Neighbours {
    /// Best normalised BM25 of a hit a memory neighbours, divided by the distance.
    near: BTreeMap<i64, f32>,
    /// The same, counting only hits that come just before the memory.
    follows: BTreeMap<i64, f32>,
    /// The same, counting only hits that come just after the memory.
    precedes: BTreeMap<i64, f32>,
    /// The memory just before, for every memory the neighbour queries reached.
    prev: HashMap<i64, i64>,
    /// The memory just after, likewise.
    next: HashMap<i64, i64>,
}

/// For the strongest `limits.neighbor_hits` hits (best first), the memories up
/// to `limits.neighbor_window` places before and after each in its source
/// session. With `within`, only members of that set count.
fn neighbor_scores(
    store: &Store,
    hits: &[(i64, f32)],
    limits: &PoolLimits,
    within: Option<&BTreeSet<i64>>,
) -> Result<Neighbours> {
    let max = hits.iter().map(|h| h.1).fold(f32::MIN_POSITIVE, f32::max);
    let mut out = Neighbours::default();
    if hits.is_empty() {
        return Ok(out);
    }
    let mut sessions = Sessions::default();
    for &(hit, score) in hits.iter().take(limits.neighbor_hits) {
        // Rows come nearest first on each side, so each one is adjacent to
        // the previous row of its side (the hit itself for the first).
        let (mut last_before, mut last_after) = (hit, hit);
        for (rowid, distance, after) in neighbours(store, hit, limits.neighbor_window, &mut sessions)? {
            if after {
                out.next.insert(last_after, rowid);
                out.prev.insert(rowid, last_after);
                last_after = rowid;
            } else {
                out.prev.insert(last_before, rowid);
                out.next.insert(rowid, last_before);
                last_before = rowid;
            }
            if within.is_none_or(|set| set.contains(&rowid)) {
                let value = score / max / distance as f32;
                let s = out.near.entry(rowid).or_insert(0.0f32);
                *s = s.max(value);
                let side = if after { &mut out.follows } else { &mut out.precedes };
                let f = side.entry(rowid).or_insert(0.0f32);
                *f = f.max(value);
            }
        }
    }
    Ok(out)
}

/// The `limit` best BM25 hits of the FTS5 expression `expr` (OR-ing the
/// quoted `phrases`), best first (ties: lower rowid first), as `ORDER BY rank
/// LIMIT n` would return them: from the postings when [`bm25::top`] can
/// (the same scores, without FTS5's per-match cost), else from FTS5. FTS5
/// scores every match either way; choosing the best here spares its sorter
/// (a second statement compiled for every query, each match's position
/// lists copied and sorted): about a third of the cost of FTS5's BM25.
fn bm25_top(store: &Store, expr: &str, phrases: &[String], limit: usize) -> Result<Vec<(i64, f32)>> {
    if let Some(top) = bm25::top(store, phrases, limit) {
        return Ok(top.into_iter().map(|(rowid, score)| (rowid, score as f32)).collect());
    }
    let mut stmt = store
        .conn()
        .prepare_cached("SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ?1")
        .sql("prepare search")?;
    let rows = stmt.query_map([expr], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))).sql("search")?;
    let mut hits = rows.collect::<rusqlite::Result<Vec<(i64, f64)>>>().sql("search")?;
    let better = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by(limit - 1, better);
    }
    hits.truncate(limit);
    hits.sort_unstable_by(better);
    Ok(hits.into_iter().map(|(rowid, score)| (rowid, score as f32)).collect())
}

fn query_scored(store: &Store, sql: &str, p: impl rusqlite::Params) -> Result<Vec<(i64, f32)>> {
    let mut stmt = store.conn().prepare_cached(sql).sql("prepare search")?;
    let rows = stmt.query_map(p, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)? as f32))).sql("search")?;
    rows.collect::<rusqlite::Result<Vec<_>>>().sql("search")
}

fn query_rowids(store: &Store, sql: &str, p: impl rusqlite::Params) -> Result<Vec<i64>> {
    let mut stmt = store.conn().prepare_cached(sql).sql("prepare candidate query")?;
    let rows = stmt.query_map(p, |r| r.get(0)).sql("candidate query")?;
    rows.collect::<rusqlite::Result<Vec<i64>>>().sql("candidate query")
}

fn document_frequencies(store: &Store, terms: &[String]) -> Result<HashMap<String, u64>> {
    let mut out = HashMap::new();
    let mut stmt = store.conn().prepare_cached("SELECT df FROM memory_terms WHERE term = ?1").sql("prepare df")?;
    for t in terms {
        if let Some(df) = stmt.query_row([t], |r| r.get::<_, i64>(0)).optional().sql("read df")? {
            out.insert(t.clone(), df.max(0) as u64);
        }
    }
    Ok(out)
}

/// The live memories of each source session read so far, in time order
/// (`created_ms`, then rowid): hits of one session share one read.
type Sessions = HashMap<String, Vec<(i64, i64)>>;

/// The memories up to `window` places before and after `rowid` in its source
/// session, nearest first on each side (before, then after), with their
/// distance (1 = adjacent) and whether they come after it. The session's
/// live memories are read once, in full, through the covering index on
/// (source_session, created_ms, is_deleted), and ordered here: two queries
/// per hit (`ORDER BY created_ms, rowid` with a `LIMIT`) read as much, since
/// the index does not hold the rows in rowid order within a time and each
/// query sorted every row of its side.
fn neighbours(store: &Store, rowid: i64, window: usize, sessions: &mut Sessions) -> Result<Vec<(i64, u32, bool)>> {
    let conn = store.conn();
    let row: Option<(Option<String>, i64)> = conn
        .prepare_cached("SELECT source_session, created_ms FROM memories WHERE rowid = ?1")
        .and_then(|mut s| s.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .sql("read memory")?;
    let Some((Some(session), created)) = row else { return Ok(Vec::new()) };
    if !sessions.contains_key(&session) {
        let mut stmt = conn
            .prepare_cached("SELECT created_ms, rowid FROM memories WHERE source_session = ?1 AND is_deleted = 0")
            .sql("prepare neighbours")?;
        let rows =
            stmt.query_map([&session], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))).sql("read neighbours")?;
        let mut members = rows.collect::<rusqlite::Result<Vec<_>>>().sql("read neighbours")?;
        members.sort_unstable();
        sessions.insert(session.clone(), members);
    }
    let members = sessions.get(&session).map_or(&[][..], Vec::as_slice);
    // Members strictly before and strictly after (created, rowid).
    let split = members.partition_point(|m| *m < (created, rowid));
    let after_start = members.partition_point(|m| *m <= (created, rowid));
    let mut out = Vec::with_capacity(2 * window);
    for (i, m) in members[..split].iter().rev().take(window).enumerate() {
        out.push((m.1, i as u32 + 1, false));
    }
    for (i, m) in members[after_start..].iter().take(window).enumerate() {
        out.push((m.1, i as u32 + 1, true));
    }
    Ok(out)
}

fn vector_top(store: &Store, query: &[f32], limits: &PoolLimits) -> Result<Vec<(i64, f32)>> {
    let mut stmt = store
        .conn()
        .prepare_cached(&format!(
            "SELECT m.rowid, e.vector FROM embeddings e JOIN memories m ON m.id = e.source_id
             WHERE e.source_type = 'memory' AND e.dimensions = ?1 AND m.is_deleted = 0
             ORDER BY e.rowid DESC LIMIT {}",
            limits.vector_scan
        ))
        .sql("prepare vector scan")?;
    let rows = stmt
        .query_map(params![query.len() as i64], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))
        .sql("vector scan")?;
    let mut scored = Vec::new();
    for row in rows {
        let (rowid, blob) = row.sql("vector scan")?;
        let v = blob_to_vector(&blob);
        let sim = predictor::diversity::cosine(query, &v);
        if sim.is_finite() && sim > 0.0 {
            scored.push((rowid, sim));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limits.vector);
    Ok(scored)
}

/// Decodes a little-endian f32 blob (Signet's embedding format).
pub fn blob_to_vector(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn load_rows(store: &Store, rowids: &[i64]) -> Result<Vec<PoolMemory>> {
    // One statement for the whole list, in its order: `json_each` drives the
    // join (CROSS JOIN fixes the loop order) and each row is a rowid seek.
    // An `IN (json_each(..))` filter instead lets the planner scan the whole
    // table through an index on is_deleted; a statement per rowid pays a
    // reset, a bind and a step for each.
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT m.rowid, m.id, m.content, m.type, m.project, m.tags, m.source_session, m.speaker, m.created_ms,
                    m.deprecated, m.superseded_by, m.pinned, m.importance, m.access_count, m.has_embedding,
                    m.text_terms, m.prerequisites, m.env_tags, m.env_projects
             FROM json_each(?1) AS j CROSS JOIN memories AS m ON m.rowid = j.value
             WHERE m.is_deleted = 0",
        )
        .sql("prepare pool rows")?;
    let list = serde_json::to_string(rowids).unwrap_or_else(|_| "[]".into());
    let rows = stmt.query_map([list], pool_row).sql("pool rows")?;
    rows.collect::<rusqlite::Result<Vec<PoolMemory>>>().sql("pool rows")
}

/// A pool memory from a row of [`load_rows`]'s statement.
fn pool_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PoolMemory> {
    let tags: String = r.get(5)?;
    let deprecated: bool = r.get(9)?;
    let superseded_by: Option<String> = r.get(10)?;
    let pinned: bool = r.get(11)?;
    let importance: f64 = r.get(12)?;
    let access: i64 = r.get(13)?;
    let has_embedding: bool = r.get(14)?;
    let content: String = r.get(2)?;
    let text = text::MemoryText::stored_or_of(r.get_ref(15)?.as_blob().ok(), &content);
    Ok(PoolMemory {
        rowid: r.get(0)?,
        id: MemoryId(r.get(1)?),
        content,
        memory_type: r.get(3)?,
        project: r.get(4)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        source_session: r.get(6)?,
        speaker: r.get(7)?,
        created_ms: r.get(8)?,
        superseded: deprecated || superseded_by.is_some(),
        pinned,
        sources: BTreeSet::new(),
        signals: CandidateSignals {
            importance: importance as f32,
            access_count: u32::try_from(access.max(0)).unwrap_or(u32::MAX),
            pinned,
            has_embedding,
            ..CandidateSignals::default()
        },
        matched: Vec::new(),
        vector_similarity: None,
        shown: false,
        bag: text.bag,
        facts: text.facts,
        prerequisites: r.get(16)?,
        env_tags: crate::domain::env::store::parse_tags(&r.get::<_, String>(17)?),
        env_projects: u32::try_from(r.get::<_, i64>(18)?.max(0)).unwrap_or(u32::MAX),
        excluded: None,
    })
}

/// Which of the memories `ids` (a JSON array, [`memory_ids`]) were injected
/// earlier in `session` and are still in the agent's context (injected after
/// the session's last context reset, the projection's or `reset_ms`): one key
/// seek per pool memory on (session, memory), rather than reading every
/// memory the session was ever shown (hundreds in a long session, read row
/// by row through the table for `was_injected`).
pub(crate) fn shown_in_session(
    store: &Store,
    session: Option<&str>,
    ids: &str,
    reset_ms: Option<i64>,
) -> Result<BTreeSet<String>> {
    let Some(session) = session else { return Ok(BTreeSet::new()) };
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT j.value FROM json_each(?2) AS j
             CROSS JOIN session_memories AS s ON s.session_key = ?1 AND s.memory_id = j.value
             WHERE s.was_injected = 1
               AND COALESCE(s.last_injected_ms, 0) > MAX(
                   COALESCE((SELECT context_reset_ms FROM sessions WHERE session_key = ?1), -1), ?3)",
        )
        .sql("prepare shown")?;
    let rows = stmt.query_map(params![session, ids, reset_ms.unwrap_or(-1)], |r| r.get(0)).sql("shown")?;
    rows.collect::<rusqlite::Result<BTreeSet<String>>>().sql("shown")
}

/// Sessions each of the memories `ids` (a JSON array, [`memory_ids`]) was
/// injected in and the sum of its positive labels (`memory_usage`, kept by
/// the apply: one row per candidate).
fn usage_history(store: &Store, ids: &str) -> Result<HashMap<MemoryId, (u32, f32)>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT j.value, u.sessions_injected, MAX(u.useful, 0) FROM json_each(?1) AS j
             CROSS JOIN memory_usage AS u ON u.memory_id = j.value",
        )
        .sql("prepare usage history")?;
    let rows = stmt
        .query_map([ids], |r| {
            let (injected, useful): (i64, f64) = (r.get(1)?, r.get(2)?);
            Ok((MemoryId(r.get(0)?), (u32::try_from(injected.max(0)).unwrap_or(u32::MAX), useful as f32)))
        })
        .sql("usage history")?;
    rows.collect::<rusqlite::Result<HashMap<MemoryId, (u32, f32)>>>().sql("usage history")
}

/// The ids of `memories` as a JSON array, for a `json_each` join: one
/// statement seeks them all (a statement per memory paid a reset, a bind
/// and a step each).
pub(crate) fn memory_ids(memories: &[PoolMemory]) -> String {
    let ids: Vec<&str> = memories.iter().map(|m| m.id.as_str()).collect();
    serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into())
}

/// FTS5 BM25 over all live memories for `text` (every non-stop word OR-ed, no
/// postings bound): the "BM25 alone" ranking of evaluations. Best first.
pub fn bm25_search(store: &Store, text_: &str, limit: usize) -> Result<Vec<(MemoryId, f32)>> {
    let Some(expr) = text::fts_query(text_, &HashMap::new(), usize::MAX) else { return Ok(Vec::new()) };
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT m.id, -f.rank FROM memories_fts f JOIN memories m ON m.rowid = f.rowid
             WHERE memories_fts MATCH ?1 AND m.is_deleted = 0 ORDER BY f.rank LIMIT ?2",
        )
        .sql("prepare bm25 search")?;
    let rows = stmt
        .query_map(params![expr, limit as i64], |r| Ok((MemoryId(r.get(0)?), r.get::<_, f64>(1)? as f32)))
        .sql("bm25 search")?;
    rows.collect::<rusqlite::Result<Vec<_>>>().sql("bm25 search")
}
