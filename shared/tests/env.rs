//! The environment model's projection (`shared::env::store`, migration
//! 0007): `env.detected` events in, projects, sessions and memories out;
//! replay equals incremental apply.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use shared::event::*;
use shared::ids::{EventId, MemoryId, SessionKey};
use shared::journal::{Journal, replay};
use shared::paths::Paths;
use shared::store::{Store, canonical_dump};
use shared::time::Ts;

const SESSIONS: &[&str] = &["claude:s0", "codex:s1", "claude:s2", "claude:s3"];
/// (key, name, root) of the projects the events detect.
const PROJECTS: &[(&str, &str, &str)] = &[
    ("/work/Demo", "Demo", "/work/Demo"),
    ("github.com/acme/api", "api", "/src/api"),
    ("/play/api", "api", "/play/api"),
];
const TAGS: &[&str] = &["docker", "frontend", "nodejs", "npm", "pnpm", "react", "rust"];

fn home() -> (tempfile::TempDir, Paths) {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path().join("home"));
    (dir, paths)
}

fn event(i: usize, session: Option<&str>, body: Body) -> Event {
    Event {
        v: SCHEMA_VERSION,
        id: EventId(format!("ev_{i:05}")),
        ts: Ts(1_700_000_000_000 + i as i64 * 1000),
        writer: "test".into(),
        session: session.map(SessionKey::from),
        body,
    }
}

fn started(i: usize, session: &str, cwd: &str) -> Event {
    let key = SessionKey::from(session);
    event(
        i,
        Some(session),
        Body::SessionStarted(SessionStarted {
            harness: key.harness().into(),
            harness_session_id: key.harness_id().into(),
            project: shared::hook::project_of(cwd),
            cwd: Some(cwd.into()),
            ..Default::default()
        }),
    )
}

fn detected(i: usize, session: Option<&str>, project: usize, cwd: &str, tags: &[&str]) -> Event {
    let (key, name, root) = PROJECTS[project];
    let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
    event(
        i,
        session,
        Body::EnvDetected(EnvDetected {
            cwd: cwd.into(),
            root: root.into(),
            project: key.into(),
            name: name.into(),
            marker: Some(".git".into()),
            stack: tags.clone(),
            tags,
            ..Default::default()
        }),
    )
}

fn added(i: usize, session: &str, id: &str, project: Option<&str>) -> Event {
    event(
        i,
        Some(session),
        Body::MemoryAdded(MemoryAdded {
            memory_id: id.into(),
            content: format!("lesson {id} about the build"),
            memory_type: "convention".into(),
            importance: 0.7,
            project: project.map(str::to_owned),
            source: "extracted".into(),
            source_session: Some(session.into()),
            ..Default::default()
        }),
    )
}

fn one<T: rusqlite::types::FromSql>(store: &Store, sql: &str, p: &str) -> T {
    store.conn().query_row(sql, [p], |r| r.get(0)).unwrap()
}

#[test]
fn a_session_recorded_before_detection_gets_its_repository_on_detection() {
    let (_d, paths) = home();
    let mut j = Journal::open(&paths, "test").unwrap();
    // What an older version recorded: the folder the session had changed into.
    j.append(&[
        started(1, "claude:s0", "/work/Demo/todo-app/types"),
        added(2, "claude:s0", "mem_types", Some("types")),
        added(3, "claude:s0", "mem_none", None),
    ])
    .unwrap();
    let project = |id: &str| one::<Option<String>>(j.store(), "SELECT project FROM memories WHERE id = ?1", id);
    assert_eq!(project("mem_types").as_deref(), Some("types"));
    // The detection (a scan's backfill) files it under the repository.
    j.append(&[detected(4, Some("claude:s0"), 0, "/work/Demo/todo-app/types", &["nodejs", "npm"])]).unwrap();
    let project = |id: &str| one::<Option<String>>(j.store(), "SELECT project FROM memories WHERE id = ?1", id);
    assert_eq!(project("mem_types").as_deref(), Some("/work/Demo"));
    assert_eq!(project("mem_none"), None, "a memory without a project stays global");
    let session = |j: &Journal| {
        one::<Option<String>>(j.store(), "SELECT project FROM sessions WHERE session_key = ?1", "claude:s0")
    };
    assert_eq!(session(&j).as_deref(), Some("/work/Demo"));
    // Later events keep it: a restarted session, a memory with the folder name.
    j.append(&[started(5, "claude:s0", "/work/Demo/todo-app/types"), added(6, "claude:s0", "mem_late", Some("types"))])
        .unwrap();
    assert_eq!(session(&j).as_deref(), Some("/work/Demo"));
    let project = |id: &str| one::<Option<String>>(j.store(), "SELECT project FROM memories WHERE id = ?1", id);
    assert_eq!(project("mem_late").as_deref(), Some("/work/Demo"));
    // A key given explicitly is kept.
    j.append(&[added(7, "claude:s0", "mem_other", Some("github.com/acme/api"))]).unwrap();
    let project = |id: &str| one::<Option<String>>(j.store(), "SELECT project FROM memories WHERE id = ?1", id);
    assert_eq!(project("mem_other").as_deref(), Some("github.com/acme/api"));
    let (name, stack, count): (String, String, i64) = j
        .store()
        .conn()
        .query_row("SELECT name, detected_stack, session_count FROM projects WHERE key = '/work/Demo'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((name.as_str(), stack.as_str(), count), ("Demo", r#"["nodejs","npm"]"#, 1));
}

#[test]
fn two_repositories_with_one_folder_name_stay_apart() {
    let (_d, paths) = home();
    let mut j = Journal::open(&paths, "test").unwrap();
    j.append(&[
        started(1, "claude:s0", "/src/api"),
        detected(2, Some("claude:s0"), 1, "/src/api", &["go"]),
        added(3, "claude:s0", "mem_work", Some("api")),
        started(4, "claude:s1", "/play/api"),
        detected(5, Some("claude:s1"), 2, "/play/api", &["rust"]),
        added(6, "claude:s1", "mem_play", Some("api")),
    ])
    .unwrap();
    let project = |id: &str| one::<String>(j.store(), "SELECT project FROM memories WHERE id = ?1", id);
    assert_eq!(project("mem_work"), "github.com/acme/api");
    assert_eq!(project("mem_play"), "/play/api");
    let names: i64 =
        j.store().conn().query_row("SELECT COUNT(*) FROM projects WHERE name = 'api'", [], |r| r.get(0)).unwrap();
    assert_eq!(names, 2);
}

#[test]
fn a_session_moving_project_moves_its_tags_and_counts() {
    let (_d, paths) = home();
    let mut j = Journal::open(&paths, "test").unwrap();
    j.append(&[
        detected(1, Some("claude:s0"), 0, "/work/Demo", &["nodejs", "react"]),
        detected(2, Some("claude:s1"), 0, "/work/Demo", &["nodejs", "npm"]),
        detected(3, Some("claude:s0"), 2, "/play/api", &["rust"]),
    ])
    .unwrap();
    let count = |k: &str| one::<i64>(j.store(), "SELECT session_count FROM projects WHERE key = ?1", k);
    assert_eq!((count("/work/Demo"), count("/play/api")), (1, 1));
    let tag = |t: &str| one::<i64>(j.store(), "SELECT sessions FROM env_tags WHERE tag = ?1", t);
    assert_eq!((tag("nodejs"), tag("npm"), tag("rust")), (1, 1, 1));
    let react: Option<i64> =
        j.store().conn().query_row("SELECT sessions FROM env_tags WHERE tag = 'react'", [], |r| r.get(0)).ok();
    assert_eq!(react, None, "no session carries react any more");
    // The stack of a project is the union of what was detected in it.
    let stack = one::<String>(j.store(), "SELECT detected_stack FROM projects WHERE key = ?1", "/work/Demo");
    assert_eq!(stack, r#"["nodejs","npm","react"]"#);
}

#[test]
fn a_memory_seen_in_two_projects_keeps_the_tags_they_share() {
    let (_d, paths) = home();
    let mut j = Journal::open(&paths, "test").unwrap();
    j.append(&[
        detected(1, Some("claude:s0"), 0, "/work/Demo", &["frontend", "nodejs", "npm", "react", "vite"]),
        added(2, "claude:s0", "mem_x", Some("/work/Demo")),
    ])
    .unwrap();
    let env = |j: &Journal| -> (String, i64) {
        j.store()
            .conn()
            .query_row("SELECT env_tags, env_projects FROM memories WHERE id = 'mem_x'", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap()
    };
    assert_eq!(env(&j), (r#"["frontend","nodejs","npm","react","vite"]"#.to_owned(), 1));
    // Seen again in a session of another project, detected only afterwards.
    j.append(&[
        event(
            3,
            None,
            Body::MemoryUpdated(MemoryUpdated {
                memory_id: "mem_x".into(),
                occurrences: 1,
                seen_in: Some("claude:s1".into()),
                ..Default::default()
            }),
        ),
        detected(4, Some("claude:s1"), 1, "/src/api", &["docker", "frontend", "nodejs", "npm", "react"]),
    ])
    .unwrap();
    assert_eq!(env(&j), (r#"["frontend","nodejs","npm","react"]"#.to_owned(), 2));
}

/// One generated event of the environment model.
#[derive(Clone, Debug)]
enum Gen {
    Started(usize, u8),
    Detected(Option<usize>, usize, Vec<usize>),
    Added(usize, usize, u8),
    Content(usize),
    Seen(usize, usize),
    Duplicate(usize),
}

fn any_event() -> impl Strategy<Value = Gen> {
    let s = 0..SESSIONS.len();
    prop_oneof![
        2 => (s.clone(), 0u8..3).prop_map(|(s, c)| Gen::Started(s, c)),
        3 => (prop::option::weighted(0.9, s.clone()), 0..PROJECTS.len(), prop::collection::vec(0..TAGS.len(), 0..5))
            .prop_map(|(s, p, t)| Gen::Detected(s, p, t)),
        3 => (s.clone(), 0usize..6, 0u8..4).prop_map(|(s, m, p)| Gen::Added(s, m, p)),
        1 => s.clone().prop_map(Gen::Content),
        2 => (0usize..1000, s.clone()).prop_map(|(m, s)| Gen::Seen(m, s)),
        1 => (0usize..1000).prop_map(Gen::Duplicate),
    ]
}

const CWDS: &[&str] = &["/work/Demo/todo-app/types", "/src/api", "/play/api/src"];

fn build(items: &[Gen]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for (i, g) in items.iter().enumerate() {
        let e = match g {
            Gen::Started(s, c) => started(i, SESSIONS[*s], CWDS[*c as usize]),
            Gen::Detected(s, p, tags) => {
                let tags: BTreeSet<&str> = tags.iter().map(|t| TAGS[*t]).collect();
                let tags: Vec<&str> = tags.into_iter().collect();
                detected(i, s.map(|s| SESSIONS[s]), *p, CWDS[*p], &tags)
            }
            Gen::Added(s, m, p) => {
                let project = match p {
                    0 => None,
                    1 => Some("types"),
                    2 => Some("api"),
                    _ => Some(PROJECTS[m % PROJECTS.len()].0),
                };
                added(i, SESSIONS[*s], &format!("mem_{i}_{m}"), project)
            }
            Gen::Content(s) => {
                event(i, Some(SESSIONS[*s]), Body::MsgIn(MsgIn { text: "run the tests".into(), ..Default::default() }))
            }
            Gen::Seen(m, s) => {
                let ids: Vec<&MemoryId> = out
                    .iter()
                    .filter_map(|e| match &e.body {
                        Body::MemoryAdded(a) => Some(&a.memory_id),
                        _ => None,
                    })
                    .collect();
                let Some(id) = ids.get(m % ids.len().max(1)) else { continue };
                event(
                    i,
                    None,
                    Body::MemoryUpdated(MemoryUpdated {
                        memory_id: (*id).clone(),
                        occurrences: 1,
                        seen_in: Some(SESSIONS[*s].into()),
                        ..Default::default()
                    }),
                )
            }
            Gen::Duplicate(j) => match out.get(j % out.len().max(1)) {
                Some(e) => e.clone(),
                None => continue,
            },
        };
        out.push(e);
    }
    out
}

/// The co-occurrence counts and session counts equal their recomputation
/// from `session_env`.
fn assert_counts_are_the_aggregate(store: &Store) {
    let conn = store.conn();
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT project, tags FROM session_env")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut tags: BTreeMap<String, i64> = BTreeMap::new();
    let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
    let mut sessions: BTreeMap<String, i64> = BTreeMap::new();
    for (project, t) in rows {
        *sessions.entry(project).or_default() += 1;
        let t: Vec<String> = serde_json::from_str(&t).unwrap();
        for (i, a) in t.iter().enumerate() {
            *tags.entry(a.clone()).or_default() += 1;
            for b in &t[i + 1..] {
                *pairs.entry((a.clone(), b.clone())).or_default() += 1;
            }
        }
    }
    let kept_tags: BTreeMap<String, i64> = conn
        .prepare("SELECT tag, sessions FROM env_tags")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let kept_pairs: BTreeMap<(String, String), i64> = conn
        .prepare("SELECT a, b, sessions FROM env_tag_pairs")
        .unwrap()
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let kept_sessions: BTreeMap<String, i64> = conn
        .prepare("SELECT key, session_count FROM projects WHERE session_count > 0")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kept_tags, tags);
    assert_eq!(kept_pairs, pairs);
    assert_eq!(kept_sessions, sessions);
}

/// Each memory's `env_tags` and `env_projects` equal their recomputation from
/// the environments of the sessions it was learned or seen in.
fn assert_memory_env_is_its_sessions(store: &Store) {
    let conn = store.conn();
    let memories: Vec<(String, String, i64)> = conn
        .prepare("SELECT id, env_tags, env_projects FROM memories")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (id, tags, projects) in memories {
        let envs: Vec<(String, String)> = conn
            .prepare(
                "SELECT e.project, e.tags FROM memory_sessions ms JOIN session_env e USING (session_key)
                 WHERE ms.memory_id = ?1",
            )
            .unwrap()
            .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let distinct: BTreeSet<&String> = envs.iter().map(|(p, _)| p).collect();
        assert_eq!(projects, distinct.len() as i64, "{id}");
        let mut shared: Option<BTreeSet<String>> = None;
        for (_, t) in &envs {
            let t: BTreeSet<String> = serde_json::from_str(t).unwrap();
            shared = Some(match shared {
                None => t,
                Some(s) => s.intersection(&t).cloned().collect(),
            });
        }
        let want: Vec<String> = shared.unwrap_or_default().into_iter().collect();
        assert_eq!(tags, serde_json::to_string(&want).unwrap(), "{id}");
    }
}

/// A memory of a session with a detected project never keeps a bare folder name.
fn assert_no_bare_names_in_detected_sessions(store: &Store) {
    let bare: i64 = store
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM memories m JOIN session_env e ON e.session_key = m.source_session
             WHERE m.project IS NOT NULL AND instr(m.project, '/') = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bare, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn replay_equals_incremental(items in prop::collection::vec(any_event(), 1..60), chunk in 1usize..7) {
        let events = build(&items);
        let (_d, paths) = home();
        let mut j = Journal::open(&paths, "test").unwrap();
        for c in events.chunks(chunk) {
            j.append(c).unwrap();
        }
        assert_counts_are_the_aggregate(j.store());
        assert_no_bare_names_in_detected_sessions(j.store());
        assert_memory_env_is_its_sessions(j.store());
        let incremental = canonical_dump(j.store().conn(), true).unwrap();
        drop(j);
        replay(&paths, &mut |_| {}).unwrap();
        let replayed = Store::open(&paths.db()).unwrap();
        prop_assert_eq!(incremental, canonical_dump(replayed.conn(), true).unwrap());
    }

    #[test]
    fn applying_twice_equals_once(items in prop::collection::vec(any_event(), 1..40)) {
        let events = build(&items);
        let doubled: Vec<Event> = events.iter().flat_map(|e| [e.clone(), e.clone()]).collect();
        let (_a, once) = home();
        let (_b, twice) = home();
        let mut a = Journal::open(&once, "test").unwrap();
        a.append(&events).unwrap();
        let mut b = Journal::open(&twice, "test").unwrap();
        b.append(&doubled).unwrap();
        prop_assert_eq!(canonical_dump(a.store().conn(), false).unwrap(), canonical_dump(b.store().conn(), false).unwrap());
    }
}
