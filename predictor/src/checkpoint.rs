//! Versioned binary checkpoints (weights, Adam state, training metadata, blake3 checksum) as bytes; no IO here.
//!
//! # Format v1 (all integers little-endian)
//!
//! ```text
//! offset  size  field
//! 0       8     magic  b"ENGRMPRD"
//! 8       4     u32    format version (1)
//! 12      4     u32    flags: bit 0 pretrained base, bit 1 fine-tuned, bit 2 optimizer state present
//! 16      4     u32    config length C, then C bytes of JSON (ModelConfig: native_dim, dim,
//!                      value_dim, hash_buckets, project_slots, features, session_features)
//! ..      4     u32    metadata length M, then M bytes of JSON (TrainingMeta: model_version,
//!                      steps, trained_lists, timestamp_ms, notes)
//! ..      4     u32    tensor count T (16; 14 in files written before the feature MLP)
//! ..            T ×  { u8 name length, name (UTF-8), u32 rows, u32 cols,
//!                      rows·cols × f32, column-major (nalgebra order) }
//! ..            if flag bit 2:
//!                    u64 Adam step;
//!                    T × { rows·cols × f32 first moment, rows·cols × f32 second moment };
//!                    T × { u32 count K, K × u64 per-column step counters (K = 0 for dense tensors) }
//! end−32  32    blake3 hash of every byte before it
//! ```
//!
//! Tensors appear in [`crate::model::PARAM_NAMES`] order, each with its name;
//! the decoder checks names and shapes against the config. The default model
//! with its optimizer state is about 13.6 MB.
//!
//! [`decode`] verifies magic, version and checksum before anything else, then
//! refuses a config that differs from the caller's, naming every differing
//! field. Errors give the byte offset and what was being read.
//!
//! Signet's `SGPT` v1 files are read by [`crate::signet::decode_sgpt`].

use serde::{Deserialize, Serialize};

use crate::autograd::Mat;
use crate::error::Error;
use crate::features::NUM_FEATURES;
use crate::model::{
    Model, ModelConfig, NUM_PARAMS, P_FEATURE_HIDDEN, P_GATE, P_GATE_SESSION, PARAM_NAMES, feature_mlp_tensors,
};
use crate::train::AdamState;

pub use crate::signet::{SignetModel, decode_sgpt};

/// Magic bytes at the start of every Engram predictor checkpoint.
pub const MAGIC: [u8; 8] = *b"ENGRMPRD";
/// Format version written by this build.
pub const FORMAT_VERSION: u32 = 1;

const FLAG_PRETRAINED: u32 = 1;
const FLAG_FINE_TUNED: u32 = 2;
const FLAG_OPTIMIZER: u32 = 4;
const KNOWN_FLAGS: u32 = FLAG_PRETRAINED | FLAG_FINE_TUNED | FLAG_OPTIMIZER;

/// Provenance flags of a checkpoint (seed 002, phase 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// The weights are a shipped pretrained base model.
    pub pretrained_base: bool,
    /// The weights were fine-tuned on the user's data.
    pub fine_tuned: bool,
}

/// Training metadata stored with the weights.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrainingMeta {
    /// Version of the model (incremented by the trainer per published training run).
    pub model_version: u64,
    /// Optimizer steps taken over the model's life.
    pub steps: u64,
    /// Lists trained on over the model's life.
    pub trained_lists: u64,
    /// When the checkpoint was made, milliseconds since the Unix epoch (caller-supplied).
    pub timestamp_ms: i64,
    /// Free-form notes (data range, canary results, ...).
    pub notes: String,
}

/// Everything a checkpoint holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Provenance flags.
    pub flags: Flags,
    /// The weights (with their config).
    pub model: Model,
    /// Adam state, to continue or fine-tune training exactly where it stopped.
    pub optimizer: Option<AdamState>,
    /// Training metadata.
    pub meta: TrainingMeta,
}

fn u32_len(n: usize, what: &str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| panic!("checkpoint: {what} ({n}) does not fit in u32"))
}

fn put_f32s(out: &mut Vec<u8>, values: &[f32]) {
    out.reserve(values.len() * 4);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Serialises a checkpoint (format v1). Deterministic: equal checkpoints give equal bytes.
///
/// # Panics
/// Panics if the optimizer state does not match the model (a programming error:
/// [`AdamState::new`] and training keep them consistent).
pub fn encode(ckpt: &Checkpoint) -> Vec<u8> {
    let model = &ckpt.model;
    let tensors = model.tensors();
    let mut size = 64 + 32;
    for t in tensors {
        size += 16 + t.len() * 4 * if ckpt.optimizer.is_some() { 3 } else { 1 };
    }
    let mut out = Vec::with_capacity(size + 1024);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let mut flags = 0;
    if ckpt.flags.pretrained_base {
        flags |= FLAG_PRETRAINED;
    }
    if ckpt.flags.fine_tuned {
        flags |= FLAG_FINE_TUNED;
    }
    if ckpt.optimizer.is_some() {
        flags |= FLAG_OPTIMIZER;
    }
    out.extend_from_slice(&flags.to_le_bytes());
    let config = serde_json::to_vec(model.config()).expect("config serialises");
    out.extend_from_slice(&u32_len(config.len(), "config length").to_le_bytes());
    out.extend_from_slice(&config);
    let meta = serde_json::to_vec(&ckpt.meta).expect("metadata serialises");
    out.extend_from_slice(&u32_len(meta.len(), "metadata length").to_le_bytes());
    out.extend_from_slice(&meta);
    out.extend_from_slice(&u32_len(tensors.len(), "tensor count").to_le_bytes());
    for (name, t) in PARAM_NAMES.iter().zip(tensors) {
        out.push(u8::try_from(name.len()).expect("tensor names are short"));
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&u32_len(t.nrows(), "rows").to_le_bytes());
        out.extend_from_slice(&u32_len(t.ncols(), "cols").to_le_bytes());
        put_f32s(&mut out, t.as_slice());
    }
    if let Some(opt) = &ckpt.optimizer {
        opt.check_matches(model).expect("optimizer state matches the model");
        out.extend_from_slice(&opt.step.to_le_bytes());
        for (m, v) in opt.m.iter().zip(&opt.v) {
            put_f32s(&mut out, m.as_slice());
            put_f32s(&mut out, v.as_slice());
        }
        for steps in &opt.col_steps {
            out.extend_from_slice(&u32_len(steps.len(), "column steps").to_le_bytes());
            for s in steps {
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
    let hash = blake3::hash(&out);
    out.extend_from_slice(hash.as_bytes());
    out
}

/// A bounds-checked little-endian reader that reports offsets.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn err(&self, what: &str, why: impl Into<String>) -> Error {
        Error::Checkpoint { offset: self.pos, what: what.into(), why: why.into() }
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(self.err(what, format!("needs {n} bytes but only {left} remain (truncated file?)")));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Error> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub(crate) fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, Error> {
        let bytes = n.checked_mul(4).ok_or_else(|| self.err(what, format!("{n} values overflow")))?;
        let b = self.take(bytes, what)?;
        Ok(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    pub(crate) fn f64s(&mut self, n: usize, what: &str) -> Result<Vec<f64>, Error> {
        let bytes = n.checked_mul(8).ok_or_else(|| self.err(what, format!("{n} values overflow")))?;
        let b = self.take(bytes, what)?;
        Ok(b.chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                f64::from_le_bytes(a)
            })
            .collect())
    }

    pub(crate) fn json<T: serde::de::DeserializeOwned>(&mut self, what: &str) -> Result<T, Error> {
        let len = self.u32(&format!("{what} length"))? as usize;
        let start = self.pos;
        let b = self.take(len, what)?;
        serde_json::from_slice(b).map_err(|e| Error::Checkpoint {
            offset: start,
            what: what.into(),
            why: format!("invalid JSON: {e}"),
        })
    }
}

/// The tensors whose rows are `[value part; candidate features]`.
const GATE_PARAMS: [crate::autograd::ParamId; 2] = [P_GATE, P_GATE_SESSION];

/// Tensor count of checkpoints written before the feature MLP (its two
/// tensors come last; such a file gets them added, with a zero output).
const PARAMS_BEFORE_MLP: usize = NUM_PARAMS - 2;

/// Parses and verifies a checkpoint. With `expected`, a checkpoint whose config
/// differs is refused with [`Error::ConfigMismatch`] naming each differing field.
/// A checkpoint written with fewer candidate features is widened (see
/// [`crate::features`]).
pub fn decode(bytes: &[u8], expected: Option<&ModelConfig>) -> Result<Checkpoint, Error> {
    let mut r = Reader::new(bytes);
    let magic = r.take(8, "magic")?;
    if magic != MAGIC {
        let hint =
            if magic.starts_with(b"SGPT") { " (this is a Signet SGPT file: use signet::decode_sgpt)" } else { "" };
        return Err(Error::Checkpoint {
            offset: 0,
            what: "magic".into(),
            why: format!("expected {:?}, found {:?}{hint}", MAGIC, magic),
        });
    }
    let version = r.u32("format version")?;
    if version != FORMAT_VERSION {
        return Err(Error::Checkpoint {
            offset: 8,
            what: "format version".into(),
            why: format!("version {version} is not readable by this build (reads {FORMAT_VERSION})"),
        });
    }
    if bytes.len() < 8 + 4 + 32 {
        return Err(r.err("checksum", "file too short to hold a checksum"));
    }
    let body = &bytes[..bytes.len() - 32];
    let stored = &bytes[bytes.len() - 32..];
    let computed = blake3::hash(body);
    if computed.as_bytes() != stored {
        return Err(Error::ChecksumMismatch {
            stored: stored.iter().map(|b| format!("{b:02x}")).collect(),
            computed: computed.to_hex().to_string(),
        });
    }
    let mut r = Reader::new(body);
    r.take(12, "header")?;
    let flags_at = r.pos();
    let flags = r.u32("flags")?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::Checkpoint {
            offset: flags_at,
            what: "flags".into(),
            why: format!("unknown flag bits {:#x}", flags & !KNOWN_FLAGS),
        });
    }
    let stored: ModelConfig = r.json("config")?;
    // Candidate features are only ever appended: a checkpoint from an older
    // build is widened with zero gate weights for the new features (they start
    // inert and the model scores exactly as it did).
    if stored.features > NUM_FEATURES {
        return Err(Error::Checkpoint {
            offset: 16,
            what: "config".into(),
            why: format!(
                "{} candidate features, this build knows {NUM_FEATURES}: written by a newer build",
                stored.features
            ),
        });
    }
    let config = ModelConfig { features: NUM_FEATURES, ..stored };
    if let Some(expected) = expected {
        let differences = expected.differences(&config);
        if !differences.is_empty() {
            return Err(Error::ConfigMismatch { differences });
        }
    }
    config.validate().map_err(|e| Error::Checkpoint { offset: 16, what: "config".into(), why: e.to_string() })?;
    let meta: TrainingMeta = r.json("metadata")?;
    let count = r.u32("tensor count")? as usize;
    if count != NUM_PARAMS && count != PARAMS_BEFORE_MLP {
        return Err(r.err(
            "tensor count",
            format!("{count} tensors, format v1 has {NUM_PARAMS} (or {PARAMS_BEFORE_MLP} before the feature MLP)"),
        ));
    }
    let shapes = &stored.param_shapes()[..count];
    let mut tensors = Vec::with_capacity(NUM_PARAMS);
    for (i, &(rows, cols)) in shapes.iter().enumerate() {
        let at = r.pos();
        let name_len = r.u8("tensor name length")? as usize;
        let name = r.take(name_len, "tensor name")?;
        if name != PARAM_NAMES[i].as_bytes() {
            return Err(Error::Checkpoint {
                offset: at,
                what: format!("tensor {i} name"),
                why: format!("expected {:?}, found {:?}", PARAM_NAMES[i], String::from_utf8_lossy(name)),
            });
        }
        let (fr, fc) = (r.u32("tensor rows")? as usize, r.u32("tensor cols")? as usize);
        if (fr, fc) != (rows, cols) {
            return Err(r.err(
                &format!("tensor {} shape", PARAM_NAMES[i]),
                format!("{fr}×{fc} in the file, the config implies {rows}×{cols}"),
            ));
        }
        let data = r.f32s(rows * cols, &format!("tensor {} data", PARAM_NAMES[i]))?;
        tensors.push(Mat::from_vec(rows, cols, data));
    }
    // Widens what an older build wrote: zero gate rows and zero MLP input
    // columns for new features, and `added` as the MLP tensors if it had none.
    let widen = |ms: &mut Vec<Mat>, added: [Mat; 2]| {
        let extra = NUM_FEATURES - stored.features;
        if extra > 0 {
            for id in GATE_PARAMS {
                let old = std::mem::replace(&mut ms[id.0], Mat::zeros(0, 0));
                let rows = old.nrows();
                ms[id.0] = old.insert_rows(rows, extra, 0.0);
            }
            if ms.len() == NUM_PARAMS {
                let old = std::mem::replace(&mut ms[P_FEATURE_HIDDEN.0], Mat::zeros(0, 0));
                let cols = old.ncols();
                ms[P_FEATURE_HIDDEN.0] = old.insert_columns(cols, extra, 0.0);
            }
        }
        if ms.len() == PARAMS_BEFORE_MLP {
            ms.extend(added);
        }
    };
    widen(&mut tensors, feature_mlp_tensors(NUM_FEATURES));
    let model = Model::from_tensors(config, tensors).map_err(|e| Error::Checkpoint {
        offset: r.pos(),
        what: "tensors".into(),
        why: e.to_string(),
    })?;
    let optimizer = if flags & FLAG_OPTIMIZER != 0 {
        let step = r.u64("optimizer step")?;
        let mut m = Vec::with_capacity(NUM_PARAMS);
        let mut v = Vec::with_capacity(NUM_PARAMS);
        for (i, &(rows, cols)) in shapes.iter().enumerate() {
            let mi = r.f32s(rows * cols, &format!("first moment of {}", PARAM_NAMES[i]))?;
            let vi = r.f32s(rows * cols, &format!("second moment of {}", PARAM_NAMES[i]))?;
            m.push(Mat::from_vec(rows, cols, mi));
            v.push(Mat::from_vec(rows, cols, vi));
        }
        let mut col_steps = Vec::with_capacity(NUM_PARAMS);
        for name in &PARAM_NAMES[..count] {
            let k = r.u32(&format!("column step count of {name}"))? as usize;
            let mut steps = Vec::with_capacity(k.min(1 << 20));
            for _ in 0..k {
                steps.push(r.u64(&format!("column steps of {name}"))?);
            }
            col_steps.push(steps);
        }
        let zeros = || feature_mlp_tensors(NUM_FEATURES).map(|t| Mat::zeros(t.nrows(), t.ncols()));
        widen(&mut m, zeros());
        widen(&mut v, zeros());
        col_steps.resize(NUM_PARAMS, Vec::new());
        let opt = AdamState { step, m, v, col_steps };
        opt.check_matches(&model).map_err(|e| r.err("optimizer state", e.to_string()))?;
        Some(opt)
    } else {
        None
    };
    if r.pos() != body.len() {
        return Err(r.err("end of data", format!("{} unexpected bytes before the checksum", body.len() - r.pos())));
    }
    Ok(Checkpoint {
        flags: Flags { pretrained_base: flags & FLAG_PRETRAINED != 0, fine_tuned: flags & FLAG_FINE_TUNED != 0 },
        model,
        optimizer,
        meta,
    })
}

#[cfg(test)]
mod tests;
