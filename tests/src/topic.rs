//! Topic-shift labels of the real sessions and the prompt-selection rule
//! they were made with: which records of a Claude Code transcript are
//! prompts a person typed, the labels of `tests/data/topic_shifts.json`
//! (our own file: session, prompt index, BLAKE3 of the prompt as stored,
//! `shift`/`continue`/`unsure`, why), and the tally of a detector's
//! decisions against them.
//!
//! A record is a typed prompt when it is a `user` record that is not meta,
//! a compact summary, transcript-only or a sidechain; its content is a
//! string or text blocks (no tool result); and what is left after the
//! leading context blocks the harness or IDE adds (`<system-reminder>`,
//! `<ide_opened_file>`, `<ide_selection>`, `<ide_diagnostics>`) is not empty
//! and does not open with a harness wrapper (slash commands, local command
//! output, `!` shell mode, interruptions, continuation notices, background
//! task notices).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::driver::{Result, err};

/// The labels, relative to this crate.
pub const LABELS: &str = "data/topic_shifts.json";

/// Context blocks put before the typed text.
const CONTEXT_BLOCKS: &[&str] = &["system-reminder", "ide_opened_file", "ide_selection", "ide_diagnostics"];

/// Openings of text the harness sent as a user record.
const HARNESS_PREFIXES: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "This session is being continued from a previous conversation",
    "Caveat: The messages below were generated",
    "<system_notification>",
    "<user_query>",
    "<task-notification>",
];

/// One label.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Label {
    /// `<project>/<session id>.jsonl`, relative to the corpus' `claude/`.
    pub session: String,
    /// 0-based position among the session's selected prompts.
    pub index: usize,
    /// BLAKE3 (hex) of the record's content as stored.
    pub prompt_blake3: String,
    /// `shift`, `continue` or `unsure`.
    pub label: String,
    /// Why.
    #[serde(default)]
    pub why: String,
}

/// Reads the labels file.
pub fn load_labels(path: &Path) -> Result<Vec<Label>> {
    let text = std::fs::read_to_string(path).map_err(|e| err!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| err!("{}: {e}", path.display()))
}

/// A typed prompt of a transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// The record's content as stored.
    pub raw: String,
    /// What the user typed (the content without leading context blocks, trimmed).
    pub text: String,
    /// The record's time (ms), when it has one.
    pub ts_ms: Option<i64>,
}

impl Prompt {
    /// BLAKE3 (hex) of [`Prompt::raw`].
    pub fn blake3(&self) -> String {
        blake3::hash(self.raw.as_bytes()).to_hex().to_string()
    }
}

/// `text` without the context blocks it opens with.
fn strip_context(mut text: &str) -> &str {
    loop {
        let t = text.trim_start();
        let next = CONTEXT_BLOCKS.iter().find_map(|tag| {
            let rest = t.strip_prefix(&format!("<{tag}>"))?;
            let close = format!("</{tag}>");
            rest.find(&close).map(|at| &rest[at + close.len()..])
        });
        match next {
            Some(rest) => text = rest,
            None => return text,
        }
    }
}

/// The prompt a transcript record holds, if it is one a person typed.
pub fn prompt_of(record: &Value) -> Option<Prompt> {
    if record.get("type").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let flag = |k: &str| record.get(k).and_then(Value::as_bool).unwrap_or(false);
    if ["isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isSidechain"].iter().any(|k| flag(k)) {
        return None;
    }
    let raw = match record.get("message").and_then(|m| m.get("content"))? {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let kind = |b: &Value| b.get("type").and_then(Value::as_str).map(str::to_owned);
            if blocks.iter().any(|b| kind(b).as_deref() == Some("tool_result")) {
                return None;
            }
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| kind(b).as_deref() == Some("text"))
                .map(|b| b.get("text").and_then(Value::as_str).unwrap_or(""))
                .collect();
            texts.join("\n")
        }
        _ => return None,
    };
    let text = strip_context(&raw).trim().to_owned();
    if text.is_empty() || HARNESS_PREFIXES.iter().any(|p| text.starts_with(p)) {
        return None;
    }
    let ts_ms = record.get("timestamp").and_then(Value::as_str).and_then(shared::base::time::Ts::parse).map(|t| t.0);
    Some(Prompt { raw, text, ts_ms })
}

/// The typed prompts of a transcript (JSON lines; lines that do not parse are skipped).
pub fn prompts(transcript: &str) -> Vec<Prompt> {
    transcript.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter_map(|r| prompt_of(&r)).collect()
}

/// Decisions against labels: per label, how many prompts the detector
/// suggested a stash at, out of how many.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// label → (fired, of).
    pub by_label: BTreeMap<String, (usize, usize)>,
}

impl Tally {
    /// Counts one labelled prompt.
    pub fn add(&mut self, label: &str, fired: bool) {
        let e = self.by_label.entry(label.to_owned()).or_default();
        e.0 += usize::from(fired);
        e.1 += 1;
    }

    fn get(&self, label: &str) -> (usize, usize) {
        self.by_label.get(label).copied().unwrap_or_default()
    }

    /// Shifts caught, of all shifts.
    pub fn recall(&self) -> (usize, usize) {
        self.get("shift")
    }

    /// Continues the detector fired at, of all continues.
    pub fn false_alarms(&self) -> (usize, usize) {
        self.get("continue")
    }

    /// Shifts among the shifts and continues it fired at (unsure left out);
    /// `None` when it fired at none.
    pub fn precision(&self) -> Option<f64> {
        let (tp, _) = self.get("shift");
        let (fp, _) = self.get("continue");
        (tp + fp > 0).then(|| tp as f64 / (tp + fp) as f64)
    }

    /// One line: recall, false alarms, precision, unsure.
    pub fn line(&self) -> String {
        let ((tp, p), (fp, n), (u, un)) = (self.recall(), self.false_alarms(), self.get("unsure"));
        let pct = |a: usize, b: usize| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
        format!(
            "recall {tp}/{p} ({:.1}%), false alarms {fp}/{n} ({:.1}%), precision {}, fired on unsure {u}/{un}",
            pct(tp, p),
            pct(fp, n),
            self.precision().map_or_else(|| "n/a".to_owned(), |x| format!("{:.2}", x)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: Value) -> Option<Prompt> {
        prompt_of(&v)
    }

    #[test]
    fn typed_prompts_are_selected_by_the_rule() {
        let typed = rec(serde_json::json!({"type": "user", "timestamp": "2025-01-02T03:04:05.500Z",
            "message": {"content": "Fix the login test"}}))
        .unwrap();
        assert_eq!(typed.text, "Fix the login test");
        assert_eq!(typed.ts_ms, Some(1_735_787_045_500));
        assert_eq!(typed.blake3(), blake3::hash(b"Fix the login test").to_hex().to_string());
        // Context blocks before the typed text are stripped, but the hash covers them.
        let raw = "<ide_opened_file>The user opened a.rs</ide_opened_file>\n<system-reminder>x</system-reminder> go on";
        let p = rec(serde_json::json!({"type": "user", "message": {"content": raw}})).unwrap();
        assert_eq!((p.text.as_str(), p.raw.as_str(), p.ts_ms), ("go on", raw, None));
        // Text blocks are joined.
        let p = rec(serde_json::json!({"type": "user", "message": {"content": [
            {"type": "text", "text": "one"}, {"type": "image"}, {"type": "text", "text": "two"}]}}))
        .unwrap();
        assert_eq!(p.text, "one\ntwo");
        for out in [
            serde_json::json!({"type": "assistant", "message": {"content": "hi"}}),
            serde_json::json!({"type": "user", "isMeta": true, "message": {"content": "skill body"}}),
            serde_json::json!({"type": "user", "isSidechain": true, "message": {"content": "subagent"}}),
            serde_json::json!({"type": "user", "isCompactSummary": true, "message": {"content": "summary"}}),
            serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": "ok"}]}}),
            serde_json::json!({"type": "user", "message": {"content": "<command-name>/model</command-name>"}}),
            serde_json::json!({"type": "user", "message": {"content": "<bash-input>ls</bash-input>"}}),
            serde_json::json!({"type": "user", "message": {"content": "[Request interrupted by user]"}}),
            serde_json::json!({"type": "user", "message": {"content": "<system-reminder>only</system-reminder>  "}}),
            serde_json::json!({"type": "user", "message": {"content": 5}}),
            serde_json::json!({"type": "user"}),
        ] {
            assert_eq!(rec(out.clone()), None, "{out}");
        }
        // An unclosed context block is typed text.
        assert!(rec(serde_json::json!({"type": "user", "message": {"content": "<ide_selection>half"}})).is_some());
        let lines = "{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\nnot json\n\n{\"type\":\"user\",\"message\":{\"content\":\"b\"}}";
        assert_eq!(prompts(lines).iter().map(|p| p.text.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn the_tally_counts_by_label() {
        let mut t = Tally::default();
        for (l, f) in [("shift", true), ("shift", false), ("continue", true), ("continue", false), ("unsure", true)] {
            t.add(l, f);
        }
        t.add("continue", false);
        assert_eq!((t.recall(), t.false_alarms(), t.precision()), ((1, 2), (1, 3), Some(0.5)));
        assert!(t.line().starts_with("recall 1/2 (50.0%), false alarms 1/3 (33.3%), precision 0.50"), "{}", t.line());
        assert_eq!(Tally::default().precision(), None);
    }
}
