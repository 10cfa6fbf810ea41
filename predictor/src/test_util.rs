//! Helpers shared by the unit tests: proptest configuration and finite-difference gradient checks.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use crate::autograd::{Mat, ParamId, Tape, Var};

/// Proptest config with `cases` cases unless `PROPTEST_CASES` is set, and a fixed seed
/// unless `PROPTEST_RNG_SEED` is set, so that `cargo test` is reproducible.
pub fn config(cases: u32) -> Config {
    let mut c = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0x5eed_0002);
    }
    c.failure_persistence = None;
    c
}

/// A strategy for an `r × c` matrix with entries in `[-2, 2]`.
pub fn mat(r: usize, c: usize) -> impl Strategy<Value = Mat> {
    prop::collection::vec(-2.0f32..2.0, r * c).prop_map(move |v| Mat::from_vec(r, c, v))
}

/// Central finite difference of `f` with respect to entry `k` of parameter `p`.
pub fn finite_difference(params: &[Mat], p: usize, k: usize, h: f32, f: &dyn Fn(&mut Tape<'_>) -> Var) -> f32 {
    let eval = |delta: f32| {
        let mut ps = params.to_vec();
        ps[p].as_mut_slice()[k] += delta;
        let mut t = Tape::inference(&ps);
        let v = f(&mut t);
        f64::from(t.value(v)[(0, 0)])
    };
    ((eval(h) - eval(-h)) / (2.0 * f64::from(h))) as f32
}

/// Asserts that the tape's gradient of the scalar built by `f` equals finite differences,
/// for every entry of every parameter (or at most `max_entries` evenly spread ones per parameter).
pub fn check_gradients(
    params: &[Mat],
    f: &dyn Fn(&mut Tape<'_>) -> Var,
    h: f32,
    max_entries: usize,
) -> Result<(), TestCaseError> {
    let mut tape = Tape::new(params);
    let loss = f(&mut tape);
    let grads = tape.backward(loss);
    for (p, m) in params.iter().enumerate() {
        let analytic = grads.dense(ParamId(p), m.shape());
        let len = m.len();
        let stride = len.div_ceil(max_entries.max(1)).max(1);
        for k in (0..len).step_by(stride) {
            let fd = finite_difference(params, p, k, h, f);
            let an = analytic.as_slice()[k];
            let tol = 2e-3 + 1e-2 * fd.abs().max(an.abs());
            prop_assert!((fd - an).abs() <= tol, "param {p} entry {k}: analytic {an} vs finite difference {fd}");
        }
    }
    Ok(())
}

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::features::{CandidateSignals, SessionSignals};
use crate::model::{ModelConfig, OwnedCandidate, OwnedQuery};

/// A small config for fast tests.
pub fn tiny_config(native_dim: usize) -> ModelConfig {
    ModelConfig { native_dim, dim: 8, value_dim: 4, hash_buckets: 64, project_slots: 4, ..ModelConfig::default() }
}

/// A seeded RNG for test data.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Random raw signals.
pub fn random_signals(r: &mut ChaCha8Rng) -> CandidateSignals {
    let hit = r.random_bool(0.5);
    CandidateSignals {
        age_days: r.random_range(0.0..400.0),
        importance: r.random_range(0.0..1.0),
        access_count: r.random_range(0..50),
        pinned: r.random_bool(0.2),
        has_embedding: r.random_bool(0.5),
        superseded: r.random_bool(0.2),
        bm25_score: hit.then(|| r.random_range(0.0..12.0)),
        bm25_rank: hit.then(|| r.random_range(1..20)),
        effective_score: r.random_range(0.0..1.0),
        project_match: r.random_bool(0.5),
        tag_overlap: r.random_range(0.0..1.0),
        times_injected: r.random_range(0..20),
        times_useful: r.random_range(0.0..10.0),
        lexical_overlap: r.random_range(0.0..1.0),
        neighbor_score: r.random_range(0.0..1.0),
        session_match: r.random_range(0.0..1.0),
        content_terms: r.random_range(0..60),
        follows_hit: r.random_range(0.0..1.0),
        precedes_hit: r.random_range(0.0..1.0),
        time_match: f32::from(u8::from(r.random_bool(0.3))),
        context_before: r.random_range(0.0..12.0),
        context_after: r.random_range(0.0..12.0),
        context_wide: r.random_range(0.0..16.0),
        is_question: f32::from(u8::from(r.random_bool(0.2))),
        follows_question: r.random_range(0.0..1.0),
        quantity_match: f32::from(u8::from(r.random_bool(0.2))),
        proper_nouns: r.random_range(0..6),
        states_number: f32::from(u8::from(r.random_bool(0.2))),
        states_time: f32::from(u8::from(r.random_bool(0.3))),
        first_person: f32::from(u8::from(r.random_bool(0.5))),
        date_match: f32::from(u8::from(r.random_bool(0.1))),
        graph_score: r.random_range(0.0..1.0) * f32::from(u8::from(r.random_bool(0.2))),
    }
}

/// Random session signals.
pub fn random_session(r: &mut ChaCha8Rng) -> SessionSignals {
    SessionSignals {
        hour: r.random_range(0.0..24.0),
        weekday: r.random_range(0..7),
        month0: r.random_range(0..12),
        gap_hours: r.random_bool(0.8).then(|| r.random_range(0.0..500.0)),
        project: r.random_bool(0.8).then(|| format!("project-{}", r.random_range(0..5))),
    }
}

/// Random token ids.
pub fn random_tokens(r: &mut ChaCha8Rng, len: usize, buckets: u32) -> Vec<u32> {
    (0..len).map(|_| r.random_range(0..buckets)).collect()
}

/// Random vector with entries in `[-1, 1]`.
pub fn random_vec(r: &mut ChaCha8Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| r.random_range(-1.0..1.0)).collect()
}

/// A random query with text, an embedding (if `native_dim > 0`) and a session.
pub fn random_query(r: &mut ChaCha8Rng, cfg: &ModelConfig) -> OwnedQuery {
    OwnedQuery {
        tokens: random_tokens(r, 6, cfg.hash_buckets),
        embedding: (cfg.native_dim > 0).then(|| random_vec(r, cfg.native_dim)),
        session: random_session(r),
    }
}

/// Random candidates mixing the text-only, embedding-only and both-paths cases.
pub fn random_candidates(r: &mut ChaCha8Rng, cfg: &ModelConfig, n: usize) -> Vec<OwnedCandidate> {
    (0..n)
        .map(|i| {
            let kind = if cfg.native_dim == 0 { 0 } else { i % 3 };
            OwnedCandidate {
                tokens: if kind == 1 { Vec::new() } else { random_tokens(r, 5, cfg.hash_buckets) },
                embedding: (kind >= 1).then(|| random_vec(r, cfg.native_dim)),
                signals: random_signals(r),
            }
        })
        .collect()
}
