//! The history replay through the library, on a real tape log and SQLite
//! projection: moments see only the memories of their past, a lesson given
//! again labels the memory that held it at the moments before, and a replay
//! is incremental, deterministic and rebuilt by a replay of the tapes.

#![allow(clippy::unwrap_used)]

use serde_json::json;
use shared::base::config::Config;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::training::history as hist;
use shared::storage::event::*;
use shared::storage::journal::Journal;
use shared::storage::store::canonical_dump;
use trainer::history::{self, SOURCE_TOLD_TWICE, TOLD_TWICE_LABEL};

const T: i64 = 1_780_000_000_000;
const MIN: i64 = 60_000;
const DAY: i64 = 86_400_000;

fn s(n: u32) -> SessionKey {
    SessionKey::new("claude", &format!("s{n}"))
}

fn ev(at: i64, session: Option<&SessionKey>, body: Body) -> Event {
    Event::new(Ts(at), "test", session.cloned(), body)
}

fn start(key: &SessionKey, at: i64) -> Event {
    ev(
        at,
        Some(key),
        Body::SessionStarted(SessionStarted {
            harness: "claude".into(),
            harness_session_id: key.harness_id().into(),
            project: Some("web".into()),
            cwd: Some("/home/dev/web".into()),
            ..SessionStarted::default()
        }),
    )
}

fn end(key: &SessionKey, at: i64) -> Event {
    ev(at, Some(key), Body::SessionEnded(SessionEnded { reason: "exit".into() }))
}

fn prompt(key: &SessionKey, at: i64, text: &str) -> Event {
    ev(at, Some(key), Body::MsgIn(MsgIn { text: text.into(), origin: "user".into(), ..MsgIn::default() }))
}

fn bash(key: &SessionKey, at: i64, command: &str) -> Event {
    ev(
        at,
        Some(key),
        Body::ToolCall(ToolCall {
            tool: "Bash".into(),
            call_id: format!("c{at}"),
            args: json!({ "command": command }),
        }),
    )
}

fn learned(id: &str, text: &str, key: &SessionKey, at: i64) -> Event {
    ev(
        at,
        Some(key),
        Body::MemoryAdded(MemoryAdded {
            memory_id: id.into(),
            content: text.into(),
            importance: 0.7,
            project: Some("web".into()),
            source_session: Some(key.clone()),
            ..MemoryAdded::default()
        }),
    )
}

/// Three sessions of one project. s1 teaches "use pnpm" (a) and a lesson
/// forgotten before s2 (g); s2 runs npm and is corrected again (the
/// extractor merges the correction into a); s3 teaches a lesson (f) that
/// s1 and s2 must never see.
fn history_events() -> Vec<Event> {
    let (s1, s2, s3) = (s(1), s(2), s(3));
    let s2t = T + DAY;
    let s3t = T + 2 * DAY;
    vec![
        start(&s1, T),
        prompt(&s1, T + MIN, "set up the web repository and install the dependencies"),
        learned("a", "Use pnpm, never npm, to install dependencies in the web repository", &s1, T + 2 * MIN),
        learned("g", "npm ci is faster than npm install for the web dependencies", &s1, T + 3 * MIN),
        learned("b", "The web dependencies are pinned in pnpm-lock.yaml, commit it with them", &s1, T + 4 * MIN),
        end(&s1, T + 10 * MIN),
        ev(
            s2t - 60 * MIN,
            None,
            Body::MemoryForgotten(MemoryForgotten {
                memory_id: "g".into(),
                reason: "wrong".into(),
                relearnable: false,
            }),
        ),
        start(&s2, s2t),
        prompt(&s2, s2t + MIN, "install the dependencies with npm please"),
        bash(&s2, s2t + 2 * MIN, "npm install"),
        prompt(&s2, s2t + 3 * MIN, "no, use pnpm for the dependencies, never npm"),
        ev(
            s2t + 3 * MIN,
            Some(&s2),
            Body::MemoryUpdated(MemoryUpdated {
                memory_id: "a".into(),
                occurrences: 1,
                seen_in: Some(s2.clone()),
                ..MemoryUpdated::default()
            }),
        ),
        bash(&s2, s2t + 4 * MIN, "pnpm install"),
        prompt(&s2, s2t + 5 * MIN, "now run the tests for the dependencies upgrade"),
        end(&s2, s2t + 10 * MIN),
        start(&s3, s3t),
        prompt(&s3, s3t + MIN, "the npm install of the web dependencies fails on peer deps"),
        learned(
            "f",
            "npm install in the web repository needs --legacy-peer-deps for the dependencies",
            &s3,
            s3t + 2 * MIN,
        ),
        end(&s3, s3t + 10 * MIN),
    ]
}

fn home(events: &[Event]) -> (tempfile::TempDir, Paths, Journal) {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(events).unwrap();
    (dir, paths, j)
}

fn replayed_bodies(j: &Journal) -> Vec<(String, HistoryReplayed)> {
    let snapshot = j.tape().snapshot().unwrap();
    snapshot
        .frames_after(0)
        .map(|f| {
            let f = f.unwrap();
            shared::storage::journal::decode(f.lsn, &f.payload)
        })
        .filter_map(|e| match e.body {
            Body::HistoryReplayed(b) => Some((e.session.unwrap().as_str().to_owned(), b)),
            _ => None,
        })
        .collect()
}

#[test]
fn replayed_moments_see_only_their_past_and_a_lesson_given_twice_labels_its_memory() {
    let (_d, paths, mut j) = home(&history_events());
    let config = Config::default();
    let report = history::replay(&mut j, &config, &Shutdown::manual(), &mut |_, _| {}).unwrap();
    assert_eq!((report.sessions, report.already), (3, 0), "{}", report.render());
    assert_eq!(report.told_twice, 1, "{}", report.render());
    assert!(report.ranked >= 5, "{}", report.render());

    // Never from the future, never forgotten: every memory of every list
    // existed (learned before the moment) and was live at its moment.
    let bodies = replayed_bodies(&j);
    assert_eq!(bodies.len(), 3);
    let stored = hist::stored_lists(j.store()).unwrap();
    assert!(!stored.is_empty());
    let learned_at = |id: &MemoryId| -> i64 {
        j.store()
            .conn()
            .query_row("SELECT created_ms FROM memories WHERE id = ?1", [id.as_str()], |r| r.get(0))
            .unwrap()
    };
    for l in &stored {
        for id in &l.memory_ids {
            assert!(learned_at(id) < l.at_ms, "{id} is from the future of {} at {}", l.session_key, l.at_ms);
            assert_ne!(id.as_str(), "g", "forgotten before {}", l.session_key);
        }
    }
    assert!(stored.iter().all(|l| !l.memory_ids.contains(&MemoryId::from("f"))));

    // s2: a was needed at the moments before the user had to say it again.
    let (_, s2) = bodies.iter().find(|(k, _)| k == s(2).as_str()).unwrap();
    assert_eq!(s2.told_twice, vec![(MemoryId::from("a"), T + DAY + 3 * MIN)]);
    let told: Vec<&ReplayedList> = s2.lists.iter().filter(|l| l.source.starts_with(SOURCE_TOLD_TWICE)).collect();
    assert!(told.len() >= 2, "the prompt and the npm call before the correction: {:#?}", s2.lists);
    for l in &told {
        assert!(l.at_ms < T + DAY + 3 * MIN);
        assert_eq!(l.labels.get(&MemoryId::from("a")), Some(&TOLD_TWICE_LABEL));
        assert!(l.weight > 0.0 && l.weight < 1.0, "below a served list");
    }
    assert!(
        s2.lists.iter().filter(|l| l.at_ms > T + DAY + 3 * MIN).all(|l| !l.source.starts_with(SOURCE_TOLD_TWICE)),
        "after the lesson was given again it is in the agent's context"
    );

    // Nothing served, nothing compared.
    let count = |sql: &str| -> i64 { j.store().conn().query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT COUNT(*) FROM rankings"), 0);
    assert_eq!(count("SELECT COUNT(*) FROM predictor_comparisons"), 0);
    assert_eq!(count("SELECT COALESCE(SUM(access_count), 0) FROM memories"), 0);

    // Incremental and idempotent: a second replay has nothing to do.
    let again = history::replay(&mut j, &config, &Shutdown::manual(), &mut |_, _| {}).unwrap();
    assert_eq!((again.sessions, again.already, again.moments), (0, 3, 0));
    assert_eq!(replayed_bodies(&j).len(), 3);

    // A replay of the tapes rebuilds the same projection, replayed lists included.
    let before = canonical_dump(j.store().conn(), false).unwrap();
    drop(j);
    shared::projection::replay(&paths, &mut |_| {}).unwrap();
    let j = shared::projection::open(&paths, "test").unwrap();
    assert_eq!(canonical_dump(j.store().conn(), false).unwrap(), before);
}

#[test]
fn the_same_history_replays_to_the_same_events() {
    let events = history_events();
    let (_d1, _p1, mut j1) = home(&events);
    let (_d2, _p2, mut j2) = home(&events);
    let config = Config::default();
    history::replay(&mut j1, &config, &Shutdown::manual(), &mut |_, _| {}).unwrap();
    history::replay(&mut j2, &config, &Shutdown::manual(), &mut |_, _| {}).unwrap();
    let (a, b) = (replayed_bodies(&j1), replayed_bodies(&j2));
    assert_eq!(a, b);
}

#[test]
fn without_history_nothing_is_replayed() {
    let (_d, _p, mut j) = home(&[]);
    let report = history::replay(&mut j, &Config::default(), &Shutdown::manual(), &mut |_, _| {}).unwrap();
    assert_eq!((report.sessions, report.moments, report.lists), (0, 0, 0));
    assert!(replayed_bodies(&j).is_empty());
}
