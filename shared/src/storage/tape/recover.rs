//! Recovery: what a writer checks and repairs when it takes the lock.
//!
//! Only bytes that were never acknowledged may be cut, and nothing is cut
//! without being kept. The hint in `LOCK` (the last frame's position, written
//! after each append's fsync) is a lower bound of what was acknowledged: a
//! frame it names must be intact, and bytes before its end are never a torn
//! tail. A caller may name a higher bound ([`TapeLog::lock_keeping`]: the
//! projection's position, say). Bytes recovery does cut (a torn tail: bad
//! bytes after everything acknowledged, with no valid frame after them) are
//! first written to `quarantine/`.
//!
//! Recovery never deletes a file it cannot prove is its own leftover: a
//! temporary file of its own naming, an active segment whose every frame is in
//! the sealed segment of the same number (an interrupted seal), or the old
//! generation named by the `REWRITE` intent of an interrupted rewrite. Two
//! files claiming one sequence number otherwise (a segment copied in from
//! another log) are reported, never resolved by deletion.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::format::{self, ACTIVE_HEADER, ActiveHeader, FRAME_HEADER, FrameRead, Lsn, SEALED_HEADER, SealedHeader};
use super::{QUARANTINE, TapeLog, create_active, decode_frame, read};
use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::{FileLock, fsync_dir};

/// The lock file, which also holds the [`Hint`].
pub(super) const LOCK: &str = "LOCK";
/// The intent of a rewrite in progress: the segment it replaces and its successor.
pub(super) const REWRITE_INTENT: &str = "REWRITE";
const REWRITE_MAGIC: &str = "engram-rewrite 1";

/// The open active segment, as known to the lock holder.
#[derive(Debug)]
pub(super) struct ActiveState {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) header: ActiveHeader,
    /// Offset just past the last valid frame.
    pub(super) end: u64,
    pub(super) last_lsn: Lsn,
    /// Offset of the last valid frame (0 if none).
    pub(super) last_frame_start: u64,
}

impl TapeLog {
    /// Brings the directory to a consistent state under the lock and returns
    /// the active segment. Refuses (with [`Error::Corrupt`], changing nothing)
    /// when frames up to `acknowledged`, or those the hint names, are not all
    /// there and intact.
    pub(super) fn recover(&self, lock: &FileLock, acknowledged: Lsn) -> Result<ActiveState> {
        self.finish_rewrite()?;
        let active = match self.fast_recover(lock, acknowledged)? {
            Some(active) => active,
            None => self.slow_recover(acknowledged)?,
        };
        active.check_acknowledged(acknowledged, "the log ends there")?;
        Ok(active)
    }

    /// Uses the hint in the lock file: validates the last frame it names and
    /// scans only what was written after it. `None` when there is no valid
    /// hint. A valid hint is evidence: the frames it covers were acknowledged,
    /// so a hint the data contradicts is damage, not a reason to look elsewhere.
    fn fast_recover(&self, lock: &FileLock, acknowledged: Lsn) -> Result<Option<ActiveState>> {
        let Some(hint) = Hint::read(lock.file()) else {
            return Ok(None);
        };
        if hint.end < ACTIVE_HEADER as u64 || (hint.last_frame_start != 0 && hint.last_frame_start >= hint.end) {
            return Ok(None);
        }
        let path = self.active_path(hint.seq);
        let lost = |offset: u64, why: String| {
            Error::corrupt(
                &path,
                offset,
                format!(
                    "{why}; the lock hint shows frames up to lsn {} (byte {}) were acknowledged, so this is damage, \
                     not a torn tail: nothing was cut (see `engram-ingestor tapes verify` and `tapes repair`)",
                    hint.last_lsn, hint.end
                ),
            )
        };
        let mut file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            // An empty active segment holds nothing acknowledged: the
            // listing shows whether the sealed ones are all there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && hint.last_frame_start == 0 => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(lost(0, "the active segment is missing".into()));
            }
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let mut head = [0u8; ACTIVE_HEADER];
        file.read_exact(&mut head).map_err(|_| lost(0, "the active segment's header is truncated".into()))?;
        let header = ActiveHeader::decode(&head).map_err(|why| lost(0, why.into()))?;
        let len = file.metadata().ctx("stat", &path)?.len();
        if header.seq != hint.seq {
            return Err(lost(0, format!("the active segment's header says seq {}", header.seq)));
        }
        if len < hint.end {
            return Err(lost(len, format!("the active segment ends at byte {len}")));
        }
        if hint.last_frame_start == 0 {
            if hint.end != ACTIVE_HEADER as u64 || hint.last_lsn + 1 != header.first_lsn {
                return Err(lost(0, format!("the active segment starts at lsn {}", header.first_lsn)));
            }
        } else {
            let mut buf = vec![0u8; (hint.end - hint.last_frame_start) as usize];
            file.read_exact_at(&mut buf, hint.last_frame_start).ctx("read", &path)?;
            match decode_frame(&buf) {
                FrameRead::Frame { lsn, size, .. } if lsn == hint.last_lsn && size == buf.len() => {}
                FrameRead::Frame { lsn, size, .. } => {
                    return Err(lost(
                        hint.last_frame_start,
                        format!("the frame at byte {} has lsn {lsn} and {size} bytes", hint.last_frame_start),
                    ));
                }
                FrameRead::Incomplete => {
                    return Err(lost(
                        hint.last_frame_start,
                        format!(
                            "the frame at byte {} is incomplete (its length field is damaged)",
                            hint.last_frame_start
                        ),
                    ));
                }
                FrameRead::Invalid(why) => {
                    return Err(lost(
                        hint.last_frame_start,
                        format!("the frame at byte {}: {why}", hint.last_frame_start),
                    ));
                }
            }
        }
        // The frames before the last were verified when they were appended; a
        // file changed since by anything but a writer is verified again, so
        // that nothing is appended behind damage done to it.
        let meta = file.metadata().ctx("stat", &path)?;
        if hint.changed != Some(change_time(&meta)) && hint.last_frame_start > ACTIVE_HEADER as u64 {
            let mut buf = vec![0u8; (hint.last_frame_start - ACTIVE_HEADER as u64) as usize];
            file.read_exact_at(&mut buf, ACTIVE_HEADER as u64).ctx("read", &path)?;
            let damaged = |offset: usize, why: String| {
                Error::corrupt(
                    &path,
                    (ACTIVE_HEADER + offset) as u64,
                    format!(
                        "the frame at byte {}: {why}; the active segment was changed since its last append and is \
                         damaged before its last frame (lsn {}), so nothing is appended behind the damage: run \
                         `engram-ingestor tapes verify`, then `engram-ingestor tapes repair`",
                        ACTIVE_HEADER + offset,
                        hint.last_lsn
                    ),
                )
            };
            let (mut pos, mut next) = (0usize, header.first_lsn);
            while pos < buf.len() {
                match decode_frame(&buf[pos..]) {
                    FrameRead::Frame { lsn, size, .. } if lsn == next => {
                        pos += size;
                        next += 1;
                    }
                    FrameRead::Frame { lsn, .. } => return Err(damaged(pos, format!("lsn {lsn}, expected {next}"))),
                    FrameRead::Incomplete => {
                        return Err(damaged(pos, "runs past the start of the last frame".into()));
                    }
                    FrameRead::Invalid(why) => return Err(damaged(pos, why.into())),
                }
            }
            if next != hint.last_lsn {
                return Err(damaged(pos, format!("the last frame has lsn {}, expected {next}", hint.last_lsn)));
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
        active.scan_tail(&self.dir, len, acknowledged)?;
        Ok(Some(active))
    }

    /// Full recovery from the directory listing.
    pub(super) fn slow_recover(&self, acknowledged: Lsn) -> Result<ActiveState> {
        let listing = Listing::read(&self.dir)?;
        for tmp in &listing.temps {
            tracing::warn!(file = %tmp.display(), "removing a temporary file left by an interrupted write");
            fs::remove_file(tmp).ctx("remove", tmp)?;
        }
        let all = listing.sealed_headers()?;
        // An active segment with a sealed namesake is the leftover of an
        // interrupted seal only if the sealed file holds exactly its frames.
        let mut sealed = Vec::with_capacity(all.len());
        let mut actives = listing.actives.clone();
        for (seq, path, header) in all {
            if let Some(i) = actives.iter().position(|&a| a == seq) {
                self.remove_sealed_active(seq, &path)?;
                actives.remove(i);
            }
            sealed.push((seq, path, header));
        }
        check_sequence(&sealed)?;
        let (next_seq, next_lsn) = match sealed.last() {
            Some((seq, _, header)) => (seq + 1, header.last_lsn + 1),
            None => (1, 1),
        };
        let seq = match actives.as_slice() {
            [] => {
                if next_lsn <= acknowledged {
                    return Err(Error::corrupt(
                        &self.dir,
                        0,
                        format!(
                            "the log ends at lsn {} but frames up to lsn {acknowledged} were acknowledged: \
                             the active segment is missing",
                            next_lsn - 1
                        ),
                    ));
                }
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
        file.read_exact(&mut head).map_err(|_| Error::corrupt(&path, 0, "active segment header is truncated"))?;
        let header = ActiveHeader::decode(&head).map_err(|why| Error::corrupt(&path, 0, why))?;
        if header.seq != seq || header.seq != next_seq || header.first_lsn != next_lsn {
            return Err(Error::corrupt(
                &path,
                0,
                format!(
                    "active segment starts at seq {} lsn {}, but the sealed segments end before seq {next_seq} lsn \
                     {next_lsn}{}",
                    header.seq,
                    header.first_lsn,
                    if header.first_lsn > next_lsn {
                        ": the segments holding the frames between are missing"
                    } else {
                        ""
                    }
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
        active.scan_tail(&self.dir, len, acknowledged)?;
        Ok(active)
    }

    /// Removes the active segment `seq` after an interrupted seal, once the
    /// sealed segment `sealed` is known to hold every one of its frames.
    fn remove_sealed_active(&self, seq: u64, sealed: &Path) -> Result<()> {
        let path = self.active_path(seq);
        let bytes = fs::read(&path).ctx("read", &path)?;
        let refuse = |why: String| {
            Error::corrupt(
                &path,
                0,
                format!("{why}, but the sealed segment {} has the same number; nothing was removed", sealed.display()),
            )
        };
        let header = ActiveHeader::decode(&bytes).map_err(|why| refuse(why.into()))?;
        let frames = read::read_sealed_frames(sealed)?;
        let mut pos = ACTIVE_HEADER;
        let mut next = header.first_lsn;
        for (lsn, payload) in &frames {
            match decode_frame(&bytes[pos..]) {
                FrameRead::Frame { lsn: l, payload: p, size } if l == *lsn && l == next && p == payload.as_slice() => {
                    pos += size;
                    next += 1;
                }
                _ => return Err(refuse(format!("the frame at byte {pos} differs from lsn {lsn} of the sealed copy"))),
            }
        }
        if pos < bytes.len() {
            if let FrameRead::Frame { lsn, .. } = decode_frame(&bytes[pos..]) {
                return Err(refuse(format!("frame lsn {lsn} at byte {pos} is not in the sealed copy")));
            }
            quarantine(&self.dir, &path, pos as u64, &bytes[pos..])?;
        }
        // The sealed copy's name must be durable before the original goes.
        fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
        tracing::warn!(file = %path.display(), "removing an active segment already sealed by an interrupted seal");
        fs::remove_file(&path).ctx("remove", &path)?;
        fsync_dir(&self.dir).ctx("fsync", &self.dir)
    }

    /// Completes (or abandons) a rewrite that a crash interrupted: if its
    /// successor was written, the segment it replaces is removed; then the
    /// intent goes.
    pub(super) fn finish_rewrite(&self) -> Result<()> {
        let intent = self.dir.join(REWRITE_INTENT);
        let text = match fs::read_to_string(&intent) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("read", &intent, e)),
        };
        let mut lines = text.lines();
        let parsed = match (lines.next(), lines.next(), lines.next()) {
            (Some(REWRITE_MAGIC), Some(old), Some(new)) => {
                match (format::parse_sealed_name(old), format::parse_sealed_name(new)) {
                    (Some((a, _)), Some((b, _))) if a == b && old != new => Some((old, new)),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some((old, new)) = parsed else {
            return Err(Error::corrupt(&intent, 0, "unreadable rewrite intent; nothing was removed"));
        };
        let (old_path, new_path) = (self.dir.join(old), self.dir.join(new));
        if new_path.exists() && old_path.exists() {
            let header = |p: &Path| -> Result<SealedHeader> {
                let mut head = [0u8; SEALED_HEADER];
                File::open(p).and_then(|mut f| f.read_exact(&mut head)).ctx("read", p)?;
                SealedHeader::decode(&head).map_err(|why| Error::corrupt(p, 0, why))
            };
            let (o, n) = (header(&old_path)?, header(&new_path)?);
            if n.generation <= o.generation || (n.first_lsn, n.last_lsn) != (o.first_lsn, o.last_lsn) {
                return Err(Error::corrupt(&intent, 0, format!("{new} does not supersede {old}; nothing was removed")));
            }
            tracing::warn!(file = %old_path.display(), "removing a segment superseded by an interrupted rewrite");
            fs::remove_file(&old_path).ctx("remove", &old_path)?;
        }
        fs::remove_file(&intent).ctx("remove", &intent)?;
        fsync_dir(&self.dir).ctx("fsync", &self.dir)
    }

    /// Records that `new` is about to replace `old` (both sealed segment
    /// names), durably, before `new` is written.
    pub(super) fn begin_rewrite(&self, old: &str, new: &str) -> Result<()> {
        let intent = self.dir.join(REWRITE_INTENT);
        crate::base::fsutil::atomic_write(&intent, format!("{REWRITE_MAGIC}\n{old}\n{new}\n").as_bytes())
            .ctx("write", &intent)
    }

    /// The rewrite recorded by [`TapeLog::begin_rewrite`] is complete.
    pub(super) fn end_rewrite(&self) -> Result<()> {
        let intent = self.dir.join(REWRITE_INTENT);
        fs::remove_file(&intent).ctx("remove", &intent)?;
        fsync_dir(&self.dir).ctx("fsync", &self.dir)
    }
}

impl ActiveState {
    /// Validates frames between `self.end` and `len`. A torn tail (bad bytes
    /// that no valid frame follows, after frame `acknowledged`) is moved to the
    /// quarantine folder and cut; any other damage is refused.
    pub(super) fn scan_tail(&mut self, dir: &Path, len: u64, acknowledged: Lsn) -> Result<()> {
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
            self.check_acknowledged(acknowledged, why)?;
            let kept = quarantine(dir, &self.path, self.end, &buf[pos..])?;
            tracing::warn!(
                file = %self.path.display(),
                offset = self.end,
                bytes = len - self.end,
                reason = why,
                quarantine = %kept.display(),
                "cutting a torn tail left by an interrupted append (its bytes are kept in quarantine)"
            );
            self.file.set_len(self.end).ctx("truncate", &self.path)?;
            self.file.sync_all().ctx("fsync", &self.path)?;
        }
        Ok(())
    }

    /// Refuses when the valid frames end before frame `acknowledged`.
    fn check_acknowledged(&self, acknowledged: Lsn, why: &str) -> Result<()> {
        if self.last_lsn >= acknowledged {
            return Ok(());
        }
        Err(Error::corrupt(
            &self.path,
            self.end,
            format!(
                "the valid frames end at lsn {} ({why}), but frames up to lsn {acknowledged} were acknowledged: \
                 this is damage or a lost segment, not a torn tail; nothing was cut",
                self.last_lsn
            ),
        ))
    }
}

/// Keeps `bytes`, cut from `segment` at `offset`, in the quarantine folder
/// (durably, before the caller cuts them). Returns the file.
pub(super) fn quarantine(dir: &Path, segment: &Path, offset: u64, bytes: &[u8]) -> Result<PathBuf> {
    let folder = dir.join(QUARANTINE);
    fs::create_dir_all(&folder).ctx("create directory", &folder)?;
    let name = segment.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for n in 0u32.. {
        let file = if n == 0 { format!("{name}@{offset}.bin") } else { format!("{name}@{offset}.{n}.bin") };
        let path = folder.join(file);
        match fs::read(&path) {
            Ok(existing) if existing == bytes => return Ok(path),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("read", &path, e)),
        }
        let written = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&path)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            fsync_dir(&folder)?;
            fsync_dir(dir)
        })();
        written.ctx("write quarantine file", &path)?;
        return Ok(path);
    }
    unreachable!("u32 names run out")
}

/// The quarantined files of a tape directory, by name.
pub(super) fn quarantined(dir: &Path) -> Result<Vec<PathBuf>> {
    let folder = dir.join(QUARANTINE);
    let mut out = Vec::new();
    match fs::read_dir(&folder) {
        Ok(entries) => {
            for entry in entries {
                out.push(entry.ctx("list", &folder)?.path());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("list", &folder, e)),
    }
    out.sort();
    Ok(out)
}

/// The first valid frame in `buf` after its start, where a bad frame (whose
/// LSN should have been `expected`) begins: its offset and LSN. Only frames
/// that could follow the bad one count: an LSN from `expected` up to one more
/// per [`FRAME_HEADER`] bytes skipped, a correct checksum. Every offset is
/// tried, since the bad frame's length cannot be trusted.
pub(super) fn later_frame(buf: &[u8], expected: Lsn) -> Option<(usize, Lsn)> {
    (1..buf.len().saturating_sub(FRAME_HEADER - 1)).find_map(|at| {
        let lsn = format::u64_at(buf, at + 4);
        let reachable = lsn >= expected && lsn - expected <= (at / FRAME_HEADER) as u64;
        match reachable.then(|| decode_frame(&buf[at..])) {
            Some(FrameRead::Frame { lsn, .. }) => Some((at, lsn)),
            _ => None,
        }
    })
}

/// The files of a tape directory, classified.
#[derive(Debug)]
pub(super) struct Listing {
    pub(super) sealed: Vec<(u64, PathBuf)>,
    pub(super) actives: Vec<u64>,
    pub(super) temps: Vec<PathBuf>,
}

impl Listing {
    pub(super) fn read(dir: &Path) -> Result<Listing> {
        let mut listing = Listing { sealed: Vec::new(), actives: Vec::new(), temps: Vec::new() };
        for entry in fs::read_dir(dir).ctx("list", dir)? {
            let entry = entry.ctx("list", dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some((seq, _)) = format::parse_sealed_name(&name) {
                listing.sealed.push((seq, entry.path()));
            } else if let Some(seq) = format::parse_active_name(&name) {
                listing.actives.push(seq);
            } else if is_own_temp(&name) {
                listing.temps.push(entry.path());
            }
        }
        listing.sealed.sort();
        listing.actives.sort_unstable();
        Ok(listing)
    }

    /// Every sealed segment's header, in file name order. Two files for one
    /// sequence number are refused, naming both: recovery resolves an
    /// interrupted rewrite of its own (the `REWRITE` intent) before this runs,
    /// so a second file is not one this log wrote.
    pub(super) fn sealed_headers(&self) -> Result<Vec<(u64, PathBuf, SealedHeader)>> {
        let mut out: Vec<(u64, PathBuf, SealedHeader)> = Vec::with_capacity(self.sealed.len());
        for (seq, path) in &self.sealed {
            let mut head = [0u8; SEALED_HEADER];
            let mut f = File::open(path).ctx("open", path)?;
            f.read_exact(&mut head).map_err(|_| Error::corrupt(path, 0, "sealed segment header is truncated"))?;
            let header = SealedHeader::decode(&head).map_err(|why| Error::corrupt(path, 0, why))?;
            if header.seq != *seq {
                return Err(Error::corrupt(path, 0, format!("file name says seq {seq}, header says {}", header.seq)));
            }
            if let Some((_, prev, _)) = out.last().filter(|(s, _, _)| s == seq) {
                return Err(Error::corrupt(path, 0, duplicate_message(*seq, prev, path)));
            }
            out.push((*seq, path.clone(), header));
        }
        Ok(out)
    }

    /// [`Listing::sealed_headers`], checked to form one unbroken sequence from
    /// the log's first frame.
    pub(super) fn resolve_sealed(&self) -> Result<Vec<(u64, PathBuf, SealedHeader)>> {
        let sealed = self.sealed_headers()?;
        check_sequence(&sealed)?;
        Ok(sealed)
    }
}

/// What is wrong when two files claim sequence number `seq`.
pub(super) fn duplicate_message(seq: u64, a: &Path, b: &Path) -> String {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(
        "two segments claim seq {seq}: {} and {}; one is not part of this log (a segment copied in from another \
         data home?). Nothing was removed: move the one that does not belong out of the tape directory",
        name(a),
        name(b)
    )
}

/// Refuses a sequence of sealed segments that does not start at the log's
/// first frame or has a gap: a missing segment.
fn check_sequence(sealed: &[(u64, PathBuf, SealedHeader)]) -> Result<()> {
    let (mut want_seq, mut want_lsn) = (1u64, 1u64);
    for (seq, path, header) in sealed {
        if *seq != want_seq || header.first_lsn != want_lsn {
            return Err(Error::corrupt(
                path,
                0,
                format!(
                    "segment seq {seq} starts at lsn {}, but seq {want_seq} starting at lsn {want_lsn} was expected: \
                     the segments holding what comes between are missing",
                    header.first_lsn
                ),
            ));
        }
        want_seq = seq + 1;
        want_lsn = header.last_lsn + 1;
    }
    Ok(())
}

/// Whether `name` is a temporary file this module's writers make
/// (`fsutil::temp_path_for` of a segment or the rewrite intent).
fn is_own_temp(name: &str) -> bool {
    let Some(inner) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let mut parts = inner.rsplitn(3, '.');
    let (Some(nonce), Some(pid), Some(target)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    nonce.len() == 16
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
        && pid.bytes().all(|b| b.is_ascii_digit())
        && (format::parse_sealed_name(target).is_some()
            || format::parse_active_name(target).is_some()
            || target == REWRITE_INTENT)
}

/// Position of the last frame, kept in the lock file to make opening cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hint {
    pub(super) seq: u64,
    pub(super) last_frame_start: u64,
    pub(super) end: u64,
    pub(super) last_lsn: Lsn,
    /// The active segment's change time (seconds, nanoseconds) just after
    /// the writer that wrote this hint last changed it: a file changed since
    /// by anything else (an edit, a copy over it) has another, and its frames
    /// before the last are verified again. `None` in a hint of the first
    /// format, which did not keep it.
    pub(super) changed: Option<(i64, i64)>,
}

impl Hint {
    /// The first format, without the change time.
    const LEN_V1: usize = 44;
    const LEN: usize = 60;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[0..4].copy_from_slice(b"HNT2");
        out[4..12].copy_from_slice(&self.seq.to_le_bytes());
        out[12..20].copy_from_slice(&self.last_frame_start.to_le_bytes());
        out[20..28].copy_from_slice(&self.end.to_le_bytes());
        out[28..36].copy_from_slice(&self.last_lsn.to_le_bytes());
        // A hint without a change time (never written: `write` always has one)
        // gets one no file has.
        let (secs, nanos) = self.changed.unwrap_or((i64::MIN, -1));
        out[36..44].copy_from_slice(&secs.to_le_bytes());
        out[44..52].copy_from_slice(&nanos.to_le_bytes());
        let sum = format::checksum(&[&out[0..52]]);
        out[52..60].copy_from_slice(&sum);
        out
    }

    pub(super) fn read(file: &File) -> Option<Hint> {
        let mut buf = [0u8; Self::LEN];
        file.read_exact_at(&mut buf[..Self::LEN_V1], 0).ok()?;
        let changed = match &buf[0..4] {
            b"HINT" if buf[36..44] == format::checksum(&[&buf[0..36]]) => None,
            b"HNT2" => {
                file.read_exact_at(&mut buf[Self::LEN_V1..], Self::LEN_V1 as u64).ok()?;
                if buf[52..60] != format::checksum(&[&buf[0..52]]) {
                    return None;
                }
                Some((format::u64_at(&buf, 36) as i64, format::u64_at(&buf, 44) as i64))
            }
            _ => return None,
        };
        Some(Hint {
            seq: format::u64_at(&buf, 4),
            last_frame_start: format::u64_at(&buf, 12),
            end: format::u64_at(&buf, 20),
            last_lsn: format::u64_at(&buf, 28),
            changed,
        })
    }

    pub(super) fn write(&self, file: &File) -> std::io::Result<()> {
        file.write_all_at(&self.encode(), 0)
    }

    /// Destroys the hint durably (before a seal).
    pub(super) fn invalidate(file: &File) -> std::io::Result<()> {
        file.write_all_at(&[0u8; Self::LEN], 0)?;
        file.sync_data()
    }
}

/// The change time of a file's metadata, as a hint keeps it.
pub(super) fn change_time(meta: &fs::Metadata) -> (i64, i64) {
    use std::os::unix::fs::MetadataExt;
    (meta.ctime(), meta.ctime_nsec())
}
