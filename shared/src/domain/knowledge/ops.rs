//! The knowledge commands every writer shares (the MCP tools, the
//! ingestor's CLI): saving a memory through conflict detection and the
//! discovery engine, and resolving a staged memory. Each appends one batch
//! of events through the journal (one fsync, one transaction), after every
//! check against the projection, so a refused command writes nothing.

use serde::Serialize;

use crate::base::config::Config;
use crate::base::ids::{MemoryId, SessionKey};
use crate::base::time::Ts;
use crate::domain::knowledge::apply::{action, status};
use crate::domain::knowledge::buffer::{self, Verdict};
use crate::domain::knowledge::discovery::{self, NewKnowledge};
use crate::domain::knowledge::graph::{Relation, edge_body};
use crate::domain::knowledge::similarity::Scored;
use crate::domain::memory::ops::{self as ops, NewMemory, OpError, OpResult, Origin};
use crate::storage::event::{Body, Event, MemoryAdded, MemoryDeprecated, MemoryUpdated, StageResolved};
use crate::storage::journal::{Journal, Locked};

/// What [`save`] did.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Saved {
    /// Saved as a new memory, with its graph edges.
    Added {
        /// The new memory.
        id: MemoryId,
        /// Edges written (sources and discoveries).
        edges: usize,
    },
    /// An exact duplicate: not saved; the existing memory counts one more occurrence.
    Duplicate {
        /// The existing memory.
        of: Scored,
    },
    /// Alike to an existing memory: staged until the user resolves it.
    Staged {
        /// The buffer entry (`conflict_id` of `memory_resolve`).
        stage_id: String,
        /// The id it will have if saved.
        memory_id: MemoryId,
        /// The existing memory.
        with: Scored,
    },
}

fn store_err(context: &'static str) -> impl FnOnce(crate::base::error::Error) -> OpError {
    move |source| OpError::Store { context: context.to_owned(), source }
}

fn append(journal: &mut Journal, now: Ts, session: Option<&SessionKey>, bodies: Vec<Body>) -> OpResult<()> {
    let writer = journal.writer().to_owned();
    append_locked(&mut journal.locked().map_err(store_err("take the tape lock"))?, &writer, now, session, bodies)
}

/// [`append`] with the tape lock already held: what the caller checked
/// against the projection under the same lock still holds when it lands.
fn append_locked(
    locked: &mut Locked<'_>,
    writer: &str,
    now: Ts,
    session: Option<&SessionKey>,
    bodies: Vec<Body>,
) -> OpResult<()> {
    let events: Vec<Event> = bodies.into_iter().map(|b| Event::new(now, writer, session.cloned(), b)).collect();
    let receipt = locked.append(&events).map_err(store_err("append to the tape log"))?;
    if !receipt.applied {
        tracing::warn!(lsn = receipt.first_lsn, "the events are on tape but not yet projected");
    }
    Ok(())
}

/// Saves a memory through conflict detection (see [`buffer`]): added with
/// `derives_from` edges to `sources` and discovery edges to related
/// memories, or found a duplicate, or staged as a conflict.
pub fn save(
    journal: &mut Journal,
    config: &Config,
    m: NewMemory,
    origin: &Origin,
    sources: &[String],
    now: Ts,
) -> OpResult<Saved> {
    let content = ops::check_text(&m.text)?;
    // A forgotten memory is never learned again, whoever saves it.
    ops::refuse_forgotten(journal, &content)?;
    let memory_type = m.memory_type;
    if !(0.0..=1.0).contains(&m.importance) {
        return Err(OpError::Invalid(format!("importance must be between 0 and 1, not {}", m.importance)));
    }
    let tags = ops::check_tags(&m.tags)?;
    // Checked and appended under the tape lock: two agents saving the same
    // lesson at once save it once, the other counts an occurrence.
    let writer = journal.writer().to_owned();
    let mut locked = journal.locked().map_err(store_err("take the tape lock"))?;
    // A project's name means its key once the project is known (as `memory add`).
    let project = m
        .project
        .filter(|p| !p.trim().is_empty())
        .map(|p| crate::domain::env::store::resolve_project(locked.store().conn(), &p));
    let mut source_ids: Vec<MemoryId> = Vec::new();
    for s in sources {
        let s = s.trim();
        ops::require_live(locked.store(), s)?;
        if !source_ids.iter().any(|x| x.as_str() == s) {
            source_ids.push(MemoryId::from(s));
        }
    }
    let exclude: Vec<&str> = source_ids.iter().map(MemoryId::as_str).collect();
    let verdict = buffer::check(locked.store(), config, &content, None, project.as_deref(), &exclude)
        .map_err(store_err("compare with stored memories"))?;
    let memory = MemoryAdded {
        memory_id: MemoryId::generate(now),
        content,
        memory_type,
        importance: m.importance,
        project,
        tags,
        pinned: m.pinned,
        source: origin.source.clone(),
        source_session: origin.session.clone(),
        source_event: None,
        speaker: None,
    };
    match verdict {
        Verdict::Duplicate { of } => {
            let body = Body::MemoryUpdated(MemoryUpdated {
                memory_id: of.id.clone(),
                occurrences: 1,
                seen_in: origin.session.clone(),
                ..MemoryUpdated::default()
            });
            append_locked(&mut locked, &writer, now, origin.session.as_ref(), vec![body])?;
            Ok(Saved::Duplicate { of })
        }
        Verdict::Conflict { with, .. } if source_ids.is_empty() => {
            // The same text already waits for the user against the same memory.
            if let Some((stage_id, memory_id)) = buffer::pending_same(locked.store(), &memory.content, &with.id)
                .map_err(store_err("look up staged memories"))?
            {
                return Ok(Saved::Staged { stage_id, memory_id, with });
            }
            let stage_id = buffer::stage_id_for(&memory.memory_id);
            let memory_id = memory.memory_id.clone();
            append_locked(
                &mut locked,
                &writer,
                now,
                origin.session.as_ref(),
                vec![buffer::conflict_body(memory, &with)],
            )?;
            Ok(Saved::Staged { stage_id, memory_id, with })
        }
        Verdict::Conflict { with, mut related } => {
            // Derived knowledge resembles what it derives from: not a conflict.
            related.insert(0, with);
            add_with_edges(&mut locked, &writer, config, memory, &source_ids, &related, origin.session.as_ref(), now)
        }
        Verdict::New { related } => {
            add_with_edges(&mut locked, &writer, config, memory, &source_ids, &related, origin.session.as_ref(), now)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn add_with_edges(
    locked: &mut Locked<'_>,
    writer: &str,
    config: &Config,
    memory: MemoryAdded,
    sources: &[MemoryId],
    related: &[Scored],
    session: Option<&SessionKey>,
    now: Ts,
) -> OpResult<Saved> {
    let id = memory.memory_id.clone();
    let new = NewKnowledge {
        id: &id,
        text: &memory.content,
        memory_type: memory.memory_type,
        project: memory.project.as_deref(),
        embedding: None,
    };
    let edges = discovery::edges_for(config, &new, sources, related);
    let n = edges.len();
    let mut bodies = vec![Body::MemoryAdded(memory.clone())];
    bodies.extend(edges);
    append_locked(locked, writer, now, session, bodies)?;
    Ok(Saved::Added { id, edges: n })
}

/// What [`resolve`] did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Resolution {
    /// The buffer entry.
    pub conflict_id: String,
    /// The action applied.
    pub action: String,
    /// The existing memory it was resolved against.
    pub existing_id: Option<MemoryId>,
    /// The memory it ended up in (`None` for `skip`).
    pub memory_id: Option<MemoryId>,
    /// The existing memory was superseded (`replace`).
    pub superseded: Option<MemoryId>,
    /// Graph edges written.
    pub edges: usize,
}

/// Applies seed 004's choice for a staged memory (see [`buffer`]):
/// `merge`, `keep_both`, `replace` or `skip` (and curation's `persist` /
/// `discard`). `existing` overrides the memory it was flagged against.
pub fn resolve(
    journal: &mut Journal,
    config: &Config,
    stage_id: &str,
    choice: &str,
    existing: Option<&str>,
    by: &str,
    now: Ts,
) -> OpResult<Resolution> {
    let choice = choice.trim().to_lowercase();
    if !action::ALL.contains(&choice.as_str()) {
        return Err(OpError::Invalid(format!("unknown action {choice:?}; one of: {}", action::CHOICES.join(", "))));
    }
    // Checked and appended under the tape lock: a staged memory is resolved once.
    let writer = journal.writer().to_owned();
    let mut locked = journal.locked().map_err(store_err("take the tape lock"))?;
    let Some(staged) = buffer::get(locked.store(), stage_id).map_err(store_err("read the staged memory"))? else {
        return Err(OpError::NotFound(format!(
            "no staged memory {stage_id:?}; list them with memory_staging (or `memory staging`)"
        )));
    };
    if staged.status != status::NEEDS_CLARIFICATION && staged.status != status::PENDING {
        return Err(OpError::Conflict(format!(
            "{stage_id} was already resolved ({}{})",
            staged.resolution.as_deref().unwrap_or(&staged.status),
            staged.result_id.as_deref().map(|r| format!(" into {r}")).unwrap_or_default()
        )));
    }
    let existing: Option<MemoryId> = existing.map(str::trim).or(staged.conflict_with.as_deref()).map(MemoryId::from);
    let needs_existing = [action::MERGE, action::REPLACE].contains(&choice.as_str());
    let existing_record = match &existing {
        Some(e) => Some(ops::require_live(locked.store(), e.as_str())?),
        None if needs_existing => {
            return Err(OpError::Invalid(format!("{choice} needs existing_id: {stage_id} is not a conflict")));
        }
        None => None,
    };
    let session = staged.session.as_deref().map(SessionKey::from);
    let mut bodies: Vec<Body> = Vec::new();
    let mut result = Resolution {
        conflict_id: stage_id.to_owned(),
        action: choice.clone(),
        existing_id: existing.clone(),
        memory_id: None,
        superseded: None,
        edges: 0,
    };
    match choice.as_str() {
        action::MERGE => {
            let (Some(e), Some(rec)) = (&existing, &existing_record) else { unreachable!("checked above") };
            // The union of the two memories (see `merged_text`), tags within the
            // limit every writer has (the existing tags first).
            let content = merged_text(&rec.content, &staged.memory.content)?;
            let mut tags: Vec<String> = rec.tags.clone();
            for t in &staged.memory.tags {
                if tags.len() >= ops::MAX_TAGS {
                    break;
                }
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
            tags.sort();
            tags.dedup();
            bodies.push(Body::MemoryUpdated(MemoryUpdated {
                memory_id: e.clone(),
                content,
                occurrences: 1,
                seen_in: session.clone(),
                tags: (tags != rec.tags).then_some(tags),
                importance: (f64::from(staged.memory.importance) > rec.importance).then_some(staged.memory.importance),
                ..MemoryUpdated::default()
            }));
            result.memory_id = Some(e.clone());
        }
        action::KEEP_BOTH | action::REPLACE | action::PERSIST => {
            let memory = staged.memory.clone();
            if locked.store().memory(memory.memory_id.as_str()).map_err(store_err("read memory"))?.is_some() {
                return Err(OpError::Conflict(format!("memory {} already exists", memory.memory_id)));
            }
            let id = memory.memory_id.clone();
            let replaced = (choice == action::REPLACE).then(|| existing.clone()).flatten();
            let new = NewKnowledge {
                id: &id,
                text: &memory.content,
                memory_type: memory.memory_type,
                project: memory.project.as_deref(),
                embedding: None,
            };
            let mut related = discovery::related(locked.store(), config, &new).map_err(store_err("find related"))?;
            related.retain(|r| Some(&r.id) != replaced.as_ref());
            let mut edges = discovery::edges_for(config, &new, &[], &related);
            if let Some(old) = &replaced {
                edges.push(edge_body(
                    &id,
                    old,
                    Relation::Supersedes,
                    1.0,
                    "resolve",
                    "replaced when a conflict was resolved",
                ));
            }
            result.edges = edges.len();
            bodies.push(Body::MemoryAdded(memory));
            if let Some(old) = &replaced {
                bodies.push(Body::MemoryDeprecated(MemoryDeprecated {
                    memory_id: old.clone(),
                    reason: format!("replaced by {id}"),
                    superseded_by: Some(id.clone()),
                }));
                result.superseded = Some(old.clone());
            }
            bodies.extend(edges);
            result.memory_id = Some(id);
        }
        _ => {}
    }
    bodies.push(Body::StageResolved(StageResolved {
        stage_id: stage_id.to_owned(),
        action: choice,
        existing_id: existing,
        memory_id: result.memory_id.clone(),
        by: by.to_owned(),
    }));
    append_locked(&mut locked, &writer, now, session.as_ref(), bodies)?;
    Ok(result)
}

/// The text of an existing memory once a new one is merged into it (seed
/// 004: the existing memory absorbs the new observation): the existing text,
/// then what the new one adds. `None` when the new text says nothing the
/// existing one does not (its words, in order, already appear there); the
/// new text alone when it holds the whole existing one. Refused when the
/// union would exceed [`ops::MAX_TEXT`] (`keep_both` or `replace` then).
pub fn merged_text(existing: &str, new: &str) -> OpResult<Option<String>> {
    let words = |t: &str| -> String {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (old_words, new_words) = (words(existing), words(new));
    let contains = |hay: &str, needle: &str| needle.is_empty() || format!(" {hay} ").contains(&format!(" {needle} "));
    if contains(&old_words, &new_words) {
        return Ok(None);
    }
    let (existing, new) = (existing.trim(), new.trim());
    let text = if contains(&new_words, &old_words) {
        new.to_owned()
    } else {
        let joint = if existing.ends_with(['.', '!', '?', ';', ':']) { " " } else { ". " };
        format!("{existing}{joint}{new}")
    };
    let chars = text.chars().count();
    if chars > ops::MAX_TEXT {
        return Err(OpError::Invalid(format!(
            "merging would make the memory {chars} characters long (at most {}); resolve with keep_both or replace",
            ops::MAX_TEXT
        )));
    }
    Ok(Some(text))
}

/// Adds (or re-weights) the edge `from relation to`; returns its id.
pub fn link(
    journal: &mut Journal,
    from: &str,
    to: &str,
    relation: &str,
    strength: f32,
    origin: &str,
    now: Ts,
) -> OpResult<String> {
    let Some(rel) = Relation::parse(relation.trim()) else {
        let names: Vec<&str> = Relation::ALL.iter().map(|r| r.as_str()).collect();
        return Err(OpError::Invalid(format!("unknown relation {relation:?}; one of: {}", names.join(", "))));
    };
    if !(0.0..=1.0).contains(&strength) {
        return Err(OpError::Invalid(format!("strength must be between 0 and 1, not {strength}")));
    }
    let (from, to) = (from.trim(), to.trim());
    if from == to {
        return Err(OpError::Invalid("an edge joins two different memories".into()));
    }
    ops::require_live(journal.store(), from)?;
    ops::require_live(journal.store(), to)?;
    let body = edge_body(&MemoryId::from(from), &MemoryId::from(to), rel, strength, origin, "");
    let id = match &body {
        Body::EdgeAdded(e) => e.edge_id.clone(),
        _ => unreachable!("edge_body builds an edge"),
    };
    append(journal, now, None, vec![body])?;
    Ok(id)
}

/// Removes an edge.
pub fn unlink(journal: &mut Journal, edge_id: &str, now: Ts) -> OpResult<()> {
    let edge_id = edge_id.trim();
    let exists: bool = journal
        .store()
        .conn()
        .query_row("SELECT COUNT(*) > 0 FROM knowledge_edges WHERE id = ?1", [edge_id], |r| r.get(0))
        .map_err(|e| OpError::Store {
            context: "read edges".into(),
            source: crate::base::error::Error::sqlite("read edges", e),
        })?;
    if !exists {
        return Err(OpError::Invalid(format!("no edge {edge_id:?}")));
    }
    let body =
        Body::EdgeRemoved(crate::storage::event::EdgeRemoved { edge_id: edge_id.to_owned(), reason: String::new() });
    append(journal, now, None, vec![body])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_text_is_the_union_of_both() {
        let old = "Run cargo fmt before committing.";
        assert_eq!(merged_text(old, "run cargo FMT before committing").unwrap(), None, "nothing new");
        assert_eq!(merged_text(old, "fmt before").unwrap(), None, "its words are already there");
        let wider = "Always run cargo fmt before committing, in every crate.";
        assert_eq!(merged_text(old, wider).unwrap().as_deref(), Some(wider), "the new one holds the old");
        assert_eq!(
            merged_text(old, "Clippy must pass too.").unwrap().as_deref(),
            Some("Run cargo fmt before committing. Clippy must pass too.")
        );
        assert_eq!(merged_text("No period", "Second").unwrap().as_deref(), Some("No period. Second"));
        let long = "x".repeat(ops::MAX_TEXT - 5);
        assert!(matches!(merged_text(&long, "something else entirely"), Err(OpError::Invalid(_))));
    }
}
