//! The knowledge routes (seed 004 "REST API"): typed memories, the graph
//! around a memory with its reasoning chain, stashed conversations, and the
//! observation buffer with the resolution of a staged conflict. Every answer
//! comes from [`shared::domain::knowledge`]'s own functions; resolving runs
//! [`shared::domain::knowledge::ops::resolve`], the operation behind the MCP tool
//! `memory_resolve`, so it lands on the tapes as the same events.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use shared::domain::knowledge::{self, buffer, conversation, graph};
use shared::domain::memory::ops;

use super::App;
use super::api::{ApiError, ApiResult, Params, body, read};
use super::queries::{self, MemoryQuery};
use super::state::Ctx;

fn to_json<T: serde::Serialize>(x: &T) -> ApiResult<Value> {
    serde_json::to_value(x).map_err(|e| ApiError::internal(e.to_string()))
}

/// The stored types listed under a seed 004 knowledge type.
fn stored_types(knowledge_type: &str) -> ApiResult<Vec<String>> {
    match shared::storage::event::MemoryType::parse(knowledge_type).filter(|t| t.is_knowledge_type()) {
        Some(t) => Ok(t.listed().into_iter().map(|t| t.as_str().to_owned()).collect()),
        None => {
            let names: Vec<&str> = shared::storage::event::MemoryType::KNOWLEDGE.iter().map(|t| t.as_str()).collect();
            Err(ApiError::bad_request(format!("type must be one of {}, not {knowledge_type:?}", names.join(", "))))
        }
    }
}

/// A project's name means its key once the project is known (as the MCP tools).
fn project(ctx: &Ctx<'_>, p: &Params) -> Option<String> {
    p.str("project").map(|name| shared::domain::env::store::resolve_project(ctx.store.conn(), &name))
}

/// `GET /api/knowledge`: memories as cards under seed 004's seven knowledge
/// types, the counts per knowledge type and the graph's edges per relation.
pub(super) async fn list_route(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["type", "project", "tag", "q", "pinned", "connected", "order", "limit", "offset"], |ctx| {
        let kt = p.str("type").filter(|t| t != "all");
        let types = match &kt {
            Some(t) => stored_types(t)?,
            None => Vec::new(),
        };
        let f = MemoryQuery {
            types,
            project: project(ctx, &p),
            tags: p.all("tag"),
            text: p.str("q"),
            pinned: p.bool("pinned")?,
            connected: p.bool("connected")?.unwrap_or(false),
            by_edges: p.choice("order", &["recent", "edges"], "recent")? == "edges",
            limit: p.num("limit", 60, 1, 500)?,
            offset: p.num("offset", 0, 0, 1_000_000)?,
            include_forgotten: false,
        };
        let mut v = queries::memories(ctx, &f)?;
        let mut by_type: std::collections::BTreeMap<&'static str, i64> =
            shared::storage::event::MemoryType::KNOWLEDGE.iter().map(|t| (t.as_str(), 0)).collect();
        if let Some(stored) = v["by_type"].as_object() {
            for (t, n) in stored {
                *by_type
                    .entry(shared::storage::event::MemoryType::from_stored(t).knowledge_type().as_str())
                    .or_default() += n.as_i64().unwrap_or(0);
            }
        }
        let cards = v["memories"].take();
        Ok(json!({
            "knowledge": cards,
            "total": v["total"],
            "offset": f.offset,
            "limit": f.limit,
            "type": kt,
            "by_type": by_type,
            "types": shared::storage::event::MemoryType::KNOWLEDGE,
            "edge_counts": graph::edge_counts(ctx.store)?,
        }))
    })
}

/// `GET /api/knowledge/:id/graph`: the breadth-first traversal around a
/// memory (nodes, edges with relation and strength), its direct connections
/// as read from it, and its reasoning (derivation) chain.
pub(super) async fn graph_route(State(app): State<App>, Path(id): Path<String>, p: Params) -> Response {
    read!(app, p, ["depth"], |ctx| {
        let default = ctx.config.knowledge.graph.max_depth.clamp(1, graph::HARD_MAX_DEPTH);
        let depth = p.num("depth", default, 1, graph::HARD_MAX_DEPTH)?;
        let id = id.trim();
        ops::require_live(ctx.store, id)?;
        let g = graph::traverse(ctx.store, id, depth, graph::Direction::Both)?
            .ok_or_else(|| ApiError::not_found(format!("no memory with id {id}")))?;
        let m = graph::memory_graph(ctx.store, id, depth)?;
        let mut v = to_json(&g)?;
        v["connections"] = to_json(&m.edges)?;
        v["reasoning_chain"] = to_json(&m.reasoning_chain)?;
        v["chain_depth_limited"] = json!(m.chain_depth_limited);
        v["superseded_by"] = json!(m.superseded_by);
        Ok(v)
    })
}

/// `GET /api/conversations`: stashed conversations (newest first), or those
/// matching `q`, and the latest checkpoints.
pub(super) async fn conversations_route(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["project", "group", "q", "include_resumed", "limit"], |ctx| {
        let limit = p.num("limit", 50, 1, 500)?;
        let include_resumed = p.bool("include_resumed")?.unwrap_or(false);
        let project = project(ctx, &p);
        let list = match p.str("q") {
            Some(q) => {
                let mut hits = conversation::search(ctx.store, &q)?;
                hits.retain(|c| {
                    (include_resumed || c.status == "stashed")
                        && project.as_ref().is_none_or(|p| c.project.as_ref() == Some(p))
                        && p.str("group").is_none_or(|g| c.group == g)
                });
                hits.truncate(limit);
                hits
            }
            None => conversation::list(
                ctx.store,
                &conversation::StashFilter { group: p.str("group"), project, include_resumed, limit },
            )?,
        };
        let with_commands: Vec<Value> = list
            .iter()
            .map(|c| {
                let mut v = to_json(c)?;
                let key = shared::base::ids::SessionKey::from(c.session.as_str());
                v["resume_command"] = json!(conversation::resume_command(key.harness(), key.harness_id()));
                Ok(v)
            })
            .collect::<ApiResult<_>>()?;
        let checkpoints = knowledge::checkpoint::list(ctx.store, None, 20)?;
        Ok(json!({"conversations": with_commands, "count": list.len(), "checkpoints": checkpoints}))
    })
}

/// `GET /api/staging`: the observation buffer (unresolved first) and its
/// counts per status.
pub(super) async fn staging_route(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["status", "project", "limit"], |ctx| {
        let status = match p.str("status") {
            None => None,
            Some(_) => Some(
                p.choice(
                    "status",
                    &["needs_clarification", "pending", "persisted", "discarded"],
                    "needs_clarification",
                )?
                .to_owned(),
            ),
        };
        let filter = buffer::StagedFilter { status, project: project(ctx, &p), limit: p.num("limit", 100, 1, 1000)? };
        let staged = buffer::list(ctx.store, &filter)?;
        Ok(json!({
            "counts": buffer::counts(ctx.store)?,
            "conflicts": buffer::pending_conflicts(ctx.store, None)?.len(),
            "staged": staged,
            "choices": knowledge::apply::action::CHOICES,
        }))
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveBody {
    action: String,
    existing_id: Option<String>,
}

/// `POST /api/staging/:id/resolve`: applies the user's choice for a staged
/// memory through [`knowledge::ops::resolve`] (the MCP tool's operation).
pub(super) async fn resolve_route(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let b: ResolveBody = match body(&headers, &bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    app.write(move |w| {
        let existing = b.existing_id.as_deref().map(str::trim).filter(|e| !e.is_empty());
        let r = knowledge::ops::resolve(w.journal, w.config, id.trim(), &b.action, existing, "user", w.now)?;
        let mut v = to_json(&r)?;
        if let Some(m) = &r.memory_id {
            v["memory"] = to_json(&ops::require(w.journal.store(), m.as_str())?)?;
        }
        v["conflicts_left"] = json!(buffer::pending_conflicts(w.journal.store(), None)?.len());
        Ok(v)
    })
    .await
}
