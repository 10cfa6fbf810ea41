//! The "why this code exists" note a read-side hook puts into an agent's
//! context before an edit (Claude Code `Edit`, `MultiEdit`, `Write`; Codex
//! `apply_patch` in its shapes): the text about to change is explained
//! (brief, from the projection alone: no tape is read), and when another
//! session produced it with strong evidence, one short paragraph names that
//! session, the request it was working on and what its agent said.
//!
//! Noise rules: only before edits; only when the span has at least
//! [`MIN_FINGERPRINTS`] fingerprints and the session's evidence reaches
//! [`MIN_CONFIDENCE`]; never the editing session itself; at most once per
//! session, source session and file (`provenance.noted`, `prov_notes`); at
//! most [`MAX_CHARS`] characters, taken from the same injection budget as
//! the memories (the hook lowers the ranking's budget by the note's size).

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::explain::{self, ExplainOptions, Target};
use crate::base::error::{Result, SqlContext};
use crate::base::ids::SessionKey;
use crate::base::time::Ts;
use crate::storage::store::Store;

/// Fingerprints the text about to change must have.
pub const MIN_FINGERPRINTS: usize = 3;
/// Confidence the source session's evidence must reach.
pub const MIN_CONFIDENCE: f32 = 0.6;
/// Longest note.
pub const MAX_CHARS: usize = 700;
/// Characters quoted from the request and from the agent.
const QUOTE_CHARS: usize = 220;
/// Largest file read for a `Write` (the whole file is about to change).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// A note, and what to record about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// The paragraph (without the injection frame).
    pub text: String,
    /// The session it names.
    pub source: SessionKey,
    /// The file about to change.
    pub file: Option<String>,
    /// The evidence's confidence.
    pub confidence: f32,
}

/// Whether `tool` edits files.
pub fn is_edit_tool(tool: &str) -> bool {
    matches!(tool, "Edit" | "MultiEdit" | "Write" | "edit" | "write" | "multi_edit" | "apply_patch")
        || tool.ends_with("__apply_patch")
}

/// The file and the text an edit tool call is about to change, if any.
pub fn span_about_to_change(tool: &str, input: &Value, cwd: Option<&str>) -> Option<(Option<String>, String)> {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    let file = ["file_path", "filePath", "path"].iter().find_map(|k| s(k)).map(|f| absolute(f, cwd));
    let text = match tool {
        "Edit" | "edit" => s("old_string").or_else(|| s("oldString")).map(str::to_owned),
        "MultiEdit" | "multi_edit" => {
            let olds: Vec<&str> = input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| e.get("old_string").and_then(Value::as_str))
                .collect();
            (!olds.is_empty()).then(|| olds.join("\n"))
        }
        "Write" | "write" => file.as_deref().and_then(|f| {
            let meta = std::fs::metadata(f).ok()?;
            (meta.len() <= MAX_FILE_BYTES).then(|| std::fs::read_to_string(f).ok()).flatten()
        }),
        _ => {
            let patch = patch_text(input)?;
            let (pfile, text) = patch_before(&patch, cwd)?;
            return Some((Some(pfile), text));
        }
    };
    text.filter(|t| !t.trim().is_empty()).map(|t| (file, t))
}

fn absolute(file: &str, cwd: Option<&str>) -> String {
    super::index::normalize_path(file, cwd)
}

/// The `*** Begin Patch` text in a call's input, in any of its shapes.
fn patch_text(input: &Value) -> Option<String> {
    let has = |t: &str| t.contains("*** Begin Patch");
    match input {
        Value::String(t) if has(t) => Some(t.clone()),
        Value::Object(m) => m.values().find_map(|v| match v {
            Value::String(t) if has(t) => Some(t.clone()),
            Value::Array(items) => items.iter().filter_map(Value::as_str).find(|t| has(t)).map(str::to_owned),
            _ => None,
        }),
        _ => None,
    }
}

/// The first file a patch updates or deletes, and its lines the patch
/// replaces or keeps as context (a deleted file is read from disk).
fn patch_before(patch: &str, cwd: Option<&str>) -> Option<(String, String)> {
    let mut file: Option<String> = None;
    let mut text = String::new();
    for line in patch.lines() {
        if let Some(f) = line.strip_prefix("*** Update File: ") {
            if file.is_some() {
                break;
            }
            file = Some(absolute(f.trim(), cwd));
            continue;
        }
        if let Some(f) = line.strip_prefix("*** Delete File: ") {
            if file.is_some() {
                break;
            }
            let f = absolute(f.trim(), cwd);
            let meta = std::fs::metadata(&f).ok()?;
            let whole = (meta.len() <= MAX_FILE_BYTES).then(|| std::fs::read_to_string(&f).ok()).flatten()?;
            return Some((f, whole));
        }
        if line.starts_with("*** ") {
            if file.is_some() && !line.starts_with("*** End of File") && !line.starts_with("*** Move to") {
                break;
            }
            continue;
        }
        if file.is_some()
            && let Some(rest) = line.strip_prefix('-').or_else(|| line.strip_prefix(' '))
        {
            text.push_str(rest);
            text.push('\n');
        }
    }
    file.filter(|_| !text.trim().is_empty()).map(|f| (f, text))
}

/// The note for an edit `tool` is about to make in `session`, if the
/// evidence is strong (see the module docs).
pub fn note(
    store: &Store,
    session: Option<&SessionKey>,
    tool: &str,
    input: &Value,
    cwd: Option<&str>,
) -> Result<Option<Note>> {
    if !is_edit_tool(tool) {
        return Ok(None);
    }
    let Some((file, text)) = span_about_to_change(tool, input, cwd) else { return Ok(None) };
    let opts = ExplainOptions { brief: true, limit: 5, ..ExplainOptions::default() };
    let e = explain::explain(store, None, &Target { text, file: file.clone(), range: None }, &opts)?;
    if e.target.fingerprints < MIN_FINGERPRINTS {
        return Ok(None);
    }
    let conn = store.conn();
    for s in &e.sessions {
        if session.is_some_and(|k| k.as_str() == s.session) || s.confidence < MIN_CONFIDENCE || s.via != "direct" {
            continue;
        }
        if let Some(current) = session {
            let seen: bool = conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM prov_notes WHERE session_key = ?1 AND source_session = ?2 AND file = ?3)",
                )
                .and_then(|mut st| {
                    st.query_row(params![current.as_str(), s.session, file.as_deref().unwrap_or("")], |r| r.get(0))
                })
                .sql("read notes")?;
            if seen {
                continue;
            }
        }
        let Some(touch) = s.touches.iter().max_by(|a, b| a.confidence.total_cmp(&b.confidence)) else { continue };
        let lsn = touch.lsn() as i64;
        let quote = |sql: &str| -> Result<Option<String>> {
            conn.prepare_cached(sql)
                .and_then(|mut st| st.query_row(params![s.session, lsn], |r| r.get::<_, String>(0)).optional())
                .sql("read the session's words")
        };
        let asked = quote(
            "SELECT text FROM session_events WHERE session_key = ?1 AND lsn <= ?2 AND kind = 'msg.in'
               AND (origin IS NULL OR origin = 'user') AND text != '' ORDER BY lsn DESC LIMIT 1",
        )?;
        let said = quote(
            "SELECT text FROM session_events WHERE session_key = ?1 AND lsn <= ?2 AND kind = 'msg.out'
               AND origin IS NULL AND text != '' ORDER BY lsn DESC LIMIT 1",
        )?;
        let when = Ts::parse(&s.latest_touch).map_or_else(String::new, |t| {
            let (y, m, d) = t.civil_date();
            format!(" on {y:04}-{m:02}-{d:02}")
        });
        let mut text = format!(
            "Why this code exists: session {}{when} worked on it ({} touch{}, {:.0}% of it).",
            s.session,
            s.touch_count,
            if s.touch_count == 1 { "" } else { "es" },
            s.confidence * 100.0
        );
        if let Some(a) = asked {
            text.push_str(&format!(" Its request: \"{}\".", quote_of(&a)));
        }
        if let Some(a) = said {
            text.push_str(&format!(" Its agent: \"{}\".", quote_of(&a)));
        }
        text.push_str(" Read the transcript with memory_explain (this file and lines) before changing its intent.");
        let text: String = text.chars().take(MAX_CHARS).collect();
        return Ok(Some(Note { text, source: SessionKey(s.session.clone()), file, confidence: s.confidence }));
    }
    Ok(None)
}

fn quote_of(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ").replace('"', "'");
    match one.char_indices().nth(QUOTE_CHARS) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_about_to_change() {
        let edit = json!({"file_path": "src/a.rs", "old_string": "fn a() {}", "new_string": "fn b() {}"});
        assert_eq!(
            span_about_to_change("Edit", &edit, Some("/w")),
            Some((Some("/w/src/a.rs".into()), "fn a() {}".into()))
        );
        let multi = json!({"file_path": "/x.rs", "edits": [{"old_string": "one"}, {"old_string": "two"}]});
        assert_eq!(span_about_to_change("MultiEdit", &multi, None).unwrap().1, "one\ntwo");
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn x\n keep\n-gone\n+new\n*** Add File: b.rs\n+x\n*** End Patch";
        assert_eq!(
            span_about_to_change("apply_patch", &json!({"input": patch}), Some("/w")),
            Some((Some("/w/src/lib.rs".into()), "keep\ngone\n".into()))
        );
        assert_eq!(span_about_to_change("apply_patch", &json!(patch), Some("/w")).unwrap().1, "keep\ngone\n");
        assert!(span_about_to_change("Bash", &json!({"command": "ls"}), None).is_none());
        assert!(!is_edit_tool("Read") && is_edit_tool("Write") && is_edit_tool("mcp__x__apply_patch"));
    }
}
