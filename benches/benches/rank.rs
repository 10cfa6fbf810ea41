//! Latency of the ranking pipeline (`shared::domain::rank::rank`) on stores of 10,000
//! and 100,000 memories, warm (the store and model already open).
//!
//! Run: `cargo bench -p benches --bench rank`.

#![allow(clippy::unwrap_used)]

use std::sync::{LazyLock, Mutex};

use benches::{BENCH_NOW, memory_events};
use predictor::model::{Model, ModelConfig};
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::domain::rank::{RankRequest, ServingModel, rank};
use shared::storage::event::trigger;
use shared::storage::journal::Journal;

struct Store {
    _dir: tempfile::TempDir,
    journal: Journal,
}

fn build(n: usize) -> Store {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = shared::projection::open(&Paths::at(dir.path()), "bench").unwrap();
    for chunk in memory_events(n, 11).chunks(10_000) {
        journal.append(chunk).unwrap();
    }
    Store { _dir: dir, journal }
}

static SMALL: LazyLock<Mutex<Store>> = LazyLock::new(|| Mutex::new(build(10_000)));
static LARGE: LazyLock<Mutex<Store>> = LazyLock::new(|| Mutex::new(build(100_000)));
static MODEL: LazyLock<Model> =
    LazyLock::new(|| Model::new(ModelConfig { native_dim: 0, ..ModelConfig::default() }, 3).unwrap());
static QUERIES: LazyLock<Vec<String>> = LazyLock::new(|| {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    (0..64).map(|i| benches::lesson(&mut rng, 6 + i % 10)).collect()
});

fn main() {
    divan::main();
}

fn run(store: &Store, model: Option<&Model>, i: usize) -> usize {
    let tz = jiff::tz::TimeZone::UTC;
    let req = RankRequest {
        query: &QUERIES[i % QUERIES.len()],
        query_embedding: None,
        session: None,
        project: Some("engram"),
        trigger: trigger::PROMPT,
        now: BENCH_NOW,
        tz: &tz,
        k: 5,
        budget_chars: 8_000,
        require_match: true,
        explore_draw: 0.99,
        context_reset_ms: None,
    };
    let m = model.map(|model| ServingModel { model, version: 1 });
    rank(store.journal.store(), &Config::default(), m, &req).unwrap().items.len()
}

#[divan::bench(args = ["10k", "100k"])]
fn rank_baseline_only(bencher: divan::Bencher, size: &str) {
    let store = if size == "10k" { SMALL.lock().unwrap() } else { LARGE.lock().unwrap() };
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        run(&store, None, i)
    });
}

#[divan::bench(args = ["10k", "100k"])]
fn rank_with_predictor(bencher: divan::Bencher, size: &str) {
    let store = if size == "10k" { SMALL.lock().unwrap() } else { LARGE.lock().unwrap() };
    let model = &*MODEL;
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        run(&store, Some(model), i)
    });
}
