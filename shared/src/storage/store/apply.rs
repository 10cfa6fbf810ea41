//! Applying a batch of events to the projection, in log order, idempotently:
//! the engine. What each kind of event does to the tables is the business of
//! a [`Projector`], supplied by the layer that knows every kind
//! (`crate::projection`).
//!
//! A batch is applied in one transaction that also advances `applied_lsn`.
//! Events at or before the applied position are skipped; the projector skips
//! an event id it has seen before, so applying an event twice changes
//! nothing. Each event runs inside a savepoint: an event that cannot be
//! applied (it names an unknown memory, say) is rolled back alone, recorded
//! in `apply_errors` and logged, and never blocks the log. Errors of the
//! database itself (disk full, I/O) abort the batch without advancing the
//! position.

use rusqlite::{Connection, ErrorCode, TransactionBehavior, params};

use super::{Store, read_applied_lsn};
use crate::base::error::{Error, Result, SqlContext};
use crate::storage::event::{Body, Event};
use crate::storage::tape::Lsn;

/// What a batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Events applied.
    pub applied: u64,
    /// Events whose id had already been applied.
    pub duplicates: u64,
    /// Events at or before the applied position.
    pub already_applied: u64,
    /// Events of unknown kind (kept in the log, skipped here).
    pub unknown: u64,
    /// Events that could not be applied (recorded in `apply_errors`).
    pub errors: u64,
}

impl ApplyStats {
    /// Adds another batch's counts.
    pub fn add(&mut self, other: ApplyStats) {
        self.applied += other.applied;
        self.duplicates += other.duplicates;
        self.already_applied += other.already_applied;
        self.unknown += other.unknown;
        self.errors += other.errors;
    }
}

/// Why one event could not be applied.
#[derive(Debug)]
pub enum Failure {
    /// The event's data does not fit the projection; skip it and go on.
    Data(String),
    /// The database failed; abort the batch.
    Fatal(Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        match e.sqlite_error_code() {
            Some(ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch | ErrorCode::TooBig) | None => {
                Failure::Data(e.to_string())
            }
            Some(_) => Failure::Fatal(Error::sqlite("apply event", e)),
        }
    }
}

/// The result of applying one event, or one step of it.
pub type Step<T> = std::result::Result<T, Failure>;

/// A [`Failure::Data`] with `msg`.
pub fn data<T>(msg: impl Into<String>) -> Step<T> {
    Err(Failure::Data(msg.into()))
}

/// What each kind of event does to the tables. A new projector is made for
/// every pass over a batch, so what it accumulates (counters written once at
/// the end) never outlives a pass that was rolled back.
pub trait Projector: Default {
    /// Applies one event past the applied position: `Ok(true)` when it
    /// changed the projection, `Ok(false)` for an event id seen before.
    /// `isolated` says whether the event runs in a savepoint of its own.
    fn apply(&mut self, conn: &Connection, lsn: Lsn, event: &Event, isolated: bool) -> Step<bool>;

    /// Called before `event`, outside its savepoint: the moment to write what
    /// was accumulated and the event must see.
    fn before(&mut self, conn: &Connection, event: &Event) -> Result<()>;

    /// Writes what the pass accumulated; called once, before the commit.
    fn finish(&mut self, conn: &Connection) -> Result<()>;
}

/// Applies a batch with a projector of type `P` (see [`Store::apply_with`]).
pub type Apply = fn(&mut Store, &[(Lsn, &Event)]) -> Result<ApplyStats>;

impl Store {
    /// Applies events in order in one transaction and advances the applied
    /// position to the last LSN given.
    pub fn apply_with<P: Projector>(&mut self, batch: &[(Lsn, &Event)]) -> Result<ApplyStats> {
        // Fast pass without per-event savepoints (a savepoint makes FTS5 flush
        // its pending terms, which is what makes bulk indexing slow). If an
        // event fails, the batch is rolled back and redone with each event
        // isolated in a savepoint; both passes give the same result.
        if let Some(stats) = self.apply_pass::<P>(batch, false)? {
            return Ok(stats);
        }
        self.apply_pass::<P>(batch, true)?
            .ok_or_else(|| Error::InvalidInput("an isolated apply pass asked to be retried".into()))
    }

    /// One attempt at a batch; `None` when an event failed and `isolate` is off.
    fn apply_pass<P: Projector>(&mut self, batch: &[(Lsn, &Event)], isolate: bool) -> Result<Option<ApplyStats>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).sql("begin apply")?;
        let applied = read_applied_lsn(&tx)?;
        let mut pass = Pass { conn: &tx, projector: P::default(), stats: ApplyStats::default(), isolate };
        let mut last = applied;
        for (lsn, event) in batch {
            if *lsn <= applied {
                pass.stats.already_applied += 1;
                continue;
            }
            if !pass.apply_one(*lsn, event)? {
                // Dropping the transaction rolls it back.
                return Ok(None);
            }
            last = *lsn;
        }
        pass.projector.finish(&tx)?;
        let stats = pass.stats;
        if last > applied {
            tx.execute(
                "INSERT INTO engram_state (key, value) VALUES ('applied_lsn', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [last.to_string()],
            )
            .sql("advance applied position")?;
        }
        tx.commit().sql("commit apply")?;
        Ok(Some(stats))
    }
}

/// One pass over a batch.
struct Pass<'c, P> {
    conn: &'c Connection,
    projector: P,
    stats: ApplyStats,
    /// Run each event in its own savepoint so that a failing one can be skipped.
    isolate: bool,
}

impl<P: Projector> Pass<'_, P> {
    /// Applies one event; `Ok(false)` asks for the batch to be redone isolated.
    fn apply_one(&mut self, lsn: Lsn, event: &Event) -> Result<bool> {
        if let Body::Unknown(u) = &event.body {
            tracing::warn!(lsn, kind = %u.kind, reason = %u.reason, "skipping an event this build cannot read");
            self.conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO unknown_events (lsn, event_id, kind, reason) VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut s| s.execute(params![lsn as i64, event.id.as_str(), u.kind, u.reason]))
                .sql("record unknown event")?;
            self.stats.unknown += 1;
            return Ok(true);
        }
        self.projector.before(self.conn, event)?;
        if !self.isolate {
            match self.projector.apply(self.conn, lsn, event, false) {
                Ok(true) => self.stats.applied += 1,
                Ok(false) => self.stats.duplicates += 1,
                Err(Failure::Data(_)) => return Ok(false),
                Err(Failure::Fatal(e)) => return Err(e),
            }
            return Ok(true);
        }
        self.exec("SAVEPOINT ev")?;
        match self.projector.apply(self.conn, lsn, event, true) {
            Ok(fresh) => {
                self.exec("RELEASE ev")?;
                if fresh {
                    self.stats.applied += 1;
                } else {
                    self.stats.duplicates += 1;
                }
            }
            Err(Failure::Data(msg)) => {
                self.exec("ROLLBACK TO ev")?;
                self.exec("RELEASE ev")?;
                tracing::warn!(lsn, kind = event.kind(), id = %event.id, error = %msg, "event not applied");
                self.conn
                    .prepare_cached(
                        "INSERT OR IGNORE INTO apply_errors (lsn, event_id, kind, error) VALUES (?1, ?2, ?3, ?4)",
                    )
                    .and_then(|mut s| s.execute(params![lsn as i64, event.id.as_str(), event.kind(), msg]))
                    .sql("record apply error")?;
                self.stats.errors += 1;
            }
            Err(Failure::Fatal(e)) => {
                let _ = self.exec("ROLLBACK TO ev");
                return Err(e);
            }
        }
        Ok(true)
    }

    fn exec(&self, sql: &str) -> Result<()> {
        self.conn.prepare_cached(sql).and_then(|mut s| s.execute([])).sql(sql)?;
        Ok(())
    }
}

/// Records `event`'s id in `applied_events`: `false` when it was there
/// already (the event was applied before). Content events are deduplicated
/// by `session_events.event_id` instead.
pub fn first_time(conn: &Connection, event: &Event) -> Step<bool> {
    let fresh = conn
        .prepare_cached("INSERT OR IGNORE INTO applied_events (event_id) VALUES (?1)")?
        .execute([event.id.as_str()])?;
    Ok(fresh > 0)
}

/// Adds `delta` to a counter of `engram_counters` (see
/// [`super::MEMORY_CONTENT_WRITES`]).
pub fn count(conn: &Connection, name: &str, delta: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO engram_counters (name, value) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
    )?
    .execute(params![name, delta])?;
    Ok(())
}

/// `x`, or `fallback` when it is not finite (a column that must hold a number).
pub fn finite_or(x: f32, fallback: f32) -> f32 {
    if x.is_finite() { x } else { fallback }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn cap(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
