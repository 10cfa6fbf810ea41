//! SpecStory markdown exports (`.specstory/history/*.md`): sessions of
//! Cursor, VS Code Copilot, Claude Code, Codex CLI and other tools that the
//! SpecStory extension or CLI saved into a repository.
//!
//! **Which session.** The tool is the one the session comment names
//! (`<!-- Cursor IDE Session <id> (…) -->`, `cursor`, `vscode`, `VS Code
//! Copilot IDE`, `Claude Code`, `Codex CLI`, `Gemini CLI`); an early export
//! without that comment is Copilot's when its agent names a `copilot/…`
//! model, else Cursor's (SpecStory began as a Cursor extension). The
//! session key follows the design, `<harness>:<the harness's own session
//! id>`: `cursor:<composer id>`, `copilot:<chat session id>`,
//! `claude:<session id>`, `codex:<thread id>`; a Claude Code or Codex
//! session exported by SpecStory therefore has the key of its own
//! transcript, and the scanner reads the export only when no transcript of
//! that session is known (see `scan`). An export that names no id gets
//! `md-` and 20 hex digits of the blake3 of its path relative to the
//! repository that holds `.specstory` (`.specstory/history/<file>.md`): the
//! same in every clone of the repository, stable while the file keeps its
//! name. Tools Engram has no name for keep harness `specstory`.
//!
//! **Where and when.** No export format names the working directory, so a
//! session's `cwd` is the repository that holds `.specstory` (the file's
//! own folder for an export found elsewhere). Its start is the session
//! comment's time, else the file name's (`2025-04-26_20-30-…`, UTC), else
//! the title's when it has a zone, else the file's modification time; a
//! turn header's time (`_**User (2025-08-04 15:14Z)**_`) moves the clock.
//!
//! **Mapping.** A user turn → `msg.in` (origin `user`; `engram` for Engram's
//! own injected context; `meta` for slash-command and system-reminder
//! text); empty user turns (an attachment alone) give nothing. An agent
//! turn → `meta` `model` (and `mode`) when they change; text → `msg.out`;
//! `<think>` → `msg.out` part `reasoning`; each tool use ([`tools`]) →
//! `tool.call` (synthesised call id), `tool.result` when the export shows
//! an output, an exit status or a failure, `code.read` for a read file and
//! one `code.edit` per hunk shown (or per file without hunks); `Cancelled`
//! and unknown `<details>` blocks → `opaque`. The first turn also carries
//! `session.started`, a `meta` `export` (exporter, tool, format) and the
//! title (`meta` `title`).
//!
//! **Incremental reading.** An export grows by turns at its end, and its
//! last turn may still grow. A parse reads from a turn boundary to the end
//! of the file, emits every turn, and reports as consumed only the bytes
//! before its last turn: the cursor stays at that turn's header, the next
//! parse reads it again (unchanged events keep their ids and are
//! recognised) together with what followed. The resume state remembers the
//! header line expected at the cursor; a file rewritten so that another
//! line is there is a [`Error::ResumeState`], and the scanner reads it
//! again from the start. Event ids derive from the session, the turn's
//! ordinal and the block's position (and the scanner hashes the content in:
//! a changed block is recorded again), so re-reading a rewritten file yields
//! the same ids for what did not change. (Header lines are not keys: one
//! export may repeat the same header, time included, for different turns.)

pub mod markdown;
pub mod tools;

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::base::ids::SessionKey;
use shared::base::time::Ts;
use shared::storage::event::{
    Body, CodeRead, INJECTION_OPEN, Meta, MsgIn, MsgOut, SessionStarted, ToolCall, ToolResult, harness, origin,
};

use crate::adapter::{
    Clock, DiagnosticKind, Emitter, HEAD_BYTES, ParseContext, ParseOutput, line_key, project_of, split_context,
};
use crate::error::Error;
use crate::patch;
use crate::redact::{self, EXCLUDED_MARKER};
use markdown::{Block, Line, Role, RoleHeader};

/// The harness name used in errors about this adapter's resume state.
const ADAPTER: &str = "specstory";

/// Resume state of an export.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportState {
    /// Harness of the session (`cursor`, `copilot`, `claude`, `codex`, …).
    pub harness: String,
    /// The harness's session id (or the `md-` id derived from the path).
    pub session: String,
    /// Further ids a multi-session comment named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_ids: Vec<String>,
    /// The repository holding `.specstory` (or the file's folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The tool as the session comment names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_label: Option<String>,
    /// `Markdown vX` of the generator comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown_version: Option<String>,
    /// The title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When the session started (ms).
    #[serde(default)]
    pub start: i64,
    /// `session.started` was emitted before the resume offset.
    #[serde(default)]
    pub started: bool,
    /// Last time read.
    #[serde(default)]
    pub clock: Clock,
    /// Last model emitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Last mode emitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Turns before the resume offset.
    #[serde(default)]
    pub turns: u64,
    /// Lines before the resume offset.
    #[serde(default)]
    pub line: u64,
    /// Key of the header line expected at the resume offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
}

impl ExportState {
    /// The session key.
    pub fn key(&self) -> SessionKey {
        SessionKey::new(&self.harness, &self.session)
    }
}

/// The harness name of a tool label (`Cursor IDE` → `cursor`, …); `None`
/// for a label Engram has no name for.
pub fn harness_of_label(label: &str) -> Option<&'static str> {
    let l = label.to_lowercase();
    if l.contains("cursor") {
        Some(harness::CURSOR)
    } else if l.contains("copilot") || l == "vscode" || l.contains("vs code") {
        Some(harness::COPILOT)
    } else if l.contains("claude") {
        Some(harness::CLAUDE)
    } else if l.contains("codex") {
        Some(harness::CODEX)
    } else if l.contains("gemini") {
        Some(harness::GEMINI)
    } else if l.contains("opencode") {
        Some(harness::OPENCODE)
    } else {
        None
    }
}

/// The repository holding `.specstory` (else the file's folder), and the
/// path of the file relative to it.
pub fn location(path: &str) -> (Option<String>, String) {
    let p = Path::new(path);
    if let Some(dot) = p.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == ".specstory")) {
        let root = dot.parent().unwrap_or(Path::new(""));
        let rel = p.strip_prefix(root).unwrap_or(p);
        let rel: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let root = root.display().to_string();
        return (Some(root).filter(|r| !r.is_empty()), rel.join("/"));
    }
    let name = p.file_name().map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
    let dir = p.parent().map(|d| d.display().to_string()).filter(|d| !d.is_empty());
    (dir, name)
}

/// The state before the first turn, from the file's first bytes (up to
/// [`HEAD_BYTES`]).
pub fn initial_state(ctx: &ParseContext<'_>, head: &[u8]) -> ExportState {
    let head = &head[..head.len().min(HEAD_BYTES)];
    let lines = markdown::lines(head);
    let (first, turns) = markdown::turns(&lines);
    let pre = markdown::preamble(&lines[..first]);
    let first_agent = turns.iter().find(|t| t.header.role == Some(Role::Agent));
    let harness = match pre.tool_label.as_deref() {
        Some(label) => harness_of_label(label).unwrap_or(harness::SPECSTORY),
        None if first_agent.and_then(|t| t.header.model.as_deref()).is_some_and(|m| m.starts_with("copilot/")) => {
            harness::COPILOT
        }
        None => harness::CURSOR,
    };
    let (cwd, rel) = location(ctx.path);
    let session = match pre.session_ids.first() {
        Some(id) => id.clone(),
        None => format!("md-{}", &blake3::hash(rel.as_bytes()).to_hex()[..20]),
    };
    let from_name = markdown::stamp_prefix(ctx.file_stem(), true).map(|(ts, _)| ts);
    let first_turn = turns.iter().find_map(|t| t.header.ts);
    let start = pre.session_ts.or(from_name).or(pre.title_ts).or(first_turn).unwrap_or(ctx.fallback_ts);
    ExportState {
        harness: harness.to_owned(),
        session,
        other_ids: pre.session_ids.iter().skip(1).cloned().collect(),
        cwd,
        tool_label: pre.tool_label,
        markdown_version: pre.markdown_version,
        title: pre.title,
        start: start.0,
        clock: Clock { last: Some(start.0) },
        ..ExportState::default()
    }
}

/// The initial state as stored.
pub fn initial_state_value(ctx: &ParseContext<'_>, head: &[u8]) -> Value {
    serde_json::to_value(initial_state(ctx, head)).unwrap_or(Value::Null)
}

/// The session an export's state is about.
pub fn session_of(state: &Value) -> Option<SessionKey> {
    let st: ExportState = serde_json::from_value(state.clone()).ok()?;
    (!st.harness.is_empty() && !st.session.is_empty()).then(|| st.key())
}

/// Parses a whole export at once.
pub fn parse_all(ctx: &ParseContext<'_>, bytes: &[u8]) -> ParseOutput {
    let state = initial_state_value(ctx, bytes);
    // A parse from offset 0 cannot fail.
    parse(ctx, bytes, 0, &state).unwrap_or_default()
}

/// Parses `bytes`, the file from byte `offset` to its end, from `state`
/// (from [`initial_state_value`] at offset 0, else from the previous call).
/// See the module docs for what is consumed.
pub fn parse(ctx: &ParseContext<'_>, bytes: &[u8], offset: u64, state: &Value) -> Result<ParseOutput, Error> {
    let resume_error = |reason: String| Error::ResumeState { harness: ADAPTER, path: ctx.path.to_owned(), reason };
    // From the start, the state is the file's own (whatever was passed).
    let mut st: ExportState = if offset == 0 {
        initial_state(ctx, bytes)
    } else {
        serde_json::from_value(state.clone()).map_err(|e| resume_error(e.to_string()))?
    };
    let lines = markdown::lines(bytes);
    let (first, turns) = markdown::turns(&lines);
    let mut em = Emitter::new(ctx);
    if offset > 0 {
        let expect = st.expect.clone().ok_or_else(|| resume_error("no header expected at the offset".to_owned()))?;
        let found = lines.first().map(|l| line_key(l.text.as_bytes()));
        if first != 0 || found.as_deref() != Some(expect.as_str()) {
            return Err(resume_error("the turn the cursor points at is not there any more (rewritten)".to_owned()));
        }
    } else if turns.is_empty() {
        let pre = markdown::preamble(&lines);
        if !pre.generated && !bytes.iter().all(u8::is_ascii_whitespace) {
            em.begin(1, 0, "preamble".to_owned());
            em.diag(DiagnosticKind::BadRecord, "no SpecStory header and no turns: not an export this build reads");
            em.end();
        }
    }
    let last = turns.len().saturating_sub(1);
    let mut snapshot = st.clone();
    let mut consumed = 0u64;
    for (n, turn) in turns.iter().enumerate() {
        if n == last {
            // The state and offset the next parse resumes from: this turn may still grow.
            snapshot = st.clone();
            snapshot.expect = Some(line_key(lines[turn.line].text.as_bytes()));
            snapshot.line = st.line + turn.line as u64;
            consumed = lines[turn.line].offset as u64;
        }
        read_turn(&mut em, &mut st, &lines, turn, offset);
    }
    if turns.is_empty() {
        snapshot = st;
    }
    let state = serde_json::to_value(&snapshot).unwrap_or(Value::Null);
    Ok(em.finish(consumed, state))
}

/// The key of the next turn: its ordinal (see the module docs).
fn turn_key(st: &mut ExportState) -> String {
    let ordinal = st.turns;
    st.turns += 1;
    format!("t{ordinal}")
}

fn meta(label: &str) -> Meta {
    Meta { label: label.to_owned(), ..Meta::default() }
}

/// Emits one turn.
fn read_turn(em: &mut Emitter<'_, '_>, st: &mut ExportState, lines: &[Line<'_>], turn: &markdown::Turn, base: u64) {
    let key = turn_key(st);
    let line_no = st.line + turn.line as u64 + 1;
    em.begin(line_no, base + lines[turn.line].offset as u64, key.clone());
    if let Some(bad) = &turn.header.bad_ts {
        em.diag(DiagnosticKind::BadTimestamp, format!("unreadable time {bad:?} in a turn header"));
    }
    if let Some(ts) = turn.header.ts {
        st.clock.last = Some(ts.0);
    }
    let ts = st.clock.last.map_or(Ts(st.start), Ts);
    let s = st.key();
    if !st.started {
        st.started = true;
        start_session(em, st, &s, Ts(st.start));
    }
    match turn.header.role {
        Some(Role::User) => {
            let text = markdown::user_text(lines, turn.body.clone());
            let (context, prompt) = split_context(&text);
            for (k, part) in context.into_iter().enumerate() {
                let o = if part.contains(INJECTION_OPEN) { origin::ENGRAM } else { origin::META };
                user_msg(em, &s, ts, &format!("msg.in.context{k}"), part.to_owned(), o);
            }
            if !prompt.trim().is_empty() {
                user_msg(em, &s, ts, "msg.in", prompt.to_owned(), user_origin(prompt));
            }
        }
        _ => {
            agent_header(em, st, &s, ts, &turn.header);
            let early = st.markdown_version.is_none();
            for (b, block) in markdown::blocks(lines, turn.body.clone(), early).into_iter().enumerate() {
                agent_block(em, &s, ts, &key, b, block);
            }
        }
    }
    em.end();
}

fn start_session(em: &mut Emitter<'_, '_>, st: &ExportState, s: &SessionKey, ts: Ts) {
    let body = SessionStarted {
        harness: st.harness.clone(),
        harness_session_id: st.session.clone(),
        project: st.cwd.as_deref().and_then(project_of),
        cwd: st.cwd.clone(),
        source_path: Some(em.ctx().path.to_owned()),
        ..SessionStarted::default()
    };
    em.emit(s, ts, "session.started", Body::SessionStarted(body));
    let mut m = meta("export");
    m.fields.insert("exporter".to_owned(), Value::from("specstory"));
    if let Some(label) = &st.tool_label {
        m.fields.insert("tool".to_owned(), Value::from(label.clone()));
    }
    if let Some(v) = &st.markdown_version {
        m.fields.insert("markdown_version".to_owned(), Value::from(v.clone()));
    }
    if !st.other_ids.is_empty() {
        m.fields.insert("other_sessions".to_owned(), Value::from(st.other_ids.clone()));
    }
    em.emit(s, ts, "meta.export", Body::Meta(m));
    if let Some(title) = &st.title {
        let mut m = meta("title");
        m.text = Some(title.clone());
        em.emit(s, ts, "meta.title", Body::Meta(m));
    }
}

/// `meta` `model` and `mode` when an agent header changes them.
fn agent_header(em: &mut Emitter<'_, '_>, st: &mut ExportState, s: &SessionKey, ts: Ts, h: &RoleHeader) {
    if let Some(model) = h.model.as_deref().filter(|m| *m != "default" && !m.starts_with('<'))
        && st.model.as_deref() != Some(model)
    {
        st.model = Some(model.to_owned());
        let mut m = meta("model");
        m.model = Some(model.to_owned());
        em.emit(s, ts, "meta.model", Body::Meta(m));
    }
    if let Some(mode) = h.mode.as_deref()
        && st.mode.as_deref() != Some(mode)
    {
        st.mode = Some(mode.to_owned());
        let mut m = meta("mode");
        m.text = Some(mode.to_owned());
        em.emit(s, ts, "meta.mode", Body::Meta(m));
    }
}

fn user_msg(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, sub: &str, mut text: String, o: &str) {
    redact::cap_message(&mut text);
    em.emit(s, ts, sub, Body::MsgIn(MsgIn { text, origin: o.to_owned(), ..MsgIn::default() }));
}

/// The origin of a user turn's text.
fn user_origin(text: &str) -> &'static str {
    if text.contains(INJECTION_OPEN) {
        return origin::ENGRAM;
    }
    let t = text.trim_start();
    if t.starts_with("<command-name>")
        || t.starts_with("<command-message>")
        || t.starts_with("<local-command-")
        || t.starts_with("<system-reminder>")
        || t.starts_with("[Request interrupted")
        || t.starts_with("Caveat: The messages below")
    {
        return origin::META;
    }
    origin::USER
}

fn agent_block(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, key: &str, b: usize, block: Block) {
    let out = |em: &mut Emitter<'_, '_>, mut text: String, part: &str| {
        if text.trim().is_empty() {
            return;
        }
        redact::cap_message(&mut text);
        em.emit(
            s,
            ts,
            &format!("b{b}:msg.out"),
            Body::MsgOut(MsgOut { text, part: part.to_owned(), ..MsgOut::default() }),
        );
    };
    match block {
        Block::Text(text) => out(em, text, ""),
        Block::Reasoning(text) => out(em, text, "reasoning"),
        Block::Tool(raw) => tool(em, s, ts, &format!("{key}.b{b}"), b, &raw),
        Block::Marker { kind, text } => {
            let unknown = kind != "cancelled";
            em.opaque(s, ts, &format!("b{b}:opaque"), &kind, serde_json::json!({ "text": text }), unknown);
        }
        Block::Unclosed(what) => {
            em.diag(
                DiagnosticKind::BadRecord,
                format!("a <{what}> block is not closed; what follows was read as text"),
            );
        }
    }
}

/// The events of one tool use.
fn tool(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, call_id: &str, b: usize, raw: &markdown::RawTool) {
    let t = tools::interpret(raw);
    let mut args = Value::Object(t.args.clone());
    let excluded = em.ctx().privacy.args_touch(&args).or_else(|| {
        let mut files = t.edits.iter().map(|e| e.file.as_str()).chain(t.read.as_ref().map(|r| r.0.as_str()));
        files.find_map(|f| em.ctx().privacy.excluded(f).map(str::to_owned))
    });
    if excluded.is_some() {
        redact::strip_contents(&mut args);
    }
    redact::cap_value(&mut args);
    em.emit(
        s,
        ts,
        &format!("b{b}:tool.call"),
        Body::ToolCall(ToolCall { tool: t.name.clone(), call_id: call_id.to_owned(), args }),
    );
    if t.output.is_some() || t.exit.is_some() || t.is_error {
        let mut stdout = t.output.clone().unwrap_or_default();
        if excluded.is_some() {
            stdout = EXCLUDED_MARKER.to_owned();
        }
        let truncated = redact::cap_tool_output(&mut stdout);
        em.emit(
            s,
            ts,
            &format!("b{b}:tool.result"),
            Body::ToolResult(ToolResult {
                tool: t.name.clone(),
                call_id: call_id.to_owned(),
                stdout,
                stderr: String::new(),
                exit: t.exit,
                is_error: t.is_error,
                truncated,
            }),
        );
    }
    if let Some((file, range)) = &t.read {
        em.emit(
            s,
            ts,
            &format!("b{b}:code.read"),
            Body::CodeRead(CodeRead { file: file.clone(), range: *range, ..CodeRead::default() }),
        );
    }
    let mut j = 0;
    for fe in &t.edits {
        for edit in patch::code_edits(fe, Some(call_id), excluded.is_none()) {
            em.emit(s, ts, &format!("b{b}:code.edit:{j}"), Body::CodeEdit(edit));
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Privacy;

    #[test]
    fn locations() {
        assert_eq!(
            location("/home/u/app/.specstory/history/2025-01-01_10-00-x.md"),
            (Some("/home/u/app".to_owned()), ".specstory/history/2025-01-01_10-00-x.md".to_owned())
        );
        assert_eq!(location("/data/raw/x.md"), (Some("/data/raw".to_owned()), "x.md".to_owned()));
        assert_eq!(location("x.md"), (None, "x.md".to_owned()));
    }

    #[test]
    fn labels() {
        for (label, h) in [
            ("Cursor IDE", "cursor"),
            ("cursor", "cursor"),
            ("vscode", "copilot"),
            ("VS Code Copilot IDE", "copilot"),
            ("Claude Code", "claude"),
            ("Codex CLI", "codex"),
            ("Gemini CLI", "gemini"),
        ] {
            assert_eq!(harness_of_label(label), Some(h), "{label}");
        }
        assert_eq!(harness_of_label("Droid CLI"), None);
    }

    #[test]
    fn a_path_derived_id_is_the_same_in_every_clone() {
        let privacy = Privacy::default();
        let a = ParseContext::new("/a/app/.specstory/history/2025-04-26_20-30-x.md", Ts(0), &privacy);
        let b = ParseContext::new("/b/clone/.specstory/history/2025-04-26_20-30-x.md", Ts(0), &privacy);
        let text = b"<!-- Generated by SpecStory -->\n\n# X (2025-04-26 16:30:00)\n\n_**User**_\n\nhi\n";
        let (sa, sb) = (initial_state(&a, text), initial_state(&b, text));
        assert_eq!(sa.session, sb.session);
        assert!(sa.session.starts_with("md-") && sa.session.len() == 23);
        assert_eq!(sa.harness, "cursor");
        assert_eq!(Ts(sa.start), Ts::parse("2025-04-26T20:30:00Z").expect("ts"));
        assert_eq!(sa.cwd.as_deref(), Some("/a/app"));
    }
}
