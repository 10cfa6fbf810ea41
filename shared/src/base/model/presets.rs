//! The three presets' command lines and output formats, and the JSON
//! object taken from a model's answer text.
//!
//! - **claude** — `claude -p --output-format json` prints one result object
//!   (`{"type":"result","subtype":"success","is_error":false,"result":"…",
//!   "session_id":…,"total_cost_usd":…,"usage":…}`; with `--verbose`, an
//!   array of messages whose last is that object). The answer is `result`;
//!   `is_error: true` or a subtype other than `success` (`error_max_turns`,
//!   `error_during_execution`, …) is a failure whose message is `result`
//!   or `errors`.
//! - **codex** — `codex exec --json` prints JSON Lines events:
//!   `thread.started`, `turn.started`, `item.started` / `item.updated` /
//!   `item.completed` with an `item` (`{"id","type":"agent_message","text"}`,
//!   `reasoning`, `command_execution`, …), then `turn.completed` (with
//!   `usage`) or `turn.failed` (`{"error":{"message"}}`); a fatal stream
//!   error is `{"type":"error","message"}`. The answer is the text of the
//!   last completed `agent_message`.
//! - **openai** — `POST {base_url}/chat/completions` with `model`,
//!   `messages` (system, user), `temperature` 0 and `stream` false; the
//!   answer is `choices[0].message.content` (a `refusal` instead is a
//!   failure; a non-2xx status is a failure with the server's
//!   `error.message`).

use serde_json::{Value, json};

/// Longest part of a model's text quoted in an error.
const QUOTE: usize = 300;

fn quote(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() <= QUOTE {
        return format!("{t:?}");
    }
    let cut: String = t.chars().take(QUOTE).collect();
    format!("{cut:?}…")
}

/// The `claude` command line (the prompt goes on stdin).
pub fn claude_argv(model: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> =
        ["claude", "-p", "--output-format", "json", "--no-session-persistence", "--strict-mcp-config"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    if let Some(m) = model {
        argv.extend(["--model".to_owned(), m.to_owned()]);
    }
    // No tools: the answer is text only.
    argv.extend(["--tools".to_owned(), String::new()]);
    argv
}

/// The `codex` command line (`-`: the prompt on stdin).
pub fn codex_argv(model: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> =
        ["codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "--color", "never"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    if let Some(m) = model {
        argv.extend(["--model".to_owned(), m.to_owned()]);
    }
    argv.push("-".to_owned());
    argv
}

/// The answer text of `claude -p --output-format json`'s output.
pub fn claude_answer(stdout: &[u8]) -> Result<String, String> {
    let v: Value = serde_json::from_slice(stdout).map_err(|e| {
        format!("claude did not print its JSON result ({e}): {}", quote(&String::from_utf8_lossy(stdout)))
    })?;
    // With --verbose the output is every message; the result is the last.
    let result = match &v {
        Value::Array(items) => items
            .iter()
            .rev()
            .find(|m| m.get("type").and_then(Value::as_str) == Some("result"))
            .ok_or("claude printed no result message")?,
        Value::Object(_) => &v,
        _ => return Err("claude printed JSON that is not its result object".into()),
    };
    if result.get("type").and_then(Value::as_str) != Some("result") {
        return Err("claude printed an object that is not a result".into());
    }
    let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("");
    let is_error = result.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let text = result.get("result").and_then(Value::as_str);
    if is_error || subtype != "success" {
        let detail = match (text, result.get("errors")) {
            (Some(t), _) if !t.trim().is_empty() => quote(t),
            (_, Some(e)) if !e.is_null() => quote(&e.to_string()),
            _ => "no message".to_owned(),
        };
        let subtype = if subtype.is_empty() { "error" } else { subtype };
        return Err(format!("claude reported {subtype}: {detail}"));
    }
    text.map(str::to_owned).ok_or_else(|| "claude's result has no text".to_owned())
}

/// The answer text of `codex exec --json`'s events.
pub fn codex_answer(stdout: &[u8]) -> Result<String, String> {
    let mut answer: Option<String> = None;
    let mut events = 0usize;
    for line in stdout.split(|b| *b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        // Anything else on stdout (a warning line) is not an event.
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        events += 1;
        match v.get("type").and_then(Value::as_str) {
            Some("item.completed") => {
                let item = v.get("item");
                if item.and_then(|i| i.get("type")).and_then(Value::as_str) == Some("agent_message")
                    && let Some(t) = item.and_then(|i| i.get("text")).and_then(Value::as_str)
                {
                    answer = Some(t.to_owned());
                }
            }
            Some("turn.failed") => {
                let msg = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("no message");
                return Err(format!("codex reported a failed turn: {}", quote(msg)));
            }
            Some("error") => {
                let msg = v.get("message").and_then(Value::as_str).unwrap_or("no message");
                return Err(format!("codex reported an error: {}", quote(msg)));
            }
            _ => {}
        }
    }
    if events == 0 {
        return Err(format!("codex printed no JSON events: {}", quote(&String::from_utf8_lossy(stdout))));
    }
    answer.ok_or_else(|| "codex finished without an agent message".to_owned())
}

/// The chat completions request body.
pub fn openai_body(model: &str, system: &str, user: &str) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
        "stream": false,
    })
}

/// The answer text of a chat completions response.
pub fn openai_answer(status: u16, body: &[u8]) -> Result<String, String> {
    let v: Result<Value, _> = serde_json::from_slice(body);
    if !(200..300).contains(&status) {
        let msg = v
            .ok()
            .and_then(|v| {
                v.pointer("/error/message").or_else(|| v.get("error")).and_then(Value::as_str).map(str::to_owned)
            })
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        return Err(format!("the server answered HTTP {status}: {}", quote(&msg)));
    }
    let v =
        v.map_err(|e| format!("the server's answer is not JSON ({e}): {}", quote(&String::from_utf8_lossy(body))))?;
    let message = v.pointer("/choices/0/message").ok_or("the server's answer has no choices[0].message")?;
    if let Some(r) = message.get("refusal").and_then(Value::as_str).filter(|r| !r.trim().is_empty()) {
        return Err(format!("the model refused: {}", quote(r)));
    }
    match message.get("content").and_then(Value::as_str) {
        Some(t) if !t.trim().is_empty() => Ok(t.to_owned()),
        _ => Err("the model's message has no content".into()),
    }
}

/// Places in a text where a JSON object may start that are tried at most.
const MAX_STARTS: usize = 64;

/// The JSON object in a model's answer text: the whole text, else a fenced
/// block, else the first object that parses from one of the first
/// [`MAX_STARTS`] opening braces. An answer without one (prose, a refusal)
/// is an error quoting it.
pub fn json_object_in(text: &str) -> Result<Vec<u8>, String> {
    let t = text.trim();
    let is_object = |s: &str| serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_object());
    if is_object(t) {
        return Ok(t.as_bytes().to_vec());
    }
    let mut rest = t;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = after.find('\n').map_or(0, |n| n + 1);
        let Some(close) = after[body_start..].find("```") else { break };
        let inner = after[body_start..body_start + close].trim();
        if is_object(inner) {
            return Ok(inner.as_bytes().to_vec());
        }
        rest = &after[body_start + close + 3..];
    }
    for (start, _) in t.match_indices('{').take(MAX_STARTS) {
        let mut values = serde_json::Deserializer::from_str(&t[start..]).into_iter::<Value>();
        if let Some(Ok(v)) = values.next()
            && v.is_object()
        {
            let end = start + values.byte_offset();
            return Ok(t.as_bytes()[start..end].to_vec());
        }
    }
    Err(format!("the answer holds no JSON object: {}", quote(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_results() {
        let ok = br#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"num_turns":1,
            "result":"{\"memories\":[]}","session_id":"s","total_cost_usd":0.002,"usage":{"input_tokens":9}}"#;
        assert_eq!(claude_answer(ok).unwrap(), r#"{"memories":[]}"#);
        let verbose = br#"[{"type":"system","subtype":"init"},{"type":"assistant","message":{}},
            {"type":"result","subtype":"success","is_error":false,"result":"hi"}]"#;
        assert_eq!(claude_answer(verbose).unwrap(), "hi");
        let err = claude_answer(
            br#"{"type":"result","subtype":"success","is_error":true,"result":"Credit balance is too low"}"#,
        )
        .unwrap_err();
        assert!(err.contains("Credit balance"), "{err}");
        let err =
            claude_answer(br#"{"type":"result","subtype":"error_max_turns","is_error":false,"errors":["max turns"]}"#)
                .unwrap_err();
        assert!(err.contains("error_max_turns") && err.contains("max turns"), "{err}");
        assert!(claude_answer(b"Error: unknown option '--tools'").unwrap_err().contains("unknown option"));
        assert!(claude_answer(b"[1,2]").is_err());
        assert!(claude_answer(br#"{"type":"assistant"}"#).is_err());
        assert!(claude_answer(br#"{"type":"result","subtype":"success","is_error":false}"#).is_err());
    }

    #[test]
    fn codex_events() {
        let ok = concat!(
            "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n",
            "{\"type\":\"turn.started\"}\n",
            "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"reasoning\",\"text\":\"**Thinking**\"}}\n",
            "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\",\"type\":\"agent_message\",\"text\":\"draft\"}}\n",
            "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_2\",\"type\":\"agent_message\",\"text\":\"{\\\"memories\\\":[]}\"}}\n",
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1,\"cached_input_tokens\":0,\"output_tokens\":2}}\n",
        );
        assert_eq!(codex_answer(ok.as_bytes()).unwrap(), r#"{"memories":[]}"#);
        let failed =
            "{\"type\":\"turn.started\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"stream disconnected\"}}\n";
        assert!(codex_answer(failed.as_bytes()).unwrap_err().contains("stream disconnected"));
        let fatal = "{\"type\":\"error\",\"message\":\"unauthorized\"}\n";
        assert!(codex_answer(fatal.as_bytes()).unwrap_err().contains("unauthorized"));
        let none = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.completed\",\"usage\":{}}\n";
        assert!(codex_answer(none.as_bytes()).unwrap_err().contains("without an agent message"));
        assert!(codex_answer(b"not json at all").unwrap_err().contains("no JSON events"));
    }

    #[test]
    fn chat_completions() {
        let ok = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"summary\":\"x\"}"},"finish_reason":"stop"}]}"#;
        assert_eq!(openai_answer(200, ok).unwrap(), r#"{"summary":"x"}"#);
        let refused =
            br#"{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}"#;
        assert!(openai_answer(200, refused).unwrap_err().contains("refused"));
        let err = openai_answer(404, br#"{"error":{"message":"model 'x' not found"}}"#).unwrap_err();
        assert!(err.contains("404") && err.contains("not found"), "{err}");
        assert!(openai_answer(500, b"boom").unwrap_err().contains("boom"));
        assert!(openai_answer(200, b"{}").is_err());
        assert!(openai_answer(200, b"<html>").is_err());
    }

    #[test]
    fn the_json_object_in_an_answer() {
        let want = br#"{"a":1}"#.to_vec();
        assert_eq!(json_object_in(r#" {"a":1} "#).unwrap(), want);
        assert_eq!(json_object_in("Here you go:\n```json\n{\"a\":1}\n```\nDone.").unwrap(), want);
        assert_eq!(json_object_in("```\n{\"a\":1}\n```").unwrap(), want);
        assert_eq!(json_object_in("Sure! {\"a\":1} and {\"b\":2}").unwrap(), want);
        assert_eq!(json_object_in("{not json} then {\"a\":1}").unwrap(), want);
        let err = json_object_in("I'm sorry, but I can't help with that.").unwrap_err();
        assert!(err.contains("no JSON object") && err.contains("sorry"), "{err}");
        assert!(json_object_in("[1,2,3]").is_err());
        assert!(json_object_in("").is_err());
        // Many braces cost a bounded number of attempts.
        let braces = "{".repeat(200_000);
        assert!(json_object_in(&braces).is_err());
    }

    #[test]
    fn command_lines() {
        let c = claude_argv(Some("haiku"));
        assert_eq!(&c[..4], ["claude", "-p", "--output-format", "json"]);
        assert!(c.windows(2).any(|w| w == ["--model", "haiku"]));
        assert_eq!(c[c.len() - 2..], ["--tools".to_owned(), String::new()]);
        let x = codex_argv(None);
        assert_eq!(&x[..3], ["codex", "exec", "--json"]);
        assert_eq!(x.last().map(String::as_str), Some("-"));
        assert!(!x.iter().any(|a| a == "--model"));
    }
}
