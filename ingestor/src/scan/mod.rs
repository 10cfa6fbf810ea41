//! `engram-ingestor scan`: every harness log found becomes tape events, and
//! the new content of each session touched becomes memories.
//!
//! One scan, under an exclusive `scan.lock` in the data home:
//!
//! 1. Find the sources: the harnesses' standard locations (environment and
//!    `config.toml`), or the paths given; keep the harnesses asked for and,
//!    with `since`, the files changed since then.
//! 2. For each source, read only what is new since its cursor (see
//!    [`source`] for file identity, rotation and rewrites), parse it with the
//!    adapter, and drop events the projection (or the current batch) already
//!    holds: event ids are derived from the records, so reading a record
//!    again yields the same id.
//! 3. Every few megabytes, flush one batch to the journal: the new events,
//!    then the memories extracted from the touched sessions' parsed events
//!    (with the last events of a session that was already known, from the
//!    tapes, as context), then each file's `source.cursor`. A crash can only
//!    leave a prefix of a batch: the cursors, last, are then missing, the
//!    files are read again from the old cursors, and what the prefix already
//!    recorded is recognised by its ids, so nothing is lost or duplicated.
//!    The optional extractor model runs per session here ([`Scanner::model`]):
//!    a span it already answered for is not sent again; a span it could not
//!    answer for now (another model call running, the daily budget spent, a
//!    failure) is set aside ([`crate::spans`]) and asked again at the end of
//!    the next scans, at most [`RETRIES_PER_SCAN`] a scan. The deterministic
//!    extraction runs on every span whatever the model does.
//!
//! The logs of Engram's own model calls (a `claude -p` or `codex exec` run in
//! the data home's `model/work`) are never read.
//!
//! SpecStory exports are found in the projects the projection knows (and,
//! after the other sources, in those this scan was the first to see) and
//! under `[scan] specstory_roots`, and read by turns ([`Scanner::export`]).
//! An export of a session that another source records (a Claude Code or
//! Codex transcript read in this scan, or a session the projection holds
//! from a source that is not an export) is skipped, so one session is never
//! counted twice; its cursor notes why.
//!
//! 4. Sessions with no content for `scan.idle_end_minutes` get a
//!    `session.ended` (reason `idle`) at the time of their last event, and
//!    ended sessions a summary.
//!
//! The hooks' workers scan the turns of different transcripts at once
//! (sharing `scan.lock`); any other scan runs alone. The passes over the
//! whole store (the environment backfill first, step 4 last) run one scan at
//! a time under `passes.lock`, and a batch's lessons are resolved against the
//! memories under the tape lock, so concurrent workers never append the same
//! ending, summary or memory twice.
//!
//! The shutdown flag is checked between files and between chunks of a file;
//! work already read is flushed with its cursors before returning.

pub mod env;
pub mod lookup;
pub mod source;
pub mod turn;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use shared::base::config::Config;
use shared::base::fsutil::FileLock;
use shared::base::ids::{EventId, SessionKey};
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::session::queries::IngestCursor;
use shared::storage::event::{Body, Event, SCHEMA_VERSION, SessionEnded, SourceCursor};
use shared::storage::journal::{Encoded, Journal, decode};
use shared::storage::tape::{Lsn, Snapshot};

use crate::adapter::{Diagnostic, DiagnosticKind, HEAD_BYTES, ParseContext, ParseOutput, WRITER};
use crate::adapters::{self, Harness};
use crate::discover::{self, Roots, Source, SourceKind};
use crate::error::{EngramContext, Error};
use crate::redact::{DEFAULT_EXCLUDES, Privacy};
use crate::{external, extract, runner};
use lookup::StoreLookup;
use source::{
    FileIdent, Fingerprint, Resume, decide, fingerprint_bytes, fingerprint_stat, head_of, mtime_ms, version_ids,
};

/// Sizes that bound memory use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of a JSONL file parsed at once.
    pub chunk_bytes: usize,
    /// Longest line read; a longer one is skipped with a diagnostic.
    pub max_line_bytes: usize,
    /// A batch is flushed once it holds this many parsed events…
    pub flush_events: usize,
    /// …or this many bytes of input.
    pub flush_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { chunk_bytes: 8 << 20, max_line_bytes: 64 << 20, flush_events: 16_384, flush_bytes: 16 << 20 }
    }
}
/// Turn text sent to the external extractor, per session (the batch
/// pipeline; a turn's is bounded by [`turn`]).
const EXTERNAL_BYTES: usize = 48 * 1024;
/// Memories the external extractor may return per session.
const EXTERNAL_MAX: u32 = 8;
/// Spans set aside that one scan asks the model about again, at most.
pub const RETRIES_PER_SCAN: usize = 8;

/// What to scan.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanOptions {
    /// Only these harnesses (all when empty).
    pub harnesses: Vec<Harness>,
    /// Only sources modified at or after this time.
    pub since: Option<Ts>,
    /// Scan these files and directories instead of the standard locations.
    pub paths: Vec<PathBuf>,
    /// The standard locations (`None`: from the environment and the config).
    pub roots: Option<Roots>,
    /// The time idle sessions are measured against.
    pub now: Ts,
    /// Chunk, line and batch sizes.
    pub limits: Limits,
    /// Ask the models of the end of a session (the summariser, the
    /// curator) when configured (the hooks' worker); a scan of history
    /// stays extractive and saves the buffers as they are.
    pub external_summaries: bool,
    /// Each session read is one turn (the hooks' worker, on Stop): the
    /// external extractor follows seed 000's per-turn rules ([`turn`]).
    pub per_turn: bool,
}

impl ScanOptions {
    /// Everything at the standard locations, measured against `now`.
    pub fn new(now: Ts) -> ScanOptions {
        ScanOptions {
            harnesses: Vec::new(),
            since: None,
            paths: Vec::new(),
            roots: None,
            now,
            limits: Limits::default(),
            external_summaries: false,
            per_turn: false,
        }
    }
}

/// Progress, reported after each file and each chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanProgress {
    /// Sources done.
    pub files_done: u64,
    /// Sources to look at.
    pub files_total: u64,
    /// Bytes read so far.
    pub bytes_done: u64,
    /// Bytes expected to be read (new bytes of each source).
    pub bytes_total: u64,
}

/// Counts for one harness.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HarnessSummary {
    /// Sources found.
    pub files: u64,
    /// Sources with something new read.
    pub files_read: u64,
    /// Sources read again from the start (rewritten, truncated, replaced).
    pub files_reread: u64,
    /// Sources that could not be read (each logged).
    pub files_failed: u64,
    /// Bytes of input parsed.
    pub bytes: u64,
    /// New sessions (`session.started` appended).
    pub sessions: u64,
    /// Sessions given new events.
    pub sessions_touched: u64,
    /// Sessions ended for being idle.
    pub sessions_ended: u64,
    /// Transcript events appended.
    pub events: u64,
    /// Transcript events appended, by kind.
    pub kinds: BTreeMap<String, u64>,
    /// Events parsed again that the projection already held (not appended).
    pub known: u64,
    /// Memories added.
    pub memories_added: u64,
    /// Memories merged into an existing near-duplicate.
    pub memories_merged: u64,
    /// Memories alike to a stored one, staged for the user to resolve.
    pub memories_staged: u64,
    /// Problems in the logs (malformed lines, bad timestamps, …).
    pub diagnostics: u64,
    /// Record types kept as opaque events, by type.
    pub unknown_types: BTreeMap<String, u64>,
    /// Sources skipped because another source records their session (a
    /// SpecStory export of a Claude Code session whose transcript is read).
    pub duplicates: u64,
}

impl HarnessSummary {
    fn add(&mut self, o: &HarnessSummary) {
        self.files += o.files;
        self.files_read += o.files_read;
        self.files_reread += o.files_reread;
        self.files_failed += o.files_failed;
        self.bytes += o.bytes;
        self.sessions += o.sessions;
        self.sessions_touched += o.sessions_touched;
        self.sessions_ended += o.sessions_ended;
        self.events += o.events;
        for (k, v) in &o.kinds {
            *self.kinds.entry(k.clone()).or_insert(0) += v;
        }
        self.known += o.known;
        self.memories_added += o.memories_added;
        self.memories_merged += o.memories_merged;
        self.memories_staged += o.memories_staged;
        self.diagnostics += o.diagnostics;
        for (k, v) in &o.unknown_types {
            *self.unknown_types.entry(k.clone()).or_insert(0) += v;
        }
        self.duplicates += o.duplicates;
    }
}

/// Where the time of a scan went (milliseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timings {
    /// Finding sources and planning.
    pub discover_ms: f64,
    /// Reading files and fingerprinting.
    pub read_ms: f64,
    /// Adapters (parsing, redaction).
    pub parse_ms: f64,
    /// Checking events against the projection.
    pub filter_ms: f64,
    /// Memory extraction, dedup lookups and the external extractor.
    pub extract_ms: f64,
    /// Journal appends (tape write, fsync, projection).
    pub append_ms: f64,
    /// Ending idle sessions.
    pub idle_ms: f64,
}

/// What a scan did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScanSummary {
    /// Per harness.
    pub harnesses: BTreeMap<String, HarnessSummary>,
    /// All events appended (transcript, memories, cursors, session ends).
    pub events_appended: u64,
    /// `source.cursor` events appended.
    pub cursors: u64,
    /// Last log position after the scan.
    pub last_lsn: Lsn,
    /// External extractor runs.
    pub extractor_runs: u64,
    /// External extractor runs that failed (each logged).
    pub extractor_failures: u64,
    /// Turns not sent to the external extractor by seed 000's per-turn
    /// rules (a transcript under 10 KB, new content under 50 characters).
    pub extractor_skipped: u64,
    /// Spans not sent because the model already answered for them.
    pub extractor_cached: u64,
    /// Spans set aside without a call (another model call running, the
    /// daily budget spent): asked again by a later scan.
    pub extractor_deferred: u64,
    /// Spans set aside earlier that this scan asked again (and got an answer).
    pub extractor_retried: u64,
    /// Spans waiting for the model after this scan.
    pub extractor_pending: u64,
    /// Ended sessions summarised (seed 004 "Summarization").
    pub sessions_summarized: u64,
    /// The curation of ended sessions' buffers (seed 004 "Curation Agent").
    pub curation: shared::domain::knowledge::curation::CurationReport,
    /// Paths given that are not a known log.
    pub unrecognised: Vec<String>,
    /// Stopped early by a shutdown request (what was read is recorded).
    pub interrupted: bool,
    /// Wall time.
    pub elapsed_ms: f64,
    /// Where it went.
    pub timings: Timings,
}

impl ScanSummary {
    /// Sums over harnesses.
    pub fn total(&self) -> HarnessSummary {
        let mut t = HarnessSummary::default();
        for h in self.harnesses.values() {
            t.add(h);
        }
        t
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Runs one scan. See the module docs.
pub fn run(
    paths: &Paths,
    config: &Config,
    opts: &ScanOptions,
    shutdown: &Shutdown,
    progress: &mut dyn FnMut(&ScanProgress),
) -> Result<ScanSummary, Error> {
    let started = Instant::now();
    std::fs::create_dir_all(paths.home()).map_err(|e| Error::io(paths.home(), e))?;
    let lock_path = paths.home().join("scan.lock");
    // The turns of given transcripts (the hooks' workers, one per transcript)
    // share the lock, so sessions never wait for one another; any other scan
    // holds it alone.
    let turns_only = opts.per_turn && !opts.paths.is_empty() && opts.harnesses.is_empty();
    let _lock = if turns_only {
        FileLock::shared(&lock_path).map_err(|e| Error::io(&lock_path, e))?
    } else {
        match FileLock::try_exclusive(&lock_path).map_err(|e| Error::io(&lock_path, e))? {
            Some(lock) => lock,
            None => {
                tracing::info!("another scan is running; waiting for it");
                FileLock::exclusive(&lock_path).map_err(|e| Error::io(&lock_path, e))?
            }
        }
    };
    let journal = shared::projection::open(paths, WRITER).context("open the journal")?;
    // Batches rewrite the same index pages again and again: checkpoint the
    // WAL every ~64 MB rather than every 4 MB (this connection only).
    if let Err(e) = journal.store().conn().pragma_update(None, "wal_autocheckpoint", 16_384) {
        tracing::debug!(error = %e, "cannot widen the WAL checkpoint interval");
    }
    let cursors: HashMap<String, IngestCursor> = journal
        .store()
        .ingest_cursors()
        .context("read ingest cursors")?
        .into_iter()
        .map(|c| (c.path.clone(), c))
        .collect();
    let mut privacy = Privacy { exclude: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect() };
    privacy.exclude.extend(config.privacy.exclude.iter().cloned());
    let mut journal = journal;
    let mut enricher = env::Enricher::new(config);
    {
        let _passes = store_passes(paths, &mut journal)?;
        env::backfill(&mut journal, &mut enricher, opts.now)?;
    }
    let mut scanner = Scanner {
        journal,
        enricher,
        config,
        paths: paths.clone(),
        spans: config.extractor.enabled().then(|| crate::spans::Spans::open(paths)),
        model_lock: None,
        answered_spans: Vec::new(),
        asked_now: HashSet::new(),
        privacy: Rc::new(privacy),
        now: opts.now,
        per_turn: opts.per_turn,
        limits: opts.limits,
        cursors,
        session_state: HashMap::new(),
        touched: HashSet::new(),
        native: HashSet::new(),
        pending: Pending::default(),
        summary: ScanSummary::default(),
        progress: ScanProgress::default(),
    };

    let t = Instant::now();
    let mut project_dirs: HashSet<PathBuf> = HashSet::new();
    let (sources, unrecognised) = if opts.paths.is_empty() {
        let mut roots = match &opts.roots {
            Some(r) => r.clone(),
            None => Roots::from_process_env().with_config(&config.scan),
        };
        project_dirs.extend(known_project_dirs(scanner.journal.store()));
        roots.specstory_projects.extend(project_dirs.iter().cloned());
        (discover::discover(&roots.only(&opts.harnesses))?, Vec::new())
    } else {
        let absolute: Vec<PathBuf> =
            opts.paths.iter().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())).collect();
        discover::discover_paths(&absolute)?
    };
    for u in &unrecognised {
        tracing::warn!(file = %u.display(), "not a harness log this build recognises; skipped");
    }
    scanner.summary.unrecognised = unrecognised.iter().map(|p| p.display().to_string()).collect();
    let planned: HashSet<PathBuf> = sources.iter().map(|s| s.path.clone()).collect();
    let plans = scanner.plan(sources, opts);
    scanner.summary.timings.discover_ms = ms(t);
    progress(&scanner.progress);
    scanner.run_plans(plans, shutdown, progress)?;
    scanner.summary.interrupted |= shutdown.requested();
    scanner.flush()?;
    // The exports of the projects this scan was the first to see.
    let exports_wanted = opts.harnesses.is_empty() || opts.harnesses.iter().any(|h| h.covers(Harness::SpecStory));
    if opts.paths.is_empty() && exports_wanted && !scanner.summary.interrupted {
        let t = Instant::now();
        let new_dirs: Vec<PathBuf> =
            known_project_dirs(scanner.journal.store()).into_iter().filter(|d| !project_dirs.contains(d)).collect();
        let roots = Roots { specstory_projects: new_dirs, ..Roots::default() };
        let sources: Vec<Source> =
            discover::discover(&roots)?.into_iter().filter(|s| !planned.contains(&s.path)).collect();
        if !sources.is_empty() {
            let before = scanner.progress.files_total;
            let plans = scanner.plan(sources, opts);
            scanner.progress.files_total += before;
            scanner.summary.timings.discover_ms += ms(t);
            scanner.run_plans(plans, shutdown, progress)?;
            scanner.summary.interrupted |= shutdown.requested();
            scanner.flush()?;
        }
    }
    if !scanner.summary.interrupted {
        scanner.retry_set_aside()?;
    }
    if let Some(spans) = &scanner.spans {
        scanner.summary.extractor_pending = spans.counts().0 as u64;
    }
    drop(scanner.model_lock.take());
    if !scanner.summary.interrupted {
        let _passes = store_passes(paths, &mut scanner.journal)?;
        let t = Instant::now();
        let harnesses = if opts.harnesses.is_empty() { Harness::ALL.to_vec() } else { opts.harnesses.clone() };
        scanner.end_idle(&harnesses)?;
        scanner.summary.timings.idle_ms = ms(t);
        // The curation of the buffers of the sessions that ended (seed 004),
        // then their summaries: a failure costs only them.
        match shared::domain::knowledge::curation::curate_ended(
            &mut scanner.journal,
            config,
            opts.external_summaries,
            opts.now,
        ) {
            Ok(r) => scanner.summary.curation = r,
            Err(e) => tracing::warn!(error = %e, "cannot curate the ended sessions' buffers"),
        }
        match shared::domain::knowledge::summary::summarize_ended(&mut scanner.journal, config, opts.external_summaries)
        {
            Ok(n) => scanner.summary.sessions_summarized = n as u64,
            Err(e) => tracing::warn!(error = %e, "cannot summarise the ended sessions"),
        }
    }
    for key in &scanner.touched {
        if let Some(h) = Harness::from_name(key.harness()) {
            scanner.summary.harnesses.entry(h.name().to_owned()).or_default().sessions_touched += 1;
        }
    }
    let mut summary = scanner.summary;
    summary.last_lsn = scanner.journal.tape().lock().context("read the log position")?.last_lsn();
    summary.elapsed_ms = ms(started);
    Ok(summary)
}

/// Whether `file` is the log of one of Engram's own model calls (see
/// [`shared::base::model::is_model_call_log`]): its first 4 KB name the
/// data home's model directory as the working directory.
fn model_call_log(file: &File, paths: &Paths) -> bool {
    use std::os::unix::fs::FileExt as _;
    let mut head = [0u8; 4096];
    let n = file.read_at(&mut head, 0).unwrap_or(0);
    shared::base::model::is_model_call_log(&head[..n], paths)
}

/// The directories the projection knows as projects or working directories:
/// where SpecStory exports are looked for. A projection that cannot be read
/// only costs the lookup.
fn known_project_dirs(store: &shared::storage::store::Store) -> Vec<PathBuf> {
    let sql = "SELECT root FROM projects
               UNION SELECT root FROM session_env
               UNION SELECT cwd FROM sessions WHERE cwd IS NOT NULL";
    let dirs = store.conn().prepare(sql).and_then(|mut stmt| {
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<Result<Vec<String>, _>>()
    });
    match dirs {
        Ok(d) => d.into_iter().filter(|d| Path::new(d).is_absolute()).map(PathBuf::from).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the known projects; their SpecStory exports are not looked for");
            Vec::new()
        }
    }
}

/// The session a native log holds, by its file name: a Claude Code main
/// transcript (`<session id>.jsonl`) or a Codex rollout (`rollout-…-<uuid>.jsonl`).
fn native_session(src: &Source) -> Option<String> {
    let stem = src.path.file_stem()?.to_str()?;
    match src.kind {
        SourceKind::ClaudeTranscript if !stem.starts_with("agent-") => Some(format!("claude:{stem}")),
        SourceKind::CodexRollout => adapters::codex::uuid_from_name(stem).map(|id| format!("codex:{id}")),
        _ => None,
    }
}

/// Takes `passes.lock`, under which one scan at a time runs the passes over
/// the whole store (environment backfill, idle endings, summaries), then
/// brings the projection up to the log. Each pass decides from the
/// projection what to append: the hooks' workers, scanning their turns at
/// once, would otherwise all see the same idle session and all end it.
fn store_passes(paths: &Paths, journal: &mut Journal) -> Result<FileLock, Error> {
    let path = paths.home().join("passes.lock");
    let lock = FileLock::exclusive(&path).map_err(|e| Error::io(&path, e))?;
    journal.catch_up().context("read the tape log")?;
    Ok(lock)
}

/// A source to look at.
struct Plan {
    source: Source,
    /// The fingerprint of an OpenCode storage directory, taken while planning.
    fingerprint: Option<Fingerprint>,
}

/// Parsed events waiting to be appended.
#[derive(Default)]
struct Pending {
    /// Every parsed event, in input order.
    events: Vec<Event>,
    /// Whether each is new (else the projection or this batch has it).
    fresh: Vec<bool>,
    /// Ids of the new ones.
    ids: HashSet<EventId>,
    /// The latest cursor of each file read, by path.
    cursors: Vec<(String, Event)>,
    /// Sessions read in full (from whole-file sources).
    whole: HashSet<SessionKey>,
    /// Input bytes.
    bytes: u64,
    /// The size of the file each session was read from.
    sizes: HashMap<SessionKey, u64>,
}

struct Scanner<'c> {
    journal: Journal,
    /// Environment detection of the sessions read.
    enricher: env::Enricher,
    config: &'c Config,
    paths: Paths,
    /// What the extractor model did with each span (when one is configured).
    spans: Option<crate::spans::Spans>,
    /// The data home's single-flight model lock, once this scan has it.
    model_lock: Option<FileLock>,
    /// Spans the model answered for in the batch being flushed: marked done
    /// once their memories are on tape (a crash before asks again).
    answered_spans: Vec<String>,
    /// Spans this scan asked about (or set aside): not asked again by its
    /// retry of the spans set aside earlier.
    asked_now: HashSet<String>,
    privacy: Rc<Privacy>,
    now: Ts,
    per_turn: bool,
    limits: Limits,
    cursors: HashMap<String, IngestCursor>,
    /// Sessions looked up: `true` when the projection holds them.
    session_state: HashMap<String, bool>,
    /// Sessions given new events.
    touched: HashSet<SessionKey>,
    /// Sessions a native log of this scan holds (SpecStory exports of them
    /// are skipped).
    native: HashSet<String>,
    pending: Pending,
    summary: ScanSummary,
    progress: ScanProgress,
}

impl Scanner<'_> {
    fn harness(&mut self, h: Harness) -> &mut HarnessSummary {
        self.summary.harnesses.entry(h.name().to_owned()).or_default()
    }

    fn path_text(p: &Path) -> String {
        p.display().to_string()
    }

    /// Reads each planned source in turn (until a shutdown request); a source
    /// that cannot be read is logged and counted, a failing journal stops.
    fn run_plans(
        &mut self,
        plans: Vec<Plan>,
        shutdown: &Shutdown,
        progress: &mut dyn FnMut(&ScanProgress),
    ) -> Result<(), Error> {
        for plan in plans {
            if shutdown.requested() {
                self.summary.interrupted = true;
                break;
            }
            let harness = plan.source.kind.harness();
            match self.source(&plan, shutdown, progress) {
                Ok(true) => self.harness(harness).files_read += 1,
                Ok(false) => {}
                Err(e @ (Error::Engram { .. } | Error::Output(_))) => return Err(e),
                Err(e) => {
                    tracing::warn!(file = %plan.source.path.display(), error = %e, "cannot ingest this source; skipped");
                    self.harness(harness).files_failed += 1;
                }
            }
            self.progress.files_done += 1;
            progress(&self.progress);
        }
        Ok(())
    }

    /// Counts the sources, drops those older than `since`, estimates bytes.
    fn plan(&mut self, sources: Vec<Source>, opts: &ScanOptions) -> Vec<Plan> {
        let mut plans = Vec::new();
        for source in sources {
            if !opts.harnesses.is_empty() && !opts.harnesses.iter().any(|h| h.covers(source.kind.harness())) {
                continue;
            }
            if let Some(key) = native_session(&source) {
                self.native.insert(key);
            }
            self.harness(source.kind.harness()).files += 1;
            let mut fingerprint = None;
            let (size, mtime) = match source.kind {
                SourceKind::OpenCodeStorage => match fingerprint_stat(&[&source.path], &source.path) {
                    Ok(fp) => {
                        let sm = (fp.size, fp.mtime_ms);
                        fingerprint = Some(fp);
                        sm
                    }
                    Err(_) => (0, i64::MAX),
                },
                _ => match std::fs::metadata(&source.path) {
                    Ok(m) => (m.len(), mtime_ms(&m)),
                    Err(_) => (0, i64::MAX),
                },
            };
            if opts.since.is_some_and(|since| mtime < since.0) {
                continue;
            }
            let cursor = self.cursors.get(&Self::path_text(&source.path));
            let estimate = match cursor {
                Some(c) if source.kind == SourceKind::SpecStory && c.size == size && c.mtime_ms == mtime => 0,
                Some(c) if (source.kind.is_jsonl() || source.kind == SourceKind::SpecStory) && size >= c.offset => {
                    size - c.offset
                }
                Some(c) if !source.kind.is_jsonl() && c.size == size && c.mtime_ms == mtime => 0,
                _ => size,
            };
            self.progress.bytes_total += estimate;
            plans.push(Plan { source, fingerprint });
        }
        self.progress.files_total = plans.len() as u64;
        plans
    }

    /// Reads one source; `true` when anything new was read.
    fn source(
        &mut self,
        plan: &Plan,
        shutdown: &Shutdown,
        progress: &mut dyn FnMut(&ScanProgress),
    ) -> Result<bool, Error> {
        let src = &plan.source;
        if src.kind.is_jsonl() {
            self.jsonl(src, shutdown, progress)
        } else if src.kind == SourceKind::SpecStory {
            self.export(src)
        } else {
            self.whole(src, plan.fingerprint.clone())
        }
    }

    /// A `source.cursor` event (fresh id: a cursor is a fact of this scan).
    fn cursor_event(&self, cursor: SourceCursor) -> Event {
        Event {
            v: SCHEMA_VERSION,
            id: EventId::generate(self.now),
            ts: self.now,
            writer: WRITER.to_owned(),
            session: None,
            body: Body::SourceCursor(cursor),
        }
    }

    /// An append-only JSONL log, from its cursor.
    fn jsonl(
        &mut self,
        src: &Source,
        shutdown: &Shutdown,
        progress: &mut dyn FnMut(&ScanProgress),
    ) -> Result<bool, Error> {
        let harness = src.kind.harness();
        let path = Self::path_text(&src.path);
        let t = Instant::now();
        if let Some(c) = self.cursors.get(&path)
            && let Ok(meta) = std::fs::metadata(&src.path)
            && source::untouched(c, &meta)
        {
            // Same inode, size and time as when it was read to the end: no need to open it.
            self.summary.timings.read_ms += ms(t);
            return Ok(false);
        }
        let file = File::open(&src.path).map_err(|e| Error::io(&src.path, e))?;
        if model_call_log(&file, &self.paths) {
            tracing::debug!(file = %path, "the log of one of Engram's own model calls; not read");
            self.summary.timings.read_ms += ms(t);
            return Ok(false);
        }
        let meta = file.metadata().map_err(|e| Error::io(&src.path, e))?;
        let size = meta.len();
        let mtime = mtime_ms(&meta);
        let ident = FileIdent::of(&file, &meta, &src.path)?;
        let resume = decide(self.cursors.get(&path), &ident, size, mtime, head_of(&file, &src.path))?;
        self.summary.timings.read_ms += ms(t);
        let (mut pos, mut state, mut restarted) = match resume {
            Resume::Unchanged => return Ok(false),
            Resume::Fresh => (0, Value::Null, false),
            Resume::Append { offset, state } => (offset, state, false),
            Resume::Restart { reason } => {
                tracing::info!(file = %path, reason, "reading the file again from the start");
                self.harness(harness).files_reread += 1;
                (0, Value::Null, true)
            }
        };
        let sidecar: Option<Value> =
            src.sidecar.as_ref().and_then(|p| std::fs::read(p).ok()).and_then(|b| serde_json::from_slice(&b).ok());
        let privacy = Rc::clone(&self.privacy);
        let mut ctx = ParseContext::new(&path, Ts(mtime), &privacy);
        ctx.sidecar = sidecar.as_ref();
        ctx.redact = self.config.privacy.redact;
        let fresh_state = |pos: &mut u64, state: &mut Value| -> Result<(), Error> {
            let mut head = vec![0u8; (size as usize).min(HEAD_BYTES)];
            source::read_exact_at(&file, &mut head, 0, &src.path)?;
            *state = adapters::initial_state(src.kind, &ctx, &head).unwrap_or(Value::Null);
            *pos = 0;
            Ok(())
        };
        if state.is_null() {
            fresh_state(&mut pos, &mut state)?;
        }
        let mut chunk = self.limits.chunk_bytes;
        let mut buf: Vec<u8> = Vec::new();
        let mut added = false;
        let mut retried_state = false;
        while pos < size {
            if shutdown.requested() {
                break;
            }
            let t = Instant::now();
            let want = ((size - pos) as usize).min(chunk);
            buf.resize(want, 0);
            source::read_exact_at(&file, &mut buf, pos, &src.path)?;
            self.summary.timings.read_ms += ms(t);
            let t = Instant::now();
            let parsed = adapters::parse_chunk(src.kind, &ctx, &buf, pos, &state);
            self.summary.timings.parse_ms += ms(t);
            let mut out = match parsed {
                Ok(out) => out,
                Err(e @ Error::ResumeState { .. }) if !retried_state => {
                    tracing::warn!(file = %path, error = %e, "reading the file again from the start");
                    retried_state = true;
                    if !restarted {
                        restarted = true;
                        self.harness(harness).files_reread += 1;
                    }
                    fresh_state(&mut pos, &mut state)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if out.consumed == 0 {
                if pos + want as u64 == size {
                    // A last line still being written: left for the next scan.
                    break;
                }
                if chunk < self.limits.max_line_bytes {
                    chunk = (chunk * 2).min(self.limits.max_line_bytes);
                    continue;
                }
                // A complete line longer than the limit: skip it, say so.
                let Some(end) = self.find_newline(&file, &src.path, pos + want as u64, size)? else {
                    break;
                };
                let skipped = end + 1 - pos;
                out.diagnostics.push(Diagnostic {
                    file: path.clone(),
                    line: None,
                    offset: Some(pos),
                    kind: DiagnosticKind::BadRecord,
                    message: format!(
                        "a line of {skipped} bytes exceeds the {}-byte limit; skipped",
                        self.limits.max_line_bytes
                    ),
                });
                out.consumed = skipped;
                out.state = state.clone();
            }
            chunk = self.limits.chunk_bytes;
            pos += out.consumed;
            state = out.state.clone();
            if src.kind == SourceKind::GeminiJsonl {
                version_ids(&mut out.events);
            }
            let cursor = self.cursor_event(SourceCursor {
                harness: harness.name().to_owned(),
                path: path.clone(),
                file_id: ident.encode(),
                offset: pos,
                size,
                mtime_ms: mtime,
                state: state.clone(),
            });
            let consumed = out.consumed;
            self.add(harness, out, cursor, consumed, false)?;
            added = true;
            self.progress.bytes_done += consumed;
            progress(&self.progress);
        }
        if restarted && !added {
            // Record the new identity, so the next scan does not start over again.
            let cursor = self.cursor_event(SourceCursor {
                harness: harness.name().to_owned(),
                path: path.clone(),
                file_id: ident.encode(),
                offset: pos,
                size,
                mtime_ms: mtime,
                state,
            });
            self.add(harness, ParseOutput::default(), cursor, 0, false)?;
            added = true;
        }
        Ok(added)
    }

    /// A SpecStory export, from its cursor to its end (see
    /// [`adapters::specstory`]: the cursor stays at the last turn, which is
    /// read again next time). A file whose size and time match its cursor is
    /// not opened; one rewritten without growing, truncated, replaced or
    /// whose start changed is read again from the start (derived ids keep
    /// what did not change from being recorded twice). An export of a
    /// session another source records is skipped.
    fn export(&mut self, src: &Source) -> Result<bool, Error> {
        let harness = Harness::SpecStory;
        let path = Self::path_text(&src.path);
        let t = Instant::now();
        let cursor = self.cursors.get(&path).cloned();
        let file = File::open(&src.path).map_err(|e| Error::io(&src.path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(&src.path, e))?;
        let (size, mtime) = (meta.len(), mtime_ms(&meta));
        let ident = FileIdent::of(&file, &meta, &src.path)?;
        let same_file = cursor
            .as_ref()
            .and_then(|c| FileIdent::parse(&c.file_id))
            .is_some_and(|w| (w.dev, w.ino) == (ident.dev, ident.ino));
        let resume = match &cursor {
            Some(c) if same_file && c.size == size && c.mtime_ms == mtime => Resume::Unchanged,
            Some(c) if c.size == size => {
                Resume::Restart { reason: "the file was modified without growing (rewritten)" }
            }
            _ => decide(cursor.as_ref(), &ident, size, mtime, head_of(&file, &src.path))?,
        };
        let (mut pos, mut state, mut restarted) = match resume {
            Resume::Unchanged => {
                self.summary.timings.read_ms += ms(t);
                return Ok(false);
            }
            Resume::Fresh => (0, Value::Null, false),
            Resume::Append { offset, state } => (offset, state, false),
            Resume::Restart { reason } => {
                tracing::info!(file = %path, reason, "reading the export again from the start");
                (0, Value::Null, true)
            }
        };
        let remaining = size - pos;
        if remaining > self.limits.max_line_bytes as u64 {
            return Err(Error::TooLarge {
                path: src.path.clone(),
                bytes: remaining,
                limit: self.limits.max_line_bytes,
            });
        }
        let mut bytes = vec![0u8; remaining as usize];
        source::read_exact_at(&file, &mut bytes, pos, &src.path)?;
        self.summary.timings.read_ms += ms(t);
        let privacy = Rc::clone(&self.privacy);
        let mut ctx = ParseContext::new(&path, Ts(mtime), &privacy);
        ctx.redact = self.config.privacy.redact;
        let fresh_state = |ctx: &ParseContext<'_>| -> Result<Value, Error> {
            let mut head = vec![0u8; (size as usize).min(HEAD_BYTES)];
            source::read_exact_at(&file, &mut head, 0, &src.path)?;
            Ok(adapters::initial_state(src.kind, ctx, &head).unwrap_or(Value::Null))
        };
        if state.is_null() {
            state = fresh_state(&ctx)?;
        }
        // One session, one record: an export of a session another source holds is skipped.
        let elsewhere = match adapters::specstory::session_of(&state) {
            Some(key) => self.recorded_elsewhere(&key, &path)?.map(|other| (key, other)),
            None => None,
        };
        if elsewhere.is_none() && state.get("duplicate_of").is_some() {
            // Skipped before, no longer recorded elsewhere: read it all.
            (pos, restarted) = (0, true);
            bytes = vec![0u8; size as usize];
            source::read_exact_at(&file, &mut bytes, 0, &src.path)?;
            state = fresh_state(&ctx)?;
        }
        if let Some((key, other)) = elsewhere {
            tracing::info!(file = %path, session = %key, source = %other, "this export's session is recorded from another source; skipped");
            self.harness(harness).duplicates += 1;
            let mut state = state;
            if let Value::Object(m) = &mut state {
                m.insert("duplicate_of".to_owned(), Value::from(other));
            }
            let cursor = self.cursor_event(SourceCursor {
                harness: harness.name().to_owned(),
                path: path.clone(),
                file_id: ident.encode(),
                offset: size,
                size,
                mtime_ms: mtime,
                state,
            });
            self.add(harness, ParseOutput::default(), cursor, 0, false)?;
            return Ok(false);
        }
        let t = Instant::now();
        let parsed = match adapters::parse_chunk(src.kind, &ctx, &bytes, pos, &state) {
            Err(e @ Error::ResumeState { .. }) if pos > 0 => {
                tracing::info!(file = %path, error = %e, "reading the export again from the start");
                restarted = true;
                pos = 0;
                bytes = vec![0u8; size as usize];
                source::read_exact_at(&file, &mut bytes, 0, &src.path)?;
                state = fresh_state(&ctx)?;
                adapters::parse_chunk(src.kind, &ctx, &bytes, 0, &state)
            }
            other => other,
        };
        self.summary.timings.parse_ms += ms(t);
        let mut out = parsed?;
        if restarted {
            self.harness(harness).files_reread += 1;
        }
        version_ids(&mut out.events);
        let cursor = self.cursor_event(SourceCursor {
            harness: harness.name().to_owned(),
            path: path.clone(),
            file_id: ident.encode(),
            offset: pos + out.consumed,
            size,
            mtime_ms: mtime,
            state: out.state.clone(),
        });
        let bytes_read = bytes.len() as u64;
        self.add(harness, out, cursor, bytes_read, pos == 0)?;
        self.progress.bytes_done += bytes_read;
        Ok(true)
    }

    /// Where a session is recorded from besides the SpecStory export at
    /// `path`: a native log of this scan, or the projection's source of a
    /// session it holds (when that source is not an export).
    fn recorded_elsewhere(&mut self, key: &SessionKey, path: &str) -> Result<Option<String>, Error> {
        if self.native.contains(key.as_str()) {
            return Ok(Some(format!("{} transcript", key.harness())));
        }
        let source = self.journal.store().session_source(key.as_str()).context("look a session's source up")?;
        Ok(match source {
            None => None,
            Some(Some(p)) if p == path || p.ends_with(".md") => None,
            Some(Some(p)) => Some(p),
            Some(None) => Some("a session recorded without a transcript path".to_owned()),
        })
    }

    /// Position of the first `\n` at or after `from`, if any before `size`.
    fn find_newline(&self, file: &File, path: &Path, from: u64, size: u64) -> Result<Option<u64>, Error> {
        let mut buf = vec![0u8; 1 << 20];
        let mut at = from;
        while at < size {
            let n = ((size - at) as usize).min(buf.len());
            source::read_exact_at(file, &mut buf[..n], at, path)?;
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                return Ok(Some(at + i as u64));
            }
            at += n as u64;
        }
        Ok(None)
    }

    /// A whole-file source, re-parsed when its fingerprint changed.
    fn whole(&mut self, src: &Source, planned: Option<Fingerprint>) -> Result<bool, Error> {
        let harness = src.kind.harness();
        let path = Self::path_text(&src.path);
        let unchanged = |cursors: &HashMap<String, IngestCursor>, hash: &str| {
            cursors.get(&path).and_then(|c| c.state.get("fingerprint")).and_then(Value::as_str) == Some(hash)
        };
        let t = Instant::now();
        let privacy = Rc::clone(&self.privacy);
        let (fp, parsed) = match src.kind {
            SourceKind::GeminiLegacy => {
                let bytes = std::fs::read(&src.path).map_err(|e| Error::io(&src.path, e))?;
                let meta = std::fs::metadata(&src.path).map_err(|e| Error::io(&src.path, e))?;
                let fp = fingerprint_bytes(&bytes, &meta);
                self.summary.timings.read_ms += ms(t);
                if unchanged(&self.cursors, &fp.hash) {
                    return Ok(false);
                }
                let t = Instant::now();
                let mut ctx = ParseContext::new(&path, Ts(fp.mtime_ms), &privacy);
                ctx.redact = self.config.privacy.redact;
                let out = adapters::parse_file_bytes(src.kind, &ctx, &bytes);
                self.summary.timings.parse_ms += ms(t);
                (fp, out)
            }
            _ => {
                let fp = match planned {
                    Some(fp) => fp,
                    None if src.kind == SourceKind::OpenCodeDb => {
                        let wal = PathBuf::from(format!("{path}-wal"));
                        fingerprint_stat(&[&src.path, &wal], &src.path)?
                    }
                    None => fingerprint_stat(&[&src.path], &src.path)?,
                };
                self.summary.timings.read_ms += ms(t);
                if unchanged(&self.cursors, &fp.hash) {
                    return Ok(false);
                }
                let t = Instant::now();
                let mut ctx = ParseContext::new(&path, Ts(fp.mtime_ms), &privacy);
                ctx.redact = self.config.privacy.redact;
                let out = adapters::parse_whole(src.kind, &ctx);
                self.summary.timings.parse_ms += ms(t);
                (fp, out)
            }
        };
        let mut out = parsed?;
        version_ids(&mut out.events);
        let state = serde_json::json!({ "fingerprint": fp.hash });
        let cursor = self.cursor_event(SourceCursor {
            harness: harness.name().to_owned(),
            path: path.clone(),
            file_id: fp.file_id.clone(),
            offset: fp.size,
            size: fp.size,
            mtime_ms: fp.mtime_ms,
            state,
        });
        // A whole-file source holds each of its sessions in full.
        self.add(harness, out, cursor, fp.size, true)?;
        self.progress.bytes_done += fp.size;
        Ok(true)
    }

    /// Takes one parse output: counts its diagnostics, marks which events are
    /// new, queues them with the file's cursor, and flushes when the batch is
    /// full. `whole`: the output holds its sessions from their start (no
    /// context from the tapes is needed to extract from them).
    fn add(
        &mut self,
        harness: Harness,
        mut out: ParseOutput,
        cursor: Event,
        bytes: u64,
        whole: bool,
    ) -> Result<(), Error> {
        out.events = self.enricher.enrich(std::mem::take(&mut out.events), self.journal.store());
        let read_sessions: BTreeSet<SessionKey> = out.events.iter().filter_map(|e| e.session.clone()).collect();
        let h = self.harness(harness);
        h.bytes += bytes;
        h.diagnostics += out.diagnostics.len() as u64;
        for (k, v) in &out.unknown_types {
            *h.unknown_types.entry(k.clone()).or_insert(0) += v;
        }
        for d in &out.diagnostics {
            tracing::debug!(file = %d.file, line = ?d.line, offset = ?d.offset, kind = ?d.kind, "{}", d.message);
        }
        let t = Instant::now();
        let unseen: BTreeSet<&str> = out
            .events
            .iter()
            .filter_map(|e| e.session.as_ref())
            .map(SessionKey::as_str)
            .filter(|s| !self.session_state.contains_key(*s))
            .collect();
        if !unseen.is_empty() {
            let stored = self.journal.store().known_sessions(unseen.iter().copied()).context("look sessions up")?;
            for s in unseen {
                self.session_state.insert(s.to_owned(), stored.contains(s));
            }
        }
        // Only events of sessions the projection holds can be known to it.
        let to_check: Vec<&str> = out
            .events
            .iter()
            .filter(|e| e.session.as_ref().is_none_or(|s| self.session_state.get(s.as_str()) == Some(&true)))
            .map(|e| e.id.as_str())
            .collect();
        let known = if to_check.is_empty() {
            HashSet::new()
        } else {
            self.journal.store().known_event_ids(to_check).context("look events up")?
        };
        let mut already = 0u64;
        if whole {
            self.pending.whole.extend(out.events.iter().filter_map(|e| e.session.clone()));
        }
        for e in out.events {
            let fresh = !known.contains(e.id.as_str()) && self.pending.ids.insert(e.id.clone());
            already += u64::from(!fresh);
            self.pending.events.push(e);
            self.pending.fresh.push(fresh);
        }
        self.harness(harness).known += already;
        self.summary.timings.filter_ms += ms(t);
        let (path, size) = match &cursor.body {
            Body::SourceCursor(c) => (c.path.clone(), c.size),
            _ => (String::new(), 0),
        };
        for s in read_sessions {
            self.pending.sizes.insert(s, size);
        }
        match self.pending.cursors.iter_mut().find(|(p, _)| *p == path) {
            Some(slot) => slot.1 = cursor,
            None => self.pending.cursors.push((path, cursor)),
        }
        self.pending.bytes += bytes;
        if self.pending.events.len() >= self.limits.flush_events || self.pending.bytes >= self.limits.flush_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Appends the pending batch: new events, extracted memories, cursors.
    ///
    /// Extraction (and the external extractor) runs before the tape lock is
    /// taken; its candidates are resolved against the memories under the
    /// lock, so a lesson another worker appended meanwhile (the same lesson
    /// learned in two sessions at once) is one more occurrence of it, not a
    /// second memory.
    fn flush(&mut self) -> Result<(), Error> {
        if self.pending.events.is_empty() && self.pending.cursors.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let t = Instant::now();
        let groups = self.candidates(&pending)?;
        self.summary.timings.extract_ms += ms(t);
        let mut sessions: BTreeSet<String> = BTreeSet::new();
        let mut content: Vec<Event> = Vec::with_capacity(pending.ids.len());
        for (e, fresh) in pending.events.into_iter().zip(pending.fresh) {
            if let Some(s) = &e.session {
                sessions.insert(s.as_str().to_owned());
            }
            if !fresh {
                continue;
            }
            if let Some(h) = e.session.as_ref().and_then(|s| Harness::from_name(s.harness())) {
                let hs = self.harness(h);
                hs.events += 1;
                *hs.kinds.entry(e.kind().to_owned()).or_insert(0) += 1;
                if matches!(e.body, Body::SessionStarted(_)) {
                    hs.sessions += 1;
                }
            }
            if let Some(s) = &e.session {
                self.touched.insert(s.clone());
            }
            content.push(e);
        }
        self.summary.cursors += pending.cursors.len() as u64;
        let t = Instant::now();
        // Encoded before the lock: other writers wait only for the append.
        let mut batch = Encoded::new(content);
        let cursors = Encoded::new(pending.cursors.into_iter().map(|(_, c)| c).collect());
        let mut locked = self.journal.locked().context("take the tape lock")?;
        let memories = Encoded::new(resolve_groups(locked.store(), self.config, groups));
        let first_memory = batch.len();
        let (n_memories, n_total) = (memories.len(), batch.len() + memories.len() + cursors.len());
        batch.extend(memories);
        batch.extend(cursors);
        let receipt = locked.append_batch(&batch).context("append to the tape log")?;
        drop(locked);
        self.summary.timings.append_ms += ms(t);
        if !receipt.applied {
            tracing::warn!(
                first = receipt.first_lsn,
                last = receipt.last_lsn,
                "events are on tape but not yet projected"
            );
        }
        self.count_memories(&batch.events()[first_memory..first_memory + n_memories]);
        self.summary.events_appended += n_total as u64;
        let answered = std::mem::take(&mut self.answered_spans);
        if let Some(spans) = self.spans.as_mut() {
            for h in &answered {
                spans.mark_done(h, self.now);
            }
        }
        for s in sessions {
            self.session_state.insert(s, true);
        }
        Ok(())
    }

    /// The memory candidates of the sessions of a batch, in groups to be
    /// resolved in order ([`extract::resolve`], each group seeing those
    /// before it): deterministic extraction over each session's parsed events
    /// (after about [`turn::CONTEXT_CHARS`] characters of its earlier events
    /// when the projection already held it), then the external extractor's
    /// when configured (with seed 000's per-turn rules in the hooks' worker).
    fn candidates(&mut self, pending: &Pending) -> Result<Vec<Vec<extract::Candidate>>, Error> {
        let mut groups: BTreeMap<&SessionKey, Vec<usize>> = BTreeMap::new();
        for (i, e) in pending.events.iter().enumerate() {
            if let Some(s) = &e.session {
                groups.entry(s).or_default().push(i);
            }
        }
        let mut snapshot: Option<Snapshot> = None;
        let mut out = Vec::new();
        let mut skipped = 0u64;
        for (session, idx) in groups {
            let known_before =
                self.session_state.get(session.as_str()) == Some(&true) && !pending.whole.contains(session);
            let (first, last) = (idx[0], idx[idx.len() - 1]);
            let contiguous = last - first + 1 == idx.len();
            let events: Cow<'_, [Event]> = if !known_before && contiguous {
                Cow::Borrowed(&pending.events[first..=last])
            } else {
                let mut v = Vec::with_capacity(idx.len() + turn::FIRST_CONTEXT_EVENTS);
                if known_before {
                    let ids: HashSet<&EventId> = idx.iter().map(|&i| &pending.events[i].id).collect();
                    v.extend(context(&self.journal, &mut snapshot, session, &ids));
                }
                v.extend(idx.iter().map(|&i| pending.events[i].clone()));
                Cow::Owned(v)
            };
            // A turn of a recorded session: its project is in the projection.
            let project: Option<String> = if known_before {
                self.journal
                    .store()
                    .conn()
                    .prepare_cached("SELECT project FROM sessions WHERE session_key = ?1")
                    .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)))
                    .unwrap_or(None)
            } else {
                None
            };
            out.push(extract::candidates_in(&events, project.as_deref()));
            if self.config.extractor.enabled() && idx.iter().any(|&i| pending.fresh[i]) {
                let req = if self.per_turn {
                    // Seed 000's per-turn rules: the new events after the prior context.
                    let new: Vec<Event> =
                        idx.iter().filter(|&&i| pending.fresh[i]).map(|&i| pending.events[i].clone()).collect();
                    let prior = &events[..events.len() - idx.len()];
                    let bytes = pending.sizes.get(session).copied().unwrap_or(0);
                    let new_chars: usize = new.iter().map(turn::text_chars).sum();
                    let req = match turn::skip_external(bytes, new_chars) {
                        Some(why) => Err(why),
                        None => external::build_turn_request(prior, &new, EXTERNAL_MAX, &self.privacy)
                            .ok_or("new content under 50 characters"),
                    };
                    match req {
                        Ok(r) => r,
                        Err(why) => {
                            tracing::debug!(session = %session, why, "turn not sent to the external extractor");
                            skipped += 1;
                            continue;
                        }
                    }
                } else {
                    let mut r = external::build_request(&events, EXTERNAL_BYTES, EXTERNAL_MAX, &self.privacy);
                    // The span is the turns of the events new to the projection.
                    let fresh: HashSet<&EventId> =
                        idx.iter().filter(|&&i| pending.fresh[i]).map(|&i| &pending.events[i].id).collect();
                    let from = r.turns.iter().position(|t| t.event_id.as_ref().is_some_and(|id| fresh.contains(id)));
                    r.new_from = u32::try_from(from.unwrap_or(r.turns.len())).unwrap_or(u32::MAX);
                    r
                };
                let mut req = req;
                if req.project.is_none() {
                    req.project.clone_from(&project);
                }
                if req.new_from as usize >= req.turns.len() {
                    continue;
                }
                if let Some(cands) = self.model(&req) {
                    out.push(cands);
                }
            }
        }
        self.summary.extractor_skipped += skipped;
        Ok(out)
    }

    /// Asks the extractor model about one request's span (see the module
    /// docs): its candidates, or `None` when the span was answered before,
    /// set aside, or answered badly.
    fn model(&mut self, req: &external::ExtractorRequest) -> Option<Vec<extract::Candidate>> {
        let spans = self.spans.as_mut()?;
        let hash = crate::spans::span_hash(req);
        if spans.is_done(&hash) {
            self.summary.extractor_cached += 1;
            return None;
        }
        self.asked_now.insert(hash.clone());
        if self.model_lock.is_none() {
            match shared::base::model::budget::single_flight(&self.paths, std::time::Duration::ZERO) {
                Ok(Some(lock)) => {
                    self.model_lock = Some(lock);
                    // Another process may have answered it meanwhile.
                    spans.refresh();
                    if spans.is_done(&hash) {
                        self.summary.extractor_cached += 1;
                        return None;
                    }
                }
                Ok(None) => {
                    spans.set_aside(req, "another model call of this data home was running", false, self.now);
                    self.summary.extractor_deferred += 1;
                    return None;
                }
                Err(e) => {
                    spans.set_aside(req, &format!("cannot take the model call lock: {e}"), false, self.now);
                    self.summary.extractor_deferred += 1;
                    return None;
                }
            }
        }
        let client = shared::base::model::ModelClient::new(&self.config.extractor, &self.paths);
        match runner::ask(&client, &self.paths, self.now, req) {
            Err(not_now) => {
                tracing::info!(session = %req.session, reason = %not_now, "span set aside for the extractor model");
                spans.set_aside(req, &not_now.to_string(), false, self.now);
                self.summary.extractor_deferred += 1;
                None
            }
            Ok(ran) => {
                self.summary.extractor_runs += 1;
                match ran.result {
                    Ok(cands) => {
                        self.answered_spans.push(hash);
                        Some(cands)
                    }
                    Err(e) => {
                        self.summary.extractor_failures += 1;
                        tracing::warn!(session = %req.session, error = %e, "extractor model failed; the span is asked again later");
                        spans.set_aside(req, &e.to_string(), true, self.now);
                        None
                    }
                }
            }
        }
    }

    /// Asks the extractor model again about spans set aside by earlier
    /// scans (at most [`RETRIES_PER_SCAN`], oldest first, while the daily
    /// budget lasts), with this scan's single-flight lock, and appends the
    /// memories of those it answers.
    fn retry_set_aside(&mut self) -> Result<(), Error> {
        let Some(spans) = self.spans.as_mut() else { return Ok(()) };
        if spans.pending().is_empty() {
            return Ok(());
        }
        if self.model_lock.is_none() {
            match shared::base::model::budget::single_flight(&self.paths, std::time::Duration::ZERO) {
                Ok(Some(lock)) => self.model_lock = Some(lock),
                _ => return Ok(()),
            }
        }
        // Under the lock: what other processes answered meanwhile is known.
        spans.refresh();
        let spans = &*spans;
        let client = shared::base::model::ModelClient::new(&self.config.extractor, &self.paths);
        // (hash as sent, hash as set aside, candidates)
        let mut answered: Vec<(String, String, Vec<extract::Candidate>)> = Vec::new();
        let mut tries = 0usize;
        for p in spans.pending() {
            if spans.is_done(&p.hash) {
                // Answered by another scan that read the same turns.
                spans.drop_pending(&p.hash);
                self.summary.extractor_cached += 1;
                continue;
            }
            if self.asked_now.contains(&p.hash) {
                continue;
            }
            if tries == RETRIES_PER_SCAN {
                break;
            }
            tries += 1;
            let mut req = p.restored();
            // What privacy.exclude says now.
            let new_from = req.new_from as usize;
            let before = req.turns.len();
            let mut kept = Vec::with_capacity(before);
            let mut new_kept_from = None;
            for (i, t) in req.turns.drain(..).enumerate() {
                if external::touches_excluded(&self.privacy, &t.text) {
                    continue;
                }
                if i >= new_from && new_kept_from.is_none() {
                    new_kept_from = Some(kept.len());
                }
                kept.push(t);
            }
            req.turns = kept;
            for (i, t) in req.turns.iter_mut().enumerate() {
                t.index = u32::try_from(i).unwrap_or(u32::MAX);
            }
            let Some(from) = new_kept_from else {
                // Every new turn is excluded now: nothing left to send.
                spans.drop_pending(&p.hash);
                continue;
            };
            req.new_from = u32::try_from(from).unwrap_or(u32::MAX);
            let hash = crate::spans::span_hash(&req);
            // A span whose turns changed is kept under its new hash.
            let set_aside = |error: &str, failed: bool| {
                spans.set_aside(&req, error, failed, self.now);
                if hash != p.hash {
                    spans.drop_pending(&p.hash);
                }
            };
            match runner::ask(&client, &self.paths, self.now, &req) {
                Err(not_now) => {
                    tracing::info!(reason = %not_now, "spans set aside stay for a later scan");
                    set_aside(&not_now.to_string(), false);
                    break;
                }
                Ok(ran) => {
                    self.summary.extractor_runs += 1;
                    match ran.result {
                        Ok(cands) => answered.push((hash.clone(), p.hash.clone(), cands)),
                        Err(e) => {
                            self.summary.extractor_failures += 1;
                            tracing::warn!(session = %req.session, error = %e, "extractor model failed again on a span set aside");
                            set_aside(&e.to_string(), true);
                        }
                    }
                }
            }
        }
        if answered.is_empty() {
            return Ok(());
        }
        let mut hashes: Vec<(String, String)> = Vec::with_capacity(answered.len());
        let mut groups: Vec<Vec<extract::Candidate>> = Vec::with_capacity(answered.len());
        for (sent, earlier, cands) in answered {
            hashes.push((sent, earlier));
            groups.push(cands);
        }
        let t = Instant::now();
        let mut locked = self.journal.locked().context("take the tape lock")?;
        let batch = Encoded::new(resolve_groups(locked.store(), self.config, groups));
        locked.append_batch(&batch).context("append to the tape log")?;
        drop(locked);
        self.summary.timings.append_ms += ms(t);
        self.summary.events_appended += batch.len() as u64;
        self.count_memories(batch.events());
        // Done only once their memories are on tape: a crash asks again.
        if let Some(spans) = self.spans.as_mut() {
            for (sent, earlier) in &hashes {
                spans.mark_done(sent, self.now);
                spans.drop_pending(earlier);
            }
        }
        self.summary.extractor_retried += hashes.len() as u64;
        Ok(())
    }

    /// Counts memory events by harness.
    fn count_memories(&mut self, events: &[Event]) {
        for m in events {
            if let Some(h) = m.session.as_ref().and_then(|s| Harness::from_name(s.harness())) {
                let hs = self.harness(h);
                match m.body {
                    Body::MemoryAdded(_) => hs.memories_added += 1,
                    Body::MemoryUpdated(_) => hs.memories_merged += 1,
                    Body::MemoryStaged(_) => hs.memories_staged += 1,
                    _ => {}
                }
            }
        }
    }

    /// Appends `session.ended` (reason `idle`) for sessions of `harnesses`
    /// quiet for `scan.idle_end_minutes` (0 turns this off).
    fn end_idle(&mut self, harnesses: &[Harness]) -> Result<(), Error> {
        let minutes = self.config.scan.idle_end_minutes;
        if minutes == 0 {
            return Ok(());
        }
        let cutoff = self.now.0.saturating_sub(i64::try_from(minutes.saturating_mul(60_000)).unwrap_or(i64::MAX));
        let idle = self.journal.store().idle_sessions(cutoff).context("list idle sessions")?;
        let mut events = Vec::new();
        for s in idle {
            let Some(h) = Harness::from_name(s.key.harness()).filter(|h| harnesses.iter().any(|a| a.covers(*h))) else {
                continue;
            };
            self.harness(h).sessions_ended += 1;
            let stamp = s.last_event_ms.to_string();
            events.push(Event {
                v: SCHEMA_VERSION,
                id: EventId::derived(&[s.key.as_str(), "session.ended", "idle", &stamp]),
                ts: Ts(s.last_event_ms),
                writer: WRITER.to_owned(),
                session: Some(s.key),
                body: Body::SessionEnded(SessionEnded { reason: "idle".to_owned() }),
            });
        }
        for chunk in events.chunks(self.limits.flush_events.max(1)) {
            self.journal.append(chunk).context("append session ends")?;
            self.summary.events_appended += chunk.len() as u64;
        }
        Ok(())
    }
}

/// The prior context of a turn of an already known session: its latest
/// events read back from the tapes (those in `exclude`, the turn's own, left
/// out), as many as make about [`turn::CONTEXT_CHARS`] characters of text
/// ([`turn::prior_context`]). A damaged log only costs the context.
fn context(
    journal: &Journal,
    snapshot: &mut Option<Snapshot>,
    session: &SessionKey,
    exclude: &HashSet<&EventId>,
) -> Vec<Event> {
    let mut want = turn::FIRST_CONTEXT_EVENTS;
    loop {
        let (events, all) = recent_events(journal, snapshot, session, exclude, want + exclude.len());
        let text: usize = events.iter().map(turn::text_chars).sum();
        if all || text >= turn::CONTEXT_CHARS || want >= turn::MAX_CONTEXT_EVENTS {
            return turn::prior_context(events, turn::CONTEXT_CHARS);
        }
        want = (want * 4).min(turn::MAX_CONTEXT_EVENTS);
    }
}

/// The latest `limit` events of a session (less those in `exclude`), oldest
/// first, and whether they are all it has.
fn recent_events(
    journal: &Journal,
    snapshot: &mut Option<Snapshot>,
    session: &SessionKey,
    exclude: &HashSet<&EventId>,
    limit: usize,
) -> (Vec<Event>, bool) {
    let lsns = match journal.store().recent_session_lsns(session.as_str(), limit) {
        Ok(l) if !l.is_empty() => l,
        Ok(_) => return (Vec::new(), true),
        Err(e) => {
            tracing::warn!(session = %session, error = %e, "cannot list a session's recent events");
            return (Vec::new(), true);
        }
    };
    let all = lsns.len() < limit;
    if snapshot.is_none() {
        match journal.tape().snapshot() {
            Ok(s) => *snapshot = Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the tapes for extraction context");
                return (Vec::new(), true);
            }
        }
    }
    let Some(snap) = snapshot.as_ref() else { return (Vec::new(), true) };
    let want: HashSet<Lsn> = lsns.iter().copied().collect();
    let (lo, hi) = (lsns[0], lsns[lsns.len() - 1]);
    let mut out = Vec::new();
    for frame in snap.frames_after(lo - 1) {
        match frame {
            Ok(f) if f.lsn > hi => break,
            Ok(f) if want.contains(&f.lsn) => {
                let e = decode(f.lsn, &f.payload);
                if !exclude.contains(&e.id) {
                    out.push(e);
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the tapes for extraction context");
                return (out, true);
            }
        }
    }
    (out, all)
}

/// The memory events of candidate groups, resolved against the store under
/// the tape lock (each group sees what the earlier ones added); with
/// curation on, they wait in the observation buffer instead.
fn resolve_groups(
    store: &shared::storage::store::Store,
    config: &Config,
    groups: Vec<Vec<extract::Candidate>>,
) -> Vec<Event> {
    let lookup = StoreLookup::new(store).with_conflicts(config);
    let mut memories = Vec::new();
    for group in groups {
        let ex = extract::resolve(group, &lookup);
        lookup.note(&ex.events);
        memories.extend(ex.events);
    }
    drop(lookup);
    if config.knowledge.curation.enabled() {
        memories = shared::domain::knowledge::curation::stage_pending(store, memories);
    }
    memories
}
