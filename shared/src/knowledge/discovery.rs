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

use crate::config::Config;
use crate::error::Result;
use crate::event::{Body, memory_type};
use crate::ids::MemoryId;
use crate::knowledge::graph::{Relation, edge_body};
use crate::knowledge::similarity::{Scored, containment, similar_memories, words};
use crate::store::Store;

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
    /// Its stored type.
    pub memory_type: &'a str,
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
    let (kn, ke) = (super::knowledge_type(new.memory_type), super::knowledge_type(&existing.memory_type));
    if (ke == memory_type::ISSUE || ke == memory_type::DECISION) && kn != ke {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(id: &str, content: &str, t: &str) -> Scored {
        Scored {
            id: MemoryId::from(id),
            content: content.into(),
            memory_type: t.into(),
            project: None,
            similarity: 0.7,
        }
    }

    #[test]
    fn relations_follow_the_texts() {
        let id = MemoryId::from("mem_new");
        let new = |text: &'static str, t: &'static str| NewKnowledge {
            id: &id,
            text,
            memory_type: t,
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
    fn negation_is_found_as_words() {
        assert!(negated("Don't use npm here"));
        assert!(negated("We no longer vendor openssl"));
        assert!(!negated("Notes on the nothing module"));
    }
}
