//! No secret reaches a file (issue 21, items 4 to 6): a sample for every
//! redaction rule (`shared::storage::redact::samples::planted_secrets`, one per gitleaks rule
//! and per hand-written pattern) is planted in every harness format and
//! every live path (read-side hooks, MCP, the JSON-RPC sidecar, the CLI),
//! and then every file of the data home is searched for each secret: the
//! tapes (decompressed), the projection (every generation, WAL included),
//! the hooks' spool and the logs.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::World;
use serde_json::{Value, json};
use shared::storage::redact::samples::{Planted, planted_secrets};

/// The planted lines joined into texts of at most `max` characters (a
/// recorded query keeps its first 2,000).
fn chunks(max: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for p in planted_secrets() {
        let last = out.last_mut().unwrap();
        if !last.is_empty() && last.len() + p.text.len() + 1 > max {
            out.push(String::new());
        }
        let last = out.last_mut().unwrap();
        last.push_str(&p.text);
        last.push(' ');
    }
    out
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(files(&p)) } else { out.push(p) }
    }
    out
}

/// Every zstd frame in `bytes`, decompressed (enough to search a sealed segment).
fn decompressed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let magic = [0x28u8, 0xb5, 0x2f, 0xfd];
    for i in 0..bytes.len().saturating_sub(3) {
        if bytes[i..i + 4] == magic
            && let Ok(d) = zstd::stream::decode_all(&bytes[i..])
        {
            out.extend(d);
        }
    }
    out
}

/// Fails naming each planted secret found in any file of the data home.
fn assert_nothing_leaked(w: &World, what: &str) {
    let mut contents: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for path in files(&w.home()) {
        let mut bytes = std::fs::read(&path).unwrap();
        if path.extension().is_some_and(|x| x == "seg") {
            bytes.extend(decompressed(&bytes.clone()));
        }
        contents.push((path, bytes));
    }
    contents.push((PathBuf::from("tapes show"), w.tape_dump().into_bytes()));
    let planted = planted_secrets();
    let finder = aho_corasick::AhoCorasick::new(planted.iter().map(|p| p.secret.as_str())).unwrap();
    let mut leaks = Vec::new();
    for (path, bytes) in &contents {
        for m in finder.find_overlapping_iter(bytes) {
            let p = &planted[m.pattern().as_usize()];
            leaks.push(format!("{} ({}) in {}", p.rule, p.secret, path.display()));
        }
    }
    leaks.sort();
    leaks.dedup();
    assert!(leaks.is_empty(), "{what}: {} leak(s):\n{}", leaks.len(), leaks.join("\n"));
    assert!(w.tape_dump().contains("[REDACTED:"), "{what}: redaction markers are there");
}

fn seed(w: &World) {
    for text in ["Deploy the webapp with the release script.", "Run the tests before pushing keys."] {
        w.ok(&["memory", "add", text, "--type", "convention"]);
    }
}

// ---------------------------------------------------------------------------
// Harness formats
// ---------------------------------------------------------------------------

fn iso(i: usize) -> String {
    format!("2026-03-01T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60)
}

fn claude_log(texts: &[String]) -> String {
    let sid = "44444444-4444-4444-8444-444444444444";
    let mut out = String::new();
    for (i, t) in texts.iter().enumerate() {
        let base = json!({"sessionId": sid, "cwd": "/home/dev/leak", "version": "2.1.90", "userType": "external"});
        let rec = |extra: Value| {
            let mut v = base.clone();
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            v.to_string() + "\n"
        };
        out += &rec(json!({"type": "user", "uuid": format!("u{i}"), "timestamp": iso(3 * i),
            "message": {"role": "user", "content": t}}));
        out += &rec(json!({"type": "assistant", "uuid": format!("a{i}"), "timestamp": iso(3 * i + 1),
            "message": {"id": format!("m{i}"), "role": "assistant", "model": "claude", "content": [
                {"type": "text", "text": format!("Noted: {t}")},
                {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("echo '{t}'")}}]}}));
        out += &rec(json!({"type": "user", "uuid": format!("r{i}"), "timestamp": iso(3 * i + 2),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": t}]}}));
    }
    out
}

fn codex_log(texts: &[String]) -> String {
    let mut lines = vec![json!({"timestamp": iso(0), "type": "session_meta", "payload": {
        "id": "55555555-5555-4555-8555-555555555555", "timestamp": iso(0), "cwd": "/home/dev/leak",
        "originator": "codex_cli_rs", "cli_version": "0.140.0", "source": "cli"}})];
    for (i, t) in texts.iter().enumerate() {
        lines.push(json!({"timestamp": iso(4 * i + 1), "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}}));
        lines.push(json!({"timestamp": iso(4 * i + 2), "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": json!({"command": ["cat", "resp.json"]}).to_string(),
            "call_id": format!("c{i}")}}));
        // The output as newer builds wrap it, holding a tool's JSON output as
        // text: the secret follows a literal `\n` (item 5).
        let tool_json = json!({"status": "ok", "body": format!("first line\n{t}")}).to_string();
        let wrapped = json!({"output": tool_json, "metadata": {"exit_code": 0}}).to_string();
        lines.push(json!({"timestamp": iso(4 * i + 3), "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": format!("c{i}"), "output": wrapped}}));
        // And a raw JSON output that is not the wrapper.
        lines.push(json!({"timestamp": iso(4 * i + 3), "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": format!("c{i}"), "output": tool_json}}));
    }
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

fn gemini_log(texts: &[String]) -> String {
    let mut lines = vec![json!({"sessionId": "66666666-6666-4666-8666-666666666666", "projectHash": "h9",
        "startTime": iso(0), "lastUpdated": iso(0), "kind": "main", "directories": ["/home/dev/leak"]})];
    for (i, t) in texts.iter().enumerate() {
        lines.push(
            json!({"id": format!("u{i}"), "timestamp": iso(2 * i + 1), "type": "user", "content": [{"text": t}]}),
        );
        lines.push(json!({"id": format!("g{i}"), "timestamp": iso(2 * i + 2), "type": "gemini", "content": t,
            "model": "gemini-3", "toolCalls": [{"id": format!("tc{i}"), "name": "run_shell_command",
            "args": {"command": format!("echo {t}")}, "status": "success", "timestamp": iso(2 * i + 2),
            "result": [{"functionResponse": {"id": format!("tc{i}"), "name": "run_shell_command",
            "response": {"output": t}}}]}]}));
    }
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

fn opencode_storage(w: &World, texts: &[String]) {
    let root = w.opencode().join("storage");
    let put = |rel: String, v: Value| w.write(&root.join(rel), v.to_string().as_bytes());
    put(
        "session/leak/ses_9.json".into(),
        json!({"id": "ses_9", "version": "1.1.0", "projectID": "leak",
        "directory": "/home/dev/leak", "title": "leak", "time": {"created": 1767330000000u64, "updated": 1767330100000u64}}),
    );
    for (i, t) in texts.iter().enumerate() {
        let (u, a) = (format!("msg_u{i:03}"), format!("msg_a{i:03}"));
        let ms = 1767330001000u64 + 2000 * i as u64;
        put(
            format!("message/ses_9/{u}.json"),
            json!({"id": u, "sessionID": "ses_9", "role": "user", "time": {"created": ms}}),
        );
        put(
            format!("message/ses_9/{a}.json"),
            json!({"id": a, "sessionID": "ses_9", "role": "assistant",
            "time": {"created": ms + 1000}, "modelID": "gpt-5", "providerID": "openai"}),
        );
        put(
            format!("part/{u}/prt_1.json"),
            json!({"id": format!("prt_u{i}"), "sessionID": "ses_9", "messageID": u, "type": "text", "text": t}),
        );
        put(
            format!("part/{a}/prt_1.json"),
            json!({"id": format!("prt_a{i}"), "sessionID": "ses_9", "messageID": a, "type": "tool",
            "callID": format!("call_{i}"), "tool": "bash", "state": {"status": "completed", "input": {"command": format!("echo {t}")},
            "output": t, "metadata": {}, "time": {"start": ms + 1100, "end": ms + 1200}}}),
        );
    }
}

#[test]
fn no_planted_secret_of_any_harness_format_reaches_a_file() {
    let w = World::new();
    let texts = chunks(1_500);
    w.write(
        &w.claude_projects().join("-home-dev-leak/44444444-4444-4444-8444-444444444444.jsonl"),
        claude_log(&texts).as_bytes(),
    );
    let rollout = "rollout-2026-03-01T10-00-00-55555555-5555-4555-8555-555555555555.jsonl";
    w.write(&w.codex_sessions().join("2026/03/01").join(rollout), codex_log(&texts).as_bytes());
    w.write(&w.gemini_tmp().join("h9/chats/session-2026-03-01T10-00-66666666.jsonl"), gemini_log(&texts).as_bytes());
    opencode_storage(&w, &texts);
    let summary = w.scan();
    for h in ["claude", "codex", "gemini", "opencode"] {
        assert!(common::count(&summary, h, "events") >= texts.len() as u64, "{h} ingested: {summary:#}");
    }
    w.ok(&["compact"]);
    assert_nothing_leaked(&w, "harness logs");
}

// ---------------------------------------------------------------------------
// Live paths
// ---------------------------------------------------------------------------

#[test]
fn no_planted_secret_in_a_prompt_reaches_a_file_through_the_read_side_hooks() {
    let w = World::new();
    seed(&w);
    for (i, text) in chunks(1_800).iter().enumerate() {
        let input = json!({"session_id": "leak-hooks", "transcript_path": "/nonexistent/leak.jsonl", "cwd": "/home/dev/leak",
            "hook_event_name": "UserPromptSubmit", "prompt": text});
        let out = w.hook(w.scorer(&["hook", "user-prompt-submit"]), input.to_string().as_bytes());
        assert!(out.status.success(), "prompt {i}");
        let tool = json!({"session_id": "leak-hooks", "transcript_path": "/nonexistent/leak.jsonl", "cwd": "/home/dev/leak",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": text}});
        assert!(w.hook(w.scorer(&["hook", "pre-tool-use"]), tool.to_string().as_bytes()).status.success());
    }
    w.wait_for_recorder();
    assert!(w.tape_dump().contains("ranking.served"));
    assert_nothing_leaked(&w, "read-side hooks");
}

#[test]
fn no_planted_secret_reaches_a_file_through_mcp() {
    let w = World::new();
    seed(&w);
    let mut lines = vec![json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})];
    for (i, text) in chunks(1_800).iter().enumerate() {
        lines.push(json!({"jsonrpc": "2.0", "id": format!("s{i}"), "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": text, "session_id": "claude:leak-mcp"}}}));
        lines.push(json!({"jsonrpc": "2.0", "id": format!("v{i}"), "method": "tools/call",
            "params": {"name": "memory_save", "arguments": {"content": format!("Remember: {text}"), "type": "fact"}}}));
    }
    let mut input = String::new();
    for l in &lines {
        input += &(l.to_string() + "\n");
    }
    let mut child =
        w.scorer(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answers: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), lines.len());
    assert!(answers.iter().all(|a| a.get("error").is_none()), "{answers:?}");
    assert_nothing_leaked(&w, "MCP memory_search and memory_save");
}

#[test]
fn no_planted_secret_reaches_a_file_through_the_json_rpc_sidecar() {
    let w = World::new();
    seed(&w);
    let mut child =
        w.scorer(&["serve"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for (i, text) in chunks(1_800).iter().enumerate() {
        let req = json!({"jsonrpc": "2.0", "id": i, "method": "rank",
            "params": {"query": text, "session_key": "claude:leak-rpc", "project": "leak", "trigger": "prompt", "k": 3}});
        stdin.write_all((req.to_string() + "\n").as_bytes()).unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert!(answer.get("error").is_none(), "{answer}");
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(10));
    assert!(w.tape_dump().contains("ranking.served"));
    assert_nothing_leaked(&w, "JSON-RPC rank");
}

#[test]
fn no_planted_secret_reaches_a_file_through_the_cli() {
    let w = World::new();
    seed(&w);
    for text in chunks(1_800) {
        let out = w.scorer(&["search", "--session", "claude:leak-cli", &text]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    for p in planted_secrets().iter().step_by(7) {
        let Planted { text, .. } = p;
        w.ok(&["memory", "add", &format!("Note: {text}"), "--type", "fact"]);
    }
    assert_nothing_leaked(&w, "engram-scorer search --session and memory add");
}
