//! Memory bodies: a memory's creation, changes, pins, deprecation,
//! forgetting, feedback and embedding.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use super::is_zero_u32;

use crate::base::ids::{EventId, MemoryId, SessionKey};

/// What a memory holds, as stored (`memories.type`). Seed 004's seven
/// knowledge types ([`MemoryType::KNOWLEDGE`]) plus the kinds extraction
/// learns, each listed under one of them ([`MemoryType::knowledge_type`]).
/// Written as its lower-case name; a name this build does not know (or an
/// empty one) reads as [`MemoryType::Fact`], so a newer writer's type is
/// still listed, as a fact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryType {
    /// A fact about the project or the world.
    #[default]
    Fact,
    /// A decision and its reason.
    Decision,
    /// A preference of the user.
    Preference,
    /// A recurring pattern.
    Pattern,
    /// A known problem.
    Issue,
    /// Background context.
    Context,
    /// The user corrected the agent.
    Correction,
    /// A stated convention ("always", "never", "we use").
    Convention,
    /// Unexpected tool or API behaviour.
    Gotcha,
    /// Repeated failures before a success.
    Struggle,
    /// Knowledge derived or inferred by combining others.
    Discovery,
}

impl MemoryType {
    /// Every type, in the order the commands list them.
    pub const ALL: [MemoryType; 11] = [
        MemoryType::Fact,
        MemoryType::Decision,
        MemoryType::Preference,
        MemoryType::Pattern,
        MemoryType::Issue,
        MemoryType::Context,
        MemoryType::Correction,
        MemoryType::Convention,
        MemoryType::Gotcha,
        MemoryType::Struggle,
        MemoryType::Discovery,
    ];

    /// Seed 004's seven knowledge types: the ones every type is listed under.
    pub const KNOWLEDGE: [MemoryType; 7] = [
        MemoryType::Fact,
        MemoryType::Decision,
        MemoryType::Preference,
        MemoryType::Pattern,
        MemoryType::Issue,
        MemoryType::Context,
        MemoryType::Discovery,
    ];

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            MemoryType::Fact => "fact",
            MemoryType::Decision => "decision",
            MemoryType::Preference => "preference",
            MemoryType::Pattern => "pattern",
            MemoryType::Issue => "issue",
            MemoryType::Context => "context",
            MemoryType::Correction => "correction",
            MemoryType::Convention => "convention",
            MemoryType::Gotcha => "gotcha",
            MemoryType::Struggle => "struggle",
            MemoryType::Discovery => "discovery",
        }
    }

    /// The type named `name` (trimmed, any case), if this build knows it.
    pub fn parse(name: &str) -> Option<MemoryType> {
        let name = name.trim();
        MemoryType::ALL.into_iter().find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// The type of a stored name: an unknown or empty one is a fact.
    pub fn from_stored(name: &str) -> MemoryType {
        MemoryType::parse(name).unwrap_or_default()
    }

    /// The knowledge type it is listed under: the knowledge types are
    /// themselves; a correction states how the user wants things, a
    /// convention is a practice, a gotcha or a struggle is a known problem.
    pub const fn knowledge_type(self) -> MemoryType {
        match self {
            MemoryType::Correction => MemoryType::Preference,
            MemoryType::Convention => MemoryType::Pattern,
            MemoryType::Gotcha | MemoryType::Struggle => MemoryType::Issue,
            other => other,
        }
    }

    /// Whether it is one of the seven knowledge types.
    pub fn is_knowledge_type(self) -> bool {
        self.knowledge_type() == self
    }

    /// How a listing shows it: its knowledge type, with its own name after a
    /// slash when they differ (`issue/gotcha`).
    pub fn label(self) -> String {
        let k = self.knowledge_type();
        if k == self { k.as_str().to_owned() } else { format!("{}/{}", k.as_str(), self.as_str()) }
    }

    /// Whether a filter on `self` lists a memory of type `stored`: a
    /// knowledge type lists every type listed under it (`issue` finds a
    /// `gotcha`), any other type only itself.
    pub fn lists(self, stored: MemoryType) -> bool {
        stored == self || (self.is_knowledge_type() && stored.knowledge_type() == self)
    }

    /// The types a filter on `self` lists ([`MemoryType::lists`]).
    pub fn listed(self) -> Vec<MemoryType> {
        MemoryType::ALL.into_iter().filter(|t| self.lists(*t)).collect()
    }
}

impl fmt::Display for MemoryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl rusqlite::ToSql for MemoryType {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::from(self.as_str()))
    }
}

impl rusqlite::types::FromSql for MemoryType {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        value.as_str().map(MemoryType::from_stored)
    }
}

impl Serialize for MemoryType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MemoryType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(MemoryType::from_stored(&name))
    }
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
        serializer.serialize_str(&crate::base::base64::encode(&bytes))
    }
}

impl<'de> Deserialize<'de> for Embedding {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Embedding, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        let bytes = crate::base::base64::decode(&text).map_err(de::Error::custom)?;
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
    /// What it holds.
    pub memory_type: MemoryType,
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
    pub memory_type: Option<MemoryType>,
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
