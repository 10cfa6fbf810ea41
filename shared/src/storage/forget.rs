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
//! A lesson forgotten stays forgotten in other words too: beside each
//! text's fingerprint, a keyed sketch of its content words (stemmed, stop
//! words dropped, each word a short keyed hash: `fw1_…`) is recorded, and a
//! memory text that shares most of a forgotten sketch's words (at least
//! [`SKETCH_MIN_SHARED`], and [`SKETCH_SHARE`] of the smaller set) is refused
//! as a paraphrase: "start the db before the integration tests", forgotten,
//! keeps out "Run `docker compose up -d db` before the integration tests".
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

/// Fewest content words a paraphrase shares with a forgotten text.
pub const SKETCH_MIN_SHARED: usize = 3;
/// Share of the smaller of two word sets a paraphrase covers.
pub const SKETCH_SHARE: f32 = 0.6;
/// The prefix of a sketch among a memory's fingerprints.
const SKETCH_PREFIX: &str = "fw1_";

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

    /// The sketch of `text`: its distinct content words, each a keyed hash
    /// of 8 hex digits, sorted (`None` below [`SKETCH_MIN_SHARED`] words).
    pub fn sketch(&self, text: &str) -> Option<String> {
        let mut words: Vec<String> = crate::base::text::query_terms(text)
            .iter()
            .map(|w| blake3::keyed_hash(&self.0, w.as_bytes()).to_hex()[..8].to_owned())
            .collect();
        words.sort();
        words.dedup();
        (words.len() >= SKETCH_MIN_SHARED).then(|| format!("{SKETCH_PREFIX}{}", words.join(".")))
    }
}

/// Whether two sketches' word sets overlap as a paraphrase's do.
fn paraphrase(a: &str, b: &str) -> bool {
    let set = |s: &str| -> Vec<String> {
        s.strip_prefix(SKETCH_PREFIX).unwrap_or(s).split('.').filter(|w| !w.is_empty()).map(str::to_owned).collect()
    };
    let (a, b) = (set(a), set(b));
    let shared = a.iter().filter(|w| b.contains(w)).count();
    let smaller = a.len().min(b.len());
    shared >= SKETCH_MIN_SHARED && shared as f32 >= SKETCH_SHARE * smaller as f32
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

    /// The fingerprint of `text` if it was forgotten, or the sketch of the
    /// forgotten text it paraphrases.
    pub fn forgotten(&self, store: &Store, text: &str) -> Result<Option<String>> {
        let Some(key) = self.key.as_ref() else { return Ok(None) };
        let Some(fp) = key.fingerprint(text) else {
            return Ok(None);
        };
        let hit: Option<String> = store
            .conn()
            .prepare_cached("SELECT memory_id FROM forgotten_fingerprints WHERE fingerprint = ?1")
            .and_then(|mut s| s.query_row([&fp], |r| r.get(0)).optional())
            .sql("look up a forgotten fingerprint")?;
        if hit.is_some() {
            return Ok(Some(fp));
        }
        let Some(sketch) = key.sketch(text) else { return Ok(None) };
        // Few memories are forgotten: their sketches are read whole.
        let mut stmt = store
            .conn()
            .prepare_cached(
                "SELECT fingerprint FROM forgotten_fingerprints WHERE fingerprint >= ?1 AND fingerprint < ?2",
            )
            .sql("prepare the forgotten sketches")?;
        let rows =
            stmt.query_map([SKETCH_PREFIX, "fw1`"], |r| r.get::<_, String>(0)).sql("read the forgotten sketches")?;
        for row in rows {
            let forgotten = row.sql("read a forgotten sketch")?;
            if paraphrase(&forgotten, &sketch) {
                return Ok(Some(forgotten));
            }
        }
        Ok(None)
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

/// What marks a text cut short (a query's prompt, a preview, the middle cut
/// out of a long output): a cut copy of a forgotten text ends or starts here.
pub const CUT_MARK: char = '…';

/// Removes forgotten texts from event strings: whole copies (see the module
/// docs), and copies cut short where a text was shortened for a query or a
/// preview ([`CUT_MARK`]): at least [`MIN_SCRUB_WORDS`] of the text's first
/// words (the last one maybe cut) just before the mark, or of its last words
/// (the first maybe cut) just after it.
#[derive(Debug)]
pub struct Scrub {
    patterns: Vec<Regex>,
    /// The words of each text long enough to scrub, for cut copies.
    words: Vec<Vec<String>>,
}

/// An alphanumeric run of a string: its byte range and its lower case.
struct Run {
    start: usize,
    end: usize,
    word: String,
}

fn runs(text: &str) -> Vec<Run> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_alphanumeric() && i < text.len(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(Run { start: s, end: i, word: text[s..i].to_lowercase() });
                start = None;
            }
            _ => {}
        }
    }
    out
}

impl Scrub {
    /// A scrub of `texts` (those with fewer than [`MIN_SCRUB_WORDS`] words are left out).
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Scrub {
        let mut patterns = Vec::new();
        let mut all_words = Vec::new();
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
            all_words.push(words);
        }
        Scrub { patterns, words: all_words }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.words.is_empty()
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
        let current = out.as_deref().unwrap_or(text);
        if current.contains(CUT_MARK)
            && let Some(cut) = self.cut_copies(current)
        {
            out = Some(cut);
        }
        out
    }

    /// `text` with the cut copies of forgotten texts around each
    /// [`CUT_MARK`] replaced (the mark stays), if there are any.
    fn cut_copies(&self, text: &str) -> Option<String> {
        let runs = runs(text);
        let mut erase: Vec<(usize, usize)> = Vec::new();
        for (mark, _) in text.match_indices(CUT_MARK) {
            // Runs before the mark, nearest last; runs after it, nearest first.
            let split = runs.partition_point(|r| r.end <= mark);
            let (before, after) = runs.split_at(split);
            for words in &self.words {
                if let Some(first) = head_cut(before, words) {
                    erase.push((before[first].start, before[before.len() - 1].end));
                }
                if let Some(last) = tail_cut(after, words) {
                    erase.push((after[0].start, after[last].end));
                }
            }
        }
        if erase.is_empty() {
            return None;
        }
        erase.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in erase {
            if end <= at {
                continue;
            }
            if start >= at {
                out.push_str(&text[at..start]);
                out.push_str(FORGOTTEN_MARKER);
            }
            at = end;
        }
        out.push_str(&text[at..]);
        Some(out)
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

/// Where a copy of `words` cut short at its end begins among `before` (the
/// runs before a cut mark): the first `j` words whole (`j` at least
/// [`MIN_SCRUB_WORDS`]), then maybe the start of the next one, right
/// before the mark. The longest such copy.
fn head_cut(before: &[Run], words: &[String]) -> Option<usize> {
    let m = before.len();
    let whole = |j: usize, fragment: bool| -> bool {
        let need = j + usize::from(fragment);
        m >= need && before[m - need..m - usize::from(fragment)].iter().zip(words).all(|(r, w)| r.word == *w)
    };
    (MIN_SCRUB_WORDS..=words.len()).rev().find_map(|j| {
        let last = &before.get(m.wrapping_sub(1))?.word;
        // The next word cut short just before the mark.
        if j < words.len() && words[j].starts_with(last.as_str()) && whole(j, true) {
            return Some(m - j - 1);
        }
        whole(j, false).then(|| m - j)
    })
}

/// Where a copy of `words` cut short at its start ends among `after` (the
/// runs after a cut mark): maybe the end of a word, then the last `j`
/// words whole (`j` at least [`MIN_SCRUB_WORDS`]), right after the mark.
/// The longest such copy; the index of its last run.
fn tail_cut(after: &[Run], words: &[String]) -> Option<usize> {
    let n = words.len();
    let whole = |j: usize, fragment: bool| -> bool {
        let skip = usize::from(fragment);
        after.len() >= j + skip && after[skip..skip + j].iter().zip(&words[n - j..]).all(|(r, w)| r.word == *w)
    };
    (MIN_SCRUB_WORDS..=n).rev().find_map(|j| {
        let first = &after.first()?.word;
        if j < n && words[n - j - 1].ends_with(first.as_str()) && whole(j, true) {
            return Some(j);
        }
        whole(j, false).then(|| j - 1)
    })
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
    fn a_forgotten_lesson_keeps_out_its_paraphrases_only() {
        let dir = tempfile::tempdir().unwrap();
        let k = Key::load_or_create(&Paths::at(dir.path())).unwrap();
        let forgotten = k.sketch("Start the db before the integration tests.").unwrap();
        assert!(forgotten.starts_with(SKETCH_PREFIX));
        assert!(!forgotten.contains("integr"), "words are hashed: {forgotten}");
        for same in [
            "Run `docker compose up -d db` before `uv run pytest tests/integration`.",
            "integration tests need the DB started first",
        ] {
            assert!(paraphrase(&forgotten, &k.sketch(same).unwrap()), "{same}");
        }
        for other in ["The integration tests log to tests/integration/out.log.", "Start the dev server with make dev."]
        {
            assert!(!paraphrase(&forgotten, &k.sketch(other).unwrap()), "{other}");
        }
        assert_eq!(k.sketch("use pnpm"), None, "too few words to tell a paraphrase");
    }

    #[test]
    fn a_scrub_finds_copies_cut_short_at_a_cut_mark() {
        let s = Scrub::new(["Make sure to run pnpm lint before committing anything."]);
        // A query's prompt cut inside a word, and a preview cut after one.
        assert_eq!(
            s.text("web · /src\nok so make sure to run pnpm li…\nsrc/a.ts").as_deref(),
            Some("web · /src\nok so [forgotten]…\nsrc/a.ts")
        );
        assert_eq!(s.text("Make sure to …").as_deref(), Some("[forgotten] …"));
        // The middle cut out of a long output: the tail of the text after the marker.
        assert_eq!(
            s.text("head\n[… 900 bytes cut …]\nnpm lint before committing anything. done").as_deref(),
            Some("head\n[… 900 bytes cut …]\n[forgotten]. done")
        );
        // Fewer than three words, or words not in the text's order: kept.
        assert_eq!(s.text("make sure…"), None);
        assert_eq!(s.text("sure to make…"), None);
        assert_eq!(s.text("make sure to run pnpm lint"), None, "no cut mark, not the whole text");
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
