//! Where Engram keeps its data: the data home and the layout inside it.
//!
//! The data home is `$ENGRAM_HOME`, else `$XDG_DATA_HOME/engram`, else
//! `~/.local/share/engram`. Nothing is written outside it except what
//! `install` writes into a harness's settings and files the user names.
//!
//! ```text
//! <home>/tapes/            the tape log (source of truth)
//! <home>/engram.db         symlink to the current projection generation
//! <home>/db/engram-*.db    projection generations (rebuildable)
//! <home>/models/<b3>.ckpt  immutable checkpoints; models/current points at one
//! <home>/config.toml       optional configuration
//! <home>/logs/             hook and cron logs
//! ```

use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};

/// The data home and the paths inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    home: PathBuf,
}

impl Paths {
    /// Resolves the data home from the environment.
    pub fn from_env() -> Result<Paths> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(home) = var("ENGRAM_HOME") {
            return Ok(Paths::at(home));
        }
        if let Some(xdg) = var("XDG_DATA_HOME") {
            return Ok(Paths::at(xdg.join("engram")));
        }
        if let Some(home) = var("HOME") {
            return Ok(Paths::at(home.join(".local/share/engram")));
        }
        Err(Error::InvalidInput("cannot find a data home: set ENGRAM_HOME (or HOME)".into()))
    }

    /// Uses `home` as the data home.
    pub fn at(home: impl Into<PathBuf>) -> Paths {
        Paths { home: home.into() }
    }

    /// The data home.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The tape log directory.
    pub fn tapes(&self) -> PathBuf {
        self.home.join("tapes")
    }

    /// The projection database (a symlink to the current generation).
    pub fn db(&self) -> PathBuf {
        self.home.join("engram.db")
    }

    /// Directory of projection generations.
    pub fn db_generations(&self) -> PathBuf {
        self.home.join("db")
    }

    /// Directory of model checkpoints.
    pub fn models(&self) -> PathBuf {
        self.home.join("models")
    }

    /// The pointer file naming the serving checkpoint.
    pub fn current_model(&self) -> PathBuf {
        self.models().join("current")
    }

    /// The optional configuration file.
    pub fn config(&self) -> PathBuf {
        self.home.join("config.toml")
    }

    /// Directory of log files (hooks, cron runs).
    pub fn logs(&self) -> PathBuf {
        self.home.join("logs")
    }

    /// Lock file that keeps two trainer runs from overlapping.
    pub fn trainer_lock(&self) -> PathBuf {
        self.home.join("trainer.lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_under_home() {
        let p = Paths::at("/data/e");
        for path in [p.tapes(), p.db(), p.db_generations(), p.models(), p.current_model(), p.config(), p.logs()] {
            assert!(path.starts_with("/data/e"), "{}", path.display());
        }
    }
}
