//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`,
//! `agent-<id>.jsonl`, `<session>/subagents/agent-<id>.jsonl`).
//!
//! One event per content block. Mapping:
//!
//! - `user` text → `msg.in` (origin `engram` when it holds
//!   [`INJECTION_OPEN`], `compact_summary` for `isCompactSummary`,
//!   `subagent_prompt` for the first prompt of a subagent, `meta` for
//!   `isMeta`, slash-command markup, interruptions and non-human `origin.kind`,
//!   else `user`); `tool_result` → `tool.result` joined to its `tool_use` (and
//!   to the record's `toolUseResult`), plus `code.read` for a successful
//!   `Read` (range from `toolUseResult.file{startLine,numLines}`, else the
//!   call's `offset`/`limit`) and one `code.edit` per `structuredPatch` hunk
//!   of a successful `Edit`/`MultiEdit`/`Write` (a `Write` without hunks is
//!   one whole-file edit).
//! - `assistant` `text` → `msg.out`, `thinking` → `msg.out` part
//!   `reasoning`, `tool_use` → `tool.call`; a model change → `meta` `model`.
//! - `system` `compact_boundary` → `meta` `compaction`; other `system` →
//!   `meta` `system`; `summary`/`ai-title`/`custom-title` → `meta` `title`;
//!   `last-prompt`, `agent-name`, `permission-mode`, `mode`, `pr-link`,
//!   `worktree-state` → `meta` of that name.
//! - `attachment` `hook_additional_context` → `msg.in` origin `hook` (or
//!   `engram`), `nested_memory` → `msg.in` origin `system`, `queued_command`
//!   → `msg.in` (origin `user`); other attachments, `progress`,
//!   `queue-operation`, `file-history-snapshot` → `opaque`.
//! - The drift shapes `tool_use`/`tool_result` as top-level records →
//!   `tool.call`/`tool.result`. Anything else → `opaque`, counted as unknown.
//!
//! Sessions: the file's session id is the first `sessionId` in its head (or
//! the file name). Each inline sidechain (records with `isSidechain:true`,
//! rooted at a record with `parentUuid:null`) is its own session
//! `<session>/sidechain-<root uuid>` with `parent_link = "sidechain"`, linked
//! to the parent's `Task` call by matching the prompt text (a `meta`
//! `subagent` event carries `parent_call_id`). A subagent file
//! `agent-<id>.jsonl` is one session `<parent>/agent-<id>` with
//! `parent_link = "subagent"`; its parent comes from the
//! `<parent>/subagents/` directory or the records' `sessionId`.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::base::ids::SessionKey;
use shared::base::time::Ts;
use shared::storage::event::{
    Body, CodeRead, INJECTION_OPEN, Meta, MsgIn, MsgOut, SessionStarted, ToolCall, ToolResult, harness, origin,
};

use crate::adapter::{
    Clock, DiagnosticKind, Emitter, JsonlAdapter, ParseContext, complete_lines, content_hash, project_of, str_of,
    text_of,
};
use crate::patch::{self, FileEdit};
use crate::redact::{self, EXCLUDED_MARKER};

/// Most recent sidechain record uuids remembered for chaining.
const MAX_SIDE_UUIDS: usize = 64;
/// Tool calls awaiting their result.
const MAX_PENDING_CALLS: usize = 128;
/// Task prompts awaiting their sidechain.
const MAX_TASKS: usize = 32;

/// Claude Code adapter.
#[derive(Debug)]
pub struct Claude;

/// A tool call waiting for its result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// `tool_use` id (synthesised as `<uuid>#<block>` when missing).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Session key the call belongs to.
    pub session: String,
    /// File named by the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `offset` argument (Read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// `limit` argument (Read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// The exclusion pattern the call's paths matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
    /// The id was synthesised (the call had none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
}

/// Resume state of a Claude transcript.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClaudeState {
    /// Harness session id of the file (`<parent>/agent-<id>` for subagent files).
    pub file_session: String,
    /// Parent session id, for a subagent file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_parent: Option<String>,
    /// Main sessions already started (harness ids).
    #[serde(default)]
    pub started: Vec<String>,
    /// Last `sessionId` seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// First cwd in the file's head (for a session whose first record has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_cwd: Option<String>,
    /// Last cwd emitted, per file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Last model emitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Timestamps.
    #[serde(default)]
    pub clock: Clock,
    /// Recent sidechain records: (uuid, sidechain session key).
    #[serde(default)]
    pub side: VecDeque<(String, String)>,
    /// Calls awaiting results.
    #[serde(default)]
    pub calls: VecDeque<PendingCall>,
    /// Task prompts: (hash of the prompt, call id).
    #[serde(default)]
    pub tasks: VecDeque<(String, String)>,
}

fn key(id: &str) -> SessionKey {
    SessionKey::new(harness::CLAUDE, id)
}

/// The first `sessionId` and the first `cwd` among the complete lines of `head`.
fn head_fields(head: &[u8]) -> (Option<String>, Option<String>) {
    let (lines, _) = complete_lines(head);
    let (mut sid, mut cwd) = (None, None);
    for (_, line) in lines {
        if sid.is_some() && cwd.is_some() {
            break;
        }
        if !line.windows(11).any(|w| w == b"\"sessionId\"") {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let get = |k: &str| str_of(&v, k).filter(|s| !s.is_empty()).map(str::to_owned);
        sid = sid.or_else(|| get("sessionId"));
        cwd = cwd.or_else(|| get("cwd"));
    }
    (sid, cwd)
}

/// The parent session id from a `<parent>/subagents/agent-<id>.jsonl` path
/// (also `<parent>/subagents/workflows/<wf>/agent-<id>.jsonl`).
pub fn parent_from_path(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split(['/', '\\']).collect();
    let idx = parts.iter().rposition(|p| *p == "subagents")?;
    idx.checked_sub(1).map(|i| parts[i].to_owned()).filter(|p| !p.is_empty())
}

impl JsonlAdapter for Claude {
    const HARNESS: &'static str = harness::CLAUDE;
    type State = ClaudeState;

    fn initial_state(ctx: &ParseContext<'_>, head: &[u8]) -> ClaudeState {
        let stem = ctx.file_stem().to_owned();
        let (head_sid, head_cwd) = head_fields(head);
        if stem.starts_with("agent-") {
            let parent = parent_from_path(ctx.path).or_else(|| head_sid.filter(|s| *s != stem));
            let file_session = match &parent {
                Some(p) => format!("{p}/{stem}"),
                None => stem,
            };
            return ClaudeState { file_session, subagent_parent: parent, head_cwd, ..ClaudeState::default() };
        }
        ClaudeState { file_session: head_sid.unwrap_or(stem), head_cwd, ..ClaudeState::default() }
    }

    fn record(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, rec: Value) {
        let ts = st.clock.at(em, &rec, "timestamp");
        let rtype = str_of(&rec, "type").unwrap_or("").to_owned();
        let session = session_for(em, st, &rec, ts);
        match rtype.as_str() {
            "user" => user(em, st, &rec, &session, ts),
            "assistant" => assistant(em, st, &rec, &session, ts),
            "system" => system(em, &rec, &session, ts),
            "summary" => title(em, &session, ts, &rec, "summary"),
            "ai-title" => title(em, &session, ts, &rec, "aiTitle"),
            "custom-title" => title(em, &session, ts, &rec, "customTitle"),
            "agent-name" => simple_meta(em, &session, ts, "agent_name", str_of(&rec, "agentName"), None),
            "last-prompt" => simple_meta(em, &session, ts, "last_prompt", None, Some(("leafUuid", &rec))),
            "permission-mode" => simple_meta(em, &session, ts, "permission_mode", str_of(&rec, "permissionMode"), None),
            "mode" => simple_meta(em, &session, ts, "mode", str_of(&rec, "mode"), None),
            "pr-link" => {
                let mut m = meta("pr_link");
                for k in ["prNumber", "prUrl", "prRepository"] {
                    if let Some(v) = rec.get(k) {
                        m.fields.insert(k.to_owned(), v.clone());
                    }
                }
                em.emit(&session, ts, "meta", Body::Meta(m));
            }
            "worktree-state" => {
                let mut m = meta("worktree");
                if let Some(v) = rec.get("worktreeSession") {
                    let mut v = v.clone();
                    redact::cap_value(&mut v);
                    m.fields.insert("worktreeSession".to_owned(), v);
                }
                em.emit(&session, ts, "meta", Body::Meta(m));
            }
            "attachment" => attachment(em, &rec, &session, ts),
            "progress" | "queue-operation" | "file-history-snapshot" => {
                em.opaque(&session, ts, "opaque", &rtype, rec, false);
            }
            "tool_use" => drift_tool_use(em, st, &rec, &session, ts),
            "tool_result" => drift_tool_result(em, st, &rec, &session, ts),
            _ => {
                let t = if rtype.is_empty() { "<no type>" } else { &rtype };
                em.opaque(&session, ts, "opaque", t, rec, true);
            }
        }
    }
}

fn meta(label: &str) -> Meta {
    Meta { label: label.to_owned(), ..Meta::default() }
}

fn simple_meta(
    em: &mut Emitter<'_, '_>,
    s: &SessionKey,
    ts: Ts,
    label: &str,
    text: Option<&str>,
    field: Option<(&str, &Value)>,
) {
    let mut m = meta(label);
    m.text = text.map(str::to_owned);
    if let Some((k, rec)) = field
        && let Some(v) = rec.get(k)
    {
        m.fields.insert(k.to_owned(), v.clone());
    }
    em.emit(s, ts, "meta", Body::Meta(m));
}

fn title(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, rec: &Value, field: &str) {
    let mut m = meta("title");
    m.text = str_of(rec, field).map(str::to_owned);
    m.fields.insert("source".to_owned(), Value::from(field));
    if let Some(v) = rec.get("leafUuid") {
        m.fields.insert("leafUuid".to_owned(), v.clone());
    }
    em.emit(s, ts, "meta", Body::Meta(m));
}

/// Which session a record belongs to; starts it when new.
fn session_for(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, rec: &Value, ts: Ts) -> SessionKey {
    let cwd = str_of(rec, "cwd").filter(|c| !c.is_empty() && !c.starts_with('['));
    if let Some(parent) = st.subagent_parent.clone().or_else(|| {
        // A subagent file without a known parent still is one session.
        (st.file_session.starts_with("agent-")).then(String::new)
    }) {
        let s = key(&st.file_session);
        if st.started.is_empty() {
            st.started.push(st.file_session.clone());
            let parent = (!parent.is_empty()).then(|| key(&parent));
            if parent.is_none() {
                em.diag(DiagnosticKind::Unjoined, "subagent transcript without a parent session");
            }
            let head_cwd = st.head_cwd.clone();
            start(em, &s, ts, rec, parent, Some("subagent"), head_cwd.as_deref());
            let mut m = meta("subagent");
            m.fields.insert("agent_id".to_owned(), Value::from(st.file_session.rsplit('/').next().unwrap_or("")));
            if let Some(side) = em.ctx().sidecar.cloned() {
                m.fields.insert("meta".to_owned(), side);
            }
            em.emit(&s, ts, "meta.subagent", Body::Meta(m));
            st.cwd = cwd.map(str::to_owned).or(head_cwd);
        }
        note_cwd(em, st, &s, ts, cwd);
        return s;
    }
    let sid = str_of(rec, "sessionId")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .or_else(|| st.current.clone())
        .unwrap_or_else(|| st.file_session.clone());
    st.current = Some(sid.clone());
    let uuid = str_of(rec, "uuid");
    if rec.get("isSidechain").and_then(Value::as_bool) == Some(true)
        && let Some(uuid) = uuid
    {
        let parent_uuid = str_of(rec, "parentUuid");
        let known = parent_uuid.and_then(|p| st.side.iter().rev().find(|(u, _)| u == p).map(|(_, k)| k.clone()));
        let side_key = match known {
            Some(k) => k,
            None => {
                let id = format!("{sid}/sidechain-{uuid}");
                let s = key(&id);
                if parent_uuid.is_some() {
                    em.diag(
                        DiagnosticKind::Unjoined,
                        "sidechain record whose parent is unknown starts a new sidechain",
                    );
                }
                start(em, &s, ts, rec, Some(key(&sid)), Some("sidechain"), None);
                let prompt = first_text(rec);
                let hash = content_hash(&prompt);
                let mut m = meta("subagent");
                if let Some(pos) = st.tasks.iter().position(|(h, _)| *h == hash)
                    && let Some((_, call)) = st.tasks.remove(pos)
                {
                    m.fields.insert("parent_call_id".to_owned(), Value::from(call));
                }
                em.emit(&s, ts, "meta.subagent", Body::Meta(m));
                id
            }
        };
        st.side.push_back((uuid.to_owned(), side_key.clone()));
        while st.side.len() > MAX_SIDE_UUIDS {
            st.side.pop_front();
        }
        return key(&side_key);
    }
    let s = key(&sid);
    if !st.started.contains(&sid) {
        st.started.push(sid.clone());
        let fallback = if sid == st.file_session { st.head_cwd.clone() } else { None };
        start(em, &s, ts, rec, None, None, fallback.as_deref());
        st.cwd = cwd.map(str::to_owned).or(fallback);
    }
    note_cwd(em, st, &s, ts, cwd);
    s
}

fn note_cwd(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, s: &SessionKey, ts: Ts, cwd: Option<&str>) {
    if let Some(c) = cwd
        && st.cwd.as_deref() != Some(c)
    {
        st.cwd = Some(c.to_owned());
        let mut m = meta("cwd");
        m.text = Some(c.to_owned());
        em.emit(s, ts, "meta.cwd", Body::Meta(m));
    }
}

fn start(
    em: &mut Emitter<'_, '_>,
    s: &SessionKey,
    ts: Ts,
    rec: &Value,
    parent: Option<SessionKey>,
    link: Option<&str>,
    fallback_cwd: Option<&str>,
) {
    let cwd = str_of(rec, "cwd").filter(|c| !c.is_empty()).or(fallback_cwd).map(str::to_owned);
    let body = SessionStarted {
        harness: harness::CLAUDE.to_owned(),
        harness_session_id: s.harness_id().to_owned(),
        project: cwd.as_deref().and_then(project_of),
        cwd,
        git_branch: str_of(rec, "gitBranch").filter(|b| !b.is_empty()).map(str::to_owned),
        parent,
        parent_link: link.map(str::to_owned),
        model: None,
        harness_version: str_of(rec, "version").map(str::to_owned),
        source_path: Some(em.ctx().path.to_owned()),
        ..Default::default()
    };
    em.emit(s, ts, "session.started", Body::SessionStarted(body));
}

/// The first text of a record's message (string content or first text block).
fn first_text(rec: &Value) -> String {
    match rec.pointer("/message/content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .find(|b| str_of(b, "type") == Some("text"))
            .and_then(|b| str_of(b, "text"))
            .unwrap_or("")
            .to_owned(),
        _ => String::new(),
    }
}

/// The origin of user text in `rec`.
fn user_origin(st: &ClaudeState, rec: &Value, text: &str, session: &SessionKey) -> &'static str {
    if text.contains(INJECTION_OPEN) {
        return origin::ENGRAM;
    }
    if rec.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
        return origin::COMPACT_SUMMARY;
    }
    let root = rec.get("parentUuid").is_none_or(Value::is_null);
    let in_subagent = session.as_str().contains("/sidechain-")
        || st.subagent_parent.is_some()
        || st.file_session.starts_with("agent-");
    if in_subagent && root {
        return origin::SUBAGENT_PROMPT;
    }
    if rec.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return origin::META;
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
    if let Some(kind) = rec.pointer("/origin/kind").and_then(Value::as_str)
        && !matches!(kind, "human" | "cli" | "user" | "sdk")
    {
        return origin::META;
    }
    origin::USER
}

fn msg_in(
    em: &mut Emitter<'_, '_>,
    s: &SessionKey,
    ts: Ts,
    sub: &str,
    mut text: String,
    origin: &str,
    uuid: Option<&str>,
) {
    redact::cap_message(&mut text);
    em.emit(
        s,
        ts,
        sub,
        Body::MsgIn(MsgIn { text, origin: origin.to_owned(), uuid: uuid.map(str::to_owned), ..Default::default() }),
    );
}

fn user(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, rec: &Value, s: &SessionKey, ts: Ts) {
    let uuid = str_of(rec, "uuid");
    let Some(content) = rec.pointer("/message/content") else {
        em.diag(DiagnosticKind::BadRecord, "user record without message.content");
        return;
    };
    match content {
        Value::String(text) => {
            let o = user_origin(st, rec, text, s);
            msg_in(em, s, ts, "b0:msg.in", text.clone(), o, uuid);
        }
        Value::Array(blocks) => {
            let results = blocks.iter().filter(|b| str_of(b, "type") == Some("tool_result")).count();
            for (i, b) in blocks.iter().enumerate() {
                match str_of(b, "type").unwrap_or("") {
                    "text" => {
                        let text = str_of(b, "text").unwrap_or("").to_owned();
                        let o = user_origin(st, rec, &text, s);
                        msg_in(em, s, ts, &format!("b{i}:msg.in"), text, o, uuid);
                    }
                    "tool_result" => {
                        let tur = if results == 1 { rec.get("toolUseResult") } else { None };
                        let id = str_of(b, "tool_use_id").or_else(|| str_of(rec, "sourceToolUseID")).map(str::to_owned);
                        tool_result(em, st, s, ts, i, id.as_deref(), b, tur);
                    }
                    "image" => {
                        let media = b.pointer("/source/media_type").cloned().unwrap_or(Value::Null);
                        em.opaque(
                            s,
                            ts,
                            &format!("b{i}:opaque"),
                            "image",
                            serde_json::json!({"media_type": media}),
                            false,
                        );
                    }
                    other => {
                        let t = format!("user_block:{other}");
                        em.opaque(s, ts, &format!("b{i}:opaque"), &t, b.clone(), true);
                    }
                }
            }
            if blocks.is_empty() {
                em.diag(DiagnosticKind::BadRecord, "user record with empty content");
            }
        }
        other => em.diag(DiagnosticKind::BadRecord, format!("user content is a {}", crate::adapter::type_name(other))),
    }
}

fn assistant(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, rec: &Value, s: &SessionKey, ts: Ts) {
    let uuid = str_of(rec, "uuid");
    if let Some(model) = rec.pointer("/message/model").and_then(Value::as_str)
        && !model.starts_with('<')
        && st.model.as_deref() != Some(model)
    {
        st.model = Some(model.to_owned());
        let mut m = meta("model");
        m.model = Some(model.to_owned());
        em.emit(s, ts, "meta.model", Body::Meta(m));
    }
    let Some(content) = rec.pointer("/message/content") else {
        em.diag(DiagnosticKind::BadRecord, "assistant record without message.content");
        return;
    };
    let out = |em: &mut Emitter<'_, '_>, sub: &str, mut text: String, part: &str| {
        redact::cap_message(&mut text);
        em.emit(
            s,
            ts,
            sub,
            Body::MsgOut(MsgOut { text, part: part.to_owned(), uuid: uuid.map(str::to_owned), ..Default::default() }),
        );
    };
    match content {
        Value::String(text) => out(em, "b0:msg.out", text.clone(), ""),
        Value::Array(blocks) => {
            if blocks.is_empty() {
                em.diag(DiagnosticKind::BadRecord, "assistant record with empty content");
            }
            for (i, b) in blocks.iter().enumerate() {
                match str_of(b, "type").unwrap_or("") {
                    "text" => out(em, &format!("b{i}:msg.out"), str_of(b, "text").unwrap_or("").to_owned(), ""),
                    "thinking" => {
                        out(em, &format!("b{i}:msg.out"), str_of(b, "thinking").unwrap_or("").to_owned(), "reasoning")
                    }
                    "redacted_thinking" => {
                        em.opaque(
                            s,
                            ts,
                            &format!("b{i}:opaque"),
                            "redacted_thinking",
                            Value::Object(Default::default()),
                            false,
                        );
                    }
                    "tool_use" => {
                        let id = match str_of(b, "id") {
                            Some(id) if !id.is_empty() => (id.to_owned(), false),
                            _ => (format!("{}#{i}", uuid.unwrap_or("?")), true),
                        };
                        let name = str_of(b, "name").unwrap_or("").to_owned();
                        let input = b.get("input").cloned().unwrap_or(Value::Null);
                        tool_call(em, st, s, ts, &format!("b{i}"), id, name, input);
                    }
                    other => {
                        let t = format!("assistant_block:{other}");
                        em.opaque(s, ts, &format!("b{i}:opaque"), &t, b.clone(), true);
                    }
                }
            }
        }
        other => {
            em.diag(DiagnosticKind::BadRecord, format!("assistant content is a {}", crate::adapter::type_name(other)))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn tool_call(
    em: &mut Emitter<'_, '_>,
    st: &mut ClaudeState,
    s: &SessionKey,
    ts: Ts,
    sub: &str,
    (id, synthetic): (String, bool),
    name: String,
    mut input: Value,
) {
    let excluded = em.ctx().privacy.args_touch(&input);
    let file =
        ["file_path", "path", "notebook_path", "filePath"].iter().find_map(|k| str_of(&input, k)).map(str::to_owned);
    let num = |k: &str| input.get(k).and_then(Value::as_u64);
    let pending = PendingCall {
        id: id.clone(),
        name: name.clone(),
        session: s.as_str().to_owned(),
        file,
        offset: num("offset"),
        limit: num("limit"),
        excluded: excluded.clone(),
        synthetic,
    };
    if matches!(name.as_str(), "Task" | "Agent")
        && let Some(prompt) = str_of(&input, "prompt")
    {
        st.tasks.push_back((content_hash(prompt), id.clone()));
        while st.tasks.len() > MAX_TASKS {
            st.tasks.pop_front();
        }
    }
    st.calls.push_back(pending);
    while st.calls.len() > MAX_PENDING_CALLS {
        st.calls.pop_front();
    }
    if excluded.is_some() {
        redact::strip_contents(&mut input);
    }
    redact::cap_value(&mut input);
    em.emit(s, ts, &format!("{sub}:tool.call"), Body::ToolCall(ToolCall { tool: name, call_id: id, args: input }));
}

/// Finds and removes the pending call for a result.
fn take_call(st: &mut ClaudeState, id: Option<&str>, session: &SessionKey) -> Option<PendingCall> {
    if let Some(id) = id
        && let Some(pos) = st.calls.iter().position(|c| c.id == id)
    {
        return st.calls.remove(pos);
    }
    // No usable id: the oldest call of this session whose id was synthesised.
    let pos = st.calls.iter().position(|c| c.synthetic && c.session == session.as_str())?;
    st.calls.remove(pos)
}

fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(items)) => {
            let mut out = String::new();
            for it in items {
                let t = match str_of(it, "type") {
                    Some("image") => "[image]",
                    _ => str_of(it, "text").unwrap_or(""),
                };
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(t);
            }
            out
        }
        Some(v) => text_of(v),
        None => String::new(),
    }
}

#[allow(clippy::too_many_arguments)]
fn tool_result(
    em: &mut Emitter<'_, '_>,
    st: &mut ClaudeState,
    s: &SessionKey,
    ts: Ts,
    i: usize,
    id: Option<&str>,
    block: &Value,
    tur: Option<&Value>,
) {
    let call = take_call(st, id, s);
    if call.is_none() {
        em.diag(DiagnosticKind::Unjoined, format!("tool_result {} has no matching tool_use", id.unwrap_or("<no id>")));
    }
    let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
    let mut stdout = result_text(block.get("content"));
    let excluded = call.as_ref().and_then(|c| c.excluded.clone());
    if excluded.is_some() {
        stdout = EXCLUDED_MARKER.to_owned();
    }
    let truncated = redact::cap_tool_output(&mut stdout);
    let exit = tur.and_then(|t| t.get("exitCode")).and_then(Value::as_i64).and_then(|x| i32::try_from(x).ok());
    let call_id = call.as_ref().map(|c| c.id.clone()).or_else(|| id.map(str::to_owned)).unwrap_or_default();
    em.emit(
        s,
        ts,
        &format!("b{i}:tool.result"),
        Body::ToolResult(ToolResult {
            tool: call.as_ref().map(|c| c.name.clone()).unwrap_or_default(),
            call_id: call_id.clone(),
            stdout,
            stderr: String::new(),
            exit,
            is_error,
            truncated,
        }),
    );
    let Some(call) = call else { return };
    if is_error || matches!(tur, Some(Value::String(_))) {
        return;
    }
    code_events(em, s, ts, i, &call, tur, excluded.is_none());
}

/// `code.read`/`code.edit` for a successful file tool.
fn code_events(
    em: &mut Emitter<'_, '_>,
    s: &SessionKey,
    ts: Ts,
    i: usize,
    call: &PendingCall,
    tur: Option<&Value>,
    hashes: bool,
) {
    let tur = tur.filter(|t| t.is_object());
    match call.name.as_str() {
        "Read" | "read" | "NotebookRead" => {
            let file = tur
                .and_then(|t| t.pointer("/file/filePath"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| call.file.clone());
            let Some(file) = file else { return };
            let start = tur.and_then(|t| t.pointer("/file/startLine")).and_then(Value::as_u64);
            let n = tur.and_then(|t| t.pointer("/file/numLines")).and_then(Value::as_u64);
            let range = match (start, n) {
                (Some(a), Some(n)) if n > 0 => Some([a.max(1), a.max(1) + n - 1]),
                (Some(_), Some(_)) => None,
                _ => match (call.offset, call.limit) {
                    (o, Some(l)) if l > 0 => {
                        let a = o.unwrap_or(1).max(1);
                        Some([a, a + l - 1])
                    }
                    _ => None,
                },
            };
            let range =
                range.map(|[a, b]| [u32::try_from(a).unwrap_or(u32::MAX), u32::try_from(b).unwrap_or(u32::MAX)]);
            em.emit(s, ts, &format!("b{i}:code.read"), Body::CodeRead(CodeRead { file, range, ..Default::default() }));
        }
        "Edit" | "MultiEdit" | "Write" | "edit" | "write" | "multi_edit" => {
            let file = tur.and_then(|t| str_of(t, "filePath")).map(str::to_owned).or_else(|| call.file.clone());
            let Some(file) = file else { return };
            let hunks =
                tur.and_then(|t| t.get("structuredPatch")).map(patch::structured_patch_hunks).unwrap_or_default();
            let created = tur.and_then(|t| str_of(t, "type")) == Some("create");
            let mut fe =
                FileEdit { file, op: if created { "add" } else { "update" }, move_to: None, hunks, no_content: false };
            if fe.hunks.is_empty() {
                let after = tur.and_then(|t| str_of(t, "content"));
                let before = tur.and_then(|t| str_of(t, "originalFile"));
                if after.is_some() {
                    fe.hunks.push(patch::whole_file(if created { None } else { before }, after));
                }
            }
            for (j, edit) in patch::code_edits(&fe, Some(&call.id), hashes).into_iter().enumerate() {
                em.emit(s, ts, &format!("b{i}:code.edit:{j}"), Body::CodeEdit(edit));
            }
        }
        _ => {}
    }
}

fn system(em: &mut Emitter<'_, '_>, rec: &Value, s: &SessionKey, ts: Ts) {
    let subtype = str_of(rec, "subtype").unwrap_or("");
    let mut m = meta(if subtype == "compact_boundary" { "compaction" } else { "system" });
    m.text = rec.get("content").and_then(Value::as_str).map(str::to_owned);
    m.fields.insert("subtype".to_owned(), Value::from(subtype));
    if subtype == "compact_boundary" {
        let md = rec.get("compactMetadata");
        for (k, v) in [
            ("trigger", md.and_then(|m| m.get("trigger")).or_else(|| rec.get("trigger"))),
            ("preTokens", md.and_then(|m| m.get("preTokens"))),
            ("logicalParentUuid", rec.get("logicalParentUuid")),
        ] {
            if let Some(v) = v {
                m.fields.insert(k.to_owned(), v.clone());
            }
        }
    } else if let Some(level) = rec.get("level") {
        m.fields.insert("level".to_owned(), level.clone());
    }
    em.emit(s, ts, "meta", Body::Meta(m));
}

fn attachment(em: &mut Emitter<'_, '_>, rec: &Value, s: &SessionKey, ts: Ts) {
    let att = rec.get("attachment").cloned().unwrap_or(Value::Null);
    let atype = str_of(&att, "type").unwrap_or("").to_owned();
    let uuid = str_of(rec, "uuid");
    match atype.as_str() {
        "hook_additional_context" => {
            let text = att.get("content").map(text_of).unwrap_or_default();
            let o = if text.contains(INJECTION_OPEN) { origin::ENGRAM } else { origin::HOOK };
            msg_in(em, s, ts, "a:msg.in", text, o, uuid);
        }
        "nested_memory" => {
            let text = match att.get("content") {
                Some(c @ Value::Object(_)) => c.get("content").map(text_of).unwrap_or_default(),
                Some(c) => text_of(c),
                None => String::new(),
            };
            let o = if text.contains(INJECTION_OPEN) { origin::ENGRAM } else { origin::SYSTEM };
            msg_in(em, s, ts, "a:msg.in", text, o, uuid);
        }
        "queued_command" => {
            let text = att.get("prompt").map(text_of).unwrap_or_default();
            let human = att
                .pointer("/origin/kind")
                .and_then(Value::as_str)
                .is_none_or(|k| matches!(k, "human" | "cli" | "user"));
            let o = if text.contains(INJECTION_OPEN) {
                origin::ENGRAM
            } else if human {
                origin::USER
            } else {
                origin::META
            };
            msg_in(em, s, ts, "a:msg.in", text, o, uuid);
        }
        _ => {
            let t = format!("attachment:{atype}");
            em.opaque(s, ts, "opaque", &t, att, false);
        }
    }
}

fn drift_tool_use(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, rec: &Value, s: &SessionKey, ts: Ts) {
    let id = str_of(rec, "id")
        .or_else(|| str_of(rec, "uuid"))
        .map_or_else(|| ("?".to_owned(), true), |i| (i.to_owned(), true));
    let name = str_of(rec, "name").unwrap_or("").to_owned();
    let input = rec.get("input").cloned().unwrap_or(Value::Null);
    tool_call(em, st, s, ts, "r", id, name, input);
}

fn drift_tool_result(em: &mut Emitter<'_, '_>, st: &mut ClaudeState, rec: &Value, s: &SessionKey, ts: Ts) {
    let block = serde_json::json!({
        "content": rec.get("output").or_else(|| rec.get("content")).cloned().unwrap_or(Value::Null),
        "is_error": rec.get("is_error").cloned().unwrap_or(Value::Bool(false)),
    });
    let id = str_of(rec, "tool_use_id").map(str::to_owned);
    tool_result(em, st, s, ts, 0, id.as_deref(), &block, None);
}
