//! What the scanner knows about one harness file between scans: its
//! identity, how to resume it, and fingerprints of whole-file sources.
//!
//! A JSONL file's identity is `dev:ino:n:hash`: device and inode, plus the
//! blake3 of its first `n` bytes (`n` = up to [`ID_HEAD`]). Appending never
//! changes those bytes, so a file that kept its inode and its head was only
//! appended to; anything else (a shorter file, another head, another inode)
//! is read again from the start, and derived event ids plus a check against
//! the projection keep what was already recorded from being appended twice.
//!
//! Whole-file sources (Gemini legacy JSON, OpenCode storage and database)
//! are re-parsed when their fingerprint changes: the blake3 of the file, or
//! of every stored file's name, size and modification time.

use std::fs::{File, Metadata};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use shared::base::ids::EventId;
use shared::base::time::Ts;
use shared::domain::session::queries::IngestCursor;
use shared::storage::event::Event;

use crate::error::Error;

/// Bytes of a file's head hashed into its identity.
pub const ID_HEAD: u64 = 1024;

/// A file's identity (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileIdent {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Bytes hashed.
    pub head_len: u64,
    /// blake3 (32 hex digits) of those bytes.
    pub head_hash: String,
}

impl FileIdent {
    /// The identity of an open file.
    pub fn of(file: &File, meta: &Metadata, path: &Path) -> Result<FileIdent, Error> {
        let head_len = meta.len().min(ID_HEAD);
        Ok(FileIdent { dev: meta.dev(), ino: meta.ino(), head_len, head_hash: head_hash(file, head_len, path)? })
    }

    /// As stored in a cursor.
    pub fn encode(&self) -> String {
        format!("{}:{}:{}:{}", self.dev, self.ino, self.head_len, self.head_hash)
    }

    /// Reads a stored identity.
    pub fn parse(text: &str) -> Option<FileIdent> {
        let mut parts = text.splitn(4, ':');
        let dev = parts.next()?.parse().ok()?;
        let ino = parts.next()?.parse().ok()?;
        let head_len = parts.next()?.parse().ok()?;
        let head_hash = parts.next()?.to_owned();
        Some(FileIdent { dev, ino, head_len, head_hash })
    }
}

fn head_hash(file: &File, len: u64, path: &Path) -> Result<String, Error> {
    let mut buf = vec![0u8; len as usize];
    read_exact_at(file, &mut buf, 0, path)?;
    Ok(blake3::hash(&buf).to_hex()[..32].to_owned())
}

/// Fills `buf` from `offset`; a file that shrank meanwhile is an error.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64, path: &Path) -> Result<(), Error> {
    file.read_exact_at(buf, offset).map_err(|e| Error::io(path, e))
}

/// How to continue reading a JSONL file.
#[derive(Clone, Debug, PartialEq)]
pub enum Resume {
    /// Never read: start at 0.
    Fresh,
    /// Nothing new since the cursor.
    Unchanged,
    /// Appended to: read from `offset` with the stored adapter state.
    Append {
        /// Bytes already consumed.
        offset: u64,
        /// Adapter state at that offset.
        state: serde_json::Value,
    },
    /// Not the file the cursor describes any more: read again from 0.
    Restart {
        /// Why (for logs).
        reason: &'static str,
    },
}

/// Decides how to read a file of `size` bytes modified at `mtime_ms` whose
/// identity is `now`, given its stored cursor. `head_of` hashes the current
/// file's first `n` bytes.
pub fn decide(
    cursor: Option<&IngestCursor>,
    now: &FileIdent,
    size: u64,
    mtime_ms: i64,
    head_of: impl FnOnce(u64) -> Result<String, Error>,
) -> Result<Resume, Error> {
    let Some(c) = cursor else {
        return Ok(Resume::Fresh);
    };
    let Some(was) = FileIdent::parse(&c.file_id) else {
        return Ok(Resume::Restart { reason: "the stored file identity is unreadable" });
    };
    if size < c.offset || size < was.head_len {
        return Ok(Resume::Restart { reason: "the file is shorter than what was read (truncated)" });
    }
    if (was.dev, was.ino) != (now.dev, now.ino) {
        return Ok(Resume::Restart { reason: "another file now has this path (rotated or replaced)" });
    }
    let same_head = if was.head_len == now.head_len {
        was.head_hash == now.head_hash
    } else {
        head_of(was.head_len)? == was.head_hash
    };
    if !same_head {
        return Ok(Resume::Restart { reason: "the start of the file changed (rewritten)" });
    }
    if size == c.offset {
        // Everything was read: unchanged, unless it was written to without
        // growing (an in-place rewrite of the same length).
        if size == c.size && mtime_ms != c.mtime_ms {
            return Ok(Resume::Restart { reason: "the file was modified without growing (rewritten)" });
        }
        return Ok(Resume::Unchanged);
    }
    Ok(Resume::Append { offset: c.offset, state: c.state.clone() })
}

/// Whether a file is exactly as its cursor left it after reading it to the
/// end (same device, inode, size and modification time), so that it need
/// not even be opened.
pub fn untouched(c: &IngestCursor, meta: &Metadata) -> bool {
    FileIdent::parse(&c.file_id).is_some_and(|was| (was.dev, was.ino) == (meta.dev(), meta.ino()))
        && meta.len() == c.offset
        && meta.len() == c.size
        && mtime_ms(meta) == c.mtime_ms
}

/// Hashes the start of an open file (for [`decide`]).
pub fn head_of(file: &File, path: &Path) -> impl FnOnce(u64) -> Result<String, Error> {
    move |n| head_hash(file, n, path)
}

/// Modification time in ms since the epoch (0 when unknown).
pub fn mtime_ms(meta: &Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A whole-file source's fingerprint: what changes whenever its content may
/// have changed, plus its size and newest modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// blake3 hex.
    pub hash: String,
    /// Bytes covered.
    pub size: u64,
    /// Newest modification time (ms).
    pub mtime_ms: i64,
    /// `dev:ino` of the file or directory.
    pub file_id: String,
}

/// Fingerprint of bytes read from a file.
pub fn fingerprint_bytes(bytes: &[u8], meta: &Metadata) -> Fingerprint {
    Fingerprint {
        hash: blake3::hash(bytes).to_hex().to_string(),
        size: bytes.len() as u64,
        mtime_ms: mtime_ms(meta),
        file_id: format!("{}:{}", meta.dev(), meta.ino()),
    }
}

/// Fingerprint of a directory tree (relative name, size and modification
/// time of every file) or of a database and its `-wal` file.
pub fn fingerprint_stat(paths: &[&Path], root: &Path) -> Result<Fingerprint, Error> {
    let meta = std::fs::metadata(root).map_err(|e| Error::io(root, e))?;
    let mut hasher = blake3::Hasher::new();
    let (mut size, mut newest) = (0u64, mtime_ms(&meta));
    let mut stack: Vec<std::path::PathBuf> = paths.iter().map(|p| p.to_path_buf()).collect();
    let mut files = Vec::new();
    while let Some(p) = stack.pop() {
        let m = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(&p, e)),
        };
        if m.is_dir() {
            for entry in std::fs::read_dir(&p).map_err(|e| Error::io(&p, e))? {
                stack.push(entry.map_err(|e| Error::io(&p, e))?.path());
            }
        } else {
            files.push((p, m));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, m) in files {
        let rel = p.strip_prefix(root).unwrap_or(&p);
        hasher.update(rel.as_os_str().as_encoded_bytes());
        hasher.update(&m.len().to_le_bytes());
        hasher.update(&m.mtime().to_le_bytes());
        hasher.update(&m.mtime_nsec().to_le_bytes());
        size += m.len();
        newest = newest.max(mtime_ms(&m));
    }
    Ok(Fingerprint {
        hash: hasher.finalize().to_hex().to_string(),
        size,
        mtime_ms: newest,
        file_id: format!("{}:{}", meta.dev(), meta.ino()),
    })
}

/// Gives every event an id that also depends on its content, for sources
/// whose records the harness rewrites in place under the same id (Gemini
/// re-appends a message id, OpenCode updates a part as a tool runs): a
/// changed record then yields new events that the log records, while an
/// unchanged one yields the same ids as before. The time and writer are left
/// out, so neither a clock nor an Engram upgrade re-records anything.
pub fn version_ids(events: &mut [Event]) {
    for e in events {
        let writer = std::mem::take(&mut e.writer);
        let ts = std::mem::replace(&mut e.ts, Ts(0));
        let json = e.to_json();
        e.writer = writer;
        e.ts = ts;
        let hash = blake3::hash(&json);
        e.id = EventId::derived(&[e.id.as_str(), &hash.to_hex()[..32]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::base::ids::SessionKey;
    use shared::storage::event::{Body, MsgOut};

    fn ident(dev: u64, ino: u64, len: u64, hash: &str) -> FileIdent {
        FileIdent { dev, ino, head_len: len, head_hash: hash.into() }
    }

    fn cursor(id: &FileIdent, offset: u64) -> IngestCursor {
        IngestCursor {
            path: "/x".into(),
            harness: "claude".into(),
            file_id: id.encode(),
            offset,
            size: offset,
            mtime_ms: 0,
            state: serde_json::json!({"line": 4}),
        }
    }

    #[test]
    fn identity_round_trips() {
        let id = ident(1, 2, 3, "abcd");
        assert_eq!(FileIdent::parse(&id.encode()), Some(id));
        assert_eq!(FileIdent::parse("1:2"), None);
    }

    #[test]
    fn decisions() {
        let was = ident(1, 7, 1024, "h");
        let c = cursor(&was, 5000);
        let no_head = |_| -> Result<String, Error> { panic!("not needed") };
        assert_eq!(decide(None, &was, 10, 0, no_head).unwrap(), Resume::Fresh);
        assert_eq!(decide(Some(&c), &was, 5000, 0, no_head).unwrap(), Resume::Unchanged);
        assert!(
            matches!(decide(Some(&c), &was, 5000, 9, no_head).unwrap(), Resume::Restart { .. }),
            "touched in place"
        );
        assert_eq!(
            decide(Some(&c), &was, 6000, 9, no_head).unwrap(),
            Resume::Append { offset: 5000, state: serde_json::json!({"line": 4}) }
        );
        assert!(matches!(decide(Some(&c), &was, 4000, 0, no_head).unwrap(), Resume::Restart { .. }));
        assert!(matches!(decide(Some(&c), &ident(1, 8, 1024, "h"), 6000, 0, no_head).unwrap(), Resume::Restart { .. }));
        assert!(matches!(decide(Some(&c), &ident(1, 7, 1024, "x"), 6000, 0, no_head).unwrap(), Resume::Restart { .. }));
        // A file first seen shorter than ID_HEAD: its old head is hashed again.
        let short = ident(1, 7, 10, "old");
        let c = cursor(&short, 10);
        let grown = ident(1, 7, 1024, "new");
        assert!(matches!(
            decide(Some(&c), &grown, 2000, 0, |n| {
                assert_eq!(n, 10);
                Ok("old".into())
            })
            .unwrap(),
            Resume::Append { offset: 10, .. }
        ));
        assert!(matches!(decide(Some(&c), &grown, 2000, 0, |_| Ok("other".into())).unwrap(), Resume::Restart { .. }));
    }

    #[test]
    fn versioned_ids_follow_content_not_time() {
        let ev = |text: &str, ts: i64| Event {
            v: 1,
            id: EventId("ev_base".into()),
            ts: Ts(ts),
            writer: "w".into(),
            session: Some(SessionKey::from("gemini:s")),
            body: Body::MsgOut(MsgOut { text: text.into(), ..MsgOut::default() }),
        };
        let mut a = [ev("Hello", 1), ev("Hello", 2), ev("Hello world", 1)];
        version_ids(&mut a);
        assert_eq!(a[0].id, a[1].id);
        assert_ne!(a[0].id, a[2].id);
        assert_eq!(a[0].ts, Ts(1));
        assert_eq!(a[0].writer, "w");
        assert!(a[0].id.as_str().starts_with("ev_") && a[0].id.as_str() != "ev_base");
    }

    #[test]
    fn fingerprints_change_with_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        std::fs::create_dir_all(root.join("session/p")).expect("mkdir");
        std::fs::write(root.join("session/p/a.json"), "{}").expect("write");
        let a = fingerprint_stat(&[root], root).expect("fp");
        assert_eq!(a, fingerprint_stat(&[root], root).expect("fp"));
        std::fs::write(root.join("session/p/b.json"), "{}").expect("write");
        let b = fingerprint_stat(&[root], root).expect("fp");
        assert_ne!(a.hash, b.hash);
        assert_eq!(b.size, 4);
        // A missing `-wal` next to a database is fine.
        let db = root.join("opencode.db");
        std::fs::write(&db, "x").expect("write");
        let wal = root.join("opencode.db-wal");
        assert_eq!(fingerprint_stat(&[&db, &wal], &db).expect("fp").size, 1);
    }
}
