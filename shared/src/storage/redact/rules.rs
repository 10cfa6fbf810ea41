//! The maintained rule set: gitleaks' secret rules (generated into
//! `gitleaks.rs`), matched the way gitleaks matches them.
//!
//! A rule runs only when one of its keywords occurs in the text (one
//! Aho–Corasick pass, ASCII case-insensitive, finds them all). Its regex is
//! compiled on first use (most processes need a handful of the ~220), as a
//! byte regex with Unicode off: gitleaks' patterns are Go RE2, where `\w`,
//! `\s`, `\d` and `\b` are ASCII. Each match's secret is its `secret_group`,
//! else its first non-empty group, else the whole match (and the whole match
//! when the group is under 8 bytes: a fragment such as a repeated
//! `([a-z0-9]{4}-)`). The secret must have more Shannon entropy than the rule
//! asks and pass the rule's and the global allowlists (regexes on the
//! secret, the match or the line; stopwords in the secret; "AND" allowlists
//! need every check). Only the secret is
//! replaced, so `API_KEY=` stays readable.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder};

use super::gitleaks::{GLOBAL_ALLOW, RULES};

/// One rule, as generated.
#[derive(Debug)]
pub(super) struct Rule {
    pub(super) id: &'static str,
    pub(super) regex: &'static str,
    pub(super) secret_group: usize,
    pub(super) entropy: f64,
    pub(super) keywords: &'static [&'static str],
    pub(super) allow: &'static [Allow],
}

/// What an allowlist's regexes look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Secret,
    Match,
    Line,
}

/// An allowlist: a finding it matches is not a secret.
#[derive(Debug)]
pub(super) struct Allow {
    pub(super) target: Target,
    /// Every check must pass ("AND"), instead of any.
    pub(super) all: bool,
    pub(super) regexes: &'static [&'static str],
    /// Lower case; the secret must not contain one.
    pub(super) stopwords: &'static [&'static str],
}

/// A secret found by a rule: the byte range to replace and the rule's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) rule: &'static str,
}

struct Engine {
    keywords: AhoCorasick,
    /// For each keyword, the rules it wakes.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords run on every text.
    always: Vec<usize>,
    regexes: Vec<OnceLock<Option<Regex>>>,
    /// Per rule, per allowlist (the global one last).
    allows: Vec<Vec<OnceLock<CompiledAllow>>>,
}

struct CompiledAllow {
    regexes: Vec<Regex>,
    stopwords: Option<AhoCorasick>,
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut words: Vec<&str> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (i, rule) in RULES.iter().enumerate() {
            if rule.keywords.is_empty() {
                always.push(i);
            }
            for k in rule.keywords {
                match words.iter().position(|w| w == k) {
                    Some(at) => keyword_rules[at].push(i),
                    None => {
                        words.push(k);
                        keyword_rules.push(vec![i]);
                    }
                }
            }
        }
        let keywords = AhoCorasick::builder().ascii_case_insensitive(true).build(&words).unwrap_or_else(|_| {
            AhoCorasick::new([""; 0]).unwrap_or_else(|_| unreachable!("an empty automaton builds"))
        });
        Engine {
            keywords,
            keyword_rules,
            always,
            regexes: RULES.iter().map(|_| OnceLock::new()).collect(),
            allows: RULES.iter().map(|r| (0..=r.allow.len()).map(|_| OnceLock::new()).collect()).collect(),
        }
    })
}

/// Compiles a gitleaks (RE2) pattern as an ASCII byte regex.
fn compile(pattern: &str) -> Option<Regex> {
    match RegexBuilder::new(pattern).unicode(false).size_limit(32 << 20).build() {
        Ok(re) => Some(re),
        Err(e) => {
            tracing::warn!(pattern, error = %e, "a secret rule's pattern does not compile; it is skipped");
            None
        }
    }
}

impl Engine {
    fn regex(&self, rule: usize) -> Option<&Regex> {
        self.regexes[rule].get_or_init(|| compile(RULES[rule].regex)).as_ref()
    }

    fn allow(&self, rule: usize, which: usize) -> (&Allow, &CompiledAllow) {
        let def = RULES[rule].allow.get(which).unwrap_or(&GLOBAL_ALLOW);
        let compiled = self.allows[rule][which].get_or_init(|| CompiledAllow {
            regexes: def.regexes.iter().filter_map(|p| compile(p)).collect(),
            stopwords: (!def.stopwords.is_empty())
                .then(|| AhoCorasick::builder().ascii_case_insensitive(true).build(def.stopwords).ok())
                .flatten(),
        });
        (def, compiled)
    }

    /// Whether an allowlist of `rule` (or the global one) lets this finding pass.
    fn allowed(&self, rule: usize, secret: &[u8], whole: &[u8], line: &[u8]) -> bool {
        (0..=RULES[rule].allow.len()).any(|which| {
            let (def, compiled) = self.allow(rule, which);
            let target = match def.target {
                Target::Secret => secret,
                Target::Match => whole,
                Target::Line => line,
            };
            let regex = (!compiled.regexes.is_empty()).then(|| compiled.regexes.iter().any(|r| r.is_match(target)));
            let stop = compiled.stopwords.as_ref().map(|ac| ac.is_match(secret));
            let checks = [regex, stop];
            if def.all {
                checks.iter().flatten().count() > 0 && checks.iter().flatten().all(|&c| c)
            } else {
                checks.iter().flatten().any(|&c| c)
            }
        })
    }
}

/// Shannon entropy of `bytes` in bits per byte (as gitleaks computes it).
pub(super) fn entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| f64::from(c) / n).map(|p| -p * p.log2()).sum()
}

/// Every secret the rules find in `text`.
pub(super) fn find(text: &[u8]) -> Vec<Found> {
    let engine = engine();
    let mut wake = vec![false; RULES.len()];
    for &r in &engine.always {
        wake[r] = true;
    }
    let mut any = !engine.always.is_empty();
    for m in engine.keywords.find_overlapping_iter(text) {
        for &r in &engine.keyword_rules[m.pattern().as_usize()] {
            wake[r] = true;
            any = true;
        }
    }
    let mut out = Vec::new();
    if !any {
        return out;
    }
    for (i, _) in wake.iter().enumerate().filter(|(_, w)| **w) {
        let Some(regex) = engine.regex(i) else { continue };
        let rule = &RULES[i];
        for caps in regex.captures_iter(text) {
            let Some(whole) = caps.get(0) else { continue };
            let secret = if rule.secret_group > 0 {
                caps.get(rule.secret_group)
            } else {
                caps.iter().skip(1).flatten().find(|g| !g.is_empty()).or(Some(whole))
            };
            // A group too short to be a secret is a fragment of a longer
            // one (a repeated `([a-z0-9]{4}-)`): the whole match goes.
            let Some(secret) = secret.map(|s| if s.len() < 8 { whole } else { s }) else { continue };
            if rule.entropy > 0.0 && entropy(secret.as_bytes()) <= rule.entropy {
                continue;
            }
            let line_start = text[..whole.start()].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let line_end = text[whole.end()..].iter().position(|&b| b == b'\n').map_or(text.len(), |p| whole.end() + p);
            if engine.allowed(i, secret.as_bytes(), whole.as_bytes(), &text[line_start..line_end]) {
                continue;
            }
            out.push(Found { start: secret.start(), end: secret.end(), rule: rule.id });
        }
    }
    out
}

/// The rules, for tests that plant a secret for each.
#[cfg(test)]
pub(super) fn rules() -> &'static [Rule] {
    RULES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_and_allowlist_compiles() {
        let mut failed = Vec::new();
        let mut check = |what: String, pattern: &str| {
            if let Err(e) = RegexBuilder::new(pattern).unicode(false).size_limit(32 << 20).build() {
                failed.push(format!("{what}: {e}"));
            }
        };
        for rule in RULES {
            check(rule.id.to_owned(), rule.regex);
            for (i, a) in rule.allow.iter().enumerate() {
                for p in a.regexes {
                    check(format!("{} allowlist {i}", rule.id), p);
                }
            }
        }
        for p in GLOBAL_ALLOW.regexes {
            check("global allowlist".into(), p);
        }
        assert!(failed.is_empty(), "{failed:#?}");
        assert!(RULES.len() > 200);
    }

    #[test]
    fn entropy_matches_gitleaks() {
        assert_eq!(entropy(b""), 0.0);
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
    }
}
