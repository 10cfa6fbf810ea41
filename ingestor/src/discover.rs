//! Finding harness logs under explicit roots.
//!
//! [`Roots::from_env`] is the one place that reads the environment
//! (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_DIR`, `XDG_DATA_HOME`, `HOME`);
//! everything else takes roots as arguments, so tests point it at temporary
//! directories. Layouts:
//!
//! - Claude: `<root>/**/*.jsonl` under `projects/` (main transcripts,
//!   `agent-*.jsonl` next to them, `<session>/subagents/**/agent-*.jsonl`
//!   with an optional `.meta.json` sidecar). `journal.jsonl` of workflows and
//!   `tool-results/` are skipped.
//! - Codex: `<root>/YYYY/MM/DD/rollout-*.jsonl` (any depth).
//! - Gemini: `<root>/<hash>/chats/*.jsonl` (and `chats/<parent>/*.jsonl`
//!   for subagents), legacy `<root>/<hash>/chats/session-*.json`.
//! - OpenCode: `<root>/storage/` (JSON storage) and `<root>/opencode.db`.

use std::path::{Path, PathBuf};

use crate::adapters::Harness;
use crate::error::Error;

/// What a discovered source is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    /// Claude Code transcript (main or subagent), JSONL.
    ClaudeTranscript,
    /// Codex rollout, JSONL.
    CodexRollout,
    /// Gemini chat, JSONL.
    GeminiJsonl,
    /// Gemini legacy single-JSON chat.
    GeminiLegacy,
    /// OpenCode JSON storage directory.
    OpenCodeStorage,
    /// OpenCode SQLite database.
    OpenCodeDb,
}

impl SourceKind {
    /// The harness of this kind.
    pub fn harness(self) -> Harness {
        match self {
            SourceKind::ClaudeTranscript => Harness::Claude,
            SourceKind::CodexRollout => Harness::Codex,
            SourceKind::GeminiJsonl | SourceKind::GeminiLegacy => Harness::Gemini,
            SourceKind::OpenCodeStorage | SourceKind::OpenCodeDb => Harness::OpenCode,
        }
    }

    /// Whether the source is an append-only JSONL log (parsed incrementally).
    pub fn is_jsonl(self) -> bool {
        matches!(self, SourceKind::ClaudeTranscript | SourceKind::CodexRollout | SourceKind::GeminiJsonl)
    }
}

/// A log to ingest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    /// What it is.
    pub kind: SourceKind,
    /// The file, directory or database.
    pub path: PathBuf,
    /// A sidecar file next to it (Claude subagent `.meta.json`).
    pub sidecar: Option<PathBuf>,
}

/// Where each harness keeps its logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roots {
    /// Claude `projects/` directories.
    pub claude: Vec<PathBuf>,
    /// Codex `sessions/` directories.
    pub codex: Vec<PathBuf>,
    /// Gemini `tmp/` directories.
    pub gemini: Vec<PathBuf>,
    /// OpenCode data directories (holding `storage/` and/or `opencode.db`).
    pub opencode: Vec<PathBuf>,
}

impl Roots {
    /// The standard locations, from an environment lookup (`var` returns a
    /// variable's value). Only this function knows the variables.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Roots {
        let home = var("HOME").map(PathBuf::from);
        let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
        let claude =
            var("CLAUDE_CONFIG_DIR").map(PathBuf::from).or_else(|| under_home(".claude")).map(|p| p.join("projects"));
        let codex = var("CODEX_HOME").map(PathBuf::from).or_else(|| under_home(".codex")).map(|p| p.join("sessions"));
        let gemini = var("GEMINI_DIR").map(PathBuf::from).or_else(|| under_home(".gemini")).map(|p| p.join("tmp"));
        let opencode =
            var("XDG_DATA_HOME").map(PathBuf::from).or_else(|| under_home(".local/share")).map(|p| p.join("opencode"));
        Roots {
            claude: claude.into_iter().collect(),
            codex: codex.into_iter().collect(),
            gemini: gemini.into_iter().collect(),
            opencode: opencode.into_iter().collect(),
        }
    }

    /// Reads the real process environment.
    pub fn from_process_env() -> Roots {
        Roots::from_env(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }
}

/// Every file under `dir` (recursively), sorted; a missing directory is empty.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut entries = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let ft = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
        entries.push((entry.path(), ft.is_dir()));
    }
    entries.sort();
    for (path, is_dir) in entries {
        if is_dir {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// Lists every source under `roots`, sorted by kind then path.
pub fn discover(roots: &Roots) -> Result<Vec<Source>, Error> {
    let mut out = Vec::new();
    for root in &roots.claude {
        let mut files = Vec::new();
        walk(root, &mut files)?;
        for f in files {
            let n = name(&f);
            if !n.ends_with(".jsonl") || n == "journal.jsonl" || f.components().any(|c| c.as_os_str() == "tool-results")
            {
                continue;
            }
            let sidecar = n
                .strip_suffix(".jsonl")
                .filter(|stem| stem.starts_with("agent-"))
                .map(|stem| f.with_file_name(format!("{stem}.meta.json")))
                .filter(|p| p.is_file());
            out.push(Source { kind: SourceKind::ClaudeTranscript, path: f, sidecar });
        }
    }
    for root in &roots.codex {
        let mut files = Vec::new();
        walk(root, &mut files)?;
        out.extend(
            files
                .into_iter()
                .filter(|f| name(f).starts_with("rollout-") && name(f).ends_with(".jsonl"))
                .map(|path| Source { kind: SourceKind::CodexRollout, path, sidecar: None }),
        );
    }
    for root in &roots.gemini {
        let mut files = Vec::new();
        walk(root, &mut files)?;
        for f in files {
            if !f.components().any(|c| c.as_os_str() == "chats") {
                continue;
            }
            let n = name(&f);
            let kind = if n.ends_with(".jsonl") {
                SourceKind::GeminiJsonl
            } else if n.starts_with("session-") && n.ends_with(".json") {
                SourceKind::GeminiLegacy
            } else {
                continue;
            };
            out.push(Source { kind, path: f, sidecar: None });
        }
    }
    for root in &roots.opencode {
        let storage = root.join("storage");
        if storage.join("session").is_dir() {
            out.push(Source { kind: SourceKind::OpenCodeStorage, path: storage, sidecar: None });
        }
        let db = root.join("opencode.db");
        if db.is_file() {
            out.push(Source { kind: SourceKind::OpenCodeDb, path: db, sidecar: None });
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_roots_prefer_overrides() {
        let r = Roots::from_env(|k| match k {
            "HOME" => Some("/home/u".into()),
            "CODEX_HOME" => Some("/x/codex".into()),
            _ => None,
        });
        assert_eq!(r.claude, vec![PathBuf::from("/home/u/.claude/projects")]);
        assert_eq!(r.codex, vec![PathBuf::from("/x/codex/sessions")]);
        assert_eq!(r.gemini, vec![PathBuf::from("/home/u/.gemini/tmp")]);
        assert_eq!(r.opencode, vec![PathBuf::from("/home/u/.local/share/opencode")]);
        assert_eq!(Roots::from_env(|_| None), Roots::default());
    }
}
