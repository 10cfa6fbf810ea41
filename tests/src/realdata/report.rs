//! The real-data benchmark's figures, its text and JSON reports, and the
//! floors (a ratchet) `--check` and CI hold the product to.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use super::KINDS;
use super::score::{Scored, ScoredMemory, Verdict};
use crate::scenario::judge::Ratio;
use crate::scenario::report::Check;

/// The figures of one repository, for a leave-one-repository-out protocol.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RepoFigures {
    /// `owner/name`.
    pub repo: String,
    /// Its labelled projects.
    pub projects: Vec<String>,
    /// The languages of its sessions.
    pub languages: Vec<String>,
    /// Its labelled sessions.
    pub sessions: u32,
    /// Its lessons recalled.
    pub recall: Ratio,
    /// The memories attributed to it that are lessons.
    pub precision: Ratio,
    /// The memories attributed to it that are traps.
    pub trap_rate: Ratio,
}

/// The benchmark's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    /// Labelled sessions.
    pub sessions: u32,
    /// Repositories they come from.
    pub repositories: u32,
    /// Memories Engram kept.
    pub memories: u32,
    /// Of them, global (no project).
    pub global_memories: u32,
    /// Of them, attributed to no labelled project.
    pub unattributed_memories: u32,
    /// Memories over labelled sessions.
    pub memories_per_session: f64,
    /// Lessons recalled, over all lessons.
    pub recall: Ratio,
    /// By kind.
    pub recall_by_kind: BTreeMap<String, Ratio>,
    /// Lessons of English sessions.
    pub recall_english: Ratio,
    /// Lessons of the other sessions.
    pub recall_not_english: Ratio,
    /// By the session's language.
    pub recall_by_language: BTreeMap<String, Ratio>,
    /// Lesson memories (a lesson of their project, no trap), over all memories.
    pub precision: Ratio,
    /// Trap memories, over all memories.
    pub trap_rate: Ratio,
    /// Per repository, sorted by name.
    pub per_repository: Vec<RepoFigures>,
}

impl Figures {
    /// The figures of `s`.
    pub fn of(s: &Scored) -> Figures {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut recall = Ratio::default();
        let mut by_kind: BTreeMap<String, Ratio> = KINDS.iter().map(|k| ((*k).to_owned(), Ratio::default())).collect();
        let mut by_language: BTreeMap<String, Ratio> = BTreeMap::new();
        let (mut english, mut not_english) = (Ratio::default(), Ratio::default());
        for l in &s.lessons {
            recall.add(l.recalled());
            by_kind.entry(l.kind.clone()).or_default().add(l.recalled());
            by_language.entry(l.language.clone()).or_default().add(l.recalled());
            if l.language == "en" { &mut english } else { &mut not_english }.add(l.recalled());
        }
        let mut precision = Ratio::default();
        let mut trap_rate = Ratio::default();
        for m in &s.memories {
            precision.add(m.verdict() == Verdict::Lesson);
            trap_rate.add(m.verdict() == Verdict::Trap);
        }
        let repos: BTreeSet<&str> = s.sessions.iter().map(|x| x.repo.as_str()).collect();
        let per_repository = repos
            .iter()
            .map(|repo| {
                let sessions: Vec<_> = s.sessions.iter().filter(|x| x.repo == *repo).collect();
                let projects: BTreeSet<String> = sessions.iter().map(|x| x.project.clone()).collect();
                let languages: BTreeSet<String> = sessions.iter().map(|x| x.language.clone()).collect();
                let mut r = RepoFigures {
                    repo: (*repo).to_owned(),
                    projects: projects.iter().cloned().collect(),
                    languages: languages.into_iter().collect(),
                    sessions: count(sessions.len()),
                    recall: Ratio::default(),
                    precision: Ratio::default(),
                    trap_rate: Ratio::default(),
                };
                for l in s.lessons.iter().filter(|l| l.repo == *repo) {
                    r.recall.add(l.recalled());
                }
                for m in s.memories.iter().filter(|m| !m.projects.is_disjoint(&projects)) {
                    r.precision.add(m.verdict() == Verdict::Lesson);
                    r.trap_rate.add(m.verdict() == Verdict::Trap);
                }
                r
            })
            .collect();
        Figures {
            sessions: count(s.sessions.len()),
            repositories: count(repos.len()),
            memories: count(s.memories.len()),
            global_memories: count(s.memories.iter().filter(|m| m.memory.project.is_none()).count()),
            unattributed_memories: count(s.memories.iter().filter(|m| m.verdict() == Verdict::Unattributed).count()),
            memories_per_session: if s.sessions.is_empty() {
                0.0
            } else {
                s.memories.len() as f64 / s.sessions.len() as f64
            },
            recall,
            recall_by_kind: by_kind,
            recall_english: english,
            recall_not_english: not_english,
            recall_by_language: by_language,
            precision,
            trap_rate,
            per_repository,
        }
    }
}

/// The bounds `--check` and CI hold the figures to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Floors {
    /// Recall, at least.
    pub recall: f64,
    /// Recall of the lessons of non-English sessions, at least.
    pub recall_not_english: f64,
    /// Precision, at least.
    pub precision: f64,
    /// Trap rate, at most.
    pub trap_rate: f64,
}

/// The ratchet: what `main` measures today, rounded down (the trap rate up)
/// to two decimals, so that extraction may only get better
/// (`cargo run --release -p tests --bin realdata`), 43 sessions: recall
/// 0.372 (29/78), not in English 0.226 (7/31), precision 0.517 (31/60),
/// trap memories 0.017 (1/60), since rules stated in other languages
/// (`extract/lingua.rs`) and the agent's diagnoses after trouble
/// (`extract/diagnosis.rs`). Raise a floor when a change measures better,
/// and say so here.
pub const FLOORS: Floors = Floors { recall: 0.38, recall_not_english: 0.25, precision: 0.69, trap_rate: 0.02 };

impl Floors {
    /// Every bound against `f`. Precision without a memory fails (the
    /// benchmark must keep something); so does recall without a lesson.
    pub fn check(&self, f: &Figures) -> Vec<Check> {
        let at_least = |what: &str, r: Ratio, bound: f64| Check {
            what: format!("{what} >= {bound:.2}"),
            value: ratio(r),
            pass: r.value().is_some_and(|v| v >= bound),
        };
        vec![
            at_least("recall", f.recall, self.recall),
            Check {
                what: format!("recall not in English >= {:.2}", self.recall_not_english),
                value: ratio(f.recall_not_english),
                pass: f.recall_not_english.value().is_none_or(|v| v >= self.recall_not_english),
            },
            at_least("precision", f.precision, self.precision),
            Check {
                what: format!("trap rate <= {:.2}", self.trap_rate),
                value: ratio(f.trap_rate),
                pass: f.trap_rate.value().is_none_or(|v| v <= self.trap_rate),
            },
        ]
    }
}

/// How the scan went.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScanInfo {
    /// The corpus.
    pub corpus: String,
    /// The `engram-ingestor` that ran.
    pub ingestor: String,
    /// Transcript files laid out in the home.
    pub files: u32,
    /// Wall time of `engram-ingestor scan`, in seconds.
    pub scan_seconds: f64,
    /// The scan's own count of its time (`elapsed_ms` of `scan --json`).
    pub scan_elapsed_ms: Option<f64>,
    /// Events it appended.
    pub events: Option<u64>,
    /// Wall time of listing the memories and their sessions, in seconds.
    pub list_seconds: f64,
}

/// Everything the benchmark reports.
#[derive(Clone, Debug)]
pub struct Report {
    /// How the scan went.
    pub scan: ScanInfo,
    /// The lessons and memories scored.
    pub scored: Scored,
    /// Their figures.
    pub figures: Figures,
    /// The floors checked.
    pub checks: Vec<Check>,
}

fn ratio(r: Ratio) -> String {
    match r.value() {
        Some(v) => format!("{v:.3} ({}/{})", r.hit, r.of),
        None => "-".to_owned(),
    }
}

fn projects(m: &ScoredMemory) -> String {
    if m.projects.is_empty() {
        m.memory.project.clone().unwrap_or_else(|| "(global)".into())
    } else {
        m.projects.iter().cloned().collect::<Vec<_>>().join("+")
    }
}

fn memory_line(m: &ScoredMemory) -> String {
    let scope = if m.memory.project.is_none() { " global" } else { "" };
    let mut line = format!(
        "{} {}{scope} {} {:?} ({})",
        projects(m),
        m.memory.memory_type,
        m.memory.id,
        m.memory.text,
        m.memory.sessions.join(", ")
    );
    if !m.lessons.is_empty() {
        let _ = write!(line, " [states {}]", m.lessons.join(", "));
    }
    for t in &m.traps {
        let _ = write!(line, " [trap: {t:?}]");
    }
    line
}

impl Report {
    /// Scores the figures of `scored` against `floors`.
    pub fn new(scan: ScanInfo, scored: Scored, floors: &Floors) -> Report {
        let figures = Figures::of(&scored);
        let checks = floors.check(&figures);
        Report { scan, scored, figures, checks }
    }

    /// Whether every floor is met.
    pub fn passes(&self) -> bool {
        self.checks.iter().all(|c| c.pass)
    }

    /// The text report: the figures, the floors, then every missed lesson,
    /// every memory that is not a lesson and every trap memory, one a line;
    /// `verbose` adds the recalled lessons with the memories that state them.
    pub fn text(&self, verbose: bool) -> String {
        let f = &self.figures;
        let s = &self.scan;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "real-data extraction: {} labelled sessions of {} repositories ({} transcripts in {})",
            f.sessions, f.repositories, s.files, s.corpus
        );
        let own = s.scan_elapsed_ms.map(|ms| format!(", {ms:.0} ms by its own count")).unwrap_or_default();
        let events = s.events.map(|n| format!(", {n} events")).unwrap_or_default();
        let _ = writeln!(
            o,
            "scan: {:.2} s wall{own}{events}; memories listed in {:.2} s ({})",
            s.scan_seconds, s.list_seconds, s.ingestor
        );
        let _ = writeln!(
            o,
            "memories            {} ({:.2} per session; {} global, {} unattributed)",
            f.memories, f.memories_per_session, f.global_memories, f.unattributed_memories
        );
        let _ = writeln!(o, "recall              {}", ratio(f.recall));
        for k in KINDS {
            let _ = writeln!(o, "  {k:<18}{}", ratio(f.recall_by_kind.get(k).copied().unwrap_or_default()));
        }
        let _ = writeln!(o, "  {:<18}{}", "en", ratio(f.recall_english));
        let _ = writeln!(o, "  {:<18}{}", "not en", ratio(f.recall_not_english));
        for (lang, r) in f.recall_by_language.iter().filter(|(l, _)| *l != "en") {
            let _ = writeln!(o, "    {lang:<16}{}", ratio(*r));
        }
        let _ = writeln!(o, "precision           {}", ratio(f.precision));
        let _ = writeln!(o, "trap memories       {}", ratio(f.trap_rate));
        let _ = writeln!(o, "\nper repository (sessions, language; recall; precision; trap memories):");
        let name = |r: &RepoFigures| format!("{} ({})", r.repo, r.projects.join(", "));
        let width = f.per_repository.iter().map(|r| name(r).chars().count()).max().unwrap_or(0);
        for r in &f.per_repository {
            let _ = writeln!(
                o,
                "  {:<width$} {:>2} {:<6} recall {:<14} precision {:<14} traps {}",
                name(r),
                r.sessions,
                r.languages.join(","),
                ratio(r.recall),
                ratio(r.precision),
                ratio(r.trap_rate)
            );
        }
        let _ = writeln!(o, "\nfloors (FLOORS in tests/src/realdata/report.rs):");
        for c in &self.checks {
            let _ = writeln!(o, "  [{}] {}: {}", if c.pass { "ok" } else { "FAIL" }, c.what, c.value);
        }
        let missed: Vec<_> = self.scored.lessons.iter().filter(|l| !l.recalled()).collect();
        let _ = writeln!(o, "\nmissed lessons ({}):", missed.len());
        for l in missed {
            let _ = writeln!(o, "  {} {} {} {}: {:?} ({})", l.id, l.project, l.kind, l.language, l.text, l.session);
        }
        let wrong: Vec<_> = self.scored.memories.iter().filter(|m| m.verdict() != Verdict::Lesson).collect();
        let _ = writeln!(o, "\nmemories that are not lessons ({}):", wrong.len());
        for m in wrong {
            let tag = match m.verdict() {
                Verdict::Trap => "trap",
                Verdict::Unattributed => "unattributed",
                _ => "not-lesson",
            };
            let _ = writeln!(o, "  {tag}: {}", memory_line(m));
        }
        let traps: Vec<_> = self.scored.memories.iter().filter(|m| m.verdict() == Verdict::Trap).collect();
        let _ = writeln!(o, "\ntrap memories ({}):", traps.len());
        for m in traps {
            let _ = writeln!(o, "  {}", memory_line(m));
        }
        if verbose {
            let recalled: Vec<_> = self.scored.lessons.iter().filter(|l| l.recalled()).collect();
            let _ = writeln!(o, "\nrecalled lessons ({}):", recalled.len());
            let by_id: BTreeMap<&str, &ScoredMemory> =
                self.scored.memories.iter().map(|m| (m.memory.id.as_str(), m)).collect();
            for l in recalled {
                let _ = writeln!(o, "  {} {} {} {}: {:?}", l.id, l.project, l.kind, l.language, l.text);
                for id in &l.recalled_by {
                    if let Some(m) = by_id.get(id.as_str()) {
                        let _ = writeln!(o, "      by {}", memory_line(m));
                    }
                }
            }
        }
        o
    }

    /// The machine-readable report: the figures, the checks, the scan, and
    /// every lesson and memory scored.
    pub fn json(&self) -> Value {
        let checks: Vec<Value> =
            self.checks.iter().map(|c| json!({"what": c.what, "value": c.value, "pass": c.pass})).collect();
        let memories: Vec<Value> = self
            .scored
            .memories
            .iter()
            .map(|m| {
                json!({
                    "id": m.memory.id,
                    "text": m.memory.text,
                    "type": m.memory.memory_type,
                    "project": m.memory.project,
                    "sessions": m.memory.sessions,
                    "attributed_to": m.projects,
                    "attribution": m.attribution,
                    "verdict": m.verdict(),
                    "lessons": m.lessons,
                    "traps": m.traps,
                })
            })
            .collect();
        json!({
            "figures": self.figures,
            "checks": checks,
            "pass": self.passes(),
            "scan": self.scan,
            "lessons": self.scored.lessons,
            "memories": memories,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realdata::score::score;
    use crate::realdata::score::tests::{corpus, memory};

    fn report(memories: Vec<crate::realdata::score::Memory>, floors: &Floors) -> Report {
        let (labels, keys) = corpus();
        Report::new(ScanInfo::default(), score(&labels, memories, &keys), floors)
    }

    fn sample() -> Vec<crate::realdata::score::Memory> {
        vec![
            memory("m1", "Makefile recipes need TABS", Some("/w/kiln"), &["s1"]),
            memory("m2", "fire the kiln tonight", Some("/w/kiln"), &["s1"]),
            memory("m3", "La navette part de la gauche", Some("/w/loom"), &["s3"]),
            memory("m4", "the build passed", Some("/w/loom"), &["s3"]),
            memory("m5", "unrelated", Some("/w/other"), &["x"]),
        ]
    }

    #[test]
    fn figures_count_by_kind_language_and_repository() {
        let r = report(sample(), &FLOORS);
        let f = &r.figures;
        assert_eq!(
            (f.sessions, f.repositories, f.memories, f.global_memories, f.unattributed_memories),
            (3, 2, 5, 0, 1)
        );
        assert_eq!(f.recall, Ratio { hit: 2, of: 4 });
        assert_eq!(f.recall_by_kind["convention"], Ratio { hit: 1, of: 1 });
        assert_eq!(f.recall_by_kind["gotcha"], Ratio { hit: 0, of: 1 });
        assert_eq!(f.recall_by_kind["fixed-command"], Ratio { hit: 0, of: 0 });
        assert_eq!(f.recall_english, Ratio { hit: 1, of: 3 });
        assert_eq!(f.recall_not_english, Ratio { hit: 1, of: 1 });
        assert_eq!(f.recall_by_language["fr"], Ratio { hit: 1, of: 1 });
        assert_eq!(f.precision, Ratio { hit: 2, of: 5 });
        assert_eq!(f.trap_rate, Ratio { hit: 1, of: 5 });
        assert!((f.memories_per_session - 5.0 / 3.0).abs() < 1e-9);
        let kiln = &f.per_repository[0];
        assert_eq!((kiln.repo.as_str(), kiln.sessions), ("owner/kiln", 2));
        assert_eq!(
            (kiln.recall, kiln.precision, kiln.trap_rate),
            (Ratio { hit: 1, of: 3 }, Ratio { hit: 1, of: 2 }, Ratio { hit: 1, of: 2 })
        );
        let loom = &f.per_repository[1];
        assert_eq!((loom.recall, loom.precision), (Ratio { hit: 1, of: 1 }, Ratio { hit: 1, of: 2 }));
        assert_eq!(loom.languages, ["fr"]);
    }

    #[test]
    fn the_text_lists_every_miss_and_every_wrong_memory_one_a_line() {
        let r = report(sample(), &FLOORS);
        let t = r.text(true);
        assert!(t.contains("missed lessons (2):"), "{t}");
        assert!(t.contains("  K2 kiln gotcha en: \"lesson K2\" (s1)"), "{t}");
        assert!(t.contains("memories that are not lessons (3):"), "{t}");
        assert!(t.contains(
            "  trap: kiln convention m2 \"fire the kiln tonight\" (claude:s1) [trap: \"trap fire+tonight\"]"
        ));
        assert!(t.contains("  unattributed: /w/other convention m5"), "{t}");
        assert!(t.contains("  not-lesson: loom convention m4"), "{t}");
        assert!(t.contains("trap memories (1):"), "{t}");
        assert!(t.contains("recalled lessons (2):") && t.contains("      by kiln convention m1"), "{t}");
        assert!(!r.text(false).contains("recalled lessons"));
        let j = r.json();
        assert_eq!(j["figures"]["recall"]["hit"], 2);
        assert_eq!(j["memories"][1]["verdict"], "trap");
        assert_eq!(j["memories"][4]["verdict"], "unattributed");
        assert_eq!(j["lessons"][0]["recalled_by"][0], "m1");
    }

    #[test]
    fn floors_pass_and_fail_on_their_bounds() {
        let exact = Floors { recall: 0.5, recall_not_english: 1.0, precision: 0.4, trap_rate: 0.2 };
        assert!(report(sample(), &exact).passes());
        let above = [
            Floors { recall: 0.51, ..exact },
            Floors { recall_not_english: 1.01, ..exact },
            Floors { precision: 0.41, ..exact },
            Floors { trap_rate: 0.19, ..exact },
        ];
        for (i, floors) in above.iter().enumerate() {
            let r = report(sample(), floors);
            let failed: Vec<usize> = r.checks.iter().enumerate().filter(|(_, c)| !c.pass).map(|(j, _)| j).collect();
            assert_eq!(failed, [i], "{floors:?}");
        }
        // Nothing kept: precision is undefined and fails.
        let r = report(Vec::new(), &Floors { recall: 0.0, recall_not_english: 0.0, precision: 0.0, trap_rate: 0.0 });
        assert!(!r.passes());
        assert_eq!(r.checks.iter().filter(|c| !c.pass).count(), 1);
    }
}
