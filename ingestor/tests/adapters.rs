//! Adapter behaviour on fixtures written for these tests (`tests/data/`):
//! incomplete last lines, resuming at any offset, stable ids, redaction of
//! planted secrets in every adapter, path exclusion, and the per-harness
//! mappings (ranges, hashes, joins, origins).

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ingestor::adapter::{ParseContext, ParseOutput, content_hash};
use ingestor::adapters::{self, opencode};
use ingestor::discover::SourceKind;
use ingestor::redact::{EXCLUDED_MARKER, Privacy};
use proptest::prelude::*;
use serde_json::Value;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event};

const CLAUDE: &str = "claude_session.jsonl";
const CODEX: &str = "rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl";
const GEMINI: &str = "gemini-session-2026-01-02T06-00-aaaaaaaa.jsonl";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).expect("fixture")
}

/// Parses `bytes` as a file growing in chunks ending at `cuts` (then the end),
/// carrying the resume state and offset like a scanner would.
fn parse_growing(kind: SourceKind, path: &str, all: &[u8], cuts: &[usize]) -> Vec<ParseOutput> {
    let privacy = Privacy::default();
    let ctx = ParseContext::new(path, Ts(0), &privacy);
    let mut state = adapters::initial_state(kind, &ctx, all).expect("jsonl");
    let mut offset = 0usize;
    let mut outs = Vec::new();
    for &end in cuts.iter().chain(std::iter::once(&all.len())) {
        let end = end.min(all.len());
        if end < offset {
            continue;
        }
        let out = adapters::parse_chunk(kind, &ctx, &all[offset..end], offset as u64, &state).expect("parse");
        offset += out.consumed as usize;
        state = out.state.clone();
        outs.push(out);
    }
    outs
}

fn full(kind: SourceKind, name: &str) -> ParseOutput {
    let path = data(name).display().to_string();
    parse_growing(kind, &path, &bytes(name), &[]).remove(0)
}

fn json_of(events: &[Event]) -> String {
    events.iter().map(|e| String::from_utf8(e.to_json()).expect("utf8")).collect::<Vec<_>>().join("\n")
}

/// Last event of each id, in the position of that last event.
fn last_write_wins(events: Vec<Event>) -> Vec<Event> {
    let mut seen = HashSet::new();
    let mut out: Vec<Event> = events.into_iter().rev().filter(|e| seen.insert(e.id.clone())).collect();
    out.reverse();
    out
}

#[test]
fn an_incomplete_last_line_is_left_for_the_next_call() {
    for (kind, name) in
        [(SourceKind::ClaudeTranscript, CLAUDE), (SourceKind::CodexRollout, CODEX), (SourceKind::GeminiJsonl, GEMINI)]
    {
        let all = bytes(name);
        let last_start = all[..all.len() - 1].iter().rposition(|&b| b == b'\n').expect("lines") + 1;
        let cut = all.len() - 5; // inside the last line
        let outs = parse_growing(kind, name, &all, &[cut]);
        assert_eq!(outs[0].consumed as usize, last_start, "{name}");
        assert_eq!(outs[1].consumed as usize, all.len() - last_start, "{name}");
        let whole = full(kind, name);
        let lines_seen: usize = outs.iter().map(|o| o.lines.len()).sum();
        assert_eq!(lines_seen, whole.lines.len());
        // Nothing more to read: zero events, zero bytes.
        let privacy = Privacy::default();
        let ctx = ParseContext::new(name, Ts(0), &privacy);
        let again = adapters::parse_chunk(kind, &ctx, &[], all.len() as u64, &outs[1].state).expect("parse");
        assert!(again.events.is_empty() && again.consumed == 0);
    }
}

#[test]
fn appending_to_a_live_file_between_parses_yields_the_full_parse() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("11111111-1111-4111-8111-111111111111.jsonl");
    let all = bytes(CLAUDE);
    let privacy = Privacy::default();
    let text = path.display().to_string();
    let ctx = ParseContext::new(&text, Ts(0), &privacy);
    let mut events = Vec::new();
    let mut offset = 0usize;
    let mut state = Value::Null;
    for end in [700, 701, 5_000, 9_999, all.len()] {
        std::fs::write(&path, &all[..end]).expect("write");
        let now = std::fs::read(&path).expect("read");
        if state.is_null() {
            state = adapters::initial_state(SourceKind::ClaudeTranscript, &ctx, &now).expect("jsonl");
        }
        let out = adapters::parse_chunk(SourceKind::ClaudeTranscript, &ctx, &now[offset..], offset as u64, &state)
            .expect("parse");
        offset += out.consumed as usize;
        state = out.state;
        events.extend(out.events);
    }
    let whole = full(SourceKind::ClaudeTranscript, CLAUDE);
    assert_eq!(
        events.iter().map(|e| &e.id).collect::<Vec<_>>(),
        whole.events.iter().map(|e| &e.id).collect::<Vec<_>>()
    );
}

fn check_split_equivalence(kind: SourceKind, name: &str, cuts: &mut [usize]) {
    let all = bytes(name);
    cuts.sort_unstable();
    let outs = parse_growing(kind, name, &all, cuts);
    let split: Vec<Event> = outs.iter().flat_map(|o| o.events.clone()).collect();
    let split_diags: usize = outs.iter().map(|o| o.diagnostics.len()).sum();
    let whole = parse_growing(kind, name, &all, &[]).remove(0);
    if kind == SourceKind::GeminiJsonl {
        assert_eq!(last_write_wins(split), whole.events);
    } else {
        assert_eq!(split, whole.events);
    }
    assert_eq!(split_diags, whole.diagnostics.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn resuming_anywhere_equals_one_full_parse_claude(mut cuts in proptest::collection::vec(0usize..9_000, 0..6)) {
        check_split_equivalence(SourceKind::ClaudeTranscript, CLAUDE, &mut cuts);
    }

    #[test]
    fn resuming_anywhere_equals_one_full_parse_codex(mut cuts in proptest::collection::vec(0usize..9_000, 0..6)) {
        check_split_equivalence(SourceKind::CodexRollout, CODEX, &mut cuts);
    }

    #[test]
    fn resuming_anywhere_equals_one_full_parse_gemini(mut cuts in proptest::collection::vec(0usize..2_500, 0..5)) {
        check_split_equivalence(SourceKind::GeminiJsonl, GEMINI, &mut cuts);
    }
}

#[test]
fn resuming_at_every_line_of_a_real_transcript() {
    let Some(path) = shared::base::testing::shared_data("fixtures/claude/ccv-1.0.108.jsonl") else {
        return;
    };
    let all = std::fs::read(&path).expect("read");
    let name = path.display().to_string();
    let whole = parse_growing(SourceKind::ClaudeTranscript, &name, &all, &[]).remove(0);
    for (i, _) in all.iter().enumerate().filter(|(_, b)| **b == b'\n').step_by(7) {
        let outs = parse_growing(SourceKind::ClaudeTranscript, &name, &all, &[i + 1]);
        let split: Vec<Event> = outs.into_iter().flat_map(|o| o.events).collect();
        assert_eq!(split, whole.events, "split after byte {i}");
    }
}

#[test]
fn derived_ids_are_stable_and_unique() {
    for (kind, name) in
        [(SourceKind::ClaudeTranscript, CLAUDE), (SourceKind::CodexRollout, CODEX), (SourceKind::GeminiJsonl, GEMINI)]
    {
        let a = full(kind, name);
        // A copy of the file elsewhere (rewritten or moved) gives the same ids.
        let all = bytes(name);
        let moved = parse_growing(kind, &format!("/elsewhere/{name}"), &all, &[]).remove(0);
        let ids = |o: &ParseOutput| o.events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&a), ids(&moved), "{name}");
        let unique: HashSet<_> = a.events.iter().map(|e| e.id.clone()).collect();
        assert_eq!(unique.len(), a.events.len(), "{name}: duplicate ids");
        assert!(a.events.iter().all(|e| e.id.as_str().starts_with("ev_") && e.id.as_str().len() == 29));
    }
}

fn assert_no_secrets(what: &str, events: &[Event]) {
    let text = json_of(events);
    assert!(
        !text.contains("PLANTED"),
        "{what}: a planted secret survived:\n{}",
        text.lines().find(|l| l.contains("PLANTED")).unwrap_or("")
    );
    assert!(!text.contains("ENVCONTENT"), "{what}: excluded file content survived");
    assert!(text.contains("[REDACTED:"), "{what}: nothing was redacted");
}

#[test]
fn planted_secrets_never_leave_any_adapter() {
    assert_no_secrets("claude", &full(SourceKind::ClaudeTranscript, CLAUDE).events);
    assert_no_secrets("codex", &full(SourceKind::CodexRollout, CODEX).events);
    assert_no_secrets("gemini", &full(SourceKind::GeminiJsonl, GEMINI).events);
    assert_no_secrets(
        "gemini legacy",
        &common::parse(SourceKind::GeminiLegacy, &data("gemini-session-legacy.json")).events,
    );
    assert_no_secrets(
        "opencode storage",
        &common::parse(SourceKind::OpenCodeStorage, &data("opencode/storage")).events,
    );
    assert_no_secrets("opencode db", &opencode_db().events);
}

fn opencode_db() -> ParseOutput {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("opencode.db");
    let conn = rusqlite_open(&db);
    conn.execute_batch(&std::fs::read_to_string(data("opencode.sql")).expect("sql")).expect("schema");
    drop(conn);
    common::parse(SourceKind::OpenCodeDb, &db)
}

fn rusqlite_open(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("open")
}

fn bodies<'a, T>(events: &'a [Event], f: impl Fn(&'a Body) -> Option<&'a T>) -> Vec<&'a T> {
    events.iter().filter_map(|e| f(&e.body)).collect()
}

#[test]
fn claude_mapping() {
    let out = full(SourceKind::ClaudeTranscript, CLAUDE);
    let ev = &out.events;
    let reads = bodies(ev, |b| if let Body::CodeRead(r) = b { Some(r) } else { None });
    assert_eq!(reads.len(), 2);
    assert_eq!(reads[0].file, "/home/dev/webapp/src/server.ts");
    assert_eq!(reads[0].range, Some([10, 29]));
    let edits = bodies(ev, |b| if let Body::CodeEdit(e) = b { Some(e) } else { None });
    assert_eq!(edits.len(), 2);
    assert_eq!(edits[0].before_range, Some([12, 14]));
    assert_eq!(edits[0].after_range, Some([12, 17]));
    assert_eq!(edits[0].before_hash.as_deref(), Some(content_hash("a\nb\ng\n").as_str()));
    assert_eq!(edits[0].after_hash.as_deref(), Some(content_hash("a\nc\nd\ne\nf\ng").as_str()));
    assert_eq!(edits[0].call_id.as_deref(), Some("toolu_e1"));
    // The .env write keeps its path, drops content and hashes.
    assert_eq!(edits[1].file, "/home/dev/webapp/.env");
    assert_eq!(edits[1].op, "add");
    assert!(edits[1].before_hash.is_none() && edits[1].after_hash.is_none());
    let calls = bodies(ev, |b| if let Body::ToolCall(c) = b { Some(c) } else { None });
    let write = calls.iter().find(|c| c.call_id == "toolu_w1").expect("write call");
    assert_eq!(write.args["content"], EXCLUDED_MARKER);
    assert_eq!(write.args["file_path"], "/home/dev/webapp/.env");
    let results = bodies(ev, |b| if let Body::ToolResult(r) = b { Some(r) } else { None });
    assert!(results.iter().all(|r| !r.tool.is_empty()), "every result joined to its call");
    assert_eq!(results.iter().filter(|r| r.is_error).count(), 2);
    let read_env = results.iter().find(|r| r.call_id == "toolu_r2").expect("read .env");
    assert_eq!(read_env.stdout, EXCLUDED_MARKER);
    // Origins.
    let ins = bodies(ev, |b| if let Body::MsgIn(m) = b { Some(m) } else { None });
    let origin_of = |needle: &str| ins.iter().find(|m| m.text.contains(needle)).map(|m| m.origin.as_str());
    assert_eq!(origin_of("Always use yarn"), Some("engram"));
    assert_eq!(origin_of("Never run the linter"), Some("engram"));
    assert_eq!(origin_of("deploy on Fridays"), Some("compact_summary"));
    assert_eq!(origin_of("migrations folder"), Some("subagent_prompt"));
    assert_eq!(origin_of("Make sure to run pnpm lint"), Some("user"));
    assert!(ev.iter().any(|e| matches!(&e.body, Body::Meta(m) if m.label == "compaction")));
    assert!(ev.iter().any(
        |e| matches!(&e.body, Body::Meta(m) if m.label == "title" && m.text.as_deref() == Some("Health endpoint"))
    ));
    // The sidechain is its own session linked to the main one.
    let sessions = bodies(ev, |b| if let Body::SessionStarted(s) = b { Some(s) } else { None });
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[1].parent.as_ref().map(|p| p.as_str()), Some("claude:11111111-1111-4111-8111-111111111111"));
    assert_eq!(sessions[0].project.as_deref(), Some("webapp"));
    // The malformed line is a diagnostic naming file, line and offset; the
    // unknown type is opaque and counted.
    let bad = out.diagnostics.iter().find(|d| d.message.contains("not JSON")).expect("malformed");
    let all = bytes(CLAUDE);
    let line_start = all.windows(17).position(|w| w == b"{\"type\":\"user\", \"").expect("bad line") as u64;
    assert_eq!((bad.line, bad.offset), (Some(33), Some(line_start)));
    assert!(bad.file.ends_with(CLAUDE));
    assert_eq!(out.unknown_types.get("future-thing"), Some(&1));
}

#[test]
fn codex_mapping() {
    let out = full(SourceKind::CodexRollout, CODEX);
    let ev = &out.events;
    let edits = bodies(ev, |b| if let Body::CodeEdit(e) = b { Some(e) } else { None });
    // c1 from patch_apply_end (not again from its output), c2 add, c3 delete + update.
    assert_eq!(edits.len(), 4, "{edits:#?}");
    assert_eq!(edits[0].file, "/home/dev/api/src/config.rs");
    assert_eq!(edits[0].before_range, Some([1, 1]));
    assert_eq!(edits[0].after_hash.as_deref(), Some(content_hash("fn load_config() {}").as_str()));
    assert_eq!(
        (edits[1].file.as_str(), edits[1].op.as_str(), edits[1].after_range),
        ("src/new.rs", "add", Some([1, 1]))
    );
    assert_eq!((edits[2].file.as_str(), edits[2].op.as_str()), ("src/old.rs", "delete"));
    assert_eq!((edits[3].file.as_str(), edits[3].call_id.as_deref()), ("src/lib.rs", Some("c3")));
    let reads = bodies(ev, |b| if let Body::CodeRead(r) = b { Some(r) } else { None });
    assert_eq!(reads.len(), 1);
    let results = bodies(ev, |b| if let Body::ToolResult(r) = b { Some(r) } else { None });
    let by_id = |id: &str| results.iter().find(|r| r.call_id == id).expect("result");
    assert_eq!(by_id("c1").exit, Some(0));
    assert_eq!(by_id("c5").exit, Some(101));
    assert!(by_id("c5").is_error && by_id("c5").tool == "shell");
    assert_eq!(by_id("c4").stdout, EXCLUDED_MARKER);
    let ins = bodies(ev, |b| if let Body::MsgIn(m) = b { Some(m) } else { None });
    assert_eq!(ins.iter().filter(|m| m.origin == "meta").count(), 1, "environment context");
    assert_eq!(ins.iter().filter(|m| m.origin == "compact_summary").count(), 1);
    let s = bodies(ev, |b| if let Body::SessionStarted(s) = b { Some(s) } else { None });
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].project.as_deref(), s[0].git_branch.as_deref()), (Some("api"), Some("main")));
    assert_eq!(out.unknown_types.get("future_item"), Some(&1));
}

#[test]
fn gemini_mapping() {
    let out = full(SourceKind::GeminiJsonl, GEMINI);
    let ev = &out.events;
    assert_eq!(out.superseded, 1, "the re-appended tool call replaced its first write");
    let results = bodies(ev, |b| if let Body::ToolResult(r) = b { Some(r) } else { None });
    assert_eq!(results.len(), 2);
    let reads = bodies(ev, |b| if let Body::CodeRead(r) = b { Some(r) } else { None });
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].range, Some([1, 50]));
    let edits = bodies(ev, |b| if let Body::CodeEdit(e) = b { Some(e) } else { None });
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].after_range, Some([1, 2]));
    assert!(ev.iter().any(|e| matches!(&e.body, Body::Meta(m) if m.label == "rewind" && m.fields["to"] == "u2")));
    assert!(
        ev.iter().any(|e| matches!(&e.body, Body::MsgOut(m) if m.part == "reasoning" && m.text == "Plan: Edit parse"))
    );
    let s = bodies(ev, |b| if let Body::SessionStarted(s) = b { Some(s) } else { None });
    assert_eq!(s[0].harness_session_id, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    assert_eq!(s[0].project.as_deref(), Some("tool"));
}

#[test]
fn opencode_storage_and_database() {
    let out = common::parse(SourceKind::OpenCodeStorage, &data("opencode/storage"));
    let c = common::counts(&out);
    assert_eq!(
        (c.sessions, c.msg_in, c.msg_out, c.tool_calls, c.tool_results, c.reads, c.edits),
        (1, 1, 1, 2, 2, 1, 1)
    );
    let read_env = out.events.iter().find_map(|e| match &e.body {
        Body::ToolResult(r) if r.call_id == "call_r" => Some(r.stdout.clone()),
        _ => None,
    });
    assert_eq!(read_env.as_deref(), Some(EXCLUDED_MARKER));

    let db = opencode_db();
    let c = common::counts(&db);
    assert_eq!((c.sessions, c.msg_in, c.msg_out, c.tool_calls, c.edits), (2, 2, 1, 1, 1));
    let child = db.events.iter().find_map(|e| match &e.body {
        Body::SessionStarted(s) if s.harness_session_id == "ses_db2" => Some(s.clone()),
        _ => None,
    });
    let child = child.expect("child session");
    assert_eq!(child.parent.as_ref().map(|p| p.as_str()), Some("opencode:ses_db1"));
    // Whole-file formats are re-parsed on every scan: same ids each time.
    let again = opencode_db();
    assert_eq!(
        db.events.iter().map(|e| &e.id).collect::<Vec<_>>(),
        again.events.iter().map(|e| &e.id).collect::<Vec<_>>()
    );
    // A missing database is an error, not a panic.
    assert!(opencode::load_db(Path::new("/nonexistent/opencode.db")).is_err());
}

#[test]
fn a_bad_resume_state_is_an_error_with_context() {
    let privacy = Privacy::default();
    let ctx = ParseContext::new("/x/a.jsonl", Ts(0), &privacy);
    let err = adapters::parse_chunk(SourceKind::CodexRollout, &ctx, b"{}\n", 0, &serde_json::json!({"line": "nope"}))
        .expect_err("bad state");
    assert!(err.to_string().contains("/x/a.jsonl"), "{err}");
}

#[test]
fn large_tool_outputs_keep_head_and_tail() {
    let big = format!("HEAD{}TAIL", "x".repeat(200_000));
    let lines = [
        serde_json::json!({"type":"assistant","sessionId":"s","uuid":"a1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cat big.log"}}]}}),
        serde_json::json!({"type":"user","sessionId":"s","uuid":"u1","parentUuid":"a1","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":big}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = parse_growing(SourceKind::ClaudeTranscript, "s.jsonl", text.as_bytes(), &[]).remove(0);
    let r = out
        .events
        .iter()
        .find_map(|e| match &e.body {
            Body::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .expect("result");
    assert!(r.stdout.starts_with("HEAD") && r.stdout.ends_with("TAIL"));
    assert!(r.stdout.len() <= ingestor::redact::MAX_TOOL_OUTPUT + 64);
    let cut = 200_008 - ingestor::redact::TOOL_OUTPUT_HEAD - ingestor::redact::TOOL_OUTPUT_TAIL;
    assert_eq!(r.truncated as usize, cut);
}

#[test]
fn resume_states_stay_small() {
    let Some(path) = shared::base::testing::shared_data("fixtures/claude/ccv-1.0.98-sidechains.jsonl") else {
        return;
    };
    let all = std::fs::read(&path).expect("read");
    let name = path.display().to_string();
    for cut in (0..all.len()).step_by(all.len() / 13) {
        let outs = parse_growing(SourceKind::ClaudeTranscript, &name, &all, &[cut]);
        let size = serde_json::to_vec(&outs[0].state).expect("json").len();
        assert!(size < 16 * 1024, "state of {size} bytes after {cut}");
    }
}

#[test]
fn discovery_finds_every_layout() {
    use ingestor::discover::{Roots, discover};
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let files = [
        "claude/projects/-home-u-app/s1.jsonl",
        "claude/projects/-home-u-app/agent-1a2b.jsonl",
        "claude/projects/-home-u-app/s1/subagents/agent-abc.jsonl",
        "claude/projects/-home-u-app/s1/subagents/agent-abc.meta.json",
        "claude/projects/-home-u-app/s1/subagents/workflows/w1/journal.jsonl",
        "claude/projects/-home-u-app/s1/tool-results/out.txt",
        "codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-33333333-3333-4333-8333-333333333333.jsonl",
        "codex/sessions/2026/01/02/notes.txt",
        "gemini/tmp/abc123/chats/session-2026-01-02T03-04-aaaaaaaa.jsonl",
        "gemini/tmp/abc123/chats/parent-id/child-id.jsonl",
        "gemini/tmp/abc123/chats/session-2025-12-01T00-00-bbbbbbbb.json",
        "gemini/tmp/abc123/logs.json",
        "opencode/storage/session/p/ses_1.json",
        "opencode/opencode.db",
    ];
    for f in files {
        let p = t.join(f);
        std::fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
        std::fs::write(&p, "{}\n").expect("write");
    }
    let roots = Roots {
        claude: vec![t.join("claude/projects")],
        codex: vec![t.join("codex/sessions")],
        gemini: vec![t.join("gemini/tmp")],
        opencode: vec![t.join("opencode"), t.join("missing")],
        ..Roots::default()
    };
    let found = discover(&roots).expect("discover");
    let rel: Vec<(SourceKind, String, bool)> = found
        .iter()
        .map(|s| (s.kind, s.path.strip_prefix(t).expect("under tmp").display().to_string(), s.sidecar.is_some()))
        .collect();
    assert_eq!(
        rel,
        vec![
            (SourceKind::ClaudeTranscript, "claude/projects/-home-u-app/agent-1a2b.jsonl".to_owned(), false),
            // Paths sort by component: `s1/…` comes before `s1.jsonl`.
            (SourceKind::ClaudeTranscript, "claude/projects/-home-u-app/s1/subagents/agent-abc.jsonl".to_owned(), true),
            (SourceKind::ClaudeTranscript, "claude/projects/-home-u-app/s1.jsonl".to_owned(), false),
            (SourceKind::CodexRollout, files[6].to_owned(), false),
            (SourceKind::GeminiJsonl, "gemini/tmp/abc123/chats/parent-id/child-id.jsonl".to_owned(), false),
            (SourceKind::GeminiJsonl, files[8].to_owned(), false),
            (SourceKind::GeminiLegacy, files[10].to_owned(), false),
            (SourceKind::OpenCodeStorage, "opencode/storage".to_owned(), false),
            (SourceKind::OpenCodeDb, "opencode/opencode.db".to_owned(), false),
        ]
    );
}
