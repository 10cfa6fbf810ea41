//! Signet's predictor as a frozen reference: its `SGPT` v1 checkpoint reader and writer, and its exact forward pass (f64).
//!
//! Layout of an `SGPT` v1 file (reference §8, little-endian):
//!
//! ```text
//! 0    4   magic "SGPT"
//! 4    4   u32 version (1)
//! 8    4   u32 flags
//! 12   4   u32 config JSON length, then the JSON: {"native_dim", "internal_dim",
//!          "value_dim", "extra_features", "hash_buckets", "project_slots"}
//! ..   4   u32 param count (7)
//! ..       7 × { u32 len; len × f64 } in order D, Q, K, V, gate, H, P (row-major)
//! ```
//!
//! There is no checksum in that format; lengths are checked against the config.
//! [`encode_sgpt`] writes the same bytes Signet's `checkpoint::save` writes
//! for the same weights (so that its sidecar can read a file Engram saved
//! back), and [`decode_sgpt`] ∘ [`encode_sgpt`] is the identity.
//!
//! The forward pass (reference §3) is reproduced exactly, including its
//! quirks, so that its weights and rankings can be compared with ours:
//! `q = Q·LN(D·ctx)`, `e_i = LN(D·emb_i)` when the embedding has `native_dim`
//! values, else `LN(mean_t H[fnv1a64(t) % buckets])` over the case-sensitive
//! tokens (an empty token list gives a zero vector without LN),
//! `logit_i = q·(K e_i)/√internal_dim + gate·[V e_i; f_i; P[slot % slots]; 1]`,
//! LN without gain or bias (ε = 1e-5), scores = softmax of the logits.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::checkpoint::Reader;
use crate::error::Error;
use crate::tokenizer::fnv1a64;

/// Signet's `ScorerConfig`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignetConfig {
    /// Embedding dimension (768 by default).
    pub native_dim: usize,
    /// Internal dimension (64).
    pub internal_dim: usize,
    /// Value dimension (32).
    pub value_dim: usize,
    /// Feature count (17).
    pub extra_features: usize,
    /// Hash buckets (16,384).
    pub hash_buckets: usize,
    /// Project slots (32).
    pub project_slots: usize,
}

/// A Signet model loaded from an `SGPT` file; matrices are `rows × cols` as Signet stores them.
#[derive(Debug, Clone, PartialEq)]
pub struct SignetModel {
    /// Its config.
    pub config: SignetConfig,
    /// File format version (1).
    pub version: u32,
    /// Flags word as stored.
    pub flags: u32,
    /// Down-projection `internal × native`.
    pub down: DMatrix<f64>,
    /// Query projection `internal × internal`.
    pub q: DMatrix<f64>,
    /// Key projection `internal × internal`.
    pub k: DMatrix<f64>,
    /// Value projection `value × internal`.
    pub v: DMatrix<f64>,
    /// Gate row, `value + features + internal + 1` values.
    pub gate: Vec<f64>,
    /// Hash embeddings `buckets × internal` (one row per bucket).
    pub hash: DMatrix<f64>,
    /// Project embeddings `slots × internal`.
    pub project: DMatrix<f64>,
}

/// One candidate as Signet's `score` receives it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SignetCandidate<'a> {
    /// Embedding; used only if it has exactly `native_dim` values.
    pub embedding: Option<&'a [f64]>,
    /// Text for the hash path.
    pub text: Option<&'a str>,
    /// `extra_features` values; `None` = all zeros.
    pub features: Option<&'a [f64]>,
}

/// Signet's tokenizer: split on every char that is not `[A-Za-z0-9_-]`, case-sensitive, empty pieces dropped.
pub fn signet_tokenize(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).filter(|t| !t.is_empty()).collect()
}

/// Reads an `SGPT` v1 file.
pub fn decode_sgpt(bytes: &[u8]) -> Result<SignetModel, Error> {
    let mut r = Reader::new(bytes);
    let magic = r.take(4, "SGPT magic")?;
    if magic != b"SGPT" {
        return Err(Error::Checkpoint {
            offset: 0,
            what: "SGPT magic".into(),
            why: format!("expected \"SGPT\", found {magic:?}"),
        });
    }
    let version = r.u32("SGPT version")?;
    if version != 1 {
        return Err(Error::Checkpoint {
            offset: 4,
            what: "SGPT version".into(),
            why: format!("version {version}, only 1 is known"),
        });
    }
    let flags = r.u32("SGPT flags")?;
    let config: SignetConfig = r.json("SGPT config")?;
    let c = config;
    if c.internal_dim == 0 || c.hash_buckets == 0 || c.project_slots == 0 {
        return Err(Error::Checkpoint {
            offset: 16,
            what: "SGPT config".into(),
            why: "internal_dim, hash_buckets and project_slots must be > 0".into(),
        });
    }
    let count = r.u32("SGPT param count")?;
    if count != 7 {
        return Err(r.err("SGPT param count", format!("{count}, expected 7")));
    }
    let gate_len = c.value_dim + c.extra_features + c.internal_dim + 1;
    let shapes = [
        ("D", c.internal_dim, c.native_dim),
        ("Q", c.internal_dim, c.internal_dim),
        ("K", c.internal_dim, c.internal_dim),
        ("V", c.value_dim, c.internal_dim),
        ("gate", 1, gate_len),
        ("H", c.hash_buckets, c.internal_dim),
        ("P", c.project_slots, c.internal_dim),
    ];
    let mut mats = Vec::with_capacity(7);
    for (name, rows, cols) in shapes {
        let len = r.u32(&format!("SGPT tensor {name} length"))? as usize;
        if len != rows * cols {
            return Err(r.err(
                &format!("SGPT tensor {name} length"),
                format!("{len} values, the config implies {rows}×{cols} = {}", rows * cols),
            ));
        }
        let data = r.f64s(len, &format!("SGPT tensor {name} data"))?;
        mats.push(DMatrix::from_row_slice(rows, cols, &data));
    }
    if r.pos() != bytes.len() {
        return Err(r.err("SGPT end", format!("{} trailing bytes", bytes.len() - r.pos())));
    }
    let mut it = mats.into_iter();
    let mut next = || it.next().expect("seven tensors were read");
    let (down, q, k, v) = (next(), next(), next(), next());
    let gate = next().as_slice().to_vec();
    let (hash, project) = (next(), next());
    Ok(SignetModel { config, version, flags, down, q, k, v, gate, hash, project })
}

/// Writes an `SGPT` v1 file (see the module documentation): tensors row-major,
/// in Signet's order, each value as little-endian f64.
pub fn encode_sgpt(model: &SignetModel) -> Vec<u8> {
    let config = serde_json::to_vec(&model.config).unwrap_or_else(|_| unreachable!("plain integers serialise"));
    let mut out = Vec::with_capacity(24 + config.len() + 7 * 4 + model.param_count() * 8);
    out.extend_from_slice(b"SGPT");
    out.extend_from_slice(&model.version.to_le_bytes());
    out.extend_from_slice(&model.flags.to_le_bytes());
    let len = |n: usize| u32::try_from(n).unwrap_or_else(|_| panic!("SGPT: a length of {n} does not fit in u32"));
    out.extend_from_slice(&len(config.len()).to_le_bytes());
    out.extend_from_slice(&config);
    out.extend_from_slice(&7u32.to_le_bytes());
    let gate = DMatrix::from_row_slice(1, model.gate.len(), &model.gate);
    for m in [&model.down, &model.q, &model.k, &model.v, &gate, &model.hash, &model.project] {
        out.extend_from_slice(&len(m.len()).to_le_bytes());
        for r in 0..m.nrows() {
            for c in 0..m.ncols() {
                out.extend_from_slice(&m[(r, c)].to_le_bytes());
            }
        }
    }
    out
}

impl SignetConfig {
    /// Signet's `ScorerConfig::default()` with its `--native-dim`.
    pub fn with_native_dim(native_dim: usize) -> SignetConfig {
        SignetConfig {
            native_dim,
            internal_dim: 64,
            value_dim: 32,
            extra_features: 17,
            hash_buckets: 16_384,
            project_slots: 32,
        }
    }
}

fn layer_norm(x: &DVector<f64>) -> DVector<f64> {
    let n = x.len() as f64;
    let mean = x.sum() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let r = 1.0 / (var + 1e-5).sqrt();
    x.map(|v| (v - mean) * r)
}

impl SignetModel {
    /// Weights of `config`'s shapes drawn from a seeded N(0, σ²) with Signet's
    /// scales (reference §3). Not Signet's own initial weights: for tests and
    /// golden files that need a model in its format.
    pub fn seeded(config: SignetConfig, seed: u64) -> SignetModel {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut normal = move || -> f64 {
            let u1: f64 = 1.0 - rng.random::<f64>();
            let u2: f64 = rng.random::<f64>();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let c = config;
        let mut mat = |rows: usize, cols: usize, sigma: f64| DMatrix::from_fn(rows, cols, |_, _| normal() * sigma);
        let inv = |n: usize| 1.0 / (n.max(1) as f64).sqrt();
        let down = mat(c.internal_dim, c.native_dim, inv(c.native_dim));
        let q = mat(c.internal_dim, c.internal_dim, inv(c.internal_dim));
        let k = mat(c.internal_dim, c.internal_dim, inv(c.internal_dim));
        let v = mat(c.value_dim, c.internal_dim, inv(c.internal_dim));
        let gate_len = c.value_dim + c.extra_features + c.internal_dim + 1;
        let gate = mat(1, gate_len, inv(c.internal_dim)).as_slice().to_vec();
        let hash = mat(c.hash_buckets, c.internal_dim, inv(c.internal_dim));
        let project = mat(c.project_slots, c.internal_dim, inv(c.internal_dim));
        SignetModel { config, version: 1, flags: 0, down, q, k, v, gate, hash, project }
    }

    /// Total number of parameters (1,110,130 for the default config).
    pub fn param_count(&self) -> usize {
        self.down.len()
            + self.q.len()
            + self.k.len()
            + self.v.len()
            + self.gate.len()
            + self.hash.len()
            + self.project.len()
    }

    fn encode_text(&self, text: &str) -> DVector<f64> {
        let d = self.config.internal_dim;
        let toks = signet_tokenize(text);
        if toks.is_empty() {
            return DVector::zeros(d);
        }
        let mut sum = DVector::zeros(d);
        for t in &toks {
            let row = (fnv1a64(t.as_bytes()) % self.config.hash_buckets as u64) as usize;
            sum += self.hash.row(row).transpose();
        }
        layer_norm(&(sum / toks.len() as f64))
    }

    /// Logits exactly as Signet computes them (reference §3).
    pub fn logits(
        &self,
        context: &[f64],
        candidates: &[SignetCandidate<'_>],
        project_slot: usize,
    ) -> Result<Vec<f64>, Error> {
        let c = &self.config;
        if context.len() != c.native_dim {
            return Err(Error::DimensionMismatch {
                input: "Signet context embedding".into(),
                expected: c.native_dim,
                actual: context.len(),
            });
        }
        let ctx = DVector::from_column_slice(context);
        let q = &self.q * layer_norm(&(&self.down * ctx));
        let p = self.project.row(project_slot % c.project_slots).transpose();
        let scale = 1.0 / (c.internal_dim as f64).sqrt();
        let mut out = Vec::with_capacity(candidates.len());
        for (i, cand) in candidates.iter().enumerate() {
            let e = match (cand.embedding, cand.text) {
                (Some(emb), _) if emb.len() == c.native_dim => {
                    layer_norm(&(&self.down * DVector::from_column_slice(emb)))
                }
                (_, Some(text)) => self.encode_text(text),
                _ => return Err(Error::EmptyCandidate { index: i }),
            };
            let k = &self.k * &e;
            let v = &self.v * &e;
            let zeros = vec![0.0; c.extra_features];
            let f = cand.features.unwrap_or(&zeros);
            if f.len() != c.extra_features {
                return Err(Error::DimensionMismatch {
                    input: format!("Signet candidate {i} features"),
                    expected: c.extra_features,
                    actual: f.len(),
                });
            }
            let inputs = v.iter().chain(f).chain(p.iter()).chain(std::iter::once(&1.0));
            let gated: f64 = self.gate.iter().zip(inputs).map(|(g, x)| g * x).sum();
            out.push(q.dot(&k) * scale + gated);
        }
        Ok(out)
    }

    /// Softmax probabilities over the list, what Signet returns as `score`.
    pub fn scores(
        &self,
        context: &[f64],
        candidates: &[SignetCandidate<'_>],
        project_slot: usize,
    ) -> Result<Vec<f64>, Error> {
        let z = self.logits(context, candidates, project_slot)?;
        let max = z.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let e: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
        let s: f64 = e.iter().sum();
        Ok(e.into_iter().map(|v| v / s).collect())
    }
}
