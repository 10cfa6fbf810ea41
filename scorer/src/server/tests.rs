//! Dispatch tests over an in-memory connection: the same reader, parser and
//! main loop as the binary, without a process.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{Value, json};
use shared::base::rpc::{Connection, MemoryClient};
use shared::base::shutdown::Shutdown;

use super::*;

const WAIT: Duration = Duration::from_secs(60);
const DIM: usize = 8;

struct Harness {
    client: Option<MemoryClient>,
    server: Option<JoinHandle<Result<()>>>,
    shutdown: Shutdown,
    home: tempfile::TempDir,
}

impl Harness {
    fn with(configure: impl FnOnce(&mut ServeOptions, &Paths)) -> Harness {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::at(home.path().join("engram"));
        let mut opts = ServeOptions {
            native_dim: DIM,
            checkpoint: None,
            paths: Some(paths.clone()),
            max_line: 4096,
            training_budget: Duration::from_secs(20),
        };
        configure(&mut opts, &paths);
        let (conn, client, _threads) = Connection::<Request>::memory(opts.max_line);
        let shutdown = Shutdown::manual();
        let s = shutdown.clone();
        let server = std::thread::spawn(move || serve(conn, opts, s));
        Harness { client: Some(client), server: Some(server), shutdown, home }
    }

    fn new() -> Harness {
        Harness::with(|_, _| {})
    }

    fn client(&self) -> &MemoryClient {
        self.client.as_ref().unwrap()
    }

    fn send(&self, v: Value) {
        assert!(self.client().send(&v));
    }

    fn recv(&self) -> Value {
        self.client().recv(WAIT).expect("a response")
    }

    fn call(&self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.recv();
        assert_eq!(r["id"], id, "{r}");
        r
    }

    /// Closes the input and waits for the server to drain; returns what it still wrote.
    fn finish(mut self) -> Vec<Value> {
        let client = self.client.take().unwrap();
        let output = client.output;
        drop(client.input);
        self.server.take().unwrap().join().unwrap().unwrap();
        output.try_iter().map(|l| serde_json::from_slice(&l).unwrap()).collect()
    }
}

fn emb(x: f32) -> Vec<f32> {
    (0..DIM).map(|d| if d == 0 { x } else { 0.1 * d as f32 }).collect()
}

fn features(age_days: f64, importance: f64) -> Vec<f32> {
    crate::signet::FeatureRow { age_days, importance, hour: 10.0, ..Default::default() }.values()
}

#[test]
fn status_has_signets_six_fields_with_their_types() {
    let h = Harness::new();
    let r = h.call(1, "status", json!({"agent_id": "default"}));
    let s = &r["result"];
    assert_eq!(s["trained"], false);
    assert!(s["training_pairs"].is_u64());
    assert_eq!(s["model_version"], 1);
    assert!(s["last_trained"].is_null());
    assert_eq!(s["native_dimensions"], DIM);
    assert_eq!(s["feature_dimensions"], 17);
    assert_eq!(s["weights"], "fresh");
    h.finish();
}

#[test]
fn score_accepts_null_rows_and_returns_a_sorted_softmax() {
    let h = Harness::new();
    let r = h.call(
        2,
        "score",
        json!({
            "agent_id": "default",
            "context_embedding": emb(1.0),
            "candidate_ids": ["a", "b", "c", "d"],
            "candidate_embeddings": [emb(1.0), null, emb(-1.0), emb(0.5)],
            "candidate_features": [features(1.0, 0.9), null, features(30.0, 0.2), features(2.0, 0.5)],
        }),
    );
    let scores = r["result"]["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 4);
    let values: Vec<f64> = scores.iter().map(|s| s["score"].as_f64().unwrap()).collect();
    assert!((values.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{values:?}");
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "{values:?}");
    let mut ids: Vec<&str> = scores.iter().map(|s| s["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    // Texts alone work too (the text path), as does an Engram query text.
    let r = h.call(
        3,
        "score",
        json!({"candidate_ids": ["x", "y"], "candidate_texts": ["parse config files", null], "context_text": "config parsing"}),
    );
    assert_eq!(r["result"]["scores"].as_array().unwrap().len(), 2, "{r}");
    h.finish();
}

#[test]
fn errors_have_the_right_codes_and_name_the_field() {
    let h = Harness::new();
    h.client().send_line(b"{this is not json");
    let r = h.recv();
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (Value::Null, json!(-32700)));
    h.send(json!({"jsonrpc": "1.0", "id": "v", "method": "status"}));
    assert_eq!(h.recv()["error"]["code"], -32600);
    let r = h.call(4, "no_such_method", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    let r = h.call(5, "score", json!({"context_embedding": emb(1.0)}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("candidate_ids"), "{r}");
    let r = h.call(6, "score", json!({"candidate_ids": ["a"], "candidate_embeddings": [[0.0, "x"]]}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("candidate_embeddings[0][1]"), "{r}");
    let r = h.call(7, "score", json!({"candidate_ids": ["a", "b"], "candidate_features": [null, [1.0, 2.0]]}));
    assert!(r["error"]["message"].as_str().unwrap().contains("candidate_features[1]"), "{r}");
    let r = h.call(8, "score", json!({"candidate_ids": [], "context_embedding": emb(0.0)}));
    assert!(r["error"]["message"].as_str().unwrap().contains("empty"), "{r}");
    let r = h.call(9, "score", json!({"candidate_ids": ["a"], "context_embedding": [1.0, 2.0]}));
    assert!(r["error"]["message"].as_str().unwrap().contains("context_embedding"), "{r}");
    let r = h.call(10, "train_from_db", json!({"db_path": "/nonexistent/memories.db"}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("db_path"), "{r}");
    // A notification gets no answer; the next request is answered normally.
    h.send(json!({"jsonrpc": "2.0", "method": "status"}));
    let r = h.call(11, "status", json!(null));
    assert_eq!(r["result"]["feature_dimensions"], 17);
    h.finish();
}

#[test]
fn a_panicking_handler_is_answered_and_the_server_keeps_serving() {
    let h = Harness::new();
    let r = h.call(1, "__panic", json!({}));
    assert_eq!(r["error"]["code"], -32603);
    assert!(r["error"]["message"].as_str().unwrap().contains("requested by a test"), "{r}");
    assert_eq!(h.call(2, "status", json!({}))["result"]["feature_dimensions"], 17);
    h.finish();
}

#[test]
fn an_oversized_line_is_refused_with_its_id_and_the_stream_goes_on() {
    let h = Harness::new();
    let big: Vec<f32> = vec![0.25; 2000];
    h.send(json!({"jsonrpc": "2.0", "id": "big-1", "method": "score", "params": {"candidate_ids": ["a"], "context_embedding": big}}));
    let r = h.recv();
    assert_eq!(r["id"], "big-1");
    assert_eq!(r["error"]["code"], -32600);
    assert!(r["error"]["message"].as_str().unwrap().contains("limit"), "{r}");
    assert_eq!(h.call(2, "status", json!({}))["result"]["native_dimensions"], DIM);
    h.finish();
}

#[test]
fn train_publishes_new_weights_and_save_checkpoint_round_trips() {
    let h = Harness::new();
    let params = json!({
        "context_embedding": emb(1.0),
        "candidate_embeddings": [emb(1.0), emb(-1.0), null],
        "candidate_features": [features(1.0, 0.5), features(1.0, 0.5), null],
        "labels": [1.0, 0.0, 0.2],
    });
    let r = h.call(1, "train", params.clone());
    assert!(r["result"]["loss"].is_f64(), "{r}");
    assert_eq!(r["result"]["step"], 1);
    assert_eq!(h.call(2, "train", params)["result"]["step"], 2);
    let s = h.call(3, "status", json!({}))["result"].clone();
    assert_eq!(
        (s["trained"].clone(), s["model_version"].clone(), s["training_pairs"].clone()),
        (json!(true), json!(3), json!(6)),
        "Signet counts the labels trained on by `train`"
    );
    assert!(s["last_trained"].as_str().unwrap().ends_with('Z'));
    let r = h.call(4, "train", json!({"candidate_embeddings": [emb(1.0)], "labels": [1.0, 2.0]}));
    assert!(r["error"]["message"].as_str().unwrap().starts_with("invalid params: labels"), "{r}");
    let keep = tempfile::tempdir().unwrap();
    std::fs::create_dir(keep.path().join("ckpt")).unwrap();
    let path = keep.path().join("ckpt/model.bin");
    let r = h.call(5, "save_checkpoint", json!({"path": path, "flags": 0}));
    assert_eq!(r["result"]["saved"], true, "{r}");
    let scores = |h: &Harness, id| {
        h.call(id, "score", json!({"context_embedding": emb(1.0), "candidate_ids": ["p", "q"], "candidate_embeddings": [emb(1.0), emb(-1.0)]}))
            ["result"]["scores"]
            .clone()
    };
    let before = scores(&h, 6);
    h.finish();
    // A new process with --checkpoint serves the same weights, trained, with the real version.
    let h = Harness::with(|o, _| o.checkpoint = Some(path.clone()));
    let s = h.call(1, "status", json!({}))["result"].clone();
    assert_eq!(
        (s["trained"].clone(), s["model_version"].clone(), s["weights"].clone()),
        (json!(true), json!(3), json!("checkpoint"))
    );
    // Without time features the session signals come from the clock, which
    // moved on between the two processes: equal up to that.
    let after = scores(&h, 2);
    for (a, b) in after.as_array().unwrap().iter().zip(before.as_array().unwrap()) {
        assert_eq!(a["id"], b["id"]);
        let (a, b) = (a["score"].as_f64().unwrap(), b["score"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-4, "{after} vs {before}");
    }
    h.finish();
}

#[test]
fn a_promoted_checkpoint_is_picked_up_without_restart() {
    let h = Harness::new();
    let paths = Paths::at(h.home.path().join("engram"));
    assert_eq!(h.call(1, "status", json!({}))["result"]["weights"], "fresh");
    let mut model = Serving::fresh(DIM).unwrap();
    model.version = 42;
    model.trained = true;
    let bytes = model.encode(0);
    let hash = shared::storage::models::write_checkpoint(&paths, &bytes).unwrap();
    shared::storage::models::promote(&paths, &hash).unwrap();
    let s = h.call(2, "status", json!({}))["result"].clone();
    assert_eq!(
        (s["model_version"].clone(), s["weights"].clone(), s["checkpoint"].clone()),
        (json!(42), json!("promoted"), json!(hash))
    );
    // A damaged promotion is refused: the previous weights keep serving.
    std::fs::write(paths.current_model(), "0".repeat(64)).unwrap();
    assert_eq!(h.call(3, "status", json!({}))["result"]["model_version"], 42);
    let r = h.call(4, "reload", json!({}));
    assert_eq!(r["result"]["model_version"], 42, "{r}");
    assert_eq!(r["result"]["model_changed"], false);
    h.finish();
}

#[test]
fn train_from_db_returns_all_eight_fields_and_gates() {
    let h = Harness::new();
    let db = h.home.path().join("memories.db");
    crate::fixtures::signet_db(&db, &crate::fixtures::SignetDbSpec { dim: DIM, ..Default::default() }).unwrap();
    let ckpt = h.home.path().join("trained.bin");
    let r =
        h.call(1, "train_from_db", json!({"db_path": db, "checkpoint_path": ckpt, "agent_id": "default", "epochs": 3}));
    let t = &r["result"];
    for (field, is_type) in [
        ("loss", Value::is_f64 as fn(&Value) -> bool),
        ("step", Value::is_u64),
        ("samples_used", Value::is_u64),
        ("samples_skipped", Value::is_u64),
        ("duration_ms", Value::is_u64),
        ("canary_score_variance", Value::is_f64),
        ("canary_topk_stability", Value::is_f64),
        ("checkpoint_saved", Value::is_boolean),
    ] {
        assert!(is_type(&t[field]), "{field}: {t}");
    }
    assert_eq!(t["samples_used"], 20, "30 confident sessions minus a canary of 10: {t}");
    assert_eq!(t["samples_skipped"], 6, "{t}");
    assert_eq!(t["step"], 60, "one step per list and epoch, as Signet counts: {t}");
    assert!(t["loss"].as_f64().unwrap() > 0.0 && t["loss"].as_f64().unwrap() < 10.0, "KL in nats: {t}");
    // Untrained weights were serving, so only loss and variance gate the first run.
    assert_eq!(t["gates_passed"], true, "{t}");
    assert_eq!(t["checkpoint_saved"], true, "{t}");
    assert!(ckpt.exists());
    let s = h.call(2, "status", json!({}))["result"].clone();
    assert_eq!(
        (s["trained"].clone(), s["model_version"].clone(), s["training_pairs"].clone()),
        (json!(true), json!(2), json!(20))
    );
    let out = h.finish();
    assert!(out.is_empty(), "{out:?}");
}

fn tiny_signet(native_dim: usize) -> predictor::signet::SignetModel {
    use predictor::signet::{SignetConfig, SignetModel};
    SignetModel::seeded(SignetConfig { hash_buckets: 256, ..SignetConfig::with_native_dim(native_dim) }, 77)
}

#[test]
fn a_signet_checkpoint_is_served_with_its_own_weights_and_never_overwritten() {
    use predictor::signet::{SignetCandidate, encode_sgpt};
    let keep = tempfile::tempdir().unwrap();
    let path = keep.path().join("model.bin");
    let signet = tiny_signet(DIM);
    let signet_bytes = encode_sgpt(&signet);
    std::fs::write(&path, &signet_bytes).unwrap();
    let h = Harness::with(|o, _| o.checkpoint = Some(path.clone()));
    let s = h.call(1, "status", json!({"agent_id": "default"}))["result"].clone();
    assert_eq!(
        (s["trained"].clone(), s["model_version"].clone(), s["format"].clone(), s["weights"].clone()),
        (json!(true), json!(1), json!("signet-sgpt-v1"), json!("checkpoint")),
        "{s}"
    );
    // Scores are Signet's own for its weights, on the daemon's request shape
    // (a null embedding takes the mean of the others, as for Engram weights).
    let f: Vec<Vec<f32>> = (0..3).map(|i| features(1.0 + i as f64, 0.5)).collect();
    let r = h.call(
        2,
        "score",
        json!({"agent_id": "default", "context_embedding": emb(1.0), "candidate_ids": ["a", "b", "c"],
               "candidate_embeddings": [emb(1.0), emb(-0.5), null], "candidate_features": f}),
    );
    let wide = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<f64>>();
    let (e0, e1) = (wide(emb(1.0)), wide(emb(-0.5)));
    let mean: Vec<f64> = e0.iter().zip(&e1).map(|(a, b)| (a + b) / 2.0).collect();
    let fw: Vec<Vec<f64>> = f.iter().cloned().map(wide).collect();
    let expected = signet
        .scores(
            &e0,
            &[
                SignetCandidate { embedding: Some(&e0), text: None, features: Some(&fw[0]) },
                SignetCandidate { embedding: Some(&e1), text: None, features: Some(&fw[1]) },
                SignetCandidate { embedding: Some(&mean), text: None, features: Some(&fw[2]) },
            ],
            0,
        )
        .unwrap();
    for entry in r["result"]["scores"].as_array().unwrap() {
        let i = ["a", "b", "c"].iter().position(|id| entry["id"] == *id).unwrap();
        assert!((entry["score"].as_f64().unwrap() - expected[i]).abs() < 1e-12, "{r} vs {expected:?}");
    }
    // `train` would replace them with one step of fresh weights: refused, -32000.
    let r = h.call(3, "train", json!({"candidate_embeddings": [emb(1.0), emb(-1.0)], "labels": [1.0, 0.0]}));
    assert_eq!(r["error"]["code"], -32000, "{r}");
    // save_checkpoint writes Signet's format back to Signet's file: same bytes.
    let r = h.call(4, "save_checkpoint", json!({"path": path, "flags": 0}));
    assert_eq!((r["result"]["format"].clone(), r["result"]["path"].clone()), (json!("signet-sgpt-v1"), json!(path)));
    assert_eq!(std::fs::read(&path).unwrap(), signet_bytes);
    // train_from_db replaces them through the gates; its Engram checkpoint goes beside Signet's file.
    let db = h.home.path().join("memories.db");
    crate::fixtures::signet_db(&db, &crate::fixtures::SignetDbSpec { dim: DIM, ..Default::default() }).unwrap();
    let r = h.call(5, "train_from_db", json!({"db_path": db, "checkpoint_path": path, "epochs": 3}));
    let t = &r["result"];
    assert!(t["canary_topk_stability"].is_f64(), "{r}");
    if t["published"] == true {
        let beside = format!("{}.engram", path.display());
        assert_eq!(t["checkpoint_file"], json!(beside), "{t}");
        assert_eq!(h.call(6, "status", json!({}))["result"]["format"], "engram");
    } else {
        assert!(t["failure"].as_str().unwrap().contains("NDCG"), "only the NDCG gate can refuse the switch: {t}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), signet_bytes, "Signet's file is never overwritten");
    h.finish();
}

#[test]
fn errors_of_handlers_use_signets_code() {
    let h = Harness::new();
    let r = h.call(1, "train_from_db", json!({"db_path": h.home.path().join("none.db")}));
    assert_eq!(r["error"]["code"], -32602, "a missing database is a bad parameter: {r}");
    let bad = h.home.path().join("bad.db");
    let conn = rusqlite::Connection::open(&bad).unwrap();
    conn.execute_batch(
        "CREATE TABLE session_scores (id); CREATE TABLE session_memories (id); CREATE TABLE memories (id);",
    )
    .unwrap();
    drop(conn);
    let r = h.call(2, "train_from_db", json!({"db_path": bad}));
    assert_eq!(r["error"]["code"], -32000, "a database that cannot be read is a handler error: {r}");
    let r = h.call(3, "save_checkpoint", json!({"path": "/proc/engram-cannot-write.bin"}));
    assert_eq!(r["error"]["code"], -32000, "{r}");
    h.finish();
}

#[test]
fn save_checkpoint_writes_only_to_absolute_paths_and_makes_no_directory_outside_the_data_home() {
    let h = Harness::new();
    let cwd = std::env::current_dir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let missing = elsewhere.path().join("a/b");
    for (i, path) in [
        "model-relative-engram-test.bin".to_owned(),
        "./model-relative-engram-test.bin".to_owned(),
        format!("{}/../model.bin", elsewhere.path().display()),
        missing.join("model.bin").display().to_string(),
    ]
    .iter()
    .enumerate()
    {
        let r = h.call(i as i64 + 1, "save_checkpoint", json!({"path": path, "flags": 0}));
        assert_eq!(r["error"]["code"], -32602, "{path}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("path"), "{r}");
    }
    assert!(!cwd.join("model-relative-engram-test.bin").exists(), "nothing in the working directory");
    assert!(!elsewhere.path().join("a").exists(), "no directory made outside the data home");
    // train_from_db's checkpoint_path is checked the same way, before training.
    let r = h.call(10, "train_from_db", json!({"db_path": "/nonexistent.db", "checkpoint_path": "rel.bin"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("checkpoint_path"), "{r}");
    // Inside the data home's models directory, missing directories are made.
    let inside = h.home.path().join("engram/models/exported/model.bin");
    let r = h.call(11, "save_checkpoint", json!({"path": inside, "flags": 0}));
    assert_eq!(r["result"]["saved"], true, "{r}");
    assert!(inside.is_file());
    // An existing directory anywhere is fine.
    let there = elsewhere.path().join("model.bin");
    assert_eq!(h.call(12, "save_checkpoint", json!({"path": there}))["result"]["saved"], true);
    h.finish();
}

#[test]
fn shutdown_answers_then_refuses_what_is_queued() {
    let h = Harness::new();
    h.send(json!({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}));
    let r = h.recv();
    assert_eq!(r["result"]["shutting_down"], true);
    let server = h.server.as_ref().unwrap();
    for _ in 0..400 {
        if server.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(server.is_finished(), "the server stops after shutdown");
    h.finish();
}

#[test]
fn end_of_input_answers_everything_already_sent() {
    let h = Harness::new();
    for id in 0..5 {
        h.send(json!({"jsonrpc": "2.0", "id": id, "method": "status"}));
    }
    let out = h.finish();
    let mut ids: Vec<i64> = out.iter().map(|v| v["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
}

#[test]
fn sigterm_stops_the_loop() {
    let h = Harness::new();
    assert_eq!(h.call(1, "status", json!({}))["result"]["feature_dimensions"], 17);
    h.shutdown.request();
    let server = h.server.as_ref().unwrap();
    for _ in 0..400 {
        if server.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(server.is_finished());
    h.finish();
}
