//! What the agent's tool calls say: which failed, which the user rejected,
//! the error line worth quoting, and what fixed a failing command.
//!
//! A **fix** is found when a command that failed later succeeds with the same
//! goal (`npm test` and `pnpm test` both test; `PYTHONPATH=src pytest` is
//! still `pytest`):
//! - commands run in between that change state (not `ls`, `cat`, `git
//!   status`…) and have another goal are the fix ("`pnpm test` fails until
//!   `docker compose up -d redis` runs first"): a retry is never credited;
//! - else a changed command is the fix ("use `PYTHONPATH=src pytest`");
//! - else, when only source files were edited in between, the fix was code
//!   (an implementation detail): nothing is learned;
//! - else the same command failed two times or more and then passed: it is
//!   flaky;
//! - a command that failed three times or more and never passed is a
//!   struggle worth knowing about before trying it again.
//!
//! Errors raised by the harness itself (`<tool_use_error>`: "File has not
//! been read yet", invalid input…) are how the agent's tools work, not
//! lessons about the project, and are ignored.

use std::collections::HashSet;

use serde_json::Value;
pub use shared::base::shell::{
    goal, is_assignment, is_diagnostic, is_read_only, is_setup, is_vcs, main_segment, program, runs_tests, writes_file,
};
use shared::storage::event::{Body, Event};

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It succeeded.
    Ok,
    /// It failed (error result or non-zero exit).
    Failed,
    /// The user rejected it.
    Rejected,
    /// The harness refused it (invalid input, a file not read first, no permission).
    Harness,
}

/// One tool call with its result.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Index of the result event.
    pub at: usize,
    /// Index of the call event, when seen.
    pub call_at: Option<usize>,
    /// Tool name.
    pub tool: String,
    /// The shell command, for shell tools.
    pub command: Option<String>,
    /// The file, for file tools.
    pub file: Option<String>,
    /// How it ended.
    pub status: Status,
    /// Its output (stdout, then stderr).
    pub output: String,
}

impl Outcome {
    /// Whether it edited a file: a file tool, or a shell command that
    /// patches or writes one (`apply_patch`, `sed -i`, `cat > f <<EOF`).
    pub fn is_edit(&self) -> bool {
        if let Some(cmd) = &self.command {
            return writes_file(cmd).is_some();
        }
        crate::adapter::is_edit_tool(&self.tool)
    }
}

/// The tool calls of `events` with their results, in the order of the results.
/// An edit the agent shows as a diff in its text (how SpecStory exports
/// record an editor's changes) counts as an edit of tool `edit` with no
/// file.
pub fn outcomes(events: &[Event], skip: &HashSet<usize>) -> Vec<Outcome> {
    let mut calls: std::collections::HashMap<&str, (usize, &str, &Value)> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        match &e.body {
            Body::MsgOut(m) if (m.part.is_empty() || m.part == "text") && shows_diff(&m.text) => {
                out.push(Outcome {
                    at: i,
                    call_at: None,
                    tool: "edit".to_owned(),
                    command: None,
                    file: None,
                    status: Status::Ok,
                    output: String::new(),
                });
            }
            Body::ToolCall(c) => {
                calls.insert(c.call_id.as_str(), (i, c.tool.as_str(), &c.args));
            }
            Body::ToolResult(r) => {
                let (call_at, tool, args) = match calls.get(r.call_id.as_str()) {
                    Some((at, tool, args)) => (Some(*at), *tool, Some(*args)),
                    None => (None, r.tool.as_str(), None),
                };
                let tool = if tool.is_empty() { r.tool.as_str() } else { tool };
                let command = args.and_then(command_of);
                let file = args.and_then(file_of);
                let mut output = r.stdout.clone();
                if !r.stderr.is_empty() {
                    output.push('\n');
                    output.push_str(&r.stderr);
                }
                let failed = r.is_error || r.exit.is_some_and(|x| x != 0) || exit_in_text(&r.stdout);
                let status = if !failed {
                    Status::Ok
                } else if is_rejection(&output) {
                    Status::Rejected
                } else if is_harness_error(&output) {
                    Status::Harness
                } else {
                    Status::Failed
                };
                out.push(Outcome { at: i, call_at, tool: tool.to_owned(), command, file, status, output });
            }
            _ => {}
        }
    }
    out
}

/// Whether the agent's text shows a diff it applied: a fenced `diff` block
/// with removed or added lines.
fn shows_diff(text: &str) -> bool {
    text.split("```diff").skip(1).any(|block| {
        block.split("```").next().is_some_and(|b| {
            b.lines().any(|l| l.starts_with(['+', '-']) && !l.starts_with("---") && !l.starts_with("+++"))
        })
    })
}

/// Codex's freeform tool output: "Exit code: 1" / "Process exited with code 1".
fn exit_in_text(s: &str) -> bool {
    let head: String = s.chars().take(200).collect();
    for p in ["Exit code: ", "Process exited with code "] {
        if let Some(rest) = head.split(p).nth(1) {
            let code: String = rest.chars().take_while(char::is_ascii_digit).collect();
            return !code.is_empty() && code != "0";
        }
    }
    false
}

/// The user said no to a tool call (Claude Code's rejection, Codex's declined approval).
pub fn is_rejection(output: &str) -> bool {
    let l = output.to_lowercase();
    l.contains("doesn't want to proceed with this tool use")
        || l.contains("the tool use was rejected")
        || l.contains("user doesn't want to take this action")
        || l.contains("rejected by user")
        || l.contains("user rejected")
        || l.contains("declined by the user")
        || l.contains("denied by the user")
}

/// What the user said when rejecting, when the harness recorded it
/// ("… the user said:\n<text>").
pub fn rejection_feedback(output: &str) -> Option<&str> {
    let at = output.find("the user said:")?;
    let text = output[at + "the user said:".len()..].trim();
    (!text.is_empty()).then_some(text)
}

fn is_harness_error(output: &str) -> bool {
    let l = output.to_lowercase();
    l.contains("<tool_use_error>")
        || l.contains("file has not been read yet")
        || l.contains("file has been modified since read")
        || l.contains("inputvalidationerror")
        || l.contains("requested permissions to")
        || l.contains("haven't granted it yet")
        || l.contains("string to replace not found")
        || l.contains("eisdir: illegal operation on a directory")
}

/// The shell command of a call's arguments (`bash -lc "<script>"`: the script).
pub fn command_of(args: &Value) -> Option<String> {
    match args.get("command").or_else(|| args.get("cmd"))? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [sh, flag, script, ..] if sh.ends_with("sh") && flag.starts_with('-') => Some((*script).to_owned()),
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

fn file_of(args: &Value) -> Option<String> {
    ["file_path", "path", "filePath", "absolute_path", "notebook_path"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

/// The most telling line of a failed command's output: a named error
/// (`ModuleNotFoundError: …`, `error[E0425]`, `ECONNREFUSED`) over a generic
/// one, the last of a Python traceback, never a warning when there is
/// anything else; ANSI colours and tool-error markup removed; at most 140
/// characters.
pub fn error_line(output: &str) -> Option<String> {
    let clean = strip_ansi(output);
    let traceback = clean.contains("Traceback (most recent call last)");
    let mut best: Option<(i32, usize, &str)> = None;
    for (n, line) in clean.lines().enumerate() {
        let l = line.trim().trim_start_matches("<tool_use_error>").trim_end_matches("</tool_use_error>").trim();
        if l.split_whitespace().count() < 2 || l.len() > 400 {
            continue;
        }
        let score = line_score(l);
        if score <= 0 {
            continue;
        }
        let better = match best {
            None => true,
            Some((s, _, _)) => score > s || (score == s && traceback),
        };
        if better {
            best = Some((score, n, l));
        }
    }
    let (_, _, l) = best?;
    let cut: String = l.chars().take(140).collect();
    Some(cut.trim_end_matches([' ', ',', ':', ';']).to_owned())
}

fn line_score(l: &str) -> i32 {
    let low = l.to_lowercase();
    if low.starts_with("npm warn") || low.starts_with("warning:") || low.starts_with("warn ") || low.starts_with("at ")
    {
        return 0;
    }
    // A test runner's line for a test that passed.
    if l.starts_with(['✓', '✔', '√']) || low.starts_with("pass ") || low.starts_with("ok ") {
        return 0;
    }
    let mut s = 0;
    let named = l.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| {
        (w.len() > 5 && (w.ends_with("Error") || w.ends_with("Exception")))
            || (w.len() >= 5 && w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_uppercase()))
            || (w.len() >= 4 && w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_digit()))
    });
    if named {
        s += 4;
    }
    for (p, w) in [
        ("error", 2),
        ("err!", 1),
        ("failed", 2),
        ("failure", 1),
        ("fatal", 2),
        ("panicked", 3),
        ("not found", 3),
        ("no such", 3),
        ("cannot", 2),
        ("can't", 2),
        ("could not", 2),
        ("couldn't", 2),
        ("refused", 3),
        ("denied", 3),
        ("missing", 2),
        ("undefined", 1),
        ("unknown", 1),
        ("invalid", 1),
        ("timed out", 2),
        ("timeout", 2),
        ("must be set", 3),
        ("is not set", 3),
        ("not installed", 3),
        ("unsupported", 2),
        ("mismatch", 2),
        ("conflict", 1),
        ("exited with", 1),
        ("requires", 2),
        ("not supported", 2),
        ("usage error", 2),
        ("command not found", 3),
        ("already in use", 3),
    ] {
        if low.contains(p) {
            s += w;
        }
    }
    if low.starts_with("npm err!")
        && (low.contains("code ") || low.contains("lifecycle") || low.contains("a complete log"))
    {
        s -= 3;
    }
    s
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// A command that failed and what made it work.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// Index of the first failure's result.
    pub first_failure: usize,
    /// Index of the success (of the last failure when unresolved).
    pub success: usize,
    /// The failing command (its main segment).
    pub failed: String,
    /// The telling error line.
    pub error: Option<String>,
    /// Failures before the success.
    pub failures: u32,
    /// Indices of the failures' results.
    pub failed_at: Vec<usize>,
    /// What fixed it.
    pub how: How,
}

/// What fixed a failing command.
#[derive(Clone, Debug, PartialEq)]
pub enum How {
    /// These commands had to run first.
    RanFirst(Vec<String>),
    /// This command works instead.
    Changed(String),
    /// Nothing: it passed on a retry.
    Retry,
    /// Nothing yet: it kept failing until the session moved on.
    Unresolved,
}

/// Events between a failure and its fix beyond which they are not linked.
const FIX_WINDOW: usize = 60;
/// Failures of one command, never fixed, that make a struggle worth remembering.
const UNRESOLVED_FAILURES: u32 = 3;

/// Failing commands and what made them pass (see the module docs).
pub fn fixes(outcomes: &[Outcome]) -> Vec<Fix> {
    struct Open<'a> {
        first: &'a Outcome,
        last: &'a Outcome,
        goal: String,
        failures: u32,
        failed_at: Vec<usize>,
        error: Option<String>,
        /// Position in `outcomes` of the first failure.
        pos: usize,
        /// A command of the same program that worked right after the last
        /// failure (before any edit): the way around it, if the failing
        /// command itself never works.
        workaround: Option<String>,
        /// Outcomes since the last failure.
        since: u32,
        /// Source files were edited since the last failure.
        edited: bool,
        /// Source files were edited since the first failure.
        edited_ever: bool,
        /// Every failure so far printed the same first line.
        same_error: bool,
        /// A command that changes state, of another goal, passed since the
        /// first failure.
        busy: bool,
    }
    impl Open<'_> {
        fn fix(&self, success: usize, how: How) -> Fix {
            Fix {
                first_failure: self.first.at,
                success,
                failed: main_segment(self.first.command.as_deref().unwrap_or_default()),
                error: self.error.clone(),
                failures: self.failures,
                failed_at: self.failed_at.clone(),
                how,
            }
        }
    }
    fn open_at(o: &Outcome, goal: String, pos: usize) -> Open<'_> {
        Open {
            first: o,
            last: o,
            goal,
            failures: 1,
            failed_at: vec![o.at],
            error: error_line(&o.output),
            pos,
            workaround: None,
            since: 0,
            edited: false,
            edited_ever: false,
            same_error: true,
            busy: false,
        }
    }
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut out = Vec::new();
    let close = |f: Open<'_>, out: &mut Vec<Fix>| {
        if let Some(w) = f.workaround.clone() {
            out.push(f.fix(f.last.at, How::Changed(w)));
        } else if f.failures >= UNRESOLVED_FAILURES && f.same_error && !f.edited_ever {
            // The same error every time, and no code changed in between: the
            // command itself does not work here (code being debugged is not).
            out.push(f.fix(f.last.at, How::Unresolved));
        }
    };
    for (pos, o) in outcomes.iter().enumerate() {
        for f in &mut open {
            f.since += 1;
            if o.status == Status::Ok && o.is_edit() {
                let file = o.file.clone().or_else(|| o.command.as_deref().and_then(writes_file).flatten());
                let source = file.as_deref().is_none_or(|f| !is_config_file(f));
                f.edited |= source;
                f.edited_ever |= source;
            }
            if o.status == Status::Ok
                && let Some(c) = o.command.as_deref()
                && !is_diagnostic(c)
                && goal(c) != f.goal
            {
                f.busy = true;
            }
        }
        let Some(cmd) = o.command.as_deref() else { continue };
        let g = goal(cmd);
        if g.is_empty() || writes_file(cmd).is_some() {
            continue;
        }
        let (stale, kept): (Vec<Open<'_>>, Vec<Open<'_>>) =
            open.into_iter().partition(|f| o.at.saturating_sub(f.last.at) > FIX_WINDOW);
        open = kept;
        for f in stale {
            close(f, &mut out);
        }
        // "no test files": it ran, and did nothing.
        let status = if o.status == Status::Ok && did_nothing(&o.output) { Status::Failed } else { o.status };
        match status {
            Status::Failed => {
                if is_diagnostic(cmd) && !matches!(g.as_str(), "curl" | "wget") {
                    continue;
                }
                match open.iter().position(|f| f.goal == g) {
                    Some(i) => {
                        let error = error_line(&o.output);
                        let f = &mut open[i];
                        let changed = squash(&main_segment(cmd))
                            != squash(&main_segment(f.last.command.as_deref().unwrap_or_default()));
                        // Errors compared by their telling line, else their first line.
                        let other_error = first_line(&o.output) != first_line(&f.last.output)
                            && (error.is_none() || f.error.is_none() || error != f.error);
                        // Setup run since the last failure (`git remote set-url …`
                        // before `git push` failed with another error).
                        let mut setup: Vec<String> = Vec::new();
                        if !changed && other_error && !f.edited {
                            for b in outcomes[f.pos + 1..pos].iter().filter(|b| b.at > f.last.at && !b.is_edit()) {
                                if let (Some(c), Status::Ok) = (&b.command, b.status)
                                    && is_setup(c)
                                    && goal(c) != f.goal
                                    && !setup.contains(&main_segment(c))
                                {
                                    setup.push(main_segment(c));
                                }
                            }
                        }
                        if changed
                            && other_error
                            && !f.edited
                            && is_variant(f.last.command.as_deref().unwrap_or_default(), cmd)
                        {
                            // The change got past the first error and met another:
                            // it is the fix of the first.
                            let done = std::mem::replace(f, open_at(o, g, pos));
                            out.push(done.fix(o.at, How::Changed(main_segment(cmd))));
                        } else if !setup.is_empty() {
                            // So did the setup run in between.
                            setup.truncate(2);
                            let done = std::mem::replace(f, open_at(o, g, pos));
                            out.push(done.fix(o.at, How::RanFirst(setup)));
                        } else {
                            f.same_error &= same_failure(&o.output, &f.last.output);
                            f.failures += 1;
                            f.failed_at.push(o.at);
                            f.last = o;
                            f.since = 0;
                            f.workaround = None;
                            if f.error.is_none() {
                                f.error = error;
                            }
                        }
                    }
                    None => open.push(open_at(o, g, pos)),
                }
            }
            // A look-up that works (`--help`) fixes nothing.
            Status::Ok if is_diagnostic(cmd) && !matches!(g.as_str(), "curl" | "wget") => {}
            Status::Ok => {
                // `go build ./... && go test ./...` passing means `go build` passed.
                let found = open.iter().position(|f| f.goal == g).map(|i| (i, main_segment(cmd))).or_else(|| {
                    chain_segments(cmd).into_iter().find_map(|seg| {
                        let sg = goal(&seg);
                        open.iter().position(|f| !sg.is_empty() && f.goal == sg).map(|i| (i, seg))
                    })
                });
                let Some((i, now)) = found else {
                    // The same program, another goal, right after a failure: a way around it.
                    let runs = program(cmd);
                    for f in &mut open {
                        if f.workaround.is_none()
                            && f.since <= 3
                            && !f.edited
                            && !is_diagnostic(cmd)
                            && !is_vcs(cmd)
                            && runs.is_some()
                            && runs == program(f.last.command.as_deref().unwrap_or_default())
                        {
                            f.workaround = Some(main_segment(cmd));
                        }
                    }
                    continue;
                };
                let f = open.remove(i);
                let between = &outcomes[f.pos + 1..pos];
                let mut first: Vec<String> = Vec::new();
                for b in between.iter().filter(|b| b.at > f.first.at) {
                    if b.is_edit() {
                        continue;
                    }
                    if let (Some(c), Status::Ok) = (&b.command, b.status)
                        && is_setup(c)
                        && goal(c) != f.goal
                    {
                        let seg = main_segment(c);
                        if !first.contains(&seg) {
                            first.push(seg);
                        }
                    }
                }
                let failed = main_segment(f.last.command.as_deref().unwrap_or_default());
                // A missing program that was installed is there from now on.
                if missing_program(f.error.as_deref(), &failed).is_some_and(|p| first.iter().any(|c| installs(c, &p))) {
                    continue;
                }
                let how = if !first.is_empty() {
                    first.truncate(2);
                    How::RanFirst(first)
                } else if squash(&now) != squash(&failed)
                    && !f.edited
                    && !is_diagnostic(&now)
                    && is_variant(&failed, &now)
                {
                    How::Changed(now)
                } else if !f.edited_ever
                    && !f.busy
                    && f.same_error
                    && f.failures >= 2
                    && squash(&now) == squash(&failed)
                {
                    How::Retry
                } else {
                    continue;
                };
                out.push(f.fix(o.at, how));
            }
            Status::Rejected | Status::Harness => {}
        }
    }
    for f in open {
        close(f, &mut out);
    }
    out.sort_by_key(|f| f.first_failure);
    out
}

/// The segments of an `&&` chain that do work (not `cd`, `export`, …), each
/// squashed onto one line: all of them ran and passed when the chain did.
fn chain_segments(cmd: &str) -> Vec<String> {
    if !cmd.contains("&&") || cmd.contains("||") || cmd.contains(';') {
        return Vec::new();
    }
    cmd.split("&&").map(main_segment).filter(|s| !s.is_empty() && !is_read_only(s)).collect()
}

/// Whether two failures failed the same way: the same telling error line,
/// else the same first line (a converted transcript may open every output
/// with the command it echoes).
fn same_failure(a: &str, b: &str) -> bool {
    match (error_line(a), error_line(b)) {
        (Some(x), Some(y)) => x == y,
        _ => first_line(a) == first_line(b),
    }
}

/// Flags that override a check rather than fix what it found.
const OVERRIDES: &[&str] = &["--force", "-f", "--force-with-lease", "--no-verify", "--yes", "-y"];

/// Whether `now` is `failed` done another way, not another task: when the
/// failed command named what it works on (a package, a file, a branch),
/// `now` names one of them too (`pip install asyncpg` after `pip install
/// websockets` failed installs something else); and it is more than the
/// failed command with a check overridden (`git push --force`).
fn is_variant(failed: &str, now: &str) -> bool {
    let (old, new) = (operands(failed), operands(now));
    if !old.is_empty() && !new.is_empty() && old.is_disjoint(&new) {
        return false;
    }
    let words = |c: &str| -> HashSet<String> { main_segment(c).split_whitespace().map(str::to_owned).collect() };
    let (a, b) = (words(failed), words(now));
    let added: Vec<&String> = b.difference(&a).collect();
    !(a.is_subset(&b) && !added.is_empty() && added.iter().all(|w| OVERRIDES.contains(&w.as_str())))
}

/// What a command works on: the words of its main segment after its goal
/// that are no flag or assignment, each by its last path component without
/// extension (`dist/server.js` is `server`).
fn operands(cmd: &str) -> HashSet<String> {
    let g: HashSet<String> = goal(cmd).split_whitespace().map(str::to_owned).collect();
    let seg = main_segment(cmd);
    let mut w: Vec<&str> = seg.split_whitespace().collect();
    // Past the program and the goal's words.
    let start = w.iter().position(|x| g.contains(*x)).map_or(1, |p| p + 1);
    let start = w.iter().skip(start).position(|x| !g.contains(*x)).map_or(w.len(), |p| p + start);
    w.drain(..start.min(w.len()));
    w.into_iter()
        .filter(|x| !x.starts_with('-') && !is_assignment(x) && !matches!(*x, "|" | "&&" | ">" | "2>&1" | "cat"))
        .map(|x| {
            let base = x.trim_matches(['"', '\'']).rsplit(['/', '\\']).next().unwrap_or(x);
            base.split('.').next().unwrap_or(base).to_lowercase()
        })
        .filter(|x| !x.is_empty())
        .collect()
}

/// The program a failure says is missing ("gh: command not found", "'gh'
/// is not recognized"), when it is the failed command's own.
fn missing_program(error: Option<&str>, failed: &str) -> Option<String> {
    let e = error?.to_lowercase();
    let p = program(failed)?;
    (["command not found", "not recognized as", "no such command", "not found"].iter().any(|m| e.contains(m))
        && e.contains(&p.to_lowercase()))
    .then_some(p)
}

/// Whether `cmd` installs `program` (`brew install gh`, `npm i -g pnpm`).
fn installs(cmd: &str, program: &str) -> bool {
    let seg = main_segment(cmd);
    let w: Vec<&str> = seg.split_whitespace().collect();
    w.iter().any(|x| matches!(*x, "install" | "i" | "add")) && w.iter().any(|x| x.eq_ignore_ascii_case(program))
}

/// The first line of a command's own output (not the harness's "Exit code 1",
/// "Wall time: …", "Output:" headers).
fn first_line(output: &str) -> &str {
    output
        .lines()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("Exit code")
                && !l.starts_with("Process exited with code")
                && !l.starts_with("Wall time")
                && *l != "Output:"
        })
        .unwrap_or("")
}

/// Output of a command that ran and did nothing ("no test files").
fn did_nothing(output: &str) -> bool {
    let l = output.to_lowercase();
    [
        "[no test files]",
        "no tests ran",
        "collected 0 items",
        "no tests found",
        "ran 0 tests",
        "0 tests ran",
        "no test suites found",
    ]
    .iter()
    .any(|p| l.contains(p))
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Configuration files: editing one is part of an environment fix, not code.
fn is_config_file(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_lowercase();
    name.starts_with(".env")
        || name.starts_with("docker-compose")
        || name.starts_with("compose.")
        || name.starts_with("tsconfig")
        || name.starts_with("requirements")
        || name.contains(".config.")
        || matches!(
            name.as_str(),
            "package.json"
                | "cargo.toml"
                | "pyproject.toml"
                | "setup.cfg"
                | "go.mod"
                | "makefile"
                | "dockerfile"
                | ".npmrc"
                | ".nvmrc"
                | ".tool-versions"
                | "pytest.ini"
                | "tox.ini"
                | "config.toml"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines() {
        let py = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nModuleNotFoundError: No module named 'app'";
        assert_eq!(error_line(py).as_deref(), Some("ModuleNotFoundError: No module named 'app'"));
        let npm = "npm warn Unknown env config \"store-dir\".\n> x@1 test\nError: connect ECONNREFUSED 127.0.0.1:6379\nnpm ERR! code ELIFECYCLE";
        assert_eq!(error_line(npm).as_deref(), Some("Error: connect ECONNREFUSED 127.0.0.1:6379"));
        assert_eq!(error_line("all good"), None);
        assert_eq!(
            error_line("\u{1b}[31merror[E0425]: cannot find value `x`\u{1b}[0m").as_deref(),
            Some("error[E0425]: cannot find value `x`")
        );
    }

    fn o(at: usize, cmd: Option<&str>, tool: &str, status: Status, output: &str) -> Outcome {
        Outcome {
            at,
            call_at: None,
            tool: tool.into(),
            command: cmd.map(str::to_owned),
            file: None,
            status,
            output: output.into(),
        }
    }

    #[test]
    fn setup_that_gets_past_an_error_fixes_it_even_when_another_follows() {
        let auth = "fatal: could not read Username for 'https://github.com': No such device or address";
        let outs = vec![
            o(1, Some("git push origin main"), "Bash", Status::Failed, auth),
            o(3, Some("git remote -v"), "Bash", Status::Ok, "origin https://github.com/a/b.git (push)"),
            o(5, Some("git remote set-url origin git@github.com:a/b.git"), "Bash", Status::Ok, ""),
            o(7, Some("git push origin main"), "Bash", Status::Failed, "! [rejected] main -> main (non-fast-forward)"),
        ];
        let f = fixes(&outs);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].how, How::RanFirst(vec!["git remote set-url origin git@github.com:a/b.git".into()]));
        assert_eq!(f[0].error.as_deref(), Some(auth));
        // The same error again: the setup did not help, nothing is learned.
        let outs = vec![
            o(1, Some("git push origin main"), "Bash", Status::Failed, auth),
            o(5, Some("git remote set-url origin git@github.com:a/b.git"), "Bash", Status::Ok, ""),
            o(7, Some("git push origin main"), "Bash", Status::Failed, auth),
        ];
        assert!(fixes(&outs).is_empty());
    }

    #[test]
    fn the_real_fix_not_the_retry() {
        let refused = "Error: connect ECONNREFUSED 127.0.0.1:6379";
        let outs = vec![
            o(1, Some("pnpm test"), "Bash", Status::Failed, refused),
            o(3, Some("docker ps"), "Bash", Status::Ok, ""),
            o(5, Some("docker compose up -d redis"), "Bash", Status::Ok, "started"),
            o(7, Some("pnpm test"), "Bash", Status::Ok, "41 passed"),
        ];
        let f = fixes(&outs);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].how, How::RanFirst(vec!["docker compose up -d redis".into()]));
        assert_eq!(f[0].error.as_deref(), Some(refused));

        // The failed command passing inside a chain: what ran before it is the fix,
        // not a replacement ("go generate instead of go build" would be false).
        let chained = vec![
            o(1, Some("go build ./..."), "Bash", Status::Failed, "missing method ListOverdue"),
            o(3, Some("go generate ./..."), "Bash", Status::Ok, "mockery: generated"),
            o(4, None, "Edit", Status::Ok, ""),
            o(5, Some("go build ./... && go test ./..."), "Bash", Status::Ok, "ok"),
        ];
        let f = fixes(&chained);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].how, How::RanFirst(vec!["go generate ./...".into()]));
        assert_eq!(f[0].failed, "go build ./...");

        let changed = vec![
            o(1, Some("pytest"), "Bash", Status::Failed, "ModuleNotFoundError: No module named 'app'"),
            o(3, Some("PYTHONPATH=src pytest"), "Bash", Status::Ok, "3 passed"),
        ];
        assert_eq!(fixes(&changed)[0].how, How::Changed("PYTHONPATH=src pytest".into()));

        let code = vec![
            o(1, Some("cargo test"), "Bash", Status::Failed, "error[E0425]: cannot find value"),
            o(2, None, "Edit", Status::Ok, ""),
            o(3, Some("cargo test"), "Bash", Status::Ok, "ok"),
        ];
        assert!(fixes(&code).is_empty(), "a code fix is not a lesson");

        let flaky = vec![
            o(1, Some("pnpm e2e"), "Bash", Status::Failed, "Error: timed out"),
            o(2, Some("pnpm e2e"), "Bash", Status::Failed, "Error: timed out"),
            o(3, Some("pnpm e2e"), "Bash", Status::Ok, "ok"),
        ];
        assert_eq!(fixes(&flaky)[0].how, How::Retry);
        let once = vec![
            o(1, Some("pnpm e2e"), "Bash", Status::Failed, "x failed"),
            o(3, Some("pnpm e2e"), "Bash", Status::Ok, ""),
        ];
        assert!(fixes(&once).is_empty());
    }

    #[test]
    fn a_fix_is_the_same_task_done_another_way() {
        let warn = "ERROR: pip's dependency resolver does not currently take into account all the packages";
        let other_package = vec![
            o(1, Some("pip install --upgrade httpx"), "Bash", Status::Failed, warn),
            o(3, Some("pip install aiofiles"), "Bash", Status::Ok, "Successfully installed aiofiles"),
        ];
        assert!(fixes(&other_package).is_empty(), "installing another package fixes nothing");
        let forced = vec![
            o(1, Some("git push origin trunk"), "Bash", Status::Failed, "error: failed to push some refs"),
            o(3, Some("git push origin trunk --force"), "Bash", Status::Ok, "trunk -> trunk (forced update)"),
        ];
        assert!(fixes(&forced).is_empty(), "overriding the check is no fix");
        let moved = vec![
            o(1, Some("node server.js"), "Bash", Status::Failed, "Error: Cannot find module 'express'"),
            o(3, Some("node dist/server.js"), "Bash", Status::Ok, "listening"),
        ];
        assert_eq!(fixes(&moved)[0].how, How::Changed("node dist/server.js".into()));
    }

    #[test]
    fn installing_what_was_missing_teaches_nothing_later() {
        let missing = vec![
            o(1, Some("gh pr create --fill"), "Bash", Status::Failed, "zsh:1: command not found: gh"),
            o(3, Some("brew install gh"), "Bash", Status::Ok, "installed"),
            o(5, Some("gh pr create --fill"), "Bash", Status::Ok, "https://github.com/a/b/pull/1"),
        ];
        assert!(fixes(&missing).is_empty());
    }

    #[test]
    fn a_retry_is_the_same_command_failing_the_same_way() {
        // Outputs that open with the echoed command differ only by their error.
        let echoed = vec![
            o(
                1,
                Some("git pull origin trunk"),
                "Bash",
                Status::Failed,
                "$ git pull origin trunk\nfatal: refusing to merge unrelated histories",
            ),
            o(
                3,
                Some("git pull origin trunk"),
                "Bash",
                Status::Failed,
                "$ git pull origin trunk\nerror: Your local changes would be overwritten by merge",
            ),
            o(5, Some("git pull origin trunk"), "Bash", Status::Ok, "Merge made"),
        ];
        assert!(fixes(&echoed).is_empty(), "two different failures are no flaky command");
        // A look-up that works between failures closes nothing.
        let help = vec![
            o(1, Some("tool run --fast"), "Bash", Status::Failed, "error: missing required argument 'name'"),
            o(2, Some("tool run --fast"), "Bash", Status::Failed, "error: missing required argument 'name'"),
            o(3, Some("tool run --help"), "Bash", Status::Ok, "Usage: tool run [options] <name>"),
        ];
        assert!(fixes(&help).iter().all(|f| f.how != How::Retry), "{:?}", fixes(&help));
    }

    #[test]
    fn a_diff_in_the_agents_text_is_an_edit() {
        assert!(shows_diff("Let me fix it:\n```diff\n- let a = 1;\n+ let a = 2;\n```"));
        assert!(!shows_diff("```diff\n```"));
        assert!(!shows_diff("Run `git diff` to see it."));
    }
}
