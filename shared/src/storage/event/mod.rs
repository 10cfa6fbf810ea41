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

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::base::ids::{EventId, MemoryId, SessionKey};
use crate::base::time::Ts;

mod env;
mod knowledge;
mod learning;
mod memory;
pub mod prompt;
mod provenance;
mod serving;
mod session;
mod tape;

pub use env::*;
pub use knowledge::*;
pub use learning::*;
pub use memory::*;
pub use provenance::*;
pub use serving::*;
pub use session::*;
pub use tape::*;

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
    /// A recorded session replayed through the read side, with the labels of its lists.
    "history.replayed" => HistoryReplayed(HistoryReplayed),
    // vault (issue 21): the tape log's own events.
    /// A frame that damage made unreadable, replaced by `tapes repair`.
    "tape.lost" => TapeLost(TapeLost),
    /// Keyed fingerprints of a forgotten memory's texts: never learned again.
    "forget.fingerprints" => ForgetFingerprints(ForgetFingerprints),
    // Environment model (shared::domain::env): projects, stacks, tags.
    /// What environment detection found for a session's working directory.
    "env.detected" => EnvDetected(EnvDetected),
    /// A memory joined or left categories (seed 001 "categories").
    "memory.categorized" => MemoryCategorized(MemoryCategorized),
    /// A memory's prerequisites were set (seed 000 "Prerequisites").
    "memory.prerequisites_set" => MemoryPrerequisitesSet(MemoryPrerequisitesSet),
    // Seed 004's memory model (`crate::domain::knowledge`).
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

/// `skip_serializing_if` for counters that are absent when zero.
fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Likewise for `u32` counters.
fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_memory_type_is_listed_under_a_knowledge_type() {
        for t in MemoryType::ALL {
            assert!(MemoryType::KNOWLEDGE.contains(&t.knowledge_type()), "{t}");
            assert_eq!(MemoryType::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::from_value::<MemoryType>(serde_json::json!(t.as_str())).unwrap(), t);
        }
        for t in MemoryType::KNOWLEDGE {
            assert_eq!(t.knowledge_type(), t);
        }
        assert_eq!(MemoryType::from_stored("poem"), MemoryType::Fact);
        assert_eq!(serde_json::from_value::<MemoryType>(serde_json::json!("")).unwrap(), MemoryType::Fact);
        assert_eq!(MemoryType::parse(" Gotcha "), Some(MemoryType::Gotcha));
    }

    /// `memory list --type issue` must list a `gotcha` too.
    #[test]
    fn a_knowledge_type_lists_every_kind_under_it() {
        use MemoryType::*;
        assert!(Issue.lists(Gotcha) && Issue.lists(Struggle) && Issue.lists(Issue));
        assert!(Pattern.lists(Convention) && Preference.lists(Correction));
        assert!(Gotcha.lists(Gotcha) && !Gotcha.lists(Issue) && !Gotcha.lists(Struggle));
        assert!(!Discovery.lists(Fact));
        assert_eq!(Issue.listed(), vec![Issue, Gotcha, Struggle]);
        assert_eq!((Gotcha.label().as_str(), Issue.label().as_str()), ("issue/gotcha", "issue"));
    }

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
