//! Tests of the tape log: round trips, sealing, crash recovery, verification, rewrites.

use std::fs::{self, OpenOptions};
use std::io::Write;

use proptest::prelude::*;

use super::*;

fn opts(segment_bytes: u64) -> TapeOptions {
    TapeOptions { segment_bytes, chunk_bytes: 512, zstd_level: 1, auto_seal: true }
}

fn payload(i: u64) -> Vec<u8> {
    format!(r#"{{"ts":{},"k":"msg.in","b":{{"text":"event number {i} with some repeated text text text"}}}}"#, 1000 + i)
        .into_bytes()
}

fn append_n(log: &TapeLog, from: u64, n: u64) -> Lsn {
    let payloads: Vec<Vec<u8>> = (from..from + n).map(payload).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    log.lock().unwrap().append(&refs).unwrap()
}

fn read_all(log: &TapeLog) -> Vec<Frame> {
    let snap = log.snapshot().unwrap();
    snap.frames_after(0).collect::<Result<Vec<_>>>().unwrap()
}

fn files(log: &TapeLog) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(log.dir()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn append_then_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    assert_eq!(append_n(&log, 1, 3), 1);
    assert_eq!(append_n(&log, 4, 2), 4);
    let frames = read_all(&log);
    assert_eq!(frames.iter().map(|f| f.lsn).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    assert_eq!(frames[3].payload, payload(4));
    assert_eq!(log.lock().unwrap().last_lsn(), 5);
}

#[test]
fn sealing_compresses_and_keeps_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(2_000)).unwrap();
    for batch in 0..20 {
        append_n(&log, batch * 10 + 1, 10);
    }
    let segs = log.segments().unwrap();
    assert!(segs.iter().filter(|s| s.sealed).count() >= 5, "{segs:?}");
    for s in segs.iter().filter(|s| s.sealed) {
        assert!(s.bytes < s.raw_bytes, "compressed {} raw {}", s.bytes, s.raw_bytes);
        assert!(s.min_ts.is_some());
    }
    let frames = read_all(&log);
    assert_eq!(frames.len(), 200);
    assert!(frames.iter().enumerate().all(|(i, f)| f.lsn == i as u64 + 1 && f.payload == payload(i as u64 + 1)));
    let report = log.verify().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.frames, 200);
    // Reading from the middle skips whole segments.
    let snap = log.snapshot().unwrap();
    let tail: Vec<Lsn> = snap.frames_after(150).map(|f| f.unwrap().lsn).collect();
    assert_eq!(tail, (151..=200).collect::<Vec<_>>());
}

#[test]
fn torn_tail_is_truncated_on_next_lock() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 4);
    let active = dir.path().join(active_name(1));
    let good_len = fs::metadata(&active).unwrap().len();
    // A frame header promising more bytes than were written.
    let mut partial = Vec::new();
    encode_frame(&mut partial, 5, &payload(5));
    partial.truncate(partial.len() - 7);
    OpenOptions::new().append(true).open(&active).unwrap().write_all(&partial).unwrap();
    let mut w = log.lock().unwrap();
    assert_eq!(w.last_lsn(), 4);
    assert_eq!(fs::metadata(&active).unwrap().len(), good_len);
    assert_eq!(w.append(&[&payload(5)]).unwrap(), 5);
    drop(w);
    assert_eq!(read_all(&log).len(), 5);
}

#[test]
fn garbage_after_last_frame_is_truncated_even_without_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 3);
    fs::write(dir.path().join("LOCK"), b"garbage").unwrap();
    let active = dir.path().join(active_name(1));
    OpenOptions::new().append(true).open(&active).unwrap().write_all(&[0xAB; 100]).unwrap();
    assert_eq!(log.lock().unwrap().last_lsn(), 3);
    assert_eq!(read_all(&log).len(), 3);
}

#[test]
fn stale_hint_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 2);
    let hint = fs::read(dir.path().join("LOCK")).unwrap();
    append_n(&log, 3, 2);
    // Put back the older hint: the frames after it must still be found.
    fs::write(dir.path().join("LOCK"), &hint).unwrap();
    assert_eq!(log.lock().unwrap().last_lsn(), 4);
}

#[test]
fn interrupted_seal_is_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    let active = dir.path().join(active_name(1));
    let saved = fs::read(&active).unwrap();
    log.lock().unwrap().seal().unwrap().unwrap();
    // Simulate a crash after the sealed file was written but before the old
    // active segment was removed (and before the new one was created).
    fs::write(&active, &saved).unwrap();
    fs::remove_file(dir.path().join(active_name(2))).unwrap();
    fs::write(dir.path().join("LOCK"), b"").unwrap();
    let mut w = log.lock().unwrap();
    assert_eq!(w.last_lsn(), 5);
    assert_eq!(w.append(&[&payload(6)]).unwrap(), 6);
    drop(w);
    assert!(!active.exists());
    assert_eq!(read_all(&log).len(), 6);
}

#[test]
fn leftover_temporary_files_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 1);
    let ours = crate::base::fsutil::temp_path_for(&dir.path().join(sealed_name(2, &blake3::hash(b"x"))));
    fs::write(&ours, b"half").unwrap();
    // A user's file that merely ends in `.tmp` is not ours to remove.
    fs::write(dir.path().join("notes.tmp"), b"mine").unwrap();
    fs::write(dir.path().join("LOCK"), b"").unwrap();
    drop(log.lock().unwrap());
    assert_eq!(files(&log).iter().filter(|n| n.ends_with(".tmp")).collect::<Vec<_>>(), vec!["notes.tmp"]);
}

#[test]
fn flipped_byte_in_sealed_segment_is_named_by_verify_and_stops_reading() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 50);
    let info = log.lock().unwrap().seal().unwrap().unwrap();
    let path = dir.path().join(&info.name);
    let mut bytes = fs::read(&path).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0x40;
    fs::write(&path, &bytes).unwrap();
    let report = log.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.file == path && p.what.contains("blake3")), "{:?}", report.problems);
    assert!(report.problems.iter().any(|p| p.file == path && p.what.contains("chunk")), "{:?}", report.problems);
    let snap = log.snapshot().unwrap();
    let results: Vec<_> = snap.frames_after(0).collect();
    let err = results.iter().find_map(|r| r.as_ref().err()).expect("an error");
    assert!(err.to_string().contains(&info.name), "{err}");
    assert!(results.last().unwrap().is_err(), "iteration stops at the damage");
}

#[test]
fn verify_reports_every_problem_of_a_log_too_damaged_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 20);
    let first = log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 21, 20);
    let second = log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 41, 5);
    // The first segment's header is smashed (recovery refuses the log), and a
    // chunk of the second is damaged too.
    let first_path = dir.path().join(&first.name);
    let mut bytes = fs::read(&first_path).unwrap();
    bytes[..8].copy_from_slice(b"garbage!");
    fs::write(&first_path, &bytes).unwrap();
    let second_path = dir.path().join(&second.name);
    let mut bytes = fs::read(&second_path).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0x40;
    fs::write(&second_path, &bytes).unwrap();
    assert_eq!(log.snapshot().err().map(|e| e.class()), Some(ErrorClass::Corrupt));

    let report = log.verify().unwrap();
    let on = |path: &Path| report.problems.iter().filter(|p| p.file == path).count();
    assert!(on(&first_path) >= 1, "{:?}", report.problems);
    assert!(on(&second_path) >= 1, "{:?}", report.problems);
    assert_eq!(report.segments, 3);
    // The active segment is intact and its frames are counted.
    assert!(report.frames >= 5, "{report:?}");
    assert!(!report.problems.iter().any(|p| p.what.contains("active segment starts")), "{:?}", report.problems);
}

#[test]
fn oversized_event_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    let big = vec![b'x'; MAX_PAYLOAD + 1];
    let mut w = log.lock().unwrap();
    let err = w.append(&[b"{}", &big]).unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(w.last_lsn(), 0);
}

#[test]
fn rewrite_replaces_segments_and_keeps_lsns() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(3_000)).unwrap();
    append_n(&log, 1, 60);
    let before: Vec<String> = log.segments().unwrap().into_iter().filter(|s| s.sealed).map(|s| s.name).collect();
    let stats = log
        .lock()
        .unwrap()
        .rewrite(|lsn, p| {
            (lsn == 7 || lsn == 59).then(|| String::from_utf8_lossy(p).replace("event number", "EVENT").into_bytes())
        })
        .unwrap();
    assert_eq!(stats.frames_changed, 2);
    assert!(stats.segments_rewritten >= 1);
    let frames = read_all(&log);
    assert_eq!(frames.len(), 60);
    assert!(String::from_utf8_lossy(&frames[6].payload).contains("EVENT 7"));
    assert!(!String::from_utf8_lossy(&frames[5].payload).contains("EVENT"));
    let after: Vec<_> = log.segments().unwrap().into_iter().filter(|s| s.sealed).collect();
    assert!(after.iter().any(|s| s.generation == 1));
    assert!(before.iter().any(|n| !after.iter().any(|s| &s.name == n)), "an old file was replaced");
    assert!(log.verify().unwrap().problems.is_empty());
}

#[test]
fn interrupted_rewrite_keeps_the_newer_generation() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    let info = log.lock().unwrap().seal().unwrap().unwrap();
    let old = dir.path().join(&info.name);
    let old_bytes = fs::read(&old).unwrap();
    log.lock().unwrap().rewrite(|lsn, _| (lsn == 2).then(|| b"{\"ts\":1}".to_vec())).unwrap();
    let new = log.segments().unwrap().into_iter().find(|s| s.sealed).unwrap().name;
    // Put the old generation and the intent back, as if the crash came
    // before the old one's removal.
    fs::write(&old, &old_bytes).unwrap();
    fs::write(dir.path().join(recover::REWRITE_INTENT), format!("engram-rewrite 1\n{}\n{new}\n", info.name)).unwrap();
    fs::write(dir.path().join("LOCK"), b"").unwrap();
    let frames = read_all(&log);
    assert_eq!(frames[1].payload, b"{\"ts\":1}");
    assert!(!old.exists());
    assert!(!dir.path().join(recover::REWRITE_INTENT).exists());
}

#[derive(Clone, Debug)]
enum Op {
    Append(u8),
    Seal,
    Reopen,
    Tear(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u8..8).prop_map(Op::Append),
        1 => Just(Op::Seal),
        1 => Just(Op::Reopen),
        1 => (1u8..60).prop_map(Op::Tear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The log behaves like a vector: whatever was acknowledged is read back,
    /// in order, through seals, reopenings and torn tails.
    #[test]
    fn log_equals_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut log = TapeLog::open(dir.path(), opts(1_500)).unwrap();
        let mut model: Vec<Vec<u8>> = Vec::new();
        for op in ops {
            match op {
                Op::Append(n) => {
                    let batch: Vec<Vec<u8>> = (0..n).map(|i| payload(model.len() as u64 + 1 + u64::from(i))).collect();
                    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                    let first = log.lock().unwrap().append(&refs).unwrap();
                    prop_assert_eq!(first, model.len() as u64 + 1);
                    model.extend(batch);
                }
                Op::Seal => { log.lock().unwrap().seal().unwrap(); }
                Op::Reopen => { log = TapeLog::open(dir.path(), opts(1_500)).unwrap(); }
                Op::Tear(n) => {
                    let seq = log.segments().unwrap().last().unwrap().seq;
                    let path = dir.path().join(active_name(seq));
                    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
                    let mut junk = Vec::new();
                    encode_frame(&mut junk, 999_999, &payload(0));
                    junk.truncate(usize::from(n).min(junk.len() - 1));
                    f.write_all(&junk).unwrap();
                }
            }
        }
        let frames = read_all(&log);
        prop_assert_eq!(frames.len(), model.len());
        for (i, (f, m)) in frames.iter().zip(&model).enumerate() {
            prop_assert_eq!(f.lsn, i as u64 + 1);
            prop_assert_eq!(&f.payload, m);
        }
        prop_assert!(log.verify().unwrap().problems.is_empty());
    }
}

#[derive(Clone, Debug)]
enum HeldOp {
    /// Append through the writer held across operations.
    Append(u8),
    /// Release the held writer and append in a session of its own.
    AppendAlone(u8),
    /// Seal through the held writer.
    Seal,
    /// Release the held writer.
    Release,
}

fn held_op() -> impl Strategy<Value = HeldOp> {
    prop_oneof![
        6 => (1u8..12).prop_map(HeldOp::Append),
        2 => (1u8..6).prop_map(HeldOp::AppendAlone),
        1 => Just(HeldOp::Seal),
        1 => Just(HeldOp::Release),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A writer that holds the lock across appends seals from the frames it
    /// keeps in memory, alone or after frames of other sessions; the log
    /// still reads back exactly what was acknowledged, and verifies.
    #[test]
    fn held_writer_equals_model(ops in proptest::collection::vec(held_op(), 1..40), segment in 600u64..3_000) {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(segment)).unwrap();
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut held: Option<TapeWriter<'_>> = None;
        for op in ops {
            let batch = |n: u8, model: &Vec<Vec<u8>>| -> Vec<Vec<u8>> {
                (0..n).map(|i| payload(model.len() as u64 + 1 + u64::from(i))).collect()
            };
            match op {
                HeldOp::Append(n) | HeldOp::AppendAlone(n) => {
                    let b = batch(n, &model);
                    let refs: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
                    let first = if matches!(op, HeldOp::Append(_)) {
                        held.get_or_insert_with(|| log.lock().unwrap()).append(&refs).unwrap()
                    } else {
                        held = None;
                        log.lock().unwrap().append(&refs).unwrap()
                    };
                    prop_assert_eq!(first, model.len() as u64 + 1);
                    model.extend(b);
                }
                HeldOp::Seal => { held.get_or_insert_with(|| log.lock().unwrap()).seal().unwrap(); }
                HeldOp::Release => held = None,
            }
        }
        drop(held);
        let frames = read_all(&log);
        prop_assert_eq!(frames.len(), model.len());
        for (i, (f, m)) in frames.iter().zip(&model).enumerate() {
            prop_assert_eq!(f.lsn, i as u64 + 1);
            prop_assert_eq!(&f.payload, m);
        }
        prop_assert!(log.verify().unwrap().problems.is_empty());
    }
}

#[test]
fn a_seal_in_the_appending_session_takes_the_frames_as_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 3);
    let mut w = log.lock().unwrap();
    let more: Vec<Vec<u8>> = (4..=6).map(payload).collect();
    w.append(&more.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
    // Damage on disk after the append: frame 5 (this session's) and, separately
    // checked below, nothing before it. The seal reads frames 1-3 back and
    // verifies them, and takes 4-6 from what this writer acknowledged.
    let active = dir.path().join(active_name(1));
    let mut bytes = fs::read(&active).unwrap();
    let fifth = ACTIVE_HEADER + (1..=4).map(|i| FRAME_HEADER + payload(i).len()).sum::<usize>();
    bytes[fifth + FRAME_HEADER + 2] ^= 0x01;
    fs::write(&active, &bytes).unwrap();
    let info = w.seal().unwrap().unwrap();
    drop(w);
    assert_eq!(info.events, 6);
    assert!(log.verify().unwrap().problems.is_empty());
    let frames = read_all(&log);
    assert!(frames.iter().all(|f| f.payload == payload(f.lsn)), "the sealed frames are the acknowledged ones");
}

#[test]
fn frames_at_reads_only_what_is_asked_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(2_000)).unwrap();
    append_n(&log, 1, 120);
    let snap = log.snapshot().unwrap();
    let want = [1, 2, 57, 58, 119, 120, 500];
    let got = snap.frames_at(&want).unwrap();
    assert_eq!(got.iter().map(|f| f.lsn).collect::<Vec<_>>(), vec![1, 2, 57, 58, 119, 120]);
    assert!(got.iter().all(|f| f.payload == payload(f.lsn)));
    assert!(snap.frames_at(&[]).unwrap().is_empty());
}

#[test]
fn seal_refuses_a_damaged_frame_in_the_active_segment_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    let active = dir.path().join(active_name(1));
    let mut bytes = fs::read(&active).unwrap();
    // Inside the second frame's payload; the last frame (which opening checks) stays intact.
    let second = ACTIVE_HEADER + FRAME_HEADER + payload(1).len();
    let at = second + FRAME_HEADER + 3;
    bytes[at] ^= 0x01;
    let named = |log: &TapeLog| {
        let report = log.verify().unwrap();
        report.problems.iter().any(|p| p.file == active && p.offset == second as u64)
    };
    let before = files(&log);
    // Damaged while a writer holds the lock: its seal reads the frame back.
    let mut w = log.lock().unwrap();
    fs::write(&active, &bytes).unwrap();
    let err = w.seal().unwrap_err();
    drop(w);
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains(&second.to_string()), "{err}");
    assert_eq!(files(&log), before);
    assert_eq!(fs::read(&active).unwrap(), bytes);
    assert!(named(&log));
    // The refused seal left the hint alone: the next opener neither takes the
    // damage for a torn tail and cuts the frames after it, nor appends
    // behind it.
    let err = log.lock().map(|_| ()).expect_err("damage before the last frame");
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert_eq!(fs::read(&active).unwrap(), bytes);
    assert!(named(&log));
}

/// A copy of the log written by format version 1 (`testdata/v1`: one sealed
/// segment of 40 frames in 1 KiB chunks, an active segment of 5 more, no
/// `LOCK`), in a fresh directory.
fn golden_v1() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/storage/tape/testdata/v1");
    let dir = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    dir
}

#[test]
fn golden_v1_log_reads_verifies_and_grows() {
    let dir = golden_v1();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    let frames = read_all(&log);
    assert_eq!(frames.len(), 45);
    assert!(frames.iter().enumerate().all(|(i, f)| f.lsn == i as u64 + 1 && f.payload == payload(f.lsn)));
    let report = log.verify().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.frames, 45);
    let segs = log.segments().unwrap();
    assert_eq!((segs[0].events, segs[0].first_lsn, segs[0].last_lsn), (40, 1, 40));
    assert_eq!((segs[0].min_ts, segs[0].max_ts), (Some(1001), Some(1040)));
    let snap = log.snapshot().unwrap();
    let got = snap.frames_at(&[3, 17, 40, 41, 45]).unwrap();
    assert_eq!(got.iter().map(|f| f.lsn).collect::<Vec<_>>(), vec![3, 17, 40, 41, 45]);
    assert!(got.iter().all(|f| f.payload == payload(f.lsn)));
    let tail: Vec<Lsn> = snap.frames_after(38).map(|f| f.unwrap().lsn).collect();
    assert_eq!(tail, (39..=45).collect::<Vec<_>>());
    drop(snap);
    // New frames and a new seal go on after the old ones.
    append_n(&log, 46, 5);
    log.lock().unwrap().seal().unwrap().unwrap();
    let frames = read_all(&log);
    assert_eq!(frames.len(), 50);
    assert!(frames.iter().all(|f| f.payload == payload(f.lsn)));
    assert!(log.verify().unwrap().problems.is_empty());
}

#[test]
fn golden_v1_segment_is_rewritten() {
    let dir = golden_v1();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    let stats = log.lock().unwrap().rewrite(|lsn, _| (lsn == 7).then(|| payload(1007))).unwrap();
    assert_eq!(stats.frames_changed, 1);
    let frames = read_all(&log);
    assert_eq!(frames.len(), 45);
    assert!(frames.iter().all(|f| f.payload == if f.lsn == 7 { payload(1007) } else { payload(f.lsn) }));
    assert!(log.verify().unwrap().problems.is_empty());
}

/// Offset of frame `lsn` (from 1) in an active segment holding `payload(1..)`.
fn frame_offset(lsn: u64) -> usize {
    ACTIVE_HEADER + (1..lsn).map(|i| FRAME_HEADER + payload(i).len()).sum::<usize>()
}

#[test]
fn damage_inside_the_active_segment_without_a_hint_is_refused_not_truncated() {
    for (what, at) in [("payload", frame_offset(2) + FRAME_HEADER + 5), ("length", frame_offset(2) + 2)] {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        append_n(&log, 1, 5);
        fs::write(dir.path().join("LOCK"), b"").unwrap();
        let active = dir.path().join(active_name(1));
        let mut bytes = fs::read(&active).unwrap();
        bytes[at] ^= 0x10;
        fs::write(&active, &bytes).unwrap();
        let err = log.lock().unwrap_err();
        assert_eq!(err.class(), ErrorClass::Corrupt, "{what}: {err}");
        assert!(err.to_string().contains(&frame_offset(2).to_string()), "{what}: {err}");
        assert!(err.to_string().contains("lsn 3"), "{what}: {err}");
        assert_eq!(fs::read(&active).unwrap(), bytes, "{what}: nothing was truncated");
        assert!(!log.verify().unwrap().problems.is_empty());
    }
}

#[test]
fn a_damaged_last_frame_without_a_hint_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    fs::write(dir.path().join("LOCK"), b"").unwrap();
    let active = dir.path().join(active_name(1));
    let mut bytes = fs::read(&active).unwrap();
    bytes[frame_offset(5) + FRAME_HEADER + 1] ^= 0x10;
    fs::write(&active, &bytes).unwrap();
    assert_eq!(log.lock().unwrap().last_lsn(), 4);
    assert_eq!(fs::metadata(&active).unwrap().len(), frame_offset(5) as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Opening without a hint cuts a damaged last frame (a torn tail) and
    /// refuses damage anywhere before it, changing nothing.
    #[test]
    fn only_the_last_frame_is_ever_cut(n in 2u64..8, victim in any::<prop::sample::Index>(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        append_n(&log, 1, n);
        fs::write(dir.path().join("LOCK"), b"").unwrap();
        let active = dir.path().join(active_name(1));
        let mut bytes = fs::read(&active).unwrap();
        let victim = victim.index(n as usize) as u64 + 1;
        let at = frame_offset(victim) + pos.index(FRAME_HEADER + payload(victim).len());
        bytes[at] ^= 1 << bit;
        fs::write(&active, &bytes).unwrap();
        match log.lock() {
            Ok(w) => {
                prop_assert_eq!(victim, n);
                prop_assert_eq!(w.last_lsn(), n - 1);
            }
            Err(e) => {
                prop_assert!(victim < n, "{}", e);
                prop_assert_eq!(e.class(), ErrorClass::Corrupt);
                prop_assert_eq!(fs::read(&active).unwrap(), bytes);
            }
        }
    }
}

#[test]
fn an_append_whose_automatic_seal_fails_still_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let big = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&big, 1, 5);
    // Damage an earlier session's frame (while this writer holds the lock,
    // or it would refuse to open): the seal reads it back and refuses.
    let active = dir.path().join(active_name(1));
    let mut bytes = fs::read(&active).unwrap();
    bytes[frame_offset(2) + FRAME_HEADER + 3] ^= 0x01;
    let log = TapeLog::open(dir.path(), opts(100)).unwrap();
    let mut w = log.lock().unwrap();
    fs::write(&active, &bytes).unwrap();
    assert_eq!(w.append(&[&payload(6)]).unwrap(), 6, "the events are durable: the append succeeds");
    // No retry in this session; the next append goes on in the same segment.
    assert_eq!(w.append(&[&payload(7)]).unwrap(), 7);
    drop(w);
    assert!(files(&log).iter().all(|n| !n.ends_with(".seg")));
    let w = log.lock().unwrap();
    assert_eq!(w.last_lsn(), 7);
    let raw = fs::read(&active).unwrap();
    assert_eq!(raw.len(), frame_offset(8));
    assert!(matches!(decode_frame(&raw[frame_offset(7)..]), FrameRead::Frame { lsn: 7, .. }));
}

#[test]
fn a_seal_that_fails_half_way_is_resolved_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(300)).unwrap();
    // The next active segment's name is taken: the sealed segment is written,
    // then creating its successor fails.
    let mut w = log.lock().unwrap();
    let blocker = dir.path().join(active_name(2));
    fs::create_dir(&blocker).unwrap();
    let first: Vec<Vec<u8>> = (1..=5).map(payload).collect();
    assert_eq!(w.append(&first.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap(), 1);
    assert!(files(&log).iter().any(|n| n.starts_with("0000000001-")), "{:?}", files(&log));
    assert!(files(&log).contains(&active_name(1)));
    fs::remove_dir(&blocker).unwrap();
    // Appending to the old active segment now would put frames where recovery
    // deletes them (its content is sealed); the writer resolves the seal first.
    assert_eq!(w.append(&[&payload(6)]).unwrap(), 6);
    assert_eq!(w.append(&[&payload(7)]).unwrap(), 7);
    drop(w);
    assert!(!files(&log).contains(&active_name(1)), "{:?}", files(&log));
    fs::write(dir.path().join("LOCK"), b"").unwrap();
    let frames = read_all(&log);
    assert_eq!(frames.iter().map(|f| f.lsn).collect::<Vec<_>>(), (1..=7).collect::<Vec<_>>());
    assert!(frames.iter().all(|f| f.payload == payload(f.lsn)));
    assert!(log.verify().unwrap().problems.is_empty());
}

#[test]
fn new_seals_write_format_2_entries_without_frame_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 3);
    let info = log.lock().unwrap().seal().unwrap().unwrap();
    let bytes = fs::read(dir.path().join(&info.name)).unwrap();
    let header = SealedHeader::decode(&bytes).unwrap();
    assert_eq!(header.version, format::SEALED_VERSION);
    assert_eq!(header.raw_bytes, (1..=3).map(|i| (FRAME_HEADER + payload(i).len()) as u64).sum::<u64>());
    let ch = ChunkHeader::decode(&bytes[SEALED_HEADER..]).unwrap();
    let data = &bytes[SEALED_HEADER + format::CHUNK_HEADER..][..ch.compressed_len as usize];
    let raw = zstd::bulk::decompress(data, ch.raw_len as usize).unwrap();
    let mut want = Vec::new();
    for i in 1..=3 {
        format::encode_entry(&mut want, &payload(i));
    }
    assert_eq!(raw, want);
    assert_eq!((ch.first_lsn, ch.frames), (1, 3));
}

/// Writes a sealed segment of format 2 made of the given chunks (entries
/// already encoded, with the first LSN and frame count each claims) under
/// its content-addressed name.
fn craft_sealed(dir: &Path, seq: u64, first_lsn: Lsn, last_lsn: Lsn, chunks: &[(Vec<u8>, Lsn, u32)]) -> PathBuf {
    let mut body = Vec::new();
    for (raw, first, frames) in chunks {
        let compressed = zstd::bulk::compress(raw, 1).unwrap();
        body.extend_from_slice(&ChunkHeader::new(&compressed, raw.len() as u32, *first, *frames).encode());
        body.extend_from_slice(&compressed);
    }
    let header = SealedHeader {
        chunks: chunks.len() as u32,
        seq,
        first_lsn,
        last_lsn,
        events: last_lsn - first_lsn + 1,
        ..SealedHeader::default()
    };
    let mut bytes = header.encode().to_vec();
    bytes.extend_from_slice(&body);
    let path = dir.join(sealed_name(seq, &blake3::hash(&bytes)));
    fs::write(&path, &bytes).unwrap();
    path
}

#[test]
fn verify_names_format_2_chunks_that_disagree_with_their_headers() {
    let dir = tempfile::tempdir().unwrap();
    let entries = |lsns: std::ops::RangeInclusive<u64>| {
        let mut out = Vec::new();
        for i in lsns {
            format::encode_entry(&mut out, &payload(i));
        }
        out
    };
    // Chunk 1 holds 3 entries but says 2; chunk 2 starts at the wrong LSN.
    let path = craft_sealed(dir.path(), 1, 1, 6, &[(entries(1..=3), 1, 2), (entries(4..=6), 5, 3)]);
    create_active(dir.path(), ActiveHeader { seq: 2, first_lsn: 7 }).unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    let report = log.verify().unwrap();
    let about = |what: &str| report.problems.iter().any(|p| p.file == path && p.what.contains(what));
    assert!(about("chunk 0: 3 frames, header says 2"), "{:?}", report.problems);
    assert!(about("chunk 1: starts at lsn 5, expected 4"), "{:?}", report.problems);
    let snap = log.snapshot().unwrap();
    let err = snap.frames_after(0).find_map(|r| r.err()).expect("reading stops at the bad chunk");
    assert!(err.to_string().contains("chunk holds 3 frames, its header says 2"), "{err}");
}

/// Every directory state a crash during a seal can leave (the hint was
/// invalidated first): recovery finds every frame, and the log goes on.
#[test]
fn every_state_a_crash_during_a_seal_leaves_is_recovered() {
    let base = tempfile::tempdir().unwrap();
    let log = TapeLog::open(base.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    let old_active = fs::read(base.path().join(active_name(1))).unwrap();
    let sealed = log.lock().unwrap().seal().unwrap().unwrap();
    let sealed_bytes = fs::read(base.path().join(&sealed.name)).unwrap();
    let new_active = fs::read(base.path().join(active_name(2))).unwrap();
    let tmp = |name: &str| format!(".{name}.1.0000000000000001.tmp");
    type State<'a> = &'a [(String, &'a [u8])];
    let states: [(&str, State<'_>); 7] = [
        ("sealed file still temporary", &[(active_name(1), &old_active), (tmp(&sealed.name), &sealed_bytes)]),
        ("sealed, nothing else yet", &[(active_name(1), &old_active), (sealed.name.clone(), &sealed_bytes)]),
        (
            "successor still temporary",
            &[(active_name(1), &old_active), (sealed.name.clone(), &sealed_bytes), (tmp(&active_name(2)), &new_active)],
        ),
        (
            "successor created, old not removed",
            &[(active_name(1), &old_active), (sealed.name.clone(), &sealed_bytes), (active_name(2), &new_active)],
        ),
        ("old removed before the successor", &[(sealed.name.clone(), &sealed_bytes)]),
        ("done", &[(sealed.name.clone(), &sealed_bytes), (active_name(2), &new_active)]),
        ("not begun", &[(active_name(1), &old_active)]),
    ];
    for (what, files) in states {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            fs::write(dir.path().join(name), bytes).unwrap();
        }
        fs::write(dir.path().join("LOCK"), [0u8; 44]).unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        let mut w = log.lock().unwrap();
        assert_eq!(w.last_lsn(), 5, "{what}");
        assert_eq!(w.append(&[&payload(6)]).unwrap(), 6, "{what}");
        drop(w);
        let frames = read_all(&log);
        assert_eq!(frames.iter().map(|f| f.lsn).collect::<Vec<_>>(), (1..=6).collect::<Vec<_>>(), "{what}");
        assert!(frames.iter().all(|f| f.payload == payload(f.lsn)), "{what}");
        assert!(log.verify().unwrap().problems.is_empty(), "{what}");
        assert!(!files_in(dir.path()).iter().any(|n| n.ends_with(".tmp")), "{what}");
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

// ---------------------------------------------------------------------------
// Acknowledged bytes, missing segments, segments of other logs (issue 21, items 1 to 3)
// ---------------------------------------------------------------------------

/// The ways the last, acknowledged frame of the active segment can be
/// damaged after its append returned: the lock hint names it, so no opener
/// may take it for a torn tail.
#[test]
fn damage_to_an_acknowledged_last_frame_is_refused_not_cut() {
    type Damage = fn(&mut Vec<u8>);
    let damages: [(&str, Damage); 3] = [
        ("payload byte", |b| b[frame_offset(5) + FRAME_HEADER + 3] ^= 0x10),
        ("length field", |b| b[frame_offset(5)] ^= 0x01),
        ("cut mid-frame", |b| b.truncate(frame_offset(5) + FRAME_HEADER + 2)),
    ];
    for (what, damage) in damages {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        append_n(&log, 1, 5);
        let active = dir.path().join(active_name(1));
        let mut bytes = fs::read(&active).unwrap();
        damage(&mut bytes);
        fs::write(&active, &bytes).unwrap();
        let err = log.lock().expect_err(what);
        assert_eq!(err.class(), ErrorClass::Corrupt, "{what}: {err}");
        assert!(err.to_string().contains("lsn 5"), "{what}: {err}");
        assert_eq!(fs::read(&active).unwrap(), bytes, "{what}: nothing was cut");
        let report = log.verify().unwrap();
        assert!(!report.problems.is_empty(), "{what}: verify reports the damage");
        assert_eq!(fs::read(&active).unwrap(), bytes, "{what}: verify cut nothing either");
    }
}

/// A torn tail (bytes after everything acknowledged) is cut, but what is
/// cut is kept in the quarantine folder.
#[test]
fn a_torn_tail_is_cut_into_quarantine() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 4);
    let active = dir.path().join(active_name(1));
    let mut partial = Vec::new();
    encode_frame(&mut partial, 5, &payload(5));
    partial.truncate(partial.len() - 7);
    OpenOptions::new().append(true).open(&active).unwrap().write_all(&partial).unwrap();
    assert_eq!(log.lock().unwrap().last_lsn(), 4);
    assert_eq!(fs::metadata(&active).unwrap().len(), frame_offset(5) as u64);
    let quarantine = dir.path().join(QUARANTINE);
    let kept: Vec<Vec<u8>> = fs::read_dir(&quarantine).unwrap().map(|e| fs::read(e.unwrap().path()).unwrap()).collect();
    assert_eq!(kept, vec![partial]);
    assert_eq!(log.verify().unwrap().quarantined.len(), 1);
}

#[test]
fn a_missing_first_segment_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    let first = log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 6, 5);
    log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 11, 2);
    fs::remove_file(dir.path().join(&first.name)).unwrap();
    let err = log.snapshot().expect_err("a log without its first segment");
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains("lsn 6"), "{err}");
    let report = log.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.what.contains("missing")), "{:?}", report.problems);
    // The same without the hint.
    fs::write(dir.path().join("LOCK"), b"").unwrap();
    assert_eq!(log.lock().map(|_| ()).unwrap_err().class(), ErrorClass::Corrupt);
}

#[test]
fn a_missing_active_segment_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 6, 3);
    fs::remove_file(dir.path().join(active_name(2))).unwrap();
    let err = log.lock().map(|_| ()).expect_err("the hint names acknowledged frames up to lsn 8");
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains("lsn 8"), "{err}");
    assert!(!dir.path().join(active_name(2)).exists(), "no empty segment was made in its place");
}

/// Two logs whose sealed segments share sequence numbers.
fn two_logs() -> (tempfile::TempDir, tempfile::TempDir) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let log_a = TapeLog::open(a.path(), opts(1 << 20)).unwrap();
    append_n(&log_a, 1, 5);
    log_a.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log_a, 6, 3);
    let log_b = TapeLog::open(b.path(), opts(1 << 20)).unwrap();
    for batch in 0..2 {
        append_n(&log_b, 100 + batch * 4, 4);
        log_b.lock().unwrap().seal().unwrap().unwrap();
    }
    (a, b)
}

#[test]
fn a_segment_copied_in_from_another_log_is_never_deleted() {
    for seq in [1u64, 2] {
        let (a, b) = two_logs();
        let theirs = files_in(b.path()).into_iter().find(|n| n.starts_with(&format!("{seq:010}-"))).unwrap();
        fs::copy(b.path().join(&theirs), a.path().join(&theirs)).unwrap();
        let before = {
            let mut f = files_in(a.path());
            f.sort();
            f
        };
        let log = TapeLog::open(a.path(), opts(1 << 20)).unwrap();
        let report = log.verify().unwrap();
        assert!(report.problems.iter().any(|p| p.what.contains(&theirs)), "seq {seq}: {:?}", report.problems);
        // Without the hint, recovery goes through the directory listing.
        fs::write(a.path().join("LOCK"), b"").unwrap();
        let err = log.lock().map(|_| ()).expect_err("two files claim one sequence number");
        assert_eq!(err.class(), ErrorClass::Corrupt, "seq {seq}: {err}");
        let mut after = files_in(a.path());
        after.sort();
        assert_eq!(after, before, "seq {seq}: nothing was deleted");
    }
}

fn lost_marker(range: &LostRange, lsn: Lsn) -> Vec<u8> {
    format!(r#"{{"ts":0,"k":"tape.lost","b":{{"lsn":{lsn},"first":{},"last":{}}}}}"#, range.first_lsn, range.last_lsn)
        .into_bytes()
}

/// After a repair the log opens, verifies clean, keeps every intact frame,
/// holds a placeholder for each lost one and goes on.
fn assert_repaired(log: &TapeLog, n: u64, lost: &[Lsn]) {
    let frames = read_all(log);
    assert_eq!(frames.iter().map(|f| f.lsn).collect::<Vec<_>>(), (1..=n).collect::<Vec<_>>());
    for f in &frames {
        let placeholder = String::from_utf8_lossy(&f.payload).contains("tape.lost");
        assert_eq!(placeholder, lost.contains(&f.lsn), "lsn {}", f.lsn);
        if !placeholder {
            assert_eq!(f.payload, payload(f.lsn));
        }
    }
    assert!(log.verify().unwrap().problems.is_empty());
    assert_eq!(log.lock().unwrap().append(&[&payload(n + 1)]).unwrap(), n + 1);
}

#[test]
fn repair_replaces_a_damaged_acknowledged_frame_and_keeps_its_bytes() {
    for victim in [5u64, 2] {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        append_n(&log, 1, 5);
        let active = dir.path().join(active_name(1));
        let mut bytes = fs::read(&active).unwrap();
        let at = frame_offset(victim) + FRAME_HEADER + 3;
        bytes[at] ^= 0x10;
        fs::write(&active, &bytes).unwrap();
        assert!(!log.verify().unwrap().problems.is_empty());
        let report = log.repair(0, &mut lost_marker).unwrap();
        assert!(report.unrepaired.is_empty(), "{:?}", report.unrepaired);
        assert_eq!(report.frames_lost(), 1, "victim {victim}");
        let damaged = &bytes[frame_offset(victim)..frame_offset(victim + 1)];
        assert_eq!(fs::read(&report.lost[0].quarantine).unwrap(), damaged);
        assert_repaired(&log, 5, &[victim]);
        // Repairing a sound log changes nothing.
        assert!(log.repair(0, &mut lost_marker).unwrap().lost.is_empty());
    }
}

#[test]
fn repair_recreates_a_missing_active_segment_with_what_it_lost() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 6, 3);
    fs::remove_file(dir.path().join(active_name(2))).unwrap();
    let report = log.repair(0, &mut lost_marker).unwrap();
    assert_eq!(report.frames_lost(), 3);
    assert_repaired(&log, 8, &[6, 7, 8]);
}

#[test]
fn repair_rewrites_a_sealed_segment_around_its_damaged_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 30);
    let info = log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 31, 2);
    let path = dir.path().join(&info.name);
    let mut bytes = fs::read(&path).unwrap();
    let first = ChunkHeader::decode(&bytes[SEALED_HEADER..]).unwrap();
    assert!(first.frames < 30, "several chunks");
    let second_at = SEALED_HEADER + format::CHUNK_HEADER + first.compressed_len as usize;
    let second = ChunkHeader::decode(&bytes[second_at..]).unwrap();
    bytes[second_at + format::CHUNK_HEADER + 2] ^= 0x55;
    fs::write(&path, &bytes).unwrap();
    let report = log.repair(0, &mut lost_marker).unwrap();
    assert!(report.unrepaired.is_empty(), "{:?}", report.unrepaired);
    let lost: Vec<Lsn> = (second.first_lsn..=second.last_lsn()).collect();
    assert_eq!(report.frames_lost(), lost.len() as u64);
    assert_eq!(fs::read(&report.lost[0].quarantine).unwrap(), bytes, "the damaged file is kept whole");
    assert!(!path.exists());
    assert_repaired(&log, 32, &lost);
}

/// Found by `fuzz/tape_recover`: verify decompressed a chunk that failed its
/// checksum into a buffer sized by the chunk's damaged `raw_len` (4 GiB).
#[test]
fn verify_does_not_trust_the_size_of_a_damaged_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 4);
    let info = log.lock().unwrap().seal().unwrap().unwrap();
    let path = dir.path().join(&info.name);
    let mut bytes = fs::read(&path).unwrap();
    bytes[SEALED_HEADER + 4..SEALED_HEADER + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&path, &bytes).unwrap();
    let report = log.verify().unwrap();
    assert!(report.problems.iter().any(|p| format!("{p:?}").contains("checksum mismatch")), "{report:?}");
}

/// A chunk header is read before its checksum is checked: a damaged
/// `first_lsn` near `u64::MAX` once wrapped `last_lsn` to a small LSN, so a
/// reader resuming after that LSN skipped the chunk (and its frames) without
/// verifying it. It must read the chunk and report the damage instead.
#[test]
fn a_chunk_header_damaged_near_the_largest_lsn_is_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 4);
    let info = log.lock().unwrap().seal().unwrap().unwrap();
    append_n(&log, 5, 1);
    let path = dir.path().join(&info.name);
    let mut bytes = fs::read(&path).unwrap();
    let at = SEALED_HEADER + 8;
    bytes[at..at + 8].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
    fs::write(&path, &bytes).unwrap();
    let snap = log.snapshot().unwrap();
    let read: Result<Vec<Frame>> = snap.frames_after(3).collect();
    assert!(read.is_err(), "frames 4 and 5 of a damaged chunk were skipped: {read:?}");
}

/// A log of sealed segments of 5 frames each (`sealed` of them) and an
/// active one holding 3 more; returns the sealed segments' paths.
fn sealed_log(log: &TapeLog, sealed: u64) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for i in 0..sealed {
        append_n(log, i * 5 + 1, 5);
        let info = log.lock().unwrap().seal().unwrap().unwrap();
        paths.push(log.dir().join(info.name));
    }
    append_n(log, sealed * 5 + 1, 3);
    paths
}

fn quarantined_files(log: &TapeLog) -> usize {
    fs::read_dir(log.dir().join(QUARANTINE)).map_or(0, |d| d.count())
}

/// A sealed segment deleted from the middle of the log (or its start, or
/// just before the active segment): repair puts placeholders for exactly its
/// LSNs in its place, keeps every other frame where it was (nothing
/// quarantined), and the log verifies, opens and goes on. A second repair
/// has nothing to do.
#[test]
fn repair_fills_a_missing_sealed_segment_with_its_lsns_and_cuts_no_intact_frame() {
    for missing in [1usize, 2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        let sealed = sealed_log(&log, 3);
        fs::remove_file(&sealed[missing - 1]).unwrap();
        assert!(log.snapshot().is_err(), "a gap is refused");
        let report = log.repair(0, &mut lost_marker).unwrap();
        assert!(report.unrepaired.is_empty(), "missing {missing}: {:?}", report.unrepaired);
        assert_eq!(report.frames_lost(), 5, "missing {missing}");
        assert_eq!(quarantined_files(&log), 0, "missing {missing}: no intact frame was cut");
        let first = (missing as u64 - 1) * 5 + 1;
        assert_repaired(&log, 18, &(first..first + 5).collect::<Vec<_>>());
        let again = log.repair(0, &mut lost_marker).unwrap();
        assert!(again.is_empty() && again.unrepaired.is_empty(), "{again:?}");
    }
}

/// Two consecutive sealed segments missing: both numbers are filled, with
/// every LSN between.
#[test]
fn repair_fills_two_missing_segments_in_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    let sealed = sealed_log(&log, 4);
    fs::remove_file(&sealed[1]).unwrap();
    fs::remove_file(&sealed[2]).unwrap();
    let report = log.repair(0, &mut lost_marker).unwrap();
    assert!(report.unrepaired.is_empty(), "{:?}", report.unrepaired);
    assert_eq!(report.frames_lost(), 10);
    assert_repaired(&log, 23, &(6..=15).collect::<Vec<_>>());
    let seqs: Vec<u64> = log.segments().unwrap().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
}

/// A segment that overlaps the ones before it is not a gap: repair says why
/// and changes nothing.
#[test]
fn repair_refuses_an_overlapping_segment_and_says_why() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ours = TapeLog::open(a.path(), opts(1 << 20)).unwrap();
    let theirs = TapeLog::open(b.path(), opts(1 << 20)).unwrap();
    let sealed = sealed_log(&ours, 3);
    sealed_log(&theirs, 1); // seq 1: lsn 1..=5, and 6..=8 active
    theirs.lock().unwrap().seal().unwrap().unwrap(); // seq 2: lsn 6..=8
    append_n(&theirs, 9, 2);
    let stranger = theirs.lock().unwrap().seal().unwrap().unwrap(); // seq 3: lsn 9..=10
    fs::remove_file(&sealed[2]).unwrap(); // ours: seq 2 ends at lsn 10
    fs::copy(b.path().join(&stranger.name), a.path().join(&stranger.name)).unwrap();
    let before = files(&ours);
    let report = ours.repair(0, &mut lost_marker).unwrap();
    assert!(report.unrepaired.iter().any(|u| u.contains("overlaps")), "{:?}", report.unrepaired);
    assert!(report.lost.is_empty());
    assert_eq!(files(&ours), before, "nothing changed");
}

/// A sealed segment whose content is intact but whose name is wrong (the
/// blake3, or the sequence number) fails verify; repair renames it and
/// verify passes.
#[test]
fn repair_renames_a_misnamed_sealed_segment() {
    for wrong_seq in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
        let sealed = sealed_log(&log, 2);
        let name = sealed[0].file_name().unwrap().to_str().unwrap().to_owned();
        let misnamed = if wrong_seq {
            format!("0000000009{}", &name[10..])
        } else {
            format!("{}{}.seg", &name[..11], "0".repeat(64))
        };
        fs::rename(&sealed[0], dir.path().join(&misnamed)).unwrap();
        assert!(!log.verify().unwrap().problems.is_empty(), "misnamed: {misnamed}");
        let report = log.repair(0, &mut lost_marker).unwrap();
        assert!(report.unrepaired.is_empty(), "{:?}", report.unrepaired);
        assert_eq!(report.fixed.len(), 1, "{report:?}");
        assert!(report.lost.is_empty());
        assert!(sealed[0].exists(), "back under its name");
        assert_repaired(&log, 13, &[]);
    }
}

/// A frame damaged before the last one of the active segment (after its
/// appends, the lock hint in place): the listing reports it instead of
/// showing the segment empty, and no writer appends behind it until repair.
#[test]
fn a_damaged_first_frame_is_listed_as_damage_and_refused_to_writers() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 5);
    let active = dir.path().join(active_name(1));
    let mut bytes = fs::read(&active).unwrap();
    bytes[frame_offset(1) + FRAME_HEADER + 4] ^= 0x08;
    // The file changes after the last append (its change time with it).
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(&active, &bytes).unwrap();
    let err = log.lock().map(|_| ()).expect_err("a writer must not append behind the damage");
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains("tapes repair"), "{err}");
    assert_eq!(fs::read(&active).unwrap(), bytes, "nothing was cut or appended");
    assert!(log.segments().is_err(), "the listing reports the damage");
    let report = log.repair(0, &mut lost_marker).unwrap();
    assert_eq!(report.frames_lost(), 1);
    assert_repaired(&log, 5, &[1]);
}

/// The listing reads every frame of the active segment: a damaged one is an
/// error, even when the lock's hint did not notice (a file changed within
/// the same tick of its clock as its last append).
#[test]
fn segments_of_a_damaged_active_segment_is_an_error_not_zero_events() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts(1 << 20)).unwrap();
    append_n(&log, 1, 3);
    let snap = log.snapshot().unwrap();
    let active = dir.path().join(active_name(1));
    let mut bytes = fs::read(&active).unwrap();
    bytes[frame_offset(1) + FRAME_HEADER + 1] ^= 0x01;
    fs::write(&active, &bytes).unwrap();
    let err = snap.segments().expect_err("damage is not an empty segment");
    assert!(err.to_string().contains("tapes verify"), "{err}");
}
