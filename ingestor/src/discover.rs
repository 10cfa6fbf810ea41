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
//! - SpecStory exports: `<repository>/.specstory/history/*.md`, in each
//!   project directory given ([`Roots::specstory_projects`]: the projects
//!   and working directories the projection knows) and in the repositories
//!   up to [`EXPORT_DEPTH`] levels below each configured root
//!   ([`Roots::specstory`], `[scan] specstory_roots`), skipping hidden
//!   directories and dependency folders (`node_modules`, `target`, …).
//!
//! Explicit paths (`scan --path`) are classified one by one by
//! [`discover_paths`]: by name and location first (`rollout-*.jsonl`,
//! `chats/`, `opencode.db`, a `storage/` directory), else by sniffing the
//! first lines of a JSONL file; a `.md` file is an export when it sits in a
//! `.specstory` folder or starts with SpecStory's generator comment.

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
    /// SpecStory markdown export.
    SpecStory,
}

impl SourceKind {
    /// The harness of this kind.
    pub fn harness(self) -> Harness {
        match self {
            SourceKind::ClaudeTranscript => Harness::Claude,
            SourceKind::CodexRollout => Harness::Codex,
            SourceKind::GeminiJsonl | SourceKind::GeminiLegacy => Harness::Gemini,
            SourceKind::OpenCodeStorage | SourceKind::OpenCodeDb => Harness::OpenCode,
            SourceKind::SpecStory => Harness::SpecStory,
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
    /// Directories searched for repositories with SpecStory exports.
    pub specstory: Vec<PathBuf>,
    /// Project directories whose own `.specstory/history/` is read.
    pub specstory_projects: Vec<PathBuf>,
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
            specstory: Vec::new(),
            specstory_projects: Vec::new(),
        }
    }

    /// Reads the real process environment.
    pub fn from_process_env() -> Roots {
        Roots::from_env(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// Applies the directories set in `config.toml` (`[scan]`), which win over
    /// the environment: `claude_dir` (its `projects/`), `codex_home` (its
    /// `sessions/`), `gemini_dir` (its `tmp/`), `opencode_dir` (itself);
    /// `specstory_roots` are added to the SpecStory roots.
    pub fn with_config(mut self, scan: &shared::base::config::ScanConfig) -> Roots {
        let set = |dir: &Option<String>, sub: &str, slot: &mut Vec<PathBuf>| {
            if let Some(d) = dir.as_deref().filter(|d| !d.is_empty()) {
                let base = PathBuf::from(d);
                *slot = vec![if sub.is_empty() { base } else { base.join(sub) }];
            }
        };
        set(&scan.claude_dir, "projects", &mut self.claude);
        set(&scan.codex_home, "sessions", &mut self.codex);
        set(&scan.gemini_dir, "tmp", &mut self.gemini);
        set(&scan.opencode_dir, "", &mut self.opencode);
        for r in scan.specstory_roots.iter().filter(|r| !r.trim().is_empty()) {
            let r = PathBuf::from(r);
            if !self.specstory.contains(&r) {
                self.specstory.push(r);
            }
        }
        self
    }

    /// Keeps only the roots of `harnesses` (all when empty).
    pub fn only(mut self, harnesses: &[Harness]) -> Roots {
        if harnesses.is_empty() {
            return self;
        }
        let keep = |h: Harness, v: &mut Vec<PathBuf>| {
            if !harnesses.contains(&h) {
                v.clear();
            }
        };
        keep(Harness::Claude, &mut self.claude);
        keep(Harness::Codex, &mut self.codex);
        keep(Harness::Gemini, &mut self.gemini);
        keep(Harness::OpenCode, &mut self.opencode);
        if !harnesses.iter().any(|h| h.covers(Harness::SpecStory)) {
            self.specstory.clear();
            self.specstory_projects.clear();
        }
        self
    }
}

/// Every file under `dir` (recursively), sorted; a missing directory is
/// empty, an unreadable one is skipped with a warning.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::warn!(dir = %dir.display(), "cannot list this directory; skipped");
            return Ok(());
        }
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
            let sidecar = sidecar_of(SourceKind::ClaudeTranscript, &f);
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
    let mut exports = Vec::new();
    for dir in &roots.specstory_projects {
        history_files(&dir.join(".specstory").join("history"), &mut exports);
    }
    for root in &roots.specstory {
        find_exports(root, 0, &mut exports);
    }
    exports.sort();
    exports.dedup();
    out.extend(exports.into_iter().map(|path| Source { kind: SourceKind::SpecStory, path, sidecar: None }));
    out.sort();
    Ok(out)
}

/// How many directory levels below a SpecStory root are searched for
/// repositories.
pub const EXPORT_DEPTH: usize = 5;

/// Directories never searched for exports: dependencies and build output.
const SKIPPED_DIRS: &[&str] =
    &["node_modules", "target", "vendor", "venv", "__pycache__", "dist", "build", "Pods", "DerivedData"];

/// The `*.md` files of a `.specstory/history` directory (a missing or
/// unreadable one has none).
fn history_files(history: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(history) else { return };
    for entry in rd.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_file()) && name(&path).ends_with(".md") {
            out.push(path);
        }
    }
}

/// The exports of the repositories at or below `dir` (`depth` levels down
/// already). A root may also be a `.specstory` folder or its `history`.
fn find_exports(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth == 0 {
        if name(dir) == "history" && dir.parent().is_some_and(|p| name(p) == ".specstory") {
            history_files(dir, out);
            return;
        }
        if name(dir) == ".specstory" {
            history_files(&dir.join("history"), out);
            return;
        }
    }
    history_files(&dir.join(".specstory").join("history"), out);
    if depth >= EXPORT_DEPTH {
        return;
    }
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::debug!(dir = %dir.display(), error = %e, "cannot list this directory; skipped");
            return;
        }
    };
    let mut subdirs: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            let n = name(p);
            !n.starts_with('.') && !SKIPPED_DIRS.contains(&n)
        })
        .collect();
    subdirs.sort();
    for d in subdirs {
        find_exports(&d, depth + 1, out);
    }
}

/// Whether a `.md` file is a SpecStory export: in a `.specstory` folder, or
/// starting with SpecStory's generator comment.
pub fn is_export(path: &Path) -> Result<bool, Error> {
    if !name(path).ends_with(".md") {
        return Ok(false);
    }
    if path.components().any(|c| c.as_os_str() == ".specstory") {
        return Ok(true);
    }
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut filled = 0;
    loop {
        match std::io::Read::read(&mut file, &mut head[filled..]) {
            Ok(0) => break,
            Ok(k) => {
                filled += k;
                if filled == head.len() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    let text = String::from_utf8_lossy(&head[..filled]);
    Ok(text.trim_start_matches('\u{feff}').trim_start().starts_with("<!-- Generated by SpecStory"))
}

/// Bytes of a JSONL file read to guess its harness.
const SNIFF_BYTES: usize = 16 * 1024;

/// The harness of a JSONL log from its first complete lines: Codex's
/// `{timestamp, type, payload}` envelope, Gemini's header or `$set`/
/// `$rewindTo` records or `type` `gemini`, Claude's `sessionId` + `uuid`
/// records. `None` when nothing is recognisable.
pub fn sniff_jsonl(head: &[u8]) -> Option<SourceKind> {
    use serde_json::Value;
    let (lines, _) = crate::adapter::complete_lines(head);
    // A first line longer than the sniffed bytes: judge by its start.
    let partial: Vec<(usize, &[u8])> = if lines.is_empty() && !head.is_empty() { vec![(0, head)] } else { Vec::new() };
    for (_, line) in lines.into_iter().chain(partial).take(20) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            let text = String::from_utf8_lossy(line);
            if text.contains("\"payload\"") && text.contains("\"type\"") {
                return Some(SourceKind::CodexRollout);
            }
            if text.contains("\"sessionId\"") && text.contains("\"uuid\"") {
                return Some(SourceKind::ClaudeTranscript);
            }
            continue;
        };
        let Value::Object(o) = &v else { continue };
        if o.contains_key("payload") && o.contains_key("type") {
            return Some(SourceKind::CodexRollout);
        }
        if o.contains_key("$set") || o.contains_key("$rewindTo") || o.contains_key("projectHash") {
            return Some(SourceKind::GeminiJsonl);
        }
        if matches!(o.get("type").and_then(Value::as_str), Some("gemini")) {
            return Some(SourceKind::GeminiJsonl);
        }
        if o.contains_key("uuid") || o.contains_key("sessionId") || o.contains_key("isSidechain") {
            return Some(SourceKind::ClaudeTranscript);
        }
    }
    None
}

/// What an explicitly named file is, by name and location, else by content.
pub fn classify(path: &Path) -> Result<Option<SourceKind>, Error> {
    let n = name(path);
    if n == "opencode.db" {
        return Ok(Some(SourceKind::OpenCodeDb));
    }
    if n.ends_with(".md") {
        return Ok(is_export(path)?.then_some(SourceKind::SpecStory));
    }
    let in_chats = path.components().any(|c| c.as_os_str() == "chats");
    if n.ends_with(".json") {
        return Ok((in_chats || n.starts_with("session-")).then_some(SourceKind::GeminiLegacy));
    }
    if !n.ends_with(".jsonl") {
        return Ok(None);
    }
    if n.starts_with("rollout-") {
        return Ok(Some(SourceKind::CodexRollout));
    }
    if in_chats {
        return Ok(Some(SourceKind::GeminiJsonl));
    }
    let mut head = vec![0u8; SNIFF_BYTES];
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut filled = 0;
    loop {
        match std::io::Read::read(&mut file, &mut head[filled..]) {
            Ok(0) => break,
            Ok(k) => {
                filled += k;
                if filled == head.len() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    head.truncate(filled);
    Ok(sniff_jsonl(&head))
}

/// The sources at explicitly named paths: a file is classified alone; a
/// directory is an OpenCode `storage/` directory (one that has `session/`)
/// or a data directory holding one, else every classifiable file under it.
/// Unrecognised files are returned separately, for the caller to report.
pub fn discover_paths(paths: &[PathBuf]) -> Result<(Vec<Source>, Vec<PathBuf>), Error> {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if !meta.is_dir() {
            match classify(path)? {
                Some(kind) => out.push(Source { kind, path: path.clone(), sidecar: sidecar_of(kind, path) }),
                None => unknown.push(path.clone()),
            }
            continue;
        }
        if is_storage_dir(path) {
            out.push(Source { kind: SourceKind::OpenCodeStorage, path: path.clone(), sidecar: None });
            continue;
        }
        let mut files = Vec::new();
        walk(path, &mut files)?;
        for f in files {
            if let Some(storage) = f.ancestors().skip(1).find(|a| name(a) == "storage" && is_storage_dir(a)) {
                out.push(Source { kind: SourceKind::OpenCodeStorage, path: storage.to_path_buf(), sidecar: None });
                continue;
            }
            let n = name(&f);
            if n == "journal.jsonl" || f.components().any(|c| c.as_os_str() == "tool-results") {
                continue;
            }
            match classify(&f)? {
                Some(kind) => out.push(Source { kind, sidecar: sidecar_of(kind, &f), path: f }),
                // Inside a directory only logs that look like logs are worth a word.
                None if n.ends_with(".jsonl") => unknown.push(f),
                None => {}
            }
        }
    }
    out.sort();
    out.dedup();
    Ok((out, unknown))
}

fn is_storage_dir(dir: &Path) -> bool {
    dir.join("session").is_dir() && (dir.join("message").is_dir() || dir.join("part").is_dir())
}

/// The `.meta.json` next to a Claude `agent-*.jsonl`, if present.
fn sidecar_of(kind: SourceKind, f: &Path) -> Option<PathBuf> {
    if kind != SourceKind::ClaudeTranscript {
        return None;
    }
    name(f)
        .strip_suffix(".jsonl")
        .filter(|stem| stem.starts_with("agent-"))
        .map(|stem| f.with_file_name(format!("{stem}.meta.json")))
        .filter(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_tells_harnesses_apart() {
        let codex = br#"{"timestamp":"2026-01-02T05:00:00.000Z","type":"session_meta","payload":{"id":"x"}}
"#;
        let claude = br#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}
"#;
        let gemini = br#"{"sessionId":"g","projectHash":"abc","startTime":"2026-01-01T00:00:00Z"}
"#;
        assert_eq!(sniff_jsonl(codex), Some(SourceKind::CodexRollout));
        assert_eq!(sniff_jsonl(claude), Some(SourceKind::ClaudeTranscript));
        assert_eq!(sniff_jsonl(gemini), Some(SourceKind::GeminiJsonl));
        assert_eq!(sniff_jsonl(b"not json\n{\"a\":1}\n"), None);
        // A first line longer than the sniffed head is judged by its start.
        assert_eq!(
            sniff_jsonl(br#"{"type":"user","uuid":"u1","sessionId":"s","message":"#),
            Some(SourceKind::ClaudeTranscript)
        );
    }

    #[test]
    fn explicit_paths_are_classified() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, text).expect("write");
            p
        };
        let claude = write("a/one.jsonl", "{\"type\":\"user\",\"uuid\":\"u\",\"sessionId\":\"s\"}\n");
        let codex = write("b/rollout-2026-01-01T00-00-00-x.jsonl", "{}\n");
        let gemini = write("c/chats/session-1.jsonl", "{}\n");
        let legacy = write("c/chats/session-2.json", "{}");
        let agent = write("a/agent-7.jsonl", "{\"type\":\"user\",\"uuid\":\"u\",\"sessionId\":\"s\"}\n");
        write("a/agent-7.meta.json", "{}");
        write("oc/storage/session/p/ses.json", "{}");
        write("oc/storage/message/ses/m.json", "{}");
        let odd = write("a/notes.jsonl", "plain text\n");
        let (sources, unknown) = discover_paths(&[root.to_path_buf()]).expect("discover");
        let kinds: Vec<(SourceKind, &Path)> = sources.iter().map(|s| (s.kind, s.path.as_path())).collect();
        assert!(kinds.contains(&(SourceKind::ClaudeTranscript, claude.as_path())), "{kinds:?}");
        assert!(kinds.contains(&(SourceKind::CodexRollout, codex.as_path())));
        assert!(kinds.contains(&(SourceKind::GeminiJsonl, gemini.as_path())));
        assert!(kinds.contains(&(SourceKind::GeminiLegacy, legacy.as_path())));
        assert!(sources.iter().any(|s| s.path == agent && s.sidecar.is_some()));
        // The storage directory is one source, found at any depth, not its files one by one.
        let storage: Vec<&Source> = sources.iter().filter(|s| s.kind == SourceKind::OpenCodeStorage).collect();
        assert_eq!(storage.len(), 1);
        assert_eq!(storage[0].path, root.join("oc/storage"));
        let (direct, _) = discover_paths(&[root.join("oc/storage")]).expect("discover");
        assert_eq!(direct.len(), 1);
        assert_eq!(unknown, vec![odd]);
    }

    #[test]
    fn config_dirs_win_and_harness_filter() {
        let env = Roots::from_env(|k| (k == "HOME").then(|| "/home/u".to_owned()));
        let scan = shared::base::config::ScanConfig { codex_home: Some("/srv/codex".into()), ..Default::default() };
        let r = env.with_config(&scan);
        assert_eq!(r.codex, vec![PathBuf::from("/srv/codex/sessions")]);
        assert_eq!(r.claude, vec![PathBuf::from("/home/u/.claude/projects")]);
        let only = r.only(&[Harness::Codex]);
        assert!(only.claude.is_empty() && only.gemini.is_empty() && only.opencode.is_empty());
        assert_eq!(only.codex.len(), 1);
    }

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
