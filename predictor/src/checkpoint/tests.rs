//! Checkpoint tests: round trips, corruption, config checks, the golden v1 file, and Signet's SGPT files.

use super::*;
use crate::model::{OwnedCandidate, OwnedQuery};
use crate::signet::{SignetCandidate, decode_sgpt, signet_tokenize};
use crate::test_util::{random_candidates, random_query, rng, tiny_config};
use crate::train::{Sample, TrainConfig, train};

/// The tiny model of the golden file: seed 7, one training epoch on a fixed list.
fn golden_checkpoint() -> Checkpoint {
    let cfg = ModelConfig {
        native_dim: 3,
        dim: 2,
        value_dim: 2,
        hash_buckets: 8,
        project_slots: 2,
        ..ModelConfig::default()
    };
    let mut model = Model::new(cfg, 7).expect("model");
    let mut opt = AdamState::new(&model);
    let sample = Sample {
        query: OwnedQuery {
            tokens: vec![1, 2, 3],
            embedding: Some(vec![0.5, -0.25, 1.0]),
            session: crate::features::SessionSignals {
                hour: 9.5,
                weekday: 2,
                month0: 4,
                gap_hours: Some(12.0),
                project: Some("engram".into()),
            },
        },
        candidates: vec![
            OwnedCandidate { tokens: vec![1, 5], ..OwnedCandidate::default() },
            OwnedCandidate { tokens: vec![], embedding: Some(vec![1.0, 0.0, -1.0]), ..OwnedCandidate::default() },
            OwnedCandidate { tokens: vec![3, 7], embedding: Some(vec![0.0, 2.0, 0.5]), ..OwnedCandidate::default() },
        ],
        labels: vec![1.0, 0.0, -0.3],
        weight: 1.0,
    };
    let tc = TrainConfig { epochs: 1, batch_size: 1, ..TrainConfig::default() };
    train(&mut model, &mut opt, std::slice::from_ref(&sample), &[], &tc, &mut || false).expect("train");
    Checkpoint {
        flags: Flags { pretrained_base: false, fine_tuned: true },
        model,
        optimizer: Some(opt),
        meta: TrainingMeta {
            model_version: 3,
            steps: 1,
            trained_lists: 1,
            timestamp_ms: 1_767_225_600_000,
            notes: "golden v1".into(),
        },
    }
}

const GOLDEN_V1: &[u8] = include_bytes!("../../tests/fixtures/checkpoint_v1_tiny.bin");

/// Regenerates the golden file: `cargo test -p predictor write_golden_v1 -- --ignored`.
/// Only ever run it for a new format version's file; v1's must never change.
#[test]
#[ignore = "writes the golden fixture"]
fn write_golden_v1() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/checkpoint_v1_tiny.bin");
    std::fs::write(path, encode(&golden_checkpoint())).expect("write fixture");
}

#[test]
fn golden_v1_still_loads_and_is_widened_to_todays_features() {
    let c = decode(GOLDEN_V1, None).expect("golden v1 decodes");
    assert_eq!(c.meta.model_version, 3);
    assert_eq!(c.meta.notes, "golden v1");
    assert_eq!(c.meta.timestamp_ms, 1_767_225_600_000);
    assert!(c.flags.fine_tuned && !c.flags.pretrained_base);
    assert_eq!(c.model.config().hash_buckets, 8);
    let opt = c.optimizer.as_ref().expect("optimizer state");
    assert_eq!(opt.step, 1);
    // Written with 19 candidate features: the gate keeps its rows and gains
    // zero rows for the features added since, so it scores as it did.
    const V1_FEATURES: usize = 19;
    assert_eq!(c.model.config().features, NUM_FEATURES);
    let value_dim = c.model.config().value_dim;
    for name in ["gate", "gate_session"] {
        let t = c.model.tensor(name).expect("gate tensor");
        assert_eq!(t.nrows(), value_dim + NUM_FEATURES);
        assert!(t.rows(value_dim + V1_FEATURES, NUM_FEATURES - V1_FEATURES).iter().all(|&x| x == 0.0));
    }
    let prior = c.model.tensor("gate").expect("gate")
        [(value_dim + crate::features::feature_index("bm25_norm").expect("name"), 0)];
    assert_eq!(prior, 1.0, "the stored rows are kept as written");
    // Written before the feature MLP: it is added with a zero output layer
    // (inert until trained) and moments of zero.
    let out = c.model.tensor("feature_out").expect("feature_out");
    assert!(out.iter().all(|&x| x == 0.0));
    let hidden = c.model.tensor("feature_hidden").expect("feature_hidden");
    assert_eq!(hidden.shape(), (crate::model::FEATURE_HIDDEN, 1 + NUM_FEATURES));
    assert!(hidden.iter().any(|&x| x != 0.0), "hidden weights must not start dead");
    assert!(opt.m[NUM_PARAMS - 1].iter().all(|&x| x == 0.0));
    // A checkpoint of today's layout round-trips byte for byte.
    assert_eq!(decode(&encode(&c), None).map(|d| encode(&d)).expect("round trip"), encode(&c));
    // Its weights still score (the layout maps onto today's tensors).
    let q = crate::model::Query {
        tokens: &[1, 2],
        embedding: Some(&[0.5, -0.25, 1.0]),
        session: &crate::features::SessionSignals::default(),
    };
    let cands = [crate::model::Candidate {
        tokens: &[1, 5],
        embedding: None,
        signals: crate::features::CandidateSignals::default(),
    }];
    assert!(c.model.score(&q, &cands).expect("score")[0].is_finite());
}

fn sample_checkpoint(with_opt: bool) -> Checkpoint {
    let model = Model::new(tiny_config(6), 3).expect("model");
    let optimizer = with_opt.then(|| {
        let mut o = AdamState::new(&model);
        o.step = 17;
        o.m[0][(0, 0)] = 0.25;
        o.v[13][(0, 5)] = 1.5;
        o.col_steps[3][7] = 4;
        o
    });
    Checkpoint {
        flags: Flags { pretrained_base: true, fine_tuned: false },
        model,
        optimizer,
        meta: TrainingMeta {
            model_version: 12,
            steps: 3400,
            trained_lists: 900,
            timestamp_ms: 1_700_000_000_123,
            notes: "base model".into(),
        },
    }
}

#[test]
fn round_trip_is_exact_with_and_without_optimizer_state() {
    for with_opt in [true, false] {
        let c = sample_checkpoint(with_opt);
        let bytes = encode(&c);
        let back = decode(&bytes, Some(c.model.config())).expect("decode");
        assert_eq!(back, c);
        assert_eq!(encode(&back), bytes);
    }
}

/// Regression (peer bug): a loaded checkpoint reported model_version = format version (1)
/// and "untrained". Here the metadata comes back as saved.
#[test]
fn loaded_checkpoint_keeps_its_model_version_and_history() {
    let c = sample_checkpoint(true);
    let back = decode(&encode(&c), None).expect("decode");
    assert_eq!(back.meta.model_version, 12);
    assert_eq!(back.meta.steps, 3400);
    assert_eq!(back.meta.trained_lists, 900);
    assert_eq!(back.optimizer.map(|o| o.step), Some(17));
}

/// Regression (peer bug): the config JSON was parsed but never compared.
#[test]
fn a_different_config_is_refused_naming_each_field() {
    let c = sample_checkpoint(false);
    let bytes = encode(&c);
    let expected = ModelConfig { dim: 16, hash_buckets: 16_384, ..*c.model.config() };
    let e = decode(&bytes, Some(&expected)).expect_err("mismatch");
    assert_eq!(
        e.to_string(),
        "checkpoint config differs from the expected one: dim (expected 16, found 8), \
         hash_buckets (expected 16384, found 64)"
    );
}

#[test]
/// Regression (peer bug): checkpoints were written in place, one syscall per f64, with no
/// checksum, so a crash left a torn file that loaded. Any torn or flipped byte is refused.
fn corruption_and_torn_writes_are_detected() {
    let bytes = encode(&sample_checkpoint(true));
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x40;
    assert!(matches!(decode(&flipped, None), Err(Error::ChecksumMismatch { .. })));
    for cut in [0, 5, 11, 40, bytes.len() / 3, bytes.len() - 33, bytes.len() - 1] {
        assert!(decode(&bytes[..cut], None).is_err(), "truncated at {cut}");
    }
    let e = decode(b"NOTACKPTxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", None).expect_err("magic").to_string();
    assert!(e.starts_with("checkpoint: bad magic at byte 0"), "{e}");
    let mut v2 = bytes.clone();
    v2[8] = 2;
    let e = decode(&v2, None).expect_err("version").to_string();
    assert!(e.contains("version 2 is not readable"), "{e}");
    let e = decode(b"SGPT\x01\0\0\0", None).expect_err("sgpt").to_string();
    assert!(e.contains("decode_sgpt"), "{e}");
}

#[test]
fn a_structural_error_names_the_offset() {
    // A file with a valid checksum whose tensor count is wrong.
    let c = sample_checkpoint(false);
    let mut body = encode(&c);
    body.truncate(body.len() - 32);
    let le = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let config_len = le(&body, 16) as usize;
    let meta_at = 20 + config_len;
    let meta_len = le(&body, meta_at) as usize;
    let count_at = meta_at + 4 + meta_len;
    body[count_at] = 13;
    let hash = blake3::hash(&body);
    body.extend_from_slice(hash.as_bytes());
    let e = decode(&body, None).expect_err("count").to_string();
    assert_eq!(
        e,
        format!(
            "checkpoint: bad tensor count at byte {}: 13 tensors, format v1 has 16 (or 14 before the feature MLP)",
            count_at + 4
        )
    );
}

#[test]
fn scores_survive_the_round_trip_bit_for_bit() {
    let c = sample_checkpoint(false);
    let back = decode(&encode(&c), None).expect("decode");
    let mut r = rng(1);
    let cfg = *c.model.config();
    let q = random_query(&mut r, &cfg);
    let cands = random_candidates(&mut r, &cfg, 6);
    let cs: Vec<_> = cands.iter().map(OwnedCandidate::as_candidate).collect();
    let a = c.model.score(&q.as_query(), &cs).expect("score");
    let b = back.model.score(&q.as_query(), &cs).expect("score");
    assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
}

// ---------------------------------------------------------------- Signet SGPT

struct Sgpt {
    native: usize,
    internal: usize,
    value: usize,
    buckets: usize,
    slots: usize,
    tensors: Vec<Vec<f64>>,
}

/// A synthetic SGPT v1 file built byte by byte as reference §8 describes.
fn synthetic_sgpt() -> (Sgpt, Vec<u8>) {
    let (native, internal, value, features, buckets, slots) = (3, 4, 2, 3, 8, 2);
    let gate = value + features + internal + 1;
    let lens = [
        internal * native,
        internal * internal,
        internal * internal,
        value * internal,
        gate,
        buckets * internal,
        slots * internal,
    ];
    let tensors: Vec<Vec<f64>> = lens
        .iter()
        .enumerate()
        .map(|(t, &n)| (0..n).map(|i| (((i * 7 + t * 13) % 11) as f64 - 5.0) / 8.0).collect())
        .collect();
    let mut b = Vec::new();
    b.extend_from_slice(b"SGPT");
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    let cfg = format!(
        "{{\"native_dim\":{native},\"internal_dim\":{internal},\"value_dim\":{value},\
         \"extra_features\":{features},\"hash_buckets\":{buckets},\"project_slots\":{slots}}}"
    );
    b.extend_from_slice(&(cfg.len() as u32).to_le_bytes());
    b.extend_from_slice(cfg.as_bytes());
    b.extend_from_slice(&7u32.to_le_bytes());
    for t in &tensors {
        b.extend_from_slice(&(t.len() as u32).to_le_bytes());
        for v in t {
            b.extend_from_slice(&v.to_le_bytes());
        }
    }
    (Sgpt { native, internal, value, buckets, slots, tensors }, b)
}

/// Naive re-implementation of reference §3 with plain loops over the row-major tensors.
fn naive_logit(s: &Sgpt, ctx: &[f64], e_in: Result<&[f64], &str>, f: &[f64], slot: usize) -> f64 {
    let t = &s.tensors;
    let matvec = |m: &[f64], rows: usize, cols: usize, x: &[f64]| -> Vec<f64> {
        (0..rows).map(|r| (0..cols).map(|c| m[r * cols + c] * x[c]).sum()).collect()
    };
    let ln = |x: Vec<f64>| -> Vec<f64> {
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        x.iter().map(|v| (v - mean) / (var + 1e-5).sqrt()).collect()
    };
    let q = matvec(&t[1], s.internal, s.internal, &ln(matvec(&t[0], s.internal, s.native, ctx)));
    let e = match e_in {
        Ok(emb) => ln(matvec(&t[0], s.internal, s.native, emb)),
        Err(text) => {
            let toks = signet_tokenize(text);
            let mut sum = vec![0.0; s.internal];
            for tok in &toks {
                let row = (crate::tokenizer::fnv1a64(tok.as_bytes()) % s.buckets as u64) as usize;
                for (j, x) in sum.iter_mut().enumerate() {
                    *x += t[5][row * s.internal + j];
                }
            }
            ln(sum.iter().map(|v| v / toks.len() as f64).collect())
        }
    };
    let k = matvec(&t[2], s.internal, s.internal, &e);
    let v = matvec(&t[3], s.value, s.internal, &e);
    let p = &t[6][(slot % s.slots) * s.internal..(slot % s.slots + 1) * s.internal];
    let mut x = v;
    x.extend_from_slice(f);
    x.extend_from_slice(p);
    x.push(1.0);
    let sim: f64 = q.iter().zip(&k).map(|(a, b)| a * b).sum::<f64>() / (s.internal as f64).sqrt();
    sim + t[4].iter().zip(&x).map(|(g, v)| g * v).sum::<f64>()
}

#[test]
fn reads_signet_sgpt_v1_and_scores_like_signet() {
    let (s, bytes) = synthetic_sgpt();
    let m = decode_sgpt(&bytes).expect("sgpt");
    assert_eq!(m.config.native_dim, 3);
    assert_eq!(m.param_count(), s.tensors.iter().map(Vec::len).sum::<usize>());
    assert_eq!(m.hash[(1, 2)], s.tensors[5][s.internal + 2]);
    let ctx = [0.3, -1.0, 0.7];
    let emb = [1.0, 0.5, -0.5];
    let short = [1.0, 2.0];
    let f1 = [0.1, 0.2, 0.3];
    let cands = [
        SignetCandidate { embedding: Some(&emb), text: None, features: Some(&f1) },
        // A wrong-length embedding falls back to the text path, as in Signet.
        SignetCandidate { embedding: Some(&short), text: Some("Fix parse_json in src/Lib.rs"), features: None },
        SignetCandidate { embedding: None, text: Some("fix PARSE_JSON"), features: None },
    ];
    let slot = 3;
    let z = m.logits(&ctx, &cands, slot).expect("logits");
    let zeros = [0.0; 3];
    let expect = [
        naive_logit(&s, &ctx, Ok(&emb), &f1, slot),
        naive_logit(&s, &ctx, Err("Fix parse_json in src/Lib.rs"), &zeros, slot),
        naive_logit(&s, &ctx, Err("fix PARSE_JSON"), &zeros, slot),
    ];
    for (a, b) in z.iter().zip(&expect) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
    let p = m.scores(&ctx, &cands, slot).expect("scores");
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert_eq!(signet_tokenize("Fix parse_json in src/Lib.rs"), vec!["Fix", "parse_json", "in", "src", "Lib", "rs"]);
    let none = [SignetCandidate::default()];
    assert!(m.logits(&ctx, &none, 0).is_err());
    assert!(m.logits(&[1.0], &cands, 0).is_err());
}

#[test]
fn malformed_sgpt_files_are_rejected_with_offsets() {
    let (_, bytes) = synthetic_sgpt();
    let e = decode_sgpt(&bytes[..bytes.len() - 3]).expect_err("truncated").to_string();
    assert!(e.contains("SGPT tensor P data") && e.contains("truncated"), "{e}");
    let mut extra = bytes.clone();
    extra.push(0);
    assert!(decode_sgpt(&extra).is_err());
    let mut wrong = bytes.clone();
    wrong[0] = b'X';
    assert!(decode_sgpt(&wrong).expect_err("magic").to_string().contains("SGPT magic"));
}

#[test]
fn sgpt_files_are_written_byte_for_byte_as_signet_writes_them() {
    use crate::signet::{SignetConfig, SignetModel, encode_sgpt};
    // The file built by hand from reference §8 comes back out identical.
    let (_, bytes) = synthetic_sgpt();
    assert_eq!(encode_sgpt(&decode_sgpt(&bytes).expect("sgpt")), bytes);
    // Signet's default shape: 8,881,199 bytes with a 111-byte config (reference §8).
    let m = SignetModel::seeded(SignetConfig::with_native_dim(768), 5);
    let out = encode_sgpt(&m);
    assert_eq!(out.len(), 8_881_199);
    assert_eq!(u32::from_le_bytes(out[12..16].try_into().expect("4 bytes")), 111);
    assert_eq!(m.param_count(), 1_110_130);
    let back = decode_sgpt(&out).expect("round trip");
    assert_eq!(back, m);
    assert_eq!(SignetModel::seeded(SignetConfig::with_native_dim(768), 5), m, "seeded weights are deterministic");
}
