//! SpecStory exports end to end through the real `engram-ingestor` binary:
//! the whole real-session corpus (`../shared/realdata/raw/`, read in place,
//! never copied into the repository) scans with no failed file, a second
//! scan appends nothing, and replaying the tapes rebuilds the same
//! projection; the exports are found in repositories under
//! `[scan] specstory_roots`; a Claude Code session exported by SpecStory
//! and present in Claude Code's own folder is one session. The corpus tests
//! skip with `SKIP:` when `../shared` is missing and fail under `CI`.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::{World, count, ingestor_data, kind};
use serde_json::Value;

fn raw_corpus() -> Option<PathBuf> {
    let found = shared::base::testing::shared_data("realdata/raw");
    if found.is_none() {
        println!("SKIP: ../shared/realdata/raw is missing (set ENGRAM_SHARED_DIR)");
    }
    found
}

/// Every harness of a scan summary: no file failed.
fn assert_no_failed_file(summary: &Value) {
    for (h, s) in summary["harnesses"].as_object().unwrap() {
        assert_eq!(s["files_failed"], 0, "{h}: {s:#}");
    }
    assert_eq!(summary["unrecognised"].as_array().map_or(0, Vec::len), 0, "{summary:#}");
}

fn dump(w: &World) -> String {
    shared::storage::store::canonical_dump(w.store().conn(), true).unwrap()
}

#[test]
fn the_real_corpus_scans_with_no_failed_file_and_replays_to_the_same_projection() {
    let Some(raw) = raw_corpus() else { return };
    let w = World::new();
    let started = std::time::Instant::now();
    let first = w.json(&["scan", "--json", "--path", raw.to_str().unwrap()]);
    let wall = started.elapsed();
    assert_no_failed_file(&first);
    let exports = std::fs::read_dir(&raw)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .filter(|f| f.as_ref().unwrap().path().extension().is_some_and(|e| e == "md"))
        .count() as u64;
    assert_eq!(count(&first, "specstory", "files"), exports);
    assert_eq!(count(&first, "specstory", "files_read"), exports);
    assert_eq!(count(&first, "specstory", "diagnostics"), 0, "{first:#}");
    // One session per export, under its tool's name; the raw Claude Code transcripts beside them.
    let sessions: u64 = ["cursor", "copilot", "claude", "codex"].iter().map(|h| count(&first, h, "sessions")).sum();
    let transcripts = count(&first, "claude", "files");
    assert!(transcripts > 0);
    assert!(sessions >= exports + transcripts, "{first:#}");
    for h in ["cursor", "copilot", "claude", "codex"] {
        assert!(kind(&first, h, "msg.in") > 0 && kind(&first, h, "msg.out") > 0, "{h}: {first:#}");
    }
    assert!(kind(&first, "cursor", "tool.call") > 0 && kind(&first, "codex", "tool.result") > 0);
    println!(
        "corpus scan: {exports} exports + {transcripts} transcripts in {:.0} ms wall (scan summary {:.0} ms: parse {:.0} ms, append {:.0} ms, extract {:.0} ms)",
        wall.as_secs_f64() * 1e3,
        first["elapsed_ms"].as_f64().unwrap(),
        first["timings"]["parse_ms"].as_f64().unwrap(),
        first["timings"]["append_ms"].as_f64().unwrap(),
        first["timings"]["extract_ms"].as_f64().unwrap(),
    );

    let lsn = w.last_lsn();
    let second = w.json(&["scan", "--json", "--path", raw.to_str().unwrap()]);
    assert_eq!(second["events_appended"], 0, "{second:#}");
    assert_eq!(count(&second, "specstory", "files_read"), 0);
    assert_eq!(w.last_lsn(), lsn);

    let before = dump(&w);
    w.ok(&["replay"]);
    assert_eq!(dump(&w), before, "replay rebuilds the same projection");
    assert_eq!(w.json(&["scan", "--json", "--path", raw.to_str().unwrap()])["events_appended"], 0);
}

#[test]
fn exports_in_repositories_under_the_configured_roots_are_found() {
    let Some(raw) = raw_corpus() else { return };
    let w = World::new();
    let repos = w.root().join("repos");
    let mut exports = 0;
    for dir in std::fs::read_dir(&raw).unwrap() {
        let dir = dir.unwrap().path();
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "md") {
                let to = repos.join(dir.file_name().unwrap()).join(".specstory/history").join(f.file_name().unwrap());
                w.copy(&f, &to);
                exports += 1;
            }
        }
    }
    w.write(
        &w.home().join("config.toml"),
        format!("[scan]\nspecstory_roots = [{:?}]\n", repos.display().to_string()).as_bytes(),
    );
    let first = w.scan();
    assert_no_failed_file(&first);
    assert_eq!(count(&first, "specstory", "files_read"), exports);
    // The repository holding .specstory is the session's working directory.
    let cwds: Vec<String> = w
        .store()
        .conn()
        .prepare("SELECT DISTINCT cwd FROM sessions WHERE source_path LIKE '%.md'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!cwds.is_empty());
    for cwd in &cwds {
        assert!(cwd.starts_with(repos.to_str().unwrap()) && !cwd.contains(".specstory"), "{cwd}");
    }
    assert_eq!(w.scan()["events_appended"], 0);
}

#[test]
fn a_claude_code_session_exported_by_specstory_is_one_session() {
    // (The first in one scan with its transcript, then alone.)
    for together in [true, false] {
        let w = World::new();
        // The ingestor's own Claude Code fixture, and an export of the same session.
        let id = "11111111-1111-4111-8111-111111111111";
        w.copy(
            &ingestor_data("claude_session.jsonl"),
            &w.claude_projects().join(format!("-home-dev-webapp/{id}.jsonl")),
        );
        let repo = w.root().join("repos/webapp");
        let export = format!(
            "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n# 2026-01-02 03:04:05Z\n\n<!-- Claude Code Session {id} (2026-01-02 03:04:05Z) -->\n\n_**User (2026-01-02 03:04:05Z)**_\n\nan exported prompt that must not be counted twice\n\n---\n\n_**Agent (claude-opus-4-6 2026-01-02 03:04:09Z)**_\n\nAn exported answer.\n\n---\n"
        );
        let add_export = || {
            w.write(&repo.join(".specstory/history/2026-01-02_03-04-05Z-session.md"), export.as_bytes());
            w.write(
                &w.home().join("config.toml"),
                format!("[scan]\nspecstory_roots = [{:?}]\n", repo.display().to_string()).as_bytes(),
            );
        };
        let key = format!("claude:{id}");
        let prompts = |w: &World| w.count(&format!("SELECT prompt_count FROM sessions WHERE session_key = '{key}'"));
        let s = if together {
            add_export();
            w.scan()
        } else {
            let alone = w.scan();
            let before = (count(&alone, "claude", "sessions"), prompts(&w), w.last_lsn());
            add_export();
            let s = w.scan();
            assert_eq!(s["events_appended"], s["cursors"], "only the export's cursor: {s:#}");
            assert_eq!(before.0, w.count("SELECT COUNT(*) FROM sessions WHERE harness = 'claude'") as u64);
            assert_eq!(before.1, prompts(&w));
            s
        };
        assert_eq!(count(&s, "specstory", "duplicates"), 1, "{s:#}");
        assert_eq!(w.count(&format!("SELECT COUNT(*) FROM sessions WHERE session_key = '{key}'")), 1);
        assert!(!w.tape_dump().contains("must not be counted twice"), "the export's turns were recorded");
        // Scanning again, and after a replay, changes nothing.
        assert_eq!(w.scan()["events_appended"], 0);
        w.ok(&["replay"]);
        assert_eq!(w.scan()["events_appended"], 0);
    }
}
