//! Which ended sessions wait to be labelled: every ended session with served
//! rankings whose content no score covers yet (never labelled, or content
//! applied after its last labelling: a transcript ingested late), and whose
//! transcript is fully ingested, so that a session is never judged from
//! part of what happened in it.
//!
//! A score covers the session's content when it was made from at least as
//! many content events as the projection holds for the session now (the
//! count travels in the `session.scored` event, so replay decides the same).
//!
//! A transcript is fully ingested when the ingestion cursor of its file
//! (`ingest_cursors`, from `source.cursor` events) has consumed every
//! complete line of the file as it is now, or the file is unchanged since
//! the cursor read it; a transcript that no longer exists has nothing more
//! to give. A shared database source (OpenCode's, one file for every
//! session) says nothing about one session's completeness and is not checked.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use rusqlite::OptionalExtension as _;

use crate::base::error::{Result, SqlContext as _};
use crate::base::ids::SessionKey;
use crate::storage::event::harness;
use crate::storage::store::Store;

/// An ended session waiting to be labelled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The session.
    pub session_key: SessionKey,
    /// Its project.
    pub project: Option<String>,
    /// When it ended.
    pub ended_ms: i64,
    /// It was labelled before, from less of its content than the log now holds.
    pub relabel: bool,
}

/// Ended sessions with served rankings and content no score covers, in the
/// order they ended, whether or not their transcripts are fully ingested
/// (see [`ingestion_behind`]).
pub fn unlabelled(store: &Store) -> Result<Vec<Waiting>> {
    let mut stmt = store
        .conn()
        .prepare_cached(
            "SELECT s.session_key, s.project, s.ended_ms,
                    EXISTS (SELECT 1 FROM session_scores ss WHERE ss.session_key = s.session_key)
             FROM sessions s
             WHERE s.ended_ms IS NOT NULL
               AND EXISTS (SELECT 1 FROM rankings r WHERE r.session_key = s.session_key)
               AND NOT EXISTS (
                   SELECT 1 FROM session_scores ss WHERE ss.session_key = s.session_key
                     AND (ss.content_events IS NULL OR ss.content_events >=
                         (SELECT COUNT(*) FROM session_events e WHERE e.session_key = s.session_key)))
             ORDER BY s.ended_ms, s.session_key",
        )
        .sql("list sessions waiting to be labelled")?;
    stmt.query_map([], |r| {
        Ok(Waiting { session_key: SessionKey(r.get(0)?), project: r.get(1)?, ended_ms: r.get(2)?, relabel: r.get(3)? })
    })
    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
    .sql("list sessions waiting to be labelled")
}

/// [`unlabelled`] sessions whose transcripts are fully ingested: the ones to
/// label now. The others are left for a later run (logged).
pub fn ready(store: &Store) -> Result<Vec<Waiting>> {
    let mut out = Vec::new();
    for w in unlabelled(store)? {
        match ingestion_behind(store, &w.session_key)? {
            None => out.push(w),
            Some(why) => tracing::info!(session = %w.session_key, %why, "not labelled yet"),
        }
    }
    Ok(out)
}

/// Why `session`'s transcript is not fully ingested (`None` when it is, or
/// when that cannot be told: no transcript known, a shared database).
pub fn ingestion_behind(store: &Store, session: &SessionKey) -> Result<Option<String>> {
    let source: Option<Option<String>> = store
        .conn()
        .prepare_cached("SELECT source_path FROM sessions WHERE session_key = ?1")
        .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)).optional())
        .sql("read the session's transcript")?;
    let Some(path) = source.flatten().filter(|p| !p.is_empty()) else { return Ok(None) };
    let lookup = |p: &str| -> Result<Option<(String, i64)>> {
        store
            .conn()
            .prepare_cached("SELECT harness, offset FROM ingest_cursors WHERE path = ?1")
            .and_then(|mut s| s.query_row([p], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .sql("read the transcript's ingestion cursor")
    };
    let mut cursor = lookup(&path)?;
    if cursor.is_none()
        && let Ok(real) = std::fs::canonicalize(&path)
        && let Some(real) = real.to_str().filter(|r| *r != path)
    {
        cursor = lookup(real)?;
    }
    if cursor.as_ref().is_some_and(|(h, _)| h == harness::OPENCODE) {
        return Ok(None);
    }
    // The file as it is now: gone, it has nothing more to give.
    let size = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Ok(Some(format!("its transcript {path} cannot be read: {e}"))),
    };
    let offset = match cursor {
        Some((_, offset)) => u64::try_from(offset).unwrap_or(0),
        // Content read under another name than the one the session was
        // announced with: which cursor is its own cannot be told.
        None if has_content(store, session)? => return Ok(None),
        None => return Ok(Some(format!("its transcript {path} ({size} bytes) is not ingested yet"))),
    };
    if offset > size {
        return Ok(Some(format!("its transcript {path} was rewritten ({size} bytes, ingested up to byte {offset})")));
    }
    // What is left after the cursor holds no complete line (an agent
    // stopped in the middle of writing one): there is nothing more to read.
    Ok(match complete_line_after(Path::new(&path), offset, size) {
        Ok(false) => None,
        Ok(true) => Some(format!("its transcript {path} is ingested up to byte {offset} of {size}")),
        Err(e) => Some(format!("its transcript {path} cannot be read: {e}")),
    })
}

/// Whether bytes `offset..size` of the file at `path` hold a line end.
fn complete_line_after(path: &Path, offset: u64, size: u64) -> std::io::Result<bool> {
    if offset >= size {
        return Ok(false);
    }
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut rest = (&mut file).take(size - offset);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = rest.read(&mut buf)?;
        if n == 0 {
            return Ok(false);
        }
        if buf[..n].contains(&b'\n') {
            return Ok(true);
        }
    }
}

fn has_content(store: &Store, session: &SessionKey) -> Result<bool> {
    store
        .conn()
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM session_events WHERE session_key = ?1)")
        .and_then(|mut s| s.query_row([session.as_str()], |r| r.get(0)))
        .sql("look up the session's content")
}
