//! `engram-scorer hook session-start | user-prompt-submit | pre-tool-use`:
//! the read-side hooks of Claude Code and Codex.
//!
//! One process per hook call: read the hook JSON on stdin, detect the
//! environment, open the projection as it is, and ask the read side's
//! orchestrator ([`shared::domain::moment::answer`]) what reaches the agent
//! at this moment and which events record it; then spool those events and
//! print `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`,
//! or nothing when nothing is said. `engram-scorer context` and quickstart
//! show the same answer without recording it.
//!
//! **Recording off the critical path.** A hook never takes the tape lock and
//! never waits for a disk sync. It reads the projection as it is, writes its
//! events to the hooks' spool without syncing them
//! ([`shared::domain::hook::spool_unsynced`]) and starts the recorder,
//! `engram-scorer hook record` ([`recorder`]): one detached process at a time
//! (lock `hooks/record.lock`), which appends everything spooled through the
//! journal (tape append with fsync, then the projection) and exits when the
//! spool is empty. A ranking still in the spool is seen by every later hook
//! ([`shared::domain::hook::pending_rankings`], passed to
//! [`shared::domain::rank::rank_after`]): its memories count as shown in its session,
//! so two prompts in quick succession never repeat one. What this trades
//! (docs/decisions.md, "Durability"): when the hook exits its events are in a
//! file, not yet synced; a crash of the machine before the recorder's append
//! (milliseconds later) can lose them. If the recorder cannot start or dies,
//! the spool waits for the next writer (any hook's recorder, a write-side
//! hook, the ingestion worker).
//!
//! With `ENGRAM_LOG=scorer=debug`, every call logs the time of its phases
//! (input, open, pending, query+model, rank, spool, recorder, close) to the
//! hooks log.
//!
//! A hook never breaks the agent: [`main_entry`] turns every error, and
//! every panic, into an entry in `logs/hooks.log`, no output and exit 0.
//! What is printed is exactly what was spooled: if spooling fails nothing is
//! printed.

use std::path::Path;
use std::time::Instant;

use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::hook::{HookEvent, HookInput};
use shared::domain::injection;
use shared::domain::moment::{self, Moment};
use shared::storage::store::Store;

use crate::error::{Error, Result};
use crate::native::writer_name;

/// Largest hook input read (a Write tool's input carries the whole file).
const MAX_INPUT: usize = 32 << 20;

/// What one hook call produced.
#[derive(Debug, Default)]
pub struct HookOutcome {
    /// The line to print on stdout, if anything is injected.
    pub stdout: Option<String>,
    /// Memories injected.
    pub injected: usize,
    /// A recorder was started for the spooled events (false when one was
    /// already running, or there was nothing to record).
    pub recorder_started: bool,
}

/// Time spent in each phase of a hook call, for the debug log.
#[derive(Debug)]
struct Phases {
    last: Instant,
    laps: Vec<(&'static str, f64)>,
}

impl Phases {
    fn start() -> Phases {
        Phases { last: Instant::now(), laps: Vec::with_capacity(8) }
    }

    /// Ends the phase `name` now.
    fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.laps.push((name, (now - self.last).as_secs_f64() * 1e3));
        self.last = now;
    }
}

/// Handles one read-side hook call. `harness` is the `--harness` given by
/// install, if any; `exe` is the binary started as the recorder (`None`:
/// the events stay spooled for the next writer).
pub fn run(
    event: HookEvent,
    harness: Option<&str>,
    input: &[u8],
    paths: &Paths,
    now: Ts,
    exe: Option<&Path>,
) -> Result<HookOutcome> {
    if !event.is_read_side() {
        return Err(Error::params("event", format!("{} is handled by engram-ingestor hook", event.arg())));
    }
    let mut phases = Phases::start();
    let input = HookInput::parse(input).map_err(|why| Error::params("stdin", why))?;
    let harness = input.harness(harness);
    let session = input.session_key(harness);
    let config = Config::load(&paths.config()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "invalid configuration; using the defaults");
        Config::default()
    });
    let kind = match event {
        HookEvent::SessionStart => moment::Kind::SessionStart {
            // A start on an emptied context: a compaction, or a clear.
            restart: input.source.as_deref().filter(|s| matches!(*s, "compact" | "clear")),
        },
        HookEvent::UserPromptSubmit => moment::Kind::Prompt(input.prompt.as_deref().unwrap_or_default()),
        HookEvent::PreToolUse => {
            moment::Kind::Tool { name: input.tool_name.as_deref().unwrap_or_default(), input: &input.tool_input }
        }
        _ => unreachable!("checked above"),
    };
    let quiet = match kind {
        moment::Kind::Prompt(p) => p.trim().is_empty(),
        moment::Kind::Tool { name, .. } => name.is_empty() || moment::skipped_tool(name) || config.env.skips_tool(name),
        moment::Kind::SessionStart { .. } => false,
    };
    if quiet {
        return Ok(HookOutcome::default());
    }
    // The project is detected from the working directory at every call (a
    // few system calls): the session may have moved, and the projection may
    // not hold this session's start yet.
    let env = input.env(&shared::domain::env::DetectOptions::from_env(&config.env, event == HookEvent::SessionStart));
    let branch = match event {
        HookEvent::SessionStart => input.cwd.as_deref().map(Path::new).and_then(shared::domain::hook::git_branch),
        _ => None,
    };
    phases.lap("input");
    // The projection as it is: no tape lock, no catch-up (the recorder
    // catches up when it appends).
    let store = Store::open(&paths.db())?;
    shared::domain::hook::tune_connection(store.conn());
    phases.lap("open");
    // Read before the ranking's snapshot: see `shared::domain::hook::pending`.
    let pending = shared::domain::hook::pending(paths)?;
    phases.lap("pending");
    let model = injection::load_model(paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot load the serving model; ranking with the baseline only");
        None
    });
    phases.lap("model");
    let writer = writer_name();
    let answer = moment::answer(
        &store,
        &config,
        model.as_ref().map(injection::LoadedModel::serving),
        &writer,
        &Moment {
            kind,
            session: session.as_ref(),
            harness,
            cwd: input.cwd.as_deref(),
            env: env.as_ref(),
            branch,
            model: input.model.as_deref(),
            transcript: input.transcript_path.as_deref(),
            now,
            explore_draw: rand::random::<f32>(),
            unapplied: &pending.rankings,
            pending_reset_ms: pending.reset_of(session.as_ref()),
        },
    )?;
    phases.lap("answer");
    if let Some(&(_, ms)) = phases.laps.last() {
        shared::base::telemetry::latency::note(
            format!("score.{}", answer.trigger),
            std::time::Duration::from_secs_f64(ms / 1e3),
            true,
        );
    }
    let mut recorder_started = false;
    if !answer.events.is_empty() {
        shared::domain::hook::spool_unsynced(paths, &answer.events)?;
        phases.lap("spool");
        if let Some(exe) = exe {
            let lock = shared::domain::hook::recorder_lock(paths);
            match shared::domain::hook::start_detached(paths, &lock, exe, &["hook", RECORD]) {
                Ok(started) => recorder_started = started,
                Err(e) => tracing::warn!(error = %e, "cannot start the recorder; the events wait in the spool"),
            }
        }
        phases.lap("recorder");
    }
    drop(store);
    phases.lap("close");
    let injected = answer.injected();
    tracing::debug!(event = event.name(), injected, phases_ms = ?phases.laps, "hook served");
    let stdout = answer.context.map(|text| output(event, &text));
    Ok(HookOutcome { stdout, injected, recorder_started })
}

/// The internal `engram-scorer hook` argument of the recorder.
pub const RECORD: &str = "record";

/// The recorder (see the module docs): appends everything spooled, then
/// releases the lock it inherited and looks once more, so that events
/// spooled while it held the lock (their hooks did not start a recorder) are
/// never stranded. Returns the events appended.
pub fn recorder(paths: &Paths) -> Result<usize> {
    let held = shared::domain::hook::inherited_lock();
    // Default options: this process is off every critical path, so it may
    // seal a full segment, and its connection checkpoints the WAL when it
    // closes as the last one (hooks' connections never do).
    let mut journal = shared::projection::open(paths, &writer_name())?;
    let mut appended = 0;
    loop {
        appended += shared::domain::hook::drain_spool(&mut journal)?;
        let Some(lock) = &held else { break };
        let _ = lock.unlock();
        if !shared::domain::hook::spool_pending(paths) || lock.try_lock().is_err() {
            break;
        }
    }
    Ok(appended)
}

/// `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`.
pub fn output(event: HookEvent, context: &str) -> String {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Specific<'a> {
        hook_event_name: &'a str,
        additional_context: &'a str,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Output<'a> {
        hook_specific_output: Specific<'a>,
    }
    let out = Output { hook_specific_output: Specific { hook_event_name: event.name(), additional_context: context } };
    serde_json::to_string(&out).unwrap_or_default()
}

/// The whole `engram-scorer hook EVENT` process: logging to the hooks log,
/// stdin, [`run`] under `catch_unwind`, stdout. Always exits 0.
pub fn main_entry(event: HookEvent, harness: Option<&str>) {
    let done = shared::domain::hook::guarded(event.arg(), MAX_INPUT, |input, paths| {
        let exe = std::env::current_exe()
            .inspect_err(|e| tracing::warn!(error = %e, "cannot find this executable to start the recorder"))
            .ok();
        run(event, harness, input, paths, Ts::now(), exe.as_deref())
    });
    if let Some(line) = done.and_then(|o| o.stdout) {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            tracing::warn!(error = %e, "cannot write the hook output");
        }
    }
}

/// The `engram-scorer hook record` process: logs to the hooks log, never
/// fails (errors and panics are logged; what is not appended stays spooled).
pub fn recorder_entry() {
    let Ok(paths) = Paths::from_env() else { return };
    shared::base::logging::init_file(&shared::domain::hook::log_file(&paths), "warn");
    match std::panic::catch_unwind(|| recorder(&paths)) {
        Ok(Ok(n)) => tracing::debug!(events = n, "spooled hook events recorded"),
        Ok(Err(e)) => tracing::error!(error = %e, "the hook recorder failed; the events stay spooled"),
        Err(panic) => {
            tracing::error!(panic = %shared::base::logging::panic_message(panic.as_ref()), "the hook recorder panicked")
        }
    }
}
