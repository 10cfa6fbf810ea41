//! The planted secrets tests across the workspace put in every harness
//! format and live path: one sample for every redaction rule.

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

/// A secret sample for every redaction rule (`shared/src/storage/redact/testdata/planted.jsonl`),
/// for tests that plant them in every harness format and live path.
pub fn planted_secrets() -> Vec<Planted> {
    include_str!("testdata/planted.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
