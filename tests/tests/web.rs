//! `engram-scorer web` end to end: the real binary on a demo data home
//! (`engram-ingestor quickstart --demo`), driven from outside by
//! `tests/web_client.py`: over HTTP with a real client (the page, every read
//! endpoint, a foreign Host, writes without or with a wrong token, from
//! another origin, malformed bodies, settings written to `config.toml`), and
//! in headless Chromium through Selenium (every view in both themes, search,
//! keyboard navigation, the timeline, pinning from a card, a session's
//! injections, a setting changed and found in `config.toml`).
//!
//! The browser test needs Selenium (installed by this test with pip into
//! `target/web-venv`) and Debian's `chromium` and `chromium-driver`
//! (installed by `.ci/run`): without them it skips with a message locally
//! and fails under `CI`. Set `ENGRAM_WEB_SHOTS=DIR` to keep a screenshot of
//! every view.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use common::World;

/// A running server, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A demo data home with a server on a free loopback port.
fn serve() -> (World, Server) {
    let w = World::new();
    w.ok(&["quickstart", "--demo", "--no-train", "--cwd", "/home/demo/webapp"]);
    // A read-side hook, as an agent runs it: its latency and its ranking's
    // reach the diagnostics through logs/latency.jsonl.
    let input = serde_json::json!({
        "session_id": "web-e2e", "transcript_path": "/nonexistent.jsonl", "cwd": "/home/demo/webapp",
        "hook_event_name": "UserPromptSubmit", "prompt": "why do the redis integration tests fail",
    });
    let out = w.hook(w.scorer(&["hook", "user-prompt-submit"]), input.to_string().as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    w.wait_for_recorder();
    let mut child = w.scorer(&["web", "--port", "0"]).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with('/'), "the server printed {line:?}");
    (w, Server { child, url })
}

fn client() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web_client.py")
}

fn run(python: &Path, args: &[&str]) {
    let out = Command::new(python).arg(client()).args(args).stdin(Stdio::null()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(out.status.success(), "web_client.py {args:?} failed:\n{stdout}\n{stderr}");
}

#[test]
fn the_rest_api_over_a_real_socket_refuses_what_it_must_and_writes_the_tapes() {
    let (w, server) = serve();
    let home = w.home();
    run(Path::new("python3"), &["rest", &server.url, home.to_str().unwrap()]);
    // What the API wrote went through the journal: it is on the tapes, and a
    // replay of them gives the same memory back.
    let kinds: Vec<String> = w.tape_events().iter().map(|e| e["k"].as_str().unwrap_or("").to_owned()).collect();
    for want in ["memory.added", "memory.pinned", "memory.feedback", "memory.updated", "memory.forgotten"] {
        assert!(kinds.iter().any(|k| k == want), "{want} is not on the tapes: {kinds:?}");
    }
    assert_eq!(w.count("SELECT COUNT(*) FROM memories WHERE source = 'web' AND is_deleted = 1"), 1);
    drop(server);
    w.ok(&["replay"]);
    assert_eq!(w.count("SELECT COUNT(*) FROM memories WHERE source = 'web' AND is_deleted = 1"), 1);
}

/// A Python with Selenium and a chromedriver, or `None` (with a message)
/// locally when either is missing; a failure under `CI`.
fn python_with_selenium() -> Option<&'static Path> {
    static PY: OnceLock<Option<PathBuf>> = OnceLock::new();
    PY.get_or_init(|| {
        let python = tests::python_with("web-venv", "selenium", "selenium")?;
        let driver =
            std::env::var_os("CHROMEDRIVER").map_or_else(|| PathBuf::from("/usr/bin/chromedriver"), PathBuf::from);
        if driver.exists() {
            return Some(python);
        }
        let why = format!("no chromedriver at {} (apt-get install chromium-driver)", driver.display());
        assert!(std::env::var_os("CI").is_none(), "CI is set but the browser test cannot run: {why}");
        eprintln!("skipping the browser test: {why}");
        None
    })
    .as_deref()
}

#[test]
fn the_page_in_headless_chromium_shows_every_view_searches_and_saves_a_setting() {
    let Some(python) = python_with_selenium() else { return };
    let (w, server) = serve();
    let home = w.home();
    let shots = std::env::var("ENGRAM_WEB_SHOTS").ok();
    let mut args = vec!["browser", &server.url, home.to_str().unwrap()];
    if let Some(dir) = &shots {
        std::fs::create_dir_all(dir).unwrap();
        args.push(dir);
    }
    run(python, &args);
    // The pin made from a card went through the journal.
    assert!(w.tape_events().iter().any(|e| e["k"] == "memory.pinned"));
    assert!(std::fs::read_to_string(home.join("config.toml")).unwrap().contains("session_start_k = 6"));
}
