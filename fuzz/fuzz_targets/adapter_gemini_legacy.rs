//! Fuzzes the adapter for Gemini CLI legacy single-JSON chats (a whole-file
//! format, parsed at once).
#![no_main]

use ingestor::adapter::ParseContext;
use ingestor::adapters::parse_file_bytes;
use ingestor::discover::SourceKind;
use ingestor::redact::Privacy;
use libfuzzer_sys::fuzz_target;
use shared::base::time::Ts;

fuzz_target!(|data: &[u8]| {
    let privacy = Privacy::default();
    let ctx = ParseContext::new("/fuzz/session-1.json", Ts(1_700_000_000_000), &privacy);
    let kind = SourceKind::GeminiLegacy;
    let _ = parse_file_bytes(kind, &ctx, data);
});
