//! Repair: making a log that recovery refuses usable again, keeping every
//! byte it can.
//!
//! Recovery refuses damage to acknowledged frames rather than cut them, so a
//! damaged log stops every writer until someone decides. [`TapeLog::repair`]
//! is that decision: every unreadable stretch of bytes is copied to the
//! quarantine folder, and each frame it held (its LSN is known from the
//! frames around it, the lock hint or the segment header) is replaced by a
//! placeholder payload the caller supplies (an event saying what was lost), so
//! the log keeps one frame per LSN and its order. A damaged active segment is
//! rewritten in place (atomically); a damaged sealed segment is rewritten as
//! its next generation, like a compaction, after the whole damaged file has
//! been quarantined. A sealed segment missing between two others (or before
//! the active one) left a known run of LSNs: it is replaced by a sealed
//! segment of placeholders for exactly those LSNs. A sealed segment whose
//! content is intact but whose name does not match it (its blake3 or its
//! sequence number) is renamed. Intact frames are never cut: what cannot be
//! repaired without doing so (segments that overlap, a sealed segment beyond
//! the active one, a header that no longer says which frames a segment held)
//! is reported, with why, and left alone.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::format::{
    self, ACTIVE_HEADER, ActiveHeader, ChunkHeader, FrameRead, Lsn, SEALED_HEADER, SealedHeader, active_name,
};
use super::recover::{Hint, LOCK, Listing, later_frame, quarantine};
use super::{SealBuffers, TapeLog, build_sealed, decode_frame, encode_frame, read, write_sealed};
use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::{FileLock, fsync_dir};

/// A run of frames that could not be read and were replaced by placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostRange {
    /// The damaged segment.
    pub file: PathBuf,
    /// First LSN lost.
    pub first_lsn: Lsn,
    /// Last LSN lost (`first_lsn - 1` when the damage held no whole frame:
    /// junk between frames).
    pub last_lsn: Lsn,
    /// Where the damaged bytes are kept.
    pub quarantine: PathBuf,
    /// What was wrong.
    pub reason: String,
}

/// What [`TapeLog::repair`] did.
#[derive(Clone, Debug, Default)]
pub struct RepairReport {
    /// Every damaged stretch, with the frames it held.
    pub lost: Vec<LostRange>,
    /// Files fixed without losing a frame (a misnamed segment renamed), one
    /// line each.
    pub fixed: Vec<String>,
    /// Problems repair cannot fix (left as they are).
    pub unrepaired: Vec<String>,
}

impl RepairReport {
    /// Frames replaced by placeholders.
    pub fn frames_lost(&self) -> u64 {
        self.lost.iter().map(|r| (r.last_lsn + 1).saturating_sub(r.first_lsn)).sum()
    }

    /// Whether the repair changed nothing.
    pub fn is_empty(&self) -> bool {
        self.lost.is_empty() && self.fixed.is_empty()
    }
}

/// Makes the placeholder payload of a lost frame: the range it belongs to and its LSN.
pub type Placeholder<'a> = dyn FnMut(&LostRange, Lsn) -> Vec<u8> + 'a;

impl TapeLog {
    /// Repairs a damaged log (see the module docs). `acknowledged` is an LSN
    /// known to have been acknowledged (the projection's position), so that
    /// frames up to it which are missing from the active segment's end count
    /// as lost. A log that needs no repair is left untouched.
    pub fn repair(&self, acknowledged: Lsn, placeholder: &mut Placeholder<'_>) -> Result<RepairReport> {
        let lock_path = self.dir.join(LOCK);
        let lock = FileLock::exclusive(&lock_path).ctx("lock", &lock_path)?;
        // What recovery resolves on its own first: an interrupted rewrite.
        self.finish_rewrite()?;
        let mut report = RepairReport::default();
        self.rename_misnamed(&Listing::read(&self.dir)?, &mut report)?;
        let listing = Listing::read(&self.dir)?;
        // A sealed segment numbered after an active one is not this log's
        // (its frames would overlap what the active segment holds).
        if let (Some(&active), Some((seq, path))) = (listing.actives.first(), listing.sealed.last())
            && *seq > active
        {
            report.unrepaired.push(format!(
                "{}: sealed segment seq {seq} lies beyond the active segment (seq {active}); a segment of another \
                 log? Move it out of the tape directory",
                path.display()
            ));
            return Ok(report);
        }
        let mut next = (1u64, 1u64);
        let mut bufs = SealBuffers::default();
        let mut seen_seqs = Vec::new();
        for (seq, path) in &listing.sealed {
            if seen_seqs.contains(seq) {
                report.unrepaired.push(format!("{}: a second segment for seq {seq}", path.display()));
                continue;
            }
            seen_seqs.push(*seq);
            match self.repair_sealed(path, &mut bufs, &mut report, placeholder)? {
                Some(header) => {
                    if (header.seq, header.first_lsn) != next {
                        match self.fill_missing(
                            next,
                            (header.seq, header.first_lsn),
                            &mut bufs,
                            &mut report,
                            placeholder,
                        ) {
                            Ok(()) => {}
                            Err(why) => report.unrepaired.push(format!("{}: {why}", path.display())),
                        }
                    }
                    next = (header.seq + 1, header.last_lsn + 1);
                }
                None => {
                    report.unrepaired.push(format!("{}: header unreadable; cannot tell its frames", path.display()))
                }
            }
        }
        if !report.unrepaired.is_empty() {
            return Ok(report);
        }
        let hint = Hint::read(lock.file());
        let actives: Vec<u64> = listing.actives.iter().copied().filter(|&s| s >= next.0).collect();
        let (seq, first_lsn) = match actives.as_slice() {
            [] => next,
            [one] => match self.place_active(*one, next, &mut bufs, &mut report, placeholder)? {
                Some(at) => at,
                None => return Ok(report),
            },
            many => {
                report.unrepaired.push(format!("several active segments {many:?}"));
                return Ok(report);
            }
        };
        let acknowledged = match hint {
            Some(h) if h.seq == seq => acknowledged.max(h.last_lsn),
            _ => acknowledged,
        };
        let changed = self.repair_active(seq, first_lsn, acknowledged, &mut report, placeholder)?;
        if changed || !report.is_empty() {
            // The hint described the damaged log: recovery checks the repaired one from scratch.
            Hint::invalidate(lock.file()).ctx("write hint to", &lock_path)?;
        }
        Ok(report)
    }

    /// Renames each sealed segment whose content is intact but whose name
    /// does not say it (the blake3 of its bytes, the sequence number of its
    /// header). A misnamed copy of a segment that is also present under its
    /// right name is moved to quarantine.
    fn rename_misnamed(&self, listing: &Listing, report: &mut RepairReport) -> Result<()> {
        for (_, path) in &listing.sealed {
            let bytes = fs::read(path).ctx("read", path)?;
            let Ok(header) = SealedHeader::decode(&bytes) else { continue };
            if read::read_sealed_frames(path).is_err() {
                continue; // damaged: rewritten under a new name by `repair_sealed`
            }
            let right = format::sealed_name(header.seq, &blake3::hash(&bytes));
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name == right {
                continue;
            }
            let to = self.dir.join(&right);
            if to.exists() {
                if fs::read(&to).ctx("read", &to)? != bytes {
                    report
                        .unrepaired
                        .push(format!("{}: its content belongs under {right}, which differs", path.display()));
                    continue;
                }
                let kept = quarantine(&self.dir, path, 0, &bytes)?;
                fs::remove_file(path).ctx("remove", path)?;
                fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
                report.fixed.push(format!(
                    "{}: a misnamed copy of {right}, moved to {}",
                    path.display(),
                    kept.display()
                ));
                continue;
            }
            fs::rename(path, &to).ctx("rename", path)?;
            fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
            tracing::warn!(from = %name, to = %right, "renamed a misnamed sealed segment");
            report.fixed.push(format!("{}: misnamed (its content is intact), renamed to {right}", path.display()));
        }
        Ok(())
    }

    /// Fills the gap between `next` (the sequence number and LSN the log
    /// should go on with) and `at` (those of the segment found there) with
    /// sealed segments of placeholders: the LSNs between are known to be
    /// lost with the missing segments. Each missing sequence number gets one
    /// segment (one placeholder each, the first all the others); the split
    /// between them is unknown and does not matter. `Err` says why the gap
    /// cannot be a run of missing segments (nothing is changed then).
    fn fill_missing(
        &self,
        next: (u64, Lsn),
        at: (u64, Lsn),
        bufs: &mut SealBuffers,
        report: &mut RepairReport,
        placeholder: &mut Placeholder<'_>,
    ) -> Result<(), String> {
        let ((want_seq, want_lsn), (seq, first_lsn)) = (next, at);
        if seq <= want_seq || first_lsn <= want_lsn || first_lsn - want_lsn < seq - want_seq {
            return Err(format!(
                "starts at seq {seq} lsn {first_lsn}, but seq {want_seq} lsn {want_lsn} was expected: it overlaps the \
                 segments before it (a segment of another log?), so no frame can be placed without losing intact \
                 ones; move it out of the tape directory"
            ));
        }
        let missing = seq - want_seq;
        let mut lsn = want_lsn;
        for (i, s) in (want_seq..seq).enumerate() {
            let count = if i == 0 { first_lsn - want_lsn - (missing - 1) } else { 1 };
            let range = LostRange {
                file: self.dir.join(format!("{s:010}-missing.seg")),
                first_lsn: lsn,
                last_lsn: lsn + count - 1,
                quarantine: PathBuf::new(),
                reason: format!("sealed segment seq {s} is missing"),
            };
            let frames: Vec<(Lsn, Vec<u8>)> = (lsn..lsn + count).map(|l| (l, placeholder(&range, l))).collect();
            let view = frames.iter().map(|(l, p)| Ok((0, *l, p.as_slice())));
            let built = build_sealed(s, 0, lsn, view, &range.file, &self.opts, bufs)
                .and_then(|header| write_sealed(&self.dir, &bufs.out, &header));
            match built {
                Ok(info) => {
                    tracing::warn!(segment = %info.name, first = lsn, events = count, "replaced a missing sealed segment by placeholders")
                }
                Err(e) => return Err(format!("cannot write a segment for the missing seq {s}: {e}")),
            }
            report.lost.push(range);
            lsn += count;
        }
        Ok(())
    }

    /// Where the one active segment `seq` goes on from, the sealed segments
    /// ending before `next`: `(seq, first LSN)` to repair it at. A misnamed
    /// active segment is renamed; sealed segments missing before it are
    /// filled ([`TapeLog::fill_missing`]). `None` (with the reason in the
    /// report) when that cannot be done without cutting intact frames.
    fn place_active(
        &self,
        seq: u64,
        next: (u64, Lsn),
        bufs: &mut SealBuffers,
        report: &mut RepairReport,
        placeholder: &mut Placeholder<'_>,
    ) -> Result<Option<(u64, Lsn)>> {
        let path = self.active_path(seq);
        let mut head = [0u8; ACTIVE_HEADER];
        let header = fs::File::open(&path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .ok()
            .and_then(|()| ActiveHeader::decode(&head).ok());
        let Some(header) = header else {
            if seq == next.0 {
                // `repair_active` writes the header the listing implies.
                return Ok(Some(next));
            }
            report.unrepaired.push(format!(
                "{}: its header is unreadable and the segments before it (seq {} to {}) are missing, so which \
                 frames they held cannot be told",
                path.display(),
                next.0,
                seq - 1
            ));
            return Ok(None);
        };
        if header.seq != seq && header.seq == next.0 && header.first_lsn == next.1 {
            let to = self.active_path(header.seq);
            if !to.exists() {
                fs::rename(&path, &to).ctx("rename", &path)?;
                fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
                report.fixed.push(format!(
                    "{}: misnamed (its header says seq {}), renamed to {}",
                    path.display(),
                    header.seq,
                    active_name(header.seq)
                ));
                return Ok(Some(next));
            }
        }
        if header.seq != seq {
            report.unrepaired.push(format!(
                "{}: its name says seq {seq} but its header says seq {} (from lsn {}); the sealed segments end before \
                 seq {} lsn {}",
                path.display(),
                header.seq,
                header.first_lsn,
                next.0,
                next.1
            ));
            return Ok(None);
        }
        if (header.seq, header.first_lsn) == next {
            return Ok(Some(next));
        }
        match self.fill_missing(next, (header.seq, header.first_lsn), bufs, report, placeholder) {
            Ok(()) => Ok(Some((header.seq, header.first_lsn))),
            Err(why) => {
                report.unrepaired.push(format!("{}: {why}", path.display()));
                Ok(None)
            }
        }
    }

    /// Checks a sealed segment and rewrites it if a chunk is damaged. Returns
    /// its header (`None` when that is unreadable).
    fn repair_sealed(
        &self,
        path: &Path,
        bufs: &mut SealBuffers,
        report: &mut RepairReport,
        placeholder: &mut Placeholder<'_>,
    ) -> Result<Option<SealedHeader>> {
        let bytes = fs::read(path).ctx("read", path)?;
        let Ok(header) = SealedHeader::decode(&bytes) else {
            return Ok(None);
        };
        if read::read_sealed_frames(path).is_ok() {
            return Ok(Some(header));
        }
        // Keep every chunk that verifies; a run of chunks that do not (or
        // whose framing is lost) becomes placeholders up to the next good one.
        let mut frames: Vec<(Lsn, Vec<u8>)> = Vec::new();
        let mut lost: Vec<(Lsn, Lsn, String)> = Vec::new();
        let mut pos = SEALED_HEADER;
        let mut expected = header.first_lsn;
        let mut bad: Option<String> = None;
        for index in 0..header.chunks {
            let good = ChunkHeader::decode(bytes.get(pos..).unwrap_or_default()).ok().and_then(|ch| {
                let start = pos + format::CHUNK_HEADER;
                let data = bytes.get(start..start + ch.compressed_len as usize)?;
                if !ch.verify(data) {
                    return None;
                }
                let raw = zstd::bulk::decompress(data, ch.raw_len as usize).ok()?;
                let parsed: std::result::Result<Vec<_>, _> =
                    format::ChunkFrames::new(&raw, ch.first_lsn, header.layout(), true)
                        .map(|r| r.map(|(l, p)| (l, p.to_vec())))
                        .collect();
                let parsed = parsed.ok().filter(|p| p.len() == ch.frames as usize)?;
                Some((ch, start + ch.compressed_len as usize, parsed))
            });
            match good {
                Some((ch, end, parsed)) if ch.first_lsn >= expected => {
                    if ch.first_lsn > expected {
                        let why = bad.take().unwrap_or_else(|| "chunk missing".into());
                        lost.push((expected, ch.first_lsn - 1, why));
                    }
                    bad = None;
                    expected = ch.last_lsn().saturating_add(1);
                    frames.extend(parsed);
                    pos = end;
                }
                _ => {
                    bad.get_or_insert_with(|| format!("chunk {index} at byte {pos} is damaged"));
                    // Trust its length to find the next chunk; if that is
                    // wrong too, the chunks after it fail and are lost as well.
                    pos = match ChunkHeader::decode(bytes.get(pos..).unwrap_or_default()) {
                        Ok(ch) => pos + format::CHUNK_HEADER + ch.compressed_len as usize,
                        Err(_) => bytes.len(),
                    };
                }
            }
        }
        if expected <= header.last_lsn {
            lost.push((expected, header.last_lsn, bad.unwrap_or_else(|| "frames missing".into())));
        }
        let kept = quarantine(&self.dir, path, 0, &bytes)?;
        let mut all: Vec<(Lsn, Vec<u8>)> = frames;
        for (first, last, reason) in lost {
            let range = LostRange {
                file: path.to_path_buf(),
                first_lsn: first,
                last_lsn: last,
                quarantine: kept.clone(),
                reason,
            };
            for lsn in first..=last {
                all.push((lsn, placeholder(&range, lsn)));
            }
            report.lost.push(range);
        }
        all.sort_by_key(|(lsn, _)| *lsn);
        let view = all.iter().map(|(lsn, p)| Ok((0, *lsn, p.as_slice())));
        let new_header =
            build_sealed(header.seq, header.generation + 1, header.first_lsn, view, path, &self.opts, bufs)?;
        let old = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let new = format::sealed_name(header.seq, &blake3::hash(&bufs.out));
        self.begin_rewrite(&old, &new)?;
        write_sealed(&self.dir, &bufs.out, &new_header)?;
        fs::remove_file(path).ctx("remove", path)?;
        fsync_dir(&self.dir).ctx("fsync", &self.dir)?;
        self.end_rewrite()?;
        tracing::warn!(old = %old, new = %new, "rewrote a damaged sealed segment; its damaged bytes are in quarantine");
        Ok(Some(new_header))
    }

    /// Rewrites the active segment `seq` (which should start at `first_lsn`)
    /// with placeholders for its unreadable frames and for frames up to
    /// `acknowledged` missing from its end; creates it if it is missing.
    /// Returns whether anything changed.
    fn repair_active(
        &self,
        seq: u64,
        first_lsn: Lsn,
        acknowledged: Lsn,
        report: &mut RepairReport,
        placeholder: &mut Placeholder<'_>,
    ) -> Result<bool> {
        let path = self.active_path(seq);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        let header = ActiveHeader { seq, first_lsn };
        let mut out = header.encode().to_vec();
        let mut changed = false;
        let mut pos = ACTIVE_HEADER;
        if !bytes.is_empty() && ActiveHeader::decode(&bytes) != Ok(header) {
            // A header that is damaged, or says another position: the
            // listing knows where this segment starts.
            let end = bytes.len().min(ACTIVE_HEADER);
            quarantine(&self.dir, &path, 0, &bytes[..end])?;
            changed = true;
        }
        let mut expected = first_lsn;
        // Reported only if the segment is rewritten.
        let mut lost = Vec::new();
        let mut lose = |from: usize, to: usize, first: Lsn, last: Lsn, why: String, out: &mut Vec<u8>| -> Result<()> {
            let kept =
                if to > from { quarantine(&self.dir, &path, from as u64, &bytes[from..to])? } else { PathBuf::new() };
            let range =
                LostRange { file: path.clone(), first_lsn: first, last_lsn: last, quarantine: kept, reason: why };
            for lsn in first..=last {
                encode_frame(out, lsn, &placeholder(&range, lsn));
            }
            lost.push(range);
            Ok(())
        };
        while pos < bytes.len() {
            let why = match decode_frame(&bytes[pos..]) {
                FrameRead::Frame { lsn, size, .. } if lsn == expected => {
                    out.extend_from_slice(&bytes[pos..pos + size]);
                    pos += size;
                    expected += 1;
                    continue;
                }
                FrameRead::Frame { lsn, .. } if lsn > expected => {
                    // An intact frame after a gap: the LSNs between are lost,
                    // the frame is kept.
                    changed = true;
                    lose(
                        pos,
                        pos,
                        expected,
                        lsn - 1,
                        format!("lsn {expected} to {} missing before byte {pos}", lsn - 1),
                        &mut out,
                    )?;
                    expected = lsn;
                    continue;
                }
                FrameRead::Frame { lsn, .. } => {
                    report.unrepaired.push(format!(
                        "{}: the intact frame at byte {pos} has lsn {lsn}, which the log already holds before it \
                         (expected {expected}); it is not cut",
                        path.display()
                    ));
                    return Ok(false);
                }
                FrameRead::Incomplete => "incomplete frame".to_owned(),
                FrameRead::Invalid(why) => why.to_owned(),
            };
            changed = true;
            match later_frame(&bytes[pos..], expected) {
                Some((at, lsn)) => {
                    lose(pos, pos + at, expected, lsn - 1, format!("{why} at byte {pos}"), &mut out)?;
                    pos += at;
                    expected = lsn;
                }
                None => {
                    let last = acknowledged.max(expected - 1);
                    lose(pos, bytes.len(), expected, last, format!("{why} at byte {pos}"), &mut out)?;
                    expected = last + 1;
                    pos = bytes.len();
                }
            }
        }
        if expected <= acknowledged {
            changed = true;
            let why = if bytes.is_empty() { "the active segment is missing" } else { "the segment ends early" };
            lose(bytes.len(), bytes.len(), expected, acknowledged, why.to_owned(), &mut out)?;
        }
        if !changed {
            return Ok(false);
        }
        report.lost.extend(lost);
        let tmp = crate::base::fsutil::temp_path_for(&path);
        let written = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(&out)?;
            f.sync_all()?;
            fs::rename(&tmp, &path)?;
            fsync_dir(&self.dir)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io("rewrite the repaired active segment", &path, e));
        }
        tracing::warn!(file = %path.display(), "rewrote a damaged active segment; its damaged bytes are in quarantine");
        Ok(true)
    }
}
