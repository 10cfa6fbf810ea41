//! The memory commands every writer shares (the ingestor's `memory …`
//! commands, the scorer's MCP tools): each state change is one event appended
//! through the journal (`memory.added`, `.updated`, `.pinned`, `.unpinned`,
//! `.deprecated`, `.forgotten`, `.feedback`), after checking against the
//! projection that every memory it names exists, so that an unknown id is an
//! error before anything is written. Texts, reasons and tags are redacted like
//! everything else that reaches a tape.

use serde::Serialize;

use crate::base::error::Error;
use crate::base::ids::{MemoryId, SessionKey};
use crate::base::time::Ts;
use crate::domain::memory::queries::{FeedbackRecord, MemoryFilter, MemoryRecord};
use crate::storage::event::{
    Body, ForgetFingerprints, MemoryAdded, MemoryDeprecated, MemoryFeedback, MemoryForgotten, MemoryRef, MemoryType,
    MemoryUpdated,
};
use crate::storage::forget;
use crate::storage::journal::Journal;
use crate::storage::redact;
use crate::storage::store::Store;

/// Longest memory text accepted, in characters.
pub const MAX_TEXT: usize = 4000;

/// Most tags one memory may carry, whichever way it is written (the CLI,
/// MCP, the REST API).
pub const MAX_TAGS: usize = 32;

/// Longest tag accepted, in characters.
pub const MAX_TAG_CHARS: usize = 64;

/// Why a memory command was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// No memory has this id.
    #[error("no memory with id {0}")]
    UnknownMemory(String),
    /// An argument is invalid (the message says which and why).
    #[error("{0}")]
    Invalid(String),
    /// The request is well formed but the state forbids it: the memory was
    /// forgotten, the staged entry was already resolved, the id is taken.
    #[error("{0}")]
    Conflict(String),
    /// What the request names does not exist (other than a memory: a staged
    /// entry, …).
    #[error("{0}")]
    NotFound(String),
    /// The tape log or the projection failed.
    #[error("{context}: {source}")]
    Store {
        /// What was being done.
        context: String,
        /// The cause (it names the file or table).
        #[source]
        source: Error,
    },
}

/// Result of a memory command.
pub type OpResult<T> = Result<T, OpError>;

fn store_err(context: &str) -> impl FnOnce(Error) -> OpError + '_ {
    move |source| OpError::Store { context: context.to_owned(), source }
}

/// A memory to add.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMemory {
    /// The text.
    pub text: String,
    /// What it holds.
    pub memory_type: MemoryType,
    /// 0..=1.
    pub importance: f32,
    /// Project.
    pub project: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Pinned from the start.
    pub pinned: bool,
}

/// Changes to a memory; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryChange {
    /// New text.
    pub text: Option<String>,
    /// New type.
    pub memory_type: Option<MemoryType>,
    /// New importance.
    pub importance: Option<f32>,
    /// New tag set.
    pub tags: Option<Vec<String>>,
    /// New project.
    pub project: Option<String>,
}

/// Where a write comes from: the `source` of an added memory, the `by` of
/// feedback, and the session it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    /// `explicit` (command line), `mcp`, …
    pub source: String,
    /// `user`, `agent`, `judge`.
    pub by: String,
    /// The session the write belongs to, if any.
    pub session: Option<SessionKey>,
}

impl Origin {
    /// A person at the command line.
    pub fn user() -> Origin {
        Origin { source: "explicit".into(), by: "user".into(), session: None }
    }

    /// An agent through MCP, optionally within a session.
    pub fn agent(session: Option<SessionKey>) -> Origin {
        Origin { source: "mcp".into(), by: "agent".into(), session }
    }
}

/// A memory with its sessions and feedback.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryDetails {
    /// The row.
    #[serde(flatten)]
    pub memory: MemoryRecord,
    /// Sessions it was learned from or seen in.
    pub sessions: Vec<String>,
    /// Explicit feedback.
    pub feedback: Vec<FeedbackRecord>,
}

/// The redacted, trimmed text, or why it is refused.
pub fn check_text(text: &str) -> OpResult<String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(OpError::Invalid("the memory text is empty".into()));
    }
    if t.chars().count() > MAX_TEXT {
        return Err(OpError::Invalid(format!("the memory text is longer than {MAX_TEXT} characters")));
    }
    Ok(redact::redact_text(t).into_owned())
}

/// The type named `t`, or why it is refused.
pub fn check_type(t: &str) -> OpResult<MemoryType> {
    MemoryType::parse(t).ok_or_else(|| {
        let names: Vec<&str> = MemoryType::ALL.iter().map(|t| t.as_str()).collect();
        OpError::Invalid(format!("unknown memory type {:?}; one of: {}", t.trim(), names.join(", ")))
    })
}

fn check_unit(what: &str, x: f32) -> OpResult<f32> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(OpError::Invalid(format!("{what} must be between 0 and 1, not {x}")))
    }
}

/// Lower-cased, redacted, sorted and deduplicated tags, or why they are
/// refused: more than [`MAX_TAGS`], or one empty or longer than [`MAX_TAG_CHARS`].
pub fn check_tags(tags: &[String]) -> OpResult<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(OpError::Invalid(format!("{} tags given; a memory has at most {MAX_TAGS}", tags.len())));
    }
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = t.trim().to_lowercase();
        if t.is_empty() || t.chars().count() > MAX_TAG_CHARS {
            let shown: String = t.chars().take(MAX_TAG_CHARS + 1).collect();
            return Err(OpError::Invalid(format!("tag {shown:?} is empty or longer than {MAX_TAG_CHARS} characters")));
        }
        out.push(redact::redact_text(&t).into_owned());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Reads a session key (`harness:id`).
pub fn parse_session(s: &str) -> OpResult<SessionKey> {
    match s.split_once(':') {
        Some((h, id)) if !h.is_empty() && !id.is_empty() => Ok(SessionKey(s.to_owned())),
        _ => Err(OpError::Invalid(format!("session {s:?} is not a session key (harness:id)"))),
    }
}

/// The memory `id`, which must exist (forgotten or not).
pub fn require(store: &Store, id: &str) -> OpResult<MemoryRecord> {
    store.memory(id).map_err(store_err("read the memory"))?.ok_or_else(|| OpError::UnknownMemory(id.to_owned()))
}

/// The memory `id`, which must exist and not be forgotten.
pub fn require_live(store: &Store, id: &str) -> OpResult<MemoryRecord> {
    let m = require(store, id)?;
    if m.is_deleted {
        return Err(OpError::Conflict(format!("memory {id} was forgotten")));
    }
    Ok(m)
}

fn append(journal: &mut Journal, now: Ts, session: Option<SessionKey>, body: Body) -> OpResult<()> {
    let e = journal.event(now, session, body);
    let receipt = journal.append(std::slice::from_ref(&e)).map_err(store_err("append to the tape log"))?;
    if !receipt.applied {
        tracing::warn!(lsn = receipt.first_lsn, "the event is on tape but not yet projected");
    }
    Ok(())
}

/// Adds a memory; returns its new id.
pub fn add(journal: &mut Journal, m: NewMemory, origin: &Origin, now: Ts) -> OpResult<MemoryId> {
    let content = check_text(&m.text)?;
    refuse_forgotten(journal, &content)?;
    let memory_type = m.memory_type;
    let importance = check_unit("importance", m.importance)?;
    let tags = check_tags(&m.tags)?;
    let id = MemoryId::generate(now);
    let body = Body::MemoryAdded(MemoryAdded {
        memory_id: id.clone(),
        content,
        memory_type,
        importance,
        project: m
            .project
            .filter(|p| !p.trim().is_empty())
            .map(|p| crate::domain::env::store::resolve_project(journal.store().conn(), &p)),
        tags,
        pinned: m.pinned,
        source: origin.source.clone(),
        source_session: origin.session.clone(),
        source_event: None,
        speaker: None,
    });
    append(journal, now, origin.session.clone(), body)?;
    Ok(id)
}

/// Refuses a text that was forgotten (the journal would leave it out).
pub(crate) fn refuse_forgotten(journal: &Journal, text: &str) -> OpResult<()> {
    let guard = forget::Guard::open(journal.paths()).map_err(store_err("read the forget key"))?;
    match guard.forgotten(journal.store(), text).map_err(store_err("look up forgotten texts"))? {
        Some(_) => Err(OpError::Conflict(
            "this text was forgotten (`memory forget`), and a forgotten memory is never learned again".into(),
        )),
        None => Ok(()),
    }
}

/// Changes a memory's text, type, importance, tags or project.
pub fn update(journal: &mut Journal, id: &str, change: MemoryChange, now: Ts) -> OpResult<()> {
    let body = MemoryUpdated {
        memory_id: MemoryId::from(id),
        content: change.text.as_deref().map(check_text).transpose()?,
        memory_type: change.memory_type,
        importance: change.importance.map(|x| check_unit("importance", x)).transpose()?,
        tags: change.tags.as_deref().map(check_tags).transpose()?,
        project: change.project.map(|p| crate::domain::env::store::resolve_project(journal.store().conn(), &p)),
        occurrences: 0,
        seen_in: None,
    };
    if body.content.is_none()
        && body.memory_type.is_none()
        && body.importance.is_none()
        && body.tags.is_none()
        && body.project.is_none()
    {
        return Err(OpError::Invalid(
            "nothing to update: give --text, --type, --importance, --tag or --project".into(),
        ));
    }
    require_live(journal.store(), id)?;
    if let Some(text) = &body.content {
        refuse_forgotten(journal, text)?;
    }
    append(journal, now, None, Body::MemoryUpdated(body))
}

/// Pins or unpins a memory.
pub fn set_pinned(journal: &mut Journal, id: &str, pinned: bool, now: Ts) -> OpResult<()> {
    require_live(journal.store(), id)?;
    let r = MemoryRef { memory_id: MemoryId::from(id) };
    append(journal, now, None, if pinned { Body::MemoryPinned(r) } else { Body::MemoryUnpinned(r) })
}

/// Marks a memory outdated, optionally replaced by another.
pub fn deprecate(
    journal: &mut Journal,
    id: &str,
    reason: Option<String>,
    superseded_by: Option<String>,
    now: Ts,
) -> OpResult<()> {
    require_live(journal.store(), id)?;
    if let Some(other) = &superseded_by {
        if other == id {
            return Err(OpError::Invalid("a memory cannot supersede itself".into()));
        }
        require_live(journal.store(), other)?;
    }
    let body = Body::MemoryDeprecated(MemoryDeprecated {
        memory_id: MemoryId::from(id),
        reason: reason.map(|r| redact::redact_text(&r).into_owned()).unwrap_or_default(),
        superseded_by: superseded_by.clone().map(MemoryId),
    });
    // The knowledge graph's `supersedes` edge goes with the deprecation, in one append.
    let edge = superseded_by.map(|by| {
        let r = crate::domain::knowledge::graph::Relation::Supersedes;
        crate::domain::knowledge::graph::edge_body(&MemoryId(by), &MemoryId::from(id), r, 1.0, "user", "deprecated")
    });
    let events: Vec<_> = std::iter::once(body).chain(edge).map(|b| journal.event(now, None, b)).collect();
    let receipt = journal.append(&events).map_err(store_err("append to the tape log"))?;
    if !receipt.applied {
        tracing::warn!(lsn = receipt.first_lsn, "the events are on tape but not yet projected");
    }
    Ok(())
}

/// Forgets a memory: hidden at once, its text removed from the tapes by the
/// next `compact`. `false` when it was already forgotten (nothing appended).
pub fn forget(journal: &mut Journal, id: &str, reason: Option<String>, now: Ts) -> OpResult<bool> {
    forget_as(journal, id, reason, false, now)
}

/// Forgets a memory as the removal of the data it came from (the demo an
/// older version mixed in): hidden at once and cleared from its own events
/// by `compact`, but its text is not refused afterwards, since the lesson
/// may be a real one too. `false` when it was already forgotten.
pub fn forget_data(journal: &mut Journal, id: &str, reason: Option<String>, now: Ts) -> OpResult<bool> {
    forget_as(journal, id, reason, true, now)
}

fn forget_as(journal: &mut Journal, id: &str, reason: Option<String>, relearnable: bool, now: Ts) -> OpResult<bool> {
    let memory = require(journal.store(), id)?;
    if memory.is_deleted {
        return Ok(false);
    }
    let reason = reason.map(|r| redact::redact_text(&r).into_owned()).unwrap_or_default();
    // Its text is never learned again: a keyed fingerprint of it is kept
    // (the text itself goes with the next `compact`).
    let fingerprints: Vec<String> = if relearnable {
        Vec::new()
    } else {
        let key = forget::Key::load_or_create(journal.paths()).map_err(store_err("create the forget key"))?;
        key.fingerprint(&memory.content).into_iter().chain(key.sketch(&memory.content)).collect()
    };
    let memory_id = MemoryId::from(id);
    let forgotten = MemoryForgotten { memory_id: memory_id.clone(), reason, relearnable };
    let mut events = vec![journal.event(now, None, Body::MemoryForgotten(forgotten))];
    if !fingerprints.is_empty() {
        events.push(journal.event(now, None, Body::ForgetFingerprints(ForgetFingerprints { memory_id, fingerprints })));
    }
    journal.append(&events).map_err(store_err("append to the tape log"))?;
    Ok(true)
}

/// Records explicit relevance feedback (0..=1) from `origin.by`, within
/// `origin.session` when given: the trainer's explicit signal.
pub fn feedback(
    journal: &mut Journal,
    id: &str,
    relevance: f32,
    reason: Option<String>,
    origin: &Origin,
    now: Ts,
) -> OpResult<()> {
    if !relevance.is_finite() {
        return Err(OpError::Invalid("relevance must be a number between 0 and 1".into()));
    }
    let relevance = check_unit("relevance", relevance)?;
    require_live(journal.store(), id)?;
    let body = Body::MemoryFeedback(MemoryFeedback {
        memory_id: MemoryId::from(id),
        relevance,
        reason: reason.map(|r| redact::redact_text(&r).into_owned()).unwrap_or_default(),
        by: origin.by.clone(),
    });
    append(journal, now, origin.session.clone(), body)
}

/// Live memories, pinned first then newest.
pub fn list(store: &Store, filter: &MemoryFilter) -> OpResult<Vec<MemoryRecord>> {
    store.memories(filter).map_err(store_err("list memories"))
}

/// One memory with its sessions and feedback.
pub fn show(store: &Store, id: &str) -> OpResult<MemoryDetails> {
    let memory = require(store, id)?;
    let sessions = store.memory_sessions(id).map_err(store_err("list the memory's sessions"))?;
    let feedback = store.memory_feedback(id).map_err(store_err("list the memory's feedback"))?;
    Ok(MemoryDetails { memory, sessions: sessions.into_iter().map(|s| s.0).collect(), feedback })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::base::paths::Paths;

    fn memory(text: &str) -> NewMemory {
        NewMemory {
            text: text.into(),
            memory_type: MemoryType::Correction,
            importance: 0.7,
            project: None,
            tags: vec![],
            pinned: false,
        }
    }

    #[test]
    fn one_tag_limit_for_adds_and_updates() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        let many = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
        let with_tags = |tags: Vec<String>| NewMemory { tags, ..memory("Tags are capped for every writer.") };
        let err = add(&mut j, with_tags(many(40_000)), &Origin::user(), Ts(1_000)).unwrap_err();
        assert!(matches!(&err, OpError::Invalid(m) if m.contains("at most 32")), "{err}");
        let err = add(&mut j, with_tags(vec!["x".repeat(MAX_TAG_CHARS + 1)]), &Origin::user(), Ts(1_000)).unwrap_err();
        assert!(matches!(&err, OpError::Invalid(m) if m.contains("longer than 64")), "{err}");
        let id = add(&mut j, with_tags(many(MAX_TAGS)), &Origin::user(), Ts(1_000)).unwrap();
        assert_eq!(require(j.store(), id.as_str()).unwrap().tags.len(), MAX_TAGS);
        let change = |n| MemoryChange { tags: Some(many(n)), ..MemoryChange::default() };
        assert!(matches!(update(&mut j, id.as_str(), change(MAX_TAGS + 1), Ts(2_000)), Err(OpError::Invalid(_))));
        update(&mut j, id.as_str(), change(3), Ts(2_000)).unwrap();
        assert_eq!(require(j.store(), id.as_str()).unwrap().tags.len(), 3);
    }

    /// `remove-demo` forgot demo memories with `forget`, whose fingerprint
    /// then refused the same lesson from the user's own sessions forever:
    /// removing data is not judging a text.
    #[test]
    fn removing_data_leaves_its_texts_learnable_and_a_forget_refuses_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        let (demo_text, judged_text) =
            ("Don't use npm here, this repo uses pnpm.", "The staging password is in the vault.");
        let demo = add(&mut j, memory(demo_text), &Origin::user(), Ts(1_000)).unwrap();
        let judged = add(&mut j, memory(judged_text), &Origin::user(), Ts(2_000)).unwrap();
        assert!(forget_data(&mut j, demo.as_str(), Some("demo data".into()), Ts(3_000)).unwrap());
        assert!(forget(&mut j, judged.as_str(), None, Ts(4_000)).unwrap());
        assert!(!forget_data(&mut j, demo.as_str(), None, Ts(4_500)).unwrap(), "already forgotten");
        let fingerprints = |j: &Journal| -> i64 {
            let sql = "SELECT COUNT(DISTINCT memory_id) FROM forgotten_fingerprints";
            j.store().conn().query_row(sql, [], |r| r.get(0)).unwrap()
        };
        assert_eq!(fingerprints(&j), 1, "only the judged text is fingerprinted");
        // Compaction clears both memories' own events but fingerprints only the judged one.
        j.compact().unwrap();
        assert_eq!(fingerprints(&j), 1);
        assert_eq!(require(j.store(), demo.as_str()).unwrap().content, "", "the demo memory's text is gone");
        // The same lesson from real data is a memory again; the forgotten one is refused.
        let real = add(&mut j, memory(demo_text), &Origin::user(), Ts(5_000)).unwrap();
        let m = require_live(j.store(), real.as_str()).unwrap();
        assert_eq!(m.content, demo_text);
        assert!(add(&mut j, memory(judged_text), &Origin::user(), Ts(6_000)).is_err(), "a forget sticks");
        let paraphrase = "The vault holds the password for staging.";
        assert!(add(&mut j, memory(paraphrase), &Origin::user(), Ts(6_500)).is_err(), "in other words too");
        // Replay agrees, and a second compaction leaves the real memory's text alone.
        j.compact().unwrap();
        assert_eq!(require_live(j.store(), real.as_str()).unwrap().content, demo_text);
    }

    #[test]
    fn agent_feedback_is_recorded_with_its_session_and_author() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        let new = NewMemory {
            text: "Run migrations with sqlx".into(),
            memory_type: MemoryType::Fact,
            importance: 0.6,
            project: None,
            tags: vec![],
            pinned: false,
        };
        let session = SessionKey::new("claude", "s1");
        let id = add(&mut j, new, &Origin::agent(Some(session.clone())), Ts(1_000)).unwrap();
        feedback(&mut j, id.as_str(), 0.9, Some("used it".into()), &Origin::agent(Some(session)), Ts(2_000)).unwrap();
        let d = show(j.store(), id.as_str()).unwrap();
        assert_eq!(d.memory.source, "mcp");
        assert_eq!(d.sessions, vec!["claude:s1".to_owned()]);
        assert_eq!((d.feedback[0].by.as_str(), d.feedback[0].session_key.as_deref()), ("agent", Some("claude:s1")));
        assert!(matches!(feedback(&mut j, "mem_x", 0.5, None, &Origin::user(), Ts(3)), Err(OpError::UnknownMemory(_))));
        assert!(matches!(
            feedback(&mut j, id.as_str(), f32::NAN, None, &Origin::user(), Ts(3)),
            Err(OpError::Invalid(_))
        ));
        assert!(parse_session("nocolon").is_err() && parse_session("codex:x").is_ok());
    }
}
