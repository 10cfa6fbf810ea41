//! What a tool use in a SpecStory export says: its name, its input, its
//! output, whether it failed, and the files it read or edited.
//!
//! The export is prose around fenced blocks, in several dialects:
//!
//! - the summary line: `Tool use: **read_file** • Read file: a.py`,
//!   `Tool use: **exec_command** `pwd``, an early `Searched codebase "q"`;
//! - the input: `**Input:**` lists (`- key: `value``, or a fence under
//!   `- key:`), `Parameters:` with a JSON fence, MCP's `*Parameters*:` with
//!   `  * key: value` lines, Claude Code's description line and
//!   `` `command` `` / `` path `p` pattern `q` `` lines, a shell fence;
//! - the output: a `**Result:**`, `Result:` or `*Result*:` section, else the
//!   output fence (Codex's with its `Chunk ID`/`Process exited with code N`
//!   header, Claude Code's `Exit code N` first line), else the prose left
//!   (search tables, lint reports);
//! - failure: a non-zero exit, `<tool_use_error>`, a rejected call,
//!   `Status: **error**` (or `failed`, `cancelled`, `rejected`);
//! - edits: `**Chunk N**` diffs under `Edit file: path` (Cursor writes each
//!   diff line as marker, space, text), Codex's `**Update: `path`**` diffs,
//!   Copilot's `oldString`/`newString`/`content` inputs.
//!
//! Content inside tool blocks is HTML-escaped by SpecStory; it is decoded
//! after the structure is read (so an escaped fence stays content).

use serde_json::{Map, Value};
use shared::storage::event::LineRange;

use super::markdown::{RawTool, ToolStyle};
use crate::patch::{FileEdit, Hunk, whole_file};

/// A tool use, interpreted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolUse {
    /// The tool's name.
    pub name: String,
    /// Its input.
    pub args: Map<String, Value>,
    /// Its output, when the export shows one.
    pub output: Option<String>,
    /// Its exit status, when shown.
    pub exit: Option<i32>,
    /// It failed (non-zero exit, an error text, an error status).
    pub is_error: bool,
    /// Cursor's `Status: **…**`.
    pub status: Option<String>,
    /// Files it changed, with the hunks shown.
    pub edits: Vec<FileEdit>,
    /// The file it read, and the lines when known.
    pub read: Option<(String, Option<LineRange>)>,
}

/// Decodes the HTML entities SpecStory writes (`&lt;`, `&gt;`, `&amp;`,
/// `&quot;`, `&#39;`, `&#96;`, `&#NN;`, `&#xHH;`, `&nbsp;`).
pub fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find(';').filter(|&e| e <= 10);
        let decoded = end.and_then(|e| {
            let name = &tail[1..e];
            let c = match name {
                "lt" => Some('<'),
                "gt" => Some('>'),
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ => {
                    let num = name.strip_prefix('#')?;
                    let code = match num.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                        None => num.parse::<u32>().ok()?,
                    };
                    char::from_u32(code)
                }
            }?;
            Some((c, e + 1))
        });
        match decoded {
            Some((c, used)) => {
                out.push(c);
                rest = &tail[used..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A fenced block or prose lines of a tool body.
#[derive(Clone, Debug, PartialEq)]
enum Seg {
    Prose(String),
    Fence { info: String, text: String },
}

/// A fence line at the start of a line: its marker run and info string.
fn fence_open(line: &str) -> Option<(char, usize, &str)> {
    let c = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let run = line.chars().take_while(|&x| x == c).count();
    (run >= 3).then(|| (c, run, line[run * c.len_utf8()..].trim()))
}

/// Whether `line` closes a fence of `c` × `run`.
fn fence_close(line: &str, c: char, run: usize) -> bool {
    let t = line.trim_end();
    t.chars().count() >= run && t.chars().all(|x| x == c)
}

/// Whether a fence holds output (and may hold unescaped fences of its own):
/// it extends to the last closing line of the body.
fn output_info(info: &str) -> bool {
    matches!(info, "" | "text" | "output" | "console" | "plaintext")
}

/// Splits a tool body into prose and fences. Fences open at the start of a
/// line (SpecStory writes its own there; content inside is indented or
/// escaped). An output fence (no info string, or `text`, or after a result
/// marker) that holds a fence line with an info string closes at the last
/// closing line of the body, because some exports leave the fences of a
/// tool's output unescaped.
fn segments(lines: &[String]) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut prose: Vec<&str> = Vec::new();
    let mut i = 0;
    let flush = |prose: &mut Vec<&str>, out: &mut Vec<Seg>| {
        if prose.iter().any(|l| !l.trim().is_empty()) {
            out.push(Seg::Prose(prose.join("\n")));
        }
        prose.clear();
    };
    let mut after_result = false;
    while i < lines.len() {
        let line = lines[i].as_str();
        let Some((c, run, info)) = fence_open(line) else {
            let t = line.trim();
            if is_section_marker(t) {
                // Each marker starts a prose segment of its own.
                flush(&mut prose, &mut out);
            }
            if !t.is_empty() {
                after_result = is_result_marker(t);
            }
            prose.push(line);
            i += 1;
            continue;
        };
        flush(&mut prose, &mut out);
        let standard = (i + 1..lines.len()).find(|&j| fence_close(&lines[j], c, run));
        // An output that holds a fence with an info string holds unescaped
        // fences: it ends at the body's last closing line.
        let nested = (i + 1..standard.unwrap_or(lines.len()))
            .any(|j| fence_open(&lines[j]).is_some_and(|(x, _, inner)| x == c && !inner.is_empty()));
        let close = if (output_info(info) || after_result) && nested {
            (i + 1..lines.len()).rev().find(|&j| fence_close(&lines[j], c, run)).or(standard)
        } else {
            standard
        };
        let end = close.unwrap_or(lines.len());
        let text = lines[i + 1..end].join("\n");
        out.push(Seg::Fence { info: info.to_owned(), text });
        after_result = false;
        i = end + 1;
    }
    flush(&mut prose, &mut out);
    out
}

/// A line that starts a section of a tool body.
fn is_section_marker(t: &str) -> bool {
    is_result_marker(t)
        || matches!(t, "**Input:**" | "Parameters:" | "*Parameters*:" | "Additional data:")
        || t.starts_with("Status: **")
}

fn is_result_marker(t: &str) -> bool {
    matches!(t, "Result:" | "**Result:**" | "*Result*:" | "**Output:**" | "Output:")
}

fn is_shell_info(info: &str) -> bool {
    matches!(info, "bash" | "sh" | "shell" | "zsh" | "powershell" | "pwsh" | "cmd" | "console")
}

/// The tools that read a file, by lowercase name.
fn is_read(name: &str) -> bool {
    matches!(name, "read_file" | "read_file_v2" | "read" | "notebookread" | "view_file" | "readfile")
}

/// The text after `Tool use: **name**` (and its ` • `), or the whole summary.
fn subject(summary: &str) -> &str {
    let s = summary.trim();
    let s = match s.strip_prefix("Tool use: **").and_then(|r| r.split_once("**")) {
        Some((_, rest)) => rest.trim_start(),
        None => s,
    };
    s.strip_prefix('•').map_or(s, str::trim_start)
}

/// The first `"quoted"` text of `s`.
fn quoted(s: &str) -> Option<&str> {
    let start = s.find('"')? + 1;
    let len = s[start..].find('"')?;
    Some(&s[start..start + len])
}

/// Input the summary gives (`Read file: a.py`, `Run command: ls`,
/// `Searched codebase "q"`, a Codex `` `command` ``, …).
fn subject_args(name: &str, subject: &str, args: &mut Map<String, Value>) {
    let subject = subject.trim();
    if subject.is_empty() {
        return;
    }
    let put = |args: &mut Map<String, Value>, k: &str, v: &str| {
        if !v.is_empty() && !args.contains_key(k) {
            args.insert(k.to_owned(), Value::from(v));
        }
    };
    let labelled: &[(&str, &str)] = &[
        ("Read file: ", "file_path"),
        ("Edit file: ", "file_path"),
        ("Run command: ", "command"),
        ("Listed directory ", "path"),
    ];
    for (label, key) in labelled {
        if let Some(v) = subject.strip_prefix(label) {
            let v = v.split(" • ").next().unwrap_or(v);
            // `Listed directory src, 3 results`.
            let v = if *key == "path" { v.split(", ").next().unwrap_or(v) } else { v };
            put(args, key, v.trim());
            return;
        }
    }
    if let Some(cmd) = subject.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        put(args, if name == "exec_command" || name.contains("shell") { "command" } else { "input" }, cmd);
        return;
    }
    if subject.starts_with("Grep for ") {
        if let Some(q) = quoted(subject) {
            put(args, "pattern", q);
        }
        if let Some(i) = subject.find("\" in \"")
            && let Some(p) = quoted(&subject[i + 5..])
        {
            put(args, "path", p);
        }
        return;
    }
    if let Some(q) = quoted(subject) {
        put(args, "query", q);
        return;
    }
    put(args, "description", subject);
}

/// `- key: `value`` lines (and `- key:` followed by a fence) of an
/// `**Input:**` section; `*Parameters*:` `  * key: value` lines.
fn list_args(segs: &[Seg], start: usize, args: &mut Map<String, Value>) -> usize {
    let mut i = start;
    let mut pending_key: Option<String> = None;
    let mut last_key: Option<String> = None;
    while i < segs.len() {
        match &segs[i] {
            Seg::Fence { text, .. } => match pending_key.take() {
                Some(k) => {
                    args.insert(k.clone(), Value::from(unescape(text)));
                    last_key = Some(k);
                }
                None => return i,
            },
            Seg::Prose(p) => {
                let mut any = false;
                for (n, line) in p.lines().enumerate() {
                    let t = line.trim();
                    if t.is_empty() {
                        continue;
                    }
                    if (n == 0 || i > start) && is_section_marker(t) {
                        return i;
                    }
                    let item = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "));
                    let Some(item) = item else {
                        // A continuation line of the previous value.
                        if let Some(Value::String(v)) = last_key.as_ref().and_then(|k| args.get_mut(k)) {
                            v.push('\n');
                            v.push_str(&unescape(t));
                        }
                        continue;
                    };
                    let Some((k, v)) = item.split_once(':') else { continue };
                    let k = k.trim();
                    if k.is_empty() || k.contains(' ') {
                        continue;
                    }
                    any = true;
                    let v = v.trim();
                    if v.is_empty() {
                        pending_key = Some(k.to_owned());
                    } else {
                        let v = v.strip_prefix('`').and_then(|x| x.strip_suffix('`')).unwrap_or(v);
                        args.insert(k.to_owned(), Value::from(unescape(v)));
                        pending_key = None;
                    }
                    last_key = Some(k.to_owned());
                }
                if !any && pending_key.is_none() {
                    return i;
                }
            }
        }
        i += 1;
    }
    i
}

/// Claude Code's input lines: a description, `` `command` ``, `` path `p`
/// pattern `q` ``.
fn claude_input(name: &str, prose: &str, args: &mut Map<String, Value>) {
    for line in prose.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(v) = t.strip_prefix('`').and_then(|r| r.strip_suffix('`'))
            && !v.contains('`')
        {
            let key = match name {
                "Bash" | "PowerShell" | "BashOutput" => "command",
                "WebFetch" => "url",
                "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => "file_path",
                "Glob" | "Grep" => "pattern",
                _ => "input",
            };
            args.entry(key.to_owned()).or_insert_with(|| Value::from(unescape(v)));
            continue;
        }
        let pairs = backtick_pairs(t);
        if !pairs.is_empty() {
            for (k, v) in pairs {
                args.entry(k).or_insert_with(|| Value::from(unescape(&v)));
            }
            continue;
        }
        args.entry("description".to_owned()).or_insert_with(|| Value::from(unescape(t)));
    }
}

/// `word `value` word `value`` pairs of a line (empty unless the whole line
/// is such pairs).
fn backtick_pairs(t: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = t;
    while !rest.trim().is_empty() {
        let rest_t = rest.trim_start();
        let Some((key, after)) = rest_t.split_once(" `") else { return Vec::new() };
        if key.is_empty() || key.contains(' ') || key.contains('`') {
            return Vec::new();
        }
        let Some(end) = after.find('`') else { return Vec::new() };
        out.push((key.to_owned(), after[..end].to_owned()));
        rest = &after[end + 1..];
    }
    out
}

/// Codex's output header (`Chunk ID`, `Wall time`, `Process exited with code
/// N`, `Original token count`, `Output:`): the exit code and the output.
fn codex_output(text: &str) -> Option<(Option<i32>, String)> {
    let header = |l: &str| {
        ["Chunk ID:", "Wall time:", "Process exited with code ", "Process running", "Original token count:"]
            .iter()
            .any(|p| l.starts_with(p))
    };
    if !header(text.lines().next()?) {
        return None;
    }
    let mut exit = None;
    let mut rest = text;
    while let Some(l) = rest.lines().next() {
        if l.trim() == "Output:" {
            rest = rest.get(l.len() + 1..).unwrap_or("");
            break;
        }
        if !header(l) {
            break;
        }
        if let Some(code) = l.strip_prefix("Process exited with code ") {
            exit = code.trim().parse().ok();
        }
        rest = rest.get(l.len() + 1..).unwrap_or("");
    }
    Some((exit, rest.to_owned()))
}

/// The first-line `Exit code N` of Claude Code's Bash output.
fn exit_line(text: &str) -> Option<i32> {
    text.lines().next()?.trim().strip_prefix("Exit code ")?.trim().parse().ok()
}

/// Whether an output says the call failed.
fn error_text(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<tool_use_error>")
        || t.starts_with("Error:")
        || t.contains("The user doesn't want to proceed with this tool use")
        || t.starts_with("User declined")
}

/// Line numbers of Claude Code's `     1→…` read output: first and last.
fn numbered_range(text: &str) -> Option<LineRange> {
    let num = |l: &str| -> Option<u32> {
        let (n, _) = l.split_once('→')?;
        n.trim().parse().ok()
    };
    let first = text.lines().find_map(num)?;
    let last = text.lines().rev().find_map(num)?;
    (last >= first).then_some([first, last])
}

/// Parses diff fences into hunks. `spaced`: each line is marker, space,
/// text (Cursor), rather than marker then text.
fn diff_hunks(text: &str, spaced: bool) -> Vec<Hunk> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut cur: Option<Hunk> = None;
    let strip = |l: &str| -> String {
        let rest = &l[1..];
        if spaced { rest.strip_prefix(' ').unwrap_or(rest).to_owned() } else { rest.to_owned() }
    };
    let push = |buf: &mut String, l: String| {
        buf.push_str(&l);
        buf.push('\n');
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("@@") {
            if let Some(h) = cur.take() {
                hunks.push(h);
            }
            let mut h = Hunk::default();
            let mut parts = rest.split_whitespace();
            if let (Some(old), Some(new)) = (parts.next(), parts.next())
                && old.starts_with('-')
                && new.starts_with('+')
            {
                h.before_range = span(&old[1..]);
                h.after_range = span(&new[1..]);
            }
            cur = Some(h);
            continue;
        }
        if line.starts_with("--- ") || line.starts_with("+++ ") {
            continue;
        }
        let h = cur.get_or_insert_with(Hunk::default);
        match line.as_bytes().first() {
            Some(b'+') => push(&mut h.after, strip(line)),
            Some(b'-') => push(&mut h.before, strip(line)),
            Some(b' ') => {
                let l = strip(line);
                push(&mut h.before, l.clone());
                push(&mut h.after, l);
            }
            _ => {}
        }
    }
    if let Some(h) = cur {
        hunks.push(h);
    }
    hunks.retain(|h| !h.before.is_empty() || !h.after.is_empty() || h.before_range.is_some());
    hunks
}

fn span(s: &str) -> Option<LineRange> {
    let mut it = s.split(',');
    let start: u32 = it.next()?.parse().ok()?;
    let len: u32 = match it.next() {
        Some(l) => l.parse().ok()?,
        None => 1,
    };
    (start > 0 && len > 0).then(|| [start, start.saturating_add(len - 1)])
}

/// Whether a diff writes each line as marker, space, text.
fn spaced_diff(text: &str) -> bool {
    let mut any = false;
    for l in text.lines().filter(|l| !l.starts_with("@@")) {
        let b = l.as_bytes();
        if let Some(b'+' | b'-' | b' ') = b.first() {
            any = true;
            if b.len() > 1 && b[1] != b' ' {
                return false;
            }
        }
    }
    any
}

/// A string argument among `keys`.
fn arg<'a>(args: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| args.get(*k).and_then(Value::as_str)).map(str::trim).filter(|v| !v.is_empty())
}

const PATH_KEYS: &[&str] = &["file_path", "filePath", "target_file", "targetFile", "path", "file", "notebook_path"];

/// Interprets a tool use.
pub fn interpret(raw: &RawTool) -> ToolUse {
    let mut t = ToolUse { name: raw.name.clone(), ..ToolUse::default() };
    if t.name.is_empty() {
        t.name = "unknown".to_owned();
    }
    let lname = t.name.to_lowercase();
    let summary = unescape(&raw.summary);
    let subj = subject(&summary).to_owned();
    match raw.style {
        ToolStyle::ReadLine => {
            let path = raw.body.first().map(|p| unescape(p.trim())).unwrap_or_default();
            if !path.is_empty() {
                t.args.insert("file_path".to_owned(), Value::from(path.clone()));
                if path != "undefined" {
                    t.read = Some((path, None));
                }
            }
            return t;
        }
        ToolStyle::Todo => {
            let todos = raw.body.join("\n").trim().to_owned();
            t.args.insert("todos".to_owned(), Value::from(unescape(&todos)));
            return t;
        }
        _ => {}
    }
    subject_args(&lname, &subj, &mut t.args);
    let segs = segments(&raw.body);
    let mut output: Vec<String> = Vec::new();
    let mut rest_prose: Vec<String> = Vec::new();
    let mut diffs: Vec<(Option<String>, String)> = Vec::new();
    let mut patch_file: Option<String> = None;
    let mut command_seen = false;
    let mut i = 0;
    let first_fence = segs.iter().position(|s| matches!(s, Seg::Fence { .. }));
    while i < segs.len() {
        match &segs[i] {
            Seg::Prose(p) => {
                let trimmed = p.trim();
                let first = trimmed.lines().next().unwrap_or("").trim();
                if first == "**Input:**" || first == "*Parameters*:" {
                    // The list may start on the same prose segment.
                    let rest: String = trimmed.lines().skip(1).collect::<Vec<_>>().join("\n");
                    let mut local = vec![Seg::Prose(rest)];
                    local.extend(segs[i + 1..].iter().cloned());
                    let used = list_args(&local, 0, &mut t.args);
                    i += used.max(1);
                    continue;
                }
                if first == "Parameters:"
                    && let Some(Seg::Fence { text, .. }) = segs.get(i + 1)
                {
                    match serde_json::from_str::<Value>(&unescape(text)) {
                        Ok(Value::Object(m)) => {
                            for (k, v) in m {
                                t.args.entry(k).or_insert(v);
                            }
                        }
                        Ok(other) => {
                            t.args.insert("parameters".to_owned(), other);
                        }
                        Err(_) => {
                            t.args.insert("parameters".to_owned(), Value::from(unescape(text)));
                        }
                    }
                    i += 2;
                    continue;
                }
                if first == "Additional data:" {
                    i += if matches!(segs.get(i + 1), Some(Seg::Fence { .. })) { 2 } else { 1 };
                    continue;
                }
                if is_result_marker(first) {
                    let after: String = trimmed.lines().skip(1).collect::<Vec<_>>().join("\n");
                    if !after.trim().is_empty() {
                        output.push(unescape(after.trim()));
                    }
                    if let Some(Seg::Fence { text, .. }) = segs.get(i + 1) {
                        output.push(unescape(text));
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                for line in trimmed.lines() {
                    let l = line.trim();
                    if let Some(status) = l.strip_prefix("Status: **").and_then(|s| s.strip_suffix("**")) {
                        t.status = Some(status.to_owned());
                    } else if let Some(called) = l.strip_prefix("*Called tool*: ") {
                        t.args.entry("tool".to_owned()).or_insert_with(|| Value::from(unescape(called)));
                    } else if let Some(path) = ["**Update: `", "**Add: `", "**Delete: `", "**Move: `"]
                        .iter()
                        .find_map(|p| l.strip_prefix(p))
                        .and_then(|r| r.split_once('`'))
                        .map(|(p, _)| p)
                    {
                        patch_file = Some(unescape(path));
                        let op = if l.starts_with("**Add") {
                            "add"
                        } else if l.starts_with("**Delete") {
                            "delete"
                        } else {
                            "update"
                        };
                        diffs.push((Some(format!("{op}\u{0}{}", unescape(path))), String::new()));
                    } else if l.starts_with("**Chunk ") || l.starts_with("Lines added:") {
                        // Cursor's hunk headings.
                    } else {
                        rest_prose.push(line.to_owned());
                    }
                }
                // Claude Code's input lines sit before its first fence.
                if raw.style == ToolStyle::Tagged && first_fence.is_none_or(|f| i < f) && is_claude_name(&t.name) {
                    claude_input(&t.name, &rest_prose.join("\n"), &mut t.args);
                    rest_prose.clear();
                }
            }
            Seg::Fence { info, text } => {
                if info == "diff" {
                    match diffs.last_mut() {
                        Some((Some(_), body)) if body.is_empty() => body.push_str(text),
                        _ => diffs.push((patch_file.clone().map(|p| format!("update\u{0}{p}")), text.clone())),
                    }
                } else if is_shell_info(info) && !command_seen && output.is_empty() {
                    command_seen = true;
                    // The fence holds the whole command; a summary may cut it.
                    t.args.insert("command".to_owned(), Value::from(unescape(text.trim())));
                } else {
                    output.push(unescape(text));
                }
            }
        }
        i += 1;
    }
    // What is left of the prose is the output of tools that show no fence
    // (search tables, lint reports, `_No matches found_`).
    if output.is_empty() && !rest_prose.is_empty() {
        let text = rest_prose.join("\n").trim().to_owned();
        if text.is_empty() {
        } else if crate::adapter::is_edit_tool(&lname) {
            t.args.entry("explanation".to_owned()).or_insert_with(|| Value::from(unescape(&text)));
        } else {
            output.push(unescape(&text));
        }
    }
    if !output.is_empty() {
        let mut text = output.join("\n");
        if let Some((exit, body)) = codex_output(&text) {
            t.exit = exit;
            text = body;
        } else if let Some(code) = exit_line(&text) {
            t.exit = Some(code);
        }
        t.is_error |= error_text(&text);
        t.output = Some(text.trim_end_matches('\n').to_owned());
    }
    if let Some(s) = &t.status {
        t.is_error |= matches!(s.as_str(), "error" | "failed" | "cancelled" | "canceled" | "rejected" | "aborted");
    }
    t.is_error |= t.exit.is_some_and(|c| c != 0);
    files(&mut t, &lname, raw, &diffs);
    t
}

/// Claude Code's tool names are capitalised.
fn is_claude_name(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

/// The reads and edits of a tool use.
fn files(t: &mut ToolUse, lname: &str, raw: &RawTool, diffs: &[(Option<String>, String)]) {
    if t.is_error {
        return;
    }
    let kind = raw.kind.as_deref().unwrap_or("");
    let path = arg(&t.args, PATH_KEYS).map(str::to_owned);
    if is_read(lname) || (kind == "read" && lname != "webfetch") {
        if let Some(p) = path.filter(|p| *p != "undefined") {
            let range = t.output.as_deref().and_then(numbered_range);
            t.read = Some((p, range));
        }
        return;
    }
    if let Some(cmd) = arg(&t.args, &["command"])
        && (kind == "shell" || lname.contains("terminal") || lname == "exec_command" || lname == "bash")
    {
        t.read = shell_read(cmd);
        return;
    }
    if !crate::adapter::is_edit_tool(lname) && kind != "write" {
        return;
    }
    let spaced_tool = !matches!(lname, "apply_patch");
    let mut edits: Vec<FileEdit> = Vec::new();
    for (target, body) in diffs {
        let (op, file) = match target.as_deref().and_then(|t| t.split_once('\u{0}')) {
            Some((op, f)) => (op, Some(f.to_owned())),
            None => ("update", path.clone()),
        };
        let Some(file) = file.filter(|f| *f != "undefined") else { continue };
        let text = unescape(body);
        let spaced = spaced_tool && spaced_diff(&text);
        let hunks = diff_hunks(&text, spaced);
        let op: &'static str = match op {
            "add" => "add",
            "delete" => "delete",
            _ => "update",
        };
        match edits.iter_mut().find(|e| e.file == file) {
            Some(e) => e.hunks.extend(hunks),
            None => edits.push(FileEdit { file, op, move_to: None, hunks, no_content: false }),
        }
    }
    if edits.is_empty() {
        let old = arg(&t.args, &["oldString", "old_string", "old_str"]);
        let new = arg(&t.args, &["newString", "new_string", "new_str"]);
        let content = t.args.get("content").and_then(Value::as_str);
        let file = path.clone().or_else(|| t.output.as_deref().and_then(file_in_output));
        if let Some(file) = file.filter(|f| *f != "undefined") {
            let (op, hunks) = match (old, new, content) {
                (Some(o), Some(n), _) => ("update", vec![whole_file(Some(o), Some(n))]),
                (_, _, Some(c)) if matches!(lname, "create_file" | "write") => ("add", vec![whole_file(None, Some(c))]),
                _ if lname == "delete_file" => ("delete", Vec::new()),
                _ => ("update", Vec::new()),
            };
            let mut fe = FileEdit { file, op, move_to: None, hunks, no_content: false };
            for h in &mut fe.hunks {
                // Replacements name no line numbers.
                if op == "update" {
                    h.before_range = None;
                    h.after_range = None;
                }
            }
            edits.push(fe);
        }
    }
    t.edits = edits;
}

/// The file a plain shell read shows: `cat <file>` or `sed -n 'A,Bp'
/// <file>` (with an optional `cd <dir> &&` before), nothing else.
fn shell_read(cmd: &str) -> Option<(String, Option<LineRange>)> {
    let cmd = cmd.trim();
    let cmd = match cmd.split_once(" && ") {
        Some((cd, rest)) if cd.starts_with("cd ") && !rest.contains("&&") => rest.trim(),
        _ => cmd,
    };
    if cmd.contains(['|', '>', '<', ';', '&', '$', '`', '*']) || cmd.contains('\n') {
        return None;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let unquote = |w: &str| w.trim_matches(|c| c == '\'' || c == '"').to_owned();
    match words.as_slice() {
        ["cat", file] => Some((unquote(file), None)),
        ["sed", "-n", range, file] => {
            let r = unquote(range);
            let (a, b) = r.strip_suffix('p')?.split_once(',')?;
            let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
            Some((unquote(file), (a > 0 && b >= a).then_some([a, b])))
        }
        _ => None,
    }
}

/// The file Claude Code's edit output names (`The file X has been updated…`,
/// `File created successfully at: X`).
fn file_in_output(text: &str) -> Option<String> {
    let first = text.lines().next()?.trim();
    if let Some(rest) = first.strip_prefix("The file ")
        && let Some(i) = rest.find(" has been ")
    {
        return Some(rest[..i].to_owned());
    }
    first.strip_prefix("File created successfully at: ").map(|p| p.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(style: ToolStyle, name: &str, kind: Option<&str>, summary: &str, body: &str) -> RawTool {
        RawTool {
            style,
            name: name.to_owned(),
            kind: kind.map(str::to_owned),
            summary: summary.to_owned(),
            body: body.lines().map(str::to_owned).collect(),
        }
    }

    #[test]
    fn entities() {
        assert_eq!(
            unescape("a &amp;&amp; b 2&gt;&amp;1 &#96;&#96;&#96; &#x41; &bogus; &"),
            "a && b 2>&1 ``` A &bogus; &"
        );
    }

    #[test]
    fn cursor_terminal_with_output() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "run_terminal_cmd",
            Some("shell"),
            "Tool use: **run_terminal_cmd** • Run command: ls &amp;&amp; pwd",
            "```bash\nls && pwd\n```\n\n```\na.txt\n/home\n```",
        ));
        assert_eq!(t.args.get("command").and_then(Value::as_str), Some("ls && pwd"));
        assert_eq!(t.output.as_deref(), Some("a.txt\n/home"));
        assert!(!t.is_error);
    }

    #[test]
    fn codex_exec_with_nested_fences_and_exit() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "exec_command",
            Some("shell"),
            "Tool use: **exec_command** `cat README.md`",
            "```\nChunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\n# Readme\n```bash\nmake\n```\ntail\n```",
        ));
        assert_eq!(t.args.get("command").and_then(Value::as_str), Some("cat README.md"));
        assert_eq!(t.exit, Some(2));
        assert!(t.is_error);
        assert_eq!(t.output.as_deref(), Some("# Readme\n```bash\nmake\n```\ntail"));
    }

    #[test]
    fn claude_bash_and_read() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "Bash",
            Some("shell"),
            "Tool use: **Bash**",
            "List files\n\n`ls -la`\n\n```text\nExit code 1\nnope\n```",
        ));
        assert_eq!(t.args.get("command").and_then(Value::as_str), Some("ls -la"));
        assert_eq!(t.args.get("description").and_then(Value::as_str), Some("List files"));
        assert_eq!((t.exit, t.is_error), (Some(1), true));
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "Read",
            Some("read"),
            "Tool use: **Read**",
            " `/src/a.rs`\n\n```text\n     3→fn a() {}\n     4→\n```",
        ));
        assert_eq!(t.read, Some(("/src/a.rs".to_owned(), Some([3, 4]))));
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "Grep",
            Some("search"),
            "Tool use: **Grep**",
            " path `./src` pattern `fn main`\n\n```text\nNo matches found\n```",
        ));
        assert_eq!(t.args.get("path").and_then(Value::as_str), Some("./src"));
        assert_eq!(t.args.get("pattern").and_then(Value::as_str), Some("fn main"));
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "Edit",
            Some("write"),
            "Tool use: **Edit**",
            "```text\n<tool_use_error>File has not been read yet.</tool_use_error>\n```",
        ));
        assert!(t.is_error && t.edits.is_empty());
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "Edit",
            Some("write"),
            "Tool use: **Edit**",
            "```text\nThe file /src/a.rs has been updated successfully.\n```",
        ));
        assert_eq!(t.edits.len(), 1);
        assert_eq!(t.edits[0].file, "/src/a.rs");
    }

    #[test]
    fn cursor_edit_chunks() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "search_replace",
            Some("write"),
            "Tool use: **search_replace** • Edit file: app/x.js",
            "**Chunk 1**\nLines added: 1, lines removed: 1\n\n```diff\n@@ -10,3 +10,3 @@\n  keep\n- if (a &amp;&amp; b)\n+ if (a || b)\n```",
        ));
        assert_eq!(t.edits.len(), 1);
        let e = &t.edits[0];
        assert_eq!(e.file, "app/x.js");
        assert_eq!(e.hunks[0].before, "keep\nif (a && b)\n");
        assert_eq!(e.hunks[0].after, "keep\nif (a || b)\n");
        assert_eq!(e.hunks[0].before_range, Some([10, 12]));
        assert!(t.output.is_none());
    }

    #[test]
    fn codex_apply_patch() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "apply_patch",
            Some("write"),
            "Tool use: **apply_patch**",
            "**Update: `docs/a.md`**\n\n```diff\n@@\n keep\n-old\n+new\n```",
        ));
        assert_eq!(t.edits.len(), 1);
        assert_eq!(t.edits[0].file, "docs/a.md");
        assert_eq!(t.edits[0].hunks[0].before, "keep\nold\n");
    }

    #[test]
    fn copilot_input_lists() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "replace_string_in_file",
            Some("generic"),
            "Tool use: **replace_string_in_file**",
            "**Input:**\n\n- filePath: `/p/a.ex`\n- newString:\n\n```\nnew text\n```\n\n- oldString:\n\n```\nold text\n```\n",
        ));
        assert_eq!(t.args.get("filePath").and_then(Value::as_str), Some("/p/a.ex"));
        assert_eq!(t.args.get("newString").and_then(Value::as_str), Some("new text"));
        assert_eq!(t.args.get("oldString").and_then(Value::as_str), Some("old text"));
        assert_eq!(t.edits.len(), 1);
        assert_eq!(t.edits[0].hunks[0].after, "new text");
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "ToolSearch",
            Some("unknown"),
            "Tool use: **ToolSearch**",
            "**Input:**\n\n- max_results: `1`\n- query: `select:WebFetch`\n\n**Result:**\n\n```\nfound it\n```",
        ));
        assert_eq!(t.args.get("query").and_then(Value::as_str), Some("select:WebFetch"));
        assert_eq!(t.output.as_deref(), Some("found it"));
    }

    #[test]
    fn cursor_parameters_result_and_status() {
        let t = interpret(&raw(
            ToolStyle::Tagged,
            "ripgrep_raw_search",
            Some("unknown"),
            "Tool use: **ripgrep_raw_search**",
            "Parameters:\n\n```json\n{\"pattern\": \"x\"}\n```\nAdditional data:\n\n```json\n{\"n\": 1}\n```\nResult:\n\n```json\n{\"ok\": true}\n```\nStatus: **error**\n",
        ));
        assert_eq!(t.args.get("pattern").and_then(Value::as_str), Some("x"));
        assert_eq!(t.output.as_deref(), Some("{\"ok\": true}"));
        assert_eq!(t.status.as_deref(), Some("error"));
        assert!(t.is_error);
    }

    #[test]
    fn early_searches_and_mcp() {
        let t = interpret(&raw(
            ToolStyle::Details,
            "codebase_search",
            None,
            "Searched codebase \"pr logic\" • **2** results",
            "| File | Lines |\n|---|---|\n| `a.ts` | L1-5 |",
        ));
        assert_eq!(t.args.get("query").and_then(Value::as_str), Some("pr logic"));
        assert!(t.output.as_deref().is_some_and(|o| o.contains("a.ts")));
        let t = interpret(&raw(
            ToolStyle::Details,
            "mcp",
            None,
            "MCP tool call",
            "*Called tool*: github - create_repository: Create one\n\n*Parameters*:\n  * name: demo\n  * private: false\n\n*Result*:\n{\"id\": 1}",
        ));
        assert_eq!(t.args.get("name").and_then(Value::as_str), Some("demo"));
        assert_eq!(t.args.get("tool").and_then(Value::as_str), Some("github - create_repository: Create one"));
        assert_eq!(t.output.as_deref(), Some("{\"id\": 1}"));
    }

    #[test]
    fn shell_reads() {
        assert_eq!(shell_read("sed -n '1,240p' README.md"), Some(("README.md".to_owned(), Some([1, 240]))));
        assert_eq!(shell_read("cd /p && cat package.json"), Some(("package.json".to_owned(), None)));
        assert_eq!(shell_read("cat a b"), None);
        assert_eq!(shell_read("cat a | head"), None);
        assert_eq!(shell_read("rg --files"), None);
    }

    #[test]
    fn early_terminal_and_read_line() {
        let t = interpret(&raw(
            ToolStyle::Terminal,
            "run_terminal_cmd",
            Some("shell"),
            "",
            "```bash\nbun test\n```\n\n```\n2 pass\n```",
        ));
        assert_eq!(t.args.get("command").and_then(Value::as_str), Some("bun test"));
        assert_eq!(t.output.as_deref(), Some("2 pass"));
        let t = interpret(&raw(ToolStyle::ReadLine, "read_file", None, "Read file: src/a.ts", "src/a.ts"));
        assert_eq!(t.read, Some(("src/a.ts".to_owned(), None)));
        let t = interpret(&raw(ToolStyle::ReadLine, "read_file", None, "Read file: undefined", "undefined"));
        assert_eq!(t.read, None);
    }
}
