//! The README's first run, `engram-ingestor quickstart`, end to end: on a
//! machine with no agent history it uses the demo corpus; with history it
//! scans that instead. Either way it ends with a summary and what to do
//! next, and leaves memories and served rankings in the data home.

#![allow(clippy::unwrap_used)]

mod common;

use common::World;

/// A count in the demo's own data home.
fn demo_count(w: &World, sql: &str) -> i64 {
    let store = shared::storage::store::Store::open(&w.home().join("demo-home/engram.db")).unwrap();
    store.conn().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn without_history_the_demo_corpus_runs_the_whole_pipeline() {
    let w = World::new();
    let out = w.ok(&["quickstart", "--no-train", "--cwd", "/home/demo/webapp"]);
    for want in ["1. Agent history", "No agent logs found", "demo corpus", "3. Memories learned", "Summary", "Next"] {
        assert!(out.contains(want), "{want:?} missing:\n{out}");
    }
    assert!(out.contains("engram-ingestor install claude") && out.contains("engram-ingestor install codex"), "{out}");
    assert!(out.contains("<engram-context>"), "shows what would be injected:\n{out}");
    // The demo lives in its own data home: the real one learns nothing from it.
    assert!(out.contains("its own data home"), "{out}");
    assert!(demo_count(&w, "SELECT COUNT(*) FROM memories WHERE is_deleted = 0") >= 10);
    assert!(demo_count(&w, "SELECT COUNT(*) FROM rankings") > 0, "the demo replay records served rankings");
    assert_eq!(demo_count(&w, "SELECT COUNT(*) FROM sessions"), 30);
    assert!(!w.home().join("engram.db").exists() || w.count("SELECT COUNT(*) FROM memories") == 0);
    // Looking around the demo is printed with its data home, and works as printed.
    let demo_home = w.home().join("demo-home");
    let line = out.lines().find(|l| l.contains("memory list")).unwrap();
    assert!(line.contains(&format!("ENGRAM_HOME={}", demo_home.display())), "{line}");
    // A real session in a folder named like a demo project gets nothing from it.
    let input = serde_json::json!({"session_id": "22222222-2222-4222-8222-222222222222", "cwd": "/home/dev/webapp",
        "hook_event_name": "SessionStart", "source": "startup", "transcript_path": null});
    let hook = w.hook(w.scorer(&["hook", "session-start"]), input.to_string().as_bytes());
    let text = String::from_utf8_lossy(&hook.stdout);
    assert!(!text.contains("npm") && !text.contains("redis"), "demo memories reached a real session: {text}");
}

#[test]
fn remove_demo_forgets_what_an_older_version_mixed_in_and_nothing_else() {
    let w = World::new();
    // An older quickstart ran the demo in the data home itself; a real session is there too.
    w.ok(&["quickstart", "--no-train", "--demo-home", w.home().to_str().unwrap(), "--cwd", "/home/demo/webapp"]);
    let transcript = w.claude_projects().join("-home-dev-webapp/11111111-1111-4111-8111-111111111111.jsonl");
    w.copy(&common::ingestor_data("claude_session.jsonl"), &transcript);
    w.ok(&["scan"]);
    // Real: learned (also) from the real session.
    let real = "SELECT COUNT(*) FROM memories m WHERE is_deleted = 0 AND (source_session = 'claude:11111111-1111-4111-8111-111111111111'
                OR EXISTS (SELECT 1 FROM memory_sessions s WHERE s.memory_id = m.id
                           AND s.session_key = 'claude:11111111-1111-4111-8111-111111111111'))";
    let (live, real_live) = (w.count("SELECT COUNT(*) FROM memories WHERE is_deleted = 0"), w.count(real));
    assert!(live - real_live >= 10, "the demo was mixed in ({live} live, {real_live} real)");
    let demo_text: String = w
        .store()
        .conn()
        .query_row(
            "SELECT content FROM memories m WHERE is_deleted = 0
               AND COALESCE(source_session, '') != 'claude:11111111-1111-4111-8111-111111111111'
               AND NOT EXISTS (SELECT 1 FROM memory_sessions s WHERE s.memory_id = m.id
                               AND s.session_key = 'claude:11111111-1111-4111-8111-111111111111')
             ORDER BY id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let dry = w.ok(&["remove-demo", "--dry-run"]);
    assert!(dry.contains("would forget"), "{dry}");
    assert_eq!(w.count("SELECT COUNT(*) FROM memories WHERE is_deleted = 0"), live, "a dry run changes nothing");
    let out = w.ok(&["remove-demo"]);
    assert!(out.contains("30 demo session(s)") && out.contains("compact"), "{out}");
    assert_eq!(
        w.count("SELECT COUNT(*) FROM memories WHERE is_deleted = 0"),
        real_live,
        "only the real memories are left"
    );
    assert_eq!(w.count(real), real_live);
    assert!(w.count("SELECT COUNT(*) FROM memories WHERE is_deleted = 1") >= 10);
    // It is an event: replay agrees, and a second run has nothing to do.
    w.ok(&["replay"]);
    assert_eq!(w.count("SELECT COUNT(*) FROM memories WHERE is_deleted = 0"), real_live);
    assert!(w.ok(&["remove-demo"]).contains("forgot 0 memories"));
    // Removing the demo judged no text: the same lesson from the user is a
    // memory like any other, before and after compaction.
    w.ok(&["compact"]);
    let id = w.ok(&["memory", "add", &demo_text]).trim().to_owned();
    assert!(id.starts_with("mem_"), "a demo memory's text is learnable again: {id}");
    let live = w.count(&format!("SELECT COUNT(*) FROM memories WHERE id = '{id}' AND is_deleted = 0"));
    assert_eq!(live, 1, "{demo_text}");
    assert_eq!(w.count("SELECT COUNT(*) FROM forgotten_fingerprints"), 0, "remove-demo keeps no fingerprint");
}

#[test]
fn the_demo_trains_a_model_that_passes_its_gates_and_shows_one_ranking_before_and_after() {
    let w = World::new();
    tests::build_bin("trainer", "engram-trainer"); // quickstart runs the one next to it
    let out = w.ok(&["quickstart", "--cwd", "/home/demo/webapp"]);
    let trained = out.lines().find(|l| l.contains("trained v1")).unwrap_or_else(|| panic!("no training:\n{out}"));
    assert!(trained.contains(": promoted v1"), "the first model passes its gates: {trained}");
    assert_eq!(demo_count(&w, "SELECT COUNT(*) FROM models"), 1);
    let marked = |label: &str| -> usize {
        let line = out.lines().find(|l| l.contains(label)).unwrap_or_else(|| panic!("{label:?} missing:\n{out}"));
        line.split(": ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap()
    };
    let (before, after) = (marked("Before (the baseline's order)"), marked("After (model v1's own order)"));
    assert!(after > before, "the model serves the morning's lessons better ({before} → {after} of 5):\n{out}");
}

#[test]
fn with_history_the_users_own_sessions_are_scanned() {
    let w = World::new();
    let transcript = w.claude_projects().join("-home-dev-webapp/11111111-1111-4111-8111-111111111111.jsonl");
    w.copy(&common::ingestor_data("claude_session.jsonl"), &transcript);
    let out = w.ok(&["quickstart", "--no-train", "--cwd", "/home/dev/webapp"]);
    assert!(out.contains("Found 1 log(s): 1 claude") && !out.contains("demo corpus"), "{out}");
    assert!(out.contains("Summary") && out.contains("Next"), "{out}");
    assert!(w.count("SELECT COUNT(*) FROM sessions WHERE harness = 'claude'") >= 1);
    assert!(!w.home().join("demo").exists() && !w.home().join("demo-home").exists());
}

/// Real sessions laid out as a Claude Code home (`../shared/realdata/claude`),
/// without any served ranking: quickstart replays them as history, trains a
/// first model or says in numbers why not, and reports the lessons told twice.
#[test]
fn with_real_history_quickstart_replays_it_and_trains_or_says_why_not_in_numbers() {
    let Some(claude) = shared::base::testing::shared_data("realdata/claude") else { return };
    let w = World::new();
    tests::build_bin("trainer", "engram-trainer");
    let mut files = 0;
    for project in std::fs::read_dir(&claude).unwrap().map(|e| e.unwrap().path()) {
        let name = project.file_name().unwrap().to_string_lossy().into_owned();
        for f in std::fs::read_dir(&project).unwrap().map(|e| e.unwrap().path()) {
            if f.extension().is_some_and(|x| x == "jsonl") {
                w.copy(&f, &w.claude_projects().join(format!("-home-dev-{name}")).join(f.file_name().unwrap()));
                files += 1;
            }
        }
    }
    assert!(files >= 40, "{files} sessions");
    let out = w.ok(&["quickstart", "--cwd", "/home/dev/minsky"]);
    let replayed = out.lines().find(|l| l.contains("history: ")).unwrap_or_else(|| panic!("no replay:\n{out}"));
    let sessions: u32 = replayed
        .split("history: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{replayed}"));
    assert!(sessions >= 30, "the ended sessions are replayed: {replayed}");
    assert!(replayed.contains("moments") && replayed.contains("told twice"), "{replayed}");
    let trained = out.lines().any(|l| l.contains("trained v1"));
    let why_not = out.lines().any(|l| {
        l.contains("not training:")
            && l.contains("the replayed history of")
            && l.contains("labelled list(s) to train on (need")
    });
    assert!(trained || why_not, "trains, or says why not in numbers:\n{out}");
    let told = out.lines().find(|l| l.contains("Told twice: ")).unwrap_or_else(|| panic!("no told-twice line:\n{out}"));
    assert!(told.contains("lesson(s) were given in more than one session") && told.contains("already held"), "{told}");
    assert_eq!(w.count("SELECT COUNT(*) FROM rankings"), 0, "nothing counts as served");
    assert!(w.count("SELECT COUNT(*) FROM replayed_sessions") >= i64::from(sessions));
    // A second run replays nothing again.
    let again = w.ok(&["quickstart", "--cwd", "/home/dev/minsky"]);
    assert!(again.contains(&format!("history: 0 session(s) replayed ({sessions} before)")), "{again}");
}
