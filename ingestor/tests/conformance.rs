//! Conformance over every file in `../shared/fixtures/`: per file, the counts
//! of sessions, messages, tool calls and results, reads, edits and
//! diagnostics, against numbers derived from the raw JSON by
//! `tests/data/derive_counts.py` (a separate Python reading of the fixture;
//! it never runs this parser). The command for each file is in the comment
//! next to its row, run from the workspace root with `F=../shared/fixtures`
//! and `D=ingestor/tests/data/derive_counts.py`. Also: every subagent is
//! linked to its parent, and every line is accounted for.

mod common;

use std::path::{Path, PathBuf};

use common::Counts;
use ingestor::adapter::ParseOutput;
use ingestor::discover::SourceKind;
use shared::storage::event::Body;

struct Case {
    kind: SourceKind,
    rel: &'static str,
    want: Counts,
    /// Non-blank lines (JSONL) or records (whole-file formats).
    records: usize,
}

#[allow(clippy::too_many_arguments)]
const fn c(
    sessions: usize,
    msg_in: usize,
    msg_out: usize,
    tool_calls: usize,
    tool_results: usize,
    reads: usize,
    edits: usize,
    diagnostics: usize,
) -> Counts {
    Counts { sessions, msg_in, msg_out, tool_calls, tool_results, reads, edits, diagnostics }
}

fn cases() -> Vec<Case> {
    use SourceKind::*;
    vec![
        // python3 $D claude $F/claude/ah-2.1.152-redacted.jsonl ; grep -c . (records)
        Case {
            kind: ClaudeTranscript,
            rel: "claude/ah-2.1.152-redacted.jsonl",
            want: c(1, 1, 1, 0, 0, 0, 0, 0),
            records: 5,
        },
        // python3 $D claude $F/claude/as-2.1-record-catalogue.jsonl
        // diagnostics = bad_ts 45 + unjoined 1
        Case {
            kind: ClaudeTranscript,
            rel: "claude/as-2.1-record-catalogue.jsonl",
            want: c(4, 13, 12, 3, 3, 0, 0, 46),
            records: 89,
        },
        // python3 $D claude $F/claude/as-schema-drift.jsonl
        Case {
            kind: ClaudeTranscript,
            rel: "claude/as-schema-drift.jsonl",
            want: c(1, 2, 1, 1, 1, 0, 0, 0),
            records: 10,
        },
        // python3 $D claude $F/claude/ccv-1.0.108.jsonl
        Case {
            kind: ClaudeTranscript,
            rel: "claude/ccv-1.0.108.jsonl",
            want: c(3, 4, 7, 21, 21, 3, 3, 0),
            records: 53,
        },
        // python3 $D claude $F/claude/ccv-1.0.98-sidechains.jsonl
        Case {
            kind: ClaudeTranscript,
            rel: "claude/ccv-1.0.98-sidechains.jsonl",
            want: c(6, 8, 95, 167, 167, 27, 35, 0),
            records: 438,
        },
        // python3 $D claude $F/claude/ccv-1.0.98-small.jsonl
        Case {
            kind: ClaudeTranscript,
            rel: "claude/ccv-1.0.98-small.jsonl",
            want: c(1, 2, 3, 12, 12, 0, 0, 0),
            records: 29,
        },
        // python3 $D claude $F/claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl
        Case {
            kind: ClaudeTranscript,
            rel: "claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl",
            want: c(1, 1, 1, 1, 0, 0, 0, 0),
            records: 3,
        },
        // python3 $D claude $F/claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl
        Case {
            kind: ClaudeTranscript,
            rel: "claude/as-subagent-layout/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
            want: c(1, 1, 1, 1, 1, 0, 0, 0),
            records: 4,
        },
        // python3 $D codex $F/codex/ah-0.135.0-redacted.jsonl
        Case {
            kind: CodexRollout,
            rel: "codex/ah-0.135.0-redacted.jsonl",
            want: c(1, 3, 1, 0, 0, 0, 0, 0),
            records: 11,
        },
        // python3 $D codex $F/codex/as-0.146-record-catalogue.jsonl
        // diagnostics = bad_ts 92 + unjoined 1 + self_parent 1 + 1 (that
        // subagent is then left without a parent, reported once more)
        Case {
            kind: CodexRollout,
            rel: "codex/as-0.146-record-catalogue.jsonl",
            want: c(2, 9, 2, 8, 6, 1, 1, 95),
            records: 118,
        },
        // python3 $D codex $F/codex/as-schema-drift.jsonl
        Case { kind: CodexRollout, rel: "codex/as-schema-drift.jsonl", want: c(1, 1, 1, 1, 1, 0, 0, 0), records: 5 },
        // python3 $D gemini $F/gemini/as-jsonl-v040.jsonl
        Case { kind: GeminiJsonl, rel: "gemini/as-jsonl-v040.jsonl", want: c(1, 1, 1, 1, 1, 0, 0, 0), records: 5 },
        // python3 $D gemini-legacy $F/gemini/as-legacy-small.json ; records = header + 2 messages
        Case { kind: GeminiLegacy, rel: "gemini/as-legacy-small.json", want: c(1, 1, 2, 0, 0, 0, 0, 0), records: 3 },
        // python3 $D opencode $F/opencode/as-storage-v2 ; records = find … -name '*.json' | wc -l (2 + 6 + 14)
        Case { kind: OpenCodeStorage, rel: "opencode/as-storage-v2", want: c(2, 3, 4, 2, 2, 0, 0, 0), records: 22 },
    ]
}

fn fixture(rel: &str) -> Option<PathBuf> {
    shared::base::testing::shared_data(&format!("fixtures/{rel}"))
}

/// Every record has ≥ 1 event or diagnostic, and the per-line counts add up
/// to what was returned.
fn assert_accounted(rel: &str, out: &ParseOutput, records: usize) {
    assert_eq!(out.lines.len(), records, "{rel}: records seen");
    for l in &out.lines {
        assert!(l.events + l.diagnostics > 0, "{rel}: line {} (offset {}) produced nothing", l.line, l.offset);
    }
    let events: u64 = out.lines.iter().map(|l| u64::from(l.events)).sum();
    let diags: u64 = out.lines.iter().map(|l| u64::from(l.diagnostics)).sum();
    assert_eq!(events, out.events.len() as u64 + out.superseded, "{rel}: events per line");
    assert_eq!(diags, out.diagnostics.len() as u64, "{rel}: diagnostics per line");
}

#[test]
fn every_fixture_matches_independent_counts() {
    let mut checked = 0;
    for case in cases() {
        let Some(path) = fixture(case.rel) else {
            return;
        };
        let out = common::parse(case.kind, &path);
        assert_eq!(common::counts(&out), case.want, "{}", case.rel);
        assert_accounted(case.rel, &out, case.records);
        for d in &out.diagnostics {
            assert_eq!(d.file, path.display().to_string());
            assert!(d.line.is_some() && d.offset.is_some(), "{d:?}");
        }
        checked += 1;
    }
    assert_eq!(checked, cases().len());
}

#[test]
fn the_table_covers_every_fixture_file() {
    let Some(root) = fixture("") else { return };
    let mut listed: Vec<String> = cases().iter().map(|c| c.rel.to_owned()).collect();
    listed.sort();
    let mut found = Vec::new();
    for kind in ["claude", "codex", "gemini"] {
        let mut files = Vec::new();
        walk(&root.join(kind), &mut files);
        for f in files {
            let rel = f.strip_prefix(&root).map(|p| p.display().to_string()).unwrap_or_default();
            if rel.ends_with(".jsonl") || (rel.ends_with(".json") && !rel.ends_with(".meta.json")) {
                found.push(rel);
            }
        }
    }
    found.push("opencode/as-storage-v2".to_owned());
    found.sort();
    assert_eq!(found, listed);
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn every_subagent_is_linked_to_its_parent() {
    let mut links = 0;
    for case in cases() {
        let Some(path) = fixture(case.rel) else {
            return;
        };
        let out = common::parse(case.kind, &path);
        let keys: Vec<String> =
            out.events.iter().filter_map(|e| e.session.as_ref().map(|s| s.as_str().to_owned())).collect();
        for e in &out.events {
            let Body::SessionStarted(s) = &e.body else {
                continue;
            };
            let Some(link) = &s.parent_link else { continue };
            match &s.parent {
                Some(parent) => {
                    links += 1;
                    assert_ne!(
                        parent.as_str(),
                        e.session.as_ref().map_or("", |k| k.as_str()),
                        "{}: self link",
                        case.rel
                    );
                    // Inline sidechains: the parent is a session of the same file.
                    if link == "sidechain" {
                        assert!(
                            keys.contains(&parent.as_str().to_owned()),
                            "{}: parent {parent} not in file",
                            case.rel
                        );
                    }
                }
                None => {
                    // Only the catalogue's trimmed session_meta, whose parent
                    // id equals its own, is left unlinked, and it says so.
                    assert_eq!(
                        case.rel, "codex/as-0.146-record-catalogue.jsonl",
                        "{} unlinked {link}",
                        s.harness_session_id
                    );
                    assert!(out.diagnostics.iter().any(|d| d.message.contains("names itself as its parent")));
                }
            }
        }
    }
    // 5 + 2 inline sidechains, 1 catalogue sidechain, 1 subagents/ file.
    assert_eq!(links, 9);
}

#[test]
fn the_subagent_file_links_to_the_main_session_of_its_directory() {
    let Some(dir) = fixture("claude/as-subagent-layout") else {
        return;
    };
    let main = common::parse(SourceKind::ClaudeTranscript, &dir.join("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl"));
    let sub = common::parse(
        SourceKind::ClaudeTranscript,
        &dir.join("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl"),
    );
    let main_key = main.events[0].session.clone().expect("session");
    let started = sub.events.iter().find_map(|e| match &e.body {
        Body::SessionStarted(s) => Some(s.clone()),
        _ => None,
    });
    let started = started.expect("subagent session");
    assert_eq!(started.parent, Some(main_key));
    assert_eq!(started.parent_link.as_deref(), Some("subagent"));
    // The .meta.json sidecar is carried into a meta event, and the first
    // prompt is marked as a subagent prompt.
    assert!(sub.events.iter().any(|e| matches!(&e.body, Body::Meta(m) if m.label == "subagent" && m.fields.get("meta").is_some_and(|v| v["agentType"] == "general-purpose"))));
    assert!(sub.events.iter().any(|e| matches!(&e.body, Body::MsgIn(m) if m.origin == "subagent_prompt")));
}

#[test]
fn inline_sidechains_find_their_task_call() {
    let Some(path) = fixture("claude/ccv-1.0.98-sidechains.jsonl") else {
        return;
    };
    let out = common::parse(SourceKind::ClaudeTranscript, &path);
    let linked: Vec<&str> = out
        .events
        .iter()
        .filter_map(|e| match &e.body {
            Body::Meta(m) if m.label == "subagent" => m.fields.get("parent_call_id").and_then(|v| v.as_str()),
            _ => None,
        })
        .collect();
    // jq -r 'select(.type=="assistant") | .message.content[] | select(.name=="Task") | .id' $F/claude/ccv-1.0.98-sidechains.jsonl
    assert_eq!(linked.len(), 5);
    assert!(linked.contains(&"toolu_014i9ThHMNShCHocf9xMKasf"));
}

#[test]
fn unknown_record_types_are_counted() {
    let Some(path) = fixture("claude/as-2.1-record-catalogue.jsonl") else {
        return;
    };
    let out = common::parse(SourceKind::ClaudeTranscript, &path);
    // jq -r .type $F/claude/as-2.1-record-catalogue.jsonl | sort | uniq -c: the types no adapter table names
    for t in ["atis-latch", "bridge-session", "frame-link", "relocated", "result", "started"] {
        assert_eq!(out.unknown_types.get(t), Some(&1), "{t}");
    }
    let opaque = common::kinds(&out.events).get("opaque").copied().unwrap_or(0);
    assert!(opaque >= 7);
}
