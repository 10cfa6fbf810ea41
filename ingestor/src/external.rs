//! The optional external extractor (for instance a local LLM command line):
//! the JSON request it reads on stdin and the JSON response it must write,
//! with strict validation. Spawning it with a timeout is the caller's job;
//! here are only pure types and functions.
//!
//! Request (`protocol` 1):
//!
//! ```json
//! {"protocol":1,"session":"claude:…","harness":"claude","project":"engram",
//!  "instructions":"…","max_memories":8,
//!  "allowed_types":["correction","convention","struggle","gotcha","fact","decision","preference","pattern","issue"],
//!  "turns":[{"index":0,"role":"user","text":"…"},{"index":1,"role":"tool","tool":"Bash","text":"…","is_error":true}]}
//! ```
//!
//! Response: `{"memories":[{"text":"…","type":"convention","importance":0.7,"tags":["rust"],"source_turn":0}]}`.
//! `importance`, `tags` and `source_turn` are optional. The response is
//! rejected whole ([`Error::ExtractorResponse`]) when it is not that JSON,
//! has more than `max_memories` memories, a text that is empty, longer than
//! 500 characters or holds the injection marker, a type not allowed, an
//! importance outside 0..=1, more than 16 tags or a tag longer than 64
//! characters, or a `source_turn` that is not a turn index. Accepted texts and
//! tags are redacted and become [`Candidate`]s with source `external`, which
//! go through the same dedup as deterministic ones.
//!
//! Turns are the session's learnable user messages, the agent's text replies
//! and tool results, never injected, compacted, subagent-prompt or meta text;
//! each is redacted, cut to 2 000 characters, and the oldest are dropped to
//! fit the byte budget. A turn touching a path of `privacy.exclude` (as the
//! configuration says now, which may be more than when the session was
//! recorded) is never sent: a tool result whose call names such a path or
//! whose output was excluded when recorded, a message naming one. A request for one turn of a recorded session (seed 000
//! "Per-Turn Pipeline", [`build_turn_request`]) carries about 2,000
//! characters of prior context before the new turns; `new_from` is the index
//! of the first new turn (0 when every turn is new).

use serde::{Deserialize, Serialize};
use shared::base::ids::{EventId, SessionKey};
use shared::storage::event::{Body, Event, INJECTION_OPEN, MemoryType};

use crate::error::Error;
use crate::extract::{Candidate, learnable_input};
use crate::redact::{self, EXCLUDED_MARKER, Privacy};
use crate::scan::turn;

/// Version of the request/response contract.
pub const PROTOCOL: u32 = 1;
/// Longest accepted memory text, in characters.
pub const MAX_EXTERNAL_TEXT: usize = 500;
/// Longest turn text sent, in characters.
pub const MAX_TURN_TEXT: usize = 2000;

const INSTRUCTIONS: &str = "Extract lessons worth remembering from this coding-agent session: only friction \
moments (the user correcting the agent, repeated failures before a success, project conventions the user \
stated, unexpected tool or API behaviour). Each memory is one self-contained sentence. Reply with JSON \
{\"memories\":[{\"text\",\"type\",\"importance\",\"tags\",\"source_turn\"}]} and nothing else.";

/// One turn of the session excerpt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Position in `turns`.
    pub index: u32,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (redacted, cut).
    pub text: String,
    /// Tool name, for tool turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The event the turn came from (not sent; kept to attribute memories).
    #[serde(skip)]
    pub event_id: Option<EventId>,
    /// Its time (not sent).
    #[serde(skip)]
    pub ts: shared::base::time::Ts,
}

/// What the extractor reads on stdin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtractorRequest {
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// Session key.
    pub session: String,
    /// Harness name.
    pub harness: String,
    /// Project, when known.
    pub project: Option<String>,
    /// What to do.
    pub instructions: String,
    /// At most this many memories.
    pub max_memories: u32,
    /// Accepted types.
    pub allowed_types: Vec<String>,
    /// The excerpt.
    pub turns: Vec<Turn>,
    /// Index of the first turn of new content: the turns before it are prior
    /// context, already extracted (0 in the batch pipeline: all are new).
    #[serde(default)]
    pub new_from: u32,
}

/// One memory in the response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExternalMemory {
    /// Self-contained text.
    pub text: String,
    /// Memory type.
    #[serde(rename = "type")]
    pub memory_type: String,
    /// 0..=1 (default 0.5).
    #[serde(default)]
    pub importance: Option<f32>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The turn it was learned from.
    #[serde(default)]
    pub source_turn: Option<u32>,
}

/// What the extractor writes on stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtractorResponse {
    /// The memories.
    pub memories: Vec<ExternalMemory>,
}

fn cut(text: &str) -> String {
    let mut t = redact::redact_text(text).into_owned();
    if t.chars().count() > MAX_TURN_TEXT {
        t = t.chars().take(MAX_TURN_TEXT).collect::<String>() + "…";
    }
    t
}

/// Whether a turn's text names a path whose contents are never sent.
pub fn touches_excluded(privacy: &Privacy, text: &str) -> bool {
    text.contains(EXCLUDED_MARKER) || privacy.command_touches(text).is_some()
}

/// The turns of a session's events (see the module docs), oldest first;
/// `context` are earlier events whose tool calls may explain a result.
fn turns_of<'e>(context: impl Iterator<Item = &'e Event>, events: &'e [Event], privacy: &Privacy) -> Vec<Turn> {
    // Tool calls naming an excluded path: their results are never sent.
    let mut touching: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for e in context.chain(events) {
        if let Body::ToolCall(c) = &e.body
            && (privacy.args_touch(&c.args).is_some() || c.args.to_string().contains(EXCLUDED_MARKER))
        {
            touching.insert(c.call_id.as_str());
        }
    }
    let mut turns: Vec<Turn> = Vec::new();
    for e in events {
        if let Body::ToolResult(r) = &e.body
            && !r.call_id.is_empty()
            && touching.contains(r.call_id.as_str())
        {
            continue;
        }
        let (role, text, tool, is_error) = match &e.body {
            Body::MsgIn(_) => match learnable_input(e) {
                Some(t) => ("user", t.to_owned(), None, false),
                None => continue,
            },
            Body::MsgOut(m) if (m.part.is_empty() || m.part == "text") && !m.text.contains(INJECTION_OPEN) => {
                ("assistant", m.text.clone(), None, false)
            }
            Body::ToolResult(r) => {
                ("tool", r.stdout.clone(), Some(r.tool.clone()), r.is_error || r.exit.is_some_and(|x| x != 0))
            }
            _ => continue,
        };
        if text.trim().is_empty() || touches_excluded(privacy, &text) {
            continue;
        }
        turns.push(Turn {
            index: 0,
            role: role.to_owned(),
            text: cut(&text),
            tool,
            is_error,
            event_id: Some(e.id.clone()),
            ts: e.ts,
        });
    }
    turns
}

/// The most recent `turns` within `max_bytes` of text (whole turns).
fn fit(mut turns: Vec<Turn>, max_bytes: usize) -> Vec<Turn> {
    let mut total = 0;
    let keep_from = turns
        .iter()
        .rposition(|t| {
            total += t.text.len();
            total > max_bytes
        })
        .map_or(0, |p| p + 1);
    turns.split_off(keep_from)
}

fn request<'e>(
    events: impl Iterator<Item = &'e Event> + Clone,
    mut turns: Vec<Turn>,
    new_from: usize,
    max_memories: u32,
) -> ExtractorRequest {
    let session = events.clone().find_map(|e| e.session.clone()).unwrap_or_else(|| SessionKey::from(""));
    let project = events.into_iter().find_map(|e| match &e.body {
        Body::SessionStarted(s) => s.project.clone(),
        _ => None,
    });
    for (i, t) in turns.iter_mut().enumerate() {
        t.index = u32::try_from(i).unwrap_or(u32::MAX);
    }
    ExtractorRequest {
        protocol: PROTOCOL,
        harness: session.harness().to_owned(),
        session: session.as_str().to_owned(),
        project,
        instructions: INSTRUCTIONS.to_owned(),
        max_memories,
        allowed_types: [
            "correction",
            "convention",
            "struggle",
            "gotcha",
            "fact",
            "decision",
            "preference",
            "pattern",
            "issue",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        new_from: u32::try_from(new_from).unwrap_or(u32::MAX),
        turns,
    }
}

/// Builds the request for one session's events, within `max_bytes` of turn
/// text (the most recent turns are kept): the batch pipeline, every turn new.
pub fn build_request(events: &[Event], max_bytes: usize, max_memories: u32, privacy: &Privacy) -> ExtractorRequest {
    let turns = fit(turns_of(std::iter::empty(), events, privacy), max_bytes);
    request(events.iter(), turns, 0, max_memories)
}

/// Builds the request for one turn (seed 000 "Per-Turn Pipeline"): the turns
/// of `prior` within about [`turn::CONTEXT_CHARS`] characters (whole turns,
/// the newest kept), then those of `new` within [`turn::MAX_NEW_BYTES`];
/// `new_from` says where the new ones start. `None` when the new text is
/// under [`turn::MIN_NEW_CHARS`] characters: nothing worth a call.
pub fn build_turn_request(
    prior: &[Event],
    new: &[Event],
    max_memories: u32,
    privacy: &Privacy,
) -> Option<ExtractorRequest> {
    let fresh = turns_of(prior.iter(), new, privacy);
    let new_chars: usize = fresh.iter().map(|t| t.text.chars().count()).sum();
    if new_chars < turn::MIN_NEW_CHARS {
        return None;
    }
    let mut turns = turns_of(std::iter::empty(), prior, privacy);
    let start = turn::suffix_start(&turns, turn::CONTEXT_CHARS, |t: &Turn| t.text.chars().count());
    turns.drain(..start);
    let new_from = turns.len();
    turns.extend(fit(fresh, turn::MAX_NEW_BYTES));
    Some(request(prior.iter().chain(new), turns, new_from, max_memories))
}

fn reject(reason: impl Into<String>) -> Error {
    Error::ExtractorResponse { reason: reason.into() }
}

/// Validates a response to `req` and turns it into candidates.
pub fn validate_response(req: &ExtractorRequest, stdout: &[u8]) -> Result<Vec<Candidate>, Error> {
    let resp: ExtractorResponse =
        serde_json::from_slice(stdout).map_err(|e| reject(format!("not the response JSON: {e}")))?;
    if resp.memories.len() > req.max_memories as usize {
        return Err(reject(format!("{} memories, at most {} allowed", resp.memories.len(), req.max_memories)));
    }
    let session = SessionKey::from(req.session.as_str());
    let mut out: Vec<Candidate> = Vec::new();
    for (i, m) in resp.memories.into_iter().enumerate() {
        let text = m.text.trim();
        if text.is_empty() || text.chars().count() > MAX_EXTERNAL_TEXT {
            return Err(reject(format!("memory {i}: text empty or longer than {MAX_EXTERNAL_TEXT} characters")));
        }
        if text.contains(INJECTION_OPEN) {
            return Err(reject(format!("memory {i}: text contains injected context")));
        }
        if !req.allowed_types.contains(&m.memory_type) {
            return Err(reject(format!("memory {i}: type {:?} not allowed", m.memory_type)));
        }
        let importance = m.importance.unwrap_or(0.5);
        if !(0.0..=1.0).contains(&importance) {
            return Err(reject(format!("memory {i}: importance {importance} outside 0..=1")));
        }
        if m.tags.len() > 16 || m.tags.iter().any(|t| t.chars().count() > 64 || t.trim().is_empty()) {
            return Err(reject(format!("memory {i}: too many or malformed tags")));
        }
        let turn = match m.source_turn {
            Some(t) => Some(
                req.turns
                    .get(t as usize)
                    .ok_or_else(|| reject(format!("memory {i}: source_turn {t} is not a turn")))?,
            ),
            None => req.turns.last(),
        };
        let Some(source_event) = turn.and_then(|t| t.event_id.clone()) else {
            return Err(reject(format!("memory {i}: no turn to attribute it to")));
        };
        let mut tags: Vec<String> =
            m.tags.iter().map(|t| redact::redact_text(&t.trim().to_lowercase()).into_owned()).collect();
        tags.sort();
        tags.dedup();
        // Several memories of one type from one turn each get their own id.
        let memory_type = MemoryType::from_stored(&m.memory_type);
        let ordinal = out.iter().filter(|c| c.source_event == source_event && c.memory_type == memory_type).count();
        out.push(Candidate {
            text: redact::redact_text(text).into_owned(),
            memory_type,
            ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
            importance,
            project: req.project.clone(),
            tags,
            session: session.clone(),
            source_event,
            ts: turn.map(|t| t.ts).unwrap_or_default(),
            source: "external".to_owned(),
            embedding: None,
        });
    }
    Ok(out)
}
