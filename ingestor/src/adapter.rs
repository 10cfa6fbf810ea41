//! What every harness adapter shares: the parse context and output, line
//! splitting for JSONL logs, diagnostics, and the [`Emitter`] that turns
//! harness records into redacted events with derived ids.
//!
//! An append-only JSONL log is parsed by [`parse_jsonl`] from any complete-line
//! byte offset: it consumes complete lines only (a last line without `\n`,
//! still being written, is left for the next call) and returns the events, the
//! bytes consumed, diagnostics and a small resume state (`serde_json::Value`,
//! kept later in the `source.cursor` event) that the next call takes back.
//! Parsing `[0, n)` then `[n, end)` with the state in between yields exactly
//! the events of parsing `[0, end)` at once.
//!
//! Event ids are [`EventId::derived`] from the session key, a key of the
//! record (a hash of the line's bytes for JSONL logs; the harness's own
//! record id for whole-file formats) and the position of the event within the
//! record, so re-reading the same bytes, or a rewritten copy of the file,
//! yields identical ids.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::base::ids::{EventId, SessionKey};
use shared::base::time::Ts;
use shared::storage::event::{Body, Event, Opaque, SCHEMA_VERSION};

use crate::error::Error;
use crate::redact::{self, Privacy};

pub use shared::storage::event::prompt::{CONTEXT_TAGS, is_harness_prompt, split_context, typed_text};

/// Whether a harness's tool of this name edits files (any harness's name for
/// it, in any case: Claude Code's `Edit`, Codex's `apply_patch`, Gemini's
/// `replace`, Cursor's `edit_file`, Copilot's `replace_string_in_file`…).
pub fn is_edit_tool(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "edit"
            | "multiedit"
            | "write"
            | "notebookedit"
            | "edit_notebook"
            | "apply_patch"
            | "patch"
            | "replace"
            | "write_file"
            | "edit_file"
            | "edit_file_v2"
            | "create_file"
            | "delete_file"
            | "search_replace"
            | "replace_string_in_file"
            | "multi_replace_string_in_file"
            | "insert_edit_into_file"
            | "str_replace_editor"
            | "str_replace_based_edit_tool"
    )
}

/// `w` of every event this crate writes.
pub const WRITER: &str = concat!("engram-ingestor/", env!("CARGO_PKG_VERSION"));

/// Bytes of a file's head given to `initial_state` by callers that read it.
pub const HEAD_BYTES: usize = 64 * 1024;

/// What an adapter knows about the file it parses, besides its bytes.
#[derive(Clone, Debug)]
pub struct ParseContext<'a> {
    /// Path of the file (or directory, or database), as text.
    pub path: &'a str,
    /// Time given to records before the first timestamped one (the caller
    /// passes the file's modification time).
    pub fallback_ts: Ts,
    /// Exclusions.
    pub privacy: &'a Privacy,
    /// A sidecar document the caller read next to the file (Claude's
    /// `agent-<id>.meta.json`).
    pub sidecar: Option<&'a Value>,
    /// Redact secrets in emitted events (config `privacy.redact`; on unless
    /// the user turned it off for debugging).
    pub redact: bool,
}

impl<'a> ParseContext<'a> {
    /// A context with default privacy settings and no sidecar.
    pub fn new(path: &'a str, fallback_ts: Ts, privacy: &'a Privacy) -> ParseContext<'a> {
        ParseContext { path, fallback_ts, privacy, sidecar: None, redact: true }
    }

    /// The file name without its directory and extension.
    pub fn file_stem(&self) -> &str {
        let name = self.path.rsplit(['/', '\\']).next().unwrap_or(self.path);
        name.rsplit_once('.').map_or(name, |(stem, _)| stem)
    }
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// A line that is not JSON, or not a JSON object.
    MalformedLine,
    /// A timestamp that is present but unreadable; the previous one was used.
    BadTimestamp,
    /// A record that names something it cannot be joined to (a tool result
    /// without its call, a subagent without a parent, …).
    Unjoined,
    /// A record whose shape is known but whose content is unusable.
    BadRecord,
    /// The resume state could not be read; parsing restarted from a fresh state.
    ResumeState,
}

/// A problem in a harness log that did not stop the parse.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// The file.
    pub file: String,
    /// 1-based line number, for line-oriented logs.
    pub line: Option<u64>,
    /// Byte offset of the start of the line or record.
    pub offset: Option<u64>,
    /// What kind of problem.
    pub kind: DiagnosticKind,
    /// Human-readable detail.
    pub message: String,
}

/// How one line (or whole-file record) was accounted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineReport {
    /// 1-based line number (record index for whole-file formats).
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// Events emitted for it.
    pub events: u32,
    /// Diagnostics raised for it.
    pub diagnostics: u32,
}

/// Everything one parse call produced.
#[derive(Clone, Debug, Default)]
pub struct ParseOutput {
    /// Events in file order, redacted.
    pub events: Vec<Event>,
    /// Bytes consumed from the given start (complete lines only).
    pub consumed: u64,
    /// Problems found.
    pub diagnostics: Vec<Diagnostic>,
    /// Records of types the adapter does not know, by type (each also became
    /// an `opaque` event).
    pub unknown_types: BTreeMap<String, u64>,
    /// Per line: how it was accounted for.
    pub lines: Vec<LineReport>,
    /// Events emitted and then replaced by a later record with the same id in
    /// the same call (last write wins; Gemini).
    pub superseded: u64,
    /// State to pass to the next call.
    pub state: Value,
}

/// Builds events for one parse call.
#[derive(Debug)]
pub struct Emitter<'c, 'a> {
    ctx: &'c ParseContext<'a>,
    /// Events so far.
    pub events: Vec<Event>,
    /// Diagnostics so far.
    pub diagnostics: Vec<Diagnostic>,
    /// Unknown types so far.
    pub unknown_types: BTreeMap<String, u64>,
    /// Line reports so far.
    pub lines: Vec<LineReport>,
    line: u64,
    offset: u64,
    record_key: String,
    line_events: usize,
    line_diags: usize,
}

impl<'c, 'a> Emitter<'c, 'a> {
    /// A new emitter for `ctx`.
    pub fn new(ctx: &'c ParseContext<'a>) -> Emitter<'c, 'a> {
        Emitter {
            ctx,
            events: Vec::new(),
            diagnostics: Vec::new(),
            unknown_types: BTreeMap::new(),
            lines: Vec::new(),
            line: 0,
            offset: 0,
            record_key: String::new(),
            line_events: 0,
            line_diags: 0,
        }
    }

    /// The parse context.
    pub fn ctx(&self) -> &ParseContext<'a> {
        self.ctx
    }

    /// Starts a record: later events get ids derived from `record_key`.
    pub fn begin(&mut self, line: u64, offset: u64, record_key: String) {
        self.line = line;
        self.offset = offset;
        self.record_key = record_key;
        self.line_events = self.events.len();
        self.line_diags = self.diagnostics.len();
    }

    /// Changes the key later events of the current record derive their ids
    /// from (a harness record id, for last-write-wins formats).
    pub fn rekey(&mut self, record_key: String) {
        self.record_key = record_key;
    }

    /// Ends the current record and records how it was accounted for.
    pub fn end(&mut self) {
        self.lines.push(LineReport {
            line: self.line,
            offset: self.offset,
            events: u32::try_from(self.events.len() - self.line_events).unwrap_or(u32::MAX),
            diagnostics: u32::try_from(self.diagnostics.len() - self.line_diags).unwrap_or(u32::MAX),
        });
    }

    /// The derived id of event `sub` of the current record in `session`.
    pub fn id(&self, session: &SessionKey, sub: &str) -> EventId {
        EventId::derived(&[session.as_str(), &self.record_key, sub])
    }

    /// Emits one event: redacts its body and derives its id from the session,
    /// the current record and `sub` (unique within the record).
    pub fn emit(&mut self, session: &SessionKey, ts: Ts, sub: &str, mut body: Body) {
        if self.ctx.redact {
            redact::redact_body(&mut body);
        }
        self.events.push(Event {
            v: SCHEMA_VERSION,
            id: self.id(session, sub),
            ts,
            writer: WRITER.to_owned(),
            session: Some(session.clone()),
            body,
        });
    }

    /// Emits an `opaque` event for a record kept without interpretation; when
    /// `unknown`, also counts its type among the unknown types.
    pub fn opaque(&mut self, session: &SessionKey, ts: Ts, sub: &str, record_type: &str, raw: Value, unknown: bool) {
        if unknown {
            *self.unknown_types.entry(record_type.to_owned()).or_insert(0) += 1;
        }
        self.emit(
            session,
            ts,
            sub,
            Body::Opaque(Opaque { record_type: record_type.to_owned(), raw: redact::cap_opaque(raw) }),
        );
    }

    /// Raises a diagnostic about the current record.
    pub fn diag(&mut self, kind: DiagnosticKind, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.ctx.path.to_owned(),
            line: Some(self.line),
            offset: Some(self.offset),
            kind,
            message: message.into(),
        });
    }

    /// Finishes into a [`ParseOutput`].
    pub fn finish(self, consumed: u64, state: Value) -> ParseOutput {
        ParseOutput {
            events: self.events,
            consumed,
            diagnostics: self.diagnostics,
            unknown_types: self.unknown_types,
            lines: self.lines,
            superseded: 0,
            state,
        }
    }
}

/// A short content key of a line: the first 20 hex digits of its blake3 hash.
pub fn line_key(line: &[u8]) -> String {
    let hash = blake3::hash(line);
    hash.to_hex()[..20].to_owned()
}

/// `blake3` hex (32 characters) of `text` normalised as lines: CRLF becomes
/// LF and every line, including the last, ends with `\n`. Empty text hashes
/// the empty string. This is what `code.edit` `before_hash`/`after_hash` hold.
pub fn content_hash(text: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    if !text.is_empty() {
        let body = text.strip_suffix('\n').unwrap_or(text);
        for line in body.split('\n') {
            hasher.update(line.strip_suffix('\r').unwrap_or(line).as_bytes());
            hasher.update(b"\n");
        }
    }
    hasher.finalize().to_hex()[..32].to_owned()
}

/// Number of lines in `text` (a final line without `\n` counts).
pub fn line_count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let n = text.matches('\n').count() + usize::from(!text.ends_with('\n'));
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Reads a timestamp field: RFC 3339 text, or epoch milliseconds / seconds.
pub fn parse_ts_value(v: &Value) -> Option<Ts> {
    match v {
        Value::String(s) => Ts::parse(s),
        Value::Number(n) => {
            let x = n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?;
            // Seconds before ~2001-09 in ms would be < 1e12; treat small values as seconds.
            Some(if x.abs() < 100_000_000_000 { Ts(x * 1000) } else { Ts(x) })
        }
        _ => None,
    }
}

/// Tracks the last good timestamp of a log (kept in resume states).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// Last timestamp read, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<i64>,
}

impl Clock {
    /// The time of a record: its own `field` when readable, else the last one
    /// (or the context's fallback). A present but unreadable value raises a
    /// [`DiagnosticKind::BadTimestamp`].
    pub fn at(&mut self, em: &mut Emitter<'_, '_>, rec: &Value, field: &str) -> Ts {
        match rec.get(field) {
            Some(v) if !v.is_null() => match parse_ts_value(v) {
                Some(ts) => {
                    self.last = Some(ts.0);
                    ts
                }
                None => {
                    em.diag(DiagnosticKind::BadTimestamp, format!("unreadable {field} {v}"));
                    self.now(em)
                }
            },
            _ => self.now(em),
        }
    }

    /// The last timestamp, or the context's fallback.
    pub fn now(&self, em: &Emitter<'_, '_>) -> Ts {
        self.last.map_or(em.ctx().fallback_ts, Ts)
    }
}

/// An adapter for an append-only JSONL log.
pub trait JsonlAdapter {
    /// The harness name (`claude`, `codex`, `gemini`).
    const HARNESS: &'static str;
    /// The typed resume state.
    type State: Serialize + DeserializeOwned + Default;

    /// The state before the first line, from the file's first bytes (up to
    /// [`HEAD_BYTES`]; complete lines only are looked at).
    fn initial_state(ctx: &ParseContext<'_>, head: &[u8]) -> Self::State;

    /// Turns one record (a JSON object) into events.
    fn record(em: &mut Emitter<'_, '_>, state: &mut Self::State, rec: Value);

    /// Called after the last complete line of a call (last-write-wins passes).
    fn end_of_chunk(_em: &mut Emitter<'_, '_>, _state: &mut Self::State) -> u64 {
        0
    }
}

/// Splits `bytes` into complete lines: `(start offset, line without the line
/// ending)`; the total length of the complete lines is returned alongside.
pub fn complete_lines(bytes: &[u8]) -> (Vec<(usize, &[u8])>, usize) {
    let mut out = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        let line = &bytes[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        out.push((start, line));
        start = end + 1;
    }
    (out, start)
}

/// The initial resume state of a file as a JSON value.
pub fn initial_state<A: JsonlAdapter>(ctx: &ParseContext<'_>, head: &[u8]) -> Value {
    let head = &head[..head.len().min(HEAD_BYTES)];
    wrap_state(A::initial_state(ctx, head))
}

/// Parses the complete lines of `bytes`, which start at byte `start_offset`
/// of the file, resuming from `state` (as returned by [`initial_state`] or a
/// previous call). `start_line` is the number of lines before `start_offset`
/// (for diagnostics; kept by the caller or in the state).
pub fn parse_jsonl<A: JsonlAdapter>(
    ctx: &ParseContext<'_>,
    bytes: &[u8],
    start_offset: u64,
    state: &Value,
) -> Result<ParseOutput, Error> {
    let mut wrapped: Wrapped<A::State> = if state.is_null() {
        Wrapped::default()
    } else {
        serde_json::from_value(state.clone()).map_err(|e| Error::ResumeState {
            harness: A::HARNESS,
            path: ctx.path.to_owned(),
            reason: e.to_string(),
        })?
    };
    let mut em = Emitter::new(ctx);
    let (lines, consumed) = complete_lines(bytes);
    for (start, line) in lines {
        wrapped.line += 1;
        let offset = start_offset + start as u64;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        em.begin(wrapped.line, offset, line_key(line));
        match serde_json::from_slice::<Value>(line) {
            Ok(rec @ Value::Object(_)) => A::record(&mut em, &mut wrapped.adapter, rec),
            Ok(other) => em
                .diag(DiagnosticKind::MalformedLine, format!("line is JSON but not an object ({})", type_name(&other))),
            Err(e) => em.diag(DiagnosticKind::MalformedLine, format!("not JSON: {e}")),
        }
        em.end();
    }
    let superseded = A::end_of_chunk(&mut em, &mut wrapped.adapter);
    let state = serde_json::to_value(&wrapped).unwrap_or(Value::Null);
    let mut out = em.finish(consumed as u64, state);
    out.superseded = superseded;
    Ok(out)
}

/// The stored state: the adapter's plus the line count.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Wrapped<S> {
    /// Lines before the resume offset.
    #[serde(default)]
    line: u64,
    /// The adapter's own state.
    #[serde(default)]
    adapter: S,
}

/// Wraps an adapter's initial state with a zero line count, as stored.
pub fn wrap_state<S: Serialize>(adapter: S) -> Value {
    serde_json::to_value(Wrapped { line: 0, adapter }).unwrap_or(Value::Null)
}

/// Name of a JSON value's type, for messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A string field of an object.
pub fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// Text of a content value that is a string, or an array of parts with
/// `text` (joined by newlines); other parts are skipped.
pub fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let mut out = String::new();
            for it in items {
                let t = match it {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(_) => str_of(it, "text"),
                    _ => None,
                };
                if let Some(t) = t {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(t);
                }
            }
            out
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The last path component of a directory (project name); the same rule the
/// hooks apply ([`shared::domain::hook::project_of`]).
pub fn project_of(cwd: &str) -> Option<String> {
    shared::domain::hook::project_of(cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_complete_lines_only() {
        let (lines, consumed) = complete_lines(b"a\r\nbb\n\nccc");
        assert_eq!(lines, vec![(0, &b"a"[..]), (3, &b"bb"[..]), (6, &b""[..])]);
        assert_eq!(consumed, 7);
    }

    #[test]
    fn content_hash_normalises_line_endings() {
        assert_eq!(content_hash("a\r\nb"), content_hash("a\nb\n"));
        assert_ne!(content_hash("a\nb"), content_hash("a\nc"));
        assert_eq!(content_hash("x").len(), 32);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("a\nb\n"), 2);
        assert_eq!(line_count(""), 0);
    }

    #[test]
    fn timestamps_from_text_or_epoch() {
        assert_eq!(parse_ts_value(&Value::from("2025-09-03T00:52:35.576Z")), Some(Ts(1_756_860_755_576)));
        assert_eq!(parse_ts_value(&Value::from(1_730_000_101_000i64)), Some(Ts(1_730_000_101_000)));
        assert_eq!(parse_ts_value(&Value::from(1_780_635_500i64)), Some(Ts(1_780_635_500_000)));
        assert_eq!(parse_ts_value(&Value::from("[trimmed]")), None);
    }
}
