//! Fuzzes the OpenCode adapter: each input line is one storage file (its
//! first byte picks the folder, `session`, `message` or `part`, and the
//! folder it sits in; the rest is the file's bytes), read into records as
//! `load_storage` reads them, then parsed together as one storage snapshot.
#![no_main]

use ingestor::adapter::ParseContext;
use ingestor::adapters::opencode::{Snapshot, parse_records, storage_record};
use ingestor::redact::Privacy;
use libfuzzer_sys::fuzz_target;
use shared::base::time::Ts;

const DIRS: [&str; 4] = ["ses_a", "ses_b", "msg_a", "msg_b"];

fuzz_target!(|data: &[u8]| {
    let mut snap = Snapshot::default();
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        let Some((&pick, bytes)) = line.split_first() else { continue };
        let dir = DIRS[usize::from(pick >> 4) % DIRS.len()];
        let (kind, list) = match pick % 3 {
            0 => ("session", &mut snap.sessions),
            1 => ("message", &mut snap.messages),
            _ => ("part", &mut snap.parts),
        };
        list.push(storage_record(kind, dir, format!("f{n:04}"), format!("{kind}/{dir}/f{n:04}.json"), bytes));
    }
    let privacy = Privacy::default();
    let ctx = ParseContext::new("/fuzz/storage", Ts(1_700_000_000_000), &privacy);
    let _ = parse_records(&ctx, &snap);
});
