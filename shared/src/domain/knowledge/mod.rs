//! Seed 004's memory model on the tape log: knowledge types, the knowledge
//! graph and its discovery engine, conflict detection with the observation
//! buffer, conversations that are stashed and resumed, checkpoints,
//! topic-shift detection and summaries; and seed 000's dedup merge log.
//!
//! Every change is an event (`knowledge.*`, `conversation.*`,
//! `checkpoint.created`, `topic.shift`, `session.summarized`,
//! `memory.merged`, `dedup.checked`) whose apply lives in [`apply`]; the
//! tables are migration 0009's. Writers build those events here and append
//! them through the journal (or a hook's spool); readers (MCP, CLI, hooks,
//! a web UI) query the projection through the functions of each module.
//!
//! * [`graph`] — edges, traversals, derivation chains.
//! * [`similarity`] — how alike two memories are (the one measure used by
//!   conflicts, discovery and dedup).
//! * [`discovery`] — the discovery engine: edges for a new memory.
//! * [`buffer`] — conflict detection on write, the observation buffer, and
//!   resolving a staged memory.
//! * [`conversation`] — stash and resume; [`checkpoint`] — save points and
//!   destructive commands; [`topic`] — topic-shift detection.
//! * [`curation`] — the curation of the buffer at the end of a session (its
//!   `pending` entries).
//! * [`summary`] — session summaries; [`prompt`] — what the prompt and
//!   tool hooks add (a surfaced conflict, a stash suggestion, a checkpoint).
//! * [`ops`] — the writers' commands: save through conflict detection and
//!   discovery, resolve a staged memory.

pub mod apply;
pub mod buffer;
pub mod checkpoint;
pub mod conversation;
pub mod curation;
pub mod discovery;
pub mod graph;
pub mod ops;
pub mod prompt;
pub mod similarity;
pub mod summary;
pub mod topic;

/// Prefix of checkpoint ids (seed 004 `fork_`).
pub const CHECKPOINT_PREFIX: &str = "fork_";
/// Prefix of conversation ids (seed 004 `conv_`).
pub const CONVERSATION_PREFIX: &str = "conv_";
/// Prefix of observation-buffer entries (seed 004 `obs_`).
pub const STAGE_PREFIX: &str = "obs_";

/// `text` on one line, cut to `max` characters (with an ellipsis).
pub fn preview(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_one_line_and_cut() {
        assert_eq!(preview("a  b\nc", 10), "a b c");
        assert_eq!(preview("héllo world", 5), "héllo…");
    }
}
