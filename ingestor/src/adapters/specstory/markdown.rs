//! The structure of a SpecStory markdown export: its preamble (generator,
//! session comment, title), its turns (`_**User …**_`, `_**Agent …**_`,
//! `_**Assistant …**_` header lines) and, inside an agent turn, its blocks
//! (text, `<think>` reasoning, tool uses in the four styles SpecStory has
//! written, and a few markers).
//!
//! Everything here works on lines decoded leniently (invalid UTF-8 becomes
//! U+FFFD) and never fails: what is not recognised is text. The one place
//! where a role header line is not a turn boundary is inside a closed
//! `<tool-use>` block (a tool that printed an export must not split the
//! turn); a `<tool-use>` without its closing line before the next one ends
//! where the next header starts.

use std::borrow::Cow;
use std::ops::Range;

use shared::base::time::Ts;

/// One line of the input: its byte offset in the buffer and its text without
/// the line ending.
#[derive(Clone, Debug, PartialEq)]
pub struct Line<'a> {
    /// Byte offset of the line's first byte in the parsed buffer.
    pub offset: usize,
    /// The text (CR stripped, invalid UTF-8 replaced).
    pub text: Cow<'a, str>,
}

/// Splits `bytes` into lines; the last one may lack its `\n` (the export is
/// read to its end). A UTF-8 byte order mark at the start is dropped.
pub fn lines(bytes: &[u8]) -> Vec<Line<'_>> {
    fn line(bytes: &[u8], start: usize, end: usize) -> Line<'_> {
        let mut raw = &bytes[start..end];
        if let Some(r) = raw.strip_suffix(b"\r") {
            raw = r;
        }
        if start == 0
            && let Some(r) = raw.strip_prefix("\u{feff}".as_bytes())
        {
            raw = r;
        }
        Line { offset: start, text: String::from_utf8_lossy(raw) }
    }
    let mut out = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        out.push(line(bytes, start, end));
        start = end + 1;
    }
    if start < bytes.len() {
        out.push(line(bytes, start, bytes.len()));
    }
    out
}

/// Who a turn is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `_**User**_`.
    User,
    /// `_**Agent …**_` or `_**Assistant …**_`.
    Agent,
}

/// A role header line, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoleHeader {
    /// `None` only in [`RoleHeader::default`].
    pub role: Option<Role>,
    /// The model named (`claude-opus-4-6`, `copilot/claude-sonnet-4.5`,
    /// `default` …).
    pub model: Option<String>,
    /// Cursor's mode (`Agent`, `Ask`, …).
    pub mode: Option<String>,
    /// The header's time.
    pub ts: Option<Ts>,
    /// A time-looking text that could not be read.
    pub bad_ts: Option<String>,
}

/// Reads a role header line (`_**User (2025-08-04 15:14Z)**_`,
/// `_**Agent (claude-opus-4-6 2026-02-08 06:21:32Z)**_`,
/// `_**Agent (model gpt-5.1, mode Agent)**_`, `_**Assistant**_`, …).
pub fn role_header(line: &str) -> Option<RoleHeader> {
    let inner = line.trim_end().strip_prefix("_**")?.strip_suffix("**_")?;
    let (word, rest) = match inner.split_once(' ') {
        Some((w, r)) => (w, Some(r)),
        None => (inner, None),
    };
    let role = match word {
        "User" => Role::User,
        "Agent" | "Assistant" => Role::Agent,
        _ => return None,
    };
    let mut h = RoleHeader { role: Some(role), ..RoleHeader::default() };
    let Some(rest) = rest else { return Some(h) };
    let paren = rest.strip_prefix('(')?.strip_suffix(')')?;
    let (who, ts, bad) = split_trailing_stamp(paren);
    h.ts = ts;
    h.bad_ts = bad;
    for (i, piece) in who.split(", ").map(str::trim).filter(|p| !p.is_empty()).enumerate() {
        if let Some(m) = piece.strip_prefix("model ") {
            h.model = Some(m.trim().to_owned());
        } else if let Some(m) = piece.strip_prefix("mode ") {
            h.mode = Some(m.trim().to_owned());
        } else if i == 0 {
            h.model = Some(piece.to_owned());
        }
    }
    Some(h)
}

/// Splits `text` into what precedes a trailing timestamp and the timestamp:
/// `("claude-opus-4-6", Some(ts), None)` for `claude-opus-4-6 2026-02-08
/// 06:21:32Z`. A trailing date that does not read gives it back as the third
/// value.
fn split_trailing_stamp(text: &str) -> (&str, Option<Ts>, Option<String>) {
    for (k, _) in text.char_indices() {
        let tail = &text[k..];
        let starts = k == 0 || text[..k].ends_with(' ');
        if !starts || !looks_like_date(tail) {
            continue;
        }
        return match parse_stamp(tail, false) {
            Some(ts) => (text[..k].trim_end(), Some(ts), None),
            None => (text[..k].trim_end(), None, Some(tail.to_owned())),
        };
    }
    (text, None, None)
}

/// Whether `s` starts with `YYYY-MM-DD`.
fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// Reads a SpecStory time: `2025-08-04 15:14Z`, `2026-02-27 18:12:11Z`,
/// `2025-10-01 08:17+0200`, `2025-04-29 13:36:50`, or a file name's
/// `2025-04-26_20-30` / `2026-07-21_20-41-56Z` / `2025-10-01_08-17+0200`.
/// The whole text must be the time. Without a zone the time is UTC when
/// `naive_utc` (file names are written in UTC), else unknown (`None`: a
/// title's local time).
pub fn parse_stamp(text: &str, naive_utc: bool) -> Option<Ts> {
    stamp_prefix(text.trim(), naive_utc).filter(|(_, used)| *used == text.trim().len()).map(|(ts, _)| ts)
}

/// Reads a time at the start of `s` (see [`parse_stamp`]); returns it and
/// the bytes it used.
pub fn stamp_prefix(s: &str, naive_utc: bool) -> Option<(Ts, usize)> {
    let b = s.as_bytes();
    if !looks_like_date(s) || b.len() < 16 {
        return None;
    }
    if !matches!(b[10], b' ' | b'T' | b'_') {
        return None;
    }
    let digits = |r: Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let sep = *b.get(13)?;
    if !digits(11..13) || !matches!(sep, b':' | b'-') || !digits(14..16) {
        return None;
    }
    let mut at = 16;
    let mut secs = "00";
    if b.get(16) == Some(&sep) && digits(17..19) {
        secs = &s[17..19];
        at = 19;
    }
    let zone = match b.get(at) {
        Some(b'Z') => {
            at += 1;
            Some("Z".to_owned())
        }
        Some(&c @ (b'+' | b'-')) if digits(at + 1..at + 5) => {
            let z = format!("{}{}:{}", c as char, &s[at + 1..at + 3], &s[at + 3..at + 5]);
            at += 5;
            Some(z)
        }
        Some(&c @ (b'+' | b'-'))
            if digits(at + 1..at + 3) && b.get(at + 3) == Some(&b':') && digits(at + 4..at + 6) =>
        {
            let z = format!("{}{}", c as char, &s[at + 1..at + 6]);
            at += 6;
            Some(z)
        }
        _ if naive_utc => Some("Z".to_owned()),
        _ => None,
    }?;
    let text = format!("{}T{}:{}:{}{}", &s[..10], &s[11..13], &s[14..16], secs, zone);
    Ts::parse(&text).map(|ts| (ts, at))
}

/// What the lines before the first turn say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Preamble {
    /// `<!-- Generated by SpecStory… -->` was there.
    pub generated: bool,
    /// Its `Markdown vX` version, when named.
    pub markdown_version: Option<String>,
    /// The tool the session comment names (`Cursor IDE`, `cursor`,
    /// `vscode`, `VS Code Copilot IDE`, `Claude Code`, `Codex CLI`, …).
    pub tool_label: Option<String>,
    /// The session ids it names (usually one).
    pub session_ids: Vec<String>,
    /// Its time.
    pub session_ts: Option<Ts>,
    /// The `# ` title, without its time (none when the title is only a time).
    pub title: Option<String>,
    /// The title's time, when it has a zone.
    pub title_ts: Option<Ts>,
}

/// Reads the preamble lines (those before the first turn).
pub fn preamble(lines: &[Line<'_>]) -> Preamble {
    let mut p = Preamble::default();
    for l in lines {
        let t = l.text.trim();
        if let Some(inner) = t.strip_prefix("<!--").and_then(|r| r.strip_suffix("-->")).map(str::trim) {
            if let Some(rest) = inner.strip_prefix("Generated by SpecStory") {
                p.generated = true;
                if let Some(v) = rest.split("Markdown v").nth(1) {
                    p.markdown_version = Some(v.trim().to_owned()).filter(|v| !v.is_empty());
                }
            } else if p.session_ids.is_empty() {
                session_comment(inner, &mut p);
            }
        } else if let Some(title) = t.strip_prefix("# ")
            && p.title.is_none()
            && p.title_ts.is_none()
        {
            let title = title.trim();
            if let Some(ts) = parse_stamp(title, false) {
                p.title_ts = Some(ts);
            } else if let Some((name, rest)) = title.rsplit_once(" (")
                && let Some(stamp) = rest.strip_suffix(')')
                && looks_like_date(stamp)
            {
                p.title = Some(name.trim().to_owned()).filter(|n| !n.is_empty());
                p.title_ts = parse_stamp(stamp, false);
            } else if !title.is_empty() {
                p.title = Some(title.to_owned());
            }
        }
    }
    p
}

/// `<label> Session <id>[, <id>…] (<time>)` (also `Sessions`).
fn session_comment(inner: &str, p: &mut Preamble) {
    let (label, rest) = if let Some(r) = inner.strip_prefix("Sessions ").or_else(|| inner.strip_prefix("Session ")) {
        ("", r)
    } else if let Some(i) = inner.find(" Sessions ") {
        (&inner[..i], &inner[i + " Sessions ".len()..])
    } else if let Some(i) = inner.find(" Session ") {
        (&inner[..i], &inner[i + " Session ".len()..])
    } else {
        return;
    };
    let (ids, stamp) = match rest.rsplit_once(" (") {
        Some((ids, s)) => (ids, s.strip_suffix(')')),
        None => (rest, None),
    };
    let ids: Vec<String> = ids
        .split(',')
        .map(str::trim)
        .filter(|id| {
            !id.is_empty()
                && id.len() <= 128
                && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
        .map(str::to_owned)
        .collect();
    if ids.is_empty() {
        return;
    }
    p.session_ids = ids;
    p.tool_label = Some(label.trim().to_owned()).filter(|l| !l.is_empty());
    p.session_ts = stamp.and_then(|s| parse_stamp(s, false));
}

/// One turn: its header line and the lines after it, up to the next turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// Index of the header line.
    pub line: usize,
    /// The header, read.
    pub header: RoleHeader,
    /// Lines of its body.
    pub body: Range<usize>,
}

/// Whether a line opens a `<tool-use>` block.
fn opens_tool_use(text: &str) -> bool {
    text.trim_start().starts_with("<tool-use")
}

/// Where the `<tool-use>` block opened at `i` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockEnd {
    /// At this line, which closes it (possibly `i` itself).
    Closed(usize),
    /// Another block opens before it is closed.
    Unclosed,
    /// The lines end before it is closed.
    Open,
}

/// Where the `<tool-use>` block opened at `i` ends, looking at lines before `end`.
pub fn tool_use_end(lines: &[Line<'_>], i: usize, end: usize) -> BlockEnd {
    for (j, l) in lines.iter().enumerate().take(end).skip(i) {
        if j > i && opens_tool_use(&l.text) {
            return BlockEnd::Unclosed;
        }
        if l.text.trim_end().ends_with("</tool-use>") {
            return BlockEnd::Closed(j);
        }
    }
    BlockEnd::Open
}

/// The turns of `lines` and the index of the first one (`lines.len()` when
/// there is none). A `<tool-use>` block still open at the end of the lines
/// (an export read while it is written) holds the rest: header lines in it
/// are its output's, and its turn is the last, read again once it is closed.
pub fn turns(lines: &[Line<'_>]) -> (usize, Vec<Turn>) {
    let mut out: Vec<Turn> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let text = &lines[i].text;
        if opens_tool_use(text) {
            match tool_use_end(lines, i, lines.len()) {
                BlockEnd::Closed(j) => {
                    i = j + 1;
                    continue;
                }
                BlockEnd::Open => break,
                BlockEnd::Unclosed => {}
            }
        }
        if let Some(header) = role_header(text) {
            if let Some(last) = out.last_mut() {
                last.body.end = i;
            }
            out.push(Turn { line: i, header, body: i + 1..lines.len() });
        }
        i += 1;
    }
    let first = out.first().map_or(lines.len(), |t| t.line);
    (first, out)
}

/// A tool use as the export wrote it, before interpretation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawTool {
    /// How it was written.
    pub style: ToolStyle,
    /// The tool's name, when the export gives one.
    pub name: String,
    /// `data-tool-type` of a `<tool-use>` block.
    pub kind: Option<String>,
    /// The `<summary>` text (or the bare line), with its `Tool use: **x**` prefix.
    pub summary: String,
    /// The lines inside, without the wrapper tags.
    pub body: Vec<String>,
}

/// The styles of tool uses SpecStory has written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolStyle {
    /// `<tool-use data-tool-type=… data-tool-name=…>` (Markdown v2).
    #[default]
    Tagged,
    /// A bare `Tool use: **name**` line followed by its content.
    Bare,
    /// An early `<details><summary>Searched codebase …</summary>` block.
    Details,
    /// An early one-line `Read file: path`.
    ReadLine,
    /// An early terminal run: a shell fence and its output fence alone.
    Terminal,
    /// An early `## Todo List` section.
    Todo,
}

/// What an agent turn holds, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// Text the agent wrote.
    Text(String),
    /// A `<think>` block.
    Reasoning(String),
    /// A tool use.
    Tool(RawTool),
    /// A marker kept as is (`Cancelled`, an unknown `<details>` block).
    Marker {
        /// What it is.
        kind: String,
        /// Its text.
        text: String,
    },
    /// A block whose closing line is missing (what follows was read as text).
    Unclosed(&'static str),
}

/// A `---` separator line.
fn is_separator(text: &str) -> bool {
    text.trim() == "---"
}

/// Fence state of text lines (``` or ~~~, CommonMark-like).
#[derive(Clone, Copy, Debug, Default)]
struct Fence {
    open: Option<(u8, usize)>,
}

impl Fence {
    /// Feeds a line; returns whether it is inside a fence (opening and
    /// closing lines included).
    fn feed(&mut self, text: &str) -> bool {
        let t = text.trim_start();
        let indent = text.len() - t.len();
        let marker = t.bytes().next().filter(|c| matches!(c, b'`' | b'~'));
        let run = marker.map_or(0, |m| t.bytes().take_while(|&c| c == m).count());
        match (self.open, marker) {
            (None, Some(m)) if run >= 3 && indent <= 3 => {
                self.open = Some((m, run));
                true
            }
            (Some((m, n)), Some(c)) if c == m && run >= n && t[run..].trim().is_empty() && indent <= 3 => {
                self.open = None;
                true
            }
            (open, _) => open.is_some(),
        }
    }
}

/// The text of a user turn: its body without trailing separators and blank
/// lines.
pub fn user_text(lines: &[Line<'_>], body: Range<usize>) -> String {
    let mut parts: Vec<&str> = lines[body].iter().map(|l| l.text.as_ref()).collect();
    while parts.last().is_some_and(|t| t.trim().is_empty() || is_separator(t)) {
        parts.pop();
    }
    let first = parts.iter().position(|t| !t.trim().is_empty()).unwrap_or(parts.len());
    parts[first..].join("\n")
}

/// The blocks of an agent turn. `early`: the export predates SpecStory's
/// Markdown v2, whose tool uses are always tagged; only then is a section
/// that is a `Read file:` line, `Cancelled`, a shell fence with its output
/// or a `## Todo List` a tool use of its own.
pub fn blocks(lines: &[Line<'_>], body: Range<usize>, early: bool) -> Vec<Block> {
    let end = body.end;
    let mut out = Vec::new();
    let mut text: Vec<&str> = Vec::new();
    let mut fence = Fence::default();
    let mut section_start = true;
    // Lines that close a `<details>` block, and those that open one: each
    // opening finds its closing without scanning the turn again.
    let closes: Vec<usize> = (body.start..end).filter(|&j| lines[j].text.contains("</details>")).collect();
    let opens: Vec<usize> = (body.start..end).filter(|&j| lines[j].text.trim_start().starts_with("<details")).collect();
    let next_after = |v: &[usize], i: usize| v.get(v.partition_point(|&j| j < i)).copied();
    let mut i = body.start;
    let flush = |text: &mut Vec<&str>, out: &mut Vec<Block>| {
        let joined = text.join("\n");
        let t = joined.trim_matches('\n').trim_end();
        if !t.trim().is_empty() {
            out.push(Block::Text(t.to_owned()));
        }
        text.clear();
    };
    while i < end {
        let line = lines[i].text.as_ref();
        if fence.open.is_some() {
            fence.feed(line);
            text.push(line);
            i += 1;
            continue;
        }
        let t = line.trim_start();
        if is_separator(line) {
            flush(&mut text, &mut out);
            section_start = true;
            i += 1;
            continue;
        }
        if t.is_empty() {
            text.push(line);
            i += 1;
            continue;
        }
        if t.starts_with("<think>") {
            flush(&mut text, &mut out);
            let close = (i..end).find(|&j| lines[j].text.contains("</think>"));
            let stop = close.unwrap_or(end - 1);
            out.push(Block::Reasoning(think_text(&lines[i..=stop])));
            if close.is_none() {
                out.push(Block::Unclosed("think"));
            }
            i = stop + 1;
            section_start = false;
            continue;
        }
        if opens_tool_use(t) {
            flush(&mut text, &mut out);
            match tool_use_end(lines, i, end) {
                BlockEnd::Closed(j) => {
                    out.push(Block::Tool(tagged(&lines[i..=j])));
                    i = j + 1;
                }
                BlockEnd::Unclosed => {
                    out.push(Block::Unclosed("tool-use"));
                    i += 1;
                }
                BlockEnd::Open => {
                    // Still being written (or never closed): what there is of it.
                    out.push(Block::Tool(tagged(&lines[i..end])));
                    out.push(Block::Unclosed("tool-use"));
                    i = end;
                }
            }
            section_start = false;
            continue;
        }
        if let Some(name) = bare_tool_name(t) {
            flush(&mut text, &mut out);
            let mut j = i + 1;
            while j < end {
                let n = lines[j].text.trim_start();
                if is_separator(n) || n.starts_with("<think>") || bare_tool_name(n).is_some() || opens_tool_use(n) {
                    break;
                }
                j += 1;
            }
            let body: Vec<&str> = lines[i + 1..j].iter().map(|l| l.text.as_ref()).collect();
            let (summary, body) = unwrap_details(&body);
            out.push(Block::Tool(RawTool {
                style: ToolStyle::Bare,
                name: name.to_owned(),
                kind: None,
                summary: summary.unwrap_or_else(|| t.trim().to_owned()),
                body,
            }));
            i = j;
            section_start = false;
            continue;
        }
        if t.starts_with("<details") {
            let close = next_after(&closes, i);
            let nested = close.is_some_and(|c| next_after(&opens, i + 1).is_some_and(|o| o < c));
            if let Some(c) = close.filter(|_| !nested) {
                flush(&mut text, &mut out);
                let body: Vec<&str> = lines[i..=c].iter().map(|l| l.text.as_ref()).collect();
                out.push(details_block(&body));
                i = c + 1;
                section_start = false;
                continue;
            }
        }
        if section_start && early {
            let section_end = section_end(lines, i, end);
            let section: Vec<&str> = lines[i..section_end].iter().map(|l| l.text.as_ref()).collect();
            if let Some(block) = early_block(&section) {
                flush(&mut text, &mut out);
                out.push(block);
                i = section_end;
                section_start = false;
                continue;
            }
        }
        section_start = false;
        fence.feed(line);
        text.push(line);
        i += 1;
    }
    flush(&mut text, &mut out);
    out
}

/// The end of the section starting at `i`: the next separator outside a
/// fence, or `end`.
fn section_end(lines: &[Line<'_>], i: usize, end: usize) -> usize {
    let mut fence = Fence::default();
    for (j, l) in lines.iter().enumerate().take(end).skip(i) {
        let inside = fence.feed(&l.text);
        if !inside && is_separator(&l.text) {
            return j;
        }
    }
    end
}

/// The name in a bare `Tool use: **name**` line.
fn bare_tool_name(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("Tool use: **")?;
    let (name, _) = rest.split_once("**")?;
    (!name.is_empty()).then_some(name)
}

/// The text of a `<think>` block without its wrapper tags.
fn think_text(lines: &[Line<'_>]) -> String {
    let joined: Vec<&str> = lines.iter().map(|l| l.text.as_ref()).collect();
    let mut t = joined.join("\n");
    for tag in ["<think>", "</think>", "</details>"] {
        t = t.replace(tag, "");
    }
    let t = t.trim();
    let t = match t.strip_prefix("<details>") {
        Some(r) => r.trim_start(),
        None => t,
    };
    let t = match t.find("</summary>") {
        Some(i) if t[..i].contains("<summary>") => &t[i + "</summary>".len()..],
        _ => t,
    };
    t.trim().to_owned()
}

/// A `<tool-use>` block (its lines, opening and closing included).
fn tagged(block: &[Line<'_>]) -> RawTool {
    let first = block.first().map_or("", |l| l.text.as_ref());
    let attr = |name: &str| {
        let key = format!("{name}=\"");
        let start = first.find(&key)? + key.len();
        let len = first[start..].find('"')?;
        Some(first[start..start + len].to_owned())
    };
    let name = attr("data-tool-name").unwrap_or_default();
    let kind = attr("data-tool-type");
    // What follows the opening tag on its line (`<details>`), and what
    // precedes the closing tag on its line.
    let mut body: Vec<String> = Vec::new();
    let after_open = first.find('>').map_or("", |i| &first[i + 1..]);
    if block.len() == 1 {
        let inner = after_open.trim_end().strip_suffix("</tool-use>").unwrap_or(after_open);
        body.push(inner.to_owned());
    } else {
        if !after_open.trim().is_empty() {
            body.push(after_open.to_owned());
        }
        body.extend(block[1..block.len() - 1].iter().map(|l| l.text.to_string()));
        let last = block[block.len() - 1].text.trim_end();
        let before_close = last.strip_suffix("</tool-use>").unwrap_or(last);
        if !before_close.trim().is_empty() {
            body.push(before_close.to_owned());
        }
    }
    let refs: Vec<&str> = body.iter().map(String::as_str).collect();
    let (summary, body) = unwrap_details(&refs);
    RawTool { style: ToolStyle::Tagged, name, kind, summary: summary.unwrap_or_default(), body }
}

/// Removes a `<details>`/`<summary>…</summary>`/`</details>` wrapper around
/// `lines`: the summary text (joined when it spans lines) and the content.
pub fn unwrap_details(lines: &[&str]) -> (Option<String>, Vec<String>) {
    let mut body: Vec<String> = Vec::new();
    let mut summary: Option<String> = None;
    let mut in_summary = false;
    let mut seen_content = false;
    for &l in lines {
        let mut t = l;
        if !seen_content && summary.is_none() || in_summary {
            let trimmed = t.trim();
            let trimmed = trimmed.strip_prefix("<details>").map_or(trimmed, str::trim_start);
            if in_summary {
                let s = summary.get_or_insert_with(String::new);
                match trimmed.split_once("</summary>") {
                    Some((a, rest)) => {
                        s.push(' ');
                        s.push_str(a.trim());
                        in_summary = false;
                        t = rest;
                    }
                    None => {
                        s.push(' ');
                        s.push_str(trimmed);
                        continue;
                    }
                }
            } else if let Some(rest) = trimmed.strip_prefix("<summary>") {
                match rest.split_once("</summary>") {
                    Some((a, after)) => {
                        summary = Some(a.trim().to_owned());
                        t = after;
                    }
                    None => {
                        summary = Some(rest.trim().to_owned());
                        in_summary = true;
                        continue;
                    }
                }
            } else if trimmed.is_empty() {
                continue;
            }
        }
        if !seen_content && t.trim().is_empty() {
            continue;
        }
        seen_content = true;
        body.push(t.to_owned());
    }
    // Trailing wrapper: `</details>` lines, or one at the end of the last line.
    while let Some(last) = body.last_mut() {
        let trimmed = last.trim_end();
        if trimmed.is_empty() {
            body.pop();
            continue;
        }
        if let Some(before) = trimmed.strip_suffix("</details>") {
            if before.trim().is_empty() {
                body.pop();
                continue;
            }
            *last = before.to_owned();
        }
        break;
    }
    if let Some(first) = body.first()
        && first.trim() == "<details>"
    {
        body.remove(0);
    }
    (summary, body)
}

/// An early `<details>` block (its lines, wrapper included).
fn details_block(lines: &[&str]) -> Block {
    let (summary, body) = unwrap_details(lines);
    let summary = summary.unwrap_or_default();
    if summary == "Thought Process" {
        return Block::Reasoning(body.join("\n").trim().to_owned());
    }
    if let Some(name) = bare_tool_name(&summary) {
        return Block::Tool(RawTool { style: ToolStyle::Details, name: name.to_owned(), kind: None, summary, body });
    }
    match details_tool_name(&summary) {
        Some(name) => {
            Block::Tool(RawTool { style: ToolStyle::Details, name: name.to_owned(), kind: None, summary, body })
        }
        None => {
            let mut text = summary;
            for l in body {
                text.push('\n');
                text.push_str(&l);
            }
            Block::Marker { kind: "details".to_owned(), text }
        }
    }
}

/// The tool an early `<details>` summary describes.
pub fn details_tool_name(summary: &str) -> Option<&'static str> {
    let table: &[(&str, &str)] = &[
        ("Searched codebase", "codebase_search"),
        ("Listed directory", "list_dir"),
        ("Listed current directory", "list_dir"),
        ("Grep search for", "grep_search"),
        ("Grep for", "grep"),
        ("Searched web", "web_search"),
        ("Searched files", "file_search"),
        ("Edit file:", "edit_file"),
        ("MCP tool call", "mcp"),
        ("Memory Created", "update_memory"),
        ("Memory Updated", "update_memory"),
        ("Memory Deleted", "update_memory"),
    ];
    table.iter().find(|(p, _)| summary.starts_with(p)).map(|(_, n)| *n)
}

/// A section of an early export that is a tool use on its own: `Read file:
/// path`, `Cancelled`, a shell fence followed only by its output fence, or a
/// `## Todo List`.
fn early_block(section: &[&str]) -> Option<Block> {
    let content: Vec<&str> = section.iter().copied().filter(|l| !l.trim().is_empty()).collect();
    let first = content.first()?.trim();
    if content.len() == 1 {
        if let Some(path) = first.strip_prefix("Read file: ") {
            return Some(Block::Tool(RawTool {
                style: ToolStyle::ReadLine,
                name: "read_file".to_owned(),
                kind: None,
                summary: first.to_owned(),
                body: vec![path.trim().to_owned()],
            }));
        }
        if first == "Cancelled" {
            return Some(Block::Marker { kind: "cancelled".to_owned(), text: first.to_owned() });
        }
    }
    if first == "## Todo List" {
        return Some(Block::Tool(RawTool {
            style: ToolStyle::Todo,
            name: "todo_write".to_owned(),
            kind: None,
            summary: first.to_owned(),
            body: section.iter().skip_while(|l| l.trim() != "## Todo List").skip(1).map(|l| (*l).to_owned()).collect(),
        }));
    }
    let info = first.strip_prefix("```")?;
    if !matches!(info.trim(), "bash" | "sh" | "shell" | "zsh" | "powershell" | "pwsh" | "cmd" | "console") {
        return None;
    }
    // Only fences (and blank lines) in the section, the first closed.
    let mut fence = Fence::default();
    let mut fences = 0;
    for l in section {
        let was_open = fence.open.is_some();
        let inside = fence.feed(l);
        if !inside && !l.trim().is_empty() {
            return None;
        }
        if !was_open && inside {
            fences += 1;
        }
    }
    if fences > 2 {
        return None;
    }
    Some(Block::Tool(RawTool {
        style: ToolStyle::Terminal,
        name: "run_terminal_cmd".to_owned(),
        kind: Some("shell".to_owned()),
        summary: String::new(),
        body: section.iter().map(|l| (*l).to_owned()).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ls(text: &str) -> Vec<Line<'_>> {
        lines(text.as_bytes())
    }

    #[test]
    fn role_headers_of_every_format() {
        let h = role_header("_**User (2025-08-04 15:14Z)**_").expect("user");
        assert_eq!((h.role, h.ts), (Some(Role::User), Ts::parse("2025-08-04T15:14:00Z")));
        let h = role_header("_**Agent (claude-opus-4-6 2026-02-08 06:21:32Z)**_").expect("agent");
        assert_eq!(h.model.as_deref(), Some("claude-opus-4-6"));
        assert_eq!(h.ts, Ts::parse("2026-02-08T06:21:32Z"));
        let h = role_header("_**Agent (model gpt-5.1-codex-max, mode Agent)**_").expect("agent");
        assert_eq!((h.model.as_deref(), h.mode.as_deref()), (Some("gpt-5.1-codex-max"), Some("Agent")));
        let h = role_header("_**Agent (mode Agent)**_").expect("agent");
        assert_eq!((h.model, h.mode.as_deref()), (None, Some("Agent")));
        let h = role_header("_**Assistant (copilot/claude-3.5-sonnet)**_").expect("agent");
        assert_eq!(h.model.as_deref(), Some("copilot/claude-3.5-sonnet"));
        let h = role_header("_**User (2025-10-01 08:17+0200)**_").expect("user");
        assert_eq!(h.ts, Ts::parse("2025-10-01T06:17:00Z"));
        let h = role_header("_**Agent (x 2025-13-45 99:99Z)**_").expect("agent");
        assert!(h.ts.is_none() && h.bad_ts.is_some());
        assert_eq!(role_header("_**Assistant**_").and_then(|h| h.role), Some(Role::Agent));
        assert!(role_header("_**Bob**_").is_none());
        assert!(role_header("**User**").is_none());
        assert!(role_header("_**User (unclosed**_").is_none());
    }

    #[test]
    fn stamps_in_titles_and_file_names() {
        assert_eq!(parse_stamp("2025-04-29 13:36:50", false), None);
        assert_eq!(parse_stamp("2025-04-29 13:36:50", true), Ts::parse("2025-04-29T13:36:50Z"));
        assert_eq!(
            stamp_prefix("2025-04-26_20-30-setting-up", true).map(|(t, _)| t),
            Ts::parse("2025-04-26T20:30:00Z")
        );
        assert_eq!(
            stamp_prefix("2026-07-21_20-41-56Z-trivy", true),
            Ts::parse("2026-07-21T20:41:56Z").map(|t| (t, 20))
        );
        assert_eq!(stamp_prefix("2025-10-01_08-17+0200-qu", true).map(|(t, _)| t), Ts::parse("2025-10-01T06:17:00Z"));
        assert_eq!(stamp_prefix("2025-10-01", true), None);
        assert_eq!(stamp_prefix("２０２５-01-01 00:00Z", true), None);
    }

    #[test]
    fn preambles() {
        let p = preamble(&ls(
            "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n<!-- Cursor IDE Session abc-123 (2026-07-05 11:47:10Z) -->\n\n# Fix the build (2026-07-05 11:47Z)\n",
        ));
        assert!(p.generated);
        assert_eq!(p.markdown_version.as_deref(), Some("2.1.0"));
        assert_eq!(p.tool_label.as_deref(), Some("Cursor IDE"));
        assert_eq!(p.session_ids, vec!["abc-123".to_owned()]);
        assert_eq!(p.session_ts, Ts::parse("2026-07-05T11:47:10Z"));
        assert_eq!(p.title.as_deref(), Some("Fix the build"));
        let p =
            preamble(&ls("<!-- Generated by SpecStory -->\n\n# 2026-06-02 00:04:20Z\n\n<!-- Sessions a1, b2 -->\n"));
        assert_eq!((p.title, p.title_ts), (None, Ts::parse("2026-06-02T00:04:20Z")));
        assert_eq!(p.session_ids, vec!["a1".to_owned(), "b2".to_owned()]);
        assert_eq!(p.tool_label, None);
        let p = preamble(&ls("# A local time (2025-04-29 13:36:50)\n"));
        assert_eq!((p.title.as_deref(), p.title_ts), (Some("A local time"), None));
    }

    #[test]
    fn headers_inside_a_closed_tool_use_do_not_split_turns() {
        let text = "_**User**_\n\nhi\n\n---\n\n_**Agent (default)**_\n\n<tool-use data-tool-name=\"cat\"><details>\n<summary>Tool use: **cat**</summary>\n```\n_**User**_\n```\n</details></tool-use>\n\n_**User**_\n\nbye\n";
        let l = ls(text);
        let (first, t) = turns(&l);
        assert_eq!(first, 0);
        assert_eq!(t.len(), 3);
        // An unclosed block does not swallow the turns after it when another follows…
        let text = "_**Agent**_\n\n<tool-use data-tool-name=\"x\">\nnever closed\n\n_**User**_\n\nnext\n\n_**Agent**_\n\n<tool-use data-tool-name=\"y\">\n</tool-use>\n";
        let l = ls(text);
        assert_eq!(turns(&l).1.len(), 3);
        // …but one still open at the end holds the rest (it is being written).
        let text = "_**Agent**_\n\n<tool-use data-tool-name=\"cat\">\n```\n_**User**_\n";
        let l = ls(text);
        assert_eq!(turns(&l).1.len(), 1);
    }

    #[test]
    fn blocks_of_an_agent_turn() {
        let text = "intro\n\n<think><details><summary>Thought Process</summary>\nplanning\n</details></think>\n\n<tool-use data-tool-type=\"read\" data-tool-name=\"read_file\"><details>\n<summary>Tool use: **read_file** • Read file: a.py</summary>\n\n</details></tool-use>\n\n---\n\nRead file: b.py\n\n---\n\nCancelled\n\n---\n\n```bash\nls\n```\n\n```\nx\n```\n\n---\n\n```bash\nls\n```\nthat lists files\n\n---\n\nTool use: **grep**\n\n<details>\n<summary>Grep for \"x\" in \"y\" • 0 matches</summary>\n\n_No matches found_\n\n</details>\n\n---\n\n<details>\n            <summary>Searched codebase \"q\" • **1** results</summary>\n        \n| File |\n|---|\n| `a` |\n\n</details>\n";
        let l = ls(text);
        let b = blocks(&l, 0..l.len(), true);
        let shape: Vec<String> = b
            .iter()
            .map(|b| match b {
                Block::Text(t) => format!("text:{}", t.lines().next().unwrap_or("")),
                Block::Reasoning(t) => format!("think:{t}"),
                Block::Tool(t) => format!("tool:{:?}:{}", t.style, t.name),
                Block::Marker { kind, .. } => format!("marker:{kind}"),
                Block::Unclosed(w) => format!("unclosed:{w}"),
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                "text:intro",
                "think:planning",
                "tool:Tagged:read_file",
                "tool:ReadLine:read_file",
                "marker:cancelled",
                "tool:Terminal:run_terminal_cmd",
                "text:```bash",
                "tool:Bare:grep",
                "tool:Details:codebase_search",
            ]
        );
        let Block::Tool(grep) = &b[7] else { panic!("tool") };
        assert_eq!(grep.summary, "Grep for \"x\" in \"y\" • 0 matches");
        assert_eq!(grep.body, vec!["_No matches found_".to_owned()]);
    }

    #[test]
    fn fences_keep_separators_and_tags_as_text() {
        let text = "look:\n```yaml\n---\n<tool-use data-tool-name=\"x\">\n```\ndone";
        let l = ls(text);
        let b = blocks(&l, 0..l.len(), true);
        assert_eq!(b.len(), 1, "{b:?}");
    }
}
