//! Ingest throughput: MB/s of harness transcript turned into tapes and the
//! SQLite projection by `engram-ingestor scan` (the library's `scan::run`,
//! one thread), on a corpus of at least 200 MB built by replicating every
//! file of `../shared/fixtures/` with fresh session ids, so each copy is a
//! distinct set of sessions.
//!
//! Run by hand: `cargo bench -p benches --bench ingest`. Environment:
//! `ENGRAM_BENCH_MB` (corpus size, default 200), `ENGRAM_BENCH_RUNS`
//! (default 3; each into a fresh data home), `ENGRAM_BENCH_DIR` (where to
//! build the corpus; default a temporary directory; a corpus already built
//! there for the same size is reused, handy under `perf record`),
//! `ENGRAM_SHARED_DIR`.
//! Prints the corpus, then per run wall time, CPU time of the scanning
//! thread, MB/s, events/s and where the time went; then the medians. On a
//! machine shared with other work the wall clock includes waiting for a
//! CPU; the CPU-time rate is the one-core figure.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use ingestor::discover::Roots;
use ingestor::scan::{self, ScanOptions, ScanSummary};
use serde_json::Value;
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;

/// JSON keys whose string values identify a session; suffixed per copy.
const SESSION_KEYS: &[&str] =
    &["sessionId", "sessionID", "session_id", "parentID", "forked_from_id", "parent_thread_id"];

fn main() {
    let Some(fixtures) = shared::base::testing::shared_data("fixtures") else {
        return;
    };
    let mb: u64 = std::env::var("ENGRAM_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let runs: usize = std::env::var("ENGRAM_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let base = std::env::var_os("ENGRAM_BENCH_DIR").map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    let corpus = base.join("corpus");
    let marker = corpus.join(format!(".built-{mb}"));
    let t = Instant::now();
    let built = std::fs::read_to_string(&marker).ok().and_then(|text| {
        let v: Vec<u64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        (v.len() == 3).then(|| (v[0], v[1], v[2] as usize))
    });
    let (bytes, files, copies) = built.unwrap_or_else(|| {
        let _ = std::fs::remove_dir_all(&corpus);
        let built = build_corpus(&fixtures, &corpus, mb * 1_000_000);
        std::fs::write(&marker, format!("{} {} {}", built.0, built.1, built.2)).unwrap();
        built
    });
    eprintln!(
        "corpus: {copies} copies of the fixtures, {files} files, {:.1} MB, built in {:.1} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let roots = Roots {
        claude: vec![corpus.join("claude/projects")],
        codex: vec![corpus.join("codex/sessions")],
        gemini: vec![corpus.join("gemini/tmp")],
        opencode: (0..copies).map(|k| corpus.join(format!("opencode/{k}"))).collect(),
        specstory: Vec::new(),
        specstory_projects: Vec::new(),
    };
    let (mut rates, mut cpu_rates) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let home = base.join(format!("home-{run}"));
        let _ = std::fs::remove_dir_all(&home);
        let mut opts = ScanOptions::new(Ts::now());
        opts.roots = Some(roots.clone());
        let (c0, t0) = (cpu(), Instant::now());
        let summary =
            scan::run(&Paths::at(&home), &Config::default(), &opts, &Shutdown::manual(), &mut |_| {}).unwrap();
        let (wall, cpu_s) = (t0.elapsed().as_secs_f64(), cpu() - c0);
        report(run, &summary, bytes, wall, cpu_s, &home);
        rates.push(bytes as f64 / 1e6 / wall);
        cpu_rates.push(bytes as f64 / 1e6 / cpu_s);
        // A second scan finds nothing new.
        let t = Instant::now();
        let again = scan::run(&Paths::at(&home), &Config::default(), &opts, &Shutdown::manual(), &mut |_| {}).unwrap();
        assert_eq!(again.events_appended, 0);
        eprintln!("  rescan with nothing new: {:.2} s", t.elapsed().as_secs_f64());
        let _ = std::fs::remove_dir_all(&home);
    }
    rates.sort_by(f64::total_cmp);
    cpu_rates.sort_by(f64::total_cmp);
    eprintln!(
        "median: {:.1} MB/s of transcript into tapes and SQLite by the wall clock, {:.1} MB/s of CPU time of the \
         scanning thread (target >= 30 on one core)",
        rates[rates.len() / 2],
        cpu_rates[cpu_rates.len() / 2]
    );
}

fn report(run: usize, s: &ScanSummary, bytes: u64, wall: f64, cpu_s: f64, home: &Path) {
    let t = s.total();
    let tapes: u64 = std::fs::read_dir(home.join("tapes")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    let db: u64 = std::fs::read_dir(home.join("db")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    eprintln!(
        "run {run}: {:.2} s wall, {:.2} s CPU: {:.1} MB/s, {:.0} events/s ({} events, {} sessions, {} memories); tapes {:.1} MB, database {:.1} MB",
        wall,
        cpu_s,
        bytes as f64 / 1e6 / wall,
        s.events_appended as f64 / wall,
        s.events_appended,
        t.sessions,
        t.memories_added,
        tapes as f64 / 1e6,
        db as f64 / 1e6
    );
    let tm = &s.timings;
    let parts = [
        ("discover", tm.discover_ms),
        ("read", tm.read_ms),
        ("parse+redact", tm.parse_ms),
        ("filter", tm.filter_ms),
        ("extract", tm.extract_ms),
        ("append (tape+SQLite)", tm.append_ms),
        ("idle ends", tm.idle_ms),
    ];
    let line: Vec<String> =
        parts.iter().map(|(n, ms)| format!("{n} {:.0} ms ({:.0}%)", ms, 100.0 * ms / s.elapsed_ms)).collect();
    eprintln!("  {}", line.join(", "));
}

/// Builds copies of every fixture until `target` bytes; returns (bytes, files, copies).
fn build_corpus(fixtures: &Path, corpus: &Path, target: u64) -> (u64, u64, usize) {
    let mut sources = Vec::new();
    walk(fixtures, &mut sources);
    sources.retain(|p| p.extension().is_some_and(|e| e == "jsonl" || e == "json"));
    let (mut bytes, mut files, mut k) = (0u64, 0u64, 0usize);
    while bytes < target {
        for src in &sources {
            let rel = src.strip_prefix(fixtures).unwrap();
            let Some(dest) = destination(rel, corpus, k) else { continue };
            let data = std::fs::read(src).unwrap();
            let out = if rel.starts_with("opencode") {
                freshen_document(&data, k, rel.components().any(|c| c.as_os_str() == "session"))
            } else if src.extension().is_some_and(|e| e == "json") && !rel.to_string_lossy().ends_with(".meta.json") {
                freshen_document(&data, k, false)
            } else {
                freshen_lines(&data, k)
            };
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::write(&dest, &out).unwrap();
            bytes += out.len() as u64;
            files += 1;
        }
        k += 1;
    }
    (bytes, files, k)
}

/// Where copy `k` of a fixture goes, in each harness's standard layout.
fn destination(rel: &Path, corpus: &Path, k: usize) -> Option<PathBuf> {
    let text = rel.to_string_lossy();
    let (harness, rest) = text.split_once('/')?;
    let name = rel.file_name()?.to_string_lossy().into_owned();
    Some(match harness {
        "claude" => {
            // Directories and file names carrying a session id get the copy's suffix.
            let parts: Vec<String> = rest
                .split('/')
                .map(|p| {
                    let (stem, ext) = p.split_once('.').map_or((p, ""), |(s, e)| (s, e));
                    let fresh = if is_uuid(stem) { format!("{stem}-c{k}") } else { stem.to_owned() };
                    if ext.is_empty() { fresh } else { format!("{fresh}.{ext}") }
                })
                .collect();
            corpus.join(format!("claude/projects/c{k}")).join(parts.join("/"))
        }
        "codex" => corpus.join(format!(
            "codex/sessions/c{k}/rollout-2026-01-01T00-00-00-{}-c{k}.jsonl",
            name.trim_end_matches(".jsonl")
        )),
        "gemini" if name.ends_with(".jsonl") => corpus.join(format!("gemini/tmp/c{k}/chats/session-c{k}.jsonl")),
        "gemini" => corpus.join(format!("gemini/tmp/c{k}/chats/session-c{k}.json")),
        "opencode" => corpus.join(format!("opencode/{k}/storage")).join(rest.split_once('/')?.1),
        _ => return None,
    })
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
}

fn suffix(v: &mut Value, k: usize, session_doc: bool, top: bool) {
    match v {
        Value::Object(map) => {
            let codex_meta = map.get("type").and_then(Value::as_str) == Some("session_meta");
            for (key, val) in map.iter_mut() {
                let is_id = SESSION_KEYS.contains(&key.as_str()) || (session_doc && top && key == "id");
                match val {
                    Value::String(s) if is_id => *s = format!("{s}-c{k}"),
                    Value::Object(p) if codex_meta && key == "payload" => {
                        if let Some(Value::String(id)) = p.get_mut("id") {
                            *id = format!("{id}-c{k}");
                        }
                        suffix(val, k, false, false);
                    }
                    _ => suffix(val, k, false, false),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| suffix(i, k, false, false)),
        _ => {}
    }
}

/// A JSONL file with every session id suffixed (lines that are not JSON kept as they are).
fn freshen_lines(data: &[u8], k: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 50);
    for line in data.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        match serde_json::from_slice::<Value>(body) {
            Ok(mut v) if v.is_object() => {
                suffix(&mut v, k, false, true);
                out.extend(serde_json::to_vec(&v).unwrap());
                if line.ends_with(b"\n") {
                    out.push(b'\n');
                }
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

/// A whole JSON document with session ids suffixed (`id` too for session records).
fn freshen_document(data: &[u8], k: usize, session_doc: bool) -> Vec<u8> {
    match serde_json::from_slice::<Value>(data) {
        Ok(mut v) => {
            suffix(&mut v, k, session_doc, true);
            serde_json::to_vec(&v).unwrap()
        }
        Err(_) => data.to_vec(),
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() { walk(&p, out) } else { out.push(p) }
    }
}

/// CPU time of this thread (seconds), from /proc/thread-self/schedstat.
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .unwrap_or(0.0)
        / 1e9
}
