//! Crash safety of the tape log and projection with the real binary: writers
//! killed with SIGKILL at random moments, alone and next to another writer.
//!
//! Every acknowledged event (a `memory add` that exited 0 and printed its id)
//! must survive; the log must verify clean; replay must succeed and give the
//! same memories; a scan killed again and again must end, once completed,
//! exactly where an uninterrupted scan ends. Rounds: `ENGRAM_KILLS`, else 200
//! under `CI` and 60 locally.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::World;
use rand::{RngExt, SeedableRng};
use shared::base::paths::Paths;

fn rounds() -> usize {
    match std::env::var("ENGRAM_KILLS").ok().and_then(|v| v.parse().ok()) {
        Some(n) => n,
        None if std::env::var_os("CI").is_some() => 200,
        None => 60,
    }
}

fn spawn(w: &World, args: &[&str]) -> Child {
    w.cmd(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap()
}

/// The memory id a finished `memory add` printed, if it succeeded.
fn acknowledged(child: Child) -> Option<String> {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && text.starts_with("mem_")).then_some(text)
}

fn kill(child: &mut Child) {
    // SIGKILL; the process may already have exited.
    let _ = child.kill();
}

/// Ids of live memories in the projection, after catching up with the tapes.
fn memories(w: &World) -> BTreeSet<String> {
    let mut j = shared::projection::open(&Paths::at(w.home()), "test").unwrap();
    j.catch_up().unwrap();
    let mut stmt = j.store().conn().prepare("SELECT id FROM memories WHERE is_deleted = 0").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn assert_log_is_sound(w: &World, acked: &BTreeSet<String>) {
    let verify = w.run(&["tapes", "verify"]);
    assert!(verify.status.success(), "tapes verify: {}", String::from_utf8_lossy(&verify.stdout));
    let present = memories(w);
    let missing: Vec<&String> = acked.difference(&present).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
}

#[test]
fn sigkill_at_random_moments_loses_nothing_acknowledged() {
    let w = World::new();
    w.ok(&["memory", "add", "The log starts here."]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let n = rounds();
    for i in 0..n {
        // Two writers at once; one is killed at a random moment (before it
        // starts, while it opens or recovers the log, mid-append or
        // mid-apply, or after it finished), the other runs to the end.
        let text_a = format!("Round {i}: writer A records a lesson about retries and timeouts {}", "x".repeat(i % 300));
        let text_b = format!("Round {i}: writer B records a convention about migrations");
        let mut a = spawn(&w, &["memory", "add", "--no-check", &text_a]);
        let b = spawn(&w, &["memory", "add", "--no-check", &text_b]);
        std::thread::sleep(Duration::from_micros(rng.random_range(0..15_000)));
        kill(&mut a);
        acked.extend(acknowledged(a));
        acked.extend(acknowledged(b));
        if i % 25 == 24 {
            assert_log_is_sound(&w, &acked);
        }
    }
    assert!(acked.len() >= n, "at least every second writer must have finished ({} of {})", acked.len(), 2 * n);
    assert_log_is_sound(&w, &acked);
    let replay = w.run(&["replay"]);
    assert!(replay.status.success(), "replay: {}", String::from_utf8_lossy(&replay.stderr));
    assert_log_is_sound(&w, &acked);
}

#[test]
fn two_processes_appending_at_once_lose_nothing() {
    let w = World::new();
    let ids: BTreeSet<String> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..2)
            .map(|k| {
                let w = &w;
                scope.spawn(move || {
                    (0..40)
                        .map(|i| {
                            w.ok(&["memory", "add", "--no-check", &format!("writer {k} lesson {i}")]).trim().to_owned()
                        })
                        .collect::<Vec<String>>()
                })
            })
            .collect();
        writers.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(ids.len(), 80);
    assert_eq!(memories(&w), ids);
    let j = shared::projection::open(&Paths::at(w.home()), "test").unwrap();
    assert_eq!(j.store().applied_lsn().unwrap(), 80, "one LSN per append, none lost, none repeated");
}

#[test]
fn processes_opening_a_new_data_home_at_once_all_succeed() {
    // SQLite does not call its busy handler for the switch to WAL mode: first
    // opens racing each other used to fail with "database is locked".
    for _ in 0..20 {
        let w = World::new();
        let children: Vec<Child> =
            (0..6).map(|k| spawn(&w, &["memory", "add", "--no-check", &format!("writer {k}")])).collect();
        let ids: BTreeSet<String> =
            children.into_iter().map(|c| acknowledged(c).expect("every writer succeeds")).collect();
        assert_eq!(ids.len(), 6);
        assert_eq!(memories(&w), ids);
    }
}

/// A Claude Code transcript of `turns` exchanges, written by this test.
fn transcript(session: usize, turns: usize) -> String {
    let mut out = String::new();
    for t in 0..turns {
        let ts = format!("2026-01-{:02}T{:02}:{:02}:00.000Z", 1 + session % 28, t / 60 % 24, t % 60);
        let user = serde_json::json!({
            "type": "user", "uuid": format!("u-{session}-{t}"), "sessionId": format!("sess-{session}"),
            "timestamp": ts, "cwd": "/work/demo", "parentUuid": null,
            "message": {"role": "user", "content": format!("Session {session} step {t}: please update the retry policy in src/net/retry_{t}.rs and keep the timeout at {t} seconds")}
        });
        let assistant = serde_json::json!({
            "type": "assistant", "uuid": format!("a-{session}-{t}"), "sessionId": format!("sess-{session}"),
            "timestamp": ts, "cwd": "/work/demo", "parentUuid": format!("u-{session}-{t}"),
            "message": {"role": "assistant", "id": format!("msg-{session}-{t}"),
                        "content": [{"type": "text", "text": format!("I updated retry_{t}.rs: the backoff doubles up to {t} attempts. {}", "Details follow. ".repeat(8))}]}
        });
        out.push_str(&user.to_string());
        out.push('\n');
        out.push_str(&assistant.to_string());
        out.push('\n');
    }
    out
}

fn projection_counts(w: &World) -> (i64, i64, i64) {
    let j = shared::projection::open(&Paths::at(w.home()), "test").unwrap();
    let c = j.store().conn();
    let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    (q("SELECT COUNT(*) FROM sessions"), q("SELECT COUNT(*) FROM session_events"), q("SELECT COUNT(*) FROM memories"))
}

#[test]
fn a_scan_killed_again_and_again_ends_where_an_uninterrupted_scan_ends() {
    let corpus: Vec<(String, String)> =
        (0..30).map(|s| (format!("-work-demo/sess-{s}.jsonl"), transcript(s, 120))).collect();
    let make = || {
        let w = World::new();
        for (name, body) in &corpus {
            w.write(&w.claude_projects().join(name), body.as_bytes());
        }
        w
    };
    let reference = make();
    reference.ok(&["scan"]);
    let expected = projection_counts(&reference);
    assert!(expected.1 > 5_000, "a corpus big enough to span many batches: {expected:?}");

    let w = make();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for _ in 0..(rounds() / 10).max(6) {
        let mut scan = spawn(&w, &["scan"]);
        std::thread::sleep(Duration::from_millis(rng.random_range(5..250)));
        kill(&mut scan);
        let _ = scan.wait();
        let verify = w.run(&["tapes", "verify"]);
        assert!(verify.status.success(), "tapes verify: {}", String::from_utf8_lossy(&verify.stdout));
    }
    w.ok(&["scan"]);
    assert_eq!(projection_counts(&w), expected, "interrupted scans lost or duplicated events");
    w.ok(&["replay"]);
    assert_eq!(projection_counts(&w), expected);
}
