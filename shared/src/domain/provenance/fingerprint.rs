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
//! **Line hashes** ([`lines`]): one hash per line of at least
//! [`LINE_MIN_TOKENS`] words, over that line's words in order. They are the
//! evidence of short spans, whose few k-grams winnowing may not select, and
//! of the exact code an edit wrote: a span's [`Evidence`] is its winnowed
//! fingerprints, all its k-grams and its line hashes, and the *dense* set
//! (every k-gram and every line hash, [`Fingerprinter::dense`]) is what the
//! spans of edits keep and what an edit's written text is indexed by.
//!
//! Fingerprints are stored as 47-bit values ([`stored`]): six bytes in a
//! SQLite integer. A line hash is stored with bit 47 ([`LINE`]) set, so it
//! never equals a k-gram's value and a set tells the two apart. The chance
//! that an unrelated fingerprint collides with one of a query's is about one
//! in 10^14 per pair.
//!
//! The hashes are computed here, by this code, so that they never change
//! with a dependency's version: the index stores them. Changing [`K`],
//! [`W`], the tokenizer or the hash changes [`VERSION`]; a store indexed by
//! another version is rebuilt by `engram-ingestor replay`.

/// k-gram size, in tokens: the noise threshold.
pub const K: usize = 5;
/// Window size, in k-grams: any shared run of `W + K - 1` tokens is found.
pub const W: usize = 12;
/// Version of the tokenizer, hashes, parameters and of what is indexed
/// (version 2 added line hashes and the dense postings of edits); stored in
/// the projection as `provenance_version`.
pub const VERSION: u32 = 2;
/// Bit set on the stored value of a line hash (above a k-gram's 47 bits).
pub const LINE: i64 = 1 << 47;
/// Lines with fewer words are not hashed (`}`, `else {`, `return;`).
pub const LINE_MIN_TOKENS: usize = 2;
/// Mixed into a line's hash so that a one-line text's line hash and its
/// k-gram (five words) differ however the bits fall.
const LINE_SALT: u64 = 0x6c69_6e65_6861_7368;

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

/// One hash per line of `text` holding at least [`LINE_MIN_TOKENS`] words
/// (a line-number gutter skipped), in order: the polynomial of the line's
/// token hashes, salted, finalised with splitmix64. `scratch` is reused.
pub fn lines(text: &str, scratch: &mut Vec<u64>, out: &mut Vec<u64>) {
    for line in text.lines() {
        scratch.clear();
        tokens(line, scratch);
        if scratch.len() < LINE_MIN_TOKENS {
            continue;
        }
        let h = scratch.iter().fold(LINE_SALT, |h, &t| h.wrapping_mul(ROLL).wrapping_add(t));
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

/// The value a line hash is stored as: its top 47 bits, with [`LINE`].
pub fn stored_line(h: u64) -> i64 {
    stored(h) | LINE
}

/// Whether a stored value is a line hash.
pub fn is_line(v: i64) -> bool {
    v & LINE != 0
}

/// What a span of text is looked up by, each sorted and without repeats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Its winnowed fingerprints (what an ordinary indexed text holding
    /// the span selected of it, about).
    pub winnowed: Vec<i64>,
    /// All its k-grams.
    pub kgrams: Vec<i64>,
    /// Its line hashes.
    pub lines: Vec<i64>,
}

impl Evidence {
    /// Every k-gram and line hash (the dense set), sorted.
    pub fn dense(&self) -> Vec<i64> {
        let mut out = Vec::with_capacity(self.kgrams.len() + self.lines.len());
        out.extend_from_slice(&self.kgrams);
        out.extend_from_slice(&self.lines);
        out.sort_unstable();
        out
    }

    /// Whether there is nothing to look up.
    pub fn is_empty(&self) -> bool {
        self.kgrams.is_empty() && self.lines.is_empty()
    }
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

    /// The line hashes of `text` as stored values, sorted, without repeats.
    pub fn line_hashes(&mut self, text: &str) -> Vec<i64> {
        self.picked.clear();
        lines(text, &mut self.tokens, &mut self.picked);
        let mut out: Vec<i64> = self.picked.iter().map(|&h| stored_line(h)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The winnowed fingerprints, k-grams and line hashes of `text`.
    pub fn evidence(&mut self, text: &str) -> Evidence {
        let winnowed = self.fingerprints([text]);
        let kgrams = self.all_kgrams(text);
        let lines = self.line_hashes(text);
        Evidence { winnowed, kgrams, lines }
    }

    /// Every k-gram and every line hash of `text`, sorted, without repeats:
    /// what the spans of edits keep and an edit's written text is indexed by.
    pub fn dense(&mut self, text: &str) -> Vec<i64> {
        let mut out = self.all_kgrams(text);
        out.extend(self.line_hashes(text));
        out.sort_unstable();
        out
    }
}

/// The values of sorted set `a` that are not in sorted set `b`.
pub fn difference(a: &[i64], b: &[i64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &x in a {
        while j < b.len() && b[j] < x {
            j += 1;
        }
        if b.get(j) != Some(&x) {
            out.push(x);
        }
    }
    out
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

/// Encodes sorted fingerprints as a blob: little-endian 6-byte values (a
/// line hash keeps its [`LINE`] bit, the 48th).
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
    fn line_hashes_read_words_and_skip_short_lines() {
        let mut f = Fingerprinter::default();
        let a = f.line_hashes("fn add(a: i32) -> i32 {\n    a + 1\n}\nelse {\n");
        // `}` and `else {` have fewer than two words.
        assert_eq!(a.len(), 2);
        assert!(a.iter().all(|&v| is_line(v)));
        // Gutters, indentation and punctuation do not change a line's hash.
        assert_eq!(f.line_hashes("     1→fn add(a: i32) -> i32 {\n  2\ta + 1\n"), a);
        // Word order does.
        assert_ne!(f.line_hashes("1 + a"), f.line_hashes("a + 1"));
        // A five-word line's hash is not its k-gram.
        let one = "let total = items sum";
        assert!(f.all_kgrams(one).iter().all(|k| !f.line_hashes(one).contains(k)));
        let e = f.evidence("fn add(a: i32, b: i32) -> i32 {\n    a + b\n}");
        assert_eq!((e.winnowed.len(), e.kgrams.len(), e.lines.len()), (1, 5, 2));
        assert_eq!(e.dense(), f.dense("fn add(a: i32, b: i32) -> i32 {\n    a + b\n}"));
    }

    #[test]
    fn difference_of_sorted_sets() {
        assert_eq!(difference(&[1, 3, 5, 7], &[0, 3, 4, 7, 9]), vec![1, 5]);
        assert_eq!(difference(&[1, 2], &[]), vec![1, 2]);
        assert!(difference(&[], &[1]).is_empty());
    }

    #[test]
    fn blobs_round_trip() {
        let fps = fingerprints(&"the quick brown fox jumps over the lazy dog again and again ".repeat(20));
        assert_eq!(decode(&encode(&fps)), fps);
        assert!(fps.iter().all(|&f| (0..1i64 << 47).contains(&f)));
        let dense = Fingerprinter::default().dense("the quick brown fox\njumps over the lazy dog\n");
        assert!(dense.iter().any(|&v| is_line(v)));
        assert_eq!(decode(&encode(&dense)), dense);
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

        /// Whole lines taken from a text have all their k-grams and line
        /// hashes in the text's dense set: an edit that wrote them holds
        /// all of a span's evidence.
        #[test]
        fn whole_lines_of_a_text_have_their_dense_set_in_it(
            lines in prop::collection::vec(prop::collection::vec(vocabulary(), 0..8), 1..30),
            from in 0usize..30,
            len in 1usize..30,
        ) {
            let text: Vec<String> = lines.iter().map(|l| l.join(" ")).collect();
            let from = from.min(text.len() - 1);
            let to = (from + len).min(text.len());
            let mut f = Fingerprinter::default();
            let span = f.dense(&text[from..to].join("\n"));
            let whole = f.dense(&text.join("\n"));
            prop_assert_eq!(intersection(&span, &whole), span.len());
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
