//! The script of a scenario: one step per line, in the order things happen
//! (the grammar is in `tests/scenarios/README.md`).

use super::{Error, Result};

/// What a tool call returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `= output`: success (exit 0).
    Ok(String),
    /// `! output` / `!N output`: failure with exit code N (1 by default).
    Fail(i32, String),
    /// `x` / `x feedback`: the user rejected the call, maybe saying why.
    Rejected(Option<String>),
}

/// A tool call of the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolStep {
    /// `Bash`, `Read`, `Edit`, `Write`, `Grep`, `Glob` or any other name.
    pub name: String,
    /// `$ command`'s command, `@Read`'s path, `@Grep`'s pattern, or JSON.
    pub arg: String,
    /// `@Edit path :: old => new` / `@Write path :: content`: what follows `::`.
    pub body: Option<String>,
    /// How it ends (success with no output when no result line follows).
    pub outcome: Outcome,
}

/// A moment where the hooks may put something into the agent's context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// `start [source]`: SessionStart.
    Start(String),
    /// `resume`: the session goes on (SessionStart, source `resume`).
    Resume,
    /// `> prompt`.
    Prompt(String),
    /// `$ command` or `@Tool ...`.
    Tool(ToolStep),
    /// `compact [trigger]`: PreCompact, then SessionStart (`compact`).
    Compact(String),
}

impl Event {
    /// The moment's name in reports.
    pub fn moment(&self) -> &'static str {
        match self {
            Event::Start(_) => "session start",
            Event::Resume => "resume",
            Event::Prompt(_) => "prompt",
            Event::Tool(_) => "tool",
            Event::Compact(_) => "after compaction",
        }
    }
}

/// One step of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `session NAME PROJECT[@WORKTREE][/SUBDIR]`: a new session in a
    /// project's folder (or one of its git worktrees).
    Session {
        /// The session's name in the script.
        name: String,
        /// The project.
        project: String,
        /// One of the project's worktrees (its folder) to start in.
        worktree: Option<String>,
        /// A subfolder to start in.
        subdir: Option<String>,
    },
    /// `[labels] resume NAME`: an ended session resumed.
    Resume(String),
    /// `end [reason]`: the session ends.
    End(String),
    /// `< text`: the agent speaks.
    Say(String),
    /// `plant LESSON,...`: the lessons arise here (not sent anywhere).
    Plant(Vec<String>),
    /// `forget LESSON`: `memory forget` of every listed memory stating it.
    Forget(String),
    /// `rescan SESSION`: `engram-ingestor scan --path` of its transcript.
    Rescan(String),
    /// `replay`: `engram-ingestor replay`.
    Replay,
    /// `compact-tapes`: `engram-ingestor compact`.
    CompactTapes,
    /// An event, with the lessons it needs (`[a,b]`, `[-]` for none) or no
    /// label.
    Event {
        /// `None`: not labelled.
        needs: Option<Vec<String>>,
        /// The event.
        event: Event,
    },
}

/// A step and the script line it came from (1-based, within the script).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Line number.
    pub no: usize,
    /// The step.
    pub step: Step,
}

fn bad(no: usize, why: impl std::fmt::Display) -> Error {
    Error(format!("script line {no}: {why}"))
}

/// Parses a script.
pub fn parse(text: &str) -> Result<Vec<Line>> {
    let mut out: Vec<Line> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('|') {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            continue_text(&mut out, no, rest)?;
            continue;
        }
        if let Some(result) = parse_result(line) {
            attach_result(&mut out, no, result)?;
            continue;
        }
        let (needs, body) = labels(no, line)?;
        let step = parse_step(no, body)?;
        let step = match (needs, step) {
            (needs, Step::Event { event, .. }) => Step::Event { needs, event },
            (Some(n), Step::Resume(name)) => {
                // A resume is a session opener and an event: split in two.
                out.push(Line { no, step: Step::Resume(name) });
                Step::Event { needs: Some(n), event: Event::Resume }
            }
            (None, Step::Resume(name)) => {
                out.push(Line { no, step: Step::Resume(name) });
                Step::Event { needs: None, event: Event::Resume }
            }
            (Some(_), _) => return Err(bad(no, "only events (start, >, $, @, compact, resume) take a label")),
            (None, s) => s,
        };
        out.push(Line { no, step });
    }
    Ok(out)
}

/// `[a, b] rest` → (Some([a, b]), rest); `[-] rest` → (Some([]), rest).
fn labels(no: usize, line: &str) -> Result<(Option<Vec<String>>, &str)> {
    let Some(rest) = line.strip_prefix('[') else { return Ok((None, line)) };
    let end = rest.find(']').ok_or_else(|| bad(no, "a label without its closing ']'"))?;
    let inner = rest[..end].trim();
    let names: Vec<String> =
        if inner == "-" { Vec::new() } else { inner.split(',').map(|s| s.trim().to_owned()).collect() };
    if names.iter().any(|n| n.is_empty() || n.contains(char::is_whitespace)) {
        return Err(bad(no, format!("bad label [{inner}]: lesson names separated by commas, or '-'")));
    }
    Ok((Some(names), rest[end + 1..].trim_start()))
}

fn word_and_rest(s: &str) -> (&str, &str) {
    match s.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (s, ""),
    }
}

fn parse_step(no: usize, line: &str) -> Result<Step> {
    let ev = |event| Ok(Step::Event { needs: None, event });
    if let Some(t) = line.strip_prefix('>') {
        return ev(Event::Prompt(t.trim().to_owned()));
    }
    if let Some(t) = line.strip_prefix('<') {
        return Ok(Step::Say(t.trim().to_owned()));
    }
    if let Some(t) = line.strip_prefix('$') {
        let cmd = t.trim();
        if cmd.is_empty() {
            return Err(bad(no, "'$' without a command"));
        }
        return ev(Event::Tool(ToolStep {
            name: "Bash".into(),
            arg: cmd.to_owned(),
            body: None,
            outcome: Outcome::Ok(String::new()),
        }));
    }
    if let Some(t) = line.strip_prefix('@') {
        let (name, rest) = word_and_rest(t);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad(no, format!("bad tool name {name:?}")));
        }
        let (arg, body) = match rest.split_once(" :: ") {
            Some((a, b)) => (a.trim().to_owned(), Some(unescape(b))),
            None => (rest.to_owned(), None),
        };
        if arg.is_empty() {
            return Err(bad(no, format!("@{name} without an argument")));
        }
        if name == "Edit" && !body.as_deref().is_some_and(|b| b.contains(" => ")) {
            return Err(bad(no, "@Edit needs 'path :: old => new'"));
        }
        return ev(Event::Tool(ToolStep { name: name.to_owned(), arg, body, outcome: Outcome::Ok(String::new()) }));
    }
    let (word, rest) = word_and_rest(line);
    let one = |what: &str| -> Result<String> {
        if rest.is_empty() || rest.contains(char::is_whitespace) {
            Err(bad(no, format!("{word} takes one {what}")))
        } else {
            Ok(rest.to_owned())
        }
    };
    match word {
        "session" => {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let [name, place] = parts[..] else { return Err(bad(no, "session NAME PROJECT[@WORKTREE][/SUBDIR]")) };
            let (place, subdir) = match place.split_once('/') {
                Some((p, s)) => (p, Some(s.to_owned())),
                None => (place, None),
            };
            let (project, worktree) = match place.split_once('@') {
                Some((p, w)) => (p.to_owned(), Some(w.to_owned())),
                None => (place.to_owned(), None),
            };
            Ok(Step::Session { name: name.to_owned(), project, worktree, subdir })
        }
        "resume" => Ok(Step::Resume(one("session name")?)),
        "end" => Ok(Step::End(if rest.is_empty() { "prompt_input_exit".into() } else { one("reason")? })),
        "start" => ev(Event::Start(if rest.is_empty() { "startup".into() } else { one("source")? })),
        "compact" => ev(Event::Compact(if rest.is_empty() { "auto".into() } else { one("trigger")? })),
        "plant" => Ok(Step::Plant(rest.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())),
        "forget" => Ok(Step::Forget(one("lesson")?)),
        "rescan" => Ok(Step::Rescan(one("session name")?)),
        "replay" if rest.is_empty() => Ok(Step::Replay),
        "compact-tapes" if rest.is_empty() => Ok(Step::CompactTapes),
        _ => Err(bad(no, format!("unknown step {line:?}"))),
    }
}

/// `\n` and `\t` in a tool's body (an edit's strings, a written file) are
/// a newline and a tab; `\\` is a backslash.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A result line: `= out`, `! out`, `!N out`, `x`, `x feedback`.
fn parse_result(line: &str) -> Option<Outcome> {
    if let Some(t) = line.strip_prefix('=') {
        return Some(Outcome::Ok(t.trim().to_owned()));
    }
    if let Some(t) = line.strip_prefix('!') {
        let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
        let code = digits.parse().unwrap_or(1);
        return Some(Outcome::Fail(code, t[digits.len()..].trim().to_owned()));
    }
    if line == "x" {
        return Some(Outcome::Rejected(None));
    }
    line.strip_prefix("x ").map(|t| Outcome::Rejected(Some(t.trim().to_owned())))
}

fn last_tool(out: &mut [Line]) -> Option<&mut ToolStep> {
    match out.last_mut().map(|l| &mut l.step) {
        Some(Step::Event { event: Event::Tool(t), .. }) => Some(t),
        _ => None,
    }
}

fn attach_result(out: &mut [Line], no: usize, result: Outcome) -> Result<()> {
    let tool = last_tool(out).ok_or_else(|| bad(no, "a result line (=, !, x) must follow a tool call"))?;
    if tool.outcome != Outcome::Ok(String::new()) {
        return Err(bad(no, "the tool call already has a result"));
    }
    tool.outcome = result;
    Ok(())
}

/// `| text`: one more line of the previous step's text.
fn continue_text(out: &mut [Line], no: usize, rest: &str) -> Result<()> {
    let target: &mut String = match out.last_mut().map(|l| &mut l.step) {
        Some(Step::Say(t)) | Some(Step::Event { event: Event::Prompt(t), .. }) => t,
        Some(Step::Event { event: Event::Tool(tool), .. }) => match &mut tool.outcome {
            Outcome::Ok(t) | Outcome::Fail(_, t) => t,
            Outcome::Rejected(Some(t)) => t,
            Outcome::Rejected(None) => return Err(bad(no, "'|' after a bare 'x'")),
        },
        _ => return Err(bad(no, "'|' continues a prompt, an agent's text or a tool's output")),
    };
    target.push('\n');
    target.push_str(rest);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_script_reads_as_its_steps() {
        let s = parse(
            "session one web@web-wt/src\n\
             [-] start\n\
             > install it\n\
             | and test\n\
             < I'll use npm.\n\
             $ npm install\n\
             !1 npm ERR! code E404\n\
             | more\n\
             [pnpm, x] $ pnpm install\n\
             @Edit src/a.ts :: a\\n\\tx => b\\q\n\
             x no, never edit it\n\
             plant pnpm\n\
             compact manual\n\
             end\n\
             [pnpm] resume one\n\
             forget pnpm\n",
        )
        .unwrap();
        let steps: Vec<Step> = s.into_iter().map(|l| l.step).collect();
        assert_eq!(
            steps[0],
            Step::Session {
                name: "one".into(),
                project: "web".into(),
                worktree: Some("web-wt".into()),
                subdir: Some("src".into())
            }
        );
        assert_eq!(steps[1], Step::Event { needs: Some(vec![]), event: Event::Start("startup".into()) });
        assert_eq!(steps[2], Step::Event { needs: None, event: Event::Prompt("install it\nand test".into()) });
        assert_eq!(steps[3], Step::Say("I'll use npm.".into()));
        let Step::Event { event: Event::Tool(t), .. } = &steps[4] else { panic!() };
        assert_eq!(t.outcome, Outcome::Fail(1, "npm ERR! code E404\nmore".into()));
        assert_eq!(
            steps[5],
            Step::Event {
                needs: Some(vec!["pnpm".into(), "x".into()]),
                event: Event::Tool(ToolStep {
                    name: "Bash".into(),
                    arg: "pnpm install".into(),
                    body: None,
                    outcome: Outcome::Ok(String::new())
                })
            }
        );
        let Step::Event { event: Event::Tool(t), .. } = &steps[6] else { panic!() };
        assert_eq!((t.name.as_str(), t.body.as_deref()), ("Edit", Some("a\n\tx => b\\q")));
        assert_eq!(t.outcome, Outcome::Rejected(Some("no, never edit it".into())));
        assert_eq!(steps[7], Step::Plant(vec!["pnpm".into()]));
        assert_eq!(steps[8], Step::Event { needs: None, event: Event::Compact("manual".into()) });
        assert_eq!(steps[9], Step::End("prompt_input_exit".into()));
        assert_eq!(steps[10], Step::Resume("one".into()));
        assert_eq!(steps[11], Step::Event { needs: Some(vec!["pnpm".into()]), event: Event::Resume });
        assert_eq!(steps[12], Step::Forget("pnpm".into()));
    }

    #[test]
    fn mistakes_are_named_with_their_line() {
        for (text, what) in [
            ("= out", "must follow a tool call"),
            ("> a\n= b", "must follow a tool call"),
            ("[a] < hi", "only events"),
            ("[a b] > hi", "bad label"),
            ("frobnicate", "unknown step"),
            ("@Edit a.ts", "@Edit needs"),
            ("$ a\n= b\n= c", "already has a result"),
            ("session a", "session NAME"),
        ] {
            let e = parse(text).unwrap_err().0;
            assert!(e.contains(what) && e.contains("line"), "{text:?}: {e}");
        }
    }
}
