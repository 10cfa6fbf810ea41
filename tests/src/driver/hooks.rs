//! The hooks a harness's settings register, and running them as Claude Code
//! does: each matching command handler through `sh -c`, in the session's
//! cwd, with `CLAUDE_PROJECT_DIR` set, the hook JSON on stdin and the
//! handler's timeout; its stdout read by Claude Code's rules
//! (`../shared/docs/harness-formats.md`, "Hooks").

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Result, World, err};

/// Claude Code's default timeout of a command hook.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// What Claude Code keeps of one `additionalContext` (the rest goes to a file).
pub const CONTEXT_CAP: usize = 10_000;

/// One command handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handler {
    /// The shell command.
    pub command: String,
    /// Its timeout.
    pub timeout: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    matcher: Option<String>,
    handlers: Vec<Handler>,
}

/// Every hook of a settings file: event → matcher groups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookSet {
    events: BTreeMap<String, Vec<Group>>,
}

impl HookSet {
    /// Reads the `hooks` of a Claude Code settings file.
    pub fn load(settings: &Path) -> Result<HookSet> {
        let text = std::fs::read_to_string(settings).map_err(|e| err!("{}: {e}", settings.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| err!("{}: {e}", settings.display()))?;
        HookSet::from_settings(&v).map_err(|e| err!("{}: {e}", settings.display()))
    }

    /// The `hooks` of parsed settings.
    pub fn from_settings(settings: &Value) -> Result<HookSet> {
        let mut events = BTreeMap::new();
        let Some(hooks) = settings.get("hooks") else { return Ok(HookSet::default()) };
        let hooks = hooks.as_object().ok_or_else(|| err!("\"hooks\" is not an object"))?;
        for (event, groups) in hooks {
            let groups = groups.as_array().ok_or_else(|| err!("hooks.{event} is not an array"))?;
            let mut out = Vec::new();
            for g in groups {
                let matcher = g.get("matcher").and_then(Value::as_str).map(str::to_owned);
                let mut handlers = Vec::new();
                for h in g.get("hooks").and_then(Value::as_array).into_iter().flatten() {
                    if h.get("type").and_then(Value::as_str) != Some("command") {
                        continue;
                    }
                    let command = h
                        .get("command")
                        .and_then(Value::as_str)
                        .ok_or_else(|| err!("hooks.{event}: a command handler without a command"))?;
                    let timeout = h.get("timeout").and_then(Value::as_u64).map_or(DEFAULT_TIMEOUT, Duration::from_secs);
                    handlers.push(Handler { command: command.to_owned(), timeout });
                }
                out.push(Group { matcher, handlers });
            }
            events.insert(event.clone(), out);
        }
        Ok(HookSet { events })
    }

    /// The handlers that run for `event` when the matcher query is `query`
    /// (the tool for tool events, the source of SessionStart, the trigger of
    /// PreCompact, the reason of SessionEnd; events without matchers ignore it).
    pub fn handlers(&self, event: &str, query: Option<&str>) -> Result<Vec<&Handler>> {
        let mut out = Vec::new();
        for g in self.events.get(event).into_iter().flatten() {
            if matches(g.matcher.as_deref(), query)? {
                out.extend(&g.handlers);
            }
        }
        Ok(out)
    }

    /// Whether anything is registered for `event`.
    pub fn has(&self, event: &str) -> bool {
        self.events.get(event).is_some_and(|g| g.iter().any(|g| !g.handlers.is_empty()))
    }
}

/// Claude Code's matcher rule: empty, `*` or absent match everything; a
/// matcher of only `[A-Za-z0-9_\- ,|]` is a list of exact names; anything
/// else is a regular expression (not supported here: an error).
fn matches(matcher: Option<&str>, query: Option<&str>) -> Result<bool> {
    let m = matcher.unwrap_or("").trim();
    if m.is_empty() || m == "*" {
        return Ok(true);
    }
    let Some(q) = query else { return Ok(true) };
    if m.chars().all(|c| c.is_ascii_alphanumeric() || "_- ,|".contains(c)) {
        return Ok(m.split(['|', ',']).map(str::trim).any(|name| name == q));
    }
    Err(err!("matcher {m:?} is a regular expression; the driver only knows name lists"))
}

/// One hook command run, and what Claude Code makes of it.
#[derive(Clone, Debug)]
pub struct HookCall {
    /// `SessionStart`, `PreToolUse`, ...
    pub event: String,
    /// The command.
    pub command: String,
    /// The JSON sent on stdin.
    pub input: Value,
    /// The exit code (`None`: killed, or timed out).
    pub exit: Option<i32>,
    /// It ran past its timeout and was killed.
    pub timed_out: bool,
    /// Wall time from spawn to exit.
    pub duration: Duration,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// What entered the agent's context (`additionalContext`, or plain
    /// stdout where Claude Code takes it), cut to [`CONTEXT_CAP`].
    pub context: Option<String>,
    /// The hook blocked (exit 2, `decision: "block"`, `continue: false` or a
    /// PreToolUse deny), with its reason.
    pub blocked: Option<String>,
    /// Something a harness would not accept (stdout that is not the
    /// expected JSON, a context over the cap, a non-zero exit).
    pub problem: Option<String>,
}

/// Runs one handler for `event` with `input` on stdin, in `cwd`.
pub fn run(world: &World, handler: &Handler, event: &str, input: &Value, cwd: &Path) -> Result<HookCall> {
    let mut cmd = world.command("sh");
    cmd.arg("-c")
        .arg(&handler.command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let body = serde_json::to_vec(input)?;
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| err!("{event} hook {:?}: {e}", handler.command))?;
    let mut stdin = child.stdin.take().ok_or_else(|| err!("no stdin"))?;
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut out_pipe = child.stdout.take().ok_or_else(|| err!("no stdout"))?;
    let mut err_pipe = child.stderr.take().ok_or_else(|| err!("no stderr"))?;
    // Read on threads, handed over by channel: a grandchild that kept a pipe
    // open must not hang the driver.
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let (err_tx, err_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        let _ = out_tx.send(v);
    });
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        let _ = err_tx.send(v);
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > handler.timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let duration = start.elapsed();
    let _ = writer.join();
    let held_open = Duration::from_secs(2);
    let stdout = out_rx.recv_timeout(held_open);
    let stderr = err_rx.recv_timeout(held_open);
    let pipes_held = stdout.is_err() || stderr.is_err();
    let stdout = String::from_utf8_lossy(&stdout.unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned();
    let mut call = HookCall {
        event: event.to_owned(),
        command: handler.command.clone(),
        input: input.clone(),
        exit: status.code(),
        timed_out,
        duration,
        stdout,
        stderr,
        context: None,
        blocked: None,
        problem: None,
    };
    interpret(&mut call);
    if pipes_held {
        call.problem = Some("a process the hook started kept its stdout or stderr open".to_owned());
    }
    Ok(call)
}

/// Events whose plain-text stdout Claude Code adds to the context.
const PLAIN_TEXT_CONTEXT: [&str; 3] = ["SessionStart", "UserPromptSubmit", "UserPromptExpansion"];

/// Reads a finished call's output as Claude Code does.
fn interpret(call: &mut HookCall) {
    if call.timed_out {
        call.problem = Some(format!("timed out after {:?}", call.duration));
        return;
    }
    match call.exit {
        Some(0) => {}
        Some(2) => {
            call.blocked = Some(call.stderr.trim().to_owned());
            call.problem = Some(format!("exit 2 (blocks {}): {}", call.event, call.stderr.trim()));
            return;
        }
        code => {
            call.problem = Some(format!("exit {code:?}: {}", call.stderr.trim()));
            return;
        }
    }
    let out = call.stdout.trim_start();
    if out.is_empty() {
        return;
    }
    let mut context = None;
    if out.starts_with('{') {
        match serde_json::from_str::<Value>(out) {
            Ok(v) => {
                let hso = &v["hookSpecificOutput"];
                if let Some(c) = hso.get("additionalContext").and_then(Value::as_str) {
                    context = Some(c.to_owned());
                }
                if hso.get("permissionDecision").and_then(Value::as_str) == Some("deny")
                    || v.get("decision").and_then(Value::as_str) == Some("block")
                    || v.get("continue").and_then(Value::as_bool) == Some(false)
                {
                    let why = v.get("reason").or(hso.get("permissionDecisionReason")).or(v.get("stopReason"));
                    call.blocked = Some(why.and_then(Value::as_str).unwrap_or("").to_owned());
                    call.problem = Some(format!("the hook blocked {}", call.event));
                }
            }
            Err(e) => call.problem = Some(format!("stdout starts with '{{' but is not JSON: {e}")),
        }
    } else if PLAIN_TEXT_CONTEXT.contains(&call.event.as_str()) {
        context = Some(out.trim_end().to_owned());
    } else {
        call.problem = Some("plain text on stdout of an event that ignores it".to_owned());
    }
    if let Some(c) = context.as_mut()
        && c.chars().count() > CONTEXT_CAP
    {
        call.problem = Some(format!("additionalContext of {} characters (cap {CONTEXT_CAP})", c.chars().count()));
        *c = c.chars().take(CONTEXT_CAP).collect();
    }
    call.context = context.filter(|c| !c.trim().is_empty());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers_follow_claude_codes_rules() {
        assert!(matches(None, Some("Bash")).unwrap());
        assert!(matches(Some("*"), Some("Bash")).unwrap());
        assert!(matches(Some("Bash|Edit"), Some("Edit")).unwrap());
        assert!(matches(Some("Bash, Edit"), Some("Edit")).unwrap());
        assert!(!matches(Some("Bash|Edit"), Some("TodoWrite")).unwrap());
        assert!(!matches(Some("Bash"), Some("BashOutput")).unwrap());
        assert!(matches(Some("mcp__.*"), Some("x")).is_err());
    }

    #[test]
    fn settings_give_handlers_per_event_and_tool() {
        let s = json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash|Read", "hooks": [{"type": "command", "command": "a", "timeout": 5}]},
                           {"hooks": [{"type": "command", "command": "b"}, {"type": "http", "url": "x"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "c"}]}]}});
        let h = HookSet::from_settings(&s).unwrap();
        let cmds = |e: &str, q: Option<&str>| -> Vec<String> {
            h.handlers(e, q).unwrap().iter().map(|x| x.command.clone()).collect()
        };
        assert_eq!(cmds("PreToolUse", Some("Bash")), ["a", "b"]);
        assert_eq!(cmds("PreToolUse", Some("TodoWrite")), ["b"]);
        assert_eq!(cmds("Stop", None), ["c"]);
        assert!(cmds("SessionEnd", None).is_empty());
        assert_eq!(h.handlers("PreToolUse", Some("Bash")).unwrap()[0].timeout, Duration::from_secs(5));
    }

    fn call(event: &str, exit: i32, stdout: &str) -> HookCall {
        let mut c = HookCall {
            event: event.into(),
            command: String::new(),
            input: Value::Null,
            exit: Some(exit),
            timed_out: false,
            duration: Duration::ZERO,
            stdout: stdout.into(),
            stderr: "why".into(),
            context: None,
            blocked: None,
            problem: None,
        };
        interpret(&mut c);
        c
    }

    #[test]
    fn output_is_read_as_claude_code_reads_it() {
        let json = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"ctx"}}"#;
        assert_eq!(call("PreToolUse", 0, json).context.as_deref(), Some("ctx"));
        assert_eq!(call("UserPromptSubmit", 0, "plain\n").context.as_deref(), Some("plain"));
        let plain_tool = call("PreToolUse", 0, "plain");
        assert!(plain_tool.context.is_none() && plain_tool.problem.is_some());
        let blocked = call("UserPromptSubmit", 2, "");
        assert_eq!(blocked.blocked.as_deref(), Some("why"));
        assert!(call("Stop", 1, "").problem.is_some());
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}"#;
        assert!(call("PreToolUse", 0, deny).blocked.is_some());
        assert!(call("SessionStart", 0, "").context.is_none());
        let big = format!(r#"{{"hookSpecificOutput":{{"additionalContext":"{}"}}}}"#, "x".repeat(CONTEXT_CAP + 5));
        let capped = call("SessionStart", 0, &big);
        assert_eq!(capped.context.unwrap().len(), CONTEXT_CAP);
        assert!(capped.problem.is_some());
    }
}
