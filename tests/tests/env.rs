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
use shared::event::{Body, Event, MemoryAdded, SessionStarted};
use shared::ids::{MemoryId, SessionKey};
use shared::journal::Journal;
use shared::paths::Paths;
use shared::time::Ts;

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
                memory_type: "convention".into(),
                importance: 0.7,
                project: Some(project.into()),
                source: "extracted".into(),
                source_session: source.cloned(),
                ..Default::default()
            }),
        )
    };
    let mut j = Journal::open(&Paths::at(w.home()), "engram-ingestor/0.0.9").unwrap();
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
    let before = shared::store::canonical_dump(w.store().conn(), true).unwrap();
    fs::remove_dir_all(&demo).unwrap();
    w.ok(&["replay"]);
    assert_eq!(shared::store::canonical_dump(w.store().conn(), true).unwrap(), before);

    // A session in the (restored) repository gets the old lessons, not the
    // one of the unknown project.
    make_demo(&w);
    let got = injected(&session_start(&w, &demo, "88888888-bbbb-4bbb-8bbb-888888888888"));
    assert!(got.contains(&"mem_old1".to_owned()) && got.contains(&"mem_old2".to_owned()), "{got:?}");
    assert!(!got.contains(&"mem_old3".to_owned()), "{got:?}");
}
