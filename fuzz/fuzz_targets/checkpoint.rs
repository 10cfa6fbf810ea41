//! Fuzzes the native checkpoint decoder (`.ckpt` weight files the scorer
//! and trainer load): any bytes give a clear error or a checkpoint that
//! encodes back to bytes decoding to the same checkpoint. An input whose
//! first byte is odd gets the file's trailing blake3 appended, so the
//! fuzzer reaches the body behind the checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use predictor::checkpoint::{decode, encode};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let sealed;
    let bytes = if mode & 1 == 1 {
        sealed = [rest, blake3::hash(rest).as_bytes()].concat();
        &sealed[..]
    } else {
        data
    };
    let Ok(ckpt) = decode(bytes, None) else { return };
    let again = decode(&encode(&ckpt), None).expect("a re-encoded checkpoint decodes");
    assert_eq!(format!("{ckpt:?}"), format!("{again:?}"), "checkpoint round trip");
});
