//! The journal: the one way state changes, joining the tape log and the projection.
//!
//! [`Journal::append`] takes the tape lock, applies anything another writer
//! appended but did not apply (it may have been killed in between), appends
//! the new events durably, applies them in one SQLite transaction that also
//! advances the stored position, and releases the lock. The log's order is
//! therefore the order of application in every process.
//!
//! [`replay`] rebuilds the projection from the tapes alone into a new
//! generation and swaps it in atomically; [`Journal::compact`] physically
//! removes forgotten memories' text from the tapes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::{EventId, MemoryId, SessionKey};
use crate::base::paths::Paths;
use crate::base::time::Ts;
use crate::storage::event::{Body, Event, TapeLost, UnknownBody};
use crate::storage::forget;
use crate::storage::redact;
use crate::storage::store::{self, Apply, ApplyStats, Store, Tuning};
use crate::storage::tape::{Lsn, RepairReport, Snapshot, TapeLog, TapeOptions, TapeWriter};

/// Events applied per SQLite transaction when catching up or replaying.
const BATCH: usize = 4096;

/// Options of a journal.
#[derive(Clone, Debug, Default)]
pub struct JournalOptions {
    /// Tape log tuning.
    pub tape: TapeOptions,
}

impl JournalOptions {
    /// For latency-sensitive writers (hooks): never seal during an append.
    pub fn low_latency() -> JournalOptions {
        JournalOptions { tape: TapeOptions { auto_seal: false, ..TapeOptions::default() } }
    }
}

/// The tape log and its projection, opened together.
#[derive(Debug)]
pub struct Journal {
    paths: Paths,
    tape: TapeLog,
    store: Store,
    writer: String,
    /// How events reach the projection (`crate::projection::apply`).
    apply: Apply,
}

/// What an append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// LSN of the first event appended.
    pub first_lsn: Lsn,
    /// LSN of the last event appended (`first_lsn - 1` for an empty batch).
    pub last_lsn: Lsn,
    /// Whether the projection was updated (the events are durable either way;
    /// the next open catches up).
    pub applied: bool,
    /// Memory writes left out because their text was forgotten
    /// ([`crate::storage::forget::Guard`]); the LSNs count only what was appended.
    pub forgotten: u64,
}

impl Journal {
    /// Opens the journal in `paths` with default options and catches up;
    /// `apply` applies events to the projection (`crate::projection::open`
    /// passes the one that knows every kind).
    pub fn open(paths: &Paths, writer: &str, apply: Apply) -> Result<Journal> {
        Journal::open_with(paths, writer, JournalOptions::default(), apply)
    }

    /// Opens the journal and brings the projection up to the end of the log.
    pub fn open_with(paths: &Paths, writer: &str, opts: JournalOptions, apply: Apply) -> Result<Journal> {
        fs::create_dir_all(paths.home()).ctx("create directory", paths.home())?;
        let tape = TapeLog::open(&paths.tapes(), opts.tape)?;
        let store = Store::open(&paths.db())?;
        let mut journal = Journal { paths: paths.clone(), tape, store, writer: writer.to_owned(), apply };
        journal.catch_up()?;
        Ok(journal)
    }

    /// The data home.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The projection, for queries.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The projection, mutably.
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The tape log.
    pub fn tape(&self) -> &TapeLog {
        &self.tape
    }

    /// The writer name stamped on new events.
    pub fn writer(&self) -> &str {
        &self.writer
    }

    /// A new event from this writer.
    pub fn event(&self, ts: Ts, session: Option<SessionKey>, body: Body) -> Event {
        Event::new(ts, &self.writer, session, body)
    }

    /// Appends events durably and applies them. See the module docs.
    pub fn append(&mut self, events: &[Event]) -> Result<Receipt> {
        if events.is_empty() {
            let last = self.lock_tape()?.last_lsn();
            return Ok(Receipt { first_lsn: last + 1, last_lsn: last, applied: true, forgotten: 0 });
        }
        // Encoded before the lock is taken: other writers wait less.
        let payloads = encode_marked(events);
        self.locked()?.append_encoded(events, &payloads)
    }

    /// Takes the tape lock and brings the projection up to the end of the
    /// log: until the returned guard is dropped no other writer appends, so
    /// what the caller reads or removes meanwhile is consistent with what it
    /// appends (the hooks' spool is drained this way).
    pub fn locked(&mut self) -> Result<Locked<'_>> {
        let writer = lock_tape(&self.tape, &mut self.store, &self.paths)?;
        reopen_if_replaced(&mut self.store, &self.paths)?;
        catch_up_locked(&mut self.store, &writer, self.apply)?;
        Ok(Locked { writer, store: &mut self.store, paths: &self.paths, apply: self.apply })
    }

    /// Applies whatever the log holds beyond the projection's position.
    pub fn catch_up(&mut self) -> Result<ApplyStats> {
        let writer = lock_tape(&self.tape, &mut self.store, &self.paths)?;
        reopen_if_replaced(&mut self.store, &self.paths)?;
        catch_up_locked(&mut self.store, &writer, self.apply)
    }

    /// Seals the active segment (sealing is otherwise automatic).
    pub fn seal(&mut self) -> Result<()> {
        self.lock_tape()?.seal()?;
        Ok(())
    }

    /// Takes the tape lock, telling recovery that every frame the projection
    /// applied was acknowledged: none of them may be cut as a torn tail.
    fn lock_tape(&mut self) -> Result<TapeWriter<'_>> {
        lock_tape(&self.tape, &mut self.store, &self.paths)
    }

    /// Reopens the projection if a replay swapped in a new generation.
    pub fn reopen_if_replaced(&mut self) -> Result<()> {
        reopen_if_replaced(&mut self.store, &self.paths)
    }

    /// Every content event of a session (messages, tool calls and results,
    /// reads, edits, metadata), complete, in log order: the projection keeps
    /// only capped search text, the tapes keep everything. Served rankings and
    /// FTS hits are in the projection's own tables.
    pub fn session_events(&self, session: &SessionKey) -> Result<Vec<(Lsn, Event)>> {
        let mut lsns: Vec<Lsn> = {
            let mut stmt = self
                .store
                .conn()
                .prepare_cached("SELECT lsn FROM session_events WHERE session_key = ?1 ORDER BY lsn")
                .map_err(|e| Error::sqlite("list session events", e))?;
            let rows = stmt
                .query_map([session.as_str()], |r| r.get::<_, i64>(0))
                .map_err(|e| Error::sqlite("list session events", e))?;
            rows.map(|r| r.map(|l| l as u64))
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| Error::sqlite("list session events", e))?
        };
        lsns.sort_unstable();
        let snapshot = self.tape.snapshot()?;
        Ok(snapshot.frames_at(&lsns)?.into_iter().map(|f| (f.lsn, decode(f.lsn, &f.payload))).collect())
    }

    /// Physically removes the text of every forgotten memory from the tapes
    /// (segments holding it are rewritten as new content-addressed files),
    /// then rebuilds the projection so no copy remains there either. The text
    /// goes from the memory's own events and from every other event that
    /// holds it as it was typed (the session content it was extracted from,
    /// prompts that repeated it): see [`forget::Scrub`]. First, each of its
    /// texts gets a keyed fingerprint, so that none is ever learned again.
    pub fn compact(&mut self) -> Result<CompactReport> {
        let forgotten: BTreeSet<MemoryId> = {
            let mut stmt = self
                .store
                .conn()
                .prepare("SELECT id FROM memories WHERE is_deleted = 1")
                .map_err(|e| Error::sqlite("list forgotten memories", e))?;
            stmt.query_map([], |r| r.get::<_, String>(0))
                .and_then(|rows| rows.map(|r| r.map(MemoryId)).collect::<rusqlite::Result<_>>())
                .map_err(|e| Error::sqlite("list forgotten memories", e))?
        };
        let mut report = CompactReport { forgotten: forgotten.len() as u64, ..CompactReport::default() };
        if forgotten.is_empty() {
            return Ok(report);
        }
        // The texts to remove: every version a forgotten memory ever had,
        // but for memories forgotten as data removal (`relearnable`): their
        // own events are cleared, their text stays learnable elsewhere.
        let mut texts: BTreeMap<MemoryId, Vec<String>> = BTreeMap::new();
        let mut relearnable: BTreeSet<MemoryId> = BTreeSet::new();
        {
            let snapshot = self.tape.snapshot()?;
            for frame in snapshot.frames_after(0) {
                let frame = frame?;
                let event = decode(frame.lsn, &frame.payload);
                let (id, text) = match &event.body {
                    Body::MemoryAdded(b) => (&b.memory_id, Some(b.content.clone())),
                    Body::MemoryUpdated(b) => (&b.memory_id, b.content.clone()),
                    Body::MemoryForgotten(b) if b.relearnable => {
                        relearnable.insert(b.memory_id.clone());
                        continue;
                    }
                    _ => continue,
                };
                if let Some(text) = text
                    && forgotten.contains(id)
                    && !text.is_empty()
                {
                    texts.entry(id.clone()).or_default().push(text);
                }
            }
        }
        // (a memory is forgotten after it is added: only now is it known)
        texts.retain(|id, _| !relearnable.contains(id));
        self.fingerprint_forgotten(&texts)?;
        let scrub = forget::Scrub::new(texts.values().flatten().map(String::as_str));
        let prefilter = scrub_prefilter(texts.values().flatten());
        let mut writer = self.lock_tape()?;
        let stats = writer.rewrite(|_, payload| scrub_event(payload, &forgotten, &scrub, prefilter.as_ref()))?;
        drop(writer);
        report.segments_rewritten = stats.segments_rewritten;
        report.events_scrubbed = stats.frames_changed;
        replay(&self.paths, self.apply, &mut |_| {})?;
        self.reopen_if_replaced()?;
        Ok(report)
    }

    /// Records a fingerprint for each forgotten text that has none yet (a
    /// memory forgotten before fingerprints existed, an older version of its
    /// text), before compaction removes the texts.
    fn fingerprint_forgotten(&mut self, texts: &BTreeMap<MemoryId, Vec<String>>) -> Result<()> {
        let key = forget::Key::load_or_create(&self.paths)?;
        let mut events = Vec::new();
        for (id, versions) in texts {
            let mut missing = Vec::new();
            for fp in versions.iter().flat_map(|t| key.fingerprint(t).into_iter().chain(key.sketch(t))) {
                let known: bool = self
                    .store
                    .conn()
                    .prepare_cached("SELECT EXISTS (SELECT 1 FROM forgotten_fingerprints WHERE fingerprint = ?1)")
                    .and_then(|mut s| s.query_row([&fp], |r| r.get(0)))
                    .map_err(|e| Error::sqlite("look up a forgotten fingerprint", e))?;
                if !known && !missing.contains(&fp) {
                    missing.push(fp);
                }
            }
            if !missing.is_empty() {
                let body = Body::ForgetFingerprints(crate::storage::event::ForgetFingerprints {
                    memory_id: id.clone(),
                    fingerprints: missing,
                });
                events.push(self.event(Ts(0), None, body));
            }
        }
        if !events.is_empty() {
            self.append(&events)?;
        }
        Ok(())
    }
}

/// The journal with the tape lock held ([`Journal::locked`]); dropping it
/// releases the lock.
#[derive(Debug)]
pub struct Locked<'j> {
    writer: TapeWriter<'j>,
    store: &'j mut Store,
    paths: &'j Paths,
    apply: Apply,
}

impl Locked<'_> {
    /// The projection (up to date with the log).
    pub fn store(&self) -> &Store {
        self.store
    }

    /// Appends events durably and applies them, in one batch.
    pub fn append(&mut self, events: &[Event]) -> Result<Receipt> {
        let payloads = encode_marked(events);
        self.append_encoded(events, &payloads)
    }

    /// [`Locked::append`] of a batch encoded before the lock was taken.
    pub fn append_batch(&mut self, batch: &Encoded) -> Result<Receipt> {
        self.append_encoded(&batch.events, &batch.payloads)
    }

    /// [`Locked::append`] with the events' encodings ([`encode`]).
    fn append_encoded(&mut self, events: &[Event], payloads: &[(Vec<u8>, bool)]) -> Result<Receipt> {
        // The memory-write boundary: every memory text, whatever produced it,
        // is checked here, under the lock, against what was forgotten.
        let mut forgotten = 0u64;
        let kept: Vec<(&Event, &(Vec<u8>, bool))>;
        let (events, payloads): (Vec<&Event>, Vec<&(Vec<u8>, bool)>) = if events.iter().any(writes_memory_text) {
            let guard = forget::Guard::open(self.paths)?;
            let mut out = Vec::with_capacity(events.len());
            for (e, p) in events.iter().zip(payloads) {
                if guard.allows(self.store, &e.body)? {
                    out.push((e, p));
                } else {
                    forgotten += 1;
                    tracing::info!(id = %e.id, kind = e.kind(), "not writing a memory whose text was forgotten");
                }
            }
            kept = out;
            kept.iter().copied().unzip()
        } else {
            (events.iter().collect(), payloads.iter().collect())
        };
        let refs: Vec<&[u8]> = payloads.iter().map(|(p, _)| p.as_slice()).collect();
        if events.is_empty() {
            let last = self.writer.last_lsn();
            return Ok(Receipt { first_lsn: last + 1, last_lsn: last, applied: true, forgotten });
        }
        let first = self.writer.append(&refs)?;
        let last = first + events.len() as u64 - 1;
        // Apply exactly what the log holds: an event this build cannot read,
        // or one whose encoding redaction changed, is applied in its decoded
        // form, as replay will see it.
        let decoded: Vec<Option<Event>> = events
            .iter()
            .zip(&payloads)
            .map(|(e, (p, redacted))| {
                let differs = *redacted || matches!(e.body, Body::Unknown(_));
                differs.then(|| Event::from_json(p).ok()).flatten()
            })
            .collect();
        let batch: Vec<(Lsn, &Event)> = events
            .iter()
            .zip(&decoded)
            .enumerate()
            .map(|(i, (e, d))| (first + i as u64, d.as_ref().unwrap_or(*e)))
            .collect();
        let applied = match (self.apply)(self.store, &batch) {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(error = %e, first, last, "events are durable but the projection could not apply them; the next open will catch up");
                false
            }
        };
        Ok(Receipt { first_lsn: first, last_lsn: last, applied, forgotten })
    }
}

/// Whether an event writes a memory's text (what [`forget::Guard`] checks).
fn writes_memory_text(e: &Event) -> bool {
    matches!(&e.body, Body::MemoryAdded(_)) || matches!(&e.body, Body::MemoryUpdated(b) if b.content.is_some())
}

/// Encodes events for the log. Every encoding passes
/// [`redact::redact_json`] first: a secret any writer left in any field (a
/// query, a path, a reason) is replaced before a byte is written.
pub fn encode(events: &[Event]) -> Vec<Vec<u8>> {
    encode_marked(events).into_iter().map(|(p, _)| p).collect()
}

/// Events with their encodings for the log, made before the tape lock is
/// taken so that other writers wait less ([`Locked::append_batch`]).
#[derive(Debug, Default)]
pub struct Encoded {
    events: Vec<Event>,
    payloads: Vec<(Vec<u8>, bool)>,
}

impl Encoded {
    /// Encodes `events` (redacted, see [`encode`]).
    pub fn new(events: Vec<Event>) -> Encoded {
        let payloads = encode_marked(&events);
        Encoded { events, payloads }
    }

    /// Adds the events of `other` after these.
    pub fn extend(&mut self, other: Encoded) {
        self.events.extend(other.events);
        self.payloads.extend(other.payloads);
    }

    /// The events, in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// How many events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// [`encode`], marking the encodings redaction changed.
fn encode_marked(events: &[Event]) -> Vec<(Vec<u8>, bool)> {
    events
        .iter()
        .map(|e| {
            let json = e.to_json();
            match redact::redact_json(&json) {
                Some(clean) => {
                    tracing::debug!(kind = e.kind(), id = %e.id, "redacted a secret left in an event");
                    (clean, true)
                }
                None => (json, false),
            }
        })
        .collect()
}

/// What [`Journal::compact`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Forgotten memories.
    pub forgotten: u64,
    /// Segments replaced.
    pub segments_rewritten: u64,
    /// Events whose text was removed.
    pub events_scrubbed: u64,
}

/// Decodes a frame; a payload that is not an event at all (which no Engram
/// writer produces) becomes an unknown event so that it is kept and skipped.
pub fn decode(lsn: Lsn, payload: &[u8]) -> Event {
    match Event::from_json(payload) {
        Ok(e) => e,
        Err(err) => Event {
            v: 0,
            id: EventId(format!("lsn_{lsn}")),
            ts: Ts(0),
            writer: String::new(),
            session: None,
            body: Body::Unknown(UnknownBody {
                kind: "?".into(),
                body: serde_json::Value::Null,
                reason: format!("undecodable record: {err}"),
            }),
        },
    }
}

/// [`Journal::lock_tape`], for callers that keep borrowing the store.
fn lock_tape<'t>(tape: &'t TapeLog, store: &mut Store, paths: &Paths) -> Result<TapeWriter<'t>> {
    reopen_if_replaced(store, paths)?;
    tape.lock_keeping(store.applied_lsn()?)
}

fn reopen_if_replaced(store: &mut Store, paths: &Paths) -> Result<()> {
    if store.is_replaced() {
        tracing::info!("the projection was rebuilt by a replay; reopening");
        *store = Store::open(&paths.db())?;
    }
    Ok(())
}

fn catch_up_locked(store: &mut Store, writer: &TapeWriter<'_>, apply: Apply) -> Result<ApplyStats> {
    let applied = store.applied_lsn()?;
    let last = writer.last_lsn();
    if applied == last {
        return Ok(ApplyStats::default());
    }
    if applied > last {
        return Err(Error::InvalidInput(format!(
            "the projection {} has applied up to lsn {applied} but the tape log ends at {last}; \
             it belongs to another log: run `engram-ingestor replay`",
            store.path().display()
        )));
    }
    tracing::info!(from = applied + 1, to = last, "catching up the projection");
    apply_snapshot(store, apply, &writer.snapshot()?, applied, &mut |_| {})
}

fn apply_snapshot(
    store: &mut Store,
    apply: Apply,
    snapshot: &Snapshot,
    after: Lsn,
    progress: &mut dyn FnMut(u64),
) -> Result<ApplyStats> {
    let mut stats = ApplyStats::default();
    let mut frames: Vec<(Lsn, Event)> = Vec::with_capacity(BATCH);
    let mut done = 0u64;
    let mut flush = |store: &mut Store, frames: &mut Vec<(Lsn, Event)>| -> Result<()> {
        let batch: Vec<(Lsn, &Event)> = frames.iter().map(|(l, e)| (*l, e)).collect();
        stats.add(apply(store, &batch)?);
        done += frames.len() as u64;
        frames.clear();
        progress(done);
        Ok(())
    };
    snapshot.visit_after(after, &mut |lsn, payload| {
        frames.push((lsn, decode(lsn, payload)));
        if frames.len() == BATCH {
            flush(store, &mut frames)?;
        }
        Ok(())
    })?;
    flush(store, &mut frames)?;
    Ok(stats)
}

/// Progress of a replay.
#[derive(Clone, Copy, Debug)]
pub struct ReplayProgress {
    /// Events applied so far.
    pub done: u64,
    /// Events in the log when the replay started.
    pub total: u64,
}

/// What [`replay`] did.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// Events read.
    pub events: u64,
    /// Projection counts.
    pub stats: ApplyStats,
    /// The new generation file.
    pub generation: std::path::PathBuf,
}

/// Rebuilds the projection from the tapes alone into a new generation and
/// swaps it in atomically. If any segment is damaged, refuses with an error
/// naming it and changes nothing.
pub fn replay(paths: &Paths, apply: Apply, progress: &mut dyn FnMut(ReplayProgress)) -> Result<ReplayReport> {
    let tape = TapeLog::open(&paths.tapes(), TapeOptions::default())?;
    // The projection being replaced applied every frame up to its position:
    // a log that ends before it has lost a segment, and a replay would lose
    // those events for good.
    let applied = previous_position(paths);
    let snapshot = tape.lock_keeping(applied).and_then(|w| w.snapshot()).map_err(|e| match e {
        Error::Corrupt { file, offset, reason } => Error::Corrupt {
            file,
            offset,
            reason: format!(
                "{reason}; replay refused and changed nothing (if those events are lost for good, remove \
                 engram.db and db/ to rebuild from what remains)"
            ),
        },
        e => e,
    })?;
    let total = snapshot.last_lsn();
    let link = paths.db();
    let dir = store::generations_dir(&link);
    fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    let generation = store::new_generation_path(&dir);
    let cleanup = |path: &std::path::Path| {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let _ = fs::remove_file(format!("{}{suffix}", path.display()));
        }
    };
    let built = (|| {
        let mut store = Store::open_file(&generation, Tuning::Bulk)?;
        let mut stats =
            apply_snapshot(&mut store, apply, &snapshot, 0, &mut |done| progress(ReplayProgress { done, total }))?;
        // Swap under the tape lock so no append falls between catch-up and swap.
        let writer = tape.lock()?;
        let applied = store.applied_lsn()?;
        stats.add(apply_snapshot(&mut store, apply, &writer.snapshot()?, applied, &mut |_| {})?);
        store.finish_bulk()?;
        drop(store);
        fs::File::open(&generation).and_then(|f| f.sync_all()).ctx("fsync", &generation)?;
        crate::base::fsutil::fsync_dir(&dir).ctx("fsync", &dir)?;
        store::point_link(&link, &generation)?;
        drop(writer);
        Ok::<ApplyStats, Error>(stats)
    })();
    let stats = match built {
        Ok(stats) => stats,
        Err(e) => {
            cleanup(&generation);
            return Err(e);
        }
    };
    // Remove every other generation; processes still using one keep their
    // open files and reopen when they notice the swap.
    let keep = generation.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for entry in fs::read_dir(&dir).ctx("list", &dir)? {
        let entry = entry.ctx("list", &dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("engram-") && !name.starts_with(&keep) {
            let _ = fs::remove_file(entry.path());
        }
    }
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(format!("{}{suffix}", link.display()));
    }
    Ok(ReplayReport { events: total, stats, generation })
}

/// The position of the projection (0 when there is none or it cannot be
/// read): every frame up to it was acknowledged.
pub fn projection_position(paths: &Paths) -> Lsn {
    previous_position(paths)
}

/// Repairs a damaged tape log ([`TapeLog::repair`]): each frame that damage
/// made unreadable becomes a `tape.lost` event written by `writer` at `now`,
/// its bytes kept in quarantine. Frames the projection applied count as
/// acknowledged. The projection is left as it is (it may hold what was lost;
/// a replay would not).
pub fn repair(paths: &Paths, writer: &str, now: Ts) -> Result<RepairReport> {
    let tape = TapeLog::open(&paths.tapes(), TapeOptions::default())?;
    let name = |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    tape.repair(previous_position(paths), &mut |range, lsn| {
        let segment = name(&range.file);
        let body = Body::TapeLost(TapeLost {
            segment: segment.clone(),
            first_lsn: range.first_lsn,
            last_lsn: range.last_lsn,
            quarantine: name(&range.quarantine),
            reason: range.reason.clone(),
        });
        let mut event = Event::new(now, writer, None, body);
        event.id = EventId::derived(&["tape.lost", &segment, &lsn.to_string()]);
        event.to_json()
    })
}

/// The position of the projection a replay replaces (0 when there is none
/// or it cannot be read).
fn previous_position(paths: &Paths) -> Lsn {
    if !paths.db().exists() {
        return 0;
    }
    match Store::open(&paths.db()).and_then(|s| s.applied_lsn()) {
        Ok(lsn) => lsn,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the position of the projection being replaced");
            0
        }
    }
}

/// A quick test of a raw event for the forgotten texts (ASCII
/// case-insensitively): for each text, the longest of its first
/// [`forget::MIN_SCRUB_WORDS`] words and the longest of its last ones, so
/// that a copy cut short at either end is found too ([`forget::Scrub`]).
/// `None` (every event is scrubbed) when one of those words is not ASCII:
/// its other capitalisations would be missed.
fn scrub_prefilter<'a>(texts: impl Iterator<Item = &'a String>) -> Option<aho_corasick::AhoCorasick> {
    let mut needles: Vec<String> = Vec::new();
    for text in texts {
        let words = forget::normal_words(text);
        if words.len() < forget::MIN_SCRUB_WORDS {
            continue;
        }
        let head = &words[..forget::MIN_SCRUB_WORDS];
        let tail = &words[words.len() - forget::MIN_SCRUB_WORDS..];
        for part in [head, tail] {
            let longest = part.iter().max_by_key(|w| w.len())?;
            if !longest.is_ascii() {
                return None;
            }
            needles.push(longest.clone());
        }
    }
    aho_corasick::AhoCorasick::builder().ascii_case_insensitive(true).build(&needles).ok()
}

/// Removes forgotten memories' text from one encoded event, if present: the
/// memory's own events lose their text and tags; any other string loses
/// each forgotten text it holds.
fn scrub_event(
    payload: &[u8],
    forgotten: &BTreeSet<MemoryId>,
    scrub: &forget::Scrub,
    prefilter: Option<&aho_corasick::AhoCorasick>,
) -> Option<Vec<u8>> {
    let raw = std::str::from_utf8(payload).ok()?;
    let mentions_id = forgotten.iter().any(|id| raw.contains(id.as_str()));
    let mentions_text = !scrub.is_empty() && prefilter.is_none_or(|ac| ac.is_match(payload));
    if !mentions_id && !mentions_text {
        return None;
    }
    let mut event = Event::from_json(payload).ok()?;
    let mut changed = false;
    match &mut event.body {
        Body::MemoryAdded(b) if forgotten.contains(&b.memory_id) => {
            changed |= !b.content.is_empty() || !b.tags.is_empty();
            b.content.clear();
            b.tags.clear();
        }
        Body::MemoryUpdated(b) if forgotten.contains(&b.memory_id) => {
            changed |= b.content.is_some() || b.tags.is_some();
            b.content = None;
            b.tags = None;
        }
        _ => {}
    }
    if mentions_text {
        let mut value = serde_json::to_value(&event).ok()?;
        if scrub.value(&mut value) {
            event = Event::from_json(&serde_json::to_vec(&value).ok()?).ok()?;
            changed = true;
        }
    }
    changed.then(|| event.to_json())
}
