//! Running the real ingestor over the corpus the way a new user would: the
//! transcripts laid out in a fresh home, `engram-ingestor scan`, then what
//! the CLI lists (memories, the sessions they came from, each session's
//! project).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::score::{Memory, session_id};
use crate::driver::{Result, err};

/// Copies `corpus/claude/<project>/*.jsonl` into
/// `home/.claude/projects/-home-dev-<project>/` (where Claude Code keeps
/// the transcripts of sessions run in `/home/dev/<project>`); returns the
/// number of files copied.
pub fn lay_out(corpus: &Path, home: &Path) -> Result<usize> {
    let source = corpus.join("claude");
    let dirs = std::fs::read_dir(&source).map_err(|e| err!("{}: {e}", source.display()))?;
    let mut projects: Vec<_> = dirs.filter_map(std::result::Result::ok).filter(|e| e.path().is_dir()).collect();
    projects.sort_by_key(std::fs::DirEntry::file_name);
    let mut copied = 0;
    for project in projects {
        let name = project.file_name();
        let name = name.to_str().ok_or_else(|| err!("{}: not a UTF-8 name", project.path().display()))?;
        let dest = home.join(".claude/projects").join(format!("-home-dev-{name}"));
        std::fs::create_dir_all(&dest).map_err(|e| err!("{}: {e}", dest.display()))?;
        let files = std::fs::read_dir(project.path()).map_err(|e| err!("{}: {e}", project.path().display()))?;
        for f in files.filter_map(std::result::Result::ok) {
            let path = f.path();
            if path.extension().is_some_and(|x| x == "jsonl") && path.is_file() {
                std::fs::copy(&path, dest.join(f.file_name()))
                    .map_err(|e| err!("copying {} to {}: {e}", path.display(), dest.display()))?;
                copied += 1;
            }
        }
    }
    if copied == 0 {
        return Err(err!("{} holds no transcript (claude/<project>/*.jsonl)", source.display()));
    }
    Ok(copied)
}

/// What one run of the ingestor over the corpus gave.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Transcripts laid out.
    pub files: usize,
    /// `scan --json`'s summary.
    pub scan: Value,
    /// The scan's wall time.
    pub scan_wall: Duration,
    /// Every live memory, with its sessions.
    pub memories: Vec<Memory>,
    /// The project Engram gave each session (session id → project key).
    pub projects: BTreeMap<String, String>,
    /// The time listing them took.
    pub list_wall: Duration,
}

fn run_ok(mut cmd: Command) -> Result<String> {
    let what = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| err!("running {what}: {e}"))?;
    if !out.status.success() {
        return Err(err!(
            "{what} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| err!("{what}: stdout is not UTF-8: {e}"))
}

/// Lays the corpus out in the home `root` (which the run owns: `HOME` and
/// `ENGRAM_HOME=root/engram` point there), runs `ingestor scan`, and reads
/// back the memories and the sessions' projects.
pub fn run(corpus: &Path, ingestor: &Path, root: &Path) -> Result<Outcome> {
    let files = lay_out(corpus, root)?;
    let cli = |args: &[&str]| {
        let mut c = crate::isolated(ingestor, root);
        c.args(args).current_dir(root);
        c
    };
    let started = Instant::now();
    let text = run_ok(cli(&["scan", "--json"]))?;
    let scan_wall = started.elapsed();
    let scan: Value = serde_json::from_str(&text).map_err(|e| err!("scan --json: {e}:\n{text}"))?;
    let started = Instant::now();
    let mut memories = parse_memory_list(&run_ok(cli(&["memory", "list", "--json", "--limit", "0"]))?)?;
    for m in &mut memories {
        let sessions = parse_memory_sessions(&run_ok(cli(&["memory", "show", &m.id, "--json"]))?)?;
        if !sessions.is_empty() {
            m.sessions = sessions;
        }
    }
    // Every session the scan read: `session audit` lists the latest ones,
    // so ask for more than the corpus holds.
    let limit = (files * 4 + 100).to_string();
    let projects = parse_session_projects(&run_ok(cli(&["session", "audit", "--json", "--limit", &limit]))?)?;
    Ok(Outcome { files, scan, scan_wall, memories, projects, list_wall: started.elapsed() })
}

fn field(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// The memories of `memory list --json`, each with its `source_session` as
/// its only session so far.
pub fn parse_memory_list(text: &str) -> Result<Vec<Memory>> {
    let v: Value = serde_json::from_str(text).map_err(|e| err!("memory list --json: {e}:\n{text}"))?;
    let items = v.as_array().ok_or_else(|| err!("memory list --json is not an array: {text}"))?;
    items
        .iter()
        .map(|m| {
            Ok(Memory {
                id: field(m, "id").ok_or_else(|| err!("memory list --json: a memory without an id: {m}"))?,
                text: field(m, "content").unwrap_or_default(),
                memory_type: field(m, "type").unwrap_or_default(),
                project: field(m, "project").filter(|p| !p.is_empty()),
                sessions: field(m, "source_session").into_iter().collect(),
            })
        })
        .collect()
}

/// The sessions of `memory show --json`.
pub fn parse_memory_sessions(text: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_str(text).map_err(|e| err!("memory show --json: {e}:\n{text}"))?;
    Ok(v.get("sessions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default())
}

/// Session id → Engram's project key, from `session audit --json` (its
/// `repo`); sessions without one are left out.
pub fn parse_session_projects(text: &str) -> Result<BTreeMap<String, String>> {
    let v: Value = serde_json::from_str(text).map_err(|e| err!("session audit --json: {e}:\n{text}"))?;
    let items = v.as_array().ok_or_else(|| err!("session audit --json is not an array: {text}"))?;
    Ok(items
        .iter()
        .filter_map(|s| {
            let key = field(s, "session")?;
            let repo = field(s, "repo").filter(|r| !r.is_empty())?;
            Some((session_id(&key).to_owned(), repo))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_is_laid_out_as_claude_code_keeps_it() {
        let corpus = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        for (project, file) in [("kiln", "a.jsonl"), ("kiln", "b.jsonl"), ("loom", "c.jsonl"), ("loom", "notes.txt")] {
            let dir = corpus.path().join("claude").join(project);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(file), format!("{project}/{file}\n")).unwrap();
        }
        std::fs::write(corpus.path().join("claude/README"), "not a project").unwrap();
        assert_eq!(lay_out(corpus.path(), home.path()).unwrap(), 3);
        let projects = home.path().join(".claude/projects");
        assert_eq!(std::fs::read_to_string(projects.join("-home-dev-kiln/b.jsonl")).unwrap(), "kiln/b.jsonl\n");
        assert!(projects.join("-home-dev-loom/c.jsonl").is_file());
        assert!(!projects.join("-home-dev-loom/notes.txt").exists());

        let empty = tempfile::tempdir().unwrap();
        assert!(lay_out(empty.path(), home.path()).unwrap_err().0.contains("claude"));
        std::fs::create_dir_all(empty.path().join("claude/none")).unwrap();
        assert!(lay_out(empty.path(), home.path()).unwrap_err().0.contains("no transcript"));
    }

    #[test]
    fn the_cli_listings_parse() {
        let list = r#"[{"id":"mem_1","content":"Use tabs","type":"convention","project":"/w/kiln",
                        "source_session":"claude:s1"},
                       {"id":"mem_2","content":"Be terse","type":"preference","project":null}]"#;
        let m = parse_memory_list(list).unwrap();
        assert_eq!(m[0].project.as_deref(), Some("/w/kiln"));
        assert_eq!(m[0].sessions, ["claude:s1"]);
        assert_eq!((m[1].project.as_deref(), m[1].sessions.len()), (None, 0));
        assert!(parse_memory_list(r#"[{"content":"x"}]"#).unwrap_err().0.contains("without an id"));
        assert!(parse_memory_list("{}").is_err());
        assert!(parse_memory_list("not json").is_err());

        let show = r#"{"id":"mem_1","sessions":["claude:s1","claude:s2"]}"#;
        assert_eq!(parse_memory_sessions(show).unwrap(), ["claude:s1", "claude:s2"]);
        assert!(parse_memory_sessions(r#"{"id":"mem_1"}"#).unwrap().is_empty());

        let audit = r#"[{"session":"claude:s1","repo":"/w/kiln"},{"session":"claude:s2","repo":null},
                        {"session":"codex:s3","repo":"/w/loom"}]"#;
        let p = parse_session_projects(audit).unwrap();
        assert_eq!(p, BTreeMap::from([("s1".into(), "/w/kiln".into()), ("s3".into(), "/w/loom".into())]));
        assert!(parse_session_projects("{}").is_err());
    }
}
