//! Text analysis shared by storage and the domain: stop words, the FTS5
//! query, IDF-weighted lexical overlap, bags of words and the stored form of
//! a memory's text ([`MemoryText`]), question kinds, and the dates a query names.

use std::collections::BTreeSet;

use foldhash::HashMap;

/// English function words dropped from queries (they match everything),
/// in byte order for [`is_stop_word`]'s binary search.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "don't",
    "done",
    "dont",
    "down",
    "during",
    "each",
    "else",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "i'm",
    "i've",
    "if",
    "im",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "itself",
    "ive",
    "just",
    "let",
    "lets",
    "like",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "ok",
    "okay",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "thank",
    "thanks",
    "that",
    "that's",
    "thats",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "three",
    "through",
    "to",
    "too",
    "two",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "what's",
    "whats",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "yeah",
    "yes",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// English month names, lower-case, January first.
pub const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Words other than month names that place something in time (relative
/// days, calendar units, weekdays, seasons), lower-case.
const TIME_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "weekend",
    "weekends",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "recently",
    "lately",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "summer",
    "winter",
    "spring",
    "autumn",
];

/// Words after "what"/"which" that make a question about time.
const TIME_NOUNS: &[&str] = &["year", "date", "day", "month", "time", "week", "season", "weekend", "hour"];

/// Whether `pred` holds for one of the words of [`lower_words`], in order,
/// without allocating for the words short enough to matter (ASCII words are
/// lower-cased in a small buffer; the rest as `lower_words` does). A scan
/// of every memory of a pool, so it stays off the allocator.
fn any_lower_word(text: &str, mut pred: impl FnMut(&str) -> bool) -> bool {
    let mut buf = [0u8; 32];
    text.split(|c: char| !c.is_alphanumeric() && c != ':').filter(|w| !w.is_empty()).any(|w| {
        if w.is_ascii() && w.len() <= buf.len() {
            let b = &mut buf[..w.len()];
            b.copy_from_slice(w.as_bytes());
            b.make_ascii_lowercase();
            std::str::from_utf8(b).is_ok_and(&mut pred)
        } else {
            pred(&w.to_lowercase())
        }
    })
}

fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != ':').filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether a query asks about time: "when …", "how long …", "what year …",
/// "which day …", "… ago".
pub fn asks_about_time(query: &str) -> bool {
    let words = lower_words(query);
    words.iter().enumerate().any(|(i, w)| match w.as_str() {
        "when" | "ago" => true,
        "how" => words.get(i + 1).is_some_and(|n| n == "long" || n == "often"),
        "what" | "which" => words[i + 1..].iter().take(2).any(|n| TIME_NOUNS.contains(&n.as_str())),
        _ => false,
    })
}

/// Whether a text states a time: a time word, a year (1900–2099), a clock time (`10:30`, `7pm`).
pub fn has_time_expression(text: &str) -> bool {
    any_lower_word(text, is_time_word)
}

/// Whether one lower-cased word of [`lower_words`] states a time.
fn is_time_word(w: &str) -> bool {
    let w = w.trim_matches(':');
    if TIME_WORDS.contains(&w) || MONTH_NAMES.contains(&w) {
        return true;
    }
    if w.len() == 4 && w.bytes().all(|b| b.is_ascii_digit()) {
        return year_of(w).is_some();
    }
    if let Some((h, m)) = w.split_once(':') {
        return !h.is_empty()
            && h.len() <= 2
            && m.len() == 2
            && (h.bytes().chain(m.bytes())).all(|b| b.is_ascii_digit());
    }
    let digits = w.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && digits <= 2 && matches!(&w[digits..], "am" | "pm")
}

/// Whether a query asks for a quantity: "how many …", "how much …", "how
/// old …", "how far …", "what number …".
pub fn asks_quantity(query: &str) -> bool {
    let words = lower_words(query);
    words.windows(2).any(|w| match w[0].as_str() {
        "how" => matches!(w[1].as_str(), "many" | "much" | "old" | "far" | "big" | "tall" | "fast"),
        "what" | "which" => matches!(w[1].as_str(), "number" | "amount" | "percentage" | "score" | "size" | "age"),
        _ => false,
    })
}

/// Number words a text can state a quantity with.
const NUMBER_WORDS: &[&str] = &[
    "dozen", "dozens", "eight", "eleven", "fifteen", "fifty", "five", "forty", "four", "half", "hundred", "hundreds",
    "million", "nine", "once", "one", "seven", "six", "sixty", "ten", "thirty", "thousand", "three", "thrice",
    "twelve", "twenty", "twice", "two",
];

/// Whether a text states a number: a numeral, or a number word ("three", "twice", "dozen").
pub fn has_number(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_digit()) || any_lower_word(text, |w| NUMBER_WORDS.contains(&w))
}

/// Whether a memory is a question: its text, without a trailing bracketed
/// note (an attachment's caption), ends with a question mark.
pub fn is_question(text: &str) -> bool {
    let mut t = text.trim_end();
    if t.ends_with(']')
        && let Some(open) = t.rfind('[')
    {
        t = t[..open].trim_end();
    }
    t.ends_with('?')
}

/// Capitalised words that do not start a sentence (names, places, titles),
/// not counting "I" and its contractions, and not counting a leading
/// `Speaker:` label.
pub fn proper_noun_count(text: &str) -> u32 {
    let body = match text.split_once(": ") {
        Some((label, rest)) if !label.is_empty() && label.len() <= 40 && !label.contains(char::is_whitespace) => rest,
        _ => text,
    };
    let mut count = 0u32;
    let mut sentence_start = true;
    for word in body.split_whitespace() {
        let w = word.trim_start_matches(|c: char| !c.is_alphanumeric());
        let is_i = w == "I" || w.starts_with("I'") || w.starts_with("I’");
        if !sentence_start && !is_i && w.chars().next().is_some_and(char::is_uppercase) {
            count += 1;
        }
        sentence_start = word.ends_with(['.', '!', '?', ':', '"']);
    }
    count
}

/// First-person words: the speaker talks about themself.
const FIRST_PERSON: &[&str] = &["i", "i'm", "i've", "i'll", "i'd", "me", "my", "mine", "myself", "we", "our", "us"];

/// Whether a text speaks in the first person.
pub fn is_first_person(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .any(|w| w.len() <= 6 && FIRST_PERSON.iter().any(|p| p.eq_ignore_ascii_case(w)))
}

/// A calendar date a query names: a year, a month, a day of a month, or
/// any combination ("in 2022", "in June", "on 13 October, 2023").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateRef {
    /// The year, when named.
    pub year: Option<i32>,
    /// The month, 1–12, when named.
    pub month: Option<u32>,
    /// The day of the month, when named (only with a month).
    pub day: Option<u32>,
}

/// Words that make a following month name a date ("in May", "early June"):
/// "may" alone is more often a verb.
const BEFORE_MONTH: &[&str] = &["in", "on", "of", "during", "since", "early", "late", "mid", "last", "this", "by"];

/// A day of the month written as a number, with or without an ordinal suffix ("13", "3rd").
fn day_of_month(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(word: &str) -> Option<i32> {
    (word.len() == 4 && (word.starts_with("19") || word.starts_with("20"))).then(|| word.parse().ok()).flatten()
}

/// The calendar dates a query names, in order. Month names count when a day
/// or a year is next to them or a preposition comes before them; a year
/// counts on its own too.
pub fn query_dates(query: &str) -> Vec<DateRef> {
    let words: Vec<String> =
        query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let mut out = Vec::new();
    let mut used = vec![false; words.len()];
    for (i, w) in words.iter().enumerate() {
        let Some(m) = MONTH_NAMES.iter().position(|&n| n == w.as_str()) else { continue };
        let before = i.checked_sub(1).map(|j| words[j].as_str());
        let after = words.get(i + 1).map(String::as_str);
        let day_before = before.and_then(day_of_month);
        let day_after = after.and_then(day_of_month);
        let day = day_after.or(day_before);
        // The year follows the month, or the day after it ("October 13, 2023").
        let year_at = (i + 1..(i + 3).min(words.len())).find(|&j| year_of(&words[j]).is_some());
        let year = year_at.and_then(|j| year_of(&words[j]));
        let introduced = before.is_some_and(|b| BEFORE_MONTH.contains(&b));
        if day.is_none() && year.is_none() && !introduced {
            continue;
        }
        if let Some(j) = year_at {
            used[j] = true;
        }
        out.push(DateRef { year, month: Some(m as u32 + 1), day });
    }
    for (i, w) in words.iter().enumerate() {
        if let (false, Some(y)) = (used[i], year_of(w)) {
            out.push(DateRef { year: Some(y), month: None, day: None });
        }
    }
    out
}

/// How well a memory created on `date` (year, month, day) fits the dates a
/// query names, in `[0, 1]`, the best over the dates: 1 when it falls on a
/// named day or up to a week after it (a session tells what happened in the
/// days before), in a named month, or in a named year; 0.5 in the first week
/// after a named month; else 0. A date without a year fits any year.
pub fn date_fit(refs: &[DateRef], date: (i32, u32, u32)) -> f32 {
    let (y, m, d) = date;
    // Days since a fixed origin as if every month had 31 days: exact enough
    // for a tolerance of a week, and monotone across months and years.
    let ordinal = |y: i32, m: u32, d: u32| (i64::from(y) * 12 + i64::from(m)) * 31 + i64::from(d);
    let next_month = |y: i32, m: u32| if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let fit = |r: &DateRef| -> f32 {
        // Without a year the memory's own year (or the one before, for a
        // date late in December) stands in.
        let years: &[i32] = match r.year {
            Some(ry) => &[ry],
            None => &[y, y - 1],
        };
        let mut best = 0.0f32;
        for &ry in years {
            let score = match (r.month, r.day) {
                (None, _) => f32::from(u8::from(ry == y)),
                (Some(rm), Some(rd)) => {
                    f32::from(u8::from((0..=7).contains(&(ordinal(y, m, d) - ordinal(ry, rm, rd)))))
                }
                (Some(rm), None) if (ry, rm) == (y, m) => 1.0,
                (Some(rm), None) if next_month(ry, rm) == (y, m) && d <= 7 => 0.5,
                (Some(_), None) => 0.0,
            };
            best = best.max(score);
        }
        best
    };
    refs.iter().map(fit).fold(0.0, f32::max)
}

/// Whether `word` (lower-case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Words as SQLite's `unicode61` tokenizer sees them (runs of alphanumerics),
/// lower-cased, without stop words, first occurrence order, deduplicated.
pub fn fts_words(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !is_stop_word(w) && w.chars().count() <= 64)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// An FTS5 MATCH expression OR-ing the query's words (each quoted), or `None`
/// when nothing searchable remains. At most `max_terms` words are kept,
/// preferring the rarest according to `df` (unknown words count as rare).
pub fn fts_query(text: &str, df: &HashMap<String, u64>, max_terms: usize) -> Option<String> {
    phrase_query(&fts_phrases(text, df, max_terms))
}

/// The words [`fts_query`] quotes, in its order.
pub fn fts_phrases(text: &str, df: &HashMap<String, u64>, max_terms: usize) -> Vec<String> {
    let mut words = fts_words(text);
    if words.len() > max_terms {
        words.sort_by_key(|w| df.get(w).copied().unwrap_or(0));
        words.truncate(max_terms);
    }
    words
}

/// The FTS5 MATCH expression OR-ing `phrases` (each quoted), or `None` if there are none.
pub fn phrase_query(phrases: &[String]) -> Option<String> {
    if phrases.is_empty() {
        return None;
    }
    Some(phrases.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect::<Vec<_>>().join(" OR "))
}

/// One query term with its IDF weight.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryTerm {
    /// The term (predictor tokenization).
    pub text: String,
    /// Its FNV-1a hash (the key of [`Bag`]).
    pub hash: u64,
    /// Its inverse document frequency over the memories.
    pub idf: f32,
}

/// Query terms in the predictor's tokenization, without stop words, deduplicated.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    predictor::tokenizer::for_each_token(text, |t| {
        if !is_stop_word(t) && seen.insert(t.to_owned()) {
            out.push(t.to_owned());
        }
    });
    out
}

/// The tokens of `text` in order (the predictor's tokenization, stop words
/// dropped), each with the lower-case word it came from: the part of a path
/// or identifier that stems to it, else the whole compound. Explanations show
/// these words rather than stems (`deploy`, not `deploi`).
pub fn surface_tokens(text: &str) -> Vec<(String, String)> {
    const JOINERS: &str = "_-./\\:@#";
    let mut out = Vec::new();
    for compound in text.split(|c: char| !(c.is_alphanumeric() || JOINERS.contains(c))) {
        let compound = compound.trim_matches(|c: char| JOINERS.contains(c));
        if compound.is_empty() {
            continue;
        }
        let pieces: Vec<&str> = compound.split(|c: char| JOINERS.contains(c)).filter(|p| !p.is_empty()).collect();
        predictor::tokenizer::for_each_token(compound, |t| {
            if is_stop_word(t) {
                return;
            }
            let surface = pieces
                .iter()
                .find(|p| predictor::tokenizer::tokenize(p).first().is_some_and(|x| x == t))
                .map_or(compound, |p| *p);
            out.push((t.to_owned(), surface.to_lowercase()));
        });
    }
    out
}

/// Inverse document frequency (BM25's, floored at a small positive value).
pub fn idf(df: u64, n: u64) -> f32 {
    let (df, n) = (df as f32, n.max(1) as f32);
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln().max(0.01)
}

/// IDF-weighted share of the query's terms present in a memory (its content
/// bag or its tags), in `[0, 1]`, and the matched terms (for explanations).
pub fn lexical_overlap<'a>(query: &'a [QueryTerm], content: &Bag, tags: &Bag) -> (f32, Vec<&'a str>) {
    let total: f32 = query.iter().map(|t| t.idf).sum();
    if total <= 0.0 {
        return (0.0, Vec::new());
    }
    let mut hit = 0.0;
    let mut matched = Vec::new();
    for t in query {
        if content.contains(t.hash) || tags.contains(t.hash) {
            hit += t.idf;
            matched.push(t.text.as_str());
        }
    }
    ((hit / total).clamp(0.0, 1.0), matched)
}

/// A sparse term-count vector: hashed terms (stop words dropped), sorted, with
/// the vector's norm precomputed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bag {
    terms: Vec<(u64, f32)>,
    norm: f32,
}

impl Bag {
    /// A bag of these (hash, count) terms, in ascending hash order.
    fn from_terms(terms: Vec<(u64, f32)>) -> Bag {
        let norm = terms.iter().map(|(_, c)| c * c).sum::<f32>().sqrt();
        Bag { terms, norm }
    }

    /// Whether the bag holds the term with this hash.
    pub fn contains(&self, hash: u64) -> bool {
        self.terms.binary_search_by_key(&hash, |(h, _)| *h).is_ok()
    }

    /// How many times the term with this hash occurs (0 when absent).
    pub fn count(&self, hash: u64) -> f32 {
        self.terms.binary_search_by_key(&hash, |(h, _)| *h).map_or(0.0, |i| self.terms[i].1)
    }

    /// Terms counted with repetition: the length BM25 normalises by.
    pub fn total(&self) -> f32 {
        self.terms.iter().map(|(_, c)| c).sum()
    }

    /// Distinct terms.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether the bag is empty.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The bag of words of a text, tokenizing it once.
pub fn bag_of_words(text: &str) -> Bag {
    let mut hashed: Vec<u64> = Vec::new();
    predictor::tokenizer::for_each_token(text, |t| {
        if !is_stop_word(t) {
            hashed.push(predictor::tokenizer::fnv1a64(t.as_bytes()));
        }
    });
    hashed.sort_unstable();
    let mut terms: Vec<(u64, f32)> = Vec::with_capacity(hashed.len());
    for h in hashed {
        match terms.last_mut() {
            Some((last, count)) if *last == h => *count += 1.0,
            _ => terms.push((h, 1.0)),
        }
    }
    Bag::from_terms(terms)
}

/// BM25's term-frequency saturation.
const BM25_K1: f32 = 1.2;
/// BM25's length normalisation.
const BM25_B: f32 = 0.75;

/// BM25 of the query over a window of memories read as one document: term
/// counts and lengths add up, and the length is normalised by `avg_len` (the
/// mean memory length) times the number of memories in the window.
pub fn window_bm25(query: &[QueryTerm], window: &[&Bag], avg_len: f32) -> f32 {
    if window.is_empty() || avg_len <= 0.0 {
        return 0.0;
    }
    let len: f32 = window.iter().map(|b| b.total()).sum();
    let k = BM25_K1 * (1.0 - BM25_B + BM25_B * len / (avg_len * window.len() as f32));
    query
        .iter()
        .map(|t| {
            let tf: f32 = window.iter().map(|b| b.count(t.hash)).sum();
            if tf > 0.0 { t.idf * tf * (BM25_K1 + 1.0) / (tf + k) } else { 0.0 }
        })
        .sum()
}

/// What a memory's text says about its shape, independent of any query (see
/// the candidate signals of the same names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextFacts {
    /// [`is_question`].
    pub is_question: bool,
    /// [`proper_noun_count`].
    pub proper_nouns: u32,
    /// [`has_number`].
    pub states_number: bool,
    /// [`has_time_expression`].
    pub states_time: bool,
    /// [`is_first_person`].
    pub first_person: bool,
}

/// The [`TextFacts`] of a text.
pub fn text_facts(text: &str) -> TextFacts {
    TextFacts {
        is_question: is_question(text),
        proper_nouns: proper_noun_count(text),
        states_number: has_number(text),
        states_time: has_time_expression(text),
        first_person: is_first_person(text),
    }
}

/// Version of the text analysis a stored [`MemoryText`] was made with: the
/// tokenizer, stemmer and stop words behind [`bag_of_words`], and the scans
/// behind [`text_facts`]. Bump it whenever either changes what it returns
/// for some text: a store's writer then recomputes every memory's stored
/// text when it opens, and until then readers compute it themselves.
pub const TEXT_VERSION: u8 = 1;

/// A memory's bag of words and text facts, as the projection stores them
/// (`memories.text_terms`, written by the apply), so that a ranking never
/// tokenizes a memory it did not write.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryText {
    /// [`bag_of_words`] of the content.
    pub bag: Bag,
    /// [`text_facts`] of the content.
    pub facts: TextFacts,
}

impl MemoryText {
    /// Analyses a memory's content.
    pub fn of(content: &str) -> MemoryText {
        MemoryText { bag: bag_of_words(content), facts: text_facts(content) }
    }

    /// The stored form: [`TEXT_VERSION`], a flags byte (question, number,
    /// time, first person), the proper-noun count and the number of terms as
    /// LEB128 varints, then each term as its hash (8 bytes, little endian)
    /// and its count (varint), in ascending hash order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.bag.terms.len() * 9);
        let f = &self.facts;
        let flags = u8::from(f.is_question)
            | u8::from(f.states_number) << 1
            | u8::from(f.states_time) << 2
            | u8::from(f.first_person) << 3;
        out.extend([TEXT_VERSION, flags]);
        put_varint(&mut out, u64::from(f.proper_nouns));
        put_varint(&mut out, self.bag.terms.len() as u64);
        for &(hash, count) in &self.bag.terms {
            out.extend(hash.to_le_bytes());
            // Counts are whole numbers of occurrences (at most a text's length).
            put_varint(&mut out, count as u64);
        }
        out
    }

    /// Reads [`MemoryText::encode`]'s form; `None` for another version or
    /// anything malformed (truncated, trailing bytes, terms out of order), so
    /// that the caller analyses the content instead.
    pub fn decode(blob: &[u8]) -> Option<MemoryText> {
        let (&version, rest) = blob.split_first()?;
        let (&flags, mut rest) = rest.split_first()?;
        if version != TEXT_VERSION || flags >> 4 != 0 {
            return None;
        }
        let proper_nouns = u32::try_from(get_varint(&mut rest)?).ok()?;
        let n = usize::try_from(get_varint(&mut rest)?).ok()?;
        // Each term takes at least 9 bytes: refuse a count the blob cannot hold.
        if n > rest.len() / 9 {
            return None;
        }
        let mut terms: Vec<(u64, f32)> = Vec::with_capacity(n);
        for _ in 0..n {
            let (hash, tail) = rest.split_first_chunk::<8>()?;
            rest = tail;
            let hash = u64::from_le_bytes(*hash);
            let count = get_varint(&mut rest)?;
            if count == 0 || count > 1 << 24 || terms.last().is_some_and(|&(last, _)| last >= hash) {
                return None;
            }
            terms.push((hash, count as f32));
        }
        if !rest.is_empty() {
            return None;
        }
        let facts = TextFacts {
            is_question: flags & 1 != 0,
            states_number: flags & 2 != 0,
            states_time: flags & 4 != 0,
            first_person: flags & 8 != 0,
            proper_nouns,
        };
        Some(MemoryText { bag: Bag::from_terms(terms), facts })
    }

    /// The stored form when it is there and readable, else the content analysed.
    pub fn stored_or_of(blob: Option<&[u8]>, content: &str) -> MemoryText {
        blob.and_then(MemoryText::decode).unwrap_or_else(|| MemoryText::of(content))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = input.split_first()?;
        *input = rest;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Cosine similarity of two bags of words (0 when either is empty).
pub fn bag_cosine(a: &Bag, b: &Bag) -> f32 {
    if a.norm == 0.0 || b.norm == 0.0 {
        return 0.0;
    }
    let (mut i, mut j, mut dot) = (0, 0, 0.0f32);
    while i < a.terms.len() && j < b.terms.len() {
        match a.terms[i].0.cmp(&b.terms[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += a.terms[i].1 * b.terms[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    dot / (a.norm * b.norm)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// The scans as first written, with an allocation per word: the
    /// allocation-free ones must agree with them on any text.
    fn reference_facts(text: &str) -> (bool, bool, bool) {
        let time = lower_words(text).iter().any(|w| is_time_word(w));
        let number = text.bytes().any(|b| b.is_ascii_digit())
            || lower_words(text).iter().any(|w| NUMBER_WORDS.contains(&w.as_str()));
        let first = text
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .any(|w| w.len() <= 6 && FIRST_PERSON.contains(&w.to_lowercase().as_str()));
        (time, number, first)
    }

    proptest! {
        #[test]
        fn text_scans_agree_with_their_reference(
            words in proptest::collection::vec(
                prop_oneof![
                    Just("Yesterday".to_string()), Just("MAY".to_string()), Just("10:30".to_string()),
                    Just("7pm".to_string()), Just("2021".to_string()), Just("Twice".to_string()),
                    Just("I'm".to_string()), Just("OUR".to_string()), Just("Émile".to_string()),
                    Just("weeks".to_string()), "[a-zA-Z0-9:'é]{0,40}",
                ],
                0..12,
            ),
            seps in proptest::collection::vec(prop_oneof![Just(" "), Just(", "), Just("! "), Just(":"), Just("—")], 12),
        ) {
            let text: String = words.iter().zip(&seps).map(|(w, s)| format!("{w}{s}")).collect();
            prop_assert_eq!(
                (has_time_expression(&text), has_number(&text), is_first_person(&text)),
                reference_facts(&text),
                "{:?}", text
            );
        }
    }

    proptest! {
        #[test]
        fn stored_memory_text_reads_back_as_the_analysis(text in "(?s)[a-zA-Z0-9 ,.?!'é]{0,300}") {
            let analysed = MemoryText::of(&text);
            let blob = analysed.encode();
            prop_assert_eq!(MemoryText::decode(&blob), Some(analysed.clone()));
            for cut in 0..blob.len() {
                prop_assert_eq!(MemoryText::decode(&blob[..cut]), None, "cut at {}", cut);
            }
            let mut longer = blob.clone();
            longer.push(0);
            prop_assert_eq!(MemoryText::decode(&longer), None);
            prop_assert_eq!(MemoryText::stored_or_of(None, &text), analysed);
        }

        #[test]
        fn any_bytes_decode_or_are_refused_without_panic(mut blob in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(first) = blob.first_mut() {
                *first = TEXT_VERSION;
            }
            if let Some(read) = MemoryText::decode(&blob) {
                prop_assert_eq!(MemoryText::decode(&read.encode()), Some(read));
            }
        }
    }

    #[test]
    fn another_version_is_analysed_again() {
        let text = "Melanie ran a charity race for mental health on Saturday?";
        let mut blob = MemoryText::of(text).encode();
        assert_eq!(blob[0], TEXT_VERSION);
        blob[0] = TEXT_VERSION.wrapping_add(1);
        assert_eq!(MemoryText::decode(&blob), None);
        let read = MemoryText::stored_or_of(Some(&blob), text);
        assert_eq!(read, MemoryText::of(text));
        assert!(read.facts.is_question && read.facts.states_time && read.facts.proper_nouns >= 1);
    }

    fn terms(words: &[(&str, f32)]) -> Vec<QueryTerm> {
        words
            .iter()
            .map(|&(w, idf)| QueryTerm { text: w.into(), hash: predictor::tokenizer::fnv1a64(w.as_bytes()), idf })
            .collect()
    }

    #[test]
    fn window_bm25_adds_up_the_window_and_normalises_by_its_size() {
        let q = terms(&[("flower", 2.0), ("garden", 1.0)]);
        let (question, answer) = (bag_of_words("which flower grows in your garden"), bag_of_words("peruvian lilies"));
        let alone = window_bm25(&q, &[&question], 4.0);
        assert!(alone > 0.0);
        assert_eq!(window_bm25(&q, &[&answer], 4.0), 0.0);
        let pair = window_bm25(&q, &[&question, &answer], 4.0);
        assert!(pair > 0.0 && pair <= alone * 1.5, "{pair} vs {alone}");
        // Order inside a window does not matter; nothing is found in nothing.
        assert_eq!(pair, window_bm25(&q, &[&answer, &question], 4.0));
        assert_eq!(window_bm25(&q, &[], 4.0), 0.0);
        assert_eq!(window_bm25(&[], &[&question], 4.0), 0.0);
        // Repeating a term saturates: twice the count, less than twice the score.
        let twice = bag_of_words("flower flower");
        let once = bag_of_words("flower rose");
        let (s2, s1) = (window_bm25(&q, &[&twice], 2.0), window_bm25(&q, &[&once], 2.0));
        assert!(s2 > s1 && s2 < 2.0 * s1);
    }

    #[test]
    fn stop_words_are_sorted_and_unique_for_the_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        for w in ["a", "the", "yourselves", "okay", "its", "did"] {
            assert!(is_stop_word(w), "{w}");
        }
        for w in ["cache", "", "zzz", "aa", "The"] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn quantity_questions_and_numbers() {
        for q in ["How many dogs does Andrew have?", "how much did it cost", "What number is the bus?"] {
            assert!(asks_quantity(q), "{q}");
        }
        for q in ["How does the cache work?", "What did Ann adopt?", "When did many people come?"] {
            assert!(!asks_quantity(q), "{q}");
        }
        for t in ["I adopted three pups", "port 8080", "I went twice", "a dozen eggs"] {
            assert!(has_number(t), "{t}");
        }
        for t in ["I adopted a pup", "someone went there", "tonight"] {
            assert!(!has_number(t), "{t}");
        }
    }

    #[test]
    fn questions_end_with_a_question_mark_before_any_caption() {
        assert!(is_question("Tim: How long do you hold that pose?"));
        assert!(is_question("Tim: Is this yours? [shares a photo: a red bike]  "));
        assert!(!is_question("John: I hold it for 30-60 seconds. Why? Strength!"));
        assert!(!is_question("John: [sic] fine"));
        assert!(!is_question(""));
    }

    #[test]
    fn proper_nouns_are_capitalised_words_inside_sentences() {
        assert_eq!(proper_noun_count("Caroline: I went to Paris with Mel. It was great!"), 2);
        assert_eq!(
            proper_noun_count("Thanks! I'm glad. I've been busy"),
            0,
            "sentence starts and I-forms do not count"
        );
        assert_eq!(proper_noun_count("Deploy: Friday"), 0, "a leading label and the word after it do not count");
        assert_eq!(proper_noun_count("we use \"SQLite\" and Rust"), 2);
        assert_eq!(proper_noun_count(""), 0);
    }

    #[test]
    fn first_person_words() {
        assert!(is_first_person("Yeah, I'm doing kickboxing"));
        assert!(is_first_person("Our team ships on Friday"));
        assert!(!is_first_person("Images are cached in the CDN"));
        assert!(!is_first_person("Mining useless data"), "part of a word is not a word");
    }

    #[test]
    fn queries_name_dates_by_day_month_and_year() {
        let d = |year, month, day| DateRef { year, month, day };
        assert_eq!(query_dates("When did Melanie go camping in June?"), vec![d(None, Some(6), None)]);
        assert_eq!(
            query_dates("What painting did Mel show on October 13, 2023?"),
            vec![d(Some(2023), Some(10), Some(13))]
        );
        assert_eq!(query_dates("What did Gina find on 1 February, 2023?"), vec![d(Some(2023), Some(2), Some(1))]);
        assert_eq!(query_dates("What did she start in December 2023?"), vec![d(Some(2023), Some(12), None)]);
        assert_eq!(query_dates("How often did he swim in 2022"), vec![d(Some(2022), None, None)]);
        assert_eq!(query_dates("May I ask what the build uses?"), vec![], "'may' alone is a verb");
        assert_eq!(query_dates("port 8080 on the 3rd try"), vec![]);
        assert_eq!(query_dates(""), vec![]);
    }

    #[test]
    fn a_memory_fits_the_day_the_month_or_the_year_it_was_created_in() {
        let d = |year, month, day| DateRef { year, month, day };
        let day = [d(Some(2023), Some(10), Some(13))];
        assert_eq!(date_fit(&day, (2023, 10, 13)), 1.0);
        assert_eq!(date_fit(&day, (2023, 10, 19)), 1.0, "told within the week after");
        assert_eq!(date_fit(&day, (2023, 10, 12)), 0.0, "before the day");
        assert_eq!(date_fit(&day, (2023, 11, 13)), 0.0);
        assert_eq!(date_fit(&day, (2022, 10, 13)), 0.0, "another year");
        let new_year = [d(Some(2022), Some(12), Some(30))];
        assert_eq!(date_fit(&new_year, (2023, 1, 2)), 1.0, "the week after crosses the year");
        let month = [d(None, Some(6), None)];
        assert_eq!(date_fit(&month, (2021, 6, 30)), 1.0, "no year: any year");
        assert_eq!(date_fit(&month, (2021, 7, 3)), 0.5, "the first week after the month");
        assert_eq!(date_fit(&month, (2021, 7, 9)), 0.0);
        assert_eq!(date_fit(&[d(Some(2023), Some(12), None)], (2024, 1, 2)), 0.5);
        assert_eq!(date_fit(&[d(Some(2022), None, None)], (2022, 3, 1)), 1.0);
        assert_eq!(date_fit(&[d(Some(2022), None, None)], (2023, 3, 1)), 0.0);
        assert_eq!(date_fit(&[], (2023, 3, 1)), 0.0);
        let two = [d(None, Some(1), None), d(None, Some(3), None)];
        assert_eq!(date_fit(&two, (2023, 3, 1)), 1.0, "the best of the dates named");
    }

    #[test]
    fn time_questions_and_time_expressions() {
        for q in [
            "When did Ann adopt the cat?",
            "How long has she painted?",
            "What year did they move?",
            "Which day is the meetup",
            "What was fixed two weeks ago?",
        ] {
            assert!(asks_about_time(q), "{q}");
        }
        for q in ["What did Ann adopt?", "Which file holds the parser?", "How does the cache work?"] {
            assert!(!asks_about_time(q), "{q}");
        }
        for t in [
            "I went there yesterday!",
            "We moved in 2021.",
            "Deploy at 10:30 on Friday",
            "see you at 7pm",
            "last summer was hot",
        ] {
            assert!(has_time_expression(t), "{t}");
        }
        for t in ["The parser lives in src/parse.rs", "I adopted a cat", "port 8080 and 3 items", "ratio 1:250"] {
            assert!(!has_time_expression(t), "{t}");
        }
    }

    use super::*;

    #[test]
    fn fts_query_quotes_and_drops_stop_words() {
        let df = HashMap::default();
        assert_eq!(fts_query("Why does the \"auth\" timeout?", &df, 8).unwrap(), "\"auth\" OR \"timeout\"");
        assert_eq!(fts_query("what is it", &df, 8), None);
    }

    #[test]
    fn fts_query_keeps_the_rarest_terms() {
        let df: HashMap<String, u64> =
            [("common".to_owned(), 900), ("rare".to_owned(), 2), ("mid".to_owned(), 50)].into_iter().collect();
        assert_eq!(fts_query("common mid rare", &df, 2).unwrap(), "\"rare\" OR \"mid\"");
    }

    #[test]
    fn overlap_weights_rare_terms() {
        let term = |t: &str, df| QueryTerm {
            text: t.into(),
            hash: predictor::tokenizer::fnv1a64(t.as_bytes()),
            idf: idf(df, 1000),
        };
        let q = vec![term("rare", 1), term("common", 500)];
        let none = Bag::default();
        assert!(lexical_overlap(&q, &bag_of_words("a rare find"), &none).0 > 0.8);
        assert!(lexical_overlap(&q, &bag_of_words("so common"), &none).0 < 0.2);
        assert!(lexical_overlap(&q, &none, &bag_of_words("rare")).0 > 0.8, "tags count too");
    }

    #[test]
    fn near_duplicate_texts_are_similar() {
        let a = bag_of_words("Run sqlite migrations inside a transaction");
        let b = bag_of_words("run the sqlite migrations inside one transaction");
        let c = bag_of_words("The build uses two cores");
        assert!(bag_cosine(&a, &b) > 0.85);
        assert!(bag_cosine(&a, &c) < 0.2);
    }
}
