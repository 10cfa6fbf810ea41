//! Fuzzes the decoder of Signet's `SGPT` checkpoints (the drop-in path that
//! loads a Signet predictor's weights): any bytes give a clear error or a
//! model that encodes back to bytes decoding to the same model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use predictor::signet::{decode_sgpt, encode_sgpt};

fuzz_target!(|data: &[u8]| {
    let Ok(model) = decode_sgpt(data) else { return };
    let again = decode_sgpt(&encode_sgpt(&model)).expect("a re-encoded SGPT checkpoint decodes");
    assert_eq!(format!("{model:?}"), format!("{again:?}"), "SGPT round trip");
});
