//! Team sharing of tapes through git (issue 21): two data homes record
//! sessions and memories, export them into one repository on two branches,
//! `git merge`, import, and both see everything; imports are idempotent,
//! `verify` covers the shared folders and replay rebuilds the same.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{World, ingestor_data};
use shared::base::paths::Paths;

fn git(repo: &Path, args: &[&str]) -> String {
    let out = tests::isolated("git", repo)
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A home that scanned one Claude session (`fixture`, as session `uuid`) and
/// holds one memory added by hand; returns the world and the memory's id.
fn home(fixture: &str, uuid: &str, lesson: &str) -> (World, String) {
    let w = World::new();
    w.copy(&ingestor_data(fixture), &w.claude_projects().join(format!("-home-dev-webapp/{uuid}.jsonl")));
    w.scan();
    let id = w.ok(&["memory", "add", lesson, "--type", "convention"]).trim().to_owned();
    (w, id)
}

fn column(w: &World, sql: &str) -> BTreeSet<String> {
    let j = shared::projection::open(&Paths::at(w.home()), "check").unwrap();
    let mut stmt = j.store().conn().prepare(sql).unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().map(Result::unwrap).collect()
}

fn memories(w: &World) -> BTreeSet<String> {
    column(w, "SELECT id FROM memories WHERE is_deleted = 0")
}

fn sessions(w: &World) -> BTreeSet<String> {
    column(w, "SELECT session_key FROM sessions")
}

fn dump(w: &World) -> String {
    let j = shared::projection::open(&Paths::at(w.home()), "check").unwrap();
    shared::storage::store::canonical_dump(j.store().conn(), true).unwrap()
}

#[test]
fn two_homes_merge_their_tapes_through_git_and_both_see_everything() {
    let (a, mem_a) =
        home("claude_session.jsonl", "aaaaaaaa-1111-4111-8111-111111111111", "Run cargo fmt before committing.");
    let (b, mem_b) =
        home("claude_session_2.jsonl", "bbbbbbbb-2222-4222-8222-222222222222", "The staging database resets nightly.");
    assert_ne!(sessions(&a), sessions(&b));
    let repo_dir = tempfile::tempdir().unwrap();
    let repo = repo_dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "team\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "init"]);
    let repo_arg = repo.to_str().unwrap();

    // Each home exports on its own branch.
    git(repo, &["checkout", "-q", "-b", "alice"]);
    let out = a.ok(&["tapes", "export", repo_arg]);
    assert!(out.contains("copied"), "{out}");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "alice's tapes"]);
    git(repo, &["checkout", "-q", "main"]);
    git(repo, &["checkout", "-q", "-b", "bob"]);
    b.ok(&["tapes", "export", repo_arg]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "bob's tapes"]);
    // A merge of the two branches: no conflict, two home folders.
    git(repo, &["checkout", "-q", "alice"]);
    git(repo, &["merge", "-q", "--no-edit", "bob"]);
    let homes: Vec<_> = std::fs::read_dir(repo.join(".engram/tapes")).unwrap().collect();
    assert_eq!(homes.len(), 2);
    assert!(std::fs::read_to_string(repo.join(".engram/.gitattributes")).unwrap().contains("binary"));
    a.ok(&["tapes", "verify", repo_arg]);

    // Both import: each sees every session and memory.
    let all_sessions: BTreeSet<String> = sessions(&a).union(&sessions(&b)).cloned().collect();
    let all_memories: BTreeSet<String> = memories(&a).union(&memories(&b)).cloned().collect();
    assert!(all_memories.contains(&mem_a) && all_memories.contains(&mem_b));
    let out = a.ok(&["tapes", "import", repo_arg]);
    assert!(out.contains("added"), "{out}");
    b.ok(&["tapes", "import", repo_arg]);
    for w in [&a, &b] {
        assert_eq!(memories(w), all_memories);
        assert_eq!(sessions(w), all_sessions);
        let shown = w.ok(&["memory", "list"]);
        assert!(shown.contains("cargo fmt") && shown.contains("staging database"), "{shown}");
    }

    // Importing again adds nothing; so does the other side's export of
    // what it imported, merged back.
    let (lsn_a, lsn_b) = (a.last_lsn(), b.last_lsn());
    a.ok(&["tapes", "import", repo_arg]);
    b.ok(&["tapes", "export", repo_arg]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "bob again"]);
    let out = a.ok(&["tapes", "import", repo_arg]);
    assert!(out.contains(" 0 added"), "{out}");
    assert_eq!((a.last_lsn(), b.last_lsn()), (lsn_a, lsn_b));

    // The local logs hold the imported events: verify passes, and replay
    // rebuilds the same projection from them alone.
    for w in [&a, &b] {
        w.ok(&["tapes", "verify"]);
        let before = dump(w);
        w.ok(&["replay"]);
        assert_eq!(dump(w), before);
        assert_eq!(memories(w), all_memories);
    }
}

#[test]
fn a_damaged_or_missing_shared_segment_is_reported_and_not_imported() {
    let (a, _) = home("claude_session.jsonl", "aaaaaaaa-1111-4111-8111-111111111111", "Run cargo fmt first.");
    let (b, _) = home("claude_session_2.jsonl", "bbbbbbbb-2222-4222-8222-222222222222", "Staging resets nightly.");
    let shared_dir = tempfile::tempdir().unwrap();
    let dir = shared_dir.path().to_str().unwrap();
    b.ok(&["tapes", "export", dir]);
    b.ok(&["memory", "add", "A second segment's memory."]);
    b.ok(&["tapes", "export", dir]);
    let folder = std::fs::read_dir(shared_dir.path().join("tapes")).unwrap().next().unwrap().unwrap().path();
    let mut segs: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    segs.sort();
    assert_eq!(segs.len(), 2, "{segs:?}");
    let (lsn, mems) = (a.last_lsn(), memories(&a));
    let all: BTreeSet<String> = mems.union(&memories(&b)).cloned().collect();

    // A flipped byte: verify and import name the file; nothing is imported.
    let pristine = std::fs::read(&segs[1]).unwrap();
    let mut bad = pristine.clone();
    let at = bad.len() - 10;
    bad[at] ^= 0x40;
    std::fs::write(&segs[1], &bad).unwrap();
    for cmd in [["tapes", "verify", dir], ["tapes", "import", dir]] {
        let out = a.run(&cmd);
        assert!(!out.status.success(), "{cmd:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(segs[1].file_name().unwrap().to_str().unwrap()), "{cmd:?}: {text}");
    }
    assert_eq!((a.last_lsn(), memories(&a)), (lsn, mems.clone()));

    // The first segment missing: the gap is named, nothing is imported.
    std::fs::write(&segs[1], &pristine).unwrap();
    std::fs::remove_file(&segs[0]).unwrap();
    let out = a.run(&["tapes", "import", dir]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing"), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!((a.last_lsn(), memories(&a)), (lsn, mems));

    // Whole again: imported, once.
    b.ok(&["tapes", "export", dir]);
    a.ok(&["tapes", "import", dir]);
    assert_eq!(memories(&a), all);
    let lsn = a.last_lsn();
    a.ok(&["tapes", "import", dir]);
    assert_eq!(a.last_lsn(), lsn);
}

#[test]
fn a_data_homes_tape_folder_imports_directly_and_its_own_is_refused() {
    let (a, mem_a) = home("claude_session.jsonl", "aaaaaaaa-1111-4111-8111-111111111111", "Run cargo fmt first.");
    let (b, mem_b) = home("claude_session_2.jsonl", "bbbbbbbb-2222-4222-8222-222222222222", "Staging resets nightly.");
    // A copy of b's tape folder, active segment included.
    let all: BTreeSet<String> = memories(&a).union(&memories(&b)).cloned().collect();
    assert!(all.contains(&mem_a) && all.contains(&mem_b));
    let copy = tempfile::tempdir().unwrap();
    a.copy(&b.home().join("tapes"), copy.path());
    let _ = std::fs::remove_file(copy.path().join("LOCK"));
    a.ok(&["tapes", "import", copy.path().to_str().unwrap()]);
    assert_eq!(memories(&a), all);
    let own = a.run(&["tapes", "import", a.home().join("tapes").to_str().unwrap()]);
    assert!(!own.status.success());
}

/// Every folder of a shared directory is a plain folder of plain files: a
/// committed symbolic link to another data home's tapes on the teammate's
/// disk (or a hard link to one of its segments, or a link inside a folder)
/// is refused by name, nothing of it is imported, and so nothing of it is
/// published by the next export.
#[test]
fn an_import_refuses_links_out_of_the_shared_directory_and_publishes_nothing_of_them() {
    let (a, _) = home("claude_session.jsonl", "aaaaaaaa-1111-4111-8111-111111111111", "Run cargo fmt first.");
    let (other, secret) =
        home("claude_session_2.jsonl", "bbbbbbbb-2222-4222-8222-222222222222", "The other home's private lesson.");
    other.ok(&["compact"]); // seals: the other home's tapes hold a sealed segment
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(repo.join(".engram/tapes")).unwrap();
    // REPO/.engram/tapes/home-… -> ../../../<the other home>/tapes
    let other_tapes = other.home().join("tapes");
    let up = pathdiff(&other_tapes, &repo.join(".engram/tapes"));
    let link = repo.join(".engram/tapes/home-aaaaaaaaaaaaaaaa");
    std::os::unix::fs::symlink(&up, &link).unwrap();
    assert!(link.join("LOCK").exists(), "the link resolves to the other home's tapes");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "a link"]);
    let repo_arg = repo.to_str().unwrap();
    let other_before = std::fs::read_dir(&other_tapes).unwrap().count();

    let (lsn, mems) = (a.last_lsn(), memories(&a));
    for cmd in [["tapes", "import", repo_arg], ["tapes", "verify", repo_arg]] {
        let out = a.run(&cmd);
        assert!(!out.status.success(), "{cmd:?} must refuse a linked folder");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("home-aaaaaaaaaaaaaaaa") && text.contains("symbolic link"), "{cmd:?}: {text}");
    }
    assert_eq!((a.last_lsn(), memories(&a)), (lsn, mems.clone()), "nothing was imported");
    assert!(!memories(&a).contains(&secret));
    assert_eq!(std::fs::read_dir(&other_tapes).unwrap().count(), other_before, "nothing was written there");
    // What the next export publishes holds nothing of the other home.
    a.ok(&["tapes", "export", repo_arg]);
    let published = std::fs::read_dir(repo.join(".engram/tapes")).unwrap().count();
    assert_eq!(published, 2, "the link and this home's own folder");
    let b = World::new();
    std::fs::remove_file(&link).unwrap();
    b.ok(&["tapes", "import", repo_arg]);
    assert_eq!(memories(&b), mems, "the export carries this home's memories alone");

    // A plain folder whose segment is a hard link to the other home's
    // segment, or which holds a symbolic link: refused the same way.
    let sealed: Vec<_> = std::fs::read_dir(&other_tapes)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    assert!(!sealed.is_empty());
    let folder = repo.join(".engram/tapes/home-bbbbbbbbbbbbbbbb");
    std::fs::create_dir_all(&folder).unwrap();
    for s in &sealed {
        std::fs::hard_link(s, folder.join(s.file_name().unwrap())).unwrap();
    }
    let out = a.run(&["tapes", "import", repo_arg]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("hard links") && text.contains(sealed[0].file_name().unwrap().to_str().unwrap()), "{text}");
    for s in &sealed {
        let copy = folder.join(s.file_name().unwrap());
        std::fs::remove_file(&copy).unwrap();
        std::fs::copy(s, &copy).unwrap();
    }
    std::os::unix::fs::symlink(other.home().join("home-id"), folder.join("notes")).unwrap();
    let out = a.run(&["tapes", "import", repo_arg]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("notes") && text.contains("symbolic link"), "{text}");
    assert_eq!((a.last_lsn(), memories(&a)), (lsn, mems), "nothing was imported");
    // Plain copies import.
    std::fs::remove_file(folder.join("notes")).unwrap();
    a.ok(&["tapes", "import", repo_arg]);
    assert!(memories(&a).contains(&secret));
}

/// `to` relative to the directory `from` (both absolute).
fn pathdiff(to: &Path, from: &Path) -> std::path::PathBuf {
    let (to, from) = (to.components().collect::<Vec<_>>(), from.components().collect::<Vec<_>>());
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut out = std::path::PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c);
    }
    out
}
