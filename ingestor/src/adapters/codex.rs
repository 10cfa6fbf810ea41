//! Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`):
//! `{timestamp, type, payload}` lines.
//!
//! `response_item` is the history: `message` → `msg.in`/`msg.out` (user
//! text wrapped in `<environment_context>`/`<turn_aborted>` is origin `meta`,
//! `<user_instructions>`/AGENTS.md and developer/system roles are origin
//! `system`), `reasoning` with summary text → `msg.out` part `reasoning`,
//! `function_call`/`custom_tool_call`/`local_shell_call`/`web_search_call`/
//! `tool_search_call`/`image_generation_call` → `tool.call`, their outputs →
//! `tool.result` joined on `call_id` (exit code from the output's metadata or
//! its `Exit code: N`/`Process exited with code N` text). `event_msg` gives
//! turns (`meta` `turn`), tokens (`meta` `tokens`), titles, errors, and edits:
//! `patch_apply_end` → one `code.edit` per file and hunk. An `apply_patch`
//! call in any of its three historical shapes (shell argv, function_call
//! `{input}`, `custom_tool_call` raw input, plus a heredoc inside a shell
//! script) is parsed into per-file edits that are emitted when its output
//! reports success, unless a `patch_apply_end` for the same call already gave
//! them. `exec_command_end` read commands → `code.read`. The `event_msg`
//! mirrors of history items (`user_message`, `agent_message`,
//! `agent_reasoning`) become a small `meta` `mirror` marker, so nothing is
//! counted twice. `compacted` → `meta` `compaction` (+ `msg.in` origin
//! `compact_summary` with its message).
//!
//! The session id comes from `session_meta` (or the uuid at the end of the
//! file name); a `session_meta` naming another id starts a new session.
//! Subagents link to `source.subagent.thread_spawn.parent_thread_id`
//! (`parent_link = "thread_spawn"`), forks to `forked_from_id` (`"fork"`).
//! Lines without the envelope (very old or drifted builds) are read as bare
//! response items or `{role, message|content}` messages.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::base::ids::SessionKey;
use shared::base::time::Ts;
use shared::storage::event::{
    Body, CodeEdit, CodeRead, INJECTION_OPEN, Meta, MsgIn, MsgOut, SessionStarted, ToolCall, ToolResult, harness,
    origin,
};

use crate::adapter::{
    Clock, DiagnosticKind, Emitter, JsonlAdapter, ParseContext, complete_lines, project_of, str_of, text_of,
};
use crate::patch::{self, FileEdit};
use crate::redact::{self, EXCLUDED_MARKER};

const MAX_PENDING: usize = 128;
const MAX_PATCHED: usize = 64;

/// Codex CLI adapter.
#[derive(Debug)]
pub struct Codex;

/// A call awaiting its output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CodexCall {
    /// `call_id`.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Edits parsed from an `apply_patch` call, emitted once its output says it applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<CodeEdit>,
    /// Exclusion pattern matched by the call's paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
}

/// Resume state of a Codex rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CodexState {
    /// Current session id.
    pub session: String,
    /// Whether `session.started` was emitted for it.
    #[serde(default)]
    pub started: bool,
    /// Current working directory (`turn_context.cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Current turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// Current model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Timestamps.
    #[serde(default)]
    pub clock: Clock,
    /// Calls awaiting output.
    #[serde(default)]
    pub calls: VecDeque<CodexCall>,
    /// Calls whose edits `patch_apply_end` already gave.
    #[serde(default)]
    pub patched: VecDeque<String>,
}

fn key(id: &str) -> SessionKey {
    SessionKey::new(harness::CODEX, id)
}

/// The uuid at the end of a rollout file name, if any.
pub fn uuid_from_name(stem: &str) -> Option<&str> {
    if stem.len() < 36 {
        return None;
    }
    let tail = stem.get(stem.len() - 36..)?;
    let ok =
        tail.char_indices().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() });
    ok.then_some(tail)
}

impl JsonlAdapter for Codex {
    const HARNESS: &'static str = harness::CODEX;
    type State = CodexState;

    fn initial_state(ctx: &ParseContext<'_>, head: &[u8]) -> CodexState {
        let (lines, _) = complete_lines(head);
        let from_meta = lines.into_iter().take(8).find_map(|(_, line)| {
            let v: Value = serde_json::from_slice(line).ok()?;
            (str_of(&v, "type") == Some("session_meta"))
                .then(|| v.pointer("/payload/id").and_then(Value::as_str).map(str::to_owned))
                .flatten()
        });
        let stem = ctx.file_stem();
        CodexState {
            session: from_meta.or_else(|| uuid_from_name(stem).map(str::to_owned)).unwrap_or_else(|| stem.to_owned()),
            ..CodexState::default()
        }
    }

    fn record(em: &mut Emitter<'_, '_>, st: &mut CodexState, rec: Value) {
        let ts = if rec.get("timestamp").is_some() {
            st.clock.at(em, &rec, "timestamp")
        } else {
            st.clock.at(em, &rec, "created_at")
        };
        let rtype = str_of(&rec, "type").unwrap_or("").to_owned();
        let Some(payload) = rec.get("payload") else {
            let s = ensure_started(em, st, ts);
            legacy(em, st, &s, ts, &rec);
            return;
        };
        if rtype == "session_meta" {
            session_meta(em, st, ts, payload);
            return;
        }
        let s = ensure_started(em, st, ts);
        match rtype.as_str() {
            "response_item" => response_item(em, st, &s, ts, payload),
            "event_msg" => event_msg(em, st, &s, ts, payload),
            "turn_context" => turn_context(em, st, &s, ts, payload),
            "compacted" => {
                let text = str_of(payload, "message").unwrap_or("").to_owned();
                let mut m = meta("compaction");
                let n = payload.get("replacement_history").and_then(Value::as_array).map_or(0, Vec::len);
                m.fields.insert("replacement_items".to_owned(), Value::from(n));
                em.emit(&s, ts, "meta", Body::Meta(m));
                if !text.is_empty() {
                    em.emit(
                        &s,
                        ts,
                        "msg.in",
                        Body::MsgIn(MsgIn {
                            text,
                            origin: origin::COMPACT_SUMMARY.to_owned(),
                            uuid: None,
                            ..Default::default()
                        }),
                    );
                }
            }
            "world_state" => em.opaque(&s, ts, "opaque", "world_state", payload.clone(), false),
            other => {
                let t = if other.is_empty() { "<no type>" } else { other };
                em.opaque(&s, ts, "opaque", t, rec, true);
            }
        }
    }
}

fn meta(label: &str) -> Meta {
    Meta { label: label.to_owned(), ..Meta::default() }
}

fn ensure_started(em: &mut Emitter<'_, '_>, st: &mut CodexState, ts: Ts) -> SessionKey {
    let s = key(&st.session);
    if !st.started {
        st.started = true;
        em.emit(
            &s,
            ts,
            "session.started",
            Body::SessionStarted(SessionStarted {
                harness: harness::CODEX.to_owned(),
                harness_session_id: st.session.clone(),
                source_path: Some(em.ctx().path.to_owned()),
                ..SessionStarted::default()
            }),
        );
    }
    s
}

fn session_meta(em: &mut Emitter<'_, '_>, st: &mut CodexState, ts: Ts, p: &Value) {
    let id = str_of(p, "id").filter(|i| !i.is_empty()).unwrap_or(&st.session).to_owned();
    if st.started && id == st.session {
        // A resumed rollout repeats its header.
        let mut m = meta("session_meta");
        for k in ["originator", "cli_version", "source"] {
            if let Some(v) = p.get(k) {
                m.fields.insert(k.to_owned(), v.clone());
            }
        }
        em.emit(&key(&id), ts, "meta", Body::Meta(m));
        return;
    }
    st.session = id.clone();
    st.started = true;
    st.calls.clear();
    let cwd = str_of(p, "cwd").filter(|c| !c.is_empty()).map(str::to_owned);
    st.cwd.clone_from(&cwd);
    let spawn_parent = p.pointer("/source/subagent/thread_spawn/parent_thread_id").and_then(Value::as_str);
    let subagent_kind = p.pointer("/source/subagent").and_then(Value::as_object).and_then(|o| o.keys().next().cloned());
    let (mut parent, mut link) = if let Some(pid) = spawn_parent {
        (Some(pid.to_owned()), Some("thread_spawn".to_owned()))
    } else if let Some(f) = str_of(p, "forked_from_id") {
        (Some(f.to_owned()), Some("fork".to_owned()))
    } else if let Some(kind) = subagent_kind {
        (str_of(p, "parent_thread_id").map(str::to_owned), Some(format!("subagent:{kind}")))
    } else {
        (str_of(p, "parent_thread_id").map(str::to_owned), None)
    };
    if parent.as_deref() == Some(id.as_str()) {
        em.diag(DiagnosticKind::Unjoined, "session_meta names itself as its parent; link dropped");
        parent = None;
    }
    if parent.is_none() && link.as_deref().is_some_and(|l| l.starts_with("subagent")) {
        em.diag(DiagnosticKind::Unjoined, "subagent session_meta without a parent thread id");
    }
    if parent.is_some() && link.is_none() {
        link = Some("subagent".to_owned());
    }
    let s = key(&id);
    em.emit(
        &s,
        ts,
        "session.started",
        Body::SessionStarted(SessionStarted {
            harness: harness::CODEX.to_owned(),
            harness_session_id: id.clone(),
            project: cwd.as_deref().and_then(project_of),
            cwd,
            git_branch: p.pointer("/git/branch").and_then(Value::as_str).map(str::to_owned),
            parent: parent.map(|p| key(&p)),
            parent_link: link,
            model: None,
            harness_version: str_of(p, "cli_version").map(str::to_owned),
            source_path: Some(em.ctx().path.to_owned()),
            ..Default::default()
        }),
    );
    if let Some(head) = p.pointer("/git/commit_hash").and_then(Value::as_str) {
        let mut m = meta("repo");
        m.repo_head = Some(head.to_owned());
        if let Some(url) = p.pointer("/git/repository_url") {
            m.fields.insert("repository_url".to_owned(), url.clone());
        }
        em.emit(&s, ts, "meta.repo", Body::Meta(m));
    }
}

fn turn_context(em: &mut Emitter<'_, '_>, st: &mut CodexState, s: &SessionKey, ts: Ts, p: &Value) {
    let mut m = meta("turn");
    if let Some(t) = str_of(p, "turn_id") {
        st.turn = Some(t.to_owned());
        m.fields.insert("turn_id".to_owned(), Value::from(t));
    }
    if let Some(c) = str_of(p, "cwd") {
        st.cwd = Some(c.to_owned());
        m.fields.insert("cwd".to_owned(), Value::from(c));
    }
    if let Some(model) = str_of(p, "model") {
        m.model = Some(model.to_owned());
        st.model = Some(model.to_owned());
    }
    for k in ["approval_policy", "effort"] {
        if let Some(v) = p.get(k) {
            m.fields.insert(k.to_owned(), v.clone());
        }
    }
    em.emit(s, ts, "meta", Body::Meta(m));
}

/// Origin of user-role text in a rollout.
fn user_text_origin(text: &str) -> &'static str {
    let t = text.trim_start();
    if text.contains(INJECTION_OPEN) {
        origin::ENGRAM
    } else if t.starts_with("<environment_context>") || t.starts_with("<turn_aborted>") {
        origin::META
    } else if t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md")
        || t.starts_with("<permissions instructions>")
    {
        origin::SYSTEM
    } else {
        origin::USER
    }
}

fn message_text(content: Option<&Value>) -> String {
    let Some(Value::Array(parts)) = content else {
        return content.map(text_of).unwrap_or_default();
    };
    let mut out = String::new();
    for p in parts {
        let t = match str_of(p, "type") {
            Some("input_image") => "[image]",
            _ => str_of(p, "text").unwrap_or(""),
        };
        if t.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(t);
    }
    out
}

fn response_item(em: &mut Emitter<'_, '_>, st: &mut CodexState, s: &SessionKey, ts: Ts, p: &Value) {
    let ptype = str_of(p, "type").unwrap_or("");
    match ptype {
        "message" => {
            let role = str_of(p, "role").unwrap_or("");
            let mut text = message_text(p.get("content"));
            redact::cap_message(&mut text);
            let uuid = str_of(p, "id").map(str::to_owned);
            if role == "assistant" {
                em.emit(
                    s,
                    ts,
                    "msg.out",
                    Body::MsgOut(MsgOut { text, part: String::new(), uuid, ..Default::default() }),
                );
            } else {
                let o = if role == "user" { user_text_origin(&text) } else { origin::SYSTEM };
                em.emit(s, ts, "msg.in", Body::MsgIn(MsgIn { text, origin: o.to_owned(), uuid, ..Default::default() }));
            }
        }
        "reasoning" => {
            let text = p
                .get("summary")
                .and_then(Value::as_array)
                .map(|items| items.iter().filter_map(|i| str_of(i, "text")).collect::<Vec<_>>().join("\n"))
                .unwrap_or_default();
            if text.is_empty() {
                em.opaque(s, ts, "opaque", "reasoning", serde_json::json!({"encrypted": true}), false);
            } else {
                em.emit(
                    s,
                    ts,
                    "msg.out",
                    Body::MsgOut(MsgOut {
                        text,
                        part: "reasoning".to_owned(),
                        uuid: str_of(p, "id").map(str::to_owned),
                        ..Default::default()
                    }),
                );
            }
        }
        "function_call" => {
            let name = str_of(p, "name").unwrap_or("").to_owned();
            let args = match p.get("arguments") {
                Some(Value::String(a)) => serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.clone())),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            call(em, st, s, ts, str_of(p, "call_id").unwrap_or(""), name, args);
        }
        "custom_tool_call" => {
            let name = str_of(p, "name").unwrap_or("").to_owned();
            let input = p.get("input").cloned().unwrap_or(Value::Null);
            call(em, st, s, ts, str_of(p, "call_id").unwrap_or(""), name, input);
        }
        "local_shell_call" => {
            let action = p.get("action").cloned().unwrap_or(Value::Null);
            call(em, st, s, ts, str_of(p, "call_id").unwrap_or(""), "local_shell".to_owned(), action);
        }
        "web_search_call" | "tool_search_call" | "image_generation_call" => {
            let name = ptype.trim_end_matches("_call").to_owned();
            let args = match ptype {
                "web_search_call" => p.get("action").cloned(),
                "tool_search_call" => p.get("arguments").cloned(),
                _ => p.get("revised_prompt").map(|r| serde_json::json!({"revised_prompt": r})),
            }
            .unwrap_or(Value::Null);
            let id = str_of(p, "call_id").or_else(|| str_of(p, "id")).unwrap_or("");
            call(em, st, s, ts, id, name, args);
        }
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
            let output = if ptype == "tool_search_output" {
                p.get("tools").map(|t| Value::String(t.to_string()))
            } else {
                p.get("output").cloned()
            };
            output_of(em, st, s, ts, str_of(p, "call_id").unwrap_or(""), output.as_ref());
        }
        "agent_message" => {
            let mut text = message_text(p.get("content"));
            redact::cap_message(&mut text);
            em.emit(
                s,
                ts,
                "msg.in",
                Body::MsgIn(MsgIn {
                    text,
                    origin: origin::META.to_owned(),
                    uuid: str_of(p, "id").map(str::to_owned),
                    ..Default::default()
                }),
            );
        }
        "ghost_snapshot" | "compaction" | "compaction_summary" => {
            let t = format!("response_item:{ptype}");
            em.opaque(s, ts, "opaque", &t, p.clone(), false);
        }
        other => {
            let t = format!("response_item:{other}");
            em.opaque(s, ts, "opaque", &t, p.clone(), true);
        }
    }
}

/// The `apply_patch` text inside a call's arguments, in any historical shape.
fn patch_text(args: &Value) -> Option<String> {
    let has = |t: &str| t.contains("*** Begin Patch");
    match args {
        Value::String(s) if has(s) => return Some(s.clone()),
        Value::Object(_) => {
            if let Some(i) = str_of(args, "input").filter(|t| has(t)) {
                return Some(i.to_owned());
            }
            if let Some(c) = str_of(args, "cmd").filter(|t| has(t)) {
                return Some(c.to_owned());
            }
            if let Some(Value::Array(argv)) = args.get("command") {
                return argv.iter().filter_map(Value::as_str).find(|a| has(a)).map(str::to_owned);
            }
            if let Some(c) = str_of(args, "command").filter(|t| has(t)) {
                return Some(c.to_owned());
            }
        }
        _ => {}
    }
    None
}

fn call(
    em: &mut Emitter<'_, '_>,
    st: &mut CodexState,
    s: &SessionKey,
    ts: Ts,
    id: &str,
    name: String,
    mut args: Value,
) {
    let excluded = match &args {
        Value::String(t) => em.ctx().privacy.command_touches(t).map(str::to_owned),
        other => em.ctx().privacy.args_touch(other),
    };
    let files: Vec<FileEdit> = patch_text(&args).map(|t| patch::parse_apply_patch(&t)).unwrap_or_default();
    let mut edits = Vec::new();
    let mut patch_excluded = None;
    for f in &files {
        let ex = em.ctx().privacy.excluded(&f.file).map(str::to_owned);
        edits.extend(patch::code_edits(f, Some(id), ex.is_none()));
        patch_excluded = patch_excluded.or(ex);
    }
    let excluded = excluded.or(patch_excluded);
    if excluded.is_some() {
        match &mut args {
            Value::String(t) => *t = EXCLUDED_MARKER.to_owned(),
            other => redact::strip_contents(other),
        }
    }
    redact::cap_value(&mut args);
    st.calls.push_back(CodexCall { id: id.to_owned(), name: name.clone(), edits, excluded });
    while st.calls.len() > MAX_PENDING {
        st.calls.pop_front();
    }
    em.emit(s, ts, "tool.call", Body::ToolCall(ToolCall { tool: name, call_id: id.to_owned(), args }));
}

/// Exit code in a tool output text (`Exit code: N`, `Process exited with code N`).
pub fn exit_code_in(text: &str) -> Option<i32> {
    for marker in ["Exit code: ", "Process exited with code "] {
        if let Some(pos) = text.find(marker) {
            let digits: String =
                text[pos + marker.len()..].chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

fn output_of(em: &mut Emitter<'_, '_>, st: &mut CodexState, s: &SessionKey, ts: Ts, id: &str, output: Option<&Value>) {
    let pos = st.calls.iter().position(|c| c.id == id);
    let call = pos.and_then(|p| st.calls.remove(p));
    if call.is_none() {
        em.diag(DiagnosticKind::Unjoined, format!("output for unknown call_id {id}"));
    }
    let (mut stdout, mut exit) = match output {
        Some(Value::String(t)) => {
            // Newer builds wrap the text as JSON {"output", "metadata": {"exit_code"}}.
            match serde_json::from_str::<Value>(t) {
                Ok(v @ Value::Object(_)) if v.get("output").is_some() => (
                    text_of(v.get("output").unwrap_or(&Value::Null)),
                    v.pointer("/metadata/exit_code").and_then(Value::as_i64).and_then(|x| i32::try_from(x).ok()),
                ),
                _ => (t.clone(), None),
            }
        }
        Some(Value::Array(_)) => (message_text(output), None),
        Some(v @ Value::Object(_)) => (str_of(v, "text").map_or_else(|| v.to_string(), str::to_owned), None),
        Some(other) => (other.to_string(), None),
        None => (String::new(), None),
    };
    if exit.is_none() {
        exit = exit_code_in(&stdout);
    }
    let is_error = exit.is_some_and(|e| e != 0);
    if call.as_ref().is_some_and(|c| c.excluded.is_some()) {
        stdout = EXCLUDED_MARKER.to_owned();
    }
    let truncated = redact::cap_tool_output(&mut stdout);
    let succeeded = !is_error && (exit == Some(0) || stdout.contains("Success") || stdout.contains("Done!"));
    em.emit(
        s,
        ts,
        "tool.result",
        Body::ToolResult(ToolResult {
            tool: call.as_ref().map(|c| c.name.clone()).unwrap_or_default(),
            call_id: id.to_owned(),
            stdout,
            stderr: String::new(),
            exit,
            is_error,
            truncated,
        }),
    );
    if let Some(call) = call
        && succeeded
        && !call.edits.is_empty()
        && !st.patched.iter().any(|p| *p == call.id)
    {
        for (j, e) in call.edits.into_iter().enumerate() {
            em.emit(s, ts, &format!("code.edit:{j}"), Body::CodeEdit(e));
        }
    }
}

fn mirror(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, ptype: &str) {
    let mut m = meta("mirror");
    m.fields.insert("type".to_owned(), Value::from(ptype));
    em.emit(s, ts, "meta", Body::Meta(m));
}

fn event_msg(em: &mut Emitter<'_, '_>, st: &mut CodexState, s: &SessionKey, ts: Ts, p: &Value) {
    let ptype = str_of(p, "type").unwrap_or("");
    match ptype {
        "user_message" | "agent_message" | "agent_reasoning" | "agent_reasoning_raw_content" => {
            mirror(em, s, ts, ptype)
        }
        "token_count" => {
            let mut m = meta("tokens");
            if let Some(info) = p.get("info").filter(|i| !i.is_null()) {
                for k in ["total_token_usage", "last_token_usage", "model_context_window"] {
                    if let Some(v) = info.get(k) {
                        m.fields.insert(k.to_owned(), v.clone());
                    }
                }
            }
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "task_started" | "task_complete" | "turn_aborted" => {
            let mut m = meta("turn");
            m.fields.insert("phase".to_owned(), Value::from(ptype.trim_start_matches("task_")));
            for k in ["turn_id", "duration_ms", "reason"] {
                if let Some(v) = p.get(k) {
                    m.fields.insert(k.to_owned(), v.clone());
                }
            }
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "thread_name_updated" => {
            let mut m = meta("title");
            m.text = str_of(p, "thread_name").map(str::to_owned);
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "error" => {
            let mut m = meta("error");
            m.text = str_of(p, "message").map(str::to_owned);
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "context_compacted" | "thread_rolled_back" => {
            let mut m = meta(ptype);
            if let Some(n) = p.get("num_turns") {
                m.fields.insert("num_turns".to_owned(), n.clone());
            }
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "patch_apply_end" => patch_apply_end(em, st, s, ts, p),
        "exec_command_end" => {
            let mut m = meta("exec_end");
            for k in ["call_id", "exit_code", "status"] {
                if let Some(v) = p.get(k) {
                    m.fields.insert(k.to_owned(), v.clone());
                }
            }
            em.emit(s, ts, "meta", Body::Meta(m));
            let reads = p.get("parsed_cmd").and_then(Value::as_array).into_iter().flatten();
            for (j, c) in reads.filter(|c| str_of(c, "type") == Some("read")).enumerate() {
                if let Some(file) = str_of(c, "path").or_else(|| str_of(c, "name")) {
                    em.emit(
                        s,
                        ts,
                        &format!("code.read:{j}"),
                        Body::CodeRead(CodeRead { file: file.to_owned(), range: None, ..Default::default() }),
                    );
                }
            }
        }
        "item_completed" if p.pointer("/item/type").and_then(Value::as_str) == Some("Plan") => {
            let mut m = meta("plan");
            m.text = p.pointer("/item/text").and_then(Value::as_str).map(str::to_owned);
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "item_completed"
        | "mcp_tool_call_end"
        | "web_search_end"
        | "view_image_tool_call"
        | "image_generation_end"
        | "dynamic_tool_call_request"
        | "dynamic_tool_call_response"
        | "collab_agent_spawn_end"
        | "collab_agent_interaction_end"
        | "collab_waiting_end"
        | "collab_close_end"
        | "guardian_assessment"
        | "entered_review_mode"
        | "exited_review_mode"
        | "undo_completed"
        | "thread_goal_updated"
        | "thread_settings_applied"
        | "sub_agent_activity" => {
            let t = format!("event_msg:{ptype}");
            em.opaque(s, ts, "opaque", &t, p.clone(), false);
        }
        other => {
            let t = format!("event_msg:{other}");
            em.opaque(s, ts, "opaque", &t, p.clone(), true);
        }
    }
}

fn patch_apply_end(em: &mut Emitter<'_, '_>, st: &mut CodexState, s: &SessionKey, ts: Ts, p: &Value) {
    let call_id = str_of(p, "call_id").unwrap_or("").to_owned();
    let ok = p.get("success").and_then(Value::as_bool).unwrap_or(true)
        && str_of(p, "status").is_none_or(|x| x == "completed");
    let changes = p.get("changes").and_then(Value::as_object);
    if !ok || changes.is_none_or(serde_json::Map::is_empty) {
        let mut m = meta("patch_apply_end");
        m.fields.insert("call_id".to_owned(), Value::from(call_id));
        m.fields.insert("success".to_owned(), Value::from(ok));
        em.emit(s, ts, "meta", Body::Meta(m));
        return;
    }
    let mut j = 0;
    for (path, change) in changes.into_iter().flatten() {
        // Current shape {type, content|unified_diff, move_path}; older {add:{content}} etc.
        let (kind, body) = match str_of(change, "type") {
            Some(t) => (t.to_owned(), change.clone()),
            None => match change.as_object().and_then(|o| o.iter().next()) {
                Some((k, v)) => (k.clone(), v.clone()),
                None => (String::from("update"), Value::Null),
            },
        };
        let hashes = em.ctx().privacy.excluded(path).is_none();
        let mut fe = FileEdit {
            file: path.clone(),
            op: match kind.as_str() {
                "add" => "add",
                "delete" => "delete",
                _ => "update",
            },
            move_to: str_of(&body, "move_path").map(str::to_owned),
            hunks: Vec::new(),
            no_content: false,
        };
        match fe.op {
            "add" => fe.hunks.push(patch::whole_file(None, str_of(&body, "content"))),
            "delete" => match str_of(&body, "content") {
                Some(c) => fe.hunks.push(patch::whole_file(Some(c), None)),
                None => fe.no_content = true,
            },
            _ => fe.hunks = patch::parse_unified_diff(str_of(&body, "unified_diff").unwrap_or("")),
        }
        for e in patch::code_edits(&fe, Some(&call_id), hashes) {
            em.emit(s, ts, &format!("code.edit:{j}"), Body::CodeEdit(e));
            j += 1;
        }
    }
    st.patched.push_back(call_id);
    while st.patched.len() > MAX_PATCHED {
        st.patched.pop_front();
    }
}

/// Lines without the `{timestamp,type,payload}` envelope.
fn legacy(em: &mut Emitter<'_, '_>, st: &mut CodexState, s: &SessionKey, ts: Ts, rec: &Value) {
    if let Some(role) = str_of(rec, "role") {
        let mut text =
            rec.get("content").or_else(|| rec.get("message")).map(|c| message_text(Some(c))).unwrap_or_default();
        redact::cap_message(&mut text);
        if role == "assistant" {
            em.emit(s, ts, "msg.out", Body::MsgOut(MsgOut { text, ..MsgOut::default() }));
        } else {
            let o = if role == "user" { user_text_origin(&text) } else { origin::SYSTEM };
            em.emit(
                s,
                ts,
                "msg.in",
                Body::MsgIn(MsgIn { text, origin: o.to_owned(), uuid: None, ..Default::default() }),
            );
        }
        return;
    }
    match str_of(rec, "type").unwrap_or("") {
        "function_call" => {
            let name = str_of(rec, "name")
                .or_else(|| rec.pointer("/function/name").and_then(Value::as_str))
                .unwrap_or("")
                .to_owned();
            let args = match rec.get("arguments") {
                Some(Value::String(a)) => serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.clone())),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            let id = str_of(rec, "call_id").unwrap_or(&name).to_owned();
            call(em, st, s, ts, &id, name, args);
        }
        "function_call_output" | "function_result" => {
            let id = str_of(rec, "call_id").or_else(|| str_of(rec, "name")).unwrap_or("").to_owned();
            let out = rec.get("output").or_else(|| rec.get("result")).cloned();
            output_of(em, st, s, ts, &id, out.as_ref());
        }
        "message" | "reasoning" | "custom_tool_call" | "custom_tool_call_output" | "local_shell_call" => {
            response_item(em, st, s, ts, rec);
        }
        other => {
            let t = format!("legacy:{}", if other.is_empty() { "<no type>" } else { other });
            em.opaque(s, ts, "opaque", &t, rec.clone(), true);
        }
    }
}
