//! Project folders with real markers: files, a `git init`ed repository with
//! its remote and branch, git worktrees.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::{Result, World, err};

/// A git repository at a project's root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitSpec {
    /// `origin`'s URL, if any.
    pub remote: Option<String>,
    /// The branch checked out (default `main`).
    pub branch: Option<String>,
    /// Worktrees to add: folder (relative to the code directory) → branch.
    pub worktrees: BTreeMap<String, String>,
}

/// A project folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectSpec {
    /// Its folder, relative to the world's code directory (`~/code`).
    pub dir: String,
    /// Files to write: relative path → content.
    pub files: BTreeMap<String, String>,
    /// A git repository, if any.
    pub git: Option<GitSpec>,
}

/// A relative path that stays inside its base.
fn inside(base: &Path, rel: &str) -> Result<PathBuf> {
    let p = Path::new(rel);
    if rel.is_empty() || p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(err!("{rel:?}: not a plain relative path"));
    }
    Ok(base.join(p))
}

pub(super) fn create(world: &World, spec: &ProjectSpec) -> Result<PathBuf> {
    let root = inside(&world.code_dir(), &spec.dir)?;
    std::fs::create_dir_all(&root)?;
    for (rel, content) in &spec.files {
        let path = inside(&root, rel)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, content)?;
    }
    if let Some(git) = &spec.git {
        let run = |args: &[&str]| -> Result<String> {
            let mut c = world.command("git");
            c.current_dir(&root)
                .args(args)
                .env("GIT_AUTHOR_NAME", "Dev")
                .env("GIT_AUTHOR_EMAIL", "dev@example.com")
                .env("GIT_COMMITTER_NAME", "Dev")
                .env("GIT_COMMITTER_EMAIL", "dev@example.com");
            world.run_ok(c)
        };
        let branch = git.branch.as_deref().unwrap_or("main");
        run(&["init", "-q", "-b", branch])?;
        if let Some(url) = &git.remote {
            run(&["remote", "add", "origin", url])?;
        }
        if !git.worktrees.is_empty() {
            run(&["add", "-A"])?;
            run(&["commit", "-q", "--allow-empty", "-m", "initial"])?;
            for (dir, wt_branch) in &git.worktrees {
                let wt = inside(&world.code_dir(), dir)?;
                let wt = wt.to_str().ok_or_else(|| err!("{}: not UTF-8", wt.display()))?.to_owned();
                run(&["worktree", "add", "-q", "-b", wt_branch, &wt])?;
            }
        }
    }
    Ok(root)
}
