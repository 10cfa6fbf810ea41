//! The settings view: every key of `config.toml`, described, and changes
//! written back.
//!
//! The keys are read from [`Config`] itself (its defaults serialised), so a
//! section another part of Engram adds appears without a change here; the
//! descriptions and ranges below name what each key does. A change is a
//! JSON object of dotted keys (`{"predictor.exploration_rate": 0.1}`; `null`
//! puts a key back to its default). It is applied to the file's own TOML
//! document (the user's comments, order and other keys are kept), the whole
//! resulting file is validated exactly as every binary reads it
//! ([`Config::parse`]), and only then written, atomically. An unknown key, a
//! value of the wrong type or out of range is a 400 and the file is untouched.
//!
//! Some settings are never written from here ([`locked`]): the programs
//! Engram runs (every `command`), the endpoints it talks to, and who may
//! reach this server (`web.*`). The token only proves a request comes from
//! the page, so a setting that would let a page run a program or open the
//! server to the network is set in `config.toml` or on the command line;
//! the page shows them read-only and a change is a 403 naming the key.
//! The model sections' `preset` and `model` (which program or server a
//! model runs on) are locked likewise.

use serde_json::{Map, Value, json};
use shared::base::config::Config;
use shared::base::paths::Paths;

use super::api::{ApiError, ApiResult};

/// Sections: key, title, what it is for.
const SECTIONS: &[(&str, &str, &str)] = &[
    ("injection", "Context injection", "What is injected into an agent's context, and how much."),
    ("predictor", "Predictor", "The learned ranking: when it trains and how much influence it may earn (seed 002)."),
    ("privacy", "Privacy", "What is never recorded, and redaction of secrets."),
    ("scan", "Capture", "Where harness logs are read from, and when a quiet session counts as ended."),
    (
        "extractor",
        "Memory extractor",
        "An optional model that extracts memories: your claude or codex CLI, a server on this machine, or a command.",
    ),
    ("judge", "Continuity judge", "An optional local command that judges what helped a finished session."),
    ("time", "Time", "The time zone of session-level signals (mornings, evenings, dates)."),
    (
        "knowledge",
        "Knowledge",
        "Seed 004's memory model: the knowledge graph, conflict detection, checkpoints, the observation buffer, \
         topic shifts, summaries, dedup.",
    ),
    ("web", "Web UI", "This server. Changes to it take effect when `engram-scorer web` restarts."),
];

/// A known key: its description, and the inclusive range of a number.
type Key = (&'static str, &'static str, Option<(f64, f64)>);

/// Known keys.
const KEYS: &[Key] = &[
    ("knowledge.graph.enabled", "Keep the knowledge graph (edges named by writers are still recorded).", None),
    ("knowledge.graph.max_depth", "Default and largest depth of a graph traversal.", Some((1.0, 10.0))),
    ("knowledge.graph.auto_discover", "Link each new memory to related ones.", None),
    ("knowledge.graph.related_similarity", "Similarity above which memories are related.", Some((0.0, 1.0))),
    ("knowledge.conflicts.enabled", "Check each new memory against the stored ones.", None),
    (
        "knowledge.conflicts.similarity_threshold",
        "Above this similarity a new memory waits in Staging for you to resolve.",
        Some((0.0, 1.0)),
    ),
    ("knowledge.checkpoints.enabled", "Session checkpoints at all.", None),
    (
        "knowledge.checkpoints.auto_fork_before_destructive",
        "A checkpoint before every destructive shell command.",
        None,
    ),
    (
        "knowledge.buffer.checkpoint_interval",
        "A checkpoint every this many tool uses (0: off).",
        Some((0.0, 100_000.0)),
    ),
    ("knowledge.topic.enabled", "Detect topic shifts at prompts (and suggest a stash).", None),
    ("knowledge.topic.auto_stash", "Stash automatically when the shift is certain.", None),
    ("predictor.enabled", "Use the learned predictor at all (its ranking is still recorded when off).", None),
    ("predictor.train_interval_sessions", "Retrain after this many newly scored sessions.", Some((1.0, 10_000.0))),
    (
        "predictor.min_training_sessions",
        "Scored sessions needed before the predictor may influence injection.",
        Some((1.0, 100_000.0)),
    ),
    ("predictor.rrf_k", "The constant k of reciprocal rank fusion (larger: flatter).", Some((1.0, 1000.0))),
    ("predictor.exploration_rate", "Probability of an exploration slot per ranking.", Some((0.0, 1.0))),
    (
        "predictor.drift_reset_window",
        "Consecutive low-success sessions that trigger a drift reset.",
        Some((1.0, 10_000.0)),
    ),
    ("predictor.max_training_seconds", "Hard limit on one training run.", Some((1.0, 86_400.0))),
    ("predictor.candidate_pool_size", "Candidates ranked after pre-filtering.", Some((1.0, 10_000.0))),
    (
        "injection.budget_chars",
        "Character budget of one injection (about 2,000 tokens at 8,000).",
        Some((0.0, 100_000.0)),
    ),
    (
        "injection.max_chars",
        "Hard cap of an injection (Claude Code truncates hook context beyond 10,000).",
        Some((0.0, 100_000.0)),
    ),
    ("injection.session_start_k", "Most memories injected at session start.", Some((0.0, 100.0))),
    ("injection.prompt_k", "Most memories injected for one prompt.", Some((0.0, 100.0))),
    ("injection.tool_k", "Most memories injected before one tool call.", Some((0.0, 100.0))),
    (
        "privacy.exclude",
        "Extra path patterns (globs) whose contents are never recorded, added to the built-in ones (.env, *.pem, *.key, credentials…).",
        None,
    ),
    (
        "privacy.redact",
        "Redact secrets (API keys, tokens, private keys, passwords) before anything reaches a tape. Off is for debugging only.",
        None,
    ),
    ("scan.claude_dir", "Claude Code's config directory (empty: $CLAUDE_CONFIG_DIR or ~/.claude).", None),
    ("scan.codex_home", "Codex's home (empty: $CODEX_HOME or ~/.codex).", None),
    ("scan.gemini_dir", "Gemini CLI's directory (empty: ~/.gemini).", None),
    ("scan.opencode_dir", "OpenCode's data directory (empty: ~/.local/share/opencode).", None),
    (
        "scan.specstory_roots",
        "Directories searched for SpecStory exports (.specstory/history/*.md in the repositories below them), besides the projects Engram knows.",
        None,
    ),
    ("scan.idle_end_minutes", "A session with no new content for this long is ended.", Some((1.0, 100_000.0))),
    ("extractor.preset", "claude, codex or openai (set in config.toml only).", None),
    ("extractor.model", "The model the preset asks for (set in config.toml only).", None),
    ("extractor.base_url", "The openai preset's server on this machine (set in config.toml only).", None),
    ("extractor.command", "Program and arguments, one per entry, instead of a preset (set in config.toml only).", None),
    ("extractor.timeout_ms", "Stop waiting for the model after this long.", Some((1.0, 3_600_000.0))),
    ("extractor.daily_calls", "Model calls a day at most.", Some((1.0, 1_000_000.0))),
    ("judge.command", "Program and arguments, one per entry; empty means off.", None),
    ("judge.timeout_ms", "Kill the command after this long.", Some((1.0, 3_600_000.0))),
    ("time.timezone", "local (the system's) or an IANA name such as Europe/Paris.", None),
    ("web.bind", "Address to listen on; a non-loopback one needs allow_remote.", None),
    ("web.port", "Port to listen on (0: any free port).", Some((0.0, 65_535.0))),
    (
        "web.allow_remote",
        "Listen on a non-loopback address: the API then serves anyone who can reach it. Opt in knowingly.",
        None,
    ),
    ("web.allowed_hosts", "Extra Host header values accepted (name:port), besides the loopback names.", None),
];

/// Sections naming a program or server a model runs on.
const MODEL_SECTIONS: &[&str] = &["extractor", "judge", "knowledge.summary", "knowledge.dedup", "knowledge.curation"];

/// Why `key` (a dotted setting) is set only in `config.toml` or on the
/// command line, if it is: it names a program to run (a `command`, of the
/// extractor, the judge, the knowledge summariser, discovery or dedup, or
/// any later one), an endpoint to reach (a URL), or who can reach this
/// server (the `web` section).
pub fn locked(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    let leaf = key.rsplit('.').next().unwrap_or(&key);
    if key == "web" || key.starts_with("web.") {
        return Some("it decides who can reach this server");
    }
    if ["command", "program", "executable", "argv", "cmd"].contains(&leaf)
        || leaf.ends_with("_command")
        || leaf.ends_with("_program")
    {
        return Some("it names a program Engram runs");
    }
    if ["url", "endpoint", "host", "base_url"].contains(&leaf)
        || leaf.ends_with("_url")
        || leaf.ends_with("_endpoint")
        || leaf.ends_with("_host")
    {
        return Some("it names an endpoint Engram connects to");
    }
    if key
        .rsplit_once('.')
        .is_some_and(|(section, leaf)| MODEL_SECTIONS.contains(&section) && matches!(leaf, "preset" | "model"))
    {
        return Some("it chooses the program or server a model runs on");
    }
    None
}

/// A float that is exactly an `f32` printed as that `f32` would be (0.05, not 0.0500000007).
fn tidy(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or_default();
            let f = x as f32;
            if f64::from(f) == x
                && let Ok(short) = f.to_string().parse::<f64>()
            {
                json!(short)
            } else {
                json!(x)
            }
        }
        Value::Array(a) => Value::Array(a.into_iter().map(tidy).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, tidy(v))).collect()),
        v => v,
    }
}

fn kind(default: &Value, key: &str) -> &'static str {
    match default {
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        // Optional values default to None: every one Engram has is a path or name.
        Value::Null if key.contains("dir") || key.contains("home") || key.contains("path") => "path",
        Value::Null => "string?",
        Value::Object(_) => "section",
    }
}

/// Every leaf key under `prefix` of `defaults`, depth first, with its default.
fn leaves<'a>(prefix: &str, defaults: &'a Map<String, Value>, out: &mut Vec<(String, &'a Value)>) {
    for (k, v) in defaults {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            Value::Object(m) => leaves(&key, m, out),
            v => out.push((key, v)),
        }
    }
}

fn lookup<'a>(root: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(root, |v, k| v.get(k))
}

fn defaults() -> Value {
    tidy(serde_json::to_value(Config::default()).unwrap_or(Value::Null))
}

/// `GET /api/config`: the file, whether it is valid, and every key with its
/// value, default, type, range and description, by section.
pub fn describe(paths: &Paths) -> ApiResult<Value> {
    let file = paths.config();
    let (config, error) = match Config::load(&file) {
        Ok(c) => (c, None),
        Err(e) => (Config::default(), Some(e.to_string())),
    };
    let current = tidy(serde_json::to_value(&config).map_err(|e| ApiError::internal(e.to_string()))?);
    let defaults = defaults();
    let Value::Object(sections) = &defaults else { return Err(ApiError::internal("the defaults are not a table")) };
    let mut out = Vec::new();
    for (section, value) in sections {
        let (title, about) = SECTIONS.iter().find(|s| s.0 == section).map_or((section.as_str(), ""), |s| (s.1, s.2));
        let mut keys = Vec::new();
        match value {
            Value::Object(m) => leaves(section, m, &mut keys),
            v => keys.push((section.clone(), v)),
        }
        let fields: Vec<Value> = keys
            .into_iter()
            .map(|(key, default)| {
                let known = KEYS.iter().find(|k| k.0 == key);
                let locked = locked(&key);
                json!({
                    "key": key,
                    "type": kind(default, &key),
                    "value": lookup(&current, &key).cloned().unwrap_or(Value::Null),
                    "default": default,
                    "description": known.map(|k| k.1),
                    "editable": locked.is_none(),
                    "min": known.and_then(|k| k.2).map(|r| r.0),
                    "max": known.and_then(|k| k.2).map(|r| r.1),
                    "locked": locked.is_some(),
                    "locked_reason": locked.map(|why| format!("Set in config.toml or on the command line only: {why}.")),
                })
            })
            .collect();
        out.push(json!({"section": section, "title": title, "description": about, "fields": fields}));
    }
    Ok(json!({
        "file": file.display().to_string(),
        "exists": file.exists(),
        "valid": error.is_none(),
        "error": error,
        "sections": out,
        "config": current,
    }))
}

fn toml_value(key: &str, v: &Value, default: &Value) -> ApiResult<toml_edit::Value> {
    let wrong = |what: &str| ApiError::bad_request(format!("{key} must be {what}, not {v}"));
    Ok(match (default, v) {
        (Value::Bool(_), Value::Bool(b)) => (*b).into(),
        (Value::Bool(_), _) => return Err(wrong("true or false")),
        (Value::Number(d), Value::Number(n)) if d.is_f64() => {
            let x = n.as_f64().ok_or_else(|| wrong("a number"))?;
            if !x.is_finite() {
                return Err(wrong("a finite number"));
            }
            x.into()
        }
        (Value::Number(_), Value::Number(n)) => n.as_i64().ok_or_else(|| wrong("a whole number"))?.into(),
        (Value::Number(_), _) => return Err(wrong("a number")),
        (Value::String(_) | Value::Null, Value::String(s)) => s.as_str().into(),
        (Value::String(_) | Value::Null, _) => return Err(wrong("text")),
        (Value::Array(_), Value::Array(items)) => {
            let mut a = toml_edit::Array::new();
            for item in items {
                match item {
                    Value::String(s) => a.push(s.as_str()),
                    _ => return Err(wrong("a list of text")),
                }
            }
            toml_edit::Value::Array(a)
        }
        (Value::Array(_), _) => return Err(wrong("a list of text")),
        (Value::Object(_), _) => return Err(ApiError::bad_request(format!("{key} is a section, not a setting"))),
    })
}

/// `PUT /api/config`: applies `changes` (dotted key → value, `null` for the
/// default) to `config.toml` if the result is valid, and describes the result.
pub fn update(paths: &Paths, changes: &Value) -> ApiResult<Value> {
    let Value::Object(changes) = changes else {
        return Err(ApiError::bad_request(
            "the body must be an object of settings, such as {\"predictor.exploration_rate\": 0.1}",
        ));
    };
    if changes.is_empty() {
        return Err(ApiError::bad_request("no setting to change"));
    }
    // Before anything else: a request naming a locked setting changes nothing.
    if let Some((key, why)) = changes.keys().find_map(|k| locked(k).map(|why| (k, why))) {
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "setting_locked",
            format!(
                "{key} cannot be changed through the API ({why}); set it in {} or on the command line",
                paths.config().display()
            ),
        ));
    }
    let file = paths.config();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(ApiError::internal(format!("read {}: {e}", file.display()))),
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "config_unreadable",
            format!("{} is not valid TOML ({e}); fix it by hand first", file.display()),
        )
    })?;
    let defaults = defaults();
    for (key, value) in changes {
        let default = match lookup(&defaults, key) {
            Some(Value::Object(_)) => {
                return Err(ApiError::bad_request(format!("{key} is a section; name one of its settings")));
            }
            Some(d) => d,
            None => return Err(ApiError::bad_request(format!("unknown setting {key:?}"))),
        };
        if let Some((_, _, Some((min, max)))) = KEYS.iter().find(|k| k.0 == key)
            && let Some(x) = value.as_f64()
            && !(*min..=*max).contains(&x)
        {
            return Err(ApiError::bad_request(format!("{key} must be from {min} to {max}, not {x}")));
        }
        let path: Vec<&str> = key.split('.').collect();
        let (leaf, tables) = path.split_last().ok_or_else(|| ApiError::bad_request("empty setting name"))?;
        let mut table = doc.as_table_mut();
        for t in tables {
            let entry = table.entry(t).or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            });
            table = entry.as_table_mut().ok_or_else(|| {
                ApiError::bad_request(format!("{t} in config.toml is not a table; fix the file by hand"))
            })?;
        }
        if value.is_null() {
            table.remove(leaf);
        } else {
            let v = toml_value(key, value, default)?;
            match table.get_mut(leaf).and_then(toml_edit::Item::as_value_mut) {
                // Keep the comment that decorates the old value.
                Some(old) => {
                    let decor = old.decor().clone();
                    *old = v;
                    *old.decor_mut() = decor;
                }
                None => {
                    table.insert(leaf, toml_edit::Item::Value(v));
                }
            }
        }
    }
    let new_text = doc.to_string();
    Config::parse(&new_text).map_err(|e| ApiError::bad_request(format!("the settings are not valid: {e}")))?;
    shared::base::fsutil::atomic_write(&file, new_text.as_bytes())
        .map_err(|e| ApiError::internal(format!("write {}: {e}", file.display())))?;
    tracing::info!(keys = ?changes.keys().collect::<Vec<_>>(), "settings changed from the web UI");
    describe(paths)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_described_key_exists_and_every_section_is_named() {
        let d = defaults();
        for (key, _, _) in KEYS {
            assert!(lookup(&d, key).is_some_and(|v| !v.is_object()), "{key} is not a setting");
        }
        for (s, _, _) in SECTIONS {
            assert!(d.get(s).is_some(), "{s}");
        }
    }

    #[test]
    fn programs_endpoints_and_remote_access_are_refused_and_shown_locked() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        std::fs::write(paths.config(), "[injection]\nprompt_k = 3\n").unwrap();
        let before = std::fs::read_to_string(paths.config()).unwrap();
        let command = json!(["sh", "-c", "touch /tmp/pwned"]);
        for key in [
            "extractor.command",
            "judge.command",
            "knowledge.summary.command",
            "knowledge.graph.discovery.command",
            "knowledge.dedup.command",
        ] {
            for value in [command.clone(), Value::Null] {
                // Alone, or beside a setting that may change: nothing is written.
                for body in [json!({key: value.clone()}), json!({"injection.prompt_k": 4, key: value.clone()})] {
                    let e = update(&paths, &body).unwrap_err();
                    assert_eq!(e.status, axum::http::StatusCode::FORBIDDEN, "{body}");
                    assert!(e.message.contains(key) && e.message.contains("config.toml"), "{}", e.message);
                    assert_eq!(std::fs::read_to_string(paths.config()).unwrap(), before);
                }
            }
        }
        for (key, value) in [
            ("web.allow_remote", json!(true)),
            ("web.bind", json!("0.0.0.0")),
            ("web.allowed_hosts", json!(["evil.example:37820"])),
            ("web.port", json!(80)),
        ] {
            let e = update(&paths, &json!({key: value})).unwrap_err();
            assert_eq!((e.status, e.code), (axum::http::StatusCode::FORBIDDEN, "setting_locked"), "{key}");
            assert!(e.message.contains(key), "{}", e.message);
        }
        assert_eq!(std::fs::read_to_string(paths.config()).unwrap(), before);
        // Every key that runs a program or opens the server is locked, and
        // shown so; every other key stays editable.
        let d = describe(&paths).unwrap();
        let mut locked_keys = Vec::new();
        for f in d["sections"].as_array().unwrap().iter().flat_map(|s| s["fields"].as_array().unwrap()) {
            let key = f["key"].as_str().unwrap();
            if f["locked"] == true {
                assert!(f["locked_reason"].as_str().unwrap().contains("config.toml"), "{f}");
                locked_keys.push(key.to_owned());
            } else {
                assert!(!key.ends_with("command") && !key.starts_with("web."), "{key} is editable");
            }
        }
        for key in ["extractor.command", "judge.command", "knowledge.dedup.command", "web.allow_remote", "web.bind"] {
            assert!(locked_keys.iter().any(|k| k == key), "{key} not locked: {locked_keys:?}");
        }
        assert!(!locked_keys.iter().any(|k| k.ends_with("timeout_ms")), "{locked_keys:?}");
        update(&paths, &json!({"extractor.timeout_ms": 5000, "injection.prompt_k": 4})).unwrap();
        assert_eq!(Config::load(&paths.config()).unwrap().extractor.timeout_ms, 5000);
    }

    #[test]
    fn the_programs_and_servers_of_models_are_not_set_here() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        std::fs::write(paths.config(), "[extractor]\npreset = \"claude\"\n").unwrap();
        for (key, value) in [
            ("extractor.command", json!(["sh", "-c", "curl example.com"])),
            ("extractor.preset", json!("codex")),
            ("extractor.base_url", json!("http://127.0.0.1:1/v1")),
            ("knowledge.dedup.command", json!(["x"])),
            ("knowledge.curation.preset", json!("claude")),
            ("knowledge.summary.model", json!("opus")),
            ("judge.command", json!(["x"])),
        ] {
            let err = update(&paths, &json!({ key: value })).unwrap_err();
            assert!(format!("{err:?}").contains("config.toml"), "{key}: {err:?}");
        }
        assert_eq!(std::fs::read_to_string(paths.config()).unwrap(), "[extractor]\npreset = \"claude\"\n");
        // Their limits may be changed.
        update(&paths, &json!({"extractor.daily_calls": 50, "knowledge.curation.timeout_ms": 9000})).unwrap();
        let d = describe(&paths).unwrap();
        let fields: Vec<&Value> =
            d["sections"].as_array().unwrap().iter().flat_map(|s| s["fields"].as_array().unwrap()).collect();
        let editable = |k: &str| fields.iter().find(|f| f["key"] == k).map(|f| f["editable"].clone());
        assert_eq!(editable("extractor.preset"), Some(json!(false)));
        assert_eq!(editable("extractor.daily_calls"), Some(json!(true)));
    }

    #[test]
    fn changes_keep_comments_validate_and_reset() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        std::fs::write(paths.config(), "# mine\n[predictor]\nexploration_rate = 0.2 # explore more\n").unwrap();
        update(
            &paths,
            &json!({"predictor.exploration_rate": 0.1, "injection.prompt_k": 4, "privacy.exclude": ["a/**"]}),
        )
        .unwrap();
        let text = std::fs::read_to_string(paths.config()).unwrap();
        assert!(text.starts_with("# mine\n[predictor]\nexploration_rate = 0.1 # explore more\n"), "{text}");
        let c = Config::load(&paths.config()).unwrap();
        assert_eq!((c.predictor.exploration_rate, c.injection.prompt_k), (0.1, 4));
        assert_eq!(c.privacy.exclude, vec!["a/**".to_owned()]);
        // Refused: unknown, wrong type, out of range, cross-field invalid. Nothing written.
        for bad in [
            json!({"predictor.exploraton_rate": 0.1}),
            json!({"predictor.enabled": "yes"}),
            json!({"predictor.exploration_rate": 2}),
            json!({"injection.budget_chars": 20000}),
            json!({"predictor": 1}),
            json!([1]),
        ] {
            let e = update(&paths, &bad).unwrap_err();
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST, "{bad}: {}", e.message);
            assert_eq!(std::fs::read_to_string(paths.config()).unwrap(), text);
        }
        update(&paths, &json!({"predictor.exploration_rate": null})).unwrap();
        assert_eq!(Config::load(&paths.config()).unwrap().predictor.exploration_rate, 0.05);
        let d = describe(&paths).unwrap();
        assert_eq!(d["valid"], true);
        let injection = d["sections"].as_array().unwrap().iter().find(|s| s["section"] == "injection").unwrap();
        let k = injection["fields"].as_array().unwrap().iter().find(|f| f["key"] == "injection.prompt_k").unwrap();
        assert_eq!(
            (k["value"].clone(), k["default"].clone(), k["type"].clone()),
            (json!(4), json!(Config::default().injection.prompt_k), json!("integer"))
        );
    }
}
