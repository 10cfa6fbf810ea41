//! Shared helpers of the ingestor integration tests: parsing a fixture and
//! counting what came out.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use ingestor::adapter::{ParseContext, ParseOutput};
use ingestor::adapters;
use ingestor::discover::SourceKind;
use ingestor::redact::Privacy;
use shared::base::time::Ts;
use shared::storage::event::{Body, Event};

/// Reads a sidecar `.meta.json` next to an `agent-*.jsonl`, if any.
pub fn sidecar_of(path: &Path) -> Option<serde_json::Value> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".jsonl")?;
    let meta = path.with_file_name(format!("{stem}.meta.json"));
    let bytes = std::fs::read(meta).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Parses a whole source (JSONL from offset 0 in one call).
pub fn parse(kind: SourceKind, path: &Path) -> ParseOutput {
    let privacy = Privacy::default();
    let text = path.display().to_string();
    let side = sidecar_of(path);
    let mut ctx = ParseContext::new(&text, Ts(1_700_000_000_000), &privacy);
    ctx.sidecar = side.as_ref();
    if kind.is_jsonl() || kind == SourceKind::GeminiLegacy {
        let bytes = std::fs::read(path).expect("read fixture");
        adapters::parse_file_bytes(kind, &ctx, &bytes).expect("parse")
    } else {
        adapters::parse_whole(kind, &ctx).expect("parse")
    }
}

/// Counts by category.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub sessions: usize,
    pub msg_in: usize,
    pub msg_out: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub reads: usize,
    pub edits: usize,
    pub diagnostics: usize,
}

pub fn counts(out: &ParseOutput) -> Counts {
    let mut c = Counts { diagnostics: out.diagnostics.len(), ..Counts::default() };
    for e in &out.events {
        match &e.body {
            Body::SessionStarted(_) => c.sessions += 1,
            Body::MsgIn(_) => c.msg_in += 1,
            Body::MsgOut(_) => c.msg_out += 1,
            Body::ToolCall(_) => c.tool_calls += 1,
            Body::ToolResult(_) => c.tool_results += 1,
            Body::CodeRead(_) => c.reads += 1,
            Body::CodeEdit(_) => c.edits += 1,
            _ => {}
        }
    }
    c
}

pub fn kinds(events: &[Event]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.kind().to_owned()).or_insert(0) += 1;
    }
    m
}

/// A Claude Code transcript written step by step, in the records the real
/// CLI writes (one content block per record, `toolUseResult` beside each
/// `tool_result`), for tests that need a scripted session.
pub struct Transcript {
    session: String,
    cwd: String,
    lines: Vec<String>,
    n: u32,
    parent: Option<String>,
}

impl Transcript {
    /// A new session `session` (a uuid) started in `cwd`.
    pub fn new(session: &str, cwd: &str) -> Transcript {
        Transcript { session: session.into(), cwd: cwd.into(), lines: Vec::new(), n: 0, parent: None }
    }

    fn record(&mut self, kind: &str, message: serde_json::Value, extra: &[(&str, serde_json::Value)]) -> &mut Self {
        self.n += 1;
        let uuid = format!("{}-{:04}", &self.session[..8], self.n);
        let mut v = serde_json::json!({
            "parentUuid": self.parent, "isSidechain": false, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session, "version": "2.1.90", "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": format!("2026-03-01T10:{:02}:{:02}.000Z", self.n / 60, self.n % 60), "message": message,
        });
        for (k, x) in extra {
            v[*k] = x.clone();
        }
        self.parent = Some(uuid);
        self.lines.push(v.to_string());
        self
    }

    fn assistant(&mut self, block: serde_json::Value) -> &mut Self {
        let id = format!("msg_{}", self.n);
        self.record(
            "assistant",
            serde_json::json!({"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [block]}),
            &[("requestId", serde_json::json!(format!("req_{}", self.n)))],
        )
    }

    /// The user types `text`.
    pub fn user(&mut self, text: &str) -> &mut Self {
        self.record("user", serde_json::json!({"role": "user", "content": text}), &[])
    }

    /// The agent says `text`.
    pub fn say(&mut self, text: &str) -> &mut Self {
        self.assistant(serde_json::json!({"type": "text", "text": text}))
    }

    fn tool(
        &mut self,
        name: &str,
        input: serde_json::Value,
        out: &str,
        error: bool,
        tur: serde_json::Value,
    ) -> &mut Self {
        let call = format!("toolu_{}_{}", &self.session[..8], self.n);
        self.assistant(serde_json::json!({"type": "tool_use", "id": call, "name": name, "input": input}));
        let mut result = serde_json::json!({"type": "tool_result", "tool_use_id": call, "content": out});
        if error {
            result["is_error"] = serde_json::json!(true);
        }
        self.record("user", serde_json::json!({"role": "user", "content": [result]}), &[("toolUseResult", tur)])
    }

    /// The agent runs `cmd`; it prints `out` and succeeds or fails.
    pub fn bash(&mut self, cmd: &str, out: &str, ok: bool) -> &mut Self {
        // Claude Code puts the exit status before a failed command's output.
        let (content, tur) = if ok {
            (out.to_owned(), serde_json::json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false}))
        } else {
            (format!("Exit code 1\n{out}"), serde_json::json!(format!("Error: Exit code 1\n{out}")))
        };
        self.tool("Bash", serde_json::json!({"command": cmd, "description": "run"}), &content, !ok, tur)
    }

    /// The agent edits `file` (relative to the cwd).
    pub fn edit(&mut self, file: &str) -> &mut Self {
        let path = format!("{}/{file}", self.cwd);
        let tur = serde_json::json!({"filePath": path, "oldString": "a", "newString": "b", "originalFile": "a",
            "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-a", "+b"]}],
            "userModified": false, "replaceAll": false});
        let input = serde_json::json!({"file_path": path, "old_string": "a", "new_string": "b"});
        self.tool("Edit", input, &format!("The file {path} has been updated."), false, tur)
    }

    /// The user rejects the agent's `cmd` (with feedback, when given).
    pub fn reject_bash(&mut self, cmd: &str, feedback: Option<&str>) -> &mut Self {
        let mut out = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a \
                       file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the \
                       user to tell you how to proceed."
            .to_owned();
        if let Some(f) = feedback {
            out = format!(
                "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file \
                 edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n{f}"
            );
        }
        let tur = serde_json::json!(format!("Error: {out}"));
        self.tool("Bash", serde_json::json!({"command": cmd}), &out, true, tur)
    }

    /// The whole transcript.
    pub fn jsonl(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }

    /// The transcript parsed by the real adapter: the main session's events.
    pub fn events(&self) -> Vec<Event> {
        let privacy = Privacy::default();
        let path = format!("/home/me/.claude/projects/x/{}.jsonl", self.session);
        let ctx = ParseContext::new(&path, Ts(1_700_000_000_000), &privacy);
        let out =
            adapters::parse_file_bytes(SourceKind::ClaudeTranscript, &ctx, self.jsonl().as_bytes()).expect("parse");
        out.events
    }
}
