//! `engram-scorer hook session-start | user-prompt-submit | pre-tool-use`:
//! the read-side hooks of Claude Code and Codex.
//!
//! One process per hook call: read the hook JSON on stdin, build the query
//! of the moment (session start: the session context of the project from the
//! projection; prompt: the prompt; tool: the tool and its salient input),
//! rank with the serving model, record what was served (`session.started`
//! at session start, `ranking.served` always, `fts.hits` at prompts) and print
//! `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`, or
//! nothing when no memory is injected. The text is bounded by
//! `injection.max_chars` and memories already shown in the session are
//! never repeated (see [`shared::injection`]).
//!
//! A hook never breaks the agent: [`main_entry`] turns every error, and
//! every panic, into an entry in `logs/hooks.log`, no output and exit 0.
//! What is printed is exactly what was recorded: if recording fails nothing
//! is printed.

use std::path::Path;
use std::time::{Duration, Instant};

use shared::config::Config;
use shared::event::{Body, Event, FtsHits, SessionStarted, trigger};
use shared::hook::{HookEvent, HookInput};
use shared::injection::{self, ServeRequest, SessionContext};
use shared::paths::Paths;
use shared::store::Store;
use shared::time::Ts;

use crate::error::{Error, Result};
use crate::native::writer_name;

/// Largest hook input read (a Write tool's input carries the whole file).
const MAX_INPUT: usize = 32 << 20;
/// How long a read-side hook waits for the tape lock before spooling.
const LOCK_WAIT: Duration = Duration::from_millis(300);
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
    /// Events spooled instead of appended (the tape lock was busy).
    pub spooled: bool,
}

/// Handles one read-side hook call. `harness` is the `--harness` given by
/// install, if any.
pub fn run(event: HookEvent, harness: Option<&str>, input: &[u8], paths: &Paths, now: Ts) -> Result<HookOutcome> {
    if !event.is_read_side() {
        return Err(Error::params("event", format!("{} is handled by engram-ingestor hook", event.arg())));
    }
    let started = Instant::now();
    let input = HookInput::parse(input).map_err(|why| Error::params("stdin", why))?;
    let harness = input.harness(harness);
    let session = input.session_key(harness);
    let project = input.project();
    let config = Config::load(&paths.config()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "invalid configuration; using the defaults");
        Config::default()
    });
    let (trigger, query, branch) = match event {
        HookEvent::SessionStart => (trigger::SESSION_START, None, input.cwd.as_deref().map(Path::new)),
        HookEvent::UserPromptSubmit => match input.prompt.as_deref().map(str::trim) {
            Some(p) if !p.is_empty() => (trigger::PROMPT, Some(p.to_owned()), None),
            _ => return Ok(HookOutcome::default()),
        },
        HookEvent::PreToolUse => match input.tool_name.as_deref() {
            Some(t) if !skipped_tool(t) => (trigger::TOOL, Some(injection::tool_query(t, &input.tool_input)), None),
            _ => return Ok(HookOutcome::default()),
        },
        _ => unreachable!("checked above"),
    };
    let branch = branch.and_then(shared::hook::git_branch);
    // With the tape lock free, one journal serves both the ranking and the
    // append; otherwise rank from the projection and spool the events.
    let writer = writer_name();
    let mut journal = if shared::hook::tape_lock_free(paths, LOCK_WAIT)? {
        Some(shared::hook::open_journal(paths, &writer)?)
    } else {
        None
    };
    let read_only;
    let store: &Store = match &journal {
        Some(j) => j.store(),
        None => {
            read_only = Store::open(&paths.db())?;
            shared::hook::tune_connection(read_only.conn());
            &read_only
        }
    };
    let query = match query {
        Some(q) => q,
        None => {
            SessionContext::load(store, project.clone(), input.cwd.clone(), branch.clone(), session.as_ref())?.query()
        }
    };
    let model = injection::load_model(paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot load the serving model; ranking with the baseline only");
        None
    });
    let tz = injection::time_zone(&config);
    let served = injection::serve(
        store,
        &config,
        model.as_ref().map(injection::LoadedModel::serving),
        &tz,
        &ServeRequest {
            trigger,
            query: &query,
            session: session.as_ref(),
            project: project.as_deref(),
            now,
            status_line: event == HookEvent::SessionStart,
            explore_draw: rand::random::<f32>(),
        },
    )?;
    let ranked = started.elapsed();

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
    }
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
    let spooled = match journal.as_mut() {
        Some(j) => {
            shared::hook::append_with_spool(j, &events)?;
            shared::hook::finish_connection(j.store());
            false
        }
        None => {
            shared::hook::spool(paths, &events)?;
            true
        }
    };
    tracing::debug!(
        event = event.name(),
        injected = served.injected.len(),
        rank_ms = ranked.as_secs_f64() * 1e3,
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        "hook served"
    );
    let stdout = served.context.map(|text| output(event, &text));
    Ok(HookOutcome { stdout, injected: served.injected.len(), spooled })
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
    let done =
        shared::hook::guarded(event.arg(), MAX_INPUT, |input, paths| run(event, harness, input, paths, Ts::now()));
    if let Some(line) = done.and_then(|o| o.stdout) {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            tracing::warn!(error = %e, "cannot write the hook output");
        }
    }
}
