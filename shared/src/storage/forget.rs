//! Forgetting that sticks and erases (issue 15 item 3, issue 21 item 7).
//!
//! Sticks: when a memory is forgotten, a keyed fingerprint of each text it
//! ever had is recorded (`forget.fingerprints`, projected into
//! `forgotten_fingerprints`); the text itself is not. The key is 32 random
//! bytes in the data home (`forget.key`), never in the tapes, so a
//! fingerprint that travels with the tapes does not let anyone confirm a
//! guessed text. Every memory write passes [`Guard::allows`] at the one
//! boundary they all cross, the journal's append: a `memory.added` (or a
//! `memory.updated` text) whose fingerprint was forgotten is dropped, whatever
//! produced it (extraction of any session, an external extractor, an agent's
//! `memory_save`). A fingerprint is over the text's words, lower-cased,
//! without punctuation or spacing, so "Use pnpm here." and "use pnpm here"
//! are one text.
//!
//! Erases: [`Scrub`] finds a forgotten text wherever an event holds it
//! verbatim, with any capitalisation, spacing or punctuation between its
//! words (extraction tidies a sentence before storing it: the session
//! content it came from holds it as it was typed), and puts `[forgotten]`
//! in its place; compaction rewrites every segment that holds one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};
use rusqlite::OptionalExtension;

use crate::base::error::{Error, IoContext, Result, SqlContext};
use crate::base::paths::Paths;
use crate::storage::event::{Body, ForgetFingerprints};
use crate::storage::store::Store;

/// What replaces a forgotten text.
pub const FORGOTTEN_MARKER: &str = "[forgotten]";

/// Texts with fewer words are not scrubbed from other events (too likely to
/// be ordinary phrases); the memory's own events are cleared whatever its length.
pub const MIN_SCRUB_WORDS: usize = 3;

/// The key of this data home's fingerprints.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

/// Where the key lives.
pub fn key_path(paths: &Paths) -> PathBuf {
    paths.home().join("forget.key")
}

impl Key {
    /// The data home's key, created (durably, readable by its owner only) on first use.
    pub fn load_or_create(paths: &Paths) -> Result<Key> {
        let path = key_path(paths);
        match fs::read(&path) {
            Ok(bytes) => return Key::parse(&path, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("read", &path, e)),
        }
        fs::create_dir_all(paths.home()).ctx("create directory", paths.home())?;
        let key: [u8; 32] = rand::random();
        let tmp = crate::base::fsutil::temp_path_for(&path);
        let written = (|| {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            f.write_all(&key)?;
            f.sync_all()?;
            // Another process may have created it meanwhile: theirs wins.
            fs::hard_link(&tmp, &path)?;
            crate::base::fsutil::fsync_dir(paths.home())
        })();
        let _ = fs::remove_file(&tmp);
        match written {
            Ok(()) => Ok(Key(key)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Key::parse(&path, &fs::read(&path).ctx("read", &path)?)
            }
            Err(e) => Err(Error::io("create", &path, e)),
        }
    }

    /// The key if the data home has one (nothing was ever forgotten otherwise).
    pub fn load(paths: &Paths) -> Result<Option<Key>> {
        let path = key_path(paths);
        match fs::read(&path) {
            Ok(bytes) => Key::parse(&path, &bytes).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &path, e)),
        }
    }

    fn parse(path: &Path, bytes: &[u8]) -> Result<Key> {
        let key: [u8; 32] = bytes.try_into().map_err(|_| Error::corrupt(path, 0, "the forget key is not 32 bytes"))?;
        Ok(Key(key))
    }

    /// The fingerprint of `text` (`None` for a text without words).
    pub fn fingerprint(&self, text: &str) -> Option<String> {
        let words = normal_words(text);
        if words.is_empty() {
            return None;
        }
        let hash = blake3::keyed_hash(&self.0, words.join(" ").as_bytes());
        Some(format!("fp1_{}", &hash.to_hex()[..32]))
    }
}

/// The words of `text`, lower-cased: what a fingerprint and a scrub compare.
pub fn normal_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The memory-write check: refuses texts whose fingerprint was forgotten.
#[derive(Debug)]
pub struct Guard {
    key: Option<Key>,
}

impl Guard {
    /// The guard of a data home (without a key nothing was forgotten yet).
    pub fn open(paths: &Paths) -> Result<Guard> {
        Ok(Guard { key: Key::load(paths)? })
    }

    /// The fingerprint of `text` if it was forgotten.
    pub fn forgotten(&self, store: &Store, text: &str) -> Result<Option<String>> {
        let Some(fp) = self.key.as_ref().and_then(|k| k.fingerprint(text)) else {
            return Ok(None);
        };
        let hit: Option<String> = store
            .conn()
            .prepare_cached("SELECT memory_id FROM forgotten_fingerprints WHERE fingerprint = ?1")
            .and_then(|mut s| s.query_row([&fp], |r| r.get(0)).optional())
            .sql("look up a forgotten fingerprint")?;
        Ok(hit.map(|_| fp))
    }

    /// Whether the event may be written: not a memory text that was forgotten.
    pub fn allows(&self, store: &Store, body: &Body) -> Result<bool> {
        if self.key.is_none() {
            return Ok(true);
        }
        let text = match body {
            Body::MemoryAdded(b) => Some(b.content.as_str()),
            Body::MemoryUpdated(b) => b.content.as_deref(),
            _ => None,
        };
        match text {
            Some(t) => Ok(self.forgotten(store, t)?.is_none()),
            None => Ok(true),
        }
    }
}

/// Removes forgotten texts from event strings.
#[derive(Debug)]
pub struct Scrub {
    patterns: Vec<Regex>,
}

impl Scrub {
    /// A scrub of `texts` (those with fewer than [`MIN_SCRUB_WORDS`] words are left out).
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Scrub {
        let mut patterns = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for text in texts {
            let words = normal_words(text);
            if words.len() < MIN_SCRUB_WORDS || !seen.insert(words.join(" ")) {
                continue;
            }
            // The words in order, anything but a letter or digit between
            // them, whole words only.
            let body: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
            let pattern = format!(r"(?:^|\b){}(?:\b|$)", body.join(r"[^\p{L}\p{N}]+"));
            match RegexBuilder::new(&pattern).case_insensitive(true).size_limit(64 << 20).build() {
                Ok(re) => patterns.push(re),
                Err(e) => {
                    tracing::warn!(error = %e, "a forgotten text is too long to search for; only exact copies go")
                }
            }
        }
        Scrub { patterns }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `text` with every forgotten text replaced, if any was found.
    pub fn text(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for re in &self.patterns {
            let current = out.as_deref().unwrap_or(text);
            if re.is_match(current) {
                out = Some(re.replace_all(current, FORGOTTEN_MARKER).into_owned());
            }
        }
        out
    }

    /// Scrubs every string of a JSON value; whether anything changed.
    pub fn value(&self, value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::String(s) => match self.text(s) {
                Some(new) => {
                    *s = new;
                    true
                }
                None => false,
            },
            serde_json::Value::Array(items) => items.iter_mut().fold(false, |acc, v| self.value(v) | acc),
            serde_json::Value::Object(map) => map.values_mut().fold(false, |acc, v| self.value(v) | acc),
            _ => false,
        }
    }
}

/// `forget.fingerprints`: the keyed fingerprints of a forgotten memory's
/// texts join `forgotten_fingerprints`, which every later memory write is
/// checked against ([`Guard`]).
pub fn apply_fingerprints(conn: &rusqlite::Connection, b: &ForgetFingerprints) -> rusqlite::Result<()> {
    for fp in &b.fingerprints {
        conn.prepare_cached("INSERT OR IGNORE INTO forgotten_fingerprints (fingerprint, memory_id) VALUES (?1, ?2)")?
            .execute(rusqlite::params![fp, b.memory_id.as_str()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fingerprints_ignore_case_spacing_and_punctuation_and_depend_on_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        assert!(Key::load(&paths).unwrap().is_none());
        let k = Key::load_or_create(&paths).unwrap();
        let again = Key::load_or_create(&paths).unwrap();
        let a = k.fingerprint("Use `pnpm` here, never npm.").unwrap();
        assert_eq!(Some(a.clone()), again.fingerprint("use pnpm here never   NPM"));
        assert_ne!(Some(a.clone()), k.fingerprint("use pnpm there never npm"));
        let other = Key::load_or_create(&Paths::at(dir.path().join("other"))).unwrap();
        assert_ne!(Some(a), other.fingerprint("use pnpm here never npm"));
        assert_eq!(k.fingerprint("  ... "), None);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(key_path(&paths)).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_scrub_finds_the_text_as_it_was_typed() {
        let s = Scrub::new(["The staging password is in the vault.", "ok then"]);
        assert_eq!(
            s.text("note: the Staging password  is\nin the VAULT (ask ops)").as_deref(),
            Some("note: [forgotten] (ask ops)")
        );
        assert_eq!(s.text("the staging passwords is in the vault"), None, "whole words only");
        assert_eq!(s.text("ok then"), None, "two words are too common to scrub");
        let mut v = serde_json::json!({"a": ["x The staging password is in the vault y"], "n": 1});
        assert!(s.value(&mut v));
        assert_eq!(v, serde_json::json!({"a": ["x [forgotten] y"], "n": 1}));
    }
}
