//! The environment of a session (seeds 000, 001 and 004): which project a
//! working directory belongs to, its stack, and the tags that let a lesson
//! learned in one project reach another project like it.
//!
//! Detection reads the file system **when something happens** (a hook's
//! session start, a scan reading a transcript) and records what it found as
//! an `env.detected` event ([`crate::event::EnvDetected`]); the projection
//! only ever reads that event ([`store`]), never the file system, so replay
//! gives the same projects on any machine, whatever happened to the folders
//! since.
//!
//! - [`project`]: the project root, its key and its name.
//! - [`stack`]: the technologies, from marker files and dependencies.
//! - [`patterns`]: the tables those read.
//! - [`store`]: the projection of `env.detected` (`projects`, `session_env`)
//!   and the project a memory or a session gets.

pub mod patterns;
pub mod project;
pub mod stack;
pub mod store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::event::EnvDetected;
pub use patterns::Patterns;
pub use project::{ProjectIdentity, identify, is_key};

/// Detects the environment of `cwd`: its project and stack. `home` is the
/// user's home directory at the time (see [`project`]).
pub fn detect(cwd: &Path, home: Option<&Path>, patterns: &Patterns) -> EnvDetected {
    let id = identify(cwd, home);
    let stack = stack::detect(&id.dirs, patterns);
    EnvDetected {
        cwd: id.cwd.to_string_lossy().into_owned(),
        root: id.root.to_string_lossy().into_owned(),
        project: id.key,
        name: id.name,
        remote: id.remote,
        marker: id.marker,
        tags: stack.clone(),
        stack,
    }
}

/// The home directory of this process (`$HOME`), if set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// Detection with the process's home directory and the built-in patterns,
/// remembering each working directory's result (a scan meets the same few
/// directories in thousands of records).
#[derive(Debug)]
pub struct Detector {
    home: Option<PathBuf>,
    patterns: Patterns,
    seen: HashMap<String, EnvDetected>,
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new(home_dir(), Patterns::builtin())
    }
}

impl Detector {
    /// A detector for `home` and `patterns`.
    pub fn new(home: Option<PathBuf>, patterns: Patterns) -> Detector {
        Detector { home, patterns, seen: HashMap::new() }
    }

    /// The environment of `cwd` (cached per directory for this detector's life).
    pub fn detect(&mut self, cwd: &str) -> &EnvDetected {
        if !self.seen.contains_key(cwd) {
            let found = detect(Path::new(cwd), self.home.as_deref(), &self.patterns);
            self.seen.insert(cwd.to_owned(), found);
        }
        &self.seen[cwd]
    }
}
