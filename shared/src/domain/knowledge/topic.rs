//! Topic-shift detection at a prompt (seed 004 "Topic Shift Detection"),
//! calibrated on labelled real sessions (`tests/data/topic_shifts.json`).
//!
//! A new prompt is compared with the session's current thread (see
//! [`super::conversation::current`]). Real follow-ups react to the agent's
//! last answer, so words new to the user's own prompts say little; what
//! separates a new subject is the prompt's words measured against the
//! **last three turns** (prompts, the agent's replies, the files touched),
//! together with evidence that the user means to move on:
//!
//! | signal | value |
//! |---|---|
//! | `novelty` | share of the prompt's content tokens absent from the last three turns; Latin words of 2+ characters minus stop words, CJK text as character bigrams |
//! | `pause` | idle time since the thread's last activity (the agent's, once ingested): 0 under 1 h, 0.6 at 1 h rising log-linearly to 0.67 at 3 h; 0 when the prompt reacts to what happened ("still", "doesn't work", "encore", "还是"…) |
//! | `marker` | 0.8 for an explicit switch ("unrelated", "different subject", "changer de sujet", "zpět k", "换个话题", "ところで"…) |
//! | `evidence` | the larger of `pause` and `marker`, 1 when both |
//!
//! `score = novelty × evidence`, halved when the prompt opens with an
//! acknowledgement or continuation ("thanks", "also", "try again"…) and
//! carries no marker. Minutes of idle time are the normal rhythm of work and
//! count for nothing; a pause of hours or an explicit marker without new
//! words counts for nothing either. At the default ask threshold (0.4) the
//! ask tier is thus: no feedback wording and an idle time of 1 h with
//! novelty ≥ 0.67, or of 3 h or more with novelty ≥ 0.6; or a marker and
//! novelty ≥ 0.5.
//!
//! The detector stays silent (score 0) on the first two prompts of a thread,
//! on prompts of three content tokens or fewer, and until the thread has
//! moved on after a suggestion (its whole comparison window lies after it):
//! at most one suggestion per topic.
//!
//! Tiers: `ignore` below the ask threshold, `ask` (suggest a stash) below
//! the trust threshold, `trust` (stash automatically) above it, and only
//! with both a marker and a long pause. The thresholds adapt per project
//! ([`thresholds`]) from the counters the projection keeps (seed 004
//! "Adaptive Thresholds").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::RegexSet;
use rusqlite::OptionalExtension;
use serde::Serialize;

use crate::base::config::Config;
use crate::base::error::{Result, SqlContext};
use crate::domain::knowledge::apply::tier;
use crate::domain::knowledge::conversation::Thread;
use crate::storage::store::Store;

/// Turns (a prompt and what followed it) a prompt is compared with.
pub const WINDOW: usize = 3;
/// Prompts of a thread before the detector speaks.
pub const QUIET_PROMPTS: usize = 2;
/// Content tokens a prompt needs to be considered.
pub const MIN_TOKENS: usize = 4;
/// Idle time from which a pause counts (1 h).
pub const PAUSE_FROM_MS: i64 = 3_600_000;
/// Idle time at which a pause counts fully (3 h).
pub const PAUSE_FULL_MS: i64 = 3 * 3_600_000;
/// Evidence of a pause of [`PAUSE_FROM_MS`] … [`PAUSE_FULL_MS`].
const PAUSE_EVIDENCE: (f32, f32) = (0.6, 0.67);
/// Evidence of an explicit switch marker.
const MARKER_EVIDENCE: f32 = 0.8;
/// A prompt recorded this long before a suggestion still counts as the one it was made at.
const SUGGESTION_SLACK_MS: i64 = 5_000;

/// Openers that acknowledge or continue the last exchange (the score is
/// halved): acknowledgements, retries and continuations. "now", "next" and
/// "ok" are not among them: "OK, now …" opens new subjects as often as not.
pub const CONTINUATION: &[&str] = &[
    "can you also",
    "also",
    "and",
    "then",
    "great",
    "thanks",
    "thank you",
    "perfect",
    "yes",
    "continue",
    "try again",
    "retry",
    "go ahead",
];

/// Explicit "this is another subject" wording, several languages.
const SWITCH_MARKERS: &[&str] = &[
    r"\banother (thing|question|topic|task)\b",
    r"\bdifferent (topic|question|subject)\b",
    r"\bnew (task|topic|question)\b",
    r"\bunrelated\b",
    r"\bby the way\b",
    r"\bswitch(ing)? (topic|gears)\b",
    r"\bseparate (question|issue)\b",
    r"chang\w*( \w+)? de sujet",
    r"\bautre (chose|question|sujet)\b",
    r"n'a rien [àa] voir",
    r"\bsans rapport\b",
    r"\bau fait\b",
    r"\boutra (coisa|pergunta)\b",
    r"\bmudando de assunto\b",
    r"\bjiná věc\b",
    r"\bjinak\b",
    r"\bještě (se )?vrátím\b",
    r"\bzpět k\b",
    r"换个话题",
    r"另外一个",
    r"另一个问题",
    r"顺便",
    r"别的问题",
    r"別の(話|質問|件)",
    r"ところで",
    r"話は変わ",
];

/// Wording that reacts to what just happened (the prompt follows up).
const FEEDBACK_CUES: &[&str] = &[
    r"\b(still|again|same|doesn'?t|didn'?t|isn'?t|not|no longer|broke|broken|wrong|works?|worked|working|error|fails?|failed)\b",
    r"\b(toujours|encore|pas|plus rien|marche|fonctionne|erreur|bug|c'est fait|ça marche)\b",
    r"\b(stále|pořád|nefunguje|nejde|nevejde|chyba)\b",
    r"\b(ainda|erro|não funciona)\b",
    r"(还是|仍然|没有|不行|报错|错误|成功)",
    r"(まだ|エラー|できない|いけた|うまく)",
];

/// Words too common to tell subjects apart (English, French, Portuguese, Czech).
const STOP: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "be", "to", "of", "in", "on", "at", "it", "this", "that", "and", "or", "for",
    "with", "as", "by", "we", "you", "i", "our", "your", "so", "do", "if", "when", "can", "could", "would", "should",
    "will", "me", "my", "please", "now", "then", "also", "just", "not", "no", "yes", "ok", "okay", "what", "how",
    "why", "which", "there", "here", "have", "has", "le", "la", "les", "un", "une", "des", "de", "du", "et", "ou",
    "en", "est", "pour", "que", "qui", "dans", "sur", "pas", "je", "tu", "il", "nous", "vous", "ce", "ça", "ca",
    "avec", "au", "aux", "mais", "o", "os", "um", "uma", "do", "da", "dos", "das", "e", "em", "para", "com", "se",
    "na", "nao", "não", "é", "v", "ve", "že", "pro", "s", "z", "jak", "co",
];

fn regex_set(patterns: &[&str]) -> Option<RegexSet> {
    match RegexSet::new(patterns) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!("topic-shift patterns do not compile: {e}");
            None
        }
    }
}

static MARKERS: LazyLock<Option<RegexSet>> = LazyLock::new(|| regex_set(SWITCH_MARKERS));
static FEEDBACK: LazyLock<Option<RegexSet>> = LazyLock::new(|| regex_set(FEEDBACK_CUES));

/// A decision at one prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Shift {
    /// `[0, 1]`.
    pub score: f32,
    /// `ignore`, `ask` or `trust`.
    pub tier: &'static str,
    /// Each signal's value (see the module docs); empty when a rule kept
    /// the detector silent.
    pub signals: BTreeMap<String, f32>,
    /// The prompt opened with a continuation keyword (the score was halved).
    pub continuation: bool,
    /// Why the detector stayed silent whatever the signals: `first prompts`,
    /// `short prompt` or `suggested already`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet: Option<&'static str>,
    /// Thresholds used.
    pub ask_threshold: f32,
    /// See `ask_threshold`.
    pub trust_threshold: f32,
}

/// Whether `c` is written without spaces between words (kana, CJK ideographs).
fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

/// The content tokens of `text`: lower-case words (letters, digits, `_`) of
/// at least two characters, or numbers, minus stop words; runs of CJK
/// characters as their character bigrams ("数据库" → "数据", "据库").
pub fn tokens(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()) {
        let mut latin = String::new();
        let mut cjk: Vec<char> = Vec::new();
        let flush_latin = |latin: &mut String, out: &mut BTreeSet<String>| {
            let n = latin.chars().count();
            if (n >= 2 || latin.chars().all(|c| c.is_ascii_digit())) && n > 0 && !STOP.contains(&latin.as_str()) {
                out.insert(std::mem::take(latin));
            } else {
                latin.clear();
            }
        };
        for c in word.chars() {
            if is_cjk(c) {
                flush_latin(&mut latin, &mut out);
                cjk.push(c);
            } else {
                for pair in cjk.windows(2) {
                    out.insert(pair.iter().collect());
                }
                cjk.clear();
                latin.push(c);
            }
        }
        flush_latin(&mut latin, &mut out);
        for pair in cjk.windows(2) {
            out.insert(pair.iter().collect());
        }
    }
    out
}

/// Share of `prompt`'s tokens absent from `seen` (1 for no token).
pub fn novelty(prompt: &BTreeSet<String>, seen: &BTreeSet<String>) -> f32 {
    if prompt.is_empty() {
        return 1.0;
    }
    prompt.iter().filter(|t| !seen.contains(*t)).count() as f32 / prompt.len() as f32
}

/// The tokens of the thread's last [`WINDOW`] turns: their prompts, the
/// agent's replies since the first of them, and the files touched since.
pub fn recent_tokens(thread: &Thread) -> BTreeSet<String> {
    let skip = thread.prompts.len().saturating_sub(WINDOW);
    let from = thread.prompts.get(skip).map_or(i64::MIN, |(t, _)| *t);
    let mut seen = BTreeSet::new();
    for (_, p) in &thread.prompts[skip..] {
        seen.extend(tokens(p));
    }
    for (_, r) in thread.replies.iter().filter(|(t, _)| *t >= from) {
        seen.extend(tokens(r));
    }
    for (_, f) in thread.touched.iter().filter(|(t, _)| *t >= from) {
        seen.extend(tokens(&f.replace(['/', '\\', '.', '-'], " ")));
        if let Some(name) = f.rsplit(['/', '\\']).next() {
            seen.insert(name.to_lowercase());
        }
    }
    seen
}

/// Whether `prompt` opens with a continuation keyword.
pub fn is_continuation(prompt: &str) -> bool {
    let lower = prompt.trim_start().to_lowercase();
    CONTINUATION.iter().any(|k| {
        lower.strip_prefix(k).is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| !c.is_alphanumeric()))
    })
}

/// Whether `prompt` says outright that it changes subject.
pub fn has_switch_marker(prompt: &str) -> bool {
    MARKERS.as_ref().is_some_and(|m| m.is_match(prompt.trim().to_lowercase().as_str()))
}

/// Whether `prompt` reacts to what just happened (still failing, worked, error…).
pub fn has_feedback_cue(prompt: &str) -> bool {
    FEEDBACK.as_ref().is_some_and(|m| m.is_match(prompt.to_lowercase().as_str()))
}

/// The pause signal of an idle time: 0 under 1 h, 0.6 at 1 h rising
/// log-linearly to 0.67 at 3 h and beyond.
pub fn time_gap_signal(gap_ms: i64) -> f32 {
    if gap_ms < PAUSE_FROM_MS {
        return 0.0;
    }
    let (lo, hi) = (PAUSE_FROM_MS as f64, PAUSE_FULL_MS as f64);
    let ramp = ((gap_ms as f64).min(hi) / lo).ln() / (hi / lo).ln();
    PAUSE_EVIDENCE.0 + (PAUSE_EVIDENCE.1 - PAUSE_EVIDENCE.0) * ramp as f32
}

/// The signals of `prompt` against `thread` at `now_ms`, by name (see the
/// module docs): `novelty`, `pause`, `marker`, `feedback`, `evidence`.
pub fn signals(thread: &Thread, prompt: &str, now_ms: i64) -> BTreeMap<String, f32> {
    let novelty = novelty(&tokens(prompt), &recent_tokens(thread));
    let feedback = has_feedback_cue(prompt);
    let pause = if feedback { 0.0 } else { time_gap_signal(now_ms - thread.last_ms) };
    let marker = if has_switch_marker(prompt) { MARKER_EVIDENCE } else { 0.0 };
    let evidence = if pause > 0.0 && marker > 0.0 { 1.0 } else { pause.max(marker) };
    [
        ("novelty", novelty),
        ("pause", pause),
        ("marker", marker),
        ("feedback", f32::from(u8::from(feedback))),
        ("evidence", evidence),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The per-project thresholds: the configured ones, moved by what the user
/// did with earlier decisions once there are at least five of them. A high
/// share of false positives (suggestions ignored, auto-stashes taken back)
/// raises both; suggestions that were taken lower the ask threshold.
///
/// `ask = base_ask + 0.3·fp_rate − 0.1·accept_rate`, clamped to
/// `[0.25, 0.8]`; `trust = max(base_trust + 0.1·fp_rate, ask + 0.1)`, at
/// most 0.98; `fp_rate = false_positive / (shown + auto_stash)`,
/// `accept_rate = accepted / shown`.
pub fn thresholds(store: &Store, config: &Config, project: Option<&str>) -> Result<(f32, f32)> {
    let t = &config.knowledge.topic;
    if !t.adaptive {
        return Ok((t.ask_threshold, t.trust_threshold));
    }
    let row: Option<(i64, i64, i64, i64)> = store
        .conn()
        .prepare_cached(
            "SELECT auto_stash_count, false_positive_count, suggestion_shown_count, suggestion_accepted_count
             FROM adaptive_thresholds WHERE project = ?1",
        )
        .and_then(|mut s| {
            s.query_row([project.unwrap_or("")], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional()
        })
        .sql("read the topic-shift counters")?;
    Ok(adapt(t.ask_threshold, t.trust_threshold, row.unwrap_or_default()))
}

/// See [`thresholds`]: `(auto_stash, false_positive, shown, accepted)`.
pub fn adapt(ask: f32, trust: f32, (auto, fp, shown, accepted): (i64, i64, i64, i64)) -> (f32, f32) {
    let decisions = shown + auto;
    if decisions < 5 {
        return (ask, trust);
    }
    let fp_rate = (fp as f32 / decisions as f32).clamp(0.0, 1.0);
    let accept_rate = if shown > 0 { (accepted as f32 / shown as f32).clamp(0.0, 1.0) } else { 0.0 };
    let a = (ask + 0.3 * fp_rate - 0.1 * accept_rate).clamp(0.25, 0.8);
    let t = (trust + 0.1 * fp_rate).max(a + 0.1).min(0.98);
    (a, t)
}

/// Why the detector says nothing at `prompt` whatever its signals, if it does not.
fn quiet(thread: &Thread, prompt: &str) -> Option<&'static str> {
    if thread.prompts.len() < QUIET_PROMPTS {
        return Some("first prompts");
    }
    if tokens(prompt).len() < MIN_TOKENS {
        return Some("short prompt");
    }
    if let Some(at) = thread.suggested_ms {
        let since = thread.prompts.iter().filter(|(t, _)| *t >= at - SUGGESTION_SLACK_MS).count();
        if since < WINDOW {
            return Some("suggested already");
        }
    }
    None
}

/// Scores `prompt` against `thread` and decides the tier (see the module docs).
pub fn decide(thread: &Thread, prompt: &str, now_ms: i64, thresholds: (f32, f32)) -> Shift {
    let continuation = is_continuation(prompt);
    let (ask, trust) = thresholds;
    let silent = |quiet| Shift {
        score: 0.0,
        tier: tier::IGNORE,
        signals: BTreeMap::new(),
        continuation,
        quiet: Some(quiet),
        ask_threshold: ask,
        trust_threshold: trust,
    };
    if let Some(q) = quiet(thread, prompt) {
        return silent(q);
    }
    let signals = signals(thread, prompt, now_ms);
    let get = |k: &str| signals.get(k).copied().unwrap_or(0.0).clamp(0.0, 1.0);
    let marker = get("marker") > 0.0;
    let mut score = get("novelty") * get("evidence");
    if continuation && !marker {
        score *= 0.5;
    }
    let score = score.clamp(0.0, 1.0);
    let tier = if score >= trust && marker && get("pause") > 0.0 {
        tier::TRUST
    } else if score >= ask {
        tier::ASK
    } else {
        tier::IGNORE
    };
    Shift { score, tier, signals, continuation, quiet: None, ask_threshold: ask, trust_threshold: trust }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    /// A thread of `prompts` one minute apart from t = 0, each answered by
    /// the matching entry of `replies` 30 s later, touching `files`; its last
    /// activity is the last reply.
    fn thread(prompts: &[&str], replies: &[&str], files: &[&str]) -> Thread {
        let at = |i: usize| i as i64 * 60_000;
        Thread {
            session: "claude:s".into(),
            prompts: prompts.iter().enumerate().map(|(i, p)| (at(i), (*p).to_owned())).collect(),
            replies: replies.iter().enumerate().map(|(i, r)| (at(i) + 30_000, (*r).to_owned())).collect(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            touched: files.iter().map(|f| (at(prompts.len().saturating_sub(1)) + 10_000, (*f).to_owned())).collect(),
            last_ms: at(prompts.len().saturating_sub(1)) + 30_000,
            ..Thread::default()
        }
    }

    fn login() -> Thread {
        thread(
            &[
                "Fix the flaky login test in src/auth/login.rs",
                "it still times out on CI",
                "make the session timeout configurable",
            ],
            &[
                "The login test waits on a real clock; I replaced it with a mock clock in login.rs.",
                "CI is slower: the session refresh races the assertion. I added a retry around the refresh.",
                "Added `session_timeout_secs` to the auth config, default 30.",
            ],
            &["/repo/src/auth/login.rs", "/repo/src/auth/session.rs"],
        )
    }

    const TH: (f32, f32) = (0.4, 0.85);
    const BILLING: &str = "Explain how the billing service computes invoice totals for enterprise customers \
                           with several currencies and discounts";

    #[test]
    fn the_switch_patterns_compile() {
        assert!(MARKERS.is_some() && FEEDBACK.is_some());
        assert!(has_switch_marker("Unrelated question: how do invoices round?"));
        assert!(has_switch_marker("Bon, je change complètement de sujet"));
        assert!(has_switch_marker("换个话题，帮我写一个脚本"));
        assert!(!has_switch_marker("add the new field to the form"));
        assert!(has_feedback_cue("it still fails"));
        assert!(has_feedback_cue("还是不行"));
        assert!(!has_feedback_cue("write a billing report"));
    }

    #[test]
    fn continuation_keywords_are_acknowledgements_and_retries() {
        assert!(is_continuation("also add a test"));
        assert!(is_continuation("Thanks, that did it"));
        assert!(is_continuation("can you also check"));
        assert!(is_continuation("try again"));
        assert!(!is_continuation("Okay, now the docs"));
        assert!(!is_continuation("now write the billing export"));
        assert!(!is_continuation("next: the CSV importer"));
        assert!(!is_continuation("andromeda galaxy facts"));
        assert!(!is_continuation("fix it"));
    }

    #[test]
    fn the_pause_counts_from_one_hour() {
        assert_eq!(time_gap_signal(-5), 0.0);
        assert_eq!(time_gap_signal(10 * 60_000), 0.0);
        assert_eq!(time_gap_signal(H - 1), 0.0);
        assert!((time_gap_signal(H) - 0.6).abs() < 1e-6);
        let two = time_gap_signal(2 * H);
        assert!(two > 0.6 && two < 0.67, "{two}");
        assert!((time_gap_signal(3 * H) - 0.67).abs() < 1e-6);
        assert_eq!(time_gap_signal(40 * H), time_gap_signal(3 * H));
    }

    #[test]
    fn cjk_text_is_compared_by_character_bigrams() {
        let t = tokens("修复数据库连接");
        assert!(t.contains("数据") && t.contains("据库") && t.contains("连接"), "{t:?}");
        let latin = tokens("The data_loader, v2 and 3 files");
        assert!(
            latin.contains("data_loader") && latin.contains("v2") && latin.contains("3") && latin.contains("files")
        );
        assert!(!latin.contains("the") && !latin.contains("and"));
        // A follow-up in Chinese shares bigrams with the agent's reply.
        let seen = tokens("数据库连接超时，我把连接池改大了");
        let n = novelty(&tokens("数据库连接还是超时"), &seen);
        assert!(n < 0.5, "{n}");
        assert_eq!(novelty(&tokens("写一个新的天气预报页面"), &seen), 1.0);
        // Kana too.
        assert!(tokens("ところでテスト").contains("テス"));
    }

    #[test]
    fn the_second_prompt_never_asks() {
        let t = thread(&["Fix the flaky login test"], &["Done: the test uses a mock clock now."], &[]);
        let d = decide(&t, &format!("Unrelated question. {BILLING}"), t.last_ms + 5 * H, TH);
        assert_eq!((d.tier, d.score, d.quiet), (tier::IGNORE, 0.0, Some("first prompts")), "{d:?}");
        let first = decide(&Thread::default(), BILLING, 5, TH);
        assert_eq!(first.quiet, Some("first prompts"));
    }

    #[test]
    fn a_short_follow_up_never_asks() {
        let t = login();
        for p in ["by the way, deploy it", "unrelated: rename it", "ok now push", "还是不行"] {
            let d = decide(&t, p, t.last_ms + 6 * H, TH);
            assert_eq!((d.tier, d.quiet), (tier::IGNORE, Some("short prompt")), "{p}: {d:?}");
        }
    }

    #[test]
    fn a_marker_with_new_words_asks() {
        let t = login();
        let d = decide(&t, &format!("Unrelated question: {BILLING}"), t.last_ms + 60_000, TH);
        assert_eq!(d.tier, tier::ASK, "{d:?}");
        assert!(d.score >= 0.4 && d.score < 0.85, "{d:?}");
        // The same words without a marker, minutes later: the normal rhythm of work.
        let d = decide(&t, BILLING, t.last_ms + 20 * 60_000, TH);
        assert_eq!(d.tier, tier::IGNORE, "{d:?}");
        // A marker on words of the thread: nothing new.
        let d = decide(&t, "another thing: the session timeout in login.rs on CI", t.last_ms + 60_000, TH);
        assert_eq!(d.tier, tier::IGNORE, "{d:?}");
    }

    #[test]
    fn a_long_pause_with_new_words_asks_unless_it_is_feedback() {
        let t = login();
        let d = decide(&t, BILLING, t.last_ms + 2 * H, TH);
        assert_eq!(d.tier, tier::ASK, "{d:?}");
        assert_eq!(d.signals["marker"], 0.0);
        let d = decide(&t, &format!("{BILLING}; it still fails"), t.last_ms + 2 * H, TH);
        assert_eq!(d.tier, tier::IGNORE, "feedback wording: {d:?}");
        let d = decide(&t, BILLING, t.last_ms + 50 * 60_000, TH);
        assert_eq!(d.tier, tier::IGNORE, "under an hour: {d:?}");
        // The words come from the agent's last reply: a follow-up, however late.
        let d = decide(&t, "make session_timeout_secs default to 60 in the auth config", t.last_ms + 9 * H, TH);
        assert_eq!(d.tier, tier::IGNORE, "{d:?}");
        // Opening with an acknowledgement halves it.
        let d = decide(&t, &format!("Thanks. {BILLING}"), t.last_ms + 2 * H, TH);
        assert!(d.continuation && d.tier == tier::IGNORE, "{d:?}");
    }

    #[test]
    fn trust_needs_a_marker_and_a_long_pause() {
        let t = login();
        let marked = format!("Different subject: {BILLING}");
        let d = decide(&t, &marked, t.last_ms + 4 * H, TH);
        assert_eq!(d.tier, tier::TRUST, "{d:?}");
        assert_eq!(d.signals["evidence"], 1.0);
        let d = decide(&t, &marked, t.last_ms + 60_000, TH);
        assert_eq!(d.tier, tier::ASK, "{d:?}");
        // Even with thresholds set low, a pause alone does not stash.
        let d = decide(&t, BILLING, t.last_ms + 4 * H, (0.3, 0.5));
        assert_eq!(d.tier, tier::ASK, "{d:?}");
    }

    #[test]
    fn at_most_one_suggestion_per_topic() {
        let mut t = login();
        t.suggested_ms = t.prompts.last().map(|(at, _)| *at);
        let prompt = format!("Unrelated question: {BILLING}");
        let d = decide(&t, &prompt, t.last_ms + 2 * H, TH);
        assert_eq!(d.quiet, Some("suggested already"), "{d:?}");
        // Once the comparison window lies after the suggestion, it may speak again.
        for i in 0..2 {
            let at = t.last_ms + 60_000 * (i + 1);
            t.prompts.push((at, format!("billing step {i}")));
        }
        let d = decide(&t, &prompt, t.last_ms + 60_000, TH);
        assert_eq!((d.quiet, d.tier), (None, tier::ASK), "{d:?}");
    }

    #[test]
    fn thresholds_adapt_only_with_evidence() {
        assert_eq!(adapt(0.4, 0.85, (0, 2, 2, 0)), (0.4, 0.85));
        let (a, t) = adapt(0.4, 0.85, (2, 6, 8, 0));
        assert!(a > 0.4 && t > 0.85 && t > a, "{a} {t}");
        let (a, _) = adapt(0.4, 0.85, (0, 0, 10, 10));
        assert!(a < 0.4);
    }
}
