//! Word-level HashTrick tokenizer: text → lower-cased words and identifier parts → FNV-1a 64 hash buckets.
//!
//! # Rules
//!
//! 1. **Words.** The text is cut into *compounds*: maximal runs of characters
//!    that are alphanumeric (Unicode `char::is_alphanumeric`) or one of the
//!    joiners `_ - . / \ : @ #`. Every other character (whitespace, other
//!    punctuation, quotes, brackets, apostrophes, emoji) separates compounds.
//!    Leading and trailing joiners are trimmed (`"--flag"` → `flag`,
//!    `"end."` → `end`, `"./src/x"` → `src/x`); a compound left empty is dropped.
//! 2. **Parts.** A compound is split into parts at every joiner and at case
//!    boundaries inside each piece: lower/digit → upper (`parseJson` →
//!    `parse`, `Json`) and the last upper of an upper run followed by a lower
//!    (`HTTPServer` → `HTTP`, `Server`). Letters and digits are *not* split
//!    from each other (`utf8`, `v2`, `x86_64` → `x86`, `64` only at the `_`).
//! 3. **Emitted tokens.** If the compound has a single part, that part is
//!    emitted once. Otherwise the whole compound is emitted first, then each
//!    part in order. So identifiers and paths match both as a whole and by
//!    their words: `snake_case` → `snake_case`, `snake`, `case`;
//!    `CamelCase` → `camelcase`, `camel`, `case`; `kebab-case` → `kebab-case`,
//!    `kebab`, `case`; `src/main.rs` → `src/main.rs`, `src`, `main`, `rs`;
//!    `3.14` → `3.14`, `3`, `14`.
//! 4. **Case.** Every emitted token is lower-cased (Unicode `to_lowercase`)
//!    after the case boundaries have been found.
//! 5. **Stems.** A token made only of ASCII letters is reduced to its Porter
//!    stem ([`crate::stem::stem`]), so that `paint`, `painted` and `painting`
//!    are one token: `parseJSON` → `parsejson`, `pars`, `json`. Compounds with
//!    joiners or digits are kept whole (`snake_case`, `x86`).
//! 6. **Numbers** are ordinary alphanumeric runs: `404` → `404`;
//!    `1,000` → `1`, `000` (the comma separates).
//! 7. Repeated words are emitted every time they occur (term frequency counts
//!    in the mean pooling of the text path).
//!
//! # Hash
//!
//! A token's bucket is FNV-1a 64 (offset basis `0xcbf29ce484222325`, prime
//! `0x100000001b3`) over the UTF-8 bytes of the lower-cased token, modulo the
//! bucket count. This is the same hash as Signet's sidecar (which does not
//! lower-case, so the buckets of mixed-case words differ from theirs). It is
//! stable across platforms, builds and versions of this crate.

use crate::stem::stem;

/// Default number of hash buckets (seed 002: 16,384).
pub const DEFAULT_BUCKETS: u32 = 16_384;

const JOINERS: [char; 8] = ['_', '-', '.', '/', '\\', ':', '@', '#'];

fn is_joiner(c: char) -> bool {
    JOINERS.contains(&c)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_joiner(c)
}

/// FNV-1a 64 of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The hash bucket of one (already lower-cased) token; `buckets` must be > 0.
///
/// # Panics
/// Panics if `buckets` is 0.
pub fn token_id(token: &str, buckets: u32) -> u32 {
    assert!(buckets > 0, "token_id: bucket count must be positive");
    // The remainder is < buckets <= u32::MAX, so the conversion cannot fail.
    u32::try_from(fnv1a64(token.as_bytes()) % u64::from(buckets)).expect("remainder fits in u32")
}

/// Splits `text` into lower-cased tokens following the rules in the module documentation.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_owned()));
    out
}

/// Calls `f` with each token of `text`, in order, as [`tokenize`] would return
/// them, allocating only when a word has to be lower-cased or stemmed.
pub fn for_each_token(text: &str, f: impl FnMut(&str)) {
    let mut f = f;
    let mut f = |t: &str| f(&stem(t));
    let mut buf = String::new();
    let mut lower = |s: &str, f: &mut dyn FnMut(&str)| {
        if s.is_ascii() {
            if s.bytes().any(|b| b.is_ascii_uppercase()) {
                buf.clear();
                buf.push_str(s);
                buf.make_ascii_lowercase();
                f(&buf);
            } else {
                f(s);
            }
        } else {
            f(&s.to_lowercase());
        }
    };
    for compound in text.split(|c: char| !is_word_char(c)) {
        let compound = compound.trim_matches(is_joiner);
        if compound.is_empty() {
            continue;
        }
        // Fast path: one lower-case ASCII part, nothing to split.
        if compound.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            f(compound);
            continue;
        }
        let parts = split_parts(compound);
        if parts.len() == 1 {
            lower(parts[0], &mut f);
        } else if !parts.is_empty() {
            lower(compound, &mut f);
            for p in parts {
                lower(p, &mut f);
            }
        }
    }
}

/// Tokenizes `text` and maps every token to its hash bucket in `0..buckets`.
///
/// Returns an empty vector when `buckets` is 0.
pub fn token_ids(text: &str, buckets: u32) -> Vec<u32> {
    if buckets == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(token_id(t, buckets)));
    out
}

/// Splits a trimmed compound at joiners and case boundaries (original case kept).
fn split_parts(compound: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in compound.split(is_joiner) {
        if piece.is_empty() {
            continue;
        }
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for k in 1..chars.len() {
            let (pos, c) = chars[k];
            let prev = chars[k - 1].1;
            let next = chars.get(k + 1).map(|&(_, n)| n);
            let lower_to_upper = (prev.is_lowercase() || prev.is_numeric()) && c.is_uppercase();
            let acronym_end = prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
            if lower_to_upper || acronym_end {
                parts.push(&piece[start..pos]);
                start = pos;
            }
        }
        parts.push(&piece[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(tokenize(text), expected, "tokenize({text:?})");
    }

    #[test]
    fn words_are_lower_cased_and_punctuation_separates() {
        check("Hello, World! It's fine.", &["hello", "world", "it", "s", "fine"]);
        check("  \t\n ", &[]);
        check("(a) [b] {c} \"d\" 'e'", &["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn identifiers_emit_the_whole_and_the_parts() {
        check("snake_case", &["snake_case", "snake", "case"]);
        check("CamelCase", &["camelcas", "camel", "case"]);
        check("kebab-case", &["kebab-case", "kebab", "case"]);
        check("parseJSON", &["parsejson", "pars", "json"]);
        check("HTTPServer", &["httpserver", "http", "server"]);
        check("x86_64", &["x86_64", "x86", "64"]);
        check("utf8", &["utf8"]);
        check("getV2Client", &["getv2client", "get", "v2", "client"]);
    }

    #[test]
    fn paths_and_numbers() {
        check("see ./src/main.rs:42", &["see", "src/main.rs:42", "src", "main", "rs", "42"]);
        check("404 3.14 1,000", &["404", "3.14", "3", "14", "1", "000"]);
        check("--flag end.", &["flag", "end"]);
        check("a__b", &["a__b", "a", "b"]);
        check("...", &[]);
    }

    #[test]
    fn unicode_letters_are_words() {
        check("Straße café ÉTÉ", &["straße", "café", "été"]);
        check("日本語 text🙂x", &["日本語", "text", "x"]);
    }

    /// The original allocating implementation, kept as the oracle of the streaming one.
    fn reference(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for compound in text.split(|c: char| !is_word_char(c)) {
            let compound = compound.trim_matches(is_joiner);
            if compound.is_empty() {
                continue;
            }
            let parts = split_parts(compound);
            if parts.len() == 1 {
                out.push(parts[0].to_lowercase());
            } else if !parts.is_empty() {
                out.push(compound.to_lowercase());
                out.extend(parts.iter().map(|p| p.to_lowercase()));
            }
        }
        out.into_iter().map(|t| stem(&t).into_owned()).collect()
    }

    proptest::proptest! {
        #[test]
        fn streaming_equals_reference(text in "(?s)[a-zA-Z0-9_./:@#\\ -]{0,40}|\\PC{0,20}") {
            proptest::prop_assert_eq!(tokenize(&text), reference(&text));
        }
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn ids_are_stable_and_in_range() {
        let ids = token_ids("Fix the parseJSON bug in src/lib.rs", DEFAULT_BUCKETS);
        assert_eq!(ids.len(), 11);
        assert!(ids.iter().all(|&i| i < DEFAULT_BUCKETS));
        assert_eq!(ids[0], token_id("fix", DEFAULT_BUCKETS));
        // Case-insensitive: the same word in another case has the same bucket.
        assert_eq!(token_ids("FIX", DEFAULT_BUCKETS), vec![ids[0]]);
        // Pinned values: changing the hash would silently invalidate every trained table.
        assert_eq!(token_id("fix", DEFAULT_BUCKETS), (fnv1a64(b"fix") % 16_384) as u32);
        assert_eq!(token_ids("x", 0), Vec::<u32>::new());
    }
}
