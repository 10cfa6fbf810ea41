//! Reminders at the moment of action: which memories warn against what a
//! tool call is about to do (the command a lesson corrected, the form of a
//! command that failed, a package manager the project does not use, a path
//! never to edit), so that the tool-call hook names them right then, even
//! when they were injected earlier in the session.
//!
//! A memory warns against a form when its text puts it after a negation
//! ("instead of `npm install`", "not `go test`", "never edit
//! `docker-compose.yml`", "use pnpm, not npm") or before a failure
//! ("`git push --force` fails with …"). A call repeats a command form when
//! one of its simple commands runs the form's program with the form's other
//! words in order; it repeats a path when it writes a file whose path ends
//! with it. Nothing else matches: a reminder that does not match the call
//! would be noise.

use serde_json::Value;

use crate::base::shell::is_assignment;

/// What a memory warns against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warned {
    /// A command: its words, the program first (`npm install`).
    Command(Vec<String>),
    /// A file, or the end of its path (`docker-compose.yml`, `migrations/`).
    Path(String),
}

impl Warned {
    /// The form as people write it.
    pub fn text(&self) -> String {
        match self {
            Warned::Command(words) => words.join(" "),
            Warned::Path(p) => p.clone(),
        }
    }
}

/// What a tool call is about to do: the simple commands it runs and the
/// files it writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    commands: Vec<Vec<String>>,
    writes: Vec<String>,
}

/// Keys of a tool's input that hold a command line.
const COMMAND_KEYS: &[&str] = &["command", "cmd"];
/// Keys of a tool's input that hold the file it works on.
const PATH_KEYS: &[&str] = &["file_path", "path", "filePath", "notebook_path", "absolute_path"];
/// Shells whose `-c` argument is the command line (`bash -lc "…"`).
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "fish"];
/// Words that run the next word as the program.
const WRAPPERS: &[&str] = &["sudo", "env", "time", "nice", "exec", "command", "nohup"];

impl Call {
    /// The call of tool `tool` with `input` (Claude Code's, Codex's and
    /// Gemini's shapes: a `command` string, a `cmd` array, a file path).
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
            for key in PATH_KEYS {
                if let Some(Value::String(p)) = map.get(*key) {
                    call.writes.push(p.clone());
                }
            }
            // A patch names its files in its own headers.
            for text in map.values().filter_map(Value::as_str) {
                for line in text.lines() {
                    for head in ["*** Update File: ", "*** Add File: ", "*** Delete File: "] {
                        if let Some(p) = line.strip_prefix(head) {
                            call.writes.push(p.trim().to_owned());
                        }
                    }
                }
            }
        }
        call
    }

    /// Adds the simple commands of a command line.
    fn add_line(&mut self, line: &str) {
        for simple in line.split(['\n', ';', '|', '&']) {
            let mut words: Vec<String> = simple.split_whitespace().map(unquote).filter(|w| !w.is_empty()).collect();
            while words.first().is_some_and(|w| is_assignment(w) || WRAPPERS.contains(&w.as_str())) {
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
            self.commands.push(words);
        }
    }

    /// Whether `text` can warn against this call at all, a test much cheaper
    /// than [`warned`]: a warned command names its program in the text as
    /// the call runs it (in a code span, or a lowercase known program in
    /// prose), so a text that holds none of the call's programs, in any case,
    /// warns against none of its commands. A call that writes files is
    /// always worth the full reading.
    pub fn may_be_warned_by(&self, text: &str) -> bool {
        if !self.writes.is_empty() {
            return true;
        }
        let lower = text.to_lowercase();
        self.commands.iter().filter_map(|c| c.first()).any(|p| lower.contains(&base(p).to_lowercase()))
    }

    /// Whether the call does nothing a memory could warn against.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.writes.is_empty()
    }

    /// Whether the call repeats `warned`.
    pub fn repeats(&self, warned: &Warned) -> bool {
        match warned {
            Warned::Command(form) => self.commands.iter().any(|c| runs(c, form)),
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
        }
    }
}

/// Whether the simple command `cmd` runs `form`: the same program (by its
/// base name), then the form's other words in order, `<…>` and `…` matching
/// any word.
fn runs(cmd: &[String], form: &[String]) -> bool {
    let (Some(program), Some(want)) = (cmd.first(), form.first()) else { return false };
    if base(program) != base(want) {
        return false;
    }
    let mut rest = cmd[1..].iter();
    form[1..].iter().filter(|w| !is_placeholder(w)).all(|w| rest.any(|c| c == w))
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
const VERBS: &[&str] =
    &["use", "run", "call", "edit", "touch", "modify", "change", "write", "delete", "commit", "push"];
/// Verbs that make a warned path one not to write.
const WRITE_VERBS: &[&str] = &["edit", "touch", "modify", "change", "write", "delete", "commit"];
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

/// What `text` (a memory) warns against, in the order it says it.
pub fn warned(text: &str) -> Vec<Warned> {
    let mut out: Vec<Warned> = Vec::new();
    let mut push = |w: Warned| {
        if !out.contains(&w) {
            out.push(w);
        }
    };
    // Code spans, with the words before and after them.
    let parts: Vec<&str> = text.split('`').collect();
    for i in (1..parts.len()).step_by(2) {
        // An unclosed backtick opens no span.
        if i + 1 >= parts.len() {
            break;
        }
        let span = parts[i].trim().trim_start_matches("$ ");
        if span.is_empty() || span.len() > 200 {
            continue;
        }
        let before = parts[i - 1].to_lowercase();
        let after = parts.get(i + 1).map(|s| s.to_lowercase()).unwrap_or_default();
        let negated = negation_before(&before);
        let failed = FAILURES.iter().any(|f| after.trim_start().starts_with(f));
        if let Some(verb) = negated {
            if looks_like_path(span) && (verb.is_none_or(|v| WRITE_VERBS.contains(&v))) && !span.contains(' ') {
                push(Warned::Path(span.to_owned()));
            } else if let Some(c) = command(span) {
                push(c);
            }
        } else if (failed || needs_first(&before))
            && let Some(c) = command(span)
        {
            push(c);
        }
    }
    // Plain words: "use pnpm, not npm", "never edit docker-compose.yml".
    let prose: String = parts.iter().step_by(2).copied().collect::<Vec<_>>().join(" ");
    let lower = prose.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_matches(|c: char| matches!(c, ',' | '.' | ';' | ':' | '(' | ')' | '!' | '"' | '\''));
        if w.is_empty() || i == 0 {
            continue;
        }
        // `negation_before` reads at most the last three words (a two-word
        // negation and a verb) once a trailing lone "(" or ":" is dropped:
        // four words of the head decide as the whole head would, and keep
        // this loop linear in the text (joining the whole head at every word
        // made it quadratic: most of a tool-call hook's time at 10,000
        // memories).
        let head = words[i.saturating_sub(NEGATION_WORDS)..i].join(" ");
        let Some(verb) = negation_before(&head) else { continue };
        if PROGRAMS.contains(&w) && verb.is_none_or(|v| matches!(v, "use" | "run" | "call")) {
            push(Warned::Command(vec![w.to_owned()]));
        } else if looks_like_path(w) && verb.is_some_and(|v| WRITE_VERBS.contains(&v)) {
            push(Warned::Path(w.to_owned()));
        }
    }
    out
}

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
    let first = words.first()?;
    let program_like = first.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '.' || c == '/')
        && first.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if !program_like || words.len() > 12 {
        return None;
    }
    // A lone word is a command only when it is a known program: `any` in
    // "don't use `any`" is a type, not something a shell runs.
    if words.len() == 1 && !PROGRAMS.contains(&first.as_str()) {
        return None;
    }
    Some(Warned::Command(words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(warned("Don't use `any` here; we type everything strictly.").is_empty());
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
}
