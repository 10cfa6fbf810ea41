//! Where the demo lives, and `engram-ingestor remove-demo`: taking out the
//! demo data an older `quickstart` mixed into the real data home.
//!
//! `quickstart` runs the demo corpus in a data home of its own
//! ([`demo_home`], `<data home>/demo-home`), so that its fictional memories
//! never reach a real session. Older versions wrote the corpus to
//! `<data home>/demo` and ingested it into the data home itself;
//! [`remove`] finds those sessions (by the demo's session ids, which depend
//! only on its scripts, or by a transcript under that folder) and forgets
//! every live memory learned only from them, one `memory.forgotten` event
//! each, so that replay agrees; the next `compact` erases their text from
//! their own events. The corpus folder itself is deleted.
//!
//! These forgets remove data, they do not judge a text: they keep no
//! fingerprint (`relearnable`), so a real lesson that happens to read like a
//! demo memory ("Don't use npm here, this repo uses pnpm.") is learned from
//! the user's own sessions as any other, and `compact` leaves it in them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::journal::Journal;

use crate::error::{EngramContext, Error};

fn sql<T>(r: rusqlite::Result<T>, what: &str) -> Result<T, Error> {
    r.map_err(|e| Error::engram(what, shared::base::error::Error::sqlite(what, e)))
}

/// The reason recorded on each memory forgotten by [`remove`].
pub const REASON: &str = "demo data (engram-ingestor remove-demo)";

/// The demo's own data home under the real one.
pub fn demo_home(paths: &Paths) -> PathBuf {
    paths.home().join("demo-home")
}

/// Where older versions wrote the demo corpus (inside the real data home).
pub fn legacy_corpus(paths: &Paths) -> PathBuf {
    paths.home().join("demo")
}

/// What [`remove`] found and did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Removal {
    /// Demo sessions found in the data home.
    pub sessions: usize,
    /// Live memories learned only from them, forgotten (or, on a dry run, to forget).
    pub memories: Vec<String>,
    /// The legacy corpus folder deleted (or, on a dry run, to delete).
    pub corpus: Option<PathBuf>,
}

/// Finds the demo data in `paths`' data home and, unless `dry_run`, forgets
/// its memories and deletes the legacy corpus folder.
pub fn remove(paths: &Paths, now: Ts, dry_run: bool) -> Result<Removal, Error> {
    let mut journal = shared::projection::open(paths, crate::adapter::WRITER).context("open the journal")?;
    let corpus = legacy_corpus(paths);
    let sessions = demo_sessions(&journal, &corpus)?;
    let memories = only_from(&journal, &sessions)?;
    let mut out = Removal { sessions: sessions.len(), memories: Vec::new(), corpus: None };
    for id in memories {
        if dry_run || crate::memories::forget_data(&mut journal, &id, Some(REASON.to_owned()), now)? {
            out.memories.push(id);
        }
    }
    if corpus.is_dir() {
        if !dry_run {
            std::fs::remove_dir_all(&corpus).map_err(|e| Error::io(&corpus, e))?;
        }
        out.corpus = Some(corpus);
    }
    Ok(out)
}

/// The keys of the sessions that are the demo's.
fn demo_sessions(journal: &Journal, corpus: &Path) -> Result<BTreeSet<String>, Error> {
    let ids: BTreeSet<String> = crate::demo::session_ids().into_iter().collect();
    let prefix = format!("{}{}", corpus.display(), std::path::MAIN_SEPARATOR);
    let mut stmt = sql(
        journal
            .store()
            .conn()
            .prepare("SELECT session_key, harness_session_id, COALESCE(source_path, '') FROM sessions"),
        "list sessions",
    )?;
    let rows = sql(
        stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))),
        "list sessions",
    )?;
    let mut out = BTreeSet::new();
    for row in rows {
        let (key, id, source) = sql(row, "list sessions")?;
        if ids.contains(&id) || source.starts_with(&prefix) {
            out.insert(key);
        }
    }
    Ok(out)
}

/// Live memories every session of which is in `sessions`.
fn only_from(journal: &Journal, sessions: &BTreeSet<String>) -> Result<Vec<String>, Error> {
    if sessions.is_empty() {
        return Ok(Vec::new());
    }
    let conn = journal.store().conn();
    let mut stmt = sql(
        conn.prepare(
            "SELECT m.id, COALESCE(m.source_session, ''),
                    (SELECT group_concat(ms.session_key, char(10)) FROM memory_sessions ms WHERE ms.memory_id = m.id)
             FROM memories m WHERE m.is_deleted = 0 ORDER BY m.id",
        ),
        "list memories",
    )?;
    let rows = sql(
        stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?))),
        "list memories",
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (id, source, linked) = sql(row, "list memories")?;
        let mut keys: Vec<&str> = linked.as_deref().map(|l| l.lines().collect()).unwrap_or_default();
        if !source.is_empty() {
            keys.push(&source);
        }
        if !keys.is_empty() && keys.iter().all(|k| sessions.contains(*k)) {
            out.push(id);
        }
    }
    Ok(out)
}
