//! Provenance (seed 003): why a span of code exists. Fingerprints of every
//! tape text, the evidence index over them, lineage between the spans that
//! edits wrote and removed, tombstones, continuations between sessions, and
//! the `explain` query over all of it.

pub mod explain;
pub mod fingerprint;
pub mod index;
pub mod note;
