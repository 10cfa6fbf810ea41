//! Gemini CLI chats: the append-only JSONL of current builds
//! (`~/.gemini/tmp/<hash>/chats/session-<ts>-<id8>.jsonl`, subagents in
//! `chats/<parent session id>/<session id>.jsonl`) and the legacy single JSON
//! `session-*.json` (`ConversationRecord`).
//!
//! Record kinds are told apart by shape: the header `{sessionId, projectHash,
//! startTime, kind?}` → `session.started`; `{"$set": {…}}` → `meta` `set`;
//! `{"$rewindTo": id}` → `meta` `rewind` (consumers drop the messages from
//! that id on); message records `{id, type, content, toolCalls?, thoughts?}`:
//! `user` → `msg.in`, `gemini` → `msg.out` (+ one `msg.out` part `reasoning`
//! per thought, `tool.call` + `tool.result` per tool call, `code.read` for
//! `read_file`/`read_many_files`, `code.edit` for `write_file`/`replace`),
//! `info`/`error`/`warning` → `meta` of that name.
//!
//! Event ids of a message derive from its message id, not its line: a message
//! re-appended with the same id yields events with the same ids, and within
//! one parse call only the last write of each id is kept (last write wins);
//! across calls, consumers keep the latest event of an id.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::base::ids::SessionKey;
use shared::base::time::Ts;
use shared::storage::event::{
    Body, CodeRead, INJECTION_OPEN, Meta, MsgIn, MsgOut, SessionStarted, ToolCall, ToolResult, harness, origin,
};

use crate::adapter::{
    Clock, DiagnosticKind, Emitter, JsonlAdapter, ParseContext, ParseOutput, complete_lines, project_of, str_of,
    text_of,
};
use crate::patch::{self, FileEdit};
use crate::redact::{self, EXCLUDED_MARKER};

/// Gemini CLI adapter (JSONL sessions).
#[derive(Debug)]
pub struct Gemini;

/// Resume state of a Gemini JSONL chat.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeminiState {
    /// Session id.
    pub session: String,
    /// Parent session id (subagent chats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `session.started` emitted.
    #[serde(default)]
    pub started: bool,
    /// Last model emitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Timestamps.
    #[serde(default)]
    pub clock: Clock,
}

fn key(id: &str) -> SessionKey {
    SessionKey::new(harness::GEMINI, id)
}

/// Parent session id of a subagent chat `chats/<parent>/<id>.jsonl`.
fn parent_from_path(path: &str) -> Option<String> {
    let mut parts = path.rsplit(['/', '\\']);
    parts.next()?;
    let dir = parts.next()?;
    let above = parts.next()?;
    (above == "chats" && dir != "chats").then(|| dir.to_owned())
}

impl JsonlAdapter for Gemini {
    const HARNESS: &'static str = harness::GEMINI;
    type State = GeminiState;

    fn initial_state(ctx: &ParseContext<'_>, head: &[u8]) -> GeminiState {
        let (lines, _) = complete_lines(head);
        let sid = lines.into_iter().take(4).find_map(|(_, l)| {
            let v: Value = serde_json::from_slice(l).ok()?;
            str_of(&v, "sessionId").map(str::to_owned)
        });
        GeminiState {
            session: sid.unwrap_or_else(|| ctx.file_stem().to_owned()),
            parent: parent_from_path(ctx.path),
            ..GeminiState::default()
        }
    }

    fn record(em: &mut Emitter<'_, '_>, st: &mut GeminiState, rec: Value) {
        let ts = st.clock.at(em, &rec, "timestamp");
        if rec.get("sessionId").is_some() && rec.get("type").is_none() && rec.get("id").is_none() {
            header(em, st, &rec);
            return;
        }
        let s = ensure_started(em, st, ts, None);
        if let Some(set) = rec.get("$set") {
            let mut m = meta("set");
            if let Value::Object(o) = set {
                for (k, v) in o {
                    m.fields.insert(k.clone(), v.clone());
                }
            }
            em.emit(&s, ts, "meta", Body::Meta(m));
            return;
        }
        if let Some(to) = rec.get("$rewindTo") {
            let mut m = meta("rewind");
            m.fields.insert("to".to_owned(), to.clone());
            em.emit(&s, ts, "meta", Body::Meta(m));
            return;
        }
        message(em, st, &s, ts, &rec);
    }

    fn end_of_chunk(em: &mut Emitter<'_, '_>, _st: &mut GeminiState) -> u64 {
        last_write_wins(&mut em.events)
    }
}

/// Keeps only the last event of each id, in the position of that last event.
fn last_write_wins(events: &mut Vec<shared::storage::event::Event>) -> u64 {
    let mut seen = HashSet::new();
    let before = events.len();
    let mut kept: Vec<_> = events.drain(..).rev().filter(|e| seen.insert(e.id.clone())).collect();
    kept.reverse();
    *events = kept;
    (before - events.len()) as u64
}

fn meta(label: &str) -> Meta {
    Meta { label: label.to_owned(), ..Meta::default() }
}

fn header(em: &mut Emitter<'_, '_>, st: &mut GeminiState, rec: &Value) {
    if let Some(sid) = str_of(rec, "sessionId") {
        st.session = sid.to_owned();
    }
    let ts = rec.get("startTime").and_then(crate::adapter::parse_ts_value).unwrap_or_else(|| st.clock.now(em));
    if st.started {
        let mut m = meta("header");
        m.fields.insert("sessionId".to_owned(), Value::from(st.session.clone()));
        em.emit(&key(&st.session), ts, "meta", Body::Meta(m));
        return;
    }
    ensure_started(em, st, ts, Some(rec));
}

fn ensure_started(em: &mut Emitter<'_, '_>, st: &mut GeminiState, ts: Ts, header: Option<&Value>) -> SessionKey {
    let s = key(&st.session);
    if st.started {
        return s;
    }
    st.started = true;
    let cwd = header
        .and_then(|h| h.get("directories"))
        .and_then(Value::as_array)
        .and_then(|d| d.first())
        .and_then(Value::as_str)
        .map(str::to_owned);
    let subagent = header.and_then(|h| str_of(h, "kind")) == Some("subagent");
    let parent = st.parent.clone();
    if subagent && parent.is_none() {
        em.diag(DiagnosticKind::Unjoined, "subagent chat outside a chats/<parent>/ directory");
    }
    em.emit(
        &s,
        ts,
        "session.started",
        Body::SessionStarted(SessionStarted {
            harness: harness::GEMINI.to_owned(),
            harness_session_id: st.session.clone(),
            project: cwd.as_deref().and_then(project_of),
            cwd,
            parent: parent.as_deref().map(key),
            parent_link: parent.as_ref().map(|_| "subagent".to_owned()),
            source_path: Some(em.ctx().path.to_owned()),
            ..SessionStarted::default()
        }),
    );
    if let Some(hash) = header.and_then(|h| str_of(h, "projectHash")) {
        let mut m = meta("project_hash");
        m.text = Some(hash.to_owned());
        em.emit(&s, ts, "meta.project_hash", Body::Meta(m));
    }
    s
}

/// One message record (JSONL line or legacy `messages[]` item).
fn message(em: &mut Emitter<'_, '_>, st: &mut GeminiState, s: &SessionKey, ts: Ts, rec: &Value) {
    let Some(id) = str_of(rec, "id").map(str::to_owned) else {
        em.opaque(s, ts, "opaque", "record", rec.clone(), true);
        return;
    };
    // Ids of a message derive from its id: a re-append replaces it.
    em.rekey(format!("msg:{id}"));
    let mtype = str_of(rec, "type").unwrap_or("");
    let mut text = rec.get("content").map(parts_text).unwrap_or_default();
    redact::cap_message(&mut text);
    match mtype {
        "user" => {
            let o = if text.contains(INJECTION_OPEN) { origin::ENGRAM } else { origin::USER };
            em.emit(
                s,
                ts,
                "msg.in",
                Body::MsgIn(MsgIn { text, origin: o.to_owned(), uuid: Some(id), ..Default::default() }),
            );
        }
        "gemini" | "model" | "assistant" => {
            if let Some(model) = str_of(rec, "model")
                && st.model.as_deref() != Some(model)
            {
                st.model = Some(model.to_owned());
                let mut m = meta("model");
                m.model = Some(model.to_owned());
                em.emit(s, ts, "meta.model", Body::Meta(m));
            }
            for (k, th) in rec.get("thoughts").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let t = match (str_of(th, "subject"), str_of(th, "description")) {
                    (Some(a), Some(b)) => format!("{a}: {b}"),
                    (Some(a), None) | (None, Some(a)) => a.to_owned(),
                    (None, None) => text_of(th),
                };
                em.emit(
                    s,
                    ts,
                    &format!("thought:{k}"),
                    Body::MsgOut(MsgOut {
                        text: t,
                        part: "reasoning".to_owned(),
                        uuid: Some(id.clone()),
                        ..Default::default()
                    }),
                );
            }
            if !text.is_empty() || rec.get("toolCalls").is_none() {
                em.emit(
                    s,
                    ts,
                    "msg.out",
                    Body::MsgOut(MsgOut { text, part: String::new(), uuid: Some(id.clone()), ..Default::default() }),
                );
            }
            for (k, tc) in rec.get("toolCalls").and_then(Value::as_array).into_iter().flatten().enumerate() {
                tool_call(em, s, ts, k, tc);
            }
        }
        "info" | "error" | "warning" => {
            let mut m = meta(mtype);
            m.text = Some(text);
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        other => {
            let t = format!("message:{other}");
            em.opaque(s, ts, "opaque", &t, rec.clone(), true);
        }
    }
}

/// Text of a `PartListUnion`: a string, a part `{text}`, or a list of those.
fn parts_text(v: &Value) -> String {
    match v {
        Value::Object(_) => str_of(v, "text").unwrap_or("").to_owned(),
        other => text_of(other),
    }
}

fn tool_call(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, k: usize, tc: &Value) {
    let name = str_of(tc, "name").unwrap_or("").to_owned();
    let call_id = str_of(tc, "id").unwrap_or("").to_owned();
    let mut args = tc.get("args").cloned().unwrap_or(Value::Null);
    let tts = tc.get("timestamp").and_then(crate::adapter::parse_ts_value).unwrap_or(ts);
    let excluded = em.ctx().privacy.args_touch(&args);
    let file = ["file_path", "absolute_path", "path"].iter().find_map(|k| str_of(&args, k)).map(str::to_owned);
    let code: Option<Body> = file.as_ref().and_then(|file| match name.as_str() {
        "read_file" => {
            let offset = args.get("offset").and_then(Value::as_u64);
            let limit = args.get("limit").and_then(Value::as_u64);
            let range = limit.filter(|l| *l > 0).map(|l| {
                let a = offset.unwrap_or(0) + 1;
                [u32::try_from(a).unwrap_or(u32::MAX), u32::try_from(a + l - 1).unwrap_or(u32::MAX)]
            });
            Some(Body::CodeRead(CodeRead { file: file.clone(), range, ..Default::default() }))
        }
        "write_file" | "replace" | "edit" => {
            let hashes = excluded.is_none();
            let hunk = if name == "write_file" {
                patch::whole_file(None, str_of(&args, "content"))
            } else {
                patch::Hunk {
                    before: str_of(&args, "old_string").unwrap_or("").to_owned(),
                    after: str_of(&args, "new_string").unwrap_or("").to_owned(),
                    ..patch::Hunk::default()
                }
            };
            let fe = FileEdit { file: file.clone(), op: "update", move_to: None, hunks: vec![hunk], no_content: false };
            patch::code_edits(&fe, Some(&call_id), hashes).into_iter().next().map(Body::CodeEdit)
        }
        _ => None,
    });
    if excluded.is_some() {
        redact::strip_contents(&mut args);
    }
    redact::cap_value(&mut args);
    em.emit(
        s,
        tts,
        &format!("tc:{k}:call"),
        Body::ToolCall(ToolCall { tool: name.clone(), call_id: call_id.clone(), args }),
    );
    let status = str_of(tc, "status").unwrap_or("");
    let Some(result) = tc.get("result").filter(|r| !r.is_null()) else {
        return;
    };
    let mut stdout = result_text(result);
    if excluded.is_some() {
        stdout = EXCLUDED_MARKER.to_owned();
    }
    let truncated = redact::cap_tool_output(&mut stdout);
    let is_error = matches!(status, "error" | "cancelled");
    em.emit(
        s,
        tts,
        &format!("tc:{k}:result"),
        Body::ToolResult(ToolResult {
            tool: name,
            call_id,
            stdout,
            stderr: String::new(),
            exit: None,
            is_error,
            truncated,
        }),
    );
    if !is_error && let Some(body) = code {
        em.emit(s, tts, &format!("tc:{k}:code"), body);
    }
}

/// Text of a tool result: `functionResponse.response.{output|error}` parts.
fn result_text(v: &Value) -> String {
    let one = |p: &Value| -> String {
        if let Some(r) = p.pointer("/functionResponse/response") {
            return r
                .get("output")
                .or_else(|| r.get("error"))
                .or_else(|| r.get("llmContent"))
                .map_or_else(|| r.to_string(), text_of);
        }
        parts_text(p)
    };
    match v {
        Value::Array(items) => items.iter().map(one).collect::<Vec<_>>().join("\n"),
        other => one(other),
    }
}

/// Parses a legacy single-JSON chat (`ConversationRecord`). Record 0 of the
/// line reports is the header, record *i* the *i*-th message.
pub fn parse_legacy(ctx: &ParseContext<'_>, bytes: &[u8]) -> ParseOutput {
    let mut em = Emitter::new(ctx);
    let mut st = GeminiState {
        session: ctx.file_stem().to_owned(),
        parent: parent_from_path(ctx.path),
        ..GeminiState::default()
    };
    em.begin(0, 0, "header".to_owned());
    let doc: Value = match serde_json::from_slice(bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) | Err(_) => {
            em.diag(DiagnosticKind::MalformedLine, "legacy Gemini chat is not a JSON object");
            em.end();
            return em.finish(bytes.len() as u64, Value::Null);
        }
    };
    header(&mut em, &mut st, &doc);
    let s = key(&st.session);
    if let Some(summary) = str_of(&doc, "summary") {
        let mut m = meta("title");
        m.text = Some(summary.to_owned());
        let ts = st.clock.now(&em);
        em.emit(&s, ts, "meta.title", Body::Meta(m));
    }
    em.end();
    for (i, msg) in doc.get("messages").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let k = str_of(msg, "id").map_or_else(|| format!("index:{i}"), |id| format!("msg:{id}"));
        em.begin(i as u64 + 1, 0, k);
        let ts = st.clock.at(&mut em, msg, "timestamp");
        message(&mut em, &mut st, &s, ts, msg);
        em.end();
    }
    let superseded = last_write_wins(&mut em.events);
    let mut out = em.finish(bytes.len() as u64, Value::Null);
    out.superseded = superseded;
    out
}
