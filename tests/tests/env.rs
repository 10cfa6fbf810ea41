//! Project identity end to end (issue 15 item 1): real folders with real
//! marker files, a real transcript scanned by `engram-ingestor`, and the
//! read-side hooks of `engram-scorer` run as Claude Code runs them.

#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::World;
use serde_json::{Value, json};
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event, MemoryAdded, SessionStarted};

/// The correction the extractor turns into memories.
const LESSON: &str = "No, don't use npm here. We use pnpm in this repo, always run pnpm install first.";

fn git_repo(dir: &Path, remote: Option<&str>) {
    fs::create_dir_all(dir.join(".git/refs/heads")).unwrap();
    fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let mut config = "[core]\n\trepositoryformatversion = 0\n".to_owned();
    if let Some(r) = remote {
        config.push_str(&format!("[remote \"origin\"]\n\turl = {r}\n"));
    }
    fs::write(dir.join(".git/config"), config).unwrap();
}

fn file(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// `Demo/` (a repository) holding `todo-app/` (a Node package) and its
/// `types/` folder.
fn make_demo(w: &World) -> PathBuf {
    let demo = w.root().join("code/Demo");
    git_repo(&demo, None);
    file(&demo.join("todo-app/package.json"), r#"{"name":"todo-app","devDependencies":{"typescript":"5"}}"#);
    file(&demo.join("todo-app/pnpm-lock.yaml"), "lockfileVersion: 9\n");
    fs::create_dir_all(demo.join("todo-app/types")).unwrap();
    demo
}

/// A Claude Code transcript of one session in `cwd` whose user states [`LESSON`].
fn transcript(w: &World, cwd: &Path, session: &str) {
    let cwd = cwd.to_str().unwrap();
    let rec = |i: u32, kind: &str, message: Value| {
        json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd, "sessionId": session,
               "version": "2.1.90", "gitBranch": "main", "type": kind, "uuid": format!("{session}-{i}"),
               "timestamp": format!("2026-01-02T03:{i:02}:00.000Z"), "message": message})
        .to_string()
    };
    let lines = [
        rec(1, "user", json!({"role": "user", "content": "Add a script that runs the unit tests."})),
        rec(
            2,
            "assistant",
            json!({"id": "m1", "role": "assistant", "model": "claude-sonnet-4",
                                    "content": [{"type": "text", "text": "I'll run npm install first."}]}),
        ),
        rec(3, "user", json!({"role": "user", "content": LESSON})),
        rec(
            4,
            "assistant",
            json!({"id": "m2", "role": "assistant", "model": "claude-sonnet-4",
                                    "content": [{"type": "text", "text": "Understood, using pnpm."}]}),
        ),
    ];
    let dir = w.claude_projects().join(cwd.replace('/', "-"));
    file(&dir.join(format!("{session}.jsonl")), &(lines.join("\n") + "\n"));
}

fn session_start(w: &World, cwd: &Path, session: &str) -> Output {
    let input = json!({
        "session_id": session,
        "transcript_path": w.claude_projects().join(format!("x/{session}.jsonl")),
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    w.hook(w.scorer(&["hook", "session-start"]), input.to_string().as_bytes())
}

/// The memory ids a hook injected.
fn injected(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    if out.stdout.is_empty() {
        return Vec::new();
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    text.lines().filter_map(|l| l.strip_prefix("- ")).map(|l| l.split(' ').next().unwrap().to_owned()).collect()
}

fn strings(w: &World, sql: &str) -> Vec<String> {
    let store = w.store();
    let mut stmt = store.conn().prepare(sql).unwrap();
    stmt.query_map([], |r| r.get::<_, Option<String>>(0)).unwrap().map(|r| r.unwrap().unwrap_or_default()).collect()
}

fn key(dir: &Path) -> String {
    dir.to_str().unwrap().to_owned()
}

#[test]
fn a_session_in_a_subfolder_files_its_memories_under_the_repository() {
    let w = World::new();
    let demo = make_demo(&w);
    let types = demo.join("todo-app/types");
    transcript(&w, &types, "11111111-aaaa-4aaa-8aaa-111111111111");
    w.scan();

    let memories = strings(&w, "SELECT id FROM memories WHERE is_deleted = 0 ORDER BY id");
    assert!(!memories.is_empty(), "the correction was learned");
    assert_eq!(strings(&w, "SELECT DISTINCT project FROM memories"), vec![key(&demo)]);
    assert_eq!(strings(&w, "SELECT project FROM sessions"), vec![key(&demo)]);
    let (name, marker, stack): (String, String, String) = w
        .store()
        .conn()
        .query_row("SELECT name, marker, detected_stack FROM projects", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!((name.as_str(), marker.as_str()), ("Demo", ".git"));
    for t in ["nodejs", "pnpm", "typescript"] {
        assert!(stack.contains(t), "{t} in {stack}");
    }

    // The repository's root, its package and the folder itself get them at
    // session start: one project.
    for (i, dir) in [demo.clone(), demo.join("todo-app"), types.clone()].iter().enumerate() {
        let got = injected(&session_start(&w, dir, &format!("2222222{i}-bbbb-4bbb-8bbb-222222222222")));
        for m in &memories {
            assert!(got.contains(m), "{m} not injected in {}: {got:?}", dir.display());
        }
    }
    w.wait_for_recorder();
    // The hooks recorded each session's detected project.
    assert_eq!(
        strings(&w, "SELECT DISTINCT project FROM session_env ORDER BY project"),
        vec![key(&demo)],
        "every session in the repository is the repository's"
    );
}

#[test]
fn a_subfolder_never_calls_the_repository_s_memories_another_project() {
    let w = World::new();
    let demo = make_demo(&w);
    transcript(&w, &demo, "33333333-cccc-4ccc-8ccc-333333333333");
    w.scan();
    let memories = strings(&w, "SELECT id FROM memories WHERE is_deleted = 0");
    assert!(!memories.is_empty());
    let sub = demo.join("todo-app/types");
    let preview: Value = serde_json::from_str(&tests::success_stdout(
        "context",
        w.scorer(&["context", "--json", "--cwd", sub.to_str().unwrap()]).output().unwrap(),
    ))
    .unwrap();
    assert_eq!(preview["session_context"]["project"], key(&demo));
    assert_eq!(preview["session_context"]["name"], "Demo");
    // The session's tags are shown (the package's stack, from its files).
    let tags: Vec<&str> =
        preview["environment"]["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in ["nodejs", "pnpm", "typescript"] {
        assert!(tags.contains(&t), "{t} in {tags:?}");
    }
    let text =
        tests::success_stdout("context", w.scorer(&["context", "--cwd", sub.to_str().unwrap()]).output().unwrap());
    assert!(text.contains("project: Demo (") && text.contains("tags: ") && text.contains("pnpm"), "{text}");
    assert!(preview["query"].as_str().unwrap().starts_with("Demo · "), "{}", preview["query"]);
    for item in preview["items"].as_array().unwrap() {
        let why = item["not_injected"].as_str().unwrap_or("");
        assert!(!why.contains("another project"), "{item}");
    }
    let injected: Vec<&str> = preview["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["injected"] == true)
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    for m in &memories {
        assert!(injected.contains(&m.as_str()), "{m} not injected: {preview}");
    }
}

#[test]
fn two_repositories_with_one_folder_name_never_share_memories() {
    let w = World::new();
    let work = w.root().join("work/api");
    let play = w.root().join("play/api");
    git_repo(&work, Some("git@github.com:acme/api.git"));
    git_repo(&play, None);
    transcript(&w, &work, "44444444-dddd-4ddd-8ddd-444444444444");
    w.scan();
    let memories = strings(&w, "SELECT id FROM memories WHERE is_deleted = 0");
    assert!(!memories.is_empty());
    assert_eq!(strings(&w, "SELECT DISTINCT project FROM memories"), vec!["github.com/acme/api".to_owned()]);

    let there = injected(&session_start(&w, &work.join("src"), "55555555-eeee-4eee-8eee-555555555555"));
    assert!(memories.iter().all(|m| there.contains(m)), "{there:?}");
    let elsewhere = injected(&session_start(&w, &play, "66666666-ffff-4fff-8fff-666666666666"));
    assert!(memories.iter().all(|m| !elsewhere.contains(m)), "another repository named api got {elsewhere:?}");
    w.wait_for_recorder();
    let keys = strings(&w, "SELECT key FROM projects WHERE name = 'api' ORDER BY key");
    assert_eq!(keys, vec![key(&play), "github.com/acme/api".to_owned()]);
}

#[test]
fn what_an_older_version_recorded_gets_its_project_on_the_next_scan_and_on_replay() {
    let w = World::new();
    let demo = make_demo(&w);
    let types = demo.join("todo-app/types");
    // The log of an older version: projects were folder names.
    let session = SessionKey::new("claude", "77777777-aaaa-4aaa-8aaa-777777777777");
    let t = Ts::now().0 - 86_400_000;
    let memory = |i: usize, project: &str, source: Option<&SessionKey>| {
        Event::new(
            Ts(t + i as i64),
            "engram-ingestor/0.0.9",
            source.cloned(),
            Body::MemoryAdded(MemoryAdded {
                memory_id: MemoryId(format!("mem_old{i}")),
                content: format!("Old lesson {i}: the todo app's types are generated by pnpm codegen."),
                memory_type: shared::storage::event::MemoryType::Convention,
                importance: 0.7,
                project: Some(project.into()),
                source: "extracted".into(),
                source_session: source.cloned(),
                ..Default::default()
            }),
        )
    };
    let mut j = shared::projection::open(&Paths::at(w.home()), "engram-ingestor/0.0.9").unwrap();
    j.append(&[
        Event::new(
            Ts(t),
            "engram-ingestor/0.0.9",
            Some(session.clone()),
            Body::SessionStarted(SessionStarted {
                harness: "claude".into(),
                harness_session_id: session.harness_id().into(),
                project: Some("types".into()),
                cwd: Some(key(&types)),
                ..Default::default()
            }),
        ),
        memory(1, "types", Some(&session)),
        // `memory add --project Demo` outside any session.
        memory(2, "Demo", None),
        // A name no project has: left alone.
        memory(3, "elsewhere", None),
    ])
    .unwrap();
    drop(j);

    w.scan();
    let project = |id: &str| strings(&w, &format!("SELECT project FROM memories WHERE id = '{id}'")).remove(0);
    assert_eq!(project("mem_old1"), key(&demo));
    assert_eq!(project("mem_old2"), key(&demo));
    assert_eq!(project("mem_old3"), "elsewhere");
    assert_eq!(strings(&w, "SELECT project FROM sessions"), vec![key(&demo)]);
    // A second scan adds nothing.
    let lsn = w.last_lsn();
    w.scan();
    assert_eq!(w.last_lsn(), lsn);

    // Replay rebuilds the same from the tapes alone, whatever the folders
    // have become since.
    let before = shared::storage::store::canonical_dump(w.store().conn(), true).unwrap();
    fs::remove_dir_all(&demo).unwrap();
    w.ok(&["replay"]);
    assert_eq!(shared::storage::store::canonical_dump(w.store().conn(), true).unwrap(), before);

    // A session in the (restored) repository gets the old lessons, not the
    // one of the unknown project.
    make_demo(&w);
    let got = injected(&session_start(&w, &demo, "88888888-bbbb-4bbb-8bbb-888888888888"));
    assert!(got.contains(&"mem_old1".to_owned()) && got.contains(&"mem_old2".to_owned()), "{got:?}");
    assert!(!got.contains(&"mem_old3".to_owned()), "{got:?}");
}

/// A React project: a repository with its own remote, React and TypeScript
/// in package.json, npm's lock file.
fn react_project(w: &World, name: &str) -> PathBuf {
    let dir = w.root().join("code").join(name);
    git_repo(&dir, Some(&format!("git@github.com:acme/{name}.git")));
    file(
        &dir.join("package.json"),
        &format!(
            r#"{{"name":"{name}","dependencies":{{"react":"18","react-dom":"18"}},"devDependencies":{{"typescript":"5"}}}}"#
        ),
    );
    file(&dir.join("package-lock.json"), "{}");
    file(&dir.join("tsconfig.json"), "{}");
    dir
}

/// A Claude Code transcript of one session in `cwd` whose user states `lesson`.
fn transcript_saying(w: &World, cwd: &Path, session: &str, lesson: &str) {
    let cwd_s = cwd.to_str().unwrap();
    let rec = |i: u32, kind: &str, message: Value| {
        json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd_s, "sessionId": session,
               "version": "2.1.90", "gitBranch": "main", "type": kind, "uuid": format!("{session}-{i}"),
               "timestamp": format!("2026-01-0{}T03:{i:02}:00.000Z", 2 + session.len() % 5), "message": message})
        .to_string()
    };
    let lines = [
        rec(1, "user", json!({"role": "user", "content": "Add the settings page."})),
        rec(
            2,
            "assistant",
            json!({"id": "m1", "role": "assistant", "model": "claude-sonnet-4",
                                    "content": [{"type": "text", "text": "Adding the settings page component."}]}),
        ),
        rec(3, "user", json!({"role": "user", "content": lesson})),
        rec(
            4,
            "assistant",
            json!({"id": "m2", "role": "assistant", "model": "claude-sonnet-4",
                                    "content": [{"type": "text", "text": "Will do."}]}),
        ),
    ];
    let dir = w.claude_projects().join(cwd_s.replace('/', "-"));
    file(&dir.join(format!("{session}.jsonl")), &(lines.join("\n") + "\n"));
}

/// Issue 17's goal: a lesson learned in two React projects reaches a third
/// React project at its first session start, and never a Rust project (nor a
/// React project that uses another package manager).
#[test]
fn a_lesson_of_two_react_projects_reaches_a_third_and_never_a_rust_project() {
    let w = World::new();
    let lesson = "Always run npm run typecheck before you commit React components.";
    let (a, b, c) = (react_project(&w, "shop"), react_project(&w, "admin"), react_project(&w, "blog"));
    let rust = w.root().join("code/engine");
    git_repo(&rust, Some("git@github.com:acme/engine.git"));
    file(&rust.join("Cargo.toml"), "[package]\nname = 'engine'\n[dependencies]\ntokio = '1'\n");
    let pnpm = react_project(&w, "docs");
    fs::remove_file(pnpm.join("package-lock.json")).unwrap();
    file(&pnpm.join("pnpm-lock.yaml"), "lockfileVersion: 9\n");

    transcript_saying(&w, &a, "aaaaaaaa-1111-4111-8111-111111111111", lesson);
    w.scan();
    let learned = strings(&w, "SELECT id FROM memories WHERE is_deleted = 0 AND content LIKE '%typecheck%'");
    assert_eq!(learned.len(), 1, "{learned:?}");
    let m = &learned[0];
    // Learned in one project only: it does not reach another React project yet.
    let got = injected(&session_start(&w, &c, "cccccccc-0000-4000-8000-000000000000"));
    assert!(!got.contains(m), "a lesson of one project reached another: {got:?}");

    transcript_saying(&w, &b, "bbbbbbbb-2222-4222-8222-222222222222", lesson);
    w.scan();
    let (projects, tags): (i64, String) = w
        .store()
        .conn()
        .query_row("SELECT env_projects, env_tags FROM memories WHERE id = ?1", [m], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(projects, 2, "seen again in the second project");
    for t in ["frontend", "nodejs", "npm", "react", "typescript"] {
        assert!(tags.contains(t), "{t} in {tags}");
    }

    let got = injected(&session_start(&w, &c, "cccccccc-3333-4333-8333-333333333333"));
    assert!(got.contains(m), "the third React project did not get it at its first session start: {got:?}");
    let got = injected(&session_start(&w, &rust, "dddddddd-4444-4444-8444-444444444444"));
    assert!(!got.contains(m), "a Rust project got it: {got:?}");
    let got = injected(&session_start(&w, &pnpm, "eeeeeeee-5555-4555-8555-555555555555"));
    assert!(!got.contains(m), "a pnpm project got an npm lesson: {got:?}");
    // `context` says why.
    let preview: Value = serde_json::from_str(&tests::success_stdout(
        "context",
        w.scorer(&["context", "--json", "--cwd", c.to_str().unwrap()]).output().unwrap(),
    ))
    .unwrap();
    let item = preview["items"].as_array().unwrap().iter().find(|i| i["id"] == m.as_str()).unwrap().clone();
    assert!(item["reasons"].to_string().contains("other projects of this stack"), "{item}");
}

/// Sends MCP `tools/call`s to `engram-scorer mcp`; returns each call's
/// structured result (or its error text), in order.
fn mcp_calls(w: &World, calls: &[(&str, Value)]) -> Vec<Value> {
    use std::io::Write;
    use std::process::Stdio;
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (i, (name, args)) in calls.iter().enumerate() {
        lines.push(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": name, "arguments": args}}),
        );
    }
    let mut child =
        w.scorer(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let input: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let by_id: std::collections::BTreeMap<u64, Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| Some((v["id"].as_u64()?, v)))
        .collect();
    (1..=calls.len() as u64)
        .map(|i| {
            let r = &by_id[&i]["result"];
            if r["isError"] == true {
                json!({"error": r["content"][0]["text"]})
            } else {
                r["structuredContent"].clone()
            }
        })
        .collect()
}

/// Seed 001 categories and seed 000 prerequisites, end to end: set through
/// the ingestor's CLI and the scorer's MCP tools, used by `search`, `list`
/// and the session-start hook, and restored by replay.
#[test]
fn categories_and_prerequisites_through_the_cli_the_mcp_tools_and_replay() {
    let w = World::new();
    let app = react_project(&w, "shop");
    let id = w.ok(&["memory", "add", "Run npm run typecheck before you commit components.", "--pin"]).trim().to_owned();

    // Categories: paths normalised, ancestors known, filters match below.
    let said = w.ok(&["memory", "categorize", &id, "--add", "Development / Frontend/React", "--add", "tools"]);
    assert!(said.contains("development/frontend/react, tools"), "{said}");
    let known = strings(&w, "SELECT path FROM categories ORDER BY path");
    assert_eq!(known, ["development", "development/frontend", "development/frontend/react", "tools"]);
    let listed = |c: &str| w.ok(&["memory", "list", "--category", c]);
    assert!(listed("development").contains(&id) && listed("development/frontend/react").contains(&id));
    assert!(!listed("develop").contains(&id) && !listed("backend").contains(&id));
    let search = |c: &str| {
        let out = w.scorer(&["search", "typecheck", "--json", "--category", c]).output().unwrap();
        tests::success_stdout("search", out)
    };
    assert!(search("development/frontend").contains(&id));
    assert!(!search("backend").contains(&id));
    assert!(w.run(&["memory", "categorize", &id, "--add", "a//b"]).status.code() != Some(0), "an empty segment");

    // Prerequisites: a pin on another operating system is not injected here;
    // tags never gate.
    let start = |n: u32| injected(&session_start(&w, &app, &format!("aaaaaaaa-0000-4000-8000-00000000000{n}")));
    assert!(start(1).contains(&id), "pinned, no prerequisites");
    w.ok(&["memory", "pin", &id, "--prerequisites", r#"{"os": ["plan9"], "tags": ["rust"]}"#]);
    assert!(!start(2).contains(&id), "another os's memory was injected");
    let preview: Value = serde_json::from_str(&tests::success_stdout(
        "context",
        w.scorer(&["context", "--json", "--cwd", app.to_str().unwrap()]).output().unwrap(),
    ))
    .unwrap();
    assert!(preview.to_string().contains("prerequisites"), "context says why: {preview}");
    let os = std::env::consts::OS;
    w.ok(&["memory", "update", &id, "--prerequisites", &format!(r#"{{"os": ["{os}"], "tags": ["react"]}}"#)]);
    assert!(start(3).contains(&id), "its prerequisites hold here");
    assert!(w.run(&["memory", "update", &id, "--prerequisites", r#"{"planet": ["mars"]}"#]).status.code() != Some(0));

    // The MCP tools: categorize, update (category, prerequisites), feedback
    // that narrows where it applies, deprecate.
    let r = mcp_calls(
        &w,
        &[
            ("memory_categorize", json!({"id": id, "remove": ["tools"], "add": ["testing"]})),
            ("memory_update", json!({"id": id, "category": "Development/Frontend"})),
            ("memory_feedback", json!({"id": id, "applicable": false, "add_prerequisites": {"repos": ["shop"]}})),
            ("memory_list", json!({"category": "development"})),
            ("memory_update", json!({"id": id, "prerequisites": "{\"color\": 1}"})),
            ("memory_categorize", json!({"id": "mem_nope", "add": ["x"]})),
        ],
    );
    assert_eq!(r[0]["categories"], json!(["development/frontend/react", "testing"]), "{r:?}");
    assert_eq!(r[1]["categories"], json!(["development/frontend"]), "{r:?}");
    assert_eq!(r[2]["prerequisites"], json!({"tags": ["react"], "repos": ["shop"], "os": [os]}), "{r:?}");
    assert_eq!(r[3]["total"], 1, "{r:?}");
    assert!(r[4]["error"].as_str().unwrap().contains("color"), "{r:?}");
    assert!(r[5]["error"].as_str().unwrap().contains("mem_nope"), "{r:?}");
    assert!(start(4).contains(&id), "repo shop holds in shop");

    // Everything above is in the tape log: replay gives the same projection.
    w.wait_for_recorder();
    let before = shared::storage::store::canonical_dump(w.store().conn(), true).unwrap();
    assert!(before.contains("development/frontend") && before.contains("repos"), "categories and prerequisites dumped");
    w.ok(&["replay"]);
    assert_eq!(shared::storage::store::canonical_dump(w.store().conn(), true).unwrap(), before);

    let r = mcp_calls(&w, &[("memory_deprecate", json!({"id": id, "reason": "moved to CI"}))]);
    assert_eq!(r[0]["deprecated"], true, "{r:?}");
    assert!(!start(5).contains(&id), "a deprecated memory is not injected");
}

/// `[env] skip_tools` (seed 000 "PreToolUse"): nothing is ranked or injected
/// before a listed tool; other tools still get their memories.
#[test]
fn skip_tools_keep_pre_tool_use_quiet_for_the_listed_tools() {
    let w = World::new();
    let app = react_project(&w, "shop");
    fs::create_dir_all(w.home()).unwrap();
    fs::write(w.home().join("config.toml"), "[env]\nskip_tools = [\"Bash\", \"mcp__github__*\"]\n").unwrap();
    w.ok(&["memory", "add", "The deploy script needs AWS_PROFILE=staging before ./deploy.sh runs.", "--pin"]);
    let call = |tool: &str, input: Value| {
        let hook = json!({"session_id": "bbbbbbbb-0000-4000-8000-000000000001", "cwd": app,
                          "transcript_path": w.claude_projects().join("x/b.jsonl"),
                          "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input});
        w.hook(w.scorer(&["hook", "pre-tool-use"]), hook.to_string().as_bytes())
    };
    let bash = call("Bash", json!({"command": "./deploy.sh staging"}));
    assert!(bash.status.success() && bash.stdout.is_empty(), "{}", String::from_utf8_lossy(&bash.stdout));
    let gh = call("mcp__github__create_issue", json!({"title": "deploy.sh staging fails"}));
    assert!(gh.status.success() && gh.stdout.is_empty(), "{}", String::from_utf8_lossy(&gh.stdout));
    let edit = call("Edit", json!({"file_path": "deploy.sh", "old_string": "staging", "new_string": "prod"}));
    assert!(!injected(&edit).is_empty(), "a tool not listed still gets memories");
}
