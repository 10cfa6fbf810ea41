//! Session bodies: a session's lifecycle and its content as the harness
//! recorded it (prompts, answers, tool calls, reads, edits, cursors).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::is_zero;
use crate::base::ids::SessionKey;

/// The harnesses Engram reads. Stored as the lower-case name.
pub mod harness {
    /// Claude Code.
    pub const CLAUDE: &str = "claude";
    /// Codex CLI.
    pub const CODEX: &str = "codex";
    /// Gemini CLI.
    pub const GEMINI: &str = "gemini";
    /// OpenCode.
    pub const OPENCODE: &str = "opencode";
    /// Cursor (its sessions reach Engram as SpecStory exports).
    pub const CURSOR: &str = "cursor";
    /// GitHub Copilot in VS Code (its sessions reach Engram as SpecStory exports).
    pub const COPILOT: &str = "copilot";
    /// A SpecStory export of a tool Engram has no other name for.
    pub const SPECSTORY: &str = "specstory";
    /// Sessions created by Engram itself (MCP, CLI, demo corpus, benchmarks).
    pub const ENGRAM: &str = "engram";
}

/// `session.started`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStarted {
    /// `claude`, `codex`, `gemini`, `opencode`, `cursor`, `copilot`,
    /// `specstory`, `engram`.
    pub harness: String,
    /// The harness's own id for the session.
    pub harness_session_id: String,
    /// Project name (usually the last component of the repository root).
    pub project: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git branch, when known.
    pub git_branch: Option<String>,
    /// The parent session of a subagent or fork.
    pub parent: Option<SessionKey>,
    /// How the parent is linked: `sidechain`, `subagent`, `fork`, `thread_spawn`, …
    pub parent_link: Option<String>,
    /// The parent's tool call (Task, spawn) that started this subagent.
    pub parent_call_id: Option<String>,
    /// Kind of subagent (`general-purpose`, an agent role), when known.
    pub agent_type: Option<String>,
    /// Model, when known at start.
    pub model: Option<String>,
    /// Harness version, when known.
    pub harness_version: Option<String>,
    /// The transcript file this session was read from.
    pub source_path: Option<String>,
}

/// `session.ended`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionEnded {
    /// `clear`, `logout`, `prompt_input_exit`, `other`, `idle`, …
    pub reason: String,
}

/// An inclusive, 1-based line range `[start, end]`.
pub type LineRange = [u32; 2];

/// `meta`: free-form session metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// What this is: `model`, `title`, `compaction`, `turn`, `tokens`, `repo`, …
    pub label: String,
    /// Model name, when this records one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Repository head commit, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo_head: Option<String>,
    /// Free text (a title, a compaction trigger, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Any further structured fields.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Value>,
}

/// Where a `msg.in` came from.
pub mod origin {
    /// Typed by the user.
    pub const USER: &str = "user";
    /// A compaction summary the harness fed back in.
    pub const COMPACT_SUMMARY: &str = "compact_summary";
    /// Context injected by a hook; Engram's own injections are tagged [`ENGRAM`].
    pub const HOOK: &str = "hook";
    /// Context that Engram's own hooks injected: never learned from again.
    pub const ENGRAM: &str = "engram";
    /// Harness-generated meta text (slash command expansion, system reminders).
    pub const META: &str = "meta";
    /// The task prompt given to a subagent.
    pub const SUBAGENT_PROMPT: &str = "subagent_prompt";
    /// Developer or system instructions.
    pub const SYSTEM: &str = "system";
}

/// Opening and closing tags around every context Engram injects into an agent.
/// An adapter that meets text containing the opening tag marks it with
/// [`origin::ENGRAM`], and nothing is ever learned from it.
// trust: the `meta` labels that mean the agent's context was emptied (memories
// injected before them may be injected again).
pub mod context_reset {
    /// A compaction recorded in the transcript (Claude's `compact_boundary`, Codex's `compacted`).
    pub const COMPACTION: &str = "compaction";
    /// The `PreCompact` hook fired.
    pub const PRE_COMPACT: &str = "pre_compact";
    /// A session restarted on an empty context (`SessionStart` with `source` `compact` or `clear`).
    pub const CONTEXT_RESET: &str = "context_reset";

    /// Whether a `meta` event with this label empties the context.
    pub fn resets(label: &str) -> bool {
        matches!(label, COMPACTION | PRE_COMPACT | CONTEXT_RESET)
    }
}

pub const INJECTION_OPEN: &str = "<engram-context>";
/// See [`INJECTION_OPEN`].
pub const INJECTION_CLOSE: &str = "</engram-context>";

/// `msg.in`: input to the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MsgIn {
    /// The text.
    pub text: String,
    /// See [`origin`]; empty means [`origin::USER`].
    #[serde(skip_serializing_if = "String::is_empty")]
    pub origin: String,
    /// The harness's record id, for joins and de-duplication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Bytes cut from a very large message.
    #[serde(skip_serializing_if = "is_zero")]
    pub truncated: u64,
}

impl MsgIn {
    /// Whether a person typed this (as opposed to injected or generated text).
    pub fn is_user_prompt(&self) -> bool {
        self.origin.is_empty() || self.origin == origin::USER
    }
}

/// `msg.out`: output of the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MsgOut {
    /// The text.
    pub text: String,
    /// `text` (default) or `reasoning`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub part: String,
    /// The harness's record id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Bytes cut from a very large message.
    #[serde(skip_serializing_if = "is_zero")]
    pub truncated: u64,
}

/// `tool.call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCall {
    /// Tool name as the harness names it (`Read`, `exec_command`, `apply_patch`, …).
    pub tool: String,
    /// Joins the call to its result.
    pub call_id: String,
    /// Arguments (redacted).
    pub args: Value,
}

/// `tool.result`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolResult {
    /// Tool name, when the adapter could join it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// Joins the result to its call.
    pub call_id: String,
    /// Output the model saw (possibly truncated; see `truncated`).
    pub stdout: String,
    /// Error output, when separate.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Exit status, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// The tool reported an error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Bytes cut from the middle of a very large output.
    #[serde(skip_serializing_if = "is_zero")]
    pub truncated: u64,
}

/// `code.read`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeRead {
    /// File path as the harness gave it.
    pub file: String,
    /// Lines read, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<LineRange>,
    /// blake3 (hex, 32 chars) of the text read, when the harness logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

/// `code.edit`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeEdit {
    /// File path.
    pub file: String,
    /// `update` (default), `add`, `delete` or `move`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub op: String,
    /// Lines replaced, in the file as it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_range: Option<LineRange>,
    /// Lines written, in the file as it became.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_range: Option<LineRange>,
    /// blake3 (hex, 32 chars) of the replaced text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_hash: Option<String>,
    /// blake3 (hex, 32 chars) of the written text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_hash: Option<String>,
    /// New path of a moved file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
    /// The tool call that made the edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The replaced text (what `before_hash` hashes), for provenance: its
    /// fingerprints, tombstones and lineage. Absent for excluded paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_text: Option<String>,
    /// The written text (what `after_hash` hashes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_text: Option<String>,
}

/// `span.link`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpanLink {
    /// Source file.
    pub from_file: String,
    /// Source range.
    pub from_range: Option<LineRange>,
    /// Destination file.
    pub to_file: String,
    /// Destination range.
    pub to_range: Option<LineRange>,
    /// Why.
    pub note: String,
}

/// `opaque`: a harness record kept without interpretation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Opaque {
    /// The record's type as the harness wrote it (`attachment`, `world_state`, …).
    pub record_type: String,
    /// The record (redacted; large records are cut).
    pub raw: Value,
}

/// `source.cursor`: everything in `path` up to `offset` has been ingested.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SourceCursor {
    /// Harness name.
    pub harness: String,
    /// Absolute path of the file (or database) read.
    pub path: String,
    /// File identity: device and inode, plus a hash of the first bytes, so a
    /// rewritten or rotated file is recognised.
    pub file_id: String,
    /// Bytes consumed (complete lines only), or a harness-specific position.
    pub offset: u64,
    /// Size of the file when read.
    pub size: u64,
    /// Modification time of the file when read (ms).
    pub mtime_ms: i64,
    /// Small adapter state needed to resume parsing at `offset` (the session
    /// key of a file whose header is behind the cursor, the current cwd, …).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub state: Value,
}
