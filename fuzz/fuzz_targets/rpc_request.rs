//! Fuzzes the sidecar's JSON-RPC request parser (`engram-scorer serve`):
//! `parse_message` with the scorer's params, including the fast `score`
//! line reader, which must give exactly what the generic reader gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorer::protocol::Request;
use serde::Deserializer;
use serde_json::Value;
use shared::base::rpc::{Id, Message, Params, parse_message, sniff_id};

/// The scorer's params read by the generic reader only (no fast path).
#[derive(Debug)]
struct Generic(Request);

impl Params for Generic {
    fn deserialize<'de, D: Deserializer<'de>>(method: &str, params: D) -> Result<Self, D::Error> {
        <Request as Params>::deserialize(method, params).map(Generic)
    }

    fn explain(method: &str, params: Value) -> Result<Self, String> {
        <Request as Params>::explain(method, params).map(Generic)
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = sniff_id(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Id::from_raw(text.as_bytes());
    }
    let fast = parse_message::<Request>(data);
    let generic = parse_message::<Generic>(data);
    if scorer::score_line::read(data).is_some() {
        // The fast reader answered: it must agree with the generic one.
        let generic = match generic {
            Message::Request { id, method, params } => Message::Request { id, method, params: params.0 },
            Message::Notification { method, params } => Message::Notification { method, params: params.0 },
            Message::Invalid { id, error } => Message::Invalid { id, error },
        };
        assert_eq!(format!("{fast:?}"), format!("{generic:?}"), "fast and generic readers disagree");
    }
});
