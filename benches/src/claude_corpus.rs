//! The provenance benchmark's corpus: copies of the three Claude Code
//! transcripts `../shared/fixtures/claude/ccv-*.jsonl` (about 0.93 MB a
//! copy), every UUID in a copy replaced by another derived from the copy
//! number and the original, so that the same original maps to the same new
//! UUID everywhere in one copy (sessions, records, parents, tool calls) and
//! the copies are distinct sessions. 108 copies are 324 files, 100 MB.
//!
//! Copy `k` goes to `<out>/claude/projects/-path-to-Demo-c<k>/<session>.jsonl`
//! (the session id is the file's first `sessionId`, as Claude Code names
//! its files), so both Engram's Claude root and a tool given the folder
//! find them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What [`build`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Corpus {
    /// The Claude projects folder (`<out>/claude/projects`).
    pub root: PathBuf,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Bytes written.
    pub bytes: u64,
}

/// The fixture files the corpus copies, in a fixed order.
pub fn sources(fixtures: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures.join("claude"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("ccv-") && n.ends_with(".jsonl"))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Writes `copies` copies of the ccv fixtures under `out` (see the module docs).
pub fn build(fixtures: &Path, out: &Path, copies: usize) -> std::io::Result<Corpus> {
    let root = out.join("claude/projects");
    let mut corpus = Corpus { root: root.clone(), ..Corpus::default() };
    let originals: Vec<(PathBuf, Vec<u8>)> =
        sources(fixtures)?.into_iter().map(|p| std::fs::read(&p).map(|b| (p, b))).collect::<Result<_, _>>()?;
    for k in 0..copies {
        let dir = root.join(format!("-path-to-Demo-c{k}"));
        std::fs::create_dir_all(&dir)?;
        let mut map = HashMap::new();
        for (path, bytes) in &originals {
            let fresh = replace_uuids(bytes, k, &mut map);
            let name = first_session_id(&fresh).map_or_else(
                || format!("{}-c{k}.jsonl", path.file_stem().and_then(|s| s.to_str()).unwrap_or("x")),
                |s| format!("{s}.jsonl"),
            );
            let dest = dir.join(name);
            std::fs::write(&dest, &fresh)?;
            corpus.bytes += fresh.len() as u64;
            corpus.files.push(dest);
        }
    }
    Ok(corpus)
}

/// `bytes` with every UUID (8-4-4-4-12 hexadecimal digits) replaced by
/// [`fresh_uuid`]`(copy, original)`, remembered in `map` for the copy.
pub fn replace_uuids(bytes: &[u8], copy: usize, map: &mut HashMap<[u8; 36], [u8; 36]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if i + 36 <= bytes.len()
            && is_uuid(&bytes[i..i + 36])
            && (i == 0 || !bytes[i - 1].is_ascii_hexdigit())
            && bytes.get(i + 36).is_none_or(|c| !c.is_ascii_hexdigit())
        {
            let mut key = [0u8; 36];
            key.copy_from_slice(&bytes[i..i + 36]);
            let new = map.entry(key).or_insert_with(|| fresh_uuid(copy, &key));
            out.extend_from_slice(new);
            i += 36;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn is_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// A UUID derived from the copy number and the original (lower-case hex).
pub fn fresh_uuid(copy: usize, original: &[u8; 36]) -> [u8; 36] {
    let mut h = blake3::Hasher::new();
    h.update(&(copy as u64).to_le_bytes());
    h.update(original);
    let hex = h.finalize().to_hex();
    let hex = hex.as_bytes();
    let mut out = [b'-'; 36];
    let mut j = 0;
    for (i, slot) in out.iter_mut().enumerate() {
        if !matches!(i, 8 | 13 | 18 | 23) {
            *slot = hex[j];
            j += 1;
        }
    }
    out
}

/// The first `sessionId` of a transcript.
pub fn first_session_id(bytes: &[u8]) -> Option<String> {
    let needle = b"\"sessionId\":\"";
    let at = bytes.windows(needle.len()).position(|w| w == needle)? + needle.len();
    let id = bytes.get(at..at + 36)?;
    is_uuid(id).then(|| String::from_utf8_lossy(id).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_replaced_consistently_within_a_copy_and_differ_across_copies() {
        let text = b"{\"sessionId\":\"fe5e1c67-53e7-4862-81ae-d0e013e3270b\",\"p\":\"fe5e1c67-53e7-4862-81ae-d0e013e3270b\",\"x\":\"not-a-uuid\"}";
        let mut m0 = HashMap::new();
        let a = replace_uuids(text, 0, &mut m0);
        let s = String::from_utf8(a.clone()).unwrap();
        assert!(!s.contains("fe5e1c67"), "{s}");
        let first = &s[14..50];
        assert_eq!(s.matches(first).count(), 2, "{s}");
        assert!(s.contains("not-a-uuid"));
        let b = replace_uuids(text, 1, &mut HashMap::new());
        assert_ne!(a, b);
        assert_eq!(first_session_id(&a).as_deref(), Some(first));
    }
}
