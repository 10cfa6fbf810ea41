//! Topic-shift detection at a prompt (seed 004 "Topic Shift Detection").
//!
//! A new prompt is compared with the session's current thread (see
//! [`super::conversation::current`]); five signals, each in `[0, 1]` where 1
//! means "a new topic", are weighted as the seed says and summed:
//!
//! | signal | weight | 0 (same topic) … 1 (new topic) |
//! |---|---|---|
//! | file overlap | 0.30 | the files the prompt names are the thread's (by name); without file names, share of the prompt's words absent from the thread's prompts and file names |
//! | time gap | 0.25 | < 30 s since the thread's last activity … > 30 min, log-linear between |
//! | directory proximity | 0.15 | directories the prompt names are the thread's, or their parents/children; 0.5 when it names none |
//! | tool pattern change | 0.15 | the prompt asks for research (explain, look up, docs…) after code tools, or for code changes after research tools; 0.5 when either is unknown |
//! | prompt structure | 0.15 | ≤ 8 words or a reference back ("it", "that", "this")… ≥ 30 words |
//!
//! A prompt opening with a continuation keyword ("also", "and", "now",
//! "next", "then", "ok", "okay", "great", "thanks", "please", "can you
//! also") has its score halved. A thread without a prompt yet scores 0.
//!
//! Tiers: `ignore` below the ask threshold (0.4), `ask` (suggest a stash)
//! below the trust threshold (0.85), `trust` (stash automatically) above.
//! The thresholds adapt per project ([`thresholds`]) from the counters the
//! projection keeps (seed 004 "Adaptive Thresholds").

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::OptionalExtension;
use serde::Serialize;

use crate::base::config::Config;
use crate::base::error::{Result, SqlContext};
use crate::domain::knowledge::apply::tier;
use crate::domain::knowledge::conversation::Thread;
use crate::storage::store::Store;

/// Seed 004's signal weights.
pub const WEIGHTS: [(&str, f32); 5] = [
    ("file_overlap", 0.30),
    ("time_gap", 0.25),
    ("directory_proximity", 0.15),
    ("tool_pattern", 0.15),
    ("prompt_structure", 0.15),
];

/// Seed 004's continuation keywords.
pub const CONTINUATION: &[&str] =
    &["can you also", "also", "and", "now", "next", "then", "ok", "okay", "great", "thanks", "please"];

const RESEARCH_WORDS: &[&str] = &[
    "explain",
    "why",
    "what",
    "how",
    "research",
    "search",
    "look",
    "find",
    "docs",
    "documentation",
    "learn",
    "compare",
    "understand",
    "read",
    "investigate",
    "which",
];
const CODE_WORDS: &[&str] = &[
    "fix",
    "implement",
    "add",
    "refactor",
    "write",
    "change",
    "update",
    "remove",
    "rename",
    "delete",
    "build",
    "test",
    "create",
    "make",
    "move",
    "edit",
    "run",
    "deploy",
    "merge",
    "commit",
    "bump",
];
const CODE_TOOLS: &[&str] =
    &["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash", "apply_patch", "shell", "exec_command", "local_shell"];
const RESEARCH_TOOLS: &[&str] = &["WebSearch", "WebFetch", "Read", "Grep", "Glob", "web_search", "read_file"];
const BACK_REFERENCES: &[&str] = &["it", "that", "this", "those", "these", "there", "same", "again"];

/// A decision at one prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Shift {
    /// `[0, 1]`.
    pub score: f32,
    /// `ignore`, `ask` or `trust`.
    pub tier: &'static str,
    /// Each signal's weighted contribution.
    pub signals: BTreeMap<String, f32>,
    /// The prompt opened with a continuation keyword (the score was halved).
    pub continuation: bool,
    /// Thresholds used.
    pub ask_threshold: f32,
    /// See `ask_threshold`.
    pub trust_threshold: f32,
}

/// Paths and file names named in a text: words with a `/` or an extension.
fn named_paths(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '`' | '"' | '\'' | '(' | ')'))
        .map(|w| w.trim_end_matches(['.', ':', '!', '?']))
        .filter(|w| {
            w.len() > 2
                && (w.contains('/')
                    || w.rsplit_once('.').is_some_and(|(stem, ext)| {
                        !stem.is_empty()
                            && (1..=5).contains(&ext.len())
                            && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    }))
                && !w.starts_with("http")
        })
        .map(str::to_owned)
        .collect()
}

fn file_name(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

fn dir_of(p: &str) -> Option<&str> {
    let p = p.trim_end_matches('/');
    p.rsplit_once('/').map(|(d, _)| d).filter(|d| !d.is_empty())
}

fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'').filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether `prompt` opens with a continuation keyword.
pub fn is_continuation(prompt: &str) -> bool {
    let lower = prompt.trim_start().to_lowercase();
    CONTINUATION.iter().any(|k| {
        lower.strip_prefix(k).is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| !c.is_alphanumeric()))
    })
}

/// The time-gap signal: 0 under 30 s, 1 over 30 min, log-linear between.
pub fn time_gap_signal(gap_ms: i64) -> f32 {
    let (lo, hi) = (30_000f64, 1_800_000f64);
    let g = gap_ms.max(0) as f64;
    if g <= lo {
        0.0
    } else if g >= hi {
        1.0
    } else {
        ((g / lo).ln() / (hi / lo).ln()) as f32
    }
}

/// The five raw signals (each `[0, 1]`, 1 = new topic) of `prompt` against `thread`.
pub fn signals(thread: &Thread, prompt: &str, now_ms: i64) -> [f32; 5] {
    let words = lower_words(prompt);
    let content: BTreeSet<String> = super::similarity::words(prompt);
    // File overlap.
    let named = named_paths(prompt);
    let thread_names: BTreeSet<&str> = thread.files.iter().map(|f| file_name(f)).collect();
    let file = if !named.is_empty() {
        let hit = named.iter().filter(|n| thread_names.contains(file_name(n))).count();
        1.0 - hit as f32 / named.len() as f32
    } else if content.is_empty() {
        0.0
    } else {
        let mut vocab: BTreeSet<String> = BTreeSet::new();
        for (_, p) in &thread.prompts {
            vocab.extend(super::similarity::words(p));
        }
        for f in &thread.files {
            vocab.extend(super::similarity::words(&f.replace(['/', '.', '_', '-'], " ")));
        }
        let shared = content.iter().filter(|w| vocab.contains(*w)).count();
        1.0 - shared as f32 / content.len() as f32
    };
    // Time gap.
    let time = time_gap_signal(now_ms - thread.last_ms);
    // Directory proximity.
    let dirs: BTreeSet<&str> =
        named.iter().filter_map(|n| dir_of(n).or(Some(n.as_str()).filter(|n| n.contains('/')))).collect();
    let thread_dirs: BTreeSet<&str> = thread.files.iter().filter_map(|f| dir_of(f)).collect();
    let directory = if dirs.is_empty() || thread_dirs.is_empty() {
        0.5
    } else {
        let near =
            |d: &str| thread_dirs.iter().any(|t| t.ends_with(d) || d.ends_with(t) || t.contains(d) || d.contains(t));
        1.0 - dirs.iter().filter(|d| near(d)).count() as f32 / dirs.len() as f32
    };
    // Tool pattern change.
    let asks_research = words.iter().any(|w| RESEARCH_WORDS.contains(&w.as_str()));
    let asks_code = words.iter().any(|w| CODE_WORDS.contains(&w.as_str()));
    let recent: Vec<&str> = thread.tools.iter().rev().take(10).map(String::as_str).collect();
    let code_tools = recent.iter().filter(|t| CODE_TOOLS.contains(t)).count();
    let research_tools = recent.iter().filter(|t| RESEARCH_TOOLS.contains(t)).count();
    let thread_kind = match code_tools.cmp(&research_tools) {
        _ if recent.is_empty() => None,
        std::cmp::Ordering::Greater => Some("code"),
        std::cmp::Ordering::Less => Some("research"),
        std::cmp::Ordering::Equal => None,
    };
    let prompt_kind = match (asks_code, asks_research) {
        (true, false) => Some("code"),
        (false, true) => Some("research"),
        _ => None,
    };
    let tool = match (thread_kind, prompt_kind) {
        (Some(a), Some(b)) if a == b => 0.0,
        (Some(_), Some(_)) => 1.0,
        _ => 0.5,
    };
    // Prompt structure.
    let n = words.len();
    let refers_back = words.iter().take(6).any(|w| BACK_REFERENCES.contains(&w.as_str()));
    let structure = if n <= 8 || (refers_back && n <= 15) {
        0.0
    } else if n >= 30 {
        1.0
    } else {
        (n - 8) as f32 / 22.0
    };
    [file, time, directory, tool, structure]
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

/// Scores `prompt` against `thread` and decides the tier (see the module docs).
pub fn decide(thread: &Thread, prompt: &str, now_ms: i64, thresholds: (f32, f32)) -> Shift {
    let raw = signals(thread, prompt, now_ms);
    let continuation = is_continuation(prompt);
    let (ask, trust) = thresholds;
    if thread.prompts.is_empty() {
        return Shift {
            score: 0.0,
            tier: tier::IGNORE,
            signals: BTreeMap::new(),
            continuation,
            ask_threshold: ask,
            trust_threshold: trust,
        };
    }
    let mut signals = BTreeMap::new();
    let mut score = 0.0;
    for ((name, w), x) in WEIGHTS.iter().zip(raw) {
        let v = w * x.clamp(0.0, 1.0);
        signals.insert((*name).to_owned(), v);
        score += v;
    }
    if continuation {
        score *= 0.5;
    }
    let score = score.clamp(0.0, 1.0);
    let tier = if score >= trust {
        tier::TRUST
    } else if score >= ask {
        tier::ASK
    } else {
        tier::IGNORE
    };
    Shift { score, tier, signals, continuation, ask_threshold: ask, trust_threshold: trust }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(prompts: &[&str], files: &[&str], tools: &[&str], last_ms: i64) -> Thread {
        Thread {
            session: "claude:s".into(),
            prompts: prompts.iter().map(|p| (0, (*p).to_owned())).collect(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            last_ms,
            ..Thread::default()
        }
    }

    #[test]
    fn continuation_keywords_open_the_prompt() {
        assert!(is_continuation("also add a test"));
        assert!(is_continuation("Okay, now the docs"));
        assert!(is_continuation("can you also check"));
        assert!(!is_continuation("andromeda galaxy facts"));
        assert!(!is_continuation("fix it"));
    }

    #[test]
    fn time_gap_is_log_linear_between_30s_and_30min() {
        assert_eq!(time_gap_signal(10_000), 0.0);
        assert_eq!(time_gap_signal(3_600_000), 1.0);
        let mid = time_gap_signal(232_379);
        assert!((mid - 0.5).abs() < 0.01, "{mid}");
    }

    #[test]
    fn the_three_tiers() {
        let t = thread(
            &["Fix the flaky login test in src/auth/login.rs"],
            &["/repo/src/auth/login.rs", "/repo/src/auth/session.rs"],
            &["Read", "Edit", "Bash", "Edit"],
            1_000_000,
        );
        let th = (0.4, 0.85);
        let same = decide(&t, "now run it again with the session.rs change", 1_010_000, th);
        assert_eq!(same.tier, tier::IGNORE, "{same:?}");
        let new_soon = decide(
            &t,
            "Explain how the billing service computes invoice totals for enterprise customers with several \
             currencies and discounts, and what documentation we have about its rounding rules today",
            1_020_000,
            th,
        );
        assert_eq!(new_soon.tier, tier::ASK, "{new_soon:?}");
        let new_later = decide(
            &t,
            "Explain how the billing service computes invoice totals for enterprise customers with several \
             currencies and discounts, and what documentation we have about its rounding rules today",
            1_000_000 + 3_600_000,
            th,
        );
        assert_eq!(new_later.tier, tier::TRUST, "{new_later:?}");
        let sum: f32 = new_later.signals.values().sum();
        assert!((sum - new_later.score).abs() < 1e-6);
        let softened = decide(
            &t,
            "Also, explain how the billing service computes invoice totals for enterprise customers with several currencies and discounts",
            1_000_000 + 3_600_000,
            th,
        );
        assert!(softened.continuation && softened.score < new_later.score);
        let first = decide(&thread(&[], &[], &[], 0), "anything at all", 5, th);
        assert_eq!((first.tier, first.score), (tier::IGNORE, 0.0));
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
