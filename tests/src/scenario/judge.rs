//! From a [`Trace`] to the measures, judging only what the agent
//! received (the hooks' injected text) and what the CLI listed.
//!
//! - **The agent's context** at an event is every line the hooks injected
//!   in its window (since its session started or was last compacted), up to
//!   and including the event's own hooks. A lesson is **in the context**
//!   when one line states it: the line holds every one of its terms.
//! - **Recall by the moment**: over every (labelled event, needed lesson),
//!   the share where the lesson was in the context at that event. Also
//!   counted apart: events in a window that began with a compaction, and
//!   lessons needed in a project they were never planted in (cross-project).
//! - **The memories injected** at an event ([`injected_memories`]): each
//!   memory some listing showed whose id or text the injected text holds,
//!   whatever its layout, and each `- ` line none of them accounts for.
//! - **At the tool call**: of the needs at tool calls, the share where the
//!   call's own hook injected a line stating the lesson (a reminder at the
//!   moment of action, not only earlier in the window).
//! - **Noise**: of the events labelled `[-]`, the share whose hooks
//!   injected at least one memory that does not state a general preference
//!   (a lesson with scope `global`).
//! - **Leaks**, at every event of every session: each lesson stated (by a
//!   line or a memory) in a project outside its scope, and each memory
//!   learned in another project (`source_session`) that states no lesson in
//!   full, unless a lesson planted in its session is allowed here.
//! - **Forget**: a forget is exercised when a listed memory stated the
//!   lesson, and durable when no later listing holds a memory stating it and
//!   no later injection states it.
//! - **Extraction coverage**: of the planted lessons, those a listing after
//!   the end of a session they were planted in (and before they were
//!   forgotten) holds a memory stating.
//! - **False lessons**: traps that some listing holds a memory stating.
//! - **Injected characters**: the characters of everything injected at the
//!   labelled events, over the number of labelled events.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::run::Trace;
use super::{Scenario, Scope, states};

/// A needed lesson that was not in the context.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Miss {
    /// Script line.
    pub line: usize,
    /// Session.
    pub session: String,
    /// The moment.
    pub moment: String,
    /// The lesson.
    pub lesson: String,
}

/// An injection at an event that needed nothing.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Noise {
    /// Script line.
    pub line: usize,
    /// Session.
    pub session: String,
    /// The memory lines injected that are not general preferences.
    pub items: Vec<String>,
}

/// A lesson that reached a project outside its scope.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Leak {
    /// Script line.
    pub line: usize,
    /// Session.
    pub session: String,
    /// Its project.
    pub project: String,
    /// The lesson.
    pub lesson: String,
    /// The injected line.
    pub text: String,
}

/// A count of hits out of cases.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Ratio {
    /// Hits.
    pub hit: u32,
    /// Cases.
    pub of: u32,
}

impl Ratio {
    /// One more case.
    pub fn add(&mut self, hit: bool) {
        self.of += 1;
        self.hit += u32::from(hit);
    }

    /// Sums two.
    pub fn plus(self, o: Ratio) -> Ratio {
        Ratio { hit: self.hit + o.hit, of: self.of + o.of }
    }

    /// hit / of, `None` when there is no case.
    pub fn value(self) -> Option<f64> {
        (self.of > 0).then(|| f64::from(self.hit) / f64::from(self.of))
    }
}

/// The measures of one scenario run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measures {
    /// Recall by the moment, over all (event, lesson) needs.
    pub recall: Ratio,
    /// The same, in windows that began with a compaction.
    pub recall_after_compaction: Ratio,
    /// The same, for lessons needed in a project they were not planted in.
    pub recall_cross_project: Ratio,
    /// Issue 17's case: lessons of other projects (not general preferences)
    /// needed at a session start.
    pub recall_cross_project_start: Ratio,
    /// Needs at tool calls whose own hook stated the lesson.
    pub at_tool: Ratio,
    /// Recall by moment (session start, prompt, tool, after compaction, resume).
    pub recall_by_moment: BTreeMap<String, Ratio>,
    /// Recall by lesson kind.
    pub recall_by_kind: BTreeMap<String, Ratio>,
    /// Noisy events among those that need nothing.
    pub noise: Ratio,
    /// Leaks.
    pub leaks: Vec<Leak>,
    /// Forgets exercised (the lesson was listed when forgotten).
    pub forgets_exercised: Ratio,
    /// Durable forgets among the exercised.
    pub forgets_durable: Ratio,
    /// Planted lessons that became memories.
    pub extraction: Ratio,
    /// Traps some listing held.
    pub false_lessons: Vec<String>,
    /// Labelled events.
    pub events: u32,
    /// Characters injected at labelled events.
    pub injected_chars: u64,
    /// Labelled events where something was injected.
    pub injections: u32,
    /// The needs that were missed.
    pub misses: Vec<Miss>,
    /// Needs at tool calls whose own hook did not state the lesson.
    pub tool_misses: Vec<Miss>,
    /// The noisy events.
    pub noisy: Vec<Noise>,
    /// Planted lessons never seen in a listing.
    pub not_extracted: Vec<String>,
    /// Per lesson, the injected lines that counted as stating it where it
    /// was needed (to audit the judge).
    pub evidence: BTreeMap<String, Vec<String>>,
}

impl Measures {
    /// Mean characters injected per labelled event.
    pub fn chars_per_event(&self) -> Option<f64> {
        (self.events > 0).then(|| self.injected_chars as f64 / f64::from(self.events))
    }
}

/// The memory lines of an injected text: those starting with `- `.
pub fn memory_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim_start).filter(|l| l.starts_with("- "))
}

/// Characters of a memory's text that identify it in an injected text.
const TEXT_KEY: usize = 60;
/// Shorter texts are only recognised by their id.
const TEXT_KEY_MIN: usize = 16;

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A memory some `memory list` showed: its id, its text (spaces
/// collapsed), and the project of the scenario session it was learned from.
#[derive(Clone, Debug, Default)]
pub struct Known {
    id: String,
    text: String,
    origin: Option<String>,
    session: Option<String>,
}

/// Every memory any listing of the run showed, once.
pub fn known_memories(t: &Trace) -> Vec<Known> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for m in t.snapshots.iter().flat_map(|s| &s.memories) {
        if !m.id.is_empty() && seen.insert(m.id.clone()) {
            let source = m.source_session.as_ref().and_then(|k| t.sessions.get(k));
            out.push(Known {
                id: m.id.clone(),
                text: collapse(&m.content),
                origin: source.map(|(_, p)| p.clone()),
                session: source.map(|(name, _)| name.clone()),
            });
        }
    }
    out
}

/// One memory found in an injected text: its text, and where it was
/// learned when a listing said so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    /// Its text (or the `- ` line, for a memory no listing showed).
    pub text: String,
    /// The project it was learned in.
    pub origin: Option<String>,
    /// The scenario session it was learned in.
    pub session: Option<String>,
}

/// The memories an injected text holds, whatever its layout: each listed
/// memory whose id, or whose text's first characters, it contains; then
/// each `- ` line that no listed memory accounts for (its own text).
pub fn injected_memories(text: &str, known: &[Known]) -> Vec<Injected> {
    let flat = collapse(text);
    let key = |k: &Known| k.text.chars().take(TEXT_KEY).collect::<String>();
    let found: Vec<&Known> = known
        .iter()
        .filter(|k| flat.contains(&k.id) || (key(k).chars().count() >= TEXT_KEY_MIN && flat.contains(&key(k))))
        .collect();
    let mut out: Vec<Injected> = found
        .iter()
        .map(|k| Injected { text: k.text.clone(), origin: k.origin.clone(), session: k.session.clone() })
        .collect();
    for line in memory_lines(text) {
        let line = collapse(line);
        if !found.iter().any(|k| line.contains(&k.id) || line.contains(&key(k))) {
            out.push(Injected { text: line, origin: None, session: None });
        }
    }
    out
}

/// Judges one run (see the module docs).
pub fn judge(s: &Scenario, t: &Trace) -> Measures {
    let mut m = Measures::default();
    let planted_projects: BTreeMap<&str, BTreeSet<&str>> = {
        let session_project: BTreeMap<&str, &str> =
            t.events.iter().map(|e| (e.session.as_str(), e.project.as_str())).collect();
        let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for p in &t.plants {
            if let Some(proj) = session_project.get(p.session.as_str()) {
                out.entry(p.lesson.as_str()).or_default().insert(proj);
            }
        }
        out
    };
    let global: Vec<&super::Lesson> = s.lessons.values().filter(|l| l.scope == Scope::Global).collect();
    let known = known_memories(t);
    let mut windows: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for e in &t.events {
        // What this event's hooks put into the context: every line, and every
        // memory recognised in it (so a memory spread over lines still counts).
        let memories: Vec<Injected> = e.injected.iter().flat_map(|x| injected_memories(x, &known)).collect();
        let mut here: Vec<String> = e.injected.iter().flat_map(|x| x.lines().map(|l| l.trim().to_owned())).collect();
        here.extend(memories.iter().map(|x| x.text.clone()));
        windows.entry(e.window).or_default().extend(here.iter().cloned());
        let window = &windows[&e.window];
        // Leaks, at every event: each lesson that reached a project outside
        // its scope, and each memory learned in another project that states
        // no lesson allowed here.
        for l in s.lessons.values() {
            if l.scope.allows(&e.project) {
                continue;
            }
            if let Some(text) = here.iter().find(|x| l.stated_by(x)) {
                m.leaks.push(Leak {
                    line: e.line,
                    session: e.session.clone(),
                    project: e.project.clone(),
                    lesson: l.id.clone(),
                    text: text.clone(),
                });
            }
        }
        for mem in &memories {
            let Some(origin) = &mem.origin else { continue };
            if origin == &e.project || s.lessons.values().any(|l| l.stated_by(&mem.text)) {
                // Its own project; or it states a lesson, whose scope
                // decided above.
                continue;
            }
            // A memory that states no lesson in full (half of one, or
            // something else) may go where the lessons of its session may.
            let planted_there = t
                .plants
                .iter()
                .filter(|p| mem.session.as_deref() == Some(p.session.as_str()))
                .filter_map(|p| s.lessons.get(&p.lesson));
            if planted_there.into_iter().any(|l| l.scope.allows(&e.project)) {
                continue;
            }
            m.leaks.push(Leak {
                line: e.line,
                session: e.session.clone(),
                project: e.project.clone(),
                lesson: format!("(a memory of {origin})"),
                text: mem.text.clone(),
            });
        }
        let Some(needs) = &e.needs else { continue };
        m.events += 1;
        let chars: usize = e.injected.iter().map(|x| x.chars().count()).sum();
        m.injected_chars += chars as u64;
        m.injections += u32::from(chars > 0);
        if needs.is_empty() {
            let items: Vec<String> = memories
                .iter()
                .filter(|x| !global.iter().any(|g| g.stated_by(&x.text)))
                .map(|x| x.text.clone())
                .collect();
            m.noise.add(!items.is_empty());
            if !items.is_empty() {
                m.noisy.push(Noise { line: e.line, session: e.session.clone(), items });
            }
            continue;
        }
        for id in needs {
            let Some(lesson) = s.lessons.get(id) else { continue };
            let evidence = window.iter().find(|line| lesson.stated_by(line));
            let hit = evidence.is_some();
            if let Some(line) = evidence {
                let lines = m.evidence.entry(id.clone()).or_default();
                let line = line.trim().to_owned();
                if !lines.contains(&line) {
                    lines.push(line);
                }
            }
            m.recall.add(hit);
            m.recall_by_moment.entry(e.moment.to_owned()).or_default().add(hit);
            let miss =
                || Miss { line: e.line, session: e.session.clone(), moment: e.moment.to_owned(), lesson: id.clone() };
            if e.moment == "tool" {
                let stated = here.iter().any(|line| lesson.stated_by(line));
                m.at_tool.add(stated);
                if !stated {
                    m.tool_misses.push(miss());
                }
            }
            m.recall_by_kind.entry(lesson.kind.clone()).or_default().add(hit);
            if e.after_compaction {
                m.recall_after_compaction.add(hit);
            }
            if !planted_projects.get(id.as_str()).is_some_and(|p| p.contains(e.project.as_str())) {
                m.recall_cross_project.add(hit);
                if e.moment == "session start" && lesson.scope != Scope::Global {
                    m.recall_cross_project_start.add(hit);
                }
            }
            if !hit {
                m.misses.push(miss());
            }
        }
    }
    // Forgets.
    for f in &t.forgets {
        let exercised = !f.forgotten.is_empty();
        m.forgets_exercised.add(exercised);
        if !exercised {
            continue;
        }
        let lesson = &s.lessons[&f.lesson];
        let relisted = t.snapshots[f.after_snapshots.min(t.snapshots.len())..]
            .iter()
            .any(|sn| sn.memories.iter().any(|mem| lesson.stated_by(&mem.content)));
        let reinjected = t.events[f.after_events.min(t.events.len())..]
            .iter()
            .any(|e| e.injected.iter().flat_map(|x| x.lines()).any(|line| lesson.stated_by(line)));
        m.forgets_durable.add(!relisted && !reinjected);
    }
    // Extraction coverage: per lesson, a listing after a session it was
    // planted in ended, and before its first forget.
    let mut lessons_planted: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in &t.plants {
        lessons_planted.entry(p.lesson.as_str()).or_default().push(p.session.as_str());
    }
    for (id, sessions) in &lessons_planted {
        let lesson = &s.lessons[*id];
        let forgotten_at =
            t.forgets.iter().filter(|f| f.lesson == *id).map(|f| f.after_snapshots).min().unwrap_or(usize::MAX);
        let first_end =
            t.snapshots.iter().position(|sn| sessions.iter().any(|ss| sn.when == format!("end of session {ss}")));
        let found = first_end.is_some_and(|i| {
            t.snapshots[i..forgotten_at.clamp(i, t.snapshots.len())]
                .iter()
                .any(|sn| sn.memories.iter().any(|mem| lesson.stated_by(&mem.content)))
        });
        m.extraction.add(found);
        if !found {
            m.not_extracted.push((*id).to_owned());
        }
    }
    for (id, trap) in &s.traps {
        if t.snapshots.iter().any(|sn| sn.memories.iter().any(|mem| states(&trap.terms, &mem.content))) {
            m.false_lessons.push(id.clone());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::run::{EventTrace, ForgetTrace, PlantTrace, Snapshot};
    use super::super::{Lesson, Term};
    use super::*;
    use crate::driver::ListedMemory;

    fn lesson(id: &str, terms: &[&str], scope: Scope) -> Lesson {
        Lesson {
            id: id.into(),
            kind: "correction".into(),
            scope,
            say: terms.join(" "),
            terms: terms.iter().map(|t| Term(vec![t.to_string()])).collect(),
            unless: vec![],
        }
    }

    fn scenario() -> Scenario {
        let web: Scope = Scope::Projects(["web".to_owned()].into());
        Scenario {
            name: "t".into(),
            summary: String::new(),
            stacks: vec![],
            kinds: vec![],
            harness: crate::driver::Harness::Claude,
            projects: BTreeMap::new(),
            lessons: [
                ("pnpm".to_owned(), lesson("pnpm", &["pnpm"], web.clone())),
                ("redis".to_owned(), lesson("redis", &["redis", "compose"], web)),
                ("short".to_owned(), lesson("short", &["concise"], Scope::Global)),
            ]
            .into(),
            traps: [(
                "retry".to_owned(),
                super::super::Trap { id: "retry".into(), say: "rerun".into(), terms: vec![Term(vec!["rerun".into()])] },
            )]
            .into(),
            script: vec![],
        }
    }

    fn ev(
        i: usize,
        session: &str,
        project: &str,
        window: usize,
        needs: Option<&[&str]>,
        injected: &[&str],
    ) -> EventTrace {
        EventTrace {
            index: i,
            line: i + 1,
            session: session.into(),
            project: project.into(),
            moment: if i == 0 { "session start" } else { "prompt" },
            needs: needs.map(|n| n.iter().map(|x| x.to_string()).collect()),
            injected: injected.iter().map(|x| x.to_string()).collect(),
            window,
            after_compaction: window == 3,
            what: String::new(),
        }
    }

    fn mem(text: &str) -> ListedMemory {
        // The ids the tests' injected lines use.
        let id = match text {
            t if t.starts_with("Use pnpm here") => "mem_1",
            t if t.contains("concise") => "mem_2",
            t if t.contains("Redis") => "mem_3",
            _ => "mem_9",
        };
        ListedMemory {
            id: id.into(),
            content: text.into(),
            memory_type: "fact".into(),
            project: None,
            source_session: Some("claude:learn".into()),
        }
    }

    fn snap(after: usize, when: &str, mems: &[&str]) -> Snapshot {
        Snapshot { after_events: after, when: when.into(), memories: mems.iter().map(|m| mem(m)).collect() }
    }

    const PREF: &str = "- mem_2 [preference] Keep answers concise.";
    const GOTCHA: &str = "- mem_3 [gotcha] Redis via docker compose up.";

    #[test]
    fn the_context_holds_what_was_injected_in_the_window_until_a_compaction() {
        let s = scenario();
        let ctx = "<engram-context>\nheader:\n- mem_1 [convention] Use pnpm here.\n</engram-context>";
        let t = Trace {
            events: vec![
                ev(0, "learn", "web", 1, None, &[]),
                // Session 2: injected at start, needed at a later prompt: a hit.
                ev(1, "probe", "web", 2, Some(&["pnpm"]), &[ctx]),
                ev(2, "probe", "web", 2, Some(&["pnpm"]), &[]),
                // After a compaction (window 3): the old injection is gone.
                ev(3, "probe", "web", 3, Some(&["pnpm"]), &[]),
                // Needs nothing and gets a general preference: not noise.
                ev(4, "probe", "web", 3, Some(&[]), &[PREF]),
                // Needs nothing and gets a project memory: noise.
                ev(5, "probe", "web", 3, Some(&[]), &[GOTCHA]),
                // A lesson of web in project shop: a leak, even unlabelled.
                ev(6, "other", "shop", 4, None, &["- mem_1 [convention] Use pnpm here."]),
            ],
            plants: vec![
                PlantTrace { lesson: "pnpm".into(), session: "learn".into(), after_events: 1 },
                PlantTrace { lesson: "redis".into(), session: "learn".into(), after_events: 1 },
            ],
            snapshots: vec![
                snap(1, "end of session learn", &["Use pnpm here.", "Just rerun the tests."]),
                snap(6, "end of session probe", &["Use pnpm here."]),
            ],
            ..Trace::default()
        };
        let m = judge(&s, &t);
        assert_eq!(m.recall, Ratio { hit: 2, of: 3 });
        assert_eq!(m.recall_after_compaction, Ratio { hit: 0, of: 1 });
        assert_eq!(m.recall_cross_project, Ratio { hit: 0, of: 0 });
        assert_eq!(m.misses.len(), 1);
        assert_eq!(m.misses[0].line, 4);
        assert_eq!(m.noise, Ratio { hit: 1, of: 2 });
        assert_eq!(m.noisy[0].line, 6);
        assert_eq!(m.leaks.len(), 1);
        assert_eq!((m.leaks[0].project.as_str(), m.leaks[0].lesson.as_str()), ("shop", "pnpm"));
        assert_eq!(m.extraction, Ratio { hit: 1, of: 2 });
        assert_eq!(m.not_extracted, ["redis"]);
        assert_eq!(m.false_lessons, ["retry"]);
        assert_eq!(m.events, 5);
        assert_eq!(m.injections, 3);
        assert_eq!(m.injected_chars, (ctx.len() + PREF.len() + GOTCHA.len()) as u64);
    }

    #[test]
    fn injected_memories_are_found_by_id_or_text_whatever_the_layout() {
        let known = vec![
            Known {
                id: "mem_01AB".into(),
                text: "Start Redis with docker compose up -d redis before the tests.".into(),
                origin: Some("api".into()),
                session: None,
            },
            Known { id: "mem_01CD".into(), text: "Use pnpm.".into(), origin: None, session: None },
        ];
        let texts = |t: &str| -> Vec<String> { injected_memories(t, &known).into_iter().map(|x| x.text).collect() };
        // Another layout: the text over two lines, no id, no bullet.
        let wrapped = "<engram-context>\nRelevant:\n  Start Redis with docker compose\n  up -d redis before the tests.\n</engram-context>";
        let found = injected_memories(wrapped, &known);
        assert_eq!(found, [Injected { text: known[0].text.clone(), origin: Some("api".into()), session: None }]);
        // A short text is only recognised by its id; a bullet no listing
        // accounts for counts as a memory of its own.
        let bullets = "- mem_01CD [convention] Use pnpm.\n- mem_zz [fact] Something else entirely.";
        assert_eq!(texts(bullets), ["Use pnpm.", "- mem_zz [fact] Something else entirely."]);
        assert!(texts("Use pnpm.").is_empty());
    }

    #[test]
    fn a_memory_learned_in_another_project_leaks_unless_a_lesson_allows_it() {
        let mut s = scenario();
        let stack: Scope = Scope::Projects(["api".to_owned(), "web".to_owned()].into());
        s.lessons.insert("vitest".into(), lesson("vitest", &["vitest"], stack));
        let listed = |id: &str, text: &str| ListedMemory {
            id: id.into(),
            content: text.into(),
            memory_type: "correction".into(),
            project: None,
            source_session: Some("claude:a1".into()),
        };
        let t = Trace {
            events: vec![
                ev(0, "a1", "api", 1, None, &[]),
                ev(
                    1,
                    "w1",
                    "web",
                    2,
                    None,
                    &["- mem_a [correction] Never pip install here.", "- mem_b [c] Use vitest run."],
                ),
            ],
            snapshots: vec![Snapshot {
                after_events: 1,
                when: "end of session a1".into(),
                memories: vec![listed("mem_a", "Never pip install here."), listed("mem_b", "Use vitest run.")],
            }],
            sessions: [("claude:a1".to_owned(), ("a1".to_owned(), "api".to_owned()))].into(),
            ..Trace::default()
        };
        let m = judge(&s, &t);
        assert_eq!(m.leaks.len(), 1, "{:?}", m.leaks);
        assert_eq!(
            (m.leaks[0].lesson.as_str(), m.leaks[0].text.as_str()),
            ("(a memory of api)", "Never pip install here.")
        );
        // When a1 planted the vitest lesson (allowed in web), its other
        // memories may go to web as well.
        let mut planted = t.clone();
        planted.plants.push(PlantTrace { lesson: "vitest".into(), session: "a1".into(), after_events: 1 });
        assert!(judge(&s, &planted).leaks.is_empty());
    }

    #[test]
    fn a_lesson_of_other_projects_counts_apart_at_session_start() {
        let mut s = scenario();
        let stack: Scope = Scope::Projects(["shop".to_owned(), "blog".to_owned()].into());
        s.lessons.insert("vitest".into(), lesson("vitest", &["vitest"], stack));
        let line = "- mem_5 [correction] Use vitest run.";
        let mut start = ev(1, "blog-1", "blog", 2, Some(&["vitest", "short"]), &[line]);
        start.moment = "session start";
        let t = Trace {
            events: vec![
                ev(0, "shop-1", "shop", 1, None, &[]),
                start,
                ev(2, "blog-1", "blog", 2, Some(&["vitest"]), &[]),
            ],
            plants: vec![
                PlantTrace { lesson: "vitest".into(), session: "shop-1".into(), after_events: 1 },
                PlantTrace { lesson: "short".into(), session: "shop-1".into(), after_events: 1 },
            ],
            ..Trace::default()
        };
        let m = judge(&s, &t);
        // The general preference is needed at the start too, and missed: it
        // counts across projects, not in issue 17's case.
        assert_eq!(m.recall_cross_project, Ratio { hit: 2, of: 3 });
        assert_eq!(m.recall_cross_project_start, Ratio { hit: 1, of: 1 });
        assert!(m.leaks.is_empty());
    }

    #[test]
    fn a_forget_is_durable_only_if_nothing_brings_the_lesson_back() {
        let s = scenario();
        let forget = |after| ForgetTrace {
            lesson: "pnpm".into(),
            after_events: after,
            after_snapshots: 1,
            forgotten: vec![mem("Use pnpm here.")],
        };
        let base = Trace {
            events: vec![ev(0, "a", "web", 1, None, &[]), ev(1, "b", "web", 2, None, &[])],
            forgets: vec![forget(1)],
            snapshots: vec![
                snap(1, "end of session a", &["Use pnpm here."]),
                snap(1, "forget pnpm", &[]),
                snap(1, "rescan of a", &[]),
            ],
            ..Trace::default()
        };
        let m = judge(&s, &base);
        assert_eq!((m.forgets_exercised, m.forgets_durable), (Ratio { hit: 1, of: 1 }, Ratio { hit: 1, of: 1 }));

        let mut relearned = base.clone();
        relearned.snapshots[2].memories.push(mem("Use pnpm, the user said."));
        assert_eq!(judge(&s, &relearned).forgets_durable, Ratio { hit: 0, of: 1 });

        let mut reinjected = base.clone();
        reinjected.events[1].injected.push("- mem_9 [convention] pnpm only".into());
        assert_eq!(judge(&s, &reinjected).forgets_durable, Ratio { hit: 0, of: 1 });

        let mut never_learned = base;
        never_learned.forgets[0].forgotten.clear();
        let m = judge(&s, &never_learned);
        assert_eq!((m.forgets_exercised, m.forgets_durable), (Ratio { hit: 0, of: 1 }, Ratio::default()));
    }
}
