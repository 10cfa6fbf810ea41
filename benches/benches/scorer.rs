//! The sidecar end to end: request line in, response line out, through the
//! same reader thread, parser, main loop and encoder as `engram-scorer serve`
//! (an in-memory connection instead of pipes).
//!
//! Run: `cargo bench -p benches --bench scorer`. After divan's table it
//! prints `score` latency percentiles idle and while `train_from_db` runs,
//! and process start to first answer of the release binary (built here).
//!
//! * `score_inline`: 50 / 100 candidates of 768 dimensions sent inline as a
//!   Signet daemon sends them (f32 values printed as JS numbers, 17 digits,
//!   ~0.8 MB for 50), 17 features per candidate, one null embedding in ten.
//! * `parse_score_request`: the JSON parse alone (envelope + typed params).
//! * `rank_rpc`: `rank` in a warm process on stores of 10,000 and 100,000
//!   memories, 100 requests each (the 64 queries in turn: a median of 30
//!   moved by a quarter of a millisecond between runs on a shared machine). The ranking is recorded by the recorder thread after the
//!   answer (group commit), so the fdatasync is no longer inside the timing;
//!   back to back, the recorder still competes for the CPU.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use benches::memory_events;
use divan::Bencher;
use scorer::ServeOptions;
use scorer::protocol::Request;
use serde_json::{Value, json};
use shared::base::paths::Paths;
use shared::base::rpc::{Connection, MemoryClient, parse_message};
use shared::base::shutdown::Shutdown;

const WAIT: Duration = Duration::from_secs(120);

fn main() {
    divan::main();
    percentiles_while_training();
    start_to_first_answer();
}

/// A served in-memory connection.
struct Served {
    client: MemoryClient,
    _dir: tempfile::TempDir,
}

fn served(paths: Option<Paths>, dir: tempfile::TempDir) -> Served {
    let opts = ServeOptions {
        native_dim: 768,
        checkpoint: None,
        paths,
        max_line: shared::base::rpc::DEFAULT_MAX_LINE,
        training_budget: Duration::from_secs(60),
    };
    let (conn, client, _threads) = Connection::<Request>::memory(opts.max_line);
    std::thread::spawn(move || scorer::serve(conn, opts, Shutdown::manual()));
    let s = Served { client, _dir: dir };
    // Warm up: the first request waits for the fresh weights.
    call(
        &s.client,
        br#"{"jsonrpc":"2.0","id":0,"method":"score","params":{"candidate_ids":["a"],"candidate_texts":["x"]}}"#,
    );
    s
}

fn call(client: &MemoryClient, line: &[u8]) -> Vec<u8> {
    client.send_line(line);
    client.output.recv_timeout(WAIT).unwrap()
}

/// A JS-style number: the f64 of an f32, shortest round-trip form.
fn js(x: f32) -> String {
    format!("{}", f64::from(x))
}

struct Gen(u64);
impl Gen {
    fn unit(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The `score` request Signet's daemon sends for `n` candidates.
fn daemon_score_request(n: usize, id: &str) -> Vec<u8> {
    let mut g = Gen(0x9e37_79b9 + n as u64);
    let vec = |g: &mut Gen| -> String {
        let v: Vec<String> = (0..768).map(|_| js(g.unit() * 0.2 - 0.1)).collect();
        format!("[{}]", v.join(","))
    };
    let ctx = vec(&mut g);
    let ids: Vec<String> = (0..n).map(|i| format!("\"mem_{i:026}\"")).collect();
    let embs: Vec<String> = (0..n).map(|i| if i % 10 == 9 { "null".into() } else { vec(&mut g) }).collect();
    let feats: Vec<String> = (0..n)
        .map(|i| {
            let row = scorer::signet::FeatureRow {
                age_days: (i % 40) as f64,
                importance: 0.5,
                access_count: (i % 9) as f64,
                hour: 14.25,
                dow_sunday0: 3.0,
                month0: 2.0,
                gap_days: 0.5,
                is_embedded: i % 10 != 9,
                ..Default::default()
            };
            let v: Vec<String> = row.values().iter().map(|&x| js(x)).collect();
            format!("[{}]", v.join(","))
        })
        .collect();
    format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","method":"score","params":{{"agent_id":"default","context_embedding":{ctx},"candidate_ids":[{}],"candidate_embeddings":[{}],"candidate_features":[{}]}}}}"#,
        ids.join(","),
        embs.join(","),
        feats.join(",")
    )
    .into_bytes()
}

static SCORE_SERVER: LazyLock<Mutex<Served>> = LazyLock::new(|| Mutex::new(served(None, tempfile::tempdir().unwrap())));

#[divan::bench(args = [50, 100])]
fn score_inline(bencher: Bencher, n: usize) {
    let line = daemon_score_request(n, "req-1");
    let server = SCORE_SERVER.lock().unwrap();
    let client = &server.client;
    let r: Value = serde_json::from_slice(&call(client, &line)).unwrap();
    assert_eq!(r["result"]["scores"].as_array().unwrap().len(), n, "{r}");
    eprintln!("score request with {n} candidates: {} bytes", line.len());
    bencher.bench_local(|| call(client, &line));
}

#[divan::bench(args = [50, 100])]
fn parse_score_request(bencher: Bencher, n: usize) {
    let line = daemon_score_request(n, "req-1");
    bencher.bench_local(|| parse_message::<Request>(divan::black_box(&line)));
}

fn store(n: usize) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    let mut journal = shared::projection::open(&paths, "bench").unwrap();
    for chunk in memory_events(n, 11).chunks(10_000) {
        journal.append(chunk).unwrap();
    }
    drop(journal);
    served(Some(paths), dir)
}

static SMALL: LazyLock<Mutex<Served>> = LazyLock::new(|| Mutex::new(store(10_000)));
static LARGE: LazyLock<Mutex<Served>> = LazyLock::new(|| Mutex::new(store(100_000)));

static QUERIES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    (0..64)
        .map(|i| {
            let q = benches::lesson(&mut rng, 6 + i % 10);
            json!({"jsonrpc": "2.0", "id": i, "method": "rank",
                   "params": {"query": q, "project": "engram", "trigger": "prompt", "session_key": format!("claude:bench{}", i % 8),
                              "now_ms": benches::BENCH_NOW.0}})
            .to_string()
            .into_bytes()
        })
        .collect()
});

#[divan::bench(args = ["10k", "100k"], sample_count = 100)]
fn rank_rpc(bencher: Bencher, size: &str) {
    let s = if size == "10k" { SMALL.lock().unwrap() } else { LARGE.lock().unwrap() };
    let r: Value = serde_json::from_slice(&call(&s.client, &QUERIES[0])).unwrap();
    assert!(r["result"]["recorded"].as_bool().unwrap(), "{r}");
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        call(&s.client, &QUERIES[i % QUERIES.len()])
    });
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(label: &str, mut v: Vec<Duration>) {
    v.sort();
    println!(
        "{label}: n={} p50={:.2?} p90={:.2?} p99={:.2?} max={:.2?}",
        v.len(),
        percentile(&v, 0.5),
        percentile(&v, 0.9),
        percentile(&v, 0.99),
        v[v.len() - 1]
    );
}

/// `score` (50 × 768) latency idle, then while a `train_from_db` runs.
fn percentiles_while_training() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memories.db");
    let spec =
        scorer::fixtures::SignetDbSpec { memories: 3000, sessions: 400, candidates: 50, dim: 768, topics: 20, seed: 3 };
    scorer::fixtures::signet_db(&db, &spec).unwrap();
    let s = served(None, dir);
    let line = daemon_score_request(50, "p");
    for _ in 0..20 {
        call(&s.client, &line);
    }
    // One request every 5 ms (a daemon scores once per prompt, not in a tight loop).
    let pause = Duration::from_millis(5);
    let idle: Vec<Duration> = (0..300)
        .map(|_| {
            std::thread::sleep(pause);
            let t = Instant::now();
            call(&s.client, &line);
            t.elapsed()
        })
        .collect();
    summary("score 50x768 idle", idle);
    let train = json!({"jsonrpc": "2.0", "id": "train", "method": "train_from_db",
                       "params": {"db_path": db, "epochs": 3}})
    .to_string();
    s.client.send_line(train.as_bytes());
    let started = Instant::now();
    let mut during = Vec::new();
    let mut train_done = None;
    while train_done.is_none() {
        std::thread::sleep(pause);
        let t = Instant::now();
        s.client.send_line(&line);
        loop {
            let out = s.client.output.recv_timeout(WAIT).unwrap();
            let v: Value = serde_json::from_slice(&out).unwrap();
            if v["id"] == "train" {
                train_done = Some((started.elapsed(), v));
                continue;
            }
            break;
        }
        during.push(t.elapsed());
    }
    let (took, v) = train_done.unwrap();
    println!("train_from_db: {took:.2?}, result {}", v["result"]);
    summary("score 50x768 while training", during);
}

/// Spawn → `status` answered, and spawn → `status` + `score` (50 × 768) answered.
fn start_to_first_answer() {
    let bin = benches::release_scorer();
    let home = tempfile::tempdir().unwrap();
    let score = daemon_score_request(50, "req-2");
    let mut first = Vec::new();
    let mut both = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let mut child = Command::new(&bin)
            .args(["serve", "--native-dim", "768"])
            .env("ENGRAM_HOME", home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"method\":\"status\"}\n").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        first.push(t.elapsed());
        stdin.write_all(&score).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        both.push(t.elapsed());
        assert!(line.contains("\"scores\""), "{line}");
        drop(stdin);
        child.wait().unwrap();
    }
    summary("spawn to status answered", first);
    summary("spawn to status + score(50x768) answered", both);
}
