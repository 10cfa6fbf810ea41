//! Winnowed k-gram fingerprints over a language-agnostic tokenization
//! (Schleimer, Wilkerson, Aiken: "Winnowing: Local Algorithms for Document
//! Fingerprinting", SIGMOD 2003).
//!
//! **Tokens** are words: maximal runs of alphanumeric characters and `_`,
//! ASCII lower-cased. Punctuation and white space only separate them, so a
//! text reads the same whether it is code in a file, a diff (`+`/`-` line
//! prefixes), a `cat -n` listing or a quoted snippet in a message. A line
//! number gutter at the start of a line (digits followed by `→` or a tab,
//! as Claude Code's `Read` and `cat -n`/`nl` print them) is skipped.
//!
//! **k-grams**: each run of [`K`] consecutive tokens is hashed (64 bits,
//! from the tokens' own hashes, so the value depends on the words only).
//! **Winnowing** keeps, from every window of [`W`] consecutive k-gram
//! hashes, the smallest (the rightmost on ties). The guarantee: any run of
//! at least `W + K - 1` tokens shared by two texts yields at least one
//! fingerprint common to both, since the window made of its first `W`
//! k-grams is the same in both texts and selects the same hash. Matches
//! shorter than `K` tokens are never seen. A text with fewer than `W`
//! k-grams keeps its smallest.
//!
//! Fingerprints are stored as 47-bit values ([`stored`]): six bytes in a
//! SQLite integer. The chance that an unrelated fingerprint collides with
//! one of a query's is about one in 10^14 per pair.
//!
//! The hashes are computed here, by this code, so that they never change
//! with a dependency's version: the index stores them. Changing [`K`],
//! [`W`], the tokenizer or the hash changes [`VERSION`]; a store indexed by
//! another version is rebuilt by `engram-ingestor replay`.

/// k-gram size, in tokens: the noise threshold.
pub const K: usize = 5;
/// Window size, in k-grams: any shared run of `W + K - 1` tokens is found.
pub const W: usize = 12;
/// Version of the tokenizer, hash and parameters; stored in the projection.
pub const VERSION: u32 = 1;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// splitmix64's finaliser: spreads a value over all 64 bits.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// ASCII bytes that belong to words.
const WORD: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    t
};

/// Length of a line-number gutter at byte `i` (a line start): optional
/// blanks, digits, then `→` or a tab. 0 when there is none.
fn gutter(bytes: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
        j += 1;
    }
    let digits = j;
    while j < bytes.len() && bytes[j].is_ascii_digit() {
        j += 1;
    }
    if j == digits {
        return 0;
    }
    if bytes.get(j) == Some(&b'\t') {
        return j + 1 - i;
    }
    if bytes[j..].starts_with("→".as_bytes()) {
        return j + "→".len() - i;
    }
    0
}

/// Appends the token hashes of `text` to `out`: FNV-1a over each word's
/// lower-cased bytes, finalised with splitmix64.
pub fn tokens(text: &str, out: &mut Vec<u64>) {
    let bytes = text.as_bytes();
    let mut i = gutter(bytes, 0);
    let mut h = FNV_OFFSET;
    let mut in_word = false;
    while i < bytes.len() {
        let b = bytes[i];
        let (word, len) = if b < 0x80 {
            (WORD[b as usize], 1)
        } else {
            match text.get(i..).and_then(|t| t.chars().next()) {
                Some(c) => (c.is_alphanumeric(), c.len_utf8()),
                None => (false, 1),
            }
        };
        if word {
            for &x in &bytes[i..i + len] {
                h = (h ^ u64::from(x.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
            }
            in_word = true;
            i += len;
            continue;
        }
        if in_word {
            out.push(mix(h));
            h = FNV_OFFSET;
            in_word = false;
        }
        i += len;
        if b == b'\n' {
            i += gutter(bytes, i);
        }
    }
    if in_word {
        out.push(mix(h));
    }
}

/// Multiplier of the rolling k-gram hash (odd, from the golden ratio).
const ROLL: u64 = 0x9e37_79b9_7f4a_7c15;

/// The hash of every run of `k` consecutive tokens, in order: a polynomial
/// of the token hashes, rolled along the text, finalised with splitmix64.
pub fn kgrams(tokens: &[u64], k: usize, out: &mut Vec<u64>) {
    if k == 0 || tokens.len() < k {
        return;
    }
    out.reserve(tokens.len() + 1 - k);
    let top = (1..k).fold(1u64, |p, _| p.wrapping_mul(ROLL));
    let mut h = tokens[..k].iter().fold(0u64, |h, &t| h.wrapping_mul(ROLL).wrapping_add(t));
    out.push(mix(h));
    for i in k..tokens.len() {
        h = h.wrapping_sub(tokens[i - k].wrapping_mul(top)).wrapping_mul(ROLL).wrapping_add(tokens[i]);
        out.push(mix(h));
    }
}

/// Robust winnowing: the minimum of every window of `w` hashes (the
/// rightmost on ties), each selected position recorded once, in order. A
/// sequence shorter than one window selects its minimum.
pub fn winnow(hashes: &[u64], w: usize, out: &mut Vec<u64>) {
    if hashes.is_empty() || w == 0 {
        return;
    }
    if hashes.len() <= w {
        let (pos, _) = rightmost_min(hashes);
        out.push(hashes[pos]);
        return;
    }
    // A deque of positions whose hashes increase strictly from front to
    // back: its front is the rightmost minimum of the current window.
    let mut deque: std::collections::VecDeque<usize> = std::collections::VecDeque::with_capacity(w);
    let mut last: Option<usize> = None;
    for (i, &h) in hashes.iter().enumerate() {
        while deque.back().is_some_and(|&j| hashes[j] >= h) {
            deque.pop_back();
        }
        deque.push_back(i);
        if i + 1 < w {
            continue;
        }
        while deque.front().is_some_and(|&j| j + w <= i) {
            deque.pop_front();
        }
        if let Some(&m) = deque.front()
            && last != Some(m)
        {
            out.push(hashes[m]);
            last = Some(m);
        }
    }
}

fn rightmost_min(hashes: &[u64]) -> (usize, u64) {
    let mut best = (0, hashes[0]);
    for (i, &h) in hashes.iter().enumerate() {
        if h <= best.1 {
            best = (i, h);
        }
    }
    best
}

/// The value a fingerprint is stored and compared as: its top 47 bits.
pub fn stored(h: u64) -> i64 {
    (h >> 17) as i64
}

/// Reusable buffers for fingerprinting many texts.
#[derive(Debug, Default)]
pub struct Fingerprinter {
    tokens: Vec<u64>,
    grams: Vec<u64>,
    picked: Vec<u64>,
}

impl Fingerprinter {
    /// The winnowed fingerprints of `texts` read one after another (each
    /// text separates from the next), as stored values, sorted, without
    /// repeats.
    pub fn fingerprints<'t>(&mut self, texts: impl IntoIterator<Item = &'t str>) -> Vec<i64> {
        self.picked.clear();
        for text in texts {
            self.tokens.clear();
            self.grams.clear();
            tokens(text, &mut self.tokens);
            kgrams(&self.tokens, K, &mut self.grams);
            winnow(&self.grams, W, &mut self.picked);
        }
        sorted_stored(&self.picked)
    }

    /// Every k-gram of `text` (not winnowed), as stored values, sorted,
    /// without repeats: what a query looks up, so that any fingerprint a
    /// stored text selected inside the shared run is found.
    pub fn all_kgrams(&mut self, text: &str) -> Vec<i64> {
        self.tokens.clear();
        self.grams.clear();
        tokens(text, &mut self.tokens);
        kgrams(&self.tokens, K, &mut self.grams);
        sorted_stored(&self.grams)
    }
}

fn sorted_stored(hashes: &[u64]) -> Vec<i64> {
    let mut out: Vec<i64> = hashes.iter().map(|&h| stored(h)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The winnowed fingerprints of one text (see [`Fingerprinter::fingerprints`]).
pub fn fingerprints(text: &str) -> Vec<i64> {
    Fingerprinter::default().fingerprints([text])
}

/// Shared fingerprints over the fingerprints of `a` (sorted, unique):
/// how much of `a` is found in `b`.
pub fn containment(a: &[i64], b: &[i64]) -> f32 {
    if a.is_empty() {
        return 0.0;
    }
    intersection(a, b) as f32 / a.len() as f32
}

/// Jaccard similarity of two sorted, unique fingerprint sets.
pub fn jaccard(a: &[i64], b: &[i64]) -> f32 {
    let both = intersection(a, b);
    let union = a.len() + b.len() - both;
    if union == 0 { 0.0 } else { both as f32 / union as f32 }
}

/// Size of the intersection of two sorted, unique sets.
pub fn intersection(a: &[i64], b: &[i64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Encodes sorted fingerprints as a blob: little-endian 6-byte values.
pub fn encode(fps: &[i64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fps.len() * 6);
    for f in fps {
        out.extend_from_slice(&f.to_le_bytes()[..6]);
    }
    out
}

/// Decodes [`encode`]'s blob (a trailing partial value is ignored).
pub fn decode(blob: &[u8]) -> Vec<i64> {
    blob.chunks_exact(6)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..6].copy_from_slice(c);
            i64::from_le_bytes(b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn toks(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        tokens(text, &mut out);
        out
    }

    #[test]
    fn words_ignore_punctuation_case_and_gutters() {
        assert_eq!(toks("fn main() { Foo::bar(x, y_1); }"), toks("FN MAIN FOO BAR X Y_1"));
        assert_eq!(toks("     1→fn a() {\n     2→  b()\n"), toks("fn a() {\n  b()\n"));
        assert_eq!(toks("  12\tlet x = 1;\n"), toks("let x = 1;"));
        assert_eq!(toks("+let x = 1;\n-let y = 2;\n let z\n"), toks("let x = 1;\nlet y = 2;\nlet z\n"));
        // A number inside a line stays a word; a gutter needs its arrow or tab.
        assert_eq!(toks("x 12 y").len(), 3);
        assert_eq!(toks("12 apples").len(), 2);
        assert_eq!(toks("héllo—wörld"), toks("héllo wörld"));
        assert!(toks("").is_empty() && toks(" \n\t→ ").is_empty());
    }

    #[test]
    fn short_text_keeps_its_minimum_and_tiny_text_has_none() {
        assert_eq!(fingerprints("a b c d").len(), 0);
        assert_eq!(fingerprints("a b c d e").len(), 1);
        assert_eq!(fingerprints("a b c d e f g").len(), 1);
    }

    #[test]
    fn blobs_round_trip() {
        let fps = fingerprints(&"the quick brown fox jumps over the lazy dog again and again ".repeat(20));
        assert_eq!(decode(&encode(&fps)), fps);
        assert!(fps.iter().all(|&f| (0..1i64 << 47).contains(&f)));
    }

    /// A naive winnowing: the rightmost minimum of each window, positions
    /// deduplicated.
    fn naive_winnow(h: &[u64], w: usize) -> Vec<u64> {
        if h.len() <= w {
            return if h.is_empty() { vec![] } else { vec![h[rightmost_min(h).0]] };
        }
        let mut out = Vec::new();
        let mut last = None;
        for s in 0..=h.len() - w {
            let (p, v) = rightmost_min(&h[s..s + w]);
            if last != Some(s + p) {
                out.push(v);
                last = Some(s + p);
            }
        }
        out
    }

    fn vocabulary() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["fn", "let", "x", "y", "return", "self", "0", "1", "if", "else", "Ok", "map"])
            .prop_map(str::to_owned)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn rolling_kgrams_equal_the_polynomial(t in prop::collection::vec(any::<u64>(), 0..30), k in 1usize..7) {
            let mut fast = Vec::new();
            kgrams(&t, k, &mut fast);
            let naive: Vec<u64> = if t.len() < k {
                vec![]
            } else {
                t.windows(k).map(|g| mix(g.iter().fold(0u64, |h, &x| h.wrapping_mul(ROLL).wrapping_add(x)))).collect()
            };
            prop_assert_eq!(fast, naive);
        }

        #[test]
        fn winnow_equals_the_naive_definition(h in prop::collection::vec(0u64..20, 0..60), w in 1usize..8) {
            let mut fast = Vec::new();
            winnow(&h, w, &mut fast);
            prop_assert_eq!(fast, naive_winnow(&h, w));
        }

        /// The paper's guarantee: two texts sharing a run of at least
        /// W + K - 1 tokens share a fingerprint, wherever the run lies.
        #[test]
        fn any_shared_run_of_w_plus_k_minus_1_tokens_shares_a_fingerprint(
            left in prop::collection::vec(vocabulary(), 0..40),
            shared in prop::collection::vec(vocabulary(), W + K - 1..W + K + 20),
            right in prop::collection::vec(vocabulary(), 0..40),
            other_left in prop::collection::vec(vocabulary(), 0..40),
            other_right in prop::collection::vec(vocabulary(), 0..40),
        ) {
            let a = [left.join(" "), shared.join(" "), right.join(" ")].join(" ");
            let b = [other_left.join("\n"), shared.join("  "), other_right.join("; ")].join("\n");
            let (fa, fb) = (fingerprints(&a), fingerprints(&b));
            prop_assert!(intersection(&fa, &fb) > 0, "no shared fingerprint:\n{a}\n{b}");
            // And the shared run's own fingerprints are all in both texts.
            let fs = fingerprints(&shared.join(" "));
            prop_assert_eq!(containment(&fs, &fa), 1.0);
            prop_assert_eq!(containment(&fs, &fb), 1.0);
        }
    }
}
