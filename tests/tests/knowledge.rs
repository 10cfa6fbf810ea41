//! Seed 004's memory model end to end, as an agent meets it: the official
//! MCP client (`common::mcp_calls`) for the tools, the real hook binaries
//! for the prompt and tool hooks, real Claude Code transcripts ingested by
//! `engram-ingestor scan`.
//!
//! * a derivation chain through `memory_save` with `source_knowledge_ids`;
//! * a near-duplicate flagged on save, surfaced at the next prompt hook,
//!   resolved by `replace`: the old memory superseded and no longer injected;
//! * a stash, then its resume in a later session;
//! * an automatic checkpoint before `rm -rf`, and resuming it;
//! * the three topic-shift tiers on scripted prompt sequences, with the
//!   per-project counters they leave;
//! * merges are unions: a conflict resolved by `merge` keeps what the new
//!   memory says, a dedup merge keeps the absorbed memory's categories.
//!
//! Without Python or PyPI the tests skip with a message locally and fail under `CI`.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Output;

use common::{World, mcp_calls};
use serde_json::{Value, json};
use shared::base::time::Ts;

const CWD: &str = "/home/me/web";

fn scorer_hook(w: &World, event: &str, input: &Value) -> Output {
    let out = w.hook(w.scorer(&["hook", event]), input.to_string().as_bytes());
    assert!(out.status.success(), "{event}: {}", String::from_utf8_lossy(&out.stderr));
    w.wait_for_recorder();
    out
}

fn hook_input(event: &str, session: &str, extra: Value) -> Value {
    let mut v = json!({
        "session_id": session,
        "transcript_path": format!("/home/me/.claude/projects/-home-me-web/{session}.jsonl"),
        "cwd": CWD,
        "hook_event_name": event,
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// The injected text of a read-side hook's output (empty when none).
fn injected(out: &Output) -> String {
    if out.stdout.is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned();
    assert!(text.starts_with("<engram-context>\n") && text.ends_with("</engram-context>"), "{text}");
    assert!(text.chars().count() <= 10_000);
    text
}

fn prompt(w: &World, session: &str, text: &str) -> String {
    injected(&scorer_hook(w, "user-prompt-submit", &hook_input("UserPromptSubmit", session, json!({"prompt": text}))))
}

/// One step of a scripted Claude Code session.
enum Step<'a> {
    Prompt(&'a str),
    Tool(&'a str, Value),
}

/// Writes a Claude Code transcript whose steps are `gap_ms` apart, the last
/// one `ends_ago_ms` before now, and ingests it.
fn transcript(w: &World, session: &str, steps: &[Step<'_>], ends_ago_ms: i64, gap_ms: i64) {
    let now = Ts::now().0;
    let mut out = String::new();
    let n = steps.len() as i64;
    for (i, step) in steps.iter().enumerate() {
        let ts = Ts(now - ends_ago_ms - (n - 1 - i as i64) * gap_ms).to_rfc3339();
        let base = json!({"sessionId": session, "cwd": CWD, "timestamp": ts, "parentUuid": null, "isSidechain": false,
                          "userType": "external", "version": "2.1.90", "gitBranch": "main"});
        let mut rec = base.clone();
        match step {
            Step::Prompt(text) => {
                rec["type"] = json!("user");
                rec["uuid"] = json!(format!("{session}-u{i}"));
                rec["message"] = json!({"role": "user", "content": text});
                out.push_str(&rec.to_string());
                out.push('\n');
            }
            Step::Tool(name, input) => {
                rec["type"] = json!("assistant");
                rec["uuid"] = json!(format!("{session}-a{i}"));
                rec["requestId"] = json!(format!("req-{i}"));
                rec["message"] = json!({"id": format!("msg-{session}-{i}"), "role": "assistant", "model": "claude-sonnet-4",
                    "content": [{"type": "tool_use", "id": format!("toolu_{session}_{i}"), "name": name, "input": input}]});
                out.push_str(&rec.to_string());
                out.push('\n');
                let mut res = base.clone();
                res["type"] = json!("user");
                res["uuid"] = json!(format!("{session}-r{i}"));
                res["message"] = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{session}_{i}"), "content": "ok"}]});
                out.push_str(&res.to_string());
                out.push('\n');
            }
        }
    }
    let path = w.claude_projects().join("-home-me-web").join(format!("{session}.jsonl"));
    w.write(&path, out.as_bytes());
    w.ok(&["scan", "--path", path.to_str().unwrap()]);
}

fn login_work<'a>() -> Vec<Step<'a>> {
    vec![
        Step::Prompt("Fix the flaky login test in src/auth/login.rs"),
        Step::Tool("Read", json!({"file_path": "/home/me/web/src/auth/login.rs"})),
        Step::Tool(
            "Edit",
            json!({"file_path": "/home/me/web/src/auth/login.rs", "old_string": "a", "new_string": "b"}),
        ),
        Step::Tool("Bash", json!({"command": "pnpm test src/auth/login.test.ts"})),
    ]
}

/// [`login_work`] and a follow-up: a thread past its first two prompts.
fn login_steps<'a>() -> Vec<Step<'a>> {
    let mut steps = login_work();
    steps.push(Step::Prompt("it still times out on CI"));
    steps.push(Step::Tool("Bash", json!({"command": "pnpm test src/auth/login.test.ts"})));
    steps
}

const BILLING: &str = "Explain how the billing service computes invoice totals for enterprise customers with several \
                       currencies and discounts, and what documentation we have about its rounding rules today";

fn ok(v: &Value) -> &Value {
    assert!(v.get("isError").is_none() && v.get("error").is_none(), "{v}");
    v
}

#[test]
fn a_derivation_chain_through_memory_save() {
    let w = World::new();
    let Some(r) = mcp_calls(
        &w,
        &[
            ("memory_save", json!({"content": "Adding one to one gives two.", "type": "fact", "project": "web"})),
            ("memory_save", json!({"content": "The sum of two and x is five.", "type": "fact", "project": "web"})),
        ],
    ) else {
        return;
    };
    let (a, b) = (ok(&r[0])["id"].as_str().unwrap().to_owned(), ok(&r[1])["id"].as_str().unwrap().to_owned());
    let r = mcp_calls(
        &w,
        &[(
            "memory_save",
            json!({"content": "So x is three, from the two sums.", "type": "discovery", "project": "web",
                   "source_knowledge_ids": [a, b]}),
        )],
    )
    .unwrap();
    let x = ok(&r[0])["id"].as_str().unwrap().to_owned();
    assert_eq!(r[0]["memory"]["type"], "discovery", "{}", r[0]);
    let r = mcp_calls(
        &w,
        &[(
            "memory_save",
            json!({"content": "Then y, being x squared, is nine.", "type": "discovery", "source_knowledge_ids": [x]}),
        )],
    )
    .unwrap();
    let y = ok(&r[0])["id"].as_str().unwrap().to_owned();
    let r = mcp_calls(
        &w,
        &[
            ("memory_get", json!({"ids": [y], "include_graph": true})),
            ("memory_graph", json!({"id": x, "depth": 1})),
            ("memory_graph", json!({"id": y, "depth": 1})),
        ],
    )
    .unwrap();
    let got = &ok(&r[0])["memories"][0];
    let chain = got["reasoning_chain"].as_array().unwrap();
    let steps: Vec<(&str, u64)> =
        chain.iter().map(|s| (s["id"].as_str().unwrap(), s["depth"].as_u64().unwrap())).collect();
    assert_eq!(steps[0], (x.as_str(), 1), "{got}");
    let mut deeper: Vec<&str> = steps[1..]
        .iter()
        .map(|(id, d)| {
            assert_eq!(*d, 2);
            *id
        })
        .collect();
    deeper.sort_unstable();
    let mut sources = vec![a.as_str(), b.as_str()];
    sources.sort_unstable();
    assert_eq!(deeper, sources, "the chain reaches the sources of the source");
    assert_eq!(got["chain_depth_limited"], false);
    let edges = got["edges"].as_array().unwrap();
    assert!(edges.iter().any(|e| e["relation"] == "derives_from" && e["node"]["id"] == x.as_str()), "{got}");
    // The graph around x: its sources and what derives from it; at depth 1 from y the sources are beyond.
    let around_x: Vec<&str> =
        ok(&r[1])["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    for id in [&a, &b, &y] {
        assert!(around_x.contains(&id.as_str()), "{around_x:?}");
    }
    assert_eq!(r[2]["depth_limited"], true);
    assert_eq!(r[2]["chain_depth_limited"], true, "{}", r[2]);
}

#[test]
fn the_external_discovery_command_adds_a_discovery_with_its_sources() {
    let w = World::new();
    // A stand-in for an LLM command line: combines the new memory with the most related one.
    let script = "import json,sys; r=json.load(sys.stdin); ids=[r['new']['id'], r['related'][0]['id']]; \
                  print(json.dumps({'discoveries':[{'text':'Deploying needs the VPN, since deploys run from the ops repo.',\
                  'source_ids':ids,'confidence':0.8}],'edges':[]}))";
    let config = format!("[knowledge.graph.discovery]\ncommand = [\"python3\", \"-c\", {}]\n", json!(script));
    w.write(&w.home().join("config.toml"), config.as_bytes());
    let Some(r) = mcp_calls(
        &w,
        &[
            ("memory_save", json!({"content": "Deploys run from the ops repo with make deploy.", "type": "fact"})),
            ("memory_save", json!({"content": "The ops repo is only reachable over the VPN.", "type": "fact"})),
        ],
    ) else {
        return;
    };
    let (a, b) = (ok(&r[0])["id"].as_str().unwrap().to_owned(), ok(&r[1])["id"].as_str().unwrap().to_owned());
    // The connection's end waited for the background calls.
    let store = w.store();
    let (id, tags): (String, String) = store
        .conn()
        .query_row("SELECT id, tags FROM memories WHERE type = 'discovery'", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(tags, r#"["auto-discovered"]"#);
    let chain = shared::domain::knowledge::graph::derivation_chain(&store, &id, 5).unwrap();
    let mut sources: Vec<&str> = chain.steps.iter().map(|s| s.id.as_str()).collect();
    sources.sort_unstable();
    let mut want = vec![a.as_str(), b.as_str()];
    want.sort_unstable();
    assert_eq!(sources, want);
}

#[test]
fn a_near_duplicate_is_flagged_surfaced_at_the_next_prompt_and_replaced() {
    let w = World::new();
    let old_text = "The staging deploy needs VPN access; run make deploy-staging from the ops repo.";
    let new_text = "The staging deploy needs VPN access; run make deploy-staging from the infra repo.";
    let Some(r) = mcp_calls(
        &w,
        &[
            // The project is given by its key (the working directory: no marker, no repository).
            ("memory_save", json!({"content": old_text, "type": "fact", "project": CWD})),
            ("memory_save", json!({"content": old_text, "type": "fact", "project": CWD})),
            ("memory_save", json!({"content": new_text, "type": "fact", "project": CWD})),
        ],
    ) else {
        return;
    };
    let old = ok(&r[0])["id"].as_str().unwrap().to_owned();
    assert_eq!(r[1]["saved"], false);
    assert_eq!(r[1]["duplicate_of"]["id"], old.as_str(), "an exact duplicate is skipped: {}", r[1]);
    let staged = ok(&r[2]);
    assert_eq!((staged["saved"].clone(), staged["staged"].clone()), (json!(false), json!(true)), "{staged}");
    let conflict = staged["conflict_id"].as_str().unwrap().to_owned();
    assert_eq!(staged["existing"]["id"], old.as_str());
    let sim = staged["existing"]["similarity"].as_f64().unwrap();
    assert!(sim > 0.65 && sim <= 0.95, "{sim}");
    assert_eq!(w.count("SELECT occurrence_count FROM memories"), 2, "the duplicate counted once more");

    // The next prompt surfaces it, with the four choices.
    let s = "5a0c2f9e-1111-4e3a-9c55-000000000001";
    scorer_hook(&w, "session-start", &hook_input("SessionStart", s, json!({"source": "startup"})));
    let text = prompt(&w, s, "How do I get the staging build out today?");
    assert!(text.contains("memory conflict") && text.contains(&conflict) && text.contains(&old), "{text}");
    for choice in ["merge", "keep_both", "replace", "skip"] {
        assert!(text.contains(choice), "{text}");
    }
    assert_eq!(w.count(&format!("SELECT surfaced FROM staged_memories WHERE id = '{conflict}'")), 1);

    let r = mcp_calls(
        &w,
        &[
            ("memory_staging", json!({"status": "needs_clarification"})),
            ("memory_resolve", json!({"conflict_id": conflict, "action": "replace"})),
            ("memory_resolve", json!({"conflict_id": conflict, "action": "skip"})),
        ],
    )
    .unwrap();
    assert_eq!(ok(&r[0])["staged"][0]["id"], conflict.as_str());
    let resolved = ok(&r[1]);
    let new = resolved["memory_id"].as_str().unwrap().to_owned();
    assert_eq!(resolved["superseded"], old.as_str(), "{resolved}");
    assert_eq!(resolved["conflicts_left"], 0);
    assert_eq!(r[2]["isError"], true, "a conflict is resolved once: {}", r[2]);

    // The old memory is superseded by the new one, with a supersedes edge,
    // and is no longer injected; the new one is.
    assert_eq!(w.count(&format!("SELECT deprecated FROM memories WHERE id = '{old}'")), 1);
    assert_eq!(
        w.count(&format!(
            "SELECT COUNT(*) FROM knowledge_edges WHERE from_id = '{new}' AND to_id = '{old}' AND relation = 'supersedes'"
        )),
        1
    );
    let s2 = "5a0c2f9e-1111-4e3a-9c55-000000000002";
    // (A memory injected at session start is not repeated at the prompt.)
    let start =
        injected(&scorer_hook(&w, "session-start", &hook_input("SessionStart", s2, json!({"source": "startup"}))));
    let text = start + &prompt(&w, s2, "how do I run the staging deploy, do I need the VPN?");
    assert!(text.contains(&new), "{text}");
    assert!(!text.contains(&old), "{text}");
    assert!(!text.contains("memory conflict"), "nothing left to surface: {text}");
    let r = mcp_calls(&w, &[("memory_get", json!({"ids": [old], "include_graph": true}))]).unwrap();
    let m = &ok(&r[0])["memories"][0];
    assert_eq!(m["superseded_by"], new.as_str());
    assert!(m["edges"].as_array().unwrap().iter().any(|e| e["relation"] == "superseded_by"), "{m}");
}

#[test]
fn a_stash_is_resumed_in_a_later_session() {
    let w = World::new();
    let first = "5a0c2f9e-2222-4e3a-9c55-000000000001";
    scorer_hook(&w, "session-start", &hook_input("SessionStart", first, json!({"source": "startup"})));
    transcript(
        &w,
        first,
        &[
            Step::Prompt("Add a CSV export to the billing page, one row per invoice"),
            Step::Tool("Read", json!({"file_path": "/home/me/web/src/billing/export.ts"})),
            Step::Tool(
                "Edit",
                json!({"file_path": "/home/me/web/src/billing/export.ts", "old_string": "a", "new_string": "b"}),
            ),
            Step::Prompt("Quote the currency column and keep the header in English"),
        ],
        60_000,
        5_000,
    );
    let key = format!("claude:{first}");
    let Some(r) = mcp_calls(
        &w,
        &[
            ("memory_stash", json!({"list": false, "label": "billing CSV export", "session_id": key})),
            ("memory_stash", json!({"list": false, "session_id": key})),
        ],
    ) else {
        return;
    };
    let conv = ok(&r[0])["conversation"]["conversation_id"].as_str().unwrap().to_owned();
    assert!(conv.starts_with("conv_"), "{conv}");
    assert_eq!(r[1]["isError"], true, "nothing new to stash: {}", r[1]);

    // A later session in the same project is told about it, lists it, resumes it.
    let later = "5a0c2f9e-2222-4e3a-9c55-000000000002";
    let start =
        injected(&scorer_hook(&w, "session-start", &hook_input("SessionStart", later, json!({"source": "startup"}))));
    assert!(start.contains(&conv) && start.contains("billing CSV export"), "{start}");
    let r = mcp_calls(
        &w,
        &[
            ("memory_stash", json!({"project": "web"})),
            ("memory_resume", json!({"conversation_id": conv, "session_id": format!("claude:{later}")})),
            ("memory_stash", json!({})),
            ("memory_resume", json!({"conversation_id": "no such thing anywhere"})),
        ],
    )
    .unwrap();
    let listed = ok(&r[0])["stashed"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "listed by the project's name: {}", r[0]);
    assert_eq!(listed[0]["label"], "billing CSV export");
    assert!(listed[0]["group"].as_str().unwrap().starts_with("sg_"), "{}", listed[0]);
    let resumed = ok(&r[1]);
    assert_eq!(resumed["kind"], "conversation");
    assert_eq!(resumed["resume_command"], format!("claude --resume {first}"));
    let context = resumed["context"].as_str().unwrap();
    for want in ["CSV export", "Quote the currency column", "export.ts"] {
        assert!(context.contains(want), "{want}: {context}");
    }
    assert_eq!(ok(&r[2])["count"], 0, "a resumed conversation is no longer stashed");
    assert_eq!(r[3]["isError"], true);
    assert_eq!(
        w.count(&format!(
            "SELECT COUNT(*) FROM conversations WHERE id = '{conv}' AND status = 'resumed' AND resumed_session = 'claude:{later}'"
        )),
        1
    );
}

#[test]
fn a_checkpoint_is_made_before_rm_rf_and_can_be_resumed() {
    let w = World::new();
    let s = "5a0c2f9e-3333-4e3a-9c55-000000000001";
    scorer_hook(&w, "session-start", &hook_input("SessionStart", s, json!({"source": "startup"})));
    transcript(&w, s, &login_work(), 30_000, 2_000);
    let tool = |cmd: &str| {
        scorer_hook(
            &w,
            "pre-tool-use",
            &hook_input(
                "PreToolUse",
                s,
                json!({"tool_name": "Bash", "tool_input": {"command": cmd}, "tool_use_id": "t1"}),
            ),
        )
    };
    tool("ls -la build/");
    tool("git status");
    assert_eq!(w.count("SELECT COUNT(*) FROM session_forks"), 0, "nothing destructive yet");
    tool("rm -rf build/ node_modules/.cache");
    assert_eq!(w.count("SELECT COUNT(*) FROM session_forks WHERE auto = 1"), 1);
    let (id, label, trigger, snapshot): (String, String, String, String) = w
        .store()
        .conn()
        .query_row("SELECT id, label, trigger, snapshot FROM session_forks", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap();
    assert!(id.starts_with("fork_"));
    assert_eq!(label, "before rm -rf");
    assert_eq!(trigger, "rm -rf build/ node_modules/.cache");
    let snap: Value = serde_json::from_str(&snapshot).unwrap();
    assert_eq!(snap["observation_count"], 3, "{snap}");
    assert!(snap["files"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().ends_with("login.rs")), "{snap}");
    let Some(r) = mcp_calls(
        &w,
        &[
            ("memory_resume", json!({"conversation_id": id})),
            ("memory_checkpoint", json!({"label": "before the refactor", "session_id": format!("claude:{s}")})),
        ],
    ) else {
        return;
    };
    let resumed = ok(&r[0]);
    assert_eq!(resumed["kind"], "checkpoint");
    let context = resumed["context"].as_str().unwrap();
    assert!(context.contains("rm -rf build/") && context.contains("flaky login test"), "{context}");
    assert_eq!(ok(&r[1])["checkpoint"]["label"], "before the refactor");
    assert_eq!(w.count("SELECT COUNT(*) FROM session_forks WHERE auto = 0"), 1);
    assert_eq!(w.count(&format!("SELECT resume_count FROM session_forks WHERE id = '{id}'")), 1);
}

#[test]
fn topic_shift_tiers_on_scripted_prompts() {
    let w = World::new();
    // Same topic; new words at once without saying so (the rhythm of work: nothing);
    // an explicit switch (ask); a follow-up (the suggestion declined); another
    // switch before the thread has moved on (nothing: one suggestion per topic).
    let s = "5a0c2f9e-4444-4e3a-9c55-000000000001";
    scorer_hook(&w, "session-start", &hook_input("SessionStart", s, json!({"source": "startup"})));
    transcript(&w, s, &login_steps(), 10_000, 3_000);
    let same = prompt(&w, s, "now run it again with the session.rs change");
    assert!(!same.contains("new topic"), "{same}");
    let quiet = prompt(&w, s, "Write a CSV export of the weekly sales figures for the marketing dashboard");
    assert!(!quiet.contains("new topic"), "{quiet}");
    let ask = prompt(&w, s, &format!("Unrelated question: {BILLING}"));
    assert!(ask.contains("may start a new topic") && ask.contains("memory_stash"), "{ask}");
    assert_eq!(ask.lines().filter(|l| l.contains("new topic")).count(), 1, "one line: {ask}");
    let follow = prompt(&w, s, "ok, and the tax lines?");
    assert!(!follow.contains("new topic"), "{follow}");
    let again = prompt(&w, s, "Unrelated question: how are PDF receipts rendered for partial refunds?");
    assert!(!again.contains("new topic"), "{again}");
    let tiers: Vec<(String, String)> = {
        let store = w.store();
        let mut stmt = store
            .conn()
            .prepare("SELECT tier, COALESCE(outcome, '') FROM topic_shifts ORDER BY created_ms, event_id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(
        tiers,
        vec![("ask".to_owned(), "rejected".to_owned()), ("ignore".to_owned(), String::new())],
        "an ignored prompt is recorded only to answer the suggestion"
    );
    let score: f64 =
        w.store().conn().query_row("SELECT score FROM topic_shifts WHERE tier = 'ask'", [], |r| r.get(0)).unwrap();
    assert!((0.4..0.85).contains(&score), "{score}");

    // An explicit switch after two hours: stashed automatically; taking it back counts against the detector.
    let t = "5a0c2f9e-4444-4e3a-9c55-000000000002";
    scorer_hook(&w, "session-start", &hook_input("SessionStart", t, json!({"source": "startup"})));
    transcript(&w, t, &login_steps(), 2 * 3_600_000, 30_000);
    let trust = prompt(&w, t, &format!("Different subject: {BILLING}"));
    assert!(trust.contains("was stashed as conv_"), "{trust}");
    let conv = trust
        .split("stashed as ")
        .nth(1)
        .unwrap()
        .split(|c: char| c == '.' || c.is_whitespace())
        .next()
        .unwrap()
        .to_owned();
    let (auto, score, label): (bool, f64, String) = w
        .store()
        .conn()
        .query_row("SELECT auto, score, label FROM conversations WHERE id = ?1", [&conv], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert!(auto && score >= 0.85, "{score}");
    assert!(label.contains("flaky login test"), "{label}");
    let Some(r) =
        mcp_calls(&w, &[("memory_resume", json!({"conversation_id": conv, "session_id": format!("claude:{t}")}))])
    else {
        return;
    };
    assert!(ok(&r[0])["context"].as_str().unwrap().contains("login.rs"));
    let counters: (i64, i64, i64, i64) = w
        .store()
        .conn()
        .query_row(
            "SELECT auto_stash_count, false_positive_count, suggestion_shown_count, suggestion_accepted_count
             FROM adaptive_thresholds WHERE project = ?1",
            [CWD],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(counters, (1, 2, 1, 0), "one auto-stash, two false positives, one suggestion shown");
}

/// `memory resolve … --action merge` kept the existing memory's text alone:
/// what the new memory added (here: clippy) was lost. The existing memory
/// now holds both, with the new one's tags, an occurrence and its session.
#[test]
fn a_conflict_resolved_by_merge_keeps_the_new_memorys_text() {
    let w = World::new();
    let old = w.ok(&["memory", "add", "Run cargo fmt before committing any Rust change.", "--tag", "rust"]);
    let old = old.trim();
    let staged =
        w.ok(&["memory", "add", "Run cargo fmt and cargo clippy before committing any Rust change.", "--tag", "lint"]);
    assert!(staged.contains("staged as"), "a conflict: {staged}");
    let list = w.json(&["memory", "staging", "--json"]);
    let stage = list[0]["id"].as_str().unwrap().to_owned();
    w.ok(&["memory", "resolve", &stage, "--action", "merge"]);
    let shown = w.json(&["memory", "show", old, "--json"]);
    let content = shown["content"].as_str().unwrap();
    assert!(content.contains("cargo clippy"), "the new memory's text was dropped: {content}");
    assert!(content.starts_with("Run cargo fmt before committing"), "{content}");
    let tags: Vec<&str> = shown["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(tags.contains(&"rust") && tags.contains(&"lint"), "{tags:?}");
    assert_eq!(shown["occurrence_count"], 2, "{shown}");
    // Found by its new words, one memory: nothing else was saved.
    let found = w.ok(&["memory", "list", "--json"]);
    let all: Value = serde_json::from_str(&found).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 1, "{found}");
}

/// `engram-ingestor dedup` merged two duplicates but left the absorbed
/// memory's categories behind: listing a category it was in no longer
/// found the lesson. The survivor now holds the union.
#[test]
fn a_dedup_merge_carries_the_absorbed_memorys_categories() {
    let w = World::new();
    let a = w.ok(&["memory", "add", "--no-check", "The staging database resets every night at 02:00 UTC."]);
    let b = w.ok(&["memory", "add", "--no-check", "The staging database resets every night at 02:00 UTC!"]);
    let (a, b) = (a.trim(), b.trim());
    w.ok(&["memory", "categorize", a, "--add", "ops/staging"]);
    w.ok(&["memory", "categorize", b, "--add", "infra/database"]);
    let out = w.ok(&["dedup"]);
    assert!(out.contains("1 memory absorbed"), "{out}");
    let live = |category: &str| -> Vec<String> {
        let v = w.json(&["memory", "list", "--category", category, "--json"]);
        v.as_array()
            .unwrap()
            .iter()
            .filter(|m| m["deprecated"] != true)
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let survivor = live("ops/staging");
    assert_eq!(survivor.len(), 1, "{survivor:?}");
    assert_eq!(live("infra/database"), survivor, "the absorbed memory's category moved to the survivor");
}
