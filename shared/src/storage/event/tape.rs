//! The tape log's own bodies: frames lost to damage, and the keyed
//! fingerprints of forgotten texts.

use serde::{Deserialize, Serialize};

use crate::base::ids::MemoryId;

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
    /// `fp1_` and 32 hex digits each (a text's fingerprint), or `fw1_` and
    /// 8 hex digits per content word, dot-separated (its sketch).
    pub fingerprints: Vec<String>,
}
