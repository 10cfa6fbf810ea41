//! Deterministic memory extraction from friction moments (seed 000), with no
//! LLM: a pure function over one session's events plus a lookup of existing
//! memories, returning `memory.added` for new memories and `memory.updated`
//! (`occurrences: 1`, `seen_in`) for near-duplicates of existing ones.
//!
//! What is learned from:
//!
//! | type | trigger | text | importance |
//! |---|---|---|---|
//! | `correction` | a user message after agent activity whose first sentence opens with "no", "nope", "don't", "do not", "stop", "wrong", "that's wrong/not", "not like that", "actually", "instead", or contains "I said"/"I told you"/"instead of" | that sentence (a leading "no,"/"nope," removed; the next sentence appended if it is shorter than 4 words) | 0.70, +0.10 when it says "always", "never", "again", "I said" or "I told you" |
//! | `convention` | any other user sentence of 4–40 words, not a question, that opens with "always", "never", "don't", "do not", "prefer", "make sure", "we use", "we always", "we never", "we prefer", "we don't", "in this repo/project/codebase", or contains "always", "never", "we use", "our convention" | the sentence | 0.60, +0.15 for "always"/"never"/"must", +0.05 when it names an identifier or file |
//! | `struggle` | ≥ 2 failing tool results of the same shape (tool + first two command words, or tool + file) followed by a success of that shape | "`shape` failed N times before it succeeded; last error: …" | 0.45 + 0.10 per failure beyond 2, at most 0.75 |
//! | `gotcha` | a failing tool result with an error line, followed within 6 events by an agent sentence explaining it ("because", "the issue/problem is", "turns out", "need(s) to", "requires", "instead", "has to") | "error line — explanation" | 0.50, +0.10 when the error line has an error code or a `…Error` name |
//!
//! Never learned from: `msg.in` whose origin is not the user (`engram`
//! injections, compact summaries, subagent prompts, meta, system and hook
//! text), any text containing the injection marker, agent reasoning, and
//! messages a Gemini `$rewindTo` withdrew. Texts are cut to
//! [`MAX_MEMORY_TEXT`] characters at a word boundary.
//!
//! Tags: languages of the files named in the text (or, failing that, of the
//! session's reads and edits), the tool of a struggle or gotcha, and
//! identifiers the text names (`backticked`, `snake_case`, `CamelCase`,
//! `a::path`, file names); at most 8, lower case, sorted.
//!
//! Ids: `MemoryId::derived(&[session key, source event id, type])`, and
//! event ids derived from the memory id (and, for merges, the session), so
//! extracting the same session again yields the same events.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;
use shared::event::{Body, Event, INJECTION_OPEN, MemoryAdded, MemoryUpdated, SCHEMA_VERSION, memory_type, origin};
use shared::ids::{EventId, MemoryId, SessionKey};
use shared::time::Ts;

use crate::adapter::{WRITER, project_of};
use crate::dedup::{self, MemoryLookup};
use crate::redact;

/// Longest memory text, in characters.
pub const MAX_MEMORY_TEXT: usize = 240;

/// A memory found in a session, before dedup.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Self-contained text.
    pub text: String,
    /// See [`memory_type`].
    pub memory_type: String,
    /// 0..=1.
    pub importance: f32,
    /// Project of the session.
    pub project: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The session.
    pub session: SessionKey,
    /// The event that triggered it.
    pub source_event: EventId,
    /// Its time.
    pub ts: Ts,
    /// How it was found: `extracted` or `external`.
    pub source: String,
    /// An embedding, when the caller computed one.
    pub embedding: Option<Vec<f32>>,
}

impl Candidate {
    /// Its derived id.
    pub fn memory_id(&self) -> MemoryId {
        MemoryId::derived(&[self.session.as_str(), self.source_event.as_str(), &self.memory_type])
    }
}

/// What extraction produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extraction {
    /// `memory.added` and `memory.updated` events, in order.
    pub events: Vec<Event>,
    /// New memories.
    pub added: usize,
    /// Merges into existing memories.
    pub merged: usize,
    /// Candidates dropped as duplicates within the session or as already
    /// extracted.
    pub skipped: usize,
    /// Candidates alike to a stored memory, staged for the user to resolve.
    pub staged: usize,
}

/// Whether an event's text may be learned from.
pub fn learnable_input(e: &Event) -> Option<&str> {
    match &e.body {
        Body::MsgIn(m) if m.is_user_prompt() && !m.text.contains(INJECTION_OPEN) => Some(&m.text),
        _ => None,
    }
}

/// Indices of events withdrawn by a rewind (`meta` `rewind` with `to`).
fn rewound(events: &[Event]) -> HashSet<usize> {
    let mut out = HashSet::new();
    for (i, e) in events.iter().enumerate() {
        let Body::Meta(m) = &e.body else { continue };
        if m.label != "rewind" {
            continue;
        }
        let Some(to) = m.fields.get("to").and_then(Value::as_str) else {
            continue;
        };
        let start = events[..i].iter().position(|x| match &x.body {
            Body::MsgIn(b) => b.uuid.as_deref() == Some(to),
            Body::MsgOut(b) => b.uuid.as_deref() == Some(to),
            _ => false,
        });
        if let Some(s) = start {
            out.extend(s..i);
        }
    }
    out
}

/// Splits text into sentences (fenced code blocks dropped).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut cur = String::new();
        let chars: Vec<char> = line.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            cur.push(c);
            let end = matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|n| n.is_whitespace());
            if end {
                let s = cur.trim().to_owned();
                if !s.is_empty() {
                    out.push(s);
                }
                cur.clear();
            }
        }
        let s = cur.trim().to_owned();
        if !s.is_empty() {
            out.push(s);
        }
    }
    out
}

fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Cuts to [`MAX_MEMORY_TEXT`] characters at a word boundary, capitalises,
/// and ends with punctuation.
pub fn tidy(text: &str) -> String {
    let t = text.trim().trim_start_matches(['-', '*', '>', ' ']).trim();
    let mut out: String = if t.chars().count() > MAX_MEMORY_TEXT {
        let cut: String = t.chars().take(MAX_MEMORY_TEXT).collect();
        let at = cut.rfind(' ').unwrap_or(cut.len());
        format!("{}…", cut[..at].trim_end_matches([',', ';', ':']))
    } else {
        t.to_owned()
    };
    if let Some(first) = out.chars().next()
        && first.is_lowercase()
    {
        let upper: String = first.to_uppercase().collect();
        out.replace_range(..first.len_utf8(), &upper);
    }
    if !out.ends_with(['.', '!', '?', '…']) {
        out.push('.');
    }
    redact::redact_text(&out).into_owned()
}

const CORRECTION_OPENERS: &[&str] = &[
    "no,",
    "no.",
    "no ",
    "nope",
    "don't",
    "dont ",
    "do not",
    "stop ",
    "stop,",
    "wrong",
    "that's wrong",
    "that is wrong",
    "that's not",
    "that is not",
    "not like that",
    "actually,",
    "instead",
];
const CORRECTION_ANYWHERE: &[&str] = &["i said", "i told you", "instead of"];
const CONVENTION_OPENERS: &[&str] = &[
    "always ",
    "never ",
    "don't ",
    "do not ",
    "prefer ",
    "make sure ",
    "we use ",
    "we always ",
    "we never ",
    "we prefer ",
    "we don't ",
    "in this repo",
    "in this project",
    "in this codebase",
];
const CONVENTION_ANYWHERE: &[&str] = &[" always ", " never ", "we use ", "our convention"];

fn strip_opener(s: &str) -> &str {
    let lower = s.to_lowercase();
    for p in ["no, ", "no. ", "nope, ", "nope. ", "no ", "actually, ", "wrong, ", "wrong. "] {
        if lower.starts_with(p) {
            return s[p.len()..].trim_start();
        }
    }
    s
}

fn strip_politeness(lower: &str) -> &str {
    let mut l = lower;
    for p in ["please ", "also, ", "also ", "and ", "remember: ", "remember, ", "note: "] {
        if let Some(rest) = l.strip_prefix(p) {
            l = rest;
        }
    }
    l
}

fn has_identifier(s: &str) -> bool {
    s.contains('`')
        || s.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '.' && c != ':');
            w.contains('_') || w.contains("::") || is_file_name(w) || is_camel(w)
        })
}

fn is_camel(w: &str) -> bool {
    let mut chars = w.chars();
    chars.next().is_some_and(char::is_alphabetic)
        && w.chars().skip(1).any(char::is_uppercase)
        && w.chars().any(char::is_lowercase)
        && w.chars().all(char::is_alphanumeric)
}

fn is_file_name(w: &str) -> bool {
    w.rsplit_once('.').is_some_and(|(stem, ext)| !stem.is_empty() && language_of_ext(ext).is_some())
}

fn language_of_ext(ext: &str) -> Option<&'static str> {
    Some(match ext.to_ascii_lowercase().as_str() {
        "rs" => "rust",
        "py" => "python",
        "ts" | "tsx" => "typescript",
        "js" | "jsx" | "mjs" | "cjs" => "javascript",
        "go" => "go",
        "java" => "java",
        "kt" => "kotlin",
        "rb" => "ruby",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" | "cxx" => "cpp",
        "cs" => "csharp",
        "swift" => "swift",
        "php" => "php",
        "sh" | "bash" => "shell",
        "sql" => "sql",
        "md" => "markdown",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "json" => "json",
        "html" => "html",
        "css" | "scss" => "css",
        _ => return None,
    })
}

fn languages_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | ';'))
        .filter_map(|w| {
            let w = w.trim_end_matches(['.', ':']);
            let (_, ext) = w.rsplit_once('.')?;
            language_of_ext(ext).map(str::to_owned)
        })
        .collect()
}

fn identifiers_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(a) = rest.find('`') {
        let after = &rest[a + 1..];
        let Some(b) = after.find('`') else { break };
        let id = after[..b].trim();
        if !id.is_empty() && id.len() <= 40 && !id.contains(' ') {
            out.push(id.to_lowercase());
        }
        rest = &after[b + 1..];
    }
    for w in text.split_whitespace() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != ':' && c != '.');
        let w = w.trim_end_matches('.');
        if w.len() > 2 && w.len() <= 40 && (w.contains('_') || w.contains("::") || is_camel(w) || is_file_name(w)) {
            out.push(w.to_lowercase());
        }
    }
    out
}

/// Tags for a memory text.
fn tags_for(text: &str, tool: Option<&str>, session_langs: &BTreeSet<String>) -> Vec<String> {
    let mut tags: BTreeSet<String> = languages_in(text);
    if tags.is_empty() {
        tags.extend(session_langs.iter().take(2).cloned());
    }
    if let Some(t) = tool.filter(|t| !t.is_empty()) {
        tags.insert(t.to_lowercase());
    }
    for id in identifiers_in(text) {
        if tags.len() >= 8 {
            break;
        }
        tags.insert(id);
    }
    tags.into_iter().take(8).collect()
}

/// The "shape" of a tool call: tool plus its first two command words, or
/// tool plus file name.
fn call_shape(tool: &str, args: &Value) -> String {
    // `bash -lc "<script>"`: the script is what matters.
    let cmd = command_of(args);
    if let Some(cmd) = cmd {
        let words: Vec<&str> = cmd.split_whitespace().filter(|w| !w.contains('=')).take(2).collect();
        return format!("{tool}: {}", words.join(" "));
    }
    let file =
        ["file_path", "path", "filePath", "absolute_path"].iter().find_map(|k| args.get(*k).and_then(Value::as_str));
    match file {
        Some(f) => format!("{tool}: {}", f.rsplit(['/', '\\']).next().unwrap_or(f)),
        None => tool.to_owned(),
    }
}

fn command_of(args: &Value) -> Option<String> {
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

fn error_line(text: &str) -> Option<String> {
    let l = text.lines().map(str::trim).find(|l| {
        let low = l.to_lowercase();
        word_count(l) >= 3
            && (low.contains("error")
                || low.contains("failed")
                || low.contains("exception")
                || low.contains("not found")
                || low.contains("cannot")
                || low.contains("denied"))
    })?;
    let l = l.trim_start_matches("<tool_use_error>").trim_end_matches("</tool_use_error>");
    let cut: String = l.chars().take(140).collect();
    Some(cut)
}

fn has_error_code(line: &str) -> bool {
    line.split(|c: char| !c.is_alphanumeric()).any(|w| {
        (w.len() >= 4 && w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_digit()))
            || (w.ends_with("Error") && w.len() > 5)
            || (w.len() >= 5 && w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_uppercase()))
    })
}

const EXPLANATION_CUES: &[&str] = &[
    "because",
    "the issue is",
    "the problem is",
    "turns out",
    "need to",
    "needs to",
    "requires",
    "instead",
    "has to",
    "have to",
    "the fix is",
];

/// Finds candidate memories in one session's events (in order).
pub fn candidates(events: &[Event]) -> Vec<Candidate> {
    let Some(session) = events.iter().find_map(|e| e.session.clone()) else {
        return Vec::new();
    };
    // The detected project (shared::env) when the events hold one; else the
    // folder name, which the projection maps to the session's detected project.
    let project = events
        .iter()
        .find_map(|e| match &e.body {
            Body::EnvDetected(d) => Some(d.project.clone()),
            _ => None,
        })
        .or_else(|| {
            events.iter().find_map(|e| match &e.body {
                Body::SessionStarted(s) => s.project.clone().or_else(|| s.cwd.as_deref().and_then(project_of)),
                Body::Meta(m) if m.label == "cwd" => m.text.as_deref().and_then(project_of),
                _ => None,
            })
        });
    let mut langs: BTreeMap<String, usize> = BTreeMap::new();
    for e in events {
        let file = match &e.body {
            Body::CodeRead(r) => &r.file,
            Body::CodeEdit(c) => &c.file,
            _ => continue,
        };
        if let Some(l) = file.rsplit_once('.').and_then(|(_, ext)| language_of_ext(ext)) {
            *langs.entry(l.to_owned()).or_insert(0) += 1;
        }
    }
    let mut by_count: Vec<(String, usize)> = langs.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let session_langs: BTreeSet<String> = by_count.into_iter().take(2).map(|(l, _)| l).collect();
    let skip = rewound(events);
    let mut out = Vec::new();
    let make = |text: String, kind: &str, importance: f32, tool: Option<&str>, e: &Event, out: &mut Vec<Candidate>| {
        let text = tidy(&text);
        if word_count(&text) < 3 {
            return;
        }
        out.push(Candidate {
            tags: tags_for(&text, tool, &session_langs),
            text,
            memory_type: kind.to_owned(),
            importance: importance.clamp(0.0, 1.0),
            project: project.clone(),
            session: session.clone(),
            source_event: e.id.clone(),
            ts: e.ts,
            source: "extracted".to_owned(),
            embedding: None,
        });
    };

    let mut agent_active = false;
    let mut calls: BTreeMap<String, (String, Value)> = BTreeMap::new();
    // shape -> (failures, last error line, last failing command)
    let mut failing: BTreeMap<String, (u32, Option<String>, Option<String>)> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        match &e.body {
            Body::MsgOut(_) => agent_active = true,
            Body::ToolCall(c) => {
                agent_active = true;
                calls.insert(c.call_id.clone(), (c.tool.clone(), c.args.clone()));
            }
            Body::ToolResult(r) => {
                let (tool, args) = calls.get(&r.call_id).cloned().unwrap_or_else(|| (r.tool.clone(), Value::Null));
                let shape = call_shape(&tool, &args);
                let failed = r.is_error || r.exit.is_some_and(|x| x != 0);
                if failed {
                    let err = error_line(&r.stdout).or_else(|| error_line(&r.stderr));
                    let entry = failing.entry(shape.clone()).or_insert((0, None, None));
                    entry.0 += 1;
                    entry.1.clone_from(&err);
                    entry.2 = command_of(&args);
                    if let Some(err) = err {
                        gotcha(events, i, &skip, &err, &tool, e, &mut out, &make);
                    }
                } else if let Some((n, err, last_cmd)) = failing.remove(&shape)
                    && n >= 2
                {
                    let mut text = format!("`{shape}` failed {n} times before it succeeded");
                    if let Some(err) = err {
                        text.push_str(&format!("; last error: {err}"));
                    }
                    if let Some(cmd) = command_of(&args).filter(|c| Some(c) != last_cmd.as_ref()) {
                        let c: String = cmd.chars().take(80).collect();
                        text.push_str(&format!("; it worked as `{c}`"));
                    }
                    let importance = 0.45 + 0.10 * (n.saturating_sub(2) as f32);
                    make(text, memory_type::STRUGGLE, importance.min(0.75), Some(&tool), e, &mut out);
                }
            }
            Body::MsgIn(_) => {
                let Some(text) = learnable_input(e) else {
                    continue;
                };
                if text.len() > 4000 {
                    continue;
                }
                let sents = sentences(text);
                let mut used = None;
                if agent_active && let Some(first) = sents.first() {
                    let low = first.to_lowercase();
                    let opens = CORRECTION_OPENERS.iter().any(|p| low.starts_with(p));
                    let anywhere = CORRECTION_ANYWHERE.iter().any(|p| low.contains(p));
                    if opens || anywhere {
                        let mut t = strip_opener(first).to_owned();
                        if word_count(&t) < 4
                            && let Some(next) = sents.get(1)
                        {
                            t = format!("{} {next}", t.trim_end_matches(['.', '!']).trim());
                            used = Some(1);
                        }
                        let strong =
                            ["always", "never", "again", "i said", "i told you"].iter().any(|w| low.contains(w));
                        make(t, memory_type::CORRECTION, if strong { 0.8 } else { 0.7 }, None, e, &mut out);
                        used = Some(used.unwrap_or(0));
                    }
                }
                for (k, s) in sents.iter().enumerate() {
                    if used.is_some_and(|u| k <= u) || s.ends_with('?') {
                        continue;
                    }
                    let n = word_count(s);
                    if !(4..=40).contains(&n) {
                        continue;
                    }
                    let low = s.to_lowercase();
                    let l = strip_politeness(&low);
                    let hit = CONVENTION_OPENERS.iter().any(|p| l.starts_with(p))
                        || CONVENTION_ANYWHERE.iter().any(|p| format!(" {l}").contains(p));
                    if !hit {
                        continue;
                    }
                    let mut imp: f32 = 0.6;
                    if ["always", "never", "must"]
                        .iter()
                        .any(|w| low.split_whitespace().any(|x| x.trim_matches(|c: char| !c.is_alphanumeric()) == *w))
                    {
                        imp += 0.15;
                    }
                    if has_identifier(s) {
                        imp += 0.05;
                    }
                    make(s.clone(), memory_type::CONVENTION, imp.min(0.9), None, e, &mut out);
                }
            }
            _ => {}
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn gotcha(
    events: &[Event],
    i: usize,
    skip: &HashSet<usize>,
    err: &str,
    tool: &str,
    source: &Event,
    out: &mut Vec<Candidate>,
    make: &impl Fn(String, &str, f32, Option<&str>, &Event, &mut Vec<Candidate>),
) {
    for (j, e) in events.iter().enumerate().skip(i + 1).take(6) {
        if skip.contains(&j) {
            continue;
        }
        match &e.body {
            Body::MsgOut(m) if m.part.is_empty() || m.part == "text" => {
                let found = sentences(&m.text).into_iter().find(|s| {
                    let low = s.to_lowercase();
                    word_count(s) >= 4
                        && !["let me", "i'll", "i will", "now ", "next,"].iter().any(|p| low.starts_with(p))
                        && EXPLANATION_CUES.iter().any(|c| low.contains(c))
                });
                if let Some(expl) = found {
                    let expl: String = expl.chars().take(160).collect();
                    let imp = if has_error_code(err) { 0.6 } else { 0.5 };
                    make(
                        format!("{} — {expl}", err.trim_end_matches('.')),
                        memory_type::GOTCHA,
                        imp,
                        Some(tool),
                        source,
                        out,
                    );
                    return;
                }
            }
            Body::MsgIn(m) if m.is_user_prompt() => return,
            _ => {}
        }
    }
}

/// Drops later candidates that duplicate an earlier one of the same session
/// (keeping the more important; the first on ties).
fn dedup_within(cands: Vec<Candidate>) -> (Vec<Candidate>, usize) {
    let mut kept: Vec<Candidate> = Vec::new();
    let mut dropped = 0;
    for c in cands {
        let dup = kept
            .iter()
            .position(|k| dedup::similarity(&k.text, k.embedding.as_deref(), &c.text, c.embedding.as_deref()).1);
        match dup {
            Some(p) => {
                dropped += 1;
                if c.importance > kept[p].importance {
                    kept[p] = c;
                }
            }
            None => kept.push(c),
        }
    }
    (kept, dropped)
}

/// Turns candidates into memory events: new memories, or merges into
/// existing near-duplicates. Idempotent: a candidate whose derived id exists,
/// or whose duplicate already lists this session, yields nothing.
pub fn resolve(cands: Vec<Candidate>, lookup: &dyn MemoryLookup) -> Extraction {
    let (cands, mut skipped) = dedup_within(cands);
    let mut ex = Extraction::default();
    for c in cands {
        let id = c.memory_id();
        let existing = lookup.candidates(&c.text, &id);
        if existing.iter().any(|m| m.id == id) {
            skipped += 1;
            continue;
        }
        let (dup, conflict) =
            match dedup::classify(&c.text, c.embedding.as_deref(), &existing, lookup.conflict_threshold()) {
                dedup::Classified::Duplicate(d, _) => (Some(d), None),
                dedup::Classified::Conflict(m, s) => (None, Some((m, s))),
                dedup::Classified::New => (None, None),
            };
        if let Some(dup) = dup {
            if dup.sessions.contains(&c.session) {
                skipped += 1;
                continue;
            }
            ex.events.push(Event {
                v: SCHEMA_VERSION,
                id: EventId::derived(&[dup.id.as_str(), c.session.as_str(), "memory.merged"]),
                ts: c.ts,
                writer: WRITER.to_owned(),
                session: Some(c.session.clone()),
                body: Body::MemoryUpdated(MemoryUpdated {
                    memory_id: dup.id.clone(),
                    occurrences: 1,
                    seen_in: Some(c.session.clone()),
                    ..MemoryUpdated::default()
                }),
            });
            ex.merged += 1;
            continue;
        }
        let memory = MemoryAdded {
            memory_id: id.clone(),
            content: c.text,
            memory_type: c.memory_type,
            importance: c.importance,
            project: c.project,
            tags: c.tags,
            pinned: false,
            source: c.source,
            source_session: Some(c.session.clone()),
            source_event: Some(c.source_event),
            speaker: None,
        };
        // Alike to a stored memory: staged for the user (seed 004 "Conflict Detection").
        if let Some((with, similarity)) = conflict {
            ex.events.push(dedup::conflict_event(memory, with, similarity, c.ts));
            ex.staged += 1;
            continue;
        }
        ex.events.push(Event {
            v: SCHEMA_VERSION,
            id: EventId::derived(&[id.as_str(), "memory.added"]),
            ts: c.ts,
            writer: WRITER.to_owned(),
            session: Some(c.session),
            body: Body::MemoryAdded(memory),
        });
        ex.added += 1;
    }
    ex.skipped = skipped;
    ex
}

/// Extracts a session's memories and resolves them against `lookup`.
pub fn extract(events: &[Event], lookup: &dyn MemoryLookup) -> Extraction {
    resolve(candidates(events), lookup)
}

/// Whether `origin` is one extraction never learns from.
pub fn is_excluded_origin(o: &str) -> bool {
    matches!(
        o,
        origin::ENGRAM
            | origin::COMPACT_SUMMARY
            | origin::SUBAGENT_PROMPT
            | origin::META
            | origin::SYSTEM
            | origin::HOOK
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_split_and_tidy() {
        assert_eq!(
            sentences("No, use pnpm. We never use npm here!\n```\nnpm i\n```\nok?"),
            vec!["No, use pnpm.", "We never use npm here!", "ok?"]
        );
        assert_eq!(tidy("use `cargo nextest`"), "Use `cargo nextest`.");
        let long = "word ".repeat(100);
        assert!(tidy(&long).chars().count() <= MAX_MEMORY_TEXT + 1);
        assert_eq!(tidy("api_key=abc123 is set"), "Api_key=[REDACTED:api_key] is set.");
    }

    #[test]
    fn shapes_group_commands() {
        let a = serde_json::json!({"command": "cargo test -p x"});
        let b = serde_json::json!({"command": ["bash", "-lc", "cargo test --all"]});
        assert_eq!(call_shape("Bash", &a), "Bash: cargo test");
        assert_eq!(call_shape("shell", &b), "shell: cargo test");
        assert_eq!(call_shape("Read", &serde_json::json!({"file_path": "/a/b.rs"})), "Read: b.rs");
    }

    #[test]
    fn tags_name_languages_and_identifiers() {
        let t =
            tags_for("Run `cargo fmt` before editing src/main.rs and parse_config.", Some("Bash"), &BTreeSet::new());
        assert!(t.contains(&"rust".to_owned()), "{t:?}");
        assert!(t.contains(&"bash".to_owned()));
        assert!(t.contains(&"cargo".to_owned()) || t.contains(&"parse_config".to_owned()), "{t:?}");
    }
}
