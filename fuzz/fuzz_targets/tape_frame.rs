//! Fuzzes the tape's byte-level decoders: frames, the active and sealed
//! segment headers, chunk headers and segment file names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::storage::tape::{ActiveHeader, ChunkHeader, FrameRead, SealedHeader, decode_frame, decode_frame_trusted};

fuzz_target!(|data: &[u8]| {
    // Walk the buffer as the recovery scan does: frame after frame until the
    // first one that does not decode.
    let mut at = 0;
    while at < data.len() {
        let checked = decode_frame(&data[at..]);
        let FrameRead::Frame { size, .. } = checked else { break };
        // A frame that passes its checksum reads the same without it.
        assert_eq!(checked, decode_frame_trusted(&data[at..]));
        assert!(size > 0 && size <= data.len() - at, "frame size {size} outside the buffer");
        at += size;
    }
    let _ = ActiveHeader::decode(data);
    let _ = SealedHeader::decode(data);
    if let Ok(h) = ChunkHeader::decode(data) {
        let _ = h.verify(data.get(32..).unwrap_or_default());
    }
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = shared::storage::tape::parse_sealed_name(name);
        let _ = shared::storage::tape::parse_active_name(name);
    }
});
