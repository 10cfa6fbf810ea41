//! A fast reader for `score` request lines, giving exactly the message the
//! generic reader ([`shared::base::rpc::parse_message`]) gives.
//!
//! A `score` request from Signet's daemon is mostly numbers: 50 candidates of
//! 768 dimensions are ~38,000 values printed with 17 significant digits
//! (~0.75 MB). serde_json reads them one value at a time through its visitor
//! machinery (about 30 ns each; merely skipping them costs half of that).
//! This reader walks the line once with a cursor and converts the number
//! arrays in tight loops (eight digits at a time).
//!
//! **Same result, or none.** It reads only the common shape: an object with
//! `jsonrpc`, `id`, `method` = `"score"` and then `params` (any order of the
//! first three, `params` after `method`), unknown keys anywhere. Anything else
//! (another method, a duplicate key, a value of an unexpected type, a number
//! serde_json would refuse) gives `None`, and the generic reader handles the
//! line, with its precise errors. Where it reads, it reads as serde_json
//! does:
//!
//! * Numbers in the common form, `-?int.frac` with at most 19 significant
//!   digits and at most 22 fraction digits, with serde_json's own arithmetic
//!   (without its `float_roundtrip` feature, which this workspace does not
//!   enable): `significand as f64 / 10^frac`, negated, then `as f32`; plain
//!   integers as `u64` / `i64` `as f32`, and `-0` as serde_json reads it.
//!   Any other number (an exponent, more digits) is converted by serde_json
//!   itself.
//! * Strings without escapes are checked as UTF-8 and copied; strings with
//!   escapes, ids, `project_slot` and skipped values are handed to serde_json
//!   (they are small).

use serde::de::IgnoredAny;
use shared::base::rpc::{Id, Message};

use crate::protocol::{Request, ScoreParams};

/// Powers of ten exactly representable in an `f64` (serde_json's table starts the same).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// Most significant digits accumulated in a `u64` without any overflow check.
const MAX_DIGITS: usize = 19;

/// Whether the eight bytes of `w` (little-endian) are all ASCII digits.
#[inline]
fn eight_digits(w: u64) -> bool {
    let a = w.wrapping_add(0x4646_4646_4646_4646);
    let b = w.wrapping_sub(0x3030_3030_3030_3030);
    (a | b) & 0x8080_8080_8080_8080 == 0
}

/// The value of eight ASCII digits (little-endian: the first digit is the low byte).
#[inline]
fn parse_eight(w: u64) -> u64 {
    let w = w.wrapping_sub(0x3030_3030_3030_3030);
    let w = (w.wrapping_mul(10)).wrapping_add(w >> 8) & 0x00ff_00ff_00ff_00ff;
    let w = (w.wrapping_mul(100)).wrapping_add(w >> 16) & 0x0000_ffff_0000_ffff;
    (w.wrapping_mul(10_000)).wrapping_add(w >> 32) & 0xffff_ffff
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    #[inline]
    fn peek(&self) -> u8 {
        self.b.get(self.i).copied().unwrap_or(0)
    }

    #[inline]
    fn ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\n' | b'\t' | b'\r') {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == c {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Reads a run of digits into `sig` (wrapping: the caller checks how many
    /// significant digits there were); returns how many there were.
    #[inline]
    fn digits(&mut self, sig: &mut u64) -> usize {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let mut v = *sig;
        while let Some(chunk) = b.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let word = u64::from_le_bytes(word);
            if !eight_digits(word) {
                break;
            }
            v = v.wrapping_mul(100_000_000).wrapping_add(parse_eight(word));
            i += 8;
        }
        while let Some(&c) = b.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        *sig = v;
        self.i = i;
        i - start
    }

    /// One JSON number, as serde_json would read it into an `f32`.
    #[inline]
    fn number(&mut self) -> Option<f32> {
        let start = self.i;
        let negative = self.peek() == b'-';
        self.i += usize::from(negative);
        let int_start = self.i;
        let mut sig = 0u64;
        let int_digits = match self.peek() {
            b'0' => {
                self.i += 1;
                if self.peek().is_ascii_digit() {
                    return None; // a leading zero: not JSON
                }
                1
            }
            b'1'..=b'9' => self.digits(&mut sig),
            _ => return None,
        };
        let mut frac = 0;
        if self.eat(b'.') {
            frac = self.digits(&mut sig);
            if frac == 0 {
                return None;
            }
        }
        if matches!(self.peek(), b'e' | b'E') || frac >= POW10.len() {
            return self.by_serde(start);
        }
        if int_digits + frac > MAX_DIGITS {
            // Leading zeros do not count (`0.000123…`); more significant digits than a
            // u64 surely holds go to serde_json.
            let text = &self.b[int_start..self.i];
            let zeros = text.iter().take_while(|&&c| c == b'0' || c == b'.').filter(|&&c| c == b'0').count();
            if int_digits + frac - zeros > MAX_DIGITS {
                return self.by_serde(start);
            }
        }
        if frac == 0 {
            // serde_json: a u64, or an i64, or (for `-0` and below i64::MIN) an f64.
            return Some(if !negative {
                sig as f32
            } else {
                let neg = (sig as i64).wrapping_neg();
                if neg >= 0 { -(sig as f64) as f32 } else { neg as f32 }
            });
        }
        let f = sig as f64 / POW10[frac];
        Some(if negative { -f } else { f } as f32)
    }

    /// The number starting at `start`, read by serde_json.
    #[cold]
    fn by_serde(&mut self, start: usize) -> Option<f32> {
        while matches!(self.peek(), b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
            self.i += 1;
        }
        serde_json::from_slice::<f32>(&self.b[start..self.i]).ok()
    }

    /// `[n, …]` into `out` (cleared first).
    fn array(&mut self, out: &mut Vec<f32>) -> Option<()> {
        out.clear();
        if !self.eat(b'[') {
            return None;
        }
        self.ws();
        if self.eat(b']') {
            return Some(());
        }
        loop {
            self.ws();
            out.push(self.number()?);
            self.ws();
            match self.peek() {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `[…]` of items read by `item`, each followed by `,` or `]`.
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        if !self.eat(b'[') {
            return None;
        }
        let mut out = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Some(out);
        }
        loop {
            self.ws();
            out.push(item(self)?);
            self.ws();
            match self.peek() {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }

    /// `null` (then `None`), or a value read by `value`.
    fn nullable<T>(&mut self, value: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            Some(None)
        } else {
            value(self).map(Some)
        }
    }

    /// Rows of numbers or `null`s.
    fn rows(&mut self) -> Option<Vec<Option<Vec<f32>>>> {
        let mut width = 0;
        self.list(|c| {
            c.nullable(|c| {
                let mut row = Vec::with_capacity(width);
                c.array(&mut row)?;
                width = width.max(row.len());
                Some(row)
            })
        })
    }

    /// A string (a JSON string token, nothing else).
    fn string(&mut self) -> Option<String> {
        if self.peek() != b'"' {
            return None;
        }
        let start = self.i;
        let mut j = start + 1;
        let mut plain = true;
        loop {
            match *self.b.get(j)? {
                b'"' => break,
                b'\\' => {
                    plain = false;
                    j += 2;
                }
                c => {
                    if c < 0x20 {
                        return None; // serde_json refuses control characters
                    }
                    j += 1;
                }
            }
        }
        self.i = j + 1;
        if plain {
            std::str::from_utf8(&self.b[start + 1..j]).ok().map(str::to_owned)
        } else {
            serde_json::from_slice(&self.b[start..self.i]).ok()
        }
    }

    /// Skips any value, returning its text (not validated).
    fn skip(&mut self) -> Option<&[u8]> {
        let start = self.i;
        match self.peek() {
            b'"' => {
                let mut j = start + 1;
                loop {
                    match *self.b.get(j)? {
                        b'"' => break,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                }
                self.i = j + 1;
            }
            b'[' | b'{' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i)? {
                        b'"' => {
                            self.skip()?;
                            continue;
                        }
                        b'[' | b'{' => {
                            depth += 1;
                            if depth > MAX_SKIPPED_DEPTH {
                                return None;
                            }
                        }
                        b']' | b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(self.peek(), b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r' | 0) {
                    self.i += 1;
                }
            }
        }
        Some(&self.b[start..self.i])
    }

    /// A value read by serde_json from its text (small values only).
    fn by_serde_value<T: serde::de::DeserializeOwned>(&mut self) -> Option<T> {
        serde_json::from_slice(self.skip()?).ok()
    }

    /// `{…}`: calls `field` with each key, the cursor on its value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &str) -> Option<()>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        self.ws();
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return None;
            }
            self.ws();
            field(self, &key)?;
            self.ws();
            match self.peek() {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn end(&mut self) -> Option<()> {
        self.ws();
        (self.i == self.b.len()).then_some(())
    }
}

/// Nesting depth up to which an unknown value is skipped here (serde_json
/// refuses 128 levels in all; deeper values go to the generic reader).
const MAX_SKIPPED_DEPTH: usize = 64;

/// Sets `slot` once: a second time (a duplicate key) is `None`.
fn once<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

/// The params of `score` (see [`ScoreParams`]).
fn score_params(c: &mut Cursor<'_>) -> Option<ScoreParams> {
    let mut context_embedding = None;
    let mut candidate_ids = None;
    let mut candidate_embeddings = None;
    let mut candidate_texts = None;
    let mut candidate_features = None;
    let mut project_slot = None;
    let mut context_text = None;
    c.object(|c, key| match key {
        "context_embedding" => once(
            &mut context_embedding,
            c.nullable(|c| {
                let mut v = Vec::new();
                c.array(&mut v).map(|()| v)
            }),
        ),
        "candidate_ids" => once(&mut candidate_ids, c.list(Cursor::string)),
        "candidate_embeddings" => once(&mut candidate_embeddings, c.nullable(Cursor::rows)),
        "candidate_texts" => once(&mut candidate_texts, c.nullable(|c| c.list(|c| c.nullable(Cursor::string)))),
        "candidate_features" => once(&mut candidate_features, c.nullable(Cursor::rows)),
        "project_slot" => once(&mut project_slot, c.by_serde_value::<Option<u64>>()),
        "context_text" => once(&mut context_text, c.nullable(Cursor::string)),
        _ => c.by_serde_value::<IgnoredAny>().map(drop),
    })?;
    Some(ScoreParams {
        context_embedding: context_embedding.flatten(),
        candidate_ids: candidate_ids?,
        candidate_embeddings: candidate_embeddings.flatten(),
        candidate_texts: candidate_texts.flatten(),
        candidate_features: candidate_features.flatten(),
        project_slot: project_slot.flatten(),
        context_text: context_text.flatten(),
    })
}

/// A `score` request (or notification) line, or `None` for the generic
/// reader (see the module documentation).
pub fn read(line: &[u8]) -> Option<Message<Request>> {
    let mut c = Cursor { b: line, i: 0 };
    let mut jsonrpc = None;
    let mut id = None;
    let mut method: Option<String> = None;
    let mut params = None;
    c.ws();
    c.object(|c, key| match key {
        "jsonrpc" => once(&mut jsonrpc, c.string()),
        "id" => once(&mut id, c.skip().and_then(|raw| Id::from_raw(raw).ok())),
        "method" => {
            once(&mut method, c.string())?;
            (method.as_deref() == Some("score")).then_some(())
        }
        "params" => {
            method.as_ref()?;
            once(&mut params, score_params(c))
        }
        _ => c.by_serde_value::<IgnoredAny>().map(drop),
    })?;
    c.end()?;
    if jsonrpc.as_deref() != Some("2.0") {
        return None;
    }
    let (method, params) = (method?, Request::Score(params?));
    Some(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

/// The JSON array of numbers `text`, or `None` if it is anything else (or a
/// number serde_json would refuse).
pub fn f32_array(text: &[u8]) -> Option<Vec<f32>> {
    let mut c = Cursor { b: text, i: 0 };
    c.ws();
    let mut out = Vec::new();
    c.array(&mut out)?;
    c.end()?;
    Some(out)
}

/// The JSON array `text` whose items are `null` or arrays of numbers, or
/// `None` if it is anything else.
pub fn f32_rows(text: &[u8]) -> Option<Vec<Option<Vec<f32>>>> {
    let mut c = Cursor { b: text, i: 0 };
    c.ws();
    let rows = c.rows()?;
    c.end()?;
    Some(rows)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn serde_array(text: &str) -> Option<Vec<f32>> {
        serde_json::from_str(text).ok()
    }

    fn same(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// Every text is read as serde_json reads it: same bits, or refused by both.
    fn check(text: &str) {
        let fast = f32_array(text.as_bytes());
        let slow = serde_array(text);
        match (&fast, &slow) {
            (Some(f), Some(s)) => assert!(same(f, s), "{text}: {f:?} vs {s:?}"),
            (None, None) => {}
            (None, Some(s)) => panic!("{text}: declined, serde_json reads {s:?}"),
            (Some(f), None) => panic!("{text}: accepted as {f:?}, serde_json refuses it"),
        }
    }

    #[test]
    fn edge_cases_match_serde_json() {
        for t in [
            "[]",
            " [ ] ",
            "[0]",
            "[-0]",
            "[-0.0]",
            "[0.0]",
            "[1]",
            "[-1]",
            "[1.5, -2.25 ,3]",
            "[0.1,0.2,0.30000000000000004]",
            "[-0.07368408888578415,0.012345678901234567]",
            "[0.00012345678901234567]",
            "[1234567890123456789]",
            "[12345678901234567890]",
            "[123456789012345678901234]",
            "[-9223372036854775808]",
            "[-9223372036854775809]",
            "[18446744073709551615]",
            "[18446744073709551616]",
            "[0.1234567890123456789012]",
            "[0.12345678901234567890123]",
            "[0.0000000000000000000001]",
            "[1e5]",
            "[1E-7, 2.5e+3]",
            "[-1.5e-45]",
            "[3.5e38]",
            "[1e400]",
            "[16777217]",
            "[9007199254740993]",
            "[1.]",
            "[.5]",
            "[01]",
            "[-]",
            "[+1]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1.5x]",
            "[null]",
            "[\"1\"]",
            "[1]]",
            "[1] x",
            "[",
            "",
            "null",
            "[1,\n\t2\r]",
        ] {
            check(t);
        }
    }

    #[test]
    fn random_values_round_trip_like_serde_json() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut texts = Vec::new();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f32::from_bits((x >> 32) as u32);
            if !v.is_finite() {
                continue;
            }
            let unit = (x & 0xffff_ffff) as f32 / 4_294_967_296.0 * 0.4 - 0.2;
            // As a JS daemon prints an f32 (shortest f64), as Rust prints it, and in exponent form.
            texts.push(format!("{}", f64::from(v)));
            texts.push(format!("{}", f64::from(unit)));
            texts.push(format!("{unit}"));
            texts.push(format!("{:e}", f64::from(unit)));
        }
        let all = format!("[{}]", texts.join(","));
        let fast = f32_array(all.as_bytes()).unwrap();
        let slow = serde_array(&all).unwrap();
        assert!(same(&fast, &slow));
    }

    #[test]
    fn rows_match_serde_json() {
        type Rows = Vec<Option<Vec<f32>>>;
        for t in [
            "[]",
            "[null]",
            "[[1,2],null,[0.5]]",
            " [ [ ] , null ] ",
            "[[1,2],nul]",
            "[[1,2],[1,]]",
            "[[1],]",
            "[[1]] x",
            "[1]",
            "[nullx]",
            "[null,[1.25,-3e2]]",
        ] {
            let fast = f32_rows(t.as_bytes());
            let slow: Option<Rows> = serde_json::from_str(t).ok();
            match (fast, slow) {
                (Some(f), Some(s)) => {
                    assert_eq!(f.len(), s.len(), "{t}");
                    for (a, b) in f.iter().zip(&s) {
                        match (a, b) {
                            (Some(a), Some(b)) => assert!(same(a, b), "{t}"),
                            (None, None) => {}
                            _ => panic!("{t}: {f:?} vs {s:?}"),
                        }
                    }
                }
                (Some(f), None) => panic!("{t}: accepted as {f:?}, serde_json refuses it"),
                (None, Some(s)) => panic!("{t}: declined, serde_json reads {s:?}"),
                (None, None) => {}
            }
        }
    }

    /// The generic reader alone (the protocol without its fast path).
    #[derive(Debug)]
    struct Generic(Request);

    impl shared::base::rpc::Params for Generic {
        fn deserialize<'de, D: serde::Deserializer<'de>>(method: &str, d: D) -> Result<Generic, D::Error> {
            <Request as shared::base::rpc::Params>::deserialize(method, d).map(Generic)
        }
        fn explain(method: &str, params: serde_json::Value) -> Result<Generic, String> {
            <Request as shared::base::rpc::Params>::explain(method, params).map(Generic)
        }
    }

    fn generic(line: &str) -> String {
        match shared::base::rpc::parse_message::<Generic>(line.as_bytes()) {
            Message::Request { id, method, params } => {
                format!("{:?}", Message::Request { id, method, params: params.0 })
            }
            Message::Notification { method, params } => {
                format!("{:?}", Message::Notification { method, params: params.0 })
            }
            Message::Invalid { id, error } => format!("{:?}", Message::<Request>::Invalid { id, error }),
        }
    }

    /// The fast reader gives the generic reader's message, or declines.
    fn agrees(line: &str) -> bool {
        match read(line.as_bytes()) {
            Some(m) => {
                assert_eq!(format!("{m:?}"), generic(line), "{line}");
                true
            }
            None => false,
        }
    }

    fn js(x: f32) -> String {
        format!("{}", f64::from(x))
    }

    #[test]
    fn score_lines_read_as_the_generic_reader_reads_them() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut unit = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 * 0.2 - 0.1
        };
        let row = |n: usize, unit: &mut dyn FnMut() -> f32| {
            format!("[{}]", (0..n).map(|_| js(unit())).collect::<Vec<_>>().join(","))
        };
        let ctx = row(8, &mut unit);
        let embs = format!("[{},null,{},[]]", row(8, &mut unit), row(8, &mut unit));
        let feats = "[[0.6931471805599453,0.5,1.0986122886681098,0.6087614290087207,-0.7933533402912352,0.4338837391175582,-0.9009688679024191,0.8660254037844386,0.5,0.4054651081081644,1,0,0,0,0,0,0],null,null,null]";
        let ids = r#"["m1","m\u00e9 2","mé3","m\"4"]"#;
        let read_as_generic = [
            format!(
                r#"{{"jsonrpc":"2.0","id":"req-7","method":"score","params":{{"agent_id":"default","context_embedding":{ctx},"candidate_ids":{ids},"candidate_embeddings":{embs},"candidate_features":{feats}}}}}"#
            ),
            format!(
                r#" {{ "id" : 7 , "method" : "score" , "jsonrpc" : "2.0" , "params" : {{ "candidate_ids" : {ids} , "candidate_texts" : ["a\nb", null, "", "\u263a"] , "context_text" : "why?", "project_slot": 3, "x": {{"y": [1, {{"z": null}}, "]"]}} }} }} "#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"score","params":{{"candidate_ids":{ids},"context_embedding":null,"candidate_embeddings":null,"candidate_texts":null,"candidate_features":null,"project_slot":null,"context_text":null}}}}"#
            ),
            r#"{"jsonrpc":"2.0","id":null,"method":"score","params":{"candidate_ids":[],"candidate_embeddings":[[1e-3,2E+2,-0,0.000001234567890123456789]]},"extra":true}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":-0,"method":"score","params":{"candidate_ids":["a\u0001\ud83d\ude00"]}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1.5e3,"method":"sc\u006fre","params":{"candidate_ids":["a"],"candidate_features":[[0.1,0.2]]}}"#.to_owned(),
        ];
        for line in &read_as_generic {
            assert!(agrees(line), "the fast reader declined {line}");
        }
        // Declined (the generic reader answers, usually with an error).
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":1,"params":{"candidate_ids":["a"]},"method":"score"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"score","params":{"candidate_ids":["a"]}}"#,
            r#"{"id":1,"method":"score","params":{"candidate_ids":["a"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"],"candidate_ids":["b"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"],"candidate_embeddings":[["x"]]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"],"candidate_embeddings":[[1,]]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"],"candidate_features":[[01]]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"],"project_slot":-1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"],"agent_id":[1,}}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"score","params":{"candidate_ids":["a"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"]}} x"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"score\",\"params\":{\"candidate_ids\":[\"a\x01\"]}}",
            r#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"]}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":["a"]}}]"#,
        ] {
            assert!(!agrees(line), "read by the fast reader: {line}");
        }
        let nested = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"score","params":{{"candidate_ids":["a"],"deep":{}1{}}}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(!agrees(&nested), "deep unknown values go to the generic reader");
        // Invalid UTF-8 in a string.
        let mut bad = br#"{"jsonrpc":"2.0","id":1,"method":"score","params":{"candidate_ids":[""#.to_vec();
        bad.extend_from_slice(&[0xff, b'"', b']', b'}', b'}']);
        assert!(read(&bad).is_none());
    }
}
