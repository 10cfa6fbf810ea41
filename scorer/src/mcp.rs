//! `engram-scorer mcp`: the MCP server over stdio (newline-delimited JSON-RPC
//! 2.0, harness-formats §1e), giving agents their memory as tools.
//!
//! * **Lifecycle.** `initialize` negotiates the version: a client version this
//!   server speaks (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25) is echoed,
//!   anything else gets the latest. `notifications/initialized` and other
//!   notifications are accepted silently; `ping` answers `{}`. The stateless
//!   revision's `server/discover` (2026-07-28) answers the same capabilities;
//!   a request whose `_meta` names that revision gets `resultType` (and list
//!   results `ttlMs`/`cacheScope`). No request requires `initialize` first.
//!   End of input ends the process (exit 0).
//! * **Tools** ([`tools`]): `memory_search`, `memory_save`, `memory_get`,
//!   `memory_list`, `memory_forget`, `memory_pin`, `memory_unpin`,
//!   `memory_feedback`, `memory_timeline`, `memory_stats`, `memory_explain`
//!   (provenance: why a span of code exists), each with a JSON
//!   Schema for its input (unknown arguments are refused). A result carries
//!   the data as `structuredContent` and as compact JSON text. A failing call
//!   (bad argument, unknown memory, store error) is a result with
//!   `isError: true` and a message saying what to fix; an unknown tool is
//!   JSON-RPC -32602, an unknown method -32601.
//! * **Writes** go through the journal (tape log, then projection) with the
//!   memory commands of [`shared::domain::memory::ops`]: the agent's memories are
//!   `source: mcp`, its feedback `by: agent` within the session it names.
//!   `memory_search` runs the ranking pipeline (trigger `search`) and records
//!   it (see [`crate::search`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use rusqlite::OptionalExtension;
use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::{Map, Value, json};
use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::base::rpc::{Connection, Message, Params, RpcError, encode_error, encode_result};
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use shared::domain::env::ops as env_ops;
use shared::domain::injection::{self, LoadedModel};
use shared::domain::knowledge::{self, ops::Saved};
use shared::domain::memory::ops::{self as ops, MemoryDetails, NewMemory, OpError, Origin};
use shared::domain::memory::queries;
use shared::storage::journal::Journal;

use crate::error::{Error, Result};
use crate::native::writer_name;
use crate::search::{self, SearchParams};

/// Protocol versions answered by `initialize`, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The stateless revision whose `server/discover` and `resultType` are served.
pub const STATELESS_VERSION: &str = "2026-07-28";
/// Longest request line.
const MAX_LINE: usize = 16 << 20;
/// How often the loop looks at the shutdown flag.
const TICK: Duration = Duration::from_millis(50);

const INSTRUCTIONS: &str = "Engram is this machine's memory of past agent sessions. Memories it injects \
appear inside <engram-context> with their ids and the session key. Use memory_search to look something up, \
memory_save to keep a durable fact, convention or decision, and memory_feedback (id, relevance 0-1, session_id) \
to say whether an injected memory helped: that feedback trains what gets injected next time.";

/// Params of any method, kept as JSON (the dispatcher reads them).
#[derive(Debug)]
pub struct Raw(pub Value);

impl Params for Raw {
    fn deserialize<'de, D: Deserializer<'de>>(_method: &str, params: D) -> std::result::Result<Raw, D::Error> {
        Value::deserialize(params).map(Raw)
    }
}

/// A failed tool call: reported as `isError: true` with this message.
#[derive(Debug)]
pub struct ToolError(pub String);

impl From<OpError> for ToolError {
    fn from(e: OpError) -> ToolError {
        ToolError(e.to_string())
    }
}

impl From<Error> for ToolError {
    fn from(e: Error) -> ToolError {
        ToolError(e.to_string())
    }
}

impl From<shared::base::error::Error> for ToolError {
    fn from(e: shared::base::error::Error) -> ToolError {
        ToolError(e.to_string())
    }
}

type ToolResult = std::result::Result<Value, ToolError>;

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn tool(name: &str, title: &str, description: &str, input: Value, annotations: Value) -> Value {
    json!({"name": name, "title": title, "description": description, "inputSchema": input, "annotations": annotations})
}

/// The tool definitions answered by `tools/list`.
pub fn tools() -> Vec<Value> {
    let types: Vec<&str> = shared::storage::event::MemoryType::ALL.iter().map(|t| t.as_str()).collect();
    let mut search_types = vec!["all"];
    search_types.extend(types.iter().copied());
    let save_types = types.clone();
    let session = json!({"type": "string", "description": "Session key from the <engram-context> header (harness:id), or the harness's session id"});
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    let prerequisites = json!({"type": ["object", "string"], "description": "Where it applies: {\"os\": [...], \"repos\": [...], \"paths\": [...], \"mcp_servers\": [...], \"tags\": [...]}; os, repos, paths and mcp_servers must hold for it to be injected, tags only weigh"});
    let mut tools = vec![
        tool(
            "memory_search",
            "Search memory",
            "Search persistent memory (full-text BM25 plus the learned ranking) for memories relevant to a query.",
            schema(
                json!({
                    "query": {"type": "string", "minLength": 1, "description": "Keywords, file names, concepts, or natural language"},
                    "type": {"type": "string", "enum": search_types, "default": "all", "description": "Only this memory type"},
                    "project": {"type": "string", "description": "Only memories of this project"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only memories carrying every one of these tags"},
                    "category": {"type": "string", "description": "Only memories in this category or below it (a path such as development/frontend)"},
                    "from_date": {"type": "string", "description": "Only memories created at or after this date (ISO 8601)"},
                    "to_date": {"type": "string", "description": "Only memories created at or before this date (ISO 8601)"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": search::MAX_LIMIT, "default": 20, "description": "Max results"},
                    "session_id": session.clone(),
                }),
                &["query"],
            ),
            read_only.clone(),
        ),
        tool(
            "memory_save",
            "Save a memory",
            "Explicitly save a piece of knowledge: stored permanently (in the tape log) and searchable.",
            schema(
                json!({
                    "content": {"type": "string", "minLength": 1, "maxLength": ops::MAX_TEXT, "description": "The knowledge to save, self-contained"},
                    "type": {"type": "string", "enum": save_types, "description": "Kind of knowledge"},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": ops::MAX_TAG_CHARS}, "maxItems": ops::MAX_TAGS, "default": [], "description": "Tags for categorization"},
                    "project": {"type": "string", "description": "Associated project: its name (the repository's folder) or its key"},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.7, "description": "How important (0-1)"},
                    "pinned": {"type": "boolean", "default": false, "description": "Always consider it for injection"},
                    "source_knowledge_ids": {"type": "array", "items": {"type": "string"}, "default": [], "description": "Memory ids this derives from"},
                    "session_id": session.clone(),
                }),
                &["content", "type"],
            ),
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}),
        ),
        tool(
            "memory_get",
            "Get memories",
            "Fetch full details of memories by id: text, metadata, sessions, feedback.",
            schema(
                json!({
                    "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50, "description": "Memory ids"},
                    "include_context": {"type": "boolean", "default": false, "description": "Include the sessions it was learned from (project, directory, last prompts)"},
                    "include_graph": {"type": "boolean", "default": false, "description": "Include knowledge graph edges and the reasoning chain (derivations), supersession and memories learned in the same session"},
                }),
                &["ids"],
            ),
            read_only.clone(),
        ),
        tool(
            "memory_list",
            "List memories",
            "List live memories, pinned first then newest.",
            schema(
                json!({
                    "type": {"type": "string", "enum": types, "description": "Only this memory type"},
                    "project": {"type": "string", "description": "Only this project"},
                    "category": {"type": "string", "description": "Only memories in this category or below it"},
                    "pinned": {"type": "boolean", "default": false, "description": "Only pinned memories"},
                    "include_deprecated": {"type": "boolean", "default": false, "description": "Include deprecated memories"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                    "offset": {"type": "integer", "minimum": 0, "default": 0},
                }),
                &[],
            ),
            read_only.clone(),
        ),
        tool(
            "memory_forget",
            "Forget memories",
            "Forget memories for privacy: by id, by search query (every word must match), or created before a date. \
             Conditions given together must all hold. At least one is required. Use dry_run to preview.",
            schema(
                json!({
                    "ids": {"type": "array", "items": {"type": "string"}, "description": "Specific ids to forget"},
                    "query": {"type": "string", "minLength": 1, "description": "Forget memories matching every word of this query"},
                    "before_date": {"type": "string", "description": "Forget memories created before this date (ISO 8601)"},
                    "reason": {"type": "string", "description": "Why (never the memory's text)"},
                    "dry_run": {"type": "boolean", "default": false, "description": "Only list what would be forgotten"},
                }),
                &[],
            ),
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
        tool(
            "memory_pin",
            "Pin a memory",
            "Pin a memory: always a candidate for injection, ranked first by the baseline.",
            schema(
                json!({"id": {"type": "string", "description": "Memory id"}, "prerequisites": prerequisites.clone()}),
                &["id"],
            ),
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
        ),
        tool(
            "memory_unpin",
            "Unpin a memory",
            "Remove a memory's pin.",
            schema(json!({"id": {"type": "string", "description": "Memory id"}}), &["id"]),
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
        ),
        tool(
            "memory_feedback",
            "Rate a memory",
            "Say how relevant a memory was to the work (0 useless .. 1 exactly what was needed), or just whether it \
             was applicable. Give the session_id from the <engram-context> header: this is the training signal.",
            schema(
                json!({
                    "id": {"type": "string", "description": "Memory id"},
                    "relevance": {"type": "number", "minimum": 0, "maximum": 1, "description": "0 (useless) .. 1 (exactly what was needed)"},
                    "applicable": {"type": "boolean", "description": "Shorthand: true = 1, false = 0 (when relevance is not given)"},
                    "reason": {"type": "string", "description": "Why"},
                    "add_prerequisites": prerequisites.clone(),
                    "session_id": session.clone(),
                }),
                &["id"],
            ),
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}),
        ),
        tool(
            "memory_timeline",
            "Timeline",
            "Chronological activity: the events of one session (prompts, tools, edits, injections), or the sessions \
             and memories of a project around a date.",
            schema(
                json!({
                    "around": {"type": "string", "description": "Center on this date (ISO 8601); default now"},
                    "session_id": session.clone(),
                    "conversation_id": {"type": "string", "description": "Same as session_id"},
                    "project": {"type": "string", "description": "Only this project"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                }),
                &[],
            ),
            read_only.clone(),
        ),
        tool(
            "memory_stats",
            "Memory statistics",
            "Counts of memories, sessions, injections and feedback, the predictor's status, storage size, top tags.",
            schema(json!({"project": {"type": "string", "description": "Only this project"}}), &[]),
            read_only.clone(),
        ),
    ];
    tools.extend(knowledge_tools(&session, &read_only));
    tools.extend(env_tools(&types, prerequisites));
    // Provenance (seed 003): why a span of code exists.
    tools.push(crate::provenance::mcp_tool());
    tools
}

/// Seed 004's tools (`shared::domain::knowledge`): conflicts, the graph,
/// stash and resume, checkpoints.
fn knowledge_tools(session: &Value, read_only: &Value) -> Vec<Value> {
    let writes =
        json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false});
    vec![
        tool(
            "memory_resolve",
            "Resolve a memory conflict",
            "Resolve a memory conflict: a new memory was found similar to an existing one and is waiting. Ask the \
             user which applies, then: merge (same thing: fold it into the existing memory), keep_both (a different \
             memory), replace (the new one replaces the old, which is superseded and no longer injected), skip \
             (do not save the new one).",
            schema(
                json!({
                    "conflict_id": {"type": "string", "description": "Id of the conflicting new memory (obs_…)"},
                    "existing_id": {"type": "string", "description": "Id of the existing memory it conflicts with (default: the one it was flagged against)"},
                    "action": {"type": "string", "enum": knowledge::apply::action::CHOICES, "description": "merge · keep_both · replace · skip"},
                }),
                &["conflict_id", "action"],
            ),
            writes.clone(),
        ),
        tool(
            "memory_staging",
            "Observation buffer",
            "Memories waiting for a decision: conflicts to resolve (needs_clarification), and pending, persisted or \
             discarded ones.",
            schema(
                json!({
                    "status": {"type": "string", "enum": ["needs_clarification", "pending", "persisted", "discarded"], "description": "Only this status"},
                    "project": {"type": "string", "description": "Only this project"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                }),
                &[],
            ),
            read_only.clone(),
        ),
        tool(
            "memory_graph",
            "Knowledge graph",
            "The knowledge graph around a memory: memories connected to it (derives_from, leads_to, supports, \
             contradicts, refines, supersedes), breadth-first up to a depth.",
            schema(
                json!({
                    "id": {"type": "string", "description": "Memory id"},
                    "depth": {"type": "integer", "minimum": 1, "maximum": knowledge::graph::HARD_MAX_DEPTH, "default": 2, "description": "Edges away at most"},
                }),
                &["id"],
            ),
            read_only.clone(),
        ),
        tool(
            "memory_stash",
            "Stashed conversations",
            "List stashed sidebar conversations (paused threads that can be resumed); with list=false, stash the \
             current conversation of a session under a label instead.",
            schema(
                json!({
                    "list": {"type": "boolean", "default": true, "description": "List stashed conversations (false: stash the current one)"},
                    "group": {"type": "string", "description": "Only this stash group"},
                    "project": {"type": "string", "description": "Only this project"},
                    "label": {"type": "string", "description": "With list=false: the label (default: made from the topic)"},
                    "session_id": session.clone(),
                }),
                &[],
            ),
            writes.clone(),
        ),
        tool(
            "memory_resume",
            "Resume a conversation",
            "Resume a stashed conversation (conv_…) or a checkpoint (fork_…): returns its context to continue from, \
             and the harness session id for native resume.",
            schema(
                json!({
                    "conversation_id": {"type": "string", "description": "Conversation (conv_…) or checkpoint (fork_…) id, or words of a stash label"},
                    "session_id": session.clone(),
                }),
                &["conversation_id"],
            ),
            writes.clone(),
        ),
        tool(
            "memory_checkpoint",
            "Create a checkpoint",
            "Create a session save point: captures the observation count, conversations and last observation; \
             memory_resume with its fork_ id comes back to it.",
            schema(
                json!({
                    "label": {"type": "string", "description": "Label (default: the time)"},
                    "session_id": session.clone(),
                }),
                &["session_id"],
            ),
            writes,
        ),
    ]
}

/// The environment model's tools (`shared::domain::env`): categories, and update
/// with prerequisites (seed 000's engrammar_categorize / _update).
fn env_tools(types: &[&str], prerequisites: Value) -> Vec<Value> {
    let write =
        json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
    vec![
        tool(
            "memory_categorize",
            "Categorize a memory",
            "Add a memory to categories (paths such as development/frontend/react) or remove it from them.",
            schema(
                json!({
                    "id": {"type": "string", "description": "Memory id"},
                    "add": {"type": "array", "items": {"type": "string"}, "description": "Category paths to join"},
                    "remove": {"type": "array", "items": {"type": "string"}, "description": "Category paths to leave"},
                }),
                &["id"],
            ),
            write.clone(),
        ),
        tool(
            "memory_update",
            "Update a memory",
            "Change a memory's text, type, importance, tags, project, category (its only one from now on) or \
             prerequisites (whole; {} clears).",
            schema(
                json!({
                    "id": {"type": "string", "description": "Memory id"},
                    "text": {"type": "string", "minLength": 1, "maxLength": ops::MAX_TEXT, "description": "New text"},
                    "type": {"type": "string", "enum": types, "description": "New type"},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "New importance"},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": ops::MAX_TAG_CHARS}, "maxItems": ops::MAX_TAGS, "description": "New tags (replace the old)"},
                    "project": {"type": "string", "description": "New project"},
                    "category": {"type": "string", "description": "Its category from now on"},
                    "prerequisites": prerequisites,
                }),
                &["id"],
            ),
            write,
        ),
        tool(
            "memory_deprecate",
            "Deprecate a memory",
            "Mark a memory outdated (it is no longer injected), optionally replaced by another.",
            schema(
                json!({
                    "id": {"type": "string", "description": "Memory id"},
                    "reason": {"type": "string", "description": "Why"},
                    "superseded_by": {"type": "string", "description": "The memory that replaces it"},
                }),
                &["id"],
            ),
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
    ]
}

/// Typed access to a tool's arguments, refusing unknown keys and wrong types.
struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(tool_def: &Value, value: &'a Value) -> std::result::Result<Args<'a>, ToolError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let map = match value {
            Value::Object(m) => m,
            Value::Null => EMPTY.get_or_init(Map::new),
            _ => return Err(ToolError("arguments must be a JSON object".into())),
        };
        let props = tool_def.pointer("/inputSchema/properties").and_then(Value::as_object);
        for key in map.keys() {
            if !props.is_some_and(|p| p.contains_key(key)) {
                let known: Vec<&String> = props.map(|p| p.keys().collect()).unwrap_or_default();
                return Err(ToolError(format!(
                    "unknown argument {key:?}; this tool takes: {}",
                    known.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
        }
        if let Some(required) = tool_def.pointer("/inputSchema/required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if map.get(r).is_none_or(Value::is_null) {
                    return Err(ToolError(format!("missing required argument {r:?}")));
                }
            }
        }
        Ok(Args { map })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn str(&self, key: &str) -> std::result::Result<Option<String>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ToolError(format!("{key} must be a string, not {other}"))),
        }
    }

    fn required_str(&self, key: &str) -> std::result::Result<String, ToolError> {
        match self.str(key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(ToolError(format!("{key} must be a non-empty string"))),
        }
    }

    fn bool(&self, key: &str) -> std::result::Result<Option<bool>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(ToolError(format!("{key} must be true or false, not {other}"))),
        }
    }

    fn number(&self, key: &str) -> std::result::Result<Option<f64>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| ToolError(format!("{key} is not a number"))),
            Some(other) => Err(ToolError(format!("{key} must be a number, not {other}"))),
        }
    }

    fn count(&self, key: &str, default: usize, min: usize, max: usize) -> std::result::Result<usize, ToolError> {
        match self.number(key)? {
            None => Ok(default),
            Some(x) if x.fract() == 0.0 && x >= min as f64 && x <= max as f64 => Ok(x as usize),
            Some(x) => Err(ToolError(format!("{key} must be a whole number from {min} to {max}, not {x}"))),
        }
    }

    fn strings(&self, key: &str) -> std::result::Result<Vec<String>, ToolError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(ToolError(format!("{key} must hold strings, not {other}"))),
                })
                .collect(),
            Some(other) => Err(ToolError(format!("{key} must be an array of strings, not {other}"))),
        }
    }

    fn date(&self, key: &str) -> std::result::Result<Option<Ts>, ToolError> {
        match self.str(key)? {
            None => Ok(None),
            Some(s) => Ts::parse(s.trim()).map(Some).ok_or_else(|| {
                ToolError(format!("{key} {s:?} is not an ISO 8601 date or time (2026-01-31, 2026-01-31T12:00:00Z)"))
            }),
        }
    }
}

/// The MCP server's state: the data home, its configuration, the journal
/// (opened on first use) and the serving model (reloaded when promoted).
#[derive(Debug)]
pub struct McpServer {
    paths: Option<Paths>,
    config: Config,
    journal: Option<Journal>,
    model: Option<(String, LoadedModel)>,
    tools: Vec<Value>,
    clock: fn() -> Ts,
    /// The discovery engine's external calls still running (joined at the end).
    background: Vec<std::thread::JoinHandle<()>>,
}

impl McpServer {
    /// A server for `paths` (none when no data home could be found: every
    /// tool call then explains it).
    pub fn new(paths: Option<Paths>) -> McpServer {
        let config = crate::native::load_config(paths.as_ref()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "invalid configuration; using the defaults");
            Config::default()
        });
        McpServer { paths, config, journal: None, model: None, tools: tools(), clock: Ts::now, background: Vec::new() }
    }

    /// Runs the discovery engine's LLM part (`knowledge.graph.discovery`, off
    /// by default) for a memory just saved, on a thread of its own with its
    /// own journal, so the tool answers at once (seed 004: it "fires
    /// asynchronously").
    fn discover_in_background(&mut self, id: shared::base::ids::MemoryId) {
        if !self.config.knowledge.graph.discovery.enabled() {
            return;
        }
        let Some(paths) = self.paths.clone() else { return };
        let config = self.config.clone();
        let clock = self.clock;
        self.background.retain(|h| !h.is_finished());
        self.background.push(std::thread::spawn(move || {
            let outcome = shared::projection::open(&paths, &writer_name())
                .map_err(|e| e.to_string())
                .and_then(|mut j| knowledge::discovery::external(&mut j, &config, &id, clock()));
            match outcome {
                Ok(made) if !made.is_empty() => tracing::info!(memory = %id, discoveries = made.len(), "discovered"),
                Ok(_) => {}
                Err(e) => tracing::warn!(memory = %id, error = %e, "the discovery command failed"),
            }
        }));
    }

    /// Waits for the background work (at the end of the connection).
    pub fn finish(&mut self) {
        for h in self.background.drain(..) {
            let _ = h.join();
        }
    }

    fn journal(&mut self) -> std::result::Result<&mut Journal, ToolError> {
        if self.journal.is_none() {
            let Some(paths) = &self.paths else {
                return Err(ToolError("no data home: set ENGRAM_HOME (or HOME)".into()));
            };
            self.journal = Some(shared::projection::open(paths, &writer_name())?);
        }
        let Some(j) = self.journal.as_mut() else { unreachable!("opened above") };
        j.reopen_if_replaced()?;
        Ok(j)
    }

    /// The serving model, reloaded when `models/current` names another one.
    fn refresh_model(&mut self) {
        let Some(paths) = &self.paths else { return };
        let hash = shared::storage::models::current_hash(paths).ok().flatten();
        if hash.as_deref() == self.model.as_ref().map(|(h, _)| h.as_str()) {
            return;
        }
        self.model = match (hash, injection::load_model(paths)) {
            (Some(h), Ok(Some(m))) => Some((h, m)),
            (_, Err(e)) => {
                tracing::warn!(error = %e, "cannot load the serving model; searching with the baseline");
                None
            }
            _ => None,
        };
    }

    /// Answers one request; `Err` is a JSON-RPC error.
    pub fn request(&mut self, method: &str, params: &Value) -> std::result::Result<Value, RpcError> {
        let stateless = params.pointer("/_meta/io.modelcontextprotocol~1protocolVersion").and_then(Value::as_str)
            == Some(STATELESS_VERSION);
        let mut result = match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
                let version = SUPPORTED_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&SUPPORTED_VERSIONS[0]);
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": server_info(),
                    "instructions": INSTRUCTIONS,
                })
            }
            "server/discover" => {
                let mut versions = vec![STATELESS_VERSION];
                versions.extend(SUPPORTED_VERSIONS);
                return Ok(json!({
                    "resultType": "complete",
                    "supportedVersions": versions,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": server_info(),
                    "instructions": INSTRUCTIONS,
                }));
            }
            "ping" => json!({}),
            "tools/list" => {
                let mut r = json!({"tools": self.tools});
                if stateless {
                    r["ttlMs"] = json!(3_600_000);
                    r["cacheScope"] = json!("public");
                }
                r
            }
            "tools/call" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                let Some(def) = self.tools.iter().find(|t| t["name"] == name.as_str()).cloned() else {
                    return Err(RpcError::invalid_params(format!(
                        "unknown tool {name:?}; tools: {}",
                        self.tools.iter().filter_map(|t| t["name"].as_str()).collect::<Vec<_>>().join(", ")
                    )));
                };
                let args = params.get("arguments").cloned().unwrap_or(Value::Null);
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.call(&name, &def, &args)));
                match outcome {
                    Ok(Ok(value)) => tool_ok(value),
                    Ok(Err(ToolError(msg))) => tool_error(&name, &msg),
                    Err(panic) => {
                        self.journal = None;
                        let msg = crate::training::panic_message(panic.as_ref());
                        tracing::error!(tool = %name, panic = %msg, "a tool panicked; the server keeps serving");
                        tool_error(&name, &format!("internal error: {msg}"))
                    }
                }
            }
            other => return Err(RpcError::method_not_found(other)),
        };
        if stateless && let Value::Object(m) = &mut result {
            m.insert("resultType".into(), json!("complete"));
        }
        Ok(result)
    }

    fn call(&mut self, name: &str, def: &Value, args: &Value) -> ToolResult {
        let a = Args::new(def, args)?;
        match name {
            "memory_search" => self.search(&a),
            "memory_save" => self.save(&a),
            "memory_get" => self.get(&a),
            "memory_list" => self.list(&a),
            "memory_forget" => self.forget(&a),
            "memory_pin" | "memory_unpin" => {
                let id = a.required_str("id")?;
                let pinned = name == "memory_pin";
                let prerequisites = a.get("prerequisites").map(env_ops::parse_prerequisites).transpose()?;
                let now = (self.clock)();
                ops::set_pinned(self.journal()?, id.trim(), pinned, now)?;
                if let Some(p) = prerequisites {
                    env_ops::set_prerequisites(self.journal()?, id.trim(), p, now)?;
                }
                Ok(json!({"id": id.trim(), "pinned": pinned}))
            }
            "memory_categorize" | "memory_update" => self.env_tool(name, &a),
            "memory_feedback" => self.feedback(&a),
            "memory_timeline" => self.timeline(&a),
            "memory_stats" => self.stats(&a),
            "memory_resolve" => self.resolve(&a),
            "memory_staging" => self.staging(&a),
            "memory_graph" => self.graph(&a),
            "memory_deprecate" => self.deprecate(&a),
            "memory_stash" => self.stash(&a),
            "memory_resume" => self.resume(&a),
            "memory_checkpoint" => self.checkpoint(&a),
            "memory_explain" => self.explain(&a),
            other => Err(ToolError(format!("tool {other} has no implementation"))),
        }
    }

    fn session(&mut self, a: &Args<'_>, key: &str) -> std::result::Result<Option<SessionKey>, ToolError> {
        let Some(s) = a.str(key)? else { return Ok(None) };
        let s = s.trim().to_owned();
        if s.contains(':') {
            return Ok(Some(ops::parse_session(&s)?));
        }
        let found: Option<String> = self
            .journal()?
            .store()
            .conn()
            .query_row(
                "SELECT session_key FROM sessions WHERE harness_session_id = ?1 ORDER BY last_event_ms DESC LIMIT 1",
                [&s],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| ToolError(format!("find session {s}: {e}")))?;
        match found {
            Some(k) => Ok(Some(SessionKey(k))),
            None => Err(ToolError(format!(
                "no session {s:?}; give the session key from the <engram-context> header (harness:id)"
            ))),
        }
    }

    fn search(&mut self, a: &Args<'_>) -> ToolResult {
        let memory_type = a.str("type")?.filter(|t| t != "all").map(|t| ops::check_type(&t)).transpose()?;
        let p = SearchParams {
            query: a.required_str("query")?,
            memory_type,
            project: a.str("project")?,
            tags: a.strings("tags")?,
            from: a.date("from_date")?,
            to: a.date("to_date")?,
            limit: a.count("limit", 20, 1, search::MAX_LIMIT)?,
            session: self.session(a, "session_id")?,
            category: a.str("category")?,
        };
        self.refresh_model();
        let now = (self.clock)();
        let config = self.config.clone();
        let model = self.model.take();
        let outcome = (|| {
            let journal = self.journal()?;
            let (result, events) =
                search::search(journal.store(), &config, model.as_ref().map(|(_, m)| m.serving()), &p, now)?;
            if let Err(e) = journal.append(&events) {
                tracing::error!(error = %e, "could not record the search");
            }
            Ok::<_, ToolError>(result)
        })();
        self.model = model;
        Ok(serde_json::to_value(outcome?).unwrap_or(Value::Null))
    }

    fn save(&mut self, a: &Args<'_>) -> ToolResult {
        let content = a.required_str("content")?;
        let memory_type = ops::check_type(&a.required_str("type")?)?;
        let mut tags = a.strings("tags")?;
        let importance = a.number("importance")?.unwrap_or(0.7) as f32;
        let sources = a.strings("source_knowledge_ids")?;
        let session = self.session(a, "session_id")?;
        let now = (self.clock)();
        // Blank entries are dropped; the count and each tag are checked by
        // `ops::check_tags`, as for every writer.
        tags.retain(|t| !t.trim().is_empty());
        let new = NewMemory {
            text: content,
            memory_type,
            importance,
            project: a.str("project")?,
            tags,
            pinned: a.bool("pinned")?.unwrap_or(false),
        };
        let config = self.config.clone();
        let journal = self.journal()?;
        match knowledge::ops::save(journal, &config, new, &Origin::agent(session), &sources, now)? {
            Saved::Added { id, edges } => {
                let saved = ops::require(journal.store(), id.as_str())?;
                let graph = knowledge::graph::connected(journal.store(), id.as_str())?;
                let out =
                    json!({"id": id.as_str(), "saved": true, "memory": saved, "edges": edges, "connections": graph});
                self.discover_in_background(id);
                Ok(out)
            }
            Saved::Duplicate { of } => Ok(json!({
                "saved": false,
                "duplicate_of": of,
                "note": "an exact duplicate of a stored memory: not saved (the stored one counts one more occurrence)",
            })),
            Saved::Staged { stage_id, memory_id, with } => Ok(json!({
                "saved": false,
                "staged": true,
                "conflict_id": stage_id,
                "memory_id": memory_id,
                "existing": with,
                "choices": knowledge::apply::action::CHOICES,
                "note": "similar to a stored memory: ask the user whether it is the same thing (merge), a new one \
                         (keep_both), a replacement of the old one (replace) or not worth saving (skip), then call \
                         memory_resolve with conflict_id and action",
            })),
        }
    }

    fn get(&mut self, a: &Args<'_>) -> ToolResult {
        let ids = a.strings("ids")?;
        if ids.is_empty() || ids.len() > 50 {
            return Err(ToolError("ids must hold 1 to 50 memory ids".into()));
        }
        let with_context = a.bool("include_context")?.unwrap_or(false);
        let with_graph = a.bool("include_graph")?.unwrap_or(false);
        let max_depth = self.config.knowledge.graph.max_depth;
        let store = self.journal()?.store();
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for id in &ids {
            let id = id.trim();
            match ops::show(store, id) {
                Ok(d) => {
                    let mut v = serde_json::to_value(&d).unwrap_or(Value::Null);
                    if with_context {
                        v["context"] = session_context(store, &d).map_err(|e| ToolError(e.to_string()))?;
                    }
                    if with_graph {
                        v["graph"] = graph(store, &d).map_err(|e| ToolError(e.to_string()))?;
                        let g = knowledge::graph::memory_graph(store, id, max_depth)?;
                        v["edges"] = serde_json::to_value(&g.edges).unwrap_or(Value::Null);
                        v["reasoning_chain"] = serde_json::to_value(&g.reasoning_chain).unwrap_or(Value::Null);
                        v["chain_depth_limited"] = json!(g.chain_depth_limited);
                    }
                    found.push(v);
                }
                Err(OpError::UnknownMemory(_)) => missing.push(id.to_owned()),
                Err(e) => return Err(e.into()),
            }
        }
        if found.is_empty() {
            return Err(ToolError(format!("no memory with id {}", missing.join(", "))));
        }
        Ok(json!({"memories": found, "missing": missing}))
    }

    fn list(&mut self, a: &Args<'_>) -> ToolResult {
        let memory_type = a.str("type")?;
        let project = a.str("project")?;
        let pinned = a.bool("pinned")?.unwrap_or(false);
        let deprecated = a.bool("include_deprecated")?.unwrap_or(false);
        let limit = a.count("limit", 20, 1, 200)?;
        let offset = a.count("offset", 0, 0, usize::MAX >> 1)?;
        let store = self.journal()?.store();
        let project = project.map(|p| shared::domain::env::store::resolve_project(store.conn(), &p));
        let category = a
            .str("category")?
            .map(|c| shared::domain::env::categories::normalize(&c))
            .transpose()
            .map_err(ToolError)?;
        // A knowledge type lists every kind under it (`issue`: gotchas, struggles).
        let (memory_type, others) = match memory_type.as_deref() {
            Some(t) => {
                let (types, others) = queries::listed_types_json(ops::check_type(t).map_err(ToolError::from)?);
                (Some(types), others)
            }
            None => (None, false),
        };
        let known = queries::known_types_json();
        let filter = format!(
            "is_deleted = 0 AND (?1 OR deprecated = 0) AND (?2 IS NULL OR project = ?2)
             AND {types} AND (NOT ?4 OR pinned = 1)
             AND (?7 IS NULL OR id IN (SELECT engram_id FROM engram_categories
                  WHERE category_path = ?7 OR (category_path > ?7 || '/' AND category_path < ?7 || '0')))",
            types = queries::type_filter_sql("type", "?3", "?8", "?9"),
        );
        let conn = store.conn();
        let sql_err = |e: rusqlite::Error| ToolError(format!("list memories: {e}"));
        let total: i64 = conn
            .query_row(
                &format!("SELECT COUNT(*) FROM memories WHERE {filter} AND ?5 IS NOT NULL AND ?6 IS NOT NULL"),
                rusqlite::params![deprecated, project, memory_type, pinned, 0, 0, category, others, known],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        let ids: Vec<String> = conn
            .prepare(&format!(
                "SELECT id FROM memories WHERE {filter} ORDER BY pinned DESC, created_ms DESC, id LIMIT ?5 OFFSET ?6"
            ))
            .and_then(|mut s| {
                s.query_map(
                    rusqlite::params![
                        deprecated,
                        project,
                        memory_type,
                        pinned,
                        limit as i64,
                        offset as i64,
                        category,
                        others,
                        known
                    ],
                    |r| r.get(0),
                )?
                .collect()
            })
            .map_err(sql_err)?;
        let memories = ids.iter().map(|id| ops::require(store, id)).collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(json!({"total": total, "offset": offset, "memories": memories}))
    }

    fn forget(&mut self, a: &Args<'_>) -> ToolResult {
        let ids: Vec<String> = a.strings("ids")?.into_iter().map(|s| s.trim().to_owned()).collect();
        let query = a.str("query")?.filter(|q| !q.trim().is_empty());
        let before = a.date("before_date")?;
        let reason = a.str("reason")?;
        let dry_run = a.bool("dry_run")?.unwrap_or(false);
        if ids.is_empty() && query.is_none() && before.is_none() {
            return Err(ToolError("give at least one of ids, query, before_date".into()));
        }
        let now = (self.clock)();
        let journal = self.journal()?;
        let conn = journal.store().conn();
        let mut unknown = Vec::new();
        let matching = match &query {
            Some(q) => Some(all_words_matching(conn, q)?),
            None => None,
        };
        let mut selected: Vec<(String, i64, bool)> = if !ids.is_empty() {
            let mut v = Vec::new();
            for id in &ids {
                match journal.store().memory(id)? {
                    Some(m) => v.push((m.id, m.created_ms, m.is_deleted)),
                    None => unknown.push(id.clone()),
                }
            }
            v
        } else if let Some(m) = &matching {
            m.clone()
        } else {
            let b = before.map_or(i64::MIN, |b| b.0);
            conn.prepare(
                "SELECT id, created_ms, is_deleted FROM memories WHERE is_deleted = 0 AND created_ms < ?1 LIMIT 500",
            )
            .and_then(|mut s| s.query_map([b], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
            .map_err(|e| ToolError(format!("select memories to forget: {e}")))?
        };
        // Every condition given must hold.
        if let Some(m) = &matching {
            let ids: std::collections::HashSet<&str> = m.iter().map(|(id, _, _)| id.as_str()).collect();
            selected.retain(|(id, _, _)| ids.contains(id.as_str()));
        }
        if let Some(b) = before {
            selected.retain(|(_, created, _)| *created < b.0);
        }
        let already: Vec<String> = selected.iter().filter(|s| s.2).map(|s| s.0.clone()).collect();
        let targets: Vec<String> = selected.into_iter().filter(|s| !s.2).map(|s| s.0).collect();
        if !dry_run {
            for id in &targets {
                ops::forget(journal, id, reason.clone(), now)?;
            }
        }
        let key = if dry_run { "would_forget" } else { "forgotten" };
        let mut out = json!({"dry_run": dry_run, "already_forgotten": already, "unknown": unknown});
        out[key] = json!(targets);
        if !dry_run && !targets.is_empty() {
            out["note"] = json!("hidden at once; `engram-ingestor compact` removes the text from the tapes");
        }
        Ok(out)
    }

    fn feedback(&mut self, a: &Args<'_>) -> ToolResult {
        let id = a.required_str("id")?.trim().to_owned();
        let relevance = match (a.number("relevance")?, a.bool("applicable")?) {
            (Some(r), _) => r as f32,
            (None, Some(true)) => 1.0,
            (None, Some(false)) => 0.0,
            (None, None) => return Err(ToolError("give relevance (0-1) or applicable (true/false)".into())),
        };
        let session = self.session(a, "session_id")?;
        let reason = a.str("reason")?;
        let now = (self.clock)();
        let origin = Origin::agent(session.clone());
        let more = a.get("add_prerequisites").map(env_ops::parse_prerequisites).transpose()?;
        ops::feedback(self.journal()?, &id, relevance, reason, &origin, now)?;
        let prerequisites = match more {
            Some(more) => Some(env_ops::add_prerequisites(self.journal()?, &id, &more, now)?),
            None => None,
        };
        Ok(json!({"id": id, "relevance": relevance, "session": session.map(|s| s.0), "recorded": true,
                  "prerequisites": prerequisites}))
    }

    /// The environment model's tools: categorize, and update (a memory's
    /// fields, its category and its prerequisites).
    fn env_tool(&mut self, name: &str, a: &Args<'_>) -> ToolResult {
        let id = a.required_str("id")?.trim().to_owned();
        let now = (self.clock)();
        match name {
            "memory_categorize" => {
                let (add, remove) = (a.strings("add")?, a.strings("remove")?);
                let categories = env_ops::categorize(self.journal()?, &id, &add, &remove, false, now)?;
                Ok(json!({"id": id, "categories": categories}))
            }
            _ => {
                let tags = a.get("tags").is_some().then(|| a.strings("tags")).transpose()?;
                let change = ops::MemoryChange {
                    text: a.str("text")?,
                    memory_type: a.str("type")?.as_deref().map(ops::check_type).transpose()?,
                    importance: a.number("importance")?.map(|x| x as f32),
                    tags,
                    project: a.str("project")?,
                };
                let category = a.str("category")?;
                let prerequisites = a.get("prerequisites").map(env_ops::parse_prerequisites).transpose()?;
                if let Some(c) = &category {
                    shared::domain::env::categories::normalize(c).map_err(ToolError)?;
                }
                if change == ops::MemoryChange::default() && category.is_none() && prerequisites.is_none() {
                    return Err(ToolError(
                        "nothing to update: give text, type, importance, tags, project, category or prerequisites"
                            .into(),
                    ));
                }
                if change != ops::MemoryChange::default() {
                    ops::update(self.journal()?, &id, change, now)?;
                }
                if let Some(c) = category {
                    env_ops::categorize(self.journal()?, &id, &[c], &[], true, now)?;
                }
                if let Some(p) = prerequisites {
                    env_ops::set_prerequisites(self.journal()?, &id, p, now)?;
                }
                let store = self.journal()?.store();
                let categories = shared::domain::env::categories::of(store.conn(), &id).unwrap_or_default();
                Ok(json!({"id": id, "updated": true, "memory": ops::require(store, &id)?, "categories": categories}))
            }
        }
    }

    fn timeline(&mut self, a: &Args<'_>) -> ToolResult {
        let session = match self.session(a, "session_id")? {
            Some(s) => Some(s),
            None => self.session(a, "conversation_id")?,
        };
        let project = a.str("project")?;
        let limit = a.count("limit", 20, 1, 200)?;
        let around = a.date("around")?;
        let now = (self.clock)();
        let store = self.journal()?.store();
        let project = project.map(|p| shared::domain::env::store::resolve_project(store.conn(), &p));
        let entries = match &session {
            Some(s) => session_timeline(store, s, around, limit),
            None => project_timeline(store, project.as_deref(), around.unwrap_or(now), limit),
        }
        .map_err(|e| ToolError(e.to_string()))?;
        if let (Some(s), true) = (&session, entries.is_empty()) {
            return Err(ToolError(format!("no events recorded for session {s}")));
        }
        Ok(json!({"session": session.map(|s| s.0), "project": project, "entries": entries}))
    }

    /// `memory_explain` (provenance, seed 003): see [`crate::provenance::mcp_tool`].
    fn explain(&mut self, a: &Args<'_>) -> ToolResult {
        let Some(paths) = self.paths.clone() else {
            return Err(ToolError("no data home: set ENGRAM_HOME or HOME".into()));
        };
        let line = |k: &str| -> std::result::Result<Option<u32>, ToolError> {
            a.number(k)?
                .map(|x| {
                    if x >= 1.0 && x.fract() == 0.0 && x <= f64::from(u32::MAX) {
                        Ok(x as u32)
                    } else {
                        Err(ToolError(format!("{k} must be a line number (1 or more), not {x}")))
                    }
                })
                .transpose()
        };
        let defaults = shared::domain::provenance::explain::ExplainOptions::default();
        let opts = shared::domain::provenance::explain::ExplainOptions {
            before: a.count("before", 3, 0, 50)?,
            after: a.count("after", 3, 0, 50)?,
            brief: a.bool("brief")?.unwrap_or(false),
            min_confidence: a.number("min_confidence")?.map_or(defaults.min_confidence, |x| x.clamp(0.0, 1.0) as f32),
            all: a.bool("all")?.unwrap_or(false),
            limit: a.count("limit", 5, 1, 50)?,
            windows: 2,
            event_chars: 800,
            ..defaults
        };
        let expand = match a.get("expand_until") {
            Some(_) => Some(a.count("expand_until", 1, 1, 1000)?),
            None => None,
        };
        let (file, text) = (a.str("file")?, a.str("text")?);
        Ok(crate::provenance::mcp_explain(&paths, file, (line("start")?, line("end")?), text, expand, &opts)?)
    }

    fn stats(&mut self, a: &Args<'_>) -> ToolResult {
        let project = a.str("project")?;
        let config = self.config.clone();
        let paths = self.paths.clone();
        let store = self.journal()?.store();
        let project = project.map(|p| shared::domain::env::store::resolve_project(store.conn(), &p));
        let mut v = stats(store, project.as_deref()).map_err(|e| ToolError(e.to_string()))?;
        let state = shared::domain::rank::PredictorState::load(store, &config.predictor)?;
        v["predictor"] = json!({
            "status": state.status_line(),
            "alpha": state.alpha,
            "model_version": state.model_version,
            "scored_sessions": state.scored_sessions,
            "comparisons": state.comparisons,
        });
        v["knowledge"] = knowledge_stats(store, project.as_deref()).map_err(|e| ToolError(e.to_string()))?;
        if let Some(p) = paths {
            v["storage_bytes"] = json!(dir_size(&p.tapes()) + dir_size(&p.db_generations()));
            v["data_home"] = json!(p.home().display().to_string());
        }
        Ok(v)
    }
}

impl McpServer {
    fn resolve(&mut self, a: &Args<'_>) -> ToolResult {
        let conflict = a.required_str("conflict_id")?.trim().to_owned();
        let action = a.required_str("action")?;
        let existing = a.str("existing_id")?.filter(|e| !e.trim().is_empty());
        let config = self.config.clone();
        let now = (self.clock)();
        let journal = self.journal()?;
        let r = knowledge::ops::resolve(journal, &config, &conflict, &action, existing.as_deref(), "agent", now)?;
        let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
        if let Some(id) = &r.memory_id {
            v["memory"] = serde_json::to_value(ops::require(journal.store(), id.as_str())?).unwrap_or(Value::Null);
        }
        let left = knowledge::buffer::pending_conflicts(journal.store(), None)?.len();
        v["conflicts_left"] = json!(left);
        Ok(v)
    }

    fn staging(&mut self, a: &Args<'_>) -> ToolResult {
        let project = a.str("project")?;
        let store = self.journal()?.store();
        let filter = knowledge::buffer::StagedFilter {
            status: a.str("status")?,
            project: project.map(|p| shared::domain::env::store::resolve_project(store.conn(), &p)),
            limit: a.count("limit", 20, 1, 200)?,
        };
        let staged = knowledge::buffer::list(store, &filter)?;
        let counts = knowledge::buffer::counts(store)?;
        Ok(json!({"counts": counts, "staged": staged}))
    }

    fn graph(&mut self, a: &Args<'_>) -> ToolResult {
        let id = a.required_str("id")?.trim().to_owned();
        let depth = a.count("depth", 2, 1, knowledge::graph::HARD_MAX_DEPTH as usize)? as u32;
        let store = self.journal()?.store();
        ops::require_live(store, &id)?;
        let g = knowledge::graph::traverse(store, &id, depth, knowledge::graph::Direction::Both)?
            .ok_or_else(|| ToolError(format!("no memory with id {id}")))?;
        let chain = knowledge::graph::derivation_chain(store, &id, depth)?;
        let mut v = serde_json::to_value(&g).unwrap_or(Value::Null);
        v["reasoning_chain"] = serde_json::to_value(&chain.steps).unwrap_or(Value::Null);
        v["chain_depth_limited"] = json!(chain.depth_limited);
        Ok(v)
    }

    fn deprecate(&mut self, a: &Args<'_>) -> ToolResult {
        let id = a.required_str("id")?.trim().to_owned();
        let reason = a.str("reason")?;
        let by = a.str("superseded_by")?.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        let now = (self.clock)();
        let journal = self.journal()?;
        ops::deprecate(journal, &id, reason, by.clone(), now)?;
        Ok(json!({"id": id, "deprecated": true, "superseded_by": by}))
    }

    fn stash(&mut self, a: &Args<'_>) -> ToolResult {
        let list = a.bool("list")?.unwrap_or(true);
        let session = self.session(a, "session_id")?;
        let now = (self.clock)();
        if !list {
            let Some(session) = session else {
                return Err(ToolError("to stash, give session_id (the session key of <engram-context>)".into()));
            };
            let label = a.str("label")?;
            let journal = self.journal()?;
            let s = knowledge::conversation::stash(journal, &session, label.as_deref(), now)?;
            return Ok(json!({"stashed": true, "conversation": s,
                "note": format!("resume it later with memory_resume(conversation_id=\"{}\")", s.conversation_id)}));
        }
        let project = a.str("project")?;
        let store = self.journal()?.store();
        let filter = knowledge::conversation::StashFilter {
            group: a.str("group")?,
            project: project.map(|p| shared::domain::env::store::resolve_project(store.conn(), &p)),
            include_resumed: false,
            limit: 50,
        };
        let stashed = knowledge::conversation::list(store, &filter)?;
        let checkpoints = knowledge::checkpoint::list(store, session.as_ref().map(|s| s.as_str()), 10)?;
        Ok(json!({"stashed": stashed, "count": stashed.len(), "checkpoints": checkpoints}))
    }

    fn resume(&mut self, a: &Args<'_>) -> ToolResult {
        let what = a.required_str("conversation_id")?;
        let session = self.session(a, "session_id")?;
        let now = (self.clock)();
        let journal = self.journal()?;
        let r = knowledge::conversation::resume(journal, &what, session.as_ref(), now)?;
        Ok(serde_json::to_value(&r).unwrap_or(Value::Null))
    }

    fn checkpoint(&mut self, a: &Args<'_>) -> ToolResult {
        let Some(session) = self.session(a, "session_id")? else {
            return Err(ToolError("give session_id (the session key of <engram-context>)".into()));
        };
        let label = a.str("label")?;
        let now = (self.clock)();
        let journal = self.journal()?;
        let c = knowledge::checkpoint::create(journal, &session, label.as_deref(), now)?;
        Ok(
            json!({"checkpoint": c, "note": format!("memory_resume(conversation_id=\"{}\") comes back to it", c.checkpoint_id)}),
        )
    }
}

/// The knowledge part of `memory_stats`: memories by seed 004 knowledge
/// type, edges by relation, the observation buffer, stashes, checkpoints.
pub(crate) fn knowledge_stats(
    store: &shared::storage::store::Store,
    project: Option<&str>,
) -> shared::base::error::Result<Value> {
    let mut by_kind: BTreeMap<&'static str, i64> =
        shared::storage::event::MemoryType::KNOWLEDGE.iter().map(|t| (t.as_str(), 0)).collect();
    let rows: Vec<(shared::storage::event::MemoryType, i64)> = store
        .conn()
        .prepare(
            "SELECT type, COUNT(*) FROM memories WHERE is_deleted = 0 AND (?1 IS NULL OR project = ?1) GROUP BY type",
        )
        .and_then(|mut s| s.query_map([project], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(|e| shared::base::error::Error::sqlite("count memories by type", e))?;
    for (t, n) in rows {
        *by_kind.entry(t.knowledge_type().as_str()).or_default() += n;
    }
    let one = |sql: &str| -> shared::base::error::Result<i64> {
        store.conn().query_row(sql, [project], |r| r.get(0)).map_err(|e| shared::base::error::Error::sqlite("count", e))
    };
    Ok(json!({
        "by_knowledge_type": by_kind,
        "edges": knowledge::graph::edge_counts(store)?,
        "staging": knowledge::buffer::counts(store)?,
        "stashed": one("SELECT COUNT(*) FROM conversations WHERE status = 'stashed' AND (?1 IS NULL OR project = ?1)")?,
        "checkpoints": one("SELECT COUNT(*) FROM session_forks WHERE (?1 IS NULL OR project = ?1)")?,
        "summaries": one("SELECT COUNT(*) FROM session_summaries m JOIN sessions s ON s.session_key = m.session_key
                          WHERE (?1 IS NULL OR s.project = ?1)")?,
    }))
}

/// Live memories whose text holds every word of `q` (at most 500).
fn all_words_matching(
    conn: &rusqlite::Connection,
    q: &str,
) -> std::result::Result<Vec<(String, i64, bool)>, ToolError> {
    let words: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    if words.is_empty() {
        return Err(ToolError(format!("query {q:?} has no searchable word")));
    }
    conn.prepare(
        "SELECT m.id, m.created_ms, m.is_deleted FROM memories_fts f JOIN memories m ON m.rowid = f.rowid
         WHERE memories_fts MATCH ?1 AND m.is_deleted = 0 LIMIT 500",
    )
    .and_then(|mut s| s.query_map([words.join(" ")], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
    .map_err(|e| ToolError(format!("search memories to forget: {e}")))
}

fn server_info() -> Value {
    json!({"name": "engram", "title": "Engram memory", "version": env!("CARGO_PKG_VERSION")})
}

fn tool_ok(value: Value) -> Value {
    let text = serde_json::to_string(&value).unwrap_or_default();
    let structured = if value.is_object() { value } else { json!({"result": value}) };
    json!({"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": false})
}

fn tool_error(name: &str, msg: &str) -> Value {
    json!({"content": [{"type": "text", "text": format!("{name}: {msg}")}], "isError": true})
}

fn session_context(store: &shared::storage::store::Store, d: &MemoryDetails) -> rusqlite::Result<Value> {
    let mut out = Vec::new();
    for key in &d.sessions {
        let row: Option<Value> = store
            .conn()
            .query_row(
                "SELECT harness, project, cwd, git_branch, title, started_ms, last_event_ms, prompt_count
                 FROM sessions WHERE session_key = ?1",
                [key],
                |r| {
                    Ok(json!({
                        "session": key, "harness": r.get::<_, String>(0)?, "project": r.get::<_, Option<String>>(1)?,
                        "cwd": r.get::<_, Option<String>>(2)?, "branch": r.get::<_, Option<String>>(3)?,
                        "title": r.get::<_, Option<String>>(4)?, "started_at": Ts(r.get(5)?).to_rfc3339(),
                        "last_event_at": Ts(r.get(6)?).to_rfc3339(), "prompts": r.get::<_, i64>(7)?,
                    }))
                },
            )
            .optional()?;
        let Some(mut row) = row else { continue };
        let prompts: Vec<String> = store
            .conn()
            .prepare(
                "SELECT text FROM session_events WHERE session_key = ?1 AND kind = 'msg.in'
                 AND (origin IS NULL OR origin = 'user') AND text != '' ORDER BY lsn DESC LIMIT 3",
            )?
            .query_map([key], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        row["last_prompts"] = json!(prompts);
        out.push(row);
    }
    Ok(json!(out))
}

fn graph(store: &shared::storage::store::Store, d: &MemoryDetails) -> rusqlite::Result<Value> {
    let conn = store.conn();
    let supersedes: Vec<String> = conn
        .prepare("SELECT id FROM memories WHERE superseded_by = ?1")?
        .query_map([&d.memory.id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let siblings: Vec<String> = match &d.memory.source_session {
        Some(s) => conn
            .prepare(
                "SELECT id FROM memories WHERE source_session = ?1 AND id != ?2 AND is_deleted = 0
                 ORDER BY created_ms LIMIT 20",
            )?
            .query_map([s, &d.memory.id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?,
        None => Vec::new(),
    };
    Ok(json!({
        "superseded_by": d.memory.superseded_by,
        "supersedes": supersedes,
        "same_session": siblings,
    }))
}

fn session_timeline(
    store: &shared::storage::store::Store,
    session: &SessionKey,
    around: Option<Ts>,
    limit: usize,
) -> rusqlite::Result<Vec<Value>> {
    let conn = store.conn();
    let center = around.map_or(i64::MAX, |t| t.0);
    let mut rows: Vec<(i64, i64, Value)> = conn
        .prepare(
            "SELECT lsn, ts_ms, kind, origin, tool, file, is_error, text FROM session_events
             WHERE session_key = ?1 ORDER BY ABS(ts_ms - ?2) ASC, lsn DESC LIMIT ?3",
        )?
        .query_map(rusqlite::params![session.as_str(), center.min(i64::MAX / 2), limit as i64], |r| {
            let text: String = r.get(7)?;
            Ok((
                r.get(1)?,
                r.get(0)?,
                json!({
                    "at": Ts(r.get(1)?).to_rfc3339(), "kind": r.get::<_, String>(2)?,
                    "origin": r.get::<_, Option<String>>(3)?, "tool": r.get::<_, Option<String>>(4)?,
                    "file": r.get::<_, Option<String>>(5)?, "error": r.get::<_, bool>(6)?,
                    "text": shared::storage::store::cap(&text, 300),
                }),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let rankings: Vec<(i64, i64, Value)> = conn
        .prepare(
            "SELECT r.served_ms, r.trigger, r.ranking_id,
                    (SELECT json_group_array(memory_id) FROM ranking_candidates c
                     WHERE c.ranking_id = r.ranking_id AND c.injected = 1)
             FROM rankings r WHERE r.session_key = ?1 ORDER BY ABS(r.served_ms - ?2) LIMIT ?3",
        )?
        .query_map(rusqlite::params![session.as_str(), center.min(i64::MAX / 2), limit as i64], |r| {
            let injected: String = r.get(3)?;
            Ok((
                r.get(0)?,
                i64::MAX,
                json!({
                    "at": Ts(r.get(0)?).to_rfc3339(), "kind": "ranking.served", "trigger": r.get::<_, String>(1)?,
                    "ranking_id": r.get::<_, String>(2)?,
                    "injected": serde_json::from_str::<Value>(&injected).unwrap_or(Value::Null),
                }),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    rows.extend(rankings);
    rows.sort_by_key(|(ts, lsn, _)| (*ts, *lsn));
    if rows.len() > limit {
        // Keep the `limit` nearest to the center.
        let c = center.min(i64::MAX / 2);
        let mut by_distance: Vec<usize> = (0..rows.len()).collect();
        by_distance.sort_by_key(|&i| (rows[i].0 - c).abs());
        let keep: std::collections::HashSet<usize> = by_distance.into_iter().take(limit).collect();
        rows = rows.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, r)| r).collect();
    }
    Ok(rows.into_iter().map(|(_, _, v)| v).collect())
}

fn project_timeline(
    store: &shared::storage::store::Store,
    project: Option<&str>,
    around: Ts,
    limit: usize,
) -> rusqlite::Result<Vec<Value>> {
    let conn = store.conn();
    let mut rows: Vec<(i64, Value)> = conn
        .prepare(
            "SELECT id, type, content, created_ms, project FROM memories
             WHERE is_deleted = 0 AND (?1 IS NULL OR project = ?1) ORDER BY ABS(created_ms - ?2) LIMIT ?3",
        )?
        .query_map(rusqlite::params![project, around.0, limit as i64], |r| {
            let content: String = r.get(2)?;
            Ok((
                r.get(3)?,
                json!({
                    "at": Ts(r.get(3)?).to_rfc3339(), "kind": "memory", "id": r.get::<_, String>(0)?,
                    "type": r.get::<_, String>(1)?, "text": shared::storage::store::cap(&content, 300),
                    "project": r.get::<_, Option<String>>(4)?,
                }),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let sessions: Vec<(i64, Value)> = conn
        .prepare(
            "SELECT session_key, project, cwd, title, started_ms, last_event_ms, prompt_count, end_reason FROM sessions
             WHERE parent_session_key IS NULL AND (?1 IS NULL OR project = ?1)
             ORDER BY ABS(started_ms - ?2) LIMIT ?3",
        )?
        .query_map(rusqlite::params![project, around.0, limit as i64], |r| {
            Ok((
                r.get(4)?,
                json!({
                    "at": Ts(r.get(4)?).to_rfc3339(), "kind": "session", "session": r.get::<_, String>(0)?,
                    "project": r.get::<_, Option<String>>(1)?, "cwd": r.get::<_, Option<String>>(2)?,
                    "title": r.get::<_, Option<String>>(3)?, "last_event_at": Ts(r.get(5)?).to_rfc3339(),
                    "prompts": r.get::<_, i64>(6)?, "end_reason": r.get::<_, Option<String>>(7)?,
                }),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    rows.extend(sessions);
    rows.sort_by_key(|(t, _)| (*t - around.0).abs());
    rows.truncate(limit);
    rows.sort_by_key(|(t, _)| *t);
    Ok(rows.into_iter().map(|(_, v)| v).collect())
}

pub(crate) fn stats(store: &shared::storage::store::Store, project: Option<&str>) -> rusqlite::Result<Value> {
    let conn = store.conn();
    let one = |sql: &str| -> rusqlite::Result<i64> { conn.query_row(sql, [project], |r| r.get(0)) };
    let by = |sql: &str| -> rusqlite::Result<BTreeMap<String, i64>> {
        conn.prepare(sql)?.query_map([project], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
    };
    let mem = "FROM memories WHERE (?1 IS NULL OR project = ?1)";
    let tags: Vec<Value> = conn
        .prepare(
            "SELECT j.value, COUNT(*) AS n FROM memories m, json_each(m.tags) j
             WHERE m.is_deleted = 0 AND (?1 IS NULL OR m.project = ?1) GROUP BY j.value ORDER BY n DESC, j.value LIMIT 10",
        )?
        .query_map([project], |r| Ok(json!({"tag": r.get::<_, String>(0)?, "count": r.get::<_, i64>(1)?})))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(json!({
        "project": project,
        "memories": {
            "live": one(&format!("SELECT COUNT(*) {mem} AND is_deleted = 0"))?,
            "pinned": one(&format!("SELECT COUNT(*) {mem} AND is_deleted = 0 AND pinned = 1"))?,
            "deprecated": one(&format!("SELECT COUNT(*) {mem} AND is_deleted = 0 AND deprecated = 1"))?,
            "forgotten": one(&format!("SELECT COUNT(*) {mem} AND is_deleted = 1"))?,
            "by_type": by(&format!("SELECT type, COUNT(*) {mem} AND is_deleted = 0 GROUP BY type"))?,
            "by_source": by(&format!("SELECT source, COUNT(*) {mem} AND is_deleted = 0 GROUP BY source"))?,
        },
        "sessions": {
            "total": one("SELECT COUNT(*) FROM sessions WHERE (?1 IS NULL OR project = ?1)")?,
            "ended": one("SELECT COUNT(*) FROM sessions WHERE (?1 IS NULL OR project = ?1) AND ended_ms IS NOT NULL")?,
            "by_harness": by("SELECT harness, COUNT(*) FROM sessions WHERE (?1 IS NULL OR project = ?1) GROUP BY harness")?,
        },
        "rankings": {
            "served": one("SELECT COUNT(*) FROM rankings WHERE (?1 IS NULL OR project = ?1)")?,
            "memories_injected": one("SELECT COALESCE(SUM(injected_count), 0) FROM rankings WHERE (?1 IS NULL OR project = ?1)")?,
            "by_trigger": by("SELECT trigger, COUNT(*) FROM rankings WHERE (?1 IS NULL OR project = ?1) GROUP BY trigger")?,
        },
        "feedback": {
            "count": one("SELECT COUNT(*) FROM memory_feedback f JOIN memories m ON m.id = f.memory_id
                          WHERE (?1 IS NULL OR m.project = ?1)")?,
        },
        "fts_hits": one("SELECT COUNT(*) FROM fts_hits h LEFT JOIN sessions s ON s.session_key = h.session_key
                         WHERE (?1 IS NULL OR s.project = ?1)")?,
        "top_tags": tags,
    }))
}

pub(crate) fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// Serves MCP on stdin/stdout until the end of input or a signal.
pub fn run(shutdown: &Shutdown) -> Result<()> {
    let (conn, threads) = Connection::<Raw>::stdio(MAX_LINE);
    serve(conn, McpServer::new(Paths::from_env().ok()), shutdown);
    threads.join().map_err(|e| Error::io("write responses to", Path::new("stdout"), e))
}

/// Serves one connection (stdio, or in memory in tests) until it ends.
pub fn serve(conn: Connection<Raw>, mut server: McpServer, shutdown: &Shutdown) {
    let Connection { receiver, sender } = conn;
    loop {
        if shutdown.requested() {
            break;
        }
        let msg = match receiver.recv_timeout(TICK) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let line = match msg {
            Message::Request { id, method, params } => {
                let span = tracing::debug_span!("mcp", %id, %method).entered();
                let line = match server.request(&method, &params.0) {
                    Ok(result) => encode_result(&id, &result),
                    Err(e) => encode_error(&id, &e),
                };
                drop(span);
                line
            }
            Message::Notification { method, .. } => {
                tracing::debug!(%method, "notification");
                continue;
            }
            Message::Invalid { id: Some(id), error } => encode_error(&id, &error),
            Message::Invalid { id: None, error } => {
                tracing::debug!(%error, "invalid notification ignored");
                continue;
            }
        };
        if sender.send(line).is_err() {
            break;
        }
    }
    server.finish();
}
