//! MCP conformance of `engram-scorer mcp`, driven by the official MCP Python
//! SDK (`mcp` from PyPI, installed by this test into `target/mcp-venv`): the
//! handshake, `tools/list`, every tool called with good arguments and bad
//! ones, and what the calls wrote (through the tape log). A second test
//! speaks the wire protocol directly for what an SDK does not let one choose:
//! each protocol version, an unknown one, `server/discover`, protocol errors.
//!
//! Without Python or PyPI the first test skips with a message locally and
//! fails under `CI`.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::World;
use serde_json::{Value, json};

const TOOLS: [&str; 20] = [
    "memory_search",
    "memory_save",
    "memory_get",
    "memory_list",
    "memory_forget",
    "memory_pin",
    "memory_unpin",
    "memory_feedback",
    "memory_timeline",
    "memory_stats",
    "memory_resolve",
    "memory_staging",
    "memory_graph",
    "memory_stash",
    "memory_resume",
    "memory_checkpoint",
    "memory_categorize",
    "memory_update",
    "memory_deprecate",
    "memory_explain",
];

/// The client's record of one call: the `CallToolResult` as JSON.
fn ok_result<'a>(calls: &'a Value, name: &str) -> &'a Value {
    let r = &calls[name]["result"];
    assert_eq!(r["isError"], false, "{name}: {}", calls[name]);
    let text = r["content"][0]["text"].as_str().unwrap();
    let parsed: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: text is not JSON ({e})"));
    assert_eq!(parsed, r["structuredContent"], "{name}: the text and structuredContent agree");
    &r["structuredContent"]
}

#[test]
fn the_official_python_client_lists_and_calls_every_tool() {
    let Some(python) = common::python_with_mcp() else { return };
    let w = World::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = tests::isolated(python, w.root())
        .arg(&script)
        .arg(common::scorer_bin())
        .env("ENGRAM_HOME", w.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "the client failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("mcp SDK {}", report["sdk_version"]);
    let legacy = &report["legacy"];

    // Handshake.
    let init = &legacy["initialize"];
    assert!(
        ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"].contains(&init["protocolVersion"].as_str().unwrap()),
        "{init}"
    );
    assert_eq!(init["serverInfo"]["name"], "engram");
    assert!(init["capabilities"]["tools"].is_object());
    assert!(init["instructions"].as_str().unwrap().contains("memory_feedback"));

    // tools/list: the thirteen tools, each with an object schema naming its required arguments.
    // tools/list: every tool, each with an object schema naming its required arguments.
    let tools: BTreeMap<&str, &Value> =
        legacy["tools"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap(), t)).collect();
    let mut names: Vec<&str> = tools.keys().copied().collect();
    let mut want = TOOLS.to_vec();
    names.sort_unstable();
    want.sort_unstable();
    assert_eq!(names, want);
    for (name, tool) in &tools {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema["properties"].is_object(), "{name}");
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 10), "{name}");
    }
    let required = |name: &str| tools[name]["inputSchema"]["required"].clone();
    assert_eq!(required("memory_search"), json!(["query"]));
    assert_eq!(required("memory_save"), json!(["content", "type"]));
    assert_eq!(required("memory_get"), json!(["ids"]));
    for name in ["memory_pin", "memory_unpin", "memory_feedback"] {
        assert_eq!(required(name), json!(["id"]), "{name}");
    }

    // Every tool, with good arguments.
    let calls = &legacy["calls"];
    let id = ok_result(calls, "memory_save")["id"].as_str().unwrap().to_owned();
    let second = ok_result(calls, "memory_save_second")["id"].as_str().unwrap().to_owned();
    let search = ok_result(calls, "memory_search");
    assert_eq!(search["results"][0]["id"], id.as_str(), "{search}");
    let got = ok_result(calls, "memory_get");
    assert!(got["memories"][0]["content"].as_str().unwrap().contains("VPN"), "{got}");
    let listed = |name: &str| -> Vec<String> {
        ok_result(calls, name)["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().into())
            .collect()
    };
    assert_eq!(listed("memory_list").len(), 2);
    assert_eq!(ok_result(calls, "memory_pin")["pinned"], true);
    assert_eq!(listed("memory_list_pinned"), vec![id.clone()]);
    assert_eq!(ok_result(calls, "memory_unpin")["pinned"], false);
    assert_eq!(ok_result(calls, "memory_feedback")["recorded"], true);
    assert!(!ok_result(calls, "memory_timeline")["entries"].as_array().unwrap().is_empty());
    let stats = ok_result(calls, "memory_stats");
    assert_eq!(stats["memories"]["live"], 2, "{stats}");
    assert!(stats["predictor"]["status"].as_str().unwrap().starts_with("[predictor:"), "{stats}");
    assert_eq!(ok_result(calls, "memory_forget_dry_run")["would_forget"], json!([second]));
    assert_eq!(ok_result(calls, "memory_forget")["forgotten"], json!([second]));
    assert_eq!(listed("memory_list_after_forget"), vec![id.clone()]);

    // Errors: tool failures are isError results saying what is wrong; an unknown tool is -32602.
    for (case, want) in [
        ("get_unknown_id", "no memory with id"),
        ("save_missing_content", "content"),
        ("save_bad_type", "poem"),
        ("feedback_out_of_range", "between 0 and 1"),
        ("search_unknown_argument", "colour"),
        ("pin_unknown_id", "no memory with id"),
        ("forget_without_condition", "at least one"),
    ] {
        let r = &legacy["errors"][case]["result"];
        assert_eq!(r["isError"], true, "{case}: {}", legacy["errors"][case]);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(want), "{case}: {text}");
    }
    assert_eq!(legacy["errors"]["unknown_tool"]["error"]["code"], -32602, "{}", legacy["errors"]["unknown_tool"]);

    // The writes went through the tape log and the projection.
    let tapes = w.tape_dump();
    assert!(tapes.contains("make deploy-staging"), "memory_save is on the tapes");
    assert_eq!(w.count(&format!("SELECT COUNT(*) FROM memories WHERE id = '{id}' AND source = 'mcp'")), 1);
    assert_eq!(w.count(&format!("SELECT is_deleted FROM memories WHERE id = '{second}'")), 1);
    assert!(w.count(&format!("SELECT COUNT(*) FROM memory_feedback WHERE memory_id = '{id}'")) >= 1);

    // An SDK that speaks the 2026-07-28 revision probes server/discover and adopts it.
    if !report["modern"].is_null() {
        let modern = &report["modern"];
        assert_eq!(modern["protocol_version"], "2026-07-28", "{modern}");
        assert_eq!(modern["tools"].as_array().unwrap().len(), TOOLS.len());
        assert_eq!(modern["stats"]["isError"], false);
        assert_eq!(modern["stats"]["structuredContent"]["memories"]["live"], 1);
    }
}

/// Sends `lines` to a fresh server, closes its input, returns responses by id.
fn converse(w: &World, lines: &[Value]) -> BTreeMap<String, Value> {
    let mut child =
        w.scorer(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = String::new();
    for l in lines {
        input.push_str(&l.to_string());
        input.push('\n');
    }
    input.push_str("{this is not json\n");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "end of input ends the server cleanly: {:?}", out.status);
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {l}"));
            assert_eq!(v["jsonrpc"], "2.0");
            (v["id"].to_string(), v)
        })
        .collect()
}

#[test]
fn every_protocol_version_is_negotiated_and_protocol_errors_are_json_rpc_errors() {
    let w = World::new();
    let init = |id: &str, version: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
               "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    };
    let versions = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
    let mut lines: Vec<Value> = versions.iter().map(|v| init(v, v)).collect();
    lines.push(init("future", "2099-01-01"));
    lines.push(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    lines.push(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    lines.push(json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
    lines.push(json!({"jsonrpc": "2.0", "id": "discover", "method": "server/discover",
                      "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}));
    lines.push(json!({"jsonrpc": "2.0", "id": "nope", "method": "resources/teleport"}));
    lines.push(json!({"jsonrpc": "2.0", "id": "bad-tool", "method": "tools/call", "params": {"name": "rm_rf"}}));
    let r = converse(&w, &lines);
    for v in versions {
        assert_eq!(r[&format!("\"{v}\"")]["result"]["protocolVersion"], v, "{v} is echoed");
    }
    assert_eq!(r["\"future\""]["result"]["protocolVersion"], "2025-11-25", "an unknown version gets the latest");
    assert_eq!(r["\"ping\""]["result"], json!({}));
    let discover = &r["\"discover\""]["result"];
    assert_eq!(discover["resultType"], "complete");
    for v in versions.iter().chain(&["2026-07-28"]) {
        assert!(discover["supportedVersions"].as_array().unwrap().contains(&json!(v)), "{discover}");
    }
    assert_eq!(r["\"nope\""]["error"]["code"], -32601);
    assert_eq!(r["\"bad-tool\""]["error"]["code"], -32602);
    assert_eq!(r["null"]["error"]["code"], -32700, "a line that is not JSON is a parse error");
    assert_eq!(r.len(), versions.len() + 6, "notifications get no answer: {r:?}");
}

/// Issue 15 item 7 and issue 19 item 1, on the wire: `memory_save` with type
/// `discovery` is stored and listed as one; `memory_list` and
/// `memory_search` filtered by a knowledge type find every kind listed under
/// it (`issue`: a `gotcha` and a `struggle`) and say which; the ranks of a
/// filtered search run 1, 2, 3… without the gaps the filtered-out candidates
/// left.
#[test]
fn knowledge_types_are_stored_listed_and_filtered_and_search_ranks_have_no_gaps() {
    let w = World::new();
    let call = |id: &str, name: &str, args: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    // The best match for "redis cache" is a fact; the issues come after it.
    let saves = [
        ("fact", "The redis cache keeps sessions for a day; redis cache keys start with sess."),
        ("gotcha", "The redis cache container must run before the API tests start."),
        ("struggle", "Flushing the redis cache by hand broke the staging queue twice."),
        ("discovery", "Slow checkout pages trace back to cold caches after each deploy."),
    ];
    for (i, (t, text)) in saves.iter().enumerate() {
        lines.push(call(&format!("save{i}"), "memory_save", json!({"content": text, "type": t, "project": "shop"})));
    }
    lines.push(call("list-issue", "memory_list", json!({"type": "issue"})));
    lines.push(call("list-gotcha", "memory_list", json!({"type": "gotcha"})));
    lines.push(call("list-discovery", "memory_list", json!({"type": "discovery"})));
    lines.push(call("search-issue", "memory_search", json!({"query": "redis cache", "type": "issue"})));
    lines.push(call("search-all", "memory_search", json!({"query": "redis cache"})));
    let r = converse(&w, &lines);
    let result = |id: &str| {
        let v = &r[&format!("\"{id}\"")]["result"];
        assert_eq!(v["isError"], false, "{id}: {v}");
        v["structuredContent"].clone()
    };
    for i in 0..saves.len() {
        assert_eq!(result(&format!("save{i}"))["saved"], true, "save {i}");
    }
    let kinds = |v: &Value, key: &str| -> Vec<(String, String)> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["type"].as_str().unwrap().to_owned(), m["knowledge_type"].as_str().unwrap().to_owned()))
            .collect()
    };
    let mut issues = kinds(&result("list-issue"), "memories");
    issues.sort();
    assert_eq!(
        issues,
        vec![("gotcha".into(), "issue".into()), ("struggle".into(), "issue".into())],
        "a knowledge type lists every kind under it"
    );
    assert_eq!(result("list-issue")["total"], 2);
    assert_eq!(kinds(&result("list-gotcha"), "memories"), vec![("gotcha".into(), "issue".into())]);
    assert_eq!(kinds(&result("list-discovery"), "memories"), vec![("discovery".into(), "discovery".into())]);

    let all = result("search-all");
    assert!(all["results"].as_array().unwrap().len() >= 3, "{all}");
    assert_eq!(all["results"][0]["type"], "fact", "the fact ranks first unfiltered: {all}");
    let filtered = result("search-issue");
    let hits = filtered["results"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{filtered}");
    assert!(hits.iter().all(|h| h["knowledge_type"] == "issue"), "{filtered}");
    let ranks: Vec<u64> = hits.iter().map(|h| h["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, vec![1, 2], "ranks have no gaps after filtering: {filtered}");
}

/// One tag limit for every writer: `memory_save` and `memory_update` refuse
/// more than 32 tags, or a tag over 64 characters, as the CLI and the REST
/// API do (`shared::domain::memory::ops::check_tags`); nothing is written.
#[test]
fn memory_save_and_update_have_the_tag_limit_every_writer_has() {
    let w = World::new();
    let call = |id: &str, name: &str, args: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let tags = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
    let id =
        w.ok(&["memory", "add", "Tags are limited the same way for every writer.", "--tag", "a"]).trim().to_owned();
    let lines = vec![
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(
            "save-many",
            "memory_save",
            json!({"content": "Too many tags on this one.", "type": "fact", "tags": tags(33)}),
        ),
        call(
            "save-long",
            "memory_save",
            json!({"content": "A tag too long on this one.", "type": "fact", "tags": ["x".repeat(65)]}),
        ),
        call("update-many", "memory_update", json!({"id": id, "tags": tags(1_000)})),
        call("update-ok", "memory_update", json!({"id": id, "tags": tags(32)})),
    ];
    let r = converse(&w, &lines);
    for refused in ["save-many", "save-long", "update-many"] {
        let v = &r[&format!("\"{refused}\"")]["result"];
        assert_eq!(v["isError"], true, "{refused}: {v}");
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("32") || text.contains("64"), "{refused}: {text}");
    }
    assert_eq!(r["\"update-ok\""]["result"]["isError"], false, "{}", r["\"update-ok\""]);
    let shown = w.json(&["memory", "show", &id, "--json"]);
    assert_eq!(shown["tags"].as_array().unwrap().len(), 32);
    assert_eq!(w.json(&["memory", "list", "--json"]).as_array().unwrap().len(), 1, "nothing else was saved");
}
