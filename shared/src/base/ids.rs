//! Identifiers: event ids, memory ids and session keys.
//!
//! Ids are created once, by the writer of the event that introduces them, and
//! stored in that event; nothing derives an id from the order of application.
//! A generated id is a prefix plus 26 Crockford base-32 characters encoding a
//! 48-bit millisecond timestamp and 80 random bits, so ids sort by creation time.

use std::fmt;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::base::time::Ts;

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// 26 base-32 characters: 48 bits of time then 80 random bits.
fn sortable_suffix(ts: Ts) -> String {
    let random: u128 = rand::rng().random::<u128>() & ((1u128 << 80) - 1);
    let time = (ts.0.max(0) as u128) & ((1u128 << 48) - 1);
    let mut value = (time << 80) | random;
    let mut out = [0u8; 26];
    for slot in out.iter_mut().rev() {
        *slot = CROCKFORD[(value & 31) as usize];
        value >>= 5;
    }
    out.iter().map(|&b| b as char).collect()
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(s)
            }
        }
    };
}

string_id!(
    /// Unique id of one event (`ev_…`).
    EventId
);
string_id!(
    /// Unique id of one memory (`mem_…`), fixed by the event that adds it.
    MemoryId
);
string_id!(
    /// `<harness>:<the harness's own session id>`; a subagent has its own key.
    SessionKey
);

impl EventId {
    /// A fresh id for an event written at `ts`.
    pub fn generate(ts: Ts) -> EventId {
        EventId(format!("ev_{}", sortable_suffix(ts)))
    }
}

impl EventId {
    /// A deterministic id for an event derived from a harness record, so that
    /// re-reading the same record (a rewritten file, a re-scan) yields the same
    /// id. `parts` identify the record: session key, record uuid, block index, …
    pub fn derived(parts: &[&str]) -> EventId {
        EventId(format!("ev_{}", derived_suffix(parts)))
    }
}

impl MemoryId {
    /// A deterministic memory id from identifying parts (benchmarks, imports).
    pub fn derived(parts: &[&str]) -> MemoryId {
        MemoryId(format!("mem_{}", derived_suffix(parts)))
    }
}

/// 26 base-32 characters of blake3 over length-prefixed parts.
fn derived_suffix(parts: &[&str]) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let hash = hasher.finalize();
    let mut value = u128::from_le_bytes(hash.as_bytes()[..16].try_into().unwrap_or([0; 16]));
    let mut out = [0u8; 26];
    for slot in out.iter_mut().rev() {
        *slot = CROCKFORD[(value & 31) as usize];
        value >>= 5;
    }
    out.iter().map(|&b| b as char).collect()
}

impl MemoryId {
    /// A fresh id for a memory created at `ts`.
    pub fn generate(ts: Ts) -> MemoryId {
        MemoryId(format!("mem_{}", sortable_suffix(ts)))
    }
}

impl SessionKey {
    /// Builds `<harness>:<id>`.
    pub fn new(harness: &str, harness_session_id: &str) -> SessionKey {
        SessionKey(format!("{harness}:{harness_session_id}"))
    }

    /// The harness part of the key (`claude`, `codex`, …).
    pub fn harness(&self) -> &str {
        self.0.split_once(':').map_or("", |(h, _)| h)
    }

    /// The harness's own session id.
    pub fn harness_id(&self) -> &str {
        self.0.split_once(':').map_or(self.0.as_str(), |(_, id)| id)
    }
}

/// A fresh id with a caller-chosen prefix (ranking ids, run ids, …).
pub fn generate_with_prefix(prefix: &str, ts: Ts) -> String {
    format!("{prefix}_{}", sortable_suffix(ts))
}

/// A deterministic id with a caller-chosen prefix, from identifying parts
/// (edges named by their ends, buffer entries of a derived memory, …).
pub fn derived_with_prefix(prefix: &str, parts: &[&str]) -> String {
    format!("{prefix}_{}", derived_suffix(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_are_unique() {
        let a = EventId::generate(Ts(1_000));
        let b = EventId::generate(Ts(2_000));
        assert!(a < b);
        assert_eq!(a.as_str().len(), 3 + 26);
        let c = EventId::generate(Ts(1_000));
        assert_ne!(a, c);
    }

    #[test]
    fn derived_ids_are_stable_and_unambiguous() {
        assert_eq!(EventId::derived(&["a", "bc"]), EventId::derived(&["a", "bc"]));
        assert_ne!(EventId::derived(&["a", "bc"]), EventId::derived(&["ab", "c"]));
        assert_eq!(EventId::derived(&["x"]).as_str().len(), 29);
    }

    #[test]
    fn session_key_parts() {
        let k = SessionKey::new("codex", "0199-abc:def");
        assert_eq!(k.harness(), "codex");
        assert_eq!(k.harness_id(), "0199-abc:def");
    }
}
