//! Test support: locating the read-only `../shared` data (fixtures, LoCoMo).
//!
//! Tests that need `../shared` run in CI always and skip locally when it is
//! missing: [`shared_data`] returns `None` after printing why, unless the `CI`
//! environment variable is set, in which case a missing directory is a failure.

use std::path::PathBuf;

/// The path of `relative` inside the shared data directory (`$ENGRAM_SHARED_DIR`,
/// else `../shared` next to the workspace). `None` (with a message on stderr)
/// when it does not exist locally; panics when it does not exist under `CI`.
pub fn shared_data(relative: &str) -> Option<PathBuf> {
    let base = match std::env::var_os("ENGRAM_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    let path = base.join(relative);
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but the shared test data {} is missing", path.display());
    }
    eprintln!("skipping: shared test data {} not found (set ENGRAM_SHARED_DIR)", path.display());
    None
}

/// A secret planted in a text, and the rule (or hand-written pattern) that
/// must find it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Planted {
    /// The rule's id (gitleaks' id, or our own pattern's kind).
    pub rule: String,
    /// A line holding the secret.
    pub text: String,
    /// The secret: none of it may reach any file.
    pub secret: String,
}

/// A secret sample for every redaction rule (`shared/src/redact/testdata/planted.jsonl`),
/// for tests that plant them in every harness format and live path.
pub fn planted_secrets() -> Vec<Planted> {
    include_str!("redact/testdata/planted.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
