//! `engram-scorer explain FILE:START-END` and `engram-scorer view SESSION
//! --at OFFSET`: provenance on the command line (seed 003, "CLI Commands").
//! JSON on stdout by default (one object), `--pretty` for people. The query
//! itself is [`shared::domain::provenance::explain`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use shared::base::paths::Paths;
use shared::domain::provenance::explain::{self, ExplainOptions, Explanation, FileSpan, Target, Window};
use shared::storage::store::Store;
use shared::storage::tape::{Snapshot, TapeLog, TapeOptions};

use crate::error::{Error, Result};

/// What `explain` was asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExplainRequest {
    /// `FILE`, `FILE:LINE` or `FILE:START-END`; `-` reads the span's text
    /// from standard input.
    pub target: String,
    /// Grow the span until at most this many sessions are found.
    pub expand_until: Option<usize>,
    /// Human-readable output.
    pub pretty: bool,
}

/// Splits `FILE:START-END` (or `FILE:LINE`, or `FILE`).
pub fn parse_span(target: &str) -> Result<(PathBuf, Option<(u32, u32)>)> {
    if let Some((file, range)) = target.rsplit_once(':')
        && !file.is_empty()
        && range.chars().all(|c| c.is_ascii_digit() || c == '-')
        && !range.is_empty()
    {
        let bad = || Error::params("target", format!("{range:?} is not a line range START-END"));
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().map_err(|_| bad())?, b.parse::<u32>().map_err(|_| bad())?),
            None => {
                let n = range.parse::<u32>().map_err(|_| bad())?;
                (n, n)
            }
        };
        if a == 0 || b < a {
            return Err(Error::params("target", format!("{range:?}: lines are 1-based and START <= END")));
        }
        return Ok((PathBuf::from(file), Some((a, b))));
    }
    Ok((PathBuf::from(target), None))
}

fn snapshot(paths: &Paths) -> Result<Snapshot> {
    Ok(TapeLog::open(&paths.tapes(), TapeOptions::default())?.snapshot()?)
}

/// Runs `explain` against the data home.
pub fn explain(
    paths: &Paths,
    req: &ExplainRequest,
    opts: &ExplainOptions,
    stdin: &mut dyn Read,
) -> Result<Explanation> {
    let store = Store::open(&paths.db())?;
    let tapes = if opts.brief { None } else { Some(snapshot(paths)?) };
    if req.target == "-" {
        let mut text = String::new();
        stdin.read_to_string(&mut text).map_err(|e| Error::io("read", Path::new("stdin"), e))?;
        return Ok(explain::explain(&store, tapes.as_ref(), &Target { text, ..Target::default() }, opts)?);
    }
    let (file, range) = parse_span(&req.target)?;
    let span = FileSpan::read(&file)?;
    let range = range.unwrap_or((1, span.lines.len().max(1) as u32));
    Ok(explain::explain_file(&store, tapes.as_ref(), &span, range, req.expand_until, opts)?)
}

/// `engram-scorer explain`: runs it and prints JSON (or text with `pretty`).
pub fn explain_cmd(
    paths: &Paths,
    req: &ExplainRequest,
    opts: &ExplainOptions,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<()> {
    let e = explain(paths, req, opts, stdin)?;
    let text = if req.pretty { render(&e) } else { format!("{}\n", serde_json::to_string(&e).unwrap_or_default()) };
    out.write_all(text.as_bytes()).map_err(|e| Error::io("write", Path::new("stdout"), e))
}

/// A session key as given: `harness:id`, or a harness id alone when exactly
/// one session has it.
pub fn resolve_session(store: &Store, given: &str) -> Result<String> {
    let conn = store.conn();
    let exact: bool = conn
        .query_row("SELECT EXISTS (SELECT 1 FROM session_events WHERE session_key = ?1)", [given], |r| r.get(0))
        .map_err(|e| shared::base::error::Error::sqlite("look up session", e))?;
    if exact {
        return Ok(given.to_owned());
    }
    let mut stmt = conn
        .prepare("SELECT session_key FROM sessions WHERE harness_session_id = ?1 OR session_key LIKE ?2 LIMIT 2")
        .map_err(|e| shared::base::error::Error::sqlite("look up session", e))?;
    let found: Vec<String> = stmt
        .query_map(rusqlite::params![given, format!("%:{given}")], |r| r.get(0))
        .and_then(|r| r.collect())
        .map_err(|e| shared::base::error::Error::sqlite("look up session", e))?;
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::params("session", format!("no session {given:?}"))),
        _ => Err(Error::params("session", format!("{given:?} names several sessions: give harness:id"))),
    }
}

/// The `memory_explain` MCP tool's definition.
pub fn mcp_tool() -> serde_json::Value {
    use serde_json::json;
    json!({
        "name": "memory_explain",
        "title": "Why this code exists",
        "description": "Before changing code, ask why it exists: the earlier agent sessions that wrote, edited, read or \
            discussed this span of a file (found by content fingerprints, so moves and small edits do not hide them), \
            ordered by how often they touched it, each with the raw transcript around those moments, the lineage of \
            edits behind it and code removed at that place. Give file with start and end lines, or text.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "file": {"type": "string", "description": "Path of the file (absolute, or relative to the server's directory)"},
                "start": {"type": "integer", "minimum": 1, "description": "First line (1-based; default 1)"},
                "end": {"type": "integer", "minimum": 1, "description": "Last line (default: the end of the file)"},
                "text": {"type": "string", "minLength": 1, "description": "Explain this text instead of a file span"},
                "before": {"type": "integer", "minimum": 0, "maximum": 50, "default": 3, "description": "Transcript events before each touch"},
                "after": {"type": "integer", "minimum": 0, "maximum": 50, "default": 3, "description": "Transcript events after each touch"},
                "brief": {"type": "boolean", "default": false, "description": "Touches only, no transcript"},
                "min_confidence": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5, "description": "Lineage edges below this are not followed"},
                "all": {"type": "boolean", "default": false, "description": "Include weak touches and location-only edges"},
                "expand_until": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Grow the span until at most this many sessions are found"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5, "description": "Most sessions returned"}
            },
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    })
}

/// `memory_explain`: a file span (or a text) explained, as JSON.
pub fn mcp_explain(
    paths: &Paths,
    file: Option<String>,
    range: (Option<u32>, Option<u32>),
    text: Option<String>,
    expand_until: Option<usize>,
    opts: &ExplainOptions,
) -> Result<serde_json::Value> {
    let store = Store::open(&paths.db())?;
    let tapes = if opts.brief { None } else { Some(snapshot(paths)?) };
    let e = match (file, text) {
        (Some(f), None) => {
            let path = std::path::absolute(&f).unwrap_or_else(|_| PathBuf::from(&f));
            let span = FileSpan::read(&path)?;
            let n = span.lines.len().max(1) as u32;
            let (a, b) = (range.0.unwrap_or(1), range.1.unwrap_or(n));
            explain::explain_file(&store, tapes.as_ref(), &span, (a, b), expand_until, opts)?
        }
        (None, Some(text)) => explain::explain(&store, tapes.as_ref(), &Target { text, ..Target::default() }, opts)?,
        _ => return Err(Error::params("file", "give either file (with start and end) or text")),
    };
    Ok(serde_json::to_value(e).unwrap_or_default())
}

/// `engram-scorer view SESSION --at OFFSET --before N --after M`: the raw
/// transcript around an offset, complete (texts not cut).
pub fn view(paths: &Paths, session: &str, at: u64, before: u64, after: u64) -> Result<Window> {
    let store = Store::open(&paths.db())?;
    let session = resolve_session(&store, session)?;
    let snapshot = snapshot(paths)?;
    Ok(explain::transcript(store.conn(), &snapshot, &session, at.saturating_sub(before), at + after, 0)?)
}

/// `view`, printed.
pub fn view_cmd(
    paths: &Paths,
    session: &str,
    (at, before, after): (u64, u64, u64),
    pretty: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let w = view(paths, session, at, before, after)?;
    let text = if pretty {
        let mut s = String::new();
        render_window(&mut s, &w, "");
        s
    } else {
        format!("{}\n", serde_json::json!({"session": session, "from": w.from, "to": w.to, "events": w.events}))
    };
    out.write_all(text.as_bytes()).map_err(|e| Error::io("write", Path::new("stdout"), e))
}

/// `explain` for people.
pub fn render(e: &Explanation) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let t = &e.target;
    let place = match (&t.file, t.start, t.end) {
        (Some(f), Some(a), Some(b)) => format!("{f}:{a}-{b}"),
        (Some(f), _, _) => f.clone(),
        _ => "text".to_owned(),
    };
    let _ = writeln!(s, "{place}: {} fingerprints", t.fingerprints);
    if let Some([a, b]) = t.expanded_from {
        let _ = writeln!(s, "(expanded from lines {a}-{b})");
    }
    for w in &e.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ = writeln!(s, "{} session(s) found, {} shown", e.sessions_found, e.sessions.len());
    for (i, x) in e.sessions.iter().enumerate() {
        let _ = writeln!(
            s,
            "\n{}. {} [{}] touches {} latest {} confidence {:.2}{}{}",
            i + 1,
            x.session,
            x.via,
            x.touch_count,
            x.latest_touch,
            x.confidence,
            x.project.as_deref().map(|p| format!(" project {p}")).unwrap_or_default(),
            x.title.as_deref().map(|p| format!(" \"{p}\"")).unwrap_or_default(),
        );
        if let Some(c) = &x.continuation {
            let _ = writeln!(
                s,
                "   continues into {} (confidence {:.2}, {} shared{})",
                c.into,
                c.confidence,
                c.shared,
                if c.compaction { ", compaction summary" } else { "" }
            );
        }
        let touches: Vec<String> = x
            .touches
            .iter()
            .map(|t| {
                let what = t.tool.as_deref().map_or(t.kind.clone(), |tool| format!("{} {tool}", t.kind));
                let via = if t.via == "direct" { String::new() } else { format!(" {} {}", t.via, t.depth) };
                format!("#{} {what} {:.2}{via}", t.offset, t.confidence)
            })
            .collect();
        let _ = writeln!(s, "   touches: {}", touches.join(", "));
        for w in &x.windows {
            render_window(&mut s, w, "   ");
        }
    }
    if !e.lineage.is_empty() {
        let _ = writeln!(s, "\nlineage:");
        for l in &e.lineage {
            let _ = writeln!(
                s,
                "  {} #{} {} -> {} #{} {}: {:.2} {} {} {}{}",
                l.from.session,
                l.from.offset,
                l.from.side,
                l.to.session,
                l.to.offset,
                l.to.side,
                l.confidence,
                l.location_delta,
                l.cardinality,
                l.class,
                if l.agent_link { format!(" agent link: {}", l.note) } else { String::new() }
            );
        }
    }
    if !e.tombstones.is_empty() {
        let _ = writeln!(s, "\ntombstones:");
        for t in &e.tombstones {
            let lines = t.lines.map(|[a, b]| format!(":{a}-{b}")).unwrap_or_default();
            let _ =
                writeln!(s, "  {}{lines} removed by {} #{} at {} ({})", t.file, t.session, t.offset, t.ts, t.matched);
        }
    }
    s
}

fn render_window(s: &mut String, w: &Window, indent: &str) {
    use std::fmt::Write as _;
    let _ = writeln!(s, "{indent}--- #{}..#{}", w.from, w.to);
    for l in &w.events {
        let text = l.text.replace('\n', &format!("\n{indent}      "));
        let cut = if l.cut > 0 { format!(" […{} more]", l.cut) } else { String::new() };
        let _ = writeln!(s, "{indent}#{} {} {}: {text}{cut}", l.offset, l.ts, l.role);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_parse() {
        assert_eq!(parse_span("src/a.rs:3-9").unwrap(), (PathBuf::from("src/a.rs"), Some((3, 9))));
        assert_eq!(parse_span("src/a.rs:7").unwrap(), (PathBuf::from("src/a.rs"), Some((7, 7))));
        assert_eq!(parse_span("src/a.rs").unwrap(), (PathBuf::from("src/a.rs"), None));
        assert_eq!(parse_span("C:x/a.rs").unwrap(), (PathBuf::from("C:x/a.rs"), None));
        assert!(parse_span("a.rs:9-3").is_err());
        assert!(parse_span("a.rs:0-3").is_err());
    }
}
