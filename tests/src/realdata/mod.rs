//! The real-data extraction benchmark: real coding-agent sessions (a corpus
//! read at run time from `../shared/realdata`, never copied here) scanned by
//! the real `engram-ingestor`, and the memories it keeps scored against the
//! corpus' hand labels.
//!
//! The corpus holds `claude/<project>/<session id>.jsonl` (Claude Code
//! transcripts) and `labels.json`: per session, its project, repository and
//! language, the `lessons` a memory tool should keep (each with a kind and
//! `match`, a list of term sets) and the `traps` it should not keep (with
//! `match` likewise). A memory matches a set when its text contains every
//! term of it (case-insensitive substring).
//!
//! - [`run`] lays the corpus out as a new user's home
//!   (`~/.claude/projects/-home-dev-<project>/`), runs `engram-ingestor scan`
//!   there, and reads back the memories with the sessions they came from.
//! - [`score`] attributes each memory to a labelled project (by its
//!   project; a global memory by the sessions it was learned from) and
//!   matches it against that project's lessons and traps.
//! - [`report`] turns that into figures (recall by kind and language,
//!   precision, trap rate, per repository), the text and JSON reports, and
//!   the floors CI holds the product to.

pub mod report;
pub mod run;
pub mod score;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::driver::{Result, err};

/// The kinds of lesson, in report order.
pub const KINDS: [&str; 5] = ["correction", "convention", "gotcha", "fixed-command", "preference"];

/// One session of `labels.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelledSession {
    /// The original file, relative to the corpus (`raw/...`).
    pub file: String,
    /// Its Claude Code transcript, relative to the corpus
    /// (`claude/<project>/<session id>.jsonl`).
    pub claude: String,
    /// The public repository it comes from (`owner/name`).
    pub repo: String,
    /// The project: the folder under `claude/`.
    pub project: String,
    /// The language the user wrote in (`en`, `fr`, `zh`, ...).
    pub language: String,
    /// The tool that recorded it (`cursor`, `claude`, ...).
    pub tool: String,
    /// What a memory tool should keep.
    #[serde(default)]
    pub lessons: Vec<Lesson>,
    /// What it should not keep.
    #[serde(default)]
    pub traps: Vec<Trap>,
}

impl LabelledSession {
    /// The session id: the transcript's file name without `.jsonl`.
    pub fn session_id(&self) -> &str {
        let name = self.claude.rsplit('/').next().unwrap_or(&self.claude);
        name.strip_suffix(".jsonl").unwrap_or(name)
    }
}

/// A labelled lesson.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lesson {
    /// Its id (unique in the corpus).
    pub id: String,
    /// The lesson in words.
    pub text: String,
    /// One of [`KINDS`].
    pub kind: String,
    /// What the user (or the session) said.
    #[serde(default)]
    pub quote: String,
    /// Term sets: a memory states the lesson when it holds every term of one.
    #[serde(rename = "match")]
    pub sets: Vec<Vec<String>>,
}

/// A labelled trap: something said in the session that is no lesson.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trap {
    /// The trap in words.
    pub text: String,
    /// Term sets, as for a lesson.
    #[serde(rename = "match")]
    pub sets: Vec<Vec<String>>,
}

/// Parses and checks `labels.json`: every kind known, every term set and
/// term non-empty, session and lesson ids unique.
pub fn parse_labels(text: &str) -> Result<Vec<LabelledSession>> {
    let sessions: Vec<LabelledSession> = serde_json::from_str(text).map_err(|e| err!("labels.json: {e}"))?;
    let mut ids = BTreeSet::new();
    let mut lesson_ids = BTreeSet::new();
    for s in &sessions {
        let id = s.session_id();
        if id.is_empty() || !ids.insert(id.to_owned()) {
            return Err(err!("labels.json: session {:?} ({}) is empty or listed twice", id, s.claude));
        }
        for l in &s.lessons {
            if !lesson_ids.insert(l.id.clone()) {
                return Err(err!("labels.json: lesson id {} is used twice", l.id));
            }
            if !KINDS.contains(&l.kind.as_str()) {
                return Err(err!("labels.json: lesson {} has the unknown kind {:?}", l.id, l.kind));
            }
            check_sets(&l.sets, &format!("lesson {}", l.id))?;
        }
        for t in &s.traps {
            check_sets(&t.sets, &format!("a trap of session {id} ({:?})", t.text))?;
        }
    }
    Ok(sessions)
}

fn check_sets(sets: &[Vec<String>], what: &str) -> Result<()> {
    if sets.is_empty() {
        return Err(err!("labels.json: {what} has no term set"));
    }
    if sets.iter().any(|s| s.is_empty() || s.iter().any(|t| t.trim().is_empty())) {
        return Err(err!("labels.json: {what} has an empty term set or an empty term"));
    }
    Ok(())
}

/// Reads `labels.json` of the corpus at `corpus`.
pub fn load_labels(corpus: &Path) -> Result<Vec<LabelledSession>> {
    let path = corpus.join("labels.json");
    let text = std::fs::read_to_string(&path).map_err(|e| err!("{}: {e}", path.display()))?;
    parse_labels(&text)
}

/// Runs the benchmark: the corpus at `corpus` scanned by `ingestor` in the
/// home `root` (a fresh temporary directory when `None`), its memories
/// scored and checked against `floors`.
pub fn benchmark(
    corpus: &Path,
    ingestor: &Path,
    root: Option<&Path>,
    floors: &report::Floors,
) -> Result<report::Report> {
    let corpus = &std::fs::canonicalize(corpus).map_err(|e| err!("the corpus {}: {e}", corpus.display()))?;
    // The ingestor runs in the home: a relative path would no longer resolve
    // (a bare name is looked up in PATH and stays as it is).
    let ingestor = &if ingestor.components().count() > 1 && ingestor.is_relative() {
        std::env::current_dir().map_err(|e| err!("the current directory: {e}"))?.join(ingestor)
    } else {
        ingestor.to_path_buf()
    };
    let labels = load_labels(corpus)?;
    let temp;
    let root = match root {
        Some(r) => r,
        None => {
            temp = tempfile::tempdir().map_err(|e| err!("a temporary directory: {e}"))?;
            temp.path()
        }
    };
    let out = run::run(corpus, ingestor, root)?;
    let keys = score::ProjectKeys::of(&labels, &out.projects);
    let scored = score::score(&labels, out.memories, &keys);
    let scan = report::ScanInfo {
        corpus: corpus.display().to_string(),
        ingestor: ingestor.display().to_string(),
        files: u32::try_from(out.files).unwrap_or(u32::MAX),
        scan_seconds: out.scan_wall.as_secs_f64(),
        scan_elapsed_ms: out.scan.get("elapsed_ms").and_then(serde_json::Value::as_f64),
        events: out.scan.get("events_appended").and_then(serde_json::Value::as_u64),
        list_seconds: out.list_wall.as_secs_f64(),
    };
    Ok(report::Report::new(scan, scored, floors))
}

/// The corpus in the shared data directory (`../shared/realdata`, or
/// `$ENGRAM_SHARED_DIR/realdata`); `None` (with a message) when it is
/// missing locally, a panic when it is missing under `CI`.
pub fn default_corpus() -> Option<PathBuf> {
    shared::base::testing::shared_data("realdata")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(claude: &str, lessons: &str) -> String {
        format!(
            r#"{{"file":"raw/x","claude":"{claude}","repo":"o/r","project":"p","language":"en","tool":"cursor",
                "lessons":[{lessons}],"traps":[{{"text":"t","match":[["one-off"]]}}]}}"#
        )
    }

    #[test]
    fn labels_parse_with_their_session_ids() {
        let text = format!(
            "[{}]",
            session("claude/p/aaaa.jsonl", r#"{"id":"L1","text":"x","kind":"gotcha","match":[["a","b"]]}"#)
        );
        let s = parse_labels(&text).unwrap();
        assert_eq!(s[0].session_id(), "aaaa");
        assert_eq!(s[0].lessons[0].sets, vec![vec!["a".to_owned(), "b".to_owned()]]);
        assert_eq!(s[0].lessons[0].quote, "");
        assert_eq!(s[0].traps[0].sets, vec![vec!["one-off".to_owned()]]);
    }

    #[test]
    fn bad_labels_are_refused_with_a_reason() {
        let unknown_kind =
            format!("[{}]", session("claude/p/a.jsonl", r#"{"id":"L1","text":"x","kind":"hunch","match":[["a"]]}"#));
        assert!(parse_labels(&unknown_kind).unwrap_err().0.contains("unknown kind"));
        let empty_set =
            format!("[{}]", session("claude/p/a.jsonl", r#"{"id":"L1","text":"x","kind":"gotcha","match":[[]]}"#));
        assert!(parse_labels(&empty_set).unwrap_err().0.contains("empty term set"));
        let no_set =
            format!("[{}]", session("claude/p/a.jsonl", r#"{"id":"L1","text":"x","kind":"gotcha","match":[]}"#));
        assert!(parse_labels(&no_set).unwrap_err().0.contains("no term set"));
        let twice = format!("[{},{}]", session("claude/p/a.jsonl", ""), session("claude/q/a.jsonl", ""));
        assert!(parse_labels(&twice).unwrap_err().0.contains("twice"));
        let lesson = r#"{"id":"L1","text":"x","kind":"gotcha","match":[["a"]]}"#;
        let dup_lesson = format!("[{},{}]", session("claude/p/a.jsonl", lesson), session("claude/p/b.jsonl", lesson));
        assert!(parse_labels(&dup_lesson).unwrap_err().0.contains("used twice"));
        assert!(parse_labels("{").is_err());
    }
}
