//! `engram-ingestor` end to end: the real binary as a subprocess, real tape
//! logs and SQLite files in a temporary data home, harness logs in temporary
//! `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_DIR` and `XDG_DATA_HOME`.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{World, contains_ignore_case, count, ingestor_data, kind};
use serde_json::Value;

/// Per fixture file: (harness, path under ../shared/fixtures, where it goes
/// in the world, [sessions, msg.in, msg.out, tool.call, tool.result,
/// code.read, code.edit, diagnostics]). The numbers are those of
/// `ingestor/tests/conformance.rs`, derived from the raw files by
/// `ingestor/tests/data/derive_counts.py` (never by the parser).
const FIXTURES: &[(&str, &str, &str, [u64; 8])] = &[
    ("claude", "claude/ah-2.1.152-redacted.jsonl", "claude/projects/p/ah.jsonl", [1, 1, 1, 0, 0, 0, 0, 0]),
    ("claude", "claude/as-2.1-record-catalogue.jsonl", "claude/projects/p/cat.jsonl", [4, 13, 12, 3, 3, 0, 0, 46]),
    ("claude", "claude/as-schema-drift.jsonl", "claude/projects/p/drift.jsonl", [1, 2, 1, 1, 1, 0, 0, 0]),
    ("claude", "claude/ccv-1.0.108.jsonl", "claude/projects/p/ccv108.jsonl", [3, 4, 7, 21, 21, 3, 3, 0]),
    ("claude", "claude/ccv-1.0.98-sidechains.jsonl", "claude/projects/p/side.jsonl", [6, 8, 95, 167, 167, 27, 35, 0]),
    ("claude", "claude/ccv-1.0.98-small.jsonl", "claude/projects/p/small.jsonl", [1, 2, 3, 12, 12, 0, 0, 0]),
    (
        "claude",
        "claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl",
        "claude/projects/q/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl",
        [1, 1, 1, 1, 0, 0, 0, 0],
    ),
    (
        "claude",
        "claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
        "claude/projects/q/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
        [1, 1, 1, 1, 1, 0, 0, 0],
    ),
    (
        "codex",
        "codex/ah-0.135.0-redacted.jsonl",
        "codex/sessions/2026/06/05/rollout-2026-06-05T04-58-20-019e9625-802f-7e91-840a-cfe88d14117a.jsonl",
        [1, 3, 1, 0, 0, 0, 0, 0],
    ),
    (
        "codex",
        "codex/as-0.146-record-catalogue.jsonl",
        "codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-catalogue.jsonl",
        [2, 9, 2, 8, 6, 1, 1, 95],
    ),
    (
        "codex",
        "codex/as-schema-drift.jsonl",
        "codex/sessions/2026/01/01/rollout-2026-01-01T00-00-01-drift.jsonl",
        [1, 1, 1, 1, 1, 0, 0, 0],
    ),
    (
        "gemini",
        "gemini/as-jsonl-v040.jsonl",
        "gemini/tmp/h/chats/session-2026-04-29T21-39-gemini_s.jsonl",
        [1, 1, 1, 1, 1, 0, 0, 0],
    ),
    (
        "gemini",
        "gemini/as-legacy-small.json",
        "gemini/tmp/h/chats/session-2026-01-16T18-34-3739ef95.json",
        [1, 1, 2, 0, 0, 0, 0, 0],
    ),
    ("opencode", "opencode/as-storage-v2", "xdg/opencode/storage", [2, 3, 4, 2, 2, 0, 0, 0]),
];

const KINDS: [&str; 7] = ["session.started", "msg.in", "msg.out", "tool.call", "tool.result", "code.read", "code.edit"];

#[test]
fn a_scan_of_the_fixtures_matches_conformance_and_a_second_appends_nothing() {
    let Some(fixtures) = shared::base::testing::shared_data("fixtures") else {
        return;
    };
    let w = World::new();
    for (_, from, to, _) in FIXTURES {
        w.copy(&fixtures.join(from), &w.root().join(to));
    }
    // The subagent's sidecar sits next to it.
    let meta =
        "claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json";
    w.copy(
        &fixtures.join(meta),
        &w.root()
            .join("claude/projects/q/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json"),
    );

    let first = w.scan();
    for harness in ["claude", "codex", "gemini", "opencode"] {
        let mut want = [0u64; 8];
        let mut files = 0;
        for (_, _, _, counts) in FIXTURES.iter().filter(|f| f.0 == harness) {
            files += 1;
            for (w, c) in want.iter_mut().zip(counts) {
                *w += c;
            }
        }
        let got: Vec<u64> = KINDS.iter().map(|k| kind(&first, harness, k)).collect();
        assert_eq!(got, want[..7].to_vec(), "{harness}: {KINDS:?}");
        assert_eq!(count(&first, harness, "sessions"), want[0], "{harness}: sessions");
        assert_eq!(count(&first, harness, "diagnostics"), want[7], "{harness}: diagnostics");
        assert_eq!(
            (count(&first, harness, "files"), count(&first, harness, "files_read")),
            (files, files),
            "{harness}"
        );
    }
    let lsn = w.last_lsn();
    assert_eq!(first["last_lsn"].as_u64(), Some(lsn));
    // Every subagent and sidechain is linked to its parent.
    let events = w.tape_events();
    let started: Vec<&Value> = events.iter().filter(|e| e["k"] == "session.started").map(|e| &e["b"]).collect();
    let keys: HashSet<String> = started
        .iter()
        .map(|b| format!("{}:{}", b["harness"].as_str().unwrap(), b["harness_session_id"].as_str().unwrap()))
        .collect();
    for b in started.iter().filter(|b| b["harness_session_id"].as_str().unwrap().contains("/")) {
        let parent = b["parent"].as_str().unwrap_or_else(|| panic!("no parent: {b}"));
        assert!(keys.contains(parent), "parent {parent} of {b} was not ingested");
    }

    let second = w.scan();
    assert_eq!(second["events_appended"], 0, "{second:#}");
    assert_eq!(w.last_lsn(), lsn);

    // The projection rebuilt from the tapes alone keeps the cursors: still nothing new.
    w.ok(&["replay"]);
    assert_eq!(w.scan()["events_appended"], 0);
    assert_eq!(w.last_lsn(), lsn);
}

fn claude_file(w: &World) -> std::path::PathBuf {
    w.claude_projects().join("-home-dev-webapp/11111111-1111-4111-8111-111111111111.jsonl")
}

fn session_ids(w: &World, session: &str) -> Vec<String> {
    let out = w.ok(&["tapes", "show", session, "--json"]);
    out.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_owned()).collect()
}

const SESSION: &str = "claude:11111111-1111-4111-8111-111111111111";

#[test]
fn lines_appended_between_scans_are_read_and_a_partial_line_waits() {
    let all = std::fs::read(ingestor_data("claude_session.jsonl")).unwrap();
    let lines: Vec<&[u8]> = all.split_inclusive(|&b| b == b'\n').collect();
    let w = World::new();
    let file = claude_file(&w);
    w.write(&file, &[lines[..12].concat().as_slice(), &lines[12][..50]].concat());
    let first = w.scan();
    assert_eq!(count(&first, "claude", "diagnostics"), 0, "the partial line was left alone");
    let after_first = w.last_lsn();
    w.append(&file, &lines[12][50..]);
    w.append(&file, &lines[13..20].concat());
    let second = w.scan();
    assert!(count(&second, "claude", "events") > 0);
    assert_eq!(count(&second, "claude", "files_reread"), 0);
    assert!(w.last_lsn() > after_first);
    w.append(&file, &lines[20..].concat());
    w.scan();
    assert_eq!(w.scan()["events_appended"], 0);

    // The same events as one scan of the whole file.
    let once = World::new();
    once.write(&claude_file(&once), &all);
    once.scan();
    let got = session_ids(&w, SESSION);
    let unique: HashSet<&String> = got.iter().collect();
    assert_eq!(unique.len(), got.len(), "no event twice");
    // Idle ends are stamped with the session's last event, whose time for the
    // untimed title record is the file's; compare everything else.
    let content = |w: &World| -> BTreeSet<String> {
        w.tape_events()
            .iter()
            .filter(|e| e["s"] == SESSION && e["k"] != "session.ended")
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(content(&w), content(&once));
}

#[test]
fn rotated_and_rewritten_files_are_read_again_without_duplicates() {
    let all = std::fs::read(ingestor_data("claude_session.jsonl")).unwrap();
    let lines: Vec<&[u8]> = all.split_inclusive(|&b| b == b'\n').collect();
    let w = World::new();
    let file = claude_file(&w);
    w.write(&file, &lines[..15].concat());
    w.scan();
    // Rotation: the file moves aside, a new file at the path holds everything.
    std::fs::rename(&file, file.with_file_name("11111111-1111-4111-8111-111111111111.1.jsonl")).unwrap();
    w.write(&file, &all);
    let rotated = w.scan();
    assert_eq!(count(&rotated, "claude", "files_reread"), 1, "{rotated:#}");
    assert!(count(&rotated, "claude", "known") > 0);
    assert!(count(&rotated, "claude", "events") > 0, "the new lines were recorded");
    let ids = session_ids(&w, SESSION);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "no event twice after rotation");

    // Rewritten in place with another session's content.
    let other = std::fs::read(ingestor_data("claude_session_2.jsonl")).unwrap();
    std::fs::write(&file, &other).unwrap();
    let rewritten = w.scan();
    assert_eq!(count(&rewritten, "claude", "files_reread"), 1);
    assert_eq!(count(&rewritten, "claude", "sessions"), 1, "the new session was recorded");
    let all_ids: Vec<String> = w.tape_events().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(all_ids.iter().collect::<HashSet<_>>().len(), all_ids.len(), "no event twice in the log");
    assert_eq!(w.scan()["events_appended"], 0);

    // Truncated: read again from the start, nothing new, and settled afterwards.
    std::fs::write(&file, &other[..other.len() / 2]).unwrap();
    let truncated = w.scan();
    assert_eq!(count(&truncated, "claude", "files_reread"), 1);
    assert_eq!(count(&truncated, "claude", "events"), 0);
    assert_eq!(w.scan()["events_appended"], 0);
}

#[test]
fn planted_secrets_never_reach_the_tapes_or_the_database() {
    let w = World::new();
    w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(&w));
    w.copy(
        &ingestor_data("claude_session_2.jsonl"),
        &w.claude_projects().join("-home-dev-api/22222222-2222-4222-8222-222222222222.jsonl"),
    );
    let rollout = "rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl";
    w.copy(&ingestor_data(rollout), &w.codex_sessions().join("2026/01/02").join(rollout));
    let gemini = "gemini-session-2026-01-02T06-00-aaaaaaaa.jsonl";
    w.copy(&ingestor_data(gemini), &w.gemini_tmp().join("h/chats").join(gemini));
    w.copy(&ingestor_data("gemini-session-legacy.json"), &w.gemini_tmp().join("h/chats/session-legacy.json"));
    w.copy(&ingestor_data("opencode/storage"), &w.opencode().join("storage"));
    let summary = w.scan();
    for h in ["claude", "codex", "gemini", "opencode"] {
        assert!(count(&summary, h, "events") > 0, "{h} ingested");
    }
    w.ok(&["memory", "add", "Deploy with token ghp_PLANTEDabcdefghijklmnopqrstuvwxyz0123", "--type", "fact"]);

    let dump = w.tape_dump();
    for secret in ["PLANTED", "ENVCONTENT"] {
        let line = dump.lines().find(|l| l.contains(secret));
        assert!(line.is_none(), "{secret} reached a tape: {}", line.unwrap_or(""));
    }
    assert!(dump.contains("[REDACTED:"), "redaction markers are there");
    let db = w.database_bytes();
    assert!(!db.is_empty());
    for secret in ["planted", "envcontent"] {
        assert!(!contains_ignore_case(&db, secret), "{secret} reached the database");
    }
}

#[test]
fn memory_commands_round_trip_and_compact_removes_forgotten_text() {
    let w = World::new();
    // A project Engram knows (it recorded a session there), named api.
    let api = w.root().join("code/api");
    std::fs::create_dir_all(api.join(".git")).unwrap();
    session_in(&w, "a0a0a0a0-0000-4000-8000-000000000000", &api);
    w.scan();
    let id = w.ok(&[
        "memory",
        "add",
        "Always run the migrations with sqlx before tests.",
        "--type",
        "convention",
        "--project",
        "api",
        "--tag",
        "sqlx",
        "--importance",
        "0.8",
    ]);
    let id = id.trim().to_owned();
    assert!(id.starts_with("mem_"), "{id}");
    let other = w.ok(&["memory", "add", "The staging database is reset every night."]).trim().to_owned();

    let list = w.json(&["memory", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    let text = w.ok(&["memory", "list", "--project", "api"]);
    assert!(text.contains(&id) && !text.contains(&other), "{text}");

    w.ok(&["memory", "update", &id, "--importance", "0.9", "--tag", "sqlx", "--tag", "migrations"]);
    w.ok(&["memory", "pin", &id]);
    w.ok(&["memory", "feedback", &id, "1", "--reason", "saved a rerun", "--session", "claude:s1"]);
    w.ok(&["memory", "deprecate", &other, "--reason", "replaced", "--superseded-by", &id]);
    let shown = w.json(&["memory", "show", &id, "--json"]);
    assert_eq!(shown["importance"], 0.9);
    assert_eq!(shown["pinned"], true);
    assert_eq!(shown["tags"], serde_json::json!(["migrations", "sqlx"]));
    assert_eq!(shown["feedback"][0]["reason"], "saved a rerun");
    let text = w.ok(&["memory", "show", &other]);
    assert!(text.contains("deprecated") && text.contains(&id), "{text}");

    // Unknown ids: an error, and nothing appended.
    let lsn = w.last_lsn();
    for args in [
        vec!["memory", "pin", "mem_NOPE"],
        vec!["memory", "forget", "mem_NOPE"],
        vec!["memory", "update", "mem_NOPE", "--text", "x y z"],
        vec!["memory", "feedback", "mem_NOPE", "0.5"],
        vec!["memory", "deprecate", &id, "--superseded-by", "mem_NOPE"],
        vec!["memory", "show", "mem_NOPE"],
    ] {
        let out = w.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no memory with id mem_NOPE") && err.lines().count() == 1, "{args:?}: {err}");
    }
    assert_eq!(w.last_lsn(), lsn);

    w.ok(&["memory", "forget", &id, "--reason", "wrong"]);
    let list = w.json(&["memory", "list", "--json"]);
    assert!(list.as_array().unwrap().iter().all(|m| m["id"] != id.as_str()), "forgotten memories are hidden");
    assert!(w.tape_dump().contains("Always run the migrations"), "still on tape before compaction");
    let report = w.ok(&["compact"]);
    assert!(report.contains("1 forgotten"), "{report}");
    let dump = w.tape_dump();
    assert!(!dump.contains("Always run the migrations"), "the text is gone from the tapes");
    assert!(dump.contains(&other), "other memories are kept");
    assert!(!contains_ignore_case(&w.database_bytes(), "always run the migrations"), "and from the database");
    assert_eq!(w.ok(&["tapes", "verify"]).lines().count(), 1);
}

#[test]
fn a_flipped_byte_is_named_by_verify_and_replay_refuses_changing_nothing() {
    let w = World::new();
    w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(&w));
    w.scan();
    w.ok(&["compact"]); // seals the active segment
    let segs = w.json(&["tapes", "--json"]);
    let sealed = segs.as_array().unwrap().iter().find(|s| s["sealed"] == true).unwrap();
    let path = w.home().join("tapes").join(sealed["name"].as_str().unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();

    let out = w.run(&["tapes", "verify"]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{}:", path.display());
    assert!(stdout.lines().count() >= 1 && stdout.lines().all(|l| l.starts_with(&prefix)), "{stdout}");
    assert!(stdout.contains("checksum mismatch"), "{stdout}");
    let offsets: Vec<u64> =
        stdout.lines().map(|l| l[prefix.len()..].split(':').next().unwrap().parse().unwrap()).collect();
    assert!(offsets.iter().any(|&o| o > 0 && o <= at as u64), "the damaged chunk's offset: {stdout}");

    let db_link = std::fs::read_link(w.home().join("engram.db")).unwrap();
    let db_files = || {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(w.home().join("db"))
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        v.sort();
        v
    };
    let before = db_files();
    let out = w.run(&["replay"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("replay refused") && err.contains(&path.display().to_string()), "{err}");
    assert_eq!(std::fs::read_link(w.home().join("engram.db")).unwrap(), db_link);
    assert_eq!(db_files(), before, "the database is unchanged");
}

#[test]
fn paths_harness_filter_and_external_extractor() {
    let w = World::new();
    let file = w.root().join("elsewhere/11111111-1111-4111-8111-111111111111.jsonl");
    w.copy(&ingestor_data("claude_session.jsonl"), &file);
    let rollout = "rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl";
    w.copy(&ingestor_data(rollout), &w.codex_sessions().join("2026/01/02").join(rollout));
    // The external extractor answers with one memory about the last turn,
    // and a second run times out: neither blocks ingest.
    let script = w.root().join("extractor.sh");
    w.write(
        &script,
        br#"#!/bin/sh
cat > /dev/null
if [ -e "$0.done" ]; then sleep 30; fi
touch "$0.done"
echo '{"memories":[{"text":"Deploys of the webapp happen from the main branch only.","type":"fact","importance":0.6,"tags":["deploy"]}]}'
"#,
    );
    let config = format!("[extractor]\ncommand = [\"sh\", \"{}\"]\ntimeout_ms = 1000\n", script.display());
    w.write(&w.home().join("config.toml"), config.as_bytes());

    let s = w.json(&["scan", "--json", "--harness", "claude", "--path", file.to_str().unwrap()]);
    assert_eq!(count(&s, "claude", "files_read"), 1);
    assert_eq!(count(&s, "codex", "files"), 0, "--path replaces the standard locations");
    assert_eq!(s["extractor_runs"], 2, "the main session and its sidechain");
    assert_eq!(s["extractor_failures"], 1, "{s:#}");
    let list = w.json(&["memory", "list", "--json"]);
    let external: Vec<&Value> = list.as_array().unwrap().iter().filter(|m| m["source"] == "external").collect();
    assert_eq!(external.len(), 1, "{list:#}");
    assert!(external[0]["content"].as_str().unwrap().contains("main branch"));
    assert!(list.as_array().unwrap().iter().any(|m| m["source"] == "extracted"), "deterministic ones too");

    // Standard locations, codex only.
    std::fs::remove_file(w.home().join("config.toml")).unwrap();
    let s = w.json(&["scan", "--json", "--harness", "codex"]);
    assert_eq!(count(&s, "codex", "files_read"), 1);
    assert_eq!(count(&s, "claude", "files"), 0);
    let out = w.run(&["scan", "--harness", "windsurf"]);
    assert_eq!(out.status.code(), Some(2));
    // Cursor's sessions are read from SpecStory exports: none here.
    let s = w.json(&["scan", "--json", "--harness", "cursor"]);
    assert_eq!(s["events_appended"], 0, "{s:#}");
}

#[test]
fn a_closed_stdout_pipe_is_not_an_error_and_pipes_get_no_progress() {
    let w = World::new();
    w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(&w));
    let out = w.run(&["scan"]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "quiet in pipes: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("harness") && text.contains("total"), "{text}");
    // More output than a pipe holds, read one line, then hang up.
    let mut big = String::new();
    for i in 0..2000 {
        big.push_str(&format!(
            "{{\"type\":\"user\",\"uuid\":\"b{i}\",\"sessionId\":\"big\",\"timestamp\":\"2026-01-02T03:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"Line {i} of a long session that fills the pipe.\"}}}}\n"
        ));
    }
    w.write(&w.claude_projects().join("p/big.jsonl"), big.as_bytes());
    w.ok(&["scan"]);
    let mut child =
        w.cmd(&["tapes", "show", "1", "--json"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with('{'));
    assert!(out.status.success(), "{:?}", out.status);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn tape_files(w: &World) -> BTreeSet<String> {
    std::fs::read_dir(w.home().join("tapes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Issue 21, item 1: a byte flipped in the last (acknowledged) frame of the
/// active segment is damage: verify fails and nothing is cut, until `tapes
/// repair` keeps the bytes in quarantine and the log goes on.
#[test]
fn a_damaged_acknowledged_frame_fails_verify_until_repaired() {
    let w = World::new();
    w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(&w));
    w.scan();
    let active = w.home().join("tapes").join(tape_files(&w).into_iter().find(|n| n.ends_with(".tape")).unwrap());
    let mut bytes = std::fs::read(&active).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0x04;
    std::fs::write(&active, &bytes).unwrap();

    for _ in 0..2 {
        let out = w.run(&["tapes", "verify"]);
        assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stdout).contains("acknowledged"));
        assert_eq!(std::fs::read(&active).unwrap(), bytes, "verify cut nothing");
    }
    assert_eq!(w.run(&["memory", "list"]).status.code(), Some(3), "writers refuse a damaged log");

    let repaired = w.ok(&["tapes", "repair"]);
    assert!(repaired.contains("tape.lost") && repaired.contains("quarantine"), "{repaired}");
    let verified = w.ok(&["tapes", "verify"]);
    assert!(verified.starts_with("ok:") && verified.contains("quarantine"), "{verified}");
    let kept: Vec<_> = std::fs::read_dir(w.home().join("tapes/quarantine")).unwrap().collect();
    assert_eq!(kept.len(), 1);
    w.ok(&["memory", "add", "The log goes on after a repair."]);
    w.ok(&["replay"]);
}

/// Issue 21, items 2 and 3: a segment copied in from another data home is
/// reported and never deleted; a deleted first segment is reported, and
/// replay refuses.
#[test]
fn verify_keeps_a_stranger_segment_and_names_a_missing_one() {
    let (a, b) = (World::new(), World::new());
    for w in [&a, &b] {
        w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(w));
        w.scan();
        w.ok(&["compact"]);
    }
    let first = |w: &World| tape_files(w).into_iter().find(|n| n.starts_with("0000000001-")).unwrap();
    b.ok(&["memory", "add", "Only in the second data home."]);
    b.ok(&["compact"]);
    let theirs = tape_files(&b).into_iter().rfind(|n| n.ends_with(".seg")).unwrap();
    std::fs::copy(b.home().join("tapes").join(&theirs), a.home().join("tapes").join(&theirs)).unwrap();
    let before = tape_files(&a);
    let out = a.run(&["tapes", "verify"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&theirs), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(tape_files(&a), before, "nothing was deleted");
    std::fs::remove_file(a.home().join("tapes").join(&theirs)).unwrap();
    a.ok(&["tapes", "verify"]);

    std::fs::remove_file(a.home().join("tapes").join(first(&a))).unwrap();
    let out = a.run(&["tapes", "verify"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing"), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(a.run(&["replay"]).status.code(), Some(3));
}

/// The words of `text`, lower-cased, one space between: what a text is
/// once case, spacing and punctuation are set aside.
fn normalized(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Issue 15 item 3 and issue 21 item 7: a forgotten memory is never learned
/// again from any session, and `compact` removes its text from every event
/// that holds it, the session content it was extracted from included (where
/// it was typed in other case and punctuation than the tidied memory).
#[test]
fn a_forgotten_memory_is_never_learned_again_and_compact_erases_its_source() {
    let w = World::new();
    w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(&w));
    w.scan();
    let list = w.json(&["memory", "list", "--json"]);
    let learned: Vec<&Value> = list.as_array().unwrap().iter().filter(|m| m["source"] == "extracted").collect();
    let victim = learned.iter().find(|m| normalized(m["content"].as_str().unwrap()).split(' ').count() >= 4).unwrap();
    let (id, text) = (victim["id"].as_str().unwrap().to_owned(), victim["content"].as_str().unwrap().to_owned());
    let words = normalized(&text);
    assert!(normalized(&w.tape_dump()).matches(&words).count() >= 2, "the memory and its source: {text}");
    w.ok(&["memory", "forget", &id]);

    let relearned = |w: &World| {
        let list = w.json(&["memory", "list", "--json"]);
        list.as_array().unwrap().iter().filter(|m| normalized(m["content"].as_str().unwrap()) == words).count()
    };
    // The same session under another id, and the same file read again.
    let copy = std::fs::read_to_string(ingestor_data("claude_session.jsonl"))
        .unwrap()
        .replace("11111111-1111-4111-8111-111111111111", "77777777-7777-4777-8777-777777777777");
    w.write(&w.claude_projects().join("-home-dev-webapp/77777777-7777-4777-8777-777777777777.jsonl"), copy.as_bytes());
    w.scan();
    assert_eq!(relearned(&w), 0, "learned again from another session: {text}");
    let out = w.run(&["memory", "add", &text.to_uppercase()]);
    assert_eq!(out.status.code(), Some(2), "an explicit add of a forgotten text is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("forgotten"));

    let report = w.ok(&["compact"]);
    assert!(report.contains("1 forgotten"), "{report}");
    let dump = w.tape_dump();
    assert!(!normalized(&dump).contains(&words), "the text survives in the tapes: {text}");
    assert!(dump.contains("[forgotten]"), "its places are marked");
    let db = w.database_bytes();
    assert!(!contains_ignore_case(&db, &text[..text.len().min(24)]), "and in the database");
    assert!(!w.tape_dump().contains(&text));
    // After compaction and replay, still never learned again.
    std::fs::remove_file(w.claude_projects().join("-home-dev-webapp/77777777-7777-4777-8777-777777777777.jsonl"))
        .unwrap();
    let again = copy.replace("77777777-7777-4777-8777-777777777777", "88888888-8888-4888-8888-888888888888");
    w.write(&w.claude_projects().join("-home-dev-webapp/88888888-8888-4888-8888-888888888888.jsonl"), again.as_bytes());
    w.ok(&["replay"]);
    w.scan();
    assert_eq!(relearned(&w), 0, "learned again after compaction: {text}");
    w.ok(&["tapes", "verify"]);
}

/// Issue 15 item 7, as a new user meets it: every read command on an empty
/// data home says so and prints the commands that fill it (as they run:
/// the binaries by full path when not on `PATH`); an error names its cause
/// once; `memory add` inside a project (a subfolder of a repository
/// included) files the memory under that project, found by its marker,
/// and under nothing outside one; a knowledge type lists every kind under it
/// and the listing shows both.
#[test]
fn a_new_user_is_told_what_to_do_and_memory_add_defaults_to_the_project() {
    let w = World::new();
    let ingestor = common::ingestor_bin().display().to_string();
    let empty = |what: &str, out: &str| {
        assert!(out.contains("no memories yet in") && out.contains(&w.home().display().to_string()), "{what}: {out}");
        assert!(out.contains(&format!("{ingestor} quickstart")), "{what} prints the command as it runs: {out}");
    };
    empty("memory list", &w.ok(&["memory", "list"]));
    let search = tests::success_stdout("search", w.scorer(&["search", "npm test"]).output().unwrap());
    empty("search", &search);
    let context = tests::success_stdout("context", w.scorer(&["context", "--cwd"]).arg(w.root()).output().unwrap());
    empty("context", &context);
    let json = w.ok(&["memory", "list", "--json"]);
    assert_eq!(json.trim(), "[]", "JSON stays JSON");

    // An OS error once, wherever it is printed.
    let file = w.root().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let bad_home = file.join("home");
    for (mut cmd, what) in [
        (w.cmd(&["memory", "list"]), "memory list"),
        (w.cmd(&["scan", "--path", "/nonexistent/engram-test.jsonl"]), "scan"),
        (w.scorer(&["search", "x"]), "search"),
    ] {
        let out = cmd.env("ENGRAM_HOME", &bad_home).output().unwrap();
        assert!(!out.status.success(), "{what}");
        let err = String::from_utf8_lossy(&out.stderr);
        let cause = ["Not a directory", "No such file or directory"].into_iter().find(|c| err.contains(c));
        let cause = cause.unwrap_or_else(|| panic!("{what} names its cause: {err}"));
        assert_eq!(err.matches(cause).count(), 1, "{what}: the cause once: {err}");
    }

    // A repository with a package in a subfolder, and a folder outside any project.
    let repo = w.root().join("code/acme-web");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join(".git/config"), "[remote \"origin\"]\n\turl = git@github.com:acme/acme-web.git\n")
        .unwrap();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(repo.join("packages/ui")).unwrap();
    std::fs::write(repo.join("packages/ui/package.json"), r#"{"name": "@acme/ui"}"#).unwrap();
    let loose = w.root().join("notes");
    std::fs::create_dir_all(&loose).unwrap();
    let add = |dir: &std::path::Path, args: &[&str]| {
        let mut all = vec!["memory", "add"];
        all.extend_from_slice(args);
        tests::success_stdout(&all, w.cmd(&all).current_dir(dir).output().unwrap()).trim().to_owned()
    };
    // Both repositories are known: Engram recorded a session in each.
    let other = w.root().join("code/elsewhere");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    session_in(&w, "b1b1b1b1-0000-4000-8000-000000000000", &repo);
    session_in(&w, "c2c2c2c2-0000-4000-8000-000000000000", &other);
    w.scan();
    let in_package =
        add(&repo.join("packages/ui"), &["--type", "gotcha", "The ui build needs the tokens package built first."]);
    let outside = add(&loose, &["A note that belongs to no project in particular."]);
    let given = add(&repo, &["--project", "elsewhere", "--type", "convention", "Name branches after the ticket."]);
    std::fs::create_dir_all(w.root().join(".claude")).unwrap();
    let at_home = add(w.root(), &["A note typed in the home folder, whose .claude is no project."]);
    let list: Vec<Value> = serde_json::from_str(&w.ok(&["memory", "list", "--json"])).unwrap();
    let project = |id: &str| list.iter().find(|m| m["id"] == id).unwrap()["project"].clone();
    assert_eq!(project(&in_package), "github.com/acme/acme-web", "a package's folder maps to its repository");
    assert_eq!(project(&outside), Value::Null, "outside any project: none");
    let elsewhere_key = w
        .store()
        .conn()
        .query_row("SELECT key FROM projects WHERE name = 'elsewhere'", [], |r| r.get::<_, String>(0))
        .unwrap();
    assert_eq!(project(&given), elsewhere_key.as_str(), "--project wins");
    assert_eq!(project(&at_home), Value::Null, "the home folder is no project");
    let by_name = w.ok(&["memory", "list", "--project", "acme-web"]);
    assert!(by_name.contains(&in_package) && !by_name.contains(&given), "the project is known by its name: {by_name}");

    // Knowledge types: `issue` lists the gotcha, `pattern` the convention, and the listing shows both types.
    let issues = w.ok(&["memory", "list", "--type", "issue"]);
    assert!(issues.contains(&in_package) && issues.contains("issue/gotcha"), "{issues}");
    assert!(!issues.contains(&given) && !issues.contains(&outside) && !issues.contains(&at_home), "{issues}");
    assert!(w.ok(&["memory", "list", "--type", "pattern"]).contains(&given));
    assert!(!w.ok(&["memory", "list", "--type", "gotcha"]).contains(&given));
    let none = w.ok(&["memory", "list", "--type", "discovery"]);
    assert_eq!(none.trim(), "no memory matches these filters (4 memories in all)");
    let bad = w.run(&["memory", "list", "--type", "poem"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("unknown memory type"));
}

/// A data home with sealed segments 1 to 3 (a memory each) and an active
/// segment 4; returns the world.
fn three_sealed_segments() -> World {
    let w = World::new();
    for i in 1..=3 {
        w.ok(&["memory", "add", "--no-check", &format!("Lesson number {i} about the release process.")]);
        w.ok(&["compact"]); // seals the active segment
    }
    w.ok(&["memory", "add", "--no-check", "A lesson in the active segment."]);
    let seals = tape_files(&w).into_iter().filter(|n| n.ends_with(".seg")).count();
    assert_eq!(seals, 3, "{:?}", tape_files(&w));
    w
}

/// `rm tapes/0000000002-*.seg; tapes repair`: the repair used to quarantine
/// an intact frame of the active segment, claim success while verify still
/// failed, leave a log every command refused, and then say "nothing to
/// repair". The missing segment's LSNs are now recorded as lost, nothing
/// intact is cut, and the log verifies and goes on.
#[test]
fn repairing_a_missing_middle_segment_leaves_a_log_that_verifies() {
    let w = three_sealed_segments();
    let second = tape_files(&w).into_iter().find(|n| n.starts_with("0000000002-")).unwrap();
    std::fs::remove_file(w.home().join("tapes").join(&second)).unwrap();
    assert_eq!(w.run(&["tapes", "verify"]).status.code(), Some(3));

    let out = w.run(&["tapes", "repair"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("missing") && text.contains("passes"), "{text}");
    assert!(!w.home().join("tapes/quarantine").exists(), "no intact frame was quarantined");
    let verified = w.ok(&["tapes", "verify"]);
    assert!(verified.starts_with("ok:"), "{verified}");
    let lost = w.tape_events().into_iter().filter(|e| e["k"] == "tape.lost").count();
    assert!(lost >= 1, "the missing range is recorded as lost");
    let listed = w.ok(&["memory", "list"]);
    assert!(listed.contains("active segment"), "{listed}");
    w.ok(&["memory", "add", "--no-check", "The log goes on after the repair."]);
    w.ok(&["replay"]);
    assert!(w.ok(&["tapes", "repair"]).contains("nothing to repair"));
}

/// A sealed segment renamed (its name no longer its blake3): verify failed
/// and repair said "nothing to repair". Repair renames it back.
#[test]
fn repair_renames_a_misnamed_segment_that_verify_rejects() {
    let w = three_sealed_segments();
    let first = tape_files(&w).into_iter().find(|n| n.starts_with("0000000001-")).unwrap();
    let wrong = format!("0000000001-{}.seg", "a".repeat(64));
    std::fs::rename(w.home().join("tapes").join(&first), w.home().join("tapes").join(&wrong)).unwrap();
    assert_eq!(w.run(&["tapes", "verify"]).status.code(), Some(3));
    let repaired = w.ok(&["tapes", "repair"]);
    assert!(repaired.contains("renamed") && !repaired.contains("nothing to repair"), "{repaired}");
    assert!(tape_files(&w).contains(&first));
    w.ok(&["tapes", "verify"]);
}

/// A damaged first frame of the active segment: `tapes list` showed "0
/// events" and exited 0, and `memory add` appended behind the damage
/// without a word. Both now refuse, pointing at verify and repair.
#[test]
fn a_damaged_first_frame_fails_list_and_writers_until_repaired() {
    let w = World::new();
    w.copy(&ingestor_data("claude_session.jsonl"), &claude_file(&w));
    w.scan();
    let active = w.home().join("tapes").join(tape_files(&w).into_iter().find(|n| n.ends_with(".tape")).unwrap());
    let mut bytes = std::fs::read(&active).unwrap();
    let first_payload = shared::storage::tape::ACTIVE_HEADER + shared::storage::tape::FRAME_HEADER;
    bytes[first_payload + 5] ^= 0x20;
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&active, &bytes).unwrap();

    let list = w.run(&["tapes", "list"]);
    assert_eq!(list.status.code(), Some(3), "{}", String::from_utf8_lossy(&list.stdout));
    let err = String::from_utf8_lossy(&list.stderr);
    assert!(err.contains("tapes verify") && err.contains("tapes repair"), "{err}");
    let add = w.run(&["memory", "add", "--no-check", "Must not land behind the damage."]);
    assert_eq!(add.status.code(), Some(3), "{}", String::from_utf8_lossy(&add.stdout));
    assert!(String::from_utf8_lossy(&add.stderr).contains("tapes repair"));
    assert_eq!(std::fs::read(&active).unwrap(), bytes, "nothing appended, nothing cut");

    let repaired = w.ok(&["tapes", "repair"]);
    assert!(repaired.contains("tape.lost"), "{repaired}");
    w.ok(&["tapes", "verify"]);
    w.ok(&["tapes", "list"]);
    w.ok(&["memory", "add", "--no-check", "After the repair."]);
}

/// Every file of the data home, segments decompressed, and the tapes as
/// `tapes show` prints them: where a forgotten text must not survive.
fn everything_stored(w: &World) -> Vec<u8> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.is_dir() { walk(&p, out) } else { out.push(p) }
        }
    }
    let mut files = Vec::new();
    walk(&w.home(), &mut files);
    let mut all = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        if f.extension().is_some_and(|x| x == "seg") {
            for i in 0..bytes.len().saturating_sub(3) {
                if bytes[i..i + 4] == [0x28, 0xb5, 0x2f, 0xfd]
                    && let Ok(d) = zstd::stream::decode_all(&bytes[i..])
                {
                    all.extend(d);
                }
            }
        }
        all.extend(bytes);
    }
    all.extend(w.tape_dump().into_bytes());
    all
}

/// `compact` erases a forgotten text from every stored query: a search for
/// it, a prompt that repeated it, a query cut inside it (a recorded query
/// keeps its first 2,000 bytes), and a ranking the read-side hooks spooled
/// that no writer had appended yet.
#[test]
fn compact_erases_a_forgotten_text_from_every_stored_query() {
    let w = World::new();
    let text = "The quokka deploy key rotates every ninth moon under the zebra vault";
    let id = w.ok(&["memory", "add", text, "--type", "fact"]).trim().to_owned();
    let search = |q: &str| tests::success_stdout("search", w.scorer(&["search", q]).output().unwrap());
    search(text);
    search(&format!("{}{text} and more", "filler ".repeat(280)));
    let input = serde_json::json!({
        "session_id": "forget-q", "transcript_path": "/nonexistent.jsonl", "cwd": w.root(),
        "hook_event_name": "UserPromptSubmit", "prompt": format!("why does {text} matter"),
    });
    let out = w.hook(w.scorer(&["hook", "user-prompt-submit"]), input.to_string().as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    w.wait_for_recorder();
    use shared::storage::event::{Body, Event, RankingServed};
    let spooled = Event::new(
        shared::base::time::Ts::now(),
        "engram-scorer",
        Some("claude:forget-q".into()),
        Body::RankingServed(RankingServed {
            ranking_id: "rk_spooled".into(),
            trigger: "prompt".into(),
            query: format!("and again: {text}"),
            ..RankingServed::default()
        }),
    );
    shared::domain::hook::spool_unsynced(&shared::base::paths::Paths::at(w.home()), &[spooled]).unwrap();
    let queries = w.count("SELECT COUNT(*) FROM rankings WHERE query LIKE '%quokka deploy key%'");
    assert!(queries >= 3, "the searches and the prompt recorded their queries: {queries}");
    w.ok(&["memory", "forget", &id]);
    w.ok(&["compact"]);
    let stored = everything_stored(&w);
    for needle in ["quokka deploy key", "zebra vault", "ninth moon"] {
        assert!(!contains_ignore_case(&stored, needle), "{needle:?} survives compaction");
    }
    assert!(w.tape_dump().contains("[forgotten]"));
    w.ok(&["tapes", "verify"]);
}

/// One tag limit for every writer: the CLI refuses more than 32 tags, or a
/// tag over 64 characters, as MCP and the REST API do; nothing is written.
#[test]
fn memory_add_and_update_refuse_too_many_or_too_long_tags() {
    let w = World::new();
    let id = w.ok(&["memory", "add", "Tags are limited for every writer.", "--tag", "a"]).trim().to_owned();
    let lsn = w.last_lsn();
    let with_tags = |base: &[&str], tags: &[String]| {
        let mut args: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
        for t in tags {
            args.push("--tag".into());
            args.push(t.clone());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        w.run(&args)
    };
    let many: Vec<String> = (0..33).map(|i| format!("t{i}")).collect();
    for out in [
        with_tags(&["memory", "add", "Too many tags on this one."], &many),
        with_tags(&["memory", "add", "A tag too long on this one."], &["x".repeat(65)]),
        with_tags(&["memory", "update", &id], &many),
    ] {
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("at most 32") || err.contains("longer than 64"), "{err}");
    }
    assert_eq!(w.last_lsn(), lsn, "nothing was written");
    let out = with_tags(&["memory", "update", &id], &many[..32]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(w.json(&["memory", "show", &id, "--json"])["tags"].as_array().unwrap().len(), 32);
}

/// A Claude Code session recorded in `cwd`, so that its project becomes known.
fn session_in(w: &World, id: &str, cwd: &std::path::Path) {
    let base = serde_json::json!({"sessionId": id, "cwd": cwd, "version": "2.1.90", "userType": "external",
        "type": "user", "uuid": format!("u-{id}"), "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {"role": "user", "content": "hello"}});
    w.write(&w.claude_projects().join(format!("-p-{id}/{id}.jsonl")), format!("{base}\n").as_bytes());
}

/// `memory add` without `--project` files the memory under the current
/// directory's project only when Engram knows that project (it recorded a
/// session there), else as a global memory, and says which on stderr;
/// `--project` names a known project exactly (its key, or a name only one
/// has): an unknown or ambiguous name is an error listing the candidates.
#[test]
fn memory_add_files_under_a_known_project_only_and_says_which() {
    let w = World::new();
    let repo = |path: &str, remote: Option<&str>| {
        let dir = w.root().join(path);
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        if let Some(url) = remote {
            std::fs::write(dir.join(".git/config"), format!("[remote \"origin\"]\n\turl = {url}\n")).unwrap();
        }
        dir
    };
    let acme = repo("code/acme-web", Some("git@github.com:acme/acme-web.git"));
    let demo_a = repo("a/Demo", None);
    let demo_b = repo("b/Demo", None);
    let unknown = repo("code/never-seen", None);
    std::fs::create_dir_all(acme.join("packages/ui")).unwrap();
    for (id, dir) in [("s-acme", &acme), ("s-demo-a", &demo_a), ("s-demo-b", &demo_b)] {
        session_in(&w, &format!("{id}-0000-4000-8000-000000000000"), dir);
    }
    w.scan();
    let add = |dir: &std::path::Path, args: &[&str]| {
        let mut all = vec!["memory", "add"];
        all.extend_from_slice(args);
        w.cmd(&all).current_dir(dir).output().unwrap()
    };
    let project_of = |id: &str| w.json(&["memory", "show", id, "--json"])["project"].clone();
    // In a known project (a subfolder of it): that project, said on stderr.
    let out = add(&acme.join("packages/ui"), &["The ui build needs the tokens package first."]);
    let id = tests::success_stdout("add in acme", out.clone()).trim().to_owned();
    assert_eq!(project_of(&id), "github.com/acme/acme-web");
    assert!(String::from_utf8_lossy(&out.stderr).contains("project: acme-web (github.com/acme/acme-web)"));
    // In a repository Engram never recorded a session in: a global memory, said so.
    let out = add(&unknown, &["A note typed in some repository."]);
    let id = tests::success_stdout("add in an unknown repo", out.clone()).trim().to_owned();
    assert_eq!(project_of(&id), Value::Null, "not filed under an unknown directory's project");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no project: a global memory"), "{out:?}");
    // By a name only one project has, or by key.
    let out = add(w.root(), &["--project", "acme-web", "Branches are named after the ticket."]);
    let id = tests::success_stdout("add by name", out).trim().to_owned();
    assert_eq!(project_of(&id), "github.com/acme/acme-web");
    let key_a: String =
        w.store().conn().query_row("SELECT key FROM projects WHERE root LIKE '%/a/Demo'", [], |r| r.get(0)).unwrap();
    let out = add(w.root(), &["--project", &key_a, "Demo A runs on port 3000."]);
    let id = tests::success_stdout("add by key", out).trim().to_owned();
    assert_eq!(project_of(&id), key_a.as_str());
    // Ambiguous or unknown: an error listing the candidates; nothing written.
    let lsn = w.last_lsn();
    let out = add(w.root(), &["--project", "Demo", "Which demo?"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ambiguous") && err.contains("/a/Demo") && err.contains("/b/Demo"), "{err}");
    let out = add(w.root(), &["--project", "elsewhere", "Where?"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a known project") && err.contains("github.com/acme/acme-web"), "{err}");
    let out = w.run(&["memory", "update", &id, "--project", "Demo"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(w.last_lsn(), lsn, "nothing was written");
    // The help says what happens without --project.
    let help = w.ok(&["memory", "add", "--help"]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("(a global memory)") && help.contains("printed on stderr"), "{help}");
}
