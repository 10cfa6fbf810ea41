//! The extractor model end to end: the real `engram-ingestor` binary with
//! fake `claude` and `codex` CLIs on its PATH (shell scripts written here,
//! answering in the CLIs' own output formats) and a fake OpenAI-compatible
//! server on loopback. What is sent is redacted and keeps excluded files
//! out; the model's memories are recorded; a span answered is not sent
//! again; the daily budget and the single-flight lock stop calls without
//! losing the span; a malformed answer is a clear error that loses nothing;
//! `extractor test` shows what the model returns; the logs of the model's
//! own calls are never read.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Transcript;
use serde_json::{Value, json};
use shared::base::paths::Paths;

const UUID: &str = "11111111-1111-4111-8111-111111111111";
const UUID2: &str = "22222222-2222-4222-8222-222222222222";
const TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
const PLANTED: &str = "PLANTED-EXCLUDED-CONTENT";
const LESSON: &str = "Run the web app's tests with `npm run test:unit`, not `npm test`.";

/// A temporary data home, Claude Code directory, and a `bin/` of fakes.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A home whose `config.toml` has `extractor` as its `[extractor]` section.
    fn new(extractor: &str) -> Home {
        let home = Home { dir: tempfile::tempdir().expect("tmp") };
        for d in [home.engram(), home.bin(), home.fake(), home.projects()] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let config = format!(
            "[scan]\nclaude_dir = {:?}\n\n[privacy]\nexclude = [\"*.secret\"]\n\n[extractor]\n{extractor}\n",
            home.dir.path().join("claude").display().to_string()
        );
        std::fs::write(home.engram().join("config.toml"), config).expect("config");
        home
    }

    fn engram(&self) -> PathBuf {
        self.dir.path().join("engram")
    }

    fn paths(&self) -> Paths {
        Paths::at(self.engram())
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// Where the fakes write what they got and read what they answer.
    fn fake(&self) -> PathBuf {
        self.dir.path().join("fake")
    }

    fn projects(&self) -> PathBuf {
        self.dir.path().join("claude/projects/-home-dev-webapp")
    }

    /// Installs a fake CLI `name` that records its call and prints the file
    /// `fake/answer` (`fake/exit` as its exit status when present; after
    /// 30 s when `fake/hang` exists).
    fn install_fake(&self, name: &str) {
        let script = r#"#!/bin/sh
n=$(cat "$FAKE_DIR/calls" 2>/dev/null | wc -l)
echo "$*" >> "$FAKE_DIR/calls"
cat > "$FAKE_DIR/sent.$n"
printf '%s\n' "$PWD" > "$FAKE_DIR/cwd"
printf '%s\n' "${ENGRAM_MODEL_CALL:-}" > "$FAKE_DIR/env"
# Like the real CLI, leave a transcript of this call among the user's sessions.
mkdir -p "$CLAUDE_CONFIG_DIR/projects/-model-call"
printf '{"type":"user","cwd":"%s","sessionId":"99999999-9999-4999-8999-99999999999%s","uuid":"u","timestamp":"2026-03-01T10:00:00.000Z","message":{"role":"user","content":"the prompt of one of Engram model calls, long enough to be a turn"}}\n' "$PWD" "$n" \
  > "$CLAUDE_CONFIG_DIR/projects/-model-call/99999999-9999-4999-8999-99999999999$n.jsonl"
if [ -f "$FAKE_DIR/hang" ]; then sleep 30; fi
cat "$FAKE_DIR/answer"
exit $(cat "$FAKE_DIR/exit" 2>/dev/null || echo 0)
"#;
        let path = self.bin().join(name);
        std::fs::write(&path, script).expect("write fake");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    fn answer(&self, text: &str) {
        std::fs::write(self.fake().join("answer"), text).expect("answer");
    }

    /// Calls the fakes received.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.fake().join("calls")).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    /// What the fakes received on stdin, call `n`.
    fn sent(&self, n: usize) -> String {
        std::fs::read_to_string(self.fake().join(format!("sent.{n}"))).expect("sent")
    }

    /// A recorded session: a failed command, a correction, and a secret and
    /// an excluded file's contents that must never reach the model.
    fn write_session(&self, uuid: &str) {
        let mut t = Transcript::new(uuid, "/home/dev/webapp");
        t.user(&format!("Run the unit tests please; my token is {TOKEN} if the registry asks."))
            .bash("npm test", "npm ERR! missing script: test", false)
            .user("No, in this repo the unit tests run with npm run test:unit, never npm test.")
            .bash("cat config/prod.secret", PLANTED, true)
            .bash("npm run test:unit", "Tests: 42 passed", true)
            .say("Done: all 42 unit tests pass with npm run test:unit.");
        std::fs::write(self.projects().join(format!("{uuid}.jsonl")), t.jsonl()).expect("session");
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_engram-ingestor"));
        let path = format!("{}:/usr/bin:/bin", self.bin().display());
        c.args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env("ENGRAM_HOME", self.engram())
            .env("CLAUDE_CONFIG_DIR", self.dir.path().join("claude"))
            .env("FAKE_DIR", self.fake());
        c
    }

    /// Runs the binary; (exit status, stdout, stderr).
    fn run(&self, args: &[&str], now: Option<&str>) -> (i32, String, String) {
        let mut c = self.command(args);
        if let Some(now) = now {
            c.env("ENGRAM_NOW", now);
        }
        let out = c.output().expect("run engram-ingestor");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `scan --json` of Claude Code's logs: its summary.
    fn scan_at(&self, now: Option<&str>) -> Value {
        let (code, out, err) = self.run(&["scan", "--json", "--harness", "claude"], now);
        assert_eq!(code, 0, "scan failed: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("scan --json: {e}: {out}"))
    }

    fn scan(&self) -> Value {
        self.scan_at(None)
    }

    /// The memories: (text, source).
    fn memories(&self) -> Vec<(String, String)> {
        let (code, out, err) = self.run(&["memory", "list", "--json", "--limit", "1000"], None);
        assert_eq!(code, 0, "memory list failed: {err}");
        let list: Vec<Value> = serde_json::from_str(&out).expect("memory list --json");
        list.iter()
            .map(|m| (m["content"].as_str().unwrap_or("").to_owned(), m["source"].as_str().unwrap_or("").to_owned()))
            .collect()
    }

    fn model_memories(&self) -> Vec<String> {
        self.memories().into_iter().filter(|(_, s)| s == "external").map(|(t, _)| t).collect()
    }

    fn pending(&self) -> usize {
        std::fs::read_dir(self.engram().join("model/extractor/pending")).map(|d| d.count()).unwrap_or(0)
    }
}

/// The extraction response JSON with the one lesson.
fn response() -> String {
    json!({"memories": [{"text": LESSON, "type": "convention", "importance": 0.8, "tags": ["npm"]}]}).to_string()
}

/// `claude -p --output-format json`'s result object with `text` as its result.
fn claude_result(text: &str) -> String {
    json!({"type": "result", "subtype": "success", "is_error": false, "duration_ms": 900, "num_turns": 1,
        "result": text, "session_id": "5f0c", "total_cost_usd": 0.001, "usage": {"input_tokens": 10, "output_tokens": 20}})
    .to_string()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

fn assert_clean(sent: &str) {
    assert!(!sent.contains(TOKEN), "a secret reached the model: {sent}");
    assert!(!sent.contains(PLANTED), "an excluded file reached the model: {sent}");
    assert!(sent.contains("npm run test:unit"), "the session's turns are sent: {sent}");
}

#[test]
fn the_claude_preset_round_trips_and_a_span_answered_is_not_sent_again() {
    let home = Home::new("preset = \"claude\"\nmodel = \"haiku\"");
    home.install_fake("claude");
    // The model wraps its JSON in a fence, as models do.
    home.answer(&claude_result(&format!("Here it is:\n```json\n{}\n```", response())));
    home.write_session(UUID);
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_failures")), (1, 0), "{s}");
    let calls = home.calls();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].starts_with("-p --output-format json"), "{}", calls[0]);
    assert!(calls[0].contains("--model haiku"), "{}", calls[0]);
    let sent = home.sent(0);
    assert_clean(&sent);
    assert!(sent.contains("Task: ") && sent.contains("Input (JSON):"), "{sent}");
    // The CLI runs in the data home's model directory, marked as a model call.
    let cwd = std::fs::read_to_string(home.fake().join("cwd")).expect("cwd");
    assert_eq!(Path::new(cwd.trim()), home.engram().join("model/work"));
    assert_eq!(std::fs::read_to_string(home.fake().join("env")).expect("env").trim(), "1");
    assert_eq!(home.model_memories(), vec![LESSON.to_owned()]);
    assert!(home.memories().iter().any(|(_, s)| s != "external"), "the built-in rules ran too");

    // Nothing new: no call; the log the model call left behind is not read.
    let s = home.scan();
    assert_eq!(u(&s, "extractor_runs"), 0, "{s}");
    assert_eq!(home.calls().len(), 1);
    let (_, out, _) = home.run(&["session", "audit", "--json"], None);
    assert!(out.contains(UUID), "{out}");
    assert!(!out.contains("99999999"), "a model call's own log was recorded: {out}");

    // A second session: one more call, for it only.
    home.write_session(UUID2);
    let s = home.scan();
    assert_eq!(u(&s, "extractor_runs"), 1, "{s}");
    assert!(home.sent(1).contains(UUID2) && !home.sent(1).contains(UUID), "only the new session is sent");
}

#[test]
fn the_codex_preset_reads_the_last_agent_message_of_its_events() {
    let home = Home::new("preset = \"codex\"");
    home.install_fake("codex");
    let events = [
        json!({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"}),
        json!({"type": "turn.started"}),
        json!({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Reading the turns**"}}),
        json!({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": response()}}),
        json!({"type": "turn.completed", "usage": {"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122}}),
    ];
    let jsonl: String = events.iter().map(|e| format!("{e}\n")).collect();
    home.answer(&jsonl);
    home.write_session(UUID);
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_failures")), (1, 0), "{s}");
    let calls = home.calls();
    assert!(calls[0].starts_with("exec --json") && calls[0].ends_with(" -"), "{}", calls[0]);
    assert!(calls[0].contains("--sandbox read-only"), "{}", calls[0]);
    assert_clean(&home.sent(0));
    assert_eq!(home.model_memories(), vec![LESSON.to_owned()]);
}

/// A one-request-at-a-time chat completions server on loopback answering
/// `answers` in turn; returns its port and the request bodies it got.
fn serve(answers: Vec<(u16, String)>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&got);
    std::thread::spawn(move || {
        for (status, body) in answers {
            let Ok((mut stream, _)) = listener.accept() else { return };
            stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            // Headers, then Content-Length bytes of body.
            let body_start = loop {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(i + 4);
                }
            };
            let Some(start) = body_start else { continue };
            let head = String::from_utf8_lossy(&buf[..start]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < start + len {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let request_line = head.lines().next().unwrap_or("").to_owned();
            seen.lock().expect("lock").push(format!("{request_line}\n{}", String::from_utf8_lossy(&buf[start..])));
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, got)
}

fn chat(content: &str) -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "llama3",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    .to_string()
}

#[test]
fn the_openai_preset_posts_to_the_loopback_server() {
    let (port, got) = serve(vec![(200, chat(&response()))]);
    let home = Home::new(&format!(
        "preset = \"openai\"\nmodel = \"llama3\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\ntimeout_ms = 10000"
    ));
    home.write_session(UUID);
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_failures")), (1, 0), "{s}");
    let got = got.lock().expect("lock").clone();
    assert_eq!(got.len(), 1);
    let (line, body) = got[0].split_once('\n').expect("request");
    assert_eq!(line, "post /v1/chat/completions http/1.1");
    let body: Value = serde_json::from_str(body).expect("JSON body");
    assert_eq!(body["model"], "llama3");
    assert_eq!(body["stream"], false);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_clean(body["messages"][1]["content"].as_str().expect("user message"));
    assert_eq!(home.model_memories(), vec![LESSON.to_owned()]);
}

#[test]
fn a_server_off_this_machine_is_refused_before_anything_runs() {
    let home = Home::new("preset = \"openai\"\nmodel = \"llama3\"\nbase_url = \"http://192.168.1.20:11434/v1\"");
    home.write_session(UUID);
    let (code, _, err) = home.run(&["scan", "--json", "--harness", "claude"], None);
    assert_ne!(code, 0);
    assert!(err.contains("extractor.base_url") && err.contains("loopback"), "{err}");
}

#[test]
fn a_malformed_answer_is_a_clear_error_that_loses_nothing() {
    let home = Home::new("preset = \"claude\"");
    home.install_fake("claude");
    home.answer(&claude_result("I'm sorry, but I can't help with extracting memories from this session."));
    home.write_session(UUID);
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_failures")), (1, 1), "{s}");
    assert_eq!(u(&s, "extractor_pending"), 1, "the span waits: {s}");
    assert!(home.model_memories().is_empty());
    assert!(!home.memories().is_empty(), "the built-in rules still learned from the session");

    // `extractor test` shows the raw answer and why it was refused.
    let (code, out, err) = home.run(&["extractor", "test"], None);
    assert_ne!(code, 0, "a refused answer fails the probe: {out}");
    assert!(out.contains("--- raw answer ---") && out.contains("I'm sorry"), "{out}");
    assert!(out.contains("refused: ") && out.contains("no JSON object"), "{out}");
    assert!(err.contains("no JSON object"), "{err}");
    assert_eq!(home.pending(), 1, "the probe records nothing");

    // A CLI that fails outright: also set aside, with its message.
    std::fs::write(home.fake().join("exit"), "1").expect("exit");
    home.answer("Error: Invalid API key · Please run /login");
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_failures")), (1, 1), "{s}");

    // The model recovers: the span set aside is asked again and learned.
    std::fs::remove_file(home.fake().join("exit")).expect("rm");
    home.answer(&claude_result(&response()));
    let s = home.scan();
    assert_eq!(u(&s, "extractor_retried"), 1, "{s}");
    assert_eq!(u(&s, "extractor_pending"), 0, "{s}");
    assert_eq!(home.model_memories(), vec![LESSON.to_owned()]);
    let (code, out, _) = home.run(&["extractor", "test", "--json"], None);
    assert_eq!(code, 0, "{out}");
    let probe: Value = serde_json::from_str(&out).expect("probe JSON");
    assert_eq!(probe["memories"][0]["text"], LESSON);
    assert_eq!(probe["session"], format!("claude:{UUID}"));
}

#[test]
fn the_daily_budget_stops_calls_and_the_span_waits_for_the_next_day() {
    let home = Home::new("preset = \"claude\"\ndaily_calls = 1");
    home.install_fake("claude");
    home.answer(&claude_result(&response()));
    home.write_session(UUID);
    home.write_session(UUID2);
    let day1 = "2026-03-02T09:00:00Z";
    let s = home.scan_at(Some(day1));
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_deferred")), (1, 1), "{s}");
    assert_eq!(home.calls().len(), 1);
    let s = home.scan_at(Some("2026-03-02T18:00:00Z"));
    assert_eq!(u(&s, "extractor_runs"), 0, "the budget is spent for the day: {s}");
    assert_eq!(u(&s, "extractor_pending"), 1, "{s}");
    assert_eq!(home.calls().len(), 1);
    let s = home.scan_at(Some("2026-03-03T09:00:00Z"));
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_retried")), (1, 1), "{s}");
    assert_eq!(u(&s, "extractor_pending"), 0, "{s}");
    assert_eq!(home.calls().len(), 2);
    // Each session's span was sent once.
    let (first, second) = (home.sent(0), home.sent(1));
    assert!(first.contains(UUID) != second.contains(UUID), "one call per session");
    assert!(first.contains(UUID2) != second.contains(UUID2), "one call per session");
    let ledger: Value =
        serde_json::from_slice(&std::fs::read(home.engram().join("model/usage.json")).expect("ledger")).expect("json");
    assert_eq!(ledger["day"], "2026-03-03");
    assert_eq!(ledger["calls"]["extractor"], 1);
}

#[test]
fn a_hung_or_oversized_answer_fails_within_the_timeout_and_loses_nothing() {
    let home = Home::new("preset = \"claude\"\ntimeout_ms = 500");
    home.install_fake("claude");
    home.answer(&claude_result(&response()));
    std::fs::write(home.fake().join("hang"), "").expect("hang");
    home.write_session(UUID);
    let start = std::time::Instant::now();
    let s = home.scan();
    assert!(start.elapsed() < Duration::from_secs(15), "the timeout is honoured: {:?}", start.elapsed());
    assert_eq!((u(&s, "extractor_failures"), u(&s, "extractor_pending")), (1, 1), "{s}");
    std::fs::remove_file(home.fake().join("hang")).expect("rm");
    // 5 MB of answer: more than a model may print.
    home.answer(&claude_result(&"x".repeat(5 << 20)));
    let s = home.scan();
    assert_eq!((u(&s, "extractor_failures"), u(&s, "extractor_pending")), (1, 1), "{s}");
    let (_, out, _) = home.run(&["extractor", "test"], None);
    assert!(out.contains("refused: "), "{}", &out[out.len().saturating_sub(2000)..]);
    home.answer(&claude_result(&response()));
    let s = home.scan();
    assert_eq!((u(&s, "extractor_retried"), u(&s, "extractor_pending")), (1, 0), "{s}");
    assert_eq!(home.model_memories(), vec![LESSON.to_owned()]);
}

#[test]
fn another_model_call_running_sets_the_span_aside_and_a_span_answered_elsewhere_is_not_sent() {
    let home = Home::new("preset = \"claude\"");
    home.install_fake("claude");
    home.answer(&claude_result(&response()));
    home.write_session(UUID);
    let paths = home.paths();
    {
        let _held = shared::base::model::budget::single_flight(&paths, Duration::ZERO).expect("lock").expect("free");
        let s = home.scan();
        assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_deferred")), (0, 1), "{s}");
        assert!(home.calls().is_empty());
        assert!(!home.memories().is_empty(), "the built-in rules do not wait for the model");
    }
    // Another process answered that very span meanwhile (two scans that read
    // the same new turns): its hash is in the done list.
    let pending = home.engram().join("model/extractor/pending");
    let name = std::fs::read_dir(&pending).expect("pending").flatten().next().expect("one span").file_name();
    let hash = name.to_string_lossy().trim_end_matches(".json").to_owned();
    std::fs::write(home.engram().join("model/extractor/done"), format!("{hash} 1\n")).expect("done");
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_cached")), (0, 1), "{s}");
    assert_eq!(u(&s, "extractor_pending"), 0, "{s}");
    assert!(home.calls().is_empty(), "a span answered is never sent again");
}

#[test]
fn a_span_set_aside_is_asked_again_once_the_lock_is_free() {
    let home = Home::new("preset = \"claude\"");
    home.install_fake("claude");
    home.answer(&claude_result(&response()));
    home.write_session(UUID);
    let paths = home.paths();
    let held = shared::base::model::budget::single_flight(&paths, Duration::ZERO).expect("lock").expect("free");
    let s = home.scan();
    assert_eq!(u(&s, "extractor_deferred"), 1, "{s}");
    drop(held);
    let s = home.scan();
    assert_eq!((u(&s, "extractor_runs"), u(&s, "extractor_retried")), (1, 1), "{s}");
    assert_clean(&home.sent(0));
    assert_eq!(home.model_memories(), vec![LESSON.to_owned()]);
    let s = home.scan();
    assert_eq!(u(&s, "extractor_runs"), 0, "{s}");
}

/// The curator (seed 004's curation at session end) through the JSON
/// command: what extraction learned waits as `pending` in the buffer until
/// the session ends, then the model keeps one entry, discards the others
/// and extracts one fact; a bulk scan of history only saves the buffer.
#[test]
fn curation_at_session_end_keeps_discards_and_extracts() {
    use ingestor::discover::Roots;
    use ingestor::scan::{self, ScanOptions};
    use shared::base::config::Config;
    use shared::base::shutdown::Shutdown;
    use shared::base::time::Ts;

    let run = |model: bool| {
        let home = Home::new("");
        let script = home.bin().join("curator");
        // Keeps the first entry, discards the others, extracts one fact.
        std::fs::write(
            &script,
            r#"#!/bin/sh
cat > "$0.request"
first=1
printf '{"decisions":['
for id in $(grep -o '"id":"obs_[^"]*"' "$0.request" | sed 's/"id":"//; s/"$//'); do
  if [ $first = 1 ]; then printf '{"id":"%s","action":"keep","reason":"durable"}' "$id"; first=0;
  else printf ',{"id":"%s","action":"discard","reason":"one-off"}' "$id"; fi
done
printf '],"knowledge":[{"text":"The web app has 42 unit tests.","type":"fact","importance":0.5}]}'
"#,
        )
        .expect("curator");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        home.write_session(UUID);
        let mut config = Config::default();
        config.knowledge.curation.command = vec![script.display().to_string()];
        config.knowledge.curation.min_observations = 1;
        let mut opts = ScanOptions::new(Ts::from_civil(2026, 3, 2, 12, 0, 0));
        opts.roots = Some(Roots { claude: vec![home.dir.path().join("claude/projects")], ..Roots::default() });
        opts.harnesses = vec![ingestor::adapters::Harness::Claude];
        opts.external_summaries = model;
        let s = scan::run(&home.paths(), &config, &opts, &Shutdown::manual(), &mut |_| {}).expect("scan");
        let request = std::fs::read_to_string(home.bin().join("curator.request")).ok();
        (home, s, request)
    };

    let (home, s, request) = run(true);
    let c = &s.curation;
    assert_eq!(c.curated, 1, "{c:?}");
    assert!(c.kept == 1 && c.discarded >= 1 && c.knowledge_extracted == 1, "{c:?}");
    let request = request.expect("the curator was asked");
    assert!(!request.contains(TOKEN) && !request.contains(PLANTED), "{request}");
    let texts: Vec<String> = home.memories().into_iter().map(|(t, _)| t).collect();
    assert_eq!(texts.len(), 2, "one kept entry and one extracted fact: {texts:?}");
    assert!(texts.iter().any(|t| t == "The web app has 42 unit tests."), "{texts:?}");

    let (home, s, request) = run(false);
    assert!(request.is_none(), "a bulk scan does not ask the curator");
    assert_eq!((s.curation.curated, s.curation.flushed), (0, 1), "{:?}", s.curation);
    assert!(home.memories().len() >= 2, "every entry saved as it was");
}
