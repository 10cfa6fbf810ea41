//! Running many scenarios, summing their measures, checking the thresholds
//! of issues 15 and 17, and printing the report (text or JSON).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::Scenario;
use super::judge::{Measures, Ratio, judge};
use super::run::{self, Options, Trace};
use crate::driver::Binaries;

/// One scenario's result.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    /// Its name.
    pub name: String,
    /// Its stacks.
    pub stacks: Vec<String>,
    /// Its kinds.
    pub kinds: Vec<String>,
    /// Its measures (empty when it could not run).
    pub measures: Measures,
    /// Hook wall times: event → milliseconds.
    #[serde(skip)]
    pub hooks: Vec<(String, Duration)>,
    /// Problems met on the way.
    pub problems: Vec<String>,
    /// Why it could not run, if it could not.
    pub error: Option<String>,
    /// The memories `memory list` showed at the end.
    pub memories: Vec<crate::driver::ListedMemory>,
    /// Wall time of the run.
    #[serde(serialize_with = "secs")]
    pub wall: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 10.0).round() / 10.0)
}

impl ScenarioReport {
    /// Judges a trace.
    pub fn of(s: &Scenario, trace: &Trace) -> ScenarioReport {
        ScenarioReport {
            name: s.name.clone(),
            stacks: s.stacks.clone(),
            kinds: s.kinds.clone(),
            measures: judge(s, trace),
            hooks: trace.hooks.iter().map(|h| (h.event.clone(), h.duration)).collect(),
            problems: trace.problems.clone(),
            error: None,
            memories: trace.snapshots.last().map(|s| s.memories.clone()).unwrap_or_default(),
            wall: trace.wall,
        }
    }
}

/// Plays every scenario, `jobs` at a time, each in its own world; calls
/// `progress` after each one.
pub fn run_all(
    scenarios: &[Scenario],
    bins: &Binaries,
    opts: Options,
    jobs: usize,
    progress: &(dyn Fn(&ScenarioReport) + Sync),
) -> Vec<ScenarioReport> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<ScenarioReport>>> = Mutex::new(vec![None; scenarios.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(s) = scenarios.get(i) else { break };
                    let report = match run::run(s, bins, opts) {
                        Ok(trace) => ScenarioReport::of(s, &trace),
                        Err(e) => ScenarioReport {
                            name: s.name.clone(),
                            stacks: s.stacks.clone(),
                            kinds: s.kinds.clone(),
                            measures: Measures::default(),
                            hooks: Vec::new(),
                            problems: Vec::new(),
                            error: Some(e.0),
                            memories: Vec::new(),
                            wall: Duration::ZERO,
                        },
                    };
                    progress(&report);
                    if let Ok(mut o) = out.lock() {
                        o[i] = Some(report);
                    }
                }
            });
        }
    });
    out.into_inner().unwrap_or_default().into_iter().flatten().collect()
}

/// Measures summed over scenarios.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// Scenarios summed.
    pub scenarios: u32,
    /// Recall by the moment.
    pub recall: Ratio,
    /// Recall after compactions.
    pub recall_after_compaction: Ratio,
    /// Recall of lessons from other projects.
    pub recall_cross_project: Ratio,
    /// The same, at session starts, general preferences aside (issue 17).
    pub recall_cross_project_start: Ratio,
    /// Noise.
    pub noise: Ratio,
    /// Leaks.
    pub leaks: u32,
    /// Forgets exercised.
    pub forgets_exercised: Ratio,
    /// Forgets durable.
    pub forgets_durable: Ratio,
    /// Extraction coverage.
    pub extraction: Ratio,
    /// Traps that became memories.
    pub false_lessons: u32,
    /// Labelled events.
    pub events: u32,
    /// Characters injected at them.
    pub injected_chars: u64,
    /// Labelled events with an injection.
    pub injections: u32,
    /// Needs at tool calls stated by the call's own hook.
    pub at_tool: Ratio,
    /// Recall by moment.
    pub recall_by_moment: BTreeMap<String, Ratio>,
    /// Recall by lesson kind.
    pub recall_by_kind: BTreeMap<String, Ratio>,
    /// Problems met.
    pub problems: u32,
    /// Scenarios that could not run.
    pub errors: u32,
}

impl Totals {
    fn add(&mut self, r: &ScenarioReport) {
        let m = &r.measures;
        self.scenarios += 1;
        self.recall = self.recall.plus(m.recall);
        self.recall_after_compaction = self.recall_after_compaction.plus(m.recall_after_compaction);
        self.recall_cross_project = self.recall_cross_project.plus(m.recall_cross_project);
        self.recall_cross_project_start = self.recall_cross_project_start.plus(m.recall_cross_project_start);
        self.at_tool = self.at_tool.plus(m.at_tool);
        self.noise = self.noise.plus(m.noise);
        self.leaks += m.leaks.len() as u32;
        self.forgets_exercised = self.forgets_exercised.plus(m.forgets_exercised);
        self.forgets_durable = self.forgets_durable.plus(m.forgets_durable);
        self.extraction = self.extraction.plus(m.extraction);
        self.false_lessons += m.false_lessons.len() as u32;
        self.events += m.events;
        self.injected_chars += m.injected_chars;
        self.injections += m.injections;
        for (k, v) in &m.recall_by_moment {
            let e = self.recall_by_moment.entry(k.clone()).or_default();
            *e = e.plus(*v);
        }
        for (k, v) in &m.recall_by_kind {
            let e = self.recall_by_kind.entry(k.clone()).or_default();
            *e = e.plus(*v);
        }
        self.problems += r.problems.len() as u32;
        self.errors += u32::from(r.error.is_some());
    }

    /// Mean characters injected per labelled event.
    pub fn chars_per_event(&self) -> Option<f64> {
        (self.events > 0).then(|| self.injected_chars as f64 / f64::from(self.events))
    }
}

/// Latency of one hook event.
#[derive(Clone, Debug, Serialize)]
pub struct HookStats {
    /// Calls.
    pub calls: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn stats(mut d: Vec<Duration>) -> HookStats {
    d.sort();
    let ms = |x: Duration| (x.as_secs_f64() * 1e4).round() / 10.0;
    HookStats { calls: d.len(), p50_ms: ms(percentile(&d, 0.5)), p95_ms: ms(percentile(&d, 0.95)) }
}

/// Read-side hook events (the ones that inject).
const READ_SIDE: [&str; 3] = ["SessionStart", "UserPromptSubmit", "PreToolUse"];

/// Everything the report shows.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Per scenario.
    pub scenarios: Vec<ScenarioReport>,
    /// All scenarios.
    pub total: Totals,
    /// Per kind of scenario.
    pub by_kind: BTreeMap<String, Totals>,
    /// Per stack.
    pub by_stack: BTreeMap<String, Totals>,
    /// Hook latency per event, plus `read side` and `write side`.
    pub hooks: BTreeMap<String, HookStats>,
}

impl Summary {
    /// Sums reports.
    pub fn of(scenarios: Vec<ScenarioReport>) -> Summary {
        let mut total = Totals::default();
        let mut by_kind: BTreeMap<String, Totals> = BTreeMap::new();
        let mut by_stack: BTreeMap<String, Totals> = BTreeMap::new();
        let mut times: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
        for r in &scenarios {
            total.add(r);
            for k in &r.kinds {
                by_kind.entry(k.clone()).or_default().add(r);
            }
            for s in &r.stacks {
                by_stack.entry(s.clone()).or_default().add(r);
            }
            for (event, d) in &r.hooks {
                times.entry(event.clone()).or_default().push(*d);
                let side = if READ_SIDE.contains(&event.as_str()) { "read side" } else { "write side" };
                times.entry(side.to_owned()).or_default().push(*d);
            }
        }
        let hooks = times.into_iter().map(|(k, v)| (k, stats(v))).collect();
        Summary { scenarios, total, by_kind, by_stack, hooks }
    }

    /// The report as JSON.
    pub fn json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        v["thresholds"] = json!(
            Thresholds::ISSUES
                .check(&self.total)
                .into_iter()
                .map(|c| json!({"what": c.what, "value": c.value, "pass": c.pass}))
                .collect::<Vec<_>>()
        );
        v
    }

    /// The report as text; `verbose` adds every miss, noisy event, leak and
    /// problem.
    pub fn text(&self, verbose: bool) -> String {
        let mut o = String::new();
        let calls: usize = self.scenarios.iter().map(|s| s.hooks.len()).sum();
        let _ = writeln!(
            o,
            "Engram scenario benchmark: {} scenarios, {} labelled events, {calls} hook calls\n",
            self.scenarios.len(),
            self.total.events
        );
        let _ = writeln!(
            o,
            "{:<34} {:>7} {:>7} {:>7} {:>7} {:>5} {:>6} {:>7} {:>8} {:>5}",
            "scenario", "recall", "aft-cmp", "x-proj", "noise", "leaks", "forget", "extract", "chars/ev", "false"
        );
        for r in &self.scenarios {
            if let Some(e) = &r.error {
                let _ = writeln!(o, "{:<34} could not run: {}", r.name, e.lines().next().unwrap_or(""));
                continue;
            }
            let m = &r.measures;
            let forget = if m.forgets_exercised.of == 0 {
                "-".to_owned()
            } else {
                format!("{}/{}", m.forgets_durable.hit, m.forgets_exercised.of)
            };
            let _ = writeln!(
                o,
                "{:<34} {:>7} {:>7} {:>7} {:>7} {:>5} {:>6} {:>7} {:>8} {:>5}",
                r.name,
                frac(m.recall),
                frac(m.recall_after_compaction),
                frac(m.recall_cross_project),
                frac(m.noise),
                m.leaks.len(),
                forget,
                frac(m.extraction),
                m.chars_per_event().map_or("-".to_owned(), |c| format!("{c:.0}")),
                m.false_lessons.len(),
            );
        }
        group_table(&mut o, "By kind of scenario", &self.by_kind);
        group_table(&mut o, "By stack", &self.by_stack);
        let _ = writeln!(o, "\nRecall by moment:");
        for (k, v) in &self.total.recall_by_moment {
            let _ = writeln!(o, "  {k:<20} {}", ratio(*v));
        }
        let _ = writeln!(o, "Recall by kind of lesson:");
        for (k, v) in &self.total.recall_by_kind {
            let _ = writeln!(o, "  {k:<20} {}", ratio(*v));
        }
        let t = &self.total;
        let _ = writeln!(o, "\nOverall:");
        let _ = writeln!(o, "  needed-lesson recall by the moment  {}", ratio(t.recall));
        let _ = writeln!(o, "  recall after compactions            {}", ratio(t.recall_after_compaction));
        let _ = writeln!(o, "  needed lesson at the tool call      {}", ratio(t.at_tool));
        let _ = writeln!(o, "  recall of lessons from other projects {}", ratio(t.recall_cross_project));
        let _ = writeln!(o, "    of which at session start (issue 17) {}", ratio(t.recall_cross_project_start));
        let _ = writeln!(o, "  noise rate                          {}", ratio(t.noise));
        let _ = writeln!(o, "  cross-project leaks                 {}", t.leaks);
        let _ = writeln!(
            o,
            "  forget durable                      {} durable of {} exercised ({} forgets)",
            t.forgets_durable.hit, t.forgets_exercised.hit, t.forgets_exercised.of
        );
        let _ = writeln!(o, "  extraction coverage                 {}", ratio(t.extraction));
        let _ = writeln!(o, "  false lessons (traps learned)       {}", t.false_lessons);
        let _ = writeln!(
            o,
            "  mean injected characters per event  {} ({} of {} labelled events got an injection)",
            t.chars_per_event().map_or("-".to_owned(), |c| format!("{c:.0}")),
            t.injections,
            t.events
        );
        let _ =
            writeln!(o, "  problems met                        {} ({} scenarios could not run)", t.problems, t.errors);
        let _ = writeln!(o, "\nHooks (wall time of the installed command, run as the harness runs it):");
        for (k, h) in &self.hooks {
            let _ = writeln!(o, "  {k:<20} {:>6} calls  p50 {:>6.1} ms  p95 {:>6.1} ms", h.calls, h.p50_ms, h.p95_ms);
        }
        let _ = writeln!(o, "\nThresholds (issue 15, and issue 17's cross-project cases):");
        for c in Thresholds::ISSUES.check(&self.total) {
            let _ = writeln!(o, "  [{}] {:<46} {}", if c.pass { "pass" } else { "FAIL" }, c.what, c.value);
        }
        if verbose {
            o.push_str(&self.details());
        }
        o
    }

    fn details(&self) -> String {
        let mut o = String::new();
        for r in &self.scenarios {
            let m = &r.measures;
            let _ = writeln!(o, "\n== {} ({:.1} s)", r.name, r.wall.as_secs_f64());
            if let Some(e) = &r.error {
                let _ = writeln!(o, "  could not run: {e}");
            }
            for x in &m.misses {
                let _ =
                    writeln!(o, "  miss   line {:>3} {:<10} {:<16} needed {}", x.line, x.session, x.moment, x.lesson);
            }
            for x in &m.noisy {
                for item in &x.items {
                    let _ = writeln!(o, "  noise  line {:>3} {:<10} {}", x.line, x.session, cut(item, 110));
                }
            }
            for x in &m.leaks {
                let _ = writeln!(
                    o,
                    "  leak   line {:>3} {:<10} {} reached {}: {}",
                    x.line,
                    x.session,
                    x.lesson,
                    x.project,
                    cut(&x.text, 90)
                );
            }
            for x in &m.not_extracted {
                let _ = writeln!(o, "  never extracted: {x}");
            }
            if m.forgets_exercised.of > m.forgets_exercised.hit {
                let _ = writeln!(o, "  a forget was not exercised: the lesson was not listed when forgotten");
            }
            if m.forgets_durable.hit < m.forgets_durable.of {
                let _ = writeln!(o, "  a forgotten lesson came back (listed again or injected)");
            }
            for x in &m.false_lessons {
                let _ = writeln!(o, "  false lesson learned: {x}");
            }
            for x in &r.problems {
                let _ = writeln!(o, "  problem: {}", cut(x, 150));
            }
            for (lesson, lines) in &m.evidence {
                for line in lines {
                    let _ = writeln!(o, "  {lesson} was stated by: {}", cut(line, 110));
                }
            }
            let _ = writeln!(o, "  memories listed at the end:");
            for mem in &r.memories {
                let project = mem.project.as_deref().unwrap_or("-");
                let _ = writeln!(o, "    [{}] ({project}) {}", mem.memory_type, cut(&mem.content, 120));
            }
        }
        o
    }
}

/// A table of totals per group (kind of scenario, stack).
fn group_table(o: &mut String, title: &str, groups: &BTreeMap<String, Totals>) {
    let _ = writeln!(o, "\n{title}:");
    let _ = writeln!(
        o,
        "  {:<16} {:>4} {:>14} {:>14} {:>14} {:>5} {:>14}",
        "", "n", "recall", "after compact.", "noise", "leaks", "extraction"
    );
    for (k, t) in groups {
        let _ = writeln!(
            o,
            "  {:<16} {:>4} {:>14} {:>14} {:>14} {:>5} {:>14}",
            k,
            t.scenarios,
            ratio(t.recall),
            ratio(t.recall_after_compaction),
            ratio(t.noise),
            t.leaks,
            ratio(t.extraction)
        );
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() > n { format!("{}…", s.chars().take(n).collect::<String>()) } else { s.to_owned() }
}

fn frac(r: Ratio) -> String {
    if r.of == 0 { "-".to_owned() } else { format!("{}/{}", r.hit, r.of) }
}

fn ratio(r: Ratio) -> String {
    match r.value() {
        Some(v) => format!("{v:.3} ({}/{})", r.hit, r.of),
        None => "-".to_owned(),
    }
}

/// One threshold checked.
#[derive(Clone, Debug)]
pub struct Check {
    /// What is measured, and the bound.
    pub what: String,
    /// The value found.
    pub value: String,
    /// Whether it meets the bound.
    pub pass: bool,
}

/// The targets of the scenario suite.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// Recall by the moment, at least.
    pub recall: f64,
    /// Recall after compactions, at least.
    pub recall_after_compaction: f64,
    /// Recall of lessons from other projects with the stack, at least.
    pub recall_cross_project: f64,
    /// Needs at tool calls whose own hook stated the lesson, at least.
    pub at_tool: f64,
    /// Noise rate, at most.
    pub noise: f64,
    /// Extraction coverage, at least.
    pub extraction: f64,
    /// Mean injected characters per event, at most.
    pub chars_per_event: f64,
}

impl Thresholds {
    /// The targets the suite holds the read and write sides to.
    pub const ISSUES: Thresholds = Thresholds {
        recall: 0.90,
        recall_after_compaction: 0.90,
        recall_cross_project: 0.90,
        at_tool: 0.80,
        noise: 0.05,
        extraction: 0.90,
        chars_per_event: 1500.0,
    };

    /// Every threshold against `t`. A measure without a case fails (the
    /// suite must exercise it).
    pub fn check(&self, t: &Totals) -> Vec<Check> {
        let at_least = |what: &str, r: Ratio, bound: f64| Check {
            what: format!("{what} >= {bound:.2}"),
            value: ratio(r),
            pass: r.value().is_some_and(|v| v >= bound),
        };
        let mut out = vec![
            at_least("needed-lesson recall by the moment", t.recall, self.recall),
            at_least("recall after compactions", t.recall_after_compaction, self.recall_after_compaction),
            at_least(
                "cross-project recall at session start (same stack)",
                t.recall_cross_project_start,
                self.recall_cross_project,
            ),
            at_least("needed lesson at the tool call", t.at_tool, self.at_tool),
            Check {
                what: format!("noise rate <= {:.2}", self.noise),
                value: ratio(t.noise),
                pass: t.noise.value().is_some_and(|v| v <= self.noise),
            },
            Check { what: "cross-project leaks = 0".into(), value: t.leaks.to_string(), pass: t.leaks == 0 },
            Check {
                what: "false lessons (traps learned) = 0".into(),
                value: t.false_lessons.to_string(),
                pass: t.false_lessons == 0,
            },
            Check {
                what: "forget durable (every forget exercised and durable)".into(),
                value: format!("{} durable of {} forgets", t.forgets_durable.hit, t.forgets_exercised.of),
                pass: t.forgets_exercised.of > 0
                    && t.forgets_exercised.hit == t.forgets_exercised.of
                    && t.forgets_durable.hit == t.forgets_exercised.of,
            },
            at_least("extraction coverage", t.extraction, self.extraction),
            Check {
                what: format!("mean injected characters per event <= {:.0}", self.chars_per_event),
                value: t.chars_per_event().map_or("-".to_owned(), |c| format!("{c:.0}")),
                pass: t.chars_per_event().is_some_and(|c| c <= self.chars_per_event),
            },
        ];
        out.push(Check {
            what: "no hook failed, blocked or timed out; every scenario ran".into(),
            value: format!("{} problems, {} errors", t.problems, t.errors),
            pass: t.problems == 0 && t.errors == 0,
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let d: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
        assert_eq!(percentile(&d, 0.5), Duration::from_millis(10));
        assert_eq!(percentile(&d, 0.95), Duration::from_millis(19));
        assert_eq!(percentile(&d[..1], 0.95), Duration::from_millis(1));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn thresholds_fail_without_cases_and_pass_at_the_bounds() {
        let empty = Thresholds::ISSUES.check(&Totals::default());
        assert!(empty.iter().filter(|c| !c.pass).count() >= 7, "{empty:?}");
        let good = Totals {
            scenarios: 1,
            recall: Ratio { hit: 9, of: 10 },
            recall_after_compaction: Ratio { hit: 9, of: 10 },
            recall_cross_project: Ratio { hit: 9, of: 10 },
            recall_cross_project_start: Ratio { hit: 9, of: 10 },
            at_tool: Ratio { hit: 8, of: 10 },
            noise: Ratio { hit: 1, of: 20 },
            forgets_exercised: Ratio { hit: 2, of: 2 },
            forgets_durable: Ratio { hit: 2, of: 2 },
            extraction: Ratio { hit: 9, of: 10 },
            events: 10,
            injected_chars: 15_000,
            ..Totals::default()
        };
        let checks = Thresholds::ISSUES.check(&good);
        assert!(checks.iter().all(|c| c.pass), "{checks:?}");
        let leaky = Totals { leaks: 1, ..good.clone() };
        assert!(Thresholds::ISSUES.check(&leaky).iter().any(|c| !c.pass));
        let fooled = Totals { false_lessons: 1, ..good };
        assert!(Thresholds::ISSUES.check(&fooled).iter().any(|c| !c.pass && c.what.starts_with("false lessons")));
    }
}
