//! The projection: which domain module applies each kind of event, and the
//! journals and replays that apply with it.
//!
//! This is the one layer that knows every kind of event and every table: it
//! sits above the domain (each domain module supplies the `apply` functions
//! of its own tables) and gives the storage layer's engine
//! ([`Store::apply_with`]) its [`Projector`]. Everything that appends and
//! applies (a [`Journal`], a replay, a repair) is opened here, so that the
//! layers below never name the layers above.

use rusqlite::Connection;

use crate::base::error::Result;
use crate::base::paths::Paths;
use crate::domain::provenance::index::Indexer;
use crate::domain::{env, knowledge, memory, provenance, rank, session, training};
use crate::storage::event::{Body, Event};
use crate::storage::forget;
use crate::storage::journal::{self, Journal, JournalOptions, ReplayProgress, ReplayReport};
use crate::storage::store::{ApplyStats, Projector, Step, Store, data, first_time};
use crate::storage::tape::Lsn;

/// Applies a batch of events to `store` (the [`journal::Apply`] every
/// journal opened here uses).
pub fn apply(store: &mut Store, batch: &[(Lsn, &Event)]) -> Result<ApplyStats> {
    store.apply_with::<Projection>(batch)
}

/// Opens the data home's journal (see [`Journal::open`]).
pub fn open(paths: &Paths, writer: &str) -> Result<Journal> {
    Journal::open(paths, writer, apply)
}

/// Opens the data home's journal with options (see [`Journal::open_with`]).
pub fn open_with(paths: &Paths, writer: &str, opts: JournalOptions) -> Result<Journal> {
    Journal::open_with(paths, writer, opts, apply)
}

/// Compaction of the data home (see [`Journal::compact`]): first the hooks'
/// spool is drained into the log (a ranking spooled while the log was busy
/// holds its query, which may hold a forgotten text), then every forgotten
/// text is removed from the log, spooled events included.
pub fn compact(journal: &mut Journal) -> Result<journal::CompactReport> {
    crate::domain::hook::drain_spool(journal)?;
    journal.compact()
}

/// Rebuilds the projection from the tapes alone (see [`journal::replay`]).
pub fn replay(paths: &Paths, progress: &mut dyn FnMut(ReplayProgress)) -> Result<ReplayReport> {
    journal::replay(paths, apply, progress)
}

/// The dispatch of one pass over a batch, and what it accumulates.
#[derive(Debug, Default)]
struct Projection {
    /// Session counters, written once per pass.
    sessions: session::apply::Counters,
    /// Provenance: fingerprints, spans, lineage, written once per pass.
    provenance: Indexer,
}

impl Projector for Projection {
    fn apply(&mut self, conn: &Connection, lsn: Lsn, event: &Event, isolated: bool) -> Step<bool> {
        if let Some(row) = session::apply::content_row(event) {
            let Some(delta) = session::apply::content(conn, lsn, event, row)? else {
                return Ok(false);
            };
            self.provenance.event(conn, lsn, event, isolated)?;
            self.add(event, delta);
            return Ok(true);
        }
        if !first_time(conn, event)? {
            return Ok(false);
        }
        let ts = event.ts;
        match &event.body {
            Body::SessionStarted(b) => session::apply::started(conn, event, b)?,
            Body::SessionEnded(b) => {
                session::apply::ended(conn, event, b)?;
                self.add(event, session::apply::Delta::default());
            }
            Body::Opaque(b) => {
                let delta = session::apply::opaque(conn, event, b)?;
                self.add(event, delta);
            }
            Body::SourceCursor(b) => session::apply::cursor(conn, event, b)?,
            Body::MemoryAdded(b) => memory::apply::added(conn, event, b)?,
            Body::MemoryUpdated(b) => memory::apply::updated(conn, ts, b)?,
            Body::MemoryPinned(b) => memory::apply::flag(conn, &b.memory_id, "pinned = 1, auto_pinned = 0", ts)?,
            Body::MemoryUnpinned(b) => memory::apply::flag(conn, &b.memory_id, "pinned = 0, auto_pinned = 0", ts)?,
            Body::MemoryDeprecated(b) => memory::apply::deprecated(conn, ts, b)?,
            Body::MemoryForgotten(b) => memory::apply::forgotten(conn, ts, b)?,
            Body::MemoryFeedback(b) => memory::apply::feedback(conn, event, b)?,
            Body::MemoryEmbedded(b) => memory::apply::embedded(conn, ts, b)?,
            Body::RankingServed(b) => rank::apply::served(conn, event, b)?,
            Body::FtsHits(b) => rank::apply::fts_hits(conn, event, b)?,
            Body::SessionScored(b) => training::apply::scored(conn, event, b)?,
            Body::ComparisonRecorded(b) => training::apply::comparison(conn, event, b)?,
            Body::TrainingRun(b) => training::apply::training_run(conn, event, b)?,
            Body::ModelPromoted(b) => training::apply::promoted(conn, event, b)?,
            Body::DriftReset(b) => training::apply::drift_reset(conn, event, b)?,
            Body::HistoryReplayed(b) => training::history::apply(conn, event, b)?,
            Body::EnvDetected(b) => env::store::apply_detected(conn, event, b)?.or_else(data)?,
            Body::MemoryCategorized(b) => {
                memory::apply::require(conn, &b.memory_id)?;
                env::categories::apply(conn, b)?.or_else(data)?;
            }
            Body::MemoryPrerequisitesSet(b) => {
                memory::apply::require(conn, &b.memory_id)?;
                env::store::apply_prerequisites(conn, b)?;
            }
            Body::EdgeAdded(_)
            | Body::EdgeRemoved(_)
            | Body::MemoryStaged(_)
            | Body::StageResolved(_)
            | Body::ConflictSurfaced(_)
            | Body::ConversationStashed(_)
            | Body::ConversationResumed(_)
            | Body::CheckpointCreated(_)
            | Body::TopicShift(_)
            | Body::SessionSummarized(_)
            | Body::MemoriesMerged(_)
            | Body::DedupChecked(_) => knowledge::apply::apply(conn, event)?,
            Body::ProvenanceNoted(b) => provenance::index::noted(conn, event, b)?,
            // The tape log's own events: a lost frame changes no table.
            Body::TapeLost(_) => {}
            Body::ForgetFingerprints(b) => forget::apply_fingerprints(conn, b)?,
            Body::Meta(_)
            | Body::MsgIn(_)
            | Body::MsgOut(_)
            | Body::ToolCall(_)
            | Body::ToolResult(_)
            | Body::CodeRead(_)
            | Body::CodeEdit(_)
            | Body::SpanLink(_)
            | Body::Unknown(_) => return data(format!("{} reached the non-content path", event.kind())),
        }
        Ok(true)
    }

    fn before(&mut self, conn: &Connection, event: &Event) -> Result<()> {
        if matches!(event.body, Body::SessionEnded(_) | Body::EnvDetected(_)) {
            // Pending counters first (and outside any savepoint), so that an end
            // (or a detection that may create the session's row) sees the exact
            // `last_event_ms` however the events were batched.
            self.sessions.flush(conn)?;
        }
        Ok(())
    }

    fn finish(&mut self, conn: &Connection) -> Result<()> {
        use crate::base::error::SqlContext;
        self.sessions.flush(conn)?;
        self.provenance.flush(conn).sql("write the evidence index")?;
        Ok(())
    }
}

impl Projection {
    fn add(&mut self, event: &Event, delta: session::apply::Delta) {
        if let Some(key) = &event.session {
            self.sessions.add(key, event.ts, delta);
        }
    }
}
