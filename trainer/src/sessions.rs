//! Finding finished, unscored sessions and reading what the continuity scorer
//! needs about one: content from the tapes, rankings, FTS hits, feedback and
//! memory facts from the projection.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rusqlite::OptionalExtension;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::time::Ts;
use shared::domain::training::{data, waiting};
use shared::storage::journal::Journal;
use shared::storage::store::Store;

use crate::continuity::{Corpus, FeedbackRecord, FtsHitRecord, MemoryFacts, SessionRecord};
use crate::error::{Result, Sql};
use crate::terms::memory_terms;

/// An ended session waiting to be scored (see [`waiting`]).
pub type Pending = waiting::Waiting;

/// Ended sessions with at least one served ranking, fully ingested, whose
/// content no score covers yet (never labelled, or content that arrived
/// after the last labelling), in the order they ended.
pub fn pending(store: &Store) -> Result<Vec<Pending>> {
    Ok(waiting::ready(store)?)
}

/// Reads everything the continuity scorer needs about `session`.
pub fn load(journal: &Journal, session: &Pending) -> Result<Loaded> {
    let store = journal.store();
    let key = &session.session_key;
    // Counted before they are read: content applied in between is read but
    // not counted, so at worst the session is labelled once more.
    let content_events = content_events(store, key)?;
    let events = journal.session_events(key)?.into_iter().map(|(_, e)| e).collect();
    let rankings = data::session_rankings(store, key)?;
    let fts_hits = fts_hits(store, key)?;
    let feedback = feedback(store, key)?;
    let mut ids: BTreeSet<MemoryId> =
        rankings.iter().flat_map(|r| r.candidates.iter().map(|c| c.memory_id.clone())).collect();
    ids.extend(fts_hits.iter().flat_map(|h| h.memory_ids.iter().cloned()));
    ids.extend(feedback.iter().map(|f| f.memory_id.clone()));
    let mut memories = BTreeMap::new();
    for id in ids {
        if let Some(facts) = memory_facts(store, &id)? {
            memories.insert(id, facts);
        }
    }
    let corpus = corpus(store, memories.values().map(|m| m.content.as_str()))?;
    let project = session.project.clone().or_else(|| rankings.iter().find_map(|r| r.project.clone()));
    let record =
        SessionRecord { session_key: key.clone(), project, events, rankings, fts_hits, feedback, memories, corpus };
    Ok(Loaded { record, content_events })
}

/// A session as the scorer reads it, and what a score of it covers.
#[derive(Debug)]
pub struct Loaded {
    /// What the continuity scorer reads.
    pub record: SessionRecord,
    /// How many content events the projection held for the session when it
    /// was read (see [`waiting`]).
    pub content_events: u64,
}

/// The session's content events in the projection (`session_events` rows).
fn content_events(store: &Store, session: &SessionKey) -> Result<u64> {
    let n: i64 = store
        .conn()
        .prepare_cached("SELECT COUNT(*) FROM session_events WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)))
        .sql("count the session's content events")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn fts_hits(store: &Store, session: &SessionKey) -> Result<Vec<FtsHitRecord>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT created_ms, ranking_id, memory_ids FROM fts_hits WHERE session_key = ?1
             ORDER BY created_ms, event_id",
        )
        .sql("read FTS hits")?;
    stmt.query_map([session.as_str()], |r| {
        let ids: String = r.get(2)?;
        Ok(FtsHitRecord {
            at_ms: r.get(0)?,
            ranking_id: r.get(1)?,
            memory_ids: serde_json::from_str::<Vec<String>>(&ids)
                .unwrap_or_default()
                .into_iter()
                .map(MemoryId)
                .collect(),
        })
    })
    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
    .sql("read FTS hits")
}

fn feedback(store: &Store, session: &SessionKey) -> Result<Vec<FeedbackRecord>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT memory_id, relevance, by FROM memory_feedback WHERE session_key = ?1 ORDER BY created_at, event_id",
        )
        .sql("read feedback")?;
    stmt.query_map([session.as_str()], |r| {
        Ok(FeedbackRecord { memory_id: MemoryId(r.get(0)?), relevance: r.get::<_, f64>(1)? as f32, by: r.get(2)? })
    })
    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
    .sql("read feedback")
}

/// `content, deprecated, superseded_by, is_deleted, deleted_at` of a memory row.
type FactsRow = (String, bool, Option<String>, bool, Option<String>);

pub(crate) fn memory_facts(store: &Store, id: &MemoryId) -> Result<Option<MemoryFacts>> {
    let row: Option<FactsRow> = store
        .conn()
        .prepare_cached("SELECT content, deprecated, superseded_by, is_deleted, deleted_at FROM memories WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))).optional()
        })
        .sql("read memory")?;
    Ok(row.map(|(content, deprecated, superseded_by, deleted, deleted_at)| MemoryFacts {
        content,
        superseded: deprecated || superseded_by.is_some(),
        forgotten_ms: if deleted {
            Some(deleted_at.as_deref().and_then(Ts::parse).map_or(i64::MAX, |t| t.0))
        } else {
            None
        },
    }))
}

/// Document frequencies of the terms of `texts` over the live memories.
pub fn corpus<'a>(store: &Store, texts: impl Iterator<Item = &'a str>) -> Result<Corpus> {
    let live: i64 = store
        .conn()
        .query_row("SELECT value FROM engram_counters WHERE name = 'live_memories'", [], |r| r.get(0))
        .optional()
        .sql("count memories")?
        .unwrap_or(0);
    let mut df = HashMap::new();
    let mut stmt = store.conn().prepare_cached("SELECT df FROM memory_terms WHERE term = ?1").sql("prepare df")?;
    for text in texts {
        for term in memory_terms(text) {
            if df.contains_key(&term.text) {
                continue;
            }
            let n: Option<i64> = stmt.query_row([&term.text], |r| r.get(0)).optional().sql("read df")?;
            df.insert(term.text, n.unwrap_or(0).max(0) as u64);
        }
    }
    Ok(Corpus { live_memories: live.max(0) as u64, df })
}
