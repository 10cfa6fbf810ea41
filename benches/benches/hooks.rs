//! Every hook end to end, as a harness runs it: spawn the release binary,
//! write the event's JSON to its stdin, read its stdout, wait for the exit.
//! On stores of 10,000 and 100,000 memories (`memory_events`, the same
//! corpus as the `rank` bench); the read side's targets are a median of at
//! most 15 ms and 30 ms.
//!
//! Run: `cargo bench -p benches --bench hooks` (builds the release binaries
//! first; `ENGRAM_BENCH_PROFILE=dist` times the shipped ones instead,
//! `ENGRAM_BENCH_BIN_DIR=DIR` the ones in DIR).
//! `HOOK_BENCH_RUNS` sets the runs per event (default 40),
//! `HOOK_BENCH_SIZES` the store sizes (default `10000,100000`).
//!
//! * Read side (`engram-scorer hook …`): `session-start` in a fresh session
//!   each run; `user-prompt-submit` and `pre-tool-use` with varying prompts
//!   and commands, eight runs per session (so the no-repeat filter works as
//!   in a real session). Each run ranks, spools what it served, starts the
//!   detached recorder (unless one is running) and prints the context; the
//!   recorder's append (fdatasync) is not in the time, but it runs
//!   meanwhile, as it does between an agent's hooks.
//! * Write side (`engram-ingestor hook …`): records the event and starts the
//!   detached ingestion worker when there is something to read; the time is
//!   the hook's own, not the worker's.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benches::{lesson, memory_events};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use shared::base::paths::Paths;

/// A world: data home with `n` memories, and a home for the harness dirs.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new(n: usize) -> World {
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let mut journal = shared::projection::open(&Paths::at(dir.path().join("engram")), "bench").unwrap();
        for chunk in memory_events(n, 11).chunks(10_000) {
            journal.append(chunk).unwrap();
        }
        drop(journal);
        eprintln!("store of {n} memories built in {:.1?}", t.elapsed());
        World { dir }
    }

    fn run(&self, bin: &Path, args: &[&str], input: &[u8]) -> (Duration, Vec<u8>) {
        let root = self.dir.path();
        let t = Instant::now();
        let mut child = Command::new(bin)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", root)
            .env("ENGRAM_HOME", root.join("engram"))
            .env("CLAUDE_CONFIG_DIR", root.join("claude"))
            .env("CODEX_HOME", root.join("codex"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        let elapsed = t.elapsed();
        assert!(out.status.success(), "{args:?} exited {:?}", out.status);
        (elapsed, out.stdout)
    }
}

fn percentile(v: &[Duration], p: f64) -> Duration {
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

struct Row {
    event: &'static str,
    times: Vec<Duration>,
    injected: usize,
    max_chars: usize,
    target_ms: Option<u64>,
}

fn main() {
    let runs: usize = std::env::var("HOOK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let sizes: Vec<usize> = std::env::var("HOOK_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let [scorer, ingestor]: [PathBuf; 2] = benches::binaries(&["scorer", "ingestor"]).try_into().unwrap();
    let transcript_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ingestor/tests/data/claude_session.jsonl");
    let mut rng = ChaCha8Rng::seed_from_u64(7);

    for n in sizes {
        let w = World::new(n);
        let root = w.dir.path();
        let cwd = "/home/dev/engram";
        let transcript = root.join("claude/projects/-home-dev-engram/bench-session.jsonl");
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        std::fs::copy(&transcript_src, &transcript).unwrap();
        let base = |session: &str, event: &str| {
            json!({"session_id": session, "transcript_path": transcript, "cwd": cwd, "hook_event_name": event,
                   "permission_mode": "default"})
        };
        let with = |mut v: Value, extra: Value| {
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            v.to_string().into_bytes()
        };
        // Warm the page cache and the projection (first open, migrations).
        w.run(&scorer, &["hook", "session-start"], &with(base("warm", "SessionStart"), json!({"source": "startup"})));

        let mut rows = Vec::new();
        let read_target = if n <= 10_000 { 15 } else { 30 };
        let mut read = |event: &'static str, hook_event: &str, input: &dyn Fn(usize, &mut ChaCha8Rng) -> Vec<u8>| {
            let mut row = Row { event, times: Vec::new(), injected: 0, max_chars: 0, target_ms: Some(read_target) };
            for i in 0..runs {
                let bytes = input(i, &mut rng);
                let (t, out) = w.run(&scorer, &["hook", event], &bytes);
                row.times.push(t);
                if !out.is_empty() {
                    let v: Value = serde_json::from_slice(&out).unwrap();
                    assert_eq!(v["hookSpecificOutput"]["hookEventName"], hook_event);
                    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
                    row.injected += 1;
                    row.max_chars = row.max_chars.max(text.chars().count());
                }
            }
            rows.push(row);
        };
        read("session-start", "SessionStart", &|i, _| {
            with(base(&format!("start-{i}"), "SessionStart"), json!({"source": "startup"}))
        });
        read("user-prompt-submit", "UserPromptSubmit", &|i, rng| {
            with(base(&format!("prompt-{}", i / 8), "UserPromptSubmit"), json!({"prompt": lesson(rng, 12)}))
        });
        read("pre-tool-use", "PreToolUse", &|i, rng| {
            let cmd = format!("cargo test {}", lesson(rng, 3));
            with(
                base(&format!("tool-{}", i / 8), "PreToolUse"),
                json!({"tool_name": "Bash", "tool_input": {"command": cmd}, "tool_use_id": format!("toolu_{i}")}),
            )
        });
        for (event, hook_event, extra) in [
            (
                "post-tool-use",
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"},
                       "tool_response": {"stdout": "ok", "stderr": "", "interrupted": false, "isImage": false},
                       "tool_use_id": "toolu_x"}),
            ),
            ("stop", "Stop", json!({"stop_hook_active": false, "last_assistant_message": "Done."})),
            ("pre-compact", "PreCompact", json!({"trigger": "auto", "custom_instructions": ""})),
            ("session-end", "SessionEnd", json!({"reason": "other"})),
        ] {
            let mut row = Row { event, times: Vec::new(), injected: 0, max_chars: 0, target_ms: Some(100) };
            for i in 0..runs {
                let input = with(base(&format!("write-{}", i / 8), hook_event), extra.clone());
                let (t, out) = w.run(&ingestor, &["hook", event], &input);
                assert!(out.is_empty());
                row.times.push(t);
            }
            rows.push(row);
        }

        println!("\nhooks end to end (spawn to exit), store of {n} memories, {runs} runs each, milliseconds");
        println!(
            "{:<20} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7}",
            "hook", "p50", "p90", "min", "max", "injected", "max chars", "target"
        );
        for mut r in rows {
            r.times.sort();
            let p50 = percentile(&r.times, 0.5);
            let verdict = match r.target_ms {
                Some(t) if p50 <= Duration::from_millis(t) => format!("<={t} ok"),
                Some(t) => format!("<={t} MISS"),
                None => String::new(),
            };
            println!(
                "{:<20} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7}",
                r.event,
                ms(p50),
                ms(percentile(&r.times, 0.9)),
                ms(r.times[0]),
                ms(r.times[r.times.len() - 1]),
                if r.target_ms == Some(100) { "-".to_owned() } else { format!("{}/{}", r.injected, r.times.len()) },
                if r.max_chars == 0 { "-".to_owned() } else { r.max_chars.to_string() },
                verdict
            );
        }
        // Let the detached workers (ingestion, the read side's recorder)
        // finish before the store is deleted.
        let lanes: Vec<PathBuf> = std::fs::read_dir(root.join("engram/hooks"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "lock"))
            .collect();
        for lock in lanes {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(30) {
                if shared::base::fsutil::FileLock::try_exclusive(&lock).map(|l| l.is_some()).unwrap_or(true) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let spooled = shared::domain::hook::spool_pending(&Paths::at(root.join("engram")));
        assert!(!spooled, "the recorder left events in the spool");
    }
}
