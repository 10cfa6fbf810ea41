//! Distinctive terms of a memory and the token index of a piece of session text,
//! the vocabulary the continuity scorer matches.
//!
//! Text is cut into *compounds* exactly as the predictor's tokenizer does
//! (runs of alphanumerics and the joiners `_ - . / \ : @ #`, trimmed of
//! joiners), and each compound is classified:
//!
//! | kind | what | examples | weight |
//! |---|---|---|---|
//! | [`Kind::Path`] | contains `/` or `\`, or `name.ext` (stem ≥ 2, ext 2–5 letters) | `src/config.rs`, `nginx.conf` | 2.0 |
//! | [`Kind::Identifier`] | several parts (snake, camel, kebab, dotted, `::`) | `AUTH_TIMEOUT`, `parseConfig` | 1.5 |
//! | [`Kind::Quantity`] | a number with a unit, a decimal, or ≥ 3 digits | `30s`, `512MB`, `0.15`, `8080` | 1.2 |
//! | [`Kind::Word`] | one part, ≥ 3 characters, not a stop word, not a number | `retry`, `canary` | 1.0 |
//! | [`Kind::Part`] | a word inside an identifier or path | `auth`, `timeout` | 0.5 |
//!
//! Terms are lower-cased. A path matches another path ending with it at a
//! separator (`config.rs` matches `/home/u/app/src/config.rs`), so a
//! [`TextIndex`] holds every separator-aligned suffix of the paths it saw.

use std::collections::HashSet;

use predictor::tokenizer::tokenize;
use shared::base::text::is_stop_word;

/// What kind of term a compound is (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A file path or file name.
    Path,
    /// A multi-part identifier.
    Identifier,
    /// A number with a unit, a decimal, or a long number.
    Quantity,
    /// A plain distinctive word.
    Word,
    /// A word inside an identifier or a path.
    Part,
}

impl Kind {
    /// How much a match of this kind weighs before IDF.
    pub fn weight(self) -> f32 {
        match self {
            Kind::Path => 2.0,
            Kind::Identifier => 1.5,
            Kind::Quantity => 1.2,
            Kind::Word => 1.0,
            Kind::Part => 0.5,
        }
    }

    /// Lower-case name, for explanations.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Path => "path",
            Kind::Identifier => "identifier",
            Kind::Quantity => "quantity",
            Kind::Word => "word",
            Kind::Part => "part",
        }
    }
}

/// One distinctive term of a memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Term {
    /// Lower-cased text.
    pub text: String,
    /// Its kind.
    pub kind: Kind,
}

const JOINERS: [char; 8] = ['_', '-', '.', '/', '\\', ':', '@', '#'];

fn is_joiner(c: char) -> bool {
    JOINERS.contains(&c)
}

/// Compounds of `text`, trimmed of joiners, as the predictor's tokenizer cuts them.
fn compounds(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || is_joiner(c)))
        .map(|c| c.trim_matches(is_joiner))
        .filter(|c| !c.is_empty())
}

fn is_path(c: &str) -> bool {
    if !c.chars().any(char::is_alphabetic) {
        return false;
    }
    if c.contains('/') || c.contains('\\') {
        return true;
    }
    match c.rsplit_once('.') {
        Some((stem, ext)) => {
            stem.chars().count() >= 2
                && (2..=5).contains(&ext.len())
                && ext.chars().all(|ch| ch.is_ascii_alphabetic())
                && !stem.contains(':')
        }
        None => false,
    }
}

fn is_quantity(c: &str) -> bool {
    let Some(first) = c.chars().next() else { return false };
    if !first.is_ascii_digit() {
        return false;
    }
    let digits_end = c.find(|ch: char| !(ch.is_ascii_digit() || ch == '.')).unwrap_or(c.len());
    let (number, unit) = c.split_at(digits_end);
    if number.ends_with('.') || number.matches('.').count() > 1 {
        return false;
    }
    if unit.is_empty() {
        return number.contains('.') || number.len() >= 3;
    }
    unit.len() <= 4 && unit.chars().all(|ch| ch.is_ascii_alphabetic())
}

fn is_word(part: &str) -> bool {
    part.chars().count() >= 3 && part.chars().any(char::is_alphabetic) && !is_stop_word(part)
}

/// The distinctive terms of a memory's text, deduplicated, in first-seen order.
pub fn memory_terms(text: &str) -> Vec<Term> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut push = |text: String, kind: Kind, out: &mut Vec<Term>| {
        if seen.insert(text.clone()) {
            out.push(Term { text, kind });
        }
    };
    for compound in compounds(text) {
        let tokens = tokenize(compound);
        let Some(whole) = tokens.first() else { continue };
        if is_quantity(compound) {
            push(whole.clone(), Kind::Quantity, &mut out);
            continue;
        }
        if tokens.len() == 1 {
            if is_path(compound) {
                push(whole.clone(), Kind::Path, &mut out);
            } else if is_word(whole) && !whole.chars().all(|c| c.is_ascii_digit()) {
                push(whole.clone(), Kind::Word, &mut out);
            }
            continue;
        }
        if whole.chars().count() < 4 {
            continue;
        }
        let kind = if is_path(compound) { Kind::Path } else { Kind::Identifier };
        push(whole.clone(), kind, &mut out);
        for part in &tokens[1..] {
            if is_word(part) && !part.chars().all(|c| c.is_ascii_digit()) {
                push(part.clone(), Kind::Part, &mut out);
            }
        }
    }
    out
}

/// The tokens of a piece of text, plus every separator-aligned suffix of its paths.
#[derive(Clone, Debug, Default)]
pub struct TextIndex {
    tokens: HashSet<String>,
}

impl TextIndex {
    /// Indexes `text`.
    pub fn new(text: &str) -> TextIndex {
        let mut index = TextIndex::default();
        index.add(text);
        index
    }

    /// Adds the tokens of `text`.
    pub fn add(&mut self, text: &str) {
        for compound in compounds(text) {
            if compound.contains('/') || compound.contains('\\') {
                // `src/x.rs:12:5` (compiler, grep) names the path `src/x.rs`.
                for piece in compound.split(':').map(|p| p.trim_matches(is_joiner)).filter(|p| p.len() > 1) {
                    let whole = piece.to_lowercase();
                    for (i, c) in whole.char_indices() {
                        if c == '/' || c == '\\' {
                            let rest = &whole[i + c.len_utf8()..];
                            if !rest.is_empty() {
                                self.tokens.insert(rest.to_owned());
                            }
                        }
                    }
                    self.tokens.insert(whole);
                }
            }
            self.tokens.extend(tokenize(compound));
        }
    }

    /// Adds every token of another index.
    pub fn extend(&mut self, other: &TextIndex) {
        self.tokens.extend(other.tokens.iter().cloned());
    }

    /// Whether `term` occurs (paths also as a suffix of a longer path).
    pub fn contains(&self, term: &str) -> bool {
        self.tokens.contains(term)
    }

    /// Every token, for inverted lookups.
    pub fn tokens(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(String::as_str)
    }

    /// Distinct tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether nothing was indexed.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(String, Kind)> {
        memory_terms(text).into_iter().map(|t| (t.text, t.kind)).collect()
    }

    #[test]
    fn classifies_paths_identifiers_quantities_and_words() {
        let got = kinds("Raise AUTH_TIMEOUT to 30s in src/config.rs; parseConfig reads nginx.conf on port 8080.");
        let want = [
            // Words are stemmed (the predictor's tokenizer), as they are in the text they are matched against.
            ("rais", Kind::Word),
            ("auth_timeout", Kind::Identifier),
            ("auth", Kind::Part),
            ("timeout", Kind::Part),
            ("30s", Kind::Quantity),
            ("src/config.rs", Kind::Path),
            ("src", Kind::Part),
            ("config", Kind::Part),
            ("parseconfig", Kind::Identifier),
            ("pars", Kind::Part),
            ("read", Kind::Word),
            ("nginx.conf", Kind::Path),
            ("nginx", Kind::Part),
            ("conf", Kind::Part),
            ("port", Kind::Word),
            ("8080", Kind::Quantity),
        ];
        let want: Vec<(String, Kind)> = want.iter().map(|(t, k)| ((*t).to_owned(), *k)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn stop_words_short_words_and_small_numbers_are_not_terms() {
        assert!(kinds("it is on the 2 of us").is_empty());
        assert_eq!(kinds("e.g. 3 v2"), Vec::<(String, Kind)>::new());
        assert_eq!(kinds("0.15 1.5GB"), vec![("0.15".into(), Kind::Quantity), ("1.5gb".into(), Kind::Quantity)]);
    }

    #[test]
    fn paths_match_as_separator_aligned_suffixes() {
        let idx = TextIndex::new("edited /home/u/app/src/config.rs and ./README.md");
        assert!(idx.contains("src/config.rs"));
        assert!(idx.contains("config.rs"));
        assert!(idx.contains("readme.md"));
        assert!(!idx.contains("rc/config.rs"), "suffixes start at a separator");
        let idx = TextIndex::new("services/auth/config.toml:3:7: AUTH_TIMEOUT = 5s");
        assert!(idx.contains("services/auth/config.toml") && idx.contains("config.toml"), "line numbers cut off");
        let idx = TextIndex::new("set AUTH_TIMEOUT=30s");
        assert!(idx.contains("auth_timeout") && idx.contains("30s") && idx.contains("auth"));
    }
}
