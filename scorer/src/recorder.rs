//! The recorder: `rank` answers first and records after.
//!
//! Recording a served ranking (the `ranking.served` event: a tape append with
//! fdatasync, then the projection) costs several milliseconds, most of it the
//! sync. `rank` therefore builds the event on the main thread (its ranking id
//! and event id are assigned there, so the response carries them), hands it to
//! the `scorer-recorder` thread through a bounded channel and answers at once.
//! The recorder drains everything queued into one journal append: one lock,
//! one sync, one SQLite transaction for the whole batch (group commit). Events
//! reach the tape in the order the rankings were served.
//!
//! # Durability
//!
//! * **Shutdown.** End of stdin, `shutdown` and SIGTERM all drain the recorder:
//!   every ranking answered before is committed before the process exits
//!   ([`Recorder::finish`], also run on drop).
//! * **Crash.** A SIGKILL, a power loss, or a second SIGTERM (which exits at
//!   once) can lose the rankings answered since the last completed sync:
//!   those still queued or in the batch being synced, at most
//!   [`QUEUE`] + [`MAX_BATCH`] (a full queue makes `rank` wait). Idle, that is
//!   the last few milliseconds; under a sustained stream of requests, up to
//!   one batch's sync, about 0.2 s. The loss is always a suffix: the tape
//!   keeps the rankings served first, in order. They are telemetry for
//!   training, not user data: nothing a user asked to remember goes through
//!   here, memory writes stay synchronous, and a lost ranking only means one
//!   fewer training example. `recorded: true` in a `rank` answer means
//!   "queued for recording", not "on disk".
//! * **Failure.** A batch that cannot be appended is logged (with its ranking
//!   ids) and dropped; the recorder reopens the journal for the next batch.
//!   A failure, even a panic, never ends the process.
//! * **Backpressure.** The channel holds [`QUEUE`] rankings; when the disk
//!   falls that far behind, `rank` waits for room instead of growing memory.
//!
//! # Reading one's own rankings
//!
//! Until a ranking is applied to the projection, the rankings that follow it
//! must still see its effects (its injected memories are shown in its session,
//! their access and injection counts rise). The recorder keeps the list of
//! rankings queued or in flight ([`Recorder::unapplied`]); `rank` passes it to
//! [`shared::domain::rank::rank_after`], which reproduces those effects exactly.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use shared::base::paths::Paths;
use shared::domain::rank::Unapplied;
use shared::storage::event::Event;
use shared::storage::journal::Journal;

use crate::training::panic_message;

/// Rankings the channel holds before `rank` waits for the recorder.
pub const QUEUE: usize = 256;
/// Most events committed in one append.
pub const MAX_BATCH: usize = 256;

/// One served ranking to record.
#[derive(Debug)]
struct Record {
    event: Event,
    ranking_id: String,
}

/// The rankings queued or being committed (shared with the recorder thread).
type Pending = Arc<Mutex<Vec<Unapplied>>>;

/// The handle the main thread holds: a sender and the recorder thread.
#[derive(Debug)]
pub struct Recorder {
    tx: Option<Sender<Record>>,
    thread: Option<JoinHandle<()>>,
    pending: Pending,
}

impl Recorder {
    /// Starts the recorder thread; it opens its own journal on `paths` (so the
    /// main thread never waits for the tape lock) as `writer`.
    pub fn start(paths: Paths, writer: String) -> std::io::Result<Recorder> {
        let (tx, rx) = crossbeam_channel::bounded(QUEUE);
        let pending: Pending = Arc::default();
        let shared = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name("scorer-recorder".into())
            .spawn(move || record_loop(&rx, &paths, &writer, &shared))?;
        Ok(Recorder { tx: Some(tx), thread: Some(thread), pending })
    }

    /// The rankings not yet known to be applied, oldest first.
    pub fn unapplied(&self) -> Vec<Unapplied> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Queues `event` (the `ranking.served` of `unapplied`); waits while the
    /// queue is full. False if the recorder is gone (logged).
    pub fn record(&self, event: Event, unapplied: Unapplied) -> bool {
        let Some(tx) = &self.tx else { return false };
        let ranking_id = unapplied.ranking_id.clone();
        // Listed before it is sent, so that the recorder can always unlist it.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).push(unapplied);
        let record = Record { event, ranking_id };
        let sent = match tx.try_send(record) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(record)) => {
                tracing::warn!(queued = QUEUE, "the recorder is behind; waiting for room");
                tx.send(record).map_err(|e| e.into_inner())
            }
            Err(TrySendError::Disconnected(record)) => Err(record),
        };
        match sent {
            Ok(()) => true,
            Err(record) => {
                tracing::error!(ranking_id = %record.ranking_id, "the recorder is gone; the ranking is not recorded");
                unlist(&self.pending, &[record.ranking_id]);
                false
            }
        }
    }

    /// Commits everything queued and stops the recorder thread.
    pub fn finish(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let queued = self.pending.lock().unwrap_or_else(PoisonError::into_inner).len();
            if queued > 0 {
                tracing::debug!(queued, "committing the rankings still queued");
            }
            if thread.join().is_err() {
                tracing::error!("the recorder thread panicked");
            }
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
    }
}

fn unlist(pending: &Pending, ids: &[String]) {
    pending.lock().unwrap_or_else(PoisonError::into_inner).retain(|u| !ids.contains(&u.ranking_id));
}

/// Receives until every sender is gone and the queue is empty.
fn record_loop(rx: &Receiver<Record>, paths: &Paths, writer: &str, pending: &Pending) {
    let mut journal: Option<Journal> = None;
    while let Ok(first) = rx.recv() {
        let mut events = vec![first.event];
        let mut ids = vec![first.ranking_id];
        while events.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => {
                    events.push(r.event);
                    ids.push(r.ranking_id);
                }
                Err(_) => break,
            }
        }
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| commit(&mut journal, paths, writer, &events)));
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(payload) => Some(format!("panicked: {}", panic_message(payload.as_ref()))),
        };
        if let Some(error) = failure {
            // Reopen for the next batch: the journal may be in any state.
            journal = None;
            tracing::error!(%error, rankings = ?ids, "served rankings could not be recorded");
        }
        unlist(pending, &ids);
    }
}

/// Appends one batch: one lock, one sync, one projection transaction.
fn commit(
    journal: &mut Option<Journal>,
    paths: &Paths,
    writer: &str,
    events: &[Event],
) -> shared::base::error::Result<()> {
    let _span = tracing::debug_span!("record rankings", n = events.len()).entered();
    let j = match journal {
        Some(j) => j,
        None => journal.insert(shared::projection::open(paths, writer)?),
    };
    let receipt = j.append(events)?;
    tracing::debug!(first_lsn = receipt.first_lsn, last_lsn = receipt.last_lsn, "rankings recorded");
    Ok(())
}
