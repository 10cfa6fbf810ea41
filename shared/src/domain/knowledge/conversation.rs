//! Conversations: the threads of a session, stashed and resumed (seed 004
//! `memory_stash`, `memory_resume`, `/stash`, `/resume`).
//!
//! A session's *current thread* runs from its start, or from the end of its
//! last stash, to now ([`current`]): its user prompts (from the transcript's
//! `msg.in` and from the prompts the prompt hook ranked for, which are known
//! before the transcript is ingested), the files it read or edited, the
//! tools it used. Stashing ([`stash`], or topic-shift detection's
//! auto-stash) records that thread as a conversation (`conv_…`,
//! `conversation.stashed`): its label (given, or made from its first
//! prompt), an extractive summary, its prompts and files, in the session's
//! stash group; the session goes on with a fresh thread.
//!
//! Resuming ([`resume`]) takes a conversation id, a checkpoint id
//! (`fork_…`, see [`super::checkpoint`]) or words of a stash's label, and
//! returns the context to continue from (the thread's summary, prompts,
//! files, the memories learned in it) plus the harness session id for native
//! resume (`claude --resume <id>`, `codex resume <id>`); it records
//! `conversation.resumed` in the resuming session.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::base::error::{Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::domain::memory::ops::{OpError, OpResult};
use crate::storage::event::{Body, ConversationResumed, ConversationStashed, origin, trigger};
use crate::storage::journal::Journal;
use crate::storage::store::Store;

/// Prompts kept in a stash.
const STASH_PROMPTS: usize = 12;
/// Characters of one stashed prompt.
const PROMPT_CHARS: usize = 400;
/// Files kept in a stash.
const STASH_FILES: usize = 20;
/// Words of a label made from a prompt.
const LABEL_WORDS: usize = 8;
/// The agent's replies kept in a [`Thread`].
pub const REPLIES: usize = 60;

/// The part of a session since its last stash.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Thread {
    /// The session.
    pub session: String,
    /// Its project.
    pub project: Option<String>,
    /// Its harness.
    pub harness: String,
    /// The harness's session id.
    pub harness_session_id: String,
    /// Start (ms).
    pub started_ms: i64,
    /// Latest activity (ms).
    pub last_ms: i64,
    /// User prompts, oldest first, with their times.
    pub prompts: Vec<(i64, String)>,
    /// Files read or edited, most recent first.
    pub files: Vec<String>,
    /// Tools used, in order.
    pub tools: Vec<String>,
    /// The agent's text replies, oldest first, with their times (the
    /// latest [`REPLIES`] of them).
    pub replies: Vec<(i64, String)>,
    /// Files read or edited with the time each was last touched, most
    /// recent first (the same files as `files`).
    pub touched: Vec<(i64, String)>,
    /// When the latest topic-shift suggestion in this thread was made.
    pub suggested_ms: Option<i64>,
}

impl Thread {
    /// Nothing happened in it.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty() && self.files.is_empty() && self.tools.is_empty()
    }

    /// A label from its first prompt (or its first file).
    pub fn label(&self) -> String {
        if let Some((_, p)) = self.prompts.first() {
            let words: Vec<&str> = p.split_whitespace().take(LABEL_WORDS).collect();
            let mut label = words.join(" ");
            if p.split_whitespace().count() > LABEL_WORDS {
                label.push('…');
            }
            if !label.is_empty() {
                return label;
            }
        }
        match self.files.first() {
            Some(f) => format!("work on {}", f.rsplit('/').next().unwrap_or(f)),
            None => "conversation".to_owned(),
        }
    }

    /// An extractive summary: how many prompts, the first and last, files, tools.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        match self.prompts.as_slice() {
            [] => {}
            [(_, only)] => parts.push(format!("1 prompt: \"{}\"", super::preview(only, 160))),
            [(_, first), .., (_, last)] => parts.push(format!(
                "{} prompts, from \"{}\" to \"{}\"",
                self.prompts.len(),
                super::preview(first, 120),
                super::preview(last, 120)
            )),
        }
        if !self.files.is_empty() {
            let names: Vec<&str> = self.files.iter().take(6).map(|f| f.rsplit('/').next().unwrap_or(f)).collect();
            parts.push(format!("files: {}", names.join(", ")));
        }
        if !self.tools.is_empty() {
            let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
            for t in &self.tools {
                *counts.entry(t.as_str()).or_default() += 1;
            }
            let tools: Vec<String> = counts.iter().map(|(t, n)| format!("{t}×{n}")).collect();
            parts.push(format!("tools: {}", tools.join(", ")));
        }
        parts.join("; ")
    }
}

/// The session's current thread (see the module docs); `None` for an
/// unknown session.
pub fn current(store: &Store, session: &SessionKey) -> Result<Option<Thread>> {
    current_before(store, session, i64::MAX)
}

/// The session's thread as it stood just before `before_ms`: what
/// [`current`] returned then, built from what was recorded earlier (a
/// replay of a recorded session asks this at each of its prompts).
pub fn current_before(store: &Store, session: &SessionKey, before_ms: i64) -> Result<Option<Thread>> {
    let conn = store.conn();
    let row: Option<(String, String, Option<String>, i64, i64)> = conn
        .prepare_cached(
            "SELECT harness, harness_session_id, project, started_ms, last_event_ms FROM sessions WHERE session_key = ?1",
        )
        .and_then(|mut s| {
            s.query_row([session.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))).optional()
        })
        .sql("read the session")?;
    let stashed_until: Option<i64> = conn
        .prepare_cached("SELECT MAX(ended_ms) FROM conversations WHERE session_key = ?1 AND ended_ms < ?2")
        .and_then(|mut s| s.query_row(params![session.as_str(), before_ms], |r| r.get(0)))
        .sql("read the session's stashes")?;
    let (harness, harness_session_id, project, started, last) = match row {
        Some(r) => r,
        None if stashed_until.is_some() => (session.harness().to_owned(), session.harness_id().to_owned(), None, 0, 0),
        None => return Ok(None),
    };
    let from = stashed_until.map_or(started, |t| t + 1).max(started);
    let mut prompts: Vec<(i64, String)> = conn
        .prepare_cached(
            "SELECT ts_ms, text FROM session_events
             WHERE session_key = ?1 AND kind = 'msg.in' AND (origin IS NULL OR origin = ?3) AND ts_ms >= ?2
               AND ts_ms < ?5 AND text != ''
             UNION
             SELECT served_ms, query FROM rankings
             WHERE session_key = ?1 AND trigger = ?4 AND served_ms >= ?2 AND served_ms < ?5 AND query != ''
             ORDER BY 1",
        )
        .and_then(|mut s| {
            s.query_map(params![session.as_str(), from, origin::USER, trigger::PROMPT, before_ms], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .sql("read the thread's prompts")?;
    // The same prompt seen by the hook and, later, in the transcript.
    let mut seen = std::collections::HashSet::new();
    prompts.retain(|(_, p)| seen.insert(p.trim().to_owned()));
    let file_rows: Vec<(i64, String)> = conn
        .prepare_cached(
            "SELECT ts_ms, file FROM session_events WHERE session_key = ?1 AND file IS NOT NULL AND ts_ms >= ?2
             AND ts_ms < ?3 ORDER BY lsn DESC LIMIT 200",
        )
        .and_then(|mut s| {
            s.query_map(params![session.as_str(), from, before_ms], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
        .sql("read the thread's files")?;
    let mut touched: Vec<(i64, String)> = Vec::new();
    for (t, f) in file_rows {
        if !touched.iter().any(|(_, g)| *g == f) {
            touched.push((t, f));
        }
    }
    let files: Vec<String> = touched.iter().map(|(_, f)| f.clone()).collect();
    let tools: Vec<String> = conn
        .prepare_cached(
            "SELECT tool FROM session_events WHERE session_key = ?1 AND kind = 'tool.call' AND tool IS NOT NULL
             AND ts_ms >= ?2 AND ts_ms < ?3 ORDER BY lsn LIMIT 500",
        )
        .and_then(|mut s| s.query_map(params![session.as_str(), from, before_ms], |r| r.get(0))?.collect())
        .sql("read the thread's tools")?;
    let mut replies: Vec<(i64, String)> = conn
        .prepare_cached(
            "SELECT ts_ms, text FROM session_events WHERE session_key = ?1 AND kind = 'msg.out'
             AND (origin IS NULL OR origin = 'text') AND text != '' AND ts_ms >= ?2 AND ts_ms < ?3
             ORDER BY lsn DESC LIMIT ?4",
        )
        .and_then(|mut s| {
            s.query_map(params![session.as_str(), from, before_ms, REPLIES as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .sql("read the thread's replies")?;
    replies.reverse();
    let suggested_ms: Option<i64> = conn
        .prepare_cached(
            "SELECT MAX(created_ms) FROM topic_shifts WHERE session_key = ?1 AND tier != 'ignore'
             AND created_ms >= ?2 AND created_ms < ?3",
        )
        .and_then(|mut s| s.query_row(params![session.as_str(), from, before_ms], |r| r.get(0)))
        .sql("read the thread's topic-shift suggestions")?;
    let latest: Option<i64> = conn
        .prepare_cached(
            "SELECT MAX(t) FROM (SELECT MAX(ts_ms) AS t FROM session_events WHERE session_key = ?1 AND ts_ms < ?2
                UNION ALL SELECT MAX(served_ms) FROM rankings WHERE session_key = ?1 AND served_ms < ?2)",
        )
        .and_then(|mut s| s.query_row(params![session.as_str(), before_ms], |r| r.get(0)))
        .sql("read the thread's last activity")?;
    Ok(Some(Thread {
        session: session.as_str().to_owned(),
        project,
        harness,
        harness_session_id,
        started_ms: from,
        last_ms: latest.unwrap_or(last.min(before_ms)).max(from),
        prompts,
        files,
        tools,
        replies,
        touched,
        suggested_ms,
    }))
}

/// The stash group of a session's conversations.
pub fn group_of(session: &SessionKey) -> String {
    crate::base::ids::derived_with_prefix("sg", &[session.as_str()])
}

/// The `conversation.stashed` body of `thread`, ending at `now`; returns its id too.
pub fn stash_body(thread: &Thread, label: Option<&str>, auto: bool, score: Option<f32>, now: Ts) -> (String, Body) {
    let id = crate::base::ids::generate_with_prefix("conv", now);
    let label = label.map(str::trim).filter(|l| !l.is_empty()).map_or_else(|| thread.label(), str::to_owned);
    let prompts: Vec<String> = thread
        .prompts
        .iter()
        .rev()
        .take(STASH_PROMPTS)
        .rev()
        .map(|(_, p)| super::preview(&crate::storage::redact::redact_text(p), PROMPT_CHARS))
        .collect();
    let body = Body::ConversationStashed(ConversationStashed {
        conversation_id: id.clone(),
        label: crate::storage::redact::redact_text(&label).into_owned(),
        auto,
        score,
        project: thread.project.clone(),
        stash_group: group_of(&SessionKey::from(thread.session.as_str())),
        started_ms: thread.started_ms,
        ended_ms: now.0.max(thread.started_ms),
        summary: crate::storage::redact::redact_text(&thread.summary()).into_owned(),
        prompts,
        files: thread.files.iter().take(STASH_FILES).cloned().collect(),
    });
    (id, body)
}

/// A stashed (or resumed) conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StashRecord {
    /// Id (`conv_…`).
    pub id: String,
    /// Label.
    pub label: String,
    /// `stashed` or `resumed`.
    pub status: String,
    /// Stashed by topic-shift detection.
    pub auto: bool,
    /// The session it was part of.
    pub session: String,
    /// Its project.
    pub project: Option<String>,
    /// Stash group.
    pub group: String,
    /// Summary.
    pub summary: String,
    /// Prompts, oldest first.
    pub prompts: Vec<String>,
    /// Files.
    pub files: Vec<String>,
    /// Start (RFC 3339).
    pub started_at: String,
    /// When stashed (RFC 3339).
    pub stashed_at: String,
    /// Times resumed.
    pub resume_count: i64,
    /// The session it was last resumed in.
    pub resumed_session: Option<String>,
}

const STASH_COLUMNS: &str = "id, label, status, auto, session_key, project, stash_group, summary, prompts, files,
    started_ms, ended_ms, resume_count, resumed_session";

fn stash_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StashRecord> {
    let prompts: String = r.get(8)?;
    let files: String = r.get(9)?;
    Ok(StashRecord {
        id: r.get(0)?,
        label: r.get(1)?,
        status: r.get(2)?,
        auto: r.get(3)?,
        session: r.get(4)?,
        project: r.get(5)?,
        group: r.get(6)?,
        summary: r.get(7)?,
        prompts: serde_json::from_str(&prompts).unwrap_or_default(),
        files: serde_json::from_str(&files).unwrap_or_default(),
        started_at: Ts(r.get(10)?).to_rfc3339(),
        stashed_at: Ts(r.get(11)?).to_rfc3339(),
        resume_count: r.get(12)?,
        resumed_session: r.get(13)?,
    })
}

/// Which stashes [`list`] returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StashFilter {
    /// Only this group.
    pub group: Option<String>,
    /// Only this project.
    pub project: Option<String>,
    /// Resumed ones too.
    pub include_resumed: bool,
    /// At most this many (0: 50).
    pub limit: usize,
}

/// Stashed conversations, newest first (seed `GET /api/conversations`).
pub fn list(store: &Store, f: &StashFilter) -> Result<Vec<StashRecord>> {
    let limit = if f.limit == 0 { 50 } else { f.limit };
    let mut stmt = store
        .conn()
        .prepare_cached(&format!(
            "SELECT {STASH_COLUMNS} FROM conversations
             WHERE (?1 IS NULL OR stash_group = ?1) AND (?2 IS NULL OR project = ?2) AND (?3 OR status = 'stashed')
             ORDER BY ended_ms DESC, id DESC LIMIT ?4"
        ))
        .sql("list stashes")?;
    let rows =
        stmt.query_map(params![f.group, f.project, f.include_resumed, limit as i64], stash_row).sql("list stashes")?;
    rows.collect::<rusqlite::Result<_>>().sql("list stashes")
}

/// One conversation.
pub fn get(store: &Store, id: &str) -> Result<Option<StashRecord>> {
    store
        .conn()
        .prepare_cached(&format!("SELECT {STASH_COLUMNS} FROM conversations WHERE id = ?1"))
        .and_then(|mut s| s.query_row([id], stash_row).optional())
        .sql("read a conversation")
}

/// Stashes whose label, summary or prompts hold every word of `query`
/// (seed `/resume search`), stashed ones first, newest first.
pub fn search(store: &Store, query: &str) -> Result<Vec<StashRecord>> {
    let words: Vec<String> = super::similarity::words(query).into_iter().collect();
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let all = list(store, &StashFilter { include_resumed: true, limit: 500, ..StashFilter::default() })?;
    let mut hits: Vec<StashRecord> = all
        .into_iter()
        .filter(|s| {
            let have = super::similarity::words(&format!("{} {} {}", s.label, s.summary, s.prompts.join(" ")));
            words.iter().all(|w| have.contains(w))
        })
        .collect();
    hits.sort_by_key(|s| s.status != "stashed");
    Ok(hits)
}

/// What [`stash`] did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stashed {
    /// The new conversation.
    pub conversation_id: String,
    /// Its label.
    pub label: String,
    /// Its summary.
    pub summary: String,
    /// Its group.
    pub group: String,
}

/// Stashes the current thread of `session` under `label` (made from the
/// topic when absent).
pub fn stash(journal: &mut Journal, session: &SessionKey, label: Option<&str>, now: Ts) -> OpResult<Stashed> {
    let store_err = |e: crate::base::error::Error| OpError::Store { context: "read the session".into(), source: e };
    let Some(thread) = current(journal.store(), session).map_err(store_err)? else {
        return Err(OpError::Invalid(format!("no session {session} recorded yet: nothing to stash")));
    };
    if thread.is_empty() {
        return Err(OpError::Invalid(format!("nothing happened in {session} since its last stash")));
    }
    let (id, body) = stash_body(&thread, label, false, None, now);
    let Body::ConversationStashed(b) = &body else { unreachable!("stash_body builds a stash") };
    let out = Stashed {
        conversation_id: id,
        label: b.label.clone(),
        summary: b.summary.clone(),
        group: b.stash_group.clone(),
    };
    let e = journal.event(now, Some(session.clone()), body);
    journal
        .append(std::slice::from_ref(&e))
        .map_err(|source| OpError::Store { context: "append to the tape log".into(), source })?;
    Ok(out)
}

/// A memory learned in a resumed thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadMemory {
    /// Id.
    pub id: String,
    /// Type.
    #[serde(rename = "type")]
    pub memory_type: crate::storage::event::MemoryType,
    /// Text.
    pub content: String,
}

/// What [`resume`] returns (seed: "context for injection and, if available,
/// the Claude CLI session ID for native resume").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Resumed {
    /// The conversation or checkpoint.
    pub conversation_id: String,
    /// `conversation` or `checkpoint`.
    pub kind: &'static str,
    /// Its label.
    pub label: String,
    /// The session it came from.
    pub session: String,
    /// That session's harness.
    pub harness: String,
    /// The harness's session id (for native resume).
    pub harness_session_id: String,
    /// The command that resumes it natively, when the harness has one.
    pub resume_command: Option<String>,
    /// The context to continue from, ready to read.
    pub context: String,
    /// Its summary.
    pub summary: String,
    /// Its prompts.
    pub prompts: Vec<String>,
    /// Its files.
    pub files: Vec<String>,
    /// Memories learned in it.
    pub memories: Vec<ThreadMemory>,
}

/// The native resume command of a harness session.
pub fn resume_command(harness: &str, id: &str) -> Option<String> {
    match harness {
        crate::storage::event::harness::CLAUDE => Some(format!("claude --resume {id}")),
        crate::storage::event::harness::CODEX => Some(format!("codex resume {id}")),
        _ => None,
    }
}

/// Memories learned in `session` between two times.
pub fn memories_between(store: &Store, session: &str, from: i64, to: i64) -> Result<Vec<ThreadMemory>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT id, type, content FROM memories WHERE source_session = ?1 AND created_ms BETWEEN ?2 AND ?3
             AND is_deleted = 0 AND deprecated = 0 ORDER BY created_ms LIMIT 20",
        )
        .sql("read the thread's memories")?;
    let rows = stmt
        .query_map(params![session, from, to], |r| {
            Ok(ThreadMemory { id: r.get(0)?, memory_type: r.get(1)?, content: r.get(2)? })
        })
        .sql("read the thread's memories")?;
    rows.collect::<rusqlite::Result<_>>().sql("read the thread's memories")
}

/// The text an agent reads to continue a resumed thread.
pub fn context_text(r: &Resumed, when: &str) -> String {
    let mut out =
        format!("Resuming {} {} \"{}\" ({when}, session {}):\n", r.kind, r.conversation_id, r.label, r.session);
    if !r.summary.is_empty() {
        out.push_str(&format!("Summary: {}\n", r.summary));
    }
    if !r.prompts.is_empty() {
        out.push_str("Prompts:\n");
        for (i, p) in r.prompts.iter().enumerate() {
            out.push_str(&format!("  {}. {}\n", i + 1, super::preview(p, 300)));
        }
    }
    if !r.files.is_empty() {
        out.push_str(&format!("Files: {}\n", r.files.join(", ")));
    }
    if !r.memories.is_empty() {
        out.push_str("Learned then:\n");
        for m in &r.memories {
            out.push_str(&format!("  {} [{}] {}\n", m.id, m.memory_type, super::preview(&m.content, 200)));
        }
    }
    if let Some(cmd) = &r.resume_command {
        out.push_str(&format!("Native resume of that session: {cmd}\n"));
    }
    out
}

fn session_harness(store: &Store, session: &str) -> Result<(String, String)> {
    let row: Option<(String, String)> = store
        .conn()
        .prepare_cached("SELECT harness, harness_session_id FROM sessions WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([session], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .sql("read the session")?;
    let key = SessionKey::from(session);
    Ok(row.unwrap_or_else(|| (key.harness().to_owned(), key.harness_id().to_owned())))
}

/// Resumes a conversation, a checkpoint, or the stash best matching `what`
/// (see the module docs), recording it in `session` when given.
pub fn resume(journal: &mut Journal, what: &str, session: Option<&SessionKey>, now: Ts) -> OpResult<Resumed> {
    let what = what.trim();
    let store_err =
        |e: crate::base::error::Error| OpError::Store { context: "read the conversation".into(), source: e };
    let resumed = if what.starts_with(super::CHECKPOINT_PREFIX) {
        super::checkpoint::resumed(journal.store(), what).map_err(store_err)?
    } else {
        let record = match get(journal.store(), what).map_err(store_err)? {
            Some(r) => r,
            None => {
                let hits = search(journal.store(), what).map_err(store_err)?;
                match hits.into_iter().next() {
                    Some(r) => r,
                    None => {
                        return Err(OpError::Invalid(format!(
                            "no stashed conversation {what:?}; memory_stash lists them"
                        )));
                    }
                }
            }
        };
        let (harness, harness_session_id) = session_harness(journal.store(), &record.session).map_err(store_err)?;
        let (from, to) =
            (Ts::parse(&record.started_at).map_or(0, |t| t.0), Ts::parse(&record.stashed_at).map_or(i64::MAX, |t| t.0));
        let memories = memories_between(journal.store(), &record.session, from, to).map_err(store_err)?;
        let mut r = Resumed {
            conversation_id: record.id.clone(),
            kind: "conversation",
            label: record.label.clone(),
            session: record.session.clone(),
            resume_command: resume_command(&harness, &harness_session_id),
            harness,
            harness_session_id,
            context: String::new(),
            summary: record.summary.clone(),
            prompts: record.prompts.clone(),
            files: record.files.clone(),
            memories,
        };
        r.context = context_text(&r, &format!("stashed {}", record.stashed_at));
        Some(r)
    };
    let Some(resumed) = resumed else {
        return Err(OpError::Invalid(format!("no checkpoint {what:?}")));
    };
    let body = Body::ConversationResumed(ConversationResumed { conversation_id: resumed.conversation_id.clone() });
    let e = journal.event(now, session.cloned(), body);
    journal
        .append(std::slice::from_ref(&e))
        .map_err(|source| OpError::Store { context: "append to the tape log".into(), source })?;
    Ok(resumed)
}
