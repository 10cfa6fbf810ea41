//! The README's first run, `engram-ingestor quickstart`, end to end: on a
//! machine with no agent history it uses the demo corpus; with history it
//! scans that instead. Either way it ends with a summary and what to do
//! next, and leaves memories and served rankings in the data home.

#![allow(clippy::unwrap_used)]

mod common;

use common::World;

#[test]
fn without_history_the_demo_corpus_runs_the_whole_pipeline() {
    let w = World::new();
    let out = w.ok(&["quickstart", "--no-train", "--cwd", "/home/demo/webapp"]);
    for want in ["1. Agent history", "No agent logs found", "demo corpus", "3. Memories learned", "Summary", "Next"] {
        assert!(out.contains(want), "{want:?} missing:\n{out}");
    }
    assert!(out.contains("engram-ingestor install claude") && out.contains("engram-ingestor install codex"), "{out}");
    assert!(out.contains("<engram-context>"), "shows what would be injected:\n{out}");
    assert!(w.count("SELECT COUNT(*) FROM memories WHERE is_deleted = 0") >= 10);
    assert!(w.count("SELECT COUNT(*) FROM rankings") > 0, "the demo replay records served rankings");
    assert_eq!(w.count("SELECT COUNT(*) FROM sessions"), 30);
}

#[test]
fn the_demo_trains_a_model_that_passes_its_gates_and_shows_one_ranking_before_and_after() {
    let w = World::new();
    tests::build_bin("trainer", "engram-trainer"); // quickstart runs the one next to it
    let out = w.ok(&["quickstart", "--cwd", "/home/demo/webapp"]);
    let trained = out.lines().find(|l| l.contains("trained v1")).unwrap_or_else(|| panic!("no training:\n{out}"));
    assert!(trained.contains(": promoted v1"), "the first model passes its gates: {trained}");
    assert_eq!(w.count("SELECT COUNT(*) FROM models"), 1);
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
    assert!(!w.home().join("demo").exists());
}
