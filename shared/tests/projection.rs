//! Boundary tests of the journal and projection: events in, tables out.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use rusqlite::OptionalExtension;
use serde_json::json;
use shared::base::ids::{EventId, MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::text::{MemoryText, TEXT_VERSION};
use shared::base::time::Ts;
use shared::projection::replay;
use shared::storage::event::*;
use shared::storage::journal::Journal;
use shared::storage::store::{Store, canonical_dump};
use shared::storage::tape::{TapeLog, TapeOptions};

const SESSIONS: &[&str] = &["claude:s0", "codex:s1", "claude:s2"];
const MEMORIES: &[&str] = &["mem_a", "mem_b", "mem_c", "mem_d", "mem_e"];

/// One generated event, before ids and times are assigned.
#[derive(Clone, Debug)]
enum Gen {
    Started(usize, Option<&'static str>),
    /// A session end; `Some(back)` is an idle end stamped `back` minutes before its place in the log.
    Ended(usize, Option<u8>),
    MsgIn(usize, String, bool),
    MsgOut(usize, String),
    ToolCall(usize, u8),
    ToolResult(usize, u8, bool),
    Read(usize, u8),
    Edit(usize, u8),
    Title(usize, String),
    Opaque(usize),
    Cursor(u8, u64),
    Added(usize, String, f32, bool),
    Updated(usize, Option<String>, Option<f32>, u32),
    Pinned(usize, bool),
    Deprecated(usize),
    Forgotten(usize),
    Feedback(usize, usize, f32),
    Embedded(usize, Vec<f32>),
    Ranking(usize, Vec<(usize, bool)>),
    Hits(usize, Vec<usize>),
    Scored(usize, f32, Vec<(usize, f32)>, Option<u64>),
    Comparison(usize, f32, f32),
    Training(bool, f32),
    Promoted(u64),
    Drift,
    /// A replayed session: its lists (pools of memories with labels).
    Replayed(usize, Vec<(Vec<usize>, usize, f32)>),
    Unknown(String),
    Duplicate(usize),
}

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["auth", "timeout", "token", "cache", "retry", "sqlite", "tape", "never", "always"])
        .prop_map(str::to_owned)
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..6).prop_map(|w| w.join(" "))
}

fn any_event() -> impl Strategy<Value = Gen> {
    let s = 0..SESSIONS.len();
    let m = 0..MEMORIES.len();
    prop_oneof![
        2 => (s.clone(), prop::option::of(prop::sample::select(vec!["engram", "web"]))).prop_map(|(s, p)| Gen::Started(s, p)),
        1 => (s.clone(), proptest::option::of(0u8..4)).prop_map(|(s, idle)| Gen::Ended(s, idle)),
        4 => (s.clone(), text(), any::<bool>()).prop_map(|(s, t, u)| Gen::MsgIn(s, t, u)),
        3 => (s.clone(), text()).prop_map(|(s, t)| Gen::MsgOut(s, t)),
        2 => (s.clone(), 0u8..4).prop_map(|(s, c)| Gen::ToolCall(s, c)),
        2 => (s.clone(), 0u8..4, any::<bool>()).prop_map(|(s, c, e)| Gen::ToolResult(s, c, e)),
        1 => (s.clone(), 0u8..3).prop_map(|(s, f)| Gen::Read(s, f)),
        1 => (s.clone(), 0u8..3).prop_map(|(s, f)| Gen::Edit(s, f)),
        1 => (s.clone(), text()).prop_map(|(s, t)| Gen::Title(s, t)),
        1 => s.clone().prop_map(Gen::Opaque),
        1 => (0u8..2, 0u64..1000).prop_map(|(p, o)| Gen::Cursor(p, o)),
        4 => (m.clone(), text(), 0.0f32..1.0, any::<bool>()).prop_map(|(m, t, i, p)| Gen::Added(m, t, i, p)),
        2 => (m.clone(), prop::option::of(text()), prop::option::of(0.0f32..1.0), 0u32..3)
            .prop_map(|(m, t, i, o)| Gen::Updated(m, t, i, o)),
        1 => (m.clone(), any::<bool>()).prop_map(|(m, p)| Gen::Pinned(m, p)),
        1 => m.clone().prop_map(Gen::Deprecated),
        1 => m.clone().prop_map(Gen::Forgotten),
        1 => (s.clone(), m.clone(), 0.0f32..1.0).prop_map(|(s, m, r)| Gen::Feedback(s, m, r)),
        1 => (m.clone(), prop::collection::vec(-1.0f32..1.0, 4)).prop_map(|(m, v)| Gen::Embedded(m, v)),
        3 => (s.clone(), prop::collection::vec((m.clone(), any::<bool>()), 1..5)).prop_map(|(s, c)| Gen::Ranking(s, c)),
        2 => (s.clone(), prop::collection::vec(m.clone(), 1..3)).prop_map(|(s, h)| Gen::Hits(s, h)),
        1 => (s.clone(), 0.0f32..1.0, prop::collection::vec((m.clone(), 0.0f32..1.0), 0..3), prop::option::of(0u64..20))
            .prop_map(|(s, sc, r, n)| Gen::Scored(s, sc, r, n)),
        1 => (s.clone(), 0.0f32..1.0, 0.0f32..1.0).prop_map(|(s, p, b)| Gen::Comparison(s, p, b)),
        1 => (any::<bool>(), 0.0f32..2.0).prop_map(|(g, l)| Gen::Training(g, l)),
        1 => (1u64..4).prop_map(Gen::Promoted),
        1 => Just(Gen::Drift),
        2 => (s.clone(), prop::collection::vec((prop::collection::vec(m.clone(), 1..4), m.clone(), 0.0f32..1.0), 0..3))
            .prop_map(|(s, l)| Gen::Replayed(s, l)),
        1 => "[a-z]{3,8}\\.[a-z]{3,8}".prop_map(Gen::Unknown),
        2 => (0usize..1000).prop_map(Gen::Duplicate),
    ]
}

fn sk(i: usize) -> SessionKey {
    SessionKey(SESSIONS[i].to_owned())
}

fn mid(i: usize) -> MemoryId {
    MemoryId(MEMORIES[i].to_owned())
}

/// Turns generated items into events with fixed ids and increasing times.
fn build(items: &[Gen]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for (i, g) in items.iter().enumerate() {
        let ts = Ts(1_700_000_000_000 + i as i64 * 60_000);
        let ev = |session: Option<SessionKey>, body: Body| Event {
            v: SCHEMA_VERSION,
            id: EventId(format!("ev_{i:05}")),
            ts,
            writer: "test".into(),
            session,
            body,
        };
        let e = match g {
            Gen::Started(s, project) => ev(
                Some(sk(*s)),
                Body::SessionStarted(SessionStarted {
                    harness: sk(*s).harness().into(),
                    harness_session_id: sk(*s).harness_id().into(),
                    project: project.map(str::to_owned),
                    cwd: Some("/work".into()),
                    // Joined with the cursors of the same path in the `session_audit` view.
                    source_path: Some(format!("/logs/{}.jsonl", s % 2)),
                    ..Default::default()
                }),
            ),
            Gen::Ended(s, None) => ev(Some(sk(*s)), Body::SessionEnded(SessionEnded { reason: "other".into() })),
            Gen::Ended(s, Some(back)) => Event {
                ts: Ts(ts.0 - i64::from(*back) * 60_000),
                ..ev(Some(sk(*s)), Body::SessionEnded(SessionEnded { reason: "idle".into() }))
            },
            Gen::MsgIn(s, t, user) => ev(
                Some(sk(*s)),
                Body::MsgIn(MsgIn {
                    text: t.clone(),
                    origin: if *user { String::new() } else { origin::ENGRAM.into() },
                    uuid: None,
                    truncated: 0,
                }),
            ),
            Gen::MsgOut(s, t) => ev(Some(sk(*s)), Body::MsgOut(MsgOut { text: t.clone(), ..Default::default() })),
            Gen::ToolCall(s, c) => ev(
                Some(sk(*s)),
                Body::ToolCall(ToolCall {
                    tool: "Bash".into(),
                    call_id: format!("c{c}"),
                    args: json!({"command": "ls"}),
                }),
            ),
            Gen::ToolResult(s, c, e) => ev(
                Some(sk(*s)),
                Body::ToolResult(ToolResult {
                    call_id: format!("c{c}"),
                    stdout: "ok".into(),
                    is_error: *e,
                    ..Default::default()
                }),
            ),
            Gen::Read(s, f) => ev(
                Some(sk(*s)),
                Body::CodeRead(CodeRead { file: format!("src/f{f}.rs"), range: Some([1, 10]), content_hash: None }),
            ),
            Gen::Edit(s, f) => ev(
                Some(sk(*s)),
                Body::CodeEdit(CodeEdit {
                    file: format!("src/f{f}.rs"),
                    after_range: Some([2, 3]),
                    ..Default::default()
                }),
            ),
            Gen::Title(s, t) => ev(
                Some(sk(*s)),
                Body::Meta(Meta { label: "title".into(), text: Some(t.clone()), ..Default::default() }),
            ),
            Gen::Opaque(s) => ev(
                Some(sk(*s)),
                Body::Opaque(Opaque { record_type: "attachment".into(), raw: json!({"type": "attachment"}) }),
            ),
            Gen::Cursor(p, o) => ev(
                None,
                Body::SourceCursor(SourceCursor {
                    harness: "claude".into(),
                    path: format!("/logs/{p}.jsonl"),
                    file_id: "1:2".into(),
                    offset: *o,
                    size: *o,
                    mtime_ms: 5,
                    state: json!({"k": p}),
                }),
            ),
            Gen::Added(m, t, imp, pinned) => ev(
                Some(sk(0)),
                Body::MemoryAdded(MemoryAdded {
                    memory_id: mid(*m),
                    content: t.clone(),
                    memory_type: MemoryType::Convention,
                    importance: *imp,
                    project: Some("engram".into()),
                    tags: vec!["rust".into()],
                    pinned: *pinned,
                    source: "extracted".into(),
                    source_session: Some(sk(0)),
                    ..Default::default()
                }),
            ),
            Gen::Updated(m, t, imp, occ) => ev(
                None,
                Body::MemoryUpdated(MemoryUpdated {
                    memory_id: mid(*m),
                    content: t.clone(),
                    importance: *imp,
                    occurrences: *occ,
                    seen_in: Some(sk(1)),
                    ..Default::default()
                }),
            ),
            Gen::Pinned(m, true) => ev(None, Body::MemoryPinned(MemoryRef { memory_id: mid(*m) })),
            Gen::Pinned(m, false) => ev(None, Body::MemoryUnpinned(MemoryRef { memory_id: mid(*m) })),
            Gen::Deprecated(m) => ev(
                None,
                Body::MemoryDeprecated(MemoryDeprecated {
                    memory_id: mid(*m),
                    reason: "old".into(),
                    superseded_by: Some(mid((*m + 1) % MEMORIES.len())),
                }),
            ),
            Gen::Forgotten(m) => ev(
                None,
                Body::MemoryForgotten(MemoryForgotten {
                    memory_id: mid(*m),
                    reason: "privacy".into(),
                    relearnable: false,
                }),
            ),
            Gen::Feedback(s, m, r) => ev(
                Some(sk(*s)),
                Body::MemoryFeedback(MemoryFeedback {
                    memory_id: mid(*m),
                    relevance: *r,
                    reason: "x".into(),
                    by: "agent".into(),
                }),
            ),
            Gen::Embedded(m, v) => ev(
                None,
                Body::MemoryEmbedded(MemoryEmbedded {
                    memory_id: mid(*m),
                    vector: Embedding(v.clone()),
                    model: "t".into(),
                }),
            ),
            Gen::Ranking(s, cands) => {
                let mut seen = std::collections::BTreeSet::new();
                let candidates = cands
                    .iter()
                    .filter(|(m, _)| seen.insert(*m))
                    .enumerate()
                    .map(|(r, (m, inj))| ServedCandidate {
                        memory_id: mid(*m),
                        sources: if r == 0 { vec![source::EXPLORATION.into()] } else { vec![source::BM25.into()] },
                        baseline_score: 1.0 / (r as f32 + 1.0),
                        baseline_rank: r as u32 + 1,
                        predictor_score: Some(0.5),
                        predictor_rank: Some(r as u32 + 1),
                        final_score: 0.3,
                        rank: r as u32 + 1,
                        injected: *inj,
                    })
                    .collect();
                ev(
                    Some(sk(*s)),
                    Body::RankingServed(RankingServed {
                        ranking_id: format!("rk_{i}"),
                        trigger: trigger::PROMPT.into(),
                        query: "auth timeout".into(),
                        alpha: 1.0,
                        cold_start: true,
                        candidates,
                        ..Default::default()
                    }),
                )
            }
            Gen::Hits(s, h) => ev(
                Some(sk(*s)),
                Body::FtsHits(FtsHits { ranking_id: None, memory_ids: h.iter().map(|m| mid(*m)).collect() }),
            ),
            Gen::Scored(s, score, rel, content_events) => ev(
                Some(sk(*s)),
                Body::SessionScored(SessionScored {
                    content_events: *content_events,
                    score: *score,
                    confidence: 0.7,
                    relevance: rel.iter().map(|(m, r)| (mid(*m), *r)).collect(),
                    labels: rel.iter().map(|(m, r)| (mid(*m), r * 0.9)).collect(),
                    scorer: "continuity-v1".into(),
                    ..Default::default()
                }),
            ),
            Gen::Comparison(s, p, b) => ev(
                Some(sk(*s)),
                Body::ComparisonRecorded(ComparisonRecorded {
                    comparison_id: format!("cmp_{i}"),
                    predictor_ndcg: *p,
                    baseline_ndcg: *b,
                    predictor_won: Some(p > b),
                    margin: p - b,
                    success_rate: 0.5,
                    alpha: 1.0,
                    ..Default::default()
                }),
            ),
            Gen::Training(passed, loss) => ev(
                None,
                Body::TrainingRun(TrainingRun {
                    run_id: format!("run_{i}"),
                    model_version: 1,
                    loss: *loss,
                    gates_passed: *passed,
                    ..Default::default()
                }),
            ),
            Gen::Promoted(v) => ev(
                None,
                Body::ModelPromoted(ModelPromoted {
                    model_version: *v,
                    checkpoint: "abc".into(),
                    run_id: "run_0".into(),
                }),
            ),
            Gen::Drift => ev(None, Body::DriftReset(DriftReset { success_rate: 0.2, window: 10 })),
            Gen::Replayed(s, lists) => ev(
                Some(sk(*s)),
                Body::HistoryReplayed(HistoryReplayed {
                    replayer: "history-v1".into(),
                    project: Some("engram".into()),
                    started_ms: ts.0 - 60_000,
                    moments: 3,
                    ranked: 2,
                    lists: lists
                        .iter()
                        .map(|(pool, needed, w)| ReplayedList {
                            trigger: trigger::PROMPT.into(),
                            query: "auth timeout".into(),
                            at_ms: ts.0 - 30_000,
                            memory_ids: pool.iter().map(|m| mid(*m)).collect(),
                            injected: 1,
                            labels: [(mid(*needed), 1.0)].into(),
                            source: "told_twice".into(),
                            weight: *w,
                        })
                        .collect(),
                    told_twice: lists.iter().map(|(_, needed, _)| (mid(*needed), ts.0 - 10_000)).collect(),
                    confidence: 0.7,
                }),
            ),
            Gen::Unknown(kind) => ev(
                None,
                Body::Unknown(UnknownBody { kind: kind.clone(), body: json!({"x": 1}), reason: String::new() }),
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

fn home() -> (tempfile::TempDir, Paths) {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path().join("home"));
    (dir, paths)
}

fn small_segments() -> shared::storage::journal::JournalOptions {
    shared::storage::journal::JournalOptions {
        tape: TapeOptions { segment_bytes: 3_000, chunk_bytes: 1_000, ..TapeOptions::default() },
    }
}

fn dump(store: &Store, positions: bool) -> String {
    canonical_dump(store.conn(), positions).unwrap()
}

/// `memory_usage` (kept by triggers) agrees with the aggregate of `session_memories`.
fn assert_usage_is_the_aggregate(store: &Store) {
    let rows = |sql: &str| -> Vec<(String, i64, f64)> {
        store
            .conn()
            .prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let kept = rows(
        "SELECT memory_id, sessions_injected, useful FROM memory_usage
         WHERE sessions_injected != 0 OR abs(useful) > 1e-9 ORDER BY memory_id",
    );
    let summed = rows(
        "SELECT memory_id, SUM(was_injected), SUM(MAX(COALESCE(label, relevance_score, 0), 0)) FROM session_memories
         GROUP BY memory_id HAVING SUM(was_injected) != 0 OR SUM(MAX(COALESCE(label, relevance_score, 0), 0)) > 1e-9
         ORDER BY memory_id",
    );
    assert_eq!(kept.len(), summed.len(), "{kept:?} != {summed:?}");
    for (k, s) in kept.iter().zip(&summed) {
        assert_eq!((&k.0, k.1), (&s.0, s.1));
        assert!((k.2 - s.2).abs() < 1e-6, "{k:?} != {s:?}");
    }
}

/// Every memory's stored text (`memories.text_terms`) is its content analysed.
fn assert_stored_text_is_the_analysis(store: &Store) {
    let mut stmt = store.conn().prepare("SELECT id, content, text_terms FROM memories").unwrap();
    let rows: Vec<(String, String, Option<Vec<u8>>)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    for (id, content, stored) in rows {
        assert_eq!(stored, Some(MemoryText::of(&content).encode()), "{id}: {content:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Replay of the tapes equals the incrementally built projection, even
    /// when writers "crash" between appending and applying.
    #[test]
    fn replay_equals_incremental(items in prop::collection::vec(any_event(), 1..80), cuts in prop::collection::vec((1usize..8, any::<bool>()), 1..20)) {
        let events = build(&items);
        let (_dir, paths) = home();
        let mut journal = shared::projection::open_with(&paths, "test", small_segments()).unwrap();
        let mut rest: &[Event] = &events;
        let mut cut_iter = cuts.iter().cycle();
        while !rest.is_empty() {
            let (n, crash) = *cut_iter.next().unwrap();
            let (chunk, tail) = rest.split_at(n.min(rest.len()));
            rest = tail;
            if crash {
                // Append without applying, as a writer killed in between would.
                let tape = TapeLog::open(&paths.tapes(), TapeOptions { segment_bytes: 3_000, chunk_bytes: 1_000, ..TapeOptions::default() }).unwrap();
                let payloads: Vec<Vec<u8>> = chunk.iter().map(Event::to_json).collect();
                let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
                tape.lock().unwrap().append(&refs).unwrap();
            } else {
                journal.append(chunk).unwrap();
            }
        }
        journal.catch_up().unwrap();
        assert_usage_is_the_aggregate(journal.store());
        assert_stored_text_is_the_analysis(journal.store());
        let incremental = dump(journal.store(), true);
        prop_assert_eq!(journal.store().applied_lsn().unwrap(), events.len() as u64);
        drop(journal);
        let report = replay(&paths, &mut |_| {}).unwrap();
        prop_assert_eq!(report.events, events.len() as u64);
        let replayed = Store::open(&paths.db()).unwrap();
        let replayed = dump(&replayed, true);
        prop_assert_eq!(incremental, replayed);
    }

    /// Applying every event twice (a duplicated log) equals applying it once.
    #[test]
    fn applying_twice_equals_once(items in prop::collection::vec(any_event(), 1..60)) {
        let events = build(&items);
        let doubled: Vec<Event> = events.iter().flat_map(|e| [e.clone(), e.clone()]).collect();
        let (_d1, once) = home();
        let (_d2, twice) = home();
        let mut a = shared::projection::open(&once, "test").unwrap();
        a.append(&events).unwrap();
        let mut b = shared::projection::open(&twice, "test").unwrap();
        b.append(&doubled).unwrap();
        prop_assert_eq!(dump(a.store(), false), dump(b.store(), false));
    }
}

fn event(i: usize, session: Option<&str>, body: Body) -> Event {
    Event {
        v: SCHEMA_VERSION,
        id: EventId(format!("ev_{i}")),
        ts: Ts(1_700_000_000_000 + i as i64 * 1000),
        writer: "test".into(),
        session: session.map(SessionKey::from),
        body,
    }
}

fn added(i: usize, id: &str, content: &str) -> Event {
    event(
        i,
        Some("claude:s"),
        Body::MemoryAdded(MemoryAdded {
            memory_id: id.into(),
            content: content.into(),
            memory_type: MemoryType::Convention,
            importance: 0.8,
            project: Some("engram".into()),
            tags: vec!["sqlite".into()],
            source_session: Some("claude:s".into()),
            ..Default::default()
        }),
    )
}

fn fts_ids(store: &Store, query: &str) -> Vec<String> {
    let mut stmt = store
        .conn()
        .prepare("SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid WHERE memories_fts MATCH ?1 ORDER BY m.id")
        .unwrap();
    stmt.query_map([query], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn memory_lifecycle_keeps_search_in_step() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[
        added(1, "mem_1", "Always run migrations inside a transaction"),
        added(2, "mem_2", "Never commit secrets"),
        event(
            3,
            None,
            Body::MemoryUpdated(MemoryUpdated {
                memory_id: "mem_1".into(),
                content: Some("Run sqlite migrations with BEGIN IMMEDIATE".into()),
                occurrences: 2,
                ..Default::default()
            }),
        ),
        event(4, None, Body::MemoryPinned(MemoryRef { memory_id: "mem_2".into() })),
    ])
    .unwrap();
    assert_eq!(fts_ids(j.store(), "immediate"), vec!["mem_1"]);
    assert!(fts_ids(j.store(), "transaction").is_empty(), "old text left the index");
    let (occ, pinned): (i64, i64) = j
        .store()
        .conn()
        .query_row(
            "SELECT occurrence_count, (SELECT pinned FROM memories WHERE id='mem_2') FROM memories WHERE id='mem_1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((occ, pinned), (3, 1));
    j.append(&[event(
        5,
        None,
        Body::MemoryForgotten(MemoryForgotten { memory_id: "mem_2".into(), reason: "user".into(), relearnable: false }),
    )])
    .unwrap();
    assert!(fts_ids(j.store(), "secrets").is_empty(), "forgotten memory is hidden at once");
    let content: String =
        j.store().conn().query_row("SELECT content FROM memories WHERE id='mem_2'", [], |r| r.get(0)).unwrap();
    assert_eq!(content, "");
    assert_stored_text_is_the_analysis(j.store());
}

/// A store from before `text_terms` (or analysed by another version of the
/// text code) is analysed again when a writer opens it, once.
#[test]
fn stale_stored_text_is_refreshed_on_open() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[
        added(1, "mem_1", "Always run migrations inside a transaction"),
        added(2, "mem_2", "Did Caroline go to the LGBTQ support group on 7 May 2023?"),
    ])
    .unwrap();
    let fresh = dump(j.store(), false);
    j.store()
        .conn()
        .execute_batch(
            "UPDATE memories SET text_terms = NULL WHERE id = 'mem_1';
             UPDATE memories SET text_terms = X'00ff' WHERE id = 'mem_2';
             DELETE FROM engram_state WHERE key = 'text_version';",
        )
        .unwrap();
    drop(j);
    let store = Store::open(&paths.db()).unwrap();
    assert_stored_text_is_the_analysis(&store);
    assert_eq!(dump(&store, false), fresh);
    let version: String =
        store.conn().query_row("SELECT value FROM engram_state WHERE key = 'text_version'", [], |r| r.get(0)).unwrap();
    assert_eq!(version, TEXT_VERSION.to_string());
    // Done once: a stale row left now stays until the version changes.
    store.conn().execute("UPDATE memories SET text_terms = NULL WHERE id = 'mem_1'", []).unwrap();
    drop(store);
    let store = Store::open(&paths.db()).unwrap();
    let stored: Option<Vec<u8>> =
        store.conn().query_row("SELECT text_terms FROM memories WHERE id = 'mem_1'", [], |r| r.get(0)).unwrap();
    assert_eq!(stored, None);
}

#[test]
fn bad_and_unknown_events_are_recorded_and_never_block() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let unknown = event(
        2,
        None,
        Body::Unknown(UnknownBody { kind: "future.thing".into(), body: json!({}), reason: String::new() }),
    );
    j.append(&[
        event(1, None, Body::MemoryPinned(MemoryRef { memory_id: "mem_missing".into() })),
        unknown,
        added(3, "mem_1", "Prefer small commits"),
    ])
    .unwrap();
    let conn = j.store().conn();
    let err: String = conn.query_row("SELECT error FROM apply_errors", [], |r| r.get(0)).unwrap();
    assert!(err.contains("unknown memory mem_missing"), "{err}");
    let kind: String = conn.query_row("SELECT kind FROM unknown_events", [], |r| r.get(0)).unwrap();
    assert_eq!(kind, "future.thing");
    let n: i64 = conn.query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1, "the event after the bad ones was applied");
    assert_eq!(j.store().applied_lsn().unwrap(), 3);
}

#[test]
fn rankings_and_hits_fill_session_memories_like_signet() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let cand = |id: &str, rank: u32, injected: bool| ServedCandidate {
        memory_id: id.into(),
        sources: vec![source::EFFECTIVE.into()],
        baseline_score: 0.9,
        baseline_rank: rank,
        predictor_score: None,
        predictor_rank: None,
        final_score: 0.1,
        rank,
        injected,
    };
    j.append(&[
        added(1, "mem_1", "one"),
        added(2, "mem_2", "two"),
        added(3, "mem_3", "three"),
        event(
            4,
            Some("claude:s"),
            Body::RankingServed(RankingServed {
                ranking_id: "rk_1".into(),
                trigger: trigger::SESSION_START.into(),
                alpha: 1.0,
                cold_start: true,
                candidates: vec![cand("mem_1", 1, true), cand("mem_2", 2, false)],
                ..Default::default()
            }),
        ),
        event(
            5,
            Some("claude:s"),
            Body::FtsHits(FtsHits { ranking_id: None, memory_ids: vec!["mem_1".into(), "mem_3".into()] }),
        ),
        event(6, Some("claude:s"), Body::FtsHits(FtsHits { ranking_id: None, memory_ids: vec!["mem_3".into()] })),
    ])
    .unwrap();
    let rows: BTreeMap<String, (String, i64, i64)> = {
        let mut stmt = j
            .store()
            .conn()
            .prepare("SELECT memory_id, source, was_injected, fts_hit_count FROM session_memories WHERE session_key='claude:s'")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(rows["mem_1"], ("effective".into(), 1, 1));
    assert_eq!(rows["mem_2"], ("effective".into(), 0, 0));
    assert_eq!(rows["mem_3"], ("fts_only".into(), 0, 2));
    let access: i64 =
        j.store().conn().query_row("SELECT access_count FROM memories WHERE id='mem_1'", [], |r| r.get(0)).unwrap();
    assert_eq!(access, 1);
}

#[test]
fn content_after_an_idle_end_reopens_the_session_but_a_real_end_stays() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    // Ids are unique per call; times are the minute given.
    let n = std::cell::Cell::new(0);
    let at = |minute: i64, s: &str, body: Body| {
        n.set(n.get() + 1);
        Event { id: EventId(format!("ev_{}", n.get())), ts: Ts(minute * 60_000), ..event(0, Some(s), body) }
    };
    let msg = |m: i64, s: &str| at(m, s, Body::MsgIn(MsgIn { text: format!("prompt {m}"), ..Default::default() }));
    let end = |m: i64, s: &str, reason: &str| at(m, s, Body::SessionEnded(SessionEnded { reason: reason.into() }));
    let state = |j: &Journal, s: &str| -> (Option<i64>, Option<String>) {
        j.store()
            .conn()
            .query_row("SELECT ended_ms, end_reason FROM sessions WHERE session_key = ?1", [s], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap()
    };
    j.append(&[msg(1, "claude:idle"), end(2, "claude:idle", "idle"), msg(1, "claude:real")]).unwrap();
    j.append(&[end(2, "claude:real", "other")]).unwrap();
    assert_eq!(state(&j, "claude:idle").1.as_deref(), Some("idle"));
    // The user came back: newer content reopens an idle session, not one the harness ended.
    j.append(&[msg(3, "claude:idle"), msg(3, "claude:real")]).unwrap();
    assert_eq!(state(&j, "claude:idle"), (None, None));
    assert_eq!(state(&j, "claude:real").1.as_deref(), Some("other"));
    // A stale idle end (older than the session's last content) does not close it again.
    j.append(&[end(2, "claude:idle", "idle")]).unwrap();
    assert_eq!(state(&j, "claude:idle"), (None, None));
}

#[test]
fn second_journal_sees_and_applies_what_the_first_appended() {
    let (_dir, paths) = home();
    let mut a = shared::projection::open(&paths, "a").unwrap();
    let mut b = shared::projection::open(&paths, "b").unwrap();
    a.append(&[added(1, "mem_1", "from a")]).unwrap();
    b.append(&[added(2, "mem_2", "from b")]).unwrap();
    a.append(&[added(3, "mem_3", "from a again")]).unwrap();
    for j in [&a, &b] {
        let n: i64 = j.store().conn().query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 3);
    }
    assert_eq!(b.store().applied_lsn().unwrap(), 3);
}

#[test]
fn replay_swaps_generations_under_an_open_journal() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "mem_1", "before replay")]).unwrap();
    let before = j.store().file().to_path_buf();
    replay(&paths, &mut |_| {}).unwrap();
    assert!(j.store().is_replaced());
    assert!(!before.exists(), "the old generation was removed");
    j.append(&[added(2, "mem_2", "after replay")]).unwrap();
    assert_ne!(j.store().file(), before);
    let n: i64 = j.store().conn().query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 2);
}

#[test]
fn replay_refuses_a_damaged_log_and_changes_nothing() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    for i in 0..50 {
        j.append(&[added(i + 1, &format!("mem_{i}"), "some text that compresses well well well")]).unwrap();
    }
    j.seal().unwrap();
    let seg = std::fs::read_dir(paths.tapes())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&seg, bytes).unwrap();
    let before = j.store().file().to_path_buf();
    let dump_before = dump(j.store(), true);
    let err = replay(&paths, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains(&seg.file_name().unwrap().to_string_lossy().to_string()), "{err}");
    assert!(!j.store().is_replaced());
    assert_eq!(std::fs::canonicalize(paths.db()).unwrap(), before);
    assert_eq!(dump(j.store(), true), dump_before);
    let gens = std::fs::read_dir(paths.db_generations()).unwrap().count();
    assert_eq!(gens, 3, "only the live generation and its -wal/-shm remain");
}

#[test]
fn compact_removes_forgotten_text_from_tapes_and_database() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let secret = "The staging password is hunter2-correct-horse";
    j.append(&[
        added(1, "mem_1", secret),
        added(2, "mem_2", "Keep this one"),
        event(3, Some("claude:s"), Body::MsgIn(MsgIn { text: format!("remember: {secret}"), ..Default::default() })),
        event(
            4,
            None,
            Body::MemoryForgotten(MemoryForgotten {
                memory_id: "mem_1".into(),
                reason: "user".into(),
                relearnable: false,
            }),
        ),
    ])
    .unwrap();
    let report = j.compact().unwrap();
    assert_eq!(report.forgotten, 1);
    assert_eq!(report.events_scrubbed, 2);
    let needle = b"hunter2";
    for entry in walk(paths.home()) {
        let bytes = std::fs::read(&entry).unwrap();
        let plain = if entry.extension().is_some_and(|x| x == "seg") { decompress_all(&bytes) } else { bytes };
        assert!(!plain.windows(needle.len()).any(|w| w == needle), "text survives in {}", entry.display());
    }
    assert!(j.tape().verify().unwrap().problems.is_empty());
    let kept: Option<String> = j
        .store()
        .conn()
        .query_row("SELECT content FROM memories WHERE id='mem_2'", [], |r| r.get(0))
        .optional()
        .unwrap();
    assert_eq!(kept.as_deref(), Some("Keep this one"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// All zstd frames found in a sealed segment, decompressed (crude but enough
/// to search for a string).
fn decompress_all(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let magic = [0x28u8, 0xb5, 0x2f, 0xfd];
    let mut i = 0;
    while i + 4 <= bytes.len() {
        if bytes[i..i + 4] == magic
            && let Ok(d) = zstd::stream::decode_all(&bytes[i..])
        {
            out.extend(d);
        }
        i += 1;
    }
    out
}

/// The frames of the active segment, for damaging them.
fn active_segment(paths: &Paths) -> std::path::PathBuf {
    std::fs::read_dir(paths.tapes())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "tape"))
        .unwrap()
}

/// Issue 21, item 1: a frame the projection applied was acknowledged; even
/// without the lock file's hint, recovery must not cut it as a torn tail.
#[test]
fn a_damaged_frame_the_projection_applied_is_refused_not_cut() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "mem_1", "one"), added(2, "mem_2", "two"), added(3, "mem_3", "three")]).unwrap();
    drop(j);
    std::fs::write(paths.tapes().join("LOCK"), b"").unwrap();
    let active = active_segment(&paths);
    let mut bytes = std::fs::read(&active).unwrap();
    let at = bytes.len() - 4;
    bytes[at] ^= 0x20;
    std::fs::write(&active, &bytes).unwrap();
    let err = shared::projection::open(&paths, "test").unwrap_err();
    assert_eq!(err.class(), shared::base::error::ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains("lsn 3"), "{err}");
    assert_eq!(std::fs::read(&active).unwrap(), bytes, "nothing was cut");
    assert!(replay(&paths, &mut |_| {}).is_err());
}

/// Issue 21, item 2: a deleted first sealed segment is detected; replay refuses.
#[test]
fn replay_refuses_a_log_without_its_first_segment() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    for i in 1..=4 {
        j.append(&[added(i, &format!("mem_{i}"), "a memory")]).unwrap();
        j.seal().unwrap();
    }
    let before = dump(j.store(), true);
    drop(j);
    let first = std::fs::read_dir(paths.tapes())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("0000000001-"))
        .unwrap();
    std::fs::remove_file(&first).unwrap();
    let err = replay(&paths, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    let j = shared::projection::open(&paths, "test").unwrap();
    assert_eq!(dump(j.store(), true), before);
    assert!(!j.tape().verify().unwrap().problems.is_empty());
}

/// Issue 21, item 2: a log that ends before the projection's position lost a
/// segment (here the active one, and the lock file's hint with it); replay
/// refuses rather than rebuild a smaller projection.
#[test]
fn replay_refuses_a_log_that_ends_before_the_projection() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "mem_1", "sealed")]).unwrap();
    j.seal().unwrap();
    j.append(&[added(2, "mem_2", "active"), added(3, "mem_3", "active too")]).unwrap();
    drop(j);
    std::fs::remove_file(active_segment(&paths)).unwrap();
    std::fs::write(paths.tapes().join("LOCK"), b"").unwrap();
    let err = replay(&paths, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("lsn 3"), "{err}");
    let count = |paths: &Paths| -> i64 {
        Store::open(&paths.db()).unwrap().conn().query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0)).unwrap()
    };
    assert_eq!(count(&paths), 3);
}

/// Issue 21 item 7: compaction removes a forgotten memory's text from the
/// session content it was extracted from, where it was typed with other
/// case, spacing and punctuation than the tidied memory.
#[test]
fn compact_erases_a_forgotten_text_from_the_session_it_was_learned_from() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let typed = "ok so: make sure to run `pnpm lint`\nbefore   committing, please";
    j.append(&[
        event(1, Some("claude:s"), Body::MsgIn(MsgIn { text: typed.into(), ..Default::default() })),
        added(2, "mem_1", "Make sure to run pnpm lint before committing."),
        added(3, "mem_2", "Keep this one"),
    ])
    .unwrap();
    shared::domain::memory::ops::forget(&mut j, "mem_1", None, Ts(5_000)).unwrap();
    let report = j.compact().unwrap();
    assert_eq!(report.events_scrubbed, 2, "the memory and its source");
    let texts: Vec<String> = {
        let snap = j.tape().snapshot().unwrap();
        snap.frames_after(0).map(|f| String::from_utf8(f.unwrap().payload).unwrap().to_lowercase()).collect()
    };
    assert!(texts.iter().all(|t| !t.contains("pnpm lint")), "{texts:#?}");
    assert!(texts.iter().any(|t| t.contains("ok so: [forgotten], please")), "{texts:#?}");
    assert!(texts.iter().any(|t| t.contains("keep this one")));
}

/// Compaction erases a forgotten text from every stored query and text: whole,
/// cut short where a query or a preview was shortened (at the cut mark `…`,
/// in any case), cut in the middle of a long output, and in a ranking the
/// read-side hooks spooled that no writer has appended yet.
#[test]
fn compact_erases_a_forgotten_text_from_stored_queries_cut_or_spooled() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let text = "The quokka deploy key rotates every ninth moon under the zebra vault";
    let ranking = |i: usize, query: String| {
        event(
            i,
            Some("claude:s"),
            Body::RankingServed(RankingServed {
                ranking_id: format!("rk_{i}"),
                trigger: "prompt".into(),
                query,
                ..Default::default()
            }),
        )
    };
    j.append(&[
        added(1, "mem_1", text),
        ranking(2, format!("why does {text} matter")),
        // A session-start query: a previous prompt cut at 300 characters.
        ranking(3, "web · /src\nso the quokka deploy key rotates ev…\nsrc/a.rs".into()),
        // A query cut at the 2,000 bytes a ranking records.
        ranking(4, format!("{}THE QUOKKA DEPLOY KEY ROT…", "filler ".repeat(280))),
        // The middle of a long output cut out: the text's tail follows the mark.
        event(
            5,
            Some("claude:s"),
            Body::ToolResult(ToolResult {
                call_id: "c1".into(),
                stdout: "head\n[… 9000 bytes cut …]\nevery ninth moon under the zebra vault\nend".into(),
                truncated: 9000,
                ..Default::default()
            }),
        ),
    ])
    .unwrap();
    shared::domain::hook::spool_unsynced(&paths, &[ranking(6, format!("and again: {text}"))]).unwrap();
    shared::domain::memory::ops::forget(&mut j, "mem_1", None, Ts(9_000)).unwrap();
    shared::projection::compact(&mut j).unwrap();
    for entry in walk(paths.home()) {
        let bytes = std::fs::read(&entry).unwrap();
        let plain = if entry.extension().is_some_and(|x| x == "seg") { decompress_all(&bytes) } else { bytes };
        let lower = String::from_utf8_lossy(&plain).to_lowercase();
        for needle in ["quokka", "zebra vault"] {
            assert!(!lower.contains(needle), "{needle:?} survives in {}", entry.display());
        }
    }
    let texts: Vec<String> = {
        let snap = j.tape().snapshot().unwrap();
        snap.frames_after(0).map(|f| String::from_utf8(f.unwrap().payload).unwrap()).collect()
    };
    assert!(texts.iter().any(|t| t.contains("so [forgotten]…")), "{texts:#?}");
    assert!(texts.iter().any(|t| t.contains("and again: [forgotten]")), "the spooled ranking: {texts:#?}");
    assert!(j.tape().verify().unwrap().problems.is_empty());
}

/// Issue 15 item 3: a forgotten memory's text is never written as a memory
/// again, whatever writes it (checked where every memory write goes: the
/// journal's append), before and after compaction and replay.
#[test]
fn a_forgotten_text_is_never_written_as_a_memory_again() {
    let (_dir, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&[added(1, "mem_1", "Deploys go through the blue green switch.")]).unwrap();
    shared::domain::memory::ops::forget(&mut j, "mem_1", Some("wrong".into()), Ts(2_000)).unwrap();
    let again = |j: &mut Journal, i: usize| {
        let r = j
            .append(&[
                added(i, &format!("mem_{i}"), "deploys go through the Blue-Green switch"),
                added(i + 1, &format!("mem_{}", i + 1), "Other text"),
            ])
            .unwrap();
        assert_eq!(r.forgotten, 1);
        assert_eq!(r.last_lsn - r.first_lsn + 1, 1, "the other memory is written");
        let live: i64 = j
            .store()
            .conn()
            .query_row("SELECT COUNT(*) FROM memories WHERE is_deleted = 0 AND content LIKE '%green%'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(live, 0);
    };
    again(&mut j, 10);
    j.compact().unwrap();
    again(&mut j, 20);
    drop(j);
    replay(&paths, &mut |_| {}).unwrap();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    again(&mut j, 30);
    let new = shared::domain::memory::ops::NewMemory {
        text: "Deploys go through the blue green switch".into(),
        memory_type: MemoryType::Fact,
        importance: 0.5,
        project: None,
        tags: vec![],
        pinned: false,
    };
    assert!(
        shared::domain::memory::ops::add(&mut j, new, &shared::domain::memory::ops::Origin::user(), Ts(9_000)).is_err()
    );
}

/// A session is labelled only from all of its transcript: it waits while
/// its transcript has complete lines the cursor has not consumed, and a
/// score made from fewer content events than the projection holds (content
/// ingested after the labelling) makes it wait to be labelled again. The
/// coverage travels in the events, so replay decides the same.
#[test]
fn a_session_waits_for_its_transcript_and_again_for_content_after_its_labelling() {
    use shared::domain::training::waiting;
    let (dir, paths) = home();
    let transcript = dir.path().join("s.jsonl");
    let path = transcript.to_str().unwrap().to_owned();
    std::fs::write(&transcript, "{\"turn\":1}\n").unwrap();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    let n = std::cell::Cell::new(0);
    let next = |s: Option<&str>, body: Body| {
        n.set(n.get() + 1);
        event(n.get(), s, body)
    };
    let s = "claude:late";
    let msg = |t: &str| Body::MsgIn(MsgIn { text: t.into(), ..Default::default() });
    let cursor = |offset: u64| {
        Body::SourceCursor(SourceCursor {
            harness: "claude".into(),
            path: path.clone(),
            file_id: "f".into(),
            offset,
            size: offset,
            mtime_ms: 0,
            state: serde_json::Value::Null,
        })
    };
    let scored = |content_events: Option<u64>| {
        Body::SessionScored(SessionScored {
            score: 0.5,
            confidence: 0.8,
            labels: [(mid(0), 0.0)].into_iter().collect(),
            scorer: "continuity-v1".into(),
            content_events,
            ..Default::default()
        })
    };
    let ranking = Body::RankingServed(RankingServed {
        ranking_id: "rk_late".into(),
        trigger: trigger::SESSION_START.into(),
        candidates: vec![ServedCandidate { memory_id: mid(0), rank: 1, injected: true, ..Default::default() }],
        ..Default::default()
    });
    let keys = |j: &Journal| -> Vec<(String, bool)> {
        waiting::ready(j.store()).unwrap().into_iter().map(|w| (w.session_key.0, w.relabel)).collect()
    };
    j.append(&[
        added(100, "mem_a", "always retry the token refresh"),
        next(
            Some(s),
            Body::SessionStarted(SessionStarted {
                harness: "claude".into(),
                harness_session_id: "late".into(),
                source_path: Some(path.clone()),
                ..Default::default()
            }),
        ),
        next(Some(s), ranking),
        next(Some(s), Body::SessionEnded(SessionEnded { reason: "prompt_input_exit".into() })),
    ])
    .unwrap();
    // Ended, but none of its transcript is ingested.
    assert_eq!(waiting::unlabelled(j.store()).unwrap().len(), 1);
    assert!(keys(&j).is_empty(), "labelled before its transcript was read");
    let why = waiting::ingestion_behind(j.store(), &SessionKey(s.into())).unwrap().unwrap();
    assert!(why.contains("not ingested yet"), "{why}");

    // Ingested, with a last line cut in the middle (nothing more will come of it).
    std::fs::write(&transcript, "{\"turn\":1}\n{\"turn\":2}\n{\"tu").unwrap();
    j.append(&[next(Some(s), msg("first")), next(Some(s), msg("second")), next(None, cursor(22))]).unwrap();
    assert_eq!(keys(&j), vec![(s.to_owned(), false)]);

    // Labelled from both content events: nothing waits.
    j.append(&[next(Some(s), scored(Some(2)))]).unwrap();
    assert!(waiting::unlabelled(j.store()).unwrap().is_empty());

    // The session goes on: a complete line the cursor has not reached.
    std::fs::write(&transcript, "{\"turn\":1}\n{\"turn\":2}\n{\"turn\":3}\n").unwrap();
    assert_eq!(waiting::unlabelled(j.store()).unwrap().len(), 0, "no content applied after the labelling yet");
    j.append(&[next(Some(s), msg("third"))]).unwrap();
    assert_eq!(waiting::unlabelled(j.store()).unwrap().len(), 1);
    assert!(keys(&j).is_empty(), "its transcript is not read to the end yet");
    j.append(&[next(None, cursor(33))]).unwrap();
    assert_eq!(keys(&j), vec![(s.to_owned(), true)], "waits to be labelled again");

    // Replay decides the same from the tapes.
    let incremental = dump(j.store(), true);
    drop(j);
    replay(&paths, &mut |_| {}).unwrap();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    assert_eq!(dump(j.store(), true), incremental);
    assert_eq!(keys(&j), vec![(s.to_owned(), true)]);

    // Labelled again from all three: nothing waits; a score from a build
    // that did not count (no coverage) is final.
    j.append(&[next(Some(s), scored(Some(3)))]).unwrap();
    assert!(waiting::unlabelled(j.store()).unwrap().is_empty());
    j.append(&[next(Some(s), msg("fourth")), next(Some(s), scored(None)), next(Some(s), msg("fifth"))]).unwrap();
    assert!(waiting::unlabelled(j.store()).unwrap().is_empty());
    // The transcript gone: there is nothing more to wait for.
    let t = SessionKey(s.into());
    std::fs::remove_file(&transcript).unwrap();
    assert_eq!(waiting::ingestion_behind(j.store(), &t).unwrap(), None);
}
