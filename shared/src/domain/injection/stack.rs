//! Where a memory of another project may go: lessons of a stack (issue 17's
//! cross-project case) and never a project of another stack.
//!
//! A project's stack is what `shared::domain::env` detected (`projects.detected_stack`;
//! for the current project, the hook's own detection when it has one). Tags
//! that say little about how a project is built ([`BROAD`]) are left out.
//!
//! - **Another stack**: a memory whose project's stack shares nothing with
//!   the current project's (both known) is never injected: a Rust project's
//!   `sqlx` fix has nothing to say to a Go project.
//! - **A lesson of the stack**: a memory of another project is one when a
//!   memory of a third project states the same lesson (they share specific
//!   words worth [`CORROBORATION`]: one word counts 1, a generic one 0.25, a
//!   pair of words in the same order 0.75) and the stack the two projects
//!   share is all in the current project's. Two projects agreeing is the
//!   evidence that it belongs to the stack rather than to one repository; a
//!   `pnpm` lesson of two pnpm projects never reaches a yarn project, since
//!   `pnpm` is in their shared stack. Such a lesson is treated as this
//!   project's own: it comes at session start.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::evidence::{countable, is_generic};
use crate::base::error::{Result, SqlContext};
use crate::base::ids::MemoryId;
use crate::base::text;
use crate::storage::store::Store;

/// Stack tags too broad to tell how a project is built.
const BROAD: &[&str] = &["backend", "frontend", "testing", "monorepo", "cli", "web", "api", "database", "ci", "devops"];

/// Least shared evidence for two memories to state one lesson.
pub const CORROBORATION: f32 = 1.75;

/// Most memories of other projects read at a session start.
const MAX_OTHERS: usize = 400;

/// What the stacks say about the memories of other projects at one moment.
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    /// The current project's stack (broad tags removed), when known.
    here: Option<BTreeSet<String>>,
    /// Each other project's stack (broad tags removed), when known.
    projects: BTreeMap<String, Option<BTreeSet<String>>>,
    /// Memories of other projects that are lessons of the current stack.
    lessons: BTreeSet<MemoryId>,
}

fn narrow(tags: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    tags.into_iter().filter(|t| !BROAD.contains(&t.as_str())).collect()
}

fn parse_stack(json: &str) -> Option<BTreeSet<String>> {
    let v: Vec<String> = serde_json::from_str(json).ok()?;
    Some(narrow(v))
}

impl Stacks {
    /// Reads the stacks of `project` (its detected `stack`, else the
    /// projection's) and of the projects of `others` (memory projects); with
    /// `lessons`, also finds the lessons of the current stack.
    pub fn load<'p>(
        store: &Store,
        project: Option<&str>,
        stack: Option<&[String]>,
        others: impl IntoIterator<Item = &'p str>,
        lessons: bool,
    ) -> Result<Stacks> {
        let Some(project) = project else { return Ok(Stacks::default()) };
        let mut stmt = store
            .conn()
            .prepare_cached("SELECT detected_stack FROM projects WHERE key = ?1")
            .sql("read a project's stack")?;
        let mut of = |key: &str| -> Result<Option<BTreeSet<String>>> {
            use rusqlite::OptionalExtension;
            let json: Option<String> = stmt.query_row([key], |r| r.get(0)).optional().sql("read a project's stack")?;
            Ok(json.as_deref().and_then(parse_stack))
        };
        let here = match stack {
            Some(s) => Some(narrow(s.iter().cloned())),
            None => of(project)?,
        }
        .filter(|s| !s.is_empty());
        let mut projects = BTreeMap::new();
        for p in others {
            if p != project && !projects.contains_key(p) {
                projects.insert(p.to_owned(), of(p)?);
            }
        }
        let mut out = Stacks { here, projects, lessons: BTreeSet::new() };
        if lessons {
            out.find_lessons(store, project)?;
        }
        Ok(out)
    }

    /// Whether a memory of `project` was learned in a project of another
    /// stack than this one (both known, nothing shared).
    pub fn other_stack(&self, project: &str) -> bool {
        match (&self.here, self.projects.get(project)) {
            (Some(here), Some(Some(there))) if !there.is_empty() => here.is_disjoint(there),
            _ => false,
        }
    }

    /// Whether a memory of another project is a lesson of this stack.
    pub fn is_lesson(&self, id: &MemoryId) -> bool {
        self.lessons.contains(id)
    }

    fn find_lessons(&mut self, store: &Store, project: &str) -> Result<()> {
        let Some(here) = self.here.clone() else { return Ok(()) };
        let mut stmt = store
            .conn()
            .prepare_cached(&format!(
                "SELECT m.id, m.project, m.content, p.detected_stack FROM memories m JOIN projects p ON p.key = m.project
                 WHERE m.is_deleted = 0 AND m.deprecated = 0 AND m.project != ?1
                 ORDER BY m.decay_key DESC LIMIT {MAX_OTHERS}"
            ))
            .sql("read other projects' memories")?;
        let rows: Vec<(String, String, String, String)> = stmt
            .query_map([project], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .sql("read other projects' memories")?
            .collect::<rusqlite::Result<_>>()
            .sql("read other projects' memories")?;
        // Only projects that share something with this one can teach it.
        let others: Vec<(MemoryId, String, BTreeSet<String>, Words)> = rows
            .into_iter()
            .filter_map(|(id, p, content, stack)| {
                let stack = parse_stack(&stack)?;
                (!stack.is_disjoint(&here)).then(|| (MemoryId::from(id), p, stack, Words::of(&content)))
            })
            .collect();
        for (i, a) in others.iter().enumerate() {
            for b in &others[i + 1..] {
                if a.1 == b.1 {
                    continue;
                }
                let shared: BTreeSet<&String> = a.2.intersection(&b.2).collect();
                if shared.is_empty() || !shared.iter().all(|t| here.contains(*t)) {
                    continue;
                }
                if a.3.shared(&b.3) >= CORROBORATION {
                    self.lessons.insert(a.0.clone());
                    self.lessons.insert(b.0.clone());
                }
            }
        }
        Ok(())
    }
}

/// The countable words of a memory and the pairs that follow each other.
#[derive(Debug)]
struct Words {
    tokens: HashSet<String>,
    pairs: HashSet<(String, String)>,
}

impl Words {
    fn of(content: &str) -> Words {
        let seq: Vec<String> =
            text::surface_tokens(content).into_iter().map(|(t, _)| t).filter(|t| countable(t)).collect();
        let pairs = seq.windows(2).filter(|w| w[0] != w[1]).map(|w| (w[0].clone(), w[1].clone())).collect();
        Words { tokens: seq.into_iter().collect(), pairs }
    }

    /// The evidence two memories share (see the module docs); nothing without
    /// one specific word.
    fn shared(&self, other: &Words) -> f32 {
        let mut score = 0.0;
        let mut specific = 0;
        for t in self.tokens.intersection(&other.tokens) {
            if is_generic(t) {
                score += super::evidence::GENERIC_WEIGHT;
            } else {
                score += 1.0;
                specific += 1;
            }
        }
        if specific == 0 {
            return 0.0;
        }
        for (a, b) in self.pairs.intersection(&other.pairs) {
            if !(is_generic(a) && is_generic(b)) {
                score += 0.75;
            }
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_statements_of_one_lesson_share_enough() {
        let w = |s: &str| Words::of(s);
        let a = w("Use cargo nextest run, not cargo test, it is much faster here.");
        let b = w("Cargo nextest run in my rust projects, not cargo test.");
        assert!(a.shared(&b) >= CORROBORATION, "{}", a.shared(&b));
        let c = w("Always vitest run.");
        let d = w("Don't run vitest in watch mode, it never exits; use vitest run.");
        assert!(c.shared(&d) >= CORROBORATION, "{}", c.shared(&d));
        // One common word and generic ones are not one lesson.
        let e = w("Run the tests with TZ=UTC, they assume it.");
        let f = w("Run the tests before you push.");
        assert!(e.shared(&f) < CORROBORATION, "{}", e.shared(&f));
        let g = w("Don't edit Cargo.toml by hand, use cargo add.");
        assert!(a.shared(&g) < CORROBORATION, "{}", a.shared(&g));
    }
}
