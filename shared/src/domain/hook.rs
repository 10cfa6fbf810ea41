//! What Claude Code and Codex send to a hook, and what the two hook binaries
//! (`engram-scorer hook …` on the read side, `engram-ingestor hook …` on the
//! write side) share: the events, the tolerant input type, the session key and
//! project of a hook call, the git branch, where hooks log, and how a hook
//! records events without ever making the agent wait.
//!
//! Both harnesses use one dialect (harness-formats §1d): a JSON object on
//! stdin with `session_id`, `transcript_path` (null in Codex), `cwd`,
//! `hook_event_name` and per-event fields; Codex adds `turn_id` and `model`.
//! [`HookInput::parse`] reads any JSON object and ignores what it does not
//! know; a field of an unexpected type is treated as absent.
//!
//! **Recording.** A hook appends through the journal like every writer, but
//! only if the tape lock is free within a short wait ([`record`]): a scan that
//! holds it for a large batch must not stall a prompt. Otherwise the events go
//! to a spool file (`<home>/hooks/spool/*.jsonl`, written atomically) that the
//! next writer to hold the lock appends first ([`append_with_spool`],
//! [`drain_spool`]): it reads the spool, appends and applies what it found,
//! and removes those files, all under the tape lock, so two writers never
//! append the same file and a spool file disappears only after its events
//! were appended and applied (or the apply failed, which is logged: they are
//! in the tape log, and the next writer's catch-up applies them). Event ids
//! make a repeated append harmless anyway (the projection dedupes them).
//!
//! **Read side.** The read-side hooks never wait for the tape at all: they
//! spool what they served without syncing it ([`spool_unsynced`]) and start
//! one detached recorder ([`start_detached`], `engram-scorer hook record`)
//! that appends it durably. Until then a later hook sees those rankings
//! through [`pending`] (read before its own snapshot of the
//! projection), so a session's memories are never shown twice.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::{FileLock, atomic_write, temp_path_for};
use crate::base::ids::SessionKey;
use crate::base::paths::Paths;
use crate::domain::rank::Unapplied;
use crate::storage::event::{Body, Event, harness};
use crate::storage::journal::{Journal, JournalOptions};
use crate::storage::store::Apply;

/// The hook events Engram handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    /// A session starts, resumes, is cleared or compacted (read side).
    SessionStart,
    /// The user submitted a prompt (read side).
    UserPromptSubmit,
    /// A tool is about to run (read side).
    PreToolUse,
    /// A tool ran (write side).
    PostToolUse,
    /// The agent finished its turn (write side).
    Stop,
    /// The session ended (write side).
    SessionEnd,
    /// The context is about to be compacted (write side).
    PreCompact,
}

impl HookEvent {
    /// Every event, read side first.
    pub const ALL: [HookEvent; 7] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
    ];

    /// The command-line name (`session-start`).
    pub fn arg(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session-start",
            HookEvent::UserPromptSubmit => "user-prompt-submit",
            HookEvent::PreToolUse => "pre-tool-use",
            HookEvent::PostToolUse => "post-tool-use",
            HookEvent::Stop => "stop",
            HookEvent::SessionEnd => "session-end",
            HookEvent::PreCompact => "pre-compact",
        }
    }

    /// The harness's name (`SessionStart`), used in settings files and in
    /// `hookSpecificOutput.hookEventName`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
        }
    }

    /// From the command-line name.
    pub fn from_arg(arg: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.arg() == arg)
    }

    /// Whether `engram-scorer` (injection) rather than `engram-ingestor`
    /// (recording) handles it.
    pub fn is_read_side(self) -> bool {
        matches!(self, HookEvent::SessionStart | HookEvent::UserPromptSubmit | HookEvent::PreToolUse)
    }
}

/// The fields of a hook's stdin that Engram uses. Everything is optional:
/// a harness version that omits a field, sends `null` or a value of another
/// type still gets an answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookInput {
    /// The harness's session id.
    pub session_id: Option<String>,
    /// The transcript file (`null` in Codex).
    pub transcript_path: Option<String>,
    /// `transcript_path` was sent as an explicit `null` (Codex does; Claude
    /// Code always sends a path).
    pub transcript_null: bool,
    /// Working directory of the session.
    pub cwd: Option<String>,
    /// `SessionStart`, `UserPromptSubmit`, …
    pub hook_event_name: Option<String>,
    /// SessionStart: `startup`, `resume`, `clear`, `compact`, `fork`.
    pub source: Option<String>,
    /// The model (a string, or an object's `id`/`display_name`).
    pub model: Option<String>,
    /// UserPromptSubmit: the prompt.
    pub prompt: Option<String>,
    /// Pre/PostToolUse: the tool.
    pub tool_name: Option<String>,
    /// Pre/PostToolUse: its input (any JSON).
    pub tool_input: Value,
    /// PostToolUse: its response (any JSON).
    pub tool_response: Value,
    /// Pre/PostToolUse: the call id.
    pub tool_use_id: Option<String>,
    /// Codex: the turn.
    pub turn_id: Option<String>,
    /// SessionEnd: why.
    pub reason: Option<String>,
    /// PreCompact: `manual` or `auto`.
    pub trigger: Option<String>,
    /// PreCompact: the user's instructions for the summary.
    pub custom_instructions: Option<String>,
    /// Stop: the agent's last message.
    pub last_assistant_message: Option<String>,
    /// Inside a subagent: its id.
    pub agent_id: Option<String>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl HookInput {
    /// Reads a hook's stdin. Only something that is not a JSON object is an error.
    pub fn parse(bytes: &[u8]) -> std::result::Result<HookInput, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("hook input is not JSON: {e}"))?;
        if !v.is_object() {
            return Err("hook input is not a JSON object".into());
        }
        let model = match v.get("model") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(obj @ Value::Object(_)) => text(obj, "id").or_else(|| text(obj, "display_name")),
            _ => None,
        };
        Ok(HookInput {
            session_id: text(&v, "session_id"),
            transcript_path: text(&v, "transcript_path"),
            transcript_null: v.get("transcript_path").is_some_and(Value::is_null),
            cwd: text(&v, "cwd"),
            hook_event_name: text(&v, "hook_event_name"),
            source: text(&v, "source"),
            model,
            prompt: text(&v, "prompt"),
            tool_name: text(&v, "tool_name"),
            tool_input: v.get("tool_input").cloned().unwrap_or(Value::Null),
            tool_response: v.get("tool_response").cloned().unwrap_or(Value::Null),
            tool_use_id: text(&v, "tool_use_id"),
            turn_id: text(&v, "turn_id"),
            reason: text(&v, "reason"),
            trigger: text(&v, "trigger"),
            custom_instructions: text(&v, "custom_instructions"),
            last_assistant_message: text(&v, "last_assistant_message"),
            agent_id: text(&v, "agent_id"),
        })
    }

    /// The harness: `explicit` when given (install writes `--harness`), else
    /// Codex when the transcript is a Codex rollout, is an explicit `null`,
    /// or a `turn_id` is present, else Claude Code.
    pub fn harness(&self, explicit: Option<&str>) -> &'static str {
        match explicit {
            Some(h) if h == harness::CODEX => return harness::CODEX,
            Some(h) if h == harness::CLAUDE => return harness::CLAUDE,
            _ => {}
        }
        let codex_transcript = self.transcript_path.as_deref().is_some_and(|p| {
            p.contains("/.codex/")
                || Path::new(p).file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rollout-"))
        });
        if codex_transcript || self.transcript_null || self.turn_id.is_some() {
            harness::CODEX
        } else {
            harness::CLAUDE
        }
    }

    /// `<harness>:<session_id>`, when the harness sent a session id.
    pub fn session_key(&self, harness: &str) -> Option<SessionKey> {
        self.session_id.as_deref().map(|id| SessionKey::new(harness, id))
    }

    /// The environment of the session's working directory, detected now
    /// ([`crate::domain::env::detect`]): its project key, name and stack.
    pub fn env(&self, opts: &crate::domain::env::DetectOptions) -> Option<crate::storage::event::EnvDetected> {
        let cwd = self.cwd.as_deref()?;
        Some(crate::domain::env::detect(Path::new(cwd), opts))
    }
}

/// The last component of a working directory: the project name that versions
/// before project detection ([`crate::domain::env`]) stored. Adapters still put it in
/// the `session.started` they parse; the scan replaces it with the detected
/// key.
pub fn project_of(cwd: &str) -> Option<String> {
    let trimmed = cwd.trim_end_matches(['/', '\\']);
    let name = trimmed.rsplit(['/', '\\']).next()?;
    (!name.is_empty()).then(|| name.to_owned())
}

/// The checked-out branch of the repository containing `dir`, read from
/// `.git/HEAD` (worktrees and submodules, whose `.git` is a file naming the
/// git directory, included) without running git. `None` outside a repository
/// or on a detached head.
pub fn git_branch(dir: &Path) -> Option<String> {
    for d in dir.ancestors() {
        let dot_git = d.join(".git");
        let Ok(meta) = fs::metadata(&dot_git) else { continue };
        let git_dir = if meta.is_dir() {
            dot_git
        } else {
            let text = fs::read_to_string(&dot_git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim().to_owned();
            let p = PathBuf::from(target);
            if p.is_absolute() { p } else { d.join(p) }
        };
        let head = fs::read_to_string(git_dir.join("HEAD")).ok()?;
        return head.trim().strip_prefix("ref: refs/heads/").map(str::to_owned);
    }
    None
}

/// The hooks' log file in the data home.
pub fn log_file(paths: &Paths) -> PathBuf {
    paths.logs().join("hooks.log")
}

/// Reads all of stdin, refusing more than `max` bytes.
pub fn read_stdin(max: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(8 * 1024);
    io::stdin().lock().take(max as u64 + 1).read_to_end(&mut buf)?;
    if buf.len() > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("hook input is larger than {max} bytes")));
    }
    Ok(buf)
}

/// Runs a hook process's body the way every hook runs: the data home from
/// the environment, logging to the hooks log, stdin read (at most
/// `max_input` bytes), and the body under `catch_unwind`. A failure or a
/// panic is logged (with `hook`, the event's name) and gives `None`: a hook
/// never breaks the agent. Inside one of Engram's own model calls
/// ([`crate::base::model::in_model_call`]) it does nothing and gives `None`.
pub fn guarded<T, E: std::fmt::Display>(
    hook: &str,
    max_input: usize,
    body: impl FnOnce(&[u8], &Paths) -> std::result::Result<T, E>,
) -> Option<T> {
    if crate::base::model::in_model_call() {
        // A harness run by one of Engram's own model calls: its sessions are
        // not the user's, nothing is recorded or injected (the input is read
        // so that the harness's write does not fail).
        let _ = read_stdin(max_input);
        return None;
    }
    let paths = match Paths::from_env() {
        Ok(p) => p,
        Err(e) => {
            crate::base::logging::init_stderr("warn");
            tracing::error!(error = %e, hook, "hook failed");
            return None;
        }
    };
    crate::base::logging::init_file(&log_file(&paths), "warn");
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match read_stdin(max_input) {
        Ok(input) => body(&input, &paths).map_err(|e| e.to_string()),
        Err(e) => Err(format!("read stdin: {e}")),
    }));
    // The hook's latency, with what its body noted (see `telemetry::latency`).
    crate::base::telemetry::latency::note(format!("hook.{hook}"), started.elapsed(), matches!(outcome, Ok(Ok(_))));
    crate::base::telemetry::latency::flush(&paths);
    match outcome {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::error!(error = %e, hook, "hook failed");
            None
        }
        Err(panic) => {
            tracing::error!(panic = %crate::base::logging::panic_message(panic.as_ref()), hook, "hook panicked");
            None
        }
    }
}

/// Directory of events waiting for the tape lock.
pub fn spool_dir(paths: &Paths) -> PathBuf {
    paths.home().join("hooks").join("spool")
}

/// What [`record`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Appended to the tape log and applied to the projection.
    Applied,
    /// The lock was busy: written to this spool file for the next writer.
    Spooled(PathBuf),
}

/// Waits up to `wait` for the tape lock to be free (polling, never queueing
/// behind a long batch). `true` when it was free at some point.
pub fn tape_lock_free(paths: &Paths, wait: Duration) -> Result<bool> {
    let dir = paths.tapes();
    fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    let lock = dir.join("LOCK");
    let deadline = Instant::now() + wait;
    loop {
        if FileLock::try_exclusive(&lock).ctx("lock", &lock)?.is_some() {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Records `events` (see the module docs): through the journal when the tape
/// lock frees up within `wait`, else into the spool.
pub fn record(paths: &Paths, writer: &str, events: &[Event], wait: Duration, apply: Apply) -> Result<Recorded> {
    if events.is_empty() {
        return Ok(Recorded::Applied);
    }
    if tape_lock_free(paths, wait)? {
        let mut journal = open_journal(paths, writer, apply)?;
        append_with_spool(&mut journal, events)?;
        finish_connection(journal.store());
        return Ok(Recorded::Applied);
    }
    spool(paths, events).map(Recorded::Spooled)
}

/// Tunes a short-lived process's connection. As the last connection to
/// close it would checkpoint the WAL into the database and fsync it (several
/// milliseconds on an agent's critical path), so that is turned off. But the
/// first connection of every process rebuilds the WAL index by reading the
/// whole WAL (and, having rebuilt it, cannot know what was already copied
/// back, so the WAL never restarts): [`finish_connection`] turns the
/// checkpoint back on once the WAL is larger than [`HOOK_WAL_BYTES`].
pub fn tune_connection(conn: &rusqlite::Connection) {
    set_checkpoint_on_close(conn, false);
}

fn set_checkpoint_on_close(conn: &rusqlite::Connection, on: bool) {
    if let Err(e) = conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, !on) {
        tracing::debug!(error = %e, "cannot change the checkpoint on close");
    }
}

/// WAL size above which a hook's connection checkpoints (and removes the
/// WAL) when it closes: recovery reads about this much per process.
pub const HOOK_WAL_BYTES: u64 = 1 << 20;

/// Lets `store` checkpoint on close if its WAL grew past [`HOOK_WAL_BYTES`].
pub fn finish_connection(store: &crate::storage::store::Store) {
    let mut wal = store.file().as_os_str().to_owned();
    wal.push("-wal");
    if fs::metadata(&wal).is_ok_and(|m| m.len() > HOOK_WAL_BYTES) {
        set_checkpoint_on_close(store.conn(), true);
    }
}

/// Opens the journal for a hook: no sealing on the critical path, a tuned
/// connection (see [`tune_connection`]); `apply` is the projection's
/// (`crate::projection::apply`).
pub fn open_journal(paths: &Paths, writer: &str, apply: Apply) -> Result<Journal> {
    let journal = Journal::open_with(paths, writer, JournalOptions::low_latency(), apply)?;
    tune_connection(journal.store().conn());
    Ok(journal)
}

/// Writes `events` to a new spool file, durably (file and directory synced).
pub fn spool(paths: &Paths, events: &[Event]) -> Result<PathBuf> {
    let path = write_spool(paths, events, true)?;
    tracing::info!(file = %path.display(), events = events.len(), "the tape log is busy; events spooled");
    Ok(path)
}

/// Writes `events` to a new spool file without syncing it (a read-side hook's
/// critical path; its recorder syncs them into the tape log a moment later).
/// The file appears whole or not at all (written aside, then renamed), but a
/// crash of the machine before the recorder's append can lose it.
pub fn spool_unsynced(paths: &Paths, events: &[Event]) -> Result<PathBuf> {
    write_spool(paths, events, false)
}

fn write_spool(paths: &Paths, events: &[Event], durable: bool) -> Result<PathBuf> {
    let dir = spool_dir(paths);
    fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    let mut bytes = Vec::new();
    // Redacted as the journal would: the spool is on disk too.
    for payload in crate::storage::journal::encode(events) {
        bytes.extend_from_slice(&payload);
        bytes.push(b'\n');
    }
    // Named by the first event's id (time-sortable): drained in that order.
    let first = events.first().map_or("empty", |e| e.id.as_str());
    let path = dir.join(format!("{first}-{}.jsonl", std::process::id()));
    if durable {
        atomic_write(&path, &bytes).ctx("write", &path)?;
    } else {
        let tmp = temp_path_for(&path);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&bytes))
            .and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io("write", &path, e));
        }
    }
    Ok(path)
}

/// Appends whatever is spooled, then `events`, in one batch (see the module docs).
pub fn append_with_spool(journal: &mut Journal, events: &[Event]) -> Result<()> {
    let paths = journal.paths().clone();
    let mut locked = journal.locked()?;
    let (mut batch, files) = read_spool(&paths)?;
    if batch.is_empty() && events.is_empty() {
        return Ok(());
    }
    batch.extend_from_slice(events);
    locked.append(&batch)?;
    remove_drained(&files);
    Ok(())
}

/// Appends whatever is spooled; returns how many events.
pub fn drain_spool(journal: &mut Journal) -> Result<usize> {
    let paths = journal.paths().clone();
    let mut locked = journal.locked()?;
    let (spooled, files) = read_spool(&paths)?;
    if !spooled.is_empty() {
        locked.append(&spooled)?;
    }
    remove_drained(&files);
    Ok(spooled.len())
}

fn remove_drained(files: &[PathBuf]) {
    for file in files {
        if let Err(e) = fs::remove_file(file) {
            tracing::warn!(file = %file.display(), error = %e, "cannot remove a drained spool file");
        }
    }
}

/// The spool files, oldest first (written aside under a hidden name, so only
/// whole files are listed).
fn spool_files(paths: &Paths) -> Result<Vec<PathBuf>> {
    let dir = spool_dir(paths);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list", &dir, e)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".jsonl") && !n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Whether anything is spooled.
pub fn spool_pending(paths: &Paths) -> bool {
    spool_files(paths).is_ok_and(|f| !f.is_empty())
}

/// Every spooled event, in order, and the files read. A file removed while
/// being listed was drained (its events are in the projection) and is
/// skipped; an unreadable line is skipped with a warning.
fn read_spool(paths: &Paths) -> Result<(Vec<Event>, Vec<PathBuf>)> {
    let mut events = Vec::new();
    let mut read = Vec::new();
    for path in spool_files(paths)? {
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match Event::from_json(line) {
                Ok(e) => events.push(e),
                Err(e) => tracing::warn!(file = %path.display(), error = %e, "unreadable spooled event skipped"),
            }
        }
        read.push(path);
    }
    Ok((events, read))
}

/// The rankings spooled and not yet drained, for [`crate::domain::rank::rank_after`]:
/// read before the ranking's snapshot of the projection, every ranking a
/// previous hook served is either here or already applied there.
pub fn pending_rankings(paths: &Paths) -> Result<Vec<Unapplied>> {
    Ok(pending(paths)?.rankings)
}

/// What the spool holds that later hooks must see before it is applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pending {
    /// Rankings served (see [`pending_rankings`]).
    pub rankings: Vec<Unapplied>,
    /// Resets of a session's context (a compaction, a cleared session):
    /// the session and when (ms).
    pub resets: Vec<(SessionKey, i64)>,
}

impl Pending {
    /// The latest pending reset of `session`'s context.
    pub fn reset_of(&self, session: Option<&SessionKey>) -> Option<i64> {
        let session = session?;
        self.resets.iter().filter(|(s, _)| s == session).map(|(_, t)| *t).max()
    }
}

/// The spooled rankings and context resets (see [`Pending`]), in one read.
pub fn pending(paths: &Paths) -> Result<Pending> {
    let (events, _) = read_spool(paths)?;
    let mut out = Pending::default();
    for e in events {
        match e.body {
            Body::RankingServed(r) => out.rankings.push(Unapplied {
                trigger: r.trigger,
                ranking_id: r.ranking_id,
                session: e.session,
                injected: r.candidates.into_iter().filter(|c| c.injected).map(|c| c.memory_id).collect(),
                served_ms: e.ts.0,
            }),
            Body::Meta(m) if crate::storage::event::context_reset::resets(&m.label) => {
                if let Some(s) = e.session {
                    out.resets.push((s, e.ts.0));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Starts `exe args` as a detached worker that owns the exclusive lock
/// `lock`, unless another process holds it (then that one does the work and
/// `false` is returned). The worker gets the locked file as its stdin (the
/// lock belongs to the open file, so it stays held after this process
/// exits; [`inherited_lock`] takes it back), runs in its own process group,
/// writes nothing to this process's stdout (a harness waits for that pipe
/// to close) and logs to the hooks log.
pub fn start_detached(paths: &Paths, lock: &Path, exe: &Path, args: &[&str]) -> io::Result<bool> {
    if let Some(dir) = lock.parent() {
        fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(lock)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Ok(false),
        Err(fs::TryLockError::Error(e)) => return Err(e),
    }
    let log = OpenOptions::new().create(true).append(true).open(log_file(paths)).ok();
    Command::new(exe)
        .args(args)
        .env("ENGRAM_HOME", paths.home())
        .stdin(Stdio::from(file))
        .stdout(Stdio::null())
        .stderr(log.map_or_else(Stdio::null, Stdio::from))
        .process_group(0)
        .spawn()?;
    Ok(true)
}

/// In a worker started by [`start_detached`]: the locked file it was given as stdin.
pub fn inherited_lock() -> Option<File> {
    io::stdin().as_fd().try_clone_to_owned().map(File::from).ok()
}

/// The lock of the read-side hooks' recorder.
pub fn recorder_lock(paths: &Paths) -> PathBuf {
    paths.home().join("hooks").join("record.lock")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::base::time::Ts;
    use crate::storage::event::{Body, SessionEnded};

    #[test]
    fn input_is_read_tolerantly() {
        let i = HookInput::parse(
            br#"{"session_id":"abc","transcript_path":null,"cwd":"/home/me/web/","hook_event_name":"UserPromptSubmit",
                "prompt":"fix it","turn_id":"t1","model":{"id":"gpt-5"},"tool_input":{"command":"ls"},"extra":[1,2],
                "reason":7}"#,
        )
        .unwrap();
        assert_eq!(i.transcript_path, None);
        assert!(i.transcript_null);
        let start = HookInput::parse(br#"{"session_id":"s","transcript_path":null,"hook_event_name":"SessionStart"}"#);
        assert_eq!(start.unwrap().harness(None), harness::CODEX, "a null transcript means Codex");
        assert_eq!(i.model.as_deref(), Some("gpt-5"));
        assert_eq!(i.reason.as_deref(), Some("7"));
        assert_eq!(i.harness(None), harness::CODEX, "turn_id means Codex");
        assert_eq!(i.harness(Some("claude")), harness::CLAUDE);
        assert_eq!(i.session_key("codex").unwrap().as_str(), "codex:abc");
        let env = i.env(&crate::domain::env::DetectOptions::default()).unwrap();
        assert_eq!((env.name.as_str(), env.project.as_str()), ("web", "/home/me/web"));
        assert!(HookInput::parse(b"[1]").is_err());
        assert!(HookInput::parse(b"{").is_err());
        let claude = HookInput::parse(br#"{"session_id":"s","transcript_path":"/h/.claude/projects/x/s.jsonl"}"#);
        assert_eq!(claude.unwrap().harness(None), harness::CLAUDE);
        let codex = HookInput::parse(
            br#"{"transcript_path":"/h/.codex/sessions/2026/01/02/rollout-2026-01-02T05-00-00-x.jsonl"}"#,
        );
        assert_eq!(codex.unwrap().harness(None), harness::CODEX);
    }

    #[test]
    fn events_round_trip_their_names() {
        for e in HookEvent::ALL {
            assert_eq!(HookEvent::from_arg(e.arg()), Some(e));
        }
        assert_eq!(HookEvent::ALL.iter().filter(|e| e.is_read_side()).count(), 3);
    }

    #[test]
    fn git_branch_from_head_and_worktree_files() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(git_branch(&repo.join("src/deep")).as_deref(), Some("feature/x"));
        let wt = dir.path().join("wt");
        fs::create_dir_all(dir.path().join("gitdirs/wt")).unwrap();
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join(".git"), "gitdir: ../gitdirs/wt\n").unwrap();
        fs::write(dir.path().join("gitdirs/wt/HEAD"), "ref: refs/heads/integration\n").unwrap();
        assert_eq!(git_branch(&wt).as_deref(), Some("integration"));
        fs::write(repo.join(".git/HEAD"), "0123456789abcdef\n").unwrap();
        assert_eq!(git_branch(&repo), None, "detached");
    }

    #[test]
    fn unsynced_spool_is_pending_until_a_writer_drains_it() {
        use crate::storage::event::{RankingServed, ServedCandidate};
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let key = SessionKey::new("claude", "s1");
        let candidate = |id: &str, injected| ServedCandidate {
            memory_id: crate::base::ids::MemoryId(id.into()),
            injected,
            ..ServedCandidate::default()
        };
        let served = Event::new(
            Ts(1_000),
            "t",
            Some(key.clone()),
            Body::RankingServed(RankingServed {
                ranking_id: "rk_1".into(),
                trigger: "prompt".into(),
                candidates: vec![candidate("mem_a", true), candidate("mem_b", false)],
                ..RankingServed::default()
            }),
        );
        assert!(!spool_pending(&paths));
        spool_unsynced(&paths, std::slice::from_ref(&served)).unwrap();
        assert!(spool_pending(&paths));
        let pending = pending_rankings(&paths).unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].ranking_id, "rk_1");
        assert_eq!(pending[0].session.as_ref(), Some(&key));
        assert_eq!(pending[0].injected, [crate::base::ids::MemoryId("mem_a".into())]);
        // A half-written file (hidden temporary name) is never read.
        fs::write(spool_dir(&paths).join(".x.jsonl.1.0.tmp"), b"{").unwrap();
        assert_eq!(pending_rankings(&paths).unwrap().len(), 1);

        let mut j = crate::projection::open(&paths, "t").unwrap();
        assert_eq!(drain_spool(&mut j).unwrap(), 1);
        assert!(!spool_pending(&paths));
        assert!(pending_rankings(&paths).unwrap().is_empty());
        let rankings: i64 = j.store().conn().query_row("SELECT COUNT(*) FROM rankings", [], |r| r.get(0)).unwrap();
        assert_eq!(rankings, 1, "applied before the file went away");
        assert_eq!(drain_spool(&mut j).unwrap(), 0);
    }

    #[test]
    fn busy_lock_spools_and_the_next_writer_drains() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let key = SessionKey::new("claude", "s1");
        let ended = |ts| {
            Event::new(Ts(ts), "t", Some(key.clone()), Body::SessionEnded(SessionEnded { reason: "other".into() }))
        };
        let holder = FileLock::exclusive(&{
            fs::create_dir_all(paths.tapes()).unwrap();
            paths.tapes().join("LOCK")
        })
        .unwrap();
        let got = record(&paths, "t", &[ended(1_000)], Duration::from_millis(20), crate::projection::apply).unwrap();
        assert!(matches!(got, Recorded::Spooled(_)));
        drop(holder);
        let got = record(&paths, "t", &[ended(2_000)], Duration::from_millis(20), crate::projection::apply).unwrap();
        assert_eq!(got, Recorded::Applied);
        let j = crate::projection::open(&paths, "t").unwrap();
        assert_eq!(j.tape().lock().unwrap().last_lsn(), 2, "the spooled event was appended first");
        assert_eq!(fs::read_dir(spool_dir(&paths)).unwrap().count(), 0);
        let ended_ms: i64 = j
            .store()
            .conn()
            .query_row("SELECT ended_ms FROM sessions WHERE session_key = 'claude:s1'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ended_ms, 2_000);
    }
}
