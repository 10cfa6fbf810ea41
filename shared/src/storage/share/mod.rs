//! Team sharing through git: every data home mirrors its sealed tape segments
//! into a folder of its own in a shared directory (a repository's `.engram/`),
//! and imports the events of the other folders into its own log.
//!
//! Layout of a shared directory:
//!
//! ```text
//! .engram/
//!   .gitattributes          tapes/** binary (git never diffs or merges a segment)
//!   tapes/<home id>/        one folder per data home: its sealed segments,
//!     0000000001-<blake3>.seg   named by sequence and content, as in the home
//! ```
//!
//! Why it merges: a home writes only its own folder (named by its home id,
//! random, so two homes never share one), and a segment's name holds the
//! blake3 of its bytes, so two branches never hold different files under
//! one path: `git merge` of any two branches is the union of their folders,
//! without conflicts. Each folder is a whole log (LSNs from 1 without a gap),
//! so [`verify`] finds a missing, extra or damaged segment in any of them.
//!
//! Import appends the other folders' events to the local log as they are
//! (their ids, times and sessions unchanged), skipping every event the
//! projection already holds: importing twice adds nothing, and the local
//! log, which [`crate::storage::journal::replay`] rebuilds from, covers the imported
//! events. Memory and event ids are random (80 bits), so they stay unique
//! across homes. Every appended event passes the journal's checks
//! (redaction, forgotten texts).
//!
//! A shared directory is written by others: nothing in it is followed out of
//! it. A folder, or an entry in one, that is a symbolic link, a file with
//! more than one hard link (it shares its bytes with a file elsewhere, such
//! as another data home's segment) or a path that resolves outside its
//! folder is refused by name ([`confined`]), and nothing of that folder is
//! read, verified, imported or written.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil;
use crate::base::paths::Paths;
use crate::storage::event::Event;
use crate::storage::journal::{self, Journal};
use crate::storage::tape::{self, Lsn, Problem, TapeLog, TapeOptions};

/// The shared directory's name in a repository.
pub const REPO_DIR: &str = ".engram";
/// The folder of the per-home tape folders in a shared directory.
pub const TAPES: &str = "tapes";
/// The file in the data home holding its id.
const HOME_ID: &str = "home-id";
/// What the shared directory's `.gitattributes` says.
const GITATTRIBUTES: &str = "# Engram tape segments: binary, content-addressed, never merged.\ntapes/** binary\n";
/// Events appended per journal batch on import.
const BATCH: usize = 2048;

/// This data home's id: the name of its folder in a shared directory.
/// Created on first use (`<user>-<16 hex digits>`, random) and kept in the
/// data home.
pub fn home_id(paths: &Paths) -> Result<String> {
    let file = paths.home().join(HOME_ID);
    for _ in 0..50 {
        match fs::read_to_string(&file) {
            Ok(text) if valid_id(text.trim()) => return Ok(text.trim().to_owned()),
            Ok(text) if text.is_empty() => {} // another process is writing it
            Ok(text) => {
                return Err(Error::InvalidInput(format!(
                    "{} holds {:?}, not a home id (letters, digits, '.', '_', '-')",
                    file.display(),
                    text.trim()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(paths.home()).ctx("create directory", paths.home())?;
                match fs::OpenOptions::new().write(true).create_new(true).open(&file) {
                    Ok(mut f) => {
                        let id = new_id();
                        f.write_all(format!("{id}\n").as_bytes()).ctx("write", &file)?;
                        f.sync_all().ctx("sync", &file)?;
                        fsutil::fsync_dir(paths.home()).ctx("sync", paths.home())?;
                        return Ok(id);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(Error::io("create", &file, e)),
                }
            }
            Err(e) => return Err(Error::io("read", &file, e)),
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Err(Error::InvalidInput(format!("{} stays empty", file.display())))
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn new_id() -> String {
    let user: String = std::env::var("USER")
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(32)
        .collect();
    let user = if user.is_empty() || user.starts_with('-') { "home".to_owned() } else { user };
    use rand::RngExt;
    format!("{user}-{:016x}", rand::rng().random::<u64>())
}

/// The shared directory `dir` names: its `.engram/` when it has one or is a
/// git repository (`.git` in it), else `dir` itself.
pub fn shared_root(dir: &Path) -> PathBuf {
    let repo = dir.join(REPO_DIR);
    if repo.is_dir() || dir.join(".git").exists() { repo } else { dir.to_path_buf() }
}

/// What [`export`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// This home's folder in the shared directory.
    pub folder: PathBuf,
    /// Sealed segments the folder now holds (all of this home's).
    pub segments: usize,
    /// Segments copied now.
    pub copied: usize,
    /// Segments this home no longer has (compaction replaced them), removed.
    pub removed: usize,
}

/// Seals the active segment and mirrors every sealed segment of the local
/// log into `<shared>/tapes/<home id>/`: new ones copied (whole or absent),
/// ones the home no longer has removed. Nothing outside that folder is
/// changed, except a missing `.gitattributes`, which is written.
pub fn export(journal: &mut Journal, dir: &Path) -> Result<ExportReport> {
    let root = shared_root(dir);
    let id = home_id(journal.paths())?;
    let folder = root.join(TAPES).join(&id);
    // Never written through a link: it would copy this home's tapes, and
    // remove files, wherever the link points.
    for outer in [&root, &root.join(TAPES), &folder] {
        if fs::symlink_metadata(outer).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::InvalidInput(format!(
                "{} is a symbolic link: refusing to export through it (remove it from the shared directory)",
                outer.display()
            )));
        }
    }
    fs::create_dir_all(&folder).ctx("create directory", &folder)?;
    if let Some(p) = confined(&folder)?.first() {
        return Err(Error::InvalidInput(format!(
            "{}: {}; refusing to export into this folder",
            p.file.display(),
            p.what
        )));
    }
    let attributes = root.join(".gitattributes");
    if !attributes.exists() {
        fsutil::atomic_write(&attributes, GITATTRIBUTES.as_bytes()).ctx("write", &attributes)?;
    }
    journal.seal()?;
    let local = journal.paths().tapes();
    let names: Vec<String> = journal.tape().segments()?.into_iter().filter(|s| s.sealed).map(|s| s.name).collect();
    let mut report = ExportReport { folder: folder.clone(), segments: names.len(), ..Default::default() };
    for name in &names {
        let to = folder.join(name);
        if to.exists() {
            continue;
        }
        let from = local.join(name);
        let bytes = fs::read(&from).ctx("read", &from)?;
        fsutil::atomic_write(&to, &bytes).ctx("write", &to)?;
        report.copied += 1;
    }
    for (_, path) in tape::sealed_files(&folder)? {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !names.contains(&name) {
            fs::remove_file(&path).ctx("remove", &path)?;
            report.removed += 1;
        }
    }
    fsutil::fsync_dir(&folder).ctx("sync", &folder)?;
    Ok(report)
}

/// The folders an import of `dir` reads: each home folder of a shared
/// directory except this home's own, or `dir` itself when it is a folder of
/// segments (a tape directory copied from another data home).
pub fn sources(paths: &Paths, dir: &Path) -> Result<Vec<PathBuf>> {
    let root = shared_root(dir);
    let tapes = root.join(TAPES);
    // A data home holds its log right in `tapes/`: that is one folder.
    for outer in [&root, &tapes] {
        if fs::symlink_metadata(outer).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::InvalidInput(format!(
                "{} is a symbolic link: a shared directory's folders must be its own, nothing was read",
                outer.display()
            )));
        }
    }
    let root = if tapes.is_dir() && is_log(&tapes)? { tapes.clone() } else { root };
    if tapes.is_dir() && root != tapes {
        let own = home_id(paths)?;
        let mut out = Vec::new();
        for entry in fs::read_dir(&tapes).ctx("list", &tapes)? {
            let entry = entry.ctx("list", &tapes)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // Not followed: a link is listed so that it is refused by name.
            let kind = entry.file_type().ctx("inspect", &entry.path())?;
            if (kind.is_dir() || kind.is_symlink()) && valid_id(&name) && name != own && name != tape::QUARANTINE {
                out.push(entry.path());
            }
        }
        out.sort();
        return Ok(out);
    }
    if root.is_dir() && is_log(&root)? {
        if same_dir(&root, &paths.tapes()) {
            return Err(Error::InvalidInput(format!("{} is this data home's own tape log", root.display())));
        }
        return Ok(vec![root]);
    }
    Err(Error::InvalidInput(format!(
        "{} holds no shared tapes: neither {REPO_DIR}/{TAPES}/<home>/ nor {TAPES}/<home>/ nor tape segments",
        dir.display()
    )))
}

/// Whether `dir` holds segments itself (a tape log, not a shared directory).
fn is_log(dir: &Path) -> Result<bool> {
    Ok(has_active(dir)? || !tape::sealed_files(dir)?.is_empty())
}

fn has_active(dir: &Path) -> Result<bool> {
    for entry in fs::read_dir(dir).ctx("list", dir)? {
        let entry = entry.ctx("list", dir)?;
        if entry.file_name().to_str().and_then(tape::parse_active_name).is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    matches!((fs::canonicalize(a), fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// The problems that make `folder` not its own: the folder itself, or an
/// entry in it, is a symbolic link, a file with more than one hard link, or
/// something whose real path lies outside the folder. Each names the entry.
/// Nothing is followed or opened. Empty when the folder may be read.
pub fn confined(folder: &Path) -> Result<Vec<Problem>> {
    let problem = |file: &Path, what: String| Problem { file: file.to_path_buf(), offset: 0, what };
    let meta = fs::symlink_metadata(folder).ctx("inspect", folder)?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(folder).map(|t| t.display().to_string()).unwrap_or_default();
        return Ok(vec![problem(
            folder,
            format!(
                "a symbolic link (to {target:?}), not a folder of the shared directory: refused, nothing in it is \
                 imported"
            ),
        )]);
    }
    if !meta.is_dir() {
        return Ok(vec![problem(folder, "not a folder: refused".into())]);
    }
    // The folder's real path must be where it is listed (no link above it).
    let real = fs::canonicalize(folder).ctx("resolve", folder)?;
    let listed = match (folder.parent().map(fs::canonicalize), folder.file_name()) {
        (Some(Ok(parent)), Some(name)) => parent.join(name),
        _ => real.clone(),
    };
    if real != listed {
        return Ok(vec![problem(
            folder,
            format!("resolves to {}, outside the shared directory: refused, nothing in it is imported", real.display()),
        )]);
    }
    let mut out = Vec::new();
    let mut entries: Vec<fs::DirEntry> =
        fs::read_dir(folder).ctx("list", folder)?.collect::<std::io::Result<_>>().ctx("list", folder)?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).ctx("inspect", &path)?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_default();
            out.push(problem(
                &path,
                format!("a symbolic link (to {target:?}): refused, nothing of {} is imported", folder.display()),
            ));
        } else if kind.is_file() {
            use std::os::unix::fs::MetadataExt;
            if meta.nlink() > 1 {
                out.push(problem(
                    &path,
                    format!(
                        "a file with {} hard links (its bytes are shared with a file elsewhere): refused, nothing of \
                         {} is imported",
                        meta.nlink(),
                        folder.display()
                    ),
                ));
            }
        } else if kind.is_dir() {
            // A copied data home's quarantine holds bytes that are never read.
            if entry.file_name() != tape::QUARANTINE {
                out.push(problem(
                    &path,
                    format!("an unexpected folder: refused, nothing of {} is imported", folder.display()),
                ));
            }
        } else {
            out.push(problem(
                &path,
                format!("neither a file nor a folder: refused, nothing of {} is imported", folder.display()),
            ));
        }
    }
    Ok(out)
}

/// What [`import`] did with one folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FolderReport {
    /// The folder.
    pub folder: PathBuf,
    /// Segments read.
    pub segments: usize,
    /// Events read.
    pub events: u64,
    /// Events appended to the local log.
    pub added: u64,
    /// Events the projection already held (imported before, or this home's own).
    pub known: u64,
    /// Memory writes left out because this home forgot their text.
    pub forgotten: u64,
    /// Damage found: a folder with any is not imported.
    pub problems: Vec<Problem>,
}

/// Verifies every folder an import of `dir` would read (see [`sources`]).
pub fn verify(paths: &Paths, dir: &Path) -> Result<Vec<FolderReport>> {
    sources(paths, dir)?
        .into_iter()
        .map(|folder| {
            let report = verify_folder(&folder)?;
            Ok(FolderReport {
                segments: report.segments as usize,
                events: report.frames,
                problems: report.problems,
                folder,
                ..Default::default()
            })
        })
        .collect()
}

/// Checks that `folder` and every entry in it are its own (see [`confined`]),
/// then verifies its segments. A folder that is not confined is reported with
/// those problems alone: nothing in it is opened.
fn verify_folder(folder: &Path) -> Result<tape::VerifyReport> {
    let problems = confined(folder)?;
    if !problems.is_empty() {
        return Ok(tape::VerifyReport { problems, ..tape::VerifyReport::default() });
    }
    if has_active(folder)? {
        TapeLog::open(folder, TapeOptions::default())?.verify()
    } else {
        tape::verify_sealed_folder(folder)
    }
}

/// Imports every folder of `dir` (see [`sources`]) into the journal's log:
/// each folder is verified whole first and skipped, with its problems
/// reported, when damaged; its events are appended in its order, leaving
/// out those the projection already holds. Idempotent.
pub fn import(journal: &mut Journal, dir: &Path) -> Result<Vec<FolderReport>> {
    let mut reports = Vec::new();
    for folder in sources(journal.paths(), dir)? {
        let verified = verify_folder(&folder)?;
        let mut report = FolderReport { folder: folder.clone(), ..Default::default() };
        if !verified.problems.is_empty() {
            report.problems = verified.problems;
            reports.push(report);
            continue;
        }
        let mut pending: Vec<Event> = Vec::with_capacity(BATCH);
        let mut each = |lsn: Lsn, payload: &[u8], report: &mut FolderReport| -> Result<()> {
            report.events += 1;
            pending.push(journal::decode(lsn, payload));
            if pending.len() >= BATCH {
                add(journal, &mut pending, report)?;
            }
            Ok(())
        };
        if has_active(&folder)? {
            let log = TapeLog::open(&folder, TapeOptions::default())?;
            let snapshot = log.snapshot()?;
            report.segments = snapshot.segments()?.len();
            for frame in snapshot.frames_after(0) {
                let frame = frame?;
                each(frame.lsn, &frame.payload, &mut report)?;
            }
        } else {
            for (_, path) in tape::sealed_files(&folder)? {
                report.segments += 1;
                for (lsn, payload) in tape::read_sealed_segment(&path)? {
                    each(lsn, &payload, &mut report)?;
                }
            }
        }
        add(journal, &mut pending, &mut report)?;
        reports.push(report);
    }
    Ok(reports)
}

/// Appends the events of `pending` the projection does not hold yet, under
/// the tape lock (so no other writer adds one in between).
fn add(journal: &mut Journal, pending: &mut Vec<Event>, report: &mut FolderReport) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let mut locked = journal.locked()?;
    let known = locked.store().known_event_ids(pending.iter().map(|e| e.id.as_str()))?;
    let mut seen = std::collections::HashSet::new();
    let before = pending.len();
    let fresh: Vec<Event> =
        pending.drain(..).filter(|e| !known.contains(e.id.as_str()) && seen.insert(e.id.clone())).collect();
    report.known += (before - fresh.len()) as u64;
    let receipt = locked.append(&fresh)?;
    report.added += fresh.len() as u64 - receipt.forgotten;
    report.forgotten += receipt.forgotten;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_names() {
        assert!(valid_id("alice-0123456789abcdef"));
        assert!(!valid_id(""));
        assert!(!valid_id(".."));
        assert!(!valid_id("a/b"));
        assert!(valid_id(&new_id()));
    }
}
