//! Durable file operations: fsync of directories, atomic replacement, file locks.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Makes a directory entry change (create, rename, unlink) durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A temporary path next to `path`, unique to this process and call.
pub fn temp_path_for(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nonce: u64 = rand::random();
    path.with_file_name(format!(".{name}.{}.{nonce:016x}.tmp", std::process::id()))
}

/// Replaces `path` with `bytes` atomically: write a temporary file in the same
/// directory, fsync it, rename it over `path`, fsync the directory. A crash at
/// any point leaves either the old file or the new one, never a mix.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    fs::create_dir_all(parent_dir(path))?;
    atomic_write_in_place(path, bytes)
}

/// [`atomic_write`] into a directory that must exist already: none is created.
pub fn atomic_write_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_dir(path);
    let tmp = temp_path_for(path);
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        fsync_dir(&dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Whether a new file may replace `path`: it must not exist yet, or be a
/// regular file (not a symlink, a directory or a device) whose first bytes
/// are one of `magics` (a file of the kind about to be written). Its
/// directory may be missing (the writer creates it) but not something else.
/// `Err` says why not. Nothing is changed.
pub fn check_replaceable(path: &Path, magics: &[&[u8]]) -> Result<(), String> {
    let dir = parent_dir(path);
    if dir.exists() && !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot inspect {}: {e}", path.display())),
    };
    if meta.file_type().is_symlink() {
        return Err(format!("{} is a symbolic link; it is not replaced", path.display()));
    }
    if !meta.is_file() {
        return Err(format!("{} exists and is not a regular file; it is not replaced", path.display()));
    }
    let longest = magics.iter().map(|m| m.len()).max().unwrap_or(0);
    let mut head = vec![0u8; longest];
    let n = File::open(path)
        .and_then(|mut f| {
            use std::io::Read;
            let mut n = 0;
            while n < head.len() {
                match f.read(&mut head[n..])? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok(n)
        })
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if magics.iter().any(|m| head[..n].starts_with(m)) {
        Ok(())
    } else {
        Err(format!("{} exists and is not a file of this kind; it is not replaced", path.display()))
    }
}

/// The directory containing `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An advisory lock on a file (exclusive unless made [`FileLock::shared`]),
/// released on drop.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Blocks until the exclusive lock on `path` (created if missing) is held.
    pub fn exclusive(path: &Path) -> io::Result<FileLock> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        file.lock()?;
        Ok(FileLock { file })
    }

    /// Blocks until a shared lock on `path` (created if missing) is held:
    /// shared holders exclude only an exclusive one.
    pub fn shared(path: &Path) -> io::Result<FileLock> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        file.lock_shared()?;
        Ok(FileLock { file })
    }

    /// Takes the exclusive lock if it is free; `None` if another holder has it.
    pub fn try_exclusive(path: &Path) -> io::Result<Option<FileLock>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock { file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// The locked file (for reading or writing a small payload kept in it).
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn try_lock_sees_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let held = FileLock::exclusive(&path).unwrap();
        assert!(FileLock::try_exclusive(&path).unwrap().is_none());
        drop(held);
        assert!(FileLock::try_exclusive(&path).unwrap().is_some());
    }
}
