//! The knowledge graph (seed 004 "Knowledge Graph"): typed, weighted edges
//! between memories, and its traversals.
//!
//! An edge `from → to` reads "from *relation* to": a discovery
//! `derives_from` its sources, a cause `leads_to` its consequence, evidence
//! `supports` a claim, a claim `contradicts` another, a specific memory
//! `refines` a general one, a new memory `supersedes` an outdated one. Each
//! has a strength in `[0, 1]`. Edges live in `knowledge_edges`, written only
//! by the apply of `knowledge.edge` / `knowledge.edge_removed`; one edge per
//! `(from, to, relation)`, its id derived from those three ([`edge_id`]).
//!
//! Traversals are breadth-first ([`bfs`]) from any memory, each memory
//! visited once (so cycles end), never deeper than the asked depth (at most
//! [`HARD_MAX_DEPTH`], seed default 5) nor wider than [`MAX_NODES`]; they say
//! whether the depth or the width cut them short. Forgotten memories and
//! their edges are invisible. [`derivation_chain`] follows `derives_from`
//! from a memory to its sources, their sources and so on (seed
//! `getDerivationChain`); [`connected`] is depth 1 (seed `findConnected`).

use std::collections::{BTreeMap, HashSet, VecDeque};

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::base::error::{Result, SqlContext};
use crate::base::ids::MemoryId;
use crate::base::time::Ts;
use crate::storage::event::{Body, EdgeAdded, MemoryType};
use crate::storage::store::Store;

/// Deepest traversal allowed, whatever is asked.
pub use crate::base::config::knowledge::HARD_MAX_DEPTH;
/// Seed 004's default depth.
pub const DEFAULT_DEPTH: u32 = 5;
/// Most memories one traversal returns.
pub const MAX_NODES: usize = 500;
/// Characters of a memory's text shown in a traversal.
const PREVIEW: usize = 240;

/// The relation an edge states (seed 004 "Edge Relationships").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// `from` was derived from `to`.
    DerivesFrom,
    /// `from` enables or causes `to`.
    LeadsTo,
    /// `from` is evidence for `to`.
    Supports,
    /// `from` conflicts with `to`.
    Contradicts,
    /// `from` is more specific than `to`.
    Refines,
    /// `from` replaces `to`, which is outdated.
    Supersedes,
}

impl Relation {
    /// Every relation.
    pub const ALL: [Relation; 6] = [
        Relation::DerivesFrom,
        Relation::LeadsTo,
        Relation::Supports,
        Relation::Contradicts,
        Relation::Refines,
        Relation::Supersedes,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::DerivesFrom => "derives_from",
            Relation::LeadsTo => "leads_to",
            Relation::Supports => "supports",
            Relation::Contradicts => "contradicts",
            Relation::Refines => "refines",
            Relation::Supersedes => "supersedes",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<Relation> {
        Relation::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// How the edge reads from its target (`derived_into`, `led_from`, …).
    pub fn inverse_name(self) -> &'static str {
        match self {
            Relation::DerivesFrom => "derived_into",
            Relation::LeadsTo => "follows_from",
            Relation::Supports => "supported_by",
            Relation::Contradicts => "contradicted_by",
            Relation::Refines => "refined_by",
            Relation::Supersedes => "superseded_by",
        }
    }
}

/// The id of the edge `from → to` with `relation`.
pub fn edge_id(from: &str, to: &str, relation: Relation) -> String {
    crate::base::ids::derived_with_prefix("edge", &[from, to, relation.as_str()])
}

/// The `knowledge.edge` body for an edge.
pub fn edge_body(
    from: &MemoryId,
    to: &MemoryId,
    relation: Relation,
    strength: f32,
    origin: &str,
    reason: &str,
) -> Body {
    Body::EdgeAdded(EdgeAdded {
        edge_id: edge_id(from.as_str(), to.as_str(), relation),
        from: from.clone(),
        to: to.clone(),
        relation: relation.as_str().to_owned(),
        strength: if strength.is_finite() { strength.clamp(0.0, 1.0) } else { 0.0 },
        origin: origin.to_owned(),
        reason: reason.to_owned(),
    })
}

/// One edge as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Edge {
    /// Its id.
    pub id: String,
    /// Source memory.
    pub from: String,
    /// Target memory.
    pub to: String,
    /// See [`Relation`].
    pub relation: String,
    /// `[0, 1]`.
    pub strength: f64,
    /// Who made it.
    pub origin: String,
    /// Why.
    pub reason: String,
    /// When (RFC 3339).
    pub created_at: String,
}

const EDGE_COLUMNS: &str = "e.id, e.from_id, e.to_id, e.relation, e.strength, e.origin, e.reason, e.created_ms";

fn edge_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Edge> {
    Ok(Edge {
        id: r.get(0)?,
        from: r.get(1)?,
        to: r.get(2)?,
        relation: r.get(3)?,
        strength: r.get(4)?,
        origin: r.get(5)?,
        reason: r.get(6)?,
        created_at: Ts(r.get(7)?).to_rfc3339(),
    })
}

/// Which edges a traversal follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From a memory to the memories its edges point at.
    Out,
    /// From a memory to the memories whose edges point at it.
    In,
    /// Both.
    Both,
}

/// The edges of `id` in `dir` whose other end is not forgotten, optionally
/// only of one relation.
pub fn edges_of(store: &Store, id: &str, dir: Direction, relation: Option<Relation>) -> Result<Vec<Edge>> {
    let rel = relation.map(Relation::as_str);
    let mut out = Vec::new();
    let mut run = |sql: &str| -> Result<()> {
        let mut stmt = store.conn().prepare_cached(sql).sql("prepare edges")?;
        let rows = stmt.query_map(params![id, rel], edge_row).sql("read edges")?;
        for r in rows {
            out.push(r.sql("read edges")?);
        }
        Ok(())
    };
    if matches!(dir, Direction::Out | Direction::Both) {
        run(&format!(
            "SELECT {EDGE_COLUMNS} FROM knowledge_edges e JOIN memories m ON m.id = e.to_id
             WHERE e.from_id = ?1 AND m.is_deleted = 0 AND (?2 IS NULL OR e.relation = ?2)
             ORDER BY e.strength DESC, e.id"
        ))?;
    }
    if matches!(dir, Direction::In | Direction::Both) {
        run(&format!(
            "SELECT {EDGE_COLUMNS} FROM knowledge_edges e JOIN memories m ON m.id = e.from_id
             WHERE e.to_id = ?1 AND m.is_deleted = 0 AND (?2 IS NULL OR e.relation = ?2)
             ORDER BY e.strength DESC, e.id"
        ))?;
    }
    Ok(out)
}

/// One memory reached by a breadth-first traversal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The memory.
    pub node: String,
    /// Edges from the start (0 for the start).
    pub depth: u32,
    /// The memory it was reached from.
    pub parent: Option<String>,
}

/// What a breadth-first traversal reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bfs {
    /// Memories in the order reached (the start first).
    pub steps: Vec<Step>,
    /// Memories at the depth limit had further neighbours.
    pub depth_limited: bool,
    /// [`MAX_NODES`] (or the asked width) was reached with memories left.
    pub truncated: bool,
}

/// Breadth-first search from `start`: each node once, at its least depth,
/// at most `max_depth` edges away (capped at [`HARD_MAX_DEPTH`]), at most
/// `max_nodes` nodes. `next(node)` gives a node's neighbours.
pub fn bfs<F, E>(start: &str, max_depth: u32, max_nodes: usize, mut next: F) -> std::result::Result<Bfs, E>
where
    F: FnMut(&str) -> std::result::Result<Vec<String>, E>,
{
    let max_depth = max_depth.min(HARD_MAX_DEPTH);
    let mut out = Bfs::default();
    if max_nodes == 0 {
        out.truncated = true;
        return Ok(out);
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<(String, u32)> = VecDeque::new();
    seen.insert(start.to_owned());
    out.steps.push(Step { node: start.to_owned(), depth: 0, parent: None });
    queue.push_back((start.to_owned(), 0));
    while let Some((node, depth)) = queue.pop_front() {
        let neighbours = next(&node)?;
        if depth == max_depth {
            if neighbours.iter().any(|n| !seen.contains(n)) {
                out.depth_limited = true;
            }
            continue;
        }
        for n in neighbours {
            if seen.contains(&n) {
                continue;
            }
            if out.steps.len() >= max_nodes {
                out.truncated = true;
                return Ok(out);
            }
            seen.insert(n.clone());
            out.steps.push(Step { node: n.clone(), depth: depth + 1, parent: Some(node.clone()) });
            queue.push_back((n, depth + 1));
        }
    }
    Ok(out)
}

/// A memory in a traversal's answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphNode {
    /// Id.
    pub id: String,
    /// Stored type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    /// The knowledge type it is listed under.
    pub knowledge_type: MemoryType,
    /// Its text (cut).
    pub content: String,
    /// Edges from the start.
    pub depth: u32,
    /// The memory it was reached from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Deprecated or superseded.
    pub deprecated: bool,
}

/// A traversal's answer (seed `traverseGraph`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Graph {
    /// The start.
    pub root: String,
    /// Depth asked (after capping).
    pub max_depth: u32,
    /// Memories reached, start first, by depth.
    pub nodes: Vec<GraphNode>,
    /// Every edge between two of them.
    pub edges: Vec<Edge>,
    /// The depth limit cut the traversal.
    pub depth_limited: bool,
    /// The width limit cut it.
    pub truncated: bool,
}

fn node_of(store: &Store, step: &Step) -> Result<Option<GraphNode>> {
    let row: Option<(MemoryType, String, bool, bool)> = store
        .conn()
        .prepare_cached(
            "SELECT type, content, deprecated OR superseded_by IS NOT NULL, is_deleted FROM memories WHERE id = ?1",
        )
        .and_then(|mut s| s.query_row([&step.node], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional())
        .sql("read a graph node")?;
    Ok(row.filter(|r| !r.3).map(|(memory_type, content, deprecated, _)| GraphNode {
        id: step.node.clone(),
        knowledge_type: memory_type.knowledge_type(),
        memory_type,
        content: super::preview(&content, PREVIEW),
        depth: step.depth,
        via: step.parent.clone(),
        deprecated,
    }))
}

/// Breadth-first traversal of the graph from `start` (see the module docs).
/// `None` when `start` is not a live memory.
pub fn traverse(store: &Store, start: &str, max_depth: u32, dir: Direction) -> Result<Option<Graph>> {
    traverse_where(store, start, max_depth, dir, None)
}

fn traverse_where(
    store: &Store,
    start: &str,
    max_depth: u32,
    dir: Direction,
    relation: Option<Relation>,
) -> Result<Option<Graph>> {
    let root = Step { node: start.to_owned(), depth: 0, parent: None };
    if node_of(store, &root)?.is_none() {
        return Ok(None);
    }
    let mut edges: BTreeMap<String, Edge> = BTreeMap::new();
    let found = bfs(start, max_depth, MAX_NODES, |node| {
        let es = edges_of(store, node, dir, relation)?;
        let mut next = Vec::with_capacity(es.len());
        for e in es {
            let other = if e.from == node { e.to.clone() } else { e.from.clone() };
            edges.entry(e.id.clone()).or_insert(e);
            next.push(other);
        }
        Ok::<_, crate::base::error::Error>(next)
    })?;
    let mut nodes = Vec::with_capacity(found.steps.len());
    for step in &found.steps {
        nodes.extend(node_of(store, step)?);
    }
    let ids: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    let edges: Vec<Edge> =
        edges.into_values().filter(|e| ids.contains(e.from.as_str()) && ids.contains(e.to.as_str())).collect();
    Ok(Some(Graph {
        root: start.to_owned(),
        max_depth: max_depth.min(HARD_MAX_DEPTH),
        nodes,
        edges,
        depth_limited: found.depth_limited,
        truncated: found.truncated,
    }))
}

/// One step of a derivation chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChainStep {
    /// The source memory.
    pub id: String,
    /// Its type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    /// Its text (cut).
    pub content: String,
    /// Derivations from the start (1: a direct source).
    pub depth: u32,
    /// The memory derived from it.
    pub derived: String,
    /// Strength of that `derives_from` edge.
    pub strength: f64,
}

/// A memory's full reasoning chain (seed `getDerivationChain`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Chain {
    /// Sources, nearest first.
    pub steps: Vec<ChainStep>,
    /// The depth limit cut it.
    pub depth_limited: bool,
}

/// Follows `derives_from` from `id` to its sources, theirs and so on, at
/// most `max_depth` steps (see the module docs).
pub fn derivation_chain(store: &Store, id: &str, max_depth: u32) -> Result<Chain> {
    let Some(g) = traverse_where(store, id, max_depth, Direction::Out, Some(Relation::DerivesFrom))? else {
        return Ok(Chain::default());
    };
    let strength =
        |from: &str, to: &str| g.edges.iter().find(|e| e.from == from && e.to == to).map_or(0.0, |e| e.strength);
    let steps = g
        .nodes
        .iter()
        .filter(|n| n.depth > 0)
        .map(|n| {
            let derived = n.via.clone().unwrap_or_default();
            ChainStep {
                id: n.id.clone(),
                memory_type: n.memory_type,
                content: n.content.clone(),
                depth: n.depth,
                strength: strength(&derived, &n.id),
                derived,
            }
        })
        .collect();
    Ok(Chain { steps, depth_limited: g.depth_limited })
}

/// One direct connection of a memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Connection {
    /// The relation as read from the memory asked about (`derives_from`, or
    /// `derived_into` for an incoming `derives_from`, …).
    pub relation: String,
    /// `out` (the memory's own edge) or `in`.
    pub direction: &'static str,
    /// Edge strength.
    pub strength: f64,
    /// The memory at the other end.
    pub node: GraphNode,
    /// The edge.
    pub edge_id: String,
}

/// Every memory one edge away from `id`, strongest first (seed `findConnected`).
pub fn connected(store: &Store, id: &str) -> Result<Vec<Connection>> {
    let mut out = Vec::new();
    for e in edges_of(store, id, Direction::Both, None)? {
        let (other, direction) = if e.from == id { (e.to.clone(), "out") } else { (e.from.clone(), "in") };
        let relation = match (direction, Relation::parse(&e.relation)) {
            ("in", Some(r)) => r.inverse_name().to_owned(),
            _ => e.relation.clone(),
        };
        let step = Step { node: other, depth: 1, parent: Some(id.to_owned()) };
        if let Some(node) = node_of(store, &step)? {
            out.push(Connection { relation, direction, strength: e.strength, node, edge_id: e.id });
        }
    }
    out.sort_by(|a, b| b.strength.total_cmp(&a.strength).then_with(|| a.edge_id.cmp(&b.edge_id)));
    Ok(out)
}

/// The graph view of one memory for `memory_get include_graph` and the web
/// UI: its edges, its reasoning chain (for a discovery) and whether the
/// chain hit the depth limit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryGraph {
    /// Direct connections.
    pub edges: Vec<Connection>,
    /// The derivation chain (seed: for `discovery` memories; here for any
    /// memory with `derives_from` edges).
    pub reasoning_chain: Vec<ChainStep>,
    /// The chain was cut by the depth limit.
    pub chain_depth_limited: bool,
    /// The memory that replaces this one, if any.
    pub superseded_by: Option<String>,
}

/// See [`MemoryGraph`].
pub fn memory_graph(store: &Store, id: &str, max_depth: u32) -> Result<MemoryGraph> {
    let chain = derivation_chain(store, id, max_depth)?;
    let superseded_by: Option<String> = store
        .conn()
        .prepare_cached("SELECT superseded_by FROM memories WHERE id = ?1")
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .sql("read supersession")?
        .flatten();
    Ok(MemoryGraph {
        edges: connected(store, id)?,
        reasoning_chain: chain.steps,
        chain_depth_limited: chain.depth_limited,
        superseded_by,
    })
}

/// Edge counts by relation (live ends only), for statistics.
pub fn edge_counts(store: &Store) -> Result<BTreeMap<String, i64>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT e.relation, COUNT(*) FROM knowledge_edges e
             JOIN memories a ON a.id = e.from_id JOIN memories b ON b.id = e.to_id
             WHERE a.is_deleted = 0 AND b.is_deleted = 0 GROUP BY e.relation",
        )
        .sql("count edges")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).sql("count edges")?;
    rows.collect::<rusqlite::Result<_>>().sql("count edges")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn adjacency(edges: &[(u8, u8)]) -> HashMap<String, Vec<String>> {
        let mut adj: HashMap<String, Vec<String>> = HashMap::new();
        for (a, b) in edges {
            adj.entry(a.to_string()).or_default().push(b.to_string());
        }
        adj
    }

    /// Shortest distances from `start` by plain relaxation (the reference).
    fn distances(adj: &HashMap<String, Vec<String>>, start: &str) -> HashMap<String, u32> {
        let mut dist: HashMap<String, u32> = HashMap::from([(start.to_owned(), 0)]);
        loop {
            let mut changed = false;
            for (a, outs) in adj {
                let Some(&da) = dist.get(a) else { continue };
                for b in outs {
                    if dist.get(b).is_none_or(|&db| db > da + 1) {
                        dist.insert(b.clone(), da + 1);
                        changed = true;
                    }
                }
            }
            if !changed {
                return dist;
            }
        }
    }

    proptest! {
        /// On any graph (cycles, self-loops, parallel edges) the traversal ends,
        /// visits each node once at its least depth, never deeper than asked,
        /// never wider than asked, and says when a limit cut it.
        #[test]
        fn traversal_is_bounded_and_cycle_safe(
            edges in prop::collection::vec((0u8..24, 0u8..24), 0..120),
            max_depth in 0u32..14,
            max_nodes in 0usize..30,
        ) {
            let adj = adjacency(&edges);
            let mut calls = 0usize;
            let found = bfs("0", max_depth, max_nodes, |n| {
                calls += 1;
                Ok::<_, ()>(adj.get(n).cloned().unwrap_or_default())
            }).unwrap();
            let depth = max_depth.min(HARD_MAX_DEPTH);
            prop_assert!(found.steps.len() <= max_nodes);
            prop_assert!(calls <= found.steps.len());
            let unique: HashSet<&str> = found.steps.iter().map(|s| s.node.as_str()).collect();
            prop_assert_eq!(unique.len(), found.steps.len(), "each node once");
            let dist = distances(&adj, "0");
            for s in &found.steps {
                prop_assert!(s.depth <= depth);
                prop_assert_eq!(Some(&s.depth), dist.get(&s.node), "{} at its least depth", &s.node);
            }
            if !found.truncated {
                let within: HashSet<&str> = dist.iter().filter(|(_, d)| **d <= depth).map(|(n, _)| n.as_str()).collect();
                prop_assert_eq!(&within, &unique, "everything within the depth is reached");
                prop_assert_eq!(found.depth_limited, dist.values().any(|d| *d > depth));
            }
        }
    }

    #[test]
    fn relation_names_round_trip() {
        for r in Relation::ALL {
            assert_eq!(Relation::parse(r.as_str()), Some(r));
        }
        assert_eq!(Relation::parse("likes"), None);
        assert_ne!(edge_id("a", "b", Relation::Supports), edge_id("b", "a", Relation::Supports));
    }
}
