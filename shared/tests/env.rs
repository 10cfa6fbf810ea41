//! The environment model's projection (`shared::domain::env::store`, migration
//! 0007): `env.detected` events in, projects, sessions and memories out;
//! replay equals incremental apply.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use shared::base::ids::{EventId, MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::projection::replay;
use shared::storage::event::Prerequisites;
use shared::storage::event::*;
use shared::storage::journal::Journal;
use shared::storage::store::{Store, canonical_dump};

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
            project: shared::domain::hook::project_of(cwd),
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
            memory_type: MemoryType::Convention,
            importance: 0.7,
            project: project.map(str::to_owned),
            source: "extracted".into(),
            source_session: Some(session.into()),
            ..Default::default()
        }),
    )
}

fn ranking(i: usize, session: &str, injected: &[&str]) -> Event {
    let candidates = injected
        .iter()
        .enumerate()
        .map(|(r, m)| ServedCandidate {
            memory_id: (*m).into(),
            sources: vec![source::PINNED.into()],
            baseline_score: 1.0,
            baseline_rank: r as u32 + 1,
            final_score: 1.0,
            rank: r as u32 + 1,
            injected: true,
            ..Default::default()
        })
        .collect();
    event(
        i,
        Some(session),
        Body::RankingServed(RankingServed {
            ranking_id: format!("rk_{i}"),
            trigger: trigger::SESSION_START.into(),
            query: "start".into(),
            alpha: 1.0,
            cold_start: true,
            candidates,
            ..Default::default()
        }),
    )
}

fn scored(i: usize, session: &str, labels: &[(&str, f32)], confidence: f32) -> Event {
    event(
        i,
        Some(session),
        Body::SessionScored(SessionScored {
            score: 0.7,
            confidence,
            labels: labels.iter().map(|(m, l)| (MemoryId::from(*m), *l)).collect(),
            scorer: "test".into(),
            ..Default::default()
        }),
    )
}

fn feedback(i: usize, session: &str, memory: &str, relevance: f32) -> Event {
    event(
        i,
        Some(session),
        Body::MemoryFeedback(MemoryFeedback {
            memory_id: memory.into(),
            relevance,
            reason: "x".into(),
            by: "agent".into(),
        }),
    )
}

fn one<T: rusqlite::types::FromSql>(store: &Store, sql: &str, p: &str) -> T {
    store.conn().query_row(sql, [p], |r| r.get(0)).unwrap()
}

#[test]
fn a_session_recorded_before_detection_gets_its_repository_on_detection() {
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
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
    let mut j = shared::projection::open(&paths, "test").unwrap();
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
    let mut j = shared::projection::open(&paths, "test").unwrap();
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
    let mut j = shared::projection::open(&paths, "test").unwrap();
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

/// A session of `tags` that was shown `memory` and scored it `label`.
fn scored_session(i: usize, session: &str, project: usize, tags: &[&str], memory: &str, label: f32) -> Vec<Event> {
    vec![
        detected(i, Some(session), project, "/work", tags),
        ranking(i + 1, session, &[memory]),
        scored(i + 2, session, &[(memory, label)], 0.9),
    ]
}

#[test]
fn a_used_memory_counts_a_match_per_repository_and_tag_set_and_moves_its_tag_relevance() {
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "claude:s9", "mem_x", None)]).unwrap();
    j.append(&scored_session(10, "claude:s0", 0, &["nodejs", "react"], "mem_x", 0.8)).unwrap();
    let store = j.store();
    assert_eq!(one::<i64>(store, "SELECT times_matched FROM memories WHERE id = ?1", "mem_x"), 1);
    assert_eq!(one::<i64>(store, "SELECT times_matched FROM engram_repo_stats WHERE repo = ?1", "/work/Demo"), 1);
    assert_eq!(
        one::<i64>(store, "SELECT times_matched FROM engram_tag_stats WHERE tag_set = ?1", r#"["nodejs","react"]"#),
        1
    );
    let score = one::<f64>(store, "SELECT score FROM engram_tag_relevance WHERE tag = ?1", "react");
    assert!((score - 0.24).abs() < 1e-6, "0.3 × 0.8 = {score}");
    // Scored again: nothing counts twice. Low confidence: nothing counts.
    j.append(&[scored(20, "claude:s0", &[("mem_x", 0.8)], 0.9)]).unwrap();
    j.append(&scored_session(30, "claude:s1", 0, &["nodejs", "react"], "mem_x", 0.9)[..2]).unwrap();
    j.append(&[scored(40, "claude:s1", &[("mem_x", 0.9)], 0.3)]).unwrap();
    assert_eq!(one::<i64>(j.store(), "SELECT times_matched FROM memories WHERE id = ?1", "mem_x"), 1);
    // Shown and not used (label 0): a negative evaluation, no match.
    j.append(&scored_session(50, "claude:s2", 2, &["rust"], "mem_x", 0.0)).unwrap();
    let (score, neg): (f64, i64) = j
        .store()
        .conn()
        .query_row("SELECT score, negative_evals FROM engram_tag_relevance WHERE tag = 'rust'", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!((score + 0.15).abs() < 1e-6 && neg == 1, "0.3 × (0 − 0.5) = {score}");
    // Explicit feedback counts at twice the weight, every time.
    j.append(&[feedback(60, "claude:s2", "mem_x", 1.0), feedback(61, "claude:s2", "mem_x", 1.0)]).unwrap();
    let score = one::<f64>(j.store(), "SELECT score FROM engram_tag_relevance WHERE tag = ?1", "rust");
    let want = (-0.15 * 0.7 + 0.6) * 0.7 + 0.6;
    assert!((score - want).abs() < 1e-6, "{score} != {want}");
}

/// Seed 000's worked example, through the projection: 6 matches in
/// [frontend, acme, typescript], 5 in [frontend, acme, react], 4 in
/// [frontend, personal, typescript] pin the memory with {"tags": ["frontend"]}.
#[test]
fn the_seed_example_auto_pins_on_the_fifteenth_match() {
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "claude:s9", "mem_x", None)]).unwrap();
    let sets: [(&[&str], usize); 3] = [
        (&["frontend", "acme", "typescript"], 6),
        (&["frontend", "acme", "react"], 5),
        (&["frontend", "personal", "typescript"], 4),
    ];
    let mut i = 10;
    let mut n = 0;
    for (tags, times) in sets {
        for _ in 0..times {
            let pinned = one::<bool>(j.store(), "SELECT pinned FROM memories WHERE id = ?1", "mem_x");
            assert!(!pinned, "pinned after {n} matches");
            // A fresh session for each match (a session counts once); a
            // modest label (used, 0.4) keeps the tag relevance below the
            // relevance rule's 0.6, so the match counts alone decide.
            let session = format!("claude:m{n}");
            j.append(&scored_session(i, &session, 0, tags, "mem_x", 0.4)).unwrap();
            i += 3;
            n += 1;
        }
    }
    let (pinned, auto, prereq): (bool, bool, String) = j
        .store()
        .conn()
        .query_row("SELECT pinned, auto_pinned, prerequisites FROM memories WHERE id = 'mem_x'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert!(pinned && auto);
    assert_eq!(prereq, r#"{"tags":["frontend"]}"#);
    let stats: Vec<(String, i64)> = j
        .store()
        .conn()
        .prepare("SELECT tag_set, times_matched FROM engram_tag_stats ORDER BY tag_set")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        stats,
        [
            (r#"["acme","frontend","react"]"#.to_owned(), 5),
            (r#"["acme","frontend","typescript"]"#.to_owned(), 6),
            (r#"["frontend","personal","typescript"]"#.to_owned(), 4)
        ]
    );
}

#[test]
fn tag_relevance_pins_and_unpins_only_what_it_pinned() {
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "claude:s9", "mem_a", None), added(2, "claude:s9", "mem_m", None)]).unwrap();
    j.append(&[event(3, None, Body::MemoryPinned(MemoryRef { memory_id: "mem_m".into() }))]).unwrap();
    let mut i = 10;
    // Five good evaluations in a React environment: avg > 0.6 with 5 evaluations.
    for k in 0..5 {
        let s = format!("claude:g{k}");
        j.append(&[detected(i, Some(&s), 0, "/work", &["react"]), ranking(i + 1, &s, &["mem_a", "mem_m"])]).unwrap();
        j.append(&[feedback(i + 2, &s, "mem_a", 1.0), feedback(i + 3, &s, "mem_m", 1.0)]).unwrap();
        i += 4;
    }
    let state = |j: &Journal, id: &str| -> (bool, bool, Option<String>) {
        j.store()
            .conn()
            .query_row("SELECT pinned, auto_pinned, prerequisites FROM memories WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap()
    };
    assert_eq!(state(&j, "mem_a"), (true, true, Some(r#"{"tags":["react"]}"#.to_owned())));
    // Then it stops helping: unpinned once the average falls below 0.2; the
    // manual pin stays.
    for k in 0..8 {
        let s = format!("claude:b{k}");
        j.append(&[detected(i, Some(&s), 0, "/work", &["react"]), ranking(i + 1, &s, &["mem_a", "mem_m"])]).unwrap();
        j.append(&[scored(i + 2, &s, &[("mem_a", 0.0), ("mem_m", 0.0)], 0.9)]).unwrap();
        i += 3;
    }
    let (pinned, auto, _) = state(&j, "mem_a");
    assert!(!pinned && !auto);
    assert!(state(&j, "mem_m").0, "a manual pin is never removed by relevance");
}

/// One generated event of the environment model.
#[derive(Clone, Debug)]
enum Gen {
    Started(usize, u8),
    Detected(Option<usize>, usize, Vec<usize>),
    Added(usize, usize, u8),
    Content(usize),
    Seen(usize, usize),
    Served(usize, Vec<usize>),
    Scored(usize, Vec<(usize, f32)>, f32),
    Feedback(usize, usize, f32),
    Duplicate(usize),
    Categorized(usize, Vec<usize>, Vec<usize>, bool),
    Prerequisites(usize, Vec<usize>, bool),
    Pin(usize, bool),
}

const CATEGORIES: &[&str] = &["development", "development/frontend/react", "tools/git", "Tools / Git", "a//b"];

fn any_event() -> impl Strategy<Value = Gen> {
    let s = 0..SESSIONS.len();
    prop_oneof![
        2 => (s.clone(), 0u8..3).prop_map(|(s, c)| Gen::Started(s, c)),
        3 => (prop::option::weighted(0.9, s.clone()), 0..PROJECTS.len(), prop::collection::vec(0..TAGS.len(), 0..5))
            .prop_map(|(s, p, t)| Gen::Detected(s, p, t)),
        3 => (s.clone(), 0usize..6, 0u8..4).prop_map(|(s, m, p)| Gen::Added(s, m, p)),
        1 => s.clone().prop_map(Gen::Content),
        2 => (0usize..1000, s.clone()).prop_map(|(m, s)| Gen::Seen(m, s)),
        3 => (s.clone(), prop::collection::vec(0usize..1000, 1..4)).prop_map(|(s, m)| Gen::Served(s, m)),
        3 => (s.clone(), prop::collection::vec((0usize..1000, -0.5f32..1.0), 1..4), 0.0f32..1.0)
            .prop_map(|(s, l, c)| Gen::Scored(s, l, c)),
        1 => (s.clone(), 0usize..1000, 0.0f32..1.0).prop_map(|(s, m, r)| Gen::Feedback(s, m, r)),
        1 => (0usize..1000).prop_map(Gen::Duplicate),
        2 => (0usize..1000, prop::collection::vec(0..CATEGORIES.len(), 0..3), prop::collection::vec(0..CATEGORIES.len(), 0..2), any::<bool>())
            .prop_map(|(m, a, r, x)| Gen::Categorized(m, a, r, x)),
        1 => (0usize..1000, prop::collection::vec(0..TAGS.len(), 0..3), any::<bool>())
            .prop_map(|(m, t, os)| Gen::Prerequisites(m, t, os)),
        1 => (0usize..1000, any::<bool>()).prop_map(|(m, p)| Gen::Pin(m, p)),
    ]
}

fn memory_ids(events: &[Event]) -> Vec<MemoryId> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(a) => Some(a.memory_id.clone()),
            _ => None,
        })
        .collect()
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
            Gen::Served(s, ms) => {
                let ids = memory_ids(&out);
                if ids.is_empty() {
                    continue;
                }
                let picked: BTreeSet<&str> = ms.iter().map(|m| ids[m % ids.len()].as_str()).collect();
                ranking(i, SESSIONS[*s], &picked.into_iter().collect::<Vec<_>>())
            }
            Gen::Scored(s, labels, confidence) => {
                let ids = memory_ids(&out);
                if ids.is_empty() {
                    continue;
                }
                let labels: Vec<(&str, f32)> = labels.iter().map(|(m, l)| (ids[m % ids.len()].as_str(), *l)).collect();
                scored(i, SESSIONS[*s], &labels, *confidence)
            }
            Gen::Feedback(s, m, r) => {
                let ids = memory_ids(&out);
                let Some(id) = ids.get(m % ids.len().max(1)) else { continue };
                feedback(i, SESSIONS[*s], id.as_str(), *r)
            }
            Gen::Seen(m, s) => {
                let ids = memory_ids(&out);
                let Some(id) = ids.get(m % ids.len().max(1)) else { continue };
                event(
                    i,
                    None,
                    Body::MemoryUpdated(MemoryUpdated {
                        memory_id: id.clone(),
                        occurrences: 1,
                        seen_in: Some(SESSIONS[*s].into()),
                        ..Default::default()
                    }),
                )
            }
            Gen::Categorized(m, add, remove, replace) => {
                let ids = memory_ids(&out);
                let Some(id) = ids.get(m % ids.len().max(1)) else { continue };
                let paths = |v: &[usize]| v.iter().map(|c| CATEGORIES[*c].to_owned()).collect();
                let body = MemoryCategorized {
                    memory_id: id.clone(),
                    add: paths(add),
                    remove: paths(remove),
                    replace: *replace,
                };
                event(i, None, Body::MemoryCategorized(body))
            }
            Gen::Prerequisites(m, tags, os) => {
                let ids = memory_ids(&out);
                let Some(id) = ids.get(m % ids.len().max(1)) else { continue };
                let prerequisites = Prerequisites {
                    tags: tags.iter().map(|t| TAGS[*t].to_owned()).collect::<BTreeSet<_>>().into_iter().collect(),
                    os: if *os { vec!["linux".into()] } else { Vec::new() },
                    ..Prerequisites::default()
                };
                event(
                    i,
                    None,
                    Body::MemoryPrerequisitesSet(MemoryPrerequisitesSet { memory_id: id.clone(), prerequisites }),
                )
            }
            Gen::Pin(m, pin) => {
                let ids = memory_ids(&out);
                let Some(id) = ids.get(m % ids.len().max(1)) else { continue };
                let r = MemoryRef { memory_id: id.clone() };
                event(i, None, if *pin { Body::MemoryPinned(r) } else { Body::MemoryUnpinned(r) })
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

/// The `session_audit` view (seed 000) says what its tables say: one row
/// per session, the detected project as its repo, the memories injected in it.
fn assert_audit_is_its_tables(store: &Store) {
    let conn = store.conn();
    let one = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(one("SELECT COUNT(*) FROM session_audit"), one("SELECT COUNT(*) FROM sessions"));
    assert_eq!(
        one("SELECT COUNT(*) FROM session_audit a JOIN session_env e USING (session_key)
             WHERE a.repo IS NOT e.project OR a.env_tags IS NOT e.tags"),
        0
    );
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT session_key, shown_engram_ids FROM session_audit")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (session, shown) in rows {
        let shown: BTreeSet<String> = serde_json::from_str(&shown).unwrap();
        let injected: BTreeSet<String> = conn
            .prepare("SELECT memory_id FROM session_memories WHERE session_key = ?1 AND was_injected = 1")
            .unwrap()
            .query_map([&session], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(shown, injected, "{session}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn replay_equals_incremental(items in prop::collection::vec(any_event(), 1..60), chunk in 1usize..7) {
        let events = build(&items);
        let (_d, paths) = home();
        let mut j = shared::projection::open(&paths, "test").unwrap();
        for c in events.chunks(chunk) {
            j.append(c).unwrap();
        }
        assert_counts_are_the_aggregate(j.store());
        assert_no_bare_names_in_detected_sessions(j.store());
        assert_memory_env_is_its_sessions(j.store());
        assert_audit_is_its_tables(j.store());
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
        let mut a = shared::projection::open(&once, "test").unwrap();
        a.append(&events).unwrap();
        let mut b = shared::projection::open(&twice, "test").unwrap();
        b.append(&doubled).unwrap();
        prop_assert_eq!(canonical_dump(a.store().conn(), false).unwrap(), canonical_dump(b.store().conn(), false).unwrap());
    }
}
