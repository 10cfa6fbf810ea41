//! Skipping over JSON text without parsing it: the fast paths that look for one member of an object.
//!
//! Each function takes a byte index and returns the index just past what it
//! skipped, or `None` when the text ends first. They never judge validity:
//! callers fall back to serde whenever the shape is not the expected one.

/// Index of the first byte at or after `i` that is not JSON whitespace.
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Index just past the string that opens at `i` (which holds `"`).
pub(crate) fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// Index just past the value that starts at `i`: a string, an object or an
/// array (strings inside skipped whole, so brackets in them do not count),
/// or a scalar, which must be followed by a delimiter.
pub(crate) fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let len =
                b.get(i..)?.iter().position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            (len > 0).then_some(i + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_skipped_whole_and_unfinished_ones_are_none() {
        let t = br#"{"a": [1, {"b": "x]}"}], "c": "q\"uote", "d": -12.5e3 }"#;
        let at = |needle: &[u8]| t.windows(needle.len()).position(|w| w == needle).expect("needle");
        let arr = at(b"[1");
        assert_eq!(&t[arr..skip_value(t, arr).expect("array")], br#"[1, {"b": "x]}"}]"#);
        let s = at(br#""q"#);
        assert_eq!(&t[s..skip_value(t, s).expect("string")], br#""q\"uote""#);
        let n = at(b"-12");
        assert_eq!(&t[n..skip_value(t, n).expect("number")], b"-12.5e3");
        assert_eq!(skip_value(t, 0), Some(t.len()));
        assert_eq!(skip_ws(b"  \t\r\n x", 0), 6);
        for unfinished in [&br#""abc"#[..], br#"{"a": [1, 2"#, b"123", br#""ends in \"#] {
            assert_eq!(skip_value(unfinished, 0), None, "{}", String::from_utf8_lossy(unfinished));
        }
    }
}
