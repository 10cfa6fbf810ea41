//! The external judge command: a verdict in the seed's shape, and every way it
//! can fail (it is never required).

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use shared::base::command::CommandConfig;
use shared::base::ids::MemoryId;
use trainer::continuity::{MemoryFacts, SessionRecord};
use trainer::judge;

fn sh(script: &str, timeout_ms: u64) -> CommandConfig {
    CommandConfig { command: vec!["sh".into(), "-c".into(), script.into()], timeout_ms }
}

fn injected() -> Vec<MemoryId> {
    vec!["m1".into(), "m2".into()]
}

#[test]
fn a_valid_answer_becomes_a_verdict() {
    let answer = r#"{"overall_score":0.8,"confidence":0.7,"per_memory_scores":{"m1":0.9,"m9":1.0},"missing_topics":["deploys"],"novel_context_count":1,"reasoning":"m1 was used"}"#;
    let v = judge::run(&sh(&format!("cat > /dev/null; echo '{answer}'"), 5_000), &serde_json::json!({}), &injected())
        .unwrap();
    assert_eq!(v.overall_score, 0.8);
    assert_eq!(v.confidence, 0.7);
    assert_eq!(v.per_memory_scores.len(), 1, "memories that were not injected are ignored");
    assert_eq!(v.per_memory_scores[&MemoryId::from("m1")], 0.9);
    assert_eq!(v.missing_topics, vec!["deploys"]);
    assert_eq!(v.novel_context_count, 1);
}

#[test]
fn the_request_carries_the_session() {
    let mut record = SessionRecord::default();
    record.memories.insert("m1".into(), MemoryFacts { content: "use the release script".into(), ..Default::default() });
    let req = judge::request(&record);
    assert!(req["instructions"].as_str().unwrap().contains("per_memory_scores"));
    assert!(req["memories"].as_array().unwrap().is_empty(), "nothing was injected");
    // The judge sees the request on stdin.
    let cfg = sh(r#"grep -q '"instructions"' && echo '{"overall_score":1,"confidence":1}'"#, 5_000);
    assert!(judge::run(&cfg, &req, &[]).is_ok());
}

#[test]
fn failures_are_reported_not_fatal() {
    let req = serde_json::json!({"transcript": "x".repeat(300_000)});
    let cases = [
        ("echo 'not json'", "not JSON"),
        ("echo '{\"overall_score\": 1.5, \"confidence\": 1}'", "outside 0..=1"),
        ("echo '{\"confidence\": 1}'", "overall_score is missing"),
        ("exit 3", "exited with"),
    ];
    for (script, want) in cases {
        let err = judge::run(&sh(script, 5_000), &req, &injected()).unwrap_err();
        assert!(err.contains(want), "{script}: {err}");
    }
    let err = judge::run(&CommandConfig { command: vec!["/nonexistent/judge".into()], timeout_ms: 100 }, &req, &[])
        .unwrap_err();
    assert!(err.contains("cannot start"), "{err}");
}

#[test]
fn a_slow_judge_is_killed_after_the_timeout() {
    let started = Instant::now();
    let err = judge::run(&sh("sleep 30; echo late", 300), &serde_json::json!({}), &injected()).unwrap_err();
    assert!(err.contains("timed out"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn the_judges_children_die_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let script = format!("(sleep 1; touch {}) & sleep 30", marker.display());
    assert!(judge::run(&sh(&script, 200), &serde_json::json!({}), &injected()).is_err());
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(!marker.exists(), "a grandchild outlived the timeout");
}
