//! The SQLite projection: opening (with generations), migrations, pragmas.
//!
//! The database is a projection of the tape log: every row is derived from
//! events, and `replay` rebuilds it from the tapes alone. `engram.db` in the
//! data home is a symlink to the current generation `db/engram-<id>.db`;
//! SQLite resolves the link, so each generation has its own `-wal`/`-shm`
//! files and a rebuilt generation can be swapped in with one atomic rename
//! while other processes still hold the old one open. A long-running process
//! notices the swap with [`Store::is_replaced`] and reopens.

mod apply;
mod dump;

use std::any::{Any, TypeId};
use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension};

pub use apply::{Apply, ApplyStats, Failure, Projector, Step, cap, count, data, finite_or, first_time};
pub use dump::canonical_dump;

use crate::base::error::{Error, IoContext, Result, SqlContext};
use crate::base::text::{MemoryText, TEXT_VERSION};
use crate::storage::tape::Lsn;

/// The numbered migrations, applied in order of version. Each is a file in
/// `migrations/`; versions increase down the list (gaps are allowed).
const MIGRATIONS: &[(u32, &str, &str)] = &[
    (1, "initial", include_str!("../../../../migrations/0001_initial.sql")),
    (2, "memory_usage", include_str!("../../../../migrations/0002_memory_usage.sql")),
    (3, "memory_text", include_str!("../../../../migrations/0003_memory_text.sql")),
    (4, "context_resets", include_str!("../../../../migrations/0004_context_resets.sql")),
    (5, "vault", include_str!("../../../../migrations/0005_vault.sql")),
    (7, "env", include_str!("../../../../migrations/0007_env.sql")),
    (8, "provenance", include_str!("../../../../migrations/0008_provenance.sql")),
    (9, "knowledge", include_str!("../../../../migrations/0009_knowledge.sql")),
    (11, "session_audit", include_str!("../../../../migrations/0011_session_audit.sql")),
    (12, "provenance_v2", include_str!("../../../../migrations/0012_provenance_v2.sql")),
    (13, "score_coverage", include_str!("../../../../migrations/0013_score_coverage.sql")),
    (14, "history_replay", include_str!("../../../../migrations/0014_history_replay.sql")),
];

/// The newest schema version this build knows: the last migration's.
pub const SCHEMA_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// How a connection is tuned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tuning {
    /// Normal operation: WAL, synchronous=NORMAL.
    Live,
    /// Building a fresh generation during replay: no durability until finished.
    Bulk,
}

/// An open projection database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// The path callers asked for (usually the `engram.db` symlink).
    link: PathBuf,
    /// The file actually open.
    target: PathBuf,
    /// What higher layers keep with this connection, one value per type
    /// (the ranking's cache of the full-text index, say): see [`Store::cached`].
    caches: RefCell<HashMap<TypeId, Box<dyn Any + Send>>>,
}

/// The counter (`engram_counters`) of writes to memories' content: the apply
/// adds one in the transaction that adds, edits or forgets a memory's text
/// (and so writes `memories_fts`), which tells a reader's caches of the
/// index that it changed.
pub const MEMORY_CONTENT_WRITES: &str = "memory_content_writes";

impl Store {
    /// Opens the projection at `path`, creating a first generation (and the
    /// symlink) if none exists, and applies pending migrations. Refuses a
    /// database whose schema is newer than this build.
    pub fn open(path: &Path) -> Result<Store> {
        let target = resolve_or_create(path)?;
        let conn = Connection::open(&target).sql(&format!("open {}", target.display()))?;
        configure(&conn, Tuning::Live)?;
        migrate(&conn, &target)?;
        refresh_memory_text_or_warn(&conn);
        Ok(Store { conn, link: path.to_path_buf(), target, caches: RefCell::default() })
    }

    /// Opens a plain database file (no symlink handling) with the given tuning.
    pub fn open_file(path: &Path, tuning: Tuning) -> Result<Store> {
        let conn = Connection::open(path).sql(&format!("open {}", path.display()))?;
        configure(&conn, tuning)?;
        migrate(&conn, path)?;
        refresh_memory_text_or_warn(&conn);
        Ok(Store { conn, link: path.to_path_buf(), target: path.to_path_buf(), caches: RefCell::default() })
    }

    /// The value of type `T` kept with this connection (made with
    /// `T::default()` on first use): state a higher layer derives from what
    /// it read through this connection and keeps for as long as it is open.
    /// Panics if the value is already borrowed.
    pub fn cached<T: Default + Send + 'static>(&self) -> RefMut<'_, T> {
        RefMut::map(self.caches.borrow_mut(), |caches| {
            let value = caches.entry(TypeId::of::<T>()).or_insert_with(|| Box::new(T::default()));
            // The entry of `TypeId::of::<T>()` always holds a `T`.
            value.downcast_mut::<T>().expect("a cache holds the type it is keyed by")
        })
    }

    /// The SQLite connection, for queries.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The SQLite connection, mutably (transactions).
    pub fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The path this store was opened with.
    pub fn path(&self) -> &Path {
        &self.link
    }

    /// The database file actually open.
    pub fn file(&self) -> &Path {
        &self.target
    }

    /// Whether `engram.db` now points at another generation (a replay swapped
    /// one in); the caller should reopen.
    pub fn is_replaced(&self) -> bool {
        if self.link == self.target {
            return false;
        }
        match fs::canonicalize(&self.link) {
            Ok(now) => now != self.target,
            Err(_) => true,
        }
    }

    /// The last log position applied (0 for an empty projection).
    pub fn applied_lsn(&self) -> Result<Lsn> {
        read_applied_lsn(&self.conn)
    }

    /// The schema version recorded in the database.
    pub fn schema_version(&self) -> Result<u32> {
        self.conn.pragma_query_value(None, "user_version", |r| r.get(0)).sql("read schema version")
    }

    /// Switches a bulk-built database to live tuning (WAL) and flushes it.
    pub fn finish_bulk(&self) -> Result<()> {
        self.conn.pragma_update(None, "synchronous", "NORMAL").sql("set synchronous")?;
        let mode = enable_wal(&self.conn)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::InvalidInput(format!("could not enable WAL mode (got {mode})")));
        }
        self.conn.execute_batch("PRAGMA optimize;").sql("optimize")?;
        Ok(())
    }
}

pub(crate) fn read_applied_lsn(conn: &Connection) -> Result<Lsn> {
    let value: Option<String> = conn
        .query_row("SELECT value FROM engram_state WHERE key = 'applied_lsn'", [], |r| r.get(0))
        .optional()
        .sql("read applied position")?;
    match value {
        None => Ok(0),
        Some(v) => v.parse().map_err(|_| Error::InvalidInput(format!("engram_state.applied_lsn is not a number: {v}"))),
    }
}

fn configure(conn: &Connection, tuning: Tuning) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT).sql("set busy timeout")?;
    // The ranking pipeline and the projection use a few dozen distinct statements.
    conn.set_prepared_statement_cache_capacity(256);
    // The query planner stability guarantee: plans never depend on the values
    // bound. Without it the planner peeks at some bound values (an `x = ?`
    // term it only filters on, a bound `LIMIT`), and every rebinding, or the
    // `sqlite3_clear_bindings` of rusqlite's statement cache, then expires
    // the statement, which is compiled again on its next step: the
    // effective-score query of every ranking, and FTS5's own segment lookups
    // for every query term. Nothing here relies on such plans (no LIKE with a
    // bound pattern, no `sqlite_stat4`).
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).sql("enable QPSG")?;
    match tuning {
        Tuning::Live => {
            let mode = enable_wal(conn)?;
            if !mode.eq_ignore_ascii_case("wal") {
                tracing::warn!(mode, "database is not in WAL mode");
            }
            conn.pragma_update(None, "synchronous", "NORMAL").sql("set synchronous")?;
        }
        Tuning::Bulk => {
            conn.pragma_update(None, "journal_mode", "MEMORY").sql("set journal mode")?;
            conn.pragma_update(None, "synchronous", "OFF").sql("set synchronous")?;
        }
    }
    conn.pragma_update(None, "foreign_keys", "ON").sql("enable foreign keys")?;
    conn.pragma_update(None, "temp_store", "MEMORY").sql("set temp store")?;
    conn.pragma_update(None, "cache_size", -32_000).sql("set cache size")?;
    // Reads through a memory map: whenever another connection writes, SQLite
    // empties this connection's whole page cache at its next read, and a
    // ranking after a recorded one then reads every page again; mapped pages
    // cost a pointer instead of a read() and a copy each. The map only
    // reserves address space (the kernel's page cache backs it).
    conn.pragma_update(None, "mmap_size", MMAP_BYTES).sql("set mmap size")?;
    Ok(())
}

/// The most of a database file a connection reads through a memory map.
const MMAP_BYTES: i64 = 1 << 30;

/// How long to wait for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Switches the database to WAL mode and returns the mode it is in.
///
/// The switch needs an exclusive lock and SQLite does not call the busy
/// handler for it, so two processes opening a new database at once would
/// see "database is locked": retry until the timeout instead. WAL mode is
/// persistent, so a database another process already switched is left alone.
fn enable_wal(conn: &Connection) -> Result<String> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let attempt = conn.pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0)).and_then(|mode| {
            if mode.eq_ignore_ascii_case("wal") {
                Ok(mode)
            } else {
                conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            }
        });
        match attempt {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other.sql("set WAL mode"),
        }
    }
}

/// Applies pending migrations; a no-op when the schema is current.
fn migrate(conn: &Connection, path: &Path) -> Result<u32> {
    let version = |c: &Connection| -> Result<u32> {
        c.pragma_query_value(None, "user_version", |r| r.get(0)).sql("read schema version")
    };
    let found = version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew { path: path.to_path_buf(), found, supported: SCHEMA_VERSION });
    }
    if found == SCHEMA_VERSION && all_recorded(conn)? {
        return Ok(found);
    }
    conn.execute_batch("BEGIN IMMEDIATE").sql("begin migration")?;
    let result = (|| {
        // Another process may have migrated while we waited for the lock.
        let found = version(conn)?;
        if found > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew { path: path.to_path_buf(), found, supported: SCHEMA_VERSION });
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        )
        .sql("create schema_migrations")?;
        // Every migration not recorded yet, so one that reached the list
        // below a version already applied (branches merged out of order) runs too.
        let applied: Vec<u32> = {
            let mut stmt = conn.prepare("SELECT version FROM schema_migrations").sql("read schema_migrations")?;
            let rows = stmt.query_map([], |r| r.get(0)).sql("read schema_migrations")?;
            rows.collect::<rusqlite::Result<_>>().sql("read schema_migrations")?
        };
        for (v, name, sql) in MIGRATIONS.iter().filter(|(v, _, _)| !applied.contains(v)) {
            conn.execute_batch(sql).sql(&format!("apply migration {v:04}_{name}"))?;
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)", rusqlite::params![v, name])
                .sql("record migration")?;
            conn.pragma_update(None, "user_version", v).sql("record schema version")?;
        }
        Ok(SCHEMA_VERSION)
    })();
    match result {
        Ok(v) => {
            conn.execute_batch("COMMIT").sql("commit migration")?;
            Ok(v)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Whether every migration of this build is recorded in `schema_migrations`:
/// a store whose version is already the newest may still miss a lower one
/// (built by a branch whose migration landed before another's).
fn all_recorded(conn: &Connection) -> Result<bool> {
    let recorded: Option<i64> = conn
        .query_row(
            "SELECT COUNT(*) FROM schema_migrations WHERE version IN (SELECT value FROM json_each(?1))",
            [serde_json::to_string(&MIGRATIONS.iter().map(|m| m.0).collect::<Vec<u32>>()).unwrap_or_default()],
            |r| r.get(0),
        )
        .optional()
        .or_else(|e| match e {
            // No table yet: a store from before the table existed.
            rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.contains("no such table") => Ok(None),
            e => Err(e),
        })
        .sql("read schema_migrations")?;
    Ok(recorded == Some(MIGRATIONS.len() as i64))
}

/// [`refresh_memory_text`], logging a failure (a read-only file, a lock
/// held too long) instead of refusing the store: readers analyse what is
/// not stored, so only speed depends on it.
fn refresh_memory_text_or_warn(conn: &Connection) {
    if let Err(e) = refresh_memory_text(conn) {
        tracing::warn!(error = %e, "could not store the memories' analysed text; rankings will analyse it");
    }
}

/// Brings `memories.text_terms` to this build's [`TEXT_VERSION`]: when
/// `engram_state.text_version` says otherwise (a store migrated from schema
/// 2, or analysed by another version of the text code), every memory's text
/// is analysed again, in one transaction. A no-op once done, so it costs one
/// lookup per open.
fn refresh_memory_text(conn: &Connection) -> Result<()> {
    let current = |c: &Connection| -> Result<bool> {
        let found: Option<String> = c
            .query_row("SELECT value FROM engram_state WHERE key = 'text_version'", [], |r| r.get(0))
            .optional()
            .sql("read text_version")?;
        Ok(found.as_deref() == Some(TEXT_VERSION.to_string().as_str()))
    };
    if current(conn)? {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE").sql("begin text refresh")?;
    let result = (|| {
        if current(conn)? {
            return Ok(0);
        }
        let mut read = conn.prepare("SELECT rowid, content FROM memories").sql("prepare text refresh")?;
        let mut write =
            conn.prepare("UPDATE memories SET text_terms = ?2 WHERE rowid = ?1").sql("prepare text refresh")?;
        let mut rows = read.query([]).sql("text refresh")?;
        let mut n = 0usize;
        while let Some(row) = rows.next().sql("text refresh")? {
            let rowid: i64 = row.get(0).sql("text refresh")?;
            let content: String = row.get(1).sql("text refresh")?;
            write.execute(rusqlite::params![rowid, MemoryText::of(&content).encode()]).sql("text refresh")?;
            n += 1;
        }
        conn.execute(
            "INSERT INTO engram_state (key, value) VALUES ('text_version', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [TEXT_VERSION.to_string()],
        )
        .sql("record text_version")?;
        Ok(n)
    })();
    match result {
        Ok(n) => {
            conn.execute_batch("COMMIT").sql("commit text refresh")?;
            if n > 0 {
                tracing::info!(memories = n, version = TEXT_VERSION, "analysed the memories' text again");
            }
            Ok(())
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// A fresh, unique generation file name in `dir`.
pub(crate) fn new_generation_path(dir: &Path) -> PathBuf {
    let nonce: u32 = rand::random();
    dir.join(format!("engram-{}-{nonce:08x}.db", crate::base::time::Ts::now().millis()))
}

/// The file `link` designates, creating a first generation if nothing exists
/// and replacing a dangling link (the generation was deleted: the projection
/// will be rebuilt from the tapes by catch-up).
fn resolve_or_create(link: &Path) -> Result<PathBuf> {
    match fs::symlink_metadata(link) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(link) {
            Ok(target) => Ok(target),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(link = %link.display(), "the projection generation is missing; starting a new one");
                let target = create_generation(link)?;
                point_link(link, &target)?;
                Ok(fs::canonicalize(link).ctx("resolve", link)?)
            }
            Err(e) => Err(Error::io("resolve", link, e)),
        },
        Ok(_) => Ok(link.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let target = create_generation(link)?;
            let relative = relative_target(link, &target);
            match std::os::unix::fs::symlink(&relative, link) {
                Ok(()) => {
                    crate::base::fsutil::fsync_dir(&crate::base::fsutil::parent_dir(link)).ctx("fsync", link)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // Another process created it first: use theirs.
                    let _ = fs::remove_file(&target);
                }
                Err(e) => return Err(Error::io("create link", link, e)),
            }
            fs::canonicalize(link).ctx("resolve", link)
        }
        Err(e) => Err(Error::io("stat", link, e)),
    }
}

/// Creates an empty generation file next to `link` (in `db/`).
fn create_generation(link: &Path) -> Result<PathBuf> {
    let dir = generations_dir(link);
    fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    let target = new_generation_path(&dir);
    fs::File::create_new(&target).ctx("create", &target)?;
    Ok(target)
}

pub(crate) fn generations_dir(link: &Path) -> PathBuf {
    crate::base::fsutil::parent_dir(link).join("db")
}

fn relative_target(link: &Path, target: &Path) -> PathBuf {
    let dir = crate::base::fsutil::parent_dir(link);
    let dir = fs::canonicalize(&dir).unwrap_or(dir);
    target.strip_prefix(&dir).map(Path::to_path_buf).unwrap_or_else(|_| target.to_path_buf())
}

/// Atomically points `link` at `target` (temporary symlink, rename, fsync).
pub(crate) fn point_link(link: &Path, target: &Path) -> Result<()> {
    let tmp = crate::base::fsutil::temp_path_for(link);
    std::os::unix::fs::symlink(relative_target(link, target), &tmp).ctx("create link", &tmp)?;
    if let Err(e) = fs::rename(&tmp, link) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("replace link", link, e));
    }
    crate::base::fsutil::fsync_dir(&crate::base::fsutil::parent_dir(link)).ctx("fsync", link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_file_is_compiled_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
        let mut files: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let compiled: Vec<String> = MIGRATIONS.iter().map(|(v, n, _)| format!("{v:04}_{n}.sql")).collect();
        assert_eq!(files, compiled);
    }

    #[test]
    fn open_creates_generation_link_and_is_idempotent() {
        let home = tempfile::tempdir().unwrap();
        let link = home.path().join("engram.db");
        let a = Store::open(&link).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(a.file().starts_with(fs::canonicalize(home.path()).unwrap().join("db")));
        assert_eq!(a.schema_version().unwrap(), SCHEMA_VERSION);
        let b = Store::open(&link).unwrap();
        assert_eq!(a.file(), b.file());
        assert!(!a.is_replaced());
        // The WAL lives next to the generation, not next to the link.
        a.conn().execute("INSERT INTO engram_state VALUES ('x', 'y')", []).unwrap();
        assert!(!home.path().join("engram.db-wal").exists());
    }

    #[test]
    fn a_missing_lower_migration_is_applied_at_the_newest_version() {
        let home = tempfile::tempdir().unwrap();
        let link = home.path().join("engram.db");
        let store = Store::open(&link).unwrap();
        // As if the newest migration had been applied by a branch that did
        // not have this one yet.
        store
            .conn()
            .execute_batch(
                "DELETE FROM schema_migrations WHERE version = 3;
                 ALTER TABLE memories DROP COLUMN text_terms;",
            )
            .unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        drop(store);
        let store = Store::open(&link).unwrap();
        let has: i64 = store
            .conn()
            .query_row("SELECT COUNT(*) FROM pragma_table_info('memories') WHERE name = 'text_terms'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(has, 1);
    }

    #[test]
    fn newer_schema_is_refused_with_a_clear_message() {
        let home = tempfile::tempdir().unwrap();
        let link = home.path().join("engram.db");
        let store = Store::open(&link).unwrap();
        store.conn().pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        drop(store);
        let err = Store::open(&link).unwrap_err();
        assert!(matches!(err, Error::SchemaTooNew { .. }), "{err}");
        assert!(err.to_string().contains("upgrade engram"), "{err}");
    }

    #[test]
    fn dangling_link_starts_a_fresh_generation() {
        let home = tempfile::tempdir().unwrap();
        let link = home.path().join("engram.db");
        let store = Store::open(&link).unwrap();
        let old = store.file().to_path_buf();
        drop(store);
        fs::remove_file(&old).unwrap();
        let store = Store::open(&link).unwrap();
        assert_ne!(store.file(), old);
        assert_eq!(store.applied_lsn().unwrap(), 0);
    }

    #[test]
    fn replaced_link_is_noticed() {
        let home = tempfile::tempdir().unwrap();
        let link = home.path().join("engram.db");
        let store = Store::open(&link).unwrap();
        let other = create_generation(&link).unwrap();
        point_link(&link, &other).unwrap();
        assert!(store.is_replaced());
    }
}
