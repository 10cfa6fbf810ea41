//! Pure, deterministic ranking brain of Engram: features, model, training, checkpoints, ranking pieces and metrics.
//!
//! This crate decides how relevant each candidate memory is to a query (a
//! prompt or a session-context text, and/or its embedding) in a session. It is
//! used by the scorer (serving), the trainer (training, canary gates) and the
//! LoCoMo evaluation, which need nothing else.
//!
//! **Architecture invariants.** No IO, no clock, no environment, no threads:
//! time budgets come in as a caller closure, randomness only from seeded
//! [`rand_chacha::ChaCha8Rng`]. The same seed and the same data give
//! bit-identical weights and scores (on the same machine and build: the f32
//! GEMM may pick different SIMD kernels on different CPUs). No ML framework.
//!
//! # Codemap
//!
//! | module | what it holds |
//! |---|---|
//! | [`tokenizer`] | word-level HashTrick: [`tokenizer::tokenize`], [`tokenizer::token_ids`] (FNV-1a 64, 16,384 buckets) |
//! | [`features`] | [`features::CandidateSignals`], [`features::SessionSignals`] and their encoding |
//! | [`model`] | [`model::ModelConfig`], [`model::Model`] (`new`, `score`, `loss_and_gradients`), [`model::Query`], [`model::Candidate`] |
//! | [`autograd`] | the tape of whole-tensor ops (forward and backward side by side), sparse gradients |
//! | [`train`] | [`train::train`], [`train::Sample`], [`train::TrainConfig`], [`train::AdamState`], [`train::TrainReport`] |
//! | [`checkpoint`] | [`checkpoint::encode`] / [`checkpoint::decode`] of format v1 with a blake3 checksum |
//! | [`signet`] | the peer's `SGPT` v1 reader and forward pass, for comparisons |
//! | [`baseline`] | [`baseline::effective_score`] (pinned → 1, else importance·0.95^age) |
//! | [`fusion`] | [`fusion::rrf`], [`fusion::ranks_from_scores`], [`fusion::fuse`] |
//! | [`diversity`] | [`diversity::apply`] (0.85 / 0.5 / 0.1 topic decay) |
//! | [`explore`] | [`explore::pick`] (largest rank disagreement, caller's draw) |
//! | [`metrics`] | NDCG@k, DCG@k, recall@k, MRR |
//!
//! # Serving
//!
//! ```
//! use predictor::features::{CandidateSignals, SessionSignals};
//! use predictor::model::{Candidate, Model, ModelConfig, Query};
//! use predictor::tokenizer::token_ids;
//!
//! let config = ModelConfig { native_dim: 0, ..ModelConfig::default() };
//! let model = Model::new(config, 42)?;
//! let session = SessionSignals { hour: 9.5, weekday: 0, month0: 5, gap_hours: Some(14.0),
//!                                project: Some("engram".into()) };
//! let q = token_ids("why does parseConfig fail on empty files?", config.hash_buckets);
//! let texts = ["parse_config returns Err on empty input", "the build uses two cores"];
//! let toks: Vec<Vec<u32>> = texts.iter().map(|t| token_ids(t, config.hash_buckets)).collect();
//! let candidates: Vec<Candidate> = toks
//!     .iter()
//!     .map(|t| Candidate { tokens: t, embedding: None, signals: CandidateSignals::default() })
//!     .collect();
//! let logits = model.score(&Query { tokens: &q, embedding: None, session: &session }, &candidates)?;
//! assert_eq!(logits.len(), 2); // higher = more relevant
//! # Ok::<(), predictor::Error>(())
//! ```
//!
//! [`model::Model`] is immutable while serving and `Send + Sync + Clone`:
//! publish it behind an `Arc`, train a clone on another thread with
//! [`train::train`], gate it, then swap the `Arc`. Persist it with
//! [`checkpoint::encode`] (the caller writes the bytes atomically: temp file,
//! fsync, rename) and load it with [`checkpoint::decode`], which verifies the
//! checksum and the config. Fine-tuning from base weights is: decode the base
//! checkpoint, then train.

#![warn(missing_docs)]

pub mod autograd;
pub mod baseline;
pub mod checkpoint;
pub mod diversity;
pub mod error;
pub mod explore;
pub mod features;
pub mod fusion;
pub mod metrics;
pub mod model;
pub mod signet;
pub mod stem;
pub mod tokenizer;
pub mod train;

pub use error::Error;

#[cfg(test)]
mod test_util;
