//! A Codex CLI session played through the installed hooks: the rollout
//! lines Codex appends (`../shared/docs/harness-formats.md`, "Codex CLI
//! rollout JSONL") and the hook calls at the moments Codex makes them, in
//! the hook dialect it shares with Claude Code (tools as Codex normalises
//! them: `exec_command` is `Bash` with `tool_input.command`, edits are
//! `apply_patch` with the patch in `tool_input.command`).
//!
//! | step | hooks | rollout |
//! |---|---|---|
//! | [`Session::start`] | `SessionStart` (`source`) | `session_meta` (a new file), a developer message per injected context |
//! | [`Session::prompt`] | `Stop` if a turn is open, `UserPromptSubmit` | `task_started`, `turn_context`, the user message (unless blocked) |
//! | [`Session::say`] | — | an assistant message, `agent_message` |
//! | [`Session::tool`] | `PreToolUse`, then `PostToolUse` | `function_call` `exec_command` / `custom_tool_call` `apply_patch`, its output, `patch_apply_end` |
//! | [`Session::compact`] | `Stop` if a turn is open, `PreCompact`, `SessionStart` (`compact`) | `compacted`, `context_compacted`, a new `turn_context` |
//! | [`Session::end`] | `Stop` if a turn is open, `SessionEnd` | — |
//!
//! Reads, searches and globs are shell commands in Codex (`sed -n`, `rg`).
//! A rejected call gets Codex's `exec command rejected by user` (or `patch
//! rejected by user`) and aborts the turn; the user's words, if any, come
//! as the next prompt.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::claude::{ToolOutcome, ToolUse};
use super::hooks::{self, HookCall};
use super::{Player, Result, World, err};

/// The Codex version `session_meta` claims.
pub const VERSION: &str = "0.146.0";
/// The model the rollout and the hooks name.
pub const MODEL: &str = "gpt-5.5";

/// A Codex session being played (see the module docs).
#[derive(Debug)]
pub struct Session<'w> {
    world: &'w World,
    id: String,
    cwd: PathBuf,
    rollout: PathBuf,
    seq: u64,
    turn: Option<String>,
    last_text: String,
    wrote_meta: bool,
    ended: bool,
}

impl<'w> Session<'w> {
    pub(super) fn new(world: &'w World, id: &str, cwd: &Path) -> Session<'w> {
        let now = world.now().to_rfc3339();
        // rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl under sessions/YYYY/MM/DD.
        let (date, time) = (&now[..10], now[11..19].replace(':', "-"));
        let dir = world.codex_dir().join("sessions").join(&now[..4]).join(&now[5..7]).join(&now[8..10]);
        let rollout = dir.join(format!("rollout-{date}T{time}-{id}.jsonl"));
        Session {
            world,
            id: id.to_owned(),
            cwd: cwd.to_path_buf(),
            rollout,
            seq: 0,
            turn: None,
            last_text: String::new(),
            wrote_meta: false,
            ended: false,
        }
    }

    /// Continues an earlier session (`codex resume`): the same rollout file,
    /// no new `session_meta`.
    pub fn resume(world: &'w World, id: &str, cwd: &Path, rollout: &Path) -> Result<Session<'w>> {
        let text = std::fs::read_to_string(rollout).map_err(|e| err!("resume {id}: {}: {e}", rollout.display()))?;
        let mut s = Session::new(world, id, cwd);
        s.rollout = rollout.to_path_buf();
        s.seq = text.lines().count() as u64 + 1000;
        s.wrote_meta = true;
        Ok(s)
    }

    fn turn_context(&mut self, turn: &str) -> Result<()> {
        self.line(
            "turn_context",
            json!({
                "turn_id": turn,
                "cwd": self.cwd.to_string_lossy(),
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write", "writable_roots": [self.cwd.to_string_lossy()], "network_access": false},
                "model": MODEL,
                "effort": "medium",
                "summary": "auto",
            }),
        )
    }

    fn meta(&mut self) -> Result<()> {
        if self.wrote_meta {
            return Ok(());
        }
        self.wrote_meta = true;
        let mut meta = json!({
            "id": self.id,
            "timestamp": self.world.now().to_rfc3339(),
            "cwd": self.cwd.to_string_lossy(),
            "originator": "codex_cli_rs",
            "cli_version": VERSION,
            "source": "cli",
            "model_provider": "openai",
        });
        if let Some(git) = git_info(&self.cwd) {
            meta["git"] = git;
        }
        self.line("session_meta", meta)
    }

    /// Runs the handlers registered for `event` with the common fields.
    fn hook(&mut self, event: &str, query: Option<&str>, extra: Value) -> Result<Vec<HookCall>> {
        let mut common = json!({
            "session_id": self.id,
            "transcript_path": self.rollout.to_string_lossy(),
            "cwd": self.cwd.to_string_lossy(),
            "model": MODEL,
            "permission_mode": "default",
        });
        if let Some(t) = &self.turn {
            common["turn_id"] = Value::String(t.clone());
        }
        hooks::run_all(self.world, self.world.codex_hooks(), event, query, common, extra, &self.cwd)
    }

    /// The hooks' injected contexts, as the developer messages Codex adds.
    fn inject(&mut self, calls: &[HookCall]) -> Result<()> {
        for c in calls {
            if let Some(ctx) = &c.context {
                self.item(
                    json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": ctx}]}),
                )?;
            }
        }
        Ok(())
    }

    fn item(&mut self, payload: Value) -> Result<()> {
        self.line("response_item", payload)
    }

    fn event(&mut self, payload: Value) -> Result<()> {
        self.line("event_msg", payload)
    }

    /// Appends one `{timestamp, type, payload}` line.
    fn line(&mut self, kind: &str, payload: Value) -> Result<()> {
        let rec = json!({"timestamp": self.world.now().to_rfc3339(), "type": kind, "payload": payload});
        let mut line = serde_json::to_string(&rec)?;
        line.push('\n');
        if let Some(dir) = self.rollout.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.rollout)?;
        f.write_all(line.as_bytes())?;
        Ok(())
    }

    /// A fresh id derived from the session id and a counter (UUID form).
    fn derive(&mut self, what: &str) -> String {
        self.seq += 1;
        super::derived_uuid(&self.id, what, self.seq, '7')
    }

    /// How Codex runs a script's tool: (hook tool name, hook tool_input,
    /// the rollout's call item, whether it is a patch).
    fn codex_call(&self, tool: &ToolUse, call_id: &str) -> (String, Value, Value, bool) {
        let path = |v: &Value| v.get("file_path").and_then(Value::as_str).unwrap_or("").to_owned();
        let shell = |cmd: String| {
            let args = json!({"cmd": cmd, "workdir": self.cwd.to_string_lossy()}).to_string();
            (
                "Bash".to_owned(),
                json!({"command": cmd}),
                json!({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id}),
                false,
            )
        };
        let patch = |text: String| {
            (
                "apply_patch".to_owned(),
                json!({"command": text}),
                json!({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch", "input": text}),
                true,
            )
        };
        let input = &tool.input;
        match tool.name.as_str() {
            "Bash" => shell(input["command"].as_str().unwrap_or("").to_owned()),
            "Read" => shell(format!("sed -n '1,200p' {}", path(input))),
            "Grep" => shell(format!("rg -n {:?}", input["pattern"].as_str().unwrap_or(""))),
            "Glob" => shell(format!("rg --files -g {:?}", input["pattern"].as_str().unwrap_or(""))),
            "Edit" => {
                let (old, new) =
                    (input["old_string"].as_str().unwrap_or(""), input["new_string"].as_str().unwrap_or(""));
                let mut body = String::new();
                for l in old.lines() {
                    body.push_str(&format!("-{l}\n"));
                }
                for l in new.lines() {
                    body.push_str(&format!("+{l}\n"));
                }
                patch(format!("*** Begin Patch\n*** Update File: {}\n@@\n{body}*** End Patch\n", path(input)))
            }
            "Write" => {
                let body: String = input["content"].as_str().unwrap_or("").lines().map(|l| format!("+{l}\n")).collect();
                patch(format!("*** Begin Patch\n*** Add File: {}\n{body}*** End Patch\n", path(input)))
            }
            other => {
                let args = input.to_string();
                (
                    other.to_owned(),
                    input.clone(),
                    json!({"type": "function_call", "name": other, "arguments": args, "call_id": call_id}),
                    false,
                )
            }
        }
    }
}

impl Player for Session<'_> {
    fn id(&self) -> &str {
        &self.id
    }

    fn cwd(&self) -> &Path {
        &self.cwd
    }

    fn transcript(&self) -> &Path {
        &self.rollout
    }

    fn start(&mut self, source: &str) -> Result<Vec<HookCall>> {
        self.meta()?;
        let calls = self.hook("SessionStart", Some(source), json!({"source": source}))?;
        self.inject(&calls)?;
        Ok(calls)
    }

    fn prompt(&mut self, text: &str) -> Result<Vec<HookCall>> {
        let mut calls = self.stop()?;
        self.meta()?;
        let turn = self.derive("turn");
        self.turn = Some(turn.clone());
        let submit = self.hook("UserPromptSubmit", None, json!({"prompt": text}))?;
        let blocked = submit.iter().any(|c| c.blocked.is_some());
        if blocked {
            self.turn = None;
        } else {
            self.event(json!({"type": "task_started", "turn_id": turn, "model_context_window": 258_400}))?;
            self.turn_context(&turn)?;
            self.item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}))?;
            self.event(
                json!({"type": "user_message", "message": text, "images": [], "local_images": [], "text_elements": []}),
            )?;
            self.inject(&submit)?;
            self.last_text.clear();
        }
        calls.extend(submit);
        Ok(calls)
    }

    fn say(&mut self, text: &str) -> Result<()> {
        self.item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}))?;
        self.event(json!({"type": "agent_message", "message": text}))?;
        self.last_text = text.to_owned();
        Ok(())
    }

    fn tool(&mut self, tool: &ToolUse) -> Result<Vec<HookCall>> {
        let call_id = format!("call_{}", &self.derive("call").replace('-', "")[..24]);
        let (name, hook_input, item, is_patch) = self.codex_call(tool, &call_id);
        self.item(item)?;
        let base = json!({"tool_name": name, "tool_input": hook_input, "tool_use_id": call_id});
        let mut calls = self.hook("PreToolUse", Some(&name), base.clone())?;
        self.inject(&calls)?;
        let denied = calls.iter().find_map(|c| c.blocked.clone());
        let output_kind = if is_patch { "custom_tool_call_output" } else { "function_call_output" };
        let (text, code) = match (&denied, &tool.outcome) {
            (Some(why), _) => (why.clone(), None),
            (None, ToolOutcome::Rejected { .. }) => {
                let what = if is_patch { "patch rejected by user" } else { "exec command rejected by user" };
                (what.to_owned(), None)
            }
            (None, ToolOutcome::Ok { content, .. }) => (content.clone(), Some(0)),
            (None, ToolOutcome::Failed { content, .. }) => {
                // Claude's "Exit code N\n…" text: keep the code, drop the prefix.
                let code = content
                    .strip_prefix("Exit code ")
                    .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(1);
                let body = content.split_once('\n').map_or("", |(_, b)| b).to_owned();
                (body, Some(code))
            }
        };
        let output = match code {
            None => text.clone(),
            Some(c) if is_patch => {
                let path = tool.input["file_path"].as_str().unwrap_or("");
                let (mark, status) = if tool.name == "Write" { ("A", "add") } else { ("M", "update") };
                self.event(json!({
                    "type": "patch_apply_end", "call_id": call_id, "turn_id": self.turn,
                    "stdout": format!("Success. Updated the following files:\n{mark} {path}\n"), "stderr": "",
                    "success": c == 0, "status": if c == 0 { "completed" } else { "failed" },
                    "changes": {path: {"type": status, "unified_diff": hook_input["command"], "move_path": null}},
                }))?;
                format!(
                    "Exit code: {c}\nWall time: 0.1 seconds\nOutput:\nSuccess. Updated the following files:\n{mark} {path}\n"
                )
            }
            Some(c) => {
                let tokens = text.len() / 4 + 1;
                format!(
                    "Chunk ID: {}\nWall time: 0.{} seconds\nProcess exited with code {c}\nOriginal token count: {tokens}\nOutput:\n{text}\n",
                    &call_id[5..11],
                    1000 + self.seq % 8000
                )
            }
        };
        self.item(json!({"type": output_kind, "call_id": call_id, "output": output}))?;
        if denied.is_some() {
            return Ok(calls);
        }
        match &tool.outcome {
            ToolOutcome::Rejected { feedback } => {
                // The turn is aborted; what the user says comes as a prompt.
                self.event(json!({"type": "turn_aborted", "turn_id": self.turn, "reason": "interrupted"}))?;
                self.turn = None;
                if let Some(f) = feedback {
                    calls.extend(self.prompt(f)?);
                }
            }
            _ => {
                let mut input = base;
                input["tool_response"] = Value::String(output);
                calls.extend(self.hook("PostToolUse", Some(&name), input)?);
            }
        }
        Ok(calls)
    }

    fn compact(&mut self, trigger: &str, summary: &str) -> Result<Vec<HookCall>> {
        let mut calls = self.stop()?;
        calls.extend(self.hook(
            "PreCompact",
            Some(trigger),
            json!({"trigger": trigger, "custom_instructions": null}),
        )?);
        self.line(
            "compacted",
            json!({"message": summary, "replacement_history": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}
            ]}),
        )?;
        self.event(json!({"type": "context_compacted"}))?;
        let turn = self.derive("turn");
        self.turn_context(&turn)?;
        calls.extend(self.start("compact")?);
        Ok(calls)
    }

    fn stop(&mut self) -> Result<Vec<HookCall>> {
        let Some(turn) = self.turn.clone() else { return Ok(Vec::new()) };
        let input = json!({"stop_hook_active": false, "last_assistant_message": self.last_text});
        let calls = self.hook("Stop", None, input)?;
        self.event(json!({"type": "task_complete", "turn_id": turn, "last_agent_message": self.last_text}))?;
        self.turn = None;
        Ok(calls)
    }

    fn end(&mut self, _reason: &str) -> Result<Vec<HookCall>> {
        let mut calls = self.stop()?;
        if !self.ended {
            self.ended = true;
            // Codex's SessionEnd reason is always "other".
            calls.extend(self.hook("SessionEnd", Some("other"), json!({"reason": "other"}))?);
        }
        Ok(calls)
    }
}

/// `session_meta.git` of the repository at `cwd` or above, if any.
fn git_info(cwd: &Path) -> Option<Value> {
    let root = cwd.ancestors().find(|d| d.join(".git").exists())?;
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap_or_default();
    let url = config.lines().find_map(|l| l.trim().strip_prefix("url = ").map(str::to_owned));
    let branch = std::fs::read_to_string(root.join(".git/HEAD"))
        .ok()
        .and_then(|h| h.trim().strip_prefix("ref: refs/heads/").map(str::to_owned));
    Some(json!({"branch": branch, "repository_url": url, "commit_hash": null}))
}
