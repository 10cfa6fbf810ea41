//! The optional external continuity judge: a user-configured command (config
//! `judge.command`, off by default) that reads one session as JSON on stdin and
//! answers seed 002's "Improved Continuity Scoring" JSON on stdout. It is
//! killed (with everything it started) after `judge.timeout_ms`; a failure of any kind (cannot start,
//! timeout, non-zero exit, invalid or out-of-range JSON) is logged and the
//! deterministic score stands alone. It is never required.
//!
//! Request (stdin):
//!
//! ```json
//! {"session_key": "claude:…", "project": "engram",
//!  "instructions": "These memories were pre-loaded for this session: …",
//!  "memories": [{"id": "mem_…", "content": "…"}],
//!  "transcript": [{"role": "user", "text": "…"}, {"role": "assistant", "text": "…"},
//!                 {"role": "tool_call", "text": "Edit src/x.rs …"}, {"role": "tool_result", "text": "…"}],
//!  "transcript_truncated": false}
//! ```
//!
//! Answer (stdout): `{"overall_score": 0..1, "confidence": 0..1,
//! "per_memory_scores": {"mem_…": 0..1}, "missing_topics": ["…"],
//! "novel_context_count": n, "reasoning": "…"}`. Scores of memories that were
//! not injected are ignored. How the verdict is blended is described in
//! [`crate::continuity::assess`]'s module.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared::base::command::CommandConfig;
use shared::base::ids::MemoryId;
use shared::storage::event::{Body, origin};

use crate::continuity::{JudgeVerdict, SessionRecord};

/// The judge's instructions, from seed 002.
pub const INSTRUCTIONS: &str = "These memories were pre-loaded for this session (see \"memories\"). \
For each memory, rate its relevance to what was actually discussed (0.0-1.0). Also identify any topics \
where the user had to re-explain things that memory SHOULD have covered but didn't. Return JSON: \
{\"overall_score\": 0.0-1.0, \"confidence\": 0.0-1.0, \"per_memory_scores\": {\"memory_id\": 0.85}, \
\"missing_topics\": [\"...\"], \"novel_context_count\": 0, \"reasoning\": \"explanation\"}";

const MAX_TRANSCRIPT_BYTES: usize = 60_000;
const MAX_ENTRY_BYTES: usize = 2_000;
const MAX_MEMORY_BYTES: usize = 1_000;
const MAX_ANSWER_BYTES: usize = 1 << 20;

fn cap(text: &str, max: usize) -> String {
    shared::storage::store::cap(text, max).to_owned()
}

/// The request sent to the judge for a session.
pub fn request(record: &SessionRecord) -> Value {
    let mut injected: Vec<&MemoryId> = Vec::new();
    for r in &record.rankings {
        for c in r.candidates.iter().filter(|c| c.injected) {
            if !injected.contains(&&c.memory_id) {
                injected.push(&c.memory_id);
            }
        }
    }
    let memories: Vec<Value> = injected
        .iter()
        .filter_map(|id| {
            let facts = record.memories.get(*id)?;
            Some(json!({"id": id.as_str(), "content": cap(&facts.content, MAX_MEMORY_BYTES)}))
        })
        .collect();
    let mut transcript = Vec::new();
    let mut used = 0usize;
    let mut truncated = false;
    for event in &record.events {
        let (role, text) = match &event.body {
            Body::MsgIn(m) if m.origin == origin::ENGRAM || m.origin == origin::HOOK => continue,
            Body::MsgIn(m) if m.is_user_prompt() => ("user", m.text.clone()),
            Body::MsgIn(m) => ("context", m.text.clone()),
            Body::MsgOut(m) if m.part == "reasoning" => continue,
            Body::MsgOut(m) => ("assistant", m.text.clone()),
            Body::ToolCall(t) => ("tool_call", format!("{} {}", t.tool, t.args)),
            Body::ToolResult(t) => ("tool_result", format!("{}{}", t.stdout, t.stderr)),
            Body::CodeEdit(c) => ("edit", c.file.clone()),
            Body::CodeRead(c) => ("read", c.file.clone()),
            _ => continue,
        };
        let text = cap(&text, MAX_ENTRY_BYTES);
        if used + text.len() > MAX_TRANSCRIPT_BYTES {
            truncated = true;
            break;
        }
        used += text.len();
        transcript.push(json!({"role": role, "text": text}));
    }
    json!({
        "session_key": record.session_key.as_str(),
        "project": record.project,
        "instructions": INSTRUCTIONS,
        "memories": memories,
        "transcript": transcript,
        "transcript_truncated": truncated,
    })
}

fn unit(value: Option<&Value>, field: &str) -> Result<f32, String> {
    let x = value.and_then(Value::as_f64).ok_or_else(|| format!("{field} is missing or not a number"))?;
    if !(0.0..=1.0).contains(&x) {
        return Err(format!("{field} is {x}, outside 0..=1"));
    }
    Ok(x as f32)
}

/// Parses and validates the judge's answer; scores of memories not in
/// `injected` are dropped.
pub fn parse(bytes: &[u8], injected: &[MemoryId]) -> Result<JudgeVerdict, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let obj = value.as_object().ok_or("the answer is not a JSON object")?;
    let mut per_memory = BTreeMap::new();
    if let Some(scores) = obj.get("per_memory_scores") {
        let scores = scores.as_object().ok_or("per_memory_scores is not an object")?;
        for (id, v) in scores {
            let s = unit(Some(v), &format!("per_memory_scores.{id}"))?;
            let id = MemoryId(id.clone());
            if injected.contains(&id) {
                per_memory.insert(id, s);
            }
        }
    }
    let missing_topics = match obj.get("missing_topics") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        Some(_) => return Err("missing_topics is not an array".into()),
    };
    let novel = match obj.get("novel_context_count") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or("novel_context_count is not a non-negative integer")?,
    };
    Ok(JudgeVerdict {
        overall_score: unit(obj.get("overall_score"), "overall_score")?,
        confidence: unit(obj.get("confidence"), "confidence")?,
        per_memory_scores: per_memory,
        missing_topics,
        novel_context_count: u32::try_from(novel).unwrap_or(u32::MAX),
        reasoning: obj.get("reasoning").and_then(Value::as_str).unwrap_or_default().to_owned(),
    })
}

/// Kills the judge and everything it started (it leads its own process
/// group; the shell's `kill` signals a group without any unsafe code here).
fn kill_group(child: &mut Child) {
    let killed = Command::new("sh")
        .args(["-c", &format!("kill -KILL -{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !killed {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// Runs the configured judge on `request`; `Err` says why there is no verdict.
pub fn run(config: &CommandConfig, request: &Value, injected: &[MemoryId]) -> Result<JudgeVerdict, String> {
    let Some((program, args)) = config.command.split_first() else {
        return Err("no judge command configured".into());
    };
    let input = serde_json::to_vec(request).map_err(|e| format!("cannot encode the request: {e}"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let mut stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut stderr = child.stderr.take().ok_or("no stderr pipe")?;
    // A judge that does not read its input must not block us: write on a thread.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(MAX_ANSWER_BYTES as u64).read_to_end(&mut out);
        out
    });
    let err_reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + Duration::from_millis(config.timeout_ms);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill_group(&mut child);
                return Err(format!("timed out after {} ms and was killed", config.timeout_ms));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(&mut child);
                return Err(format!("cannot wait for the judge: {e}"));
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("exited with {status}: {}", String::from_utf8_lossy(&err).trim()));
    }
    parse(&out, injected)
}
