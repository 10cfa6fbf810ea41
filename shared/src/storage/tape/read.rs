//! Reading the tape log: snapshots, frame iteration, listings and verification.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::format::{self, ChunkFrames, ChunkHeader, ChunkLayout, FrameRead, Lsn, decode_frame};
use super::timestamp::payload_ts;
use super::{ACTIVE_HEADER, ActiveHeader, Problem, SEALED_HEADER, SealedHeader, SegmentInfo, VerifyReport};
use crate::base::error::{Error, IoContext, Result};

/// A sealed segment in a snapshot.
#[derive(Debug)]
pub(crate) struct SealedRef {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) header: SealedHeader,
}

/// The active segment in a snapshot, up to the length it had when taken.
#[derive(Debug)]
pub(crate) struct ActiveRef {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) header: ActiveHeader,
    pub(crate) end: u64,
    pub(crate) last_lsn: Lsn,
}

/// The log as it was when the snapshot was taken. Open file handles keep it
/// readable even if segments are sealed or rewritten afterwards.
#[derive(Debug)]
pub struct Snapshot {
    dir: PathBuf,
    sealed: Vec<SealedRef>,
    active: ActiveRef,
}

/// One frame read back from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Its sequence number.
    pub lsn: Lsn,
    /// The encoded event.
    pub payload: Vec<u8>,
}

impl Snapshot {
    pub(crate) fn new(dir: PathBuf, sealed: Vec<SealedRef>, active: ActiveRef) -> Snapshot {
        Snapshot { dir, sealed, active }
    }

    pub(crate) fn sealed_refs(&self) -> &[SealedRef] {
        &self.sealed
    }

    /// The tape directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// LSN of the last frame in the snapshot (0 if empty).
    pub fn last_lsn(&self) -> Lsn {
        self.active.last_lsn
    }

    /// Iterates over every frame with an LSN greater than `lsn`, in order.
    /// Segments and chunks wholly before `lsn` are skipped without reading.
    pub fn frames_after(&self, lsn: Lsn) -> FrameIter<'_> {
        FrameIter {
            snapshot: self,
            after: lsn,
            next_sealed: 0,
            sealed_reader: None,
            active_done: false,
            pending: VecDeque::new(),
            failed: false,
        }
    }

    /// Describes every segment, oldest first.
    pub fn segments(&self) -> Result<Vec<SegmentInfo>> {
        let mut out = Vec::new();
        for seg in &self.sealed {
            let h = &seg.header;
            out.push(SegmentInfo {
                name: file_name(&seg.path),
                seq: h.seq,
                sealed: true,
                generation: h.generation,
                bytes: seg.file.metadata().ctx("stat", &seg.path)?.len(),
                raw_bytes: h.raw_bytes,
                events: h.events,
                first_lsn: h.first_lsn,
                last_lsn: h.last_lsn,
                min_ts: (h.events > 0).then_some(h.min_ts),
                max_ts: (h.events > 0).then_some(h.max_ts),
            });
        }
        let raw = self.read_active()?;
        let mut info = SegmentInfo {
            name: file_name(&self.active.path),
            seq: self.active.header.seq,
            sealed: false,
            generation: 0,
            bytes: self.active.end,
            raw_bytes: raw.len() as u64,
            events: 0,
            first_lsn: 0,
            last_lsn: 0,
            min_ts: None,
            max_ts: None,
        };
        let mut pos = 0;
        let mut next = self.active.header.first_lsn;
        while pos < raw.len() {
            let why = match decode_frame(&raw[pos..]) {
                FrameRead::Frame { lsn, payload, size } if lsn == next => {
                    if info.events == 0 {
                        info.first_lsn = lsn;
                    }
                    info.last_lsn = lsn;
                    info.events += 1;
                    if let Some(ts) = payload_ts(payload) {
                        info.min_ts = Some(info.min_ts.map_or(ts, |m: i64| m.min(ts)));
                        info.max_ts = Some(info.max_ts.map_or(ts, |m: i64| m.max(ts)));
                    }
                    pos += size;
                    next += 1;
                    continue;
                }
                FrameRead::Frame { lsn, .. } => format!("lsn {lsn}, expected {next}"),
                FrameRead::Incomplete => "incomplete".to_owned(),
                FrameRead::Invalid(why) => why.to_owned(),
            };
            // A listing that stopped here would show the frames after the
            // damage as missing (or the segment as empty) and say nothing.
            return Err(Error::corrupt(
                &self.active.path,
                ACTIVE_HEADER as u64 + pos as u64,
                format!(
                    "the frame at byte {}: {why}; the active segment is damaged (run `engram-ingestor tapes verify`, \
                     then `engram-ingestor tapes repair`)",
                    ACTIVE_HEADER + pos
                ),
            ));
        }
        out.push(info);
        Ok(out)
    }

    /// Verifies every segment completely.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        let mut expected = Some(1);
        for seg in &self.sealed {
            report.segments += 1;
            verify_sealed(&seg.path, &mut expected, &mut report)?;
        }
        report.segments += 1;
        let raw = self.read_active()?;
        verify_active(&self.active.path, self.active.header.first_lsn, &raw, &mut expected, &mut report);
        Ok(report)
    }

    fn read_active(&self) -> Result<Vec<u8>> {
        let mut buf = Vec::with_capacity((self.active.end - ACTIVE_HEADER as u64) as usize);
        let mut f = &self.active.file;
        f.seek(SeekFrom::Start(ACTIVE_HEADER as u64)).ctx("seek", &self.active.path)?;
        f.take(self.active.end - ACTIVE_HEADER as u64).read_to_end(&mut buf).ctx("read", &self.active.path)?;
        Ok(buf)
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Reads every frame of a sealed segment, verifying chunk checksums and LSNs.
pub(crate) fn read_sealed_frames(path: &Path) -> Result<Vec<(Lsn, Vec<u8>)>> {
    let bytes = std::fs::read(path).ctx("read", path)?;
    let header = SealedHeader::decode(&bytes).map_err(|why| Error::corrupt(path, 0, why))?;
    let mut out = Vec::with_capacity(usize::try_from(header.events).unwrap_or(0).min(1 << 20));
    let mut pos = SEALED_HEADER;
    for _ in 0..header.chunks {
        let ch = ChunkHeader::decode(bytes.get(pos..).unwrap_or_default())
            .map_err(|why| Error::corrupt(path, pos as u64, why))?;
        let data_start = pos + format::CHUNK_HEADER;
        let data = bytes
            .get(data_start..data_start + ch.compressed_len as usize)
            .ok_or_else(|| Error::corrupt(path, pos as u64, "chunk extends past the end of the file"))?;
        if !ch.verify(data) {
            return Err(Error::corrupt(path, pos as u64, "chunk checksum mismatch"));
        }
        let raw = zstd::bulk::decompress(data, ch.raw_len as usize)
            .map_err(|e| Error::corrupt(path, pos as u64, format!("chunk does not decompress: {e}")))?;
        let expected = out.last().map_or(header.first_lsn, |(lsn, _): &(Lsn, Vec<u8>)| lsn + 1);
        if ch.first_lsn != expected {
            return Err(Error::corrupt(
                path,
                pos as u64,
                format!("chunk starts at lsn {}, expected {expected}", ch.first_lsn),
            ));
        }
        visit_chunk(&raw, &ch, header.layout(), path, pos as u64, &mut |lsn, payload| {
            out.push((lsn, payload.to_vec()));
            Ok(())
        })?;
        pos = data_start + ch.compressed_len as usize;
    }
    if out.last().map(|(lsn, _)| *lsn) != Some(header.last_lsn).filter(|_| header.events > 0) {
        return Err(Error::corrupt(
            path,
            0,
            format!("segment does not end at lsn {} as its header says", header.last_lsn),
        ));
    }
    Ok(out)
}

/// Verifies the files of a log that recovery refused to open: every segment as
/// it is on disk, sealed ones in sequence order and then the active ones.
/// The most a chunk that failed its checksum may decompress to while
/// `verify` describes it: its header's size is not trusted.
const UNVERIFIED_RAW_CAP: usize = 1 << 20;

pub(crate) fn verify_files(sealed: &[PathBuf], actives: &[PathBuf]) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let mut expected = Some(1);
    for path in sealed {
        report.segments += 1;
        verify_sealed(path, &mut expected, &mut report)?;
    }
    for path in actives {
        report.segments += 1;
        let bytes = std::fs::read(path).ctx("read", path)?;
        match ActiveHeader::decode(&bytes) {
            Ok(header) => {
                let raw = bytes.get(ACTIVE_HEADER..).unwrap_or_default();
                verify_active(path, header.first_lsn, raw, &mut expected, &mut report);
            }
            Err(why) => {
                report.problems.push(Problem { file: path.clone(), offset: 0, what: why.into() });
                expected = None;
            }
        }
    }
    Ok(report)
}

/// What a segment that starts after the LSN it should start at means.
fn missing(first: Lsn, want: Lsn) -> &'static str {
    if first > want { ": the segments holding the frames between are missing" } else { "" }
}

/// Checks the frames of an active segment (`raw` is what follows its header).
/// `expected` is the LSN the segment should start at, `None` when unknown
/// (after a damaged segment); it is left at the LSN that should follow.
fn verify_active(path: &Path, first_lsn: Lsn, raw: &[u8], expected: &mut Option<Lsn>, report: &mut VerifyReport) {
    let mut problem =
        |offset: u64, what: String| report.problems.push(Problem { file: path.to_path_buf(), offset, what });
    if let Some(want) = *expected
        && first_lsn != want
    {
        problem(0, format!("active segment starts at lsn {first_lsn}, expected {want}{}", missing(first_lsn, want)));
    }
    let mut pos = 0usize;
    let mut next = first_lsn;
    let mut frames = 0u64;
    while pos < raw.len() {
        let offset = ACTIVE_HEADER as u64 + pos as u64;
        match decode_frame(&raw[pos..]) {
            FrameRead::Frame { lsn, size, .. } => {
                frames += 1;
                if lsn != next {
                    problem(offset, format!("frame has lsn {lsn}, expected {next}"));
                }
                next = lsn + 1;
                pos += size;
            }
            FrameRead::Incomplete => {
                problem(offset, "incomplete frame".into());
                break;
            }
            FrameRead::Invalid(why) => {
                problem(offset, why.into());
                break;
            }
        }
    }
    report.frames += frames;
    *expected = Some(next);
}

/// Checks a sealed segment: name hash, header, chunk checksums, frames and
/// LSNs. `expected` as for [`verify_active`].
fn verify_sealed(path: &Path, expected: &mut Option<Lsn>, report: &mut VerifyReport) -> Result<()> {
    let problem = |report: &mut VerifyReport, offset: u64, what: String| {
        report.problems.push(Problem { file: path.to_path_buf(), offset, what });
    };
    let bytes = std::fs::read(path).ctx("read", path)?;
    let name = file_name(path);
    if let Some((_, hash)) = format::parse_sealed_name(&name)
        && blake3::hash(&bytes).to_hex().as_str() != hash
    {
        problem(report, 0, "file content does not match the blake3 in its name".into());
    }
    let header = match SealedHeader::decode(&bytes) {
        Ok(h) => h,
        Err(why) => {
            problem(report, 0, why.into());
            *expected = None;
            return Ok(());
        }
    };
    if let Some(want) = *expected
        && header.first_lsn != want
    {
        problem(
            report,
            0,
            format!("segment starts at lsn {}, expected {want}{}", header.first_lsn, missing(header.first_lsn, want)),
        );
    }
    let mut pos = SEALED_HEADER;
    let mut frames = 0u64;
    let mut next = header.first_lsn;
    for index in 0..header.chunks {
        let Ok(ch) = ChunkHeader::decode(bytes.get(pos..).unwrap_or_default()) else {
            problem(report, pos as u64, format!("chunk {index}: header is truncated"));
            break;
        };
        let data_start = pos + format::CHUNK_HEADER;
        let Some(data) = bytes.get(data_start..data_start + ch.compressed_len as usize) else {
            problem(report, pos as u64, format!("chunk {index}: extends past the end of the file"));
            break;
        };
        // A chunk that fails its checksum is still decompressed for the
        // report, but its damaged `raw_len` must not size the buffer (a
        // flipped bit asked for 4 GiB; found by fuzz/tape_recover).
        let mut raw_cap = ch.raw_len as usize;
        if !ch.verify(data) {
            problem(report, pos as u64, format!("chunk {index}: checksum mismatch"));
            raw_cap = raw_cap.min(UNVERIFIED_RAW_CAP);
        }
        match zstd::bulk::decompress(data, raw_cap) {
            Ok(raw) => {
                if header.layout() == ChunkLayout::Entries && ch.first_lsn != next {
                    // Entries are numbered from the chunk's first LSN: report it once.
                    problem(
                        report,
                        pos as u64,
                        format!("chunk {index}: starts at lsn {}, expected {next}", ch.first_lsn),
                    );
                    next = ch.first_lsn;
                }
                let mut in_chunk = 0u32;
                let mut chunk_frames = ChunkFrames::new(&raw, ch.first_lsn, header.layout(), true);
                loop {
                    let at = chunk_frames.offset();
                    match chunk_frames.next() {
                        None => break,
                        Some(Ok((lsn, _))) => {
                            report.frames += 1;
                            if lsn != next {
                                problem(
                                    report,
                                    pos as u64,
                                    format!("chunk {index}, frame at byte {at}: lsn {lsn}, expected {next}"),
                                );
                            }
                            next = lsn + 1;
                            in_chunk += 1;
                        }
                        Some(Err((at, why))) => {
                            problem(report, pos as u64, format!("chunk {index}, frame at byte {at}: {why}"));
                        }
                    }
                }
                if in_chunk != ch.frames {
                    problem(report, pos as u64, format!("chunk {index}: {in_chunk} frames, header says {}", ch.frames));
                }
                frames += u64::from(in_chunk);
            }
            Err(e) => problem(report, pos as u64, format!("chunk {index}: does not decompress: {e}")),
        }
        pos = data_start + ch.compressed_len as usize;
    }
    if frames != header.events || next != header.last_lsn + 1 {
        problem(
            report,
            0,
            format!(
                "header says {} events up to lsn {}, found {frames} up to {}",
                header.events,
                header.last_lsn,
                next.saturating_sub(1)
            ),
        );
    }
    if pos != bytes.len() {
        problem(report, pos as u64, format!("{} trailing bytes after the last chunk", bytes.len() - pos));
    }
    *expected = Some(header.last_lsn + 1);
    Ok(())
}

/// Iterates over frames in LSN order. Yields an error (and then stops) at the
/// first damaged chunk or frame.
#[derive(Debug)]
pub struct FrameIter<'a> {
    snapshot: &'a Snapshot,
    after: Lsn,
    next_sealed: usize,
    sealed_reader: Option<SealedReader<'a>>,
    active_done: bool,
    pending: VecDeque<Frame>,
    failed: bool,
}

#[derive(Debug)]
struct SealedReader<'a> {
    seg: &'a SealedRef,
    reader: BufReader<&'a File>,
    pos: u64,
    chunks_left: u32,
}

impl FrameIter<'_> {
    /// Queues in `pending` the frames `visit` finds after `self.after`.
    fn push_frames(
        &mut self,
        visit: impl FnOnce(&mut dyn FnMut(Lsn, &[u8]) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let after = self.after;
        let pending = &mut self.pending;
        visit(&mut |lsn, payload| {
            if lsn > after {
                pending.push_back(Frame { lsn, payload: payload.to_vec() });
            }
            Ok(())
        })
    }

    fn refill(&mut self) -> Result<bool> {
        loop {
            if let Some(sr) = self.sealed_reader.as_mut() {
                if sr.chunks_left == 0 {
                    self.sealed_reader = None;
                    continue;
                }
                let seg = sr.seg;
                let mut head = [0u8; format::CHUNK_HEADER];
                sr.reader
                    .read_exact(&mut head)
                    .map_err(|_| Error::corrupt(&seg.path, sr.pos, "chunk header is truncated"))?;
                let ch = ChunkHeader::decode(&head).map_err(|why| Error::corrupt(&seg.path, sr.pos, why))?;
                let chunk_pos = sr.pos;
                sr.pos += format::CHUNK_HEADER as u64 + u64::from(ch.compressed_len);
                sr.chunks_left -= 1;
                if ch.last_lsn() <= self.after {
                    sr.reader.seek_relative(i64::from(ch.compressed_len)).ctx("seek", &seg.path)?;
                    continue;
                }
                let mut data = Vec::new();
                read_chunk_data(&mut sr.reader, &ch, &mut data)
                    .map_err(|_| Error::corrupt(&seg.path, chunk_pos, "chunk extends past the end of the file"))?;
                if !ch.verify(&data) {
                    return Err(Error::corrupt(&seg.path, chunk_pos, "chunk checksum mismatch"));
                }
                let raw = zstd::bulk::decompress(&data, ch.raw_len as usize)
                    .map_err(|e| Error::corrupt(&seg.path, chunk_pos, format!("chunk does not decompress: {e}")))?;
                self.push_frames(|f| visit_chunk(&raw, &ch, seg.header.layout(), &seg.path, chunk_pos, f))?;
                if !self.pending.is_empty() {
                    return Ok(true);
                }
                continue;
            }
            if self.next_sealed < self.snapshot.sealed.len() {
                let seg = &self.snapshot.sealed[self.next_sealed];
                self.next_sealed += 1;
                if seg.header.last_lsn <= self.after {
                    continue;
                }
                let mut reader = BufReader::with_capacity(1 << 16, &seg.file);
                reader.seek(SeekFrom::Start(SEALED_HEADER as u64)).ctx("seek", &seg.path)?;
                self.sealed_reader =
                    Some(SealedReader { seg, reader, pos: SEALED_HEADER as u64, chunks_left: seg.header.chunks });
                continue;
            }
            if !self.active_done {
                self.active_done = true;
                let raw = self.snapshot.read_active()?;
                let path = self.snapshot.active.path.clone();
                self.push_frames(|f| visit_frames(&raw, &path, ACTIVE_HEADER as u64, f))?;
                return Ok(!self.pending.is_empty());
            }
            return Ok(false);
        }
    }
}

/// Calls `f` for each frame of an active segment's `raw` frames (whose first
/// byte is at `base` in `file`), verifying each checksum.
fn visit_frames(raw: &[u8], file: &Path, base: u64, f: &mut dyn FnMut(Lsn, &[u8]) -> Result<()>) -> Result<()> {
    let mut at = 0usize;
    while at < raw.len() {
        match decode_frame(&raw[at..]) {
            FrameRead::Frame { lsn, payload, size } => {
                f(lsn, payload)?;
                at += size;
            }
            FrameRead::Incomplete => {
                return Err(Error::corrupt(file, base, format!("frame at byte {at}: incomplete")));
            }
            FrameRead::Invalid(why) => {
                return Err(Error::corrupt(file, base, format!("frame at byte {at}: {why}")));
            }
        }
    }
    Ok(())
}

/// Calls `f` for each frame of a decompressed chunk (`ch`, at `chunk_pos` in
/// `file`, its checksum verified, so frames of format 1 are not checked one
/// by one), and checks that the chunk holds as many frames as it says.
fn visit_chunk(
    raw: &[u8],
    ch: &ChunkHeader,
    layout: ChunkLayout,
    file: &Path,
    chunk_pos: u64,
    f: &mut dyn FnMut(Lsn, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut count = 0u32;
    for read in ChunkFrames::new(raw, ch.first_lsn, layout, false) {
        match read {
            Ok((lsn, payload)) => {
                f(lsn, payload)?;
                count += 1;
            }
            Err((at, why)) => {
                return Err(Error::corrupt(file, chunk_pos, format!("in chunk, frame at byte {at}: {why}")));
            }
        }
    }
    if count != ch.frames {
        return Err(Error::corrupt(
            file,
            chunk_pos,
            format!("chunk holds {count} frames, its header says {}", ch.frames),
        ));
    }
    Ok(())
}

impl Snapshot {
    /// Calls `f` for every frame with an LSN greater than `lsn`, in order,
    /// without copying payloads. Stops at the first damaged chunk or frame, or
    /// at the first error `f` returns.
    pub fn visit_after(&self, lsn: Lsn, f: &mut dyn FnMut(Lsn, &[u8]) -> Result<()>) -> Result<()> {
        let mut data = Vec::new();
        for seg in &self.sealed {
            if seg.header.last_lsn <= lsn {
                continue;
            }
            let mut reader = BufReader::with_capacity(1 << 16, &seg.file);
            reader.seek(SeekFrom::Start(SEALED_HEADER as u64)).ctx("seek", &seg.path)?;
            let mut pos = SEALED_HEADER as u64;
            for _ in 0..seg.header.chunks {
                let mut head = [0u8; format::CHUNK_HEADER];
                reader
                    .read_exact(&mut head)
                    .map_err(|_| Error::corrupt(&seg.path, pos, "chunk header is truncated"))?;
                let ch = ChunkHeader::decode(&head).map_err(|why| Error::corrupt(&seg.path, pos, why))?;
                let chunk_pos = pos;
                pos += format::CHUNK_HEADER as u64 + u64::from(ch.compressed_len);
                if ch.last_lsn() <= lsn {
                    reader.seek_relative(i64::from(ch.compressed_len)).ctx("seek", &seg.path)?;
                    continue;
                }
                read_chunk_data(&mut reader, &ch, &mut data)
                    .map_err(|_| Error::corrupt(&seg.path, chunk_pos, "chunk extends past the end of the file"))?;
                if !ch.verify(&data) {
                    return Err(Error::corrupt(&seg.path, chunk_pos, "chunk checksum mismatch"));
                }
                let raw = zstd::bulk::decompress(&data, ch.raw_len as usize)
                    .map_err(|e| Error::corrupt(&seg.path, chunk_pos, format!("chunk does not decompress: {e}")))?;
                visit_chunk(&raw, &ch, seg.header.layout(), &seg.path, chunk_pos, &mut |l, p| {
                    if l > lsn { f(l, p) } else { Ok(()) }
                })?;
            }
        }
        let raw = self.read_active()?;
        visit_frames(&raw, &self.active.path, ACTIVE_HEADER as u64, &mut |l, p| {
            if l > lsn { f(l, p) } else { Ok(()) }
        })
    }
}

impl Snapshot {
    /// The frames with the given LSNs (sorted ascending; unknown ones are
    /// skipped), reading only the chunks that hold them.
    pub fn frames_at(&self, lsns: &[Lsn]) -> Result<Vec<Frame>> {
        let mut out = Vec::with_capacity(lsns.len());
        let mut want = lsns.iter().copied().peekable();
        let mut data = Vec::new();
        for seg in &self.sealed {
            while want.peek().is_some_and(|&l| l < seg.header.first_lsn) {
                want.next();
            }
            if want.peek().is_none_or(|&l| l > seg.header.last_lsn) {
                continue;
            }
            let mut reader = BufReader::with_capacity(1 << 16, &seg.file);
            reader.seek(SeekFrom::Start(SEALED_HEADER as u64)).ctx("seek", &seg.path)?;
            let mut pos = SEALED_HEADER as u64;
            for _ in 0..seg.header.chunks {
                let mut head = [0u8; format::CHUNK_HEADER];
                reader
                    .read_exact(&mut head)
                    .map_err(|_| Error::corrupt(&seg.path, pos, "chunk header is truncated"))?;
                let ch = ChunkHeader::decode(&head).map_err(|why| Error::corrupt(&seg.path, pos, why))?;
                let chunk_pos = pos;
                pos += format::CHUNK_HEADER as u64 + u64::from(ch.compressed_len);
                let wanted = want.peek().is_some_and(|&l| l >= ch.first_lsn && l <= ch.last_lsn());
                if !wanted {
                    reader.seek_relative(i64::from(ch.compressed_len)).ctx("seek", &seg.path)?;
                    continue;
                }
                read_chunk_data(&mut reader, &ch, &mut data)
                    .map_err(|_| Error::corrupt(&seg.path, chunk_pos, "chunk extends past the end of the file"))?;
                if !ch.verify(&data) {
                    return Err(Error::corrupt(&seg.path, chunk_pos, "chunk checksum mismatch"));
                }
                let raw = zstd::bulk::decompress(&data, ch.raw_len as usize)
                    .map_err(|e| Error::corrupt(&seg.path, chunk_pos, format!("chunk does not decompress: {e}")))?;
                visit_chunk(&raw, &ch, seg.header.layout(), &seg.path, chunk_pos, &mut |l, p| {
                    while want.peek().is_some_and(|&w| w < l) {
                        want.next();
                    }
                    if want.peek() == Some(&l) {
                        out.push(Frame { lsn: l, payload: p.to_vec() });
                        want.next();
                    }
                    Ok(())
                })?;
            }
        }
        if want.peek().is_some() {
            let raw = self.read_active()?;
            visit_frames(&raw, &self.active.path, ACTIVE_HEADER as u64, &mut |l, p| {
                while want.peek().is_some_and(|&w| w < l) {
                    want.next();
                }
                if want.peek() == Some(&l) {
                    out.push(Frame { lsn: l, payload: p.to_vec() });
                    want.next();
                }
                Ok(())
            })?;
        }
        Ok(out)
    }
}

impl Iterator for FrameIter<'_> {
    type Item = Result<Frame>;

    fn next(&mut self) -> Option<Result<Frame>> {
        if self.failed {
            return None;
        }
        if let Some(frame) = self.pending.pop_front() {
            return Some(Ok(frame));
        }
        match self.refill() {
            Ok(true) => self.pending.pop_front().map(Ok),
            Ok(false) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads a chunk's compressed bytes into `data` (replacing what it held).
/// The header's length is not trusted before the checksum: the buffer grows
/// with the bytes the file really has, so a damaged length cannot make it
/// reserve gigabytes. An error when the file ends first.
fn read_chunk_data(reader: &mut impl Read, ch: &ChunkHeader, data: &mut Vec<u8>) -> std::io::Result<()> {
    data.clear();
    let want = u64::from(ch.compressed_len);
    reader.by_ref().take(want).read_to_end(data)?;
    if data.len() as u64 == want { Ok(()) } else { Err(std::io::ErrorKind::UnexpectedEof.into()) }
}
