//! The memory commands: each state change is one event appended through the
//! journal (`memory.added`, `.updated`, `.pinned`, `.unpinned`,
//! `.deprecated`, `.forgotten`, `.feedback`), after checking against the
//! projection that every memory it names exists, so that an unknown id is an
//! error before anything is written. Texts and tags are redacted like
//! everything else that reaches a tape.

use serde::Serialize;
use shared::event::{
    Body, Event, MemoryAdded, MemoryDeprecated, MemoryFeedback, MemoryForgotten, MemoryRef, MemoryUpdated,
    SCHEMA_VERSION, memory_type,
};
use shared::ids::{EventId, MemoryId, SessionKey};
use shared::journal::Journal;
use shared::store::Store;
use shared::store::ingest::{FeedbackRecord, MemoryFilter, MemoryRecord};
use shared::time::Ts;

use crate::adapter::WRITER;
use crate::error::{EngramContext, Error};
use crate::redact;

/// Memory types the commands accept.
pub const TYPES: &[&str] = &[
    memory_type::FACT,
    memory_type::DECISION,
    memory_type::PREFERENCE,
    memory_type::PATTERN,
    memory_type::ISSUE,
    memory_type::CONTEXT,
    memory_type::CORRECTION,
    memory_type::CONVENTION,
    memory_type::GOTCHA,
    memory_type::STRUGGLE,
];

/// Longest memory text accepted, in characters.
pub const MAX_TEXT: usize = 4000;

/// A memory to add.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMemory {
    /// The text.
    pub text: String,
    /// One of [`TYPES`].
    pub memory_type: String,
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
    pub memory_type: Option<String>,
    /// New importance.
    pub importance: Option<f32>,
    /// New tag set.
    pub tags: Option<Vec<String>>,
    /// New project.
    pub project: Option<String>,
}

/// A memory with its sessions and feedback, for `memory show`.
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

fn event(now: Ts, session: Option<SessionKey>, body: Body) -> Event {
    Event { v: SCHEMA_VERSION, id: EventId::generate(now), ts: now, writer: WRITER.to_owned(), session, body }
}

fn check_text(text: &str) -> Result<String, Error> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::InvalidArgument("the memory text is empty".into()));
    }
    if t.chars().count() > MAX_TEXT {
        return Err(Error::InvalidArgument(format!("the memory text is longer than {MAX_TEXT} characters")));
    }
    Ok(redact::redact_text(t).into_owned())
}

fn check_type(t: &str) -> Result<String, Error> {
    let t = t.trim().to_lowercase();
    if TYPES.contains(&t.as_str()) {
        Ok(t)
    } else {
        Err(Error::InvalidArgument(format!("unknown memory type {t:?}; one of: {}", TYPES.join(", "))))
    }
}

fn check_unit(what: &str, x: f32) -> Result<f32, Error> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(Error::InvalidArgument(format!("{what} must be between 0 and 1, not {x}")))
    }
}

fn check_tags(tags: &[String]) -> Result<Vec<String>, Error> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = t.trim().to_lowercase();
        if t.is_empty() || t.chars().count() > 64 {
            return Err(Error::InvalidArgument(format!("tag {t:?} is empty or longer than 64 characters")));
        }
        out.push(redact::redact_text(&t).into_owned());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The memory `id`, which must exist (forgotten or not).
pub fn require(store: &Store, id: &str) -> Result<MemoryRecord, Error> {
    store.memory(id).context("read the memory")?.ok_or_else(|| Error::UnknownMemory { id: id.to_owned() })
}

/// The memory `id`, which must exist and not be forgotten.
fn require_live(store: &Store, id: &str) -> Result<MemoryRecord, Error> {
    let m = require(store, id)?;
    if m.is_deleted {
        return Err(Error::InvalidArgument(format!("memory {id} was forgotten")));
    }
    Ok(m)
}

fn append(journal: &mut Journal, e: Event) -> Result<(), Error> {
    let receipt = journal.append(std::slice::from_ref(&e)).context("append to the tape log")?;
    if !receipt.applied {
        tracing::warn!(lsn = receipt.first_lsn, "the event is on tape but not yet projected");
    }
    Ok(())
}

/// Adds a memory; returns its new id.
pub fn add(journal: &mut Journal, m: NewMemory, now: Ts) -> Result<MemoryId, Error> {
    let content = check_text(&m.text)?;
    let memory_type = check_type(&m.memory_type)?;
    let importance = check_unit("importance", m.importance)?;
    let tags = check_tags(&m.tags)?;
    let id = MemoryId::generate(now);
    let body = Body::MemoryAdded(MemoryAdded {
        memory_id: id.clone(),
        content,
        memory_type,
        importance,
        project: m.project.filter(|p| !p.trim().is_empty()),
        tags,
        pinned: m.pinned,
        source: "explicit".to_owned(),
        source_session: None,
        source_event: None,
        speaker: None,
    });
    append(journal, event(now, None, body))?;
    Ok(id)
}

/// Changes a memory's text, type, importance, tags or project.
pub fn update(journal: &mut Journal, id: &str, change: MemoryChange, now: Ts) -> Result<(), Error> {
    let body = MemoryUpdated {
        memory_id: MemoryId::from(id),
        content: change.text.as_deref().map(check_text).transpose()?,
        memory_type: change.memory_type.as_deref().map(check_type).transpose()?,
        importance: change.importance.map(|x| check_unit("importance", x)).transpose()?,
        tags: change.tags.as_deref().map(check_tags).transpose()?,
        project: change.project,
        occurrences: 0,
        seen_in: None,
    };
    if body.content.is_none()
        && body.memory_type.is_none()
        && body.importance.is_none()
        && body.tags.is_none()
        && body.project.is_none()
    {
        return Err(Error::InvalidArgument(
            "nothing to update: give --text, --type, --importance, --tag or --project".into(),
        ));
    }
    require_live(journal.store(), id)?;
    append(journal, event(now, None, Body::MemoryUpdated(body)))
}

/// Pins or unpins a memory.
pub fn set_pinned(journal: &mut Journal, id: &str, pinned: bool, now: Ts) -> Result<(), Error> {
    require_live(journal.store(), id)?;
    let r = MemoryRef { memory_id: MemoryId::from(id) };
    append(journal, event(now, None, if pinned { Body::MemoryPinned(r) } else { Body::MemoryUnpinned(r) }))
}

/// Marks a memory outdated, optionally replaced by another.
pub fn deprecate(
    journal: &mut Journal,
    id: &str,
    reason: Option<String>,
    superseded_by: Option<String>,
    now: Ts,
) -> Result<(), Error> {
    require_live(journal.store(), id)?;
    if let Some(other) = &superseded_by {
        if other == id {
            return Err(Error::InvalidArgument("a memory cannot supersede itself".into()));
        }
        require_live(journal.store(), other)?;
    }
    let body = Body::MemoryDeprecated(MemoryDeprecated {
        memory_id: MemoryId::from(id),
        reason: reason.unwrap_or_default(),
        superseded_by: superseded_by.map(MemoryId),
    });
    append(journal, event(now, None, body))
}

/// Forgets a memory: hidden at once, its text removed from the tapes by the
/// next `compact`. `false` when it was already forgotten (nothing appended).
pub fn forget(journal: &mut Journal, id: &str, reason: Option<String>, now: Ts) -> Result<bool, Error> {
    if require(journal.store(), id)?.is_deleted {
        return Ok(false);
    }
    let reason = reason.map(|r| redact::redact_text(&r).into_owned()).unwrap_or_default();
    append(
        journal,
        event(now, None, Body::MemoryForgotten(MemoryForgotten { memory_id: MemoryId::from(id), reason })),
    )?;
    Ok(true)
}

/// Records explicit relevance feedback (by the user), optionally for a session.
pub fn feedback(
    journal: &mut Journal,
    id: &str,
    relevance: f32,
    reason: Option<String>,
    session: Option<String>,
    now: Ts,
) -> Result<(), Error> {
    let relevance = check_unit("relevance", relevance)?;
    let session = session.map(|s| {
        if s.contains(':') {
            Ok(SessionKey(s))
        } else {
            Err(Error::InvalidArgument(format!("session {s:?} is not a session key (harness:id)")))
        }
    });
    let session = session.transpose()?;
    require_live(journal.store(), id)?;
    let body = Body::MemoryFeedback(MemoryFeedback {
        memory_id: MemoryId::from(id),
        relevance,
        reason: reason.map(|r| redact::redact_text(&r).into_owned()).unwrap_or_default(),
        by: "user".to_owned(),
    });
    append(journal, event(now, session, body))
}

/// Live memories, pinned first then newest.
pub fn list(store: &Store, filter: &MemoryFilter) -> Result<Vec<MemoryRecord>, Error> {
    store.memories(filter).context("list memories")
}

/// One memory with its sessions and feedback.
pub fn show(store: &Store, id: &str) -> Result<MemoryDetails, Error> {
    let memory = require(store, id)?;
    let sessions = store.memory_sessions(id).context("list the memory's sessions")?;
    let feedback = store.memory_feedback(id).context("list the memory's feedback")?;
    Ok(MemoryDetails { memory, sessions: sessions.into_iter().map(|s| s.0).collect(), feedback })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::paths::Paths;

    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().expect("tmp");
        let j = Journal::open(&Paths::at(dir.path()), WRITER).expect("journal");
        (dir, j)
    }

    fn new(text: &str) -> NewMemory {
        NewMemory {
            text: text.into(),
            memory_type: "convention".into(),
            importance: 0.7,
            project: Some("web".into()),
            tags: vec!["PNPM".into(), "pnpm".into()],
            pinned: false,
        }
    }

    fn last_lsn(j: &Journal) -> u64 {
        j.tape().lock().expect("lock").last_lsn()
    }

    #[test]
    fn every_change_is_one_event_and_unknown_ids_write_nothing() {
        let (_dir, mut j) = journal();
        let id = add(&mut j, new("Use pnpm; token=sk-ant-abcdefghijklmnopqrstuvwxyz"), Ts(1_000)).expect("add");
        let m = require(j.store(), id.as_str()).expect("exists");
        assert_eq!(m.tags, vec!["pnpm".to_owned()]);
        assert!(!m.content.contains("sk-ant"), "{}", m.content);
        update(&mut j, id.as_str(), MemoryChange { importance: Some(0.9), ..Default::default() }, Ts(2_000))
            .expect("update");
        set_pinned(&mut j, id.as_str(), true, Ts(3_000)).expect("pin");
        feedback(&mut j, id.as_str(), 0.8, Some("useful".into()), Some("claude:s1".into()), Ts(4_000))
            .expect("feedback");
        let d = show(j.store(), id.as_str()).expect("show");
        assert!(d.memory.pinned && (d.memory.importance - 0.9).abs() < 1e-6);
        assert_eq!(d.feedback.len(), 1);
        assert_eq!(last_lsn(&j), 4);

        for result in [
            update(&mut j, "mem_nope", MemoryChange { text: Some("x".into()), ..Default::default() }, Ts(5))
                .map(|_| ()),
            set_pinned(&mut j, "mem_nope", false, Ts(5)),
            deprecate(&mut j, "mem_nope", None, None, Ts(5)),
            deprecate(&mut j, id.as_str(), None, Some("mem_nope".into()), Ts(5)),
            forget(&mut j, "mem_nope", None, Ts(5)).map(|_| ()),
            feedback(&mut j, "mem_nope", 0.5, None, None, Ts(5)),
        ] {
            let err = result.expect_err("unknown id");
            assert!(matches!(err, Error::UnknownMemory { .. }), "{err}");
            assert_eq!(err.exit_code(), 2);
        }
        assert!(feedback(&mut j, id.as_str(), 1.5, None, None, Ts(5)).is_err());
        assert!(add(&mut j, NewMemory { memory_type: "nonsense".into(), ..new("x y z") }, Ts(5)).is_err());
        assert!(update(&mut j, id.as_str(), MemoryChange::default(), Ts(5)).is_err());
        assert_eq!(last_lsn(&j), 4, "nothing appended for rejected commands");

        assert!(forget(&mut j, id.as_str(), Some("obsolete".into()), Ts(6_000)).expect("forget"));
        assert!(!forget(&mut j, id.as_str(), None, Ts(7_000)).expect("again"));
        assert!(list(j.store(), &MemoryFilter::default()).expect("list").is_empty());
        assert!(set_pinned(&mut j, id.as_str(), true, Ts(8_000)).is_err(), "a forgotten memory cannot be pinned");
        assert_eq!(last_lsn(&j), 5);
    }
}
