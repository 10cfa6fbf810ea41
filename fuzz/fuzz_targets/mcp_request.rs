//! Fuzzes the MCP server's request path (`engram-scorer mcp`): the JSON-RPC
//! line parser with raw params, then `McpServer::request` (initialize,
//! tools/list, tools/call with each tool's argument checks). The server has
//! no data home, so nothing is written; a panic inside a tool, which the
//! server would catch and report, aborts the fuzzer.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use scorer::mcp::{McpServer, Raw};
use shared::base::rpc::{Message, encode_error, encode_result, parse_message};

thread_local! {
    static SERVER: RefCell<McpServer> = RefCell::new(McpServer::new(None));
}

fuzz_target!(|data: &[u8]| {
    match parse_message::<Raw>(data) {
        Message::Request { id, method, params } => SERVER.with(|s| {
            let line = match s.borrow_mut().request(&method, &params.0) {
                Ok(result) => encode_result(&id, &result),
                Err(e) => encode_error(&id, &e),
            };
            assert!(serde_json::from_slice::<serde_json::Value>(&line).is_ok(), "an answer that is not JSON");
        }),
        Message::Notification { .. } => {}
        Message::Invalid { id: Some(id), error } => {
            let _ = encode_error(&id, &error);
        }
        Message::Invalid { id: None, .. } => {}
    }
});
