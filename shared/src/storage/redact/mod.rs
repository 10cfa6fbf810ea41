//! Privacy: secret redaction in every text and JSON string, path exclusion,
//! and the size caps applied before anything leaves an adapter.
//!
//! Two sets of patterns find secrets, and every hit of either is replaced by
//! `[REDACTED:kind]`:
//! - the maintained rule set, gitleaks' ~220 rules (`rules.rs`, generated
//!   into `gitleaks.rs`): provider tokens, JWTs, private keys, generic
//!   high-entropy assignments; `kind` is the rule's id;
//! - a hand-written single pass over the bytes (no regex engine): a 256-entry
//!   table marks the bytes that can start or end a secret, and only there is a
//!   pattern tried:
//!
//! | kind | pattern |
//! |---|---|
//! | `api_key` | `sk-` + ≥ 20 of `[A-Za-z0-9_-]` (covers `sk-ant-…`, `sk-proj-…`), not inside a word |
//! | `aws_key` | `AKIA`/`ASIA` + 16 of `[A-Z0-9]`, not inside a word |
//! | `github_token` | `ghp_`/`gho_`/`ghs_`/`ghu_`/`ghr_` + ≥ 20 alphanumerics; `github_pat_` + ≥ 20 of `[A-Za-z0-9_]` |
//! | `slack_token` | `xox[abprs]-` + ≥ 10 of `[A-Za-z0-9-]` |
//! | `bearer` | the token after `Bearer ` (any case), ≥ 8 of `[A-Za-z0-9._~+/=-]` |
//! | `authorization` | the rest of the line after `Authorization:` (any case) |
//! | `private_key` | `-----BEGIN … PRIVATE KEY-----` through the matching `-----END … -----` (or the end of the text) |
//! | `url_password` | the password of a URL's user info, `scheme://user:password@host` |
//! | `password`, `secret`, `api_key`, `token`, `private_key` | the value of an assignment `name = value`, `name: value`, `"name": "value"`, quoted or not, whose name ends (at a word or camelCase boundary) in `password`, `passwd`, `passphrase`, `secret`, `secret_key`, `access_key`, `signing_key`, `encryption_key`, `api_key`, `apikey`, `api-key`, `token`, `private_key` |
//!
//! A quoted value ends at its closing quote; an unquoted one runs to the
//! next whitespace whatever punctuation it holds (a Django key such as
//! `k8#d!x2(q9)zv@w1-m3_p+r7^t6*y5=u4&s0` is one value), or to a quote or a
//! JSON escape (the end of a string it sits in; the decoded view reads on);
//! trailing `,` and `;`, and a closing bracket it does not open, are code.
//!
//! Assignment values that are clearly not secrets are left alone: empty,
//! `null`/`true`/`false`/`none`/`nil`/`undefined`, template references
//! (`$NAME`, `${…}`, `$(…)`, `{{…}}`, `%s`, `%(name)s`, `%NAME%`),
//! already-redacted markers, and function calls (`token = next_token()`,
//! `os.environ.get(…)`: a path of identifiers with its arguments, then
//! nothing but more of the chain).
//!
//! Text is redacted as it reads once decoded: where it holds JSON string
//! escapes (a tool's JSON output kept as text, `…\nsk-…`), the patterns also
//! run over the decoded view (two levels deep) and each hit is mapped back
//! to the escaped bytes it came from.
//!
//! JSON objects are also redacted by key: a string or number value under a key
//! named like the assignment names above is replaced whole. [`redact_json`]
//! is the last check before an event is written anywhere (the journal, the
//! hooks' spool): whatever a writer forgot is caught there.

#[rustfmt::skip]
mod gitleaks;
#[cfg(test)]
mod planted;
mod rules;
pub mod samples;

use std::borrow::Cow;

use crate::storage::event::Body;
use serde_json::Value;

/// Tool outputs longer than this many bytes are cut (see [`cut_middle`]).
pub const MAX_TOOL_OUTPUT: usize = 32 * 1024;
/// Bytes kept from the start of a cut tool output.
pub const TOOL_OUTPUT_HEAD: usize = 24 * 1024;
/// Bytes kept from the end of a cut tool output.
pub const TOOL_OUTPUT_TAIL: usize = 8 * 1024;
/// Strings inside tool arguments and opaque records longer than this are cut.
pub const MAX_JSON_STRING: usize = 16 * 1024;
/// An opaque record whose JSON is still larger than this after cutting its
/// strings is replaced by a stub listing its top-level keys.
pub const MAX_OPAQUE_JSON: usize = 32 * 1024;
/// Message texts longer than this are cut (a pasted log, a huge prompt).
pub const MAX_MESSAGE_TEXT: usize = 128 * 1024;

/// The marker put in place of excluded content.
pub const EXCLUDED_MARKER: &str = "[EXCLUDED: sensitive path]";

// ---------------------------------------------------------------------------
// Secret scanning
// ---------------------------------------------------------------------------

const TRIGGER: [bool; 256] = {
    let mut t = [false; 256];
    t[b's' as usize] = true;
    t[b'A' as usize] = true;
    t[b'g' as usize] = true;
    t[b'x' as usize] = true;
    t[b'B' as usize] = true;
    t[b'b' as usize] = true;
    t[b'-' as usize] = true;
    t[b'=' as usize] = true;
    t[b':' as usize] = true;
    t
};

/// Names whose assignment values are secrets, lower case, with their kind.
const SECRET_NAMES: &[(&str, &str)] = &[
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("secret", "secret"),
    ("secret_key", "secret"),
    ("secretkey", "secret"),
    ("access_key", "secret"),
    ("signing_key", "secret"),
    ("encryption_key", "secret"),
    ("api_key", "api_key"),
    ("apikey", "api_key"),
    ("api-key", "api_key"),
    ("private_key", "private_key"),
    ("token", "token"),
];

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'
}

/// One secret found: byte range to replace and its kind. `keep` bytes at the
/// start of the range are kept (e.g. the `Bearer ` prefix is never in the range).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hit {
    start: usize,
    end: usize,
    kind: &'static str,
}

/// Whether `name` (an identifier or JSON key) names a secret; returns its kind.
/// The secret word must end the name and start at a boundary: the start of
/// the name, after a non-alphanumeric character, or at a lower→upper camelCase
/// step (`accessToken`).
pub fn secret_name_kind(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    if bytes.len() > 64 {
        return None;
    }
    for (word, kind) in SECRET_NAMES {
        let w = word.len();
        if bytes.len() < w {
            continue;
        }
        let start = bytes.len() - w;
        if !bytes[start..].eq_ignore_ascii_case(word.as_bytes()) {
            continue;
        }
        if start == 0 {
            return Some(kind);
        }
        let prev = bytes[start - 1];
        if !is_alnum(prev) || (prev.is_ascii_lowercase() && bytes[start].is_ascii_uppercase()) {
            return Some(kind);
        }
    }
    if name.eq_ignore_ascii_case("authorization") {
        return Some("authorization");
    }
    None
}

fn starts_with_ci(hay: &[u8], at: usize, needle: &[u8]) -> bool {
    hay.len() >= at + needle.len() && hay[at..at + needle.len()].eq_ignore_ascii_case(needle)
}

fn run_len(bytes: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes[from..].iter().take_while(|&&b| ok(b)).count()
}

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn find_from(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from >= hay.len() || needle.is_empty() {
        return None;
    }
    hay[from..].windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// Tries every pattern that can start (or, for assignments, end its name) at
/// byte `i`. Returns the hit and where scanning resumes.
fn try_at(bytes: &[u8], i: usize) -> Option<Hit> {
    let b = bytes[i];
    // The letter of an escape (`\n` kept as text) ends a word too.
    let prev_alnum = i > 0
        && is_alnum(bytes[i - 1])
        && !(i >= 2 && bytes[i - 2] == b'\\' && matches!(bytes[i - 1], b'n' | b't' | b'r' | b'b' | b'f' | b'u'));
    match b {
        b's' if !prev_alnum && bytes[i..].starts_with(b"sk-") => {
            let n = run_len(bytes, i + 3, token_char);
            (n >= 20).then_some(Hit { start: i, end: i + 3 + n, kind: "api_key" })
        }
        b'A' if !prev_alnum && (bytes[i..].starts_with(b"AKIA") || bytes[i..].starts_with(b"ASIA")) => {
            let n = run_len(bytes, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
            let after = bytes.get(i + 4 + n).copied().unwrap_or(b' ');
            (n == 16 && !is_alnum(after)).then_some(Hit { start: i, end: i + 20, kind: "aws_key" })
        }
        b'g' if !prev_alnum => {
            let rest = &bytes[i..];
            if rest.starts_with(b"github_pat_") {
                let n = run_len(bytes, i + 11, |c| c.is_ascii_alphanumeric() || c == b'_');
                return (n >= 20).then_some(Hit { start: i, end: i + 11 + n, kind: "github_token" });
            }
            if rest.len() >= 4
                && rest[0] == b'g'
                && rest[1] == b'h'
                && matches!(rest[2], b'p' | b'o' | b's' | b'u' | b'r')
                && rest[3] == b'_'
            {
                let n = run_len(bytes, i + 4, |c| c.is_ascii_alphanumeric());
                return (n >= 20).then_some(Hit { start: i, end: i + 4 + n, kind: "github_token" });
            }
            None
        }
        b'x' if !prev_alnum => {
            let rest = &bytes[i..];
            if rest.len() >= 5
                && rest.starts_with(b"xox")
                && matches!(rest[3], b'a' | b'b' | b'p' | b'r' | b's')
                && rest[4] == b'-'
            {
                let n = run_len(bytes, i + 5, |c| c.is_ascii_alphanumeric() || c == b'-');
                return (n >= 10).then_some(Hit { start: i, end: i + 5 + n, kind: "slack_token" });
            }
            None
        }
        b'B' | b'b' if !prev_alnum && starts_with_ci(bytes, i, b"bearer ") => {
            let mut j = i + 7;
            while j < bytes.len() && bytes[j] == b' ' {
                j += 1;
            }
            let n = run_len(bytes, j, |c| {
                c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
            });
            if n >= 8 && !bytes[j..j + n].starts_with(b"[REDACTED") {
                Some(Hit { start: j, end: j + n, kind: "bearer" })
            } else {
                None
            }
        }
        b'-' if bytes[i..].starts_with(b"-----BEGIN ") => {
            let line_end = bytes[i..].iter().position(|&c| c == b'\n').map_or(bytes.len(), |p| i + p);
            let header = &bytes[i..line_end.min(i + 100)];
            find_from(header, 0, b"PRIVATE KEY-----")?;
            let end = match find_from(bytes, line_end, b"-----END ") {
                Some(e) => {
                    // Through the closing dashes of the END line.
                    let after = e + 9;
                    match find_from(bytes, after, b"-----") {
                        Some(close) if close < after + 64 => close + 5,
                        _ => bytes.len(),
                    }
                }
                None => bytes.len(),
            };
            Some(Hit { start: i, end, kind: "private_key" })
        }
        b':' if bytes[i..].starts_with(b"://") => url_password_at(bytes, i),
        b'=' | b':' => assignment_at(bytes, i),
        _ => None,
    }
}

/// The password in a URL's user info, `scheme://user:password@host`, where
/// `sep` is the `:` of `://`.
fn url_password_at(bytes: &[u8], sep: usize) -> Option<Hit> {
    // A scheme: letters, digits, `+.-`, starting with a letter.
    let scheme = bytes[..sep].iter().rev().take_while(|&&c| c.is_ascii_alphanumeric() || b"+.-".contains(&c)).count();
    if scheme == 0 || !bytes[sep - scheme].is_ascii_alphabetic() {
        return None;
    }
    let start = sep + 3;
    // The authority ends at the path, query, fragment or any space or quote.
    let end = bytes[start..]
        .iter()
        .position(|&c| c.is_ascii_whitespace() || b"/?#\"'<>`".contains(&c))
        .map_or(bytes.len(), |p| start + p);
    let at = start + bytes[start..end].iter().rposition(|&c| c == b'@')?;
    let colon = start + bytes[start..at].iter().position(|&c| c == b':')?;
    let password = &bytes[colon + 1..at];
    if password.is_empty() || is_harmless_value(password) {
        return None;
    }
    Some(Hit { start: colon + 1, end: at, kind: "url_password" })
}

/// An assignment whose separator is at `sep`: looks back for the name and
/// forward for the value.
fn assignment_at(bytes: &[u8], sep: usize) -> Option<Hit> {
    let s = bytes[sep];
    let next = bytes.get(sep + 1).copied().unwrap_or(b' ');
    if s == b'=' {
        if next == b'=' || next == b'>' || next == b'~' {
            return None;
        }
        if sep > 0 && matches!(bytes[sep - 1], b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'|' | b'&') {
            return None;
        }
    } else if next == b':' || (sep > 0 && bytes[sep - 1] == b':') {
        return None;
    }
    // Name: skip spaces, an optional closing quote (maybe escaped), then identifier chars.
    let mut j = sep;
    while j > 0 && bytes[j - 1] == b' ' && sep - j < 4 {
        j -= 1;
    }
    if j > 0 && (bytes[j - 1] == b'"' || bytes[j - 1] == b'\'') {
        j -= 1;
        if j > 0 && bytes[j - 1] == b'\\' {
            j -= 1;
        }
    }
    let name_end = j;
    while j > 0 && is_ident(bytes[j - 1]) && name_end - j < 64 {
        j -= 1;
    }
    if j == name_end {
        return None;
    }
    let name = std::str::from_utf8(&bytes[j..name_end]).ok()?;
    let kind = secret_name_kind(name)?;
    // Value.
    let mut v = sep + 1;
    while v < bytes.len() && (bytes[v] == b' ' || bytes[v] == b'\t') {
        v += 1;
    }
    if kind == "authorization" {
        let end = bytes[v..]
            .iter()
            .position(|&c| c == b'\n' || c == b'"' || c == b'\'' || c == b'\r')
            .map_or(bytes.len(), |p| v + p);
        if end > v && !bytes[v..end].starts_with(b"[REDACTED") {
            return Some(Hit { start: v, end, kind });
        }
        return None;
    }
    if v < bytes.len() && bytes[v] == b'\\' && bytes.get(v + 1).is_some_and(|&c| c == b'"' || c == b'\'') {
        v += 1;
    }
    let (start, end) = if v < bytes.len() && (bytes[v] == b'"' || bytes[v] == b'\'' || bytes[v] == b'`') {
        let q = bytes[v];
        let start = v + 1;
        let mut e = start;
        while e < bytes.len() && e - start < 1024 {
            let c = bytes[e];
            if c == q {
                break;
            }
            if c == b'\\' && bytes.get(e + 1) == Some(&q) {
                break;
            }
            if c == b'\n' {
                break;
            }
            e += 1;
        }
        (start, e)
    } else {
        let start = v;
        let end = unquoted_value_end(bytes, start);
        if is_code_expression(&bytes[start..end]) {
            return None;
        }
        (start, without_code_punctuation(bytes, start, end))
    };
    if end <= start {
        return None;
    }
    let value = &bytes[start..end];
    if is_harmless_value(value) {
        return None;
    }
    Some(Hit { start, end, kind })
}

/// Where an unquoted assignment value that starts at `start` ends: at
/// whitespace or the end of the text, whatever punctuation the value holds
/// (`k8#d!x2(q9)zv@w1-m3_p+r7^t6*y5=u4&s0` is one value). It also ends at a
/// quote (the end of a string the assignment sits in) and at a JSON escape
/// (`\n`, `\"`, …: the decoded view reads on through it).
fn unquoted_value_end(bytes: &[u8], start: usize) -> usize {
    let mut e = start;
    while e < bytes.len() && e - start < 1024 {
        let c = bytes[e];
        if c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'`') {
            break;
        }
        if c == b'\\'
            && bytes
                .get(e + 1)
                .is_some_and(|&n| matches!(n, b'n' | b'r' | b't' | b'"' | b'\'' | b'\\' | b'/' | b'b' | b'f' | b'u'))
        {
            break;
        }
        e += 1;
    }
    e
}

/// The end of the unquoted value `start..e` without the separators that end
/// code rather than the value: trailing `,` and `;`, and a trailing `)`, `]`
/// or `}` the value does not open.
fn without_code_punctuation(bytes: &[u8], start: usize, mut e: usize) -> usize {
    loop {
        let value = &bytes[start..e];
        let trim = match value.last() {
            Some(b',' | b';') => true,
            Some(&close @ (b')' | b']' | b'}')) => {
                let open = match close {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                let opens = value.iter().filter(|&&c| c == open).count();
                let closes = value.iter().filter(|&&c| c == close).count();
                closes > opens
            }
            _ => false,
        };
        if !trim {
            return e;
        }
        e -= 1;
    }
}

/// Whether an unquoted assignment value is a function or method call
/// (`next_token()`, `os.environ.get(`, `getpass.getpass().strip()`), not a
/// secret: a path of identifiers, then balanced arguments, then only more
/// of the chain or closing punctuation. A value cut short inside the
/// arguments is a call when it was cut right after `(` or `,` (the
/// arguments go on past a space or a quote).
fn is_code_expression(value: &[u8]) -> bool {
    let mut i = 0;
    let mut called = false;
    loop {
        // A path of identifiers: `a`, `a.b`, `a::b`.
        loop {
            let first = value.get(i).copied().unwrap_or(b' ');
            if !(first.is_ascii_alphabetic() || first == b'_') {
                return false;
            }
            i += run_len(value, i, |c| c.is_ascii_alphanumeric() || c == b'_');
            if value[i..].starts_with(b"::") {
                i += 2;
            } else if value.get(i) == Some(&b'.') {
                i += 1;
            } else {
                break;
            }
        }
        // Arguments, balanced, or cut short.
        if value.get(i) != Some(&b'(') {
            return called && value[i..].iter().all(|c| b"?;,)]}".contains(c));
        }
        let mut depth = 0usize;
        let mut close = None;
        for (k, &c) in value.iter().enumerate().skip(i) {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            return matches!(value.last(), Some(b'(' | b','));
        };
        called = true;
        i = close + 1;
        let rest = &value[i..];
        if rest.iter().all(|c| b"?;,)]}".contains(c)) {
            return true;
        }
        // A chained call: `.next(`, `?.next(`, `::next(`.
        let skip = if rest.starts_with(b"?.") || rest.starts_with(b"::") {
            2
        } else if rest.starts_with(b".") {
            1
        } else {
            return false;
        };
        i += skip;
    }
}

/// Whether an assignment value is clearly not a secret: an empty-ish word,
/// a template reference, a mask, an already-redacted marker. Trailing code
/// punctuation (`None,`, `null)`) is ignored.
fn is_harmless_value(value: &[u8]) -> bool {
    let trimmed = value.iter().rposition(|c| !b",;)]}".contains(c)).map_or(&value[..0], |p| &value[..=p]);
    is_harmless_exact(value) || (!trimmed.is_empty() && is_harmless_exact(trimmed))
}

fn is_harmless_exact(value: &[u8]) -> bool {
    const WORDS: &[&[u8]] = &[b"null", b"true", b"false", b"none", b"nil", b"undefined"];
    if WORDS.iter().any(|w| value.eq_ignore_ascii_case(w)) {
        return true;
    }
    let ident =
        |v: &[u8]| !v.is_empty() && !v[0].is_ascii_digit() && v.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    let template = match value {
        // `$NAME`, `$1`, `$@`, `${…}`, `$(command)`.
        [b'$', rest @ ..] => {
            ident(rest)
                || (!rest.is_empty() && rest.iter().all(u8::is_ascii_digit))
                || matches!(rest, [b'@' | b'*' | b'#' | b'?'])
                || (rest.first() == Some(&b'{') && value.ends_with(b"}"))
                || rest.first() == Some(&b'(')
        }
        // `%s`, `%(name)s`, `%NAME%`.
        [b'%', rest @ ..] => {
            matches!(rest, [b's' | b'd' | b'r' | b'v' | b'q'])
                || (rest.first() == Some(&b'(') && rest.ends_with(b")s"))
                || rest.strip_suffix(b"%").is_some_and(ident)
        }
        _ => false,
    };
    template
        || value.starts_with(b"[REDACTED")
        || value.starts_with(b"{{")
        || value.starts_with(b"<")
        || value.iter().all(|&c| c == b'*' || c == b'.' || c == b'x' || c == b'X')
}

/// Hits of the hand-written patterns.
fn hand_hits(bytes: &[u8]) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if TRIGGER[bytes[i] as usize]
            && let Some(hit) = try_at(bytes, i)
        {
            // Assignment hits start after `i`; others at or after it.
            if hits.last().is_none_or(|h: &Hit| hit.start >= h.end) {
                i = hit.end.max(i + 1);
                hits.push(hit);
                continue;
            }
        }
        i += 1;
    }
    hits
}

/// Every secret in `bytes`, from both pattern sets and the decoded view,
/// in order, without overlaps, each on char boundaries if `bytes` is UTF-8.
fn find_hits(bytes: &[u8]) -> Vec<Hit> {
    let mut hits = raw_hits(bytes, 3);
    hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.end)));
    let mut merged: Vec<Hit> = Vec::with_capacity(hits.len());
    for mut h in hits {
        // Byte-level rules may stop inside a multi-byte character.
        while h.start > 0 && is_continuation(bytes[h.start]) {
            h.start -= 1;
        }
        while h.end < bytes.len() && is_continuation(bytes[h.end]) {
            h.end += 1;
        }
        match merged.last_mut() {
            Some(last) if h.start <= last.end => last.end = last.end.max(h.end),
            _ => merged.push(h),
        }
    }
    merged
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Hits of both pattern sets in `bytes` and, `depth` levels deep, in its
/// decoded view.
fn raw_hits(bytes: &[u8], depth: u32) -> Vec<Hit> {
    let mut hits = hand_hits(bytes);
    hits.extend(rules::find(bytes).into_iter().map(|f| Hit { start: f.start, end: f.end, kind: f.rule }));
    if depth > 0
        && let Some(view) = Decoded::of(bytes)
    {
        hits.extend(raw_hits(&view.bytes, depth - 1).into_iter().map(|h| view.original(h)));
    }
    hits
}

/// `bytes` with its JSON string escapes decoded, and where each decoded byte came from.
struct Decoded {
    bytes: Vec<u8>,
    /// For each decoded byte, the range of original bytes it was decoded from.
    from: Vec<(usize, usize)>,
}

impl Decoded {
    /// `None` when `bytes` holds no escape.
    fn of(bytes: &[u8]) -> Option<Decoded> {
        let first = memchr::memchr(b'\\', bytes)?;
        let mut out = Decoded { bytes: Vec::with_capacity(bytes.len()), from: Vec::with_capacity(bytes.len()) };
        for (i, &b) in bytes[..first].iter().enumerate() {
            out.push(b, i, i + 1);
        }
        let mut i = first;
        let mut escapes = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b != b'\\' || i + 1 == bytes.len() {
                out.push(b, i, i + 1);
                i += 1;
                continue;
            }
            let simple = match bytes[i + 1] {
                b'n' => Some(b'\n'),
                b't' => Some(b'\t'),
                b'r' => Some(b'\r'),
                b'b' => Some(8),
                b'f' => Some(12),
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                _ => None,
            };
            if let Some(c) = simple {
                out.push(c, i, i + 2);
                i += 2;
                escapes += 1;
                continue;
            }
            if let Some((c, len)) = unicode_escape(&bytes[i..]) {
                let mut buf = [0u8; 4];
                for &d in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(d, i, i + len);
                }
                i += len;
                escapes += 1;
                continue;
            }
            out.push(b, i, i + 1);
            i += 1;
        }
        (escapes > 0).then_some(out)
    }

    fn push(&mut self, b: u8, start: usize, end: usize) {
        self.bytes.push(b);
        self.from.push((start, end));
    }

    /// The original bytes a hit in the decoded view covers.
    fn original(&self, h: Hit) -> Hit {
        let start = self.from.get(h.start).map_or(usize::MAX, |r| r.0);
        let end = h.end.checked_sub(1).and_then(|e| self.from.get(e)).map_or(start, |r| r.1);
        Hit { start: start.min(end), end, kind: h.kind }
    }
}

/// A `\uXXXX` escape (a surrogate pair counts as one) at the start of `bytes`:
/// the character and the escape's length.
fn unicode_escape(bytes: &[u8]) -> Option<(char, usize)> {
    let hex = |b: &[u8]| -> Option<u32> {
        let s = std::str::from_utf8(b.get(2..6)?).ok()?;
        (b.starts_with(b"\\u") && s.bytes().all(|c| c.is_ascii_hexdigit())).then(|| u32::from_str_radix(s, 16).ok())?
    };
    let hi = hex(bytes)?;
    if (0xD800..0xDC00).contains(&hi) {
        let lo = hex(bytes.get(6..)?)?;
        if !(0xDC00..0xE000).contains(&lo) {
            return None;
        }
        return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).map(|c| (c, 12));
    }
    char::from_u32(hi).map(|c| (c, 6))
}

/// Whether `text` holds anything redaction would replace.
pub fn contains_secret(text: &str) -> bool {
    !find_hits(text.as_bytes()).is_empty()
}

/// Redacts one encoded JSON value (an event as it is about to be written):
/// `None` when it holds no secret, else the value re-encoded with every
/// string redacted. This is the check every event passes before it is
/// written, whatever wrote it.
pub fn redact_json(json: &[u8]) -> Option<Vec<u8>> {
    if find_hits(json).is_empty() {
        return None;
    }
    let mut value: Value = serde_json::from_slice(json).ok()?;
    redact_value_keeping_types(&mut value);
    serde_json::to_vec(&value).ok().filter(|v| v != json)
}

/// [`redact_value`], but a number under a secret-named key stays a number
/// (an event's typed fields must still decode).
fn redact_value_keeping_types(v: &mut Value) {
    match v {
        Value::String(s) => redact_string(s),
        Value::Array(items) => items.iter_mut().for_each(redact_value_keeping_types),
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if let Some(kind) = secret_name_kind(k)
                    && let Value::String(s) = val
                    && !s.is_empty()
                    && !is_harmless_value(s.as_bytes())
                    && !s.starts_with("[REDACTED")
                {
                    *val = Value::String(format!("[REDACTED:{kind}]"));
                    continue;
                }
                redact_value_keeping_types(val);
            }
        }
        _ => {}
    }
}

/// Replaces every secret in `text` by `[REDACTED:kind]`. Borrowed when nothing
/// was found.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let hits = find_hits(bytes);
    if hits.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for h in hits {
        // Hits start and end at ASCII bytes, so these are char boundaries.
        out.push_str(&text[last..h.start]);
        out.push_str("[REDACTED:");
        out.push_str(h.kind);
        out.push(']');
        last = h.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// Redacts a `String` in place.
pub fn redact_string(s: &mut String) {
    if let Cow::Owned(new) = redact_text(s) {
        *s = new;
    }
}

/// Redacts every string in a JSON value, and replaces scalar values under
/// secret-named keys.
pub fn redact_value(v: &mut Value) {
    match v {
        Value::String(s) => redact_string(s),
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if let Some(kind) = secret_name_kind(k) {
                    let replace = match val {
                        Value::String(s) => !s.is_empty() && !is_harmless_value(s.as_bytes()),
                        Value::Number(_) => true,
                        _ => false,
                    };
                    if replace {
                        *val = Value::String(format!("[REDACTED:{kind}]"));
                        continue;
                    }
                }
                redact_value(val);
            }
        }
        _ => {}
    }
}

/// Redacts every text and JSON string of an event body.
pub fn redact_body(body: &mut Body) {
    match body {
        Body::SessionStarted(b) => {
            for s in [&mut b.cwd, &mut b.project, &mut b.git_branch, &mut b.source_path].into_iter().flatten() {
                redact_string(s);
            }
        }
        Body::Meta(b) => {
            if let Some(t) = &mut b.text {
                redact_string(t);
            }
            for v in b.fields.values_mut() {
                redact_value(v);
            }
        }
        Body::MsgIn(b) => redact_string(&mut b.text),
        Body::MsgOut(b) => redact_string(&mut b.text),
        Body::ToolCall(b) => redact_value(&mut b.args),
        Body::ToolResult(b) => {
            redact_string(&mut b.stdout);
            redact_string(&mut b.stderr);
        }
        Body::CodeRead(b) => redact_string(&mut b.file),
        Body::CodeEdit(b) => {
            redact_string(&mut b.file);
            for s in [&mut b.move_to, &mut b.before_text, &mut b.after_text].into_iter().flatten() {
                redact_string(s);
            }
        }
        Body::SpanLink(b) => {
            redact_string(&mut b.from_file);
            redact_string(&mut b.to_file);
            redact_string(&mut b.note);
        }
        Body::Opaque(b) => redact_value(&mut b.raw),
        Body::MemoryAdded(b) => redact_string(&mut b.content),
        Body::MemoryUpdated(b) => {
            if let Some(c) = &mut b.content {
                redact_string(c);
            }
        }
        Body::Unknown(b) => redact_value(&mut b.body),
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Size caps
// ---------------------------------------------------------------------------

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

/// Cuts the middle out of `text` when it is longer than `max` bytes, keeping
/// `head` bytes from the start and `tail` from the end (on char boundaries)
/// with a marker between. Returns the bytes removed (0 when nothing was cut).
pub fn cut_middle(text: &mut String, max: usize, head: usize, tail: usize) -> u64 {
    if text.len() <= max {
        return 0;
    }
    let h = floor_boundary(text, head);
    let t = ceil_boundary(text, text.len().saturating_sub(tail).max(h));
    let removed = (t - h) as u64;
    let mut out = String::with_capacity(h + (text.len() - t) + 48);
    out.push_str(&text[..h]);
    out.push_str(&format!("\n[… {removed} bytes cut …]\n"));
    out.push_str(&text[t..]);
    *text = out;
    removed
}

/// Cuts a tool output to [`MAX_TOOL_OUTPUT`]; returns the bytes removed.
pub fn cap_tool_output(text: &mut String) -> u64 {
    cut_middle(text, MAX_TOOL_OUTPUT, TOOL_OUTPUT_HEAD, TOOL_OUTPUT_TAIL)
}

/// Cuts a message text to [`MAX_MESSAGE_TEXT`].
pub fn cap_message(text: &mut String) {
    cut_middle(text, MAX_MESSAGE_TEXT, MAX_MESSAGE_TEXT * 3 / 4, MAX_MESSAGE_TEXT / 4);
}

/// Cuts every long string inside a JSON value to [`MAX_JSON_STRING`] and long
/// arrays to 200 items.
pub fn cap_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            cut_middle(s, MAX_JSON_STRING, MAX_JSON_STRING * 3 / 4, MAX_JSON_STRING / 4);
        }
        Value::Array(items) => {
            if items.len() > 200 {
                let n = items.len();
                items.truncate(200);
                items.push(Value::String(format!("[… {} more items cut …]", n - 200)));
            }
            items.iter_mut().for_each(cap_value);
        }
        Value::Object(map) => map.values_mut().for_each(cap_value),
        _ => {}
    }
}

/// Caps an opaque record: long strings and arrays are cut, and a record still
/// larger than [`MAX_OPAQUE_JSON`] becomes `{"_cut": bytes, "_keys": […]}`.
pub fn cap_opaque(mut v: Value) -> Value {
    cap_value(&mut v);
    let size = serde_json::to_vec(&v).map_or(0, |b| b.len());
    if size <= MAX_OPAQUE_JSON {
        return v;
    }
    let keys: Vec<Value> = match &v {
        Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
        _ => Vec::new(),
    };
    serde_json::json!({ "_cut": size, "_keys": keys })
}

// ---------------------------------------------------------------------------
// Path exclusion
// ---------------------------------------------------------------------------

/// Default file-name patterns whose contents never reach a tape.
pub const DEFAULT_EXCLUDES: &[&str] = &[".env", ".env.*", "*.pem", "*.key", "id_rsa*", "*credentials*", "*.p12"];

/// Which paths' contents are dropped. Patterns are globs (`*`, `?`) matched,
/// case-insensitively, against the last component of a path.
#[derive(Clone, Debug, PartialEq)]
pub struct Privacy {
    /// File-name globs.
    pub exclude: Vec<String>,
}

impl Default for Privacy {
    fn default() -> Self {
        Privacy { exclude: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect() }
    }
}

/// Glob match of `pat` against `text` with `*` and `?`, ASCII case-insensitive.
pub fn glob_match(pat: &str, text: &str) -> bool {
    let p = pat.as_bytes();
    let t = text.as_bytes();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi].eq_ignore_ascii_case(&t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

impl Privacy {
    /// No exclusions (redaction still applies).
    pub fn none() -> Privacy {
        Privacy { exclude: Vec::new() }
    }

    /// The pattern `path` matches, if its contents must be dropped.
    pub fn excluded(&self, path: &str) -> Option<&str> {
        let trimmed = path.trim().trim_matches(|c| c == '"' || c == '\'');
        let name = trimmed.rsplit(['/', '\\']).next().unwrap_or(trimmed);
        if name.is_empty() {
            return None;
        }
        self.exclude.iter().find(|p| glob_match(p, name)).map(String::as_str)
    }

    /// The first excluded path among the words of a shell command.
    pub fn command_touches(&self, command: &str) -> Option<&str> {
        command
            .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')'))
            .filter(|w| !w.is_empty() && !w.starts_with('-'))
            .find_map(|w| self.excluded(w))
    }

    /// The first excluded path named by a tool's arguments: any string under
    /// a path-like key (`file_path`, `path`, `filePath`, `notebook_path`,
    /// `absolute_path`, `filename`), or in a `command`/`cmd` (string or argv).
    pub fn args_touch(&self, args: &Value) -> Option<String> {
        let Value::Object(map) = args else {
            return None;
        };
        for (k, v) in map {
            let key = k.to_ascii_lowercase();
            let is_path_key = matches!(
                key.as_str(),
                "file_path" | "path" | "filepath" | "notebook_path" | "absolute_path" | "filename" | "file"
            );
            let is_cmd_key = matches!(key.as_str(), "command" | "cmd");
            match v {
                Value::String(s) if is_path_key => {
                    if let Some(p) = self.excluded(s) {
                        return Some(p.to_owned());
                    }
                }
                Value::String(s) if is_cmd_key => {
                    if let Some(p) = self.command_touches(s) {
                        return Some(p.to_owned());
                    }
                }
                Value::Array(items) if is_cmd_key || is_path_key => {
                    for it in items {
                        if let Value::String(s) = it
                            && let Some(p) = self.command_touches(s)
                        {
                            return Some(p.to_owned());
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Replaces file contents inside tool arguments (`content`, `old_string`,
/// `new_string`, `edits`, `newString`, `oldString`, `patchText`, `input`)
/// with [`EXCLUDED_MARKER`]; paths and commands stay.
pub fn strip_contents(args: &mut Value) {
    if let Value::Object(map) = args {
        for (k, v) in map.iter_mut() {
            let key = k.to_ascii_lowercase();
            if matches!(
                key.as_str(),
                "content"
                    | "old_string"
                    | "new_string"
                    | "oldstring"
                    | "newstring"
                    | "edits"
                    | "patchtext"
                    | "input"
                    | "patch"
            ) {
                *v = Value::String(EXCLUDED_MARKER.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact_text(s).into_owned()
    }

    #[test]
    fn provider_keys() {
        assert_eq!(r("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wxyz done"), "key [REDACTED:api_key] done");
        assert_eq!(r("sk-proj-1234567890abcdefghijklmn"), "[REDACTED:api_key]");
        assert_eq!(r("task-1234567890abcdefghijklmnop"), "task-1234567890abcdefghijklmnop");
        assert_eq!(r("sk-short"), "sk-short");
        assert_eq!(r("id AKIAIOSFODNN7EXAMPLE."), "id [REDACTED:aws_key].");
        assert_eq!(r("ASIAIOSFODNN7EXAMPLEX"), "ASIAIOSFODNN7EXAMPLEX");
        assert_eq!(r("ghp_abcdefghijklmnopqrstuvwxyz0123456789"), "[REDACTED:github_token]");
        assert_eq!(r("github_pat_11ABCDEFG0123456789_abcdefghijklmnop"), "[REDACTED:github_token]");
        assert_eq!(r("xoxb-123456789012-abcdefghij"), "[REDACTED:slack_token]");
    }

    #[test]
    fn headers_and_keys() {
        assert_eq!(
            r("curl -H 'Authorization: Bearer abc.def.ghi123' x"),
            "curl -H 'Authorization: [REDACTED:authorization]' x"
        );
        assert_eq!(r("Bearer eyJhbGciOiJIUzI1NiJ9"), "Bearer [REDACTED:bearer]");
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(r(pem), "a\n[REDACTED:private_key]\nb");
        assert_eq!(r("x -----BEGIN OPENSSH PRIVATE KEY-----\nAAAA"), "x [REDACTED:private_key]");
        assert_eq!(r("-----BEGIN CERTIFICATE-----"), "-----BEGIN CERTIFICATE-----");
    }

    #[test]
    fn assignments() {
        assert_eq!(r("DB_PASSWORD=hunter2 next"), "DB_PASSWORD=[REDACTED:password] next");
        assert_eq!(r("passwd: 'hunter2'"), "passwd: '[REDACTED:password]'");
        assert_eq!(r(r#"{"api_key": "abc123"}"#), r#"{"api_key": "[REDACTED:api_key]"}"#);
        assert_eq!(r(r#"{\"token\":\"abc123\"}"#), r#"{\"token\":\"[REDACTED:token]\"}"#);
        assert_eq!(r("accessToken = 'zz9'"), "accessToken = '[REDACTED:token]'");
        // An unquoted value runs to the next space, whatever it holds.
        assert_eq!(r("secret=s3cr3t&x=1"), "secret=[REDACTED:secret]");
        // Not secrets.
        assert_eq!(r("max_tokens: 100"), "max_tokens: 100");
        assert_eq!(r("token = next_token()"), "token = next_token()");
        assert_eq!(r("if token == other"), "if token == other");
        assert_eq!(r("password: null"), "password: null");
        assert_eq!(r("TOKEN=$GITHUB_TOKEN"), "TOKEN=$GITHUB_TOKEN");
        assert_eq!(r("std::token::Kind"), "std::token::Kind");
        assert_eq!(r("mytoken=abc"), "mytoken=abc");
    }

    #[test]
    fn unquoted_values_hold_any_punctuation() {
        let django = "k8#d!x2(q9)zv@w1-m3_p+r7^t6*y5=u4&s0";
        assert_eq!(r(&format!("SECRET_KEY={django}")), "SECRET_KEY=[REDACTED:secret]");
        assert_eq!(r(&format!("export SECRET_KEY={django} && run")), "export SECRET_KEY=[REDACTED:secret] && run");
        assert_eq!(r(&format!("SECRET_KEY: {django}\nDEBUG=1")), "SECRET_KEY: [REDACTED:secret]\nDEBUG=1");
        assert_eq!(r("SECRET_KEY=abcd(q9)zv@w1"), "SECRET_KEY=[REDACTED:secret]");
        assert_eq!(r("SECRET_KEY=abcd(q9"), "SECRET_KEY=[REDACTED:secret]");
        assert_eq!(r("SECRET_KEY: abc)def(ghi"), "SECRET_KEY: [REDACTED:secret]");
        assert_eq!(r("DB_PASSWORD=%x!y$z"), "DB_PASSWORD=[REDACTED:password]");
        assert_eq!(r("DB_PASSWORD=$x!y"), "DB_PASSWORD=[REDACTED:password]");
        // The end of an enclosing string or escape ends the value.
        assert_eq!(
            r(&format!(r#"{{"cmd":"SECRET_KEY={django}","x":1}}"#)),
            r#"{"cmd":"SECRET_KEY=[REDACTED:secret]","x":1}"#
        );
        assert_eq!(
            r(&format!(r#"{{\"env\":\"SECRET_KEY={django}\"}}"#)),
            r#"{\"env\":\"SECRET_KEY=[REDACTED:secret]\"}"#
        );
        // Code punctuation after the value stays.
        assert_eq!(r("let token = abc123;"), "let token = [REDACTED:token];");
        assert_eq!(r("f(token=abc123, x=1)"), "f(token=[REDACTED:token], x=1)");
        assert_eq!(r("connect(password=hunter2)"), "connect(password=[REDACTED:password])");
        // Calls and templates are not secrets.
        assert_eq!(r("token = next_token()"), "token = next_token()");
        assert_eq!(r("token = next_token();"), "token = next_token();");
        assert_eq!(r("token = os.environ.get(\"TOKEN\")"), "token = os.environ.get(\"TOKEN\")");
        assert_eq!(r("token = get_token(a, b)"), "token = get_token(a, b)");
        assert_eq!(r("password = getpass.getpass().strip()"), "password = getpass.getpass().strip()");
        assert_eq!(r("api_key = load()?.key()"), "api_key = load()?.key()");
        assert_eq!(r("f(password=None)"), "f(password=None)");
        assert_eq!(r("token: null,"), "token: null,");
        assert_eq!(r("TOKEN=${GITHUB_TOKEN}"), "TOKEN=${GITHUB_TOKEN}");
        assert_eq!(r("TOKEN=$(cat token.txt)"), "TOKEN=$(cat token.txt)");
        assert_eq!(r("password=%(pw)s"), "password=%(pw)s");
    }

    proptest::proptest! {
        /// Whatever punctuation an unquoted value holds, none of it stays but
        /// the separators that end it as code (`,`, `;`, closers it does not open).
        #[test]
        fn an_unquoted_value_is_redacted_whole(value in "[0-9][!#-&(-\\[\\]-_a-~]{0,40}") {
            let out = r(&format!("SECRET_KEY={value} done"));
            let kept = out
                .strip_prefix("SECRET_KEY=[REDACTED:secret]")
                .and_then(|rest| rest.strip_suffix(" done"))
                .unwrap_or_else(|| panic!("{value:?} -> {out:?}"));
            proptest::prop_assert!(kept.bytes().all(|c| b",;)]}".contains(&c)), "{:?} -> {:?}", value, out);
        }
    }

    #[test]
    fn json_values_by_key() {
        let mut v = serde_json::json!({"password": "p", "nested": {"clientSecret": 12, "x": "sk-abcdefghijklmnopqrstuvwx"}, "tokens": 5});
        redact_value(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"password": "[REDACTED:password]", "nested": {"clientSecret": "[REDACTED:secret]", "x": "[REDACTED:api_key]"}, "tokens": 5})
        );
    }

    #[test]
    fn redaction_is_idempotent() {
        let once = r("a sk-ant-abcdefghijklmnopqrstuvwxyz password=x Bearer abcdefghijk");
        assert_eq!(r(&once), once);
    }

    #[test]
    fn exclusion_globs() {
        let p = Privacy::default();
        assert_eq!(p.excluded("/repo/.env"), Some(".env"));
        assert_eq!(p.excluded("/repo/.env.local"), Some(".env.*"));
        assert_eq!(p.excluded("C:\\keys\\server.PEM"), Some("*.pem"));
        assert_eq!(p.excluded("/home/u/.ssh/id_rsa.pub"), Some("id_rsa*"));
        assert_eq!(p.excluded("aws_credentials.json"), Some("*credentials*"));
        assert_eq!(p.excluded("/repo/src/env.rs"), None);
        assert_eq!(p.excluded("/repo/.envrc"), None);
        assert_eq!(p.command_touches("cat .env | grep X"), Some(".env"));
        assert_eq!(p.command_touches("ls -la src"), None);
        assert!(glob_match("a*b?c", "aXXbYc"));
        assert!(!glob_match("a*b?c", "aXXbc"));
    }

    #[test]
    fn cutting_keeps_head_and_tail() {
        let mut s = "a".repeat(100) + &"é".repeat(100) + &"z".repeat(100);
        let cut = cut_middle(&mut s, 50, 20, 10);
        assert!(cut > 0);
        assert!(s.starts_with(&"a".repeat(20)));
        assert!(s.ends_with(&"z".repeat(10)));
        assert!(s.contains("bytes cut"));
        let mut small = "abc".to_owned();
        assert_eq!(cut_middle(&mut small, 50, 20, 10), 0);
    }
}
