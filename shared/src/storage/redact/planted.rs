//! Planted secrets: one sample for every rule (generated from the rule's
//! own pattern, as gitleaks makes its samples) and for every hand-written
//! pattern, in `testdata/planted.jsonl`. Tests across the workspace plant
//! them in every harness format and every live path
//! ([`super::samples::planted_secrets`]); this module checks the file is
//! complete and that each sample is redacted. `UPDATE_PLANTED=1` regenerates it.

use std::collections::BTreeSet;

use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::samples::{Planted, planted_secrets};
use super::{redact_text, rules};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/storage/redact/testdata/planted.jsonl");

/// Hand-written samples: the patterns of our own pass, and the cases the
/// audit found (issue 21, item 6).
const HAND: &[(&str, &str, &str)] = &[
    (
        "api_key",
        "my key is sk-ant-api03-PLNTabcdefghijklmnopqrstu1234 ok",
        "sk-ant-api03-PLNTabcdefghijklmnopqrstu1234",
    ),
    ("aws_key", "id AKIAPLNT0123456789AB.", "AKIAPLNT0123456789AB"),
    ("github_token", "token ghp_PLNTabcdefghijklmnopqrstuvwxyz0123 here", "ghp_PLNTabcdefghijklmnopqrstuvwxyz0123"),
    ("slack_token", "xoxb-PLNT5678901-abcdefghij", "xoxb-PLNT5678901-abcdefghij"),
    ("bearer", "curl -H 'X: Bearer PLNTtoken.abc-def_123' x", "PLNTtoken.abc-def_123"),
    ("authorization", "Authorization: Basic UExOVHVzZXI6cGFzcw==\n", "UExOVHVzZXI6cGFzcw=="),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEPLNTowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
        "MIIEPLNTowIBAAKCAQEA7",
    ),
    ("password", "DB_PASSWORD=PLNTpw-hunter2 next", "PLNTpw-hunter2"),
    ("secret_key", "STRIPE_SECRET_KEY=sk_live_PLNT51HqLyjWDarjtT1zdp7dc", "sk_live_PLNT51HqLyjWDarjtT1zdp7dc"),
    ("access_key", "aws_secret_access_key = PLNTwJalrXUtnFEMIK7MDENGbPxRfiCY\n", "PLNTwJalrXUtnFEMIK7MDENGbPxRfiCY"),
    ("url_password", "DATABASE_URL=postgres://app:PLNTpgpass42@db.internal:5432/app", "PLNTpgpass42"),
    ("url_password_redis", "connect redis://:PLNTredispw@cache:6379/0 now", "PLNTredispw"),
    (
        "jwt",
        "auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQTE5UdXNlciIsImlhdCI6MTcwMDAwMDAwMH0.PLNTsig_abcdefghijklmnopqrstuv done",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQTE5UdXNlciIsImlhdCI6MTcwMDAwMDAwMH0.PLNTsig_abcdefghijklmnopqrstuv",
    ),
    (
        "escaped_newline",
        r#"{"output":"line one\nsk-proj-PLNTabcdefghijklmnopqrstuv after"}"#,
        "sk-proj-PLNTabcdefghijklmnopqrstuv",
    ),
    ("escaped_unicode", r"token\u003dghp_PLNTabcdefghijklmnopqrstuvwxyz4567", "ghp_PLNTabcdefghijklmnopqrstuvwxyz4567"),
    // Unquoted values of secret-named keys hold any punctuation up to the
    // next space: a Django key whole, and values a pattern stopping at `(`,
    // `)`, `&`, `;`, `,`, `]`, `}` or `>` would cut short (each sample's
    // secret starts at such a character, so a cut value still leaks it).
    (
        "unquoted_django_key",
        "SECRET_KEY=PLNTk8#d!x2(q9)zv@w1-m3_p+r7^t6*y5=u4&s0",
        "PLNTk8#d!x2(q9)zv@w1-m3_p+r7^t6*y5=u4&s0",
    ),
    (
        "unquoted_paren",
        "export DJANGO_SECRET_KEY=PLNTz9x)q4@w1-m3_p+r7^t6*y5=u4&s0 && ./manage.py runserver",
        ")q4@w1-m3_p+r7^t6*y5=u4&s0",
    ),
    ("unquoted_call_shape", "SECRET_KEY=PLNTab(c9)d!e7#f2 next", "(c9)d!e7#f2"),
    ("unquoted_punctuation", "api_key: PLNTa1&b2;c3,d4]e5}f6>g7|h8 end", "&b2;c3,d4]e5}f6>g7|h8"),
];

/// Samples of `rule` from its pattern: random strings it matches, kept when
/// the engine finds the rule's secret in them (entropy and allowlists pass).
fn sample(index: usize, rule: &rules::Rule) -> Option<Planted> {
    let hir = regex_syntax::ParserBuilder::new().unicode(false).utf8(false).build().parse(rule.regex).ok()?;
    let hir = without_looks(hir);
    let generator = rand_regex::Regex::with_hir(hir, 24).ok()?;
    let mut rng = ChaCha8Rng::seed_from_u64(index as u64 + 1);
    // A keyword next to the sample wakes the rule when its pattern has none.
    let keyword = rule.keywords.first().copied().unwrap_or("");
    for _ in 0..400 {
        let bytes: Vec<u8> = rng.sample(&generator);
        // Printable ASCII, tabs and line breaks only (it goes into every
        // harness format): other bytes, which `[\s\S]` makes, become `Q`.
        let text: String = bytes
            .iter()
            .map(|&b| if (b' '..=b'~').contains(&b) || b == b'\n' || b == b'\t' { b as char } else { 'Q' })
            .collect();
        if text.trim().is_empty() {
            continue;
        }
        for line in [format!("see {text} \n"), format!("{keyword} {text} \n")] {
            let found = rules::find(line.as_bytes());
            if let Some(f) = found.iter().find(|f| f.rule == rule.id && f.end - f.start >= 8) {
                let secret = line[f.start..f.end].to_owned();
                return Some(Planted { rule: rule.id.to_owned(), text: line, secret });
            }
        }
    }
    None
}

/// `hir` with its assertions (`^`, `$`, `\b`) dropped: the generator cannot
/// make them; the engine checks every sample anyway.
fn without_looks(hir: regex_syntax::hir::Hir) -> regex_syntax::hir::Hir {
    use regex_syntax::hir::{Capture, Hir, HirKind, Repetition};
    match hir.into_kind() {
        HirKind::Look(_) => Hir::empty(),
        HirKind::Repetition(r) => Hir::repetition(Repetition { sub: Box::new(without_looks(*r.sub)), ..r }),
        HirKind::Capture(c) => Hir::capture(Capture { sub: Box::new(without_looks(*c.sub)), ..c }),
        HirKind::Concat(items) => Hir::concat(items.into_iter().map(without_looks).collect()),
        HirKind::Alternation(items) => Hir::alternation(items.into_iter().map(without_looks).collect()),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
    }
}

#[test]
fn every_rule_has_a_planted_secret_and_each_is_redacted() {
    if std::env::var_os("UPDATE_PLANTED").is_some() {
        let mut lines = Vec::new();
        let mut missing = Vec::new();
        for (i, rule) in rules::rules().iter().enumerate() {
            match sample(i, rule) {
                Some(p) => lines.push(serde_json::to_string(&p).unwrap()),
                None => missing.push(rule.id),
            }
        }
        for (rule, text, secret) in HAND {
            let p = Planted { rule: (*rule).to_owned(), text: (*text).to_owned(), secret: (*secret).to_owned() };
            lines.push(serde_json::to_string(&p).unwrap());
        }
        std::fs::write(FILE, lines.join("\n") + "\n").unwrap();
        assert!(missing.is_empty(), "no sample found for {missing:?}");
    }
    let planted = planted_secrets();
    let covered: BTreeSet<&str> = planted.iter().map(|p| p.rule.as_str()).collect();
    let uncovered: Vec<&str> = rules::rules().iter().map(|r| r.id).filter(|id| !covered.contains(id)).collect();
    assert!(uncovered.is_empty(), "rules without a planted secret: {uncovered:?}");
    for (rule, ..) in HAND {
        assert!(covered.contains(rule), "{rule}");
    }
    let mut leaked = Vec::new();
    for p in &planted {
        let out = redact_text(&p.text);
        if out.contains(&p.secret) || !out.contains("[REDACTED:") {
            leaked.push(format!("{}: {:?} -> {:?}", p.rule, p.text, out));
        }
    }
    assert!(leaked.is_empty(), "{} of {} leak:\n{}", leaked.len(), planted.len(), leaked.join("\n"));
}

#[test]
fn every_planted_secret_is_redacted_inside_encoded_json() {
    for p in planted_secrets() {
        // As a JSON string, and as JSON inside a JSON string (a tool's JSON
        // output kept as text): redaction reads through the escapes.
        let once = serde_json::to_string(&p.text).unwrap();
        let twice = serde_json::to_string(&format!("{{\"output\": {once}}}")).unwrap();
        for encoded in [once, twice] {
            let out = redact_text(&encoded);
            let decoded = |s: &str| s.replace("\\\\", "\\").replace("\\\"", "\"").replace("\\\\", "\\");
            assert!(!decoded(&out).contains(&p.secret), "{}: {encoded} -> {out}", p.rule);
        }
    }
}
