//! Runs the read-side hooks in process, for profiling one of them.
//!
//! `hook_phases DIR EVENT [ITERS]` calls `scorer::hook::run` for `EVENT`
//! (`session-start`, `user-prompt-submit`, `pre-tool-use`) `ITERS` times
//! (default 20) on the data home DIR (built by `rank_phases DIR 10000`),
//! with the prompts and commands of the hooks bench, and prints the
//! fastest and median call. No recorder is started and each call's spool
//! file is removed, so under `valgrind --tool=callgrind` or `perf record`
//! the counts are those of one hook's own work.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use benches::lesson;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::hook::HookEvent;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).map_or("/tmp/rank-phases", String::as_str));
    let event = HookEvent::from_arg(args.get(2).map_or("pre-tool-use", String::as_str)).unwrap();
    let iters: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(20);
    let paths = Paths::at(&dir);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters {
        let base = json!({"session_id": format!("phases-{}", i / 8), "transcript_path": "/nonexistent/t.jsonl",
                          "cwd": "/home/dev/engram", "permission_mode": "default"});
        let mut v = base;
        match event {
            HookEvent::SessionStart => v["source"] = json!("startup"),
            HookEvent::UserPromptSubmit => v["prompt"] = json!(lesson(&mut rng, 12)),
            _ => {
                v["tool_name"] = json!("Bash");
                v["tool_input"] = json!({"command": format!("cargo test {}", lesson(&mut rng, 3))});
                v["tool_use_id"] = json!(format!("toolu_{i}"));
            }
        }
        let input = v.to_string().into_bytes();
        let t = Instant::now();
        scorer::hook::run(event, None, &input, &paths, Ts::now(), None).unwrap();
        times.push(t.elapsed());
        for f in std::fs::read_dir(shared::domain::hook::spool_dir(&paths)).into_iter().flatten().flatten() {
            let _ = std::fs::remove_file(f.path());
        }
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{} x{iters}: min {:.2} ms, median {:.2} ms", event.arg(), ms(times[0]), ms(times[iters / 2]));
}
