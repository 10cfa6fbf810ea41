//! The crate's single error type: every failure names the input, the sizes or the byte offset involved.

use std::fmt;

/// Everything that can go wrong in this crate.
///
/// Messages always say *which* input is wrong and *why* (expected vs actual
/// sizes, the offending value, the byte offset in a checkpoint), so a caller
/// can log them as they are.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A vector or matrix does not have the size the model expects.
    #[error("{input}: expected {expected} values, got {actual}")]
    DimensionMismatch {
        /// Which input, e.g. `candidate 3 embedding`.
        input: String,
        /// The size the model expects.
        expected: usize,
        /// The size that was given.
        actual: usize,
    },
    /// A NaN or infinite number was given.
    #[error("{input} is not finite ({value})")]
    NonFinite {
        /// Which input, e.g. `candidate 0 signal importance`.
        input: String,
        /// The offending value.
        value: f32,
    },
    /// A number is finite but outside the range the input allows.
    #[error("{input} is out of range: {why}")]
    OutOfRange {
        /// Which input.
        input: String,
        /// The allowed range and the value given.
        why: String,
    },
    /// A candidate has no text tokens and no embedding, so it cannot be encoded.
    #[error("candidate {index} has neither text tokens nor an embedding")]
    EmptyCandidate {
        /// Position of the candidate in the list.
        index: usize,
    },
    /// A token id is not a valid hash bucket for this model.
    #[error("{input}: token id {token} is not below the model's {buckets} hash buckets")]
    TokenOutOfRange {
        /// Which input, e.g. `query tokens`.
        input: String,
        /// The token id given.
        token: u32,
        /// The model's bucket count.
        buckets: u32,
    },
    /// A model configuration that cannot be built.
    #[error("invalid model config: {0}")]
    InvalidConfig(String),
    /// A training configuration that cannot be used.
    #[error("invalid training config: {0}")]
    InvalidTrainConfig(String),
    /// A training or validation sample is malformed.
    #[error("{split} sample {index}: {source}")]
    InvalidSample {
        /// `train` or `valid`.
        split: &'static str,
        /// Position of the sample in its split.
        index: usize,
        /// What is wrong with it.
        source: Box<Error>,
    },
    /// The optimizer state does not belong to the model being trained.
    #[error("optimizer state does not match the model: {0}")]
    OptimizerMismatch(String),
    /// A checkpoint is malformed: where in the file, what was being read and why it failed.
    #[error("checkpoint: bad {what} at byte {offset}: {why}")]
    Checkpoint {
        /// Byte offset at which the problem was found.
        offset: usize,
        /// What was being read (`magic`, `tensor hash`, ...).
        what: String,
        /// Why it is rejected.
        why: String,
    },
    /// The checkpoint's checksum does not match its contents.
    #[error(
        "checkpoint: blake3 checksum mismatch (stored {stored}, computed {computed}); the file is corrupt or truncated"
    )]
    ChecksumMismatch {
        /// Checksum stored in the file (hex).
        stored: String,
        /// Checksum of the bytes read (hex).
        computed: String,
    },
    /// The checkpoint was written for a different model configuration.
    #[error("checkpoint config differs from the expected one: {}", ConfigDiffs(.differences))]
    ConfigMismatch {
        /// One entry per differing field.
        differences: Vec<ConfigDifference>,
    },
}

/// One field that differs between a checkpoint's config and the expected config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDifference {
    /// Field name, as in [`crate::model::ModelConfig`].
    pub field: &'static str,
    /// Value the caller expects.
    pub expected: String,
    /// Value found in the checkpoint.
    pub found: String,
}

struct ConfigDiffs<'a>(&'a [ConfigDifference]);

impl fmt::Display for ConfigDiffs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} (expected {}, found {})", d.field, d.expected, d.found)?;
        }
        Ok(())
    }
}

/// Returns an error if `value` is NaN or infinite.
pub(crate) fn check_finite(input: impl FnOnce() -> String, value: f32) -> Result<(), Error> {
    if value.is_finite() { Ok(()) } else { Err(Error::NonFinite { input: input(), value }) }
}

/// Returns an error naming the first NaN or infinite entry of `values`.
pub(crate) fn check_all_finite(input: impl Fn() -> String, values: &[f32]) -> Result<(), Error> {
    // A value is NaN or infinite exactly when its exponent bits are all ones, i.e.
    // when adding one to the exponent carries into the sign bit. The branch-free
    // integer OR reduction over independent lanes vectorizes (an f32 sum would not).
    const LANES: usize = 16;
    let carry = |v: &f32| (v.to_bits() & 0x7f80_0000).wrapping_add(0x0080_0000);
    let mut lanes = [0u32; LANES];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder().iter().fold(0u32, |acc, v| acc | carry(v));
    for chunk in chunks {
        for (l, v) in lanes.iter_mut().zip(chunk) {
            *l |= carry(v);
        }
    }
    if lanes.iter().fold(tail, |acc, &l| acc | l) & 0x8000_0000 == 0 {
        return Ok(());
    }
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::NonFinite { input: format!("{} [{i}]", input()), value: values[i] }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of non-finite value is found at every position of slices
    /// shorter and longer than the vectorized lanes; extreme finite values pass.
    #[test]
    fn check_all_finite_finds_the_first_bad_entry() {
        let finite = [0.0, -0.0, 1.0, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1e-45, -1e-45];
        let bad = [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::from_bits(0x7fc0_0001)];
        for len in 0..40 {
            let values: Vec<f32> = (0..len).map(|i| finite[i % finite.len()]).collect();
            assert!(check_all_finite(|| "x".into(), &values).is_ok(), "len {len}");
            for at in 0..len {
                for &b in &bad {
                    let mut v = values.clone();
                    v[at] = b;
                    if at + 1 < len {
                        v[len - 1] = f32::NAN;
                    }
                    match check_all_finite(|| "x".into(), &v) {
                        Err(Error::NonFinite { input, .. }) => assert_eq!(input, format!("x [{at}]")),
                        other => panic!("len {len}, {b} at {at}: {other:?}"),
                    }
                }
            }
        }
    }
}
