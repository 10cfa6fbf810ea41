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
pub fn finite_difference(
    params: &[Mat],
    p: usize,
    k: usize,
    h: f32,
    f: &dyn Fn(&mut Tape<'_>) -> Var,
) -> f32 {
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
            let tol = 4e-3 + 3e-2 * fd.abs().max(an.abs());
            prop_assert!(
                (fd - an).abs() <= tol,
                "param {p} entry {k}: analytic {an} vs finite difference {fd}"
            );
        }
    }
    Ok(())
}
