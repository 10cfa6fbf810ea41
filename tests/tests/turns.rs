//! Per-turn extraction on Stop, end to end (seed 000 "Per-Turn Pipeline"):
//! Claude Code's Stop hook JSON on stdin of the real `engram-ingestor hook
//! stop`, a transcript that grows between Stops, and the background worker
//! that reads only the new bytes and learns only the new turn's lesson; the
//! optional external extractor's skip rules and its ~2,000 characters of
//! prior context; the session audit; replay giving the same projection.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::World;
use serde_json::{Value, json};

const SESSION: &str = "5a5a5a5a-1111-4222-8333-444444444444";
const CWD: &str = "/home/dev/shop";

/// One Claude Code transcript record (the common envelope of harness-formats.md §1a).
fn record(kind: &str, uuid: &str, minute: u32, message: Value) -> String {
    let v = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": CWD,
        "sessionId": SESSION, "version": "2.1.90", "gitBranch": "main", "type": kind, "uuid": uuid,
        "timestamp": format!("2026-03-04T05:{minute:02}:00.000Z"), "message": message,
    });
    format!("{v}\n")
}

fn user(uuid: &str, minute: u32, text: &str) -> String {
    record("user", uuid, minute, json!({"role": "user", "content": text}))
}

fn say(uuid: &str, minute: u32, text: &str) -> String {
    record(
        "assistant",
        uuid,
        minute,
        json!({"id": format!("msg_{uuid}"), "role": "assistant", "model": "claude-sonnet-4",
               "content": [{"type": "text", "text": text}]}),
    )
}

fn bash(uuid: &str, minute: u32, tool: &str, command: &str) -> String {
    record(
        "assistant",
        uuid,
        minute,
        json!({"id": format!("msg_{uuid}"), "role": "assistant", "model": "claude-sonnet-4",
               "content": [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": command}}]}),
    )
}

fn result(uuid: &str, minute: u32, tool: &str, output: &str) -> String {
    let mut line = record(
        "user",
        uuid,
        minute,
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": output}]}),
    );
    // `toolUseResult` as Claude Code writes it for Bash.
    let mut v: Value = serde_json::from_str(line.trim_end()).unwrap();
    v["toolUseResult"] = json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false});
    line = format!("{v}\n");
    line
}

/// The Stop hook's stdin, exactly as Claude Code sends it.
fn stop_input(transcript: &Path, last: &str) -> Value {
    json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": CWD,
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": last,
    })
}

/// Waits until every ingestion worker is done (no queue, no lock held).
fn settle(w: &World) {
    let hooks = w.home().join("hooks");
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(50));
    loop {
        let mut busy = false;
        for e in std::fs::read_dir(&hooks).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            if name.starts_with("ingest") && name.contains(".queue") && len > 0 {
                busy = true;
            }
            if name.starts_with("ingest") && name.ends_with(".lock") {
                busy |= shared::base::fsutil::FileLock::try_exclusive(&e.path()).unwrap().is_none();
            }
        }
        if !busy {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the ingestion workers did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(w: &World, transcript: &Path, last: &str) {
    let out = w.hook(w.cmd(&["hook", "stop"]), stop_input(transcript, last).to_string().as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "the Stop hook printed {:?}", String::from_utf8_lossy(&out.stdout));
    settle(w);
}

fn memories(w: &World) -> Vec<String> {
    let v = w.json(&["memory", "list", "--json", "--limit", "0"]);
    v.as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_owned()).collect()
}

fn cursor_offset(w: &World, transcript: &Path) -> u64 {
    let path = transcript.display().to_string();
    let n: i64 =
        w.store().conn().query_row("SELECT offset FROM ingest_cursors WHERE path = ?1", [&path], |r| r.get(0)).unwrap();
    n as u64
}

/// The requests the fake external extractor received, one JSON per line.
fn requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn chars(turns: &[Value]) -> usize {
    turns.iter().map(|t| t["text"].as_str().unwrap().chars().count()).sum()
}

#[test]
fn two_stops_on_a_growing_transcript_extract_each_turn_once_from_its_new_bytes() {
    let w = World::new();
    // The optional external extractor: a script that records each request
    // and answers with no memories (the deterministic lessons are the ones checked).
    let log = w.root().join("extractor-requests.jsonl");
    let script = format!("cat >> '{}'; echo >> '{}'; printf '{{\"memories\":[]}}'", log.display(), log.display());
    let config = toml_config(&script);
    w.write(&w.home().join("config.toml"), config.as_bytes());
    let transcript = w.claude_projects().join(format!("-home-dev-shop/{SESSION}.jsonl"));

    // Turn 1: the agent installs with npm; the user corrects it.
    let mut turn1 = String::new();
    turn1 += &user("t1-u1", 1, "Set up the project and install the dependencies please.");
    turn1 += &bash("t1-a1", 2, "toolu_1", "npm install");
    turn1 += &result("t1-r1", 3, "toolu_1", "added 412 packages in 9s");
    turn1 += &user("t1-u2", 4, "No, don't use npm here. We use pnpm in this repo because of the workspace lockfile.");
    turn1 += &say("t1-a2", 5, "Understood: I will use pnpm from now on and leave the npm lockfile alone.");
    w.write(&transcript, turn1.as_bytes());
    stop(&w, &transcript, "Understood: I will use pnpm from now on and leave the npm lockfile alone.");

    let after1 = memories(&w);
    let pnpm: Vec<&String> = after1.iter().filter(|m| m.contains("pnpm")).collect();
    assert_eq!(pnpm.len(), 1, "turn 1's lesson is learned once: {after1:#?}");
    assert!(!after1.iter().any(|m| m.contains("make lint")), "{after1:#?}");
    let size1 = std::fs::metadata(&transcript).unwrap().len();
    assert_eq!(cursor_offset(&w, &transcript), size1, "the cursor is at the end of turn 1");
    // The transcript is under 10 KB: the external extractor was not asked (seed: skip).
    assert!(requests(&log).is_empty(), "{:#?}", requests(&log));

    // Bytes before the cursor are never read again: rewrite turn 1's last
    // line in place (same length, past the file's identity head) as a record
    // of a type nobody knows. Reading from byte 0 would record it as opaque.
    let text = std::fs::read_to_string(&transcript).unwrap();
    let last_line = text.lines().last().unwrap();
    let start = text.len() - last_line.len() - 1;
    assert!(start > 1024, "the rewritten line lies past the identity head");
    let probe_head = r#"{"type":"zzprobe","pad":""#;
    let pad = last_line.len() - probe_head.len() - 2;
    let probe = format!("{probe_head}{}\"}}", "x".repeat(pad));
    assert_eq!(probe.len(), last_line.len());
    let mut bytes = text.into_bytes();
    bytes[start..start + probe.len()].copy_from_slice(probe.as_bytes());
    w.write(&transcript, &bytes);

    // Turn 2: a long tool output (the transcript passes 10 KB), then a new rule.
    let mut turn2 = String::new();
    turn2 += &user("t2-u1", 10, "Now add a lint step to the build.");
    turn2 += &bash("t2-a1", 11, "toolu_2", "npx eslint .");
    let noise: String = (0..240).map(|i| format!("src/file{i}.ts: 0 problems\n")).collect();
    turn2 += &result("t2-r1", 12, "toolu_2", &noise);
    turn2 += &user(
        "t2-u2",
        13,
        "Never run eslint directly. Always use make lint, it sets the config path for the monorepo.",
    );
    turn2 += &say("t2-a2", 14, "Got it, make lint from now on.");
    w.append(&transcript, turn2.as_bytes());
    stop(&w, &transcript, "Got it, make lint from now on.");

    let after2 = memories(&w);
    assert_eq!(after2.iter().filter(|m| m.contains("pnpm")).count(), 1, "no duplicate of turn 1: {after2:#?}");
    assert!(after2.iter().any(|m| m.contains("make lint")), "turn 2's lesson: {after2:#?}");
    assert!(after1.iter().all(|m| after2.contains(m)), "{after2:#?}");
    let learned2: Vec<&String> = after2.iter().filter(|m| !after1.contains(m)).collect();
    assert!(learned2.iter().all(|m| m.contains("eslint") || m.contains("make lint")), "only turn 2's: {learned2:#?}");
    let size2 = std::fs::metadata(&transcript).unwrap().len();
    assert!(size2 >= 10 * 1024);
    assert_eq!(cursor_offset(&w, &transcript), size2, "the cursor is at the end of turn 2");
    assert_eq!(
        w.count("SELECT COUNT(*) FROM ingest_diagnostics WHERE record_type = 'zzprobe'"),
        0,
        "the bytes before the cursor were read again"
    );

    // The external extractor ran once, for turn 2: the prior context is
    // about 2,000 characters of turn 1 (whole turns), the new content turn 2's.
    let reqs = requests(&log);
    assert_eq!(reqs.len(), 1, "{reqs:#?}");
    let turns = reqs[0]["turns"].as_array().unwrap();
    let new_from = reqs[0]["new_from"].as_u64().unwrap() as usize;
    let (prior, new) = turns.split_at(new_from);
    assert!(!prior.is_empty() && chars(prior) <= 2_000 + 2_000, "{prior:#?}");
    assert!(prior.iter().any(|t| t["text"].as_str().unwrap().contains("I will use pnpm")), "{prior:#?}");
    assert!(new.iter().any(|t| t["text"].as_str().unwrap().contains("make lint")), "{new:#?}");
    assert!(!new.iter().any(|t| t["text"].as_str().unwrap().contains("npm install")), "turn 1 is context only");
    let sent: usize = turns.iter().map(|t| t["text"].as_str().unwrap().len()).sum();
    assert!(sent <= 10 * 1024 + 2_000 + 2_000, "{sent} bytes sent");

    // A Stop with almost nothing new (< 50 characters): no extractor run.
    w.append(&transcript, say("t3-a1", 20, "Done.").as_bytes());
    stop(&w, &transcript, "Done.");
    assert_eq!(requests(&log).len(), 1, "a turn under 50 characters is not sent");
    assert_eq!(cursor_offset(&w, &transcript), std::fs::metadata(&transcript).unwrap().len());

    // The session audit: the transcript, the project and its tags.
    let audit = w.json(&["session", "audit", &format!("claude:{SESSION}"), "--json"]);
    assert_eq!(audit["transcript_path"], transcript.display().to_string(), "{audit}");
    assert!(audit["repo"].as_str().is_some(), "{audit}");

    // Replay rebuilds the same projection.
    let before = shared::storage::store::canonical_dump(w.store().conn(), true).unwrap();
    w.ok(&["replay"]);
    let after = shared::storage::store::canonical_dump(w.store().conn(), true).unwrap();
    assert!(before == after, "replay changed the projection");
}

fn toml_config(script: &str) -> String {
    let quoted = serde_json::to_string(script).unwrap();
    format!("[extractor]\ncommand = [\"sh\", \"-c\", {quoted}]\ntimeout_ms = 20000\n")
}

#[test]
fn stops_of_two_sessions_are_extracted_independently() {
    let w = World::new();
    let other = "6b6b6b6b-1111-4222-8333-444444444444";
    let a = w.claude_projects().join(format!("-home-dev-shop/{SESSION}.jsonl"));
    let b = w.claude_projects().join(format!("-home-dev-shop/{other}.jsonl"));
    let mut ta = String::new();
    ta += &user("a-u1", 1, "Set up the project and install the dependencies please.");
    ta += &bash("a-a1", 2, "toolu_a", "npm install");
    ta += &result("a-r1", 3, "toolu_a", "added 412 packages in 9s");
    ta += &user("a-u2", 4, "No, don't use npm here. We use pnpm in this repo because of the workspace lockfile.");
    w.write(&a, ta.as_bytes());
    let tb =
        ta.replace(SESSION, other).replace("\"a-", "\"b-").replace("npm install", "python setup.py install").replace(
            "No, don't use npm here. We use pnpm in this repo because of the workspace lockfile.",
            "No, never call setup.py directly. Always use uv sync so the lock stays authoritative.",
        );
    w.write(&b, tb.as_bytes());
    // Both Stops arrive together; each session's new bytes are read once.
    let input_b = json!({"session_id": other, "transcript_path": b, "cwd": CWD, "permission_mode": "default",
                         "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": ""});
    let out_a = w.hook(w.cmd(&["hook", "stop"]), stop_input(&a, "").to_string().as_bytes());
    let out_b = w.hook(w.cmd(&["hook", "stop"]), input_b.to_string().as_bytes());
    assert!(out_a.status.success() && out_b.status.success());
    settle(&w);
    let mems = memories(&w);
    assert!(mems.iter().any(|m| m.contains("pnpm")), "{mems:#?}");
    assert!(mems.iter().any(|m| m.contains("uv sync")), "{mems:#?}");
    assert_eq!(cursor_offset(&w, &a), std::fs::metadata(&a).unwrap().len());
    assert_eq!(cursor_offset(&w, &b), std::fs::metadata(&b).unwrap().len());
}
