//! Pure, deterministic ranking brain of Engram: features, model, training, metrics.

pub mod autograd;
pub mod error;
pub mod features;
pub mod tokenizer;

pub use error::Error;

#[cfg(test)]
mod test_util;
