//! OpenCode sessions: the JSON storage of builds before 1.2
//! (`~/.local/share/opencode/storage/{session/<project>/<ses>.json,
//! message/<ses>/<msg>.json, part/<msg>/<prt>.json}`) and the SQLite database
//! `opencode.db` of later builds (tables `session`, `message`, `part`; the
//! last two hold their record as JSON in `data`), opened read-only.
//!
//! Both are whole-file formats: loading ([`load_storage`], [`load_db`]) does
//! the IO and returns plain records; [`parse_records`] is pure and is re-run on
//! every scan, relying on ids derived from OpenCode's own ids for idempotence.
//!
//! Mapping: a session → `session.started` (parent from `parentID`, link
//! `subagent`) and `meta` `title`; a message → `meta` `turn` (role, model,
//! tokens, cost, error); its parts: `text` → `msg.in` (user; synthetic text
//! is origin `meta`) or `msg.out`, `reasoning` → `msg.out` part `reasoning`,
//! `tool` → `tool.call` and, once completed or failed, `tool.result` (exit
//! from `state.metadata.exit`) plus `code.read` (`read`) or `code.edit`
//! (`edit`, `write`, `patch`) when it succeeded; `compaction` → `meta`
//! `compaction`; `patch` → `meta` `patch` (the files a step changed);
//! `step-start`/`step-finish`/`file`/`snapshot`/`agent`/`subtask`/`retry` →
//! `opaque`; anything else → `opaque`, counted as unknown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use shared::base::ids::SessionKey;
use shared::base::time::Ts;
use shared::storage::event::{
    Body, CodeRead, INJECTION_OPEN, Meta, MsgIn, MsgOut, SessionStarted, ToolCall, ToolResult, harness, origin,
};

use crate::adapter::{DiagnosticKind, Emitter, ParseContext, ParseOutput, parse_ts_value, project_of, str_of, text_of};
use crate::error::Error;
use crate::patch::{self, FileEdit};
use crate::redact::{self, EXCLUDED_MARKER};

/// One stored OpenCode record with the ids its location implies.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The record's own id (from the JSON, else the file name).
    pub id: String,
    /// Owning session id (from the JSON, else the directory).
    pub session_id: String,
    /// Owning message id, for parts.
    pub message_id: String,
    /// Order among siblings (file name for storage, id for the database).
    pub order: String,
    /// Where it was read from (for diagnostics).
    pub origin: String,
    /// The record, or `None` when it was not JSON.
    pub json: Option<Value>,
}

/// All records of one storage directory or database.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Session records.
    pub sessions: Vec<Record>,
    /// Message records.
    pub messages: Vec<Record>,
    /// Part records.
    pub parts: Vec<Record>,
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in rd {
        out.push(entry.map_err(|e| Error::io(dir, e))?.path());
    }
    out.sort();
    Ok(out)
}

fn name_of(p: &Path) -> String {
    p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Reads `<root>/{session,message,part}/<dir>/<file>.json`. `root` is the
/// `storage` directory.
pub fn load_storage(root: &Path) -> Result<Snapshot, Error> {
    let mut snap = Snapshot::default();
    for (kind, list) in [("session", &mut snap.sessions), ("message", &mut snap.messages), ("part", &mut snap.parts)] {
        for dir in read_dir_sorted(&root.join(kind))? {
            if !dir.is_dir() {
                continue;
            }
            let dir_name = name_of(&dir);
            for file in read_dir_sorted(&dir)? {
                if file.extension().and_then(|e| e.to_str()) != Some("json") {
                    continue;
                }
                let bytes = std::fs::read(&file).map_err(|e| Error::io(&file, e))?;
                let rec = storage_record(kind, &dir_name, name_of(&file), file.display().to_string(), &bytes);
                list.push(rec);
            }
        }
    }
    Ok(snap)
}

/// The record of one storage file: `kind` is its top folder (`session`,
/// `message` or `part`), `dir_name` the folder it sits in, `file_name` its
/// name without `.json`, `origin` its path for diagnostics. Ids missing from
/// the JSON come from the location.
pub fn storage_record(kind: &str, dir_name: &str, file_name: String, origin: String, bytes: &[u8]) -> Record {
    let json: Option<Value> = serde_json::from_slice(bytes).ok().filter(Value::is_object);
    let get = |k: &str| json.as_ref().and_then(|j| str_of(j, k)).map(str::to_owned);
    match kind {
        "session" => Record {
            id: get("id").unwrap_or_else(|| file_name.clone()),
            session_id: get("id").unwrap_or_else(|| file_name.clone()),
            message_id: String::new(),
            order: file_name,
            origin,
            json,
        },
        "message" => Record {
            id: get("id").unwrap_or_else(|| file_name.clone()),
            session_id: get("sessionID").unwrap_or_else(|| dir_name.to_owned()),
            message_id: String::new(),
            order: file_name,
            origin,
            json,
        },
        _ => Record {
            id: get("id").unwrap_or_else(|| format!("{dir_name}/{file_name}")),
            session_id: get("sessionID").unwrap_or_default(),
            message_id: get("messageID").unwrap_or_else(|| dir_name.to_owned()),
            order: file_name,
            origin,
            json,
        },
    }
}

/// Reads an `opencode.db`, opened read-only.
pub fn load_db(path: &Path) -> Result<Snapshot, Error> {
    let sql = |e| Error::Sqlite { path: path.to_owned(), source: e };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(sql)?;
    let mut snap = Snapshot::default();
    let origin = path.display().to_string();
    {
        let mut stmt = conn
            .prepare("SELECT id, parent_id, directory, title, version, time_created, time_updated FROM session ORDER BY time_created, id")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                ))
            })
            .map_err(sql)?;
        for row in rows {
            let (id, parent, dir, title, version, created, updated) = row.map_err(sql)?;
            let json = serde_json::json!({
                "id": id, "parentID": parent, "directory": dir, "title": title, "version": version,
                "time": {"created": created, "updated": updated},
            });
            snap.sessions.push(Record {
                id: id.clone(),
                session_id: id.clone(),
                message_id: String::new(),
                order: id,
                origin: origin.clone(),
                json: Some(json),
            });
        }
    }
    for (table, list) in [("message", &mut snap.messages), ("part", &mut snap.parts)] {
        let cols = if table == "message" { "id, session_id, '' , data" } else { "id, session_id, message_id, data" };
        let mut stmt = conn.prepare(&format!("SELECT {cols} FROM {table} ORDER BY time_created, id")).map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(sql)?;
        for (n, row) in rows.enumerate() {
            let (id, session_id, message_id, data) = row.map_err(sql)?;
            let json = data.and_then(|d| serde_json::from_str::<Value>(&d).ok()).filter(Value::is_object);
            list.push(Record {
                id,
                session_id: session_id.unwrap_or_default(),
                message_id: message_id.unwrap_or_default(),
                order: format!("{n:012}"),
                origin: origin.clone(),
                json,
            });
        }
    }
    Ok(snap)
}

fn key(id: &str) -> SessionKey {
    SessionKey::new(harness::OPENCODE, id)
}

fn meta(label: &str) -> Meta {
    Meta { label: label.to_owned(), ..Meta::default() }
}

fn ts_at(v: Option<&Value>, fallback: Ts) -> Ts {
    v.and_then(parse_ts_value).unwrap_or(fallback)
}

/// Turns a snapshot into events, session by session, messages by creation
/// time, parts in stored order. Line reports number records in that order.
pub fn parse_records(ctx: &ParseContext<'_>, snap: &Snapshot) -> ParseOutput {
    let mut em = Emitter::new(ctx);
    let mut n: u64 = 0;
    let mut messages: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for m in &snap.messages {
        messages.entry(m.session_id.as_str()).or_default().push(m);
    }
    let mut parts: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for p in &snap.parts {
        parts.entry(p.message_id.as_str()).or_default().push(p);
    }
    let known_sessions: Vec<&str> = snap.sessions.iter().map(|s| s.id.as_str()).collect();
    let mut sessions: Vec<&Record> = snap.sessions.iter().collect();
    sessions.sort_by_key(|s| {
        (s.json.as_ref().and_then(|j| j.pointer("/time/created")).and_then(Value::as_i64), s.order.clone())
    });
    for srec in sessions {
        n += 1;
        let s = key(&srec.id);
        em.begin(n, 0, format!("session:{}", srec.id));
        let Some(j) = &srec.json else {
            em.diag(DiagnosticKind::MalformedLine, format!("{} is not a JSON object", srec.origin));
            em.end();
            continue;
        };
        let ts = ts_at(j.pointer("/time/created"), ctx.fallback_ts);
        let cwd = str_of(j, "directory").map(str::to_owned);
        let parent = str_of(j, "parentID").map(str::to_owned);
        if let Some(p) = &parent
            && !known_sessions.contains(&p.as_str())
        {
            em.diag(DiagnosticKind::Unjoined, format!("parent session {p} not found"));
        }
        em.emit(
            &s,
            ts,
            "session.started",
            Body::SessionStarted(SessionStarted {
                harness: harness::OPENCODE.to_owned(),
                harness_session_id: srec.id.clone(),
                project: cwd.as_deref().and_then(project_of),
                cwd,
                parent: parent.as_deref().map(key),
                parent_link: parent.as_ref().map(|_| "subagent".to_owned()),
                harness_version: str_of(j, "version").map(str::to_owned),
                source_path: Some(srec.origin.clone()),
                ..SessionStarted::default()
            }),
        );
        if let Some(t) = str_of(j, "title") {
            let mut m = meta("title");
            m.text = Some(t.to_owned());
            em.emit(&s, ts, "meta.title", Body::Meta(m));
        }
        em.end();
        let mut msgs = messages.remove(srec.id.as_str()).unwrap_or_default();
        msgs.sort_by_key(|m| {
            (m.json.as_ref().and_then(|j| j.pointer("/time/created")).and_then(Value::as_i64), m.order.clone())
        });
        let mut last_ts = ts;
        for mrec in msgs {
            n += 1;
            em.begin(n, 0, format!("message:{}", mrec.id));
            let Some(mj) = &mrec.json else {
                em.diag(DiagnosticKind::MalformedLine, format!("{} is not a JSON object", mrec.origin));
                em.end();
                continue;
            };
            let mts = ts_at(mj.pointer("/time/created"), last_ts);
            last_ts = mts;
            let role = str_of(mj, "role").unwrap_or("").to_owned();
            let mut m = meta("turn");
            m.fields.insert("role".to_owned(), Value::from(role.clone()));
            m.model = str_of(mj, "modelID")
                .or_else(|| mj.pointer("/model/modelID").and_then(Value::as_str))
                .map(str::to_owned);
            for k in ["tokens", "cost", "finish", "agent"] {
                if let Some(v) = mj.get(k) {
                    m.fields.insert(k.to_owned(), v.clone());
                }
            }
            if let Some(e) = mj.get("error") {
                m.text =
                    e.pointer("/data/message").and_then(Value::as_str).or_else(|| str_of(e, "name")).map(str::to_owned);
                m.fields.insert("error".to_owned(), Value::Bool(true));
            }
            em.emit(&s, mts, "meta.turn", Body::Meta(m));
            em.end();
            let mut ps = parts.remove(mrec.id.as_str()).unwrap_or_default();
            ps.sort_by(|a, b| a.order.cmp(&b.order));
            for prec in ps {
                n += 1;
                em.begin(n, 0, format!("part:{}", prec.id));
                match &prec.json {
                    Some(pj) => part(&mut em, &s, mts, &role, &mrec.id, pj),
                    None => em.diag(DiagnosticKind::MalformedLine, format!("{} is not a JSON object", prec.origin)),
                }
                em.end();
            }
        }
    }
    // Messages and parts whose session or message is missing.
    for (sid, msgs) in messages {
        for m in msgs {
            n += 1;
            em.begin(n, 0, format!("message:{}", m.id));
            em.diag(DiagnosticKind::Unjoined, format!("message {} of unknown session {sid}", m.id));
            em.end();
            parts.remove(m.id.as_str());
        }
    }
    for (mid, ps) in parts {
        for p in ps {
            n += 1;
            em.begin(n, 0, format!("part:{}", p.id));
            em.diag(DiagnosticKind::Unjoined, format!("part {} of unknown message {mid}", p.id));
            em.end();
        }
    }
    em.finish(0, Value::Null)
}

fn part(em: &mut Emitter<'_, '_>, s: &SessionKey, mts: Ts, role: &str, message_id: &str, pj: &Value) {
    let ts = ts_at(pj.pointer("/time/start"), mts);
    let ptype = str_of(pj, "type").unwrap_or("");
    let uuid = Some(message_id.to_owned());
    match ptype {
        "text" => {
            let mut text = str_of(pj, "text").unwrap_or("").to_owned();
            redact::cap_message(&mut text);
            if role == "user" {
                let synthetic = pj.get("synthetic").and_then(Value::as_bool) == Some(true);
                let o = if text.contains(INJECTION_OPEN) {
                    origin::ENGRAM
                } else if synthetic {
                    origin::META
                } else {
                    origin::USER
                };
                em.emit(s, ts, "msg.in", Body::MsgIn(MsgIn { text, origin: o.to_owned(), uuid, ..Default::default() }));
            } else {
                em.emit(
                    s,
                    ts,
                    "msg.out",
                    Body::MsgOut(MsgOut { text, part: String::new(), uuid, ..Default::default() }),
                );
            }
        }
        "reasoning" => {
            let text = str_of(pj, "text").unwrap_or("").to_owned();
            em.emit(
                s,
                ts,
                "msg.out",
                Body::MsgOut(MsgOut { text, part: "reasoning".to_owned(), uuid, ..Default::default() }),
            );
        }
        "tool" => tool(em, s, ts, pj),
        "compaction" => {
            let mut m = meta("compaction");
            if let Some(a) = pj.get("auto") {
                m.fields.insert("auto".to_owned(), a.clone());
            }
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "patch" => {
            let mut m = meta("patch");
            for k in ["hash", "files"] {
                if let Some(v) = pj.get(k) {
                    m.fields.insert(k.to_owned(), v.clone());
                }
            }
            em.emit(s, ts, "meta", Body::Meta(m));
        }
        "step-start" | "step-finish" | "file" | "snapshot" | "agent" | "subtask" | "retry" => {
            let t = format!("part:{ptype}");
            em.opaque(s, ts, "opaque", &t, pj.clone(), false);
        }
        other => {
            let t = format!("part:{other}");
            em.opaque(s, ts, "opaque", &t, pj.clone(), true);
        }
    }
}

fn tool(em: &mut Emitter<'_, '_>, s: &SessionKey, ts: Ts, pj: &Value) {
    let name = str_of(pj, "tool").unwrap_or("").to_owned();
    let call_id = str_of(pj, "callID").or_else(|| str_of(pj, "id")).unwrap_or("").to_owned();
    let state = pj.get("state").cloned().unwrap_or(Value::Null);
    let mut input = state.get("input").cloned().unwrap_or(Value::Null);
    let excluded = em.ctx().privacy.args_touch(&input);
    let file = ["filePath", "file_path", "path"].iter().find_map(|k| str_of(&input, k)).map(str::to_owned);
    let hashes = excluded.is_none();
    let code: Vec<Body> = match name.as_str() {
        "read" => file
            .iter()
            .map(|f| {
                let offset = input.get("offset").and_then(Value::as_u64);
                let limit = input.get("limit").and_then(Value::as_u64);
                let range = limit.filter(|l| *l > 0).map(|l| {
                    let a = offset.unwrap_or(0) + 1;
                    [u32::try_from(a).unwrap_or(u32::MAX), u32::try_from(a + l - 1).unwrap_or(u32::MAX)]
                });
                Body::CodeRead(CodeRead { file: f.clone(), range, ..Default::default() })
            })
            .collect(),
        "edit" | "write" => file
            .iter()
            .flat_map(|f| {
                let hunk = if name == "write" {
                    patch::whole_file(None, str_of(&input, "content"))
                } else {
                    patch::Hunk {
                        before: str_of(&input, "oldString").unwrap_or("").to_owned(),
                        after: str_of(&input, "newString").unwrap_or("").to_owned(),
                        ..patch::Hunk::default()
                    }
                };
                let fe =
                    FileEdit { file: f.clone(), op: "update", move_to: None, hunks: vec![hunk], no_content: false };
                patch::code_edits(&fe, Some(&call_id), hashes)
            })
            .map(Body::CodeEdit)
            .collect(),
        "patch" | "apply_patch" => str_of(&input, "patchText")
            .or_else(|| str_of(&input, "input"))
            .map(patch::parse_apply_patch)
            .unwrap_or_default()
            .iter()
            .flat_map(|fe| {
                let ok = hashes && em.ctx().privacy.excluded(&fe.file).is_none();
                patch::code_edits(fe, Some(&call_id), ok)
            })
            .map(Body::CodeEdit)
            .collect(),
        _ => Vec::new(),
    };
    if excluded.is_some() {
        redact::strip_contents(&mut input);
    }
    redact::cap_value(&mut input);
    em.emit(s, ts, "tool.call", Body::ToolCall(ToolCall { tool: name.clone(), call_id: call_id.clone(), args: input }));
    let status = str_of(&state, "status").unwrap_or("");
    if !matches!(status, "completed" | "error") {
        return;
    }
    let rts = ts_at(state.pointer("/time/end"), ts);
    let exit = state.pointer("/metadata/exit").and_then(Value::as_i64).and_then(|x| i32::try_from(x).ok());
    let is_error = status == "error" || exit.is_some_and(|e| e != 0);
    let mut stdout = state.get("output").or_else(|| state.get("error")).map(text_of).unwrap_or_default();
    if excluded.is_some() {
        stdout = EXCLUDED_MARKER.to_owned();
    }
    let truncated = redact::cap_tool_output(&mut stdout);
    em.emit(
        s,
        rts,
        "tool.result",
        Body::ToolResult(ToolResult { tool: name, call_id, stdout, stderr: String::new(), exit, is_error, truncated }),
    );
    if !is_error {
        for (j, body) in code.into_iter().enumerate() {
            em.emit(s, rts, &format!("code:{j}"), body);
        }
    }
}
