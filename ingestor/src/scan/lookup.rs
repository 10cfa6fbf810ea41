//! [`MemoryLookup`] over the projection: the memory with the asked id (even
//! forgotten, so that re-extraction never re-adds it), a handful of live
//! memories that full-text search finds for the candidate's words, and the
//! memories added earlier in the same batch (not yet in the projection).
//! Deprecated memories are not compared (a new memory never conflicts with
//! an outdated one). The thresholds are applied by the caller
//! ([`crate::dedup::classify`]), with the conflict threshold of the
//! configuration ([`StoreLookup::with_conflicts`]).

use std::cell::RefCell;

use shared::base::ids::{MemoryId, SessionKey};
use shared::domain::memory::queries::MemoryRecord;
use shared::storage::event::{Body, Event};
use shared::storage::store::Store;

use crate::dedup::{ExistingMemory, MemoryLookup, words};

/// FTS candidates fetched per lookup.
pub const FTS_CANDIDATES: usize = 8;
/// Most query words (the longest are kept).
const MAX_WORDS: usize = 24;

/// Existing memories from a store plus those pending in the current batch.
#[derive(Debug)]
pub struct StoreLookup<'s> {
    store: &'s Store,
    pending: RefCell<Vec<ExistingMemory>>,
    /// Texts staged earlier in the batch, with the memory each is alike to.
    staged: RefCell<Vec<(String, MemoryId)>>,
    conflicts: Option<f32>,
}

impl<'s> StoreLookup<'s> {
    /// A lookup over `store` (conflict detection at seed 004's default threshold).
    pub fn new(store: &'s Store) -> StoreLookup<'s> {
        StoreLookup {
            store,
            pending: RefCell::new(Vec::new()),
            staged: RefCell::new(Vec::new()),
            conflicts: Some(crate::dedup::DEFAULT_CONFLICT_THRESHOLD),
        }
    }

    /// With the configured conflict detection (`None` when it is off).
    pub fn with_conflicts(self, config: &shared::base::config::Config) -> StoreLookup<'s> {
        let c = &config.knowledge.conflicts;
        StoreLookup { conflicts: c.enabled.then_some(c.similarity_threshold), ..self }
    }

    /// Records memory events produced but not yet applied, so later lookups
    /// of the same batch see them.
    pub fn note(&self, events: &[Event]) {
        let mut pending = self.pending.borrow_mut();
        for e in events {
            match &e.body {
                Body::MemoryAdded(m) => pending.push(ExistingMemory {
                    id: m.memory_id.clone(),
                    text: m.content.clone(),
                    embedding: None,
                    sessions: m.source_session.iter().cloned().collect(),
                    project: shared::domain::env::store::memory_project(
                        self.store.conn(),
                        m.project.as_deref(),
                        m.source_session.as_ref(),
                    )
                    .unwrap_or_else(|_| m.project.clone()),
                }),
                Body::MemoryStaged(st) => {
                    if let Some(with) = &st.conflict_with {
                        self.staged.borrow_mut().push((st.memory.content.clone(), with.clone()));
                    }
                }
                Body::MemoryUpdated(u) => {
                    if let (Some(p), Some(s)) = (pending.iter_mut().find(|p| p.id == u.memory_id), &u.seen_in) {
                        p.sessions.push(s.clone());
                    }
                }
                _ => {}
            }
        }
    }

    fn existing(&self, record: MemoryRecord) -> ExistingMemory {
        let sessions = self.store.memory_sessions(&record.id).unwrap_or_else(|e| {
            tracing::warn!(memory = %record.id, error = %e, "cannot list a memory's sessions");
            Vec::new()
        });
        let embedding = self.store.memory_embedding(&record.id).ok().flatten();
        ExistingMemory { id: MemoryId(record.id), text: record.content, embedding, sessions, project: record.project }
    }
}

impl MemoryLookup for StoreLookup<'_> {
    fn candidates(&self, text: &str, id: &MemoryId) -> Vec<ExistingMemory> {
        let mut out: Vec<ExistingMemory> = Vec::new();
        match self.store.memory(id.as_str()) {
            Ok(Some(m)) => out.push(self.existing(m)),
            Ok(None) => {}
            Err(e) => tracing::warn!(memory = %id, error = %e, "cannot look a memory up"),
        }
        let mut ws: Vec<String> = words(text).into_iter().collect();
        ws.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        ws.truncate(MAX_WORDS);
        match self.store.memories_matching(&ws, FTS_CANDIDATES) {
            Ok(found) => {
                for m in found.into_iter().filter(|m| !m.deprecated && m.superseded_by.is_none()) {
                    if !out.iter().any(|o| o.id.as_str() == m.id) {
                        out.push(self.existing(m));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "memory search failed; dedup sees fewer candidates"),
        }
        for p in self.pending.borrow().iter() {
            if !out.iter().any(|o| o.id == p.id) {
                out.push(p.clone());
            }
        }
        out
    }

    fn conflict_threshold(&self) -> Option<f32> {
        self.conflicts
    }

    /// Projects compared as the projection stores them: a candidate's bare
    /// folder name becomes its session's detected project key.
    fn already_staged(&self, text: &str, with: &MemoryId) -> bool {
        self.staged.borrow().iter().any(|(t, w)| t == text && w == with)
            || shared::domain::knowledge::buffer::pending_same(self.store, text, with)
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot look up staged memories");
                    None
                })
                .is_some()
    }

    fn same_project(&self, project: Option<&str>, session: &SessionKey, existing: Option<&str>) -> bool {
        let mine = shared::domain::env::store::memory_project(self.store.conn(), project, Some(session))
            .unwrap_or_else(|_| project.map(str::to_owned));
        mine.as_deref() == existing
    }
}
