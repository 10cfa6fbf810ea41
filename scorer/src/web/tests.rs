//! The router in process: what the guard refuses, the JSON errors, writes
//! that land on the tape log, reads of a small data home.

#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::memory::ops::{self as ops, NewMemory, Origin};
use shared::storage::journal::Journal;
use tower::ServiceExt as _;

use super::{App, api};

const HOST: &str = "127.0.0.1:37820";
const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

struct World {
    _dir: tempfile::TempDir,
    paths: Paths,
    app: App,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    let mut j = shared::projection::open(&paths, "test").unwrap();
    for (text, t) in [
        ("Run the integration tests with docker compose up -d redis first", "gotcha"),
        ("We deploy with cargo dist", "decision"),
    ] {
        let new = NewMemory {
            text: text.into(),
            memory_type: shared::storage::event::MemoryType::from_stored(t),
            importance: 0.7,
            project: Some("api".into()),
            tags: vec!["ops".into()],
            pinned: false,
        };
        ops::add(&mut j, new, &Origin::user(), Ts(1_000)).unwrap();
    }
    let app = App::with(paths.clone(), TOKEN.into(), vec![HOST.into(), "localhost:37820".into()]);
    World { _dir: dir, paths, app }
}

async fn send(w: &World, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Value) {
    let resp = api::router(w.app.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, headers, body)
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).header(header::HOST, HOST).body(Body::empty()).unwrap()
}

fn write(method: &str, path: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn tape_kinds(paths: &Paths) -> Vec<String> {
    let j = shared::projection::open(paths, "test").unwrap();
    let mut kinds = Vec::new();
    j.tape()
        .snapshot()
        .unwrap()
        .visit_after(0, &mut |lsn, bytes| {
            kinds.push(shared::storage::journal::decode(lsn, bytes).kind().to_owned());
            Ok(())
        })
        .unwrap();
    kinds
}

#[test]
fn the_guard_refuses_foreign_hosts_and_tokenless_writes_and_changes_nothing() {
    let w = world();
    rt().block_on(async {
        let (s, _, b) = send(
            &w,
            Request::get("/api/stats").header(header::HOST, "evil.example:37820").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!((s, b["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("foreign_host")));
        let (s, _, _) = send(&w, Request::get("/api/stats").body(Body::empty()).unwrap()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "no Host");
        let before = tape_kinds(&w.paths).len();
        let body = r#"{"text":"A new memory","type":"fact"}"#;
        let (s, _, b) = send(&w, write("POST", "/api/memories").body(Body::from(body)).unwrap()).await;
        assert_eq!((s, b["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("token_required")));
        let (s, _, _) =
            send(&w, write("POST", "/api/memories").header("x-engram-token", "nope").body(Body::from(body)).unwrap())
                .await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        let (s, _, b) = send(
            &w,
            write("POST", "/api/memories")
                .header("x-engram-token", TOKEN)
                .header(header::ORIGIN, "http://evil.example")
                .body(Body::from(body))
                .unwrap(),
        )
        .await;
        assert_eq!((s, b["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("cross_origin")));
        for (bad, status) in [
            (r#"{"text":"x","type":"fact""#, StatusCode::BAD_REQUEST),
            (r#"{"text":"x","type":"poem"}"#, StatusCode::BAD_REQUEST),
            (r#"{"text":"x","type":"fact","extra":1}"#, StatusCode::BAD_REQUEST),
            (r#"{"text":"   ","type":"fact"}"#, StatusCode::BAD_REQUEST),
            (r#"[1,2]"#, StatusCode::BAD_REQUEST),
        ] {
            let (s, _, b) =
                send(&w, write("POST", "/api/memories").header("x-engram-token", TOKEN).body(Body::from(bad)).unwrap())
                    .await;
            assert_eq!(s, status, "{bad}: {b}");
            assert!(b["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{b}");
        }
        let (s, _, _) = send(
            &w,
            Request::post("/api/memories")
                .header(header::HOST, HOST)
                .header("x-engram-token", TOKEN)
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Body::from(body))
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let huge = format!(r#"{{"text":"{}","type":"fact"}}"#, "x".repeat(2 << 20));
        let (s, h, b) =
            send(&w, write("POST", "/api/memories").header("x-engram-token", TOKEN).body(Body::from(huge)).unwrap())
                .await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{b}");
        assert!(h[header::CONTENT_TYPE].to_str().unwrap().starts_with("application/json"));
        assert_eq!(tape_kinds(&w.paths).len(), before, "nothing refused reached the tape");
        // The same write with the token lands on the tape.
        let (s, _, b) =
            send(&w, write("POST", "/api/memories").header("x-engram-token", TOKEN).body(Body::from(body)).unwrap())
                .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        assert_eq!(b["memory"]["source"], "web");
        let kinds = tape_kinds(&w.paths);
        assert_eq!((kinds.len(), kinds.last().map(String::as_str)), (before + 1, Some("memory.added")));
    });
}

#[test]
fn two_hosts_are_a_400_and_an_announced_huge_body_a_413_before_it_is_read() {
    let w = world();
    rt().block_on(async {
        for hosts in [[HOST, "evil.example"], ["evil.example", HOST], [HOST, HOST]] {
            let req = Request::get("/api/stats")
                .header(header::HOST, hosts[0])
                .header(header::HOST, hosts[1])
                .body(Body::empty());
            let (s, _, b) = send(&w, req.unwrap()).await;
            assert_eq!(
                (s, b["error"]["code"].as_str()),
                (StatusCode::BAD_REQUEST, Some("duplicate_host")),
                "{hosts:?}"
            );
        }
        // Announced larger than the limit: refused from the header (the
        // few bytes sent are never read; tests/tests/web.rs sends none).
        let req = write("POST", "/api/memories")
            .header("x-engram-token", TOKEN)
            .header(header::CONTENT_LENGTH, "10000000000")
            .body(Body::from(r#"{"text":"x","type":"fact"}"#))
            .unwrap();
        let (s, _, b) = send(&w, req).await;
        assert_eq!((s, b["error"]["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large")));
    });
}

#[test]
fn errors_are_json_and_no_cors_header_is_ever_sent() {
    let w = world();
    rt().block_on(async {
        for (req, status) in [
            (get("/api/nope"), StatusCode::NOT_FOUND),
            (get("/api/sessions?limit=0"), StatusCode::BAD_REQUEST),
            (get("/api/sessions?bogus=1"), StatusCode::BAD_REQUEST),
            (get("/api/search"), StatusCode::BAD_REQUEST),
            (get("/api/memories/mem_nope"), StatusCode::NOT_FOUND),
            (get("/api/sessions/claude:nope"), StatusCode::NOT_FOUND),
            (get("/api/timeline?zoom=year"), StatusCode::BAD_REQUEST),
            (
                Request::put("/api/stats")
                    .header(header::HOST, HOST)
                    .header("x-engram-token", TOKEN)
                    .body(Body::empty())
                    .unwrap(),
                StatusCode::METHOD_NOT_ALLOWED,
            ),
        ] {
            let uri = req.uri().to_string();
            let (s, h, b) = send(&w, req).await;
            assert_eq!(s, status, "{uri}: {b}");
            assert_eq!(b["error"]["status"], status.as_u16(), "{uri}: {b}");
            assert!(h[header::CONTENT_TYPE].to_str().unwrap().starts_with("application/json"), "{uri}");
        }
        let (s, h, _) = send(
            &w,
            Request::get("/api/stats")
                .header(header::HOST, HOST)
                .header(header::ORIGIN, "http://evil.example")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
        assert!(h.keys().all(|k| !k.as_str().starts_with("access-control-")), "{h:?}");
        assert_eq!(h["cross-origin-resource-policy"], "same-origin");
        let (s, h, _) = send(
            &w,
            Request::options("/api/memories")
                .header(header::HOST, HOST)
                .header(header::ORIGIN, "http://evil.example")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert!(s.is_client_error() && h.keys().all(|k| !k.as_str().starts_with("access-control-")), "{s}");
    });
}

#[test]
fn reads_search_with_reasons_and_the_page_holds_the_token() {
    let w = world();
    rt().block_on(async {
        let (s, _, b) = send(&w, get("/api/search?q=redis+integration+tests")).await;
        assert_eq!(s, StatusCode::OK, "{b}");
        let first = &b["results"][0];
        assert!(first["text"].as_str().unwrap().contains("redis"), "{b}");
        assert!(!first["reasons"].as_array().unwrap().is_empty(), "{b}");
        let (_, _, stats) = send(&w, get("/api/stats")).await;
        assert_eq!(stats["memories"]["live"], 2);
        let (_, _, cards) = send(&w, get("/api/memories?type=decision")).await;
        assert_eq!(cards["total"], 1);
        assert_eq!(cards["by_type"], json!({"decision": 1, "gotcha": 1}));
        let resp = api::router(w.app.clone()).oneshot(get("/")).await.unwrap();
        let csp = resp.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
        let html = String::from_utf8(axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
        assert!(html.contains(TOKEN) && !html.contains("http://") && !html.contains("https://"), "{html}");
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    });
}

#[test]
fn knowledge_lists_stored_types_under_seed_004_types_and_resolving_writes_the_tape() {
    let w = world();
    let existing = {
        let mut j = shared::projection::open(&w.paths, "test").unwrap();
        let config = shared::base::config::Config::default();
        let save = |j: &mut Journal, text: &str| {
            let new = NewMemory {
                text: text.into(),
                memory_type: shared::storage::event::MemoryType::Fact,
                importance: 0.7,
                project: None,
                tags: vec![],
                pinned: false,
            };
            shared::domain::knowledge::ops::save(j, &config, new, &Origin::user(), &[], Ts(2_000)).unwrap()
        };
        let shared::domain::knowledge::ops::Saved::Added { id, .. } =
            save(&mut j, "The quokka cache holds 512 entries per shard")
        else {
            panic!("not added")
        };
        let staged = save(&mut j, "The quokka cache holds 1024 entries per shard");
        assert!(matches!(staged, shared::domain::knowledge::ops::Saved::Staged { .. }), "{staged:?}");
        id
    };
    rt().block_on(async {
        // A gotcha is listed as an issue; a decision is not.
        let (s, _, b) = send(&w, get("/api/knowledge?type=issue")).await;
        assert_eq!(s, StatusCode::OK, "{b}");
        assert_eq!(b["total"], 1, "{b}");
        assert_eq!(b["knowledge"][0]["type"], "gotcha");
        assert_eq!(b["knowledge"][0]["knowledge_type"], "issue");
        assert_eq!(b["by_type"]["issue"], 1);
        assert_eq!(b["by_type"]["fact"], 1);
        let (s, _, _) = send(&w, get("/api/knowledge?type=gotcha")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "stored types are not knowledge types");
        let (s, _, g) = send(&w, get(&format!("/api/knowledge/{}/graph?depth=3", existing.as_str()))).await;
        assert_eq!(s, StatusCode::OK, "{g}");
        assert_eq!((g["root"].as_str(), g["max_depth"].as_u64()), (Some(existing.as_str()), Some(3)));
        let (_, _, st) = send(&w, get("/api/staging")).await;
        assert_eq!(st["conflicts"], 1, "{st}");
        let stage = st["staged"][0]["id"].as_str().unwrap().to_owned();
        let before = tape_kinds(&w.paths).len();
        let path = format!("/api/staging/{stage}/resolve");
        let (s, _, _) = send(&w, write("POST", &path).body(Body::from(r#"{"action":"skip"}"#)).unwrap()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        let (s, _, b) = send(
            &w,
            write("POST", &path).header("x-engram-token", TOKEN).body(Body::from(r#"{"action":"keep_both"}"#)).unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{b}");
        assert_eq!(b["conflicts_left"], 0);
        let kinds = tape_kinds(&w.paths);
        assert_eq!(&kinds[before..].last().map(String::as_str), &Some("knowledge.resolved"), "{kinds:?}");
        assert!(kinds[before..].iter().any(|k| k == "memory.added"), "{kinds:?}");
    });
}

/// Saves a memory of `memory_type` through conflict detection, derived from `sources`.
fn save(w: &World, text: &str, memory_type: &str, sources: &[String]) -> String {
    let mut j = shared::projection::open(&w.paths, "test").unwrap();
    let new = NewMemory {
        text: text.into(),
        memory_type: shared::storage::event::MemoryType::from_stored(memory_type),
        importance: 0.7,
        project: None,
        tags: vec![],
        pinned: false,
    };
    let config = shared::base::config::Config::default();
    match shared::domain::knowledge::ops::save(&mut j, &config, new, &Origin::user(), sources, Ts(2_000)).unwrap() {
        shared::domain::knowledge::ops::Saved::Added { id, .. } => id.as_str().to_owned(),
        other => panic!("not added: {other:?}"),
    }
}

#[test]
fn a_forgotten_memory_is_neither_counted_nor_shown_in_the_graph() {
    let w = world();
    let a = save(&w, "Binary search needs its slice sorted ascending", "fact", &[]);
    let b = save(&w, "The users index keeps rows ordered by signup timestamp", "fact", &[]);
    let d = save(&w, "Users can be found by signup time with a binary search", "discovery", &[a.clone(), b.clone()]);
    let card = |v: &Value, id: &str| v["knowledge"].as_array().unwrap().iter().find(|c| c["id"] == id).cloned();
    rt().block_on(async {
        let (_, _, before) = send(&w, get("/api/knowledge?connected=true&order=edges")).await;
        assert_eq!(card(&before, &d).unwrap()["edges"], 2, "{before}");
        let (s, _, _) = send(
            &w,
            write("DELETE", &format!("/api/memories/{b}"))
                .header("x-engram-token", TOKEN)
                .body(Body::from(r#"{"reason":"wrong"}"#))
                .unwrap(),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
        // The discovery's card counts only the edge to the live fact; the
        // edge counts per relation and the "connected" filter agree.
        let (_, _, after) = send(&w, get("/api/knowledge?connected=true&order=edges")).await;
        assert_eq!(card(&after, &d).unwrap()["edges"], 1, "{after}");
        assert_eq!(card(&after, &a).unwrap()["edges"], 1, "{after}");
        assert!(card(&after, &b).is_none(), "the forgotten memory is listed: {after}");
        assert_eq!(after["edge_counts"]["derives_from"], 1, "{after}");
        let total: i64 = after["knowledge"].as_array().unwrap().iter().map(|c| c["edges"].as_i64().unwrap()).sum();
        assert_eq!(total, 2, "one live edge, counted at both ends: {after}");
        // The graph around the discovery neither shows nor chains it.
        let (s, _, g) = send(&w, get(&format!("/api/knowledge/{d}/graph?depth=3"))).await;
        assert_eq!(s, StatusCode::OK, "{g}");
        let text = g.to_string();
        assert!(!text.contains(&b), "the forgotten memory is in the graph: {g}");
        assert_eq!(g["reasoning_chain"].as_array().unwrap().len(), 1, "{g}");
        assert_eq!(g["connections"].as_array().unwrap().len(), 1, "{g}");
        // Once both sources are forgotten the discovery is connected to nothing.
        let mut j = shared::projection::open(&w.paths, "test").unwrap();
        ops::forget(&mut j, &a, None, Ts(3_000)).unwrap();
        let (_, _, none) = send(&w, get("/api/knowledge?connected=true")).await;
        assert_eq!(none["total"], 0, "{none}");
        assert!(none["edge_counts"].as_object().unwrap().is_empty(), "{none}");
    });
}

#[test]
fn a_write_the_state_forbids_is_409_and_a_malformed_one_400() {
    let w = world();
    let existing = save(&w, "The quokka cache holds 512 entries per shard", "fact", &[]);
    let mut j = shared::projection::open(&w.paths, "test").unwrap();
    let new = NewMemory {
        text: "The quokka cache holds 1024 entries per shard".into(),
        memory_type: shared::storage::event::MemoryType::Fact,
        importance: 0.7,
        project: None,
        tags: vec![],
        pinned: false,
    };
    let config = shared::base::config::Config::default();
    let staged = shared::domain::knowledge::ops::save(&mut j, &config, new, &Origin::user(), &[], Ts(2_000)).unwrap();
    assert!(matches!(staged, shared::domain::knowledge::ops::Saved::Staged { .. }), "{staged:?}");
    let forgotten = save(&w, "The old deploy script lives in tools/deploy.sh", "fact", &[]);
    ops::forget(&mut j, &forgotten, None, Ts(3_000)).unwrap();
    drop(j);
    let call = |method: &str, path: String, body: &'static str| {
        write(method, &path).header("x-engram-token", TOKEN).body(Body::from(body)).unwrap()
    };
    rt().block_on(async {
        let (_, _, st) = send(&w, get("/api/staging")).await;
        let stage = st["staged"][0]["id"].as_str().unwrap().to_owned();
        let resolve = format!("/api/staging/{stage}/resolve");
        let (s, _, b) = send(&w, call("POST", resolve.clone(), r#"{"action":"keep_both"}"#)).await;
        assert_eq!(s, StatusCode::OK, "{b}");
        let before = tape_kinds(&w.paths).len();
        // Resolving it again: the request is well formed, the state forbids it.
        let conflict = |s: StatusCode, b: &Value| {
            assert_eq!(s, StatusCode::CONFLICT, "{b}");
            assert_eq!(b["error"]["code"], "conflict", "{b}");
            assert_eq!(b["error"]["status"], 409, "{b}");
        };
        let (s, _, b) = send(&w, call("POST", resolve.clone(), r#"{"action":"skip"}"#)).await;
        conflict(s, &b);
        assert!(b["error"]["message"].as_str().unwrap().contains("already resolved"), "{b}");
        // A malformed request about a resolved entry is still a 400, an unknown entry a 404.
        let (s, _, b) = send(&w, call("POST", resolve, r#"{"action":"shrug"}"#)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
        let (s, _, b) = send(&w, call("POST", "/api/staging/obs_nope/resolve".into(), r#"{"action":"skip"}"#)).await;
        assert_eq!((s, b["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{b}");
        // A forgotten memory cannot be changed, pinned or rated; its text is not learned again.
        let f = format!("/api/memories/{forgotten}");
        for (method, path, body) in [
            ("PATCH", f.clone(), r#"{"importance":0.9}"#),
            ("POST", format!("{f}/pin"), ""),
            ("POST", format!("{f}/feedback"), r#"{"relevance":0.9}"#),
            (
                "POST",
                "/api/memories".to_owned(),
                r#"{"text":"The old deploy script lives in tools/deploy.sh","type":"fact"}"#,
            ),
        ] {
            let (s, _, b) = send(&w, call(method, path.clone(), body)).await;
            conflict(s, &b);
            assert!(b["error"]["message"].as_str().unwrap().contains("forgotten"), "{method} {path}: {b}");
        }
        // Forgetting it again changes nothing and is no error.
        let (s, _, b) = send(&w, call("DELETE", f, "")).await;
        assert_eq!(s, StatusCode::OK, "{b}");
        assert_eq!(tape_kinds(&w.paths).len(), before, "a refused write reached the tapes");
        let (s, _, _) = send(&w, get(&format!("/api/memories/{existing}"))).await;
        assert_eq!(s, StatusCode::OK);
    });
}

/// The dashboard's counts are kept while the projection is unchanged, and
/// read again as soon as it applies another event (here another writer's).
#[test]
fn stats_counts_are_kept_until_the_projection_changes() {
    let w = world();
    rt().block_on(async {
        let (_, _, first) = send(&w, get("/api/stats")).await;
        assert_eq!(first["memories"]["live"], 2);
        let (_, _, again) = send(&w, get("/api/stats")).await;
        assert_eq!(again["memories"], first["memories"]);
        let mut j = shared::projection::open(&w.paths, "test").unwrap();
        let added = shared::storage::event::MemoryAdded {
            memory_id: shared::base::ids::MemoryId("mem_counted".into()),
            content: "Run the migrations before the integration tests.".into(),
            memory_type: shared::storage::event::MemoryType::Fact,
            importance: 0.7,
            source: "explicit".into(),
            ..Default::default()
        };
        let e = j.event(Ts::now(), None, shared::storage::event::Body::MemoryAdded(added));
        j.append(&[e]).unwrap();
        drop(j);
        let (_, _, after) = send(&w, get("/api/stats")).await;
        assert_eq!(after["memories"]["live"], 3, "{after}");
        assert_eq!(
            after["knowledge"]["by_knowledge_type"]["fact"],
            first["knowledge"]["by_knowledge_type"]["fact"].as_i64().unwrap() + 1
        );
    });
}
