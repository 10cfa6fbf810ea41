//! The read side's one orchestrator: what reaches the agent at a moment of
//! a session (its start, a prompt, a tool call about to run), and the events
//! that record it.
//!
//! Every front-end that shows what an agent would get calls [`answer`]: the
//! read-side hooks (which spool [`Answer::events`] and print
//! [`Answer::context`]), `engram-scorer context` and quickstart's preview
//! (which show the same text without recording it). So a preview is exactly
//! what the agent gets.
//!
//! The steps, in order: the moment's query ([`Kind::query`]: the session's
//! context text at its start, the prompt, or the tool and its salient
//! input); the "why this code exists" note before an edit
//! ([`crate::domain::provenance::note`]); the knowledge model's notes (a
//! conflict to surface, a topic shift, a checkpoint:
//! [`crate::domain::knowledge::prompt`]); the ranking with what is left of
//! the budget ([`injection::serve`]), where a memory that warns against
//! what a tool call is about to do comes first, as a reminder
//! ([`injection::remind`]); then the events, in the order they are appended.

pub mod preview;

use serde_json::Value;

use crate::base::config::Config;
use crate::base::error::Result;
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::domain::injection::{self, ServeRequest, Served, SessionContext};
use crate::domain::knowledge::prompt::{self, Notes};
use crate::domain::provenance::note::Note;
use crate::domain::rank::{self, ServingModel};
use crate::storage::event::{
    Body, EnvDetected, Event, FtsHits, INJECTION_CLOSE, INJECTION_OPEN, Meta, ProvenanceNoted, SessionStarted,
    context_reset, trigger,
};
use crate::storage::store::Store;

/// BM25 hits of a prompt recorded as its `fts.hits`.
const FTS_HITS: u32 = 10;

/// What happens at the moment.
#[derive(Clone, Copy, Debug)]
pub enum Kind<'a> {
    /// The session starts; `restart` names what emptied its context
    /// (`compact`, `clear`) when it starts again after that.
    SessionStart {
        /// `compact` or `clear` for a start on an emptied context.
        restart: Option<&'a str>,
    },
    /// The user sent a prompt.
    Prompt(&'a str),
    /// The agent is about to call a tool.
    Tool {
        /// The tool's name.
        name: &'a str,
        /// Its input.
        input: &'a Value,
    },
}

impl Kind<'_> {
    /// The hook event this moment is (`SessionStart`, …).
    pub fn hook_event(&self) -> &'static str {
        match self {
            Kind::SessionStart { .. } => "SessionStart",
            Kind::Prompt(_) => "UserPromptSubmit",
            Kind::Tool { .. } => "PreToolUse",
        }
    }

    /// The `ranking.served` trigger.
    pub fn trigger(&self) -> &'static str {
        match self {
            Kind::SessionStart { .. } => trigger::SESSION_START,
            Kind::Prompt(_) => trigger::PROMPT,
            Kind::Tool { .. } => trigger::TOOL,
        }
    }

    fn restart(&self) -> Option<&str> {
        match self {
            Kind::SessionStart { restart } => *restart,
            _ => None,
        }
    }
}

/// Tools before which nothing is injected: Engram's own (the agent is
/// already asking memory) and bookkeeping ones.
pub fn skipped_tool(name: &str) -> bool {
    name.starts_with("mcp__engram__") || matches!(name, "TodoWrite" | "update_plan")
}

/// One moment of a session, as the read side sees it.
#[derive(Clone, Debug)]
pub struct Moment<'a> {
    /// What happens.
    pub kind: Kind<'a>,
    /// The session, when known.
    pub session: Option<&'a SessionKey>,
    /// The harness (`claude`, `codex`, …), for a session start's record.
    pub harness: &'a str,
    /// The working directory.
    pub cwd: Option<&'a str>,
    /// The environment detected for it now.
    pub env: Option<&'a EnvDetected>,
    /// The git branch (read at session start).
    pub branch: Option<String>,
    /// The agent's model, when the harness says.
    pub model: Option<&'a str>,
    /// The transcript the harness writes, when it says.
    pub transcript: Option<&'a str>,
    /// Now.
    pub now: Ts,
    /// Uniform draw in `[0, 1)` for exploration (1: never explore).
    pub explore_draw: f32,
    /// Rankings served but not yet in the projection (see
    /// [`crate::domain::hook::pending`]).
    pub unapplied: &'a [rank::Unapplied],
    /// The latest reset of the session's context the projection may not
    /// know yet (ms).
    pub pending_reset_ms: Option<i64>,
}

impl<'a> Moment<'a> {
    /// A moment of `kind` at `now`, outside any session, environment or
    /// pending ranking (previews fill in what they know).
    pub fn new(kind: Kind<'a>, now: Ts) -> Moment<'a> {
        Moment {
            kind,
            session: None,
            harness: "",
            cwd: None,
            env: None,
            branch: None,
            model: None,
            transcript: None,
            now,
            explore_draw: 1.0,
            unapplied: &[],
            pending_reset_ms: None,
        }
    }

    fn project(&self) -> Option<&'a str> {
        self.env.map(|e| e.project.as_str())
    }
}

/// What reaches the agent at a moment, and how it is recorded.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The `ranking.served` trigger.
    pub trigger: &'static str,
    /// The query the memories were ranked for.
    pub query: String,
    /// The session's context the query was built from, at a session start.
    pub session_context: Option<SessionContext>,
    /// The ranking, and the memories' part of the text.
    pub served: Option<Served>,
    /// The knowledge model's notes (counted in the budget).
    pub notes: Notes,
    /// The provenance note before an edit, framed.
    pub provenance: Option<(Note, String)>,
    /// The whole text for the agent; `None` when nothing is said.
    pub context: Option<String>,
    /// The events to append, in order, stamped with the moment's time.
    pub events: Vec<Event>,
}

impl Answer {
    fn nothing(trigger: &'static str) -> Answer {
        Answer {
            trigger,
            query: String::new(),
            session_context: None,
            served: None,
            notes: Notes::default(),
            provenance: None,
            context: None,
            events: Vec::new(),
        }
    }

    /// Memories injected.
    pub fn injected(&self) -> usize {
        self.served.as_ref().map_or(0, |s| s.injected.len())
    }
}

/// Answers `moment` (see the module docs). `writer` names the events'
/// writer. Nothing is written: the caller records [`Answer::events`].
pub fn answer(
    store: &Store,
    config: &Config,
    model: Option<ServingModel<'_>>,
    writer: &str,
    moment: &Moment<'_>,
) -> Result<Answer> {
    let trigger = moment.kind.trigger();
    let restart = moment.kind.restart().is_some();
    let mut session_context = None;
    let (query, read_only) = match moment.kind {
        Kind::SessionStart { .. } => {
            let ctx = session_context_of(store, moment)?;
            let query = ctx.query();
            session_context = Some(ctx);
            (query, false)
        }
        Kind::Prompt(p) if !p.trim().is_empty() => (p.trim().to_owned(), false),
        Kind::Tool { name, input } if !skipped_tool(name) && !config.env.skips_tool(name) => {
            (injection::tool_query(name, input), injection::read_only_tool(name, input))
        }
        _ => return Ok(Answer::nothing(trigger)),
    };
    // Just before this moment's own ranking, so that what it injects is in the new context.
    let own_reset = restart.then_some(moment.now.0 - 1);
    let context_reset_ms = moment.pending_reset_ms.max(own_reset);

    let mut config = config.clone();
    let provenance = match moment.kind {
        Kind::Tool { name, input } => provenance_note(store, moment, name, input, &mut config),
        _ => None,
    };
    let status_line = matches!(moment.kind, Kind::SessionStart { .. }) && {
        let state = rank::PredictorState::load(store, &config.predictor)?;
        injection::status_is_news(store, &state, moment.session)?
    };
    let (tool, tool_input) = match moment.kind {
        Kind::Tool { name, input } => (name, input),
        _ => ("", &Value::Null),
    };
    let notes = prompt::for_hook(
        store,
        &config,
        moment.kind.hook_event(),
        moment.session,
        moment.project(),
        &query,
        tool,
        tool_input,
        moment.now,
    )
    .unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the knowledge model's notes failed; serving memories only");
        Notes::default()
    });
    let config = notes.within_budget(config);
    let tz = injection::time_zone(&config);
    let call = match moment.kind {
        Kind::Tool { name, input } => Some(injection::remind::Call::of(name, input)),
        _ => None,
    };
    let served = injection::serve(
        store,
        &config,
        model,
        &tz,
        &ServeRequest {
            trigger,
            query: &query,
            session: moment.session,
            project: moment.project(),
            stack: moment.env.map(|e| e.stack.as_slice()),
            now: moment.now,
            status_line,
            explore_draw: moment.explore_draw,
            unapplied: moment.unapplied,
            env: moment.env,
            context_reset_ms,
            restart,
            read_only,
            call: call.as_ref(),
        },
    )?;
    let events = events(moment, writer, own_reset, &notes, &served, provenance.as_ref());
    let context = prompt::join_context(&notes.text, served.context.clone());
    let context = match (provenance.as_ref().map(|(_, text)| text.clone()), context) {
        (Some(n), Some(c)) => Some(format!("{n}\n{c}")),
        (n, c) => n.or(c),
    };
    Ok(Answer { trigger, query, session_context, served: Some(served), notes, provenance, context, events })
}

/// The session's context at its start (after a compaction or a clear: what
/// the session was doing).
fn session_context_of(store: &Store, moment: &Moment<'_>) -> Result<SessionContext> {
    let project = moment.project().map(str::to_owned);
    let cwd = moment.cwd.map(str::to_owned);
    let mut ctx = match (moment.session, moment.kind.restart()) {
        (Some(key), Some(_)) => SessionContext::load_restart(store, project, cwd, moment.branch.clone(), key)?,
        _ => SessionContext::load(store, project, cwd, moment.branch.clone(), moment.session)?,
    };
    ctx.name = moment.env.map(|e| e.name.clone());
    ctx.tags = moment.env.map(|e| e.tags.clone()).unwrap_or_default();
    Ok(ctx)
}

/// The events of an answer, in the order they are appended.
fn events(
    moment: &Moment<'_>,
    writer: &str,
    own_reset: Option<i64>,
    notes: &Notes,
    served: &Served,
    provenance: Option<&(Note, String)>,
) -> Vec<Event> {
    let (now, session) = (moment.now, moment.session);
    let mut out = Vec::new();
    if let (Kind::SessionStart { .. }, Some(key)) = (moment.kind, session) {
        out.push(Event::new(
            now,
            writer,
            Some(key.clone()),
            Body::SessionStarted(SessionStarted {
                harness: moment.harness.to_owned(),
                harness_session_id: key.harness_id().to_owned(),
                project: moment.project().map(str::to_owned),
                cwd: moment.cwd.map(str::to_owned),
                git_branch: moment.branch.clone(),
                model: moment.model.map(str::to_owned),
                source_path: moment.transcript.map(str::to_owned),
                ..SessionStarted::default()
            }),
        ));
        if let Some(env) = moment.env {
            out.push(Event::new(now, writer, Some(key.clone()), Body::EnvDetected(env.clone())));
        }
    }
    if let (Some(at), Some(key)) = (own_reset, session) {
        out.push(Event::new(
            Ts(at),
            writer,
            Some(key.clone()),
            Body::Meta(Meta {
                label: context_reset::CONTEXT_RESET.to_owned(),
                text: moment.kind.restart().map(str::to_owned),
                ..Meta::default()
            }),
        ));
    }
    out.extend(notes.events.iter().map(|b| Event::new(now, writer, session.cloned(), b.clone())));
    if !served.ranking.served.candidates.is_empty() {
        out.push(Event::new(now, writer, session.cloned(), Body::RankingServed(served.ranking.served.clone())));
    }
    if matches!(moment.kind, Kind::Prompt(_)) {
        let fts: Vec<_> = served
            .ranking
            .items
            .iter()
            .filter(|it| it.memory.signals.bm25_rank.is_some_and(|r| r <= FTS_HITS))
            .map(|it| it.memory.id.clone())
            .collect();
        if !fts.is_empty() {
            out.push(Event::new(
                now,
                writer,
                session.cloned(),
                Body::FtsHits(FtsHits { ranking_id: Some(served.ranking.ranking_id.clone()), memory_ids: fts }),
            ));
        }
    }
    if let Some((n, text)) = provenance {
        let body = Body::ProvenanceNoted(ProvenanceNoted {
            source_session: n.source.clone(),
            file: n.file.clone(),
            confidence: n.confidence,
            chars: u32::try_from(text.chars().count()).unwrap_or(u32::MAX),
        });
        out.push(Event::new(now, writer, session.cloned(), body));
    }
    out
}

/// Before an edit, the "why this code exists" note, framed, with the
/// injection budget lowered by its size so that note and memories together
/// stay within `injection.max_chars`. `None` (logged on error) when there is
/// nothing strong to say or no room.
fn provenance_note(
    store: &Store,
    moment: &Moment<'_>,
    tool: &str,
    input: &Value,
    config: &mut Config,
) -> Option<(Note, String)> {
    let note = crate::domain::provenance::note::note(store, moment.session, tool, input, moment.cwd)
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
