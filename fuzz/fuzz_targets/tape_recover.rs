//! Fuzzes the tape reader and crash recovery on damaged segment files: the
//! input is split into a sealed segment and an active segment, written into
//! a fresh tape folder (on tmpfs when there is one), then every opener runs
//! on it: `verify`, the writer's lock (recovery: torn tail, quarantine), a
//! snapshot's full read, an append after recovery, and the sealed-segment
//! reader used by team sharing.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shared::storage::tape::{TapeLog, TapeOptions, active_name, read_sealed_segment, sealed_name, verify_sealed_folder};

/// The scratch folder of this process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        base.join(format!("engram-fuzz-tape-{}", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    // First byte: which files exist; next two: where the sealed part ends.
    let [mode, a, b, rest @ ..] = data else { return };
    let split = (usize::from(*a) | usize::from(*b) << 8).min(rest.len());
    let (sealed, active) = rest.split_at(split);
    let dir = scratch().join("tapes");
    let _ = std::fs::remove_dir_all(scratch());
    std::fs::create_dir_all(&dir).expect("create the scratch folder");
    let sealed_path = dir.join(sealed_name(1, &blake3::hash(sealed)));
    if mode & 1 != 0 {
        std::fs::write(&sealed_path, sealed).expect("write the sealed segment");
    }
    if mode & 2 != 0 {
        std::fs::write(dir.join(active_name(u64::from(mode >> 4) + 1)), active).expect("write the active segment");
    }

    if mode & 1 != 0 {
        let _ = read_sealed_segment(&sealed_path);
        let _ = verify_sealed_folder(&dir);
    }
    let opts = TapeOptions { segment_bytes: 1 << 10, chunk_bytes: 256, ..TapeOptions::default() };
    let Ok(log) = TapeLog::open(&dir, opts) else { return };
    let _ = log.verify();
    if let Ok(snap) = log.snapshot() {
        let _ = snap.visit_after(0, &mut |_, _| Ok(()));
        let _ = snap.verify();
    }
    if mode & 4 != 0 {
        // The writer's path: recovery, then an append and a seal.
        if let Ok(mut w) = log.lock() {
            if w.append(&[&b"{\"fuzz\":1}"[..]]).is_ok() && mode & 8 != 0 {
                let _ = w.seal();
            }
            drop(w);
            let _ = log.verify();
        }
    }
});
