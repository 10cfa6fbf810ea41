//! Memory bodies: a memory's creation, changes, pins, deprecation,
//! forgetting, feedback and embedding.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use super::is_zero_u32;

use crate::base::ids::{EventId, MemoryId, SessionKey};

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
