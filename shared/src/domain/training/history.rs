//! The user's history as training data: recorded sessions replayed through
//! the read side (`history.replayed`, written by `engram-trainer history`),
//! and the lessons the user gave more than once ("told twice").
//!
//! **Replayed lists** live in their own tables (`replayed_sessions`,
//! `replayed_lists`), never in `rankings`: nothing was served, so they count
//! in no α, success rate, usage signal or comparison with the baseline. They
//! are derived from the tapes, and a replay of the tapes rebuilds them.
//!
//! **Told twice.** A lesson is a live memory together with the memories the
//! dedup pipeline merged into it. It was *given* in every session the
//! extractor found it in (`memory_sessions`: the session it was learned from
//! and each session that said it again, at the turn that said it). A lesson
//! given in two or more sessions was given more than once; each later giving
//! is a *repeat*, and a repeat is *held* when the lesson had been given in an
//! earlier session and was not forgotten by then: a memory learned from the
//! first giving would have held it, so the user need not have said it again.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{Connection, params};

use crate::base::error::{Result, SqlContext};
use crate::base::ids::{MemoryId, SessionKey};
use crate::storage::event::{Event, HistoryReplayed};
use crate::storage::store::{Step, Store, data, finite_or};

/// `history.replayed`: the session's replay and its labelled lists (a later
/// replay of the same session replaces them).
pub(crate) fn apply(conn: &Connection, event: &Event, b: &HistoryReplayed) -> Step<()> {
    let Some(session) = &event.session else {
        return data("history.replayed without a session");
    };
    let told = serde_json::to_string(&b.told_twice).unwrap_or_else(|_| "[]".into());
    conn.prepare_cached(
        "INSERT OR REPLACE INTO replayed_sessions
             (session_key, event_id, replayer, project, started_ms, moments, ranked, lists, told_twice, confidence)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        session.as_str(),
        event.id.as_str(),
        b.replayer,
        b.project,
        b.started_ms,
        b.moments,
        b.ranked,
        u32::try_from(b.lists.len()).unwrap_or(u32::MAX),
        told,
        finite_or(b.confidence, 0.0),
    ])?;
    conn.prepare_cached("DELETE FROM replayed_lists WHERE session_key = ?1")?.execute([session.as_str()])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO replayed_lists
             (session_key, idx, project, trigger, query, at_ms, memory_ids, injected, labels, source, weight)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (i, l) in b.lists.iter().enumerate() {
        if l.labels.values().any(|v| !v.is_finite()) {
            return data("history.replayed with a non-finite label");
        }
        insert.execute(params![
            session.as_str(),
            i as i64,
            b.project,
            l.trigger,
            l.query,
            l.at_ms,
            serde_json::to_string(&l.memory_ids).unwrap_or_else(|_| "[]".into()),
            l.injected,
            serde_json::to_string(&l.labels).unwrap_or_else(|_| "{}".into()),
            l.source,
            finite_or(l.weight, 0.0),
        ])?;
    }
    Ok(())
}

/// Sessions already replayed.
pub fn replayed_sessions(store: &Store) -> Result<BTreeSet<SessionKey>> {
    let mut stmt = store.conn().prepare_cached("SELECT session_key FROM replayed_sessions").sql("list replayed")?;
    stmt.query_map([], |r| Ok(SessionKey(r.get(0)?)))
        .and_then(|rows| rows.collect::<rusqlite::Result<_>>())
        .sql("list replayed")
}

/// One labelled list of a replayed session, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredList {
    /// The session.
    pub session_key: SessionKey,
    /// Its project.
    pub project: Option<String>,
    /// When the session started (ms).
    pub started_ms: i64,
    /// `session_start`, `prompt` or `tool`.
    pub trigger: String,
    /// The query.
    pub query: String,
    /// The moment (ms).
    pub at_ms: i64,
    /// The pool in the baseline's order.
    pub memory_ids: Vec<MemoryId>,
    /// Confident labels.
    pub labels: BTreeMap<MemoryId, f32>,
    /// `told_twice`, `continuity` or both.
    pub source: String,
    /// Training weight.
    pub weight: f32,
}

/// Every labelled replayed list, sessions in the order they started.
pub fn stored_lists(store: &Store) -> Result<Vec<StoredList>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT l.session_key, l.project, s.started_ms, l.trigger, l.query, l.at_ms, l.memory_ids, l.labels,
                    l.source, l.weight
             FROM replayed_lists l JOIN replayed_sessions s ON s.session_key = l.session_key
             ORDER BY s.started_ms, l.session_key, l.idx",
        )
        .sql("read replayed lists")?;
    stmt.query_map([], |r| {
        let ids: String = r.get(6)?;
        let labels: String = r.get(7)?;
        Ok(StoredList {
            session_key: SessionKey(r.get(0)?),
            project: r.get(1)?,
            started_ms: r.get(2)?,
            trigger: r.get(3)?,
            query: r.get(4)?,
            at_ms: r.get(5)?,
            memory_ids: serde_json::from_str(&ids).unwrap_or_default(),
            labels: serde_json::from_str(&labels).unwrap_or_default(),
            source: r.get(8)?,
            weight: r.get::<_, f64>(9)? as f32,
        })
    })
    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
    .sql("read replayed lists")
}

/// One later giving of a lesson (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Repeat {
    /// The lesson's live memory.
    pub lesson: MemoryId,
    /// The lesson's memories learned in earlier sessions than this one
    /// (those a replay of this session may have ranked).
    pub earlier: Vec<MemoryId>,
    /// The session that gave it again.
    pub session: SessionKey,
    /// When (ms).
    pub at_ms: i64,
    /// The lesson's project.
    pub project: Option<String>,
    /// Held: given in an earlier session and not forgotten by then.
    pub held: bool,
}

/// The "told twice" figures of one project.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ToldTwice {
    /// The project (`None`: memories of no project).
    pub project: Option<String>,
    /// Live lessons.
    pub lessons: u32,
    /// Lessons given in two or more sessions.
    pub given_more_than_once: u32,
    /// Of those, lessons a memory already held at a later giving.
    pub held: u32,
    /// Later givings a memory held (what the user need not have said).
    pub repeats_held: u32,
}

struct Member {
    id: MemoryId,
    created_ms: i64,
    source_session: Option<String>,
}

struct Lesson {
    root: MemoryId,
    project: Option<String>,
    forgotten_ms: Option<i64>,
    members: Vec<Member>,
    /// (session, first seen) over the members, earliest giving per session.
    givings: BTreeMap<String, i64>,
}

fn lessons(store: &Store) -> Result<Vec<Lesson>> {
    let conn = store.conn();
    // Absorbed → survivor (a memory the dedup pipeline merged into another).
    let mut survivor: BTreeMap<String, String> = BTreeMap::new();
    {
        let mut stmt = conn
            .prepare_cached("SELECT absorbed, survivor_id FROM memory_merges ORDER BY created_ms, event_id")
            .sql("read merges")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).sql("read merges")?;
        for row in rows {
            let (absorbed, to) = row.sql("read merges")?;
            // `absorbed` is a JSON list in some writers' rows, a bare id in others.
            let ids: Vec<String> = serde_json::from_str(&absorbed).unwrap_or_else(|_| vec![absorbed.clone()]);
            for id in ids {
                survivor.insert(id, to.clone());
            }
        }
    }
    let root_of = |id: &str| -> String {
        let mut cur = id.to_owned();
        for _ in 0..16 {
            match survivor.get(&cur) {
                Some(next) if next != &cur => cur = next.clone(),
                _ => break,
            }
        }
        cur
    };
    type Row = (String, Option<String>, i64, Option<String>, bool, Option<String>);
    let rows: Vec<Row> = conn
        .prepare_cached(
            "SELECT id, project, created_ms, source_session, is_deleted, deleted_at FROM memories ORDER BY id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
                .collect::<rusqlite::Result<Vec<Row>>>()
        })
        .sql("read memories")?;
    let mut by_root: BTreeMap<String, Lesson> = BTreeMap::new();
    let mut root_row: BTreeMap<String, (Option<String>, bool, Option<i64>)> = BTreeMap::new();
    for (id, project, created_ms, source_session, deleted, deleted_at) in rows {
        let forgotten =
            deleted.then(|| deleted_at.as_deref().and_then(crate::base::time::Ts::parse).map_or(i64::MIN, |t| t.0));
        root_row.insert(id.clone(), (project, deleted, forgotten));
        let root = root_of(&id);
        by_root
            .entry(root.clone())
            .or_insert_with(|| Lesson {
                root: MemoryId(root),
                project: None,
                forgotten_ms: None,
                members: Vec::new(),
                givings: BTreeMap::new(),
            })
            .members
            .push(Member { id: MemoryId(id), created_ms, source_session });
    }
    let mut stmt = conn
        .prepare_cached("SELECT session_key, first_seen_ms FROM memory_sessions WHERE memory_id = ?1")
        .sql("read memory sessions")?;
    let mut out = Vec::new();
    for (root, mut lesson) in by_root {
        let Some((project, deleted, forgotten)) = root_row.get(&root).cloned() else { continue };
        if deleted {
            // A forgotten lesson was not one worth keeping.
            continue;
        }
        lesson.project = project;
        lesson.forgotten_ms = forgotten;
        for m in &lesson.members {
            let rows = stmt
                .query_map([m.id.as_str()], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .sql("read memory sessions")?;
            for (s, at) in rows {
                let e = lesson.givings.entry(s).or_insert(at);
                *e = (*e).min(at);
            }
        }
        out.push(lesson);
    }
    Ok(out)
}

/// Every later giving of a lesson, oldest first (see the module docs).
pub fn repeats(store: &Store) -> Result<Vec<Repeat>> {
    let mut out = Vec::new();
    for lesson in lessons(store)? {
        if lesson.givings.len() < 2 {
            continue;
        }
        let mut givings: Vec<(&String, i64)> = lesson.givings.iter().map(|(s, t)| (s, *t)).collect();
        givings.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)));
        let first_at = givings[0].1;
        for &(session, at) in &givings[1..] {
            let earlier: Vec<MemoryId> = lesson
                .members
                .iter()
                .filter(|m| m.created_ms < at && m.source_session.as_deref() != Some(session.as_str()))
                .map(|m| m.id.clone())
                .collect();
            out.push(Repeat {
                lesson: lesson.root.clone(),
                earlier,
                session: SessionKey(session.clone()),
                at_ms: at,
                project: lesson.project.clone(),
                held: first_at < at && lesson.forgotten_ms.is_none_or(|f| f > at),
            });
        }
    }
    out.sort_by(|a, b| a.at_ms.cmp(&b.at_ms).then_with(|| a.lesson.cmp(&b.lesson)));
    Ok(out)
}

/// The "told twice" figures per project, the projects in name order (memories
/// of no project last).
pub fn told_twice(store: &Store) -> Result<Vec<ToldTwice>> {
    let all = lessons(store)?;
    let reps = repeats(store)?;
    let mut by: BTreeMap<Option<String>, ToldTwice> = BTreeMap::new();
    for l in &all {
        let t = by
            .entry(l.project.clone())
            .or_insert_with(|| ToldTwice { project: l.project.clone(), ..ToldTwice::default() });
        t.lessons += 1;
        if l.givings.len() >= 2 {
            t.given_more_than_once += 1;
        }
    }
    let mut held_lessons: BTreeSet<&MemoryId> = BTreeSet::new();
    for r in &reps {
        if r.held
            && let Some(t) = by.get_mut(&r.project)
        {
            t.repeats_held += 1;
            if held_lessons.insert(&r.lesson) {
                t.held += 1;
            }
        }
    }
    let mut out: Vec<ToldTwice> = by.into_values().collect();
    out.sort_by(|a, b| (a.project.is_none(), &a.project).cmp(&(b.project.is_none(), &b.project)));
    Ok(out)
}

/// The figures of every project together.
pub fn total(per_project: &[ToldTwice]) -> ToldTwice {
    let mut t = ToldTwice::default();
    for p in per_project {
        t.lessons += p.lessons;
        t.given_more_than_once += p.given_more_than_once;
        t.held += p.held;
        t.repeats_held += p.repeats_held;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::paths::Paths;
    use crate::base::time::Ts;
    use crate::storage::event::*;
    use crate::storage::journal::Journal;

    const T: i64 = 1_780_000_000_000;
    const HOUR: i64 = 3_600_000;

    fn added(id: &str, text: &str, project: &str, session: &SessionKey, at: i64) -> Event {
        Event::new(
            Ts(at),
            "test",
            Some(session.clone()),
            Body::MemoryAdded(MemoryAdded {
                memory_id: id.into(),
                content: text.into(),
                importance: 0.5,
                project: Some(project.into()),
                source_session: Some(session.clone()),
                ..MemoryAdded::default()
            }),
        )
    }

    fn seen(id: &str, session: &SessionKey, at: i64) -> Event {
        Event::new(
            Ts(at),
            "test",
            Some(session.clone()),
            Body::MemoryUpdated(MemoryUpdated {
                memory_id: id.into(),
                occurrences: 1,
                seen_in: Some(session.clone()),
                ..MemoryUpdated::default()
            }),
        )
    }

    fn home() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        (dir, j)
    }

    fn s(n: u32) -> SessionKey {
        SessionKey::new("claude", &format!("s{n}"))
    }

    #[test]
    fn a_lesson_given_again_in_a_later_session_is_a_held_repeat() {
        let (_d, mut j) = home();
        j.append(&[
            added("a", "Use pnpm, never npm, in this repository", "web", &s(1), T),
            added("b", "Run make seed before make e2e", "web", &s(1), T + 1),
            added("c", "The API listens on port 8081 in development", "api", &s(1), T + 2),
            // a: said again in s2 and s3 (the extractor merged it).
            seen("a", &s(2), T + 10 * HOUR),
            seen("a", &s(3), T + 20 * HOUR),
            // d: learned in s2, merged later into b by the dedup pipeline.
            added("d", "Seed the database before the e2e tests", "web", &s(2), T + 11 * HOUR),
            Event::new(
                Ts(T + 30 * HOUR),
                "test",
                None,
                Body::MemoriesMerged(MemoriesMerged {
                    survivor: "b".into(),
                    absorbed: vec!["d".into()],
                    mode: "incremental".into(),
                    pass: 1,
                    by: "deterministic".into(),
                    ..MemoriesMerged::default()
                }),
            ),
            // c: forgotten before it was said again: not held then, and a
            // forgotten lesson is no lesson at all.
            Event::new(
                Ts(T + 5 * HOUR),
                "test",
                None,
                Body::MemoryForgotten(MemoryForgotten {
                    memory_id: "c".into(),
                    reason: "wrong".into(),
                    relearnable: false,
                }),
            ),
            seen("c", &s(4), T + 40 * HOUR),
        ])
        .unwrap();
        let reps = repeats(j.store()).unwrap();
        let got: Vec<(&str, &str, i64, bool)> =
            reps.iter().map(|r| (r.lesson.as_str(), r.session.as_str(), r.at_ms - T, r.held)).collect();
        assert_eq!(
            got,
            [
                ("a", "claude:s2", 10 * HOUR, true),
                ("b", "claude:s2", 11 * HOUR, true),
                ("a", "claude:s3", 20 * HOUR, true)
            ]
        );
        // What a replay of s2 may have ranked: b (from s1), not d (learned in s2 itself).
        assert_eq!(reps[1].earlier, vec![MemoryId::from("b")]);
        let figures = told_twice(j.store()).unwrap();
        assert_eq!(
            figures,
            vec![ToldTwice {
                project: Some("web".into()),
                lessons: 2,
                given_more_than_once: 2,
                held: 2,
                repeats_held: 3
            }]
        );
        assert_eq!(total(&figures).lessons, 2);
    }

    #[test]
    fn a_replayed_session_fills_its_own_tables_and_nothing_served() {
        let (_d, mut j) = home();
        j.append(&[added("a", "Use pnpm, never npm, in this repository", "web", &s(1), T)]).unwrap();
        let before = crate::storage::store::canonical_dump(j.store().conn(), false).unwrap();
        let list = ReplayedList {
            trigger: "prompt".into(),
            query: "install the deps".into(),
            at_ms: T + HOUR,
            memory_ids: vec!["a".into(), "b".into()],
            injected: 1,
            labels: [("a".into(), 1.0)].into(),
            source: "told_twice".into(),
            weight: 0.5,
        };
        let event = |lists: Vec<ReplayedList>| {
            Event::new(
                Ts(T + 2 * HOUR),
                "trainer",
                Some(s(2)),
                Body::HistoryReplayed(HistoryReplayed {
                    replayer: "history-v1".into(),
                    project: Some("web".into()),
                    started_ms: T + HOUR,
                    moments: 4,
                    ranked: 3,
                    lists,
                    told_twice: vec![("a".into(), T + 90 * 60_000)],
                    confidence: 0.8,
                }),
            )
        };
        j.append(&[event(vec![list.clone(), list.clone()])]).unwrap();
        let stored = stored_lists(j.store()).unwrap();
        assert_eq!(stored.len(), 2);
        assert_eq!(stored[0].labels.get(&MemoryId::from("a")), Some(&1.0));
        assert_eq!(stored[0].started_ms, T + HOUR);
        assert_eq!(replayed_sessions(j.store()).unwrap().into_iter().collect::<Vec<_>>(), vec![s(2)]);
        let count = |sql: &str| -> i64 { j.store().conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT COUNT(*) FROM rankings"), 0, "nothing was served");
        assert_eq!(count("SELECT access_count FROM memories WHERE id = 'a'"), 0);
        // Only the replay's own tables changed (and the log of applied events).
        let tables = |dump: &str| -> BTreeMap<String, String> {
            dump.split("\n## ")
                .filter_map(|t| t.split_once('\n'))
                .map(|(head, rows)| (head.trim_start_matches("## ").to_owned(), rows.to_owned()))
                .collect()
        };
        let (b, a) =
            (tables(&before), tables(&crate::storage::store::canonical_dump(j.store().conn(), false).unwrap()));
        let changed: Vec<&String> = a.keys().filter(|t| b.get(*t) != a.get(*t)).collect();
        assert!(changed.iter().all(|t| t.starts_with("replayed_") || t.starts_with("applied_events")), "{changed:#?}");
        assert!(changed.iter().any(|t| t.starts_with("replayed_lists")));
        // A later replay of the same session replaces its lists.
        j.append(&[Event { id: crate::base::ids::EventId("ev_again".into()), ..event(vec![list]) }]).unwrap();
        assert_eq!(stored_lists(j.store()).unwrap().len(), 1);
    }
}
