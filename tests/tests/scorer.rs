//! End-to-end tests of `engram-scorer serve`, driven as a daemon drives it:
//! spawn the real binary, pipe JSON lines, read answers, kill, restart.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use predictor::checkpoint::{self, Checkpoint, Flags, TrainingMeta};
use predictor::model::{Model, ModelConfig};
use predictor::signet::{SignetCandidate, SignetConfig, SignetModel, encode_sgpt};
use serde_json::{Value, json};
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::event::{Body, MemoryAdded};

/// The `engram-scorer` binary of this test profile, built once.
fn scorer_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| tests::build_bin("scorer", "engram-scorer"))
}

/// `engram-scorer ARGS` in an empty environment but for `PATH`, with its
/// data home under `home`, logging at `log`, stdin and stdout piped.
fn scorer_command(home: &Path, args: &[&str], log: &str) -> Command {
    let mut cmd = tests::isolated(scorer_bin(), home);
    cmd.args(args)
        .env("ENGRAM_HOME", home.join("engram"))
        .env("ENGRAM_LOG", log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    cmd
}

/// A running scorer with a line reader on its stdout.
struct Sidecar {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Sidecar {
    fn spawn(home: &Path, args: &[&str]) -> Sidecar {
        Sidecar::spawn_in(home, args, home)
    }

    /// [`Sidecar::spawn`] with `dir` as the working directory.
    fn spawn_in(home: &Path, args: &[&str], dir: &Path) -> Sidecar {
        let mut child = scorer_command(home, args, "warn").current_dir(dir).stderr(Stdio::inherit()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Err(e) = serde_json::from_str::<Value>(&line) {
                    panic!("stdout is not JSON ({e}): {line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Sidecar { stdin: child.stdin.take(), child, lines: rx }
    }

    fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, v: &Value) {
        let mut line = v.to_string().into_bytes();
        line.push(b'\n');
        self.write(&line);
    }

    fn recv_within(&self, timeout: Duration) -> Value {
        serde_json::from_str(&self.recv_raw_within(timeout)).unwrap()
    }

    /// The next answer as the exact line the scorer wrote.
    fn recv_raw_within(&self, timeout: Duration) -> String {
        self.lines.recv_timeout(timeout).unwrap_or_else(|e| panic!("no answer within {timeout:?}: {e}"))
    }

    fn call(&mut self, id: &str, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.recv_within(Duration::from_secs(60));
        assert_eq!(r["id"], id, "{r}");
        r
    }

    fn close_and_wait(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait_with_timeout(&mut self.child, Duration::from_secs(30))
    }

    fn signal(&self, sig: &str) {
        // not isolated: kill writes nothing
        let ok = Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap();
        assert!(ok.success());
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < timeout, "the scorer did not exit within {timeout:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn vector(seed: u64, dim: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 0.2 - 0.1
        })
        .collect()
}

/// Signet's 17 features, as `buildCandidateFeatures` makes them at serving time.
fn signet_features(i: usize) -> Vec<f32> {
    scorer::signet::FeatureRow {
        age_days: i as f64 * 1.5,
        importance: 0.4 + (i % 5) as f64 * 0.1,
        access_count: (i % 4) as f64,
        hour: 9.75,
        dow_sunday0: 2.0,
        month0: 2.0,
        gap_days: 1.25,
        is_embedded: i % 3 != 2,
        entity_slot: 17.0,
        is_constraint: i == 0,
        ka_traversal: i == 4,
        ..Default::default()
    }
    .values()
}

/// The request Signet's daemon sends (reference §11.2): `agent_id`, a
/// context embedding, `null` for memories without an embedding, 17-d features.
fn daemon_score(id: &str, n: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "score", "params": {
        "agent_id": "default",
        "context_embedding": vector(1, 768),
        "candidate_ids": (0..n).map(|i| format!("mem-{i}")).collect::<Vec<_>>(),
        "candidate_embeddings": (0..n).map(|i| if i % 3 == 2 { Value::Null } else { json!(vector(100 + i as u64, 768)) }).collect::<Vec<_>>(),
        "candidate_features": (0..n).map(signet_features).collect::<Vec<_>>(),
    }})
}

fn check_status_shape(s: &Value) {
    assert!(s["trained"].is_boolean(), "{s}");
    assert!(s["training_pairs"].is_u64(), "{s}");
    assert!(s["model_version"].is_u64(), "{s}");
    assert!(s["last_trained"].is_null() || s["last_trained"].is_string(), "{s}");
    assert!(s["native_dimensions"].is_u64(), "{s}");
    assert_eq!(s["feature_dimensions"], 17, "{s}");
}

fn check_scores(r: &Value, n: usize) -> Vec<(String, f64)> {
    assert_eq!(r["jsonrpc"], "2.0");
    assert!(r.get("error").is_none(), "{r}");
    let scores = r["result"]["scores"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(scores.len(), n);
    let out: Vec<(String, f64)> = scores
        .iter()
        .map(|e| {
            assert_eq!(e.as_object().unwrap().len(), 2, "{e}");
            (e["id"].as_str().unwrap().to_owned(), e["score"].as_f64().unwrap())
        })
        .collect();
    assert!(out.windows(2).all(|w| w[0].1 >= w[1].1), "sorted descending: {out:?}");
    assert!((out.iter().map(|e| e.1).sum::<f64>() - 1.0).abs() < 1e-9);
    let mut ids: Vec<&str> = out.iter().map(|e| e.0.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n);
    out
}

#[test]
fn signet_daemon_session_train_save_kill_restart() {
    let home = tempfile::tempdir().unwrap();
    let ckpt = home.path().join("predictor/model.bin");
    // Signet's daemon keeps its state file in that directory, so it exists
    // when a checkpoint is saved there (the sidecar makes no directory
    // outside the data home).
    std::fs::create_dir_all(ckpt.parent().unwrap()).unwrap();
    let ckpt_arg = ckpt.to_str().unwrap().to_owned();
    // Spawned exactly as predictor-client.ts does: `--native-dim 768 --checkpoint PATH`.
    let args = ["--native-dim", "768", "--checkpoint", ckpt_arg.as_str()];
    let mut s = Sidecar::spawn(home.path(), &args);
    // start(): the status probe, answered well within its 5 s timeout.
    let started = Instant::now();
    s.send(&json!({"jsonrpc": "2.0", "id": "req-1", "method": "status"}));
    let r = s.recv_within(Duration::from_secs(5));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r["id"], "req-1");
    check_status_shape(&r["result"]);
    assert_eq!((r["result"]["trained"].clone(), r["result"]["native_dimensions"].clone()), (json!(false), json!(768)));

    // score with null embedding rows: Signet's own sidecar refuses this (-32602).
    s.send(&daemon_score("req-2", 30));
    let before = check_scores(&s.recv_within(Duration::from_secs(60)), 30);

    // train_from_db as the session-end worker sends it: db_path and agent_id only.
    let db = home.path().join("memories.db");
    scorer::fixtures::signet_db(&db, &scorer::fixtures::SignetDbSpec { dim: 768, ..Default::default() }).unwrap();
    let r = s.call("req-3", "train_from_db", json!({"agent_id": "default", "db_path": db}));
    let t = &r["result"];
    for f in ["loss", "canary_score_variance", "canary_topk_stability"] {
        assert!(t[f].is_number(), "{f}: {t}");
    }
    for f in ["step", "samples_used", "samples_skipped", "duration_ms"] {
        assert!(t[f].is_u64(), "{f}: {t}");
    }
    assert!(t["checkpoint_saved"].is_boolean());
    assert_eq!(t["published"], true, "{t}");
    let status = s.call("req-4", "status", json!({}))["result"].clone();
    check_status_shape(&status);
    assert_eq!((status["trained"].clone(), status["model_version"].clone()), (json!(true), json!(2)));
    // The manual POST /api/predictor/train path: save_checkpoint {path, flags: 0}.
    let r = s.call("req-5", "save_checkpoint", json!({"path": ckpt, "flags": 0}));
    assert_eq!(r["result"]["saved"], true, "{r}");
    s.send(&daemon_score("req-6", 30));
    let trained = check_scores(&s.recv_within(Duration::from_secs(60)), 30);
    assert_ne!(before, trained, "training changed the scores");

    // SIGKILL, then restart: the checkpoint serves at once, trained, same version, same scores.
    s.signal("-KILL");
    drop(s);
    let mut s = Sidecar::spawn(home.path(), &args);
    let status = s.call("req-1", "status", json!({}))["result"].clone();
    assert_eq!((status["trained"].clone(), status["model_version"].clone()), (json!(true), json!(2)), "{status}");
    assert!(status["last_trained"].is_string());
    s.send(&daemon_score("req-2", 30));
    assert_eq!(check_scores(&s.recv_within(Duration::from_secs(60)), 30), trained);
    assert!(s.close_and_wait().success(), "end of stdin exits 0");
}

/// What Signet's sidecar computes for [`daemon_score`] with `model`, by id,
/// had its daemon's `null` rows been sent as the mean of the other rows (the
/// stand-in Engram uses; Signet's own sidecar refuses nulls).
fn signet_expected(model: &SignetModel, n: usize) -> Vec<(String, f64)> {
    let wide = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<f64>>();
    let rows: Vec<Option<Vec<f64>>> = (0..n).map(|i| (i % 3 != 2).then(|| wide(vector(100 + i as u64, 768)))).collect();
    let present: Vec<&Vec<f64>> = rows.iter().flatten().collect();
    // The mean is taken in f32, as the scorer takes it, then widened.
    let mean: Vec<f64> = {
        let mut m = vec![0.0f32; 768];
        for r in &present {
            for (a, b) in m.iter_mut().zip(r.iter()) {
                *a += *b as f32;
            }
        }
        m.iter().map(|v| f64::from(v / present.len() as f32)).collect()
    };
    let features: Vec<Vec<f64>> = (0..n).map(|i| wide(signet_features(i))).collect();
    let candidates: Vec<SignetCandidate<'_>> = (0..n)
        .map(|i| SignetCandidate {
            embedding: Some(rows[i].as_deref().unwrap_or(&mean)),
            text: None,
            features: Some(&features[i]),
        })
        .collect();
    let p = model.scores(&wide(vector(1, 768)), &candidates, 0).unwrap();
    (0..n).map(|i| (format!("mem-{i}"), p[i])).collect()
}

fn assert_scores_match(served: &[(String, f64)], expected: &[(String, f64)]) {
    for (id, score) in served {
        let want = expected.iter().find(|(e, _)| e == id).unwrap().1;
        assert!((score - want).abs() < 1e-12, "{id}: served {score}, Signet's forward pass {want}");
    }
}

#[test]
fn a_signet_sgpt_checkpoint_serves_its_weights_and_switching_formats_keeps_both_files() {
    let home = tempfile::tempdir().unwrap();
    let ckpt = home.path().join("predictor/model.bin");
    std::fs::create_dir_all(ckpt.parent().unwrap()).unwrap();
    // The golden file: Signet's default shape, in its SGPT v1 layout (reference §8).
    let signet = SignetModel::seeded(SignetConfig::with_native_dim(768), 2026);
    let signet_bytes = encode_sgpt(&signet);
    assert_eq!(signet_bytes.len(), 8_881_199);
    std::fs::write(&ckpt, &signet_bytes).unwrap();
    let ckpt_arg = ckpt.to_str().unwrap().to_owned();
    let args = ["--native-dim", "768", "--checkpoint", ckpt_arg.as_str()];

    // Signet -> Engram: its weights serve, trained, with Signet's own scores.
    let mut s = Sidecar::spawn(home.path(), &args);
    let status = s.call("req-1", "status", json!({}))["result"].clone();
    check_status_shape(&status);
    assert_eq!(
        (status["trained"].clone(), status["model_version"].clone(), status["format"].clone()),
        (json!(true), json!(1), json!("signet-sgpt-v1")),
        "{status}"
    );
    s.send(&daemon_score("req-2", 30));
    let served = check_scores(&s.recv_within(Duration::from_secs(60)), 30);
    assert_scores_match(&served, &signet_expected(&signet, 30));

    // Training replaces them only through the gates, and never over Signet's file.
    let db = home.path().join("memories.db");
    scorer::fixtures::signet_db(&db, &scorer::fixtures::SignetDbSpec { dim: 768, ..Default::default() }).unwrap();
    let r = s.call("req-3", "train_from_db", json!({"agent_id": "default", "db_path": db, "checkpoint_path": ckpt}));
    let t = r["result"].clone();
    eprintln!("train_from_db with Signet's weights serving: {t}");
    let r = s.call("req-4", "save_checkpoint", json!({"path": ckpt, "flags": 0}));
    let saved_to = r["result"]["path"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read(&ckpt).unwrap(), signet_bytes, "Signet's file is untouched: {t}");
    let engram_file = home.path().join("predictor/model.bin.engram");
    if t["published"] == true {
        assert_eq!(saved_to, engram_file.display().to_string());
        assert_eq!(t["checkpoint_file"], json!(engram_file.display().to_string()), "{t}");
    } else {
        assert_eq!(saved_to, ckpt_arg, "still Signet's weights, saved in Signet's format: {t}");
    }
    s.signal("-KILL");
    drop(s);

    // Back to Signet: its binary reads model.bin, which still holds exactly its weights.
    assert_eq!(predictor::signet::decode_sgpt(&std::fs::read(&ckpt).unwrap()).unwrap(), signet);
    if t["published"] == true {
        // Engram again: the newest file serves (its own, written after Signet's).
        let mut s = Sidecar::spawn(home.path(), &args);
        assert_eq!(s.call("req-1", "status", json!({}))["result"]["format"], "engram");
        drop(s);
    }
    // Signet trained again and rewrote its file: now that is the newest, and
    // Engram's file beside it is kept.
    std::thread::sleep(Duration::from_millis(20));
    let retrained = SignetModel::seeded(SignetConfig::with_native_dim(768), 2027);
    std::fs::write(&ckpt, encode_sgpt(&retrained)).unwrap();
    let kept = std::fs::read(&engram_file).ok();
    let mut s = Sidecar::spawn(home.path(), &args);
    assert_eq!(s.call("req-1", "status", json!({}))["result"]["format"], "signet-sgpt-v1");
    s.send(&daemon_score("req-2", 30));
    let served = check_scores(&s.recv_within(Duration::from_secs(60)), 30);
    assert_scores_match(&served, &signet_expected(&retrained, 30));
    assert!(s.close_and_wait().success());
    assert_eq!(std::fs::read(&engram_file).ok(), kept, "Engram's file beside it is never removed");
}

#[test]
fn stderr_carries_no_colour_codes_through_a_pipe() {
    let home = tempfile::tempdir().unwrap();
    let args = ["--native-dim", "8", "--checkpoint", "/nonexistent/dir/model.bin"];
    let mut child = scorer_command(home.path(), &args, "debug").stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.is_empty(), "{stderr}");
    assert!(!stderr.contains('\x1b'), "ANSI codes in a piped stderr: {stderr:?}");
}

#[test]
fn malformed_and_oversized_lines_never_end_the_process() {
    let home = tempfile::tempdir().unwrap();
    let mut s = Sidecar::spawn(home.path(), &["serve", "--native-dim", "16"]);
    s.write(b"this is not json\n");
    let r = s.recv_within(Duration::from_secs(30));
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (Value::Null, json!(-32700)), "{r}");
    s.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"n1\"}\n");
    assert_eq!(s.recv_within(Duration::from_secs(30))["error"]["code"], -32600);
    let r = s.call("n2", "nope", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    let r = s.call("n3", "score", json!({"candidate_ids": ["a", "b"], "candidate_features": [null, [1, 2, 3]]}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("candidate_features[1]"), "{r}");
    // A 65 MiB line: refused (its id recovered from its head), never buffered whole.
    let mut big =
        br#"{"jsonrpc":"2.0","id":"huge","method":"score","params":{"candidate_ids":["a"],"candidate_texts":[""#
            .to_vec();
    big.resize(big.len() + (65 << 20), b'x');
    big.extend_from_slice(b"\"]}}\n");
    s.write(&big);
    drop(big);
    let r = s.recv_within(Duration::from_secs(60));
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!("huge"), json!(-32600)), "{r}");
    // Still serving.
    let r = s.call(
        "n4",
        "score",
        json!({"candidate_ids": ["a", "b"], "candidate_texts": ["alpha beta", "gamma"], "context_text": "beta"}),
    );
    check_scores(&r, 2);
    assert!(s.close_and_wait().success());
}

#[test]
fn sigterm_finishes_and_exits_zero() {
    let home = tempfile::tempdir().unwrap();
    let mut s = Sidecar::spawn(home.path(), &["serve", "--native-dim", "16"]);
    assert_eq!(s.call("a", "status", json!({}))["result"]["native_dimensions"], 16);
    s.signal("-TERM");
    let status = wait_with_timeout(&mut s.child, Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
}

fn add_memories(home: &Path, n: usize) {
    let paths = Paths::at(home.join("engram"));
    let mut journal = shared::projection::open(&paths, "test").unwrap();
    let topics = [
        "sqlite wal checkpoint tuning",
        "tokio runtime shutdown order",
        "clippy lint configuration",
        "docker compose networking",
    ];
    let events: Vec<_> = (0..n)
        .map(|i| {
            journal.event(
                Ts(1_780_000_000_000 - i as i64 * 3_600_000),
                Some(SessionKey::new("claude", &format!("src{}", i / 10))),
                Body::MemoryAdded(MemoryAdded {
                    memory_id: MemoryId(format!("mem_{i:04}")),
                    content: format!("{} note {i}: remember detail{}", topics[i % topics.len()], i % 13),
                    memory_type: shared::storage::event::MemoryType::Fact,
                    importance: 0.5,
                    project: Some("engram".into()),
                    ..Default::default()
                }),
            )
        })
        .collect();
    journal.append(&events).unwrap();
}

fn promote(home: &Path, version: u64, native_dim: usize, seed: u64) -> String {
    let paths = Paths::at(home.join("engram"));
    let model = Model::new(ModelConfig { native_dim, ..ModelConfig::default() }, seed).unwrap();
    let bytes = checkpoint::encode(&Checkpoint {
        flags: Flags::default(),
        model,
        optimizer: None,
        meta: TrainingMeta {
            model_version: version,
            trained_lists: 50,
            timestamp_ms: 1_780_000_000_000,
            ..TrainingMeta::default()
        },
    });
    let hash = shared::storage::models::write_checkpoint(&paths, &bytes).unwrap();
    shared::storage::models::promote(&paths, &hash).unwrap();
    hash
}

fn rank(s: &mut Sidecar, id: &str, session: &str, query: &str) -> Value {
    let r = s.call(
        id,
        "rank",
        json!({"query": query, "session_key": session, "project": "engram", "trigger": "prompt", "k": 3}),
    );
    assert!(r.get("error").is_none(), "{r}");
    r["result"].clone()
}

#[test]
fn a_promotion_while_serving_changes_scores_without_restart() {
    let home = tempfile::tempdir().unwrap();
    add_memories(home.path(), 60);
    let mut s = Sidecar::spawn(home.path(), &["serve", "--native-dim", "768"]);
    let r = rank(&mut s, "r1", "claude:p1", "how do we tune the sqlite wal checkpoint?");
    assert!(r["recorded"].as_bool().unwrap());
    assert!(r["model_version"].is_null(), "no trained model yet: {r}");
    assert!(r["status_line"].as_str().unwrap().starts_with("[predictor:"), "{r}");
    let m = &r["memories"][0];
    for f in ["id", "text", "score", "rank", "baseline_rank", "sources", "reasons", "injected"] {
        assert!(!m[f].is_null(), "{f}: {m}");
    }
    assert!(r["injected"].as_array().unwrap().len() <= 3);
    s.send(&daemon_score("s1", 20));
    let fresh = check_scores(&s.recv_within(Duration::from_secs(60)), 20);

    let hash = promote(home.path(), 7, 768, 99);
    let status = s.call("st", "status", json!({}))["result"].clone();
    assert_eq!((status["model_version"].clone(), status["checkpoint"].clone()), (json!(7), json!(hash)), "{status}");
    s.send(&daemon_score("s2", 20));
    let promoted = check_scores(&s.recv_within(Duration::from_secs(60)), 20);
    assert_ne!(fresh, promoted, "the promoted weights score differently");
    let r = rank(&mut s, "r2", "claude:p1", "tokio runtime shutdown order");
    assert_eq!(r["model_version"], 7, "{r}");
    assert!(r["memories"].as_array().unwrap().iter().any(|m| m["predictor_rank"].is_u64()), "{r}");
    // A half-written or damaged promotion never replaces the serving weights.
    let paths = Paths::at(home.path().join("engram"));
    std::fs::write(paths.models().join(format!("{}.ckpt", "f".repeat(64))), b"ENGRMPRD truncated").unwrap();
    shared::base::fsutil::atomic_write(&paths.current_model(), format!("{}\n", "f".repeat(64)).as_bytes()).unwrap();
    s.send(&daemon_score("s3", 20));
    assert_eq!(check_scores(&s.recv_within(Duration::from_secs(60)), 20), promoted);
    assert!(s.close_and_wait().success());
}

#[test]
fn two_scorers_rank_and_record_into_one_store_and_survive_kill_and_replay() {
    let home = tempfile::tempdir().unwrap();
    add_memories(home.path(), 80);
    let per = 12;
    let run = |tag: &'static str, home: PathBuf| {
        std::thread::spawn(move || {
            let mut s = Sidecar::spawn(&home, &["serve"]);
            for i in 0..per {
                let r = rank(
                    &mut s,
                    &format!("{tag}{i}"),
                    &format!("claude:{tag}{}", i % 3),
                    "sqlite wal checkpoint docker",
                );
                assert!(r["recorded"].as_bool().unwrap(), "{r}");
            }
            s
        })
    };
    let a = run("a", home.path().to_path_buf());
    let b = run("b", home.path().to_path_buf());
    let mut a = a.join().unwrap();
    let b = b.join().unwrap();
    let paths = Paths::at(home.path().join("engram"));
    let count = |paths: &Paths| -> i64 {
        let j = shared::projection::open(paths, "check").unwrap();
        j.store().conn().query_row("SELECT COUNT(*) FROM rankings", [], |r| r.get(0)).unwrap()
    };
    // Rankings are recorded just after they are answered.
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&paths) < 2 * per as i64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(count(&paths), 2 * per as i64, "nothing lost");
    // Kill one mid-life; rebuild the projection from the tapes while the other serves.
    b.signal("-KILL");
    drop(b);
    shared::projection::replay(&paths, &mut |_| {}).unwrap();
    let r = rank(&mut a, "after-replay", "claude:z", "tokio runtime");
    assert!(r["recorded"].as_bool().unwrap());
    let mut c = Sidecar::spawn(home.path(), &["serve"]);
    let r = rank(&mut c, "restarted", "claude:a0", "sqlite wal checkpoint docker");
    assert!(r["recorded"].as_bool().unwrap());
    assert!(a.close_and_wait().success());
    assert!(c.close_and_wait().success());
    assert_eq!(count(&paths), 2 * per as i64 + 2);
}

/// Every `ranking.served` in the tape log (not the projection), by ranking id.
fn rankings_in_tape(paths: &Paths) -> Vec<String> {
    let log =
        shared::storage::tape::TapeLog::open(&paths.tapes(), shared::storage::tape::TapeOptions::default()).unwrap();
    let snapshot = log.snapshot().unwrap();
    let mut ids = Vec::new();
    for frame in snapshot.frames_after(0) {
        let frame = frame.unwrap();
        if let Body::RankingServed(r) = shared::storage::journal::decode(frame.lsn, &frame.payload).body {
            ids.push(r.ranking_id);
        }
    }
    ids
}

#[test]
fn every_served_ranking_is_recorded_before_exit_however_the_scorer_stops() {
    let n = 40;
    for how in ["end of stdin", "shutdown", "SIGTERM"] {
        let home = tempfile::tempdir().unwrap();
        add_memories(home.path(), 120);
        let mut s = Sidecar::spawn(home.path(), &["serve"]);
        // Pipelined back to back, so that rankings queue up behind the recorder.
        for i in 0..n {
            s.send(&json!({"jsonrpc": "2.0", "id": format!("r{i}"), "method": "rank",
                           "params": {"query": "sqlite wal checkpoint docker tokio", "session_key": "claude:one",
                                      "project": "engram", "trigger": "prompt", "k": 3}}));
        }
        let status = match how {
            "end of stdin" => {
                drop(s.stdin.take());
                None
            }
            "shutdown" => {
                s.send(&json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}));
                None
            }
            _ => Some(()),
        };
        let mut served = Vec::new();
        let mut injected = std::collections::BTreeSet::new();
        for _ in 0..n {
            let r = s.recv_within(Duration::from_secs(60));
            assert!(r.get("error").is_none(), "{how}: {r}");
            assert!(r["result"]["recorded"].as_bool().unwrap(), "{how}: {r}");
            served.push(r["result"]["ranking_id"].as_str().unwrap().to_owned());
            for m in r["result"]["injected"].as_array().unwrap() {
                // Back to back, before anything is on disk: never shown twice in one session.
                assert!(injected.insert(m.as_str().unwrap().to_owned()), "{how}: {m} injected twice");
            }
        }
        assert!(!injected.is_empty());
        if status.is_some() {
            s.signal("-TERM");
        }
        let code = wait_with_timeout(&mut s.child, Duration::from_secs(30));
        assert!(code.success(), "{how}: {code}");
        let paths = Paths::at(home.path().join("engram"));
        assert_eq!(rankings_in_tape(&paths), served, "{how}: every served ranking, in the order served");
    }
}

#[test]
fn scoring_never_waits_behind_training() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("memories.db");
    let spec =
        scorer::fixtures::SignetDbSpec { memories: 600, sessions: 120, candidates: 40, dim: 64, topics: 10, seed: 5 };
    scorer::fixtures::signet_db(&db, &spec).unwrap();
    let mut s = Sidecar::spawn(home.path(), &["serve", "--native-dim", "64"]);
    s.call("warm", "status", json!({}));
    s.send(&json!({"jsonrpc": "2.0", "id": "train", "method": "train_from_db", "params": {"db_path": db, "epochs": 10, "limit": 80}}));
    std::thread::sleep(Duration::from_millis(20));
    let params =
        json!({"candidate_ids": ["a", "b", "c"], "candidate_embeddings": [vector(1, 64), vector(2, 64), null]});
    s.send(&json!({"jsonrpc": "2.0", "id": "score", "method": "score", "params": params}));
    let first = s.recv_within(Duration::from_secs(120));
    assert_eq!(first["id"], "score", "the score was answered while training ran: {first}");
    let done = s.recv_within(Duration::from_secs(120));
    assert_eq!(done["id"], "train", "{done}");
    assert!(s.close_and_wait().success());
}

/// Issue 21 items 8 to 11: client input that used to panic, stretch the tape's
/// time span, lose its id's digits or overwrite any file is refused with
/// -32602, and the process goes on serving.
#[test]
fn out_of_range_client_input_is_refused_and_ids_come_back_exactly() {
    let home = tempfile::tempdir().unwrap();
    add_memories(home.path(), 20);
    let mut s = Sidecar::spawn(home.path(), &["serve", "--native-dim", "16"]);
    let refused = |r: &Value, field: &str| {
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains(field), "{field}: {r}");
    };
    // 8: values near f32::MAX made the model's sums infinite (a panic, -32603).
    let huge = vec![3.0e38_f32; 16];
    let r = s.call(
        "s",
        "score",
        json!({"candidate_ids": ["a", "b"], "context_embedding": huge,
                                        "candidate_embeddings": [vector(1, 16), vector(2, 16)]}),
    );
    refused(&r, "context_embedding");
    let r = s.call("f", "score", json!({"candidate_ids": ["a"], "candidate_features": [vec![3.0e38_f32; 17]]}));
    refused(&r, "candidate_features");
    // 8: a temperature of 1e-300 underflowed to 0 as an f32.
    let r = s.call(
        "t",
        "train",
        json!({"candidate_embeddings": [vector(1, 16), vector(2, 16)],
                                        "labels": [1.0, 0.0], "temperature": 1e-300}),
    );
    refused(&r, "temperature");
    let r = s.call(
        "l",
        "train",
        json!({"candidate_embeddings": [vector(1, 16), vector(2, 16)],
                                        "labels": [3.0e38, 0.0]}),
    );
    refused(&r, "labels[0]");
    // 9: `now_ms` becomes the event's time: bounded.
    for bad in [i64::MAX, i64::MIN, 0, Ts::now().0 + 2 * 86_400_000] {
        let r = s.call("n", "rank", json!({"query": "sqlite wal", "now_ms": bad}));
        refused(&r, "now_ms");
    }
    let ok = s.call("n-ok", "rank", json!({"query": "sqlite wal", "now_ms": Ts::now().0 - 60_000}));
    assert!(ok.get("error").is_none(), "{ok}");
    // 10: ids come back as written, whatever their size or form.
    for id in ["18446744073709551616", "-0", "1e2", "12.50", "\"x\\u00e9\""] {
        s.write(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"status\"}}\n").as_bytes());
        let line = s.recv_raw_within(Duration::from_secs(30));
        assert!(line.contains(&format!("\"id\":{id}")) || id.starts_with('"'), "{id}: {line}");
        assert!(line.contains("\"result\""), "{line}");
    }
    s.write(b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"score\",\"params\":{\"candidate_ids\":[\"a\"],\"candidate_texts\":[\"x\"]}}\n");
    let line = s.recv_raw_within(Duration::from_secs(30));
    assert!(line.contains("\"id\":18446744073709551616"), "the score fast path: {line}");
    // 11: save_checkpoint replaces a checkpoint, nothing else.
    let db = home.path().join("engram/engram.db");
    let link = home.path().join("link.db");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    let notes = home.path().join("notes.txt");
    std::fs::write(&notes, b"my notes").unwrap();
    let before = std::fs::read(&db).unwrap().len();
    for target in [&link, &notes, &db, &home.path().to_path_buf(), &notes.join("x.bin")] {
        let r = s.call("c", "save_checkpoint", json!({"path": target}));
        refused(&r, "path");
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&notes).unwrap(), b"my notes");
    assert!(std::fs::read(&db).unwrap().len() >= before && std::fs::read(&db).unwrap().starts_with(b"SQLite format 3"));
    let ckpt = home.path().join("model.bin");
    for _ in 0..2 {
        // A new file, then the checkpoint it now is.
        let r = s.call("c", "save_checkpoint", json!({"path": ckpt}));
        assert_eq!(r["result"]["saved"], true, "{r}");
    }
    assert!(s.call("alive", "status", json!({}))["result"].is_object());
    assert!(s.close_and_wait().success());
}

/// `save_checkpoint` (and `train_from_db`'s `checkpoint_path`) writes only
/// to an absolute path: a relative one, which would land in the sidecar's
/// working directory, is a JSON-RPC error; no directory is made outside the
/// data home's models directory.
#[test]
fn save_checkpoint_refuses_relative_paths_and_makes_no_directory_outside_the_data_home() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut s = Sidecar::spawn_in(home.path(), &["serve"], &work);
    let elsewhere = home.path().join("elsewhere/deep/dir/model.bin");
    for (id, params) in [
        ("rel", json!({"path": "model.bin", "flags": 0})),
        ("dot", json!({"path": "./predictor/model.bin"})),
        ("up", json!({"path": format!("{}/../model.bin", work.display())})),
        ("missing", json!({"path": elsewhere})),
    ] {
        let r = s.call(id, "save_checkpoint", params);
        assert_eq!(r["error"]["code"], -32602, "{id}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("path"), "{id}: {r}");
    }
    let r = s.call("train", "train_from_db", json!({"db_path": "/nonexistent.db", "checkpoint_path": "model.bin"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "nothing was written in the working directory");
    assert!(!home.path().join("elsewhere").exists(), "no directory was made outside the data home");
    // In the data home's models directory a missing directory is made; an
    // existing directory anywhere is written to.
    let inside = home.path().join("engram/models/export/model.bin");
    assert_eq!(s.call("in", "save_checkpoint", json!({"path": inside}))["result"]["saved"], true);
    assert!(inside.is_file());
    let there = work.join("model.bin");
    assert_eq!(s.call("there", "save_checkpoint", json!({"path": there}))["result"]["saved"], true);
    assert!(s.close_and_wait().success());
}

/// Issue 21 item 12: what a SIGKILL under load loses is bounded as the docs
/// say: only the last rankings answered (a suffix, in order), at most
/// `QUEUE + MAX_BATCH` of them.
#[test]
fn a_sigkill_under_load_loses_at_most_the_stated_bound_of_rankings() {
    let home = tempfile::tempdir().unwrap();
    add_memories(home.path(), 120);
    let mut s = Sidecar::spawn(home.path(), &["serve"]);
    let n = 600;
    for i in 0..n {
        s.send(&json!({"jsonrpc": "2.0", "id": format!("r{i}"), "method": "rank",
                       "params": {"query": "sqlite wal checkpoint docker tokio", "session_key": format!("claude:{}", i % 7),
                                  "project": "engram", "trigger": "prompt", "k": 3}}));
    }
    let served: Vec<String> = (0..n)
        .map(|_| s.recv_within(Duration::from_secs(60))["result"]["ranking_id"].as_str().unwrap().to_owned())
        .collect();
    s.signal("-KILL");
    drop(s);
    let paths = Paths::at(home.path().join("engram"));
    let recorded = rankings_in_tape(&paths);
    assert_eq!(recorded[..], served[..recorded.len()], "what is kept is what was served first, in order");
    let lost = served.len() - recorded.len();
    assert!(lost <= scorer::recorder::QUEUE + scorer::recorder::MAX_BATCH, "{lost} lost");
    eprintln!("SIGKILL after {n} pipelined rankings: {lost} not recorded");
}
