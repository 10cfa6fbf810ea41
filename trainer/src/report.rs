//! `engram-trainer report --html FILE`: one self-contained page (inline CSS
//! and SVG; no script, no network) with the status card, the training curve
//! with model versions and drift resets, the win/loss timeline with the
//! success-rate and α lines, the α split, canary metrics over time,
//! per-project success, and the memories by knowledge type (how many, how
//! often injected, how often that helped). Every chart is an `<svg data-chart="…">` whose marks
//! carry their values in `data-*` attributes and a `<title>` for hovering.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::rank::state::PredictorState;
use shared::domain::training::history::ToldTwice;
use shared::storage::event::MemoryType;
use shared::storage::store::Store;

use crate::error::{Result, Sql};
use crate::run::WRITER;
use crate::tracker::{EMA, INITIAL_SUCCESS, outcome};

/// One training run, as logged.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// Version the weights had or would have had.
    pub version: u64,
    /// Training loss (−1 when unknown).
    pub loss: f32,
    /// Validation loss.
    pub valid_loss: Option<f32>,
    /// Lists trained on.
    pub samples: u32,
    /// Canary NDCG of the candidate, the serving model and the baseline.
    pub canary: [Option<f32>; 3],
    /// Top-5 overlap with the serving model.
    pub top5: Option<f32>,
    /// Gates passed.
    pub passed: bool,
    /// Why not.
    pub failure: Option<String>,
    /// A drift retrain.
    pub drift: bool,
    /// When.
    pub at_ms: i64,
}

/// One comparison, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonRow {
    /// The session.
    pub session: String,
    /// Project.
    pub project: Option<String>,
    /// NDCG@10 of each ranker.
    pub predictor_ndcg: f32,
    /// Baseline NDCG@10.
    pub baseline_ndcg: f32,
    /// predictor − baseline.
    pub margin: f32,
    /// Updated the success rate.
    pub ema_updated: bool,
    /// Success rate after it.
    pub success_rate: f32,
    /// α after it.
    pub alpha: f32,
    /// Scorer confidence.
    pub confidence: f32,
    /// When.
    pub at_ms: i64,
}

/// The memories of one of seed 004's knowledge types.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeRow {
    /// `fact`, `decision`, … (see [`MemoryType::KNOWLEDGE`]).
    pub knowledge_type: &'static str,
    /// Memories not forgotten.
    pub memories: u64,
    /// Injections (a memory injected into a session counts once per ranking).
    pub injected: u64,
    /// Sessions they were injected into.
    pub sessions: u64,
    /// Injections whose usefulness was judged (a label or a scored relevance).
    pub judged: u64,
    /// Judged injections that helped (label or relevance at least [`HELPED`]).
    pub helped: u64,
}

/// A judged injection with a label or relevance at least this helped its session.
pub const HELPED: f64 = 0.5;

/// Everything the page shows.
#[derive(Clone, Debug)]
pub struct ReportData {
    /// Training runs, oldest first.
    pub runs: Vec<RunRow>,
    /// Comparisons, oldest first.
    pub comparisons: Vec<ComparisonRow>,
    /// Drift resets (time, success rate).
    pub drifts: Vec<(i64, f32)>,
    /// The serving state.
    pub state: PredictorState,
    /// Sessions scored (any confidence).
    pub scored: u64,
    /// When the page was made.
    pub generated: Ts,
    /// The latest `eval locomo` results kept in the data home, if any.
    pub benchmark: Option<serde_json::Value>,
    /// Memories by knowledge type, in seed 004's order.
    pub by_type: Vec<TypeRow>,
    /// Lessons given more than once, per project
    /// ([`shared::domain::training::history::told_twice`]).
    pub told_twice: Vec<ToldTwice>,
}

fn f32_opt(v: Option<f64>) -> Option<f32> {
    v.map(|x| x as f32).filter(|x| x.is_finite())
}

/// Reads the report's data from the projection.
pub fn load(store: &Store, config: &Config, generated: Ts) -> Result<ReportData> {
    let conn = store.conn();
    let runs = conn
        .prepare(
            "SELECT model_version, loss, valid_loss, sample_count, canary_ndcg, canary_serving_ndcg,
                    canary_baseline_ndcg, canary_top5_overlap, gates_passed, failure, drift_retrain, created_ms
             FROM predictor_training_log ORDER BY created_ms, id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| {
                Ok(RunRow {
                    version: r.get::<_, i64>(0)?.max(0) as u64,
                    loss: r.get::<_, f64>(1)? as f32,
                    valid_loss: f32_opt(r.get(2)?),
                    samples: r.get(3)?,
                    canary: [f32_opt(r.get(4)?), f32_opt(r.get(5)?), f32_opt(r.get(6)?)],
                    top5: f32_opt(r.get(7)?),
                    passed: r.get(8)?,
                    failure: r.get(9)?,
                    drift: r.get(10)?,
                    at_ms: r.get(11)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .sql("read training runs")?;
    let comparisons = conn
        .prepare(
            "SELECT session_key, project, predictor_ndcg, baseline_ndcg, margin, ema_updated, success_rate, alpha,
                    scorer_confidence, created_ms
             FROM predictor_comparisons ORDER BY created_ms, id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| {
                Ok(ComparisonRow {
                    session: r.get(0)?,
                    project: r.get(1)?,
                    predictor_ndcg: r.get::<_, f64>(2)? as f32,
                    baseline_ndcg: r.get::<_, f64>(3)? as f32,
                    margin: r.get::<_, f64>(4)? as f32,
                    ema_updated: r.get(5)?,
                    success_rate: r.get::<_, f64>(6)? as f32,
                    alpha: r.get::<_, f64>(7)? as f32,
                    confidence: r.get::<_, f64>(8)? as f32,
                    at_ms: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .sql("read comparisons")?;
    let drifts = conn
        .prepare("SELECT created_ms, success_rate FROM drift_resets ORDER BY created_ms")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get::<_, f64>(1)? as f32)))?.collect::<rusqlite::Result<Vec<_>>>()
        })
        .sql("read drift resets")?;
    let scored: i64 = conn
        .query_row("SELECT COUNT(DISTINCT session_key) FROM session_scores", [], |r| r.get(0))
        .sql("count scored sessions")?;
    Ok(ReportData {
        runs,
        comparisons,
        drifts,
        state: PredictorState::load(store, &config.predictor)?,
        scored: scored.max(0) as u64,
        generated,
        benchmark: None,
        by_type: by_type(store)?,
        told_twice: shared::domain::training::history::told_twice(store)?,
    })
}

/// Live memories and their injections by knowledge type (stored types are
/// folded into the seven knowledge types by [`MemoryType::knowledge_type`]).
pub fn by_type(store: &Store) -> Result<Vec<TypeRow>> {
    let mut rows: Vec<TypeRow> =
        MemoryType::KNOWLEDGE.iter().map(|t| TypeRow { knowledge_type: t.as_str(), ..TypeRow::default() }).collect();
    let row = |stored: &str| {
        let kt = MemoryType::from_stored(stored).knowledge_type().as_str();
        rows.iter().position(|r| r.knowledge_type == kt)
    };
    let conn = store.conn();
    let live: Vec<(String, i64)> = conn
        .prepare("SELECT type, COUNT(*) FROM memories WHERE is_deleted = 0 GROUP BY type")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .sql("count memories by type")?;
    let injected: Vec<(String, i64, i64, i64)> = conn
        .prepare(
            "SELECT m.type, COUNT(*), COUNT(COALESCE(sm.label, sm.relevance_score)),
                    COALESCE(SUM(COALESCE(sm.label, sm.relevance_score) >= ?1), 0)
             FROM session_memories sm JOIN memories m ON m.id = sm.memory_id
             WHERE sm.was_injected = 1 AND m.is_deleted = 0 GROUP BY m.type",
        )
        .and_then(|mut s| s.query_map([HELPED], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect())
        .sql("count injections by type")?;
    // Sessions per knowledge type: two stored types of one knowledge type
    // may share a session, so the distinct pairs are folded here.
    let pairs: Vec<(String, String)> = conn
        .prepare(
            "SELECT DISTINCT m.type, sm.session_key FROM session_memories sm JOIN memories m ON m.id = sm.memory_id
             WHERE sm.was_injected = 1 AND m.is_deleted = 0",
        )
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .sql("read injected sessions by type")?;
    let count = |n: i64| n.max(0) as u64;
    let mut found = Vec::new();
    for (t, n) in live {
        if let Some(i) = row(&t) {
            found.push((i, count(n), 0, 0, 0));
        }
    }
    for (t, n, judged, helped) in injected {
        if let Some(i) = row(&t) {
            found.push((i, 0, count(n), count(judged), count(helped)));
        }
    }
    let mut sessions: Vec<std::collections::BTreeSet<String>> = vec![Default::default(); rows.len()];
    for (t, session) in pairs {
        if let Some(i) = row(&t) {
            sessions[i].insert(session);
        }
    }
    for (i, memories, injected, judged, helped) in found {
        let r = &mut rows[i];
        r.memories += memories;
        r.injected += injected;
        r.judged += judged;
        r.helped += helped;
    }
    for (r, s) in rows.iter_mut().zip(sessions) {
        r.sessions = s.len() as u64;
    }
    Ok(rows)
}

/// Writes the page for the data home's projection to `out`.
pub fn write(paths: &Paths, config: &Config, out: &std::path::Path, generated: Ts) -> Result<()> {
    let journal = shared::projection::open(paths, WRITER)?;
    let mut data = load(journal.store(), config, generated)?;
    data.benchmark = crate::eval::read_latest(paths);
    let html = render(&data);
    shared::base::fsutil::atomic_write(out, html.as_bytes())
        .map_err(|e| crate::error::Error::io("write report", out, e))
}

fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A plot area with linear scales.
struct Plot {
    w: f32,
    h: f32,
    left: f32,
    right: f32,
    top: f32,
    bottom: f32,
    x: (f32, f32),
    y: (f32, f32),
}

impl Plot {
    fn new(x: (f32, f32), y: (f32, f32)) -> Plot {
        let x = if x.1 > x.0 { x } else { (x.0 - 1.0, x.0 + 1.0) };
        let y = if y.1 > y.0 { y } else { (y.0 - 1.0, y.0 + 1.0) };
        Plot { w: 720.0, h: 260.0, left: 52.0, right: 16.0, top: 16.0, bottom: 34.0, x, y }
    }

    fn sx(&self, v: f32) -> f32 {
        self.left + (v - self.x.0) / (self.x.1 - self.x.0) * (self.w - self.left - self.right)
    }

    fn sy(&self, v: f32) -> f32 {
        self.h - self.bottom - (v - self.y.0) / (self.y.1 - self.y.0) * (self.h - self.top - self.bottom)
    }

    fn open(&self, out: &mut String, chart: &str, label: &str) {
        let _ = write!(
            out,
            r#"<svg data-chart="{chart}" role="img" aria-label="{}" viewBox="0 0 {} {}" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">"#,
            esc(label),
            self.w,
            self.h,
            self.w,
            self.h
        );
        let (x0, x1, y0, y1) = (self.left, self.w - self.right, self.top, self.h - self.bottom);
        let _ = write!(
            out,
            r##"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="#fbfbfd" stroke="#ccd"/>"##,
            x1 - x0,
            y1 - y0
        );
        for i in 0..=4 {
            let v = self.y.0 + (self.y.1 - self.y.0) * i as f32 / 4.0;
            let y = self.sy(v);
            let _ = write!(
                out,
                r##"<line x1="{x0}" x2="{x1}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3ea"/><text x="{}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
                x0 - 6.0,
                y + 4.0,
                fmt_tick(v)
            );
        }
    }

    fn x_label(&self, out: &mut String, text: &str) {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{}</text>"#,
            (self.left + self.w - self.right) / 2.0,
            self.h - 6.0,
            esc(text)
        );
    }

    fn polyline(&self, out: &mut String, series: &str, points: &[(f32, f32)], color: &str, dashed: bool) {
        if points.is_empty() {
            return;
        }
        let pts: Vec<String> = points.iter().map(|&(x, y)| format!("{:.1},{:.1}", self.sx(x), self.sy(y))).collect();
        let values: Vec<String> = points.iter().map(|p| format!("{:.4}", p.1)).collect();
        let _ = write!(
            out,
            r#"<polyline data-series="{series}" data-values="{}" points="{}" fill="none" stroke="{color}" stroke-width="2"{}/>"#,
            values.join(" "),
            pts.join(" "),
            if dashed { r#" stroke-dasharray="6 4""# } else { "" }
        );
    }
}

fn fmt_tick(v: f32) -> String {
    if v.abs() >= 10.0 {
        return format!("{v:.0}");
    }
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0');
    text.strip_suffix('.').unwrap_or(text).to_owned()
}

fn legend(items: &[(&str, &str)]) -> String {
    let mut out = String::from(r#"<p class="legend">"#);
    for (color, name) in items {
        let _ = write!(out, r#"<span><i style="background:{color}"></i>{}</span>"#, esc(name));
    }
    out.push_str("</p>");
    out
}

fn training_chart(d: &ReportData) -> String {
    let mut out = String::new();
    if d.runs.is_empty() {
        return r#"<p class="empty" data-chart-empty="training">No training run yet.</p>"#.to_owned();
    }
    let losses: Vec<f32> = d
        .runs
        .iter()
        .flat_map(|r| [Some(r.loss).filter(|l| *l >= 0.0), r.valid_loss])
        .flatten()
        .filter(|v| v.is_finite())
        .collect();
    let max = losses.iter().copied().fold(0.0f32, f32::max).max(1e-3) * 1.1;
    let n = d.runs.len() as f32;
    let p = Plot::new((0.5, n + 0.5), (0.0, max));
    p.open(&mut out, "training", "training loss per run");
    // Drift resets: between the runs around them.
    for (at, rate) in &d.drifts {
        let i = d.runs.iter().position(|r| r.at_ms > *at).map_or(n + 0.5, |i| i as f32 + 0.5);
        let x = p.sx(i);
        let _ = write!(
            out,
            r##"<line class="drift" data-success="{rate:.3}" x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}" stroke="#b36" stroke-dasharray="4 4"><title>drift reset (success {rate:.2})</title></line>"##,
            p.top,
            p.h - p.bottom
        );
    }
    let train: Vec<(f32, f32)> =
        d.runs.iter().enumerate().filter(|(_, r)| r.loss >= 0.0).map(|(i, r)| (i as f32 + 1.0, r.loss)).collect();
    let valid: Vec<(f32, f32)> =
        d.runs.iter().enumerate().filter_map(|(i, r)| r.valid_loss.map(|v| (i as f32 + 1.0, v))).collect();
    p.polyline(&mut out, "train_loss", &train, "#3a6fb0", false);
    p.polyline(&mut out, "valid_loss", &valid, "#8a8fa8", true);
    for (i, r) in d.runs.iter().enumerate() {
        let x = p.sx(i as f32 + 1.0);
        let y = p.sy(if r.loss >= 0.0 { r.loss } else { 0.0 });
        let title = match &r.failure {
            Some(f) => format!("v{} not promoted: {}", r.version, f),
            None => format!("v{} promoted, loss {:.4}, {} lists", r.version, r.loss, r.samples),
        };
        if r.passed {
            let _ = write!(
                out,
                r##"<circle class="run promoted" data-version="{}" data-loss="{:.4}" cx="{x:.1}" cy="{y:.1}" r="5" fill="#2a8a4a"><title>{}</title></circle><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">v{}</text>"##,
                r.version,
                r.loss,
                esc(&title),
                y - 9.0,
                r.version
            );
        } else {
            let _ = write!(
                out,
                r##"<path class="run failed" data-version="{}" data-loss="{:.4}" d="M{:.1},{:.1}l8,8m0,-8l-8,8" stroke="#c33" stroke-width="2"><title>{}</title></path>"##,
                r.version,
                r.loss,
                x - 4.0,
                y - 4.0,
                esc(&title)
            );
        }
    }
    p.x_label(&mut out, "training run");
    out.push_str("</svg>");
    out.push_str(&legend(&[
        ("#3a6fb0", "training loss"),
        ("#8a8fa8", "validation loss"),
        ("#2a8a4a", "promoted (version)"),
        ("#c33", "gates failed"),
        ("#b36", "drift reset"),
    ]));
    out
}

fn timeline_chart(d: &ReportData) -> String {
    let mut out = String::new();
    if d.comparisons.is_empty() {
        return r#"<p class="empty" data-chart-empty="timeline">No comparison yet.</p>"#.to_owned();
    }
    let n = d.comparisons.len() as f32;
    let p = Plot::new((0.5, n + 0.5), (0.0, 1.0));
    p.open(&mut out, "timeline", "win/loss timeline with the success rate");
    let mid = p.sy(0.5);
    let _ = write!(
        out,
        r##"<line x1="{}" x2="{}" y1="{mid:.1}" y2="{mid:.1}" stroke="#99a" stroke-dasharray="2 3"/>"##,
        p.left,
        p.w - p.right
    );
    for (i, c) in d.comparisons.iter().enumerate() {
        let x = p.sx(i as f32 + 1.0);
        let (class, color, fill) = if !c.ema_updated {
            ("excluded", "#999", "none")
        } else {
            match outcome(c.margin) {
                w if w > 0.75 => ("win", "#2a8a4a", "#2a8a4a"),
                w if w < 0.25 => ("loss", "#c33", "#c33"),
                _ => ("tie", "#888", "#888"),
            }
        };
        let y = p.sy(if c.ema_updated { ((c.margin + 1.0) / 2.0).clamp(0.0, 1.0) } else { 0.5 });
        let _ = write!(
            out,
            r#"<circle class="cmp {class}" data-margin="{:.4}" data-success="{:.4}" cx="{x:.1}" cy="{y:.1}" r="4" fill="{fill}" stroke="{color}"><title>{}: predictor {:.3}, baseline {:.3}, margin {:+.3}, confidence {:.2}{}</title></circle>"#,
            c.margin,
            c.success_rate,
            esc(&c.session),
            c.predictor_ndcg,
            c.baseline_ndcg,
            c.margin,
            c.confidence,
            if c.ema_updated { "" } else { " (excluded)" }
        );
    }
    let success: Vec<(f32, f32)> =
        d.comparisons.iter().enumerate().map(|(i, c)| (i as f32 + 1.0, c.success_rate)).collect();
    let alpha: Vec<(f32, f32)> = d.comparisons.iter().enumerate().map(|(i, c)| (i as f32 + 1.0, c.alpha)).collect();
    p.polyline(&mut out, "success_rate", &success, "#3a6fb0", false);
    p.polyline(&mut out, "alpha", &alpha, "#d08a20", true);
    p.x_label(&mut out, "scored session (dots: (margin + 1) / 2)");
    out.push_str("</svg>");
    out.push_str(&legend(&[
        ("#2a8a4a", "predictor won"),
        ("#c33", "baseline won"),
        ("#888", "tie"),
        ("#ddd", "excluded (hollow)"),
        ("#3a6fb0", "success rate"),
        ("#d08a20", "α"),
    ]));
    out
}

fn alpha_split(d: &ReportData) -> String {
    let a = d.state.alpha.clamp(0.0, 1.0);
    let w = 720.0f32;
    let bw = w * a;
    format!(
        r##"<svg data-chart="alpha" role="img" aria-label="alpha split" viewBox="0 0 {w} 44" width="{w}" height="44" xmlns="http://www.w3.org/2000/svg"><rect class="baseline-share" data-share="{a:.4}" x="0" y="4" width="{bw:.1}" height="26" fill="#8a8fa8"><title>baseline α = {a:.2}</title></rect><rect class="predictor-share" data-share="{:.4}" x="{bw:.1}" y="4" width="{:.1}" height="26" fill="#3a6fb0"><title>predictor 1 − α = {:.2}</title></rect><text x="6" y="22" fill="#fff" class="bar">baseline {:.0}%</text><text x="{}" y="22" fill="#fff" class="bar" text-anchor="end">predictor {:.0}%</text></svg>"##,
        1.0 - a,
        w - bw,
        1.0 - a,
        a * 100.0,
        w - 6.0,
        (1.0 - a) * 100.0
    )
}

fn canary_chart(d: &ReportData) -> String {
    let mut out = String::new();
    let any = d.runs.iter().any(|r| r.canary.iter().any(Option::is_some));
    if !any {
        return r#"<p class="empty" data-chart-empty="canary">No canary evaluation yet.</p>"#.to_owned();
    }
    let n = d.runs.len() as f32;
    let p = Plot::new((0.5, n + 0.5), (0.0, 1.0));
    p.open(&mut out, "canary", "canary NDCG@10 per training run");
    let names = ["candidate", "serving", "baseline"];
    let colors = ["#3a6fb0", "#2a8a4a", "#8a8fa8"];
    for (k, (name, color)) in names.iter().zip(colors).enumerate() {
        let pts: Vec<(f32, f32)> =
            d.runs.iter().enumerate().filter_map(|(i, r)| r.canary[k].map(|v| (i as f32 + 1.0, v))).collect();
        p.polyline(&mut out, name, &pts, color, k == 2);
        for &(x, y) in &pts {
            let _ = write!(
                out,
                r#"<circle class="canary {name}" data-ndcg="{y:.4}" cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{name}: {y:.3}</title></circle>"#,
                p.sx(x),
                p.sy(y)
            );
        }
    }
    p.x_label(&mut out, "training run");
    out.push_str("</svg>");
    out.push_str(&legend(&[("#3a6fb0", "candidate"), ("#2a8a4a", "serving model"), ("#8a8fa8", "baseline")]));
    out
}

/// Per-project comparisons, EMA-updating comparisons, win rate and EMA.
pub fn per_project(rows: &[ComparisonRow]) -> BTreeMap<String, (u32, u32, f32, f32)> {
    let mut out: BTreeMap<String, (u32, u32, f32, f32)> = BTreeMap::new();
    for c in rows {
        let key = c.project.clone().unwrap_or_else(|| "(no project)".to_owned());
        let e = out.entry(key).or_insert((0, 0, 0.0, INITIAL_SUCCESS));
        e.0 += 1;
        if c.ema_updated {
            let w = outcome(c.margin);
            e.1 += 1;
            e.2 += w;
            e.3 = (1.0 - EMA) * e.3 + EMA * w;
        }
    }
    for e in out.values_mut() {
        e.2 = if e.1 > 0 { e.2 / e.1 as f32 } else { 0.0 };
    }
    out
}

fn project_chart(d: &ReportData) -> String {
    let projects = per_project(&d.comparisons);
    if projects.is_empty() {
        return r#"<p class="empty" data-chart-empty="projects">No comparison yet.</p>"#.to_owned();
    }
    let row_h = 26.0f32;
    let h = row_h * projects.len() as f32 + 8.0;
    let mut out = format!(
        r#"<svg data-chart="projects" role="img" aria-label="per-project success" viewBox="0 0 720 {h}" width="720" height="{h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    for (i, (name, (n, compared, rate, ema))) in projects.iter().enumerate() {
        let y = 4.0 + i as f32 * row_h;
        let bw = 420.0 * ema;
        let _ = write!(
            out,
            r##"<text x="0" y="{:.1}" class="bar-label">{}</text><rect x="180" y="{y:.1}" width="420" height="18" fill="#eef"/><rect class="project" data-project="{}" data-ema="{ema:.4}" data-win-rate="{rate:.4}" data-compared="{compared}" x="180" y="{y:.1}" width="{bw:.1}" height="18" fill="#3a6fb0"><title>{}: EMA {ema:.2}, win rate {rate:.2} over {compared} of {n} sessions</title></rect><text x="610" y="{:.1}" class="tick">{ema:.2} ({compared}/{n})</text>"##,
            y + 14.0,
            esc(shared::storage::store::cap(name, 28)),
            esc(name),
            esc(name),
            y + 14.0
        );
    }
    out.push_str("</svg>");
    out
}

/// Grouped bars of R@10 and NDCG@10 per ranking, for both protocols of the latest LoCoMo evaluation.
fn benchmark_chart(d: &ReportData) -> String {
    let Some(b) = &d.benchmark else {
        return r#"<p class="empty" data-chart-empty="locomo">No evaluation yet: run <code>engram-trainer eval locomo PATH</code>.</p>"#
            .to_owned();
    };
    let rankings = ["bm25", "baseline", "predictor", "fused"];
    let colors = ["#b0b4c8", "#8a8fa8", "#3a6fb0", "#2a9d6f"];
    let protocols = [("across_users", "across users"), ("per_user", "per user")];
    let metrics = [("r@10", "R@10"), ("ndcg@10", "NDCG@10")];
    let (w, h, top, bottom) = (720.0f32, 240.0f32, 12.0f32, 40.0f32);
    let plot_h = h - top - bottom;
    let group_w = w / (protocols.len() * metrics.len()) as f32;
    let bar_w = (group_w - 24.0) / rankings.len() as f32;
    let mut out = format!(
        r#"<svg data-chart="locomo" role="img" aria-label="LoCoMo retrieval" viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    for tick in [0.0f32, 0.25, 0.5, 0.75, 1.0] {
        let y = top + plot_h * (1.0 - tick);
        let _ = write!(
            out,
            r##"<line x1="0" x2="{w}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="2" y="{:.1}" class="tick">{}</text>"##,
            y - 2.0,
            fmt_tick(tick)
        );
    }
    for (pi, (key, title)) in protocols.iter().enumerate() {
        for (mi, (metric, label)) in metrics.iter().enumerate() {
            let g = (pi * metrics.len() + mi) as f32;
            let x0 = g * group_w + 18.0;
            for (ri, ranking) in rankings.iter().enumerate() {
                let v = b[key]["overall"][ranking][metric].as_f64().filter(|v| v.is_finite()).unwrap_or(0.0) as f32;
                let bh = plot_h * v.clamp(0.0, 1.0);
                let x = x0 + ri as f32 * bar_w;
                let _ = write!(
                    out,
                    r#"<rect class="eval" data-protocol="{key}" data-ranking="{ranking}" data-metric="{metric}" data-value="{v:.4}" x="{x:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}" fill="{}"><title>{title}, {ranking}: {label} {v:.3}</title></rect>"#,
                    top + plot_h - bh,
                    bar_w - 2.0,
                    colors[ri]
                );
            }
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{title}: {label}</text>"#,
                x0 + bar_w * rankings.len() as f32 / 2.0,
                h - bottom + 16.0
            );
        }
    }
    out.push_str("</svg>");
    let items: Vec<(&str, &str)> = rankings.iter().copied().zip(colors).collect();
    out.push_str(&legend(&items));
    let questions = b["questions"].as_u64().unwrap_or(0);
    let recall = b["pool"]["recall"].as_f64().unwrap_or(0.0);
    let _ = write!(
        out,
        r#"<p class="sub">{questions} questions of {} conversation(s); the candidate pool holds {recall:.3} of the evidence.</p>"#,
        b["conversations"].as_array().map_or(0, Vec::len)
    );
    out
}

fn status_card(d: &ReportData) -> String {
    let s = &d.state;
    let failures = d.runs.iter().filter(|r| !r.passed).count();
    let mode = if !s.enabled {
        "disabled"
    } else if s.drift_reset_pending {
        "retraining after drift"
    } else if s.model_version.is_none() {
        "collecting data (cold start)"
    } else if !s.cold_start_exited {
        "warming (cold start)"
    } else {
        "active"
    };
    let cells = [
        ("mode", mode.to_owned()),
        ("success rate", format!("{:.2}", s.success_rate)),
        ("α (baseline weight)", format!("{:.2}", s.alpha)),
        ("model", s.model_version.map_or("none".to_owned(), |v| format!("v{v}"))),
        ("sessions scored", format!("{} ({} confident)", d.scored, s.scored_sessions)),
        ("comparisons", s.comparisons.to_string()),
        ("sessions after cold start", s.sessions_after_cold_start.to_string()),
        ("training runs", format!("{} ({failures} failed gates)", d.runs.len())),
        ("drift resets", d.drifts.len().to_string()),
    ];
    let mut out = String::from(r#"<div class="card" data-card="status">"#);
    for (k, v) in cells {
        let _ = write!(out, "<div><span>{}</span><b>{}</b></div>", esc(k), esc(&v));
    }
    let _ = write!(out, r#"</div><p class="status-line"><code>{}</code></p>"#, esc(&s.status_line()));
    out
}

fn types_table(d: &ReportData) -> String {
    if d.by_type.iter().all(|r| r.memories == 0 && r.injected == 0) {
        return r#"<p class="empty">No memory yet.</p>"#.to_owned();
    }
    let mut out = String::from(
        r#"<table data-table="knowledge-types"><tr><th>type</th><th>memories</th><th>injected</th><th>sessions</th><th>judged</th><th>helped</th></tr>"#,
    );
    for r in &d.by_type {
        let rate = if r.judged > 0 {
            format!("{:.0}% ({} of {})", 100.0 * r.helped as f64 / r.judged as f64, r.helped, r.judged)
        } else {
            "—".to_owned()
        };
        let _ = write!(
            out,
            r#"<tr data-type="{t}"><td>{t}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            r.memories,
            r.injected,
            r.sessions,
            r.judged,
            esc(&rate),
            t = esc(r.knowledge_type),
        );
    }
    out.push_str("</table>");
    let _ = write!(
        out,
        r#"<p class="sub">Injected counts every ranking that injected a memory of the type; judged, those whose usefulness is known (a label or a scored relevance); helped, those judged at least {HELPED}.</p>"#
    );
    out
}

fn told_twice_table(d: &ReportData) -> String {
    if d.told_twice.iter().all(|t| t.lessons == 0) {
        return r#"<p class="empty">No lesson yet.</p>"#.to_owned();
    }
    let mut out = String::from(
        r#"<table data-table="told-twice"><tr><th>project</th><th>lessons</th><th>given more than once</th><th>a memory already held</th><th>repeats held</th></tr>"#,
    );
    let all = shared::domain::training::history::total(&d.told_twice);
    for t in d.told_twice.iter().chain(std::iter::once(&all)) {
        let name = match (&t.project, std::ptr::eq(t, &all)) {
            (_, true) => "all projects".to_owned(),
            (Some(p), _) => p.clone(),
            (None, _) => "(no project)".to_owned(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&name),
            t.lessons,
            t.given_more_than_once,
            t.held,
            t.repeats_held
        );
    }
    out.push_str("</table>");
    out.push_str(
        r#"<p class="sub">A lesson given in two or more sessions was given more than once; it was already held when a memory learned from its first giving (not forgotten since) would have had it at a later one: what the user need not have said again.</p>"#,
    );
    out
}

fn failures_table(d: &ReportData) -> String {
    let failed: Vec<&RunRow> = d.runs.iter().filter(|r| r.failure.is_some()).collect();
    if failed.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("<h3>Runs that failed the gates</h3><table><tr><th>version</th><th>when</th><th>why</th></tr>");
    for r in failed.iter().rev().take(20) {
        let _ = write!(
            out,
            "<tr><td>v{}</td><td>{}</td><td>{}</td></tr>",
            r.version,
            esc(&Ts(r.at_ms).to_rfc3339()),
            esc(r.failure.as_deref().unwrap_or_default())
        );
    }
    out.push_str("</table>");
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;color:#223;margin:24px auto;max-width:780px;padding:0 16px}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px}h3{font-size:15px}\
.sub{color:#667;margin:0 0 16px}.card{display:grid;grid-template-columns:repeat(3,1fr);gap:8px}\
.card div{background:#f3f4f8;border-radius:6px;padding:8px}.card span{display:block;color:#667;font-size:12px}\
.card b{font-size:16px}svg{display:block;max-width:100%;height:auto}.tick{font-size:11px;fill:#556}\
.axis{font-size:12px;fill:#445}.bar{font-size:13px;font-weight:600}.bar-label{font-size:12px;fill:#223}\
.legend{font-size:12px;color:#556;margin:4px 0 0}.legend span{margin-right:14px}\
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}\
table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #e3e3ea;padding:3px 8px;text-align:left}\
.empty{color:#889;font-style:italic}";

/// The whole page.
pub fn render(d: &ReportData) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Engram predictor report</title>\
         <style>{STYLE}</style></head><body><h1>Engram predictor</h1><p class=\"sub\">Generated {}.</p>",
        esc(&d.generated.to_rfc3339())
    );
    out.push_str(&status_card(d));
    out.push_str("<h2>Training curve</h2>");
    out.push_str(&training_chart(d));
    out.push_str("<h2>Predictor against baseline, session by session</h2>");
    out.push_str(&timeline_chart(d));
    out.push_str("<h2>Influence split (α)</h2>");
    out.push_str(&alpha_split(d));
    out.push_str("<h2>Canary NDCG@10</h2>");
    out.push_str(&canary_chart(d));
    out.push_str("<h2>Success per project</h2>");
    out.push_str(&project_chart(d));
    out.push_str("<h2>Memories by knowledge type</h2>");
    out.push_str(&types_table(d));
    out.push_str("<h2>Told twice: lessons given more than once</h2>");
    out.push_str(&told_twice_table(d));
    out.push_str("<h2>Retrieval on LoCoMo (engram-trainer eval locomo)</h2>");
    out.push_str(&benchmark_chart(d));
    out.push_str(&failures_table(d));
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> ReportData {
        let state = PredictorState {
            enabled: true,
            model_version: Some(2),
            checkpoint: None,
            scored_sessions: 3,
            min_sessions: 10,
            success_rate: 0.55,
            comparisons: 3,
            cold_start_exited: false,
            sessions_after_cold_start: 0,
            drift_reset_pending: false,
            alpha: 1.0,
        };
        let cmp = |i: i64, margin: f32, ema: bool, project: &str| ComparisonRow {
            session: format!("claude:s{i}"),
            project: Some(project.into()),
            predictor_ndcg: 0.5 + margin,
            baseline_ndcg: 0.5,
            margin,
            ema_updated: ema,
            success_rate: 0.5 + 0.01 * i as f32,
            alpha: 1.0,
            confidence: 0.8,
            at_ms: i,
        };
        ReportData {
            runs: vec![
                RunRow {
                    version: 1,
                    loss: 0.4,
                    valid_loss: Some(0.5),
                    samples: 20,
                    canary: [Some(0.6), None, Some(0.5)],
                    top5: None,
                    passed: true,
                    failure: None,
                    drift: false,
                    at_ms: 10,
                },
                RunRow {
                    version: 2,
                    loss: 0.3,
                    valid_loss: None,
                    samples: 30,
                    canary: [Some(0.4), Some(0.6), Some(0.5)],
                    top5: Some(0.3),
                    passed: false,
                    failure: Some("top-5 overlap <0.6>".into()),
                    drift: false,
                    at_ms: 20,
                },
            ],
            comparisons: vec![cmp(1, 0.2, true, "a"), cmp(2, -0.1, true, "b"), cmp(3, 0.0, false, "a")],
            drifts: vec![(15, 0.2)],
            state,
            scored: 4,
            generated: Ts(0),
            by_type: vec![
                TypeRow { knowledge_type: "fact", memories: 4, injected: 6, sessions: 3, judged: 4, helped: 3 },
                TypeRow { knowledge_type: "decision", memories: 1, ..TypeRow::default() },
            ],
            told_twice: vec![ToldTwice {
                project: Some("webapp".into()),
                lessons: 7,
                given_more_than_once: 3,
                held: 2,
                repeats_held: 4,
            }],
            benchmark: Some(serde_json::json!({
                "questions": 10, "conversations": ["c"], "pool": {"recall": 0.9},
                "across_users": {"overall": {"bm25": {"r@10": 0.6, "ndcg@10": 0.45}, "predictor": {"r@10": 0.7, "ndcg@10": 0.55}}},
                "per_user": {"overall": {"fused": {"r@10": 0.75, "ndcg@10": 0.6}}},
            })),
        }
    }

    #[test]
    fn every_chart_is_drawn_with_its_data() {
        let html = render(&data());
        for chart in ["training", "timeline", "alpha", "canary", "projects", "locomo"] {
            assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart} missing");
        }
        assert_eq!(html.matches("class=\"cmp win\"").count(), 1);
        assert_eq!(html.matches("class=\"cmp loss\"").count(), 1);
        assert_eq!(html.matches("class=\"cmp excluded\"").count(), 1);
        assert_eq!(html.matches("class=\"run promoted\"").count(), 1);
        assert_eq!(html.matches("class=\"run failed\"").count(), 1);
        assert_eq!(html.matches("class=\"drift\"").count(), 1);
        assert!(html.contains("top-5 overlap &lt;0.6&gt;"), "text is escaped");
        assert!(
            html.contains("<tr><td>webapp</td><td>7</td><td>3</td><td>2</td><td>4</td></tr>"),
            "told twice per project"
        );
        assert!(html.contains("<tr><td>all projects</td><td>7</td><td>3</td><td>2</td><td>4</td></tr>"));
        assert_eq!(html.matches("class=\"eval\"").count(), 16, "2 protocols × 2 metrics × 4 rankings");
        assert!(
            html.contains(r#"data-protocol="per_user" data-ranking="fused" data-metric="ndcg@10" data-value="0.6000""#)
        );
        assert!(!html.contains("<script"), "no scripts");
        assert!(!html.contains("http://") || html.matches("http://").count() == html.matches("xmlns=").count());
    }

    #[test]
    fn memories_are_counted_under_seed_004_types() {
        let html = render(&data());
        assert!(html.contains(r#"<tr data-type="fact"><td>fact</td><td>4</td><td>6</td><td>3</td><td>4</td><td>75% (3 of 4)</td></tr>"#), "{html}");
        assert!(html.contains(
            r#"<tr data-type="decision"><td>decision</td><td>1</td><td>0</td><td>0</td><td>0</td><td>—</td></tr>"#
        ));
        let dir = tempfile::tempdir().unwrap();
        let mut j = shared::projection::open(&Paths::at(dir.path()), "test").unwrap();
        let mut add = |text: &str, t: &str| {
            let new = shared::domain::memory::ops::NewMemory {
                text: text.into(),
                memory_type: MemoryType::from_stored(t),
                importance: 0.5,
                project: None,
                tags: vec![],
                pinned: false,
            };
            shared::domain::memory::ops::add(&mut j, new, &shared::domain::memory::ops::Origin::user(), Ts(1_000))
                .unwrap()
        };
        add("Redis must run before the integration tests", "gotcha");
        add("Always run cargo fmt before committing", "correction");
        let gone = add("The staging box is called zebra", "fact");
        add("We ship with cargo dist", "decision");
        shared::domain::memory::ops::forget(&mut j, gone.as_str(), None, Ts(2_000)).unwrap();
        let rows = by_type(j.store()).unwrap();
        let n: Vec<(&str, u64)> = rows.iter().map(|r| (r.knowledge_type, r.memories)).collect();
        assert_eq!(
            n,
            [
                ("fact", 0),
                ("decision", 1),
                ("preference", 1),
                ("pattern", 0),
                ("issue", 1),
                ("context", 0),
                ("discovery", 0)
            ]
        );
        assert!(rows.iter().all(|r| r.injected == 0 && r.sessions == 0 && r.judged == 0));
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(0.25), "0.25");
        assert_eq!(fmt_tick(0.0125), "0.013");
        assert_eq!(fmt_tick(1.0), "1");
        assert_eq!(fmt_tick(42.4), "42");
    }

    #[test]
    fn per_project_success_has_its_own_ema() {
        let p = per_project(&data().comparisons);
        assert_eq!(p["a"], (2, 1, 1.0, 0.55));
        assert_eq!(p["b"], (1, 1, 0.0, 0.45));
    }

    #[test]
    fn an_empty_history_renders_placeholders() {
        let mut d = data();
        d.runs.clear();
        d.comparisons.clear();
        d.drifts.clear();
        d.benchmark = None;
        let html = render(&d);
        assert!(html.contains("data-chart-empty=\"locomo\""));
        assert!(html.contains("data-chart-empty=\"training\""));
        assert!(html.contains("data-chart-empty=\"timeline\""));
        assert!(html.contains("data-chart=\"alpha\""));
    }
}
