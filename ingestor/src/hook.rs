//! `engram-ingestor hook post-tool-use | stop | session-end | pre-compact`:
//! the write-side hooks of Claude Code and Codex.
//!
//! A hook records what only the hook knows, and leaves the transcript's
//! content to the adapters (one source of content, with derived ids):
//! `session-end` appends `session.ended` with the harness's reason,
//! `pre-compact` a `meta` event (`pre_compact`, the trigger and the user's
//! instructions). Every event then queues the new part of the transcript for
//! ingestion (Codex, whose hooks send `transcript_path: null`, queues a scan
//! of its recent rollouts) and returns: appending uses the shared
//! spool-when-busy path ([`shared::domain::hook::record`]), nothing waits for a scan.
//!
//! **Ingestion** runs in detached workers, one per *lane* at a time: a lane
//! per transcript (so per session: `<home>/hooks/ingest-<hash of the
//! path>.queue` and `.lock`), and one for the harness scans of hooks that
//! name no transcript (`ingest.queue`, `ingest.lock`). The hook appends the
//! entry to its lane's queue, then tries the lane's lock; if it gets it, it
//! starts `engram-ingestor hook ingest --lane L` in its own process group
//! with the locked file as its stdin (so the child holds the lock the parent
//! took) and returns. The worker drains its queue (after a short pause that
//! lets the hooks of one turn coalesce), appends what is spooled, scans, and
//! repeats until the queue is empty; it then releases the lock and checks
//! the queue once more, so that an entry queued in between is never
//! stranded. A hook that finds the lock taken only queues.
//!
//! This is seed 000's per-turn concurrency: Stops of one session arriving
//! while its extraction runs coalesce into one more pass over the union of
//! their new bytes (the cursor is the byte offset), and the extraction of
//! one session never waits for another's (the transcript scans share
//! `scan.lock`; see [`crate::scan`]). Each read follows the per-turn rules
//! ([`crate::scan::turn`]). Lane files idle for a day are removed.
//!
//! **Unattended learning.** Each time the worker has drained the queue, so
//! right after the transcript of a session that ended is ingested, it starts
//! one detached, lock-coalesced `engram-trainer run` (the binary next to this
//! one) when one is due: see [`shared::domain::training::auto`].
//!
//! A hook never breaks the agent: errors and panics are logged to
//! `logs/hooks.log`, nothing is printed, the exit status is 0.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::hook::{HookEvent, HookInput, Recorded};
use shared::storage::event::{Body, Event, Meta, SessionEnded, harness};

use crate::adapter::WRITER;
use crate::adapters::Harness;
use crate::error::Error;
use crate::scan::{self, ScanOptions};

/// Largest hook input read.
const MAX_INPUT: usize = 32 << 20;
/// How long a write-side hook waits for the tape lock before spooling.
const LOCK_WAIT: Duration = Duration::from_millis(40);
/// The worker's pause before draining, so one turn's hooks share a scan.
const COALESCE: Duration = Duration::from_millis(250);
/// Queue entry asking for a scan of a harness's recent logs.
const HARNESS_ENTRY: &str = "harness:";
/// The lane of harness scans.
const HARNESS_LANE: &str = "harness";
/// Lane files idle this long are removed (seed 000: turn offsets older than 24 h).
const LANE_IDLE: Duration = Duration::from_secs(86_400);
/// How far back a queued harness scan looks.
const RECENT: i64 = 2 * 86_400_000;

/// The lane of a queue entry: one per transcript path, one for harness scans.
pub fn lane_of(entry: &str) -> String {
    if entry.starts_with(HARNESS_ENTRY) {
        return HARNESS_LANE.to_owned();
    }
    let hash = blake3::hash(entry.as_bytes()).to_hex();
    format!("t{}", &hash[..16])
}

/// A lane named by a worker's argument: a transcript lane or the harness lane.
fn valid_lane(lane: &str) -> bool {
    lane == HARNESS_LANE
        || (lane.len() == 17 && lane.starts_with('t') && lane[1..].bytes().all(|b| b.is_ascii_hexdigit()))
}

fn lane_name(lane: &str, ext: &str) -> String {
    if lane == HARNESS_LANE { format!("ingest.{ext}") } else { format!("ingest-{lane}.{ext}") }
}

/// The queue of entries of `lane` waiting for ingestion.
pub fn queue_file(paths: &Paths, lane: &str) -> PathBuf {
    paths.home().join("hooks").join(lane_name(lane, "queue"))
}

/// The lock held by the running worker of `lane`.
pub fn lock_file(paths: &Paths, lane: &str) -> PathBuf {
    paths.home().join("hooks").join(lane_name(lane, "lock"))
}

/// What one hook call did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HookOutcome {
    /// Events recorded.
    pub events: usize,
    /// They were spooled (the tape lock was busy).
    pub spooled: bool,
    /// The queue entry added.
    pub queued: Option<String>,
    /// A worker was started.
    pub worker_started: bool,
}

/// The events a write-side hook records.
pub fn events_for(event: HookEvent, input: &HookInput, harness_name: &str, now: Ts) -> Vec<Event> {
    let Some(session) = input.session_key(harness_name) else { return Vec::new() };
    let body = match event {
        HookEvent::SessionEnd => {
            Body::SessionEnded(SessionEnded { reason: input.reason.clone().unwrap_or_else(|| "other".into()) })
        }
        HookEvent::PreCompact => {
            let mut fields = std::collections::BTreeMap::new();
            if let Some(ci) = input.custom_instructions.as_deref().filter(|c| !c.trim().is_empty()) {
                fields.insert(
                    "custom_instructions".to_owned(),
                    Value::String(shared::storage::redact::redact_text(ci).into()),
                );
            }
            Body::Meta(Meta {
                label: "pre_compact".into(),
                text: Some(input.trigger.clone().unwrap_or_else(|| "auto".into())),
                fields,
                ..Meta::default()
            })
        }
        _ => return Vec::new(),
    };
    vec![Event::new(now, WRITER, Some(session), body)]
}

/// Handles one write-side hook call; `exe` is the binary to start as worker.
pub fn run(
    event: HookEvent,
    harness_arg: Option<&str>,
    input: &[u8],
    paths: &Paths,
    now: Ts,
    exe: &Path,
) -> Result<HookOutcome, Error> {
    if event.is_read_side() {
        return Err(Error::InvalidArgument(format!("{} is handled by engram-scorer hook", event.arg())));
    }
    let input = HookInput::parse(input).map_err(Error::InvalidArgument)?;
    let harness_name = input.harness(harness_arg);
    let events = events_for(event, &input, harness_name, now);
    let recorded = shared::domain::hook::record(paths, WRITER, &events, LOCK_WAIT, shared::projection::apply)
        .map_err(|e| Error::engram("record the hook's events", e))?;
    let entry = match input.transcript_path.as_deref() {
        Some(p) if Path::new(p).is_file() => p.to_owned(),
        _ if harness_name == harness::CODEX => format!("{HARNESS_ENTRY}{}", harness::CODEX),
        Some(p) => {
            tracing::debug!(path = p, "the transcript does not exist (yet); nothing to ingest");
            return Ok(HookOutcome { events: events.len(), spooled: is_spooled(&recorded), ..HookOutcome::default() });
        }
        None => format!("{HARNESS_ENTRY}{harness_name}"),
    };
    let lane = lane_of(&entry);
    enqueue(paths, &lane, &entry)?;
    let worker_started = start_worker(paths, &lane, exe)?;
    Ok(HookOutcome { events: events.len(), spooled: is_spooled(&recorded), queued: Some(entry), worker_started })
}

fn is_spooled(r: &Recorded) -> bool {
    matches!(r, Recorded::Spooled(_))
}

/// Appends one entry to `lane`'s queue (one short `O_APPEND` write: atomic).
pub fn enqueue(paths: &Paths, lane: &str, entry: &str) -> Result<(), Error> {
    let q = queue_file(paths, lane);
    let dir = shared::base::fsutil::parent_dir(&q);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut f = OpenOptions::new().create(true).append(true).open(&q).map_err(|e| Error::io(&q, e))?;
    f.write_all(format!("{entry}\n").as_bytes()).map_err(|e| Error::io(&q, e))
}

/// Starts `lane`'s worker if none runs; `true` when one was started.
pub fn start_worker(paths: &Paths, lane: &str, exe: &Path) -> Result<bool, Error> {
    let lock = lock_file(paths, lane);
    shared::domain::hook::start_detached(paths, &lock, exe, &["hook", "ingest", "--lane", lane])
        .map_err(|e| Error::io(&lock, e))
}

/// Takes every entry queued in `lane` (renaming the queue first, so entries
/// added meanwhile go to a new file).
fn take_queue(paths: &Paths, lane: &str) -> Result<Vec<String>, Error> {
    let q = queue_file(paths, lane);
    let taken = q.with_extension(format!("queue.{}", std::process::id()));
    match fs::rename(&q, &taken) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&q, e)),
    }
    let text = fs::read_to_string(&taken).map_err(|e| Error::io(&taken, e))?;
    let _ = fs::remove_file(&taken);
    let mut entries: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !entries.iter().any(|e| e == line) {
            entries.push(line.to_owned());
        }
    }
    Ok(entries)
}

fn queue_pending(paths: &Paths, lane: &str) -> bool {
    fs::metadata(queue_file(paths, lane)).is_ok_and(|m| m.len() > 0)
}

/// Removes the files of transcript lanes idle for [`LANE_IDLE`] (a queue
/// that is empty, a lock nobody holds). Best effort.
fn remove_idle_lanes(paths: &Paths) {
    let dir = paths.home().join("hooks");
    let Ok(entries) = fs::read_dir(&dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(lane) = name.strip_prefix("ingest-").and_then(|n| n.strip_suffix(".lock")) else { continue };
        let idle = e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|d| d > LANE_IDLE));
        if !idle || queue_pending(paths, lane) {
            continue;
        }
        if let Ok(Some(_held)) = shared::base::fsutil::FileLock::try_exclusive(&e.path()) {
            let _ = fs::remove_file(queue_file(paths, lane));
            let _ = fs::remove_file(e.path());
        }
    }
}

/// One pass: append what is spooled, scan the queued transcripts, then the
/// queued harnesses' recent logs.
fn ingest(paths: &Paths, entries: &[String], shutdown: &Shutdown) -> Result<(), Error> {
    {
        let mut journal = shared::projection::open(paths, WRITER).map_err(|e| Error::engram("open", e))?;
        let n = shared::domain::hook::drain_spool(&mut journal).map_err(|e| Error::engram("drain the spool", e))?;
        if n > 0 {
            tracing::info!(events = n, "appended spooled hook events");
        }
    }
    let config = Config::load(&paths.config()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "invalid configuration; scanning with the defaults");
        Config::default()
    });
    let now = Ts::now();
    let files: Vec<PathBuf> = entries.iter().filter(|e| !e.starts_with(HARNESS_ENTRY)).map(PathBuf::from).collect();
    if !files.is_empty() {
        let mut opts = ScanOptions::new(now);
        opts.paths = files;
        opts.external_summaries = true;
        opts.per_turn = true;
        let s = scan::run(paths, &config, &opts, shutdown, &mut |_| {})?;
        tracing::info!(events = s.events_appended, "hook ingest: transcripts scanned");
    }
    let harnesses: Vec<Harness> =
        entries.iter().filter_map(|e| e.strip_prefix(HARNESS_ENTRY)).filter_map(Harness::from_name).collect();
    if !harnesses.is_empty() {
        let mut opts = ScanOptions::new(now);
        opts.harnesses = harnesses;
        opts.external_summaries = true;
        opts.per_turn = true;
        opts.since = Some(Ts(now.0 - RECENT));
        let s = scan::run(paths, &config, &opts, shutdown, &mut |_| {})?;
        tracing::info!(events = s.events_appended, "hook ingest: recent logs scanned");
    }
    Ok(())
}

/// `engram-ingestor hook ingest --lane L`: the detached worker of one lane
/// (the harness lane without `--lane`; see the module docs). Its stdin is
/// the locked lane lock its parent took.
pub fn worker(paths: &Paths, lane: Option<&str>, shutdown: &Shutdown) -> Result<(), Error> {
    let lane = lane.unwrap_or(HARNESS_LANE);
    if !valid_lane(lane) {
        return Err(Error::InvalidArgument(format!("{lane:?} is not an ingestion lane")));
    }
    let held = shared::domain::hook::inherited_lock();
    loop {
        std::thread::sleep(COALESCE);
        let entries = take_queue(paths, lane)?;
        if !entries.is_empty() {
            // The lane is in use: its files are not idle.
            if let Some(f) = &held {
                let _ = f.set_modified(std::time::SystemTime::now());
            }
            if let Err(e) = ingest(paths, &entries, shutdown) {
                tracing::error!(error = %e, "hook ingest failed");
            }
            if shutdown.requested() {
                return Ok(());
            }
            continue;
        }
        maybe_train(paths);
        remove_idle_lanes(paths);
        // Release, then look once more: a hook that queued while the lock
        // was held did not start a worker.
        let Some(lock) = &held else { return Ok(()) };
        let _ = lock.unlock();
        if !queue_pending(paths, lane) {
            return Ok(());
        }
        match lock.try_lock() {
            Ok(()) => continue,
            Err(_) => return Ok(()),
        }
    }
}

/// Starts `engram-trainer run` when it is due (logged; never fails the worker).
fn maybe_train(paths: &Paths) {
    let config = Config::load(&paths.config()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "invalid configuration; deciding on training with the defaults");
        Config::default()
    });
    if !config.predictor.auto_train {
        return;
    }
    let trainer = match std::env::current_exe() {
        Ok(exe) => shared::base::fsutil::parent_dir(&exe).join(shared::domain::training::auto::TRAINER_BIN),
        Err(e) => {
            tracing::warn!(error = %e, "cannot find this executable, nor engram-trainer next to it");
            return;
        }
    };
    match shared::domain::training::auto::maybe_start(paths, &config.predictor, &trainer, Ts::now()) {
        Ok(shared::domain::training::auto::Started::Started { pending }) => {
            tracing::info!(pending, trainer = %trainer.display(), "started engram-trainer run")
        }
        Ok(shared::domain::training::auto::Started::Running) => {
            tracing::debug!("an engram-trainer run is already running")
        }
        Ok(shared::domain::training::auto::Started::NoTrainer) => tracing::warn!(
            trainer = %trainer.display(),
            "a training run is due, but engram-trainer is not installed next to engram-ingestor"
        ),
        Ok(shared::domain::training::auto::Started::NotDue(why)) => tracing::debug!(%why, "no training run yet"),
        Err(e) => tracing::error!(error = %e, "cannot start engram-trainer run"),
    }
}

/// The whole `engram-ingestor hook EVENT` process: logging to the hooks log,
/// stdin, [`run`] under `catch_unwind`. Always exits 0 and prints nothing.
pub fn main_entry(event: HookEvent, harness_arg: Option<&str>) {
    let done = shared::domain::hook::guarded(event.arg(), MAX_INPUT, |input, paths| {
        let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
        run(event, harness_arg, input, paths, Ts::now(), &exe)
    });
    if let Some(o) = done {
        tracing::debug!(hook = event.arg(), ?o, "hook done");
    }
}

/// The worker process: logs to the hooks log; errors are logged.
pub fn worker_entry(lane: Option<&str>) {
    let Ok(paths) = Paths::from_env() else { return };
    shared::base::logging::init_file(&shared::domain::hook::log_file(&paths), "warn");
    let shutdown = Shutdown::install().unwrap_or_else(|_| Shutdown::manual());
    if let Err(e) = worker(&paths, lane, &shutdown) {
        tracing::error!(error = %e, "hook ingest worker failed");
    }
}
