//! Edits as harnesses record them, turned into per-file, per-hunk `code.edit`
//! bodies: Codex's `apply_patch` envelope (`*** Begin Patch` … `*** End
//! Patch`), unified diffs (`@@ -a,b +c,d @@`), and Claude's `structuredPatch`
//! hunks.
//!
//! Hashes follow [`crate::adapter::content_hash`]: the *before* text of a hunk
//! is its context and removed lines (` ` and `-`), the *after* text its
//! context and added lines (` ` and `+`), each without the one-character
//! prefix. The texts themselves are kept too (`before_text`, `after_text`,
//! cut like a tool output) for provenance, except for excluded paths. An added file's after text is its whole content, a deleted file's
//! before text its whole content (when the harness recorded it).

use serde_json::Value;
use shared::storage::event::{CodeEdit, LineRange};

use crate::adapter::{content_hash, line_count};

/// One contiguous change inside a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hunk {
    /// Text before the change (context + removed lines).
    pub before: String,
    /// Text after the change (context + added lines).
    pub after: String,
    /// Lines of `before` in the old file, when the format gives line numbers.
    pub before_range: Option<LineRange>,
    /// Lines of `after` in the new file, when known.
    pub after_range: Option<LineRange>,
}

/// The change to one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileEdit {
    /// The file (as the patch names it).
    pub file: String,
    /// `add`, `update` or `delete`.
    pub op: &'static str,
    /// New path of a moved file.
    pub move_to: Option<String>,
    /// Hunks (for `add`, one hunk holding the whole content).
    pub hunks: Vec<Hunk>,
    /// The patch recorded no content for this file (only its path).
    pub no_content: bool,
}

fn range(start: u32, len: u32) -> Option<LineRange> {
    (len > 0 && start > 0).then(|| [start, start + len - 1])
}

fn push_line(buf: &mut String, line: &str) {
    buf.push_str(line);
    buf.push('\n');
}

/// Parses an `apply_patch` envelope. Text before `*** Begin Patch` (a shell
/// heredoc wrapper) is skipped; a missing `*** End Patch` ends at the end of
/// the text. Unknown lines are ignored.
pub fn parse_apply_patch(text: &str) -> Vec<FileEdit> {
    let Some(begin) = text.find("*** Begin Patch") else {
        return Vec::new();
    };
    let mut files: Vec<FileEdit> = Vec::new();
    let mut hunk: Option<Hunk> = None;
    for raw in text[begin..].lines().skip(1) {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.starts_with("*** End Patch") {
            break;
        }
        let header = [("*** Add File: ", "add"), ("*** Update File: ", "update"), ("*** Delete File: ", "delete")]
            .into_iter()
            .find_map(|(p, op)| line.strip_prefix(p).map(|path| (path.trim(), op)));
        if let Some((path, op)) = header {
            if let (Some(h), Some(f)) = (hunk.take(), files.last_mut()) {
                f.hunks.push(h);
            }
            files.push(FileEdit {
                file: path.to_owned(),
                op,
                move_to: None,
                hunks: Vec::new(),
                no_content: op == "delete",
            });
            if op == "add" {
                hunk = Some(Hunk::default());
            }
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if let Some(to) = line.strip_prefix("*** Move to: ") {
            file.move_to = Some(to.trim().to_owned());
            continue;
        }
        if line.starts_with("*** End of File") {
            continue;
        }
        if line.starts_with("@@") {
            if let Some(h) = hunk.take() {
                file.hunks.push(h);
            }
            hunk = Some(Hunk::default());
            continue;
        }
        let h = hunk.get_or_insert_with(Hunk::default);
        match line.as_bytes().first() {
            Some(b'+') => push_line(&mut h.after, &line[1..]),
            Some(b'-') => push_line(&mut h.before, &line[1..]),
            Some(b' ') => {
                push_line(&mut h.before, &line[1..]);
                push_line(&mut h.after, &line[1..]);
            }
            None => {
                push_line(&mut h.before, "");
                push_line(&mut h.after, "");
            }
            _ => {}
        }
    }
    if let (Some(h), Some(f)) = (hunk.take(), files.last_mut()) {
        f.hunks.push(h);
    }
    for f in &mut files {
        f.hunks.retain(|h| !h.before.is_empty() || !h.after.is_empty());
        if f.op == "add"
            && let Some(h) = f.hunks.first_mut()
        {
            h.after_range = range(1, line_count(&h.after));
        }
    }
    files
}

/// Parses `@@ -a,b +c,d @@` hunks of a unified diff (file headers ignored).
pub fn parse_unified_diff(text: &str) -> Vec<Hunk> {
    let mut hunks = Vec::new();
    let mut cur: Option<Hunk> = None;
    for raw in text.lines() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(rest) = line.strip_prefix("@@ ") {
            if let Some(h) = cur.take() {
                hunks.push(h);
            }
            let mut h = Hunk::default();
            let mut parts = rest.split_whitespace();
            if let (Some(old), Some(new)) = (parts.next(), parts.next()) {
                let (os, ol) = parse_span(old.trim_start_matches('-'));
                let (ns, nl) = parse_span(new.trim_start_matches('+'));
                h.before_range = range(os, ol);
                h.after_range = range(ns, nl);
            }
            cur = Some(h);
            continue;
        }
        if line.starts_with("--- ") || line.starts_with("+++ ") || line.starts_with("diff ") {
            continue;
        }
        let Some(h) = cur.as_mut() else {
            continue;
        };
        match line.as_bytes().first() {
            Some(b'+') => push_line(&mut h.after, &line[1..]),
            Some(b'-') => push_line(&mut h.before, &line[1..]),
            Some(b' ') => {
                push_line(&mut h.before, &line[1..]);
                push_line(&mut h.after, &line[1..]);
            }
            _ => {}
        }
    }
    if let Some(h) = cur {
        hunks.push(h);
    }
    hunks
}

fn parse_span(s: &str) -> (u32, u32) {
    let mut it = s.split(',');
    let start = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    let len = it.next().map_or(1, |x| x.parse().unwrap_or(0));
    (start, len)
}

/// Claude's `structuredPatch`: `[{oldStart, oldLines, newStart, newLines, lines}]`.
pub fn structured_patch_hunks(v: &Value) -> Vec<Hunk> {
    let Some(items) = v.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .map(|h| {
            let num = |k: &str| h.get(k).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
            let mut hunk = Hunk {
                before_range: range(num("oldStart"), num("oldLines")),
                after_range: range(num("newStart"), num("newLines")),
                ..Hunk::default()
            };
            for l in h.get("lines").and_then(Value::as_array).into_iter().flatten() {
                let Some(l) = l.as_str() else { continue };
                match l.as_bytes().first() {
                    Some(b'+') => push_line(&mut hunk.after, &l[1..]),
                    Some(b'-') => push_line(&mut hunk.before, &l[1..]),
                    Some(b' ') => {
                        push_line(&mut hunk.before, &l[1..]);
                        push_line(&mut hunk.after, &l[1..]);
                    }
                    _ => {}
                }
            }
            hunk
        })
        .collect()
}

/// A whole-file content as one hunk (file added, or replaced wholesale).
pub fn whole_file(before: Option<&str>, after: Option<&str>) -> Hunk {
    Hunk {
        before: before.unwrap_or_default().to_owned(),
        after: after.unwrap_or_default().to_owned(),
        before_range: before.and_then(|b| range(1, line_count(b))),
        after_range: after.and_then(|a| range(1, line_count(a))),
    }
}

/// A hunk's text as kept in the event: cut in the middle like a tool output.
fn capped(text: &str) -> String {
    let mut t = text.to_owned();
    crate::redact::cap_tool_output(&mut t);
    t
}

/// The `code.edit` bodies of one file edit: one per hunk (at least one).
/// `hashes` false drops the content hashes (excluded paths).
pub fn code_edits(edit: &FileEdit, call_id: Option<&str>, hashes: bool) -> Vec<CodeEdit> {
    let base = CodeEdit {
        file: edit.file.clone(),
        op: if edit.move_to.is_some() && edit.op == "update" { "move".to_owned() } else { edit.op.to_owned() },
        move_to: edit.move_to.clone(),
        call_id: call_id.map(str::to_owned),
        ..CodeEdit::default()
    };
    if edit.hunks.is_empty() {
        return vec![base];
    }
    edit.hunks
        .iter()
        .map(|h| {
            let want_before = hashes && (edit.op != "add") && !(edit.no_content && h.before.is_empty());
            let want_after = hashes && edit.op != "delete";
            CodeEdit {
                before_range: h.before_range,
                after_range: h.after_range,
                before_hash: want_before.then(|| content_hash(&h.before)),
                after_hash: want_after.then(|| content_hash(&h.after)),
                before_text: (want_before && !h.before.is_empty()).then(|| capped(&h.before)),
                after_text: (want_after && !h.after.is_empty()).then(|| capped(&h.after)),
                ..base.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+Hello\n+world\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello\")\n*** Delete File: obsolete.txt\n*** End Patch";

    #[test]
    fn apply_patch_envelope() {
        let files = parse_apply_patch(&format!("bash -lc 'apply_patch <<EOF\n{PATCH}\nEOF'"));
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].op, "add");
        assert_eq!(files[0].hunks[0].after, "Hello\nworld\n");
        assert_eq!(files[0].hunks[0].after_range, Some([1, 2]));
        assert_eq!(files[1].move_to.as_deref(), Some("src/main.py"));
        assert_eq!(files[1].hunks.len(), 1);
        assert_eq!(files[1].hunks[0].before, "print(\"Hi\")\n");
        assert_eq!(files[2].op, "delete");
        let edits = code_edits(&files[1], Some("c1"), true);
        assert_eq!(edits[0].op, "move");
        assert_eq!(edits[0].before_hash, Some(content_hash("print(\"Hi\")")));
        assert!(code_edits(&files[2], None, true)[0].before_hash.is_none());
    }

    #[test]
    fn unified_diff_ranges() {
        let hunks = parse_unified_diff("--- a/x\n+++ b/x\n@@ -3,2 +3,3 @@ fn\n a\n-b\n+c\n+d\n@@ -10 +11,0 @@\n-z\n");
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].before_range, Some([3, 4]));
        assert_eq!(hunks[0].after_range, Some([3, 5]));
        assert_eq!(hunks[0].after, "a\nc\nd\n");
        assert_eq!(hunks[1].before_range, Some([10, 10]));
        assert_eq!(hunks[1].after_range, None);
    }

    #[test]
    fn claude_structured_patch() {
        let v = serde_json::json!([{"oldStart":5,"oldLines":3,"newStart":5,"newLines":4,"lines":[" a","-b","+c","+d"," e"]}]);
        let h = structured_patch_hunks(&v);
        assert_eq!(h[0].before_range, Some([5, 7]));
        assert_eq!(h[0].after_range, Some([5, 8]));
        assert_eq!(h[0].before, "a\nb\ne\n");
        assert_eq!(h[0].after, "a\nc\nd\ne\n");
    }
}
