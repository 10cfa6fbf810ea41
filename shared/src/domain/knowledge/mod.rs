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
//! * [`summary`] — session summaries; [`prompt`] — what the prompt and
//!   tool hooks add (a surfaced conflict, a stash suggestion, a checkpoint).
//! * [`ops`] — the writers' commands: save through conflict detection and
//!   discovery, resolve a staged memory.

pub mod apply;
pub mod buffer;
pub mod checkpoint;
pub mod conversation;
pub mod discovery;
pub mod graph;
pub mod ops;
pub mod prompt;
pub mod similarity;
pub mod summary;
pub mod topic;

use crate::storage::event::memory_type;

/// Prefix of checkpoint ids (seed 004 `fork_`).
pub const CHECKPOINT_PREFIX: &str = "fork_";
/// Prefix of conversation ids (seed 004 `conv_`).
pub const CONVERSATION_PREFIX: &str = "conv_";
/// Prefix of observation-buffer entries (seed 004 `obs_`).
pub const STAGE_PREFIX: &str = "obs_";

/// Seed 004's seven knowledge types.
pub const KNOWLEDGE_TYPES: [&str; 7] = [
    memory_type::FACT,
    memory_type::DECISION,
    memory_type::PREFERENCE,
    memory_type::PATTERN,
    memory_type::ISSUE,
    memory_type::CONTEXT,
    memory_type::DISCOVERY,
];

/// The knowledge type a stored memory type is listed under: seed 004's own
/// types are themselves; extraction's are placed where they belong (a
/// correction states how the user wants things, a convention is a practice,
/// a gotcha or a struggle is a known problem); anything else is a fact.
pub fn knowledge_type(stored: &str) -> &'static str {
    match stored {
        memory_type::DECISION => memory_type::DECISION,
        memory_type::PREFERENCE | memory_type::CORRECTION => memory_type::PREFERENCE,
        memory_type::PATTERN | memory_type::CONVENTION => memory_type::PATTERN,
        memory_type::ISSUE | memory_type::GOTCHA | memory_type::STRUGGLE => memory_type::ISSUE,
        memory_type::CONTEXT => memory_type::CONTEXT,
        memory_type::DISCOVERY => memory_type::DISCOVERY,
        _ => memory_type::FACT,
    }
}

/// How a listing shows a stored type: its knowledge type, with the kind
/// extraction stored after a slash when it differs (`issue/gotcha`).
pub fn type_label(stored: &str) -> String {
    let k = knowledge_type(stored);
    if k == stored { k.to_owned() } else { format!("{k}/{stored}") }
}

/// Whether a memory of stored type `stored` answers a filter on type
/// `filter`: a stored type asks for exactly that type; a knowledge type for
/// every memory listed under it ([`knowledge_type`]), whatever kind
/// extraction stored (`issue` finds a `gotcha`).
pub fn type_matches(filter: &str, stored: &str) -> bool {
    stored == filter || (KNOWLEDGE_TYPES.contains(&filter) && knowledge_type(stored) == filter)
}

/// The stored types a filter on type `filter` matches ([`type_matches`]), as
/// SQL can test them: the known types (a JSON array), and whether every type
/// this version does not know matches too (they are listed as facts).
pub fn stored_types(filter: &str) -> (String, bool) {
    let known: Vec<&str> =
        crate::domain::memory::ops::TYPES.iter().copied().filter(|t| type_matches(filter, t)).collect();
    let mut list: Vec<&str> = known;
    if !list.contains(&filter) {
        list.push(filter);
    }
    let json = serde_json::to_string(&list).unwrap_or_else(|_| "[]".into());
    (json, filter == memory_type::FACT)
}

/// SQL that is true when the type in `column` matches the filter bound at
/// `types` and `others` ([`stored_types`]; `types` NULL: no filter), with
/// the known types at `known` ([`known_types_json`]).
pub fn type_filter_sql(column: &str, types: &str, others: &str, known: &str) -> String {
    format!(
        "({types} IS NULL OR {column} IN (SELECT value FROM json_each({types})) \
         OR ({others} AND {column} NOT IN (SELECT value FROM json_each({known}))))"
    )
}

/// Every stored type this version knows, as a JSON array.
pub fn known_types_json() -> String {
    serde_json::to_string(crate::domain::memory::ops::TYPES).unwrap_or_else(|_| "[]".into())
}

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
    fn every_stored_type_has_a_knowledge_type() {
        for t in crate::domain::memory::ops::TYPES {
            assert!(KNOWLEDGE_TYPES.contains(&knowledge_type(t)), "{t}");
        }
        for t in KNOWLEDGE_TYPES {
            assert_eq!(knowledge_type(t), t);
        }
        assert_eq!(knowledge_type("poem"), "fact");
    }

    /// Issue 19 item 1: `memory list --type issue` did not list a `gotcha`.
    #[test]
    fn a_knowledge_type_matches_every_kind_listed_under_it() {
        assert!(type_matches("issue", "gotcha") && type_matches("issue", "struggle") && type_matches("issue", "issue"));
        assert!(type_matches("pattern", "convention") && type_matches("preference", "correction"));
        assert!(
            type_matches("gotcha", "gotcha") && !type_matches("gotcha", "issue") && !type_matches("gotcha", "struggle")
        );
        assert!(type_matches("fact", "poem") && !type_matches("issue", "poem"));
        assert!(!type_matches("discovery", "fact"));
        let (json, others) = stored_types("issue");
        let list: Vec<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(list, vec!["issue", "gotcha", "struggle"]);
        assert!(!others && stored_types("fact").1);
        assert_eq!(stored_types("gotcha").0, r#"["gotcha"]"#);
        assert_eq!((type_label("gotcha").as_str(), type_label("issue").as_str()), ("issue/gotcha", "issue"));
    }

    #[test]
    fn previews_are_one_line_and_cut() {
        assert_eq!(preview("a  b\nc", 10), "a b c");
        assert_eq!(preview("héllo world", 5), "héllo…");
    }
}
