//! Scoring the memories Engram kept against the corpus' labels.
//!
//! - A memory **matches** a term set when its text contains every term
//!   (case-insensitive substring); a lesson or trap when it matches one of
//!   its sets ([`matches`]).
//! - A memory is **attributed** to the labelled project its Engram project
//!   stands for ([`ProjectKeys`]: the project Engram gave each labelled
//!   session); a global memory (no project) to the projects of the sessions
//!   it was learned from. A memory of a project no label covers is
//!   unattributed.
//! - A lesson is **recalled** when some memory attributed to its project
//!   matches it. A memory that matches a trap of a project it is attributed
//!   to is a **trap memory**, whatever else it matches; one that matches a
//!   lesson of such a project and no trap is a **lesson memory**; the rest
//!   are not lessons.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::LabelledSession;

/// Whether `text` contains every term of one of `sets` (case-insensitive
/// substring). An empty set matches nothing.
pub fn matches(text: &str, sets: &[Vec<String>]) -> bool {
    let text = text.to_lowercase();
    sets.iter().any(|set| !set.is_empty() && set.iter().all(|term| text.contains(&term.to_lowercase())))
}

/// One memory as Engram lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Its type (`convention`, `gotcha`, `preference`, ...).
    #[serde(rename = "type")]
    pub memory_type: String,
    /// Engram's project key, `None` for a global memory.
    pub project: Option<String>,
    /// The sessions it was learned from (`harness:id`).
    pub sessions: Vec<String>,
}

/// The harness's session id of an Engram session key (`claude:<id>` → `<id>`).
pub fn session_id(key: &str) -> &str {
    key.split_once(':').map_or(key, |(_, id)| id)
}

/// From Engram's project keys to the labelled projects they stand for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProjectKeys(pub BTreeMap<String, BTreeSet<String>>);

impl ProjectKeys {
    /// The keys of `labels`' projects: for each labelled session, the
    /// project Engram gave it (`engram_projects`, session id → project key)
    /// stands for the session's labelled project.
    pub fn of(labels: &[LabelledSession], engram_projects: &BTreeMap<String, String>) -> ProjectKeys {
        let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for s in labels {
            if let Some(key) = engram_projects.get(s.session_id()) {
                keys.entry(key.clone()).or_default().insert(s.project.clone());
            }
        }
        ProjectKeys(keys)
    }

    /// The labelled projects `key` stands for (empty when none).
    pub fn projects(&self, key: &str) -> BTreeSet<String> {
        self.0.get(key).cloned().unwrap_or_default()
    }
}

/// How a memory was attributed to labelled projects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribution {
    /// By its Engram project.
    Project,
    /// A global memory, by the sessions it was learned from.
    Sessions,
    /// To no labelled project.
    None,
}

/// What a memory is, judged against the labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// It matches a lesson of its project and no trap.
    Lesson,
    /// It matches a trap of its project.
    Trap,
    /// It matches neither.
    NotALesson,
    /// It belongs to no labelled project.
    Unattributed,
}

/// One memory scored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScoredMemory {
    /// The memory.
    pub memory: Memory,
    /// The labelled projects it is attributed to.
    pub projects: BTreeSet<String>,
    /// How.
    pub attribution: Attribution,
    /// The ids of the lessons of those projects it matches.
    pub lessons: Vec<String>,
    /// The texts of the traps of those projects it matches.
    pub traps: Vec<String>,
}

impl ScoredMemory {
    /// What it is.
    pub fn verdict(&self) -> Verdict {
        if !self.traps.is_empty() {
            Verdict::Trap
        } else if !self.lessons.is_empty() {
            Verdict::Lesson
        } else if self.projects.is_empty() {
            Verdict::Unattributed
        } else {
            Verdict::NotALesson
        }
    }
}

/// One labelled lesson scored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScoredLesson {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// The language of its session.
    pub language: String,
    /// Its project.
    pub project: String,
    /// Its repository.
    pub repo: String,
    /// Its session id.
    pub session: String,
    /// The lesson in words.
    pub text: String,
    /// The ids of the memories that match it.
    pub recalled_by: Vec<String>,
}

impl ScoredLesson {
    /// Whether a memory states it.
    pub fn recalled(&self) -> bool {
        !self.recalled_by.is_empty()
    }
}

/// One labelled session, as the report counts it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// Its id.
    pub id: String,
    /// Its project.
    pub project: String,
    /// Its repository.
    pub repo: String,
    /// Its language.
    pub language: String,
}

/// Every lesson and every memory scored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Scored {
    /// The labelled sessions.
    pub sessions: Vec<SessionInfo>,
    /// The lessons, in label order.
    pub lessons: Vec<ScoredLesson>,
    /// The memories, in the order given.
    pub memories: Vec<ScoredMemory>,
}

/// Scores `memories` against `labels`, attributing project memories through
/// `keys`.
pub fn score(labels: &[LabelledSession], memories: Vec<Memory>, keys: &ProjectKeys) -> Scored {
    let project_of: BTreeMap<&str, &str> = labels.iter().map(|s| (s.session_id(), s.project.as_str())).collect();
    let mut lessons: Vec<ScoredLesson> = labels
        .iter()
        .flat_map(|s| {
            s.lessons.iter().map(|l| ScoredLesson {
                id: l.id.clone(),
                kind: l.kind.clone(),
                language: s.language.clone(),
                project: s.project.clone(),
                repo: s.repo.clone(),
                session: s.session_id().to_owned(),
                text: l.text.clone(),
                recalled_by: Vec::new(),
            })
        })
        .collect();
    let mut scored = Vec::with_capacity(memories.len());
    for memory in memories {
        let (projects, attribution) = match &memory.project {
            Some(key) => (keys.projects(key), Attribution::Project),
            None => (
                memory
                    .sessions
                    .iter()
                    .filter_map(|k| project_of.get(session_id(k)).map(|p| (*p).to_owned()))
                    .collect::<BTreeSet<_>>(),
                Attribution::Sessions,
            ),
        };
        let attribution = if projects.is_empty() { Attribution::None } else { attribution };
        let mut m = ScoredMemory { memory, projects, attribution, lessons: Vec::new(), traps: Vec::new() };
        let mut lesson_index = 0;
        for s in labels {
            let mine = m.projects.contains(&s.project);
            for l in &s.lessons {
                if mine && matches(&m.memory.text, &l.sets) {
                    m.lessons.push(l.id.clone());
                    lessons[lesson_index].recalled_by.push(m.memory.id.clone());
                }
                lesson_index += 1;
            }
            if mine {
                m.traps.extend(s.traps.iter().filter(|t| matches(&m.memory.text, &t.sets)).map(|t| t.text.clone()));
            }
        }
        scored.push(m);
    }
    let sessions = labels
        .iter()
        .map(|s| SessionInfo {
            id: s.session_id().to_owned(),
            project: s.project.clone(),
            repo: s.repo.clone(),
            language: s.language.clone(),
        })
        .collect();
    Scored { sessions, lessons, memories: scored }
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::realdata::{Lesson, Trap};

    fn sets(s: &[&[&str]]) -> Vec<Vec<String>> {
        s.iter().map(|set| set.iter().map(|t| (*t).to_owned()).collect()).collect()
    }

    fn lesson(id: &str, kind: &str, s: &[&[&str]]) -> Lesson {
        Lesson { id: id.into(), text: format!("lesson {id}"), kind: kind.into(), quote: String::new(), sets: sets(s) }
    }

    fn session(id: &str, project: &str, language: &str, lessons: Vec<Lesson>, traps: &[&[&str]]) -> LabelledSession {
        LabelledSession {
            file: format!("raw/{id}.md"),
            claude: format!("claude/{project}/{id}.jsonl"),
            repo: format!("owner/{project}"),
            project: project.into(),
            language: language.into(),
            tool: "cursor".into(),
            lessons,
            traps: traps.iter().map(|s| Trap { text: format!("trap {}", s.join("+")), sets: sets(&[s]) }).collect(),
        }
    }

    pub(crate) fn memory(id: &str, text: &str, project: Option<&str>, sessions: &[&str]) -> Memory {
        Memory {
            id: id.into(),
            text: text.into(),
            memory_type: "convention".into(),
            project: project.map(str::to_owned),
            sessions: sessions.iter().map(|s| format!("claude:{s}")).collect(),
        }
    }

    /// Two projects: `kiln` (English, sessions s1 and s2) and `loom` (French,
    /// session s3), with Engram keys `/w/kiln` and `/w/loom`.
    pub(crate) fn corpus() -> (Vec<LabelledSession>, ProjectKeys) {
        let labels = vec![
            session(
                "s1",
                "kiln",
                "en",
                vec![
                    lesson("K1", "convention", &[&["tabs", "makefile"], &["recipe", "tab"]]),
                    lesson("K2", "gotcha", &[&["glaze", "cone 6"]]),
                ],
                &[&["fire", "tonight"]],
            ),
            session("s2", "kiln", "en", vec![lesson("K3", "preference", &[&["terse", "answers"]])], &[]),
            session(
                "s3",
                "loom",
                "fr",
                vec![lesson("L1", "correction", &[&["navette", "gauche"], &["shuttle", "left"]])],
                &[&["tisser", "écharpe"]],
            ),
        ];
        let engram: BTreeMap<String, String> =
            [("s1", "/w/kiln"), ("s2", "/w/kiln"), ("s3", "/w/loom")].map(|(s, k)| (s.into(), k.into())).into();
        let keys = ProjectKeys::of(&labels, &engram);
        (labels, keys)
    }

    #[test]
    fn a_set_matches_when_every_term_is_a_case_insensitive_substring() {
        let s = sets(&[&["Makefile", "TAB"], &["never"]]);
        assert!(matches("Recipes in a makefile use tabs", &s));
        assert!(matches("NEVER do that", &s));
        assert!(!matches("Recipes use tabs", &s));
        assert!(!matches("anything", &sets(&[&[]])));
        assert!(!matches("anything", &[]));
        // Non-ASCII text folds its case too.
        assert!(matches("La NAVETTE part à GAUCHE", &sets(&[&["navette", "gauche"]])));
        assert!(matches("ÉCHARPE", &sets(&[&["écharpe"]])));
    }

    #[test]
    fn project_keys_come_from_the_sessions_engram_saw() {
        let (labels, keys) = corpus();
        assert_eq!(keys.projects("/w/kiln"), BTreeSet::from(["kiln".to_owned()]));
        assert!(keys.projects("/elsewhere").is_empty());
        // A session Engram did not see maps nothing.
        let partial = ProjectKeys::of(&labels, &BTreeMap::from([("s3".to_owned(), "/w/loom".to_owned())]));
        assert!(partial.projects("/w/kiln").is_empty());
        assert_eq!(session_id("claude:s1"), "s1");
        assert_eq!(session_id("s1"), "s1");
    }

    #[test]
    fn memories_are_judged_only_against_their_own_project() {
        let (labels, keys) = corpus();
        let memories = vec![
            // A lesson of its own project.
            memory("m1", "Makefile recipes need TABS", Some("/w/kiln"), &["s1"]),
            // The same words in another project: not a lesson there.
            memory("m2", "makefile recipes need tabs", Some("/w/loom"), &["s3"]),
            // A trap, even though it also states a lesson.
            memory("m3", "Fire the kiln tonight; makefile uses tabs", Some("/w/kiln"), &["s1"]),
            // A global memory, attributed through its session.
            memory("m4", "Give terse answers", None, &["s2"]),
            // A global memory from a session no label covers.
            memory("m5", "Give terse answers", None, &["unknown"]),
            // A project no label covers.
            memory("m6", "Glaze to cone 6", Some("/w/other"), &["s1"]),
            // A French lesson stated in English.
            memory("m7", "Throw the shuttle from the left", Some("/w/loom"), &["s3"]),
        ];
        let s = score(&labels, memories, &keys);
        let verdicts: Vec<(&str, Verdict)> = s.memories.iter().map(|m| (m.memory.id.as_str(), m.verdict())).collect();
        assert_eq!(
            verdicts,
            [
                ("m1", Verdict::Lesson),
                ("m2", Verdict::NotALesson),
                ("m3", Verdict::Trap),
                ("m4", Verdict::Lesson),
                ("m5", Verdict::Unattributed),
                ("m6", Verdict::Unattributed),
                ("m7", Verdict::Lesson),
            ]
        );
        assert_eq!(s.memories[2].traps, ["trap fire+tonight"]);
        assert_eq!(s.memories[2].lessons, ["K1"]);
        assert_eq!(s.memories[3].attribution, Attribution::Sessions);
        assert_eq!(s.memories[4].attribution, Attribution::None);
        let recalled: Vec<(&str, Vec<&str>)> =
            s.lessons.iter().map(|l| (l.id.as_str(), l.recalled_by.iter().map(String::as_str).collect())).collect();
        // A trap memory still recalls the lesson it states.
        assert_eq!(recalled, [("K1", vec!["m1", "m3"]), ("K2", vec![]), ("K3", vec!["m4"]), ("L1", vec!["m7"])]);
        assert_eq!(s.lessons[3].language, "fr");
        assert_eq!(s.sessions.len(), 3);
    }

    /// Memory texts and projects drawn from the words and keys of [`corpus`].
    fn memories() -> impl Strategy<Value = Vec<Memory>> {
        let words = prop::sample::select(vec![
            "makefile", "TABS", "recipe", "glaze", "cone 6", "terse", "answers", "fire", "tonight", "navette",
            "Gauche", "shuttle", "left", "tisser", "écharpe", "the", "build",
        ]);
        let text = prop::collection::vec(words, 0..6).prop_map(|w| w.join(" "));
        let project = prop::sample::select(vec![None, Some("/w/kiln"), Some("/w/loom"), Some("/w/other")]);
        let sessions = prop::collection::vec(prop::sample::select(vec!["s1", "s2", "s3", "unknown"]), 0..3);
        prop::collection::vec((text, project, sessions), 0..8)
            .prop_map(|v| v.into_iter().enumerate().map(|(i, (t, p, s))| memory(&format!("m{i}"), &t, p, &s)).collect())
    }

    proptest! {
        #[test]
        fn scoring_is_consistent_and_more_memories_never_lower_recall(
            ms in memories(),
            extra in memories(),
        ) {
            let (labels, keys) = corpus();
            let s = score(&labels, ms.clone(), &keys);
            // Each memory has one verdict; lesson links agree both ways.
            for m in &s.memories {
                for id in &m.lessons {
                    let l = s.lessons.iter().find(|l| &l.id == id).unwrap();
                    prop_assert!(l.recalled_by.contains(&m.memory.id));
                    prop_assert!(m.projects.contains(&l.project));
                }
                prop_assert_eq!(m.projects.is_empty(), m.attribution == Attribution::None);
                prop_assert_eq!(m.projects.is_empty(), m.verdict() == Verdict::Unattributed);
            }
            for l in &s.lessons {
                for id in &l.recalled_by {
                    prop_assert!(s.memories.iter().any(|m| &m.memory.id == id && m.lessons.contains(&l.id)));
                }
            }
            // Adding memories never un-recalls a lesson nor changes another
            // memory's verdict.
            let mut more = ms;
            more.extend(extra.into_iter().map(|mut m| { m.id = format!("x{}", m.id); m }));
            let t = score(&labels, more, &keys);
            for (a, b) in s.lessons.iter().zip(&t.lessons) {
                prop_assert!(!a.recalled() || b.recalled());
            }
            for (a, b) in s.memories.iter().zip(&t.memories) {
                prop_assert_eq!(a.verdict(), b.verdict());
            }
        }

        #[test]
        fn matching_ignores_ascii_case(text in "[a-zA-Z ]{0,30}", term in "[a-zA-Z]{1,4}") {
            let set = vec![vec![term.clone()]];
            prop_assert_eq!(matches(&text, &set), matches(&text.to_uppercase(), &set));
            prop_assert_eq!(matches(&text, &set), text.to_lowercase().contains(&term.to_lowercase()));
        }
    }

    #[test]
    fn a_global_memory_learned_in_two_projects_counts_for_both() {
        let (labels, keys) = corpus();
        let m = memory("g", "Terse answers; the shuttle goes left", None, &["s2", "s3"]);
        let s = score(&labels, vec![m], &keys);
        assert_eq!(s.memories[0].projects, BTreeSet::from(["kiln".to_owned(), "loom".to_owned()]));
        assert_eq!(s.memories[0].lessons, ["K3", "L1"]);
        assert!(s.lessons.iter().filter(|l| l.recalled()).count() == 2);
    }
}
