//! Pure, deterministic ranking brain of Engram: features, model, training, metrics.

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
pub mod tokenizer;
pub mod train;

pub use error::Error;

#[cfg(test)]
mod test_util;
