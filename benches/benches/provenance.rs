//! Provenance on the 100 MB corpus ([`benches::claude_corpus`]: 108 copies
//! of the three Claude Code `ccv-*` fixtures, every UUID replaced per copy):
//! cold scan with the evidence index (MB/s, wall and CPU time of the
//! scanning thread), disk (tapes + database against the corpus), a rescan
//! with nothing new, replay (events/s), and `explain` (the CLI's path: open
//! the store and the tapes, read the file, explain, windows) on spans of
//! files the fixtures' sessions wrote (every `Write` and the new text of
//! every `Edit`/`MultiEdit`, first 40 lines, written under the corpus).
//!
//! With `ENGRAM_PEER_BIN` (a clickety-clacks/engram binary built by hand;
//! nothing here builds it), the same run times the peer's `engram ingest`
//! of the same files (its `HOME` in the bench directory, run from the corpus
//! folder), its disk, and its `explain` of the same spans, and compares the
//! first session of each answer. The peer keeps one tape per transcript file
//! (sidechains inside), so sessions compare by their file's session id, and
//! by the original fixture session (the 108 copies are indistinguishable:
//! same touches, same times).
//!
//! **Writer first**: spans sampled (seeded) from the code the fixtures'
//! sessions wrote — runs of 2, 3, 5, 10, 20 and 40 lines of the added lines
//! of every `structuredPatch` hunk and of every created file's content, each
//! with at least two lines of two words or more — are written to files and
//! explained (the CLI's path, default options). The sessions that wrote a
//! span are read from the fixtures alone: every edit whose added lines hold
//! the span's lines in a row (session id, or the sidechain its record
//! belongs to, as Claude Code nests subagents). A span counts as "writer
//! first" when the first session explain returns is one of them (in any
//! copy), "latest writer first" when it is one of those whose edit came
//! last. Reported with the wall time's p50 and p90 overall and per length.
//!
//! Run by hand: `cargo bench -p benches --bench provenance`. Environment:
//! `ENGRAM_BENCH_COPIES` (default 108), `ENGRAM_BENCH_DIR` (where the corpus
//! and the data homes go; default a temporary directory; a corpus already
//! built there with the same number of copies is reused),
//! `ENGRAM_SHARED_DIR`, `ENGRAM_PEER_BIN`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use ingestor::discover::Roots;
use ingestor::scan::{self, ScanOptions};
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;

fn main() {
    let Some(fixtures) = shared::base::testing::shared_data("fixtures") else {
        return;
    };
    let copies: usize = std::env::var("ENGRAM_BENCH_COPIES").ok().and_then(|v| v.parse().ok()).unwrap_or(108);
    let tmp = tempfile::tempdir().unwrap();
    let base = std::env::var_os("ENGRAM_BENCH_DIR").map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    let corpus_dir = base.join(format!("ccv-corpus-{copies}"));
    let marker = corpus_dir.join(".built");
    let t = Instant::now();
    let (root, bytes, files) = match std::fs::read_to_string(&marker) {
        Ok(text) => {
            let mut it = text.split_whitespace();
            let bytes: u64 = it.next().and_then(|x| x.parse().ok()).unwrap();
            let files: usize = it.next().and_then(|x| x.parse().ok()).unwrap();
            (corpus_dir.join("claude/projects"), bytes, files)
        }
        Err(_) => {
            let _ = std::fs::remove_dir_all(&corpus_dir);
            let c = benches::claude_corpus::build(&fixtures, &corpus_dir, copies).unwrap();
            std::fs::write(&marker, format!("{} {}", c.bytes, c.files.len())).unwrap();
            (c.root, c.bytes, c.files.len())
        }
    };
    let mb = bytes as f64 / 1e6;
    eprintln!(
        "corpus: {copies} copies, {files} files, {mb:.1} MB ({:.1} s to build or find)",
        t.elapsed().as_secs_f64()
    );

    let home = base.join("home");
    let _ = std::fs::remove_dir_all(&home);
    let paths = Paths::at(&home);
    let roots =
        Roots { claude: vec![root.clone()], codex: vec![], gemini: vec![], opencode: vec![], ..Roots::default() };
    let mut opts = ScanOptions::new(Ts::now());
    opts.roots = Some(roots);
    let (t, c0) = (Instant::now(), cpu());
    let summary = scan::run(&paths, &Config::default(), &opts, &Shutdown::manual(), &mut |_| {}).unwrap();
    let (cold, cold_cpu) = (t.elapsed().as_secs_f64(), cpu() - c0);
    let events = summary.events_appended;
    let (tapes, db) = (dir_bytes(&home.join("tapes")), dir_bytes(&home.join("db")));
    eprintln!(
        "engram scan (cold, evidence index included): {cold:.2} s wall ({:.1} MB/s), {cold_cpu:.2} s CPU ({:.1} MB/s), \
         {events} events; disk: tapes {:.1} MB + database {:.1} MB = {:.2}x the corpus",
        mb / cold,
        mb / cold_cpu,
        tapes as f64 / 1e6,
        db as f64 / 1e6,
        (tapes + db) as f64 / bytes as f64
    );
    let mut rescans = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let again = scan::run(&paths, &Config::default(), &opts, &Shutdown::manual(), &mut |_| {}).unwrap();
        rescans.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(again.events_appended, 0);
    }
    eprintln!("rescan with nothing new: median {:.1} ms of {rescans:.1?}", median(&mut rescans));

    let (t, c0) = (Instant::now(), cpu());
    let report = shared::projection::replay(&paths, &mut |_| {}).unwrap();
    let (secs, cpu_s) = (t.elapsed().as_secs_f64(), cpu() - c0);
    eprintln!(
        "replay: {} events in {secs:.2} s wall ({:.0} events/s), {cpu_s:.2} s CPU ({:.0} events/s); database {:.1} MB",
        report.events,
        report.events as f64 / secs,
        report.events as f64 / cpu_s,
        dir_bytes(&home.join("db")) as f64 / 1e6
    );

    let originals = originals(&fixtures, copies);
    let spans = write_spans(&fixtures, &corpus_dir);
    let ours = explain_all(&paths, &spans, &originals);
    writer_first(&paths, &fixtures, &corpus_dir, copies);
    let Some(peer) = std::env::var_os("ENGRAM_PEER_BIN").map(PathBuf::from) else {
        eprintln!("(set ENGRAM_PEER_BIN to measure clickety-clacks/engram in the same run)");
        return;
    };
    let peer_home = base.join("peer-home");
    let _ = std::fs::remove_dir_all(&peer_home);
    let _ = std::fs::remove_dir_all(corpus_dir.join(".engram"));
    std::fs::create_dir_all(&peer_home).unwrap();
    let peer_cmd = |args: &[&str]| {
        let mut c = std::process::Command::new(&peer);
        c.args(args).current_dir(&corpus_dir).env("HOME", &peer_home);
        c
    };
    assert!(peer_cmd(&["init"]).output().unwrap().status.success());
    let t = Instant::now();
    let out = peer_cmd(&["ingest", "claude/projects"]).output().unwrap();
    let peer_secs = t.elapsed().as_secs_f64();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let peer_disk = dir_bytes(&peer_home.join(".engram")) + dir_bytes(&corpus_dir.join(".engram"));
    eprintln!(
        "peer ingest (same files, same run): {peer_secs:.1} s, {:.2} MB/s ({} tapes imported, status {}); \
         disk {:.1} MB = {:.1}x the corpus; engram's cold scan is {:.1}x faster",
        mb / peer_secs,
        summary["imported_tapes"],
        summary["status"],
        peer_disk as f64 / 1e6,
        peer_disk as f64 / bytes as f64,
        peer_secs / cold
    );
    let tapes_dir = peer_home.join(".engram/tapes");
    let mut times = Vec::new();
    let (mut same_file, mut same_original) = (0, 0);
    for (span, mine) in spans.iter().zip(&ours) {
        let target = format!("{}:1-{}", span.path.display(), span.lines);
        let t = Instant::now();
        let out = peer_cmd(&["explain", &target]).output().unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let theirs = v["sessions"][0]["session_id"].as_str().and_then(|tape| peer_session(&tapes_dir, tape));
        let theirs_original = theirs.as_deref().and_then(|s| originals.get(s).cloned());
        let agree_file = mine.file_session.is_some() && mine.file_session == theirs;
        // The 108 copies are indistinguishable (same touches, same times):
        // agreement is on the fixture session, whichever copy.
        let agree_original =
            mine.original.as_ref().is_some_and(|(o, _)| theirs_original.as_ref().is_some_and(|(t, _)| t == o));
        same_file += usize::from(agree_file);
        same_original += usize::from(agree_original);
        eprintln!(
            "  {}: engram {} ({} found) | peer {} ({} found, {} touches) {}",
            span.name,
            mine.first.as_deref().unwrap_or("-"),
            mine.found,
            theirs_original.as_ref().map_or("-".to_owned(), |(o, k)| format!("{o} copy {k}")),
            v["total"],
            v["sessions"][0]["touches"].as_array().map_or(0, Vec::len),
            if agree_original { "same original session" } else { "DIFFERENT" }
        );
    }
    eprintln!(
        "peer explain: median {:.0} ms; first sessions agree on {same_original}/{} spans by original session, \
         {same_file}/{} by transcript file (the copy)",
        median(&mut times),
        spans.len(),
        spans.len()
    );
}

/// A span written for the explain measurements.
struct Span {
    name: String,
    path: PathBuf,
    lines: usize,
}

/// What engram's explain said of a span.
struct Ours {
    first: Option<String>,
    file_session: Option<String>,
    original: Option<(String, usize)>,
    found: usize,
}

/// Copy-level session id -> (original session id of its fixture, copy).
fn originals(fixtures: &Path, copies: usize) -> std::collections::HashMap<String, (String, usize)> {
    let mut map = std::collections::HashMap::new();
    for src in benches::claude_corpus::sources(fixtures).unwrap() {
        let Some(sid) = benches::claude_corpus::first_session_id(&std::fs::read(&src).unwrap()) else { continue };
        let key: [u8; 36] = sid.as_bytes().try_into().unwrap();
        for k in 0..copies {
            let fresh = String::from_utf8(benches::claude_corpus::fresh_uuid(k, &key).to_vec()).unwrap();
            map.insert(fresh, (sid[..8].to_owned(), k));
        }
    }
    map
}

/// Every `Write`'s content and every `Edit`/`MultiEdit`'s new text of the
/// original fixtures (first 40 lines, at least 5), as files under `dir/spans`.
fn write_spans(fixtures: &Path, dir: &Path) -> Vec<Span> {
    let out_dir = dir.join("spans");
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut spans = Vec::new();
    for src in benches::claude_corpus::sources(fixtures).unwrap() {
        for line in std::fs::read_to_string(&src).unwrap().lines() {
            let Ok(r) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let t = &r["toolUseResult"];
            let mut texts: Vec<String> = Vec::new();
            if t["type"] == "create" {
                texts.extend(t["content"].as_str().map(str::to_owned));
            }
            texts.extend(t["newString"].as_str().map(str::to_owned));
            for e in t["edits"].as_array().into_iter().flatten() {
                texts.extend(e["new_string"].as_str().map(str::to_owned));
            }
            let file = t["filePath"].as_str().unwrap_or("x").rsplit('/').next().unwrap_or("x").to_owned();
            for text in texts {
                let lines: Vec<&str> = text.lines().take(40).collect();
                if lines.len() < 5 {
                    continue;
                }
                let name = format!("{:02}-{file}", spans.len());
                let path = out_dir.join(&name);
                std::fs::write(&path, lines.join("\n")).unwrap();
                spans.push(Span { name, path, lines: lines.len() });
            }
        }
    }
    spans
}

/// Explains every span three times (the CLI's path); prints the timings.
fn explain_all(
    paths: &Paths,
    spans: &[Span],
    originals: &std::collections::HashMap<String, (String, usize)>,
) -> Vec<Ours> {
    let opts = shared::domain::provenance::explain::ExplainOptions::default();
    let (mut times, mut cpus) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    for round in 0..3 {
        for span in spans {
            let req = scorer::provenance::ExplainRequest {
                target: format!("{}:1-{}", span.path.display(), span.lines),
                ..Default::default()
            };
            let (t, c0) = (Instant::now(), cpu());
            let e = scorer::provenance::explain(paths, &req, &opts, &mut std::io::empty()).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e3);
            cpus.push((cpu() - c0) * 1e3);
            if round == 0 {
                let first = e.sessions.first().map(|s| s.session.clone());
                let file_session = first
                    .as_deref()
                    .and_then(|s| s.strip_prefix("claude:"))
                    .map(|s| s.split('/').next().unwrap_or(s).to_owned());
                let original = file_session.as_deref().and_then(|s| originals.get(s).cloned());
                out.push(Ours { first, file_session, original, found: e.sessions_found });
            }
        }
    }
    let (p50, cpu50) = (median(&mut times), median(&mut cpus));
    let (p90, cpu90) = (times[times.len() * 9 / 10], cpus[cpus.len() * 9 / 10]);
    eprintln!(
        "explain ({} spans x 3, default options, windows read from the tapes): wall p50 {p50:.1} ms, p90 {p90:.1} ms; \
         CPU p50 {cpu50:.1} ms, p90 {cpu90:.1} ms",
        spans.len()
    );
    out
}

/// An edit of the fixtures: who made it, when, and the runs of lines it
/// added.
struct Written {
    session: String,
    ts: String,
    runs: Vec<Vec<String>>,
}

/// Every edit in the ccv fixtures, from their `toolUseResult`s.
fn written(fixtures: &Path) -> Vec<Written> {
    let mut out = Vec::new();
    for src in benches::claude_corpus::sources(fixtures).unwrap() {
        let records: Vec<serde_json::Value> =
            std::fs::read_to_string(&src).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let by_uuid: std::collections::HashMap<&str, &serde_json::Value> =
            records.iter().filter_map(|r| Some((r["uuid"].as_str()?, r))).collect();
        for r in &records {
            let t = &r["toolUseResult"];
            let mut runs: Vec<Vec<String>> = Vec::new();
            for hunk in t["structuredPatch"].as_array().into_iter().flatten() {
                let mut run: Vec<String> = Vec::new();
                for line in hunk["lines"].as_array().into_iter().flatten().filter_map(|l| l.as_str()) {
                    match line.strip_prefix('+') {
                        Some(added) => run.push(added.trim_end().to_owned()),
                        None => runs.extend((!run.is_empty()).then(|| std::mem::take(&mut run))),
                    }
                }
                runs.extend((!run.is_empty()).then_some(run));
            }
            if t["type"] == "create"
                && let Some(content) = t["content"].as_str()
            {
                runs.push(content.lines().map(|l| l.trim_end().to_owned()).collect());
            }
            if runs.is_empty() {
                continue;
            }
            // Claude Code's subagents: a sidechain is keyed by its first
            // record (the one whose parent is not in the sidechain).
            let sid = r["sessionId"].as_str().unwrap_or("");
            let session = if r["isSidechain"] == true {
                let mut root = r;
                while let Some(p) = root["parentUuid"].as_str().and_then(|p| by_uuid.get(p))
                    && p["isSidechain"] == true
                {
                    root = p;
                }
                format!("claude:{sid}/sidechain-{}", root["uuid"].as_str().unwrap_or(""))
            } else {
                format!("claude:{sid}")
            };
            out.push(Written { session, ts: r["timestamp"].as_str().unwrap_or("").to_owned(), runs });
        }
    }
    out
}

/// Whether `span` lies, line for line, inside `run`.
fn holds(run: &[String], span: &[String]) -> bool {
    run.windows(span.len()).any(|w| w == span)
}

/// Words of a line (runs of letters, digits and `_`).
fn words(line: &str) -> usize {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).count()
}

/// The writer-first measurement (see the module docs).
fn writer_first(paths: &Paths, fixtures: &Path, corpus_dir: &Path, copies: usize) {
    use rand::{RngExt, SeedableRng};
    let edits = written(fixtures);
    // Copy-level UUID -> original, for every UUID of the fixtures.
    let mut original: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for src in benches::claude_corpus::sources(fixtures).unwrap() {
        let bytes = std::fs::read(&src).unwrap();
        let mut seen = std::collections::HashSet::new();
        for w in bytes.windows(36) {
            let Ok(u) = std::str::from_utf8(w) else { continue };
            if u.len() == 36
                && u.chars()
                    .enumerate()
                    .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
                && seen.insert(u.to_owned())
            {
                let key: [u8; 36] = w.try_into().unwrap();
                for k in 0..copies {
                    let fresh = String::from_utf8(benches::claude_corpus::fresh_uuid(k, &key).to_vec()).unwrap();
                    original.insert(fresh, u.to_owned());
                }
            }
        }
    }
    let unmap = |key: &str| -> String {
        let mut out = key.to_owned();
        for (i, _) in key.char_indices() {
            if let Some(u) = key.get(i..i + 36)
                && let Some(o) = original.get(u)
            {
                out = out.replace(u, o);
            }
        }
        out
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut spans: Vec<Vec<String>> = Vec::new();
    for e in &edits {
        for run in &e.runs {
            for len in [2usize, 3, 5, 10, 20, 40] {
                if run.len() < len {
                    continue;
                }
                let at = rng.random_range(0..=run.len() - len);
                let span = run[at..at + len].to_vec();
                if span.iter().filter(|l| words(l) >= 2).count() >= 2 && !spans.contains(&span) {
                    spans.push(span);
                }
            }
        }
    }
    let dir = corpus_dir.join("writer-spans");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let opts = shared::domain::provenance::explain::ExplainOptions::default();
    let mut by_len: std::collections::BTreeMap<usize, (usize, usize, usize, Vec<f64>)> = Default::default();
    let (mut first, mut latest, mut times, mut misses) = (0, 0, Vec::new(), Vec::new());
    for (i, span) in spans.iter().enumerate() {
        let writers: Vec<&Written> = edits.iter().filter(|e| e.runs.iter().any(|r| holds(r, span))).collect();
        let last = writers.iter().map(|w| w.ts.as_str()).max().unwrap_or("");
        let path = dir.join(format!("{i:04}.txt"));
        std::fs::write(&path, span.join("\n")).unwrap();
        let req = scorer::provenance::ExplainRequest {
            target: format!("{}:1-{}", path.display(), span.len()),
            ..Default::default()
        };
        let t = Instant::now();
        let e = scorer::provenance::explain(paths, &req, &opts, &mut std::io::empty()).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let got = e.sessions.first().map(|s| unmap(&s.session));
        let is_writer = got.as_ref().is_some_and(|g| writers.iter().any(|w| &w.session == g));
        let is_latest = got.as_ref().is_some_and(|g| writers.iter().any(|w| &w.session == g && w.ts.as_str() == last));
        first += usize::from(is_writer);
        latest += usize::from(is_latest);
        if !is_writer {
            misses.push(format!(
                "{} lines, first {:?}, writers {:?}",
                span.len(),
                got,
                writers.iter().map(|w| &w.session).collect::<Vec<_>>()
            ));
        }
        let b = by_len.entry(span.len()).or_default();
        b.0 += 1;
        b.1 += usize::from(is_writer);
        b.2 += usize::from(is_latest);
        b.3.push(ms);
        times.push(ms);
    }
    let n = spans.len();
    let p = |xs: &mut Vec<f64>, q: usize| {
        xs.sort_by(f64::total_cmp);
        xs[(xs.len() * q / 100).min(xs.len() - 1)]
    };
    eprintln!(
        "writer first ({n} spans of code the fixtures' sessions wrote, {} edits; default options, windows read): \
         writer first {first}/{n} ({:.1}%), latest writer first {latest}/{n} ({:.1}%); explain wall p50 {:.1} ms, p90 {:.1} ms",
        edits.len(),
        100.0 * first as f64 / n as f64,
        100.0 * latest as f64 / n as f64,
        p(&mut times.clone(), 50),
        p(&mut times, 90),
    );
    for (len, (k, w, l, mut ts)) in by_len {
        eprintln!(
            "  {len:>2} lines: {k:>4} spans, writer first {w}/{k}, latest writer first {l}/{k}, p50 {:.1} ms",
            p(&mut ts, 50)
        );
    }
    for m in misses.iter().take(10) {
        eprintln!("  not writer first: {m}");
    }
}

/// The transcript session id of a peer tape (its first `meta` line's
/// `source.session_id`).
fn peer_session(tapes: &Path, tape: &str) -> Option<String> {
    let bytes = std::fs::read(tapes.join(format!("{tape}.jsonl.zst"))).ok()?;
    let text = zstd::decode_all(&bytes[..]).ok()?;
    let first = text.split(|&b| b == b'\n').next()?;
    let v: serde_json::Value = serde_json::from_slice(first).ok()?;
    v["source"]["session_id"].as_str().map(str::to_owned)
}

/// CPU time of this thread (seconds), from /proc/thread-self/schedstat.
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .unwrap_or(0.0)
        / 1e9
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() { dir_bytes(&e.path()) } else { m.len() }
        })
        .sum()
}
