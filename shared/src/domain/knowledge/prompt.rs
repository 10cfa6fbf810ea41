//! What seed 004's memory model adds to the read-side hooks: at a prompt,
//! one staged conflict to resolve and the topic-shift decision
//! ([`at_prompt`]); before a tool, the automatic checkpoints
//! ([`before_tool`]).
//!
//! The hooks call these at their boundary: they get the text to put into
//! the agent's context (counted against the injection budget by the
//! caller) and the events to record with the rest of what they served.
//!
//! **Conflicts** are surfaced one at a time, oldest first, each at most
//! `knowledge.conflicts.max_surfaced_per_session` times in one session, with
//! seed 004's four choices and the `memory_resolve` call that applies one.
//! **Topic shifts**: `ask` suggests a stash; `trust` (with
//! `knowledge.topic.auto_stash`) stashes the thread before this prompt and
//! says how to bring it back; `ignore` says nothing (and is recorded only
//! when it answers an earlier suggestion, which the user thereby declined).

use std::fmt::Write as _;

use crate::base::config::Config;
use crate::base::error::Result;
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::domain::knowledge::apply::tier;
use crate::domain::knowledge::{buffer, checkpoint, conversation, preview, topic};
use crate::storage::event::{Body, ConflictSurfaced, TopicShift};
use crate::storage::store::Store;

/// Characters of a memory's text quoted in a conflict.
const QUOTE: usize = 300;

/// What the prompt hook adds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notes {
    /// Lines for the agent (empty: nothing to say).
    pub text: String,
    /// Events to record with the ranking.
    pub events: Vec<Body>,
    /// The topic-shift decision, if one was made.
    pub shift: Option<topic::Shift>,
}

impl Notes {
    /// Characters of the text.
    pub fn chars(&self) -> usize {
        self.text.chars().count()
    }
}

/// The conflict to surface now, if any, as text and its `knowledge.surfaced` body.
pub fn conflict_note(
    store: &Store,
    config: &Config,
    session: Option<&SessionKey>,
    project: Option<&str>,
) -> Result<Option<(String, Body)>> {
    if !config.knowledge.conflicts.enabled {
        return Ok(None);
    }
    let pending = buffer::pending_conflicts(store, project)?;
    let max = i64::from(config.knowledge.conflicts.max_surfaced_per_session.max(1));
    let mut chosen = None;
    for s in &pending {
        let shown = match session {
            Some(k) => buffer::surfaced_in(store, &s.id, k.as_str())?,
            None => 0,
        };
        if shown < max {
            chosen = Some(s);
            break;
        }
    }
    let Some(s) = chosen else { return Ok(None) };
    let mut text = String::new();
    let others = pending.len() - 1;
    let more = if others > 0 { format!(" ({others} more after this one)") } else { String::new() };
    let _ = writeln!(
        text,
        "Engram memory conflict to resolve{more}: a new memory is {:.0}% alike to one already stored.",
        s.similarity.unwrap_or(0.0) * 100.0
    );
    let _ = writeln!(text, "  new ({}, {}): \"{}\"", s.id, s.memory_type, preview(&s.content, QUOTE));
    if let (Some(e), Some(c)) = (&s.conflict_with, &s.conflict_content) {
        let _ = writeln!(text, "  existing ({e}): \"{}\"", preview(c, QUOTE));
    }
    let existing = s.conflict_with.as_deref().unwrap_or("");
    let _ = writeln!(
        text,
        "Ask the user (AskUserQuestion) which applies, then call memory_resolve(conflict_id=\"{}\", existing_id=\"{existing}\", action=…):",
        s.id
    );
    text.push_str(
        "  1. Same thing → merge   2. Completely new → keep_both   3. Replace old → replace   4. Don't save → skip",
    );
    Ok(Some((text, Body::ConflictSurfaced(ConflictSurfaced { stage_id: s.id.clone() }))))
}

/// The topic-shift decision for `prompt` in `session`, with its note and events.
pub fn shift_note(
    store: &Store,
    config: &Config,
    session: &SessionKey,
    project: Option<&str>,
    prompt: &str,
    now: Ts,
) -> Result<Option<(topic::Shift, String, Vec<Body>)>> {
    if !config.knowledge.topic.enabled {
        return Ok(None);
    }
    let Some(thread) = conversation::current(store, session)? else { return Ok(None) };
    shift_note_in(store, config, session, project, &thread, prompt, now)
}

/// [`shift_note`] against a thread already read (a replay of a recorded
/// session passes the thread as it stood at each prompt).
pub fn shift_note_in(
    store: &Store,
    config: &Config,
    session: &SessionKey,
    project: Option<&str>,
    thread: &conversation::Thread,
    prompt: &str,
    now: Ts,
) -> Result<Option<(topic::Shift, String, Vec<Body>)>> {
    let t = &config.knowledge.topic;
    if !t.enabled {
        return Ok(None);
    }
    let thresholds = topic::thresholds(store, config, project)?;
    let shift = topic::decide(thread, prompt, now.0, thresholds);
    let pending_suggestion: bool = store
        .conn()
        .query_row(
            "SELECT COUNT(*) > 0 FROM topic_shifts WHERE session_key = ?1 AND outcome = 'pending'",
            [session.as_str()],
            |r| r.get(0),
        )
        .map_err(|e| crate::base::error::Error::sqlite("read pending topic suggestions", e))?;
    if shift.tier == tier::IGNORE && !pending_suggestion {
        return Ok(None);
    }
    let mut events = Vec::new();
    let mut text = String::new();
    let mut stashed = None;
    let label = thread.label();
    if shift.tier == tier::TRUST && t.auto_stash && !thread.is_empty() {
        let (id, body) = conversation::stash_body(thread, None, true, Some(shift.score), Ts(now.0 - 1));
        let _ = write!(
            text,
            "Engram: new topic; \"{label}\" was stashed as {id} (memory_resume(conversation_id=\"{id}\") brings it back)."
        );
        events.push(body);
        stashed = Some(id);
    } else if shift.tier != tier::IGNORE {
        let _ = write!(
            text,
            "Engram: this prompt may start a new topic; to park \"{label}\", suggest /stash or \
             memory_stash(list=false, session_id=\"{session}\")."
        );
    }
    events.push(Body::TopicShift(TopicShift {
        score: shift.score,
        tier: if stashed.is_none() && shift.tier == tier::TRUST { tier::ASK } else { shift.tier }.to_owned(),
        signals: shift.signals.clone(),
        ask_threshold: shift.ask_threshold,
        trust_threshold: shift.trust_threshold,
        project: project.map(str::to_owned),
        conversation_id: stashed,
    }));
    Ok(Some((shift, text, events)))
}

/// Everything the prompt hook adds for `prompt` (see the module docs).
pub fn at_prompt(
    store: &Store,
    config: &Config,
    session: Option<&SessionKey>,
    project: Option<&str>,
    prompt: &str,
    now: Ts,
) -> Result<Notes> {
    let mut notes = Notes::default();
    if let Some(s) = session
        && let Some((shift, text, events)) = shift_note(store, config, s, project, prompt, now)?
    {
        notes.text.push_str(&text);
        notes.events.extend(events);
        notes.shift = Some(shift);
    }
    if let Some((text, body)) = conflict_note(store, config, session, project)? {
        if !notes.text.is_empty() {
            notes.text.push('\n');
        }
        notes.text.push_str(&text);
        notes.events.push(body);
    }
    Ok(notes)
}

/// The automatic checkpoints before a tool call: before a destructive
/// command, and the observation buffer's every N observations.
pub fn before_tool(
    store: &Store,
    config: &Config,
    session: Option<&SessionKey>,
    project: Option<&str>,
    tool: &str,
    input: &serde_json::Value,
    now: Ts,
) -> Result<Vec<Body>> {
    let Some(session) = session else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    if let Some(cmd) = checkpoint::shell_command(tool, input)
        && let Some(b) = checkpoint::before_command(store, config, session, project.map(str::to_owned), &cmd, now)?
    {
        out.push(b);
    }
    if out.is_empty()
        && let Some(b) = checkpoint::buffer_due(store, config, session, project.map(str::to_owned), now)?
    {
        out.push(b);
    }
    Ok(out)
}

/// `text` joined into the injected `context` (inside its frame), or a frame
/// of its own when nothing else is injected.
pub fn join_context(text: &str, context: Option<String>) -> Option<String> {
    use crate::storage::event::{INJECTION_CLOSE, INJECTION_OPEN};
    if text.is_empty() {
        return context;
    }
    Some(match context {
        Some(c) => match c.strip_prefix(INJECTION_OPEN) {
            Some(rest) => format!("{INJECTION_OPEN}\n{text}\n{}", rest.trim_start_matches('\n')),
            None => format!("{INJECTION_OPEN}\n{text}\n{INJECTION_CLOSE}\n{c}"),
        },
        None => format!("{INJECTION_OPEN}\n{text}\n{INJECTION_CLOSE}"),
    })
}

/// Stashed conversations to mention at session start (at most this many).
const START_STASHES: usize = 3;

/// At session start: the project's stashed conversations, newest first.
pub fn at_session_start(store: &Store, project: Option<&str>) -> Result<Notes> {
    let Some(project) = project else { return Ok(Notes::default()) };
    let filter = conversation::StashFilter {
        project: Some(project.to_owned()),
        limit: START_STASHES,
        ..conversation::StashFilter::default()
    };
    let stashed = conversation::list(store, &filter)?;
    if stashed.is_empty() {
        return Ok(Notes::default());
    }
    let mut text =
        String::from("Stashed conversations in this project (memory_resume(conversation_id) brings one back):");
    for c in &stashed {
        let _ = write!(text, "\n  {} \"{}\" (stashed {})", c.id, preview(&c.label, 80), c.stashed_at);
    }
    Ok(Notes { text, ..Notes::default() })
}

/// What seed 004 adds to the read-side hook `hook_event` (harness names:
/// `SessionStart`, `UserPromptSubmit`, `PreToolUse`); `query` is the prompt
/// at a prompt.
#[allow(clippy::too_many_arguments)]
pub fn for_hook(
    store: &Store,
    config: &Config,
    hook_event: &str,
    session: Option<&SessionKey>,
    project: Option<&str>,
    query: &str,
    tool: &str,
    tool_input: &serde_json::Value,
    now: Ts,
) -> Result<Notes> {
    match hook_event {
        "UserPromptSubmit" => at_prompt(store, config, session, project, query, now),
        "PreToolUse" => Ok(Notes {
            events: before_tool(store, config, session, project, tool, tool_input, now)?,
            ..Notes::default()
        }),
        "SessionStart" => at_session_start(store, project),
        _ => Ok(Notes::default()),
    }
}

impl Notes {
    /// `config` with the injection budget reduced by what these notes take.
    pub fn within_budget(&self, mut config: Config) -> Config {
        if self.text.is_empty() {
            return config;
        }
        let used = self.chars() + 1;
        let inj = &mut config.injection;
        inj.max_chars = inj.max_chars.saturating_sub(used);
        inj.budget_chars = inj.budget_chars.saturating_sub(used).min(inj.max_chars);
        config
    }
}
