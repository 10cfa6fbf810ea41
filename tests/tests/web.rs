//! `engram-scorer web` end to end: the real binary on a demo data home
//! (`engram-ingestor quickstart --demo`), driven from outside by
//! `tests/web_client.py`: over HTTP with a real client (the page, every read
//! endpoint, a foreign Host, writes without or with a wrong token, from
//! another origin, malformed bodies, settings written to `config.toml`), and
//! in headless Chromium through Selenium (every view in both themes, search,
//! keyboard navigation, the timeline, pinning from a card, a reasoning chain
//! walked step by step by mouse and by keyboard with its breadcrumbs and
//! back, a session's injections, a setting changed and found in
//! `config.toml`). Both start
//! from the same knowledge: a discovery derived from two facts (its graph
//! and reasoning chain) and a conflict staged by the write-time check, which
//! the REST test resolves by `merge` and the browser by `replace`; each
//! resolution is then found on the tapes and again after a replay.
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
use std::process::{Child, Stdio};
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

/// What [`serve`] added to the demo's memories.
struct Knowledge {
    /// Two facts, a discovery derived from both, and a decision derived
    /// from the discovery (a two-step reasoning chain).
    facts: [String; 2],
    discovery: String,
    decision: String,
    /// The buffer entry of a memory staged as alike to `existing`.
    stage: String,
    existing: String,
}

impl Knowledge {
    /// How `web_client.py` learns them.
    fn env(&self) -> [(&'static str, String); 5] {
        [
            ("ENGRAM_TEST_FACTS", self.facts.join(",")),
            ("ENGRAM_TEST_DISCOVERY", self.discovery.clone()),
            ("ENGRAM_TEST_DECISION", self.decision.clone()),
            ("ENGRAM_TEST_STAGE", self.stage.clone()),
            ("ENGRAM_TEST_EXISTING", self.existing.clone()),
        ]
    }
}

/// Saves memories through the ingestor's CLI, which runs them through
/// conflict detection and the discovery engine as every writer does.
fn add_knowledge(w: &World) -> Knowledge {
    let add = |args: &[&str]| -> String {
        let mut all = vec!["memory", "add", "--project", "webapp"];
        all.extend_from_slice(args);
        w.ok(&all).trim().to_owned()
    };
    let a = add(&["--type", "fact", "Binary search needs its slice sorted ascending"]);
    let b = add(&["--type", "fact", "The users table index keeps rows ordered by signup timestamp"]);
    let c = add(&[
        "--type",
        "discovery",
        "--source",
        &a,
        "--source",
        &b,
        "Users may be located by signup timestamp with a binary search over that index",
    ]);
    let d = add(&[
        "--type",
        "decision",
        "--source",
        &c,
        "Cohort reports page through accounts per month via that lookup instead of scanning everything",
    ]);
    let existing = add(&["--type", "fact", "The quokka service listens on port 7411 behind the zebra proxy"]);
    let staged = add(&["--type", "fact", "The quokka service listens on port 7412 behind the zebra proxy"]);
    let stage = staged
        .strip_prefix("staged as ")
        .and_then(|r| r.split(':').next())
        .unwrap_or_else(|| panic!("the second quokka note was not staged: {staged}"))
        .to_owned();
    for id in [&a, &b, &c, &d, &existing] {
        assert!(id.starts_with("mem_"), "not saved as a new memory: {id}");
    }
    Knowledge { facts: [a, b], discovery: c, decision: d, stage, existing }
}

/// The staged entry's resolution (and the memory it ended in) in the projection.
fn resolution(w: &World, stage: &str) -> (String, String, Option<String>) {
    w.store()
        .conn()
        .query_row(
            "SELECT status, COALESCE(resolution, ''), result_id FROM staged_memories WHERE id = ?1",
            [stage],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
}

/// The resolution is a `knowledge.resolved` event on the tapes, by the user,
/// and a replay from the tapes alone gives the same projection.
fn resolved_on_the_tapes(w: &World, k: &Knowledge, action: &str) -> (String, String, Option<String>) {
    let resolved: Vec<_> = w.tape_events().into_iter().filter(|e| e["k"] == "knowledge.resolved").collect();
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    let body = resolved[0].to_string();
    assert!(body.contains(&k.stage) && body.contains(action) && body.contains("\"user\""), "{body}");
    let before = resolution(w, &k.stage);
    assert_eq!(before.1, action, "{before:?}");
    w.ok(&["replay"]);
    assert_eq!(resolution(w, &k.stage), before, "the resolution did not survive a replay");
    before
}

/// A demo data home with a server on a free loopback port.
fn serve() -> (World, Server, Knowledge) {
    let w = World::new();
    // The demo in the data home itself (`--demo-home` naming it), so the
    // server shows the demo's sessions and memories.
    let home = w.home();
    let home = home.to_str().expect("a UTF-8 temp path");
    w.ok(&["quickstart", "--demo", "--demo-home", home, "--no-train", "--cwd", "/home/demo/webapp"]);
    // A read-side hook, as an agent runs it: its latency and its ranking's
    // reach the diagnostics through logs/latency.jsonl.
    let input = serde_json::json!({
        "session_id": "web-e2e", "transcript_path": "/nonexistent.jsonl", "cwd": "/home/demo/webapp",
        "hook_event_name": "UserPromptSubmit", "prompt": "why do the redis integration tests fail",
    });
    let out = w.hook(w.scorer(&["hook", "user-prompt-submit"]), input.to_string().as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    w.wait_for_recorder();
    let knowledge = add_knowledge(&w);
    let mut child = w.scorer(&["web", "--port", "0"]).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with('/'), "the server printed {line:?}");
    (w, Server { child, url }, knowledge)
}

fn client() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web_client.py")
}

fn run(w: &World, python: &Path, args: &[&str], k: &Knowledge) {
    // Chromium's profile, Selenium's cache: all in the world.
    let out = tests::isolated(python, w.root())
        .arg(client())
        .args(args)
        .env("ENGRAM_HOME", w.home())
        .envs(k.env())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(out.status.success(), "web_client.py {args:?} failed:\n{stdout}\n{stderr}");
}

#[test]
fn the_rest_api_over_a_real_socket_refuses_what_it_must_and_writes_the_tapes() {
    let (w, server, k) = serve();
    let home = w.home();
    run(&w, Path::new("python3"), &["rest", &server.url, home.to_str().unwrap()], &k);
    // What the API wrote went through the journal: it is on the tapes, and a
    // replay of them gives the same memory back.
    let kinds: Vec<String> = w.tape_events().iter().map(|e| e["k"].as_str().unwrap_or("").to_owned()).collect();
    for want in ["memory.added", "memory.pinned", "memory.feedback", "memory.updated", "memory.forgotten"] {
        assert!(kinds.iter().any(|k| k == want), "{want} is not on the tapes: {kinds:?}");
    }
    assert_eq!(w.count("SELECT COUNT(*) FROM memories WHERE source = 'web' AND is_deleted = 1"), 1);
    drop(server);
    // The conflict resolved by `merge`: the existing memory absorbed it.
    let (status, _, result) = resolved_on_the_tapes(&w, &k, "merge");
    assert_eq!((status.as_str(), result.as_deref()), ("persisted", Some(k.existing.as_str())));
    assert_eq!(w.count("SELECT COUNT(*) FROM memories WHERE source = 'web' AND is_deleted = 1"), 1);
}

#[test]
fn the_api_never_sets_a_program_or_remote_access_and_refuses_two_hosts_and_huge_bodies() {
    let (w, server, k) = serve();
    let home = w.home();
    run(&w, Path::new("python3"), &["guarded", &server.url, home.to_str().unwrap()], &k);
    drop(server);
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    assert!(!config.contains("command") && !config.contains("allow_remote"), "{config}");
    assert!(config.contains("prompt_k = 5"), "{config}");
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
    let (w, server, k) = serve();
    let home = w.home();
    let shots = std::env::var("ENGRAM_WEB_SHOTS").ok();
    let mut args = vec!["browser", &server.url, home.to_str().unwrap()];
    if let Some(dir) = &shots {
        std::fs::create_dir_all(dir).unwrap();
        args.push(dir);
    }
    run(&w, python, &args, &k);
    drop(server);
    // The conflict resolved from the page by `replace`: the new memory is
    // saved, and the one it replaces is deprecated and superseded by it.
    let (_, _, result) = resolved_on_the_tapes(&w, &k, "replace");
    let new = result.expect("replace saves the staged memory");
    let superseded: Option<String> = w
        .store()
        .conn()
        .query_row("SELECT superseded_by FROM memories WHERE id = ?1", [&k.existing], |r| r.get(0))
        .unwrap();
    assert_eq!(superseded.as_deref(), Some(new.as_str()));
    // The pin made from a card went through the journal.
    assert!(w.tape_events().iter().any(|e| e["k"] == "memory.pinned"));
    assert!(std::fs::read_to_string(home.join("config.toml")).unwrap().contains("session_start_k = 6"));
}
