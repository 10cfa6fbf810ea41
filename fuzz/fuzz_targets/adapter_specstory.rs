//! Fuzzes the adapter for SpecStory markdown exports: a whole export parsed
//! at once, then the same bytes read as a growing file (the first part, then
//! the rest from the offset and state it left), as the scanner reads them.
#![no_main]

use ingestor::adapter::ParseContext;
use ingestor::adapters::{initial_state, parse_chunk, parse_file_bytes};
use ingestor::discover::SourceKind;
use ingestor::redact::Privacy;
use libfuzzer_sys::fuzz_target;
use shared::base::time::Ts;

fuzz_target!(|data: &[u8]| {
    let privacy = Privacy::default();
    let ctx = ParseContext::new("/fuzz/repo/.specstory/history/2025-01-01_00-00-x.md", Ts(1_700_000_000_000), &privacy);
    let kind = SourceKind::SpecStory;
    let _ = parse_file_bytes(kind, &ctx, data);
    // The first byte chooses where the file had grown to when first read.
    let Some((&at, rest)) = data.split_first() else { return };
    let cut = rest.len() * usize::from(at) / 255;
    let Some(state) = initial_state(kind, &ctx, &rest[..cut]) else { return };
    if let Ok(first) = parse_chunk(kind, &ctx, &rest[..cut], 0, &state) {
        let offset = first.consumed as usize;
        assert!(offset <= cut, "consumed past the bytes given");
        let _ = parse_chunk(kind, &ctx, &rest[offset..], first.consumed, &first.state);
    }
});
