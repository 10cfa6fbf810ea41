//! Training tests: planted-signal learning, session signals that flip rankings, determinism, skipping, budget, early stopping, lazy Adam.

use super::*;
use crate::features::{CandidateSignals, SessionSignals, project_slot};
use crate::model::ModelConfig;
use crate::test_util::{random_signals, random_tokens, rng};
use rand_chacha::ChaCha8Rng;

fn small_config() -> ModelConfig {
    ModelConfig { native_dim: 0, dim: 16, value_dim: 8, hash_buckets: 4096, project_slots: 8, ..ModelConfig::default() }
}

/// A stop closure that allows `max` optimizer steps (the tests' "time budget").
fn step_budget(max: u64) -> impl FnMut() -> bool {
    let mut calls = 0u64;
    move || {
        calls += 1;
        calls > max
    }
}

fn mean_ndcg(model: &Model, samples: &[Sample]) -> f32 {
    let mut sum = 0.0;
    for s in samples {
        let scores = model.score(&s.query.as_query(), &s.candidates()).expect("score");
        sum += ndcg_at_k(&order_by_score(&scores), &s.labels, 10);
    }
    sum / samples.len() as f32
}

const COMMON: u32 = 40;

/// Relevant candidates share one or two *rare* tokens with the query; distractors share
/// three *common* ones. An untrained exact-match/similarity model prefers the distractors.
fn rare_token_list(r: &mut ChaCha8Rng, buckets: u32) -> Sample {
    let rare = |r: &mut ChaCha8Rng| r.random_range(COMMON..buckets);
    let q_rare = [rare(r), rare(r)];
    let q_common: Vec<u32> = (0..5).map(|_| r.random_range(0..COMMON)).collect();
    let mut tokens = q_rare.to_vec();
    tokens.extend(&q_common);
    let n = 20;
    let relevant = [r.random_range(0..n), r.random_range(0..n)];
    let mut candidates = Vec::new();
    let mut labels = Vec::new();
    for i in 0..n {
        let mut t: Vec<u32> = (0..3).map(|_| rare(r)).collect();
        if relevant.contains(&i) {
            t.push(q_rare[r.random_range(0..2)]);
            t.push(r.random_range(0..COMMON));
            labels.push(1.0);
        } else {
            t.extend(q_common.iter().take(3));
            labels.push(0.0);
        }
        candidates.push(OwnedCandidate { tokens: t, embedding: None, signals: CandidateSignals::default() });
    }
    Sample {
        query: OwnedQuery { tokens, embedding: None, session: SessionSignals::default() },
        candidates,
        labels,
        weight: 1.0,
    }
}

#[test]
fn learns_rare_shared_tokens_from_below_chance_to_ndcg_0_9() {
    let cfg = small_config();
    let mut r = rng(1);
    let data: Vec<Sample> = (0..450).map(|_| rare_token_list(&mut r, cfg.hash_buckets)).collect();
    let (train_set, rest) = data.split_at(300);
    let (valid, test) = rest.split_at(50);
    let mut model = Model::new(cfg, 1).expect("model");
    let before = mean_ndcg(&model, test);
    assert!(before < 0.6, "untrained NDCG@10 should be near chance, got {before}");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 8, batch_size: 4, ..TrainConfig::default() };
    let report = train(&mut model, &mut opt, train_set, valid, &tc, &mut step_budget(600)).expect("train");
    let after = mean_ndcg(&model, test);
    eprintln!("rare tokens: NDCG@10 {before} -> {after} in {} steps", report.steps);
    assert!(after >= 0.9, "NDCG@10 {before} -> {after}; report {report:?}");
}

#[test]
fn learns_a_deciding_feature_from_chance_to_ndcg_0_9() {
    let cfg = small_config();
    let mut r = rng(2);
    let make = |r: &mut ChaCha8Rng| {
        let candidates: Vec<OwnedCandidate> = (0..20)
            .map(|_| OwnedCandidate {
                tokens: random_tokens(r, 4, cfg.hash_buckets),
                embedding: None,
                signals: random_signals(r),
            })
            .collect();
        // Relevance is decided by tag overlap alone, which the gate's prior ignores.
        let mut candidates = candidates;
        let mut labels = Vec::new();
        for c in &mut candidates {
            let relevant = r.random_bool(0.15);
            c.signals.tag_overlap = if relevant { r.random_range(0.85..1.0) } else { r.random_range(0.0..0.5) };
            labels.push(if relevant { 1.0 } else { 0.0 });
        }
        Sample {
            query: OwnedQuery {
                tokens: random_tokens(r, 5, cfg.hash_buckets),
                embedding: None,
                session: SessionSignals::default(),
            },
            candidates,
            labels,
            weight: 1.0,
        }
    };
    let data: Vec<Sample> = (0..300).map(|_| make(&mut r)).collect();
    let (train_set, rest) = data.split_at(200);
    let (valid, test) = rest.split_at(40);
    let mut model = Model::new(cfg, 2).expect("model");
    let before = mean_ndcg(&model, test);
    assert!(before < 0.7, "untrained NDCG@10 {before}");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 10, ..TrainConfig::default() };
    let report = train(&mut model, &mut opt, train_set, valid, &tc, &mut step_budget(500)).expect("train");
    let after = mean_ndcg(&model, test);
    eprintln!("deciding feature: NDCG@10 {before} -> {after} in {} steps", report.steps);
    assert!(after >= 0.9, "NDCG@10 {before} -> {after}; {report:?}");
}

/// Two kinds of candidates (important vs unimportant); which kind is relevant depends on
/// a session condition only. After training, flipping that session signal flips the ranking.
fn session_flip(name: &str, session_for: fn(&mut ChaCha8Rng, bool) -> SessionSignals) {
    let cfg = small_config();
    let mut r = rng(3);
    let list = |r: &mut ChaCha8Rng, session: SessionSignals, cond: bool| {
        let mut candidates = Vec::new();
        let mut labels = Vec::new();
        for i in 0..8 {
            let kind_a = i % 2 == 0;
            candidates.push(OwnedCandidate {
                tokens: random_tokens(r, 3, cfg.hash_buckets),
                embedding: None,
                signals: CandidateSignals { importance: if kind_a { 0.9 } else { 0.1 }, ..CandidateSignals::default() },
            });
            labels.push(if kind_a == cond { 1.0 } else { 0.0 });
        }
        Sample {
            query: OwnedQuery { tokens: random_tokens(r, 4, cfg.hash_buckets), embedding: None, session },
            candidates,
            labels,
            weight: 1.0,
        }
    };
    let data: Vec<Sample> = (0..240)
        .map(|i| {
            let cond = i % 2 == 0;
            let s = session_for(&mut r, cond);
            list(&mut r, s, cond)
        })
        .collect();
    let (train_set, valid) = data.split_at(200);
    let mut model = Model::new(cfg, 3).expect("model");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 12, ..TrainConfig::default() };
    train(&mut model, &mut opt, train_set, valid, &tc, &mut step_budget(700)).expect("train");
    // One fixed probe list, scored under both session conditions. Candidates 2k and
    // 2k+1 share their text and differ only in kind, so within every pair the order
    // must follow the session condition.
    let mut probe = list(&mut r, SessionSignals::default(), true);
    for k in 0..probe.candidates.len() / 2 {
        probe.candidates[2 * k + 1].tokens = probe.candidates[2 * k].tokens.clone();
    }
    for cond in [true, false] {
        for trial in 0..6 {
            let session = session_for(&mut r, cond);
            let q = OwnedQuery { session: session.clone(), ..probe.query.clone() };
            let scores = model.score(&q.as_query(), &probe.candidates()).expect("score");
            for k in 0..scores.len() / 2 {
                assert_eq!(
                    scores[2 * k] > scores[2 * k + 1],
                    cond,
                    "{name}: cond {cond} trial {trial} pair {k}: {scores:?} for {session:?}"
                );
            }
            let top = order_by_score(&scores)[0];
            assert_eq!(top.is_multiple_of(2), cond, "{name}: top candidate {top} under cond {cond}");
        }
    }
}

fn base_session(r: &mut ChaCha8Rng) -> SessionSignals {
    SessionSignals {
        hour: r.random_range(0.0..24.0),
        weekday: r.random_range(0..7),
        month0: r.random_range(0..12),
        gap_hours: Some(r.random_range(5.0..50.0)),
        project: None,
    }
}

#[test]
fn time_of_day_can_flip_a_ranking() {
    session_flip("hour", |r, morning| SessionSignals {
        hour: if morning { r.random_range(7.0..11.0) } else { r.random_range(19.0..23.0) },
        ..base_session(r)
    });
}

#[test]
fn weekday_can_flip_a_ranking() {
    session_flip("weekday", |r, weekend| SessionSignals {
        weekday: if weekend { r.random_range(5..7) } else { r.random_range(0..5) },
        ..base_session(r)
    });
}

#[test]
fn month_can_flip_a_ranking() {
    session_flip("month0", |r, summer| SessionSignals {
        month0: if summer { r.random_range(5..8) } else { [11, 0, 1][r.random_range(0..3)] },
        ..base_session(r)
    });
}

#[test]
fn session_gap_can_flip_a_ranking() {
    session_flip("gap_hours", |r, long| SessionSignals {
        gap_hours: Some(if long { r.random_range(100.0..500.0) } else { r.random_range(0.1..3.0) }),
        ..base_session(r)
    });
}

#[test]
fn project_can_flip_a_ranking() {
    assert_ne!(
        project_slot(Some("alpha"), 8),
        project_slot(Some("beta"), 8),
        "test projects must hash to different slots"
    );
    session_flip("project", |r, alpha| SessionSignals {
        project: Some(if alpha { "alpha" } else { "beta" }.into()),
        ..base_session(r)
    });
}

fn noisy_data(n: usize, seed: u64) -> Vec<Sample> {
    let cfg = small_config();
    let mut r = rng(seed);
    (0..n).map(|_| rare_token_list(&mut r, cfg.hash_buckets)).collect()
}

#[test]
fn same_seed_same_data_gives_bit_identical_weights_and_scores() {
    let cfg = small_config();
    let data = noisy_data(40, 9);
    let tc = TrainConfig { epochs: 2, ..TrainConfig::default() };
    let run = |seed: u64| {
        let mut model = Model::new(cfg, 4).expect("model");
        let mut opt = AdamState::new(&model);
        let tc = TrainConfig { seed, ..tc };
        let report = train(&mut model, &mut opt, &data[..30], &data[30..], &tc, &mut || false).expect("train");
        (model, opt, report)
    };
    let (m1, o1, r1) = run(5);
    let (m2, o2, r2) = run(5);
    assert_eq!(m1, m2);
    assert_eq!(o1, o2);
    assert_eq!(r1, r2);
    let bits = |m: &Model| -> Vec<u32> {
        let s = &data[35];
        m.score(&s.query.as_query(), &s.candidates()).expect("score").iter().map(|v| v.to_bits()).collect()
    };
    assert_eq!(bits(&m1), bits(&m2));
    // A different shuffling seed visits lists in another order and ends elsewhere.
    let (m3, _, _) = run(6);
    assert_ne!(m1, m3);
}

#[test]
fn shuffling_changes_the_order_every_epoch() {
    let mut r = ChaCha8Rng::seed_from_u64(0);
    let items: Vec<usize> = (0..20).collect();
    let a = shuffled(&mut r, &items);
    let b = shuffled(&mut r, &items);
    assert_ne!(a, items);
    assert_ne!(a, b);
    let mut sorted = a.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, items);
}

#[test]
fn temperature_follows_label_spread_and_flat_lists_are_skipped() {
    fn predictor_softmax(x: &[f32], scale: f32) -> Vec<f32> {
        crate::autograd::softmax_slice(x, scale)
    }
    let tc = TrainConfig::default();
    let close = |t: Option<f32>, want: f32| t.is_some_and(|t| (t - want).abs() < 1e-5);
    // The seed's 0.5 when the spread is wide enough for the list length.
    assert_eq!(tc.list_temperature(&[1.0, 0.0]), Some(0.5));
    assert!(close(tc.list_temperature(&[0.5, 0.6]), 0.1 / 2f32.ln()));
    // Longer lists: capped at spread / ln n so the best labels keep about half the mass.
    assert_eq!(tc.list_temperature(&[1.0, 0.0, 0.3]), Some(0.5));
    assert!(close(tc.list_temperature(&[0.5, 0.55, 0.6]), 0.1 / 3f32.ln()));
    let mut long = vec![0.0f32; 100];
    long[3] = 1.0;
    let t = tc.list_temperature(&long).unwrap();
    assert!(close(Some(t), 1.0 / 100f32.ln()));
    let p = predictor_softmax(&long, 1.0 / t);
    assert!((p[3] - 0.5).abs() < 0.01, "the relevant candidate keeps half the target mass, got {}", p[3]);
    assert_eq!(tc.list_temperature(&[0.4, 0.4]), None);
    assert_eq!(tc.list_temperature(&[1.0]), None);
    assert!(close(tc.list_temperature(&[-0.3, -0.5, 0.0]), 0.5f32.min(0.5 / 3f32.ln())));

    let cfg = small_config();
    let mut data = noisy_data(6, 3);
    for s in &mut data[..2] {
        let n = s.labels.len();
        s.labels = vec![0.7; n];
    }
    let mut model = Model::new(cfg, 1).expect("model");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 1, batch_size: 1, ..TrainConfig::default() };
    let report = train(&mut model, &mut opt, &data, &data[..1], &tc, &mut || false).expect("train");
    assert_eq!(report.skipped_lists, 2);
    assert_eq!(report.skipped_valid_lists, 1);
    assert_eq!(report.steps, 4);
    assert_eq!(report.trained_lists, 4);
    // Nothing trainable at all.
    let report = train(&mut model, &mut opt, &data[..2], &[], &tc, &mut || false).expect("train");
    assert_eq!(report.stop, StopReason::NoTrainableLists);
    assert_eq!(report.steps, 0);
}

#[test]
fn the_stop_closure_is_a_hard_budget() {
    let cfg = small_config();
    let data = noisy_data(20, 4);
    let mut model = Model::new(cfg, 1).expect("model");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 100, batch_size: 2, ..TrainConfig::default() };
    let report = train(&mut model, &mut opt, &data, &[], &tc, &mut step_budget(7)).expect("train");
    assert_eq!(report.stop, StopReason::Budget);
    assert_eq!(report.steps, 7);
    assert_eq!(opt.step, 7);
}

#[test]
fn early_stopping_restores_the_best_epoch() {
    let cfg = small_config();
    let train_set = noisy_data(40, 5);
    // The validation labels are the opposite of the training labels: validation loss
    // gets worse as training proceeds, so the best epoch is the first.
    let mut valid = noisy_data(10, 6);
    for s in &mut valid {
        for l in &mut s.labels {
            *l = 1.0 - *l;
        }
    }
    let mut model = Model::new(cfg, 1).expect("model");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 50, patience: 2, ..TrainConfig::default() };
    let report = train(&mut model, &mut opt, &train_set, &valid, &tc, &mut || false).expect("train");
    assert_eq!(report.stop, StopReason::EarlyStopped, "{report:?}");
    let best = report.best_epoch.expect("a best epoch");
    assert!(report.epochs.len() <= best + tc.patience);
    let best_loss = report.epochs[best - 1].valid_loss.expect("valid loss");
    let (now, _) = evaluate(&model, &valid, &tc).expect("eval");
    assert_eq!(now, Some(best_loss), "the returned model is the best epoch's");
}

#[test]
fn bad_samples_are_rejected_before_training() {
    let cfg = small_config();
    let mut data = noisy_data(3, 7);
    data[2].labels.pop();
    let mut model = Model::new(cfg, 1).expect("model");
    let before = model.clone();
    let mut opt = AdamState::new(&model);
    let e = train(&mut model, &mut opt, &data, &[], &TrainConfig::default(), &mut || false)
        .expect_err("bad labels")
        .to_string();
    assert_eq!(e, "train sample 2: labels: expected 20 values, got 19");
    assert_eq!(model, before);
    data[2] = noisy_data(1, 8).remove(0);
    data[1].weight = f32::NAN;
    let e = train(&mut model, &mut opt, &data, &[], &TrainConfig::default(), &mut || false)
        .expect_err("bad weight")
        .to_string();
    assert!(e.starts_with("train sample 1: weight"), "{e}");
    let other = Model::new(ModelConfig { dim: 8, ..cfg }, 1).expect("model");
    let mut wrong = AdamState::new(&other);
    assert!(train(&mut model, &mut wrong, &[], &[], &TrainConfig::default(), &mut || false).is_err());
}

#[test]
fn clipping_bounds_the_gradient_norm() {
    let mut g = Gradients { grads: vec![Some(Grad::Dense(Mat::from_element(2, 2, 3.0)))] };
    let before = clip_gradients(&mut g, 1.0);
    assert!((before - 6.0).abs() < 1e-5);
    assert!((g.norm() - 1.0).abs() < 1e-5);
    let after = clip_gradients(&mut g, 10.0);
    assert!((after - 1.0).abs() < 1e-5);
    assert!((g.norm() - 1.0).abs() < 1e-5);
}

/// Regression (peer bug): dense Adam touched all 1M hash rows every step.
#[test]
fn lazy_adam_touches_only_the_columns_with_gradient() {
    let cfg = small_config();
    let data = noisy_data(1, 10);
    let mut model = Model::new(cfg, 1).expect("model");
    let before = model.clone();
    let mut opt = AdamState::new(&model);
    let s = &data[0];
    let (_, grads) =
        model.loss_and_gradients(&s.query.as_query(), &s.candidates(), &s.labels, 0.5, 1.0).expect("grads");
    let touched = match &grads.grads[crate::model::P_HASH.0] {
        Some(Grad::Sparse(sg)) => sg.cols.clone(),
        other => panic!("hash gradient should be sparse: {other:?}"),
    };
    opt.apply(&mut model, &grads, &AdamParams::default());
    let h0 = &before.params[crate::model::P_HASH.0];
    let h1 = &model.params[crate::model::P_HASH.0];
    let steps = &opt.col_steps[crate::model::P_HASH.0];
    for (c, &step) in steps.iter().enumerate() {
        let is_touched = touched.binary_search(&(c as u32)).is_ok();
        assert_eq!(step, u64::from(is_touched), "column {c}");
        if !is_touched {
            assert_eq!(h0.column(c), h1.column(c), "untouched column {c} moved");
        }
    }
    assert!(touched.iter().any(|&c| h0.column(c as usize) != h1.column(c as usize)));
    assert!(touched.len() < 200);
}

/// Dense tensors follow textbook Adam with bias correction and decoupled
/// weight decay (checked against a naive reference).
#[test]
fn dense_adam_matches_a_reference() {
    let cfg = small_config();
    let mut model = Model::new(cfg, 1).expect("model");
    let mut opt = AdamState::new(&model);
    let hp = AdamParams { lr: 0.01, ..AdamParams::default() };
    let id = P_Q.0;
    let shape = model.params[id].shape();
    let mut p_ref: Vec<f64> = model.params[id].iter().map(|&v| f64::from(v)).collect();
    let (mut m_ref, mut v_ref) = (vec![0.0f64; p_ref.len()], vec![0.0f64; p_ref.len()]);
    for t in 1..=3 {
        let g = Mat::from_fn(shape.0, shape.1, |i, j| ((i * 3 + j * 7 + t) % 5) as f32 - 2.0);
        let mut grads = Gradients::empty(NUM_PARAMS);
        grads.grads[id] = Some(Grad::Dense(g.clone()));
        opt.apply(&mut model, &grads, &hp);
        for (k, &gk) in g.iter().enumerate() {
            let gk = f64::from(gk);
            m_ref[k] = 0.9 * m_ref[k] + 0.1 * gk;
            v_ref[k] = 0.999 * v_ref[k] + 0.001 * gk * gk;
            let mh = m_ref[k] / (1.0 - 0.9f64.powi(t as i32));
            let vh = v_ref[k] / (1.0 - 0.999f64.powi(t as i32));
            p_ref[k] *= 1.0 - 0.01 * f64::from(DEFAULT_QK_DECAY);
            p_ref[k] -= 0.01 * mh / (vh.sqrt() + 1e-8);
        }
    }
    for (a, b) in model.params[id].iter().zip(&p_ref) {
        assert!((f64::from(*a) - b).abs() < 1e-5, "{a} vs {b}");
    }
}

/// Decay shrinks only the tensors it is set for, and a sparse table cannot decay.
#[test]
fn weight_decay_shrinks_only_its_tensors_and_never_a_sparse_table() {
    let model0 = Model::new(small_config(), 3).expect("model");
    let mut model = model0.clone();
    let mut opt = AdamState::new(&model);
    let hp = AdamParams::default();
    opt.apply(&mut model, &Gradients::empty(NUM_PARAMS), &hp);
    let keep = 1.0 - hp.lr * DEFAULT_QK_DECAY;
    for (i, (a, b)) in model.params.iter().zip(&model0.params).enumerate() {
        if hp.decay[i] > 0.0 {
            assert!(a.iter().zip(b.iter()).all(|(x, y)| (x - y * keep).abs() < 1e-7), "{}", PARAM_NAMES[i]);
        } else {
            assert_eq!(a, b, "{} moved without a gradient", PARAM_NAMES[i]);
        }
    }
    let mut cfg = TrainConfig::default();
    cfg.adam.decay[crate::model::P_HASH.0] = 0.1;
    let err = train(&mut model, &mut opt, &[], &[], &cfg, &mut || false).expect_err("sparse decay is refused");
    assert!(err.to_string().contains("hash_embed"), "{err}");
}

/// The BM25 and lexical features reach the logit through the gate: a fresh model
/// already leans on them, and a few steps are enough to follow the baseline's order.
#[test]
fn a_fresh_model_quickly_follows_the_bm25_ordering() {
    let cfg = ModelConfig { dim: 32, value_dim: 16, ..small_config() };
    let mut r = rng(12);
    let make = |r: &mut ChaCha8Rng| {
        let n = 20;
        let mut candidates = Vec::new();
        let mut labels = Vec::new();
        for i in 0..n {
            let hit = i < 8;
            let score = if hit { r.random_range(1.0..12.0) } else { 0.0 };
            candidates.push(OwnedCandidate {
                tokens: random_tokens(r, 8, cfg.hash_buckets),
                embedding: None,
                signals: CandidateSignals {
                    bm25_score: hit.then_some(score),
                    lexical_overlap: score / 12.0,
                    ..random_signals(r)
                },
            });
            labels.push(if score > 8.0 { 1.0 } else { 0.0 });
        }
        Sample {
            query: OwnedQuery {
                tokens: random_tokens(r, 6, cfg.hash_buckets),
                embedding: None,
                session: SessionSignals::default(),
            },
            candidates,
            labels,
            weight: 1.0,
        }
    };
    let data: Vec<Sample> = (0..160).map(|_| make(&mut r)).collect();
    let (train_set, test) = data.split_at(120);
    let mut model = Model::new(cfg, 12).expect("model");
    let before = mean_ndcg(&model, test);
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 3, ..TrainConfig::default() };
    train(&mut model, &mut opt, train_set, &[], &tc, &mut step_budget(60)).expect("train");
    let after = mean_ndcg(&model, test);
    eprintln!("bm25 prior: NDCG@10 {before} -> {after} in 60 steps");
    assert!(before > 0.6, "the gate prior should already use BM25: {before}");
    assert!(after >= 0.9, "NDCG@10 {before} -> {after}");
}

/// The pre-embedded path learns a hidden query–memory relation (relevant memories'
/// embeddings are a fixed unknown transform of the query's), from chance to ≥ 0.9.
#[test]
fn the_embedding_path_learns_a_hidden_relation() {
    let native = 16;
    let cfg = ModelConfig { native_dim: native, ..small_config() };
    let mut r = rng(13);
    let hidden: Vec<f32> = (0..native * native).map(|_| r.random_range(-1.0..1.0)).collect();
    let unit = |r: &mut ChaCha8Rng| -> Vec<f32> { (0..native).map(|_| r.random_range(-1.0..1.0)).collect() };
    let make = |r: &mut ChaCha8Rng| {
        let q = unit(r);
        let target: Vec<f32> = (0..native).map(|i| (0..native).map(|j| hidden[i * native + j] * q[j]).sum()).collect();
        let relevant = r.random_range(0..10);
        let mut candidates = Vec::new();
        let mut labels = Vec::new();
        for i in 0..10 {
            let emb =
                if i == relevant { target.iter().map(|t| t + r.random_range(-0.3..0.3)).collect() } else { unit(r) };
            candidates.push(OwnedCandidate {
                tokens: Vec::new(),
                embedding: Some(emb),
                signals: CandidateSignals { has_embedding: true, ..CandidateSignals::default() },
            });
            labels.push(if i == relevant { 1.0 } else { 0.0 });
        }
        Sample {
            query: OwnedQuery { tokens: Vec::new(), embedding: Some(q), session: SessionSignals::default() },
            candidates,
            labels,
            weight: 1.0,
        }
    };
    let data: Vec<Sample> = (0..500).map(|_| make(&mut r)).collect();
    let (train_set, test) = data.split_at(400);
    let mut model = Model::new(cfg, 13).expect("model");
    let before = mean_ndcg(&model, test);
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs: 10, ..TrainConfig::default() };
    let report = train(&mut model, &mut opt, train_set, &[], &tc, &mut step_budget(800)).expect("train");
    let after = mean_ndcg(&model, test);
    eprintln!("embedding path: NDCG@10 {before} -> {after} in {} steps", report.steps);
    assert!(before < 0.6, "untrained NDCG@10 {before}");
    assert!(after >= 0.9, "NDCG@10 {before} -> {after}");
}

/// Trains a fresh copy of one model for `epochs` with `averaging` and no
/// validation split.
fn trained(data: &[Sample], epochs: usize, averaging: Averaging) -> Model {
    let mut model = Model::new(small_config(), 3).expect("model");
    let mut opt = AdamState::new(&model);
    let tc = TrainConfig { epochs, averaging, seed: 11, ..TrainConfig::default() };
    train(&mut model, &mut opt, data, &[], &tc, &mut || false).expect("train");
    model
}

fn assert_close(a: &Model, b: &Model) {
    for (x, y) in a.tensors().iter().zip(b.tensors()) {
        for (p, q) in x.as_slice().iter().zip(y.as_slice()) {
            assert!((p - q).abs() <= 1e-5 * (1.0 + q.abs()), "{p} != {q}");
        }
    }
}

/// The running mean is the mean of the weights the same run has at the
/// ends of its epochs (the shuffling does not depend on the averaging).
#[test]
fn averaging_keeps_the_mean_of_the_epoch_ends() {
    let data = noisy_data(24, 8);
    let ends: Vec<Model> = (1..=3).map(|e| trained(&data, e, Averaging::Off)).collect();
    assert_ne!(ends[0], ends[2], "training moves the weights");
    let mean_of = |models: &[&Model]| {
        let mut mean = models[0].clone();
        for (i, m) in models.iter().enumerate().skip(1) {
            mean.move_towards(m, 1.0 / (i + 1) as f32);
        }
        mean
    };
    assert_close(&trained(&data, 3, Averaging::FromEpoch(1)), &mean_of(&[&ends[0], &ends[1], &ends[2]]));
    assert_close(&trained(&data, 3, Averaging::FromEpoch(2)), &mean_of(&[&ends[1], &ends[2]]));
    assert_eq!(trained(&data, 1, Averaging::FromEpoch(2)), ends[0], "the first epoch alone is not averaged");
    let start = Model::new(small_config(), 3).expect("model");
    assert_close(&trained(&data, 2, Averaging::WithStart), &mean_of(&[&start, &ends[0], &ends[1]]));
}

#[test]
fn model_moves_towards_another_by_a_fraction() {
    let a = Model::new(small_config(), 1).expect("model");
    let b = Model::new(small_config(), 2).expect("model");
    let mut half = a.clone();
    half.move_towards(&b, 0.5);
    for ((h, x), y) in half.tensors().iter().zip(a.tensors()).zip(b.tensors()) {
        for ((h, x), y) in h.as_slice().iter().zip(x.as_slice()).zip(y.as_slice()) {
            assert!((h - (x + y) / 2.0).abs() <= 1e-6);
        }
    }
    let mut copy = a.clone();
    copy.move_towards(&b, 1.0);
    assert_close(&copy, &b);
}

/// The validation loss is the training objective itself (the loss op's
/// forward, scores at temperature 1 against labels at the list's
/// temperature), so the two curves of a run are on one scale; and a run's
/// validation loss on its own training lists equals its training loss.
#[test]
fn validation_loss_is_the_training_loss_on_the_same_lists() {
    let cfg = small_config();
    let data = noisy_data(12, 9);
    let model = Model::new(cfg, 1).expect("model");
    let tc = TrainConfig::default();
    let (mut sum, mut weight) = (0.0f64, 0.0f64);
    for s in &data {
        let Some(t) = tc.list_temperature(&s.labels) else { continue };
        let (loss, _) =
            model.loss_and_gradients(&s.query.as_query(), &s.candidates(), &s.labels, t, 1.0).expect("loss");
        let (alone, _) = evaluate(&model, std::slice::from_ref(s), &tc).expect("eval");
        let alone = alone.expect("a list with label variance");
        assert!((alone - loss).abs() <= 1e-5 * loss.abs().max(1.0), "list: valid {alone} vs train {loss}");
        sum += f64::from(loss) * f64::from(s.weight);
        weight += f64::from(s.weight);
    }
    assert!(weight > 0.0, "no list with label variance");
    let (all, _) = evaluate(&model, &data, &tc).expect("eval");
    let all = all.expect("a validation loss");
    assert!((f64::from(all) - sum / weight).abs() < 1e-4, "weighted mean {all} vs {}", sum / weight);
}
