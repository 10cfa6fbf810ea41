//! Fuzzes the adapter for Codex CLI rollouts (JSONL): a whole file parsed at once, then the
//! same bytes parsed incrementally from a line boundary with the resume state.
#![no_main]

use ingestor::adapter::ParseContext;
use ingestor::adapters::{initial_state, parse_chunk, parse_file_bytes};
use ingestor::discover::SourceKind;
use ingestor::redact::Privacy;
use libfuzzer_sys::fuzz_target;
use shared::base::time::Ts;

fuzz_target!(|data: &[u8]| {
    let privacy = Privacy::default();
    let ctx = ParseContext::new("/fuzz/session.jsonl", Ts(1_700_000_000_000), &privacy);
    let kind = SourceKind::CodexRollout;
    let _ = parse_file_bytes(kind, &ctx, data);
    // Resume from the middle: the first part's state carried into the second.
    let Some(state) = initial_state(kind, &ctx, data) else { return };
    let Some(mid) = data.iter().position(|&b| b == b'\n').map(|i| i + 1) else { return };
    if let Ok(first) = parse_chunk(kind, &ctx, &data[..mid], 0, &state) {
        let _ = parse_chunk(kind, &ctx, &data[first.consumed as usize..], first.consumed, &first.state);
    }
});
