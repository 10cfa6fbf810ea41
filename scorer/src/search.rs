//! Memory search for `engram-scorer search` and the MCP tool `memory_search`:
//! the ranking pipeline with trigger `search`, filtered (type, project, tags,
//! dates), keeping only memories with evidence of relevance to the query.
//!
//! The search is recorded like any ranking: a `ranking.served` event whose
//! "injected" candidates are the results returned, and, within a session, an
//! `fts.hits` event naming the memories full-text search matched (what the
//! agent looked for is a behavioural signal for the trainer).

use std::collections::BTreeSet;

use serde::Serialize;
use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::time::Ts;
use shared::domain::rank::{self, RankRequest, RankedMemory, ServingModel};
use shared::storage::event::{Body, Event, FtsHits, MemoryType, trigger};
use shared::storage::store::Store;

use crate::error::{Error, Result};
use crate::native::writer_name;

/// Most results of one search.
pub const MAX_LIMIT: usize = 100;

/// What to search for.
#[derive(Clone, Debug, Default)]
pub struct SearchParams {
    /// The query text.
    pub query: String,
    /// Only this memory type (a knowledge type lists every kind under it).
    pub memory_type: Option<MemoryType>,
    /// Only this project.
    pub project: Option<String>,
    /// Only memories carrying every one of these tags.
    pub tags: Vec<String>,
    /// Only memories created at or after this time.
    pub from: Option<Ts>,
    /// Only memories created at or before this time.
    pub to: Option<Ts>,
    /// Most results.
    pub limit: usize,
    /// The session searching, if known.
    pub session: Option<SessionKey>,
    /// Only memories in this category or below it (`shared::domain::env::categories`).
    pub category: Option<String>,
}

/// One result.
#[derive(Clone, Debug, Serialize)]
pub struct SearchHit {
    /// Memory id.
    pub id: String,
    /// Type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    /// The knowledge type it is listed under.
    pub knowledge_type: MemoryType,
    /// Text.
    pub text: String,
    /// Fused score.
    pub score: f32,
    /// Rank among the results: 1, 2, 3… (the candidates the filters left
    /// out leave no gaps).
    pub rank: u32,
    /// Project.
    pub project: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Pinned.
    pub pinned: bool,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Why it matched.
    pub reasons: Vec<String>,
}

/// The results of a search.
#[derive(Clone, Debug, Serialize)]
pub struct SearchResult {
    /// The query.
    pub query: String,
    /// The recorded ranking.
    pub ranking_id: String,
    /// Results, best first.
    pub results: Vec<SearchHit>,
    /// Candidates ranked.
    pub candidates: usize,
}

fn evidence(it: &RankedMemory) -> bool {
    let m = &it.memory;
    let s = &m.signals;
    s.bm25_score.is_some()
        || s.neighbor_score > 0.0
        || s.lexical_overlap >= 0.3
        || m.vector_similarity.is_some_and(|v| v >= 0.5)
}

fn keep(it: &RankedMemory, p: &SearchParams, in_category: Option<&BTreeSet<String>>) -> bool {
    let m = &it.memory;
    in_category.is_none_or(|ids| ids.contains(m.id.as_str()))
        && !m.superseded
        && !m.content.is_empty()
        && evidence(it)
        && p.memory_type.is_none_or(|t| t.lists(m.memory_type))
        && p.project.as_deref().is_none_or(|pr| m.project.as_deref() == Some(pr))
        && p.tags.iter().all(|t| m.tags.iter().any(|mt| mt.eq_ignore_ascii_case(t)))
        && p.from.is_none_or(|f| m.created_ms >= f.0)
        && p.to.is_none_or(|t| m.created_ms <= t.0)
}

/// Runs a search; returns the result and the events that record it (the
/// caller appends them).
pub fn search(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    p: &SearchParams,
    now: Ts,
) -> Result<(SearchResult, Vec<Event>)> {
    let query = p.query.trim();
    if query.is_empty() {
        return Err(Error::params("query", "is empty"));
    }
    let limit = p.limit.clamp(1, MAX_LIMIT);
    let resolved;
    let p = match &p.project {
        Some(given) => {
            resolved = SearchParams {
                project: Some(shared::domain::env::store::resolve_project(store.conn(), given)),
                ..p.clone()
            };
            &resolved
        }
        None => p,
    };
    let tz = config.time.zone();
    let req = RankRequest {
        query,
        query_embedding: None,
        // Shown-in-session does not hide search results: the session is only
        // recorded on the event.
        session: None,
        project: p.project.as_deref(),
        trigger: trigger::SEARCH,
        now,
        tz: &tz,
        k: limit,
        budget_chars: usize::MAX,
        require_match: true,
        explore_draw: 1.0,
        context_reset_ms: None,
    };
    let in_category = match &p.category {
        Some(c) => Some(
            shared::domain::env::categories::members(store.conn(), c)
                .map_err(|e| shared::base::error::Error::sqlite("read categories", e))?,
        ),
        None => None,
    };
    let mut ranking = rank::rank(store, config, model, &req)?;
    let chosen: Vec<usize> = ranking
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| keep(it, p, in_category.as_ref()))
        .map(|(i, _)| i)
        .take(limit)
        .collect();
    for (i, it) in ranking.items.iter_mut().enumerate() {
        it.injected = chosen.contains(&i);
    }
    for c in &mut ranking.served.candidates {
        c.injected = ranking.items.iter().any(|it| it.injected && it.memory.id == c.memory_id);
    }
    let results: Vec<SearchHit> = chosen
        .iter()
        .zip(1u32..)
        .map(|(&i, rank)| {
            let it = &ranking.items[i];
            let m = &it.memory;
            SearchHit {
                id: m.id.0.clone(),
                memory_type: m.memory_type,
                knowledge_type: m.memory_type.knowledge_type(),
                text: m.content.clone(),
                score: it.final_score,
                rank,
                project: m.project.clone(),
                tags: m.tags.clone(),
                pinned: m.pinned,
                created_at: Ts(m.created_ms).to_rfc3339(),
                reasons: it.reasons.clone(),
            }
        })
        .collect();
    let writer = writer_name();
    let mut events = Vec::new();
    let fts: Vec<_> = ranking
        .items
        .iter()
        .filter(|it| it.memory.signals.bm25_rank.is_some())
        .map(|it| it.memory.id.clone())
        .collect();
    let result = SearchResult {
        query: query.to_owned(),
        ranking_id: ranking.ranking_id.clone(),
        candidates: ranking.items.len(),
        results,
    };
    if !ranking.served.candidates.is_empty() {
        events.push(Event::new(now, &writer, p.session.clone(), Body::RankingServed(ranking.served)));
    }
    if p.session.is_some() && !fts.is_empty() {
        events.push(Event::new(
            now,
            &writer,
            p.session.clone(),
            Body::FtsHits(FtsHits { ranking_id: Some(ranking.ranking_id), memory_ids: fts }),
        ));
    }
    Ok((result, events))
}

/// The knowledge type, with the kind extraction stored when it differs
/// (`issue/gotcha`).
fn type_label(h: &SearchHit) -> String {
    h.memory_type.label()
}

/// The results as text for a terminal.
pub fn render(r: &SearchResult) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if r.results.is_empty() {
        let _ = writeln!(out, "no memory matches {:?} ({} candidates ranked)", r.query, r.candidates);
        return out;
    }
    for (i, h) in r.results.iter().enumerate() {
        let pin = if h.pinned { ", pinned" } else { "" };
        let project = h.project.as_deref().map(|p| format!(", {p}")).unwrap_or_default();
        let _ = writeln!(out, "{:>2}. {} [{}{project}{pin}] score {:.3}", i + 1, h.id, type_label(h), h.score);
        let _ = writeln!(out, "    {}", h.text.split_whitespace().collect::<Vec<_>>().join(" "));
        if !h.reasons.is_empty() {
            let _ = writeln!(out, "    why: {}", h.reasons.join("; "));
        }
    }
    out
}
