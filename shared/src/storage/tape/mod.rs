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
mod recover;
mod repair;
mod timestamp;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub use format::{
    ACTIVE_HEADER, ActiveHeader, ChunkHeader, FRAME_HEADER, FrameRead, Lsn, MAX_PAYLOAD, SEALED_HEADER, SealedHeader,
    active_name, decode_frame, decode_frame_trusted, encode_frame, parse_active_name, parse_sealed_name, sealed_name,
};
pub use read::{Frame, FrameIter, Snapshot};
use recover::{ActiveState, Hint, LOCK, Listing};
pub use repair::{LostRange, Placeholder, RepairReport};
use timestamp::payload_ts;

use crate::base::error::{Error, ErrorClass, IoContext, Result};
use crate::base::fsutil::{FileLock, fsync_dir};

/// The folder (in the tape directory) where recovery keeps the bytes it cuts.
pub const QUARANTINE: &str = "quarantine";

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
    /// Files in the quarantine folder: bytes recovery cut from a segment.
    pub quarantined: Vec<PathBuf>,
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
        self.lock_keeping(0)
    }

    /// [`TapeLog::lock`], knowing that every frame up to `acknowledged` was
    /// acknowledged (the projection applied them, say): recovery refuses
    /// rather than cut any of them, even without the lock file's hint.
    pub fn lock_keeping(&self, acknowledged: Lsn) -> Result<TapeWriter<'_>> {
        let lock_path = self.dir.join(LOCK);
        let lock = FileLock::exclusive(&lock_path).ctx("lock", &lock_path)?;
        let active = self.recover(&lock, acknowledged)?;
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
        self.verify_keeping(0)
    }

    /// [`TapeLog::verify`], knowing that every frame up to `acknowledged` was
    /// acknowledged (see [`TapeLog::lock_keeping`]).
    pub fn verify_keeping(&self, acknowledged: Lsn) -> Result<VerifyReport> {
        let refused = match self.lock_keeping(acknowledged).and_then(|w| w.snapshot()) {
            Ok(snapshot) => {
                let mut report = snapshot.verify()?;
                report.quarantined = recover::quarantined(&self.dir)?;
                return Ok(report);
            }
            Err(e) if e.class() == ErrorClass::Corrupt => e,
            Err(e) => return Err(e),
        };
        let lock_path = self.dir.join(LOCK);
        let _lock = FileLock::exclusive(&lock_path).ctx("lock", &lock_path)?;
        let listing = Listing::read(&self.dir)?;
        let sealed: Vec<PathBuf> = listing.sealed.iter().map(|(_, path)| path.clone()).collect();
        let actives: Vec<PathBuf> = listing.actives.iter().map(|&seq| self.active_path(seq)).collect();
        let mut report = read::verify_files(&sealed, &actives)?;
        // Files that claim one sequence number (a segment of another log).
        let mut claims: Vec<(u64, &Path)> = listing.sealed.iter().map(|(seq, p)| (*seq, p.as_path())).collect();
        claims.extend(listing.actives.iter().zip(&actives).map(|(seq, p)| (*seq, p.as_path())));
        claims.sort_by_key(|(seq, _)| *seq);
        for pair in claims.windows(2) {
            if pair[0].0 == pair[1].0 {
                let what = recover::duplicate_message(pair[0].0, pair[0].1, pair[1].1);
                report.problems.push(Problem { file: pair[1].1.to_path_buf(), offset: 0, what });
            }
        }
        // What stopped recovery is not always visible file by file (two
        // active segments, frames the lock hint names but the file lacks).
        let (file, offset, what) = match refused {
            Error::Corrupt { file, offset, reason } => (file, offset, reason),
            e => (self.dir.clone(), 0, e.to_string()),
        };
        if !report.problems.iter().any(|p| p.file == file && p.what == what) {
            report.problems.push(Problem { file, offset, what });
        }
        report.quarantined = recover::quarantined(&self.dir)?;
        Ok(report)
    }

    fn active_path(&self, seq: u64) -> PathBuf {
        self.dir.join(active_name(seq))
    }
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
            self.active = self.log.slow_recover(self.active.last_lsn)?;
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
        Hint::invalidate(self.lock.file()).ctx("write hint to", &self.log.dir.join(LOCK))?;
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
        let active = &self.active.header;
        let (mut next_seq, mut next_lsn) = (1, 1);
        for (seq, path, header) in listing.resolve_sealed()? {
            if seq >= active.seq {
                let what = if seq == active.seq {
                    recover::duplicate_message(seq, &path, &self.active.path)
                } else {
                    format!("sealed segment seq {seq} lies beyond the active segment (seq {})", active.seq)
                };
                return Err(Error::corrupt(&path, 0, what));
            }
            (next_seq, next_lsn) = (seq + 1, header.last_lsn + 1);
            let file = File::open(&path).ctx("open", &path)?;
            sealed.push(read::SealedRef { path, file, header });
        }
        if (active.seq, active.first_lsn) != (next_seq, next_lsn) {
            return Err(Error::corrupt(
                &self.active.path,
                0,
                format!(
                    "the active segment is seq {} from lsn {}, but the sealed segments end before seq {next_seq} lsn \
                     {next_lsn}: the segments holding what comes between are missing",
                    active.seq, active.first_lsn
                ),
            ));
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
            // The intent names both files before the new one exists, so that
            // recovery can tell this log's own leftover from a stranger.
            let old = seg.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let new = sealed_name(seq, &blake3::hash(&self.seal_buffers.out));
            if new != old {
                self.log.begin_rewrite(&old, &new)?;
                write_sealed(&self.log.dir, &self.seal_buffers.out, &header)?;
                fs::remove_file(&seg.path).ctx("remove", &seg.path)?;
                fsync_dir(&self.log.dir).ctx("fsync", &self.log.dir)?;
                self.log.end_rewrite()?;
            }
            stats.segments_rewritten += 1;
            stats.frames_changed += changed;
        }
        Ok(stats)
    }

    fn write_hint(&mut self) {
        let changed = match self.active.file.metadata() {
            Ok(meta) => Some(recover::change_time(&meta)),
            Err(e) => {
                tracing::debug!(error = %e, "cannot read the active segment's change time");
                None
            }
        };
        let hint = Hint {
            seq: self.active.header.seq,
            last_frame_start: self.active.last_frame_start,
            end: self.active.end,
            last_lsn: self.active.last_lsn,
            changed,
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
        let read = if self.verify { decode_frame(rest) } else { decode_frame_trusted(rest) };
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
            let ch = ChunkHeader::new(compressed, entries.len() as u32, chunk_first, frames_in_chunk);
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
    let name = sealed_name(header.seq, &hash);
    let path = dir.join(&name);
    if !path.exists() {
        let tmp = crate::base::fsutil::temp_path_for(&path);
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
    let path = dir.join(active_name(header.seq));
    let tmp = crate::base::fsutil::temp_path_for(&path);
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

#[cfg(test)]
mod tests;

// ---------------------------------------------------------------------------
// Folders of sealed segments outside a live log (team sharing, `crate::storage::share`)
// ---------------------------------------------------------------------------

/// The sealed segments in `dir` (by their names, `<seq>-<blake3>.seg`), in
/// sequence order; other files are ignored. A missing folder has none.
pub fn sealed_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list", dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.ctx("list", dir)?;
        let name = entry.file_name();
        if let Some((seq, _)) = name.to_str().and_then(parse_sealed_name) {
            out.push((seq, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Verifies a folder of sealed segments that no writer appends to (a copy of
/// a log's sealed segments, such as another data home's export): every
/// file's blake3 against its name, every chunk checksum, and LSNs running
/// from 1 without a gap, so a missing or extra segment is reported.
pub fn verify_sealed_folder(dir: &Path) -> Result<VerifyReport> {
    let sealed: Vec<PathBuf> = sealed_files(dir)?.into_iter().map(|(_, p)| p).collect();
    read::verify_files(&sealed, &[])
}

/// Every frame of the sealed segment at `path`, its chunk checksums and LSNs
/// verified (not its name's blake3: [`verify_sealed_folder`] checks that).
pub fn read_sealed_segment(path: &Path) -> Result<Vec<(Lsn, Vec<u8>)>> {
    read::read_sealed_frames(path)
}
