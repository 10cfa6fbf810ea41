//! The time an event payload describes, found without parsing the whole JSON.
//!
//! Segment headers and listings record the time span of their events. Parsing
//! every payload with serde to read one top-level integer costs more than the
//! rest of sealing bar compression, so [`payload_ts`] first walks the members
//! of the top-level object up to `"ts"` (events put it third, after `v` and
//! `id`), skipping earlier values without decoding them. Anything unusual (an
//! escaped key, a `ts` that is not a plain integer, a payload that is not an
//! object) falls back to serde, so the answer is serde's for every JSON object
//! with distinct keys. The scan does not validate what follows `ts`.

use serde::Deserialize;

use crate::base::json_scan::{skip_value, skip_ws};

#[derive(Deserialize)]
struct TsOnly {
    ts: i64,
}

/// The `ts` member (ms) of an event payload, if it has a readable one.
pub(crate) fn payload_ts(payload: &[u8]) -> Option<i64> {
    match scan(payload) {
        Some(ts) => Some(ts),
        None => serde_json::from_slice::<TsOnly>(payload).ok().map(|t| t.ts),
    }
}

/// The value of the top-level `"ts"` member when it is a plain integer and
/// every member before it is found without ambiguity; `None` means "ask serde".
fn scan(p: &[u8]) -> Option<i64> {
    let mut i = skip_ws(p, 0);
    if p.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(p, i);
        if p.get(i) != Some(&b'"') {
            return None;
        }
        let key_start = i + 1;
        let key_len = p.get(key_start..)?.iter().position(|&b| b == b'"' || b == b'\\')?;
        let key_end = key_start + key_len;
        if p[key_end] != b'"' {
            return None;
        }
        i = skip_ws(p, key_end + 1);
        if p.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(p, i + 1);
        if &p[key_start..key_end] == b"ts" {
            return integer(p, i);
        }
        i = skip_ws(p, skip_value(p, i)?);
        if p.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

/// A JSON integer that fits an `i64` at `i`, followed by a delimiter.
/// `None` for anything else (floats, exponents, `-0`, overflow), which serde
/// then judges.
fn integer(p: &[u8], mut i: usize) -> Option<i64> {
    let negative = p.get(i) == Some(&b'-');
    if negative {
        i += 1;
    }
    let start = i;
    let mut magnitude: u64 = 0;
    while let Some(&d) = p.get(i).filter(|b| b.is_ascii_digit()) {
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        i += 1;
    }
    let digits = i - start;
    if digits == 0 || (p[start] == b'0' && (digits > 1 || negative)) {
        return None;
    }
    if !matches!(p.get(skip_ws(p, i))?, b',' | b'}') {
        return None;
    }
    if negative {
        // -2^63 is the one magnitude that does not fit as positive.
        if magnitude > i64::MAX as u64 + 1 {
            return None;
        }
        Some((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    fn by_serde(payload: &[u8]) -> Option<i64> {
        serde_json::from_slice::<TsOnly>(payload).ok().map(|t| t.ts)
    }

    #[test]
    fn finds_ts_of_events_and_odd_shapes() {
        let cases: &[(&str, Option<i64>)] = &[
            (r#"{"v":1,"id":"x","ts":1780000000000,"writer":"w"}"#, Some(1_780_000_000_000)),
            (r#" { "ts" : -5 } "#, Some(-5)),
            (r#"{"a":{"ts":1,"b":["}",{"c":"\"ts\":2"}]},"ts":3}"#, Some(3)),
            (r#"{"a":[1,2,{"x":null}],"b":true,"c":-1.5e3,"ts":9}"#, Some(9)),
            (r#"{"ts":-9223372036854775808}"#, Some(i64::MIN)),
            (r#"{"ts":9223372036854775807}"#, Some(i64::MAX)),
            (r#"{"ts":9223372036854775808}"#, None),
            (r#"{"ts":1.5}"#, None),
            (r#"{"ts":1e3}"#, None),
            (r#"{"ts":-0}"#, None),
            (r#"{"ts":"1"}"#, None),
            (r#"{"t\u0073":4}"#, Some(4)),
            (r#"{"k\"":1,"ts":4}"#, Some(4)),
            (r#"{"a":1}"#, None),
            (r#"[1]"#, Some(1)), // serde reads a struct from an array too
            ("", None),
            (r#"{"ts":12"#, None),
        ];
        for (payload, want) in cases {
            assert_eq!(payload_ts(payload.as_bytes()), *want, "{payload}");
            assert_eq!(payload_ts(payload.as_bytes()), by_serde(payload.as_bytes()), "{payload}");
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[ -~]{0,12}|\\PC{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map("ts|[a-z\"\\\\{}]{0,4}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        /// For any object with distinct keys, the scan agrees with serde,
        /// written compactly or pretty-printed.
        #[test]
        fn agrees_with_serde(
            before in proptest::collection::vec(("[a-z\"\\\\]{0,4}", value()), 0..4),
            ts in prop_oneof![any::<i64>().prop_map(Value::from), value()],
            after in proptest::collection::vec(("[a-z]{0,4}", value()), 0..3),
            has_ts in any::<bool>(),
        ) {
            let mut object = Map::new();
            for (k, v) in before.into_iter().chain(after) {
                if k != "ts" {
                    object.insert(k, v);
                }
            }
            if has_ts {
                object.insert("ts".into(), ts);
            }
            let value = Value::Object(object);
            for bytes in [serde_json::to_vec(&value).unwrap(), serde_json::to_vec_pretty(&value).unwrap()] {
                prop_assert_eq!(payload_ts(&bytes), by_serde(&bytes), "{}", String::from_utf8_lossy(&bytes));
            }
        }
    }

    #[test]
    fn real_events_are_found_by_the_scan() {
        use crate::storage::event::{Body, Event, SessionEnded};
        let e = Event::new(
            crate::base::time::Ts(1_780_000_000_123),
            "w",
            None,
            Body::SessionEnded(SessionEnded { reason: "x".into() }),
        );
        assert_eq!(scan(&e.to_json()), Some(1_780_000_000_123));
    }
}
