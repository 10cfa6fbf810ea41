//! Project identity (seed 004 "Project Detection"): the root a working
//! directory belongs to, the key that identifies that project, and the name
//! people see.
//!
//! **Root.** Walk up from the working directory to the first directory that
//! holds a marker ([`MARKERS`]: `.git` as a directory or, in a worktree or a
//! submodule, a file; `.claude/`; `package.json`, `Cargo.toml`,
//! `pyproject.toml`, `go.mod`, `pom.xml`, `build.gradle`). If that directory
//! or one above it is in a git repository, the project is the repository: its
//! working tree's top (a package or a subfolder of a repository maps to the
//! repository, so `Demo/todo-app/types` is project `Demo` when `Demo` is the
//! repository, even though `todo-app` has a `package.json`). Otherwise the
//! marker's directory is the root, and without any marker the working
//! directory itself (the seed's fallback).
//!
//! The home directory is never a root for a directory below it: `~/.claude/`
//! is Claude Code's own configuration, and a dotfiles repository at `~` is
//! not the project of every folder under it. The walk stops below `$HOME`.
//!
//! **Key.** Two repositories that share a folder name must never merge, and
//! one repository checked out twice (a worktree, a fresh clone, a teammate's
//! clone) should stay one project. So the key is the repository's `origin`
//! remote (else its first remote), normalised to `host/path` without scheme,
//! user, password, port or `.git` (`git@github.com:acme/app.git` and
//! `https://token@github.com/acme/app` are both `github.com/acme/app`: no
//! credential ever reaches an event). A repository without a network remote
//! is keyed by the path of its main working tree (a worktree's key is its
//! repository's), and a root that is not a repository by its own path. Keys
//! always contain a `/`; the folder names older versions stored as projects
//! never do ([`is_key`]).
//!
//! **Name.** The remote's last path segment, else the main working tree's
//! folder name, else the root's folder name.
//!
//! Nothing here runs git: `.git` files, `commondir` and `config` are read
//! directly, which costs a few system calls.

use std::fs;
use std::path::{Component, Path, PathBuf};

/// The project markers of seed 004, in the order they are reported.
pub const MARKERS: &[&str] =
    &[".git", ".claude", "package.json", "Cargo.toml", "pyproject.toml", "go.mod", "pom.xml", "build.gradle"];

/// Largest git `config` or `.git` file read.
const MAX_GIT_FILE: u64 = 1 << 20;

/// Where a working directory's project is, and who it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectIdentity {
    /// The working directory, normalised.
    pub cwd: PathBuf,
    /// The project's root directory (a repository's working tree top, a
    /// marker's directory, or the working directory).
    pub root: PathBuf,
    /// The key (see the module docs).
    pub key: String,
    /// The name shown to people.
    pub name: String,
    /// The marker that decided the root (`.git`, `package.json`, …); `None`
    /// when nothing was found and the working directory is the root.
    pub marker: Option<String>,
    /// The normalised remote, for a repository that has one.
    pub remote: Option<String>,
    /// The directories from the working directory up to the root, nearest
    /// first: where stack and tag detection look for marker files.
    pub dirs: Vec<PathBuf>,
}

/// Whether a stored project value is a key (it has a `/`) rather than the bare
/// folder name that versions before project detection stored.
pub fn is_key(project: &str) -> bool {
    project.contains('/')
}

/// Finds the project of `cwd` (see the module docs). `home` is the user's home
/// directory, if known. Never fails: a directory that cannot be read counts as
/// one without markers, and a working directory that does not exist falls back
/// to itself like any directory without markers.
pub fn identify(cwd: &Path, home: Option<&Path>) -> ProjectIdentity {
    let cwd = normalize(cwd);
    let home = home.map(normalize).filter(|h| h.parent().is_some());
    let walk: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| match &home {
            // Below $HOME the walk stops before it; at or outside it, it goes to `/`.
            Some(h) if cwd != *h && cwd.starts_with(h) => *d != h.as_path(),
            _ => true,
        })
        .collect();
    let mut nearest: Option<(usize, &'static str)> = None;
    for (i, d) in walk.iter().enumerate() {
        if let Some(m) = marker_in(d) {
            nearest = Some((i, m));
            break;
        }
    }
    let Some((at, marker)) = nearest else {
        return fallback(cwd);
    };
    // The repository around the marker's directory, if any.
    let repo = walk[at..].iter().position(|d| d.join(".git").exists()).map(|j| at + j);
    let (root_at, marker) = match repo {
        Some(r) => (r, ".git"),
        None => (at, marker),
    };
    let root = walk[root_at].to_path_buf();
    let dirs: Vec<PathBuf> = walk[..=root_at].iter().map(|d| d.to_path_buf()).collect();
    let (key, name, remote) = match repo {
        Some(_) => {
            let git = GitRepo::open(&root);
            match git.remote.as_deref().and_then(normalize_remote) {
                Some(remote) => {
                    let name = remote.rsplit('/').next().unwrap_or(&remote).to_owned();
                    (remote.clone(), name, Some(remote))
                }
                None => {
                    let main = git.main_tree.unwrap_or_else(|| root.clone());
                    (path_key(&main), folder_name(&main), None)
                }
            }
        }
        None => (path_key(&root), folder_name(&root), None),
    };
    ProjectIdentity { cwd, root, key, name, marker: Some(marker.to_owned()), remote, dirs }
}

/// The working directory as its own project (no marker found).
fn fallback(cwd: PathBuf) -> ProjectIdentity {
    ProjectIdentity {
        key: path_key(&cwd),
        name: folder_name(&cwd),
        root: cwd.clone(),
        marker: None,
        remote: None,
        dirs: vec![cwd.clone()],
        cwd,
    }
}

/// The first marker present in `dir`, in [`MARKERS`] order.
fn marker_in(dir: &Path) -> Option<&'static str> {
    MARKERS.iter().copied().find(|m| match *m {
        ".git" => dir.join(m).exists(),
        ".claude" => dir.join(m).is_dir(),
        _ => dir.join(m).is_file(),
    })
}

/// A path as a key: absolute, lexically normalised, never empty.
fn path_key(p: &Path) -> String {
    let s = p.to_string_lossy().into_owned();
    if s.is_empty() { "/".to_owned() } else { s }
}

/// The last component of `p` (`/` for the root).
fn folder_name(p: &Path) -> String {
    p.file_name().map_or_else(|| "/".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// `p` made absolute (against the process's directory when relative) with
/// `.` and `..` resolved lexically and trailing separators dropped. Symbolic
/// links are not resolved: the harness's own spelling of a path is kept.
pub fn normalize(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() { p.to_path_buf() } else { std::path::absolute(p).unwrap_or_else(|_| p.into()) };
    let mut out = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// What a repository's git files say about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct GitRepo {
    /// The main working tree (differs from the root in a linked worktree).
    main_tree: Option<PathBuf>,
    /// The `origin` remote's URL, else the first remote's.
    remote: Option<String>,
}

impl GitRepo {
    /// Reads the repository whose working tree top is `top`.
    fn open(top: &Path) -> GitRepo {
        let dot_git = top.join(".git");
        let git_dir = if dot_git.is_dir() {
            dot_git
        } else {
            match read_small(&dot_git).as_deref().and_then(|t| t.trim().strip_prefix("gitdir:")).map(str::trim) {
                Some(target) => normalize(&top.join(target)),
                None => return GitRepo::default(),
            }
        };
        // A linked worktree's git directory names the repository's own.
        let common = match read_small(&git_dir.join("commondir")) {
            Some(c) => normalize(&git_dir.join(c.trim())),
            None => git_dir.clone(),
        };
        let main_tree = if common.file_name().is_some_and(|n| n == ".git") {
            common.parent().map(Path::to_path_buf)
        } else if common != git_dir {
            // A worktree of a bare repository: the repository is its own identity.
            Some(common.with_extension(""))
        } else {
            // A submodule (its git directory lives in the superproject): its tree is the root.
            Some(top.to_path_buf())
        };
        let remote = read_small(&common.join("config")).and_then(|c| remote_url(&c));
        GitRepo { main_tree, remote }
    }
}

fn read_small(path: &Path) -> Option<String> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_GIT_FILE {
        return None;
    }
    fs::read_to_string(path).ok()
}

/// The URL of `[remote "origin"]` in a git config text, else of the first
/// remote that has one.
fn remote_url(config: &str) -> Option<String> {
    let mut section: Option<String> = None;
    let mut first: Option<String> = None;
    let mut origin: Option<String> = None;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            let head = head.split(']').next().unwrap_or("").trim();
            section = head
                .strip_prefix("remote")
                .map(str::trim)
                .and_then(|n| n.strip_prefix('"'))
                .and_then(|n| n.strip_suffix('"'))
                .map(str::to_owned);
            continue;
        }
        let Some(remote) = &section else { continue };
        let Some((k, v)) = line.split_once('=') else { continue };
        if !k.trim().eq_ignore_ascii_case("url") {
            continue;
        }
        let v = v.trim().trim_matches('"').to_owned();
        if remote == "origin" && origin.is_none() {
            origin = Some(v.clone());
        }
        if first.is_none() {
            first = Some(v);
        }
    }
    origin.or(first)
}

/// A remote URL as `host/path` (see the module docs); `None` for a local path
/// or something that is not a URL.
pub fn normalize_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            return None;
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        // Drop a port (`host:22`), keeping IPv6 brackets intact.
        let host = match host.rsplit_once(':') {
            Some((h, port)) if !h.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => host,
        };
        (host, path)
    } else {
        // scp-like `[user@]host:path`; a path with a `/` before any `:` is local.
        let (before, path) = url.split_once(':')?;
        if before.contains('/') || before.is_empty() {
            return None;
        }
        (before.rsplit_once('@').map_or(before, |(_, h)| h), path)
    };
    let host = host.trim().to_ascii_lowercase();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_end_matches('/');
    if host.is_empty() || path.is_empty() || host.contains(char::is_whitespace) {
        return None;
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty() && *s != "." && *s != "..").collect();
    if segments.is_empty() {
        return None;
    }
    Some(format!("{host}/{}", segments.join("/")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn touch(p: &Path) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, "{}").unwrap();
    }

    fn git_init(dir: &Path, remote: Option<&str>) {
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let mut config = "[core]\n\tbare = false\n".to_owned();
        if let Some(r) = remote {
            config.push_str(&format!(
                "[remote \"origin\"]\n\turl = {r}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
            ));
        }
        fs::write(dir.join(".git/config"), config).unwrap();
    }

    #[test]
    fn a_subfolder_of_a_repository_is_the_repository() {
        let t = tempfile::tempdir().unwrap();
        let demo = t.path().join("Demo");
        git_init(&demo, None);
        touch(&demo.join("todo-app/package.json"));
        fs::create_dir_all(demo.join("todo-app/types")).unwrap();
        let p = identify(&demo.join("todo-app/types"), None);
        assert_eq!(p.root, demo);
        assert_eq!(p.name, "Demo");
        assert_eq!(p.key, demo.to_string_lossy());
        assert_eq!(p.marker.as_deref(), Some(".git"));
        assert_eq!(p.dirs, vec![demo.join("todo-app/types"), demo.join("todo-app"), demo.clone()]);
        assert_eq!(identify(&demo, None).key, p.key);
    }

    #[test]
    fn same_folder_name_different_repositories_differ() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("work/api");
        let b = t.path().join("play/api");
        git_init(&a, None);
        git_init(&b, None);
        let (pa, pb) = (identify(&a, None), identify(&b, None));
        assert_eq!((pa.name.as_str(), pb.name.as_str()), ("api", "api"));
        assert_ne!(pa.key, pb.key);
        // With remotes, the remotes tell them apart (and name them).
        git_init(&a, Some("git@github.com:acme/api.git"));
        git_init(&b, Some("https://github.com/me/api"));
        let (pa, pb) = (identify(&a, None), identify(&b, None));
        assert_eq!((pa.key.as_str(), pb.key.as_str()), ("github.com/acme/api", "github.com/me/api"));
    }

    #[test]
    fn a_worktree_is_its_repository() {
        let t = tempfile::tempdir().unwrap();
        let main = t.path().join("main");
        git_init(&main, None);
        let wt_git = main.join(".git/worktrees/env");
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = t.path().join("wt/env");
        fs::create_dir_all(wt.join("src")).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        let p = identify(&wt.join("src"), None);
        assert_eq!(p.root, wt);
        assert_eq!(p.key, main.to_string_lossy());
        assert_eq!(p.name, "main");
        // With a remote, both share it.
        git_init(&main, Some("ssh://git@gitlab.example.com:2222/team/engram.git"));
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        assert_eq!(identify(&wt, None).key, "gitlab.example.com/team/engram");
        assert_eq!(identify(&main, None).key, "gitlab.example.com/team/engram");
        assert_eq!(identify(&wt, None).name, "engram");
    }

    #[test]
    fn nearest_marker_without_git_and_fallback() {
        let t = tempfile::tempdir().unwrap();
        let app = t.path().join("app");
        touch(&app.join("Cargo.toml"));
        fs::create_dir_all(app.join("src/bin")).unwrap();
        let p = identify(&app.join("src/bin"), None);
        assert_eq!((p.root.as_path(), p.marker.as_deref()), (app.as_path(), Some("Cargo.toml")));
        let bare = t.path().join("scratch/notes");
        fs::create_dir_all(&bare).unwrap();
        let p = identify(&bare, None);
        assert_eq!((p.root.as_path(), p.marker, p.name.as_str()), (bare.as_path(), None, "notes"));
        // A directory that does not exist (any more) still has an identity.
        let gone = app.join("deleted/deeper");
        assert_eq!(identify(&gone, None).root, app);
    }

    #[test]
    fn claude_dir_marks_a_project_but_not_at_home() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home/me");
        fs::create_dir_all(home.join(".claude")).unwrap();
        git_init(&home, None);
        let scratch = home.join("scratch");
        fs::create_dir_all(&scratch).unwrap();
        let p = identify(&scratch, Some(&home));
        assert_eq!((p.root.as_path(), p.marker), (scratch.as_path(), None));
        let proj = home.join("proj");
        fs::create_dir_all(proj.join(".claude")).unwrap();
        fs::create_dir_all(proj.join("docs")).unwrap();
        let p = identify(&proj.join("docs"), Some(&home));
        assert_eq!((p.root.as_path(), p.marker.as_deref()), (proj.as_path(), Some(".claude")));
        // Home itself is still home's project.
        assert_eq!(identify(&home, Some(&home)).root, home);
    }

    #[test]
    fn remotes_normalise_without_credentials() {
        let cases = [
            ("git@github.com:acme/app.git", Some("github.com/acme/app")),
            ("https://user:ghp_secret@GitHub.com/acme/app.git/", Some("github.com/acme/app")),
            ("ssh://git@host.example:22/a/b", Some("host.example/a/b")),
            ("git://host/x", Some("host/x")),
            ("/srv/git/app.git", None),
            ("../app.git", None),
            ("file:///srv/app.git", None),
            ("", None),
            ("github.com:", None),
        ];
        for (url, want) in cases {
            assert_eq!(normalize_remote(url).as_deref(), want, "{url}");
        }
        let cfg = "[remote \"upstream\"]\n url = git@h:u/x\n[remote \"origin\"]\n\turl = git@h:o/y.git\n";
        assert_eq!(remote_url(cfg).as_deref(), Some("git@h:o/y.git"));
        assert_eq!(remote_url("[remote \"a\"]\nurl=https://h/a/b\n").as_deref(), Some("https://h/a/b"));
        assert_eq!(remote_url("[core]\nurl = nope\n"), None);
    }

    #[test]
    fn keys_are_told_from_legacy_names() {
        assert!(is_key("/home/me/web") && is_key("github.com/acme/app"));
        assert!(!is_key("web") && !is_key("todo-app"));
        assert_eq!(normalize(Path::new("/a/./b/../c/")), PathBuf::from("/a/c"));
    }
}
