//! Text for people: one line per event, the scan summary table, segment
//! listings and memories. JSON output is serde of the library types.

use std::fmt::Write as _;

use serde_json::Value;
use shared::base::time::Ts;
use shared::domain::memory::queries::MemoryRecord;
use shared::storage::event::{Body, Event};
use shared::storage::tape::{Lsn, SegmentInfo};

use crate::memories::MemoryDetails;
use crate::scan::{HarnessSummary, ScanSummary};

/// `text` on one line, cut to `max` characters with `…`.
pub fn short(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    let mut n = 0;
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            if n + 1 >= max {
                out.push('…');
                return out;
            }
            out.push(' ');
            n += 1;
            space = false;
        }
        if n >= max {
            out.push('…');
            return out;
        }
        out.push(c);
        n += 1;
    }
    out
}

/// Bytes as `12.3 MB`.
pub fn bytes(n: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1000.0 && u + 1 < units.len() {
        x /= 1000.0;
        u += 1;
    }
    if u == 0 { format!("{n} B") } else { format!("{x:.1} {}", units[u]) }
}

fn json_short(v: &Value, max: usize) -> String {
    short(&v.to_string(), max)
}

/// The gist of an event's body, for one line.
pub fn gist(e: &Event) -> String {
    const T: usize = 100;
    match &e.body {
        Body::SessionStarted(s) => {
            let mut out = format!("{} {}", s.harness, s.harness_session_id);
            for (k, v) in [("project", &s.project), ("cwd", &s.cwd), ("branch", &s.git_branch), ("model", &s.model)] {
                if let Some(v) = v {
                    let _ = write!(out, " {k}={v}");
                }
            }
            if let Some(p) = &s.parent {
                let _ = write!(out, " parent={p} ({})", s.parent_link.as_deref().unwrap_or("?"));
            }
            out
        }
        Body::SessionEnded(s) => format!("reason={}", s.reason),
        Body::Meta(m) => {
            let mut out = m.label.clone();
            if let Some(model) = &m.model {
                let _ = write!(out, " model={model}");
            }
            if let Some(t) = &m.text {
                let _ = write!(out, " {}", short(t, T));
            }
            if !m.fields.is_empty() {
                let _ = write!(out, " {}", short(&serde_json::to_string(&m.fields).unwrap_or_default(), 60));
            }
            out
        }
        Body::MsgIn(m) => {
            let origin = if m.origin.is_empty() { "user" } else { m.origin.as_str() };
            format!("[{origin}] {}", short(&m.text, T))
        }
        Body::MsgOut(m) => {
            let part = if m.part.is_empty() { "text" } else { m.part.as_str() };
            format!("[{part}] {}", short(&m.text, T))
        }
        Body::ToolCall(t) => format!("{} {} {}", t.tool, t.call_id, json_short(&t.args, T)),
        Body::ToolResult(r) => {
            let mut out = format!("{} {}", if r.tool.is_empty() { "?" } else { &r.tool }, r.call_id);
            if let Some(x) = r.exit {
                let _ = write!(out, " exit={x}");
            }
            if r.is_error {
                out.push_str(" ERROR");
            }
            let _ = write!(out, " {}", short(if r.stdout.is_empty() { &r.stderr } else { &r.stdout }, T));
            out
        }
        Body::CodeRead(r) => match r.range {
            Some([a, b]) => format!("{}:{a}-{b}", r.file),
            None => r.file.clone(),
        },
        Body::CodeEdit(c) => {
            let mut out = format!("{} {}", if c.op.is_empty() { "update" } else { &c.op }, c.file);
            if let Some([a, b]) = c.before_range {
                let _ = write!(out, " -{a},{b}");
            }
            if let Some([a, b]) = c.after_range {
                let _ = write!(out, " +{a},{b}");
            }
            if let Some(to) = &c.move_to {
                let _ = write!(out, " -> {to}");
            }
            out
        }
        Body::SpanLink(s) => format!("{} -> {} {}", s.from_file, s.to_file, short(&s.note, T)),
        Body::Opaque(o) => format!("{} {}", o.record_type, json_short(&o.raw, 60)),
        Body::SourceCursor(c) => format!("{} {} @{} of {}", c.harness, c.path, c.offset, c.size),
        Body::MemoryAdded(m) => format!(
            "{} {} {:.2}{} {}",
            m.memory_id,
            m.memory_type,
            m.importance,
            if m.pinned { " pinned" } else { "" },
            short(&m.content, T)
        ),
        Body::MemoryUpdated(m) => {
            let mut out = m.memory_id.to_string();
            if let Some(t) = &m.content {
                let _ = write!(out, " text={}", short(t, 60));
            }
            if let Some(i) = m.importance {
                let _ = write!(out, " importance={i:.2}");
            }
            if let Some(t) = &m.tags {
                let _ = write!(out, " tags={}", t.join(","));
            }
            if m.occurrences > 0 {
                let _ = write!(out, " +{} occurrence(s)", m.occurrences);
            }
            if let Some(s) = &m.seen_in {
                let _ = write!(out, " seen_in={s}");
            }
            out
        }
        Body::MemoryPinned(m) | Body::MemoryUnpinned(m) => m.memory_id.to_string(),
        Body::MemoryDeprecated(m) => {
            let mut out = format!("{} {}", m.memory_id, short(&m.reason, 60));
            if let Some(by) = &m.superseded_by {
                let _ = write!(out, " superseded_by={by}");
            }
            out
        }
        Body::MemoryForgotten(m) => format!("{} {}", m.memory_id, short(&m.reason, 60)),
        Body::MemoryFeedback(m) => format!("{} {:.2} by {} {}", m.memory_id, m.relevance, m.by, short(&m.reason, 60)),
        Body::Unknown(u) => format!("({}) {}", u.reason, json_short(&u.body, 60)),
        other => {
            let json = Event { body: other.clone(), ..e.clone() }.to_json();
            let b = serde_json::from_slice::<Value>(&json).ok().and_then(|v| v.get("b").cloned()).unwrap_or_default();
            json_short(&b, T)
        }
    }
}

/// One line: time, log position, kind, session (when asked) and the gist.
pub fn event_line(lsn: Lsn, e: &Event, with_session: bool) -> String {
    let session = match (&e.session, with_session) {
        (Some(s), true) => format!("  {}", short(s.as_str(), 48)),
        _ => String::new(),
    };
    format!("{}  #{lsn:<7} {:<18}{session}  {}", e.ts.to_rfc3339(), e.kind(), gist(e))
}

fn span(min: Option<i64>, max: Option<i64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("{} .. {}", Ts(a).to_rfc3339(), Ts(b).to_rfc3339()),
        _ => "-".into(),
    }
}

/// The segment table of `tapes`.
pub fn segments(segs: &[SegmentInfo]) -> String {
    let mut out =
        format!("{:<52} {:>10} {:>9} {:>19}  {:<8}  {}\n", "segment", "size", "events", "lsn", "state", "time span");
    for s in segs {
        let lsns = if s.events == 0 { "-".into() } else { format!("{}-{}", s.first_lsn, s.last_lsn) };
        let _ = writeln!(
            out,
            "{:<52} {:>10} {:>9} {:>19}  {:<8}  {}",
            s.name,
            bytes(s.bytes),
            s.events,
            lsns,
            if s.sealed { "sealed" } else { "active" },
            span(s.min_ts, s.max_ts)
        );
    }
    let total: u64 = segs.iter().map(|s| s.bytes).sum();
    let events: u64 = segs.iter().map(|s| s.events).sum();
    let _ = writeln!(out, "{} segment(s), {} event(s), {}", segs.len(), events, bytes(total));
    out
}

fn summary_row(out: &mut String, name: &str, h: &HarnessSummary) {
    let _ = writeln!(
        out,
        "{:<9} {:>6} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
        name,
        h.files,
        h.files_read,
        bytes(h.bytes),
        h.sessions,
        h.sessions_touched,
        h.events,
        h.memories_added,
        h.memories_merged,
        h.sessions_ended,
        h.diagnostics
    );
}

/// The table `scan` ends with.
pub fn scan_summary(s: &ScanSummary) -> String {
    let mut out = format!(
        "{:<9} {:>6} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}\n",
        "harness",
        "files",
        "read",
        "bytes",
        "sessions",
        "touched",
        "events",
        "memories",
        "merged",
        "ended",
        "diagnostics"
    );
    for (name, h) in &s.harnesses {
        summary_row(&mut out, name, h);
    }
    summary_row(&mut out, "total", &s.total());
    let t = s.total();
    if t.files_reread > 0 || t.files_failed > 0 || t.known > 0 {
        let _ = writeln!(
            out,
            "{} file(s) read again from the start, {} already-recorded event(s) skipped, {} file(s) failed",
            t.files_reread, t.known, t.files_failed
        );
    }
    if t.duplicates > 0 {
        let _ = writeln!(out, "{} export(s) skipped: their session is recorded from another source", t.duplicates);
    }
    if !t.unknown_types.is_empty() {
        let list: Vec<String> = t.unknown_types.iter().map(|(k, v)| format!("{k} ({v})")).collect();
        let _ = writeln!(out, "unknown record types kept as opaque events: {}", short(&list.join(", "), 200));
    }
    if s.extractor_runs > 0 || s.extractor_deferred > 0 || s.extractor_pending > 0 {
        let _ = writeln!(
            out,
            "extractor model: {} call(s), {} failed, {} span(s) already answered, {} set aside, {} answered from earlier; {} waiting",
            s.extractor_runs,
            s.extractor_failures,
            s.extractor_cached,
            s.extractor_deferred,
            s.extractor_retried,
            s.extractor_pending
        );
    }
    let c = &s.curation;
    if c.curated + c.flushed > 0 {
        let _ = writeln!(
            out,
            "curation: {} session(s) curated ({} kept, {} discarded, {} merged, {} knowledge extracted), {} saved as they were",
            c.curated, c.kept, c.discarded, c.merged, c.knowledge_extracted, c.flushed
        );
    }
    for u in &s.unrecognised {
        let _ = writeln!(out, "not recognised: {u}");
    }
    let secs = s.elapsed_ms / 1000.0;
    let rate = if secs > 0.0 { t.bytes as f64 / 1e6 / secs } else { 0.0 };
    let _ = writeln!(
        out,
        "{} event(s) appended (log position {}) in {secs:.2} s ({rate:.1} MB/s){}",
        s.events_appended,
        s.last_lsn,
        if s.interrupted { "; interrupted: run scan again to continue" } else { "" }
    );
    out
}

/// Widest project column of `memory list`.
const PROJECT_WIDTH: usize = 40;

/// The project column's width for `list`: its longest project key, at most
/// [`PROJECT_WIDTH`].
pub fn project_width(list: &[MemoryRecord]) -> usize {
    list.iter().map(|m| m.project.as_deref().map_or(1, |p| p.chars().count())).max().unwrap_or(1).min(PROJECT_WIDTH)
}

/// `text` in at most `max` characters, cut at the front (`…acme/webapp`): a
/// project key's end names it.
pub fn short_tail(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(n - max.saturating_sub(1)).collect();
    format!("…{tail}")
}

/// One line of `memory list`, its project column `project_width` wide.
pub fn memory_line(m: &MemoryRecord, project_width: usize) -> String {
    let mut flags = Vec::new();
    if m.pinned {
        flags.push("pinned");
    }
    if m.deprecated {
        flags.push("deprecated");
    }
    if m.is_deleted {
        flags.push("forgotten");
    }
    format!(
        "{}  {:<18} {:.2}  {:<project_width$} {:<12} {}",
        m.id,
        m.memory_type.label(),
        m.importance,
        short_tail(m.project.as_deref().unwrap_or("-"), project_width),
        flags.join(","),
        short(&m.content, 90)
    )
}

/// One line of `memory staging`.
pub fn staged_line(s: &shared::domain::knowledge::buffer::StagedRecord) -> String {
    let against = match (&s.conflict_with, s.similarity) {
        (Some(c), Some(sim)) => format!(" ~{c} {:.0}%", sim * 100.0),
        (Some(c), None) => format!(" ~{c}"),
        _ => String::new(),
    };
    let outcome = match (&s.resolution, &s.result_id) {
        (Some(r), Some(m)) => format!(" -> {r} {m}"),
        (Some(r), None) => format!(" -> {r}"),
        _ => String::new(),
    };
    format!("{}  {:<19} {:<10}{against}{outcome}  {}", s.id, s.status, s.memory_type, short(&s.content, 80))
}

/// `memory graph`: the memories by depth, then the edges.
pub fn graph(g: &shared::domain::knowledge::graph::Graph) -> String {
    let mut out = String::new();
    for n in &g.nodes {
        let indent = "  ".repeat(n.depth as usize);
        let dep = if n.deprecated { " (deprecated)" } else { "" };
        let _ = writeln!(out, "{indent}{} [{}]{dep} {}", n.id, n.memory_type, short(&n.content, 90));
    }
    if !g.edges.is_empty() {
        out.push_str("edges:\n");
        for e in &g.edges {
            let _ = writeln!(out, "  {} {} {} ({:.2}, {}) {}", e.from, e.relation, e.to, e.strength, e.origin, e.id);
        }
    }
    if g.depth_limited {
        let _ = writeln!(out, "(cut at depth {}; more lies beyond)", g.max_depth);
    }
    if g.truncated {
        out.push_str("(cut: too many memories)\n");
    }
    out
}

/// `memory show`.
pub fn memory_details(d: &MemoryDetails) -> String {
    let m = &d.memory;
    let mut out = String::new();
    let mut field = |k: &str, v: &str| {
        let _ = writeln!(out, "{k:<15} {v}");
    };
    field("id", &m.id);
    let state = if m.is_deleted {
        "forgotten"
    } else if m.deprecated {
        "deprecated"
    } else {
        "live"
    };
    field("state", state);
    field("type", &m.memory_type.label());
    field("importance", &format!("{:.2}", m.importance));
    field("pinned", if m.pinned { "yes" } else { "no" });
    field("project", m.project.as_deref().unwrap_or("-"));
    field("tags", &if m.tags.is_empty() { "-".into() } else { m.tags.join(", ") });
    field("source", &m.source);
    field("created", &m.created_at);
    field("updated", &m.updated_at);
    field("occurrences", &m.occurrence_count.to_string());
    field("injected", &m.access_count.to_string());
    if let Some(r) = &m.deprecated_reason {
        field("deprecated as", r);
    }
    if let Some(s) = &m.superseded_by {
        field("superseded by", s);
    }
    if let Some(s) = &m.source_session {
        field("learned in", s);
    }
    if !d.sessions.is_empty() {
        field("sessions", &d.sessions.join(", "));
    }
    for f in &d.feedback {
        field(
            "feedback",
            &format!(
                "{:.2} by {} at {}{}",
                f.relevance,
                f.by,
                f.created_at,
                if f.reason.is_empty() { String::new() } else { format!(": {}", f.reason) }
            ),
        );
    }
    let _ = writeln!(out, "\n{}", m.content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::base::ids::{EventId, SessionKey};
    use shared::storage::event::MsgIn;

    #[test]
    fn short_text_is_one_line_and_cut() {
        assert_eq!(short("a\n  b\tc", 10), "a b c");
        assert_eq!(short("abcdefghij", 4), "abcd…");
        assert_eq!(short("  lead", 10), "lead");
        assert_eq!(short_tail("github.com/acme/webapp", 40), "github.com/acme/webapp");
        assert_eq!(short_tail("github.com/acme/webapp", 12), "…acme/webapp");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(12_300_000), "12.3 MB");
    }

    #[test]
    fn an_event_on_one_line() {
        let e = Event {
            v: 1,
            id: EventId("ev_x".into()),
            ts: Ts(1_756_860_755_576),
            writer: "w".into(),
            session: Some(SessionKey::from("claude:s1")),
            body: Body::MsgIn(MsgIn { text: "Fix the\nbug".into(), ..MsgIn::default() }),
        };
        assert_eq!(
            event_line(7, &e, true),
            "2025-09-03T00:52:35.576Z  #7       msg.in              claude:s1  [user] Fix the bug"
        );
    }
}
