//! The event schema: the only shape that is written to the tape log or passed
//! between the Engram binaries.
//!
//! An [`Event`] is a header (schema version, id, time, writer, session) plus a
//! [`Body`] tagged by its kind (`"msg.in"`, `"memory.added"`, …). On disk it is
//! one JSON object:
//!
//! ```json
//! {"v":1,"id":"ev_…","ts":1756860755576,"w":"engram-ingestor/0.1.0","s":"claude:fe5e…","k":"msg.in","b":{"text":"Fix the bug"}}
//! ```
//!
//! The set of kinds is closed for this version, but a reader must survive a
//! newer writer: an event whose kind it does not know, or whose body it cannot
//! read, decodes to [`Body::Unknown`], is kept verbatim (re-encoding it gives the
//! same `k` and `b`), is skipped by the projection, and is counted and logged.
//! Unknown fields inside known bodies are ignored.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::ids::{EventId, MemoryId, SessionKey};
use crate::time::Ts;

/// The schema version this build writes. Bump when a body gains a field whose
/// absence would change what the projection computes.
pub const SCHEMA_VERSION: u32 = 1;

/// One state change, as appended to the tape log.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Schema version of the writer.
    pub v: u32,
    /// Unique id, fixed at creation.
    pub id: EventId,
    /// The time the event describes (a harness record's own timestamp, the
    /// moment a ranking was served, …), not the time it was appended.
    pub ts: Ts,
    /// Which program wrote it, e.g. `engram-scorer/0.1.0`.
    pub writer: String,
    /// The session it belongs to, where one applies.
    pub session: Option<SessionKey>,
    /// What happened.
    pub body: Body,
}

impl Event {
    /// A new event with a fresh id, stamped with this crate's schema version.
    pub fn new(ts: Ts, writer: &str, session: Option<SessionKey>, body: Body) -> Event {
        Event { v: SCHEMA_VERSION, id: EventId::generate(ts), ts, writer: writer.to_owned(), session, body }
    }

    /// The kind tag (`"msg.in"`, …).
    pub fn kind(&self) -> &str {
        self.body.kind()
    }

    /// Encodes to one line of JSON (no trailing newline).
    pub fn to_json(&self) -> Vec<u8> {
        // Serialising plain data to a Vec cannot fail: no map has non-string
        // keys and no value is a non-finite float written by serde_json's
        // `Serializer` (it writes `null` for those).
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes one event. A body this build cannot read (unknown kind, newer
    /// shape) decodes to [`Body::Unknown`] rather than failing; only a record
    /// without a readable header is an error.
    pub fn from_json(bytes: &[u8]) -> Result<Event, serde_json::Error> {
        match serde_json::from_slice::<Event>(bytes) {
            Ok(event) => Ok(event),
            Err(typed_err) => {
                let raw: RawEvent = serde_json::from_slice(bytes)?;
                Ok(Event {
                    v: raw.v,
                    id: raw.id,
                    ts: raw.ts,
                    writer: raw.w,
                    session: raw.s,
                    body: Body::Unknown(UnknownBody {
                        reason: if Body::is_known_kind(&raw.k) {
                            format!("unreadable body: {typed_err}")
                        } else {
                            "unknown kind".to_owned()
                        },
                        kind: raw.k,
                        body: raw.b,
                    }),
                })
            }
        }
    }

    /// The memory this event is about, if any.
    pub fn memory_id(&self) -> Option<&MemoryId> {
        match &self.body {
            Body::MemoryAdded(b) => Some(&b.memory_id),
            Body::MemoryUpdated(b) => Some(&b.memory_id),
            Body::MemoryPinned(b) | Body::MemoryUnpinned(b) => Some(&b.memory_id),
            Body::MemoryDeprecated(b) => Some(&b.memory_id),
            Body::MemoryForgotten(b) => Some(&b.memory_id),
            Body::MemoryFeedback(b) => Some(&b.memory_id),
            Body::MemoryEmbedded(b) => Some(&b.memory_id),
            Body::MemoryCategorized(b) => Some(&b.memory_id),
            Body::MemoryPrerequisitesSet(b) => Some(&b.memory_id),
            _ => None,
        }
    }
}

/// The header and raw body, used when the typed decode fails.
#[derive(Deserialize)]
struct RawEvent {
    #[serde(default)]
    v: u32,
    id: EventId,
    ts: Ts,
    #[serde(default)]
    w: String,
    #[serde(default)]
    s: Option<SessionKey>,
    k: String,
    #[serde(default)]
    b: Value,
}

/// A body this build cannot interpret; kept verbatim.
#[derive(Clone, Debug, PartialEq)]
pub struct UnknownBody {
    /// The kind tag as written.
    pub kind: String,
    /// The body as written.
    pub body: Value,
    /// Why it could not be read (not serialised).
    pub reason: String,
}

macro_rules! bodies {
    ($( $(#[$doc:meta])* $kind:literal => $variant:ident($ty:ty) ),* $(,)?) => {
        /// What an event records, tagged by kind.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Body {
            $( $(#[$doc])* $variant($ty), )*
            /// A kind this build does not know, or a body it cannot read.
            Unknown(UnknownBody),
        }

        impl Body {
            /// Every kind this build knows.
            pub const KNOWN_KINDS: &'static [&'static str] = &[$($kind),*];

            /// The kind tag.
            pub fn kind(&self) -> &str {
                match self {
                    $( Body::$variant(_) => $kind, )*
                    Body::Unknown(u) => &u.kind,
                }
            }

            /// Whether this build knows `kind`.
            pub fn is_known_kind(kind: &str) -> bool {
                Self::KNOWN_KINDS.contains(&kind)
            }

            fn serialize_into<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self {
                    $( Body::$variant(b) => map.serialize_entry("b", b), )*
                    Body::Unknown(u) => map.serialize_entry("b", &u.body),
                }
            }

            fn next_known<'de, A: MapAccess<'de>>(kind: &str, map: &mut A) -> Result<Option<Body>, A::Error> {
                match kind {
                    $( $kind => map.next_value::<$ty>().map(|b| Some(Body::$variant(b))), )*
                    _ => Ok(None),
                }
            }

            fn from_value(kind: &str, value: Value) -> Result<Option<Body>, serde_json::Error> {
                match kind {
                    $( $kind => serde_json::from_value::<$ty>(value).map(|b| Some(Body::$variant(b))), )*
                    _ => Ok(None),
                }
            }
        }
    };
}

bodies! {
    /// A session began (or was first seen).
    "session.started" => SessionStarted(SessionStarted),
    /// A session ended (hook, or idle when a scan sees no new content).
    "session.ended" => SessionEnded(SessionEnded),
    /// Session metadata: model, repository state, titles, compaction markers.
    "meta" => Meta(Meta),
    /// Input to the agent: a user prompt, a compact summary, injected context.
    "msg.in" => MsgIn(MsgIn),
    /// Output of the agent: text or reasoning.
    "msg.out" => MsgOut(MsgOut),
    /// The agent invoked a tool.
    "tool.call" => ToolCall(ToolCall),
    /// A tool returned.
    "tool.result" => ToolResult(ToolResult),
    /// The agent read a file or a line range.
    "code.read" => CodeRead(CodeRead),
    /// The agent changed a file.
    "code.edit" => CodeEdit(CodeEdit),
    /// Agent-declared lineage between two spans.
    "span.link" => SpanLink(SpanLink),
    /// A harness record of a type the adapter does not interpret.
    "opaque" => Opaque(Opaque),
    /// How far a harness file has been ingested.
    "source.cursor" => SourceCursor(SourceCursor),
    /// A memory was created.
    "memory.added" => MemoryAdded(MemoryAdded),
    /// A memory changed (text, importance, tags, merged duplicates).
    "memory.updated" => MemoryUpdated(MemoryUpdated),
    /// A memory is pinned: always a candidate, baseline score 1.0.
    "memory.pinned" => MemoryPinned(MemoryRef),
    /// A pin was removed.
    "memory.unpinned" => MemoryUnpinned(MemoryRef),
    /// A memory is outdated (optionally superseded by another).
    "memory.deprecated" => MemoryDeprecated(MemoryDeprecated),
    /// A memory is forgotten: hidden at once, its text removed by compaction.
    "memory.forgotten" => MemoryForgotten(MemoryForgotten),
    /// Explicit relevance feedback on a memory.
    "memory.feedback" => MemoryFeedback(MemoryFeedback),
    /// A pre-computed embedding for a memory.
    "memory.embedded" => MemoryEmbedded(MemoryEmbedded),
    /// A ranking was served: every candidate with both rankers' scores and ranks.
    "ranking.served" => RankingServed(RankingServed),
    /// Memories full-text search matched for a prompt during a session.
    "fts.hits" => FtsHits(FtsHits),
    /// The outcome of a finished session.
    "session.scored" => SessionScored(SessionScored),
    /// Predictor against baseline on one scored session.
    "comparison.recorded" => ComparisonRecorded(ComparisonRecorded),
    /// A training run finished (promoted or not).
    "training.run" => TrainingRun(TrainingRun),
    /// New weights now serve.
    "model.promoted" => ModelPromoted(ModelPromoted),
    /// Sustained low success reset α and triggered a retrain.
    "drift.reset" => DriftReset(DriftReset),
    // vault (issue 21): the tape log's own events.
    /// A frame that damage made unreadable, replaced by `tapes repair`.
    "tape.lost" => TapeLost(TapeLost),
    /// Keyed fingerprints of a forgotten memory's texts: never learned again.
    "forget.fingerprints" => ForgetFingerprints(ForgetFingerprints),
    // Environment model (shared::env): projects, stacks, tags.
    /// What environment detection found for a session's working directory.
    "env.detected" => EnvDetected(EnvDetected),
    /// A memory joined or left categories (seed 001 "categories").
    "memory.categorized" => MemoryCategorized(MemoryCategorized),
    /// A memory's prerequisites were set (seed 000 "Prerequisites").
    "memory.prerequisites_set" => MemoryPrerequisitesSet(MemoryPrerequisitesSet),
    // Seed 004's memory model (`crate::knowledge`).
    /// A typed edge of the knowledge graph was added (or its strength changed).
    "knowledge.edge" => EdgeAdded(EdgeAdded),
    /// An edge of the knowledge graph was removed.
    "knowledge.edge_removed" => EdgeRemoved(EdgeRemoved),
    /// A memory was put in the observation buffer (a conflict to resolve, or pending curation).
    "knowledge.staged" => MemoryStaged(MemoryStaged),
    /// A staged memory was resolved: merged, kept, replacing, skipped, persisted or discarded.
    "knowledge.resolved" => StageResolved(StageResolved),
    /// A staged conflict was put before the user at a prompt.
    "knowledge.surfaced" => ConflictSurfaced(ConflictSurfaced),
    /// A conversation thread was parked for later.
    "conversation.stashed" => ConversationStashed(ConversationStashed),
    /// A stashed conversation (or a checkpoint) was resumed.
    "conversation.resumed" => ConversationResumed(ConversationResumed),
    /// A session save point was created.
    "checkpoint.created" => CheckpointCreated(CheckpointCreated),
    /// The topic-shift decision at a prompt.
    "topic.shift" => TopicShift(TopicShift),
    /// A session's summary.
    "session.summarized" => SessionSummarized(SessionSummarized),
    /// Duplicate memories were merged into one (the dedup pipeline's merge log).
    "memory.merged" => MemoriesMerged(MemoriesMerged),
    /// The dedup pipeline checked memories.
    "dedup.checked" => DedupChecked(DedupChecked),
    // Provenance (seed 003).
    /// A "why this code exists" note was put into a session before an edit.
    "provenance.noted" => ProvenanceNoted(ProvenanceNoted),
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = if self.session.is_some() { 7 } else { 6 };
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("v", &self.v)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("ts", &self.ts)?;
        map.serialize_entry("w", &self.writer)?;
        if let Some(s) = &self.session {
            map.serialize_entry("s", s)?;
        }
        map.serialize_entry("k", self.body.kind())?;
        self.body.serialize_into(&mut map)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Event, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an Engram event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut v = None;
        let mut id = None;
        let mut ts = None;
        let mut writer = None;
        let mut session = None;
        let mut kind: Option<String> = None;
        let mut body: Option<Body> = None;
        let mut deferred: Option<Value> = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "v" => v = Some(map.next_value()?),
                "id" => id = Some(map.next_value()?),
                "ts" => ts = Some(map.next_value()?),
                "w" => writer = Some(map.next_value()?),
                "s" => session = map.next_value()?,
                "k" => kind = Some(map.next_value()?),
                "b" => match kind.as_deref() {
                    // The writer puts `k` before `b`: decode the body in place.
                    Some(k) => match Body::next_known(k, &mut map)? {
                        Some(b) => body = Some(b),
                        None => return Err(de::Error::custom(format!("unknown kind {k}"))),
                    },
                    None => deferred = Some(map.next_value()?),
                },
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("k"))?;
        let body = match (body, deferred) {
            (Some(b), _) => b,
            (None, Some(value)) => Body::from_value(&kind, value)
                .map_err(de::Error::custom)?
                .ok_or_else(|| de::Error::custom(format!("unknown kind {kind}")))?,
            (None, None) => Body::from_value(&kind, Value::Object(Default::default()))
                .map_err(de::Error::custom)?
                .ok_or_else(|| de::Error::custom(format!("unknown kind {kind}")))?,
        };
        Ok(Event {
            v: v.unwrap_or(0),
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            ts: ts.ok_or_else(|| de::Error::missing_field("ts"))?,
            writer: writer.unwrap_or_default(),
            session,
            body,
        })
    }
}

impl Serialize for UnknownBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.body.serialize(serializer)
    }
}

// ---------------------------------------------------------------------------
// Session lifecycle
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Session content (seed 003 vocabulary)
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Memory lifecycle
// ---------------------------------------------------------------------------

/// Kinds of memory. Stored as text; unknown values are kept.
pub mod memory_type {
    /// A fact about the project or the world.
    pub const FACT: &str = "fact";
    /// A decision and its reason.
    pub const DECISION: &str = "decision";
    /// A preference of the user.
    pub const PREFERENCE: &str = "preference";
    /// A recurring pattern.
    pub const PATTERN: &str = "pattern";
    /// A known problem.
    pub const ISSUE: &str = "issue";
    /// Background context.
    pub const CONTEXT: &str = "context";
    /// The user corrected the agent.
    pub const CORRECTION: &str = "correction";
    /// A stated convention ("always", "never", "we use").
    pub const CONVENTION: &str = "convention";
    /// Unexpected tool or API behaviour.
    pub const GOTCHA: &str = "gotcha";
    /// Repeated failures before a success.
    pub const STRUGGLE: &str = "struggle";
    /// Knowledge derived or inferred by combining others (seed 004).
    pub const DISCOVERY: &str = "discovery";
}

/// A dense vector stored as base64 of little-endian f32 (compact on disk).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Embedding(pub Vec<f32>);

impl Serialize for Embedding {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(self.0.len() * 4);
        for x in &self.0 {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        serializer.serialize_str(&crate::base64::encode(&bytes))
    }
}

impl<'de> Deserialize<'de> for Embedding {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Embedding, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        let bytes = crate::base64::decode(&text).map_err(de::Error::custom)?;
        if !bytes.len().is_multiple_of(4) {
            return Err(de::Error::custom("embedding length is not a multiple of 4 bytes"));
        }
        Ok(Embedding(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
    }
}

/// `memory.added`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryAdded {
    /// The new memory's id.
    pub memory_id: MemoryId,
    /// The memory's text.
    pub content: String,
    /// See [`memory_type`].
    pub memory_type: String,
    /// 0.0..=1.0.
    pub importance: f32,
    /// Project it belongs to, if any.
    pub project: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Pinned from the start.
    pub pinned: bool,
    /// How it was created: `extracted`, `explicit`, `mcp`, `import`, `external`.
    pub source: String,
    /// The session it was learned from.
    pub source_session: Option<SessionKey>,
    /// The event in that session that triggered it.
    pub source_event: Option<EventId>,
    /// Speaker or author, when the memory is a quoted turn.
    pub speaker: Option<String>,
}

/// `memory.updated`: only the fields present change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryUpdated {
    /// Which memory.
    pub memory_id: MemoryId,
    /// New text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// New type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<String>,
    /// New importance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// New tag set (replaces the old one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// New project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Occurrences to add (a near-duplicate was merged into this memory).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub occurrences: u32,
    /// A further session this memory was seen in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen_in: Option<SessionKey>,
}

/// `memory.pinned` / `memory.unpinned`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryRef {
    /// Which memory.
    pub memory_id: MemoryId,
}

/// `memory.deprecated`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryDeprecated {
    /// Which memory.
    pub memory_id: MemoryId,
    /// Why.
    pub reason: String,
    /// The memory that replaces it.
    pub superseded_by: Option<MemoryId>,
}

/// `memory.forgotten`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryForgotten {
    /// Which memory.
    pub memory_id: MemoryId,
    /// Why (free text; never the memory's content).
    pub reason: String,
    /// Forgotten as the removal of data it came from (`remove-demo`), not as
    /// a judgment of its text: no fingerprint is kept and `compact` clears
    /// only the memory's own events, so the same text learned from other
    /// data (a real session, a person) is a memory like any other.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub relearnable: bool,
}

/// `memory.feedback`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryFeedback {
    /// Which memory.
    pub memory_id: MemoryId,
    /// 0.0 (useless or harmful) ..= 1.0 (exactly what was needed).
    pub relevance: f32,
    /// Free text.
    pub reason: String,
    /// Who gave it: `agent`, `user`, `judge`.
    pub by: String,
}

/// `memory.embedded`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryEmbedded {
    /// Which memory.
    pub memory_id: MemoryId,
    /// The vector.
    pub vector: Embedding,
    /// What produced it (model name).
    pub model: String,
}

// ---------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------

/// Why a candidate entered the pool.
pub mod source {
    /// FTS5 BM25 match of the query.
    pub const BM25: &str = "bm25";
    /// Top of the baseline effective score.
    pub const EFFECTIVE: &str = "effective";
    /// Pinned.
    pub const PINNED: &str = "pinned";
    /// Vector similarity.
    pub const VECTOR: &str = "vector";
    /// Neighbour (same source session, adjacent in time) of a strong hit.
    pub const NEIGHBOR: &str = "neighbor";
    /// Put in an injection slot by exploration.
    pub const EXPLORATION: &str = "exploration";
    /// Matched by FTS during the session but never in a served pool.
    pub const FTS_ONLY: &str = "fts_only";
    /// Learned in two or more projects whose shared tags the session's
    /// environment has (`shared::env::rank`).
    pub const STACK: &str = "stack";
    /// Linked in the knowledge graph to a strong hit (`crate::knowledge`).
    pub const GRAPH: &str = "graph";
}

/// What triggered a ranking.
pub mod trigger {
    /// Session start.
    pub const SESSION_START: &str = "session_start";
    /// A user prompt.
    pub const PROMPT: &str = "prompt";
    /// Before a tool runs.
    pub const TOOL: &str = "tool";
    /// An MCP `memory_search` or CLI `search`.
    pub const SEARCH: &str = "search";
    /// A sidecar `rank` request.
    pub const RPC: &str = "rpc";
}

/// One candidate of a served ranking.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServedCandidate {
    /// The memory.
    pub memory_id: MemoryId,
    /// See [`source`]; a candidate can come from several.
    pub sources: Vec<String>,
    /// Baseline score.
    pub baseline_score: f32,
    /// 1-based baseline rank.
    pub baseline_rank: u32,
    /// Predictor score (absent during cold start without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictor_score: Option<f32>,
    /// 1-based predictor rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictor_rank: Option<u32>,
    /// Score after fusion and diversity.
    pub final_score: f32,
    /// 1-based final rank.
    pub rank: u32,
    /// Put into the agent's context.
    pub injected: bool,
}

/// `ranking.served`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankingServed {
    /// Id of this ranking.
    pub ranking_id: String,
    /// See [`trigger`].
    pub trigger: String,
    /// The query text the rankers saw (cut to a few KB).
    pub query: String,
    /// Baseline weight used in fusion.
    pub alpha: f32,
    /// Serving model version, if any.
    pub model_version: Option<u64>,
    /// The predictor had no influence (cold start).
    pub cold_start: bool,
    /// Project of the session.
    pub project: Option<String>,
    /// All candidates.
    pub candidates: Vec<ServedCandidate>,
}

/// `fts.hits`: FTS matches of a prompt within a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FtsHits {
    /// The ranking served for the same prompt, if any.
    pub ranking_id: Option<String>,
    /// Memories matched.
    pub memory_ids: Vec<MemoryId>,
}

// ---------------------------------------------------------------------------
// Outcomes and learning
// ---------------------------------------------------------------------------

/// `session.scored`: the outcome of a finished session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionScored {
    /// Overall continuity score, 0..=1.
    pub score: f32,
    /// How sure the scorer is, 0..=1.
    pub confidence: f32,
    /// Memories that were injected.
    pub memories_recalled: u32,
    /// Injected memories judged used.
    pub memories_used: u32,
    /// Times the user had to re-explain something memory should have covered.
    pub novel_context_count: u32,
    /// Per-memory relevance judged from the transcript.
    pub relevance: BTreeMap<MemoryId, f32>,
    /// Final training labels (relevance combined with behavioural signals).
    pub labels: BTreeMap<MemoryId, f32>,
    /// The scorer's explanation.
    pub reasoning: String,
    /// Which scorer produced it (`continuity-v1`, `continuity-v1+judge`).
    pub scorer: String,
}

/// `comparison.recorded`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparisonRecorded {
    /// Id of the comparison row.
    pub comparison_id: String,
    /// NDCG@10 of the predictor's ranking over the labelled pool.
    pub predictor_ndcg: f32,
    /// NDCG@10 of the baseline's ranking.
    pub baseline_ndcg: f32,
    /// `None` when the session was excluded (low confidence, no predictor).
    pub predictor_won: Option<bool>,
    /// predictor − baseline.
    pub margin: f32,
    /// Continuity scorer confidence.
    pub scorer_confidence: f32,
    /// Whether this session updated the success-rate EMA.
    pub ema_updated: bool,
    /// Success rate after this session.
    pub success_rate: f32,
    /// α after this session.
    pub alpha: f32,
    /// Predictor top-10 ids, in order.
    pub predictor_top_ids: Vec<MemoryId>,
    /// Baseline top-10 ids, in order.
    pub baseline_top_ids: Vec<MemoryId>,
    /// Labels used.
    pub relevance_scores: BTreeMap<MemoryId, f32>,
    /// Share of injected memories later matched by FTS.
    pub fts_overlap_score: Option<f32>,
    /// Project of the session.
    pub project: Option<String>,
    /// Candidates in the labelled pool.
    pub candidate_count: u32,
    /// Sessions since cold-start exit, counting this one (0 while in cold start).
    pub sessions_after_cold_start: u32,
    /// Whether cold start has been exited as of this session.
    pub cold_start_exited: bool,
}

/// Canary metrics of a training run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CanaryMetrics {
    /// NDCG@10 of the candidate model on the canary set.
    pub ndcg: Option<f32>,
    /// Candidate minus serving model.
    pub ndcg_delta: Option<f32>,
    /// NDCG@10 of the serving model.
    pub serving_ndcg: Option<f32>,
    /// NDCG@10 of the baseline.
    pub baseline_ndcg: Option<f32>,
    /// Variance of candidate scores on the canary set.
    pub score_variance: Option<f32>,
    /// Share of canary lists whose top-5 changed from the serving model.
    pub topk_churn: Option<f32>,
    /// Mean top-5 overlap with the serving model.
    pub top5_overlap: Option<f32>,
    /// Lists in the canary set.
    pub sessions: u32,
}

/// `training.run`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainingRun {
    /// Id of the run.
    pub run_id: String,
    /// Version the weights would get if promoted.
    pub model_version: u64,
    /// Final training loss.
    pub loss: f32,
    /// Final validation loss.
    pub valid_loss: Option<f32>,
    /// Training lists used.
    pub sample_count: u32,
    /// Epochs completed.
    pub epochs: u32,
    /// Steps taken.
    pub steps: u64,
    /// Wall time.
    pub duration_ms: u64,
    /// Canary evaluation.
    pub canary: CanaryMetrics,
    /// All validation gates passed.
    pub gates_passed: bool,
    /// Why a gate failed.
    pub failure: Option<String>,
    /// blake3 of the checkpoint written (when gates passed).
    pub checkpoint: Option<String>,
    /// The run was a drift-recovery retrain.
    pub drift_retrain: bool,
}

/// `model.promoted`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelPromoted {
    /// New serving version.
    pub model_version: u64,
    /// blake3 of the checkpoint file (its name under `models/`).
    pub checkpoint: String,
    /// The training run.
    pub run_id: String,
}

/// `drift.reset`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DriftReset {
    /// Success rate that triggered it.
    pub success_rate: f32,
    /// Consecutive low sessions.
    pub window: u32,
}

// ---------------------------------------------------------------------------
// vault (issue 21): the tape log's own events
// ---------------------------------------------------------------------------

/// `tape.lost`: stands in for a frame whose bytes damage made unreadable, so
/// that the log keeps one frame per position. Applying it changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TapeLost {
    /// The damaged segment's file name.
    pub segment: String,
    /// The first and last positions of the run of frames lost with this one.
    pub first_lsn: u64,
    /// See `first_lsn`.
    pub last_lsn: u64,
    /// The file in the tape directory's `quarantine/` keeping the damaged bytes.
    pub quarantine: String,
    /// What was wrong.
    pub reason: String,
}

/// `forget.fingerprints`: keyed fingerprints (`forget::Key::fingerprint`)
/// of the texts a forgotten memory had. No text is ever learned again whose
/// fingerprint is recorded; the text itself is not kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ForgetFingerprints {
    /// The forgotten memory.
    pub memory_id: MemoryId,
    /// `fp1_` and 32 hex digits each.
    pub fingerprints: Vec<String>,
}

// ---------------------------------------------------------------------------
// Environment model (shared::env)
// ---------------------------------------------------------------------------

/// `env.detected`: the environment detection found for a working directory
/// when it happened (seeds 000, 001 and 004). The projection reads only this,
/// never the file system. With a session, it is that session's environment
/// (the latest one wins); without, it only makes the project known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvDetected {
    /// The working directory looked at.
    pub cwd: String,
    /// The project's root directory.
    pub root: String,
    /// The project's key: the normalised git remote, else the repository's or
    /// root's path (`shared::env::project`).
    pub project: String,
    /// The project's name, for people.
    pub name: String,
    /// The normalised git remote, when the repository has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The marker that decided the root (`.git`, `package.json`, …); absent
    /// when none was found and the working directory is the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// The technology stack, from marker files and dependencies (sorted).
    pub stack: Vec<String>,
    /// The environment's tags (sorted, unique): the stack, and what the
    /// path, the remote and the directory structure say.
    pub tags: Vec<String>,
    /// The operating system (`linux`, `darwin`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// The MCP servers configured for the session (sorted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
}

/// `memory.categorized`: category paths (`/`-separated, lower case, e.g.
/// `development/frontend/react`) a memory joins or leaves. With `replace`,
/// it leaves every category it had first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryCategorized {
    /// The memory.
    pub memory_id: MemoryId,
    /// Paths it joins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
    /// Paths it leaves.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
    /// Leave every current category before joining `add`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
}

/// `memory.prerequisites_set`: a memory's prerequisites, whole (an empty
/// object clears them; `shared::env::prereq`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryPrerequisitesSet {
    /// The memory.
    pub memory_id: MemoryId,
    /// `{tags, repos, os, paths, mcp_servers}`, each a list of strings.
    pub prerequisites: crate::env::prereq::Prerequisites,
}

// ---------------------------------------------------------------------------
// Seed 004's memory model: knowledge graph, observation buffer, conversations,
// checkpoints, topic shifts, summaries; seed 000's dedup merge log
// (`crate::knowledge`)
// ---------------------------------------------------------------------------

/// `knowledge.edge`: `from` → `to` with a relation (see
/// `crate::knowledge::graph::Relation`) and a strength in `[0, 1]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgeAdded {
    /// Id of the edge (`edge_…`, derived from its ends and relation).
    pub edge_id: String,
    /// Source memory.
    pub from: MemoryId,
    /// Target memory.
    pub to: MemoryId,
    /// `derives_from`, `leads_to`, `supports`, `contradicts`, `refines`, `supersedes`.
    pub relation: String,
    /// Confidence in the relation, `[0, 1]`.
    pub strength: f32,
    /// Who made it: `source` (named by the writer), `discovery`, `external`, `resolve`, `user`, `dedup`.
    pub origin: String,
    /// Why (free text).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `knowledge.edge_removed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EdgeRemoved {
    /// The edge.
    pub edge_id: String,
    /// Why.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `knowledge.staged`: a memory in the observation buffer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryStaged {
    /// Id of the buffer entry (`obs_…`).
    pub stage_id: String,
    /// `needs_clarification` (a conflict), `pending` (awaiting curation) or
    /// `discarded` (a duplicate, kept for the record).
    pub status: String,
    /// The memory it becomes when persisted (its id reserved).
    pub memory: MemoryAdded,
    /// The existing memory it is similar to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict_with: Option<MemoryId>,
    /// How similar, `[0, 1]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// Why it was staged.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `knowledge.resolved`: what became of a staged memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageResolved {
    /// The buffer entry.
    pub stage_id: String,
    /// `merge`, `keep_both`, `replace`, `skip` (seed 004 `memory_resolve`),
    /// `persist` or `discard` (curation).
    pub action: String,
    /// The existing memory it was resolved against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_id: Option<MemoryId>,
    /// The memory it ended up in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<MemoryId>,
    /// `user`, `agent`, `curation`.
    pub by: String,
}

/// `knowledge.surfaced`: a staged conflict was shown at a prompt of the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConflictSurfaced {
    /// The buffer entry.
    pub stage_id: String,
}

/// `conversation.stashed`: the event's session from `started_ms` to
/// `ended_ms`, parked under a label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConversationStashed {
    /// Id (`conv_…`).
    pub conversation_id: String,
    /// The user's label, or one made from the topic.
    pub label: String,
    /// Stashed by topic-shift detection rather than asked for.
    pub auto: bool,
    /// The topic-shift score that stashed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// Project of the session.
    pub project: Option<String>,
    /// Stash group (the session's).
    pub stash_group: String,
    /// Start of the thread (ms).
    pub started_ms: i64,
    /// End of the thread (ms).
    pub ended_ms: i64,
    /// What it was about.
    pub summary: String,
    /// Its user prompts, oldest first (cut).
    pub prompts: Vec<String>,
    /// Files it read or edited.
    pub files: Vec<String>,
}

/// `conversation.resumed`: resumed in the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConversationResumed {
    /// A conversation (`conv_…`) or a checkpoint (`fork_…`).
    pub conversation_id: String,
}

/// What a checkpoint captured of its session (seed 004 `SessionFork.snapshot`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointSnapshot {
    /// Tool calls of the session so far.
    pub observation_count: u64,
    /// Its stashed conversations so far.
    pub conversation_ids: Vec<String>,
    /// The last tool call recorded.
    pub last_observation_id: Option<String>,
    /// The last user prompt.
    pub last_prompt: Option<String>,
    /// Files read or edited so far, most recent first.
    pub files: Vec<String>,
    /// Memories staged and not yet resolved.
    pub staged: u64,
}

/// `checkpoint.created`: a save point of the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointCreated {
    /// Id (`fork_…`).
    pub checkpoint_id: String,
    /// The user's label, or why it was made.
    pub label: String,
    /// Made automatically (before a destructive command, or by the buffer).
    pub auto: bool,
    /// The command that triggered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Project of the session.
    pub project: Option<String>,
    /// The snapshot.
    pub snapshot: CheckpointSnapshot,
}

/// `topic.shift`: the decision at a prompt of the event's session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TopicShift {
    /// `[0, 1]`.
    pub score: f32,
    /// `ignore`, `ask` or `trust`.
    pub tier: String,
    /// Each signal's weighted contribution.
    pub signals: BTreeMap<String, f32>,
    /// Thresholds used.
    pub ask_threshold: f32,
    /// See `ask_threshold`.
    pub trust_threshold: f32,
    /// Project of the session.
    pub project: Option<String>,
    /// The conversation stashed by a `trust` decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
}

/// `session.summarized`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionSummarized {
    /// The summary.
    pub summary: String,
    /// `extractive` or `external`.
    pub method: String,
    /// The first observation (prompt or tool use).
    pub first: Option<String>,
    /// The last one.
    pub last: Option<String>,
    /// Files touched.
    pub files: Vec<String>,
    /// Tool uses by tool.
    pub tools: BTreeMap<String, u32>,
    /// Tags of what it learned.
    pub tags: Vec<String>,
}

/// `memory.merged`: `absorbed` merged into `survivor` (seed 000 "Merge Semantics").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoriesMerged {
    /// The memory that stays.
    pub survivor: MemoryId,
    /// The memories merged into it (deprecated, superseded by it).
    pub absorbed: Vec<MemoryId>,
    /// The survivor's new text, if it changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `bootstrap` or `incremental`.
    pub mode: String,
    /// Pass of the run (1-based).
    pub pass: u32,
    /// `deterministic` or `external`.
    pub by: String,
    /// The judge's confidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    /// Why.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `dedup.checked`: memories the dedup pipeline verified, or failed on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DedupChecked {
    /// Compared and found distinct (or merged).
    pub verified: Vec<MemoryId>,
    /// An attempt failed (the judge's error), to be retried.
    pub failed: BTreeMap<MemoryId, String>,
    /// Memories whose text changed: back in the queue.
    pub requeued: Vec<MemoryId>,
}

// ---------------------------------------------------------------------------
// Provenance (seed 003)
// ---------------------------------------------------------------------------

/// `provenance.noted`: before an edit in this event's session, the agent
/// was told which earlier session produced the code about to change (at
/// most once per session, source session and file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProvenanceNoted {
    /// The session named in the note.
    pub source_session: SessionKey,
    /// The file about to change, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The evidence's confidence.
    pub confidence: f32,
    /// Characters injected.
    pub chars: u32,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Event {
        Event::new(
            Ts(1_756_860_755_576),
            "test",
            Some(SessionKey::new("claude", "abc")),
            Body::MsgIn(MsgIn { text: "Fix the auth timeout".into(), ..Default::default() }),
        )
    }

    #[test]
    fn round_trips_known_body() {
        let e = sample();
        let json = e.to_json();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(text.contains(r#""k":"msg.in","b":{"text":"Fix the auth timeout"}"#), "{text}");
        assert_eq!(Event::from_json(&json).unwrap(), e);
    }

    #[test]
    fn unknown_kind_is_kept_verbatim() {
        let line = br#"{"v":9,"id":"ev_X","ts":5,"w":"future","k":"hologram.projected","b":{"x":[1,2]}}"#;
        let e = Event::from_json(line).unwrap();
        match &e.body {
            Body::Unknown(u) => {
                assert_eq!(u.kind, "hologram.projected");
                assert_eq!(u.reason, "unknown kind");
            }
            other => panic!("expected unknown, got {other:?}"),
        }
        let again = Event::from_json(&e.to_json()).unwrap();
        assert_eq!(again.kind(), "hologram.projected");
        assert_eq!(serde_json::to_value(&again).unwrap(), serde_json::from_slice::<Value>(line).unwrap());
    }

    #[test]
    fn known_kind_with_newer_shape_becomes_unknown() {
        let line = br#"{"v":2,"id":"ev_X","ts":5,"w":"future","k":"msg.in","b":{"text":{"rich":true}}}"#;
        let e = Event::from_json(line).unwrap();
        match &e.body {
            Body::Unknown(u) => assert!(u.reason.starts_with("unreadable body"), "{}", u.reason),
            other => panic!("expected unknown, got {other:?}"),
        }
    }

    #[test]
    fn body_before_kind_still_decodes() {
        let line = br#"{"b":{"text":"hi"},"k":"msg.out","id":"ev_X","ts":5}"#;
        let e = Event::from_json(line).unwrap();
        assert_eq!(e.body, Body::MsgOut(MsgOut { text: "hi".into(), ..Default::default() }));
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let line = br#"{"v":1,"id":"ev_X","ts":5,"w":"t","k":"msg.out","b":{"text":"hi","mood":"good"},"extra":1}"#;
        let e = Event::from_json(line).unwrap();
        assert_eq!(e.body, Body::MsgOut(MsgOut { text: "hi".into(), ..Default::default() }));
    }

    #[test]
    fn missing_header_is_an_error() {
        assert!(Event::from_json(br#"{"k":"msg.in","b":{}}"#).is_err());
        assert!(Event::from_json(b"not json").is_err());
    }

    #[test]
    fn embedding_round_trips_compactly() {
        let e = Event::new(
            Ts(1),
            "t",
            None,
            Body::MemoryEmbedded(MemoryEmbedded {
                memory_id: "mem_1".into(),
                vector: Embedding(vec![0.5, -1.25, f32::MIN_POSITIVE]),
                model: "m".into(),
            }),
        );
        let back = Event::from_json(&e.to_json()).unwrap();
        assert_eq!(back, e);
    }
}
