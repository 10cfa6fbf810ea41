//! A Claude Code session played through the installed hooks: the transcript
//! records Claude Code 2.1 appends (`../shared/docs/harness-formats.md`,
//! "Claude Code transcript JSONL"), and the hook calls at the moments Claude
//! Code makes them.
//!
//! | step | hooks | transcript |
//! |---|---|---|
//! | [`Session::start`] | `SessionStart` (`source`) | an attachment per injected context |
//! | [`Session::prompt`] | `Stop` if a turn is open, `UserPromptSubmit` | the `user` record (unless a hook blocked it), attachments |
//! | [`Session::say`] | — | an `assistant` text record |
//! | [`Session::tool`] | `PreToolUse` (matcher: the tool), then `PostToolUse` or `PostToolUseFailure` | the `tool_use` record, attachments, the `tool_result` record with `toolUseResult` |
//! | [`Session::compact`] | `Stop` if a turn is open, `PreCompact`, `SessionStart` (`compact`) | `compact_boundary`, the `isCompactSummary` record |
//! | [`Session::end`] | `Stop` if a turn is open, `SessionEnd` | — |
//!
//! A rejected tool call gets Claude Code's rejection text as an error
//! result (`toolUseResult: "User rejected tool use"`); without feedback the
//! turn is interrupted (`[Request interrupted by user for tool use]`, no
//! `Stop`), with feedback the user's words are in the result and the turn
//! goes on. Record ids are derived from the session id, so a script always
//! writes the same transcript but for times and paths.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use shared::base::time::Ts;

use super::hooks::{self, HookCall};
use super::{Result, World, err};

/// The Claude Code version the records claim.
pub const VERSION: &str = "2.1.201";
/// The model the records and `SessionStart` name.
pub const MODEL: &str = "claude-sonnet-4-5";

/// Claude Code's text for a rejected tool call.
pub const REJECTED: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).";
const REJECTED_STOP: &str = "STOP what you are doing and wait for the user to tell you how to proceed.";
const REJECTED_SAID: &str = "To tell you how to proceed, the user said:\n";
const INTERRUPTED: &str = "[Request interrupted by user for tool use]";

/// How a tool call ends.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    /// It ran: what the model sees (`tool_result.content`) and the
    /// structured `toolUseResult`.
    Ok {
        /// `tool_result.content`.
        content: String,
        /// `toolUseResult`.
        result: Value,
    },
    /// It ran and failed (`is_error: true`).
    Failed {
        /// `tool_result.content`.
        content: String,
        /// `toolUseResult` (a string `"Error: …"` for most tools).
        result: Value,
    },
    /// The user rejected it at the permission prompt, maybe saying why.
    Rejected {
        /// What the user typed with the rejection.
        feedback: Option<String>,
    },
}

/// One tool call: name, input and how it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    /// `Bash`, `Read`, `Edit`, ...
    pub name: String,
    /// Its input (file paths absolute, as Claude Code sends them).
    pub input: Value,
    /// How it ends.
    pub outcome: ToolOutcome,
}

impl ToolUse {
    /// A Bash command that exits with `code` after printing `output`.
    pub fn bash(command: &str, code: i32, output: &str) -> ToolUse {
        let input = json!({"command": command, "description": describe(command)});
        let outcome = if code == 0 {
            ToolOutcome::Ok {
                content: output.to_owned(),
                result: json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false}),
            }
        } else {
            let text =
                if output.is_empty() { format!("Exit code {code}") } else { format!("Exit code {code}\n{output}") };
            ToolOutcome::Failed { result: Value::String(format!("Error: {text}")), content: text }
        };
        ToolUse { name: "Bash".into(), input, outcome }
    }

    /// A `Read` of `path` returning `content`.
    pub fn read(path: &str, content: &str) -> ToolUse {
        let lines = content.lines().count().max(1);
        let numbered: String = content.lines().enumerate().map(|(i, l)| format!("{:>6}\u{2192}{l}\n", i + 1)).collect();
        ToolUse {
            name: "Read".into(),
            input: json!({"file_path": path}),
            outcome: ToolOutcome::Ok {
                content: numbered,
                result: json!({"type": "text", "file": {"filePath": path, "content": content, "numLines": lines, "startLine": 1, "totalLines": lines}}),
            },
        }
    }

    /// An `Edit` of `path` replacing `old` by `new` (one hunk at line 1).
    pub fn edit(path: &str, old: &str, new: &str) -> ToolUse {
        let mut lines: Vec<String> = old.lines().map(|l| format!("-{l}")).collect();
        lines.extend(new.lines().map(|l| format!("+{l}")));
        let hunk = json!({"oldStart": 1, "oldLines": old.lines().count(), "newStart": 1, "newLines": new.lines().count(), "lines": lines});
        ToolUse {
            name: "Edit".into(),
            input: json!({"file_path": path, "old_string": old, "new_string": new, "replace_all": false}),
            outcome: ToolOutcome::Ok {
                content: format!("The file {path} has been updated."),
                result: json!({"filePath": path, "oldString": old, "newString": new, "originalFile": old, "structuredPatch": [hunk], "userModified": false, "replaceAll": false}),
            },
        }
    }

    /// A `Write` creating `path` with `content`.
    pub fn write(path: &str, content: &str) -> ToolUse {
        let lines: Vec<String> = content.lines().map(|l| format!("+{l}")).collect();
        let hunk = json!({"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": lines.len(), "lines": lines});
        ToolUse {
            name: "Write".into(),
            input: json!({"file_path": path, "content": content}),
            outcome: ToolOutcome::Ok {
                content: format!("File created successfully at: {path}"),
                result: json!({"type": "create", "filePath": path, "content": content, "structuredPatch": [hunk]}),
            },
        }
    }

    /// Any other tool, returning `text`.
    pub fn other(name: &str, input: Value, text: &str) -> ToolUse {
        ToolUse {
            name: name.into(),
            input,
            outcome: ToolOutcome::Ok { content: text.to_owned(), result: Value::String(text.to_owned()) },
        }
    }

    /// The same call ending another way.
    pub fn with_outcome(mut self, outcome: ToolOutcome) -> ToolUse {
        self.outcome = outcome;
        self
    }

    /// The same call failing with `message` (`<tool_use_error>` text, as
    /// Claude Code reports a tool's own errors).
    pub fn failing(self, message: &str) -> ToolUse {
        let outcome = if self.name == "Bash" {
            return ToolUse::bash(self.input["command"].as_str().unwrap_or(""), 1, message);
        } else {
            ToolOutcome::Failed {
                content: format!("<tool_use_error>{message}</tool_use_error>"),
                result: Value::String(format!("Error: {message}")),
            }
        };
        self.with_outcome(outcome)
    }
}

/// A Bash call's `description`: the command's first words.
fn describe(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().take(4).collect();
    format!("Run {}", words.join(" "))
}

/// Claude Code's project folder name for `cwd`: every character that is not
/// alphanumeric becomes `-`.
pub fn encode_cwd(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// A Claude Code session being played (see the module docs).
#[derive(Debug)]
pub struct Session<'w> {
    world: &'w World,
    id: String,
    cwd: PathBuf,
    transcript: PathBuf,
    git_branch: String,
    parent: Option<String>,
    seq: u64,
    last_ms: i64,
    prompt_id: Option<String>,
    turn_open: bool,
    last_text: String,
    ended: bool,
}

impl<'w> Session<'w> {
    pub(super) fn new(world: &'w World, id: &str, cwd: &Path) -> Session<'w> {
        let transcript = world.claude_dir().join("projects").join(encode_cwd(cwd)).join(format!("{id}.jsonl"));
        Session {
            world,
            id: id.to_owned(),
            cwd: cwd.to_path_buf(),
            transcript,
            git_branch: git_branch(cwd),
            parent: None,
            seq: 0,
            last_ms: 0,
            prompt_id: None,
            turn_open: false,
            last_text: String::new(),
            ended: false,
        }
    }

    /// Continues an earlier session (same id, same transcript), as
    /// `claude --resume` does: nothing is sent until [`Session::start`]
    /// with source `resume`.
    pub fn resume(world: &'w World, id: &str, cwd: &Path) -> Result<Session<'w>> {
        let mut s = Session::new(world, id, cwd);
        let text =
            std::fs::read_to_string(&s.transcript).map_err(|e| err!("resume {id}: {}: {e}", s.transcript.display()))?;
        s.seq = text.lines().count() as u64 + 1000;
        s.parent = text
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|v| v.get("uuid").and_then(Value::as_str).map(str::to_owned));
        Ok(s)
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Its transcript file.
    pub fn transcript(&self) -> &Path {
        &self.transcript
    }

    /// `SessionStart` with `source` (`startup`, `resume`, `clear`, `compact`).
    pub fn start(&mut self, source: &str) -> Result<Vec<HookCall>> {
        let input = json!({"source": source, "model": MODEL});
        let calls = self.hook("SessionStart", Some(source), input)?;
        self.attach(&calls, &format!("SessionStart:{source}"), None)?;
        Ok(calls)
    }

    /// The user submits `text`: ends an open turn (`Stop`), runs
    /// `UserPromptSubmit`, and writes the prompt unless a hook blocked it.
    pub fn prompt(&mut self, text: &str) -> Result<Vec<HookCall>> {
        let mut calls = self.stop()?;
        let prompt_id = self.derive("prompt");
        self.prompt_id = Some(prompt_id.clone());
        let submit = self.hook("UserPromptSubmit", None, json!({"prompt": text}))?;
        let blocked = submit.iter().any(|c| c.blocked.is_some());
        if !blocked {
            self.record(json!({
                "type": "user",
                "message": {"role": "user", "content": text},
                "promptId": prompt_id,
                "permissionMode": "default",
            }))?;
            self.attach(&submit, "UserPromptSubmit", None)?;
            self.turn_open = true;
            self.last_text.clear();
        }
        calls.extend(submit);
        Ok(calls)
    }

    /// The agent says `text` (no hook).
    pub fn say(&mut self, text: &str) -> Result<()> {
        self.assistant(json!({"type": "text", "text": text}), "end_turn")?;
        self.last_text = text.to_owned();
        self.turn_open = true;
        Ok(())
    }

    /// The agent calls a tool (see the module docs for the hooks).
    pub fn tool(&mut self, tool: &ToolUse) -> Result<Vec<HookCall>> {
        self.turn_open = true;
        let call_id = format!("toolu_01{}", &self.derive("tool").replace('-', "")[..22]);
        let use_uuid = self.assistant(
            json!({"type": "tool_use", "id": call_id, "name": tool.name, "input": tool.input}),
            "tool_use",
        )?;
        let base = json!({"tool_name": tool.name, "tool_input": tool.input, "tool_use_id": call_id});
        let mut calls = self.hook("PreToolUse", Some(&tool.name), base.clone())?;
        self.attach(&calls, &format!("PreToolUse:{}", tool.name), Some(&call_id))?;
        let denied = calls.iter().find_map(|c| c.blocked.clone());
        let (content, result, is_error) = match (&denied, &tool.outcome) {
            (Some(why), _) => (why.clone(), Value::String(format!("Error: {why}")), true),
            (None, ToolOutcome::Ok { content, result }) => (content.clone(), result.clone(), false),
            (None, ToolOutcome::Failed { content, result }) => (content.clone(), result.clone(), true),
            (None, ToolOutcome::Rejected { feedback }) => {
                let text = match feedback {
                    Some(f) => format!("{REJECTED} {REJECTED_SAID}{f}"),
                    None => format!("{REJECTED} {REJECTED_STOP}"),
                };
                (text, Value::String("User rejected tool use".into()), true)
            }
        };
        let mut block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
        if is_error {
            block["is_error"] = Value::Bool(true);
        }
        let mut rec = json!({
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "toolUseResult": result,
            "sourceToolAssistantUUID": use_uuid,
            "promptId": self.prompt_id,
        });
        if denied.is_none() && matches!(tool.outcome, ToolOutcome::Rejected { .. }) {
            rec["toolDenialKind"] = Value::String("user-rejected".into());
        }
        self.record(rec)?;
        if denied.is_some() {
            return Ok(calls);
        }
        let ms = 40 + (self.seq % 7) * 130;
        match &tool.outcome {
            ToolOutcome::Ok { result, .. } => {
                let mut input = base;
                input["tool_response"] = result.clone();
                input["duration_ms"] = json!(ms);
                calls.extend(self.hook("PostToolUse", Some(&tool.name), input)?);
            }
            ToolOutcome::Failed { content, .. } => {
                let mut input = base;
                input["error"] = Value::String(content.clone());
                input["is_interrupt"] = Value::Bool(false);
                calls.extend(self.hook("PostToolUseFailure", Some(&tool.name), input)?);
            }
            ToolOutcome::Rejected { feedback: Some(_) } => {}
            ToolOutcome::Rejected { feedback: None } => {
                self.record(json!({
                    "type": "user",
                    "message": {"role": "user", "content": [{"type": "text", "text": INTERRUPTED}]},
                    "promptId": self.prompt_id,
                }))?;
                // An interrupted turn ends without Stop.
                self.turn_open = false;
            }
        }
        Ok(calls)
    }

    /// Compaction: ends an open turn, `PreCompact`, the boundary and the
    /// summary in the transcript, then `SessionStart` with source `compact`.
    /// Everything before it has left the agent's context.
    pub fn compact(&mut self, trigger: &str, summary: &str) -> Result<Vec<HookCall>> {
        let mut calls = self.stop()?;
        calls.extend(self.hook("PreCompact", Some(trigger), json!({"trigger": trigger, "custom_instructions": ""}))?);
        let logical = self.parent.clone();
        self.parent = None;
        let pre_tokens = 120_000 + (self.seq % 10) * 3_000;
        self.record(json!({
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "logicalParentUuid": logical,
            "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
            "level": "info",
            "isMeta": false,
        }))?;
        self.record(json!({
            "type": "user",
            "isCompactSummary": true,
            "isVisibleInTranscriptOnly": true,
            "message": {"role": "user", "content": format!("This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n{summary}")},
        }))?;
        let start = self.start("compact")?;
        calls.extend(start);
        Ok(calls)
    }

    /// Ends the agent's turn if one is open (`Stop`).
    pub fn stop(&mut self) -> Result<Vec<HookCall>> {
        if !self.turn_open {
            return Ok(Vec::new());
        }
        self.turn_open = false;
        let input = json!({"stop_hook_active": false, "last_assistant_message": self.last_text});
        self.hook("Stop", None, input)
    }

    /// Ends the session: `Stop` if a turn is open, then `SessionEnd`.
    pub fn end(&mut self, reason: &str) -> Result<Vec<HookCall>> {
        let mut calls = self.stop()?;
        if !self.ended {
            self.ended = true;
            calls.extend(self.hook("SessionEnd", Some(reason), json!({"reason": reason}))?);
        }
        Ok(calls)
    }

    /// Runs every handler registered for `event` (matcher query `query`)
    /// with the common fields plus `extra`.
    fn hook(&mut self, event: &str, query: Option<&str>, extra: Value) -> Result<Vec<HookCall>> {
        let mut common = json!({
            "session_id": self.id,
            "transcript_path": self.transcript.to_string_lossy(),
            "cwd": self.cwd.to_string_lossy(),
            "permission_mode": "default",
        });
        if let Some(p) = &self.prompt_id {
            common["prompt_id"] = Value::String(p.clone());
        }
        hooks::run_all(self.world, self.world.hooks(), event, query, common, extra, &self.cwd)
    }

    /// The `hook_additional_context` attachments Claude Code records for
    /// what hooks injected.
    fn attach(&mut self, calls: &[HookCall], hook_name: &str, tool_use_id: Option<&str>) -> Result<()> {
        for c in calls {
            if let Some(ctx) = &c.context {
                let mut att = json!({"type": "hook_additional_context", "hookName": hook_name, "hookEvent": c.event, "content": ctx});
                if let Some(t) = tool_use_id {
                    att["toolUseID"] = Value::String(t.to_owned());
                }
                self.record(json!({"type": "attachment", "attachment": att}))?;
            }
        }
        Ok(())
    }

    /// Appends an assistant record with one content block; returns its uuid.
    fn assistant(&mut self, block: Value, stop_reason: &str) -> Result<String> {
        let msg_id = format!("msg_01{}", &self.derive("msg").replace('-', "")[..22]);
        let request_id = format!("req_011C{}", &self.derive("req").replace('-', "")[..20]);
        let out_tokens = 20 + self.seq % 400;
        self.record(json!({
            "type": "assistant",
            "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": MODEL,
                "content": [block],
                "stop_reason": stop_reason, "stop_sequence": null,
                "usage": {"input_tokens": 4, "cache_creation_input_tokens": 512, "cache_read_input_tokens": 18_000,
                          "output_tokens": out_tokens, "service_tier": "standard"},
            },
            "requestId": request_id,
        }))
    }

    /// Appends one record with Claude Code's envelope; returns its uuid.
    fn record(&mut self, body: Value) -> Result<String> {
        let uuid = self.derive("uuid");
        let now = self.world.now().millis().max(self.last_ms + 1);
        self.last_ms = now;
        let mut rec = json!({
            "parentUuid": self.parent,
            "isSidechain": false,
            "userType": "external",
            "cwd": self.cwd.to_string_lossy(),
            "sessionId": self.id,
            "version": VERSION,
            "gitBranch": self.git_branch,
        });
        if let (Value::Object(into), Value::Object(from)) = (&mut rec, body) {
            into.extend(from);
        }
        rec["uuid"] = Value::String(uuid.clone());
        rec["timestamp"] = Value::String(Ts(now).to_rfc3339());
        rec["entrypoint"] = Value::String("cli".into());
        let mut line = serde_json::to_string(&rec)?;
        line.push('\n');
        if let Some(dir) = self.transcript.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.transcript)?;
        f.write_all(line.as_bytes())?;
        self.parent = Some(uuid.clone());
        Ok(uuid)
    }

    /// A fresh id derived from the session id and a counter (UUID form).
    fn derive(&mut self, what: &str) -> String {
        self.seq += 1;
        super::derived_uuid(&self.id, what, self.seq, '4')
    }
}

impl super::Player for Session<'_> {
    fn id(&self) -> &str {
        Session::id(self)
    }
    fn cwd(&self) -> &Path {
        Session::cwd(self)
    }
    fn transcript(&self) -> &Path {
        Session::transcript(self)
    }
    fn start(&mut self, source: &str) -> Result<Vec<HookCall>> {
        Session::start(self, source)
    }
    fn prompt(&mut self, text: &str) -> Result<Vec<HookCall>> {
        Session::prompt(self, text)
    }
    fn say(&mut self, text: &str) -> Result<()> {
        Session::say(self, text)
    }
    fn tool(&mut self, tool: &ToolUse) -> Result<Vec<HookCall>> {
        Session::tool(self, tool)
    }
    fn compact(&mut self, trigger: &str, summary: &str) -> Result<Vec<HookCall>> {
        Session::compact(self, trigger, summary)
    }
    fn stop(&mut self) -> Result<Vec<HookCall>> {
        Session::stop(self)
    }
    fn end(&mut self, reason: &str) -> Result<Vec<HookCall>> {
        Session::end(self, reason)
    }
}

/// The branch checked out at `cwd` or above (from `.git/HEAD`, or a
/// worktree's `.git` file), `""` when none: what Claude Code records.
fn git_branch(cwd: &Path) -> String {
    for dir in cwd.ancestors() {
        let dot = dir.join(".git");
        let head = if dot.is_dir() {
            dot.join("HEAD")
        } else if let Ok(text) = std::fs::read_to_string(&dot) {
            match text.trim().strip_prefix("gitdir:") {
                Some(g) => dir.join(g.trim()).join("HEAD"),
                None => continue,
            }
        } else {
            continue;
        };
        return std::fs::read_to_string(head)
            .ok()
            .and_then(|h| h.trim().strip_prefix("ref: refs/heads/").map(str::to_owned))
            .unwrap_or_else(|| "HEAD".to_owned());
    }
    String::new()
}
