//! The tape log: the append-only, checksummed, crash-safe source of truth.
//!
//! Events are appended as frames to the *active* segment (`active-<seq>.tape`)
//! under an exclusive file lock (`LOCK`), and an append returns only after
//! `fdatasync`. When the active segment grows past a threshold it is *sealed*:
//! its frames are zstd-compressed in independent chunks into an immutable file
//! named by the blake3 of its bytes (`<seq>-<hash>.seg`), and a new active
//! segment starts. Every frame has a log sequence number ([`Lsn`]) that is
//! never reused. Sealing compresses the frames as they lie in the file;
//! frames the sealing writer appended while holding the lock come from its
//! memory, the others are read back and verified first.
//!
//! Crash safety: a writer that dies mid-append leaves at most a torn tail in
//! the active segment; the next holder of the lock finds it, truncates it and
//! logs it. Bad bytes followed by a valid frame are not a torn tail but
//! damage, and are refused rather than cut (the frames after them may have
//! been acknowledged). Sealing and rewriting write a complete new file (temporary name,
//! fsync, rename, directory fsync) before removing the old one, and recovery
//! resolves any leftover pair. The `LOCK` file also holds a small *hint* (the
//! last frame's position) so that the common path validates one frame instead
//! of re-reading the segment; the hint is always checked against the data.

mod format;
mod read;
mod timestamp;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub use format::{
    ACTIVE_HEADER, ActiveHeader, FRAME_HEADER, FrameRead, Lsn, MAX_PAYLOAD, SEALED_HEADER, SealedHeader, decode_frame,
    encode_frame,
};
pub use read::{Frame, FrameIter, Snapshot};
use timestamp::payload_ts;

use crate::error::{Error, ErrorClass, IoContext, Result};
use crate::fsutil::{FileLock, fsync_dir};

/// Tuning of the tape log.
#[derive(Clone, Debug)]
pub struct TapeOptions {
    /// Seal the active segment once its frames exceed this many bytes.
    pub segment_bytes: u64,
    /// Target uncompressed size of one compressed chunk: the unit a random
    /// read ([`Snapshot::frames_at`]) decompresses. 256 KiB takes ~0.2 ms to
    /// decompress; 1 MiB would compress about 2% better and 4% faster.
    pub chunk_bytes: usize,
    /// zstd level for sealed segments. Level 1 compresses the benches' session
    /// content 3.12x (level 2: 3.20x, level 3: 3.36x) at about 20% less CPU
    /// than level 3.
    pub zstd_level: i32,
    /// Seal automatically at the end of an append that crosses the threshold.
    /// Latency-sensitive writers (hooks) turn this off and leave sealing to others.
    pub auto_seal: bool,
}

impl Default for TapeOptions {
    fn default() -> Self {
        TapeOptions { segment_bytes: 4 << 20, chunk_bytes: 256 << 10, zstd_level: 1, auto_seal: true }
    }
}

/// A tape log directory.
#[derive(Debug)]
pub struct TapeLog {
    dir: PathBuf,
    opts: TapeOptions,
}

/// Description of one segment, for listings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// File name.
    pub name: String,
    /// Position in the log.
    pub seq: u64,
    /// Sealed (immutable) or active.
    pub sealed: bool,
    /// Compaction rewrites of a sealed segment.
    pub generation: u64,
    /// Size of the file.
    pub bytes: u64,
    /// Uncompressed frame bytes.
    pub raw_bytes: u64,
    /// Frames held.
    pub events: u64,
    /// First LSN (0 if empty).
    pub first_lsn: Lsn,
    /// Last LSN (0 if empty).
    pub last_lsn: Lsn,
    /// Earliest event time (ms), if any.
    pub min_ts: Option<i64>,
    /// Latest event time (ms), if any.
    pub max_ts: Option<i64>,
}

/// One problem found by [`TapeLog::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// Byte offset in the file (of the chunk, for frames inside a chunk).
    pub offset: u64,
    /// What is wrong, including the frame's offset inside its chunk where relevant.
    pub what: String,
}

/// Result of [`TapeLog::verify`].
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Segments examined.
    pub segments: u64,
    /// Frames whose checksum was verified.
    pub frames: u64,
    /// Everything wrong.
    pub problems: Vec<Problem>,
}

/// Result of [`TapeWriter::rewrite`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteStats {
    /// Segments replaced by a rewritten copy.
    pub segments_rewritten: u64,
    /// Frames whose payload changed.
    pub frames_changed: u64,
}

impl TapeLog {
    /// Opens (creating if needed) the tape directory. Takes no lock.
    pub fn open(dir: &Path, opts: TapeOptions) -> Result<TapeLog> {
        fs::create_dir_all(dir).ctx("create directory", dir)?;
        Ok(TapeLog { dir: dir.to_path_buf(), opts })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The options in force.
    pub fn options(&self) -> &TapeOptions {
        &self.opts
    }

    /// Takes the exclusive lock, recovering from any crash of a previous
    /// holder (torn tail, interrupted seal or rewrite). Blocks while another
    /// process holds it.
    pub fn lock(&self) -> Result<TapeWriter<'_>> {
        let lock_path = self.dir.join("LOCK");
        let lock = FileLock::exclusive(&lock_path).ctx("lock", &lock_path)?;
        let active = match self.fast_recover(&lock)? {
            Some(active) => active,
            None => self.slow_recover()?,
        };
        let written_from = active.end;
        let mut writer = TapeWriter {
            log: self,
            lock,
            active,
            written: Vec::new(),
            written_from,
            unresolved: false,
            auto_seal_failed: false,
            seal_buffers: SealBuffers::default(),
        };
        writer.write_hint();
        Ok(writer)
    }

    /// A consistent view of the log for reading without holding the lock.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let writer = self.lock()?;
        writer.snapshot()
    }

    /// Describes every segment, oldest first.
    pub fn segments(&self) -> Result<Vec<SegmentInfo>> {
        self.snapshot()?.segments()
    }

    /// Checks every file name, header, chunk and frame checksum and the LSN
    /// sequence; names each problem by file and offset.
    ///
    /// A log too damaged to open (a sealed segment whose header is unreadable,
    /// say) is still verified file by file, so that the report lists every
    /// problem instead of stopping at the first.
    pub fn verify(&self) -> Result<VerifyReport> {
        let refused = match self.snapshot() {
            Ok(snapshot) => return snapshot.verify(),
            Err(e) if e.class() == ErrorClass::Corrupt => e,
            Err(e) => return Err(e),
        };
        let lock_path = self.dir.join("LOCK");
        let _lock = FileLock::exclusive(&lock_path).ctx("lock", &lock_path)?;
        let listing = Listing::read(&self.dir)?;
        let sealed: Vec<PathBuf> = listing.sealed.iter().map(|(_, path)| path.clone()).collect();
        let actives: Vec<PathBuf> = listing.actives.iter().map(|&seq| self.active_path(seq)).collect();
        let mut report = read::verify_files(&sealed, &actives)?;
        if report.problems.is_empty() {
            // What stopped recovery is not visible file by file (two active segments, say).
            let (file, offset) = match &refused {
                Error::Corrupt { file, offset, .. } => (file.clone(), *offset),
                _ => (self.dir.clone(), 0),
            };
            report.problems.push(Problem { file, offset, what: refused.to_string() });
        }
        Ok(report)
    }

    fn active_path(&self, seq: u64) -> PathBuf {
        self.dir.join(format::active_name(seq))
    }

    /// Uses the hint in the lock file: validates the last frame it names and
    /// scans only what was written after it. `None` when the hint is missing or
    /// does not match the data.
    fn fast_recover(&self, lock: &FileLock) -> Result<Option<ActiveState>> {
        let Some(hint) = Hint::read(lock.file()) else {
            return Ok(None);
        };
        let path = self.active_path(hint.seq);
        let mut file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let mut head = [0u8; ACTIVE_HEADER];
        if file.read_exact(&mut head).is_err() {
            return Ok(None);
        }
        let Ok(header) = ActiveHeader::decode(&head) else {
            return Ok(None);
        };
        let len = file.metadata().ctx("stat", &path)?.len();
        if header.seq != hint.seq || hint.end < ACTIVE_HEADER as u64 || hint.end > len {
            return Ok(None);
        }
        if hint.last_frame_start == 0 {
            if hint.end != ACTIVE_HEADER as u64 || hint.last_lsn + 1 != header.first_lsn {
                return Ok(None);
            }
        } else {
            if hint.last_frame_start >= hint.end {
                return Ok(None);
            }
            let mut buf = vec![0u8; (hint.end - hint.last_frame_start) as usize];
            file.seek(SeekFrom::Start(hint.last_frame_start)).ctx("seek", &path)?;
            if file.read_exact(&mut buf).is_err() {
                return Ok(None);
            }
            match decode_frame(&buf) {
                FrameRead::Frame { lsn, size, .. } if lsn == hint.last_lsn && size == buf.len() => {}
                _ => return Ok(None),
            }
        }
        let mut active = ActiveState {
            path,
            file,
            header,
            end: hint.end,
            last_lsn: hint.last_lsn,
            last_frame_start: hint.last_frame_start,
        };
        active.scan_tail(len)?;
        Ok(Some(active))
    }

    /// Full recovery from the directory listing.
    fn slow_recover(&self) -> Result<ActiveState> {
        let listing = Listing::read(&self.dir)?;
        for tmp in &listing.temps {
            tracing::warn!(file = %tmp.display(), "removing temporary file left by an interrupted write");
            fs::remove_file(tmp).ctx("remove", tmp)?;
        }
        let sealed = listing.resolve_sealed()?;
        if listing.actives.iter().any(|&seq| sealed.iter().any(|(s, _, _)| *s == seq)) {
            // The sealed copy's name must be durable before the original goes.
            fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
        }
        let mut actives = Vec::new();
        for &seq in &listing.actives {
            if sealed.iter().any(|(s, _, _)| *s == seq) {
                let path = self.active_path(seq);
                tracing::warn!(file = %path.display(), "removing an active segment that was already sealed");
                fs::remove_file(&path).ctx("remove", &path)?;
            } else {
                actives.push(seq);
            }
        }
        fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
        let (next_seq, next_lsn) = match sealed.last() {
            Some((seq, _, header)) => (seq + 1, header.last_lsn + 1),
            None => (1, 1),
        };
        let seq = match actives.as_slice() {
            [] => {
                create_active(&self.dir, ActiveHeader { seq: next_seq, first_lsn: next_lsn })?;
                fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
                next_seq
            }
            [seq] => *seq,
            many => {
                return Err(Error::corrupt(
                    &self.dir,
                    0,
                    format!("several unsealed active segments {many:?}; expected one"),
                ));
            }
        };
        let path = self.active_path(seq);
        let mut file = OpenOptions::new().read(true).write(true).open(&path).ctx("open", &path)?;
        let mut head = [0u8; ACTIVE_HEADER];
        file.read_exact(&mut head).ctx("read header of", &path)?;
        let header = ActiveHeader::decode(&head).map_err(|why| Error::corrupt(&path, 0, why))?;
        if header.seq != seq || (!sealed.is_empty() && (header.seq != next_seq || header.first_lsn != next_lsn)) {
            return Err(Error::corrupt(
                &path,
                0,
                format!(
                    "active segment starts at seq {} lsn {}, but the sealed segments end before seq {next_seq} lsn {next_lsn}",
                    header.seq, header.first_lsn
                ),
            ));
        }
        let len = file.metadata().ctx("stat", &path)?.len();
        let mut active = ActiveState {
            path,
            file,
            header,
            end: ACTIVE_HEADER as u64,
            last_lsn: header.first_lsn - 1,
            last_frame_start: 0,
        };
        active.scan_tail(len)?;
        Ok(active)
    }
}

/// The open active segment, as known to the lock holder.
#[derive(Debug)]
struct ActiveState {
    path: PathBuf,
    file: File,
    header: ActiveHeader,
    /// Offset just past the last valid frame.
    end: u64,
    last_lsn: Lsn,
    /// Offset of the last valid frame (0 if none).
    last_frame_start: u64,
}

impl ActiveState {
    /// Validates frames between `self.end` and `len`; truncates a torn tail
    /// (bad bytes that no valid frame follows) and refuses any other damage.
    fn scan_tail(&mut self, len: u64) -> Result<()> {
        if len <= self.end {
            return Ok(());
        }
        let mut buf = Vec::with_capacity((len - self.end) as usize);
        self.file.seek(SeekFrom::Start(self.end)).ctx("seek", &self.path)?;
        (&self.file).take(len - self.end).read_to_end(&mut buf).ctx("read", &self.path)?;
        let mut pos = 0usize;
        let mut why = "";
        while pos < buf.len() {
            match decode_frame(&buf[pos..]) {
                FrameRead::Frame { lsn, size, .. } if lsn == self.last_lsn + 1 => {
                    self.last_frame_start = self.end + pos as u64;
                    self.last_lsn = lsn;
                    pos += size;
                }
                FrameRead::Frame { .. } => {
                    why = "frame out of sequence";
                    break;
                }
                FrameRead::Incomplete => {
                    why = "incomplete frame";
                    break;
                }
                FrameRead::Invalid(reason) => {
                    why = reason;
                    break;
                }
            }
        }
        self.end += pos as u64;
        if self.end < len {
            // An interrupted append leaves a prefix of its batch: nothing valid
            // follows the first bad frame. A valid frame further on means damage
            // inside frames that may have been acknowledged; cutting there would
            // lose them, so the segment is left as it is and refused.
            if let Some((at, lsn)) = later_frame(&buf[pos..], self.last_lsn + 1) {
                return Err(Error::corrupt(
                    &self.path,
                    self.end,
                    format!(
                        "{why}, but a valid frame (lsn {lsn}) follows at offset {}: the segment is damaged inside, \
                         not torn at its tail; nothing was truncated",
                        self.end + at as u64
                    ),
                ));
            }
            tracing::warn!(
                file = %self.path.display(),
                offset = self.end,
                bytes = len - self.end,
                reason = why,
                "truncating torn tail left by an interrupted append"
            );
            self.file.set_len(self.end).ctx("truncate", &self.path)?;
            self.file.sync_all().ctx("fsync", &self.path)?;
        }
        Ok(())
    }
}

/// The first valid frame in `buf` after its start, where a bad frame (whose
/// LSN should have been `expected`) begins: its offset and LSN. Only frames
/// that could follow the bad one count: an LSN from `expected` up to one more
/// per [`FRAME_HEADER`] bytes skipped, a correct checksum. Every offset is
/// tried, since the bad frame's length cannot be trusted.
fn later_frame(buf: &[u8], expected: Lsn) -> Option<(usize, Lsn)> {
    (1..buf.len().saturating_sub(FRAME_HEADER - 1)).find_map(|at| {
        let lsn = format::u64_at(buf, at + 4);
        let reachable = lsn >= expected && lsn - expected <= (at / FRAME_HEADER) as u64;
        match reachable.then(|| decode_frame(&buf[at..])) {
            Some(FrameRead::Frame { lsn, .. }) => Some((at, lsn)),
            _ => None,
        }
    })
}

/// The exclusive right to append; dropping it releases the lock.
pub struct TapeWriter<'a> {
    log: &'a TapeLog,
    lock: FileLock,
    active: ActiveState,
    /// Frames this writer appended, as written: the active segment's bytes
    /// from offset `written_from` on. Their checksums were computed here and
    /// they are durable, so sealing takes them from memory instead of reading
    /// them back and verifying them again. Also the buffer appends encode into.
    written: Vec<u8>,
    written_from: u64,
    /// A seal failed after it began to change files: the sealed segment may
    /// be in place next to the active one. Nothing is appended until the
    /// directory has been recovered from (as the next opener would).
    unresolved: bool,
    /// An automatic seal failed in this session; the next session tries again.
    auto_seal_failed: bool,
    seal_buffers: SealBuffers,
}

impl std::fmt::Debug for TapeWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the frames themselves: they can be megabytes.
        f.debug_struct("TapeWriter")
            .field("log", &self.log)
            .field("active", &self.active)
            .field("written_from", &self.written_from)
            .field("written_bytes", &self.written.len())
            .field("unresolved", &self.unresolved)
            .finish_non_exhaustive()
    }
}

/// The most frame bytes a writer keeps in memory for the next seal; beyond
/// this (a segment threshold set very high) it starts over and the seal reads
/// the older frames back from the file.
const WRITTEN_LIMIT: usize = 64 << 20;

impl TapeWriter<'_> {
    /// LSN of the last frame in the log (0 if the log is empty).
    pub fn last_lsn(&self) -> Lsn {
        self.active.last_lsn
    }

    /// Appends payloads (encoded events) as consecutive frames and makes them
    /// durable. Returns the LSN of the first; the rest follow in order. Nothing
    /// is written if any payload exceeds [`MAX_PAYLOAD`].
    ///
    /// With `auto_seal`, an append that fills the active segment seals it. A
    /// failed seal does not fail the append (its events are durable); it is
    /// logged, and tried again by the next session's first append that finds
    /// the segment full.
    pub fn append(&mut self, payloads: &[&[u8]]) -> Result<Lsn> {
        if payloads.is_empty() {
            return Ok(self.active.last_lsn + 1);
        }
        self.resolve()?;
        let first = self.active.last_lsn + 1;
        if let Some((i, p)) = payloads.iter().enumerate().find(|(_, p)| p.len() > MAX_PAYLOAD) {
            return Err(Error::InvalidInput(format!(
                "event {i} of the batch is {} bytes; the limit is {MAX_PAYLOAD}",
                p.len()
            )));
        }
        let total: usize = payloads.iter().map(|p| p.len() + FRAME_HEADER).sum();
        // Keep what this writer appends until the next seal when that seal may
        // come in this session; otherwise only reuse the buffer.
        let keep = self.log.opts.auto_seal && self.written_covers_tail() && self.written.len() + total <= WRITTEN_LIMIT;
        if !keep {
            self.written.clear();
            self.written_from = self.active.end;
        }
        let start = self.written.len();
        // A kept buffer fills up to the seal threshold: room for all of it at
        // once costs less than growing by doubling (each time a copy).
        let until_seal = self.log.opts.segment_bytes.saturating_sub(self.active.end - ACTIVE_HEADER as u64);
        let room = if self.log.opts.auto_seal { usize::try_from(until_seal).unwrap_or(usize::MAX) } else { 0 };
        self.written.reserve(total.max(room.min(WRITTEN_LIMIT - start)));
        let mut last_frame_start = self.active.last_frame_start;
        for (i, payload) in payloads.iter().enumerate() {
            last_frame_start = self.active.end + (self.written.len() - start) as u64;
            encode_frame(&mut self.written, first + i as u64, payload);
        }
        let batch = &self.written[start..];
        let written = self.active.file.write_all_at(batch, self.active.end).and_then(|()| self.active.file.sync_data());
        if let Err(e) = written {
            // Leave no partial batch behind: a later append must not follow junk.
            let _ = self.active.file.set_len(self.active.end);
            self.written.truncate(start);
            return Err(Error::io("append to", &self.active.path, e));
        }
        self.active.end += total as u64;
        self.active.last_lsn = first + payloads.len() as u64 - 1;
        self.active.last_frame_start = last_frame_start;
        self.write_hint();
        if self.log.opts.auto_seal
            && !self.auto_seal_failed
            && self.active.end - ACTIVE_HEADER as u64 >= self.log.opts.segment_bytes
            && let Err(e) = self.seal()
        {
            self.auto_seal_failed = true;
            tracing::warn!(
                error = %e,
                file = %self.active.path.display(),
                "automatic seal failed; the appended events are durable and the seal is tried again by the next session"
            );
        }
        Ok(first)
    }

    /// After a seal that failed half-way, rebuilds the active segment's state
    /// from the directory, resolving the seal as recovery does.
    fn resolve(&mut self) -> Result<()> {
        if self.unresolved {
            tracing::warn!(dir = %self.log.dir.display(), "resolving an interrupted seal before going on");
            self.active = self.log.slow_recover()?;
            self.written.clear();
            self.written_from = self.active.end;
            self.unresolved = false;
            self.write_hint();
        }
        Ok(())
    }

    /// Whether `written` holds every byte of the active segment from
    /// `written_from` to its end (and nothing of its header).
    fn written_covers_tail(&self) -> bool {
        self.written_from >= ACTIVE_HEADER as u64 && self.written_from + self.written.len() as u64 == self.active.end
    }

    /// Seals the active segment (if it holds any frame) into a compressed,
    /// content-addressed file and starts a new active segment.
    pub fn seal(&mut self) -> Result<Option<SegmentInfo>> {
        self.resolve()?;
        if self.active.end == ACTIVE_HEADER as u64 {
            return Ok(None);
        }
        // Only frames this writer did not append itself are read back (and
        // verified); its own are taken from memory, as acknowledged.
        let disk_end = if self.written_covers_tail() { self.written_from } else { self.active.end };
        let mut older = vec![0u8; (disk_end - ACTIVE_HEADER as u64) as usize];
        self.active.file.read_exact_at(&mut older, ACTIVE_HEADER as u64).ctx("read", &self.active.path)?;
        let mine: &[u8] = if disk_end < self.active.end { &self.written } else { &[] };
        let frames = SegmentFrames::new(&older, ACTIVE_HEADER as u64, true)
            .chain(SegmentFrames::new(mine, disk_end, false))
            .map(|read| read.map_err(|(offset, why)| Error::corrupt(&self.active.path, offset, why)));
        let seq = self.active.header.seq;
        let first_lsn = self.active.header.first_lsn;
        let header =
            build_sealed(seq, 0, first_lsn, frames, &self.active.path, &self.log.opts, &mut self.seal_buffers)?;
        let bytes = &self.seal_buffers.out;
        drop(older);
        if header.last_lsn != self.active.last_lsn {
            return Err(Error::corrupt(
                &self.active.path,
                0,
                format!(
                    "segment ends at lsn {}, but the writer appended up to {}",
                    header.last_lsn, self.active.last_lsn
                ),
            ));
        }
        // A crash from here on must send the next opener down the slow path,
        // which resolves a half-finished seal from the directory listing.
        // (Not before: a seal refused for a damaged frame changes nothing.)
        Hint::invalidate(self.lock.file()).ctx("write hint to", &self.log.dir.join("LOCK"))?;
        // From here a failure may leave the sealed segment next to the active one.
        self.unresolved = true;
        let info = write_sealed(&self.log.dir, bytes, &header)?;
        // One directory sync makes both the successor and the removal durable:
        // a crash may keep either or both, and recovery resolves every mix (the
        // sealed segment's name is already durable).
        let next = ActiveHeader { seq: seq + 1, first_lsn: header.last_lsn + 1 };
        create_active(&self.log.dir, next)?;
        fs::remove_file(&self.active.path).ctx("remove", &self.active.path)?;
        fsync_dir(&self.log.dir).ctx("fsync", &self.log.dir)?;
        let path = self.log.active_path(next.seq);
        let file = OpenOptions::new().read(true).write(true).open(&path).ctx("open", &path)?;
        self.active = ActiveState {
            path,
            file,
            header: next,
            end: ACTIVE_HEADER as u64,
            last_lsn: next.first_lsn - 1,
            last_frame_start: 0,
        };
        self.written.clear();
        self.written_from = self.active.end;
        self.unresolved = false;
        self.write_hint();
        tracing::debug!(segment = %info.name, events = info.events, bytes = info.bytes, "sealed segment");
        Ok(Some(info))
    }

    /// A consistent view of the log as of now, readable after the lock is released.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let listing = Listing::read(&self.log.dir)?;
        let mut sealed = Vec::new();
        for (seq, path, header) in listing.resolve_sealed()? {
            if seq < self.active.header.seq {
                let file = File::open(&path).ctx("open", &path)?;
                sealed.push(read::SealedRef { path, file, header });
            }
        }
        let active_file = self.active.file.try_clone().ctx("duplicate handle of", &self.active.path)?;
        Ok(Snapshot::new(
            self.log.dir.clone(),
            sealed,
            read::ActiveRef {
                path: self.active.path.clone(),
                file: active_file,
                header: self.active.header,
                end: self.active.end,
                last_lsn: self.active.last_lsn,
            },
        ))
    }

    /// Rewrites sealed segments: `edit` sees every frame and returns a new
    /// payload to replace it, or `None` to keep it. The active segment is
    /// sealed first so that every frame is covered. A segment with a changed
    /// frame is replaced by a new file (same sequence number and LSNs, next
    /// generation, new content hash) written completely before the old one is
    /// removed. Nothing is changed if any segment is damaged.
    pub fn rewrite(&mut self, mut edit: impl FnMut(Lsn, &[u8]) -> Option<Vec<u8>>) -> Result<RewriteStats> {
        self.seal()?;
        let snapshot = self.snapshot()?;
        let report = snapshot.verify()?;
        if let Some(p) = report.problems.first() {
            return Err(Error::corrupt(&p.file, p.offset, format!("refusing to rewrite a damaged log: {}", p.what)));
        }
        let mut stats = RewriteStats::default();
        for seg in snapshot.sealed_refs() {
            let frames = read::read_sealed_frames(&seg.path)?;
            let mut changed = 0u64;
            let edits: Vec<Option<Vec<u8>>> = frames
                .iter()
                .map(|(lsn, payload)| match edit(*lsn, payload) {
                    Some(new) if new != *payload => {
                        changed += 1;
                        Some(new)
                    }
                    _ => None,
                })
                .collect();
            if changed == 0 {
                continue;
            }
            let view = frames.iter().zip(&edits).map(|((lsn, old), new)| Ok((0, *lsn, new.as_deref().unwrap_or(old))));
            let (seq, generation) = (seg.header.seq, seg.header.generation + 1);
            let header = build_sealed(
                seq,
                generation,
                seg.header.first_lsn,
                view,
                &seg.path,
                &self.log.opts,
                &mut self.seal_buffers,
            )?;
            let info = write_sealed(&self.log.dir, &self.seal_buffers.out, &header)?;
            if info.name != seg.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default() {
                fs::remove_file(&seg.path).ctx("remove", &seg.path)?;
                fsync_dir(&self.log.dir).ctx("fsync", &self.log.dir)?;
            }
            stats.segments_rewritten += 1;
            stats.frames_changed += changed;
        }
        Ok(stats)
    }

    fn write_hint(&mut self) {
        let hint = Hint {
            seq: self.active.header.seq,
            last_frame_start: self.active.last_frame_start,
            end: self.active.end,
            last_lsn: self.active.last_lsn,
        };
        // The hint only speeds up the next open; failing to write it is harmless.
        if let Err(e) = hint.write(self.lock.file()) {
            tracing::debug!(error = %e, "could not update the tape hint");
        }
    }
}

/// The frames of part of an active segment, in order: `(offset in the file,
/// lsn, payload)`, or the offset and reason at the first bad one (the
/// iteration then ends). `verify` checks each frame's checksum; without it
/// the frames are known good (this writer encoded them).
struct SegmentFrames<'a> {
    raw: &'a [u8],
    pos: usize,
    base: u64,
    verify: bool,
}

impl<'a> SegmentFrames<'a> {
    /// Frames of `raw`, whose first byte is at `base` in the file.
    fn new(raw: &'a [u8], base: u64, verify: bool) -> SegmentFrames<'a> {
        SegmentFrames { raw, pos: 0, base, verify }
    }
}

impl<'a> Iterator for SegmentFrames<'a> {
    type Item = std::result::Result<(u64, Lsn, &'a [u8]), (u64, &'static str)>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.raw.get(self.pos..).filter(|r| !r.is_empty())?;
        let offset = self.base + self.pos as u64;
        let read = if self.verify { decode_frame(rest) } else { format::decode_frame_trusted(rest) };
        match read {
            FrameRead::Frame { lsn, payload, size } => {
                self.pos += size;
                Some(Ok((offset, lsn, payload)))
            }
            FrameRead::Incomplete => {
                self.pos = self.raw.len();
                Some(Err((offset, "incomplete frame")))
            }
            FrameRead::Invalid(why) => {
                self.pos = self.raw.len();
                Some(Err((offset, why)))
            }
        }
    }
}

/// Buffers and a zstd context for building sealed segments, kept by a writer
/// across its seals.
#[derive(Default)]
struct SealBuffers {
    compressor: Option<zstd::bulk::Compressor<'static>>,
    /// The chunk being filled, as entries.
    entries: Vec<u8>,
    /// The chunk compressed.
    compressed: Vec<u8>,
    /// The sealed segment's bytes.
    out: Vec<u8>,
}

/// Compresses frames into a sealed segment's bytes (left in `bufs.out`) in
/// the format this build writes: chunks of entries cut at about
/// `opts.chunk_bytes`, each compressed on its own. `frames` yields `(offset,
/// lsn, payload)` with LSNs from `first_lsn` on (the offset in `file` names a
/// frame out of sequence).
fn build_sealed<'a>(
    seq: u64,
    generation: u64,
    first_lsn: Lsn,
    frames: impl Iterator<Item = Result<(u64, Lsn, &'a [u8])>>,
    file: &Path,
    opts: &TapeOptions,
    bufs: &mut SealBuffers,
) -> Result<SealedHeader> {
    let mut header = SealedHeader {
        version: format::SEALED_VERSION,
        chunks: 0,
        seq,
        generation,
        first_lsn,
        last_lsn: first_lsn,
        events: 0,
        min_ts: i64::MAX,
        max_ts: i64::MIN,
        raw_bytes: 0,
    };
    let compressor = match &mut bufs.compressor {
        Some(c) => c,
        none => none.insert(zstd::bulk::Compressor::new(opts.zstd_level).map_err(zstd_error)?),
    };
    let SealBuffers { entries, compressed, out, .. } = bufs;
    entries.clear();
    // The header goes in front once the chunks are known.
    out.clear();
    out.resize(SEALED_HEADER, 0);
    let mut chunk_first = first_lsn;
    let mut frames = frames.peekable();
    while let Some(frame) = frames.next() {
        let (offset, lsn, payload) = frame?;
        let expected = first_lsn + header.events;
        if lsn != expected {
            return Err(Error::corrupt(file, offset, format!("frame has lsn {lsn}, expected {expected}")));
        }
        header.events += 1;
        if let Some(ts) = payload_ts(payload) {
            header.min_ts = header.min_ts.min(ts);
            header.max_ts = header.max_ts.max(ts);
        }
        header.raw_bytes += (FRAME_HEADER + payload.len()) as u64;
        format::encode_entry(entries, payload);
        if entries.len() >= opts.chunk_bytes || frames.peek().is_none() {
            compressed.clear();
            compressed.reserve(zstd::zstd_safe::compress_bound(entries.len()));
            compressor.compress_to_buffer(entries.as_slice(), compressed).map_err(zstd_error)?;
            let frames_in_chunk = (lsn + 1 - chunk_first) as u32;
            let ch = format::ChunkHeader::new(compressed, entries.len() as u32, chunk_first, frames_in_chunk);
            out.extend_from_slice(&ch.encode());
            out.extend_from_slice(compressed);
            header.chunks += 1;
            entries.clear();
            chunk_first = lsn + 1;
        }
    }
    if header.events == 0 {
        return Err(Error::InvalidInput("cannot seal an empty segment".into()));
    }
    header.last_lsn = first_lsn + header.events - 1;
    if header.min_ts > header.max_ts {
        header.min_ts = 0;
        header.max_ts = 0;
    }
    out[..SEALED_HEADER].copy_from_slice(&header.encode());
    Ok(header)
}

fn zstd_error(e: std::io::Error) -> Error {
    Error::InvalidInput(format!("zstd compression failed: {e}"))
}

/// Writes a sealed segment under its content-addressed name, durably.
fn write_sealed(dir: &Path, bytes: &[u8], header: &SealedHeader) -> Result<SegmentInfo> {
    let hash = blake3::hash(bytes);
    let name = format::sealed_name(header.seq, &hash);
    let path = dir.join(&name);
    if !path.exists() {
        let tmp = crate::fsutil::temp_path_for(&path);
        let written = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io("write sealed segment", &path, e));
        }
        fsync_dir(dir).ctx("fsync", dir)?;
    }
    Ok(SegmentInfo {
        name,
        seq: header.seq,
        sealed: true,
        generation: header.generation,
        bytes: bytes.len() as u64,
        raw_bytes: header.raw_bytes,
        events: header.events,
        first_lsn: header.first_lsn,
        last_lsn: header.last_lsn,
        min_ts: (header.events > 0).then_some(header.min_ts),
        max_ts: (header.events > 0).then_some(header.max_ts),
    })
}

/// Creates an empty active segment: its content is durable, its name once
/// the caller syncs the directory.
fn create_active(dir: &Path, header: ActiveHeader) -> Result<()> {
    let path = dir.join(format::active_name(header.seq));
    let tmp = crate::fsutil::temp_path_for(&path);
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(&header.encode())?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("create active segment", &path, e));
    }
    Ok(())
}

/// The files of a tape directory, classified.
struct Listing {
    dir: PathBuf,
    sealed: Vec<(u64, PathBuf)>,
    actives: Vec<u64>,
    temps: Vec<PathBuf>,
}

impl Listing {
    fn read(dir: &Path) -> Result<Listing> {
        let mut listing =
            Listing { dir: dir.to_path_buf(), sealed: Vec::new(), actives: Vec::new(), temps: Vec::new() };
        for entry in fs::read_dir(dir).ctx("list", dir)? {
            let entry = entry.ctx("list", dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some((seq, _)) = format::parse_sealed_name(&name) {
                listing.sealed.push((seq, entry.path()));
            } else if let Some(seq) = format::parse_active_name(&name) {
                listing.actives.push(seq);
            } else if name.ends_with(".tmp") {
                listing.temps.push(entry.path());
            }
        }
        listing.sealed.sort();
        listing.actives.sort_unstable();
        Ok(listing)
    }

    /// Sealed segments in order, one per sequence number: when an interrupted
    /// rewrite left two files for one sequence number, the newer generation
    /// wins and the older is removed (both are complete, durable files).
    fn resolve_sealed(&self) -> Result<Vec<(u64, PathBuf, SealedHeader)>> {
        let mut out: Vec<(u64, PathBuf, SealedHeader)> = Vec::new();
        for (seq, path) in &self.sealed {
            let mut head = [0u8; SEALED_HEADER];
            let mut f = File::open(path).ctx("open", path)?;
            f.read_exact(&mut head).map_err(|_| Error::corrupt(path, 0, "sealed segment header is truncated"))?;
            let header = SealedHeader::decode(&head).map_err(|why| Error::corrupt(path, 0, why))?;
            if header.seq != *seq {
                return Err(Error::corrupt(path, 0, format!("file name says seq {seq}, header says {}", header.seq)));
            }
            match out.last_mut() {
                Some((prev_seq, prev_path, prev_header)) if prev_seq == seq => {
                    let (keep, drop) = if header.generation > prev_header.generation {
                        (Some((path.clone(), header)), prev_path.clone())
                    } else {
                        (None, path.clone())
                    };
                    tracing::warn!(file = %drop.display(), "removing a segment superseded by a completed rewrite");
                    fs::remove_file(&drop).ctx("remove", &drop)?;
                    fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
                    if let Some((p, h)) = keep {
                        *prev_path = p;
                        *prev_header = h;
                    }
                }
                _ => out.push((*seq, path.clone(), header)),
            }
        }
        for pair in out.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if b.2.first_lsn != a.2.last_lsn + 1 {
                return Err(Error::corrupt(
                    &b.1,
                    0,
                    format!("segment starts at lsn {} but the previous one ends at {}", b.2.first_lsn, a.2.last_lsn),
                ));
            }
        }
        Ok(out)
    }
}

/// Position of the last frame, kept in the lock file to make opening cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hint {
    seq: u64,
    last_frame_start: u64,
    end: u64,
    last_lsn: Lsn,
}

impl Hint {
    const LEN: usize = 44;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[0..4].copy_from_slice(b"HINT");
        out[4..12].copy_from_slice(&self.seq.to_le_bytes());
        out[12..20].copy_from_slice(&self.last_frame_start.to_le_bytes());
        out[20..28].copy_from_slice(&self.end.to_le_bytes());
        out[28..36].copy_from_slice(&self.last_lsn.to_le_bytes());
        let sum = format::checksum(&[&out[0..36]]);
        out[36..44].copy_from_slice(&sum);
        out
    }

    fn read(file: &File) -> Option<Hint> {
        let mut buf = [0u8; Self::LEN];
        file.read_exact_at(&mut buf, 0).ok()?;
        if &buf[0..4] != b"HINT" || buf[36..44] != format::checksum(&[&buf[0..36]]) {
            return None;
        }
        Some(Hint {
            seq: format::u64_at(&buf, 4),
            last_frame_start: format::u64_at(&buf, 12),
            end: format::u64_at(&buf, 20),
            last_lsn: format::u64_at(&buf, 28),
        })
    }

    fn write(&self, file: &File) -> std::io::Result<()> {
        file.write_all_at(&self.encode(), 0)
    }

    /// Destroys the hint durably (before a seal).
    fn invalidate(file: &File) -> std::io::Result<()> {
        file.write_all_at(&[0u8; Self::LEN], 0)?;
        file.sync_data()
    }
}

#[cfg(test)]
mod tests;
