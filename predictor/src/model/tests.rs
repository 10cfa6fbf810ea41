//! Model tests: whole-model gradients, every input matters, no label leak, errors, determinism.

use super::*;
use crate::autograd::Grad;
use crate::test_util::*;
use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;

fn candidates_of(owned: &[OwnedCandidate]) -> Vec<Candidate<'_>> {
    owned.iter().map(OwnedCandidate::as_candidate).collect()
}

proptest! {
    #![proptest_config(config(12))]

    /// Every parameter group (dense projections, LN gains/biases, session weights,
    /// sparse hash/project/lexical columns) matches finite differences.
    #[test]
    fn whole_model_gradient_matches_finite_differences(seed in any::<u64>()) {
        let cfg = tiny_config(6);
        let mut r = rng(seed);
        // Perturb the init so that no parameter sits at a special value (identity, zeros).
        let mut model = Model::new(cfg, seed).expect("model");
        for t in &mut model.params {
            for v in t.iter_mut() {
                *v += r.random_range(-0.3..0.3);
            }
        }
        let mut query = random_query(&mut r, &cfg);
        query.session.project = Some("engram".into());
        let mut cands = random_candidates(&mut r, &cfg, 5);
        // A shared token, so the exact-match term takes part.
        cands[0].tokens[0] = query.tokens[0];
        let labels: Vec<f32> = (0..5).map(|_| r.random_range(-0.5..1.0)).collect();
        let f = |t: &mut Tape<'_>| {
            let c = candidates_of(&cands);
            let z = model.forward(t, &query.as_query(), &c).expect("valid input");
            t.listnet_loss(z, &labels, 0.5, 1.0)
        };
        // The tape borrows `model.params`; finite differences perturb copies of them.
        let (_, grads) = model
            .loss_and_gradients(&query.as_query(), &candidates_of(&cands), &labels, 0.5, 1.0)
            .expect("valid input");
        for (i, g) in grads.grads.iter().enumerate() {
            prop_assert!(g.is_some(), "parameter {} got no gradient", PARAM_NAMES[i]);
        }
        for id in SPARSE_PARAMS {
            prop_assert!(
                matches!(grads.grads[id.0], Some(Grad::Sparse(_))),
                "{} should have a sparse gradient", PARAM_NAMES[id.0]
            );
        }
        check_gradients(&model.params, &f, 1e-2, 24)?;
    }
}

proptest! {
    #![proptest_config(config(6))]

    /// Lists whose candidates all use one path (only embeddings, only text) take
    /// their encodings as a column range instead of pooling; gradients still match.
    #[test]
    fn single_path_list_gradient_matches_finite_differences(seed in any::<u64>(), text in any::<bool>()) {
        let cfg = tiny_config(6);
        let mut r = rng(seed);
        let mut model = Model::new(cfg, seed).expect("model");
        for t in &mut model.params {
            for v in t.iter_mut() {
                *v += r.random_range(-0.3..0.3);
            }
        }
        let query = random_query(&mut r, &cfg);
        let mut cands = random_candidates(&mut r, &cfg, 5);
        for c in &mut cands {
            if text {
                c.embedding = None;
                if c.tokens.is_empty() {
                    c.tokens = random_tokens(&mut r, 5, cfg.hash_buckets);
                }
            } else {
                c.tokens.clear();
                c.embedding.get_or_insert_with(|| random_vec(&mut r, cfg.native_dim));
            }
        }
        let labels: Vec<f32> = (0..5).map(|_| r.random_range(-0.5..1.0)).collect();
        let f = |t: &mut Tape<'_>| {
            let c = candidates_of(&cands);
            let z = model.forward(t, &query.as_query(), &c).expect("valid input");
            t.listnet_loss(z, &labels, 0.5, 1.0)
        };
        check_gradients(&model.params, &f, 1e-2, 24)?;
    }
}

/// Each logit belongs to its candidate: reversing a list reverses its logits, for
/// mixed lists and for lists whose candidates all use one path (those take their
/// encodings as a column range rather than through pooling).
#[test]
fn reversing_a_list_reverses_its_logits() {
    let cfg = tiny_config(6);
    for seed in 0..4 {
        let model = generic_model(cfg, seed);
        let mut r = rng(seed);
        let query = random_query(&mut r, &cfg);
        let mixed = random_candidates(&mut r, &cfg, 7);
        let mut emb_only = mixed.clone();
        let mut text_only = mixed.clone();
        for c in &mut emb_only {
            c.tokens.clear();
            c.embedding.get_or_insert_with(|| random_vec(&mut r, cfg.native_dim));
        }
        for c in &mut text_only {
            c.embedding = None;
            if c.tokens.is_empty() {
                c.tokens = random_tokens(&mut r, 5, cfg.hash_buckets);
            }
        }
        for (kind, list) in [("mixed", mixed), ("embeddings only", emb_only), ("text only", text_only)] {
            let forward = model.score(&query.as_query(), &candidates_of(&list)).expect("score");
            let mut reversed_list = list.clone();
            reversed_list.reverse();
            let mut backward = model.score(&query.as_query(), &candidates_of(&reversed_list)).expect("score");
            backward.reverse();
            for (i, (a, b)) in forward.iter().zip(&backward).enumerate() {
                assert!((a - b).abs() <= 1e-5 * (1.0 + a.abs()), "{kind}, seed {seed}, candidate {i}: {a} vs {b}");
            }
        }
    }
}

/// Adds N(0, σ²)-ish noise to every tensor: a model with "generic" weights, as after training.
fn generic_model(cfg: ModelConfig, seed: u64) -> Model {
    let mut model = Model::new(cfg, seed).expect("model");
    let mut r = rng(seed ^ 0xabcdef);
    for t in &mut model.params {
        for v in t.iter_mut() {
            *v += r.random_range(-0.7..0.7);
        }
    }
    model
}

fn ranking(scores: &[f32]) -> Vec<u32> {
    crate::fusion::ranks_from_scores(scores)
}

/// Each input (every raw signal, every session signal, query text and
/// embedding, candidate text and embedding) can change the ranking of a list.
#[test]
fn every_input_can_change_a_ranking() {
    let cfg = ModelConfig {
        native_dim: 8,
        dim: 8,
        value_dim: 4,
        hash_buckets: 256,
        project_slots: 8,
        ..ModelConfig::default()
    };
    let model = generic_model(cfg, 7);
    let mut r = rng(11);
    let n = 40;
    let query = random_query(&mut r, &cfg);
    let mut session = query.session.clone();
    session.project = Some("alpha".into());
    session.gap_hours = Some(3.0);
    let query = OwnedQuery { session, ..query };
    let mut cands = random_candidates(&mut r, &cfg, n);
    // Make query tokens overlap with candidates so the exact-match term is active.
    for (i, c) in cands.iter_mut().enumerate() {
        if !c.tokens.is_empty() && i % 2 == 0 {
            c.tokens[0] = query.tokens[i % query.tokens.len()];
        }
    }
    let base = model.score(&query.as_query(), &candidates_of(&cands)).expect("score");
    let base_rank = ranking(&base);

    let changes = |q: &OwnedQuery, c: &[OwnedCandidate]| -> bool {
        let s = model.score(&q.as_query(), &candidates_of(c)).expect("score");
        ranking(&s) != base_rank
    };

    // Per-candidate raw signals: redraw one field for every candidate.
    type Setter = fn(&mut CandidateSignals, &mut ChaCha8Rng);
    let setters: [(&str, Setter); 32] = [
        ("age_days", |s, r| s.age_days = r.random_range(0.0..400.0)),
        ("importance", |s, r| s.importance = r.random_range(0.0..1.0)),
        ("access_count", |s, r| s.access_count = r.random_range(0..100)),
        ("pinned", |s, _| s.pinned = !s.pinned),
        ("has_embedding", |s, _| s.has_embedding = !s.has_embedding),
        ("superseded", |s, _| s.superseded = !s.superseded),
        ("bm25_score", |s, r| s.bm25_score = Some(r.random_range(0.0..12.0))),
        ("bm25_rank", |s, r| s.bm25_rank = Some(r.random_range(1..40))),
        ("effective_score", |s, r| s.effective_score = r.random_range(0.0..1.0)),
        ("project_match", |s, _| s.project_match = !s.project_match),
        ("tag_overlap", |s, r| s.tag_overlap = r.random_range(0.0..1.0)),
        ("times_injected", |s, r| s.times_injected = r.random_range(0..50)),
        ("times_useful", |s, r| s.times_useful = r.random_range(0.0..30.0)),
        ("lexical_overlap", |s, r| s.lexical_overlap = r.random_range(0.0..1.0)),
        ("neighbor_score", |s, r| s.neighbor_score = r.random_range(0.0..1.0)),
        ("session_match", |s, r| s.session_match = r.random_range(0.0..1.0)),
        ("content_terms", |s, r| s.content_terms = r.random_range(0..80)),
        ("follows_hit", |s, r| s.follows_hit = r.random_range(0.0..1.0)),
        ("precedes_hit", |s, r| s.precedes_hit = r.random_range(0.0..1.0)),
        ("time_match", |s, r| s.time_match = r.random_range(0.0..1.0)),
        ("context_before", |s, r| s.context_before = r.random_range(0.0..12.0)),
        ("context_after", |s, r| s.context_after = r.random_range(0.0..12.0)),
        ("context_wide", |s, r| s.context_wide = r.random_range(0.0..12.0)),
        ("is_question", |s, r| s.is_question = f32::from(u8::from(r.random_bool(0.5)))),
        ("follows_question", |s, r| s.follows_question = r.random_range(0.0..1.0)),
        ("quantity_match", |s, r| s.quantity_match = f32::from(u8::from(r.random_bool(0.5)))),
        ("proper_nouns", |s, r| s.proper_nouns = r.random_range(0..8)),
        ("states_number", |s, r| s.states_number = f32::from(u8::from(r.random_bool(0.5)))),
        ("states_time", |s, r| s.states_time = f32::from(u8::from(r.random_bool(0.5)))),
        ("first_person", |s, r| s.first_person = f32::from(u8::from(r.random_bool(0.5)))),
        ("date_match", |s, r| s.date_match = f32::from(u8::from(r.random_bool(0.5)))),
        ("graph_score", |s, r| s.graph_score = r.random_range(0.0..1.0)),
    ];
    for (name, set) in setters {
        let mut c2 = cands.clone();
        for c in &mut c2 {
            set(&mut c.signals, &mut r);
        }
        assert!(changes(&query, &c2), "signal {name} does not change the ranking");
    }

    // Session signals, one at a time.
    type SessionSetter = fn(&mut SessionSignals);
    let session_setters: [(&str, SessionSetter); 5] = [
        ("hour", |s| s.hour = (s.hour + 12.0) % 24.0),
        ("weekday", |s| s.weekday = (s.weekday + 3) % 7),
        ("month0", |s| s.month0 = (s.month0 + 6) % 12),
        ("gap_hours", |s| s.gap_hours = Some(400.0)),
        ("project", |s| s.project = Some("beta".into())),
    ];
    for (name, set) in session_setters {
        let mut q2 = query.clone();
        set(&mut q2.session);
        assert!(changes(&q2, &cands), "session {name} does not change the ranking");
    }

    let mut q2 = query.clone();
    q2.tokens = random_tokens(&mut r, 6, cfg.hash_buckets);
    assert!(changes(&q2, &cands), "query text does not change the ranking");
    let mut q2 = query.clone();
    q2.embedding = Some(random_vec(&mut r, cfg.native_dim));
    assert!(changes(&q2, &cands), "query embedding does not change the ranking");
    let mut c2 = cands.clone();
    for c in c2.iter_mut().filter(|c| !c.tokens.is_empty()) {
        c.tokens = random_tokens(&mut r, 5, cfg.hash_buckets);
    }
    assert!(changes(&query, &c2), "candidate text does not change the ranking");
    let mut c2 = cands.clone();
    for c in c2.iter_mut().filter(|c| c.embedding.is_some()) {
        c.embedding = Some(random_vec(&mut r, cfg.native_dim));
    }
    assert!(changes(&query, &c2), "candidate embedding does not change the ranking");
}

/// Regression (peer bug): session-level inputs were dead under the softmax: equal for
/// every candidate, they shifted all logits by the same constant and got zero gradient.
#[test]
fn session_inputs_are_not_dead_under_softmax() {
    let cfg = tiny_config(0);
    let model = Model::new(cfg, 3).expect("model");
    let mut r = rng(5);
    let mut query = random_query(&mut r, &cfg);
    query.session.project = Some("engram".into());
    let cands = random_candidates(&mut r, &cfg, 6);
    let labels = [1.0, 0.0, 0.5, 0.0, 0.2, 0.0];
    let (_, g) = model.loss_and_gradients(&query.as_query(), &candidates_of(&cands), &labels, 0.5, 1.0).expect("grads");
    for id in [P_SESSION, P_PROJECT, P_GATE_SESSION] {
        let norm = g.dense(id, model.params[id.0].shape()).norm();
        assert!(norm > 1e-6, "{} has zero gradient", PARAM_NAMES[id.0]);
    }
    // A session change moves logits by different amounts, not by one constant.
    let base = model.score(&query.as_query(), &candidates_of(&cands)).expect("score");
    let mut q2 = query.clone();
    q2.session.hour = (q2.session.hour + 8.0) % 24.0;
    let moved = model.score(&q2.as_query(), &candidates_of(&cands)).expect("score");
    let deltas: Vec<f32> = base.iter().zip(&moved).map(|(a, b)| b - a).collect();
    let spread = deltas.iter().fold(f32::MIN, |m, &d| m.max(d)) - deltas.iter().fold(f32::MAX, |m, &d| m.min(d));
    assert!(spread > 1e-4, "hour only shifts logits uniformly: {deltas:?}");
}

/// Regression (peer bug): the query was the mean of the candidates' embeddings, leaking
/// labels into the question. Here a candidate's logit does not depend on which other
/// candidates are in the list (with list-relative features held fixed).
#[test]
fn query_is_not_derived_from_the_candidates() {
    let cfg = tiny_config(6);
    let model = Model::new(cfg, 9).expect("model");
    let mut r = rng(2);
    let query = random_query(&mut r, &cfg);
    let mut cands = random_candidates(&mut r, &cfg, 5);
    for c in &mut cands {
        c.signals = CandidateSignals::default();
    }
    let all = model.score(&query.as_query(), &candidates_of(&cands)).expect("score");
    let two = model.score(&query.as_query(), &candidates_of(&cands[..2])).expect("score");
    assert_eq!(&all[..2], &two[..]);
    // And the query does matter.
    let mut q2 = query.clone();
    q2.embedding = Some(random_vec(&mut r, cfg.native_dim));
    let other = model.score(&q2.as_query(), &candidates_of(&cands)).expect("score");
    assert_ne!(all, other);
}

#[test]
fn query_may_lack_text_or_embedding() {
    let cfg = tiny_config(6);
    let model = Model::new(cfg, 1).expect("model");
    let mut r = rng(3);
    let full = random_query(&mut r, &cfg);
    let cands = random_candidates(&mut r, &cfg, 4);
    let c = candidates_of(&cands);
    let text_only = OwnedQuery { embedding: None, ..full.clone() };
    let emb_only = OwnedQuery { tokens: Vec::new(), ..full.clone() };
    let neither = OwnedQuery { tokens: Vec::new(), embedding: None, ..full.clone() };
    for q in [&full, &text_only, &emb_only, &neither] {
        let s = model.score(&q.as_query(), &c).expect("score");
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn errors_name_the_input() {
    let cfg = tiny_config(6);
    let model = Model::new(cfg, 1).expect("model");
    let mut r = rng(4);
    let q = random_query(&mut r, &cfg);
    let mut cands = random_candidates(&mut r, &cfg, 3);
    let err = |q: &OwnedQuery, c: &[OwnedCandidate]| {
        model.score(&q.as_query(), &candidates_of(c)).expect_err("must fail").to_string()
    };
    cands[2] = OwnedCandidate::default();
    assert_eq!(err(&q, &cands), "candidate 2 has neither text tokens nor an embedding");
    cands[2].embedding = Some(vec![0.0; 5]);
    assert_eq!(err(&q, &cands), "candidate 2 embedding: expected 6 values, got 5");
    cands[2].embedding = Some(vec![0.0, 1.0, f32::NAN, 0.0, 0.0, 0.0]);
    assert_eq!(err(&q, &cands), "candidate 2 embedding [2] is not finite (NaN)");
    cands[2].embedding = None;
    cands[2].tokens = vec![64];
    assert_eq!(err(&q, &cands), "candidate 2 tokens: token id 64 is not below the model's 64 hash buckets");
    cands[2].tokens = vec![1];
    let mut q2 = q.clone();
    q2.embedding = Some(vec![1.0; 7]);
    assert_eq!(err(&q2, &cands), "query embedding: expected 6 values, got 7");
    cands[1].signals.effective_score = f32::INFINITY;
    assert!(err(&q, &cands).contains("candidate 1 signal effective_score"));
    // Labels must match the list.
    let e = model
        .loss_and_gradients(&q.as_query(), &candidates_of(&cands[..1]), &[1.0, 0.0], 0.5, 1.0)
        .expect_err("label count")
        .to_string();
    assert_eq!(e, "labels: expected 1 values, got 2");
    assert!(Model::new(ModelConfig { dim: 0, ..cfg }, 1).is_err());
}

#[test]
fn same_seed_same_weights_and_scores() {
    let cfg = tiny_config(6);
    let a = Model::new(cfg, 42).expect("model");
    let b = Model::new(cfg, 42).expect("model");
    let c = Model::new(cfg, 43).expect("model");
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut r = rng(8);
    let q = random_query(&mut r, &cfg);
    let cands = random_candidates(&mut r, &cfg, 7);
    let sa = a.score(&q.as_query(), &candidates_of(&cands)).expect("score");
    let sb = b.score(&q.as_query(), &candidates_of(&cands)).expect("score");
    assert_eq!(sa.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), sb.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
}

#[test]
fn model_is_send_sync_clone_and_sized_as_the_seed_says() {
    fn assert_traits<T: Send + Sync + Clone + 'static>() {}
    assert_traits::<Model>();
    let m = Model::new(ModelConfig::default(), 0).expect("model");
    // Seed 002 budget ≈ 1.11M; ours adds the lexical weights (16,384) and the session gate.
    let n = m.param_count();
    assert!((1_100_000..1_200_000).contains(&n), "{n} parameters");
    assert_eq!(m.tensor("hash_embed").map(|t| t.shape()), Some((64, 16_384)));
}

#[test]
fn empty_list_scores_empty() {
    let cfg = tiny_config(0);
    let model = Model::new(cfg, 1).expect("model");
    let q = random_query(&mut rng(1), &cfg);
    assert_eq!(model.score(&q.as_query(), &[]).expect("score"), Vec::<f32>::new());
}

/// Regression (peer bug): LayerNorm had no learnable gain or bias. Here both paths have
/// their own, they receive gradients, and they change the scores.
#[test]
fn layer_norms_have_learnable_gain_and_bias_per_path() {
    let cfg = tiny_config(6);
    let model = Model::new(cfg, 5).expect("model");
    let mut r = rng(6);
    let query = random_query(&mut r, &cfg);
    let cands = random_candidates(&mut r, &cfg, 6);
    let labels = [1.0, 0.0, 0.0, 0.5, 0.0, 0.0];
    let (_, g) = model.loss_and_gradients(&query.as_query(), &candidates_of(&cands), &labels, 0.5, 1.0).expect("grads");
    let base = model.score(&query.as_query(), &candidates_of(&cands)).expect("score");
    for id in [P_LNE_G, P_LNE_B, P_LNT_G, P_LNT_B] {
        let grad = g.dense(id, model.params[id.0].shape());
        assert!(grad.norm() > 1e-6, "{} gets no gradient", PARAM_NAMES[id.0]);
        let mut m2 = model.clone();
        m2.params[id.0][0] += 0.5;
        let moved = m2.score(&query.as_query(), &candidates_of(&cands)).expect("score");
        assert_ne!(base, moved, "{} does not change scores", PARAM_NAMES[id.0]);
    }
    assert_ne!(model.params[P_LNE_G.0].as_ptr(), model.params[P_LNT_G.0].as_ptr());
}
