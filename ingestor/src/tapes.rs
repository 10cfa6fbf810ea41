//! The foundation commands over the tape log: listing segments, showing a
//! segment's or a session's events, verifying every checksum, rebuilding the
//! projection (`replay`) and compaction.

use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::storage::event::Event;
use shared::storage::journal::{self, CompactReport, ReplayProgress, ReplayReport, decode};
use shared::storage::tape::{Lsn, Problem, RepairReport, SegmentInfo, TapeLog, TapeOptions, VerifyReport};

use crate::adapter::WRITER;
use crate::error::{EngramContext, Error};

fn open(paths: &Paths) -> Result<TapeLog, Error> {
    TapeLog::open(&paths.tapes(), TapeOptions::default()).context("open the tape log")
}

/// Every segment, oldest first.
pub fn segments(paths: &Paths) -> Result<Vec<SegmentInfo>, Error> {
    open(paths)?.segments().context("list segments")
}

/// What `tapes show` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One segment.
    Segment(SegmentInfo),
    /// Every event of one session.
    Session(SessionKey),
}

/// Resolves `text`: a segment's file name, a unique prefix of one, or its
/// sequence number; else a session key (`harness:id`).
pub fn target(paths: &Paths, text: &str) -> Result<Target, Error> {
    let segs = segments(paths)?;
    if let Some(s) = segs.iter().find(|s| s.name == text) {
        return Ok(Target::Segment(s.clone()));
    }
    if let Ok(seq) = text.parse::<u64>()
        && let Some(s) = segs.iter().find(|s| s.seq == seq)
    {
        return Ok(Target::Segment(s.clone()));
    }
    let prefixed: Vec<&SegmentInfo> = segs.iter().filter(|s| s.name.starts_with(text)).collect();
    if let [one] = prefixed.as_slice() {
        return Ok(Target::Segment((*one).clone()));
    }
    if prefixed.len() > 1 {
        return Err(Error::InvalidArgument(format!(
            "{text:?} names {} segments; give more of the name",
            prefixed.len()
        )));
    }
    if text.contains(':') {
        return Ok(Target::Session(SessionKey::from(text)));
    }
    Err(Error::InvalidArgument(format!(
        "{text:?} is neither a segment (see `engram-ingestor tapes`) nor a session key (harness:id)"
    )))
}

/// What [`show`] calls for each event: its position, its stored bytes, the
/// event decoded.
pub type Visit<'a> = dyn FnMut(Lsn, &[u8], &Event) -> Result<(), Error> + 'a;

/// Calls `each` with every event of `target` (LSN, stored bytes, decoded
/// event), in log order; returns how many.
pub fn show(paths: &Paths, target: &Target, each: &mut Visit<'_>) -> Result<u64, Error> {
    let log = open(paths)?;
    let snapshot = log.snapshot().context("read the tape log")?;
    let (after, until, needle) = match target {
        Target::Segment(s) if s.events == 0 => return Ok(0),
        Target::Segment(s) => (s.first_lsn - 1, s.last_lsn, None),
        Target::Session(key) => {
            let quoted = serde_json::to_string(key.as_str()).unwrap_or_default();
            (0, Lsn::MAX, Some(format!("\"s\":{quoted}")))
        }
    };
    let mut n = 0;
    for frame in snapshot.frames_after(after) {
        let frame = frame.context("read the tape log")?;
        if frame.lsn > until {
            break;
        }
        if let Some(needle) = &needle
            && !contains(&frame.payload, needle.as_bytes())
        {
            continue;
        }
        let event = decode(frame.lsn, &frame.payload);
        if let Target::Session(key) = target
            && event.session.as_ref() != Some(key)
        {
            continue;
        }
        each(frame.lsn, &frame.payload, &event)?;
        n += 1;
    }
    Ok(n)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Checks every segment. A log too damaged to list (a broken segment header)
/// is reported as one problem rather than an error.
pub fn verify(paths: &Paths) -> Result<VerifyReport, Error> {
    // Frames the projection applied were acknowledged: a log that lacks them is damaged.
    match open(paths)?.verify_keeping(journal::projection_position(paths)) {
        Ok(report) => Ok(report),
        Err(shared::base::error::Error::Corrupt { file, offset, reason }) => {
            Ok(VerifyReport { problems: vec![Problem { file, offset, what: reason }], ..VerifyReport::default() })
        }
        Err(e) => Err(Error::engram("verify the tape log", e)),
    }
}

/// Repairs a damaged log: unreadable frames become `tape.lost` events, their
/// bytes kept in the tape directory's `quarantine/`.
pub fn repair(paths: &Paths, now: shared::base::time::Ts) -> Result<RepairReport, Error> {
    journal::repair(paths, WRITER, now).map_err(|e| Error::engram("repair the tape log", e))
}

/// Rebuilds the projection from the tapes; a damaged log is refused and
/// nothing changes.
pub fn replay(paths: &Paths, progress: &mut dyn FnMut(ReplayProgress)) -> Result<ReplayReport, Error> {
    shared::projection::replay(paths, progress).map_err(|e| {
        Error::engram("replay refused; the database was not changed (see `engram-ingestor tapes verify`)", e)
    })
}

/// Drains the hooks' spool, seals the active segment, removes forgotten
/// memories' text from the tapes and rebuilds the projection.
pub fn compact(paths: &Paths) -> Result<CompactReport, Error> {
    let mut journal = shared::projection::open(paths, WRITER).context("open the journal")?;
    journal.seal().context("seal the active segment")?;
    shared::projection::compact(&mut journal).context("compact the tape log")
}
