//! The scenario benchmark of Engram's job: the right lesson in the agent's
//! context at the moment it is needed, and nothing else (issue 15 item 8,
//! and issue 17's cross-project cases).
//!
//! A scenario (`tests/scenarios/**/*.toml`, format in
//! `tests/scenarios/README.md`) is one user's story: project folders with
//! real markers, the lessons that arise in earlier sessions (each with the
//! terms any statement of it must contain, and where it may appear), and a
//! script of sessions played through the real hooks by the [driver]
//! (crate::driver). Later sessions label every event with the lessons it
//! needs, or none. [`run`] plays a scenario and records what the hooks put
//! into the agent's context and what the CLI lists ([`run::Trace`]);
//! [`judge`] turns a trace into the issue's measures; [`report`] sums them
//! and checks the thresholds.

pub mod judge;
pub mod report;
pub mod run;
pub mod script;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::driver::err;
pub use crate::driver::{Error, Result};
use script::{Event, Line, Outcome, Step};

/// A term a lesson's statement must contain: one of its alternatives
/// (`a|b`), matched case-insensitively at the start of a word; an
/// alternative written `=word` must be a whole word (`=uv` is not `uvicorn`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term(pub Vec<String>);

impl Term {
    fn parse(s: &str) -> Term {
        Term(s.split('|').map(|a| a.trim().to_lowercase()).filter(|a| !a.is_empty() && a != "=").collect())
    }

    /// Whether `lower` (already lower-cased) contains one of the alternatives.
    pub fn found_in(&self, lower: &str) -> bool {
        self.0.iter().any(|alt| match alt.strip_prefix('=') {
            Some(word) => word_find(lower, word, true),
            None => word_find(lower, alt, false),
        })
    }
}

/// Whether `needle` occurs in `hay` where the character before it is not
/// alphanumeric (or at the start), and with `whole`, neither is the one after.
fn word_find(hay: &str, needle: &str, whole: bool) -> bool {
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        let at = from + i;
        let end = at + needle.len();
        if boundary(hay[..at].chars().next_back()) && (!whole || boundary(hay[end..].chars().next())) {
            return true;
        }
        from = at + needle.len().max(1);
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// Whether every term is found in `text` (one line of context or one memory).
pub fn states(terms: &[Term], text: &str) -> bool {
    let lower = text.to_lowercase();
    !terms.is_empty() && terms.iter().all(|t| t.found_in(&lower))
}

/// Where a lesson may appear.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere: a general preference. Never noise, never a leak.
    Global,
    /// In these projects only (by default the projects it was planted in).
    Projects(BTreeSet<String>),
}

impl Scope {
    /// Whether the lesson may appear in `project`.
    pub fn allows(&self, project: &str) -> bool {
        match self {
            Scope::Global => true,
            Scope::Projects(p) => p.contains(project),
        }
    }
}

/// A lesson that arises in the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lesson {
    /// Its name in the scenario.
    pub id: String,
    /// What kind of lesson (correction, failed-fix, ...), for the report.
    pub kind: String,
    /// Where it may appear.
    pub scope: Scope,
    /// The lesson in words (for people; must state its own terms).
    pub say: String,
    /// The terms any statement of it contains.
    pub terms: Vec<Term>,
    /// Terms of lines that only look like it (an error message quoting the
    /// fix's words): a line holding one of them does not state the lesson.
    pub unless: Vec<Term>,
}

impl Lesson {
    /// Whether `text` (one line of context, or one memory) states the lesson.
    pub fn stated_by(&self, text: &str) -> bool {
        states(&self.terms, text) && {
            let lower = text.to_lowercase();
            !self.unless.iter().any(|t| t.found_in(&lower))
        }
    }
}

/// Something that must not become a memory (a retry credited as the fix, a
/// request stored as a convention, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trap {
    /// Its name.
    pub id: String,
    /// The wrong lesson in words.
    pub say: String,
    /// Its terms.
    pub terms: Vec<Term>,
}

/// A project folder of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    /// Its name in the scenario.
    pub name: String,
    /// The folder to make.
    pub spec: crate::driver::ProjectSpec,
}

/// A parsed, checked scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Its name: the file's path under the scenario directory, without `.toml`.
    pub name: String,
    /// One line saying what it checks.
    pub summary: String,
    /// Stacks it covers (node, rust, python, go, docker).
    pub stacks: Vec<String>,
    /// Kinds of case (correction, compaction, forget, cross-project, ...).
    pub kinds: Vec<String>,
    /// Projects by name.
    pub projects: BTreeMap<String, Project>,
    /// Lessons by name.
    pub lessons: BTreeMap<String, Lesson>,
    /// Traps by name.
    pub traps: BTreeMap<String, Trap>,
    /// The script.
    pub script: Vec<Line>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    summary: String,
    stacks: Vec<String>,
    kinds: Vec<String>,
    projects: BTreeMap<String, ProjectDoc>,
    #[serde(default)]
    lessons: BTreeMap<String, LessonDoc>,
    #[serde(default)]
    traps: BTreeMap<String, TrapDoc>,
    play: PlayDoc,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectDoc {
    template: Option<String>,
    dir: Option<String>,
    #[serde(default = "yes")]
    git: bool,
    remote: Option<String>,
    branch: Option<String>,
    #[serde(default)]
    worktrees: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeDoc {
    Word(String),
    List(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LessonDoc {
    kind: String,
    scope: Option<ScopeDoc>,
    say: String,
    terms: Vec<String>,
    #[serde(default)]
    unless: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrapDoc {
    say: String,
    terms: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlayDoc {
    script: String,
}

/// Project templates (`templates.toml`): name → files, with `{name}` in
/// paths and contents replaced by the project's name.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Templates(pub BTreeMap<String, TemplateDoc>);

/// One template.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateDoc {
    /// Relative path → content.
    pub files: BTreeMap<String, String>,
}

impl Templates {
    /// Reads `templates.toml`.
    pub fn load(path: &Path) -> Result<Templates> {
        let text = std::fs::read_to_string(path).map_err(|e| err!("{}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| err!("{}: {e}", path.display()))
    }
}

/// The scenario directory of this repository (`tests/scenarios`).
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// Every scenario under `dir` (recursively, `*.toml` but `templates.toml`),
/// sorted by name, with the templates.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>> {
    let templates = Templates::load(&dir.join("templates.toml"))?;
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(dir).unwrap_or(&f).with_extension("");
        let name = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&f).map_err(|e| err!("{}: {e}", f.display()))?;
        out.push(parse(&name, &text, &templates).map_err(|e| err!("{}: {e}", f.display()))?);
    }
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).map_err(|e| err!("{}: {e}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "toml") && p.file_name().is_some_and(|n| n != "templates.toml") {
            out.push(p);
        }
    }
    Ok(())
}

/// The stacks and kinds a scenario may name (a typo is an error).
pub const STACKS: &[&str] = &["node", "rust", "python", "go", "docker"];
/// See [`STACKS`].
pub const KINDS: &[&str] = &[
    "correction",
    "failed-fix",
    "service-first",
    "rejected-tool",
    "two-rules",
    "convention",
    "request",
    "quirk",
    "preference",
    "compaction",
    "forget",
    "cross-project",
    "identity",
];

/// Parses and checks one scenario.
pub fn parse(name: &str, text: &str, templates: &Templates) -> Result<Scenario> {
    let doc: FileDoc = toml::from_str(text).map_err(|e| err!("{e}"))?;
    for s in &doc.stacks {
        if !STACKS.contains(&s.as_str()) {
            return Err(err!("unknown stack {s:?}; one of {STACKS:?}"));
        }
    }
    for k in &doc.kinds {
        if !KINDS.contains(&k.as_str()) {
            return Err(err!("unknown kind {k:?}; one of {KINDS:?}"));
        }
    }
    let mut projects = BTreeMap::new();
    for (pname, p) in doc.projects {
        let mut files = BTreeMap::new();
        if let Some(t) = &p.template {
            let t = templates.0.get(t).ok_or_else(|| err!("project {pname}: no template {t:?}"))?;
            for (path, content) in &t.files {
                files.insert(path.replace("{name}", &pname), content.replace("{name}", &pname));
            }
        }
        files.extend(p.files);
        let git = p.git.then(|| crate::driver::GitSpec {
            remote: p.remote.clone(),
            branch: p.branch.clone(),
            worktrees: p.worktrees.clone(),
        });
        let dir = p.dir.unwrap_or_else(|| pname.clone());
        projects.insert(pname.clone(), Project { name: pname, spec: crate::driver::ProjectSpec { dir, files, git } });
    }
    let script = script::parse(&doc.play.script)?;
    let planted = plantings(&script);
    let mut lessons = BTreeMap::new();
    for (id, l) in doc.lessons {
        let scope = match l.scope {
            None => Scope::Projects(
                planted.get(&id).map(|p| p.iter().map(|(proj, _)| proj.clone()).collect()).unwrap_or_default(),
            ),
            Some(ScopeDoc::Word(w)) if w == "global" => Scope::Global,
            Some(ScopeDoc::Word(w)) if w == "project" => Scope::Projects(
                planted.get(&id).map(|p| p.iter().map(|(proj, _)| proj.clone()).collect()).unwrap_or_default(),
            ),
            Some(ScopeDoc::Word(w)) => return Err(err!("lesson {id}: scope {w:?}: \"project\", \"global\" or a list")),
            Some(ScopeDoc::List(list)) => Scope::Projects(list.into_iter().collect()),
        };
        let terms: Vec<Term> = l.terms.iter().map(|t| Term::parse(t)).collect();
        let unless: Vec<Term> = l.unless.iter().map(|t| Term::parse(t)).collect();
        lessons.insert(id.clone(), Lesson { id, kind: l.kind, scope, say: l.say, terms, unless });
    }
    let traps = doc
        .traps
        .into_iter()
        .map(|(id, t)| {
            let terms = t.terms.iter().map(|x| Term::parse(x)).collect();
            (id.clone(), Trap { id, say: t.say, terms })
        })
        .collect();
    let s = Scenario {
        name: name.to_owned(),
        summary: doc.summary,
        stacks: doc.stacks,
        kinds: doc.kinds,
        projects,
        lessons,
        traps,
        script,
    };
    check(&s, &planted)?;
    Ok(s)
}

/// Lesson → (project, session) of each `plant`.
fn plantings(script: &[Line]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    let mut projects: BTreeMap<String, String> = BTreeMap::new();
    for l in script {
        match &l.step {
            Step::Session { name, project, .. } => {
                projects.insert(name.clone(), project.clone());
                current = Some((project.clone(), name.clone()));
            }
            Step::Resume(name) => current = projects.get(name).map(|p| (p.clone(), name.clone())),
            Step::Plant(ids) => {
                for id in ids {
                    if let Some(c) = &current {
                        out.entry(id.clone()).or_default().push(c.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The text a session's script gives the transcript (prompts, agent text,
/// commands, tool arguments and outputs), lower-cased.
fn session_texts(script: &[Line]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for l in script {
        let add = |s: &str, out: &mut BTreeMap<String, String>, cur: &Option<String>| {
            if let Some(c) = cur {
                let t = out.entry(c.clone()).or_default();
                t.push('\n');
                t.push_str(&s.to_lowercase());
            }
        };
        match &l.step {
            Step::Session { name, .. } | Step::Resume(name) => current = Some(name.clone()),
            Step::End(_) => {}
            Step::Say(t) => add(t, &mut out, &current),
            Step::Event { event: Event::Prompt(t), .. } => add(t, &mut out, &current),
            Step::Event { event: Event::Tool(tool), .. } => {
                add(&tool.arg, &mut out, &current);
                add(tool.body.as_deref().unwrap_or(""), &mut out, &current);
                match &tool.outcome {
                    Outcome::Ok(t) | Outcome::Fail(_, t) | Outcome::Rejected(Some(t)) => add(t, &mut out, &current),
                    Outcome::Rejected(None) => {}
                }
            }
            _ => {}
        }
    }
    out
}

/// The checks that keep a scenario honest (see the README).
fn check(s: &Scenario, planted: &BTreeMap<String, Vec<(String, String)>>) -> Result<()> {
    let texts = session_texts(&s.script);
    for (id, l) in &s.lessons {
        if l.terms.is_empty() {
            return Err(err!("lesson {id}: no terms"));
        }
        if !l.stated_by(&l.say) {
            return Err(err!("lesson {id}: its own statement does not contain its terms (or holds an `unless` term)"));
        }
        for (other_id, other) in &s.lessons {
            if other_id != id && l.stated_by(&other.say) {
                return Err(err!("lesson {id}: its terms also match lesson {other_id}'s statement"));
            }
        }
        for (tid, t) in &s.traps {
            if l.stated_by(&t.say) {
                return Err(err!("lesson {id}: its terms also match trap {tid}'s statement"));
            }
        }
        let Some(places) = planted.get(id) else { return Err(err!("lesson {id} is never planted")) };
        for (_, session) in places {
            let text = texts.get(session).map(String::as_str).unwrap_or("");
            for t in &l.terms {
                if !t.found_in(text) {
                    return Err(err!(
                        "lesson {id}: term {:?} does not occur in session {session}, where it is planted",
                        t.0.join("|")
                    ));
                }
            }
        }
        if let Scope::Projects(p) = &l.scope {
            for name in p {
                if !s.projects.contains_key(name) {
                    return Err(err!("lesson {id}: scope names unknown project {name}"));
                }
            }
        }
        if !KINDS.contains(&l.kind.as_str()) {
            return Err(err!("lesson {id}: unknown kind {:?}", l.kind));
        }
    }
    for (id, t) in &s.traps {
        if !states(&t.terms, &t.say) {
            return Err(err!("trap {id}: its own statement does not contain its terms"));
        }
    }
    check_script(s)
}

fn check_script(s: &Scenario) -> Result<()> {
    let mut sessions: BTreeMap<&str, bool> = BTreeMap::new(); // name → ended
    let mut open: Option<&str> = None;
    // Per session opening (a session, or a resume of it): its name, labelled
    // events, unlabelled events, an explicit start.
    let mut labelled: Vec<(&str, usize, usize, bool)> = Vec::new();
    let mut planted_before: BTreeSet<&str> = BTreeSet::new();
    let known = |id: &str, no: usize| -> Result<()> {
        if s.lessons.contains_key(id) { Ok(()) } else { Err(err!("script line {no}: unknown lesson {id:?}")) }
    };
    for l in &s.script {
        let no = l.no;
        match &l.step {
            Step::Session { name, project, worktree, .. } => {
                if open.is_some() {
                    return Err(err!("script line {no}: `end` the open session first"));
                }
                if let Some(w) = worktree {
                    let has = s
                        .projects
                        .get(project)
                        .and_then(|p| p.spec.git.as_ref())
                        .is_some_and(|g| g.worktrees.contains_key(w));
                    if !has {
                        return Err(err!("script line {no}: {w} is not a worktree of project {project}"));
                    }
                }
                if sessions.insert(name, false).is_some() {
                    return Err(err!("script line {no}: session {name} already exists"));
                }
                if !s.projects.contains_key(project) {
                    return Err(err!("script line {no}: unknown project {project}"));
                }
                open = Some(name);
                labelled.push((name, 0, 0, false));
            }
            Step::Resume(name) => {
                labelled.push((name, 0, 0, false));
                if open.is_some() {
                    return Err(err!("script line {no}: `end` the open session first"));
                }
                match sessions.get(name.as_str()) {
                    Some(true) => open = Some(name),
                    _ => return Err(err!("script line {no}: resume of {name}, which is not an ended session")),
                }
            }
            Step::End(_) => {
                let name = open.take().ok_or_else(|| err!("script line {no}: `end` without a session"))?;
                sessions.insert(name, true);
            }
            Step::Say(_) => {
                open.ok_or_else(|| err!("script line {no}: outside a session"))?;
            }
            Step::Plant(ids) => {
                open.ok_or_else(|| err!("script line {no}: `plant` outside a session"))?;
                for id in ids {
                    known(id, no)?;
                    planted_before.insert(id);
                }
            }
            Step::Forget(id) => {
                if open.is_some() {
                    return Err(err!("script line {no}: `forget` between sessions only"));
                }
                known(id, no)?;
            }
            Step::Rescan(name) => {
                if open.is_some() || sessions.get(name.as_str()) != Some(&true) {
                    return Err(err!("script line {no}: rescan of an ended session, between sessions"));
                }
            }
            Step::Replay | Step::CompactTapes => {
                if open.is_some() {
                    return Err(err!("script line {no}: between sessions only"));
                }
            }
            Step::Event { needs, event } => {
                open.ok_or_else(|| err!("script line {no}: an event outside a session"))?;
                let Some(entry) = labelled.last_mut() else { return Err(err!("script line {no}: no session")) };
                if matches!(event, Event::Start(_) | Event::Resume) {
                    entry.3 = true;
                }
                match needs {
                    Some(ids) => {
                        entry.1 += 1;
                        for id in ids {
                            known(id, no)?;
                            if !planted_before.contains(id.as_str()) {
                                return Err(err!("script line {no}: {id} is needed before it is ever planted"));
                            }
                        }
                    }
                    None => entry.2 += 1,
                }
            }
        }
    }
    if let Some(name) = open {
        return Err(err!("session {name} is never ended"));
    }
    for (name, with, without, start) in labelled {
        if with > 0 && without > 0 {
            return Err(err!("session {name}: label every event (with [-] for none) or none"));
        }
        if with > 0 && !start {
            return Err(err!("session {name}: a labelled session starts with a labelled `start`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_unless_term_keeps_a_quoted_error_from_stating_a_lesson() {
        let l = Lesson {
            id: "x".into(),
            kind: "failed-fix".into(),
            scope: Scope::Global,
            say: String::new(),
            terms: vec![Term::parse("sqlx_offline")],
            unless: vec![Term::parse("no cached data")],
        };
        assert!(l.stated_by("Always build with SQLX_OFFLINE=true here."));
        assert!(!l.stated_by("cargo build failed; last error: `SQLX_OFFLINE=true` but there is no cached data"));
    }

    #[test]
    fn terms_match_at_word_starts() {
        let t = |s: &str| vec![Term::parse(s)];
        assert!(states(&t("npm"), "never use npm here"));
        assert!(!states(&t("npm"), "use pnpm"));
        assert!(states(&t("pnpm|yarn"), "Use Yarn."));
        assert!(states(&t("start"), "starting redis first"));
        assert!(states(&[Term::parse("redis"), Term::parse("docker compose")], "Run docker compose up redis"));
        assert!(!states(&[], "anything"));
        assert!(states(&t("é"), "x é"));
        assert!(states(&t("=uv"), "use uv add"));
        assert!(!states(&t("=uv"), "run uvicorn"));
        assert!(states(&t("=uv"), "uv."));
    }

    const DOC: &str = r#"
summary = "s"
stacks = ["node"]
kinds = ["correction"]
[projects.web]
template = "t"
[projects.web.files]
"extra.txt" = "hi"
[lessons.pnpm]
kind = "correction"
say = "Use pnpm here, not npm."
terms = ["pnpm"]
[play]
script = '''
session one web
> install deps
$ npm install
! npm ERR! E404
> no, use pnpm
plant pnpm
end
session two web
[pnpm] start
[-] > hello
end
'''
"#;

    fn templates() -> Templates {
        let mut t = Templates::default();
        t.0.insert("t".into(), TemplateDoc { files: [("{name}/package.json".into(), "{name}".into())].into() });
        t
    }

    #[test]
    fn a_scenario_loads_with_its_template_and_scope() {
        let s = parse("x", DOC, &templates()).unwrap();
        let web = &s.projects["web"].spec;
        assert_eq!(web.files["web/package.json"], "web");
        assert_eq!(web.files["extra.txt"], "hi");
        assert_eq!(s.lessons["pnpm"].scope, Scope::Projects(["web".to_owned()].into()));
        assert!(web.git.is_some());
    }

    #[test]
    fn dishonest_scenarios_are_refused() {
        let cases = [
            (DOC.replace("terms = [\"pnpm\"]", "terms = [\"yarn\"]"), "own statement"),
            (DOC.replace("> no, use pnpm", "> no, use the other one"), "does not occur in session one"),
            (DOC.replace("[-] > hello", "> hello"), "label every event"),
            (DOC.replace("[pnpm] start", "start"), "label every event"),
            (DOC.replace("plant pnpm", ""), "never planted"),
            (DOC.replace("[-] > hello", "[vite] > hello"), "unknown lesson"),
            (DOC.replace("session two web", "session one web"), "already exists"),
            (DOC.replace("kinds = [\"correction\"]", "kinds = [\"corection\"]"), "unknown kind"),
        ];
        for (text, what) in cases {
            let e = parse("x", &text, &templates()).unwrap_err().0;
            assert!(e.contains(what), "{what}: {e}");
        }
        let needed_early = DOC.replace("> install deps", "[pnpm] start\n[-] > install deps").replace(
            "$ npm install\n! npm ERR! E404\n> no, use pnpm",
            "[-] $ npm install\n! npm ERR! E404\n[-] > no, use pnpm",
        );
        let e = parse("x", &needed_early, &templates()).unwrap_err().0;
        assert!(e.contains("before it is ever planted"), "{e}");
    }
}
