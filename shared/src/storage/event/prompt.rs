//! What a user turn's text holds besides what the user typed: context blocks
//! a harness or an IDE put before it, and whole turns a harness wrote in the
//! user's name. Both are context, never the user's words: extraction does not
//! learn from them and provenance does not count them as a session's head.

/// Tags of context a harness or an IDE puts before what the user typed, in
/// the same turn (an open file, a selection, a system reminder, Engram's own
/// context).
pub const CONTEXT_TAGS: &[&str] = &[
    "system-reminder",
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "user-prompt-submit-hook",
    "environment_context",
    "engram-context",
];

/// The text the user typed in a turn: `text` without the context blocks a
/// harness put before it (see [`CONTEXT_TAGS`]).
pub fn typed_text(text: &str) -> &str {
    split_context(text).1
}

/// Splits the context blocks at the start of a user turn (see
/// [`CONTEXT_TAGS`]) from the text that follows them.
pub fn split_context(text: &str) -> (Vec<&str>, &str) {
    let mut context = Vec::new();
    let mut rest = text.trim_start();
    while let Some(tag) = CONTEXT_TAGS.iter().find(|t| rest.strip_prefix('<').is_some_and(|r| r.starts_with(*t))) {
        let close = format!("</{tag}>");
        let Some(end) = rest.find(&close) else { break };
        let end = end + close.len();
        context.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    (context, rest)
}

/// Beginnings of turns a harness writes in the user's name: a notification
/// that a background task finished, a plan-mode build request, the built-in
/// `/init` prompt of Claude Code.
const HARNESS_PROMPTS: &[&str] = &[
    "<system_notification>",
    "<task-notification>",
    "<user_query>",
    "Implement the plan as specified, it is attached for your reference.",
    "Please analyze this codebase and create a CLAUDE.md file",
];

/// Whether a user turn's text was written by the harness, not the user
/// (see [`HARNESS_PROMPTS`]); such a turn is context, never a lesson.
pub fn is_harness_prompt(text: &str) -> bool {
    let t = typed_text(text);
    HARNESS_PROMPTS.iter().any(|p| t.starts_with(p))
}
