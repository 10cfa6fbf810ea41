//! The trainer's hot paths on a projection of 500 scored sessions, each with
//! one served ranking of 50 candidates over a store of 5,000 memories:
//! rebuilding the training lists from the projection (signals as of serving
//! time), and training the default text-only model on them for 10 epochs
//! (target ≤ 5 s on one core; the peer needs about 75 s).
//!
//! Run: `cargo bench -p benches --bench trainer`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

use benches::{BENCH_NOW, memory_events};
use divan::{Bencher, black_box};
use predictor::model::{Model, ModelConfig};
use predictor::train::{self, AdamState, Sample, TrainConfig};
use rand::{RngExt, SeedableRng};
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::training::data::{self, BuiltList, ScoredSession};
use shared::storage::event::*;
use shared::storage::journal::Journal;

const SESSIONS: usize = 500;
const CANDIDATES: usize = 50;
const MEMORIES: usize = 5_000;

struct World {
    _dir: tempfile::TempDir,
    journal: Journal,
    sessions: Vec<ScoredSession>,
}

fn build() -> World {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = shared::projection::open(&Paths::at(dir.path()), "bench").unwrap();
    journal.append(&memory_events(MEMORIES, 21)).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(22);
    let mut events = Vec::new();
    for s in 0..SESSIONS {
        let key = SessionKey::new("claude", &format!("bench-{s}"));
        let at = Ts(BENCH_NOW.0 + s as i64 * 3_600_000);
        let mut ids: Vec<usize> = Vec::new();
        while ids.len() < CANDIDATES {
            let i = rng.random_range(0..MEMORIES);
            if !ids.contains(&i) {
                ids.push(i);
            }
        }
        let candidates: Vec<ServedCandidate> = ids
            .iter()
            .enumerate()
            .map(|(rank, &i)| ServedCandidate {
                memory_id: MemoryId::derived(&["bench", &i.to_string()]),
                sources: vec![source::EFFECTIVE.into()],
                baseline_score: 1.0 / (rank as f32 + 1.0),
                baseline_rank: rank as u32 + 1,
                final_score: 1.0 / (rank as f32 + 1.0),
                rank: rank as u32 + 1,
                injected: rank < 5,
                ..ServedCandidate::default()
            })
            .collect();
        let labels: BTreeMap<MemoryId, f32> = candidates
            .iter()
            .map(|c| (c.memory_id.clone(), if rng.random_range(0..10) == 0 { rng.random_range(0.3..1.0) } else { 0.0 }))
            .collect();
        events.push(Event::new(
            at,
            "bench",
            Some(key.clone()),
            Body::RankingServed(RankingServed {
                ranking_id: format!("rk-{s}"),
                trigger: trigger::PROMPT.into(),
                query: benches::lesson(&mut rng, 12),
                alpha: 1.0,
                cold_start: true,
                project: Some("engram".into()),
                candidates,
                ..RankingServed::default()
            }),
        ));
        events.push(Event::new(
            Ts(at.0 + 1_800_000),
            "bench",
            Some(key),
            Body::SessionScored(SessionScored { score: 0.6, confidence: 0.9, labels, ..SessionScored::default() }),
        ));
    }
    journal.append(&events).unwrap();
    let sessions = data::scored_sessions(journal.store(), 0.6).unwrap();
    assert_eq!(sessions.len(), SESSIONS);
    World { _dir: dir, journal, sessions }
}

static WORLD: LazyLock<Mutex<World>> = LazyLock::new(|| Mutex::new(build()));

fn config() -> ModelConfig {
    ModelConfig { native_dim: 0, ..ModelConfig::default() }
}

fn lists(w: &World) -> Vec<BuiltList> {
    let tz = jiff::tz::TimeZone::UTC;
    trainer::canary::session_lists(w.journal.store(), &w.sessions, true, &trainer::canary::options_for(&config(), &tz))
        .unwrap()
}

static SAMPLES: LazyLock<(Vec<Sample>, Vec<Sample>)> = LazyLock::new(|| {
    let w = WORLD.lock().unwrap();
    let all: Vec<Sample> = lists(&w).into_iter().map(|l| l.sample).collect();
    assert_eq!(all.len(), SESSIONS);
    assert!(all.iter().all(|s| s.candidates.len() == CANDIDATES));
    // About one session in ten is held out for early stopping, as `run` does.
    let (valid, train): (Vec<_>, Vec<_>) = all.into_iter().enumerate().partition(|(i, _)| i % 10 == 3);
    (train.into_iter().map(|(_, s)| s).collect(), valid.into_iter().map(|(_, s)| s).collect())
});

fn main() {
    divan::main();
}

/// Rebuilding 500 lists of 50 candidates from the projection (pool signals,
/// history as of serving time, tokens).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn build_lists_500_sessions(bencher: Bencher) {
    let w = WORLD.lock().unwrap();
    bencher.bench_local(|| black_box(lists(&w)));
}

/// Training the default text-only model (dim 64, 16,384 buckets) for 10 epochs
/// on 450 of those lists, validating on 50 after every epoch.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn train_500_sessions_50_candidates_10_epochs(bencher: Bencher) {
    let (train_set, valid) = &*SAMPLES;
    let tc = TrainConfig { epochs: 10, patience: 10, ..TrainConfig::default() };
    bencher
        .with_inputs(|| {
            let m = Model::new(config(), 1).unwrap();
            let opt = AdamState::new(&m);
            (m, opt)
        })
        .bench_local_values(|(mut m, mut opt)| {
            let report = train::train(&mut m, &mut opt, train_set, valid, &tc, &mut || false).unwrap();
            assert_eq!(report.epochs.len(), 10);
            report
        });
}
