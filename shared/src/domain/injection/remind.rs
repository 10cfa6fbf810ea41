//! Reminders at the moment of action: which memories warn against what a
//! tool call is about to do (the command a lesson corrected, the form of a
//! command that failed, a command run before what it needs, a package
//! manager the project does not use, a file never to edit, a library or a
//! call the code must not use), so that the tool-call hook names them right
//! then, even when they were injected earlier in the session.
//!
//! A memory warns against a form when its text puts it after a negation
//! ("instead of `npm install`", "not `go test`", "never edit
//! `docker-compose.yml`", "use pnpm, not npm", "no testify", "never
//! unwrap()"), before a failure ("`git push --force` fails with …"), after
//! what must come first ("run `make seed` before `make e2e`"), or calls a
//! file generated ("`src/api/client.gen.ts` is generated").
//!
//! A call repeats a command form when one of its simple commands runs the
//! form's program with the form's other words in order, unless the call
//! does what the memory asks instead:
//! - a fix of the same program ("`pnpm dev --port 5175` instead of `pnpm
//!   dev`", "`TZ=UTC uv run pytest`"): a call of that program that already
//!   has the fix's added words (flags, their values, environment
//!   assignments) is right, whatever files it names; one without them repeats
//!   the mistake;
//! - what must come first: a call that runs it before, or a session that
//!   ran it earlier in the same context, is right.
//!
//! It repeats a path when it writes a file whose path ends with it, a flag
//! when one of its commands passes it, and code when the text it writes adds
//! the token (a library's name only on an import line or in a manifest, so
//! that "no testify" is not about `color: black`). Nothing else matches: a
//! reminder that does not match the call would be noise.

use serde_json::Value;

use crate::base::shell::{is_assignment, persists};
use crate::base::text::is_stop_word;

/// What a memory warns against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warned {
    /// A command: its words, the program first (`npm install`).
    Command(Vec<String>),
    /// A file, or the end of its path (`docker-compose.yml`, `migrations/`).
    Path(String),
    /// A flag, whatever command passes it (`--force`).
    Flag(String),
    /// Code the written text must not add: a call or a type anywhere
    /// (`unwrap()`, `any`), a library only where code imports or declares
    /// one (`testify`).
    Code { token: String, imports_only: bool },
}

impl Warned {
    /// The form as people write it.
    pub fn text(&self) -> String {
        match self {
            Warned::Command(words) => words.join(" "),
            Warned::Path(p) | Warned::Flag(p) => p.clone(),
            Warned::Code { token, .. } => token.clone(),
        }
    }

    /// What the call does, as the reminder says it ("runs `npm install`").
    pub fn describe(&self) -> String {
        let form = self.text().replace('`', "'");
        match self {
            Warned::Command(_) => format!("runs `{form}`"),
            Warned::Path(_) => format!("writes `{form}`"),
            Warned::Flag(_) => format!("passes `{form}`"),
            Warned::Code { .. } => format!("adds `{form}`"),
        }
    }
}

/// One warning of a memory: the form, and what makes a call of it right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The form warned against.
    pub what: Warned,
    /// What the memory asks for instead, if it says.
    pub unless: Unless,
}

/// What makes a call of a warned command right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unless {
    /// Nothing: the form itself is the mistake.
    Never,
    /// The fix of the same program adds these words (flags, values,
    /// environment assignments); the files the form named do not matter.
    Adds(Vec<String>),
    /// This command must run first (its words, the program first).
    First(Vec<String>),
    /// Only the bare form is the mistake ("never a bare `cargo update`"):
    /// any further word makes the call right.
    Arguments,
}

/// One simple command of a call: its environment assignments and words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Simple {
    env: Vec<String>,
    words: Vec<String>,
}

/// What a tool call is about to do: the simple commands it runs, the files
/// it writes, and the text it writes (added and replaced).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    commands: Vec<Simple>,
    writes: Vec<String>,
    added: Vec<Written>,
}

/// Text a call writes into one file, and the text it replaces there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Written {
    path: String,
    new: String,
    old: String,
}

/// Keys of a tool's input that hold a command line.
const COMMAND_KEYS: &[&str] = &["command", "cmd"];
/// Keys of a tool's input that hold the file it works on.
const PATH_KEYS: &[&str] = &["file_path", "path", "filePath", "notebook_path", "absolute_path"];
/// Keys of a tool's input that hold the text it writes.
const NEW_KEYS: &[&str] = &["new_string", "content", "new_str", "file_text", "newString"];
/// Keys of a tool's input that hold the text a write replaces.
const OLD_KEYS: &[&str] = &["old_string", "old_str", "oldString"];
/// Shells whose `-c` argument is the command line (`bash -lc "…"`).
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "fish"];
/// Words that run the next word as the program.
const WRAPPERS: &[&str] = &["sudo", "env", "time", "nice", "exec", "command", "nohup"];

impl Call {
    /// The call of tool `tool` with `input` (Claude Code's, Codex's and
    /// Gemini's shapes: a `command` string, a `cmd` array, a file path, an
    /// edit's strings, a patch).
    pub fn of(tool: &str, input: &Value) -> Call {
        let mut call = Call::default();
        let Value::Object(map) = input else { return call };
        for key in COMMAND_KEYS {
            match map.get(*key) {
                Some(Value::String(s)) => call.add_line(s),
                Some(Value::Array(items)) => {
                    let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    match words.as_slice() {
                        [shell, flag, line] if SHELLS.contains(&base(shell)) && flag.ends_with('c') => {
                            call.add_line(line)
                        }
                        _ => call.add_line(&words.join(" ")),
                    }
                }
                _ => {}
            }
        }
        let lower = tool.to_ascii_lowercase();
        if ["edit", "write", "patch", "create", "replace"].iter().any(|w| lower.contains(w)) {
            let path = PATH_KEYS.iter().find_map(|k| map.get(*k).and_then(Value::as_str)).unwrap_or_default();
            if !path.is_empty() {
                call.writes.push(path.to_owned());
            }
            let text = |keys: &[&str], m: &serde_json::Map<String, Value>| {
                keys.iter().filter_map(|k| m.get(*k).and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            };
            let new = text(NEW_KEYS, map);
            if !new.is_empty() {
                call.added.push(Written { path: path.to_owned(), new, old: text(OLD_KEYS, map) });
            }
            // Several edits of one file (`MultiEdit`).
            if let Some(Value::Array(edits)) = map.get("edits") {
                for e in edits.iter().filter_map(Value::as_object) {
                    call.added.push(Written { path: path.to_owned(), new: text(NEW_KEYS, e), old: text(OLD_KEYS, e) });
                }
            }
            // A patch names its files in its own headers, and marks what it adds.
            for text in map.values().filter_map(Value::as_str) {
                let mut file: Option<usize> = None;
                for line in text.lines() {
                    if let Some(p) = ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
                        .iter()
                        .find_map(|head| line.strip_prefix(head))
                    {
                        call.writes.push(p.trim().to_owned());
                        call.added.push(Written { path: p.trim().to_owned(), ..Written::default() });
                        file = Some(call.added.len() - 1);
                    } else if let Some(w) = file.and_then(|i| call.added.get_mut(i)) {
                        if let Some(l) = line.strip_prefix('+') {
                            w.new.push_str(l);
                            w.new.push('\n');
                        } else if let Some(l) = line.strip_prefix('-') {
                            w.old.push_str(l);
                            w.old.push('\n');
                        }
                    }
                }
            }
        }
        call
    }

    /// The call a tool ranking's query describes (the tool's name, then its
    /// command line): what a session ran earlier. Only shell tools run
    /// commands; any other query is an empty call.
    pub fn of_query(query: &str) -> Call {
        let mut call = Call::default();
        if let Some((tool, line)) = query.split_once(' ')
            && matches!(tool, "Bash" | "bash" | "shell" | "exec_command" | "run_shell_command" | "local_shell")
        {
            call.add_line(line);
        }
        call
    }

    /// Adds the simple commands of a command line.
    fn add_line(&mut self, line: &str) {
        for simple in line.split(['\n', ';', '|', '&']) {
            let mut words: Vec<String> = simple.split_whitespace().map(unquote).filter(|w| !w.is_empty()).collect();
            let mut env = Vec::new();
            while let Some(w) = words.first().filter(|w| is_assignment(w) || WRAPPERS.contains(&w.as_str())) {
                if is_assignment(w) {
                    env.push(w.clone());
                }
                words.remove(0);
            }
            if words.is_empty() {
                continue;
            }
            // `shell -c "line"` runs the line.
            if SHELLS.contains(&base(&words[0])) && words.get(1).is_some_and(|f| f.starts_with('-') && f.ends_with('c'))
            {
                let rest = simple.split_once(words[1].as_str()).map(|(_, r)| r.trim()).unwrap_or_default();
                self.add_line(&unquote(rest));
                continue;
            }
            self.commands.push(Simple { env, words });
        }
    }

    /// Whether `text` can warn against this call at all, a test much cheaper
    /// than [`warnings`]: a warned command names its program in the text as
    /// the call runs it (in a code span, or a lowercase known program in
    /// prose), and a warned flag is passed by some command, so a text that
    /// holds none of the call's programs, in any case, warns against none of
    /// its commands; nor can it name one ([`Call::named_by`]) without one of
    /// its programs, environment assignments, long flags or paths. A call
    /// that writes files is always worth the full reading.
    pub fn may_be_warned_by(&self, text: &str) -> bool {
        if !self.writes.is_empty() {
            return true;
        }
        let lower = text.to_lowercase();
        let has = |w: &str| lower.contains(&w.to_lowercase());
        self.commands.iter().any(|c| {
            let programs = c.words.first().into_iter().chain(run_through(&c.words).and_then(|r| r.first()));
            programs.map(|p| base(p)).any(has)
                || c.env.iter().any(|e| has(e))
                || c.words.iter().skip(1).any(|w| {
                    if w.starts_with('-') {
                        w.trim_start_matches('-').len() >= 4 && has(w)
                    } else {
                        w.contains('/') && has(w.trim_start_matches("./"))
                    }
                })
        })
    }

    /// What of this call `text` (a memory) names: a command's program then
    /// its first word that is not a flag ("write the SQL in queries/ and run
    /// sqlc generate", "tests run w/ bun test", "instead of `git push
    /// --force origin main`"), also of the command a runner runs (`uv run
    /// ruff format`), a long flag it passes ("always pass -count=1"), an
    /// environment assignment ("run them with TZ=UTC"), or a file it runs
    /// ("rendered by scripts/og.ts" at `pnpm tsx scripts/og.ts`). A mention
    /// the text warns against ("don't use npm install") names it too: either
    /// way the lesson is about this call. The words named.
    pub fn named_by(&self, text: &str) -> Option<Vec<String>> {
        let clean = |w: &str| {
            w.trim_matches(|c: char| !(c.is_alphanumeric() || "-_./=".contains(c))).trim_end_matches('.').to_lowercase()
        };
        let parts: Vec<&str> = text.split('`').collect();
        let prose: Vec<String> =
            parts.iter().step_by(2).flat_map(|p| p.split_whitespace()).map(clean).filter(|w| !w.is_empty()).collect();
        // A code span names a command only when one of it and the call holds
        // every operand of the other: `git push --force origin main` names
        // `git push`, `poetry run python manage.py createsuperuser` does not
        // name `poetry run python manage.py test`.
        let spans: Vec<Vec<String>> = parts
            .iter()
            .skip(1)
            .step_by(2)
            .map(|p| p.split_whitespace().map(clean).filter(|w| !w.is_empty()).collect())
            .collect();
        // A mention followed by "before" is what must come first: the lesson
        // is about the command after it.
        let first = |at: usize| prose[at..].iter().take(8).any(|w| w == "before");
        let in_prose = |w: &str| prose.iter().enumerate().any(|(i, x)| x == w && !first(i));
        // `uv run ruff format x.py` runs `ruff format x.py` too.
        let mut runs = self.commands.iter().flat_map(|c| {
            let inner = run_through(&c.words).map(|w| (w, c.env.as_slice()));
            std::iter::once((c.words.as_slice(), c.env.as_slice())).chain(inner)
        });
        runs.find_map(|(words, env)| {
            // An environment assignment the memory's prose names ("tests
            // always run with TZ=UTC").
            if let Some(e) = env.iter().find(|e| in_prose(&e.to_lowercase())) {
                return Some(vec![e.clone()]);
            }
            let program = base(words.first()?).to_lowercase();
            let args = &words[1..];
            let operands: Vec<String> =
                words.iter().filter(|w| !w.starts_with('-')).map(|w| w.to_lowercase()).collect();
            let span_names = |span: &[String]| {
                let theirs: Vec<&String> = span.iter().filter(|w| !w.starts_with('-')).collect();
                span.first().is_some_and(|p| base(p) == program)
                    && (theirs.iter().all(|w| operands.contains(w)) || operands.iter().all(|w| theirs.contains(&w)))
            };
            let sub = args.iter().find(|w| !w.starts_with('-')).map(|w| w.to_lowercase());
            if let Some(sub) = sub.filter(|sub| {
                !looks_like_path(sub)
                    && (prose.windows(2).enumerate().any(|(i, p)| p[0] == program && p[1] == *sub && !first(i))
                        || spans.iter().any(|s| s.get(1) == Some(sub) && span_names(s)))
            }) {
                return Some(vec![program, sub]);
            }
            args.iter().find_map(|w| {
                let l = w.trim_start_matches("./").to_lowercase();
                let flag = l.starts_with('-') && l.trim_start_matches('-').len() >= 4;
                let file = !l.starts_with('-') && l.len() >= 5 && l.contains('/') && l.contains('.');
                ((flag || file) && in_prose(&l)).then(|| vec![program.clone(), w.clone()])
            })
        })
    }

    /// Whether the call does nothing a memory could warn against.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.writes.is_empty()
    }

    /// Whether the call runs the command `warning` is about, rightly or not
    /// (`pnpm dev --port 5175` for "`pnpm dev --port 5175` instead of `pnpm
    /// dev`", `make seed && make e2e` for "`make seed` before `make e2e`"):
    /// the lesson is worth having at this call even when it is done right.
    pub fn concerns(&self, warning: &Warning) -> bool {
        let Warned::Command(form) = &warning.what else { return false };
        let key = match warning.unless {
            Unless::Adds(_) => without_operands(form),
            _ => form.clone(),
        };
        self.commands.iter().any(|c| runs(&c.words, &key))
    }

    /// Whether the call writes the file or folder `path` ([`named_paths`]).
    pub fn writes_under(&self, path: &str) -> bool {
        let p = path.trim_end_matches('/');
        self.writes.iter().any(|w| {
            let w = w.trim_start_matches("./");
            w == p || w.ends_with(&format!("/{p}")) || w.starts_with(&format!("{p}/")) || w.contains(&format!("/{p}/"))
        })
    }

    /// Whether the call runs `form` (as [`asked`] gives it): the form's
    /// program and words in order, and its environment assignments.
    pub fn runs_asked(&self, form: &[String]) -> bool {
        let env: Vec<&String> = form.iter().take_while(|w| is_assignment(w)).collect();
        self.commands.iter().any(|c| runs(&c.words, form) && env.iter().all(|e| c.env.contains(e)))
    }

    /// Whether the call repeats what `warning` warns against, given the
    /// calls the session made before it in the same context (`earlier`).
    pub fn repeats_warning(&self, warning: &Warning, earlier: &[Call]) -> bool {
        match &warning.what {
            Warned::Command(form) => self.commands.iter().enumerate().any(|(i, c)| match &warning.unless {
                Unless::Never => runs(&c.words, form),
                Unless::Arguments => c.words.len() == form.len() && runs(&c.words, form),
                Unless::Adds(added) => {
                    runs(&c.words, &without_operands(form))
                        && !added.iter().all(|a| c.env.contains(a) || c.words.contains(a))
                }
                // What persists (an install, the repository's remote) ran in
                // some earlier session as likely as not: the call is about
                // the memory, no mistake.
                Unless::First(first) if persists(&first.join(" ")) => false,
                Unless::First(first) => {
                    let first = without_operands(first);
                    runs(&c.words, form)
                        && !self.commands[..i].iter().any(|p| runs(&p.words, &first))
                        && !earlier.iter().flat_map(|e| &e.commands).any(|p| runs(&p.words, &first))
                }
            }),
            Warned::Path(p) => {
                let p = p.trim_start_matches("./");
                self.writes.iter().any(|w| {
                    let w = w.trim_start_matches("./");
                    if p.ends_with('/') {
                        w.contains(p) || w.starts_with(p)
                    } else {
                        w == p || w.ends_with(&format!("/{p}"))
                    }
                })
            }
            Warned::Flag(f) => self.commands.iter().any(|c| c.words[1..].iter().any(|w| w == f)),
            Warned::Code { token, imports_only } => self.added.iter().any(|w| {
                let manifest = is_manifest(&w.path);
                let count = |text: &str| -> usize {
                    text.lines()
                        .filter(|l| !*imports_only || manifest || is_import_line(l))
                        .map(|l| code_occurrences(l, token))
                        .sum()
                };
                count(&w.new) > count(&w.old)
            }),
        }
    }
}

/// A form without its operands: the words that name files or packages
/// (`tests/`, `./...`, `src/app.py`), which a fix of the same program does
/// not depend on.
fn without_operands(form: &[String]) -> Vec<String> {
    let mut out: Vec<String> = form.iter().take(1).cloned().collect();
    out.extend(form.iter().skip(1).filter(|w| w.starts_with('-') || !(looks_like_path(w) || w.contains('/'))).cloned());
    out
}

/// Files that declare a project's dependencies: every line of them names a
/// library.
fn is_manifest(path: &str) -> bool {
    let name = base(path);
    matches!(
        name,
        "package.json"
            | "go.mod"
            | "Cargo.toml"
            | "pyproject.toml"
            | "Gemfile"
            | "Pipfile"
            | "pom.xml"
            | "build.gradle"
    ) || name.starts_with("requirements") && name.ends_with(".txt")
}

/// Whether a line of code imports or declares a library (or a base image):
/// `import …`, `from … import`, `use …`, `require(…)`, `#include`,
/// a Dockerfile's `FROM`, or a bare quoted path (a Go import block's line).
fn is_import_line(line: &str) -> bool {
    let t = line.trim_start();
    let first = t.split_whitespace().next().unwrap_or_default();
    matches!(first, "import" | "from" | "use" | "using" | "extern" | "FROM" | "require" | "@import")
        || t.starts_with("#include")
        || t.contains("require(")
        || t.contains("import(")
        || (t.starts_with('"') && t.trim_end().ends_with('"') && !t.contains(' '))
}

/// How many times `token` occurs in `line` as code: a whole word (no letter,
/// digit or `_` beside it); a common English word (`any`) only next to code
/// punctuation (`: any`, `<any>`), never in prose ("any item").
fn code_occurrences(line: &str, token: &str) -> usize {
    if token.is_empty() {
        return 0;
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let word_like = token.chars().all(ident);
    let common = word_like && is_stop_word(token);
    let mut n = 0;
    for (at, _) in line.match_indices(token) {
        let before = line[..at].chars().next_back();
        let after = line[at + token.len()..].chars().next();
        let starts = token.chars().next().is_some_and(ident);
        let ends = token.chars().next_back().is_some_and(ident);
        if (starts && before.is_some_and(ident)) || (ends && after.is_some_and(ident)) {
            continue;
        }
        if common {
            let punct = |c: Option<char>| c.is_some_and(|c| ":<>,()[]|=&".contains(c));
            let near_before = line[..at].trim_end().chars().next_back();
            let near_after = line[at + token.len()..].trim_start().chars().next();
            if !(punct(near_before) || punct(near_after)) {
                continue;
            }
        }
        n += 1;
    }
    n
}

/// Programs that run the command after their `run`/`exec` word (`uv run
/// pytest`, `poetry run ruff`, `pnpm exec tsc`), and those that run the
/// next word itself (`npx prettier`).
const RUNNERS: &[&str] = &["uv", "poetry", "pdm", "hatch", "rye", "pipx", "pnpm", "yarn", "bun", "npm"];
const RUN_WORDS: &[&str] = &["run", "exec", "x", "dlx"];
const DIRECT_RUNNERS: &[&str] = &["npx", "bunx", "uvx", "pnpx"];

/// The command a runner runs (`uv run ruff format x.py`: `ruff format
/// x.py`), flags before it skipped.
fn run_through(words: &[String]) -> Option<&[String]> {
    let program = base(words.first()?);
    let rest = if DIRECT_RUNNERS.contains(&program) {
        &words[1..]
    } else if RUNNERS.contains(&program) && words.get(1).is_some_and(|w| RUN_WORDS.contains(&w.as_str())) {
        &words[2..]
    } else {
        return None;
    };
    let at = rest.iter().position(|w| !w.starts_with('-'))?;
    Some(&rest[at..]).filter(|r| !r.is_empty())
}

/// Whether the simple command `cmd` runs `form`: the same program (by its
/// base name), then the form's other words in order, `<…>` and `…` matching
/// any word.
fn runs(cmd: &[String], form: &[String]) -> bool {
    let form: Vec<&String> = form.iter().skip_while(|w| is_assignment(w)).collect();
    let (Some(program), Some(want)) = (cmd.first(), form.first()) else { return false };
    if base(program) != base(want) {
        return false;
    }
    let mut rest = cmd[1..].iter();
    form[1..].iter().filter(|w| !is_placeholder(w)).all(|w| rest.any(|c| c == *w))
}

fn is_placeholder(w: &str) -> bool {
    w.starts_with('<') && w.ends_with('>') || w == "…" || w == "..." || w.chars().all(|c| c == '.')
}

fn base(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

fn unquote(w: &str) -> String {
    w.trim_matches(|c| c == '"' || c == '\'' || c == '`').to_owned()
}

/// Words before a form that warn against it, as the text ends before the form.
const NEGATIONS: &[&str] =
    &["instead of", "rather than", "not", "never", "don't", "dont", "do not", "avoid", "no", "stop using", "without"];
/// Verbs between a negation and the form (`never run X`, `don't edit X`).
const VERBS: &[&str] = &[
    "use",
    "run",
    "do",
    "call",
    "import",
    "add",
    "edit",
    "hand-edit",
    "touch",
    "modify",
    "change",
    "write",
    "delete",
    "commit",
    "push",
];
/// Verbs that make a warned path one not to write.
const WRITE_VERBS: &[&str] = &["edit", "hand-edit", "touch", "modify", "change", "write", "delete", "commit"];
/// Words after a form that say it failed.
const FAILURES: &[&str] =
    &["fails", "failed", "breaks", "doesn't work", "does not work", "won't work", "is deprecated"];
/// Programs named in plain words ("use pnpm, not npm"): package managers,
/// build tools and runtimes, whose bare name is a command.
const PROGRAMS: &[&str] = &[
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "npx",
    "pip",
    "pip3",
    "poetry",
    "uv",
    "pipenv",
    "conda",
    "cargo",
    "go",
    "make",
    "docker",
    "docker-compose",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "mvn",
    "gradle",
    "gradlew",
    "python",
    "python3",
    "node",
    "deno",
    "jest",
    "vitest",
    "pytest",
    "tox",
    "composer",
    "bundle",
    "gem",
    "rake",
    "dotnet",
];

/// What `text` (a memory) warns against, in the order it says it, with
/// what it asks for instead.
pub fn warnings(text: &str) -> Vec<Warning> {
    let mut out: Vec<Warning> = Vec::new();
    let mut push = |what: Warned, unless: Unless| {
        if !out.iter().any(|w| w.what == what) {
            out.push(Warning { what, unless });
        }
    };
    // Code spans, with the words before and after them.
    let parts: Vec<&str> = text.split('`').collect();
    let span_at = |i: usize| parts.get(i).map(|s| s.trim().trim_start_matches("$ ")).filter(|s| !s.is_empty());
    for i in (1..parts.len()).step_by(2) {
        // An unclosed backtick opens no span.
        if i + 1 >= parts.len() {
            break;
        }
        let Some(span) = span_at(i).filter(|s| s.len() <= 200) else { continue };
        let before = parts[i - 1].to_lowercase();
        let after = parts.get(i + 1).map(|s| s.to_lowercase()).unwrap_or_default();
        let negated = negation_before(&before);
        let failed = FAILURES.iter().any(|f| after.trim_start().starts_with(f));
        // The span just before, when only the negation stands between them:
        // what the memory asks for instead ("`a` instead of `b`").
        let instead = (i >= 3 && negated.is_some() && before.split_whitespace().count() <= 4)
            .then(|| span_at(i - 2).and_then(command))
            .flatten();
        if is_generated(&after) && looks_like_path(span) {
            push(Warned::Path(span.to_owned()), Unless::Never);
        } else if let Some(verb) = negated {
            let writes = verb.is_none_or(|v| WRITE_VERBS.contains(&v));
            if looks_like_path(span) && writes && !span.contains(' ') {
                push(Warned::Path(span.to_owned()), Unless::Never);
                // "Never `github.com/pkg/errors`": a file not to write, or
                // an import not to add.
                if verb.is_none() {
                    push(Warned::Code { token: span.to_owned(), imports_only: false }, Unless::Never);
                }
            } else if let Some(Warned::Command(form)) = command(span) {
                let unless = match instead {
                    Some(Warned::Command(fix)) => adds(&fix, &form),
                    _ => Unless::Never,
                };
                push(Warned::Command(form), unless);
            } else if span.starts_with("--") && span.len() > 3 && !span.contains(' ') {
                push(Warned::Flag(span.to_owned()), Unless::Never);
            } else if let Some(token) = code_token(span, true) {
                push(Warned::Code { token, imports_only: false }, Unless::Never);
            }
        } else if failed && let Some(c) = command(span) {
            push(c, Unless::Never);
        } else if needs_first(&before)
            && let Some(c) = command(span)
        {
            let unless = match (i >= 3).then(|| span_at(i - 2).and_then(command)).flatten() {
                Some(Warned::Command(first)) => Unless::First(first),
                _ => Unless::Never,
            };
            push(c, unless);
        }
    }
    // Plain words: "use pnpm, not npm", "never edit docker-compose.yml",
    // "no testify", "never unwrap()", "instead of --force".
    let prose: String = parts.iter().step_by(2).copied().collect::<Vec<_>>().join(" ");
    let lower = prose.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let original: Vec<&str> = prose.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '(' | ')' | '!' | '"' | '\''));
        if w.is_empty() {
            continue;
        }
        // "src/api/client.gen.ts is generated".
        if looks_like_path(w) && is_generated(&words[i + 1..words.len().min(i + 5)].join(" ")) {
            push(Warned::Path(w.to_owned()), Unless::Never);
            continue;
        }
        if i == 0 {
            continue;
        }
        // `negation_before` reads at most the last three words (a two-word
        // negation and a verb) once a trailing lone "(" or ":" is dropped:
        // four words of the head decide as the whole head would, and keep
        // this loop linear in the text (joining the whole head at every word
        // made it quadratic: most of a tool-call hook's time at 10,000
        // memories).
        // "never run a bare cargo update": an article and "bare" or "plain"
        // may stand between the negation and the form; "bare" makes only
        // the form without arguments the mistake.
        let mut j = i;
        let mut bare = false;
        while PROGRAMS.contains(&w)
            && j > 0
            && i - j < 2
            && matches!(words[j - 1], "a" | "an" | "the" | "bare" | "plain")
        {
            bare |= matches!(words[j - 1], "bare" | "plain");
            j -= 1;
        }
        let head = words[j.saturating_sub(NEGATION_WORDS)..j].join(" ");
        let Some(verb) = negation_before(&head) else { continue };
        // The verb of the negation is no form ("never use …").
        if VERBS.contains(&w) || NEGATIONS.iter().any(|n| n.split(' ').any(|x| x == w)) {
            continue;
        }
        let uses = verb.is_none_or(|v| matches!(v, "use" | "run" | "do" | "call" | "import" | "add"));
        if PROGRAMS.contains(&w) && uses && bare {
            // The bare form's subcommand follows ("a bare cargo update here").
            let mut form = vec![w.to_owned()];
            for next in words[i + 1..].iter().take(2) {
                let n = next.trim_end_matches([',', '.', ';', ':', '!']);
                if n.is_empty() || !n.chars().all(|c| c.is_ascii_lowercase() || c == '-') || is_stop_word(n) {
                    break;
                }
                form.push(n.to_owned());
                if n.len() != next.len() {
                    break;
                }
            }
            push(Warned::Command(form), Unless::Arguments);
        } else if PROGRAMS.contains(&w) && uses {
            push(Warned::Command(vec![w.to_owned()]), Unless::Never);
        } else if looks_like_path(w) && verb.is_some_and(|v| WRITE_VERBS.contains(&v)) {
            push(Warned::Path(w.to_owned()), Unless::Never);
        } else if w.starts_with("--") && w.len() > 3 && w[2..].chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            push(Warned::Flag(w.to_owned()), Unless::Never);
        } else if uses && let Some(original) = original.get(i) {
            // A library or a call named in prose: code-like words anywhere,
            // a plain name only where code imports one.
            let token = original.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '!' | '"' | '\''));
            if let Some(t) = code_token(token, false) {
                push(Warned::Code { token: t, imports_only: false }, Unless::Never);
            } else if is_library_name(w) && (verb.is_some() || !ends_with_verb_negation(&head)) {
                push(Warned::Code { token: w.to_owned(), imports_only: true }, Unless::Never);
            }
        }
    }
    out
}

/// The commands `text` (a memory) asks for in code spans ("run tests with
/// `bun test`", "`sqlc generate` after editing a query"): each a program and
/// at least one more word, not negated and not said to fail. A call that
/// runs one (its words but the files it names) is what the memory is about.
pub fn asked(text: &str) -> Vec<Vec<String>> {
    let parts: Vec<&str> = text.split('`').collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for i in (1..parts.len()).step_by(2) {
        if i + 1 >= parts.len() {
            break;
        }
        let span = parts[i].trim().trim_start_matches("$ ");
        let before = parts[i - 1].to_lowercase();
        let after = parts[i + 1].to_lowercase();
        if negation_before(&before).is_some() || FAILURES.iter().any(|f| after.trim_start().starts_with(f)) {
            continue;
        }
        if let Some(Warned::Command(words)) = command(span) {
            let key = without_operands(&words);
            if key.iter().filter(|w| !is_assignment(w)).count() >= 2 && !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out
}

/// The files and folders `text` (a memory) names, not as ones never to
/// write ("handlers live in `internal/http`", "add it to .env.example"): a
/// call that writes one is what the memory is about. Globs name their
/// folder (`proto/*.proto`: `proto/`).
pub fn named_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Prose, and code spans that are one path: the files a command's
    // operands name (`go test ./internal/store/...`) are where it runs, not
    // what the memory is about.
    let words = text.split('`').enumerate().flat_map(|(i, part)| {
        let span = i % 2 == 1;
        let whole = span && !part.trim().contains(char::is_whitespace);
        part.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\''))
            .filter(move |_| !span || whole)
    });
    for w in words {
        let w = w.trim_end_matches(['.', ':', '!', '?']);
        let w = match w.split_once('*') {
            Some((dir, _)) if dir.ends_with('/') && dir.len() > 1 => dir,
            Some(_) => continue,
            None => w,
        };
        // A path of at least a folder and a name, or a file name with an
        // extension; never a URL, a package path or a version.
        let file_like = w.rsplit_once('.').is_some_and(|(a, ext)| {
            !a.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        });
        let folder = w.contains('/') && w.trim_matches('/').contains(|c: char| c.is_alphabetic());
        if w.len() < 4 || w.contains("://") || w.contains('@') || w.starts_with("github.com") || !(file_like || folder)
        {
            continue;
        }
        let w = w.trim_start_matches("./").to_owned();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// What a fix of the same program adds to the warned form, the words that
/// make a call of that program right: "`TZ=UTC uv run pytest tests/`
/// instead of `uv run pytest tests/`" adds `TZ=UTC`. A fix with another
/// program ("`pnpm install` instead of `npm install`") makes the form itself
/// the mistake.
fn adds(fix: &[String], form: &[String]) -> Unless {
    let program = |ws: &[String]| ws.iter().find(|w| !is_assignment(w)).map(|w| base(w).to_owned());
    if program(fix) != program(form) {
        return Unless::Never;
    }
    let added: Vec<String> = fix
        .iter()
        .filter(|w| !form.contains(w) && (w.starts_with('-') || is_assignment(w) || !looks_like_path(w)))
        .cloned()
        .collect();
    if added.is_empty() { Unless::Never } else { Unless::Adds(added) }
}

/// Whether the words after a path call it generated ("is generated",
/// "are auto-generated", "is a generated file").
fn is_generated(after: &str) -> bool {
    let t = after.trim_start().trim_start_matches([',', ':']).trim_start();
    ["is generated", "are generated", "is auto-generated", "are auto-generated", "is autogenerated", "is a generated"]
        .iter()
        .any(|p| t.starts_with(p))
}

/// A token of code that a memory warns against, when the span or word looks
/// like code rather than a sentence: a call (`unwrap()`), a path of names
/// (`console.log`, `std::mem::forget`, `github.com/pkg/errors`), or a lone
/// identifier in a code span (`any`; `in_span`).
fn code_token(span: &str, in_span: bool) -> Option<String> {
    let t = span.trim();
    if t.is_empty() || t.contains(' ') || t.len() > 80 {
        return None;
    }
    let call = t.ends_with("()") && t.len() > 2;
    let name = t.trim_end_matches("()").trim_start_matches('.');
    let ident = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-' | '@' | '$');
    if name.is_empty()
        || !name.chars().all(ident)
        || !name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
    {
        return None;
    }
    let interior = name.contains(['.', ':', '/', '_']) || name.chars().skip(1).any(char::is_uppercase);
    // A lone lowercase word in prose is a word, unless it is a call; in a
    // code span (`any`) the caller decided it is code.
    (call || interior || in_span).then(|| t.trim_start_matches('.').to_owned())
}

/// Whether `head` ends with a negation that a verb follows ("don't worry",
/// "never mind"), not a name ("no testify", "instead of moment").
fn ends_with_verb_negation(head: &str) -> bool {
    let t = head.trim_end().trim_end_matches([',', ':', '(']).trim_end();
    ["don't", "dont", "never", "do not", "not to"].iter().any(|n| t == *n || t.ends_with(&format!(" {n}")))
}

/// Whether a plain word named after "no" or "never use" can be a library:
/// not a common English word (those are everything: "no comments", "never
/// black" is a formatter but also a colour, hence imports only).
fn is_library_name(w: &str) -> bool {
    w.len() >= 3
        && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && !is_stop_word(w)
        && !NOT_LIBRARIES.contains(&w)
}

/// Words after "no" or "never" that name no library.
const NOT_LIBRARIES: &[&str] = &[
    "one",
    "way",
    "need",
    "longer",
    "matter",
    "more",
    "less",
    "idea",
    "problem",
    "issue",
    "worries",
    "change",
    "changes",
    "code",
    "comments",
    "comment",
    "emojis",
    "emoji",
    "tests",
    "test",
    "new",
    "other",
    "need",
    "reason",
    "real",
    "such",
    "sense",
    "time",
    "longer",
    "trailing",
    "period",
    "magic",
    "numbers",
    "globals",
    "dependencies",
    "extra",
    "manual",
    "direct",
    "raw",
    "hardcoded",
    "inline",
    "default",
    "mocks",
    "mock",
    "console",
];

/// Whether `before` ends with "before" (or "prior to"), after a command of
/// its own: "Run `make seed` before `make e2e`" warns against running
/// `make e2e` without it.
fn needs_first(before: &str) -> bool {
    let t = before.trim_end();
    t.ends_with(" before") || t.ends_with(" prior to") || t == "before"
}

/// Words at the end of a text that [`negation_before`] can read: the longest
/// negation (two words), a verb, and one word of punctuation alone.
const NEGATION_WORDS: usize = 4;

/// Whether `before` ends with a negation, optionally followed by one verb;
/// `Some(verb)` then (`None` inside when no verb follows the negation).
fn negation_before(before: &str) -> Option<Option<&'static str>> {
    let t = before.trim_end().trim_end_matches([',', ':', '(']).trim_end();
    let words: Vec<&str> = t.split_whitespace().collect();
    let ends = |n: &str, skip: usize| {
        let k = n.split(' ').count();
        words.len() >= k + skip && words[words.len() - skip - k..words.len() - skip].join(" ") == n
    };
    if let Some(verb) = words.last().and_then(|w| VERBS.iter().find(|v| **v == *w))
        && NEGATIONS.iter().any(|n| ends(n, 1))
    {
        return Some(Some(verb));
    }
    NEGATIONS.iter().any(|n| ends(n, 0)).then_some(None)
}

fn looks_like_path(s: &str) -> bool {
    let s = s.trim_end_matches(['.', ',']);
    !s.contains(' ')
        && (s.contains('/') || s.rsplit_once('.').is_some_and(|(a, ext)| !a.is_empty() && (1..=8).contains(&ext.len())))
        && s.chars().any(char::is_alphabetic)
}

/// The command form of a code span: its words, when the first names a
/// program (not a flag, a value or a sentence).
fn command(span: &str) -> Option<Warned> {
    let words: Vec<String> = span.split_whitespace().map(unquote).filter(|w| !w.is_empty()).collect();
    // Environment assignments stay in the form (a fix may be one), but the
    // program is the word after them.
    let env = words.iter().take_while(|w| is_assignment(w)).count();
    let first = words.get(env)?;
    let program_like = first.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '.' || c == '/')
        && first.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if !program_like || words.len() > 12 {
        return None;
    }
    // A lone word is a command only when it is a known program: `any` in
    // "don't use `any`" is a type, not something a shell runs.
    if words.len() == env + 1 && !PROGRAMS.contains(&first.as_str()) {
        return None;
    }
    Some(Warned::Command(words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `text` warns against, without what it asks instead.
    fn warned(text: &str) -> Vec<Warned> {
        warnings(text).into_iter().map(|w| w.what).collect()
    }

    impl Call {
        /// Whether the call repeats `warned`, whatever the memory asks instead.
        fn repeats(&self, warned: &Warned) -> bool {
            self.repeats_warning(&Warning { what: warned.clone(), unless: Unless::Never }, &[])
        }
    }

    fn cmd(w: &[&str]) -> Warned {
        Warned::Command(w.iter().map(|s| (*s).to_owned()).collect())
    }

    proptest::proptest! {
        /// The last [`NEGATION_WORDS`] words decide as the whole head does.
        #[test]
        fn the_last_words_decide_a_negation(
            words in proptest::collection::vec(
                proptest::sample::select(vec![
                    "do", "not", "never", "stop", "using", "instead", "of", "use", "run", "edit", "npm", "(", ",",
                    ":", "no,", "don't", "rather", "than", "x", "avoid:", "push", "(not",
                ]),
                0..12,
            )
        ) {
            for i in 0..=words.len() {
                let whole = negation_before(&words[..i].join(" "));
                let tail = negation_before(&words[i.saturating_sub(NEGATION_WORDS)..i].join(" "));
                proptest::prop_assert_eq!(whole, tail, "{:?}", &words[..i]);
            }
        }
    }

    #[test]
    fn a_call_is_named_by_its_command_flag_or_file_in_prose_and_by_matching_code() {
        let named = |cmd: &str, text: &str| {
            let call = Call::of("Bash", &json!({ "command": cmd }));
            let named = call.named_by(text);
            // The cheap test never rules out a memory that names the call.
            assert!(named.is_none() || call.may_be_warned_by(text), "{cmd:?} in {text:?}");
            named
        };
        let pair = |a: &str, b: &str| Some(vec![a.to_owned(), b.to_owned()]);
        assert_eq!(
            named("sqlc generate", "Write the SQL in queries/ and run sqlc generate."),
            pair("sqlc", "generate")
        );
        assert_eq!(named("bun test src/", "We dont have jest here, tests run w/ bun test."), pair("bun", "test"));
        assert_eq!(
            named("go test -count=1 ./...", "Always pass -count=1 for integration tests."),
            pair("go", "-count=1")
        );
        assert_eq!(
            named("pnpm tsx scripts/og.ts", "Images are rendered by scripts/og.ts."),
            pair("pnpm", "scripts/og.ts")
        );
        assert_eq!(
            named("git push", "Never force-push (instead of `git push --force origin main`)."),
            pair("git", "push")
        );
        // Another command of the same program, in code.
        assert_eq!(
            named("poetry run python manage.py test", "Run `poetry run python manage.py createsuperuser` first."),
            None
        );
        // What must come first is not what the lesson is about.
        assert_eq!(named("docker compose up -d db", "Start it with docker compose up -d db before pytest."), None);
        assert_eq!(named("make seed && make e2e", "Always run make seed before make e2e."), pair("make", "e2e"));
        // What a runner runs, and the environment it is given.
        assert_eq!(named("uv run ruff format src/a.py", "It's ruff format like everywhere."), pair("ruff", "format"));
        assert_eq!(named("TZ=UTC uv run pytest", "Tests always run with TZ=UTC."), Some(vec!["TZ=UTC".to_owned()]));
        // Words that only look alike.
        assert_eq!(named("make up", "Make sure it is up."), None);
        assert_eq!(named("npm test", "The npm registry is slow; test offline."), None);
    }

    /// The cheap test never rules out a memory that warns against the call.
    #[test]
    fn the_cheap_test_keeps_every_memory_that_warns() {
        let texts = [
            "Use pnpm, not npm: the lockfile is pnpm-lock.yaml.",
            "Instead of `npm install` run `pnpm install`.",
            "`git push --force` fails on main; use --force-with-lease.",
            "Never edit `docker-compose.yml` by hand.",
            "Run `make seed` before `make e2e`.",
            "Don't use `./gradlew build --offline` here.",
            "NEVER run NPM in this repo, rather than Yarn.",
            "Avoid `sudo docker compose up`.",
        ];
        let calls = [
            Call::of("Bash", &json!({"command": "npm install"})),
            Call::of("Bash", &json!({"command": "cd web && npm ci"})),
            Call::of("Bash", &json!({"command": "git push --force origin main"})),
            Call::of("Bash", &json!({"command": "make e2e"})),
            Call::of("Bash", &json!({"command": "./gradlew build --offline"})),
            Call::of("Bash", &json!({"command": "docker compose up"})),
            Call::of("Bash", &json!({"command": "ls"})),
            Call::of("Edit", &json!({"file_path": "/repo/docker-compose.yml"})),
        ];
        let mut warned_calls = 0;
        for call in &calls {
            for text in texts {
                let warns = warned(text).iter().any(|w| call.repeats(w));
                warned_calls += usize::from(warns);
                assert!(!warns || call.may_be_warned_by(text), "{text:?} warns against {call:?}");
            }
        }
        assert!(warned_calls >= 5, "{warned_calls}");
        assert!(!calls[6].may_be_warned_by(texts[0]), "`ls` is named by no text");
    }

    #[test]
    fn what_memories_warn_against() {
        assert_eq!(
            warned("Run `pnpm install` instead of `npm install` (it fails with \"ERESOLVE\" otherwise)."),
            vec![cmd(&["npm", "install"])]
        );
        assert_eq!(warned("Use pnpm, not npm."), vec![cmd(&["npm"])]);
        assert_eq!(
            warned("It's `make test`, not `go test`, the makefile sets the build tags."),
            vec![cmd(&["go", "test"])]
        );
        assert_eq!(warned("Never edit docker-compose.yml by hand."), vec![Warned::Path("docker-compose.yml".into())]);
        assert_eq!(warned("Don't touch `migrations/` after a release."), vec![Warned::Path("migrations/".into())]);
        assert_eq!(
            warned("`git push --force` fails with \"protected branch\" on main."),
            vec![cmd(&["git", "push", "--force"])]
        );
        // What must come first: the later command is the one to remind at.
        assert_eq!(warned("Run `make seed` before `make e2e`."), vec![cmd(&["make", "e2e"])]);
        // What a memory recommends, or mentions, is not warned against.
        assert!(warned("Run `make seed` to reset the data.").is_empty());
        assert_eq!(
            warned("Don't use `any` here; we type everything strictly."),
            vec![Warned::Code { token: "any".into(), imports_only: false }]
        );
        assert!(warned("The staging API rate-limits to 10 req/s.").is_empty());
    }

    #[test]
    fn calls_repeat_only_what_they_run_or_write() {
        let bash = |c: &str| Call::of("Bash", &json!({ "command": c }));
        assert!(bash("npm install lodash").repeats(&cmd(&["npm", "install"])));
        assert!(bash("cd web && FOO=1 npm install").repeats(&cmd(&["npm"])));
        assert!(!bash("pnpm install").repeats(&cmd(&["npm", "install"])));
        assert!(!bash("npm test").repeats(&cmd(&["npm", "install"])));
        assert!(bash("git push origin main --force").repeats(&cmd(&["git", "push", "--force"])));
        assert!(!bash("git push origin main").repeats(&cmd(&["git", "push", "--force"])));
        let codex = Call::of("shell", &json!({ "command": ["bash", "-lc", "go test ./..."] }));
        assert!(codex.repeats(&cmd(&["go", "test"])));
        let edit = Call::of("Edit", &json!({ "file_path": "/repo/docker-compose.yml", "old_string": "a" }));
        assert!(edit.repeats(&Warned::Path("docker-compose.yml".into())));
        assert!(!edit.repeats(&Warned::Path("compose.yml".into())));
        let read = Call::of("Read", &json!({ "file_path": "/repo/docker-compose.yml" }));
        assert!(!read.repeats(&Warned::Path("docker-compose.yml".into())));
        let patch =
            Call::of("apply_patch", &json!({ "input": "*** Begin Patch\n*** Update File: db/migrations/001.sql\n" }));
        assert!(patch.repeats(&Warned::Path("migrations/".into())));
    }

    fn code(token: &str, imports_only: bool) -> Warned {
        Warned::Code { token: token.into(), imports_only }
    }

    #[test]
    fn what_else_memories_warn_against() {
        // Libraries and calls named in prose.
        assert_eq!(warned("No testify in this codebase please."), vec![code("testify", true)]);
        assert_eq!(
            warned("Never use unwrap() in the library code, return a Result instead."),
            vec![code("unwrap()", false)]
        );
        assert_eq!(warned("We don't use console.log in committed code."), vec![code("console.log", false)]);
        // English after a negation names nothing.
        assert!(warned("No comments that restate the code.").is_empty());
        assert!(warned("Never use the staging database for write tests.").is_empty());
        assert!(warned("Don't worry about the lint warnings.").is_empty());
        // Only the bare form.
        let w = warnings("Don't do a bare cargo update here, the lockfile is audited.");
        assert_eq!((w[0].what.clone(), w[0].unless.clone()), (cmd(&["cargo", "update"]), Unless::Arguments));
        let bash = |c: &str| Call::of("Bash", &json!({ "command": c }));
        assert!(bash("cargo update").repeats_warning(&w[0], &[]));
        assert!(!bash("cargo update -p rustls").repeats_warning(&w[0], &[]));
        assert!(!bash("cargo build").repeats_warning(&w[0], &[]));
        // A flag.
        assert_eq!(warned("Use --force-with-lease instead of --force."), vec![Warned::Flag("--force".into())]);
        // A generated file, in a span or in prose.
        assert_eq!(
            warned("`src/api/client.gen.ts` is generated from openapi.yaml."),
            vec![Warned::Path("src/api/client.gen.ts".into())]
        );
        assert_eq!(
            warned("Src/api/client.gen.ts is generated, don't hand-edit it."),
            vec![Warned::Path("src/api/client.gen.ts".into())]
        );
    }

    #[test]
    fn what_a_fix_asks_for_instead() {
        let w = warnings("Run `pnpm dev --port 5175` instead of `pnpm dev` (it fails otherwise).");
        assert_eq!(w[0].unless, Unless::Adds(vec!["--port".into(), "5175".into()]));
        let w = warnings("Run `TZ=UTC uv run pytest tests/` instead of `uv run pytest tests/`.");
        assert_eq!(w[0].what, cmd(&["uv", "run", "pytest", "tests/"]));
        assert_eq!(w[0].unless, Unless::Adds(vec!["TZ=UTC".into()]));
        let w = warnings("Run `pnpm install` instead of `npm install`.");
        assert_eq!(w[0].unless, Unless::Never);
        let w = warnings("Run `docker compose up -d db` before `make migrate`.");
        assert_eq!(w[0].unless, Unless::First(["docker", "compose", "up", "-d", "db"].map(String::from).to_vec()));
    }

    #[test]
    fn a_call_that_does_what_the_memory_asks_is_right() {
        let bash = |c: &str| Call::of("Bash", &json!({ "command": c }));
        let port = &warnings("Run `pnpm dev --port 5175` instead of `pnpm dev`.")[0];
        assert!(bash("pnpm dev").repeats_warning(port, &[]));
        assert!(!bash("pnpm dev --port 5175").repeats_warning(port, &[]));
        assert!(!bash("pnpm test").repeats_warning(port, &[]));
        let tz = &warnings("Run `TZ=UTC uv run pytest tests/` instead of `uv run pytest tests/`.")[0];
        assert!(bash("uv run pytest tests/test_fields.py").repeats_warning(tz, &[]));
        assert!(bash("uv run pytest -q").repeats_warning(tz, &[]));
        assert!(!bash("TZ=UTC uv run pytest tests/test_fields.py").repeats_warning(tz, &[]));
        let db = &warnings("Run `docker compose up -d db` before `make migrate`.")[0];
        assert!(bash("make migrate").repeats_warning(db, &[]));
        assert!(!bash("docker compose up -d db && make migrate").repeats_warning(db, &[]));
        assert!(!bash("make migrate").repeats_warning(db, &[Call::of_query("Bash docker compose up -d db")]));
        assert!(bash("make migrate").repeats_warning(db, &[Call::of_query("Edit /repo/docker compose up -d db")]));
        // What persists need not run again in a later session.
        let deps = &warnings("Run `pip install -r requirements.txt` before `python test_config.py`.")[0];
        assert!(!bash("python test_config.py").repeats_warning(deps, &[]));
        assert!(bash("python test_config.py").concerns(deps));
        let lease = &warnings("Use --force-with-lease instead of --force.")[0];
        assert!(bash("git push --force origin retry").repeats_warning(lease, &[]));
        assert!(!bash("git push --force-with-lease origin retry").repeats_warning(lease, &[]));
    }

    #[test]
    fn what_memories_ask_for() {
        let bash = |c: &str| Call::of("Bash", &json!({ "command": c }));
        let asked_by = |text: &str, c: &str| asked(text).iter().any(|f| bash(c).runs_asked(f));
        assert!(asked_by("checkout runs its tests with `bun test`; jest is not installed.", "bun test src/cart"));
        assert!(!asked_by("checkout runs its tests with `bun test`.", "bun install"));
        assert!(asked_by(
            "Run the race detector as `CGO_ENABLED=1 go test -race ./...`.",
            "CGO_ENABLED=1 go test -race ./window/..."
        ));
        assert!(!asked_by(
            "Run the race detector as `CGO_ENABLED=1 go test -race ./...`.",
            "go test -race ./window/..."
        ));
        assert!(!asked_by("Integration tests run with `go test -count=1 ./...`.", "go test ./..."));
        // A lone program is no request about every call of it; a negated or failing form is a warning.
        assert!(!asked_by("This repo uses `pnpm`.", "pnpm add zod"));
        assert!(!asked_by("Never run `docker system prune -a` here.", "docker system prune -a"));
    }

    #[test]
    fn the_paths_memories_name() {
        assert_eq!(
            named_paths("HTTP handlers live in internal/http, not in main.go."),
            vec!["internal/http", "main.go"]
        );
        assert_eq!(named_paths("Edit `proto/*.proto` and run `buf generate`."), vec!["proto/"]);
        assert!(named_paths("Run `go test -tags integration ./internal/store/...`.").is_empty());
        assert!(
            named_paths("See https://example.com/a.html or github.com/pkg/errors, v1.2.3 and e.g. this.").is_empty()
        );
        let write = |p: &str| Call::of("Write", &json!({ "file_path": p, "content": "x" }));
        assert!(write("/r/internal/http/release.go").writes_under("internal/http"));
        assert!(write("/r/proto/billing/v1/billing.proto").writes_under("proto/"));
        assert!(write("/r/.env.example").writes_under(".env.example"));
        assert!(!write("/r/internal/httpx/a.go").writes_under("internal/http"));
        assert!(!Call::of("Read", &json!({ "file_path": "/r/.env.example" })).writes_under(".env.example"));
    }

    #[test]
    fn writes_repeat_the_code_they_add() {
        let write = |path: &str, content: &str| Call::of("Write", &json!({ "file_path": path, "content": content }));
        let edit = |old: &str, new: &str| {
            Call::of("Edit", &json!({ "file_path": "/r/src/lib.ts", "old_string": old, "new_string": new }))
        };
        let testify = code("testify", true);
        assert!(
            write("/r/a_test.go", "import (\n\t\"testing\"\n\t\"github.com/stretchr/testify/require\"\n)")
                .repeats(&testify)
        );
        assert!(
            !write("/r/a_test.go", "// we could testify that this works\nfunc TestA(t *testing.T) {}")
                .repeats(&testify)
        );
        assert!(write("/r/go.mod", "require github.com/stretchr/testify v1.9.0").repeats(&testify));
        let any = code("any", false);
        assert!(edit("x: number", "x: any").repeats(&any));
        assert!(edit("let a", "let a: Array<any>").repeats(&any));
        assert!(!edit("// one item", "// any item will do").repeats(&any));
        // Already there before the edit: the edit does not add it.
        assert!(!edit("x: any, y", "x: any, y: string").repeats(&any));
        let unwrap = code("unwrap()", false);
        assert!(edit("s.first()", "s.first().unwrap()").repeats(&unwrap));
        assert!(!edit("s.first()", "s.first().unwrap_or(0)").repeats(&unwrap));
        let patch = Call::of(
            "apply_patch",
            &json!({ "input": "*** Begin Patch\n*** Update File: src/lib.rs\n-    a\n+    a.unwrap()\n*** End Patch" }),
        );
        assert!(patch.repeats(&unwrap));
        let black = code("black", true);
        assert!(!write("/r/app.css", "body { color: black; }").repeats(&black));
        assert!(write("/r/pyproject.toml", "[dependency-groups]\ndev = [\"black>=24\"]").repeats(&black));
    }
}
