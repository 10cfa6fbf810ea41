//! The environment of a session (seeds 000, 001 and 004): which project a
//! working directory belongs to, its stack, and the tags that let a lesson
//! learned in one project reach another project like it.
//!
//! Detection reads the file system **when something happens** (a hook's
//! session start, a scan reading a transcript) and records what it found as
//! an `env.detected` event ([`crate::storage::event::EnvDetected`]); the projection
//! only ever reads that event ([`store`]), never the file system, so replay
//! gives the same projects on any machine, whatever happened to the folders
//! since.
//!
//! - [`project`]: the project root, its key and its name.
//! - [`stack`]: the technologies, from marker files and dependencies.
//! - [`tags`]: the other tag sources (path, git remote, directories), the
//!   operating system and the MCP servers.
//! - [`patterns`]: the tables those read, and the `[env]` configuration.
//! - [`autopin`]: auto-pin by minimal tag subset, and the tag-relevance pin
//!   decisions.
//! - [`store`]: the projection of `env.detected` (`projects`, `session_env`)
//!   and the project a memory or a session gets.
//! - [`stats`]: match statistics, tag relevance and auto-pin, derived from
//!   scored sessions and feedback.
//! - [`categories`]: the category tree and memberships; [`ops`]: the
//!   commands that categorize a memory or set its prerequisites.
//! - [`prereq`]: prerequisites; [`rank`]: what the environment does to a
//!   ranking (structural gates, tag relevance filter, tag affinity, stack
//!   match, pins that apply here).

pub mod autopin;
pub mod categories;
pub mod ops;
pub mod patterns;
pub mod prereq;
pub mod project;
pub mod rank;
pub mod stack;
pub mod stats;
pub mod store;
pub mod tags;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::storage::event::EnvDetected;
pub use patterns::Patterns;

use crate::base::config::EnvConfig;
pub use project::{ProjectIdentity, identify, is_key};

/// What detection reads besides the working directory.
#[derive(Clone, Debug, Default)]
pub struct DetectOptions {
    /// The user's home directory (see [`project`]; `~/` in path patterns).
    pub home: Option<PathBuf>,
    /// Codex's directory, when not `~/.codex` (its MCP servers).
    pub codex_home: Option<PathBuf>,
    /// The pattern tables.
    pub patterns: Patterns,
    /// Read the MCP servers (a few settings files; hooks other than session
    /// start leave it off and use what the session start recorded).
    pub mcp: bool,
}

impl DetectOptions {
    /// This process's home and Codex directories, the built-in tables
    /// extended by `config`.
    pub fn from_env(config: &EnvConfig, mcp: bool) -> DetectOptions {
        DetectOptions {
            home: home_dir(),
            codex_home: std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
            patterns: Patterns::with(config),
            mcp,
        }
    }
}

/// Detects the environment of `cwd`: its project, stack and tags, the
/// operating system and (with [`DetectOptions::mcp`]) the MCP servers.
pub fn detect(cwd: &Path, opts: &DetectOptions) -> EnvDetected {
    let id = identify(cwd, opts.home.as_deref());
    let stack = stack::detect(&id.dirs, &opts.patterns);
    let mut tags = tags::detect(&id, opts.home.as_deref(), &opts.patterns);
    tags.extend(stack.iter().cloned());
    let mcp_servers = if opts.mcp {
        tags::mcp_servers(&id.cwd, &id.root, opts.home.as_deref(), opts.codex_home.as_deref())
    } else {
        Vec::new()
    };
    EnvDetected {
        cwd: id.cwd.to_string_lossy().into_owned(),
        root: id.root.to_string_lossy().into_owned(),
        project: id.key,
        name: id.name,
        remote: id.remote,
        marker: id.marker,
        stack,
        tags: tags.into_iter().collect(),
        os: Some(tags::os().to_owned()),
        mcp_servers,
    }
}

/// The home directory of this process (`$HOME`), if set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// Detection that remembers each working directory's result (a scan meets
/// the same few directories in thousands of records).
#[derive(Debug)]
pub struct Detector {
    opts: DetectOptions,
    seen: HashMap<String, EnvDetected>,
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new(DetectOptions::from_env(&EnvConfig::default(), true))
    }
}

impl Detector {
    /// A detector with `opts`.
    pub fn new(opts: DetectOptions) -> Detector {
        Detector { opts, seen: HashMap::new() }
    }

    /// The environment of `cwd` (cached per directory for this detector's life).
    pub fn detect(&mut self, cwd: &str) -> &EnvDetected {
        if !self.seen.contains_key(cwd) {
            let found = detect(Path::new(cwd), &self.opts);
            self.seen.insert(cwd.to_owned(), found);
        }
        &self.seen[cwd]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::fs;

    use super::*;

    /// Seed 001's example, on real folders: `~/work/acme/app-repo`.
    #[test]
    fn the_five_sources_merge_into_unique_sorted_tags() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let app = home.join("work/acme/app-repo");
        fs::create_dir_all(app.join(".git")).unwrap();
        fs::write(app.join(".git/config"), "[remote \"origin\"]\n\turl = https://github.com/acme/app-repo.git\n")
            .unwrap();
        fs::write(
            app.join("package.json"),
            r#"{"dependencies":{"react":"18","@acme/davinci":"1"},"devDependencies":{"jest":"29"}}"#,
        )
        .unwrap();
        for f in ["tsconfig.json", "Dockerfile", "yarn.lock"] {
            fs::write(app.join(f), "").unwrap();
        }
        fs::create_dir_all(app.join("packages/web")).unwrap();
        let config = crate::base::config::Config::parse(
            "[env.path_patterns]\n\"~/work/acme/\" = [\"acme\"]\n\
             [env.git_remotes]\n\"github.com/acme/\" = [\"Acme\"]\n\
             [env.dependencies]\n\"@acme/davinci\" = [\"davinci\", \"react\", \"frontend\"]\n",
        )
        .unwrap();
        let mut opts = DetectOptions::from_env(&config.env, false);
        opts.home = Some(home.clone());
        let env = detect(&app.join("packages/web"), &opts);
        assert_eq!(env.project, "github.com/acme/app-repo");
        assert_eq!(env.name, "app-repo");
        assert_eq!(
            env.tags,
            [
                "acme",
                "davinci",
                "docker",
                "frontend",
                "github",
                "jest",
                "monorepo",
                "nodejs",
                "react",
                "testing",
                "typescript",
                "yarn"
            ]
        );
        assert_eq!(
            env.stack,
            ["davinci", "docker", "frontend", "jest", "nodejs", "react", "testing", "typescript", "yarn"]
        );
        assert_eq!(env.os.as_deref(), Some(tags::os()));
        assert!(env.mcp_servers.is_empty(), "not read unless asked");
    }
}
