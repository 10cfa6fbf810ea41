//! Abstaining rather than adding noise: which ranked memories clear the
//! floor of a moment. Below it, nothing is injected, however well a memory
//! ranks among the others.
//!
//! - **Session start** (a new session, a resume): where a project's lessons
//!   belong: this project's memories (at least
//!   `floors.session_start_importance` important, or pointed at by the
//!   session's context text with evidence ≥ `floors.session_start` and two
//!   specific words) and pinned ones, best ranked first within `k` and the
//!   budget.
//! - **Restart** (a session start on a context emptied by a compaction or a
//!   clear): what the agent had before the reset: what was injected, and
//!   what the session itself taught (memories learned from it, such as the
//!   user's corrections, which a compaction summary may drop), and pinned
//!   memories; nothing more.
//! - **Prompt** and **tool call**: evidence ([`super::evidence`]) ≥ the
//!   moment's floor and one specific word; a tool that only looks (reads,
//!   searches, lists) has a higher floor.
//! - A memory of **another project** needs the floor times
//!   `floors.other_project` and two specific words, and never comes at session
//!   start unless pinned; one of a project of another stack never comes, and
//!   a lesson of the current stack (two projects of it agree) is treated as
//!   this project's own ([`super::stack`]).
//!
//! Memories without a project are the user's own, welcome in every project.
//!
//! At a prompt or a tool call, a memory learned from the session itself is
//! not brought back to it (its words are in the agent's context already),
//! unless it was learned before the context was last emptied. At the moments
//! of a session, a memory that does not stand alone as a lesson (a fragment,
//! a question, a pointer at something it does not name, a log line:
//! [`crate::domain::memory::quality`]) is not injected, whichever version
//! stored it; pinned memories and quoted conversation turns are exempt.

use std::collections::BTreeSet;

use super::evidence::{Evidence, QueryWords, evidence};
use super::stack::Stacks;
use crate::base::config::FloorsConfig;
use crate::base::ids::{MemoryId, SessionKey};
use crate::domain::memory::quality;
use crate::domain::rank::{PoolMemory, RankedMemory, Ranking};
use crate::storage::event::trigger;

/// The moment a ranking is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// A session starts or resumes.
    SessionStart,
    /// A session starts again on an emptied context.
    Restart,
    /// The user sent a prompt.
    Prompt,
    /// A tool is about to run.
    Tool,
    /// A tool that only looks is about to run.
    ToolReadOnly,
    /// Anything else (a search): no floor.
    Other,
}

impl Moment {
    /// The moment of a ranking for `trigger_`.
    pub fn of(trigger_: &str, restart: bool, read_only: bool) -> Moment {
        match trigger_ {
            trigger::SESSION_START if restart => Moment::Restart,
            trigger::SESSION_START => Moment::SessionStart,
            trigger::PROMPT => Moment::Prompt,
            trigger::TOOL if read_only => Moment::ToolReadOnly,
            trigger::TOOL => Moment::Tool,
            _ => Moment::Other,
        }
    }
}

/// The floor of one moment, applied to each ranked memory.
#[derive(Debug)]
pub struct Gate<'a> {
    floors: &'a FloorsConfig,
    moment: Moment,
    project: Option<&'a str>,
    before_reset: &'a BTreeSet<MemoryId>,
    stacks: &'a Stacks,
    words: QueryWords,
    session: Option<&'a SessionKey>,
    context_reset_ms: Option<i64>,
}

impl<'a> Gate<'a> {
    /// The gate of `moment` for a ranking of `query` in `project`;
    /// `before_reset` are the memories injected in the session before its
    /// context was emptied (a restart brings them back); `stacks` what the
    /// projects' stacks say about memories of other projects.
    pub fn new(
        floors: &'a FloorsConfig,
        moment: Moment,
        project: Option<&'a str>,
        before_reset: &'a BTreeSet<MemoryId>,
        stacks: &'a Stacks,
        query: &str,
        ranking: &Ranking,
    ) -> Gate<'a> {
        Gate {
            floors,
            moment,
            project,
            before_reset,
            stacks,
            words: QueryWords::new(query, &ranking.query_terms, ranking.corpus),
            session: None,
            context_reset_ms: None,
        }
    }

    /// The gate of a moment in `session`, whose context was last emptied at
    /// `context_reset_ms`: what the session taught since is not repeated to it.
    pub fn in_session(mut self, session: Option<&'a SessionKey>, context_reset_ms: Option<i64>) -> Gate<'a> {
        self.session = session;
        self.context_reset_ms = context_reset_ms;
        self
    }

    /// Whether `m` was learned from this session since its context was last
    /// emptied (so the agent has its words already).
    fn learned_here(&self, m: &PoolMemory) -> bool {
        let Some(session) = self.session else { return false };
        m.source_session.as_deref() == Some(session.as_str()) && self.context_reset_ms.is_none_or(|r| m.created_ms > r)
    }

    /// The evidence the moment's query gives for a memory.
    pub fn evidence(&self, it: &RankedMemory) -> Evidence {
        evidence(&self.words, &it.memory.content, &it.memory.bag)
    }

    /// Whether `m` counts as this project's own: the user's (no project),
    /// this project's, or a lesson of this stack; an error when it belongs to
    /// a project of another stack.
    fn here(&self, m: &PoolMemory) -> Result<bool, String> {
        let mut here = m.project.is_none() || m.project.as_deref() == self.project;
        if let Some(p) = m.project.as_deref().filter(|_| !here) {
            if self.stacks.other_stack(p) && !m.pinned {
                return Err("learned in a project of another stack".into());
            }
            // Two projects of this stack agree: a lesson of the stack (two
            // memories that say it alike, or one learned in both projects
            // whose shared tags this environment has: `signals.stack_match`).
            here = self.stacks.is_lesson(&m.id) || m.signals.stack_match;
        }
        Ok(here)
    }

    /// Whether the memory is a reminder now: it warns against what the
    /// moment's tool call is about to do, or is about the command the call
    /// runs ([`RankedMemory::reminder`]), it is
    /// a lesson that stands, and it is this project's own. A reminder needs
    /// no other evidence and may repeat what the session was shown.
    pub fn reminds(&self, it: &RankedMemory) -> bool {
        let m = &it.memory;
        self.moment == Moment::Tool
            && it.reminder.is_some()
            && m.excluded.is_none()
            && !m.superseded
            && (m.pinned || quality::defect(&m.content).is_none())
            && self.here(m) == Ok(true)
    }

    /// `Ok` when the memory may be injected now, else why not, for people.
    /// A memory that warns against what the moment's tool call is about to
    /// do ([`RankedMemory::reminder`]) is injected as a reminder, even when
    /// the session has seen it, if it is a lesson that stands.
    pub fn verdict(&self, it: &RankedMemory) -> Result<(), String> {
        let m = &it.memory;
        if let Some(why) = m.excluded {
            return Err(why.into());
        }
        if self.reminds(it) {
            return Ok(());
        }
        if m.shown {
            return Err("already in the agent's context (shown in this session)".into());
        }
        if m.superseded {
            return Err("superseded or deprecated".into());
        }
        if m.content.trim().is_empty() {
            return Err("empty".into());
        }
        // At a prompt or a tool call, the session's own lessons are in its
        // context; a (re)start may bring them, as every start brings the
        // project's lessons.
        if matches!(self.moment, Moment::Prompt | Moment::Tool | Moment::ToolReadOnly) && self.learned_here(m) {
            return Err("learned from this session (its words are in the agent's context)".into());
        }
        if self.moment != Moment::Other
            && !m.pinned
            && m.speaker.is_none()
            && let Some(defect) = quality::defect(&m.content)
        {
            return Err(format!("not a lesson as stored: {defect}"));
        }
        let here = self.here(m)?;
        let floor = |base: f32| if here { base } else { base * self.floors.other_project };
        let need = if here { 1 } else { 2 };
        let enough = |e: &Evidence, base: f32| -> Result<(), String> {
            if e.score >= floor(base) && e.specific >= need {
                return Ok(());
            }
            let whose = if here { "" } else { " (learned in another project, so it needs stronger evidence)" };
            Err(match e.words.as_slice() {
                [] => format!("nothing in the query points at it{whose}"),
                w if e.specific < need => format!(
                    "only common words point at it: {} ({} specific, {need} needed){whose}",
                    w.join(", "),
                    e.specific
                ),
                w => format!(
                    "too little evidence: {} ({:.2}, the floor is {:.2}){whose}",
                    w.join(", "),
                    e.score,
                    floor(base)
                ),
            })
        };
        match self.moment {
            Moment::Other => Ok(()),
            Moment::SessionStart | Moment::Restart => {
                if m.pinned {
                    return Ok(());
                }
                // After a reset, what the agent had before it, and nothing more.
                if self.moment == Moment::Restart {
                    return if self.before_reset.contains(&m.id) {
                        Ok(())
                    } else {
                        Err("not in the agent's context before the reset".into())
                    };
                }
                if !here {
                    return Err("learned in another project (session start only brings this project's own)".into());
                }
                if m.signals.importance >= self.floors.session_start_importance {
                    return Ok(());
                }
                let e = self.evidence(it);
                if e.score >= self.floors.session_start && e.specific >= 2 {
                    return Ok(());
                }
                Err(format!(
                    "not important enough ({:.2}) and the session's context does not point at it",
                    m.signals.importance
                ))
            }
            Moment::Prompt => enough(&self.evidence(it), self.floors.prompt),
            Moment::Tool => enough(&self.evidence(it), self.floors.tool),
            Moment::ToolReadOnly => enough(&self.evidence(it), self.floors.tool_read_only),
        }
    }
}
