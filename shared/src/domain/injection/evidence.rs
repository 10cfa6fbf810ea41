//! How strongly the text of a moment (a prompt, a tool call, a session's
//! context) points at one memory, on one scale for every moment, so that a
//! floor can say "below this, inject nothing".
//!
//! The score adds, for each query word the memory's text contains (stems, as
//! the rankers see them):
//! - **1** for a specific word, scaled down by how many memories share it
//!   (its IDF over the store relative to a word only one memory has, at
//!   least 0.35; stores under [`SMALL_STORE`] memories count every specific
//!   word as 1);
//! - **0.25** for a [generic](is_generic) word ("run", "test", "file",
//!   "fix"…): such a word alone never reaches a floor;
//! - and, for each pair of query words that follow each other in the memory
//!   too (`pnpm test`, `src/gen`, `docker compose`), **0.75** (0.25 when both
//!   are generic), at most 1.5 in all.
//!
//! Words of one character, numbers of up to three digits, and the parts of a
//! contraction (`don't` → `don`, `t`; `we'll` → `ll`) are not evidence.
//! [`Evidence::words`] are the query's own words that matched, for people.

use std::collections::HashSet;
use std::sync::OnceLock;

use foldhash::HashMap;

use crate::base::text::{self, QueryTerm};

/// Below this many memories every specific word weighs 1 (IDF says little).
pub const SMALL_STORE: u64 = 15;
/// Weight of a generic word.
pub const GENERIC_WEIGHT: f32 = 0.25;
/// Bonus of a matched pair of words with a specific one.
const PHRASE: f32 = 0.75;
/// Most bonus from pairs.
const MAX_PHRASE: f32 = 1.5;
/// Least weight of a specific word, however common in the store.
const MIN_RARITY: f32 = 0.35;

/// Words of coding conversations too common to point at one lesson.
const GENERIC: &[&str] = &[
    "run",
    "running",
    "use",
    "using",
    "make",
    "file",
    "files",
    "test",
    "tests",
    "testing",
    "fix",
    "add",
    "code",
    "work",
    "works",
    "need",
    "needs",
    "set",
    "new",
    "check",
    "change",
    "changes",
    "update",
    "build",
    "project",
    "repo",
    "repository",
    "error",
    "errors",
    "fail",
    "fails",
    "failed",
    "failing",
    "issue",
    "thing",
    "way",
    "time",
    "first",
    "please",
    "help",
    "write",
    "read",
    "start",
    "stop",
    "create",
    "remove",
    "delete",
    "install",
    "command",
    "line",
    "output",
    "result",
    "value",
    "function",
    "method",
    "call",
    "return",
    "data",
    "name",
    "type",
    "list",
    "look",
    "see",
    "try",
    "want",
    "go",
    "sure",
    "good",
    "now",
    "just",
    "still",
    "always",
    "never",
    "instead",
    "like",
    "one",
    "two",
    "put",
    "take",
    "keep",
    "let",
    "know",
    "think",
    "say",
    "tell",
    "show",
    "find",
    "give",
    "bug",
    "feature",
    "app",
    "script",
    "tool",
    "task",
    "step",
    "job",
    "version",
    "default",
    "option",
    "setting",
    "path",
    "dir",
    "directory",
    "folder",
    "src",
    "lib",
    "main",
    "index",
    "home",
    "user",
    "users",
    "root",
    "tmp",
    "local",
    "dev",
    "edit",
    "bash",
    "grep",
    "glob",
    "shell",
    "exec",
    "again",
    "done",
    "yes",
    "ok",
    "okay",
    "thanks",
    "well",
    "get",
    "got",
    "via",
    "per",
    "etc",
    "lets",
    "able",
    "without",
    "within",
    "across",
    "next",
    "last",
    "everything",
    "something",
    "anything",
    "nothing",
    "part",
    "case",
    "cases",
    "point",
    "place",
    "side",
    "end",
    "start",
    "top",
    "bottom",
    "left",
    "right",
    "up",
    "down",
    "old",
    "small",
    "big",
    "large",
    "long",
    "short",
    "high",
    "low",
    "full",
    "empty",
    "true",
    "false",
    "null",
    "none",
    "ts",
    "js",
    "rs",
    "py",
    "md",
    "json",
    "txt",
    "com",
    "org",
    "www",
    "http",
    "https",
    "description",
    "todo",
    "note",
    "notes",
    "doc",
    "docs",
    "text",
    "message",
    "log",
    "logs",
    "process",
    "system",
    "support",
    "handle",
    "current",
    "different",
    "same",
    "other",
    "another",
    "each",
    "every",
    "all",
    "any",
    "some",
    "more",
    "most",
    "less",
    "much",
    "many",
    "few",
    "also",
    "only",
    "really",
    "actually",
];

/// The generic words, as stems.
fn generic_stems() -> &'static HashSet<String> {
    static SET: OnceLock<HashSet<String>> = OnceLock::new();
    SET.get_or_init(|| {
        let mut set = HashSet::new();
        for w in GENERIC {
            predictor::tokenizer::for_each_token(w, |t| {
                set.insert(t.to_owned());
            });
        }
        set
    })
}

/// Whether a (stemmed) token is too common to point at one lesson by itself.
pub fn is_generic(token: &str) -> bool {
    generic_stems().contains(token)
}

/// What is left of a word cut at its apostrophe (`don't` → `don`, `t`).
const APOSTROPHE_PARTS: &[&str] = &[
    "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "wouldn", "shouldn", "couldn", "haven", "hasn",
    "can",
];

/// Whether a token can be evidence at all (see the module docs): two letters
/// are enough for a name (`og`, `ci`), not for the rest of a contraction.
pub(super) fn countable(token: &str) -> bool {
    let n = token.chars().count();
    let short_number = n <= 3 && token.chars().all(|c| c.is_ascii_digit());
    let contraction = APOSTROPHE_PARTS.contains(&token) || matches!(token, "ll" | "ve" | "re" | "nt");
    n >= 2 && !short_number && !contraction
}

/// A moment's query, read once for every candidate.
#[derive(Clone, Debug)]
pub struct QueryWords {
    /// Countable tokens in order (stop words dropped), with the word each came from.
    tokens: Vec<(String, String)>,
    /// Pairs of consecutive tokens.
    pairs: Vec<(String, String)>,
    /// IDF of each term (from the ranking's pool).
    idf: HashMap<String, f32>,
    /// Live memories in the store.
    corpus: u64,
}

impl QueryWords {
    /// Reads `query` with the IDF of its terms as the pool weighed them.
    pub fn new(query: &str, terms: &[QueryTerm], corpus: u64) -> QueryWords {
        let tokens: Vec<(String, String)> =
            text::surface_tokens(query).into_iter().filter(|(t, _)| countable(t)).collect();
        let pairs = tokens.windows(2).map(|w| (w[0].0.clone(), w[1].0.clone())).filter(|(a, b)| a != b).collect();
        let idf = terms.iter().map(|t| (t.text.clone(), t.idf)).collect();
        QueryWords { tokens, pairs, idf, corpus }
    }

    fn weight(&self, token: &str) -> f32 {
        if is_generic(token) {
            return GENERIC_WEIGHT;
        }
        if self.corpus < SMALL_STORE {
            return 1.0;
        }
        let max = text::idf(1, self.corpus);
        match self.idf.get(token) {
            Some(idf) if max > 0.0 => (idf / max).clamp(MIN_RARITY, 1.0),
            _ => 1.0,
        }
    }
}

/// How strongly a query points at one memory (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// The score: weighted words plus pairs.
    pub score: f32,
    /// Matched words that are not generic.
    pub specific: u32,
    /// The query's words that matched, in its order, without repeats.
    pub words: Vec<String>,
}

/// The evidence that `query` points at a memory with this text and bag.
pub fn evidence(query: &QueryWords, content: &str, bag: &text::Bag) -> Evidence {
    let mut out = Evidence::default();
    let mut seen: HashSet<&str> = HashSet::new();
    for (t, surface) in &query.tokens {
        if !seen.insert(t) {
            continue;
        }
        if bag.contains(predictor::tokenizer::fnv1a64(t.as_bytes())) {
            out.score += query.weight(t);
            if !is_generic(t) {
                out.specific += 1;
            }
            if !out.words.contains(surface) {
                out.words.push(surface.clone());
            }
        }
    }
    if out.score > 0.0 && !query.pairs.is_empty() {
        let mut memory: Vec<String> = Vec::new();
        predictor::tokenizer::for_each_token(content, |t| {
            if !text::is_stop_word(t) && countable(t) {
                memory.push(t.to_owned());
            }
        });
        let pairs: HashSet<(&str, &str)> = memory.windows(2).map(|w| (w[0].as_str(), w[1].as_str())).collect();
        let mut bonus = 0.0;
        let mut counted: HashSet<(&str, &str)> = HashSet::new();
        for (a, b) in &query.pairs {
            let key = (a.as_str(), b.as_str());
            if pairs.contains(&key) && counted.insert(key) {
                bonus += if is_generic(a) && is_generic(b) { GENERIC_WEIGHT } else { PHRASE };
            }
        }
        out.score += bonus.min(MAX_PHRASE);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(query: &str, memory: &str) -> Evidence {
        let q = QueryWords::new(query, &[], 10);
        evidence(&q, memory, &text::bag_of_words(memory))
    }

    #[test]
    fn one_common_word_is_not_enough() {
        let e = score("Bash cd todo-app && npm test", "Run pg_dump before the nightly backup of the billing database.");
        assert!(e.score < 0.5, "{e:?}");
        let e = score("Run the tests", "Run pg_dump before the backup.");
        assert_eq!(e.specific, 0);
        assert!(e.score <= GENERIC_WEIGHT + 1e-6, "{e:?}");
    }

    #[test]
    fn a_named_command_is_strong() {
        let e = score(
            "Bash pnpm test",
            "`pnpm test` fails with \"ECONNREFUSED 127.0.0.1:6379\" until `docker compose up -d redis` is run first.",
        );
        assert_eq!(e.specific, 1);
        assert!(e.score >= 1.0 + GENERIC_WEIGHT + PHRASE - 1e-6, "{e:?}");
        assert_eq!(e.words, ["pnpm", "test"]);
        let path = score("Edit /home/me/web/src/gen/client.ts", "Never edit the generated files in src/gen/.");
        assert!(path.words.contains(&"gen".to_owned()), "{path:?}");
        assert!(path.score >= 1.5, "{path:?}");
    }

    #[test]
    fn words_read_as_words() {
        let e = score("Don't deploy while redis is down", "Deploying needs Redis up: start it first.");
        assert_eq!(e.words, ["deploy", "redis"], "{e:?}");
    }
}
