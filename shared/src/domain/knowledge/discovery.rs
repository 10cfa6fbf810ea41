//! The discovery engine (seed 004 "Discovery Engine"): what a new memory is
//! connected to.
//!
//! 1. **Sources.** Each memory it was derived from (`source_knowledge_ids`)
//!    gets a `derives_from` edge of strength 1.
//! 2. **Related knowledge.** Every current memory more than
//!    `knowledge.graph.related_similarity` alike (0.5; see
//!    [`super::similarity`]) gets one edge, at most `related_limit` of them,
//!    with the similarity as strength. Which relation is decided from the
//!    two texts and types ([`relation_between`]): opposite polarity on the
//!    same subject (one says "never", "don't", "avoid"… and the other does
//!    not) `contradicts`; a text that says everything the other says and
//!    more `refines` it (the more specific one is the edge's source); an
//!    issue or a decision `leads_to` a memory of another kind that follows
//!    it; anything else `supports` the older memory.
//! 3. **LLM discoveries** only through the optional external command
//!    (`knowledge.graph.discovery`, off by default): see
//!    [`super::command::discover`].

use crate::base::config::Config;
use crate::base::error::Result;
use crate::base::ids::MemoryId;
use crate::domain::knowledge::graph::{Relation, edge_body};
use crate::domain::knowledge::similarity::{Scored, containment, similar_memories, words};
use crate::storage::event::{Body, MemoryType};
use crate::storage::store::Store;

/// Words that turn a statement into its opposite.
const NEGATIONS: &[&str] = &[
    "not",
    "never",
    "don't",
    "dont",
    "do not",
    "no longer",
    "avoid",
    "stop",
    "without",
    "shouldn't",
    "mustn't",
    "can't",
    "cannot",
    "isn't",
    "doesn't",
    "won't",
    "instead of",
    "rather than",
];

/// Whether a text negates what it talks about.
pub fn negated(text: &str) -> bool {
    let lower = format!(" {} ", text.to_lowercase().replace(|c: char| !c.is_alphanumeric() && c != '\'', " "));
    NEGATIONS.iter().any(|n| lower.contains(&format!(" {n} ")))
}

/// A memory being linked.
#[derive(Clone, Copy, Debug)]
pub struct NewKnowledge<'a> {
    /// Its id.
    pub id: &'a MemoryId,
    /// Its text.
    pub text: &'a str,
    /// Its type.
    pub memory_type: MemoryType,
    /// Its project.
    pub project: Option<&'a str>,
    /// Its embedding, if one was given.
    pub embedding: Option<&'a [f32]>,
}

/// The relation between a new memory and a related existing one, as an edge
/// `(from, to, relation)` (see the module docs).
pub fn relation_between<'a>(new: &NewKnowledge<'a>, existing: &'a Scored) -> (&'a MemoryId, &'a MemoryId, Relation) {
    let (n, e) = (new.id, &existing.id);
    if negated(new.text) != negated(&existing.content) {
        return (n, e, Relation::Contradicts);
    }
    let (wn, we) = (words(new.text), words(&existing.content));
    if wn.len() > we.len() && containment(&we, &wn) >= 0.8 {
        return (n, e, Relation::Refines);
    }
    if we.len() > wn.len() && containment(&wn, &we) >= 0.8 {
        return (e, n, Relation::Refines);
    }
    let (kn, ke) = (new.memory_type.knowledge_type(), existing.memory_type.knowledge_type());
    if (ke == MemoryType::Issue || ke == MemoryType::Decision) && kn != ke {
        return (e, n, Relation::LeadsTo);
    }
    (n, e, Relation::Supports)
}

/// The `knowledge.edge` bodies of a new memory (see the module docs):
/// `derives_from` its `sources`, and the discovery edges to `related` (the
/// caller's similar memories, e.g. from the conflict check, so the index is
/// searched once).
pub fn edges_for(config: &Config, new: &NewKnowledge<'_>, sources: &[MemoryId], related: &[Scored]) -> Vec<Body> {
    let g = &config.knowledge.graph;
    let mut out: Vec<Body> = sources
        .iter()
        .filter(|s| *s != new.id)
        .map(|s| edge_body(new.id, s, Relation::DerivesFrom, 1.0, "source", "named as a source when saved"))
        .collect();
    if !g.enabled || !g.auto_discover {
        return out;
    }
    for r in related
        .iter()
        .filter(|r| r.similarity > g.related_similarity && &r.id != new.id && !sources.contains(&r.id))
        .take(g.related_limit)
    {
        let (from, to, relation) = relation_between(new, r);
        let reason = format!("{:.0}% alike", r.similarity * 100.0);
        out.push(edge_body(from, to, relation, r.similarity, "discovery", &reason));
    }
    out
}

/// The memories related to `new` above the configured similarity, read from
/// the index (for callers that did not compare already).
pub fn related(store: &Store, config: &Config, new: &NewKnowledge<'_>) -> Result<Vec<Scored>> {
    let g = &config.knowledge.graph;
    if !g.enabled || !g.auto_discover {
        return Ok(Vec::new());
    }
    similar_memories(store, new.text, new.embedding, new.project, &[new.id.as_str()], g.related_similarity, 50)
}

/// Discovery edges for memories already stored without them (extracted
/// or imported ones): each of `ids` is linked as [`edges_for`] would have
/// linked it when saved, to related memories created before it (so a pair
/// is linked once). Appends the edges; returns how many.
pub fn link(
    journal: &mut crate::storage::journal::Journal,
    config: &Config,
    ids: &[MemoryId],
    now: crate::base::time::Ts,
) -> Result<usize> {
    let g = &config.knowledge.graph;
    if !g.enabled || !g.auto_discover || ids.is_empty() {
        return Ok(0);
    }
    let mut bodies = Vec::new();
    for id in ids {
        let Some(m) = journal.store().memory(id.as_str())? else { continue };
        if m.is_deleted || m.deprecated {
            continue;
        }
        let new = NewKnowledge {
            id,
            text: &m.content,
            memory_type: m.memory_type,
            project: m.project.as_deref(),
            embedding: None,
        };
        let mut found = related(journal.store(), config, &new)?;
        found.retain(|r| (r.created_ms, r.id.as_str()) < (m.created_ms, id.as_str()));
        bodies.extend(edges_for(config, &new, &[], &found));
    }
    let n = bodies.len();
    for chunk in bodies.chunks(1_000) {
        let events: Vec<_> = chunk.iter().map(|b| journal.event(now, None, b.clone())).collect();
        journal.append(&events)?;
    }
    Ok(n)
}

/// The most related memories sent to the external discovery command.
const EXTERNAL_RELATED: usize = 8;
/// Most discoveries accepted from one answer.
pub const MAX_DISCOVERIES: usize = 3;

/// What the external discovery command reads (`knowledge.graph.discovery`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DiscoveryRequest {
    /// 1.
    pub protocol: u32,
    /// What to do.
    pub instructions: &'static str,
    /// The memory just saved.
    pub new: DiscoveryMemory,
    /// Memories related to it, most alike first.
    pub related: Vec<DiscoveryMemory>,
}

/// A memory in a discovery request.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DiscoveryMemory {
    /// Id.
    pub id: String,
    /// Text.
    pub text: String,
    /// Type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
}

/// What it answers.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryResponse {
    /// New knowledge derived by combining memories.
    #[serde(default)]
    pub discoveries: Vec<Discovered>,
    /// Further relations between the memories sent.
    #[serde(default)]
    pub edges: Vec<ProposedEdge>,
}

/// One discovery.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discovered {
    /// The new knowledge, one self-contained sentence.
    pub text: String,
    /// The memories it combines (two or more of those sent).
    pub source_ids: Vec<String>,
    /// 0..=1.
    pub confidence: f32,
}

/// One proposed edge.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposedEdge {
    /// Source memory.
    pub from: String,
    /// Target memory.
    pub to: String,
    /// See [`Relation`].
    pub relation: String,
    /// 0..=1.
    pub strength: f32,
}

const DISCOVERY_INSTRUCTIONS: &str = "You see a memory just saved by a coding agent and related memories. If \
combining two or more of them yields new knowledge none of them states (a conclusion, a consequence, a rule), \
give it as a discovery with the ids it derives from. Also name relations between the memories you are sure \
of: derives_from, leads_to, supports, contradicts, refines, supersedes. Reply with JSON \
{\"discoveries\":[{\"text\",\"source_ids\",\"confidence\"}],\"edges\":[{\"from\",\"to\",\"relation\",\"strength\"}]} \
and nothing else; empty lists when there is nothing.";

/// Checks an answer against its request: known ids only, at least two
/// sources per discovery, at most [`MAX_DISCOVERIES`], texts non-empty,
/// short enough and without the injection marker, numbers in 0..=1, known
/// relations between two different memories.
pub fn validate_external(req: &DiscoveryRequest, stdout: &[u8]) -> std::result::Result<DiscoveryResponse, String> {
    let resp: DiscoveryResponse = serde_json::from_slice(stdout).map_err(|e| format!("not the discovery JSON: {e}"))?;
    let known: std::collections::BTreeSet<&str> =
        std::iter::once(req.new.id.as_str()).chain(req.related.iter().map(|m| m.id.as_str())).collect();
    if resp.discoveries.len() > MAX_DISCOVERIES {
        return Err(format!("{} discoveries, at most {MAX_DISCOVERIES}", resp.discoveries.len()));
    }
    for (i, d) in resp.discoveries.iter().enumerate() {
        let t = d.text.trim();
        if t.is_empty()
            || t.chars().count() > crate::domain::memory::ops::MAX_TEXT
            || t.contains(crate::storage::event::INJECTION_OPEN)
        {
            return Err(format!("discovery {i}: text empty, too long or holding injected context"));
        }
        if !(0.0..=1.0).contains(&d.confidence) {
            return Err(format!("discovery {i}: confidence {} outside 0..=1", d.confidence));
        }
        let sources: std::collections::BTreeSet<&str> = d.source_ids.iter().map(String::as_str).collect();
        if sources.len() < 2 || !sources.iter().all(|s| known.contains(s)) {
            return Err(format!("discovery {i}: needs two or more of the memories sent as sources"));
        }
    }
    for (i, e) in resp.edges.iter().enumerate() {
        if Relation::parse(&e.relation).is_none() {
            return Err(format!("edge {i}: unknown relation {:?}", e.relation));
        }
        if e.from == e.to || !known.contains(e.from.as_str()) || !known.contains(e.to.as_str()) {
            return Err(format!("edge {i}: ends must be two different memories sent"));
        }
        if !(0.0..=1.0).contains(&e.strength) {
            return Err(format!("edge {i}: strength {} outside 0..=1", e.strength));
        }
    }
    Ok(resp)
}

/// The LLM part of the discovery engine, for a memory just saved: asks the
/// external command (when configured) about it and its related memories;
/// saves each discovery as a `discovery` memory tagged `auto-discovered`
/// with `derives_from` edges to its sources (an exact duplicate of a stored
/// memory is skipped), and the edges it proposes. Returns the new memories.
pub fn external(
    journal: &mut crate::storage::journal::Journal,
    config: &Config,
    id: &MemoryId,
    now: crate::base::time::Ts,
) -> std::result::Result<Vec<MemoryId>, String> {
    let command = &config.knowledge.graph.discovery;
    if !command.enabled() || !config.knowledge.graph.enabled {
        return Ok(Vec::new());
    }
    let m = journal.store().memory(id.as_str()).map_err(|e| e.to_string())?.ok_or("the memory is gone")?;
    let mut related = similar_memories(
        journal.store(),
        &m.content,
        None,
        m.project.as_deref(),
        &[id.as_str()],
        0.0,
        EXTERNAL_RELATED,
    )
    .map_err(|e| e.to_string())?;
    related.truncate(EXTERNAL_RELATED);
    if related.is_empty() {
        return Ok(Vec::new());
    }
    let req = DiscoveryRequest {
        protocol: 1,
        instructions: DISCOVERY_INSTRUCTIONS,
        new: DiscoveryMemory { id: id.as_str().to_owned(), text: m.content.clone(), memory_type: m.memory_type },
        related: related
            .iter()
            .map(|r| DiscoveryMemory {
                id: r.id.as_str().to_owned(),
                text: r.content.clone(),
                memory_type: r.memory_type,
            })
            .collect(),
    };
    let out = crate::base::command::run_json(command, &req).map_err(|e| e.to_string())?;
    let resp = validate_external(&req, &out)?;
    let mut bodies = Vec::new();
    let mut made = Vec::new();
    for d in resp.discoveries {
        let text = crate::storage::redact::redact_text(d.text.trim()).into_owned();
        let verdict = super::buffer::check(journal.store(), config, &text, None, m.project.as_deref(), &[])
            .map_err(|e| e.to_string())?;
        if matches!(verdict, super::buffer::Verdict::Duplicate { .. }) {
            continue;
        }
        let new_id = MemoryId::generate(now);
        bodies.push(Body::MemoryAdded(crate::storage::event::MemoryAdded {
            memory_id: new_id.clone(),
            content: text,
            memory_type: MemoryType::Discovery,
            importance: (0.5 + 0.4 * d.confidence).clamp(0.0, 1.0),
            project: m.project.clone(),
            tags: vec!["auto-discovered".to_owned()],
            source: "external".to_owned(),
            ..Default::default()
        }));
        let mut sources: Vec<&String> = d.source_ids.iter().collect();
        sources.sort();
        sources.dedup();
        for s in sources {
            bodies.push(edge_body(
                &new_id,
                &MemoryId::from(s.as_str()),
                Relation::DerivesFrom,
                d.confidence,
                "external",
                "discovered",
            ));
        }
        made.push(new_id);
    }
    for e in resp.edges {
        if let Some(r) = Relation::parse(&e.relation) {
            bodies.push(edge_body(
                &MemoryId(e.from),
                &MemoryId(e.to),
                r,
                e.strength,
                "external",
                "proposed by the discovery command",
            ));
        }
    }
    if !bodies.is_empty() {
        let events: Vec<_> = bodies.into_iter().map(|b| journal.event(now, None, b)).collect();
        journal.append(&events).map_err(|e| e.to_string())?;
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(id: &str, content: &str, t: &str) -> Scored {
        Scored {
            id: MemoryId::from(id),
            content: content.into(),
            memory_type: MemoryType::from_stored(t),
            project: None,
            similarity: 0.7,
            created_ms: 0,
        }
    }

    #[test]
    fn relations_follow_the_texts() {
        let id = MemoryId::from("mem_new");
        let new = |text: &'static str, t: &'static str| NewKnowledge {
            id: &id,
            text,
            memory_type: MemoryType::from_stored(t),
            project: None,
            embedding: None,
        };
        let old = scored("mem_old", "Run the integration tests with cargo nextest", "pattern");
        let rel = |n: NewKnowledge<'_>| {
            let (f, t, r) = relation_between(&n, &old);
            (f.as_str().to_owned(), t.as_str().to_owned(), r)
        };
        assert_eq!(
            rel(new("Never run the integration tests with cargo nextest", "pattern")),
            ("mem_new".into(), "mem_old".into(), Relation::Contradicts)
        );
        assert_eq!(
            rel(new("Run the integration tests with cargo nextest and --release on CI", "pattern")),
            ("mem_new".into(), "mem_old".into(), Relation::Refines)
        );
        assert_eq!(
            rel(new("The integration tests run with cargo nextest", "fact")),
            ("mem_new".into(), "mem_old".into(), Relation::Supports)
        );
        let issue = scored("mem_old", "The integration tests time out on CI", "issue");
        let (f, t, r) = relation_between(&new("Integration tests on CI get a 20 minute timeout", "decision"), &issue);
        assert_eq!((f.as_str(), t.as_str(), r), ("mem_old", "mem_new", Relation::LeadsTo));
    }

    #[test]
    fn external_answers_are_checked() {
        let m = |id: &str| DiscoveryMemory { id: id.into(), text: "t".into(), memory_type: MemoryType::Fact };
        let req = DiscoveryRequest { protocol: 1, instructions: "", new: m("a"), related: vec![m("b"), m("c")] };
        let good = br#"{"discoveries":[{"text":"x","source_ids":["a","b"],"confidence":0.7}],"edges":[{"from":"b","to":"c","relation":"supports","strength":0.5}]}"#;
        assert!(validate_external(&req, good).is_ok());
        assert!(validate_external(&req, br#"{}"#).is_ok_and(|r| r.discoveries.is_empty()));
        for bad in [
            r#"{"discoveries":[{"text":"x","source_ids":["a"],"confidence":0.7}]}"#,
            r#"{"discoveries":[{"text":"x","source_ids":["a","z"],"confidence":0.7}]}"#,
            r#"{"discoveries":[{"text":" ","source_ids":["a","b"],"confidence":0.7}]}"#,
            r#"{"discoveries":[{"text":"x","source_ids":["a","b"],"confidence":2}]}"#,
            r#"{"edges":[{"from":"b","to":"b","relation":"supports","strength":0.5}]}"#,
            r#"{"edges":[{"from":"b","to":"c","relation":"likes","strength":0.5}]}"#,
            r#"{"edges":[],"mood":1}"#,
        ] {
            assert!(validate_external(&req, bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn negation_is_found_as_words() {
        assert!(negated("Don't use npm here"));
        assert!(negated("We no longer vendor openssl"));
        assert!(!negated("Notes on the nothing module"));
    }
}
