//! `engram-trainer canary`: the serving model, an optional candidate checkpoint
//! and the baseline on the frozen canary set (or on a dataset file), with a
//! verdict: a regression when the serving model ranks below the baseline, or
//! the candidate more than 0.15 NDCG@10 below the serving model.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use predictor::checkpoint;
use predictor::model::Model;
use serde::Serialize;
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::training::data::BuiltList;

use crate::canary;
use crate::error::{Error, Result};
use crate::run::WRITER;
use crate::training::{self, MAX_NDCG_DROP};

/// What to evaluate.
#[derive(Clone, Debug, Default)]
pub struct CanaryOptions {
    /// A candidate checkpoint file (Engram format).
    pub checkpoint: Option<PathBuf>,
    /// A dataset file instead of the frozen set.
    pub dataset: Option<PathBuf>,
    /// The moment whose frozen set is used (default: now).
    pub now: Option<Ts>,
}

/// One model's result.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ModelResult {
    /// `serving` or the checkpoint path.
    pub name: String,
    /// Model version, when known.
    pub version: Option<u64>,
    /// Mean NDCG@10 over the lists with a relevant memory.
    pub ndcg: Option<f32>,
    /// Mean per-list variance of its scores.
    pub score_variance: Option<f32>,
    /// Mean top-5 overlap with the serving model (candidate only).
    pub top5_overlap: Option<f32>,
    /// NDCG minus the serving model's (candidate only).
    pub ndcg_delta: Option<f32>,
}

/// The evaluation.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CanaryReport {
    /// Lists evaluated.
    pub lists: usize,
    /// Lists with a relevant memory (NDCG is averaged over these).
    pub evaluable: usize,
    /// Sessions of the frozen set (0 for a dataset).
    pub sessions: usize,
    /// When the frozen set was frozen (RFC 3339), for the frozen set.
    pub frozen_at: Option<String>,
    /// The dataset file, when one was given.
    pub dataset: Option<PathBuf>,
    /// Baseline NDCG@10.
    pub baseline_ndcg: Option<f32>,
    /// The serving model.
    pub serving: Option<ModelResult>,
    /// The candidate checkpoint.
    pub candidate: Option<ModelResult>,
    /// Regressions found (non-empty ⇒ non-zero exit).
    pub regressions: Vec<String>,
}

impl CanaryReport {
    /// The human-readable table.
    pub fn render(&self) -> String {
        let n = |x: Option<f32>| x.map_or("-".to_owned(), |v| format!("{v:.3}"));
        let mut out = String::new();
        match (&self.dataset, &self.frozen_at) {
            (Some(d), _) => {
                let _ =
                    writeln!(out, "canary: {} lists ({} evaluable) from {}", self.lists, self.evaluable, d.display());
            }
            (None, frozen) => {
                let _ = writeln!(
                    out,
                    "canary: {} lists ({} evaluable) from {} frozen sessions (set as of {})",
                    self.lists,
                    self.evaluable,
                    self.sessions,
                    frozen.as_deref().unwrap_or("-")
                );
            }
        }
        let _ = writeln!(out, "{:<28} {:>8} {:>10} {:>8} {:>8}", "ranker", "NDCG@10", "variance", "top5∩", "Δ");
        let _ = writeln!(out, "{:<28} {:>8} {:>10} {:>8} {:>8}", "baseline", n(self.baseline_ndcg), "-", "-", "-");
        for m in [&self.serving, &self.candidate].into_iter().flatten() {
            let name = match m.version {
                Some(v) => format!("{} (v{v})", m.name),
                None => m.name.clone(),
            };
            let _ = writeln!(
                out,
                "{:<28} {:>8} {:>10} {:>8} {:>8}",
                shared::storage::store::cap(&name, 28),
                n(m.ndcg),
                m.score_variance.map_or("-".to_owned(), |v| format!("{v:.2e}")),
                n(m.top5_overlap),
                n(m.ndcg_delta)
            );
        }
        if self.serving.is_none() {
            let _ = writeln!(out, "no serving model");
        }
        if self.regressions.is_empty() {
            let _ = write!(out, "verdict: ok");
        } else {
            let _ = write!(out, "verdict: REGRESSION: {}", self.regressions.join("; "));
        }
        out
    }
}

fn load_checkpoint(path: &Path) -> Result<(Model, u64)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read checkpoint", path, e))?;
    let ckpt =
        checkpoint::decode(&bytes, None).map_err(|e| Error::predictor(format!("decode {}", path.display()), e))?;
    Ok((ckpt.model, ckpt.meta.model_version))
}

/// Evaluates (see the module docs).
pub fn canary(paths: &Paths, config: &Config, opts: &CanaryOptions) -> Result<CanaryReport> {
    let journal = shared::projection::open(paths, WRITER)?;
    let store = journal.store();
    let tz = config.time.zone();
    let now = opts.now.unwrap_or_else(Ts::now);
    let serving = training::serving(paths, store)?;
    let candidate = opts.checkpoint.as_deref().map(load_checkpoint).transpose()?;
    let (frozen, frozen_at) = match &opts.dataset {
        Some(_) => (Vec::new(), None),
        None => {
            let (s, at) = canary::frozen_sessions(store, now)?;
            (s, Some(at))
        }
    };
    let build = |model: &Model| -> Result<Vec<BuiltList>> {
        let o = canary::options_for(model.config(), &tz);
        match &opts.dataset {
            Some(path) => canary::dataset_lists(store, path, now, &o),
            None => canary::session_lists(store, &frozen, false, &o),
        }
    };
    let reference = serving.as_ref().map(|s| &s.model).or(candidate.as_ref().map(|c| &c.0));
    let base_lists = match reference {
        Some(m) => build(m)?,
        None => {
            let o = canary::options_for(&predictor::model::ModelConfig::default(), &tz);
            match &opts.dataset {
                Some(path) => canary::dataset_lists(store, path, now, &o)?,
                None => canary::session_lists(store, &frozen, false, &o)?,
            }
        }
    };
    let baseline: Vec<Vec<f32>> = base_lists.iter().map(|l| l.baseline.clone()).collect();
    let mut report = CanaryReport {
        lists: base_lists.len(),
        evaluable: canary::evaluable(&base_lists),
        sessions: frozen.len(),
        frozen_at: frozen_at.map(|t| t.to_rfc3339()),
        dataset: opts.dataset.clone(),
        baseline_ndcg: canary::mean_ndcg(&base_lists, &baseline),
        serving: None,
        candidate: None,
        regressions: Vec::new(),
    };
    let serving_eval = match &serving {
        Some(s) => {
            let lists = build(&s.model)?;
            let scores = canary::score_lists(&s.model, &lists)?;
            let m = canary::metrics(&lists, &scores, None);
            report.serving = Some(ModelResult {
                name: "serving".into(),
                version: Some(s.version),
                ndcg: m.ndcg,
                score_variance: m.score_variance,
                top5_overlap: None,
                ndcg_delta: None,
            });
            Some((lists, scores))
        }
        None => None,
    };
    if let Some((model, version)) = &candidate {
        let lists = build(model)?;
        let scores = canary::score_lists(model, &lists)?;
        let m = canary::metrics(&lists, &scores, serving_eval.as_ref().map(|(l, s)| (l.as_slice(), s.as_slice())));
        report.candidate = Some(ModelResult {
            name: opts.checkpoint.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            version: (*version > 0).then_some(*version),
            ndcg: m.ndcg,
            score_variance: m.score_variance,
            top5_overlap: m.top5_overlap,
            ndcg_delta: m.ndcg_delta,
        });
    }
    if let (Some(s), Some(b)) = (report.serving.as_ref().and_then(|s| s.ndcg), report.baseline_ndcg)
        && s + 1e-6 < b
    {
        report.regressions.push(format!("the serving model's NDCG@10 {s:.3} is below the baseline's {b:.3}"));
    }
    if let (Some(c), Some(s)) =
        (report.candidate.as_ref().and_then(|c| c.ndcg), report.serving.as_ref().and_then(|s| s.ndcg))
        && c < s - MAX_NDCG_DROP
    {
        report.regressions.push(format!(
            "the candidate's NDCG@10 {c:.3} is more than {MAX_NDCG_DROP} below the serving model's {s:.3}"
        ));
    }
    Ok(report)
}
