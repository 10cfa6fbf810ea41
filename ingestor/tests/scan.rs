//! The scanner against real tape logs and projections in temporary data
//! homes, called as a library: a batch torn by a crash is completed without
//! loss or duplicates, a shutdown request stops cleanly, live appends give
//! the same events and memories as one scan of the whole file, huge lines
//! are skipped with a diagnostic, rewritten Gemini records are recorded
//! again, and idle sessions end once.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use ingestor::discover::Roots;
use ingestor::scan::{self, Limits, ScanOptions, ScanSummary};
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event};
use shared::storage::journal::decode;
use shared::storage::tape::{ACTIVE_HEADER, FrameRead, TapeLog, TapeOptions, decode_frame};

const SESSION: &str = "claude:11111111-1111-4111-8111-111111111111";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A data home plus harness directories, all temporary.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home { dir: tempfile::tempdir().expect("tmp") }
    }

    fn paths(&self) -> Paths {
        Paths::at(self.dir.path().join("engram"))
    }

    fn claude(&self) -> PathBuf {
        self.dir.path().join("claude/projects/-home-dev-webapp")
    }

    fn gemini(&self) -> PathBuf {
        self.dir.path().join("gemini/tmp/hash/chats")
    }

    fn roots(&self) -> Roots {
        Roots {
            claude: vec![self.dir.path().join("claude/projects")],
            codex: vec![self.dir.path().join("codex/sessions")],
            gemini: vec![self.dir.path().join("gemini/tmp")],
            opencode: vec![self.dir.path().join("opencode")],
            ..Roots::default()
        }
    }

    fn write(&self, path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }

    fn append(&self, path: &Path, bytes: &[u8]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(path).expect("open");
        f.write_all(bytes).expect("append");
    }

    fn opts(&self) -> ScanOptions {
        let mut o = ScanOptions::new(Ts::now());
        o.roots = Some(self.roots());
        o
    }

    fn scan_with(&self, opts: &ScanOptions, shutdown: &Shutdown) -> ScanSummary {
        scan::run(&self.paths(), &Config::default(), opts, shutdown, &mut |_| {}).expect("scan")
    }

    fn scan(&self) -> ScanSummary {
        self.scan_with(&self.opts(), &Shutdown::manual())
    }

    /// Every event in the tapes, in log order.
    fn events(&self) -> Vec<Event> {
        let log = TapeLog::open(&self.paths().tapes(), TapeOptions::default()).expect("log");
        let snap = log.snapshot().expect("snapshot");
        snap.frames_after(0).map(|f| f.expect("frame")).map(|f| decode(f.lsn, &f.payload)).collect()
    }
}

fn content_ids(events: &[Event]) -> BTreeSet<String> {
    events.iter().filter(|e| e.session.is_some() && e.memory_id().is_none()).map(|e| e.id.0.clone()).collect()
}

fn memory_ids(events: &[Event]) -> BTreeSet<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(m) => Some(m.memory_id.0.clone()),
            _ => None,
        })
        .collect()
}

fn assert_no_duplicate_ids(events: &[Event]) {
    let mut seen = HashSet::new();
    for e in events {
        assert!(seen.insert(&e.id), "event {} appended twice ({})", e.id, e.kind());
    }
}

fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// The events and memories of one scan of the whole file.
fn one_shot(name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let home = Home::new();
    home.write(
        &home.claude().join("11111111-1111-4111-8111-111111111111.jsonl"),
        &std::fs::read(data(name)).expect("fixture"),
    );
    home.scan();
    let events = home.events();
    (content_ids(&events), memory_ids(&events))
}

#[test]
fn live_appends_give_the_events_and_memories_of_one_scan() {
    let all = std::fs::read(data("claude_session.jsonl")).expect("fixture");
    let lines = lines(&all);
    // Split just before the user's correction ("No, don't use npm here…"), in
    // the middle of a line: the first scan must leave the partial line alone.
    let split = lines.iter().position(|l| l.windows(4).any(|w| w == b"u010")).expect("u010");
    let head: Vec<u8> = lines[..split].concat();
    let partial = &lines[split][..40];
    let home = Home::new();
    let file = home.claude().join("11111111-1111-4111-8111-111111111111.jsonl");
    home.write(&file, &[head.as_slice(), partial].concat());
    let first = home.scan();
    assert_eq!(first.total().diagnostics, 0, "the partial line was not read");
    home.append(&file, &lines[split][40..]);
    home.append(&file, &lines[split + 1..].concat());
    let second = home.scan();
    assert!(second.total().events > 0);
    assert_eq!(second.total().files_reread, 0, "appends are read from the cursor");
    let events = home.events();
    assert_no_duplicate_ids(&events);
    let (want_events, want_memories) = one_shot("claude_session.jsonl");
    assert_eq!(content_ids(&events), want_events);
    // The correction and the struggle need the events before the split: the
    // second scan reads them back from the tapes as context.
    assert_eq!(memory_ids(&events), want_memories);
    assert!(
        events.iter().any(|e| matches!(&e.body, Body::MemoryAdded(m) if m.memory_type == shared::storage::event::MemoryType::Correction)),
        "the correction after the split was learned"
    );
    assert_eq!(home.scan().events_appended, 0);
}

#[test]
fn a_batch_torn_by_a_crash_is_completed_without_loss_or_duplicates() {
    let home = Home::new();
    let file = home.claude().join("11111111-1111-4111-8111-111111111111.jsonl");
    home.write(&file, &std::fs::read(data("claude_session.jsonl")).expect("fixture"));
    let mut opts = home.opts();
    opts.now = Ts::parse("2026-01-02T03:31:00Z").expect("ts"); // no idle end after the batch
    home.scan_with(&opts, &Shutdown::manual());
    let before = home.events();
    let n = before.len();
    assert!(matches!(before[n - 1].body, Body::SourceCursor(_)), "a batch ends with its cursor");
    // The crash: only the first half of the batch reached the disk, and the
    // projection never saw any of it.
    let tape = home.paths().tapes().join("active-0000000001.tape");
    let bytes = std::fs::read(&tape).expect("tape");
    let mut pos = ACTIVE_HEADER;
    for _ in 0..n / 2 {
        match decode_frame(&bytes[pos..]) {
            FrameRead::Frame { size, .. } => pos += size,
            other => panic!("unexpected {other:?}"),
        }
    }
    std::fs::write(&tape, &bytes[..pos + 5]).expect("tear the tape");
    // The batch was never acknowledged: the lock hint (written after an
    // append's fsync) still names what came before it, here nothing.
    std::fs::write(home.paths().tapes().join("LOCK"), b"").expect("clear the hint");
    std::fs::remove_file(home.paths().db()).expect("remove the projection link");
    std::fs::remove_dir_all(home.paths().home().join("db")).expect("remove the projection");

    let again = home.scan();
    assert!(again.total().known > 0, "the surviving prefix was recognised");
    let after = home.events();
    assert_no_duplicate_ids(&after);
    let (want_events, want_memories) = one_shot("claude_session.jsonl");
    assert_eq!(content_ids(&after), want_events);
    assert_eq!(memory_ids(&after), want_memories);
    assert_eq!(home.scan().events_appended, 0);
}

#[test]
fn a_shutdown_request_stops_between_files_and_loses_nothing() {
    let home = Home::new();
    home.write(
        &home.claude().join("11111111-1111-4111-8111-111111111111.jsonl"),
        &std::fs::read(data("claude_session.jsonl")).expect("a"),
    );
    home.write(
        &home.claude().join("22222222-2222-4222-8222-222222222222.jsonl"),
        &std::fs::read(data("claude_session_2.jsonl")).expect("b"),
    );
    let shutdown = Shutdown::manual();
    let stop = shutdown.clone();
    let mut opts = home.opts();
    opts.limits = Limits { flush_events: 1, ..Limits::default() };
    let summary = scan::run(&home.paths(), &Config::default(), &opts, &shutdown, &mut |p| {
        if p.files_done == 1 {
            stop.request();
        }
    })
    .expect("scan");
    assert!(summary.interrupted);
    assert_eq!(summary.total().files_read, 1);
    assert_eq!(summary.total().sessions_ended, 0, "no idle ends after an interruption");
    let rest = home.scan();
    assert!(!rest.interrupted);
    assert_eq!(rest.total().files_read, 1, "the second file, and only it");
    assert_no_duplicate_ids(&home.events());
}

#[test]
fn a_line_over_the_limit_is_skipped_with_a_diagnostic() {
    let home = Home::new();
    let file = home.claude().join("11111111-1111-4111-8111-111111111111.jsonl");
    let all = std::fs::read(data("claude_session.jsonl")).expect("fixture");
    let lines = lines(&all);
    let huge = format!("{{\"type\":\"user\",\"pad\":\"{}\"}}\n", "x".repeat(5000));
    let mut bytes = lines[..3].concat();
    bytes.extend_from_slice(huge.as_bytes());
    bytes.extend(lines[3..].concat());
    home.write(&file, &bytes);
    let mut opts = home.opts();
    opts.limits = Limits { chunk_bytes: 512, max_line_bytes: 2048, ..Limits::default() };
    let summary = home.scan_with(&opts, &Shutdown::manual());
    // The fixture's own malformed line, and the skipped one.
    assert_eq!(summary.total().diagnostics, 2, "{summary:#?}");
    let events = home.events();
    // Everything else is there: the same events as a file without the line.
    let (want, _) = one_shot("claude_session.jsonl");
    assert_eq!(content_ids(&events), want);
}

#[test]
fn a_gemini_message_rewritten_with_new_content_is_recorded_again() {
    let home = Home::new();
    let file = home.gemini().join("session-2026-01-02T06-00-aaaaaaaa.jsonl");
    let header = r#"{"sessionId":"g1","projectHash":"abc","startTime":"2026-01-02T06:00:00.000Z","kind":"main"}"#;
    let first = r#"{"id":"m1","timestamp":"2026-01-02T06:00:01.000Z","type":"gemini","content":"Working on it"}"#;
    home.write(&file, format!("{header}\n{first}\n").as_bytes());
    home.scan();
    let count = |home: &Home| {
        home.events().iter().filter(|e| matches!(&e.body, Body::MsgOut(m) if m.uuid.as_deref() == Some("m1"))).count()
    };
    assert_eq!(count(&home), 1);
    // The same message id appended again: unchanged, then with new content.
    home.append(&file, format!("{first}\n").as_bytes());
    assert_eq!(home.scan().total().events, 0, "an identical rewrite records nothing");
    let second =
        r#"{"id":"m1","timestamp":"2026-01-02T06:00:01.000Z","type":"gemini","content":"Done: fixed the parser"}"#;
    home.append(&file, format!("{second}\n").as_bytes());
    home.scan();
    assert_eq!(count(&home), 2, "the new version is recorded");
    assert_eq!(home.scan().events_appended, 0);
}

#[test]
fn idle_sessions_end_once_and_again_after_new_content() {
    let home = Home::new();
    let file = home.claude().join("11111111-1111-4111-8111-111111111111.jsonl");
    let all = std::fs::read(data("claude_session.jsonl")).expect("fixture");
    let lines = lines(&all);
    home.write(&file, &lines[..5].concat());
    // Records without a time of their own (the title) get the file's.
    let set_mtime = |ts: &str| {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(Ts::parse(ts).expect("ts").0 as u64);
        std::fs::File::options().append(true).open(&file).expect("open").set_modified(t).expect("mtime");
    };
    set_mtime("2026-01-02T03:04:00Z");
    // The fixture's records are from 2026-01-02; "now" a minute later keeps it open.
    let mut opts = home.opts();
    opts.now = Ts::parse("2026-01-02T03:06:00Z").expect("ts");
    assert_eq!(home.scan_with(&opts, &Shutdown::manual()).total().sessions_ended, 0);
    opts.now = Ts::parse("2026-01-02T05:00:00Z").expect("ts");
    assert_eq!(home.scan_with(&opts, &Shutdown::manual()).total().sessions_ended, 1);
    assert_eq!(home.scan_with(&opts, &Shutdown::manual()).total().sessions_ended, 0, "ended once");
    home.append(&file, &lines[5..].concat());
    set_mtime("2026-01-02T03:30:00Z");
    opts.now = Ts::parse("2026-01-03T00:00:00Z").expect("ts");
    // The main session, resumed then idle again, and the sidechain the new lines started.
    assert_eq!(home.scan_with(&opts, &Shutdown::manual()).total().sessions_ended, 2);
    let ends: Vec<i64> = home
        .events()
        .iter()
        .filter(|e| matches!(e.body, Body::SessionEnded(_)) && e.session.as_ref().is_some_and(|s| s.0 == SESSION))
        .map(|e| e.ts.0)
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(ends[0] < ends[1], "each end is at the session's last event then");
}

#[test]
fn harness_and_since_filters() {
    let home = Home::new();
    home.write(
        &home.claude().join("11111111-1111-4111-8111-111111111111.jsonl"),
        &std::fs::read(data("claude_session.jsonl")).expect("a"),
    );
    let codex = home
        .dir
        .path()
        .join("codex/sessions/2026/01/02")
        .join("rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl");
    home.write(
        &codex,
        &std::fs::read(data("rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl")).expect("b"),
    );
    let mut opts = home.opts();
    opts.since = Some(Ts(Ts::now().0 + 3_600_000));
    let s = home.scan_with(&opts, &Shutdown::manual());
    assert_eq!((s.total().files, s.total().files_read), (2, 0), "nothing modified in the last hour… from the future");
    opts.since = None;
    opts.harnesses = vec![ingestor::adapters::Harness::Codex];
    let s = home.scan_with(&opts, &Shutdown::manual());
    let read: BTreeMap<&str, u64> = s.harnesses.iter().map(|(k, v)| (k.as_str(), v.files_read)).collect();
    assert_eq!(read, BTreeMap::from([("codex", 1)]));
    opts.harnesses.clear();
    let s = home.scan_with(&opts, &Shutdown::manual());
    assert_eq!(s.harnesses["claude"].files_read, 1);
    assert_eq!(s.harnesses["codex"].files_read, 0);
}

/// The hooks' workers scan the turns of different transcripts at the same
/// time (they share `scan.lock`). Each then runs the passes over the whole
/// store (environment backfill, idle endings, summaries) and resolves its
/// lessons against the memories: done at once, every worker saw the same
/// state and appended the same endings and summaries, and a lesson learned in
/// two sessions at once became two memories.
#[test]
fn concurrent_turn_scans_append_each_event_once_and_learn_a_shared_lesson_once() {
    const WORKERS: usize = 6;
    let home = Home::new();
    let all = String::from_utf8(std::fs::read(data("claude_session.jsonl")).expect("fixture")).expect("utf-8");
    let files: Vec<PathBuf> = (0..WORKERS)
        .map(|i| {
            let id = format!("11111111-1111-4111-8111-{i:012}");
            let file = home.claude().join(format!("{id}.jsonl"));
            home.write(&file, all.replace("11111111-1111-4111-8111-111111111111", &id).as_bytes());
            file
        })
        .collect();
    let paths = home.paths();
    // The records are from 2026-01-02: every session is idle by "now".
    let now = Ts::parse("2026-02-01T00:00:00Z").expect("ts");
    for round in 0..3 {
        let barrier = std::sync::Barrier::new(WORKERS);
        std::thread::scope(|s| {
            for file in &files {
                let (paths, barrier) = (&paths, &barrier);
                s.spawn(move || {
                    let mut o = ScanOptions::new(now);
                    o.paths = vec![file.clone()];
                    o.per_turn = true;
                    barrier.wait();
                    scan::run(paths, &Config::default(), &o, &Shutdown::manual(), &mut |_| {}).expect("scan");
                });
            }
        });
        let events = home.events();
        assert_no_duplicate_ids(&events);
        let per_session = |kind: &str| {
            let mut n: BTreeMap<String, usize> = BTreeMap::new();
            for e in events.iter().filter(|e| e.kind() == kind) {
                *n.entry(e.session.as_ref().map(|s| s.0.clone()).unwrap_or_default()).or_default() += 1;
            }
            n
        };
        for kind in ["session.ended", "session.summarized", "env.detected"] {
            let n = per_session(kind);
            assert!(n.values().all(|&c| c == 1), "round {round}: {kind} once per session: {n:?}");
        }
        // Each lesson of the transcript (three) is one memory; the other sessions are occurrences.
        let mut lessons: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &events {
            if let Body::MemoryAdded(m) = &e.body {
                *lessons.entry(m.content.as_str()).or_default() += 1;
            }
        }
        assert!(lessons.keys().any(|t| t.contains("we use pnpm")), "round {round}: {lessons:#?}");
        assert!(lessons.values().all(|&n| n == 1), "round {round}: each lesson is one memory: {lessons:#?}");
        let merged = events.iter().filter(|e| matches!(&e.body, Body::MemoryUpdated(u) if u.seen_in.is_some())).count();
        assert_eq!(merged, lessons.len() * (WORKERS - 1), "round {round}: each other session is an occurrence");
    }
    let dump = || {
        let store = shared::storage::store::Store::open(&paths.db()).expect("db");
        shared::storage::store::canonical_dump(store.conn(), true).expect("dump")
    };
    let live = dump();
    shared::projection::replay(&paths, &mut |_| {}).expect("replay");
    let replayed = dump();
    assert_eq!(live, replayed, "replay gives the projection the workers built");
}
