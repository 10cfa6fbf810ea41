//! Replay of seed 004's events equals their incremental apply: edges,
//! staged memories and their resolutions, stashes and resumes, checkpoints,
//! topic-shift decisions with their counters, summaries, dedup merges, mixed
//! with the memory events they depend on, duplicated events and writers that
//! "crash" between appending and applying.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use shared::base::ids::{EventId, MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::knowledge::graph::{Direction, Relation, edge_body, edge_id};
use shared::projection::replay;
use shared::storage::event::*;
use shared::storage::journal::JournalOptions;
use shared::storage::store::{Store, canonical_dump};
use shared::storage::tape::{TapeLog, TapeOptions};

const SESSIONS: &[&str] = &["claude:s0", "codex:s1"];
const MEMORIES: &[&str] = &["mem_a", "mem_b", "mem_c", "mem_d", "mem_e", "mem_f"];
const STAGES: &[&str] = &["obs_1", "obs_2", "obs_3"];
const CONVERSATIONS: &[&str] = &["conv_1", "conv_2", "conv_3"];
const FORKS: &[&str] = &["fork_1", "fork_2"];
const WORDS: &[&str] = &["auth", "timeout", "token", "cache", "retry", "sqlite", "never", "always"];

#[derive(Clone, Debug)]
enum Gen {
    Added(usize, String),
    Updated(usize, String),
    Forgotten(usize),
    Deprecated(usize, Option<usize>),
    Edge(usize, usize, usize, f32),
    EdgeRemoved(usize, usize, usize),
    Staged(usize, usize, usize, bool),
    Resolved(usize, usize, Option<usize>),
    Surfaced(usize, usize),
    Stashed(usize, usize, bool),
    Resumed(usize, usize),
    Checkpoint(usize, usize),
    Shift(usize, usize, f32, Option<usize>),
    Summary(usize, String),
    Merged(usize, Vec<usize>, Option<String>),
    Checked(Vec<usize>, Vec<usize>),
    Duplicate(usize),
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS.to_vec()), 1..6).prop_map(|w| w.join(" "))
}

fn any_gen() -> impl Strategy<Value = Gen> {
    let m = 0..MEMORIES.len();
    let s = 0..SESSIONS.len();
    prop_oneof![
        4 => (m.clone(), text()).prop_map(|(m, t)| Gen::Added(m, t)),
        1 => (m.clone(), text()).prop_map(|(m, t)| Gen::Updated(m, t)),
        1 => m.clone().prop_map(Gen::Forgotten),
        1 => (m.clone(), prop::option::of(m.clone())).prop_map(|(m, by)| Gen::Deprecated(m, by)),
        5 => (m.clone(), m.clone(), 0..Relation::ALL.len(), 0.0f32..1.0).prop_map(|(a, b, r, w)| Gen::Edge(a, b, r, w)),
        1 => (m.clone(), m.clone(), 0..Relation::ALL.len()).prop_map(|(a, b, r)| Gen::EdgeRemoved(a, b, r)),
        3 => (0..STAGES.len(), s.clone(), m.clone(), any::<bool>()).prop_map(|(st, s, m, c)| Gen::Staged(st, s, m, c)),
        2 => (0..STAGES.len(), 0..6usize, prop::option::of(m.clone())).prop_map(|(st, a, e)| Gen::Resolved(st, a, e)),
        1 => (0..STAGES.len(), s.clone()).prop_map(|(st, s)| Gen::Surfaced(st, s)),
        2 => (0..CONVERSATIONS.len(), s.clone(), any::<bool>()).prop_map(|(c, s, a)| Gen::Stashed(c, s, a)),
        2 => (0..CONVERSATIONS.len() + FORKS.len(), s.clone()).prop_map(|(c, s)| Gen::Resumed(c, s)),
        1 => (0..FORKS.len(), s.clone()).prop_map(|(f, s)| Gen::Checkpoint(f, s)),
        3 => (s.clone(), 0..3usize, 0.0f32..1.0, prop::option::of(0..CONVERSATIONS.len()))
            .prop_map(|(s, t, sc, c)| Gen::Shift(s, t, sc, c)),
        1 => (s.clone(), text()).prop_map(|(s, t)| Gen::Summary(s, t)),
        1 => (m.clone(), prop::collection::vec(m.clone(), 1..3), prop::option::of(text()))
            .prop_map(|(s, a, c)| Gen::Merged(s, a, c)),
        1 => (prop::collection::vec(m.clone(), 0..3), prop::collection::vec(m.clone(), 0..2))
            .prop_map(|(v, f)| Gen::Checked(v, f)),
        2 => (0usize..1000).prop_map(Gen::Duplicate),
    ]
}

fn mid(i: usize) -> MemoryId {
    MemoryId(MEMORIES[i].to_owned())
}

fn build(items: &[Gen]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for (i, g) in items.iter().enumerate() {
        let ev = |session: Option<usize>, body: Body| Event {
            v: SCHEMA_VERSION,
            id: EventId(format!("ev_{i:05}")),
            ts: Ts(1_700_000_000_000 + i as i64 * 60_000),
            writer: "test".into(),
            session: session.map(|s| SessionKey::from(SESSIONS[s])),
            body,
        };
        let e = match g {
            Gen::Added(m, t) => ev(
                Some(0),
                Body::MemoryAdded(MemoryAdded {
                    memory_id: mid(*m),
                    content: t.clone(),
                    memory_type: MemoryType::Fact,
                    importance: 0.5,
                    tags: vec![WORDS[*m % WORDS.len()].into()],
                    source_session: Some(SessionKey::from(SESSIONS[*m % SESSIONS.len()])),
                    ..Default::default()
                }),
            ),
            Gen::Updated(m, t) => ev(
                None,
                Body::MemoryUpdated(MemoryUpdated {
                    memory_id: mid(*m),
                    content: Some(t.clone()),
                    ..Default::default()
                }),
            ),
            Gen::Forgotten(m) => ev(
                None,
                Body::MemoryForgotten(MemoryForgotten {
                    memory_id: mid(*m),
                    reason: String::new(),
                    relearnable: false,
                }),
            ),
            Gen::Deprecated(m, by) => ev(
                None,
                Body::MemoryDeprecated(MemoryDeprecated {
                    memory_id: mid(*m),
                    reason: "old".into(),
                    superseded_by: by.map(mid),
                }),
            ),
            Gen::Edge(a, b, r, w) => ev(None, edge_body(&mid(*a), &mid(*b), Relation::ALL[*r], *w, "test", "")),
            Gen::EdgeRemoved(a, b, r) => ev(
                None,
                Body::EdgeRemoved(EdgeRemoved {
                    edge_id: edge_id(MEMORIES[*a], MEMORIES[*b], Relation::ALL[*r]),
                    reason: String::new(),
                }),
            ),
            Gen::Staged(st, s, m, conflict) => ev(
                Some(*s),
                Body::MemoryStaged(MemoryStaged {
                    stage_id: STAGES[*st].into(),
                    status: if *conflict { "needs_clarification".into() } else { "pending".into() },
                    memory: MemoryAdded {
                        memory_id: MemoryId(format!("mem_staged_{st}")),
                        content: format!("staged {st}"),
                        memory_type: MemoryType::Decision,
                        importance: 0.6,
                        ..Default::default()
                    },
                    conflict_with: conflict.then(|| mid(*m)),
                    similarity: conflict.then_some(0.8),
                    reason: String::new(),
                }),
            ),
            Gen::Resolved(st, a, existing) => ev(
                None,
                Body::StageResolved(StageResolved {
                    stage_id: STAGES[*st].into(),
                    action: ["merge", "keep_both", "replace", "skip", "persist", "discard"][*a].into(),
                    existing_id: existing.map(mid),
                    memory_id: existing.map(mid),
                    by: "user".into(),
                }),
            ),
            Gen::Surfaced(st, s) => {
                ev(Some(*s), Body::ConflictSurfaced(ConflictSurfaced { stage_id: STAGES[*st].into() }))
            }
            Gen::Stashed(c, s, auto) => ev(
                Some(*s),
                Body::ConversationStashed(ConversationStashed {
                    conversation_id: CONVERSATIONS[*c].into(),
                    label: format!("topic {c}"),
                    auto: *auto,
                    score: auto.then_some(0.9),
                    project: Some("web".into()),
                    stash_group: format!("sg_{s}"),
                    started_ms: 1,
                    ended_ms: 2,
                    summary: "about auth".into(),
                    prompts: vec!["fix auth".into()],
                    files: vec!["src/auth.rs".into()],
                }),
            ),
            Gen::Resumed(c, s) => {
                let id = CONVERSATIONS.iter().chain(FORKS).nth(*c).unwrap();
                ev(Some(*s), Body::ConversationResumed(ConversationResumed { conversation_id: (*id).into() }))
            }
            Gen::Checkpoint(f, s) => ev(
                Some(*s),
                Body::CheckpointCreated(CheckpointCreated {
                    checkpoint_id: FORKS[*f].into(),
                    label: "before rm -rf".into(),
                    auto: true,
                    trigger: Some("rm -rf build".into()),
                    project: Some("web".into()),
                    snapshot: CheckpointSnapshot { observation_count: 3, ..Default::default() },
                }),
            ),
            Gen::Shift(s, t, score, conv) => ev(
                Some(*s),
                Body::TopicShift(TopicShift {
                    score: *score,
                    tier: ["ignore", "ask", "trust"][*t].into(),
                    signals: BTreeMap::from([("time_gap".to_owned(), *score / 4.0)]),
                    ask_threshold: 0.4,
                    trust_threshold: 0.85,
                    project: Some(["web", "api"][*s % 2].into()),
                    conversation_id: conv.map(|c| CONVERSATIONS[c].to_owned()),
                }),
            ),
            Gen::Summary(s, t) => ev(
                Some(*s),
                Body::SessionSummarized(SessionSummarized {
                    summary: t.clone(),
                    method: "extractive".into(),
                    files: vec!["a.rs".into()],
                    ..Default::default()
                }),
            ),
            Gen::Merged(s, absorbed, content) => ev(
                None,
                Body::MemoriesMerged(MemoriesMerged {
                    survivor: mid(*s),
                    absorbed: absorbed.iter().copied().map(mid).collect(),
                    content: content.clone(),
                    mode: "bootstrap".into(),
                    pass: 1,
                    by: "deterministic".into(),
                    confidence: Some(0.97),
                    reason: String::new(),
                }),
            ),
            Gen::Checked(verified, failed) => ev(
                None,
                Body::DedupChecked(DedupChecked {
                    verified: verified.iter().copied().map(mid).collect(),
                    failed: failed.iter().map(|m| (mid(*m), "judge timed out".to_owned())).collect(),
                    requeued: Vec::new(),
                }),
            ),
            Gen::Duplicate(j) => match out.get(j % out.len().max(1)) {
                Some(e) => e.clone(),
                None => continue,
            },
        };
        out.push(e);
    }
    out
}

fn small_segments() -> JournalOptions {
    JournalOptions { tape: TapeOptions { segment_bytes: 3_000, chunk_bytes: 1_000, ..TapeOptions::default() } }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Replay of the tapes equals the incrementally built projection.
    #[test]
    fn replay_equals_incremental_with_edges_and_stashes(
        items in prop::collection::vec(any_gen(), 1..90),
        cuts in prop::collection::vec((1usize..8, any::<bool>()), 1..20),
    ) {
        let events = build(&items);
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path().join("home"));
        let mut journal = shared::projection::open_with(&paths, "test", small_segments()).unwrap();
        let mut rest: &[Event] = &events;
        let mut cut = cuts.iter().cycle();
        while !rest.is_empty() {
            let (n, crash) = *cut.next().unwrap();
            let (chunk, tail) = rest.split_at(n.min(rest.len()));
            rest = tail;
            if crash {
                let tape = TapeLog::open(&paths.tapes(), small_segments().tape).unwrap();
                let payloads: Vec<Vec<u8>> = chunk.iter().map(Event::to_json).collect();
                let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
                tape.lock().unwrap().append(&refs).unwrap();
            } else {
                journal.append(chunk).unwrap();
            }
        }
        journal.catch_up().unwrap();
        let incremental = canonical_dump(journal.store().conn(), true).unwrap();
        // The traversal never returns a forgotten memory, never repeats one.
        for m in MEMORIES {
            if let Some(g) = shared::domain::knowledge::graph::traverse(journal.store(), m, 5, Direction::Both).unwrap() {
                let ids: std::collections::BTreeSet<&str> = g.nodes.iter().map(|n| n.id.as_str()).collect();
                prop_assert_eq!(ids.len(), g.nodes.len());
            }
        }
        drop(journal);
        replay(&paths, &mut |_| {}).unwrap();
        let replayed = canonical_dump(Store::open(&paths.db()).unwrap().conn(), true).unwrap();
        prop_assert_eq!(incremental, replayed);
    }
}

#[test]
fn a_merge_moves_edges_and_supersedes_the_absorbed() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path().join("home"));
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let items = vec![
        Gen::Added(0, "always retry auth".into()),
        Gen::Added(1, "retry auth always".into()),
        Gen::Added(2, "cache tokens".into()),
        Gen::Edge(1, 2, 2, 0.7),
        Gen::Edge(2, 1, 0, 0.4),
        Gen::Edge(0, 1, 2, 0.9),
        Gen::Merged(0, vec![1], Some("always retry auth on timeout".into())),
    ];
    j.append(&build(&items)).unwrap();
    let store = j.store();
    let b = store.memory("mem_b").unwrap().unwrap();
    assert!(b.deprecated);
    assert_eq!(b.superseded_by.as_deref(), Some("mem_a"));
    let a = store.memory("mem_a").unwrap().unwrap();
    assert_eq!(a.content, "always retry auth on timeout");
    assert_eq!(a.occurrence_count, 2);
    let edges = shared::domain::knowledge::graph::edges_of(store, "mem_a", Direction::Both, None).unwrap();
    let mut shape: Vec<(String, String, String)> =
        edges.iter().map(|e| (e.from.clone(), e.to.clone(), e.relation.clone())).collect();
    shape.sort();
    assert_eq!(
        shape,
        vec![
            ("mem_a".into(), "mem_b".into(), "supersedes".into()),
            ("mem_a".into(), "mem_c".into(), "supports".into()),
            ("mem_c".into(), "mem_a".into(), "derives_from".into()),
        ],
        "edges of the absorbed moved to the survivor; its self-edge dropped"
    );
    let hits = store.memories_matching(&["timeout"], 5).unwrap();
    assert_eq!(hits.len(), 1, "the survivor's new text is indexed");
    let log: i64 = store.conn().query_row("SELECT COUNT(*) FROM memory_merges", [], |r| r.get(0)).unwrap();
    assert_eq!(log, 1);
}

#[test]
fn topic_shift_counters_follow_what_the_user_did() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path().join("home"));
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let items = vec![
        // An ask the session moved on from: a false positive.
        Gen::Shift(0, 1, 0.5, None),
        Gen::Shift(0, 0, 0.1, None),
        // An ask followed by a stash: accepted.
        Gen::Shift(0, 1, 0.6, None),
        Gen::Stashed(0, 0, false),
        // An auto-stash taken back in the same session: a false positive.
        Gen::Stashed(1, 0, true),
        Gen::Shift(0, 2, 0.9, Some(1)),
        Gen::Resumed(1, 0),
    ];
    j.append(&build(&items)).unwrap();
    let row: (i64, i64, i64, i64) = j
        .store()
        .conn()
        .query_row(
            "SELECT auto_stash_count, false_positive_count, suggestion_shown_count, suggestion_accepted_count
             FROM adaptive_thresholds WHERE project = 'web'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(row, (1, 2, 2, 1));
}

/// Agents saving the same lesson at the same moment (two MCP servers, each
/// with its own journal) save it once: the others count an occurrence; a
/// text alike to a stored one is staged once, not once per writer.
#[test]
fn the_same_memory_saved_at_once_by_several_writers_is_saved_or_staged_once() {
    use shared::domain::knowledge::ops::{Saved, save};
    use shared::domain::memory::ops::{NewMemory, Origin};
    const WRITERS: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path().join("engram"));
    drop(shared::projection::open(&paths, "test").unwrap());
    let config = shared::base::config::Config::default();
    for round in 0..6 {
        let text = [
            "The payments service retries webhooks three times, with a 30 second backoff.",
            "Staging deploys need the VPN; the bastion refuses connections from outside it.",
            "Feature flags live in LaunchDarkly, never in environment variables.",
            "The search index is rebuilt nightly at 02:00 UTC by the reindex cron job.",
            "Invoices are immutable once sent: corrections are credit notes.",
            "The payments service retries webhooks three times, with a 60 second backoff.",
        ][round as usize]
            .to_owned();
        let barrier = std::sync::Barrier::new(WRITERS);
        let outcomes: Vec<Saved> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..WRITERS)
                .map(|i| {
                    let (paths, config, text, barrier) = (&paths, &config, &text, &barrier);
                    s.spawn(move || {
                        let mut j = shared::projection::open(paths, "test").unwrap();
                        let new = NewMemory {
                            text: text.clone(),
                            memory_type: MemoryType::Fact,
                            importance: 0.7,
                            project: None,
                            tags: Vec::new(),
                            pinned: false,
                        };
                        let origin = Origin::agent(Some(SessionKey::from(format!("claude:w{i}").as_str())));
                        barrier.wait();
                        save(&mut j, config, new, &origin, &[], Ts(1_000 + round)).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        if round < 5 {
            let added = outcomes.iter().filter(|o| matches!(o, Saved::Added { .. })).count();
            assert_eq!(added, 1, "round {round}: {outcomes:?}");
        } else {
            // Alike to round 0's memory: one question for the user, not six.
            let stages: std::collections::BTreeSet<&str> = outcomes
                .iter()
                .map(|o| match o {
                    Saved::Staged { stage_id, .. } => stage_id.as_str(),
                    other => panic!("round {round}: not staged: {other:?}"),
                })
                .collect();
            assert_eq!(stages.len(), 1, "round {round}: {outcomes:?}");
        }
    }
}
