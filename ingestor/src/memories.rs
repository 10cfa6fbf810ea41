//! The memory commands of `engram-ingestor memory …`: thin wrappers over
//! [`shared::domain::memory::ops`] (which the scorer's MCP tools use too) that turn its
//! errors into the ingestor's. Each state change is one event appended through
//! the journal, after checking that every memory it names exists; texts and
//! tags are redacted like everything else that reaches a tape.

use shared::base::config::Config;
use shared::base::ids::MemoryId;
use shared::base::time::Ts;
use shared::domain::knowledge::{self, buffer::StagedRecord};
use shared::domain::memory::ops::{self as ops, OpError, Origin};
use shared::domain::memory::queries::{MemoryFilter, MemoryRecord};
use shared::storage::journal::Journal;
use shared::storage::store::Store;

use crate::error::Error;

pub use shared::domain::knowledge::ops::{Resolution, Saved};
pub use shared::domain::memory::ops::{MAX_TEXT, MemoryChange, MemoryDetails, NewMemory};

impl From<OpError> for Error {
    fn from(e: OpError) -> Error {
        match e {
            OpError::UnknownMemory(id) => Error::UnknownMemory { id },
            OpError::Invalid(why) | OpError::Conflict(why) | OpError::NotFound(why) => Error::InvalidArgument(why),
            OpError::Store { context, source } => Error::engram(context, source),
        }
    }
}

/// The memory `id`, which must exist (forgotten or not).
pub fn require(store: &Store, id: &str) -> Result<MemoryRecord, Error> {
    Ok(ops::require(store, id)?)
}

/// Adds a memory (by the user); returns its new id.
pub fn add(journal: &mut Journal, m: NewMemory, now: Ts) -> Result<MemoryId, Error> {
    Ok(ops::add(journal, m, &Origin::user(), now)?)
}

/// Changes a memory's text, type, importance, tags or project.
pub fn update(journal: &mut Journal, id: &str, change: MemoryChange, now: Ts) -> Result<(), Error> {
    Ok(ops::update(journal, id, change, now)?)
}

/// Pins or unpins a memory.
pub fn set_pinned(journal: &mut Journal, id: &str, pinned: bool, now: Ts) -> Result<(), Error> {
    Ok(ops::set_pinned(journal, id, pinned, now)?)
}

/// Marks a memory outdated, optionally replaced by another.
pub fn deprecate(
    journal: &mut Journal,
    id: &str,
    reason: Option<String>,
    superseded_by: Option<String>,
    now: Ts,
) -> Result<(), Error> {
    Ok(ops::deprecate(journal, id, reason, superseded_by, now)?)
}

/// Forgets a memory; `false` when it was already forgotten (nothing appended).
pub fn forget(journal: &mut Journal, id: &str, reason: Option<String>, now: Ts) -> Result<bool, Error> {
    Ok(ops::forget(journal, id, reason, now)?)
}

/// Forgets a memory as the removal of the data it came from: its text may
/// be learned again from other data ([`ops::forget_data`]).
pub fn forget_data(journal: &mut Journal, id: &str, reason: Option<String>, now: Ts) -> Result<bool, Error> {
    Ok(ops::forget_data(journal, id, reason, now)?)
}

/// Records explicit relevance feedback (by the user), optionally for a session.
pub fn feedback(
    journal: &mut Journal,
    id: &str,
    relevance: f32,
    reason: Option<String>,
    session: Option<String>,
    now: Ts,
) -> Result<(), Error> {
    let session = session.as_deref().map(ops::parse_session).transpose()?;
    let origin = Origin { session, ..Origin::user() };
    Ok(ops::feedback(journal, id, relevance, reason, &origin, now)?)
}

/// Live memories, pinned first then newest.
pub fn list(store: &Store, filter: &MemoryFilter) -> Result<Vec<MemoryRecord>, Error> {
    Ok(ops::list(store, filter)?)
}

/// One memory with its sessions and feedback.
pub fn show(store: &Store, id: &str) -> Result<MemoryDetails, Error> {
    Ok(ops::show(store, id)?)
}

// Seed 004's memory model (`shared::domain::knowledge`).

/// Saves a memory (by the user) through conflict detection and the
/// discovery engine, with `derives_from` edges to `sources`.
pub fn save(journal: &mut Journal, config: &Config, m: NewMemory, sources: &[String], now: Ts) -> Result<Saved, Error> {
    Ok(knowledge::ops::save(journal, config, m, &Origin::user(), sources, now)?)
}

/// Resolves a staged memory (by the user).
pub fn resolve(
    journal: &mut Journal,
    config: &Config,
    stage_id: &str,
    action: &str,
    existing: Option<&str>,
    now: Ts,
) -> Result<Resolution, Error> {
    Ok(knowledge::ops::resolve(journal, config, stage_id, action, existing, "user", now)?)
}

/// The observation buffer.
pub fn staging(store: &Store, filter: &knowledge::buffer::StagedFilter) -> Result<Vec<StagedRecord>, Error> {
    knowledge::buffer::list(store, filter).map_err(|e| Error::engram("list the observation buffer", e))
}

/// The graph around a memory.
pub fn graph(store: &Store, id: &str, depth: u32) -> Result<knowledge::graph::Graph, Error> {
    if !(1..=knowledge::graph::HARD_MAX_DEPTH).contains(&depth) {
        return Err(Error::InvalidArgument(format!(
            "--depth must be from 1 to {}, not {depth}",
            knowledge::graph::HARD_MAX_DEPTH
        )));
    }
    ops::require_live(store, id)?;
    knowledge::graph::traverse(store, id, depth, knowledge::graph::Direction::Both)
        .map_err(|e| Error::engram("traverse the graph", e))?
        .ok_or_else(|| Error::UnknownMemory { id: id.to_owned() })
}

/// Adds an edge (by the user); returns its id.
pub fn link(
    journal: &mut Journal,
    from: &str,
    to: &str,
    relation: &str,
    strength: f32,
    now: Ts,
) -> Result<String, Error> {
    Ok(knowledge::ops::link(journal, from, to, relation, strength, "user", now)?)
}

/// Removes an edge.
pub fn unlink(journal: &mut Journal, edge_id: &str, now: Ts) -> Result<(), Error> {
    Ok(knowledge::ops::unlink(journal, edge_id, now)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::WRITER;
    use shared::base::paths::Paths;

    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().expect("tmp");
        let j = shared::projection::open(&Paths::at(dir.path()), WRITER).expect("journal");
        (dir, j)
    }

    fn new(text: &str) -> NewMemory {
        NewMemory {
            text: text.into(),
            memory_type: shared::storage::event::MemoryType::Convention,
            importance: 0.7,
            project: Some("web".into()),
            tags: vec!["PNPM".into(), "pnpm".into()],
            pinned: false,
        }
    }

    fn last_lsn(j: &Journal) -> u64 {
        j.tape().lock().expect("lock").last_lsn()
    }

    #[test]
    fn every_change_is_one_event_and_unknown_ids_write_nothing() {
        let (_dir, mut j) = journal();
        let id = add(&mut j, new("Use pnpm; token=sk-ant-abcdefghijklmnopqrstuvwxyz"), Ts(1_000)).expect("add");
        let m = require(j.store(), id.as_str()).expect("exists");
        assert_eq!(m.tags, vec!["pnpm".to_owned()]);
        assert!(!m.content.contains("sk-ant"), "{}", m.content);
        update(&mut j, id.as_str(), MemoryChange { importance: Some(0.9), ..Default::default() }, Ts(2_000))
            .expect("update");
        set_pinned(&mut j, id.as_str(), true, Ts(3_000)).expect("pin");
        feedback(&mut j, id.as_str(), 0.8, Some("useful".into()), Some("claude:s1".into()), Ts(4_000))
            .expect("feedback");
        let d = show(j.store(), id.as_str()).expect("show");
        assert!(d.memory.pinned && (d.memory.importance - 0.9).abs() < 1e-6);
        assert_eq!(d.feedback.len(), 1);
        assert_eq!(last_lsn(&j), 4);

        for result in [
            update(&mut j, "mem_nope", MemoryChange { text: Some("x".into()), ..Default::default() }, Ts(5))
                .map(|_| ()),
            set_pinned(&mut j, "mem_nope", false, Ts(5)),
            deprecate(&mut j, "mem_nope", None, None, Ts(5)),
            deprecate(&mut j, id.as_str(), None, Some("mem_nope".into()), Ts(5)),
            forget(&mut j, "mem_nope", None, Ts(5)).map(|_| ()),
            feedback(&mut j, "mem_nope", 0.5, None, None, Ts(5)),
        ] {
            let err = result.expect_err("unknown id");
            assert!(matches!(err, Error::UnknownMemory { .. }), "{err}");
            assert_eq!(err.exit_code(), 2);
        }
        assert!(feedback(&mut j, id.as_str(), 1.5, None, None, Ts(5)).is_err());
        assert!(ops::check_type("nonsense").is_err());
        assert!(update(&mut j, id.as_str(), MemoryChange::default(), Ts(5)).is_err());
        assert_eq!(last_lsn(&j), 4, "nothing appended for rejected commands");

        assert!(forget(&mut j, id.as_str(), Some("obsolete".into()), Ts(6_000)).expect("forget"));
        assert!(!forget(&mut j, id.as_str(), None, Ts(7_000)).expect("again"));
        assert!(list(j.store(), &MemoryFilter::default()).expect("list").is_empty());
        assert!(set_pinned(&mut j, id.as_str(), true, Ts(8_000)).is_err(), "a forgotten memory cannot be pinned");
        // The forget is one batch: `memory.forgotten` and the keyed
        // fingerprint of its text (`forget.fingerprints`), nothing after.
        assert_eq!(last_lsn(&j), 6);
    }
}
