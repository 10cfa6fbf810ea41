//! Deterministic memory extraction from friction moments (seed 000,
//! "Extraction Criteria"), with no LLM: a pure function over one session's
//! events plus a lookup of existing memories, returning `memory.added` for
//! new memories and `memory.updated` (`occurrences: 1`, `seen_in`) for
//! near-duplicates of existing ones.
//!
//! What is learned, each as its own self-contained statement:
//!
//! | type | from | text | importance |
//! |---|---|---|---|
//! | `correction` | a user message right after the agent acted that opens with a correction ("no", "don't", "stop", "actually", "wrong"…) or says "I said", "instead of"; any user message right after the user rejected a tool call (and the feedback a rejection carries) | each rule or redirect in it, the opener removed; "(instead of `cmd`)" added when it does not name what it corrects | 0.70, +0.10 for "always", "never", "again", "I said", "I told you" |
//! | `convention` | any other user sentence that states a rule ([`prose::role`]): "always…", "never…", "we use…", "X must…", "use X, not Y", a flagged quirk ("FYI, the staging DB is read-only"); never a request for the task at hand | the sentence, with an explaining sentence that follows it ("It breaks the lockfile.") | 0.60, +0.15 for "always"/"never"/"must", +0.05 when it names an identifier or file |
//! | `gotcha` | a command that failed (or ran and did nothing) and then worked because other commands ran first, because it was changed, or because the same program did it another way ([`commands::fixes`]); or a failure the agent explained in its very next words, on the same subject | "Run `fix` before `cmd` (why)" / "Run `cmd2` instead of `cmd` (why)" / "`cmd` fails with "error": explanation"; the why is the agent's explanation, else the error | 0.55, +0.10 with a named error |
//! | `preference` | a rule or correction that speaks of the user ("I", "me", "my") and names no project, path or command ([`prose::is_personal`]) | the statement, with **no project**: it applies everywhere | 0.70, 0.80 with "always"/"never" |
//! | `struggle` | the same, after two failures or more, or a command that failed twice and passed on a plain retry (flaky) | as above, or "`cmd` is flaky: …" | 0.45 + 0.10 per failure beyond 2, at most 0.75 |
//!
//! Several rules in one message are several memories. Sentences are split
//! at their true boundaries ([`prose::sentences`]); only a rule's own
//! explanation ("because…", "it…") or a "don't X. Use Y." pair is joined,
//! never an error to unrelated agent text. Errors the harness raises about
//! its own tools ("File has not been read yet") and fixes that were code
//! edits (implementation details) are not lessons.
//!
//! Never learned from: `msg.in` whose origin is not the user (`engram`
//! injections, compact summaries, subagent prompts, meta, system and hook
//! text), any text containing the injection marker, agent reasoning, and
//! messages a Gemini `$rewindTo` withdrew. Texts are cut to
//! [`MAX_MEMORY_TEXT`] characters at a word boundary.
//!
//! Tags: languages of the files named in the text (or, failing that, of the
//! session's reads and edits), the tool of a command lesson, and identifiers
//! the text names (`backticked`, `snake_case`, `CamelCase`, `a::path`, file
//! names); at most 8, lower case, sorted.
//!
//! Ids: `MemoryId::derived(&[session key, source event id, type])` (with the
//! statement's ordinal appended for the second and later statements of one
//! event), and event ids derived from the memory id (and, for merges, the
//! session), so extracting the same session again yields the same events.

pub mod commands;
pub mod diagnosis;
pub mod lingua;
pub mod prose;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;
use shared::base::ids::{EventId, MemoryId, SessionKey};
use shared::base::time::Ts;
use shared::storage::event::{
    Body, Event, INJECTION_OPEN, MemoryAdded, MemoryType, MemoryUpdated, SCHEMA_VERSION, origin,
};

use crate::adapter::{WRITER, is_harness_prompt, project_of, typed_text};
use crate::dedup::{self, MemoryLookup};
use crate::redact;
use commands::{Fix, How, Outcome, Status};
use prose::{Role, word_count};
use shared::domain::memory::quality;

pub use prose::sentences;

/// Longest memory text, in characters.
pub const MAX_MEMORY_TEXT: usize = 240;
/// Most memories taken from one user message.
const MAX_PER_MESSAGE: usize = 4;
/// How many events after trouble the agent's diagnosis of it may come.
const TROUBLE_WINDOW: usize = 16;
/// Longest user message learned from (longer ones are pasted logs or documents).
const MAX_MESSAGE_BYTES: usize = 4000;

/// A memory found in a session, before dedup.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Self-contained text.
    pub text: String,
    /// What it holds.
    pub memory_type: MemoryType,
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
    /// Which statement of that event it is (0 for the first).
    pub ordinal: u32,
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
        if self.ordinal == 0 {
            MemoryId::derived(&[self.session.as_str(), self.source_event.as_str(), self.memory_type.as_str()])
        } else {
            let n = self.ordinal.to_string();
            MemoryId::derived(&[self.session.as_str(), self.source_event.as_str(), self.memory_type.as_str(), &n])
        }
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
    /// Candidates alike to a memory of their project, staged for the user.
    pub staged: usize,
}

/// Whether an event's text may be learned from.
pub fn learnable_input(e: &Event) -> Option<&str> {
    match &e.body {
        Body::MsgIn(m) if m.is_user_prompt() && !m.text.contains(INJECTION_OPEN) && !is_harness_prompt(&m.text) => {
            Some(typed_text(&m.text)).filter(|t| !t.is_empty())
        }
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

/// Whether an error says a file or path does not exist (a typo, or the
/// state of the working tree at that moment).
fn missing_path(err: &str) -> bool {
    let e = err.to_lowercase();
    ["pathspec", "did not match any file", "no such file or directory", "cannot find the path", "enoent"]
        .iter()
        .any(|m| e.contains(m))
}

/// Where the last parenthesis, bracket, quote or code span still open at
/// the end of `text` begins.
fn unclosed_at(text: &str) -> Option<usize> {
    let mut parens: Vec<usize> = Vec::new();
    let mut quote: Option<usize> = None;
    let mut tick: Option<usize> = None;
    for (i, c) in text.char_indices() {
        match c {
            '`' => tick = if tick.is_some() { None } else { Some(i) },
            _ if tick.is_some() => {}
            '(' | '[' => parens.push(i),
            ')' | ']' => {
                parens.pop();
            }
            '"' => quote = if quote.is_some() { None } else { Some(i) },
            _ => {}
        }
    }
    [parens.first().copied(), quote, tick].into_iter().flatten().min()
}

/// Cuts to [`MAX_MEMORY_TEXT`] characters at a word boundary, capitalises,
/// and ends with punctuation.
pub fn tidy(text: &str) -> String {
    let t = prose::without_markers(text.trim()).trim();
    let mut out: String = if t.chars().count() > MAX_MEMORY_TEXT {
        let cut: String = t.chars().take(MAX_MEMORY_TEXT).collect();
        let mut at = cut.rfind(' ').unwrap_or(cut.len());
        // Never cut inside a parenthesis, a quote or a code span: drop the
        // whole aside instead.
        if let Some(open) = unclosed_at(&cut[..at]) {
            at = open;
        }
        format!("{}…", cut[..at].trim_end().trim_end_matches([',', ';', ':', '-', '–', '—']).trim_end())
    } else {
        t.to_owned()
    };
    if let Some(first) = out.chars().next()
        && first.is_lowercase()
    {
        let upper: String = first.to_uppercase().collect();
        out.replace_range(..first.len_utf8(), &upper);
    }
    if !out.ends_with(['.', '!', '?', '…', '。', '！', '？']) {
        out.push('.');
    }
    redact::redact_text(&out).into_owned()
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

/// Explanation cues in the agent's words after a failure.
const EXPLANATION_CUES: &[&str] = &[
    "because",
    "the issue is",
    "the problem is",
    "the error is",
    "turns out",
    "it seems",
    "need to",
    "needs to",
    "requires",
    "has to",
    "have to",
    "the fix is",
    "must be",
    "isn't running",
    "is not running",
    "not installed",
    "is missing",
    "instead",
    "only works",
    "only build",
    "expects",
    "assume",
    "is disabled",
    "is off",
    "isn't installed",
    "not available",
    "doesn't exist",
    "does not exist",
    "already in use",
    "is taken",
    "comes from",
];

/// Words too common to tie an explanation to an error.
const COMMON: &[&str] = &[
    "error", "errors", "failed", "fails", "failing", "with", "that", "this", "from", "cannot", "could", "there",
    "when", "the", "and", "not", "found", "have", "need", "needs", "will", "into", "than", "then", "file", "line",
    "code", "command", "which", "what", "some", "because", "should", "would",
];

/// Where a candidate came from, for [`Maker::make`].
struct Maker<'a> {
    session: &'a SessionKey,
    project: &'a Option<String>,
    langs: &'a BTreeSet<String>,
    out: Vec<Candidate>,
    ordinals: BTreeMap<(EventId, MemoryType), u32>,
    /// Every user sentence weighed, with what the rules saw in it, when
    /// asked for ([`notes`]).
    notes: Option<Vec<Note>>,
}

/// One user sentence as extraction weighed it: its text, its cues (see
/// [`cues`]), and whether the rules kept it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Note {
    /// The session.
    pub session: String,
    /// The event the sentence is in.
    pub event: String,
    /// The sentence, a correction's opener removed.
    pub text: String,
    /// What the rules and the message around it say of it.
    pub cues: Vec<&'static str>,
    /// Whether the rules kept it (alone or joined to a neighbour).
    pub kept: bool,
}

impl Maker<'_> {
    /// Records a user sentence when notes are asked for; its index.
    fn note(&mut self, s: &str, role: Role, context: Context<'_>, e: &Event) -> usize {
        let Some(notes) = &mut self.notes else { return 0 };
        notes.push(Note {
            session: self.session.as_str().to_owned(),
            event: e.id.as_str().to_owned(),
            text: s.to_owned(),
            cues: cues(s, role, context),
            kept: false,
        });
        notes.len() - 1
    }

    /// Marks note `i` as kept by the rules.
    fn kept(&mut self, i: usize) {
        if let Some(n) = self.notes.as_mut().and_then(|n| n.get_mut(i)) {
            n.kept = true;
        }
    }

    /// A memory of no project (a general preference).
    fn make_global(&mut self, text: &str, kind: MemoryType, importance: f32, e: &Event) {
        let before = self.out.len();
        self.make(text, kind, importance, None, e);
        for c in &mut self.out[before..] {
            c.project = None;
        }
    }

    fn make(&mut self, text: &str, kind: MemoryType, importance: f32, tool: Option<&str>, e: &Event) {
        if text.contains(INJECTION_OPEN) {
            return;
        }
        let text = tidy(text);
        if word_count(&text) < 3 {
            return;
        }
        // A lesson the user stated must stand alone; a command's lesson is
        // written by us and quotes its error.
        // "Answer in French" says all it needs in three words.
        if tool.is_none()
            && let Some(why) = quality::defect(&text)
            && !(why == quality::Defect::Fragment && lingua::asks_for_language(&text))
        {
            tracing::debug!(text = %text, why = %why, "not a stand-alone lesson");
            return;
        }
        let ordinal = self.ordinals.entry((e.id.clone(), kind)).or_insert(0);
        let n = *ordinal;
        *ordinal += 1;
        self.out.push(Candidate {
            tags: tags_for(&text, tool, self.langs),
            text,
            memory_type: kind,
            importance: importance.clamp(0.0, 1.0),
            project: self.project.clone(),
            session: self.session.clone(),
            source_event: e.id.clone(),
            ordinal: n,
            ts: e.ts,
            source: "extracted".to_owned(),
            embedding: None,
        });
    }
}

/// Finds candidate memories in one session's events (in order).
pub fn candidates(events: &[Event]) -> Vec<Candidate> {
    candidates_in(events, None)
}

/// [`candidates`] of a session whose project is `known` when its events do
/// not say (a turn of a session already recorded: its `session.started` is
/// not among them).
pub fn candidates_in(events: &[Event], known: Option<&str>) -> Vec<Candidate> {
    run(events, known, false).0
}

/// Every user sentence of a session as extraction weighed it (see
/// [`Note`]): what `engram-ingestor extractor sentences` shows.
pub fn notes(events: &[Event], known: Option<&str>) -> Vec<Note> {
    run(events, known, true).1
}

fn run(events: &[Event], known: Option<&str>, with_notes: bool) -> (Vec<Candidate>, Vec<Note>) {
    let Some(session) = events.iter().find_map(|e| e.session.clone()) else {
        return (Vec::new(), Vec::new());
    };
    // The detected project (shared::domain::env) when the events hold one; else the
    // one the projection knows for the session; else the folder name, which
    // the projection maps to the session's detected project.
    let project = events
        .iter()
        .find_map(|e| match &e.body {
            Body::EnvDetected(d) => Some(d.project.clone()),
            _ => None,
        })
        .or_else(|| known.map(str::to_owned))
        .or_else(|| {
            events.iter().find_map(|e| match &e.body {
                Body::SessionStarted(s) => s.project.clone().or_else(|| s.cwd.as_deref().and_then(project_of)),
                Body::Meta(m) if m.label == "cwd" => m.text.as_deref().and_then(project_of),
                _ => None,
            })
        });
    let langs = session_languages(events);
    let skip = rewound(events);
    let outcomes = commands::outcomes(events, &skip);
    let mut maker = Maker {
        session: &session,
        project: &project,
        langs: &langs,
        out: Vec::new(),
        ordinals: BTreeMap::new(),
        notes: with_notes.then(Vec::new),
    };

    // Commands that failed, and what made them work.
    let fixes = commands::fixes(&outcomes);
    for fix in &fixes {
        let explanation = fix
            .failed_at
            .iter()
            .rev()
            .find_map(|&at| explanation(events, at, &skip, fix.error.as_deref(), &fix.failed));
        let (text, kind, importance) = fix_lesson(fix, explanation.as_deref());
        let tool = outcomes.iter().find(|o| o.at == fix.first_failure).map(|o| o.tool.as_str());
        maker.make(&text, kind, importance, tool, &events[fix.first_failure]);
    }
    // Failures the agent explained, when no fix covers them.
    let covered = |o: &Outcome| {
        let g = o.command.as_deref().map(commands::goal);
        fixes.iter().any(|f| {
            o.at >= f.first_failure && o.at <= f.success && g.as_deref() == Some(commands::goal(&f.failed).as_str())
        })
    };
    let mut explained: HashSet<String> = HashSet::new();
    for o in outcomes.iter().filter(|o| o.status == Status::Failed && !covered(o)) {
        let Some(cmd) = o.command.as_deref() else { continue };
        // A failing test is the code's problem; a missing path, the moment's.
        if commands::runs_tests(cmd) {
            continue;
        }
        let Some(err) = commands::error_line(&o.output) else { continue };
        if missing_path(&err) {
            continue;
        }
        let seg = commands::main_segment(cmd);
        if !explained.insert(commands::goal(cmd)) {
            continue;
        }
        if let Some(expl) = explanation(events, o.at, &skip, Some(&err), &seg) {
            let text =
                join(&format!("`{}` fails with \"{}\"", short(&seg, 80), err.trim_end_matches('.')), &expl, ": ");
            let importance = if named_error(&err) { 0.6 } else { 0.5 };
            maker.make(&text, MemoryType::Gotcha, importance, Some(&o.tool), &events[o.at]);
        }
    }

    // Causes the agent found for trouble just before (see [`diagnosis`]).
    // A failed call, or a command whose output opens with an error (converted
    // transcripts often lose exit codes); what a file tool read is code.
    let failed_at: BTreeSet<usize> = outcomes
        .iter()
        .filter(|o| o.status == Status::Failed || o.command.is_some() && diagnosis::troubled(&o.output))
        .map(|o| o.at)
        .collect();
    let mut trouble: Option<usize> = None;
    for (i, e) in events.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        if failed_at.contains(&i) || learnable_input(e).is_some_and(diagnosis::troubled) {
            trouble = Some(i);
            continue;
        }
        let Body::MsgOut(m) = &e.body else { continue };
        if !(m.part.is_empty() || m.part == "text") || trouble.is_none_or(|t| i - t > TROUBLE_WINDOW) {
            continue;
        }
        for s in sentences(&m.text) {
            if let Some(text) = diagnosis::gotcha(&s) {
                maker.make(&short(&text, MAX_MEMORY_TEXT), MemoryType::Gotcha, 0.55, None, e);
            }
        }
    }

    // What the user says.
    let mut acted = false;
    let mut last_action: Option<&Outcome> = None;
    let mut rejected: Option<&Outcome> = None;
    let mut next_outcome = outcomes.iter().peekable();
    for (i, e) in events.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        while let Some(o) = next_outcome.next_if(|o| o.at <= i) {
            last_action = Some(o);
            if o.status == Status::Rejected {
                rejected = Some(o);
                // Feedback given with the rejection is the user's correction.
                if let Some(feedback) = commands::rejection_feedback(&o.output) {
                    user_text(&mut maker, feedback, true, Some(o), &events[o.at]);
                    rejected = None;
                }
            }
        }
        match &e.body {
            Body::MsgOut(_) | Body::ToolCall(_) => acted = true,
            Body::MsgIn(_) => {
                let Some(text) = learnable_input(e) else { continue };
                if text.len() <= MAX_MESSAGE_BYTES {
                    let first = sentences(text).into_iter().next().unwrap_or_default();
                    let correcting = rejected.is_some() || (acted && prose::is_correction(&first, text));
                    user_text(&mut maker, text, correcting, rejected.or(last_action.filter(|_| acted)), e);
                }
                acted = false;
                rejected = None;
            }
            _ => {}
        }
    }
    (maker.out, maker.notes.unwrap_or_default())
}

/// The memories of one user message (see the module docs).
fn user_text(maker: &mut Maker<'_>, text: &str, correcting: bool, action: Option<&Outcome>, e: &Event) {
    // "Can you not use any here?" is kept as "Don't use any here."
    let sents: Vec<String> =
        sentences(text).into_iter().map(|s| prose::prohibition_question(&s).unwrap_or(s)).collect();
    let mut items: Vec<String> = Vec::new();
    // Index in `sents` of the sentence last added to `items`.
    let mut last: Option<usize> = None;
    // The last sentence that stated something without being kept, for a rule
    // that leans on it ("The tests assume UTC. Always run them with TZ=UTC.").
    let mut statement: Option<(usize, &str)> = None;
    let mut content_seen = false;
    let mut correcting = correcting;
    // Whether the last item is a flagged fact ("Careful, the servers are amd64").
    let mut flagged_fact = false;
    // Sentences left in a list a rules intro opened ("Two things about this repo:").
    let mut listing = 0usize;
    // What the sentence before did.
    let mut previous: Option<Role> = None;
    for (k, s) in sents.iter().enumerate() {
        if prose::is_rules_intro(s) {
            listing = MAX_PER_MESSAGE;
            continue;
        }
        let in_list = listing > 0;
        listing = listing.saturating_sub(1);
        let s = if correcting && !content_seen { prose::strip_correction_opener(s) } else { s.as_str() };
        if word_count(s) < 2 {
            continue;
        }
        let mut role = prose::role(s);
        // "Make a task for X. Make sure to mention Y.": what to make sure of
        // after a request, or after a report, belongs to that task.
        if role == Role::Rule && k > 0 && prose::asks_to_ensure(s) && !matches!(previous, Some(Role::Rule) | None) {
            role = Role::Request;
        }
        previous = Some(role);
        // Each item of a list of rules states one ("1. start everything with make up").
        if in_list && matches!(role, Role::Request | Role::Other) {
            role = Role::Rule;
        }
        let first_content = !content_seen;
        content_seen = true;
        let adjacent = last == Some(k.wrapping_sub(1));
        let context = Context { correcting, first_content, in_list, adjacent, k, n: sents.len(), action };
        let note = maker.note(s, role, context, e);
        // "Don't use npm here. Use pnpm." / "We don't use an ORM here. Write the
        // SQL in queries/ and run sqlc generate.": the way out belongs to the rule.
        if adjacent
            && matches!(role, Role::Rule | Role::Request)
            && let Some(prev) = items.last_mut()
            && prose::is_negative(prev)
            && (prose::is_alternative(s) || role == Role::Request)
        {
            *prev = join(prev, s, "; ");
            last = Some(k);
            maker.kept(note);
            continue;
        }
        // "Careful, the servers are amd64. Always build with --platform
        // linux/amd64 here.": the rule is what the warning was about.
        if adjacent
            && role == Role::Rule
            && flagged_fact
            && let Some(prev) = items.last_mut()
        {
            *prev = join(prev, s, "; ");
            last = Some(k);
            maker.kept(note);
            flagged_fact = false;
            continue;
        }
        let take = match role {
            Role::Rule => true,
            // The first words after "no," redirect the agent.
            Role::Request | Role::Other if correcting && first_content => {
                if approves(s) || lingua::approves(s) == Some(true) {
                    correcting = false;
                    false
                } else {
                    word_count(s) >= 3
                        && !prose::says_nothing(s)
                        && !prose::points_at_particular(s)
                        && !prose::is_one_off(s)
                        && !prose::reports_state(s)
                }
            }
            Role::Reason if adjacent => {
                if let Some(prev) = items.last_mut() {
                    *prev = join(prev, s, ", ");
                }
                last = Some(k);
                maker.kept(note);
                continue;
            }
            // "The integration tests are behind the `it` feature. Run them with
            // cargo test --features it.": how to do that kind of work.
            Role::Request
                if statement.is_some_and(|(j, _)| j + 1 == k)
                    && prose::leans_on_context(s)
                    && prose::is_method_request(s) =>
            {
                true
            }
            Role::Other | Role::Reason => {
                statement = Some((k, s));
                false
            }
            _ => false,
        };
        if !take {
            continue;
        }
        match items.last_mut() {
            // "No, stop." then the content: keep them together.
            Some(prev) if adjacent && word_count(prev) < 4 => *prev = join(prev, s, ": "),
            _ => match statement {
                Some((j, said)) if j + 1 == k && prose::leans_on_context(s) => items.push(join(said, s, "; ")),
                _ => items.push(s.to_owned()),
            },
        }
        flagged_fact = role == Role::Rule && prose::is_flagged_fact(s);
        last = Some(k);
        maker.kept(note);
    }
    items.truncate(MAX_PER_MESSAGE);
    for item in items {
        let item = prose::without_trailing_request(prose::without_filler(&item)).to_owned();
        let low = prose::normalize(&item);
        let has = |w: &str| low.split(|c: char| !c.is_alphanumeric()).any(|x| x == w);
        if prose::is_personal(&item) || prose::is_workflow_habit(&item) {
            // The user's own way of working: every project's.
            let imp = if ["always", "never"].iter().any(|w| has(w)) { 0.8 } else { 0.7 };
            maker.make_global(&item, MemoryType::Preference, imp, e);
        } else if correcting {
            // "Revert that and do just rustls": undoing what was just done is
            // about this moment; the lesson, if any, is in the rest of the talk.
            if prose::asks_to_undo(&item) {
                continue;
            }
            let mut t = item.clone();
            let rejected = action.is_some_and(|a| a.status == Status::Rejected);
            if let Some((label, words)) = action.and_then(action_label)
                && !mentions_action(&item, &words)
                && (prose::leans_on_context(&item) || (rejected && !has_identifier(&item)))
            {
                t = format!("{} (instead of {label})", t.trim_end_matches(['.', '!']));
            }
            let strong = ["always", "never", "again"].iter().any(|w| has(w))
                || low.contains("i said")
                || low.contains("i told you");
            maker.make(&t, MemoryType::Correction, if strong { 0.8 } else { 0.7 }, None, e);
        } else {
            let mut imp: f32 = 0.6;
            if ["always", "never", "must"].iter().any(|w| has(w)) {
                imp += 0.15;
            }
            if has_identifier(&item) {
                imp += 0.05;
            }
            maker.make(&item, MemoryType::Convention, imp.min(0.9), None, e);
        }
    }
}

/// Where a user sentence stands, for [`cues`].
#[derive(Clone, Copy)]
struct Context<'a> {
    /// The message corrects what the agent just did.
    correcting: bool,
    /// It is the message's first sentence with content.
    first_content: bool,
    /// It is an item of a list a rules intro opened.
    in_list: bool,
    /// The sentence before it was kept.
    adjacent: bool,
    /// Its index among the message's sentences.
    k: usize,
    /// How many sentences the message has.
    n: usize,
    /// The agent's last action before the message.
    action: Option<&'a Outcome>,
}

/// The cues of a user sentence beside its words: what the prose rules say
/// of it, where it stands in its message, and what the agent did just
/// before.
fn cues(s: &str, role: Role, c: Context<'_>) -> Vec<&'static str> {
    let mut v = vec![match role {
        Role::Rule => "role:rule",
        Role::Request => "role:request",
        Role::Question => "role:question",
        Role::Reason => "role:reason",
        Role::Other => "role:other",
    }];
    let mut flag = |on: bool, name: &'static str| {
        if on {
            v.push(name);
        }
    };
    flag(c.correcting, "correcting");
    flag(c.correcting && c.first_content, "correcting-first");
    flag(c.first_content, "first-content");
    flag(c.in_list, "in-list");
    flag(c.adjacent, "after-kept");
    flag(c.k + 1 == c.n && c.n > 1, "last");
    flag(c.n == 1, "alone");
    flag(prose::is_personal(s), "personal");
    flag(prose::is_workflow_habit(s), "workflow-habit");
    flag(prose::is_negative(s), "negative");
    flag(prose::says_nothing(s), "says-nothing");
    flag(prose::points_at_particular(s), "points-at-particular");
    flag(prose::is_one_off(s), "one-off");
    flag(prose::reports_state(s), "reports-state");
    flag(prose::leans_on_context(s), "leans-on-context");
    flag(prose::asks_to_ensure(s), "asks-to-ensure");
    flag(prose::is_method_request(s), "method-request");
    flag(prose::is_flagged_fact(s), "flagged-fact");
    flag(prose::is_alternative(s), "alternative");
    flag(prose::asks_to_undo(s), "asks-to-undo");
    flag(has_identifier(s), "names-code");
    flag(s.trim_end().ends_with('?'), "question-mark");
    flag(quality::defect(&tidy(s)).is_some(), "defect");
    v.push(match c.n {
        0..=1 => "message:1",
        2..=3 => "message:2-3",
        4..=8 => "message:4-8",
        _ => "message:9+",
    });
    v.push(match word_count(s) {
        0..=4 => "words:-4",
        5..=9 => "words:5-9",
        10..=19 => "words:10-19",
        20..=39 => "words:20-39",
        _ => "words:40-",
    });
    v.push(match c.action {
        None => "after:nothing",
        Some(o) if o.status == Status::Rejected => "after:rejection",
        Some(o) if o.status == Status::Failed => "after:failure",
        Some(o) if o.is_edit() => "after:edit",
        Some(o) if o.command.is_some() => "after:command",
        Some(_) => "after:tool",
    });
    v.push(match lingua::guess(s) {
        lingua::Lang::En => "lang:en",
        lingua::Lang::Zh | lingua::Lang::Ja | lingua::Lang::Ko => "lang:cjk",
        _ => "lang:other",
    });
    v
}

fn approves(s: &str) -> bool {
    let l = prose::core(s);
    [
        "that's fine",
        "that is fine",
        "looks good",
        "that works",
        "sounds good",
        "fine",
        "good",
        "great",
        "perfect",
        "correct",
    ]
    .iter()
    .any(|p| l.starts_with(p))
}

fn join(a: &str, b: &str, sep: &str) -> String {
    let a = a.trim().trim_end_matches(['.', '!']);
    let b = b.trim();
    let mut chars = b.chars();
    let b = match chars.next() {
        // Lower-case the join's second half unless it starts with a name or an acronym.
        Some(c) if c.is_uppercase() && !chars.next().is_some_and(char::is_uppercase) && !b.starts_with("I ") => {
            format!("{}{}", c.to_lowercase(), &b[c.len_utf8()..])
        }
        _ => b.to_owned(),
    };
    format!("{a}{sep}{b}")
}

/// How a correction names the action it corrects ("`npm install x`",
/// "editing `client.ts`"), and the words that identify it.
fn action_label(o: &Outcome) -> Option<(String, String)> {
    if let Some(cmd) = o.command.as_deref() {
        let seg = commands::main_segment(cmd);
        return Some((format!("`{}`", short(&seg, 60)), seg));
    }
    let name = o.file.as_deref()?.rsplit(['/', '\\']).next()?.to_owned();
    o.is_edit().then(|| (format!("editing `{name}`"), name))
}

/// Whether a correction already names the command it corrects.
fn mentions_action(item: &str, action: &str) -> bool {
    let said: BTreeSet<String> =
        item.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-' && c != '.').map(str::to_lowercase).collect();
    action.split_whitespace().filter(|w| w.len() >= 3 && !w.starts_with('-')).any(|w| said.contains(&w.to_lowercase()))
}

/// The lesson of a fix: its text, type and importance. What to do comes
/// first ("Run `docker compose up -d redis` before `npm test`"), then why,
/// in the agent's words when it explained the failure, else the error.
fn fix_lesson(fix: &Fix, explanation: Option<&str>) -> (String, MemoryType, f32) {
    let cmd = short(&fix.failed, 80);
    let error = fix.error.as_deref().map(|e| short(e.trim_end_matches('.'), 100));
    let mut text = match &fix.how {
        How::RanFirst(first) => {
            let list: Vec<String> = first.iter().map(|c| format!("`{}`", short(c, 60))).collect();
            format!("Run {} before `{cmd}`", list.join(" and "))
        }
        How::Changed(now) => format!("Run `{}` instead of `{cmd}`", short(now, 80)),
        How::Retry => {
            let mut t = format!("`{cmd}` is flaky: it failed {} times", fix.failures);
            if let Some(e) = &error {
                t.push_str(&format!(" (\"{e}\")"));
            }
            t.push_str(" before passing on a retry");
            t
        }
        How::Unresolved => match &error {
            Some(e) => format!("`{cmd}` fails with \"{e}\" ({} attempts in one session, never fixed)", fix.failures),
            None => format!("`{cmd}` failed {} times in one session and was never fixed", fix.failures),
        },
    };
    let why = match (explanation, &error, &fix.how) {
        (Some(e), _, _) => Some(join("", e.trim_end_matches('.'), "")),
        (None, Some(e), How::RanFirst(_) | How::Changed(_)) => Some(format!("it fails with \"{e}\" otherwise")),
        _ => None,
    };
    if let Some(why) = why {
        let room = MAX_MEMORY_TEXT.saturating_sub(text.chars().count() + 4);
        if room > 30 {
            text.push_str(&format!(" ({})", short(&why, room)));
        }
    }
    text.push('.');
    let named = fix.error.as_deref().is_some_and(named_error);
    if fix.failures >= 2 {
        (text, MemoryType::Struggle, (0.45 + 0.10 * fix.failures.saturating_sub(2) as f32).min(0.75))
    } else {
        (text, MemoryType::Gotcha, if named { 0.65 } else { 0.55 })
    }
}

fn named_error(line: &str) -> bool {
    line.split(|c: char| !c.is_alphanumeric()).any(|w| {
        (w.len() >= 4 && w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_digit()))
            || (w.ends_with("Error") && w.len() > 5)
            || (w.len() >= 5 && w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_uppercase()))
    })
}

/// The agent's explanation of the failure whose result is `events[at]`: a
/// sentence of its very next text (before it calls another tool or the user
/// speaks) that gives a cause and shares a word with the error or command.
fn explanation(events: &[Event], at: usize, skip: &HashSet<usize>, err: Option<&str>, cmd: &str) -> Option<String> {
    let subject: BTreeSet<String> = content_words(&format!("{} {cmd}", err.unwrap_or("")));
    for (j, e) in events.iter().enumerate().skip(at + 1).take(6) {
        if skip.contains(&j) {
            continue;
        }
        match &e.body {
            Body::MsgOut(m) if m.part.is_empty() || m.part == "text" => {
                let found = sentences(&m.text).into_iter().find(|s| {
                    let low = prose::normalize(s);
                    word_count(s) >= 5
                        && !["let me", "i'll", "i will", "now ", "next", "ok", "great", "perfect", "good", "sure"]
                            .iter()
                            .any(|p| low.starts_with(p))
                        && EXPLANATION_CUES.iter().any(|c| low.contains(c))
                        && !content_words(s).is_disjoint(&subject)
                });
                if found.is_some() {
                    return found.map(|s| short(&s, 160));
                }
            }
            Body::ToolCall(_) | Body::ToolResult(_) => return None,
            Body::MsgIn(m) if m.is_user_prompt() => return None,
            _ => {}
        }
    }
    None
}

/// Lower-case words of four letters or more that are not [`COMMON`].
fn content_words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 4 && !COMMON.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

fn short(s: &str, max: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let cut: String = one.chars().take(max).collect();
    format!("{}…", cut.trim_end())
}

fn session_languages(events: &[Event]) -> BTreeSet<String> {
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
    by_count.into_iter().take(2).map(|(l, _)| l).collect()
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

/// Turns candidates into memory events: new memories, merges into existing
/// near-duplicates, or conflicts staged for the user. Idempotent: a
/// candidate whose derived id exists, or whose duplicate already lists this
/// session, yields nothing; a staged conflict has an id derived from the
/// memory's.
///
/// The write-time similarity step of seed 004 "Conflict Detection", with the
/// lookup's threshold (`None`: off): more than 0.95 alike to any memory is a
/// duplicate (one more occurrence, nothing saved, as on save); more than the
/// conflict threshold alike to a memory **of the candidate's own project**
/// (`MemoryLookup::same_project`) is staged (`knowledge.staged`,
/// `needs_clarification`), surfaced at the next prompt. Likeness to memories
/// of other projects never stages anything: there, seed 000's inline dedup
/// decides as before (merged when cosine ≥ 0.85 or word overlap ≥ 0.70, else
/// its own memory), so lessons seen across projects do not flood the user.
pub fn resolve(cands: Vec<Candidate>, lookup: &dyn MemoryLookup) -> Extraction {
    let (cands, mut skipped) = dedup_within(cands);
    let mut ex = Extraction::default();
    let threshold = lookup.conflict_threshold();
    for c in cands {
        let id = c.memory_id();
        let existing = lookup.candidates(&c.text, &id);
        if existing.iter().any(|m| m.id == id) {
            skipped += 1;
            continue;
        }
        let emb = c.embedding.as_deref();
        // Seed 004 over the whole store for duplicates, over this project for conflicts.
        let (mut dup, mut conflict) = (None, None);
        if threshold.is_some() {
            match dedup::classify(&c.text, emb, &existing, threshold) {
                dedup::Classified::Duplicate(d, _) => dup = Some(d),
                _ => {
                    let own: Vec<dedup::ExistingMemory> = existing
                        .iter()
                        .filter(|m| lookup.same_project(c.project.as_deref(), &c.session, m.project.as_deref()))
                        .cloned()
                        .collect();
                    if let dedup::Classified::Conflict(m, s) = dedup::classify(&c.text, emb, &own, threshold) {
                        conflict = Some((m.clone(), s));
                    }
                }
            }
        }
        if conflict.is_none() && dup.is_none() {
            dup = dedup::best_duplicate(&c.text, emb, &existing);
        }
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
        if let Some((with, _)) = &conflict
            && (with.sessions.contains(&c.session) || lookup.already_staged(&c.text, &with.id))
        {
            // Learned again in a session the alike memory already came from
            // (the session said it once), or already waiting for the user
            // against the same memory: nothing new to ask.
            skipped += 1;
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
        if let Some((with, similarity)) = conflict {
            ex.events.push(dedup::conflict_event(memory, &with, similarity, c.ts));
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

/// [`extract`] for a session whose project is `known` (see [`candidates_in`]).
pub fn extract_in(events: &[Event], known: Option<&str>, lookup: &dyn MemoryLookup) -> Extraction {
    resolve(candidates_in(events, known), lookup)
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
    fn tidy_cuts_capitalises_and_redacts() {
        assert_eq!(tidy("use `cargo nextest`"), "Use `cargo nextest`.");
        let long = "word ".repeat(100);
        assert!(tidy(&long).chars().count() <= MAX_MEMORY_TEXT + 1);
        assert_eq!(tidy("api_key=abc123 is set"), "Api_key=[REDACTED:api_key] is set.");
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
