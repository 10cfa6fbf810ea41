//! The hooks end to end: `engram-scorer hook …` and `engram-ingestor hook …`
//! run as Claude Code and Codex run them (the JSON they send on stdin, one
//! process per event), with the recorded events read back from the
//! projection and the tape log once the read side's recorder is done.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::World;
use serde_json::{Value, json};
use shared::base::fsutil::FileLock;
use shared::base::ids::MemoryId;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event, MemoryAdded};

const READ_SIDE: [&str; 3] = ["session-start", "user-prompt-submit", "pre-tool-use"];
const WRITE_SIDE: [&str; 4] = ["post-tool-use", "stop", "session-end", "pre-compact"];

fn seed(w: &World, memories: &[(&str, &str, Option<&str>)]) {
    let mut j = shared::projection::open(&Paths::at(w.home()), "test").unwrap();
    let now = Ts::now().0;
    let events: Vec<Event> = memories
        .iter()
        .enumerate()
        .map(|(i, (text, kind, project))| {
            Event::new(
                Ts(now - 86_400_000 + i as i64),
                "test",
                None,
                Body::MemoryAdded(MemoryAdded {
                    memory_id: MemoryId(format!("mem_{i:03}")),
                    content: (*text).to_owned(),
                    memory_type: shared::storage::event::MemoryType::from_stored(kind),
                    importance: 0.7,
                    project: project.map(str::to_owned),
                    source: "explicit".into(),
                    ..Default::default()
                }),
            )
        })
        .collect();
    j.append(&events).unwrap();
}

fn scorer_hook(w: &World, event: &str, input: &Value) -> Output {
    w.hook(w.scorer(&["hook", event]), input.to_string().as_bytes())
}

fn ingestor_hook(w: &World, event: &str, input: &Value) -> Output {
    w.hook(w.cmd(&["hook", event]), input.to_string().as_bytes())
}

/// The injected context of a hook's output, checked for shape and size.
fn context(out: &Output, event_name: &str) -> Option<String> {
    assert!(out.status.success(), "{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["hookSpecificOutput"], "{v}");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], event_name);
    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned();
    assert!(text.chars().count() <= 10_000, "{} characters", text.chars().count());
    assert!(text.starts_with("<engram-context>\n") && text.ends_with("</engram-context>"), "{text}");
    Some(text)
}

fn ids(text: &str) -> BTreeSet<String> {
    text.lines().filter_map(|l| l.strip_prefix("- ")).map(|l| l.split(' ').next().unwrap().to_owned()).collect()
}

fn claude_input(event: &str, session: &str, extra: Value) -> Value {
    let mut v = json!({
        "session_id": session,
        "transcript_path": format!("/home/me/.claude/projects/-home-me-web/{session}.jsonl"),
        "cwd": "/home/me/web",
        "hook_event_name": event,
        "permission_mode": "default",
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// The project keys of `/home/me/web` and `/home/me/api` (folders that do not
/// exist: each is its own root, keyed by its path; see `shared::domain::env`).
const WEB: &str = "/home/me/web";
const API: &str = "/home/me/api";

fn web_memories() -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    vec![
        ("Always run pnpm lint before committing in the web app.", "convention", Some(WEB)),
        ("The login test is flaky because the session cache TTL is too short in CI.", "gotcha", Some(WEB)),
        ("Redis must be running for the rate limiter tests: docker compose up -d redis.", "gotcha", Some(WEB)),
        ("We use zod for request validation, never hand-written checks.", "convention", Some(WEB)),
        ("Never edit generated files in src/gen; run pnpm codegen.", "convention", Some(WEB)),
        ("cargo sqlx migrate run needs DATABASE_URL from .env.example.", "gotcha", Some(API)),
        ("Keep the api integration tests serial: they share one database.", "correction", Some(API)),
        ("Prefer small commits with one logical change each.", "preference", None),
    ]
}

#[test]
fn claude_read_side_hooks_inject_once_per_session_and_record_what_they_served() {
    let w = World::new();
    seed(&w, &web_memories());
    let s = "4c1f9a2e-0b7d-4e3a-9c55-1d2e3f405162";

    let start = scorer_hook(
        &w,
        "session-start",
        &claude_input("SessionStart", s, json!({"source": "startup", "model": "claude-sonnet-4-5"})),
    );
    let start = context(&start, "SessionStart").expect("session start injects");
    // The predictor's status is not news while it collects: it stays out of the agent's context.
    assert!(!start.contains("[predictor"), "{start}");
    assert!(start.contains(&format!("session claude:{s}")), "{start}");
    let shown_start = ids(&start);
    assert!(!shown_start.is_empty());
    assert!(!shown_start.contains("mem_005") && !shown_start.contains("mem_006"), "other project's memories: {start}");

    let prompt = claude_input(
        "UserPromptSubmit",
        s,
        json!({"prompt": "why is the login test flaky in CI? is it the session cache?"}),
    );
    let first = scorer_hook(&w, "user-prompt-submit", &prompt);
    let shown_prompt = context(&first, "UserPromptSubmit").map(|t| ids(&t)).unwrap_or_default();
    assert!(shown_prompt.is_disjoint(&shown_start), "{shown_prompt:?} repeats {shown_start:?}");

    let tool = claude_input(
        "PreToolUse",
        s,
        json!({"tool_name": "Bash", "tool_input": {"command": "cargo sqlx migrate run", "description": "migrate"}, "tool_use_id": "toolu_01"}),
    );
    let t = scorer_hook(&w, "pre-tool-use", &tool);
    let shown_tool = context(&t, "PreToolUse").map(|t| ids(&t)).unwrap_or_default();
    assert!(shown_tool.contains("mem_005"), "{shown_tool:?}");
    assert!(shown_tool.is_disjoint(&shown_start) && shown_tool.is_disjoint(&shown_prompt));

    // The same prompt again: nothing already shown comes back.
    let again = scorer_hook(&w, "user-prompt-submit", &prompt);
    let shown_again = context(&again, "UserPromptSubmit").map(|t| ids(&t)).unwrap_or_default();
    let before: BTreeSet<String> = shown_start.iter().chain(&shown_prompt).chain(&shown_tool).cloned().collect();
    assert!(shown_again.is_disjoint(&before), "{shown_again:?} repeats");

    // What was served is what is recorded.
    w.wait_for_recorder();
    let key = format!("claude:{s}");
    let store = w.store();
    let conn = store.conn();
    let triggers: Vec<String> = conn
        .prepare("SELECT trigger FROM rankings WHERE session_key = ?1 ORDER BY served_ms, rowid")
        .unwrap()
        .query_map([&key], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(triggers, ["session_start", "prompt", "tool", "prompt"]);
    let injected: BTreeSet<String> = conn
        .prepare("SELECT memory_id FROM session_memories WHERE session_key = ?1 AND was_injected = 1")
        .unwrap()
        .query_map([&key], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let all: BTreeSet<String> = before.union(&shown_again).cloned().collect();
    assert_eq!(injected, all);
    let fts: i64 =
        conn.query_row("SELECT COUNT(*) FROM fts_hits WHERE session_key = ?1", [&key], |r| r.get(0)).unwrap();
    assert_eq!(fts, 2, "one fts.hits per prompt");
    let (project, cwd, model): (String, String, String) = conn
        .query_row("SELECT project, cwd, model FROM sessions WHERE session_key = ?1", [&key], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((project.as_str(), cwd.as_str(), model.as_str()), (WEB, "/home/me/web", "claude-sonnet-4-5"));
}

#[test]
fn the_budget_bounds_the_context_even_at_the_hard_cap() {
    let w = World::new();
    let long: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "Cache warming note {i}: {}",
                "warm the edge cache before every deploy or latency spikes. ".repeat(16)
            )
        })
        .collect();
    let memories: Vec<(&str, &str, Option<&str>)> = long.iter().map(|t| (t.as_str(), "fact", Some("web"))).collect();
    seed(&w, &memories);
    let prompt = |s: &str| {
        claude_input("UserPromptSubmit", s, json!({"prompt": "how do we warm the edge cache before a deploy?"}))
    };

    // A budget of 8,000 characters of memories: about 8 of ~1,000 characters.
    std::fs::write(w.home().join("config.toml"), "[injection]\nprompt_k = 30\nbudget_chars = 8000\n").unwrap();
    let text = context(&scorer_hook(&w, "user-prompt-submit", &prompt("s-default")), "UserPromptSubmit").unwrap();
    let n = ids(&text).len();
    assert!((5..=8).contains(&n), "{n} memories in {} characters", text.len());
    assert!(text.chars().count() <= 8_600, "{}", text.chars().count());

    // The budget raised to the cap: the frame still fits under 10,000.
    std::fs::write(w.home().join("config.toml"), "[injection]\nprompt_k = 30\nbudget_chars = 10000\n").unwrap();
    let text = context(&scorer_hook(&w, "user-prompt-submit", &prompt("s-cap")), "UserPromptSubmit").unwrap();
    assert!(text.chars().count() <= 10_000);
    assert!(ids(&text).len() > n);
    w.wait_for_recorder();
    let recorded = w.count("SELECT injected_count FROM rankings WHERE session_key = 'claude:s-cap'");
    assert_eq!(recorded as usize, ids(&text).len(), "the event marks exactly what was shown");
}

#[test]
fn codex_dialect_with_a_null_transcript_gets_a_codex_session() {
    let w = World::new();
    seed(&w, &web_memories());
    let base = json!({"session_id": "019e9625-802f-7e91-840a-cfe88d14117a", "transcript_path": null, "cwd": "/home/me/web",
                      "model": "gpt-5-codex", "permission_mode": "on-request"});
    let with = |extra: Value| {
        let mut v = base.clone();
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let start =
        scorer_hook(&w, "session-start", &with(json!({"hook_event_name": "SessionStart", "source": "startup"})));
    let shown_start = ids(&context(&start, "SessionStart").expect("session start injects"));
    let prompt = scorer_hook(
        &w,
        "user-prompt-submit",
        &with(
            json!({"hook_event_name": "UserPromptSubmit", "turn_id": "t1", "prompt": "start redis for the rate limiter tests"}),
        ),
    );
    let shown_prompt = context(&prompt, "UserPromptSubmit").map(|t| ids(&t)).unwrap_or_default();
    assert!(shown_prompt.is_disjoint(&shown_start), "{shown_prompt:?} repeats {shown_start:?}");
    assert!(shown_start.contains("mem_002") || shown_prompt.contains("mem_002"), "{shown_start:?} {shown_prompt:?}");
    let tool = scorer_hook(
        &w,
        "pre-tool-use",
        &with(json!({"hook_event_name": "PreToolUse", "turn_id": "t1", "tool_name": "shell",
                     "tool_input": {"command": ["bash", "-lc", "pnpm codegen"]}, "tool_use_id": "call_1"})),
    );
    context(&tool, "PreToolUse");
    w.wait_for_recorder();
    let key = "codex:019e9625-802f-7e91-840a-cfe88d14117a";
    assert_eq!(w.count(&format!("SELECT COUNT(*) FROM rankings WHERE session_key = '{key}'")), 3);
    assert_eq!(w.count(&format!("SELECT COUNT(*) FROM sessions WHERE session_key = '{key}' AND harness = 'codex'")), 1);
    assert_eq!(w.count("SELECT COUNT(*) FROM rankings WHERE session_key LIKE 'claude:%'"), 0);
}

/// Waits until the ingestion workers the write-side hooks started are done
/// (every lane: `hooks/ingest*.queue` empty, `hooks/ingest*.lock` free).
fn wait_for_worker(w: &World) {
    let hooks = w.home().join("hooks");
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let mut idle = true;
        for e in std::fs::read_dir(&hooks).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("ingest") {
                continue;
            }
            if name.contains(".queue") && e.metadata().is_ok_and(|m| m.len() > 0) {
                idle = false;
            }
            if name.ends_with(".lock") && FileLock::try_exclusive(&e.path()).unwrap().is_none() {
                idle = false;
            }
        }
        if idle {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the ingestion worker did not finish");
    }
}

#[test]
fn write_side_hooks_record_the_event_and_ingest_the_transcript_in_the_background() {
    let w = World::new();
    let transcript = w.claude_projects().join("-home-dev-webapp/11111111-1111-4111-8111-111111111111.jsonl");
    w.copy(&common::ingestor_data("claude_session.jsonl"), &transcript);
    let s = "11111111-1111-4111-8111-111111111111";
    let input = |event: &str, extra: Value| {
        let mut v = json!({"session_id": s, "transcript_path": transcript, "cwd": "/home/dev/webapp", "hook_event_name": event});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    for (event, name, extra) in [
        (
            "post-tool-use",
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "npm test"},
                                                 "tool_response": {"stdout": "", "stderr": "x", "interrupted": false, "isImage": false},
                                                 "tool_use_id": "toolu_b1"}),
        ),
        ("stop", "Stop", json!({"stop_hook_active": false, "last_assistant_message": "Done."})),
        ("pre-compact", "PreCompact", json!({"trigger": "manual", "custom_instructions": "keep the test plan"})),
        ("session-end", "SessionEnd", json!({"reason": "prompt_input_exit"})),
    ] {
        let out = ingestor_hook(&w, event, &input(name, extra));
        assert!(out.status.success(), "{event}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty(), "{event} printed {:?}", String::from_utf8_lossy(&out.stdout));
    }
    wait_for_worker(&w);
    let key = format!("claude:{s}");
    let (end_reason, msgs): (String, i64) = w
        .store()
        .conn()
        .query_row("SELECT end_reason, msg_in_count FROM sessions WHERE session_key = ?1", [&key], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(end_reason, "prompt_input_exit");
    assert!(msgs > 0, "the transcript was ingested");
    let meta = w.tape_dump();
    assert!(meta.contains("\"label\":\"pre_compact\"") && meta.contains("keep the test plan"), "pre-compact recorded");
    let cursors = w.count("SELECT COUNT(*) FROM ingest_cursors");
    assert_eq!(cursors, 1, "only the hook's transcript was read");
}

#[test]
fn codex_write_side_hooks_without_a_transcript_scan_recent_rollouts() {
    let w = World::new();
    let rollout =
        w.codex_sessions().join("2026/01/02/rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl");
    w.copy(&common::ingestor_data("rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl"), &rollout);
    let input = json!({"session_id": "33333333-3333-4333-8333-333333333333", "transcript_path": null, "cwd": "/home/dev/api",
                       "hook_event_name": "Stop", "model": "gpt-5-codex", "turn_id": "t9", "stop_hook_active": false});
    let out = ingestor_hook(&w, "stop", &input);
    assert!(out.status.success() && out.stdout.is_empty());
    let mut end = input.clone();
    end["hook_event_name"] = json!("SessionEnd");
    end["reason"] = json!("other");
    let out = ingestor_hook(&w, "session-end", &end);
    assert!(out.status.success() && out.stdout.is_empty());
    wait_for_worker(&w);
    let key = "codex:33333333-3333-4333-8333-333333333333";
    assert!(w.count(&format!("SELECT COUNT(*) FROM session_events WHERE session_key = '{key}'")) > 0);
    assert_eq!(
        w.count(&format!("SELECT COUNT(*) FROM sessions WHERE session_key = '{key}' AND end_reason = 'other'")),
        1
    );
}

/// The spooled files waiting for the recorder.
fn spooled(w: &World) -> usize {
    std::fs::read_dir(w.home().join("hooks/spool"))
        .map(|d| d.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".jsonl")).count())
        .unwrap_or(0)
}

#[test]
fn a_busy_tape_log_never_delays_a_hook_and_its_spooled_rankings_are_never_repeated() {
    let w = World::new();
    seed(&w, &web_memories());
    // A long scan holds the tape lock: the hooks answer at once, their
    // recorder waits for the lock.
    let lock = FileLock::exclusive(&w.home().join("tapes/LOCK")).unwrap();
    let prompt = claude_input("UserPromptSubmit", "s-busy", json!({"prompt": "the login test is flaky"}));
    // Both binaries are built before the clock starts (`World::scorer` takes
    // its environment from an ingestor command).
    common::scorer_bin();
    common::ingestor_bin();
    let t = Instant::now();
    let first = context(&scorer_hook(&w, "user-prompt-submit", &prompt), "UserPromptSubmit").expect("injects");
    assert!(t.elapsed() < Duration::from_secs(5), "the hook waited for the tape lock");
    assert_eq!(spooled(&w), 1);
    // The same prompt again: the first ranking is only in the spool, and
    // still nothing it showed comes back.
    let again = context(&scorer_hook(&w, "user-prompt-submit", &prompt), "UserPromptSubmit");
    let again = again.map(|t| ids(&t)).unwrap_or_default();
    assert!(again.is_disjoint(&ids(&first)), "{again:?} repeats {first:?}");
    assert_eq!(spooled(&w), 2);
    assert_eq!(w.count("SELECT COUNT(*) FROM rankings"), 0, "nothing is applied while the log is busy");
    drop(lock);
    w.wait_for_recorder();
    assert_eq!(spooled(&w), 0);
    assert_eq!(w.count("SELECT COUNT(*) FROM rankings WHERE session_key = 'claude:s-busy'"), 2);
    let shown =
        w.count("SELECT COUNT(*) FROM session_memories WHERE session_key = 'claude:s-busy' AND was_injected = 1");
    assert_eq!(shown as usize, ids(&first).len() + again.len());
}

#[test]
fn two_prompts_back_to_back_never_repeat_a_memory() {
    let w = World::new();
    seed(&w, &web_memories());
    for round in 0..3 {
        let session = format!("s-quick-{round}");
        // The same prompt twice, the second hook started as soon as the first
        // exits, while its recorder is (most likely) still appending.
        let prompt = claude_input(
            "UserPromptSubmit",
            &session,
            json!({"prompt": "web app conventions: lint, zod, codegen, redis tests"}),
        );
        let first = context(&scorer_hook(&w, "user-prompt-submit", &prompt), "UserPromptSubmit").expect("injects");
        let second = context(&scorer_hook(&w, "user-prompt-submit", &prompt), "UserPromptSubmit");
        let (first, second) = (ids(&first), second.map(|t| ids(&t)).unwrap_or_default());
        assert!(!first.is_empty());
        assert!(first.is_disjoint(&second), "round {round}: {second:?} repeats {first:?}");
    }
}

#[test]
fn every_served_ranking_reaches_the_tape_log() {
    let w = World::new();
    seed(&w, &web_memories());
    let s = "s-tape";
    let start = scorer_hook(&w, "session-start", &claude_input("SessionStart", s, json!({"source": "startup"})));
    context(&start, "SessionStart").expect("session start injects");
    let prompt = claude_input("UserPromptSubmit", s, json!({"prompt": "why is the login test flaky in CI?"}));
    context(&scorer_hook(&w, "user-prompt-submit", &prompt), "UserPromptSubmit");
    let tool = claude_input("PreToolUse", s, json!({"tool_name": "Bash", "tool_input": {"command": "pnpm lint"}}));
    context(&scorer_hook(&w, "pre-tool-use", &tool), "PreToolUse");
    w.wait_for_recorder();
    let events = w.tape_events();
    let of_session: Vec<&Value> = events.iter().filter(|e| e["s"] == format!("claude:{s}")).collect();
    let kinds: Vec<&str> = of_session.iter().map(|e| e["k"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["session.started", "env.detected", "ranking.served", "ranking.served", "fts.hits", "ranking.served"],
        "in the order they were served"
    );
    let triggers: Vec<&str> =
        of_session.iter().filter(|e| e["k"] == "ranking.served").map(|e| e["b"]["trigger"].as_str().unwrap()).collect();
    assert_eq!(triggers, ["session_start", "prompt", "tool"]);
    assert_eq!(w.count("SELECT COUNT(*) FROM rankings WHERE session_key = 'claude:s-tape'"), 3);
    assert_eq!(spooled(&w), 0);
    let log = std::fs::read_to_string(w.home().join("logs/hooks.log")).unwrap_or_default();
    assert!(!log.contains("ERROR") && !log.contains("WARN"), "{log}");
}

fn assert_silent(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: exit {:?}", out.status);
    assert!(out.stdout.is_empty(), "{what}: printed {:?}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_broken_store_or_input_never_breaks_the_agent() {
    // A corrupt database: every hook exits 0, prints nothing, logs the error.
    let w = World::new();
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join("engram.db"), b"this is not a SQLite database, it is garbage".repeat(100)).unwrap();
    let input = claude_input(
        "UserPromptSubmit",
        "s1",
        json!({"prompt": "hello", "source": "startup", "tool_name": "Bash",
                                                              "tool_input": {"command": "ls"}, "reason": "other"}),
    );
    for event in READ_SIDE {
        assert_silent(&scorer_hook(&w, event, &input), event);
    }
    for event in WRITE_SIDE {
        assert_silent(&ingestor_hook(&w, event, &input), event);
    }
    let log = std::fs::read_to_string(w.home().join("logs/hooks.log")).unwrap();
    assert!(log.matches("hook failed").count() >= 3, "{log}");
    assert!(log.contains("not a database") || log.contains("file is not a database"), "{log}");

    // Unreadable input.
    let w = World::new();
    seed(&w, &web_memories());
    for bytes in [&b""[..], b"{not json", b"[1,2,3]", b"null"] {
        for event in READ_SIDE {
            assert_silent(&w.hook(w.scorer(&["hook", event]), bytes), event);
        }
        for event in WRITE_SIDE {
            assert_silent(&w.hook(w.cmd(&["hook", event]), bytes), event);
        }
    }
    let log = std::fs::read_to_string(w.home().join("logs/hooks.log")).unwrap();
    assert!(log.contains("not JSON") || log.contains("not a JSON object"), "{log}");

    // A data home that is a file: nothing can be opened or logged there.
    let w = World::new();
    std::fs::write(w.home(), b"a file").unwrap();
    for event in READ_SIDE {
        let out = scorer_hook(&w, event, &input);
        assert_silent(&out, event);
        assert!(!out.stderr.is_empty(), "{event}: the error goes to stderr when the log cannot be opened");
    }
    for event in WRITE_SIDE {
        assert_silent(&ingestor_hook(&w, event, &input), event);
    }
    assert!(Path::new(&w.home()).is_file());
}

/// `engram-trainer run`, with the world's environment; returns its stdout.
fn trainer_run(w: &World) -> String {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let bin = BIN.get_or_init(|| tests::build_bin("trainer", "engram-trainer"));
    let mut c = w.cmd(&[]);
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        c.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
    c = tests::isolated(bin, w.root());
    c.current_dir(w.root()).arg("run").envs(envs);
    tests::success_stdout("engram-trainer run", c.output().unwrap())
}

/// Claude Code transcript lines of session `s`, `at_ms` on: the user asks,
/// and the assistant runs `command` (a tool call) and answers.
fn claude_turn(s: &str, turn: usize, at_ms: i64, prompt: &str, command: &str) -> String {
    let ts = |k: i64| Ts(at_ms + k * 1_000).to_rfc3339();
    let base = json!({"isSidechain": false, "userType": "external", "cwd": WEB, "sessionId": s,
                      "version": "2.1.90", "gitBranch": "main", "parentUuid": null});
    let line = |mut v: Value| {
        for (k, x) in base.as_object().unwrap() {
            v[k] = x.clone();
        }
        format!("{v}\n")
    };
    let mut out = line(json!({"type": "user", "uuid": format!("u{turn}a"), "timestamp": ts(0),
        "message": {"role": "user", "content": prompt}}));
    out += &line(json!({"type": "assistant", "uuid": format!("u{turn}b"), "timestamp": ts(1),
        "message": {"id": format!("msg_{turn}b"), "role": "assistant", "model": "claude-sonnet-4",
                    "content": [{"type": "tool_use", "id": format!("toolu_{turn}"), "name": "Bash",
                                 "input": {"command": command}}]}}));
    out += &line(json!({"type": "user", "uuid": format!("u{turn}c"), "timestamp": ts(2),
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{turn}"),
                                                 "content": "ok"}]}}));
    out += &line(json!({"type": "assistant", "uuid": format!("u{turn}d"), "timestamp": ts(3),
        "message": {"id": format!("msg_{turn}d"), "role": "assistant", "model": "claude-sonnet-4",
                    "content": [{"type": "text", "text": "Done."}]}}));
    out
}

/// A trainer run started by another session's end labelled a session whose
/// SessionEnd was recorded but whose transcript was not ingested yet: the
/// memory the agent used late in the session got label 0, for good. Now a
/// session waits until its transcript is ingested, and one labelled before
/// content arrived (the session went on) is labelled again.
#[test]
fn a_session_is_labelled_only_once_its_transcript_is_ingested_and_again_when_more_arrives() {
    let w = World::new();
    let memories = web_memories();
    seed(&w, &memories);
    let s = "5e551011-aaaa-4bbb-8ccc-000000000001";
    let key = format!("claude:{s}");
    let transcript = w.claude_projects().join(format!("-home-me-web/{s}.jsonl"));
    let t0 = Ts::now().0 + 60_000;
    w.write(&transcript, claude_turn(s, 1, t0, "Let us look at the web app.", "ls").as_bytes());
    let input = |event: &str, extra: Value| {
        let mut v = claude_input(event, s, extra);
        v["transcript_path"] = json!(transcript);
        v
    };
    let start = scorer_hook(&w, "session-start", &input("SessionStart", json!({"source": "startup"})));
    let injected: Vec<String> = ids(&context(&start, "SessionStart").expect("memories injected")).into_iter().collect();
    assert!(injected.len() >= 2, "{injected:?}");
    w.wait_for_recorder();
    w.ok(&["scan"]);
    // The agent uses one injected memory (its text, run as a command) in a
    // later turn, and another in a turn after the session ended and resumed.
    let text = |id: &str| memories[id.trim_start_matches("mem_").parse::<usize>().unwrap()].0;
    let (used, late) = (&injected[0], &injected[1]);
    w.append(&transcript, claude_turn(s, 2, t0 + 10_000, "Go on.", &format!("echo '{}'", text(used))).as_bytes());
    // SessionEnd while the session's ingestion worker is busy: the hook
    // records the end and queues the transcript.
    let lane = format!("t{}", &blake3::hash(transcript.to_str().unwrap().as_bytes()).to_hex()[..16]);
    std::fs::create_dir_all(w.home().join("hooks")).unwrap();
    let busy = FileLock::exclusive(&w.home().join(format!("hooks/ingest-{lane}.lock"))).unwrap();
    let out = ingestor_hook(&w, "session-end", &input("SessionEnd", json!({"reason": "prompt_input_exit"})));
    assert_silent(&out, "session-end");
    assert!(
        w.count(&format!("SELECT COUNT(*) FROM sessions WHERE session_key = '{key}' AND ended_ms IS NOT NULL")) == 1
    );

    let label = |id: &str| -> Option<f64> {
        w.store()
            .conn()
            .query_row(
                "SELECT label FROM session_memories WHERE session_key = ?1 AND memory_id = ?2",
                [&key, id],
                |r| r.get(0),
            )
            .unwrap()
    };
    let first = trainer_run(&w);
    assert_eq!(w.count("SELECT COUNT(*) FROM session_scores"), 0, "labelled before its transcript was read: {first}");
    assert_eq!(label(used), None);

    // The worker gets to it: now the session is labelled, from all of it.
    drop(busy);
    w.ok(&["scan"]);
    trainer_run(&w);
    assert_eq!(w.count("SELECT COUNT(*) FROM session_scores"), 1);
    assert!(label(used).unwrap() > 0.3, "the memory used late in the session: {:?}", label(used));
    assert!(label(late).unwrap_or(0.0) < 0.3, "{:?}", label(late));

    // The session goes on (resumed): the new content is labelled again.
    w.append(
        &transcript,
        claude_turn(s, 3, t0 + 20_000, "One more thing.", &format!("echo '{}'", text(late))).as_bytes(),
    );
    w.ok(&["scan"]);
    let again = trainer_run(&w);
    assert!(again.contains("labelled again"), "{again}");
    assert!(label(late).unwrap() > 0.3, "labelled again with the content that arrived: {:?}", label(late));
    assert!(label(used).unwrap() > 0.3);
    assert_eq!(w.count("SELECT COUNT(*) FROM predictor_comparisons"), 1, "a session moves the success rate once");
    assert!(trainer_run(&w).contains("nothing new"), "then nothing waits");
}
