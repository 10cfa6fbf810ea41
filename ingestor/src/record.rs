//! Sessions no harness adapter covers (seed 003, `engram record`), and
//! agents' declared lineage (`span.link`).
//!
//! * `record -- COMMAND ARGS…` runs the command (its output still reaches
//!   the terminal) and records one session: the command line, its output
//!   and exit status, and one `code.edit` per text file it changed under
//!   the working directory (a snapshot before and after; one hunk per file:
//!   the changed lines with three of context).
//! * `record --stdin` records a transcript piped in: lines in seed 003's
//!   tape vocabulary (`{"t":…,"k":"msg.in","content":…}`, `msg.out`,
//!   `tool.call`, `tool.result`, `code.read`, `code.edit` with
//!   `before_text`/`after_text`, `span.link`, `meta`), or any other text,
//!   recorded as one message per paragraph.
//! * `link FROM:A-B TO:C-D --note …` appends a `span.link`.
//!
//! Every text is redacted like adapters' output. Event ids derive from the
//! session key and the position of the record, so recording the same
//! transcript into the same session twice adds nothing.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;
use shared::base::ids::{EventId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::event::*;

use crate::adapter::{WRITER, content_hash, line_count, parse_ts_value};
use crate::error::{EngramContext, Error};

/// Files a command's snapshot reads at most.
const MAX_FILES: usize = 20_000;
/// Largest file snapshotted.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// Directories a snapshot skips (besides hidden ones).
const SKIPPED_DIRS: &[&str] = &["target", "node_modules", "build", "dist", "__pycache__", "venv"];
/// Lines of context around a recorded change.
const CONTEXT: usize = 3;

/// What a recording wrote.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Recorded {
    /// The session.
    pub session: String,
    /// Events appended (0 when all were recorded before).
    pub events: usize,
    /// Files changed (command recordings).
    pub files_changed: usize,
    /// The command's exit status (command recordings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
}

struct Builder {
    session: SessionKey,
    events: Vec<Event>,
}

impl Builder {
    fn new(session: SessionKey) -> Builder {
        Builder { session, events: Vec::new() }
    }

    fn push(&mut self, ts: Ts, key: &str, mut body: Body) {
        shared::storage::redact::redact_body(&mut body);
        self.events.push(Event {
            v: SCHEMA_VERSION,
            id: EventId::derived(&[self.session.as_str(), "record", key]),
            ts,
            writer: WRITER.to_owned(),
            session: Some(self.session.clone()),
            body,
        });
    }

    fn start(&mut self, ts: Ts, cwd: &Path, label: &str) {
        let cwd_text = cwd.to_string_lossy().into_owned();
        self.push(
            ts,
            "start",
            Body::SessionStarted(SessionStarted {
                harness: harness::ENGRAM.to_owned(),
                harness_session_id: self.session.harness_id().to_owned(),
                project: crate::adapter::project_of(&cwd_text),
                cwd: Some(cwd_text),
                ..SessionStarted::default()
            }),
        );
        self.push(
            ts,
            "label",
            Body::Meta(Meta { label: "record".into(), text: Some(label.into()), ..Meta::default() }),
        );
    }

    fn append(self, paths: &Paths) -> Result<usize, Error> {
        let mut journal = shared::projection::open(paths, WRITER).context("open the journal")?;
        let known = journal
            .store()
            .known_event_ids(self.events.iter().map(|e| e.id.as_str()))
            .context("look up recorded events")?;
        let fresh: Vec<Event> = self.events.into_iter().filter(|e| !known.contains(e.id.as_str())).collect();
        journal.append(&fresh).context("append the recording")?;
        Ok(fresh.len())
    }
}

/// `record --stdin`: records the transcript in `input`.
pub fn record_transcript(
    paths: &Paths,
    input: &str,
    session: Option<SessionKey>,
    cwd: &Path,
    now: Ts,
) -> Result<Recorded, Error> {
    let session = session.unwrap_or_else(|| {
        let h = blake3::hash(input.as_bytes()).to_hex();
        SessionKey::new(harness::ENGRAM, &format!("stdin-{}", &h[..16]))
    });
    let mut b = Builder::new(session.clone());
    let lines: Vec<&str> = input.lines().filter(|l| !l.trim().is_empty()).collect();
    let tape: Vec<Option<Value>> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).ok().filter(|v| v.get("k").and_then(Value::as_str).is_some()))
        .collect();
    let mut ts = now;
    b.start(now, cwd, "stdin");
    if !tape.is_empty() && tape.iter().all(Option::is_some) {
        for (i, v) in tape.iter().flatten().enumerate() {
            if let Some(t) = v.get("t").and_then(parse_ts_value) {
                ts = t;
            }
            b.push(ts, &format!("line{i}"), tape_body(v));
        }
    } else {
        for (i, para) in input.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).enumerate() {
            b.push(ts, &format!("para{i}"), Body::MsgOut(MsgOut { text: para.to_owned(), ..MsgOut::default() }));
        }
    }
    b.push(ts, "end", Body::SessionEnded(SessionEnded { reason: "recorded".into() }));
    let events = b.append(paths)?;
    Ok(Recorded { session: session.0, events, ..Recorded::default() })
}

fn s(v: &Value, keys: &[&str]) -> String {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str)).unwrap_or("").to_owned()
}

fn range(v: &Value, key: &str) -> Option<LineRange> {
    let a = v.get(key)?.as_array()?;
    let n = |i: usize| a.get(i).and_then(Value::as_u64).and_then(|x| u32::try_from(x).ok());
    Some([n(0)?, n(1)?])
}

/// One line of seed 003's tape vocabulary as an event body.
fn tape_body(v: &Value) -> Body {
    let k = v.get("k").and_then(Value::as_str).unwrap_or("");
    match k {
        "msg.in" => Body::MsgIn(MsgIn { text: s(v, &["content", "text"]), ..MsgIn::default() }),
        "msg.out" => Body::MsgOut(MsgOut { text: s(v, &["content", "text"]), ..MsgOut::default() }),
        "tool.call" => Body::ToolCall(ToolCall {
            tool: s(v, &["tool"]),
            call_id: s(v, &["call_id"]),
            args: v.get("args").cloned().unwrap_or(Value::Null),
        }),
        "tool.result" => Body::ToolResult(ToolResult {
            tool: s(v, &["tool"]),
            call_id: s(v, &["call_id"]),
            stdout: s(v, &["stdout"]),
            stderr: s(v, &["stderr"]),
            exit: v.get("exit").and_then(Value::as_i64).and_then(|x| i32::try_from(x).ok()),
            ..ToolResult::default()
        }),
        "code.read" => {
            Body::CodeRead(CodeRead { file: s(v, &["file"]), range: range(v, "range"), ..CodeRead::default() })
        }
        "code.edit" => {
            let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            let (before, after) = (text("before_text"), text("after_text"));
            Body::CodeEdit(CodeEdit {
                file: s(v, &["file"]),
                before_range: range(v, "before_range"),
                after_range: range(v, "after_range"),
                before_hash: before.as_deref().map(content_hash).or_else(|| text("before_hash")),
                after_hash: after.as_deref().map(content_hash).or_else(|| text("after_hash")),
                before_text: before,
                after_text: after,
                ..CodeEdit::default()
            })
        }
        "span.link" => Body::SpanLink(SpanLink {
            from_file: s(v, &["from_file"]),
            from_range: range(v, "from_range"),
            to_file: s(v, &["to_file"]),
            to_range: range(v, "to_range"),
            note: s(v, &["note"]),
        }),
        "meta" => Body::Meta(Meta {
            label: "meta".into(),
            model: v.get("model").and_then(Value::as_str).map(str::to_owned),
            repo_head: v.get("repo_head").and_then(Value::as_str).map(str::to_owned),
            text: v.get("label").and_then(Value::as_str).map(str::to_owned),
            ..Meta::default()
        }),
        other => Body::Opaque(Opaque { record_type: format!("tape:{other}"), raw: v.clone() }),
    }
}

/// The text files under `dir` (see the limits above), by path.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if out.len() >= MAX_FILES {
                return out;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push(e.path());
                }
            } else if ft.is_file()
                && e.metadata().is_ok_and(|m| m.len() <= MAX_FILE_BYTES)
                && let Ok(text) = std::fs::read(e.path()).map(String::from_utf8)
                && let Ok(text) = text
            {
                out.insert(e.path(), text);
            }
        }
    }
    out
}

/// The change from `before` to `after` as one hunk: the lines between their
/// common prefix and suffix, with [`CONTEXT`] lines around.
pub fn hunk(before: &str, after: &str) -> Option<CodeEdit> {
    let b: Vec<&str> = before.lines().collect();
    let a: Vec<&str> = after.lines().collect();
    let prefix = b.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let max_suffix = b.len().min(a.len()) - prefix;
    let suffix = b.iter().rev().zip(a.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
    if prefix == b.len() && prefix == a.len() {
        return None;
    }
    let start = prefix.saturating_sub(CONTEXT);
    let (b_end, a_end) = ((b.len() - suffix + CONTEXT).min(b.len()), (a.len() - suffix + CONTEXT).min(a.len()));
    let join = |l: &[&str]| if l.is_empty() { None } else { Some(format!("{}\n", l.join("\n"))) };
    let (bt, at) = (join(&b[start..b_end]), join(&a[start..a_end]));
    let r = |t: &Option<String>| t.as_ref().map(|t| [start as u32 + 1, start as u32 + line_count(t)]);
    Some(CodeEdit {
        op: "update".into(),
        before_range: r(&bt),
        after_range: r(&at),
        before_hash: bt.as_deref().map(content_hash),
        after_hash: at.as_deref().map(content_hash),
        before_text: bt,
        after_text: at,
        ..CodeEdit::default()
    })
}

/// Most bytes of each output stream kept for the record (the rest is still
/// shown; the kept text is capped again like any tool output).
const KEPT_BYTES: usize = 4 << 20;

/// `record -- COMMAND`: runs it in `cwd`, its standard output teed to `out`
/// and its standard error to ours as they come. The child's streams are read
/// by two threads that hand their chunks to this one, which alone writes
/// `out` (a caller may hold the process's stdout lock for it). A shutdown
/// request (SIGTERM, SIGINT) stops the child.
pub fn record_command(
    paths: &Paths,
    command: &[String],
    cwd: &Path,
    now: Ts,
    out: &mut dyn Write,
    shutdown: &shared::base::shutdown::Shutdown,
) -> Result<Recorded, Error> {
    let Some((program, args)) = command.split_first() else {
        return Err(Error::InvalidArgument("record: give a command after --, or --stdin".into()));
    };
    let session = SessionKey::new(harness::ENGRAM, &format!("record-{}-{}", now.0, std::process::id()));
    let before = snapshot(cwd);
    let mut child = std::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(program, e))?;
    let (tx, rx) = std::sync::mpsc::channel::<(bool, Vec<u8>)>();
    let pump = |from: Option<Box<dyn Read + Send>>, is_out: bool, tx: std::sync::mpsc::Sender<(bool, Vec<u8>)>| {
        std::thread::spawn(move || {
            let Some(mut r) = from else { return };
            let mut buf = [0u8; 8192];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send((is_out, buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
    };
    let pumps = [
        pump(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>), true, tx.clone()),
        pump(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>), false, tx),
    ];
    let (mut kept_out, mut kept_err) = (Vec::new(), Vec::new());
    let mut stopped = false;
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok((is_out, bytes)) => {
                let kept = if is_out {
                    let _ = out.write_all(&bytes).and_then(|()| out.flush());
                    &mut kept_out
                } else {
                    let _ = std::io::stderr().write_all(&bytes);
                    &mut kept_err
                };
                let room = KEPT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if shutdown.requested() && !stopped {
                    stopped = true;
                    let _ = child.kill();
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for p in pumps {
        let _ = p.join();
    }
    let status = child.wait().map_err(|e| Error::io(program, e))?;
    let mut stdout = String::from_utf8_lossy(&kept_out).into_owned();
    let mut stderr = String::from_utf8_lossy(&kept_err).into_owned();
    let end = Ts::now().max(now);
    let after = snapshot(cwd);
    let mut b = Builder::new(session.clone());
    b.start(now, cwd, "command");
    let line = command.join(" ");
    b.push(now, "prompt", Body::MsgIn(MsgIn { text: format!("$ {line}"), ..MsgIn::default() }));
    b.push(
        now,
        "call",
        Body::ToolCall(ToolCall {
            tool: "command".into(),
            call_id: "command".into(),
            args: serde_json::json!({"command": command, "cwd": cwd.to_string_lossy()}),
        }),
    );
    let exit = status.code();
    shared::storage::redact::cap_tool_output(&mut stdout);
    shared::storage::redact::cap_tool_output(&mut stderr);
    b.push(
        end,
        "result",
        Body::ToolResult(ToolResult {
            tool: "command".into(),
            call_id: "command".into(),
            stdout,
            stderr,
            exit,
            is_error: !status.success(),
            ..ToolResult::default()
        }),
    );
    let mut files_changed = 0;
    let paths_touched: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    for path in paths_touched {
        let (old, new) = (before.get(path), after.get(path));
        let Some(mut edit) = hunk(old.map_or("", String::as_str), new.map_or("", String::as_str)) else { continue };
        edit.file = path.to_string_lossy().into_owned();
        edit.op = match (old, new) {
            (None, _) => "add",
            (_, None) => "delete",
            _ => "update",
        }
        .into();
        edit.call_id = Some("command".into());
        for t in [&mut edit.before_text, &mut edit.after_text].into_iter().flatten() {
            shared::storage::redact::cap_tool_output(t);
        }
        files_changed += 1;
        b.push(end, &format!("edit:{}", edit.file), Body::CodeEdit(edit));
    }
    b.push(end, "end", Body::SessionEnded(SessionEnded { reason: "recorded".into() }));
    let events = b.append(paths)?;
    Ok(Recorded { session: session.0, events, files_changed, exit })
}

/// `FILE:START-END` (or `FILE:LINE`, or `FILE`), the file made absolute.
pub fn parse_place(text: &str, cwd: &Path) -> Result<(String, Option<LineRange>), Error> {
    let (file, range) = match text.rsplit_once(':') {
        Some((f, r)) if !f.is_empty() && !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == '-') => {
            let bad = || Error::InvalidArgument(format!("{text:?}: {r:?} is not a line range START-END"));
            let (a, b) = match r.split_once('-') {
                Some((a, b)) => (a.parse::<u32>().map_err(|_| bad())?, b.parse::<u32>().map_err(|_| bad())?),
                None => {
                    let n = r.parse::<u32>().map_err(|_| bad())?;
                    (n, n)
                }
            };
            if a == 0 || b < a {
                return Err(bad());
            }
            (f, Some([a, b]))
        }
        _ => (text, None),
    };
    let p = Path::new(file);
    let abs = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    Ok((shared::domain::provenance::index::normalize_path(&abs.to_string_lossy(), None), range))
}

/// `link FROM TO`: appends an agent's `span.link` (in `session`, or
/// `engram:links`).
pub fn link(
    paths: &Paths,
    (from, to): (&str, &str),
    note: &str,
    session: Option<SessionKey>,
    cwd: &Path,
    now: Ts,
) -> Result<Recorded, Error> {
    let (from_file, from_range) = parse_place(from, cwd)?;
    let (to_file, to_range) = parse_place(to, cwd)?;
    let session = session.unwrap_or_else(|| SessionKey::new(harness::ENGRAM, "links"));
    let mut b = Builder::new(session.clone());
    let key = format!("link:{from}:{to}:{}", now.0);
    b.push(now, &key, Body::SpanLink(SpanLink { from_file, from_range, to_file, to_range, note: note.to_owned() }));
    let events = b.append(paths)?;
    Ok(Recorded { session: session.0, events, ..Recorded::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hunk_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nX\nf\ng\nh\n";
        let h = hunk(before, after).unwrap();
        assert_eq!(h.before_text.as_deref(), Some("b\nc\nd\ne\nf\ng\nh\n"));
        assert_eq!(h.after_text.as_deref(), Some("b\nc\nd\nX\nf\ng\nh\n"));
        assert_eq!(h.before_range, Some([2, 8]));
        assert!(hunk(before, before).is_none());
        let added = hunk("", "x\ny\n").unwrap();
        assert_eq!((added.before_text, added.after_range), (None, Some([1, 2])));
        let removed = hunk("x\ny\n", "").unwrap();
        assert_eq!((removed.after_text, removed.before_range), (None, Some([1, 2])));
    }

    #[test]
    fn tape_lines_become_events() {
        let v: Value = serde_json::from_str(
            r#"{"t":"2026-02-15T17:30:00Z","k":"span.link","from_file":"a.rs","from_range":[1,9],"to_file":"b.rs","to_range":[3,4],"note":"moved"}"#,
        )
        .unwrap();
        match tape_body(&v) {
            Body::SpanLink(l) => {
                assert_eq!((l.from_range, l.to_file.as_str(), l.note.as_str()), (Some([1, 9]), "b.rs", "moved"))
            }
            other => panic!("{other:?}"),
        }
        let e: Value = serde_json::from_str(r#"{"k":"code.edit","file":"a.rs","after_text":"fn a() {}\n"}"#).unwrap();
        match tape_body(&e) {
            Body::CodeEdit(c) => assert_eq!(c.after_hash, Some(content_hash("fn a() {}"))),
            other => panic!("{other:?}"),
        }
        assert!(matches!(tape_body(&serde_json::json!({"k": "weird"})), Body::Opaque(_)));
    }

    #[test]
    fn places_parse() {
        let cwd = Path::new("/w");
        assert_eq!(parse_place("src/a.rs:3-9", cwd).unwrap(), ("/w/src/a.rs".into(), Some([3, 9])));
        assert_eq!(parse_place("/x/../y.rs:4", cwd).unwrap(), ("/y.rs".into(), Some([4, 4])));
        assert_eq!(parse_place("b.rs", cwd).unwrap(), ("/w/b.rs".into(), None));
        assert!(parse_place("b.rs:5-2", cwd).is_err());
    }
}
