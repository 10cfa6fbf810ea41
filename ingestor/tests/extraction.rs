//! Memory extraction at the boundary: a session's events in, memory events
//! out. Hand-written sessions (`tests/data/`) for what must and must not be
//! learned, dedup across sessions, idempotence, the external extractor
//! contract, and a smoke run over the real fixtures.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ingestor::dedup::{ExistingMemory, MemoryLookup};
use ingestor::discover::SourceKind;
use ingestor::external::{self, ExtractorRequest};
use ingestor::extract::{self, Extraction};
use shared::base::ids::SessionKey;
use shared::storage::event::{Body, Event, MemoryAdded};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// Events of a source grouped by session, in order.
fn sessions(kind: SourceKind, path: &Path) -> BTreeMap<String, Vec<Event>> {
    let mut by: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for e in common::parse(kind, path).events {
        let k = e.session.as_ref().map(|s| s.as_str().to_owned()).unwrap_or_default();
        by.entry(k).or_default().push(e);
    }
    by
}

fn added(ex: &Extraction) -> Vec<&MemoryAdded> {
    ex.events
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// The store's view after applying `ex`.
fn existing(ex: &Extraction) -> Vec<ExistingMemory> {
    added(ex)
        .into_iter()
        .map(|m| ExistingMemory {
            id: m.memory_id.clone(),
            text: m.content.clone(),
            embedding: None,
            sessions: m.source_session.iter().cloned().collect(),
            project: m.project.clone(),
        })
        .collect()
}

fn main_session(kind: SourceKind, name: &str, key: &str) -> Vec<Event> {
    sessions(kind, &data(name)).remove(key).expect("session")
}

/// A lookup with conflict detection off.
struct NoConflicts(Vec<ExistingMemory>);

impl MemoryLookup for NoConflicts {
    fn candidates(&self, text: &str, id: &shared::base::ids::MemoryId) -> Vec<ExistingMemory> {
        self.0.candidates(text, id)
    }

    fn conflict_threshold(&self) -> Option<f32> {
        None
    }
}

const CLAUDE_1: &str = "claude:11111111-1111-4111-8111-111111111111";

#[test]
fn friction_moments_become_typed_memories() {
    let events = main_session(SourceKind::ClaudeTranscript, "claude_session.jsonl", CLAUDE_1);
    let ex = extract::extract(&events, &Vec::new());
    let mems = added(&ex);
    let find = |t: &str, needle: &str| {
        mems.iter().find(|m| m.memory_type.as_str() == t && m.content.contains(needle)).copied()
    };
    // "No, don't use npm here. We use pnpm in this repo, …": one lesson, the opener removed.
    let correction = find("correction", "Don't use npm here; we use pnpm in this repo, always run pnpm install first.")
        .expect("correction");
    assert!((correction.importance - 0.8).abs() < 1e-6, "'always' raises importance");
    let conv = find("convention", "Make sure to run pnpm lint before committing.").expect("convention");
    assert!((conv.importance - 0.6).abs() < 1e-6);
    // `npm test` failed twice, `pnpm install` ran, then the tests passed: the
    // install is the fix, and the agent's explanation of the error comes with it.
    let struggle = find("struggle", "Run `pnpm install` before `npm test`").expect("struggle");
    assert!(struggle.content.contains("(the tests fail because vitest"), "{}", struggle.content);
    assert!(struggle.tags.contains(&"bash".to_owned()));
    assert_eq!(mems.len(), 3, "{mems:#?}");
    assert_eq!(ex.skipped, 0);
    for m in &mems {
        assert_eq!(m.project.as_deref(), Some("webapp"));
        assert_eq!(m.source_session.as_ref().map(SessionKey::as_str), Some(CLAUDE_1));
        assert_eq!(m.source, "extracted");
        assert!(m.content.chars().count() <= extract::MAX_MEMORY_TEXT + 1);
        assert!(m.tags.contains(&"typescript".to_owned()), "session language: {:?}", m.tags);
        // The source event exists in the session.
        assert!(events.iter().any(|e| Some(&e.id) == m.source_event.as_ref()));
    }
}

#[test]
fn nothing_is_learned_from_injected_compacted_subagent_or_meta_text() {
    let all = sessions(SourceKind::ClaudeTranscript, &data("claude_session.jsonl"));
    assert_eq!(all.len(), 2, "main session and its sidechain");
    for events in all.values() {
        for m in added(&extract::extract(events, &Vec::new())) {
            for banned in ["yarn", "linter", "Fridays", "migrations", "PLANTED"] {
                assert!(!m.content.contains(banned), "learned from excluded text: {}", m.content);
            }
        }
    }
    // Codex: the compacted summary says "never use unwrap".
    let codex = main_session(
        SourceKind::CodexRollout,
        "rollout-2026-01-02T05-00-00-33333333-3333-4333-8333-333333333333.jsonl",
        "codex:33333333-3333-4333-8333-333333333333",
    );
    let mems = extract::extract(&codex, &Vec::new());
    assert!(added(&mems).iter().all(|m| !m.content.contains("unwrap")));
    let texts: Vec<(&str, &str)> = added(&mems).iter().map(|m| (m.memory_type.as_str(), m.content.as_str())).collect();
    assert!(texts.contains(&("correction", "Don't rename public functions without asking.")), "{texts:#?}");
    assert!(texts.contains(&("correction", "We always keep a deprecated alias.")), "{texts:#?}");
    assert!(
        texts
            .iter()
            .any(|(k, t)| *k == "struggle" && t.contains("Run `cargo test --workspace` instead of `cargo test`")),
        "{texts:#?}"
    );
    // Gemini: the rewound message is withdrawn, the later one is learned.
    let gemini = main_session(
        SourceKind::GeminiJsonl,
        "gemini-session-2026-01-02T06-00-aaaaaaaa.jsonl",
        "gemini:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
    );
    let mems = extract::extract(&gemini, &Vec::new());
    let texts: Vec<&str> = added(&mems).iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, vec!["Always keep the tests green in this project."]);
}

#[test]
fn extraction_is_idempotent() {
    let events = main_session(SourceKind::ClaudeTranscript, "claude_session.jsonl", CLAUDE_1);
    let first = extract::extract(&events, &Vec::new());
    let second = extract::extract(&events, &Vec::new());
    assert_eq!(first, second, "same events, same ids");
    let store = existing(&first);
    let again = extract::extract(&events, &store);
    assert!(again.events.is_empty(), "{:#?}", again.events);
    assert_eq!(again.skipped, first.added + first.skipped);
}

#[test]
fn near_duplicates_from_another_session_merge_and_count() {
    let s1 = main_session(SourceKind::ClaudeTranscript, "claude_session.jsonl", CLAUDE_1);
    let first = extract::extract(&s1, &Vec::new());
    let mut store = existing(&first);
    let s2 = main_session(
        SourceKind::ClaudeTranscript,
        "claude_session_2.jsonl",
        "claude:22222222-2222-4222-8222-222222222222",
    );
    // Both sessions are of one project: 70% alike is a conflict, staged for
    // the user (seed 004), not merged.
    let project = |ex: &Extraction| added(ex).first().and_then(|m| m.project.clone());
    assert_eq!(project(&first), extract::candidates(&s2)[0].project, "one project");
    let same = extract::extract(&s2, &store);
    assert_eq!((same.added, same.merged, same.staged), (0, 0, 1), "{:#?}", same.events);
    let Body::MemoryStaged(st) = &same.events[0].body else { panic!("{:#?}", same.events) };
    let pnpm_id = store.iter().find(|m| m.text.contains("we use pnpm")).expect("pnpm memory").id.clone();
    assert_eq!(st.conflict_with.as_ref(), Some(&pnpm_id));
    assert_eq!(st.status, "needs_clarification");
    assert!(st.similarity.is_some_and(|s| s > 0.65 && s <= 0.95), "{st:?}");
    // Staged again on a second extraction: the same event id (idempotent).
    assert_eq!(extract::extract(&s2, &store).events[0].id, same.events[0].id);
    // With conflict detection off, the same likeness merges (seed 000).
    let off = extract::extract(&s2, &NoConflicts(store.clone()));
    assert_eq!((off.merged, off.staged), (1, 0));

    // The memory belongs to another project: never a conflict (that would
    // flood the user with every lesson seen across projects); seed 000's
    // inline dedup merges it as before.
    for m in &mut store {
        m.project = Some("/home/dev/another-project".into());
    }
    let second = extract::extract(&s2, &store);
    let merges: Vec<_> = second
        .events
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryUpdated(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(merges.len(), 1, "{:#?}", second.events);
    let pnpm = store.iter().find(|m| m.text.contains("we use pnpm")).expect("pnpm memory");
    assert_eq!(merges[0].memory_id, pnpm.id);
    assert_eq!(merges[0].occurrences, 1);
    assert_eq!(merges[0].seen_in.as_ref().map(SessionKey::as_str), Some("claude:22222222-2222-4222-8222-222222222222"));
    assert_eq!(second.added, 0);
    // Once the store records the merge, re-extracting session 2 adds nothing.
    for m in &mut store {
        if m.id == merges[0].memory_id {
            m.sessions.push(SessionKey::from("claude:22222222-2222-4222-8222-222222222222"));
        }
    }
    assert!(extract::extract(&s2, &store).events.is_empty());
}

#[test]
fn embeddings_decide_when_both_sides_have_one() {
    let s2 = main_session(
        SourceKind::ClaudeTranscript,
        "claude_session_2.jsonl",
        "claude:22222222-2222-4222-8222-222222222222",
    );
    let mut cands = extract::candidates(&s2);
    assert_eq!(cands.len(), 1);
    cands[0].embedding = Some(vec![1.0, 0.0, 0.0]);
    let far = ExistingMemory {
        id: "mem_x".into(),
        text: "In this repo we use pnpm; always run pnpm install first.".into(),
        embedding: Some(vec![0.0, 1.0, 0.0]),
        sessions: vec![],
        project: None,
    };
    // Same words but orthogonal embeddings: not a duplicate.
    assert_eq!(extract::resolve(cands.clone(), &vec![far.clone()]).added, 1);
    let near =
        ExistingMemory { embedding: Some(vec![0.95, 0.05, 0.0]), text: "Something else entirely.".into(), ..far };
    assert_eq!(extract::resolve(cands, &vec![near]).merged, 1);
}

#[test]
fn external_extractor_contract() {
    let events = main_session(SourceKind::ClaudeTranscript, "claude_session.jsonl", CLAUDE_1);
    let req: ExtractorRequest = external::build_request(&events, 64 * 1024, 4, &ingestor::redact::Privacy::default());
    let json = serde_json::to_string(&req).expect("json");
    assert!(json.contains("\"protocol\":1"));
    for banned in ["<engram-context>", "Fridays", "PLANTED", "ENVCONTENT"] {
        assert!(!json.contains(banned), "{banned} in request");
    }
    assert!(req.turns.iter().any(|t| t.role == "tool" && t.is_error));
    let small = external::build_request(&events, 200, 4, &ingestor::redact::Privacy::default());
    assert!(small.turns.len() < req.turns.len() && !small.turns.is_empty());
    assert_eq!(
        small.turns.last().map(|t| &t.text),
        req.turns.last().map(|t| &t.text),
        "the most recent turns are kept"
    );

    let good = br#"{"memories":[{"text":"Use pnpm, not npm. token=abc123","type":"convention","importance":0.8,"tags":["Node"],"source_turn":2}]}"#;
    let cands = external::validate_response(&req, good).expect("valid");
    assert_eq!(cands.len(), 1);
    assert_eq!(cands[0].text, "Use pnpm, not npm. token=[REDACTED:token]");
    assert_eq!(cands[0].tags, vec!["node"]);
    assert_eq!(cands[0].source, "external");
    let ex = extract::resolve(cands, &Vec::new());
    assert_eq!(added(&ex)[0].source, "external");

    for bad in [
        &br#"not json"#[..],
        br#"{"memories":[{"text":"","type":"convention"}]}"#,
        br#"{"memories":[{"text":"x y z","type":"poem"}]}"#,
        br#"{"memories":[{"text":"x y z","type":"fact","importance":1.5}]}"#,
        br#"{"memories":[{"text":"x y z","type":"fact","source_turn":999}]}"#,
        br#"{"memories":[{"text":"<engram-context>x</engram-context>","type":"fact"}]}"#,
        br#"{"memories":[{"text":"a","type":"fact"},{"text":"b","type":"fact"},{"text":"c","type":"fact"},{"text":"d","type":"fact"},{"text":"e","type":"fact"}]}"#,
    ] {
        let err = external::validate_response(&req, bad).expect_err("must reject");
        assert!(err.to_string().starts_with("extractor answer refused"), "{err}");
    }
}

#[test]
fn smoke_over_the_real_fixtures() {
    let Some(root) = shared::base::testing::shared_data("fixtures") else {
        return;
    };
    let files = [
        (SourceKind::ClaudeTranscript, "claude/ccv-1.0.98-sidechains.jsonl"),
        (SourceKind::ClaudeTranscript, "claude/ccv-1.0.108.jsonl"),
        (SourceKind::ClaudeTranscript, "claude/ccv-1.0.98-small.jsonl"),
        (SourceKind::ClaudeTranscript, "claude/as-2.1-record-catalogue.jsonl"),
        (SourceKind::ClaudeTranscript, "claude/ah-2.1.152-redacted.jsonl"),
        (SourceKind::CodexRollout, "codex/as-0.146-record-catalogue.jsonl"),
        (SourceKind::CodexRollout, "codex/ah-0.135.0-redacted.jsonl"),
        (SourceKind::GeminiJsonl, "gemini/as-jsonl-v040.jsonl"),
        (SourceKind::OpenCodeStorage, "opencode/as-storage-v2"),
    ];
    let mut total = 0;
    let mut types = BTreeMap::new();
    for (kind, rel) in files {
        for events in sessions(kind, &root.join(rel)).values() {
            let ex = extract::extract(events, &Vec::new());
            for m in added(&ex) {
                total += 1;
                *types.entry(m.memory_type).or_insert(0) += 1;
                assert!(!m.content.is_empty() && m.importance > 0.0 && m.importance <= 1.0);
                // The harness's own tool errors are not lessons about a project.
                assert!(!m.content.contains("has not been read"), "{rel}: {}", m.content);
                // Never sourced from text that is not the user's or the agent's own.
                let src = events.iter().find(|e| Some(&e.id) == m.source_event.as_ref()).expect("source");
                if let Body::MsgIn(mi) = &src.body {
                    assert!(mi.is_user_prompt() && !mi.text.contains("<engram-context>"), "{rel}: {}", m.content);
                }
            }
        }
    }
    // The sidechains transcript has a build that failed four times, never fixed.
    assert!(types.get(&shared::storage::event::MemoryType::Struggle).copied().unwrap_or(0) >= 1, "{types:?}");
    assert!(total <= 20, "a handful of memories, not noise: {total}");
}

#[test]
#[ignore = "prints what is learned from ENGRAM_DUMP (a transcript path)"]
fn dump() {
    let path = std::env::var("ENGRAM_DUMP").expect("ENGRAM_DUMP");
    let kind = if path.contains("rollout") { SourceKind::CodexRollout } else { SourceKind::ClaudeTranscript };
    for (key, events) in sessions(kind, Path::new(&path)) {
        for c in extract::candidates(&events) {
            println!("{key} [{} {:.2}] {}", c.memory_type, c.importance, c.text);
        }
    }
}

const S: &str = "5e551011-0000-4000-8000-000000000001";

/// What is learned from a scripted session: (type, text).
fn learned(t: &common::Transcript) -> Vec<(String, String)> {
    extract::candidates(&t.events()).into_iter().map(|c| (c.memory_type.to_string(), c.text)).collect()
}

/// What is learned from `m` said after the agent ran something.
fn after_work(m: &str) -> Vec<(String, String)> {
    let mut t = common::Transcript::new(S, "/home/me/app");
    t.user("Fix the build.").bash("make", "ok", true).user(m);
    learned(&t)
}

/// What is learned from `m` as the session's first prompt.
fn as_first_prompt(m: &str) -> Vec<(String, String)> {
    let mut t = common::Transcript::new(S, "/home/me/app");
    t.user(m);
    learned(&t)
}

fn has(learned: &[(String, String)], kind: &str, needles: &[&str]) -> bool {
    learned.iter().any(|(k, t)| k == kind && needles.iter().all(|n| t.contains(n)))
}

#[test]
fn a_command_that_failed_then_worked_changed_is_learned() {
    let mut t = common::Transcript::new(S, "/home/me/svc");
    t.user("Run the test suite please.")
        .bash(
            "pytest",
            "Traceback (most recent call last):\n  File \"t.py\", line 1\nModuleNotFoundError: No module named 'app'",
            false,
        )
        .say("The tests cannot import the package; let me set the path.")
        .bash("PYTHONPATH=src pytest", "12 passed in 0.4s", true)
        .say("All 12 tests pass.");
    let got = learned(&t);
    assert!(
        has(&got, "gotcha", &["Run `PYTHONPATH=src pytest` instead of `pytest`", "No module named 'app'"]),
        "{got:#?}"
    );
}

#[test]
fn the_real_fix_is_credited_not_the_retry() {
    let mut t = common::Transcript::new(S, "/home/me/web");
    t.user("The rate limiter tests fail, can you check?")
        .bash("pnpm test", "> web@1.0.0 test\nError: connect ECONNREFUSED 127.0.0.1:6379\n    at TCPConnectWrap", false)
        .say("Redis is not running locally.")
        .bash("docker ps", "CONTAINER ID   IMAGE", true)
        .bash("docker compose up -d redis", "Container web-redis-1  Started", true)
        .bash("pnpm test", "Tests  41 passed (41)", true);
    let got = learned(&t);
    assert!(has(&got, "gotcha", &["Run `docker compose up -d redis` before `pnpm test`", "ECONNREFUSED"]), "{got:#?}");
    assert!(!got.iter().any(|(_, x)| x.contains("instead of") || x.contains("docker ps")), "{got:#?}");
}

#[test]
fn a_rejected_tool_call_and_the_users_correction_are_learned() {
    let mut t = common::Transcript::new(S, "/home/me/web");
    t.user("Add lodash to the project.")
        .reject_bash("npm install lodash", None)
        .user("Use pnpm for dependencies.")
        .bash("pnpm add lodash", "+ lodash 4.17.21", true);
    let got = learned(&t);
    assert!(has(&got, "correction", &["Use pnpm for dependencies", "instead of `npm install lodash`"]), "{got:#?}");

    // Feedback typed into the rejection itself.
    let mut t = common::Transcript::new(S, "/home/me/api");
    t.user("Regenerate the client.")
        .reject_bash("vim src/gen/client.ts", Some("Never edit src/gen by hand, run make gen."));
    let got = learned(&t);
    assert!(has(&got, "correction", &["Never edit src/gen by hand"]), "{got:#?}");
}

#[test]
fn two_rules_in_one_message_are_two_memories() {
    let mut t = common::Transcript::new(S, "/home/me/api");
    t.user(
        "Set up the CI job. Always run cargo fmt before committing. Integration tests must run with --test-threads=1.",
    );
    let got = learned(&t);
    assert!(has(&got, "convention", &["Always run cargo fmt before committing"]), "{got:#?}");
    assert!(has(&got, "convention", &["--test-threads=1"]), "{got:#?}");
    assert_eq!(got.len(), 2, "the request is not a rule: {got:#?}");
    let ids: BTreeSet<_> = extract::candidates(&t.events()).iter().map(|c| c.memory_id()).collect();
    assert_eq!(ids.len(), 2, "each rule has its own id");
}

#[test]
fn a_request_is_not_a_convention() {
    let mut t = common::Transcript::new(S, "/home/me/api");
    t.user("Add a /health endpoint that always returns 200 with the build version.")
        .say("I'll add it to the router.")
        .edit("src/routes.rs")
        .user("Thanks! Now make the metrics endpoint never cache its response.");
    let got = learned(&t);
    assert!(got.is_empty(), "{got:#?}");
}

#[test]
fn an_error_is_never_glued_to_unrelated_agent_text() {
    let mut t = common::Transcript::new(S, "/home/me/web");
    t.user("Update the README.")
        .bash("cat README.md", "# web", true)
        .bash("npm run docs", "npm ERR! Missing script: \"docs\"", false)
        .say("Note: the project has no `test` script; use `npm run lint` instead.")
        .say("Done.");
    let got = learned(&t);
    assert!(got.iter().all(|(_, x)| !x.contains("no `test` script")), "{got:#?}");
    // Harness errors about the agent's own tools are not lessons.
    let mut t = common::Transcript::new(S, "/home/me/web");
    t.user("Fix the typo.");
    let call = "The file has not been read";
    t.bash("true", call, true);
    let events = t.events();
    assert!(extract::candidates(&events).is_empty());
}

#[test]
fn a_failure_the_agent_explains_is_learned_with_its_cause() {
    let mut t = common::Transcript::new(S, "/home/me/api");
    t.user("Apply the migration.")
        .bash("cargo sqlx migrate run", "error: DATABASE_URL must be set", false)
        .say("The migration fails because sqlx needs DATABASE_URL; it has to be exported from .env first.")
        .user("Leave it, I'll do it later.");
    let got = learned(&t);
    assert!(
        has(&got, "gotcha", &["`cargo sqlx migrate run` fails", "DATABASE_URL must be set", "because sqlx needs"]),
        "{got:#?}"
    );
}

#[test]
fn a_correction_after_the_agent_acted() {
    let mut t = common::Transcript::new(S, "/home/me/web");
    t.user("Install the date library.")
        .bash("npm install dayjs", "added 1 package", true)
        .user("No, don't use npm here. We use pnpm, the lockfile is pnpm-lock.yaml. Thanks.");
    let got = learned(&t);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(has(&got, "correction", &["Don't use npm here; we use pnpm", "pnpm-lock.yaml"]), "{got:#?}");
    // Approval is not a correction.
    let mut t = common::Transcript::new(S, "/home/me/web");
    t.user("Install it.").bash("pnpm add dayjs", "ok", true).user("No, that's fine. Now add the date picker.");
    assert!(learned(&t).is_empty());
}

#[test]
fn a_changed_command_that_gets_further_is_the_fix_of_the_first_error() {
    // `go test -race` needs cgo; with it, the race detector finds a real race
    // that an edit fixes: the cgo change is a lesson, the code fix is not.
    let mut t = common::Transcript::new(S, "/home/me/ratelimiter");
    t.user("Find the data race with the race detector.")
        .bash("go test -race ./...", "go: -race requires cgo; enable cgo by setting CGO_ENABLED=1", false)
        .say("cgo is disabled in this environment (CGO_ENABLED=0 in the shell profile). I'll enable it.")
        .bash("CGO_ENABLED=1 go test -race ./...", "WARNING: DATA RACE\nFAIL\tgithub.com/acme/ratelimiter\t0.4s", false)
        .edit("bucket.go")
        .bash("CGO_ENABLED=1 go test -race ./...", "ok\tgithub.com/acme/ratelimiter\t1.2s", true);
    let got = learned(&t);
    assert!(
        has(&got, "gotcha", &["Run `CGO_ENABLED=1 go test -race ./...` instead of `go test -race ./...`"]),
        "{got:#?}"
    );
    assert_eq!(got.len(), 1, "{got:#?}");
}

#[test]
fn commands_that_did_nothing_or_do_not_exist_have_their_fix_learned() {
    let mut t = common::Transcript::new(S, "/home/me/orders");
    t.user("The store tests don't seem to run.")
        .bash("go test ./internal/store/...", "?   \tgithub.com/acme/orders/internal/store\t[no test files]", true)
        .bash(
            "go test -tags integration ./internal/store/...",
            "ok  \tgithub.com/acme/orders/internal/store\t3.1s",
            true,
        );
    assert!(has(&learned(&t), "gotcha", &["-tags integration", "instead of `go test ./internal/store/...`"]));

    let mut t = common::Transcript::new(S, "/home/me/analytics");
    t.user("Bring the stack up.").bash("docker-compose up -d", "bash: docker-compose: command not found", false).bash(
        "docker compose up -d",
        "Container analytics-db-1  Started",
        true,
    );
    assert!(has(&learned(&t), "gotcha", &["Run `docker compose up -d` instead of `docker-compose up -d`"]));

    // The same program, another command, right after: the way around it.
    let mut t = common::Transcript::new(S, "/home/me/dashboard");
    t.user("Run the tests.").bash("yarn test", "Usage Error: Couldn't find a script named \"test\".", false).bash(
        "yarn workspace @acme/charts vitest run",
        "Tests  4 passed (4)",
        true,
    );
    assert!(has(&learned(&t), "gotcha", &["Run `yarn workspace @acme/charts vitest run` instead of `yarn test`"]));
    // But a setup step before the same command works is not a way around it.
    let mut t = common::Transcript::new(S, "/home/me/dashboard");
    t.user("Run the tests.")
        .bash("npm test", "Error: Cannot find module 'vitest'", false)
        .bash("npm install", "added 212 packages", true)
        .bash("npm test", "Tests  4 passed (4)", true);
    assert!(has(&learned(&t), "gotcha", &["Run `npm install` before `npm test`"]), "{:#?}", learned(&t));
}

#[test]
fn a_personal_preference_belongs_to_no_project() {
    let mut t = common::Transcript::new(S, "/home/me/landing");
    t.user("Fix the hero spacing.")
        .edit("src/Hero.tsx")
        .say("I changed the spacing. Summary: the hero now uses 24px.")
        .user("Don't end with a summary of what you changed, I read the diff.");
    let c = extract::candidates(&t.events());
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!((c[0].memory_type.as_str(), c[0].project.as_deref()), ("preference", None), "{c:#?}");
    // A rule of this repository stays with it.
    let mut t = common::Transcript::new(S, "/home/me/landing");
    t.user("We use pnpm in this repo.");
    assert_eq!(extract::candidates(&t.events())[0].project.as_deref(), Some("landing"));
}

#[test]
fn a_rule_carried_over_from_another_project_is_learned() {
    let mut t = common::Transcript::new(S, "/home/me/status-page");
    t.user("Auto-refresh the incidents list.")
        .edit("app/incidents/List.tsx")
        .bash("yarn build", "Error: You're importing a component that needs useEffect.", false)
        .user("same as in the docs portal: components with hooks need \"use client\" as the first line.");
    let got = learned(&t);
    assert!(
        got.iter().any(|(_, x)| x.to_lowercase().starts_with("components with hooks need \"use client\"")),
        "{got:#?}"
    );

    let mut t = common::Transcript::new(S, "/home/me/imgresize");
    t.user("Use the image crate for decoding.")
        .edit("Cargo.toml")
        .user("cargo add, please, not hand edits of Cargo.toml. same rule in all my rust projects.");
    let got = learned(&t);
    assert!(got.iter().any(|(_, x)| x.to_lowercase().contains("cargo add") && x.contains("same rule")), "{got:#?}");

    let mut t = common::Transcript::new(S, "/home/me/backoffice");
    t.user("Check the refund admin tests still pass.")
        .bash("poetry run pytest refunds", "Command timed out after 2m 0.0s", false)
        .user("--reuse-db, like in the crm. creating the test db is too slow in all our django projects.");
    let got = learned(&t);
    assert!(got.iter().any(|(_, x)| x.contains("--reuse-db")), "{got:#?}");
}

#[test]
fn a_short_outburst_before_the_rule_is_kept_with_a_colon() {
    // "not the volumes!" then the rule: one memory that reads as a sentence,
    // not "Not the volumes the dev database lives in a volume".
    let mut t = common::Transcript::new(S, "/home/me/platform");
    t.user("Free some disk space, docker is using 40GB.")
        .reject_bash("docker system prune -a --volumes -f", None)
        .user("not the volumes! the dev database lives in a volume, never prune volumes here.");
    let got = learned(&t);
    assert!(
        has(&got, "correction", &["Not the volumes: the dev database lives in a volume, never prune volumes here"]),
        "{got:#?}"
    );
}

#[test]
fn held_out_batches_three_and_four_phrasings_are_learned_whole() {
    // A personal preference about a kind of thing, with a request tacked on.
    let mut t = common::Transcript::new(S, "/home/me/dashboard");
    t.user("Add a date filter.")
        .say("Added, with a comment above the filter.")
        .user("I don't want comments that just restate what the code does, drop that one");
    let got = learned(&t);
    assert!(has(&got, "preference", &["I don't want comments that just restate what the code does."]), "{got:#?}");
    assert!(!got.iter().any(|(_, x)| x.contains("drop that")), "{got:#?}");

    // "in this repo" does not lean on the request before it.
    let mut t = common::Transcript::new(S, "/home/me/dashboard");
    t.user("main moved, update the branch. in this repo we rebase on main, never merge main into the branch");
    let got = learned(&t);
    assert!(has(&got, "convention", &["In this repo we rebase on main"]), "{got:#?}");
    assert!(!got.iter().any(|(_, x)| x.contains("update the branch")), "{got:#?}");

    // A question, then "this repo uses …".
    let mut t = common::Transcript::new(S, "/home/me/widgets");
    t.user("The tooltip test is flaky.")
        .bash("npx jest src/Tooltip.test.tsx", "sh: 1: jest: not found", false)
        .user("why are you running jest? this repo uses vitest, run the tests with pnpm vitest run");
    let got = learned(&t);
    assert!(has(&got, "correction", &["This repo uses vitest"]), "{got:#?}");

    // "remember that" is not kept as "That …".
    let mut t = common::Transcript::new(S, "/home/me/orders-api");
    t.user(
        "handle it and return a 422. remember that every error response in this api must be application/problem+json",
    );
    let got = learned(&t);
    assert!(
        has(&got, "convention", &["Every error response in this api must be application/problem+json"]),
        "{got:#?}"
    );

    // A flagged fact about the user's machine is the reason of the rule after it, not a preference of its own.
    let mut t = common::Transcript::new(S, "/home/me/edge");
    t.user("build the proxy image")
        .bash("docker build -t proxy:1.4 .", "naming to proxy:1.4", true)
        .user("careful, my laptop is an arm mac and the servers are amd64. always build with --platform linux/amd64 in this repo");
    let got = learned(&t);
    assert!(
        has(&got, "convention", &["the servers are amd64; always build with --platform linux/amd64 in this repo"]),
        "{got:#?}"
    );
    assert!(!got.iter().any(|(k, _)| k == "preference"), "{got:#?}");
}

#[test]
fn venting_confessions_one_offs_and_pointers_are_not_lessons() {
    let learned_from = after_work;
    for m in [
        "ugh, the CI is always slow",
        "hmm the tests are always flaky on monday mornings",
        "I always forget the flags for tar",
        "also pack the fixtures into a tarball, I always forget the flags for tar",
        "this worked, thanks! always nice when it's that simple",
        "no, not that file, the other one",
        "don't worry about the lint warnings for now",
        "if we ever migrate to postgres we should use sqlx",
    ] {
        assert_eq!(learned_from(m), Vec::new(), "{m:?}");
    }
    // The rules beside them are kept whole.
    let got = learned_from("that's not how we do it. API keys live in 1password, never in .env files");
    assert_eq!(got, [("correction".to_owned(), "API keys live in 1password, never in .env files.".to_owned())]);
    let got = learned_from("Please always keep the tests green in this project.");
    assert!(has(&got, "convention", &["Always keep the tests green in this project."]), "{got:#?}");
    let got = learned_from("nope, wrong branch. I always work on feature branches off develop, never on main");
    assert!(has(&got, "preference", &["I always work on feature branches off develop"]), "{got:#?}");
}

#[test]
fn rules_in_everyday_phrasings_are_learned() {
    let learned_from = after_work;
    for (m, kind, text) in [
        ("we're a yarn shop, not npm", "convention", "We're a yarn shop, not npm."),
        (
            "migrations go through alembic revision --autogenerate, don't hand write them",
            "convention",
            "don't hand write them",
        ),
        ("pls use tabs not spaces in the makefile obviously", "convention", "Use tabs not spaces in the makefile"),
        (
            "the linter config is strict on purpose, don't disable rules inline",
            "convention",
            "don't disable rules inline",
        ),
        ("it's `make test`, not `go test`, the makefile sets the build tags", "convention", "not `go test`"),
        ("my rule: no new dependencies without asking me first", "preference", "no new dependencies without asking me"),
        ("keep PRs under 400 lines", "convention", "Keep PRs under 400 lines."),
        ("can you not use any here? we type everything strictly", "convention", "Don't use any here."),
        (
            "when you add an env var, also add it to .env.example with a dummy value",
            "convention",
            "When you add an env var, also add it to .env.example",
        ),
        ("we dropped moment last year, it's date-fns only in this codebase", "convention", "date-fns only"),
        (
            "the reason the e2e tests fail locally is that they need the seed data, so always run make seed before make e2e",
            "convention",
            "so always run make seed before make e2e",
        ),
        (
            "heads-up: the staging API rate-limits to 10 req/s, so the load test must target the local stack",
            "convention",
            "The staging API rate-limits",
        ),
        (
            "two things about this repo:\n1. start everything with make up, it builds the images first\n2. never edit docker-compose.yml",
            "convention",
            "Start everything with make up",
        ),
        (
            "the integration tests are behind the `it` feature, they need minio running. run them with cargo test --features it",
            "convention",
            "they need minio running; run them with cargo test --features it",
        ),
    ] {
        let got = learned_from(m);
        assert!(has(&got, kind, &[text]), "{m:?}: {got:#?}");
    }
    for m in [
        "it's fine, not a big deal",
        "we're almost done, not much left",
        "this test is broken, always has been",
        "I tried the patch, don't know why it still fails",
        "keep going",
        "run the whole test suite, I changed the date parsing everywhere",
        "when you're done, run the tests",
        "we moved the standup to 3pm, so let's keep this short",
        "a few things:\n- fix the typo in the header\n- bump the version\n- rerun the CI",
    ] {
        assert_eq!(learned_from(m), Vec::new(), "{m:?}");
    }
}

#[test]
fn first_prompts_about_the_task_at_hand_are_not_conventions() {
    let learned_from = as_first_prompt;
    for m in [
        "make sure the new endpoint is covered by tests",
        "the app must support dark mode by friday",
        "please don't break the public API while you do this",
        "remember to update the changelog for this release",
        "never mind, I found it",
        "read the slack webhook from the environment instead of the config file",
    ] {
        assert_eq!(learned_from(m), Vec::new(), "{m:?}");
    }
    let got = learned_from("remember to update the changelog when you add a command");
    assert!(has(&got, "convention", &["Remember to update the changelog"]), "{got:#?}");
    let got = learned_from("always run the new linter before pushing");
    assert!(has(&got, "convention", &["Always run the new linter"]), "{got:#?}");
}

#[test]
fn stop_doing_keeps_its_verb() {
    let mut t = common::Transcript::new(S, "/home/me/ingest");
    t.user("Why are events dropped?")
        .bash("python -c 'print(1)'", "1", true)
        .user("stop using print for debugging, use the structlog logger, it ends up in datadog");
    let got = learned(&t);
    assert!(has(&got, "correction", &["Stop using print for debugging, use the structlog logger"]), "{got:#?}");
}

#[test]
fn notes_list_every_user_sentence_with_its_cues_and_whether_it_was_kept() {
    let events = main_session(SourceKind::ClaudeTranscript, "claude_session.jsonl", CLAUDE_1);
    let notes = extract::notes(&events, None);
    let kept: Vec<&str> = notes.iter().filter(|n| n.kept).map(|n| n.text.as_str()).collect();
    // What the rules kept is what the memories were made of.
    let mems = added(&extract::extract(&events, &Vec::new()))
        .into_iter()
        .filter(|m| m.memory_type.as_str() != "struggle")
        .map(|m| m.content.to_lowercase())
        .collect::<Vec<_>>();
    assert!(!kept.is_empty());
    for k in &kept {
        let words: Vec<String> = k.split_whitespace().take(3).map(str::to_lowercase).collect();
        assert!(mems.iter().any(|m| m.contains(&words.join(" "))), "kept {k:?} is in no memory: {mems:#?}");
    }
    // Sentences not kept are listed too, each with its role and context.
    assert!(notes.iter().any(|n| !n.kept), "{notes:#?}");
    for n in &notes {
        assert_eq!(n.session, CLAUDE_1);
        assert_eq!(n.cues.iter().filter(|c| c.starts_with("role:")).count(), 1, "{n:?}");
        assert_eq!(n.cues.iter().filter(|c| c.starts_with("after:")).count(), 1, "{n:?}");
        assert!(events.iter().any(|e| e.id.as_str() == n.event));
    }
}
