//! Provenance bodies: the "why this code exists" notes put into a session.

use serde::{Deserialize, Serialize};

use crate::base::ids::SessionKey;

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
