//! `engram-scorer hook session-start | user-prompt-submit | pre-tool-use`:
//! the read-side hooks of Claude Code and Codex.
//!
//! One process per hook call: read the hook JSON on stdin, build the query
//! of the moment (session start: the session context of the project from the
//! projection; prompt: the prompt; tool: the tool and its salient input),
//! rank with the serving model, record what was served (`session.started`
//! at session start, `ranking.served` always, `fts.hits` at prompts) and print
//! `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`, or
//! nothing when no memory is injected. Before an edit, a "why this code
//! exists" note may come first ([`shared::domain::provenance::note`]), from the same
//! budget. The text is bounded by
//! `injection.max_chars` and memories already shown in the session are
//! never repeated (see [`shared::domain::injection`]).
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
use shared::domain::injection::{self, ServeRequest, SessionContext};
use shared::storage::event::{Body, Event, FtsHits, Meta, SessionStarted, context_reset, trigger};
use shared::storage::store::Store;

use crate::error::{Error, Result};
use crate::native::writer_name;

/// Largest hook input read (a Write tool's input carries the whole file).
const MAX_INPUT: usize = 32 << 20;
/// BM25 hits of a prompt recorded as its `fts.hits`.
const FTS_HITS: u32 = 10;
/// Tools before which nothing is injected: Engram's own (the agent is already
/// asking memory) and bookkeeping tools.
fn skipped_tool(name: &str) -> bool {
    name.starts_with("mcp__engram__") || matches!(name, "TodoWrite" | "update_plan")
}

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
    let mut config = Config::load(&paths.config()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "invalid configuration; using the defaults");
        Config::default()
    });
    // The project is detected from the working directory at every call (a
    // few system calls): the session may have moved, and the projection may
    // not hold this session's start yet.
    let env = input.env(&shared::domain::env::DetectOptions::from_env(&config.env, event == HookEvent::SessionStart));
    let project = env.as_ref().map(|e| e.project.clone());
    // A session start on an emptied context: a compaction, or a clear.
    let restart = event == HookEvent::SessionStart && matches!(input.source.as_deref(), Some("compact" | "clear"));
    let (trigger, query, branch, read_only) = match event {
        HookEvent::SessionStart => (trigger::SESSION_START, None, input.cwd.as_deref().map(Path::new), false),
        HookEvent::UserPromptSubmit => match input.prompt.as_deref().map(str::trim) {
            Some(p) if !p.is_empty() => (trigger::PROMPT, Some(p.to_owned()), None, false),
            _ => return Ok(HookOutcome::default()),
        },
        HookEvent::PreToolUse => match input.tool_name.as_deref() {
            Some(t) if !skipped_tool(t) && !config.env.skips_tool(t) => (
                trigger::TOOL,
                Some(injection::tool_query(t, &input.tool_input)),
                None,
                injection::read_only_tool(t, &input.tool_input),
            ),
            _ => return Ok(HookOutcome::default()),
        },
        _ => unreachable!("checked above"),
    };
    let branch = branch.and_then(shared::domain::hook::git_branch);
    phases.lap("input");
    // The projection as it is: no tape lock, no catch-up (the recorder
    // catches up when it appends).
    let store = Store::open(&paths.db())?;
    shared::domain::hook::tune_connection(store.conn());
    phases.lap("open");
    // Read before the ranking's snapshot: see `shared::domain::hook::pending`.
    let pending = shared::domain::hook::pending(paths)?;
    // Just before this hook's own ranking, so that what it injects is in the new context.
    let own_reset = restart.then_some(now.0 - 1);
    let context_reset_ms = pending.reset_of(session.as_ref()).max(own_reset);
    phases.lap("pending");
    let query = match query {
        Some(q) => q,
        None => {
            let mut ctx = match (&session, restart) {
                (Some(key), true) => {
                    SessionContext::load_restart(&store, project.clone(), input.cwd.clone(), branch.clone(), key)?
                }
                _ => {
                    SessionContext::load(&store, project.clone(), input.cwd.clone(), branch.clone(), session.as_ref())?
                }
            };
            ctx.name = env.as_ref().map(|e| e.name.clone());
            ctx.tags = env.as_ref().map(|e| e.tags.clone()).unwrap_or_default();
            ctx.query()
        }
    };
    let note = if event == HookEvent::PreToolUse {
        provenance_note(&store, session.as_ref(), &input, &mut config)
    } else {
        None
    };
    let model = injection::load_model(paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot load the serving model; ranking with the baseline only");
        None
    });
    let tz = injection::time_zone(&config);
    let status_line = event == HookEvent::SessionStart && {
        let state = shared::domain::rank::PredictorState::load(&store, &config.predictor)?;
        injection::status_is_news(&store, &state, session.as_ref())?
    };
    phases.lap("query+model");
    // Seed 004's memory model: what it adds is counted against the budget.
    let extra = shared::domain::knowledge::prompt::for_hook(
        &store,
        &config,
        event.name(),
        session.as_ref(),
        project.as_deref(),
        &query,
        input.tool_name.as_deref().unwrap_or_default(),
        &input.tool_input,
        now,
    )
    .unwrap_or_else(|e| {
        tracing::warn!(error = %e, "seed 004 additions failed; serving memories only");
        shared::domain::knowledge::prompt::Notes::default()
    });
    let config = extra.within_budget(config);
    phases.lap("knowledge");
    let served = injection::serve(
        &store,
        &config,
        model.as_ref().map(injection::LoadedModel::serving),
        &tz,
        &ServeRequest {
            trigger,
            query: &query,
            session: session.as_ref(),
            project: project.as_deref(),
            stack: env.as_ref().map(|e| e.stack.as_slice()),
            now,
            status_line,
            explore_draw: rand::random::<f32>(),
            unapplied: &pending.rankings,
            env: env.as_ref(),
            context_reset_ms,
            restart,
            read_only,
        },
    )?;
    phases.lap("rank");
    if let Some(&(_, ms)) = phases.laps.last() {
        shared::base::telemetry::latency::note(
            format!("score.{trigger}"),
            std::time::Duration::from_secs_f64(ms / 1e3),
            true,
        );
    }

    let writer = writer_name();
    let mut events = Vec::new();
    if event == HookEvent::SessionStart
        && let Some(key) = &session
    {
        events.push(Event::new(
            now,
            &writer,
            Some(key.clone()),
            Body::SessionStarted(SessionStarted {
                harness: harness.to_owned(),
                harness_session_id: key.harness_id().to_owned(),
                project: project.clone(),
                cwd: input.cwd.clone(),
                git_branch: branch,
                model: input.model.clone(),
                source_path: input.transcript_path.clone(),
                ..SessionStarted::default()
            }),
        ));
        if let Some(env) = env {
            events.push(Event::new(now, &writer, Some(key.clone()), Body::EnvDetected(env)));
        }
    }
    if let (Some(at), Some(key)) = (own_reset, &session) {
        events.push(Event::new(
            Ts(at),
            &writer,
            Some(key.clone()),
            Body::Meta(Meta {
                label: context_reset::CONTEXT_RESET.to_owned(),
                text: input.source.clone(),
                ..Meta::default()
            }),
        ));
    }
    events.extend(extra.events.iter().map(|b| Event::new(now, &writer, session.clone(), b.clone())));
    let ranking_id = served.ranking.ranking_id.clone();
    let fts: Vec<_> = served
        .ranking
        .items
        .iter()
        .filter(|it| it.memory.signals.bm25_rank.is_some_and(|r| r <= FTS_HITS))
        .map(|it| it.memory.id.clone())
        .collect();
    if !served.ranking.served.candidates.is_empty() {
        events.push(Event::new(now, &writer, session.clone(), Body::RankingServed(served.ranking.served)));
    }
    if event == HookEvent::UserPromptSubmit && !fts.is_empty() {
        events.push(Event::new(
            now,
            &writer,
            session.clone(),
            Body::FtsHits(FtsHits { ranking_id: Some(ranking_id), memory_ids: fts }),
        ));
    }
    if let Some((n, text)) = &note {
        let body = Body::ProvenanceNoted(shared::storage::event::ProvenanceNoted {
            source_session: n.source.clone(),
            file: n.file.clone(),
            confidence: n.confidence,
            chars: u32::try_from(text.chars().count()).unwrap_or(u32::MAX),
        });
        events.push(Event::new(now, &writer, session.clone(), body));
    }
    let mut recorder_started = false;
    if !events.is_empty() {
        shared::domain::hook::spool_unsynced(paths, &events)?;
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
    tracing::debug!(event = event.name(), injected = served.injected.len(), phases_ms = ?phases.laps, "hook served");
    let context = shared::domain::knowledge::prompt::join_context(&extra.text, served.context);
    let context = match (note.map(|(_, text)| text), context) {
        (Some(n), Some(c)) => Some(format!("{n}\n{c}")),
        (n, c) => n.or(c),
    };
    let stdout = context.map(|text| output(event, &text));
    Ok(HookOutcome { stdout, injected: served.injected.len(), recorder_started })
}

/// Before an edit, the "why this code exists" note (provenance, seed 003;
/// see [`shared::domain::provenance::note`]), framed, with the injection budget
/// lowered by its size so that note and memories together stay within
/// `injection.max_chars`. `None` (logged on error) when there is nothing
/// strong to say or no room.
fn provenance_note(
    store: &Store,
    session: Option<&shared::base::ids::SessionKey>,
    input: &HookInput,
    config: &mut Config,
) -> Option<(shared::domain::provenance::note::Note, String)> {
    use shared::storage::event::{INJECTION_CLOSE, INJECTION_OPEN};
    let tool = input.tool_name.as_deref()?;
    let note = shared::domain::provenance::note::note(store, session, tool, &input.tool_input, input.cwd.as_deref())
        .inspect_err(|e| tracing::warn!(error = %e, "no provenance note: explain failed"))
        .ok()??;
    let clean = note.text.replace(INJECTION_CLOSE, "").replace(INJECTION_OPEN, "");
    let text = format!("{INJECTION_OPEN}\n{clean}\n{INJECTION_CLOSE}");
    let room = text.chars().count() + 1;
    let inj = &mut config.injection;
    if room * 2 > inj.max_chars {
        return None;
    }
    inj.max_chars -= room;
    inj.budget_chars = inj.budget_chars.saturating_sub(room);
    Some((note, text))
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
