//! Seed 000's "Per-Turn Pipeline (Incremental)": the rules for extracting
//! one turn of a session that is already recorded.
//!
//! - **Prior context.** The extraction of a turn sees the turn's new events
//!   after about [`CONTEXT_CHARS`] characters of the session's earlier text:
//!   the shortest run of whole events, counted back from the newest, whose
//!   text reaches the budget ([`prior_context`]; all of them when the
//!   session holds less). Events without text (a session start, a cursor)
//!   cost nothing. The external extractor gets the same budget over its
//!   turns ([`crate::external::build_turn_request`]).
//! - **The external extractor is skipped** for a turn of a transcript under
//!   [`MIN_TRANSCRIPT_BYTES`] (10 KB) or whose new content is under
//!   [`MIN_NEW_CHARS`] (50 characters); the new content sent is capped at
//!   [`MAX_NEW_BYTES`] (10 KB, the most recent turns kept). The deterministic
//!   extraction runs on every turn: it costs nothing.

use shared::storage::event::{Body, Event};

/// Characters of prior text the extraction of a turn sees (seed: ~2,000).
pub const CONTEXT_CHARS: usize = 2_000;
/// Transcripts under this size are not sent to the external extractor.
pub const MIN_TRANSCRIPT_BYTES: u64 = 10 * 1024;
/// A turn whose new text is shorter is not sent to the external extractor.
pub const MIN_NEW_CHARS: usize = 50;
/// At most this many bytes of a turn's new text are sent.
pub const MAX_NEW_BYTES: usize = 10 * 1024;
/// Most earlier events read back from the tapes to find the prior context.
pub const MAX_CONTEXT_EVENTS: usize = 640;
/// Earlier events read back first (more only when their text is short).
pub const FIRST_CONTEXT_EVENTS: usize = 40;

/// Characters of text an event carries for a reader of the session: a
/// message, a tool call's arguments, a tool's output.
pub fn text_chars(e: &Event) -> usize {
    match &e.body {
        Body::MsgIn(m) => m.text.chars().count(),
        Body::MsgOut(m) => m.text.chars().count(),
        Body::ToolCall(c) => match &c.args {
            serde_json::Value::Null => 0,
            serde_json::Value::String(s) => s.chars().count(),
            v => v.to_string().chars().count(),
        },
        Body::ToolResult(r) => r.stdout.chars().count() + r.stderr.chars().count(),
        _ => 0,
    }
}

/// Where the shortest suffix of items whose sizes reach `budget` starts
/// (0 when all of them hold less): whole items, the newest always kept.
pub fn suffix_start<T>(items: &[T], budget: usize, size: impl Fn(&T) -> usize) -> usize {
    let mut total = 0usize;
    let mut start = items.len();
    while start > 0 && total < budget {
        start -= 1;
        total = total.saturating_add(size(&items[start]));
    }
    start
}

/// The prior context of a turn: the most recent of `earlier` (oldest first)
/// whose text reaches `budget` characters, whole events (see the module docs).
pub fn prior_context(mut earlier: Vec<Event>, budget: usize) -> Vec<Event> {
    let start = suffix_start(&earlier, budget, text_chars);
    earlier.split_off(start)
}

/// Whether the external extractor skips a turn of a transcript of
/// `transcript_bytes` whose new text is `new_chars` characters long, and why.
pub fn skip_external(transcript_bytes: u64, new_chars: usize) -> Option<&'static str> {
    if transcript_bytes < MIN_TRANSCRIPT_BYTES {
        Some("transcript under 10 KB")
    } else if new_chars < MIN_NEW_CHARS {
        Some("new content under 50 characters")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use shared::base::time::Ts;
    use shared::storage::event::MsgOut;

    fn said(text: &str) -> Event {
        Event::new(Ts(1), "test", None, Body::MsgOut(MsgOut { text: text.into(), ..MsgOut::default() }))
    }

    #[test]
    fn the_context_is_the_newest_whole_events_reaching_the_budget() {
        let events: Vec<Event> =
            ["a".repeat(1500), "b".repeat(900), "c".repeat(700), "d".repeat(600)].iter().map(|t| said(t)).collect();
        let ctx = prior_context(events.clone(), 2_000);
        // 600 + 700 < 2000, + 900 reaches it: three whole events.
        assert_eq!(ctx.len(), 3);
        assert_eq!(ctx[0], events[1]);
        assert_eq!(prior_context(events.clone(), 100_000).len(), 4, "all when they hold less");
        assert_eq!(prior_context(events.clone(), 1).len(), 1, "the newest is always whole");
        assert!(prior_context(Vec::new(), 2_000).is_empty());
    }

    #[test]
    fn the_seed_skip_rules() {
        assert_eq!(skip_external(10 * 1024 - 1, 500), Some("transcript under 10 KB"));
        assert_eq!(skip_external(10 * 1024, 49), Some("new content under 50 characters"));
        assert_eq!(skip_external(10 * 1024, 50), None);
    }

    proptest! {
        /// The context is a suffix; it reaches the budget unless it is
        /// everything; without its oldest event it would not.
        #[test]
        fn the_context_is_the_shortest_suffix_reaching_the_budget(
            sizes in proptest::collection::vec(0usize..3_000, 0..30),
            budget in 1usize..6_000,
        ) {
            let start = suffix_start(&sizes, budget, |s| *s);
            let total: usize = sizes[start..].iter().sum();
            prop_assert!(start <= sizes.len());
            if start > 0 {
                prop_assert!(total >= budget);
            }
            if start < sizes.len() {
                prop_assert!(total - sizes[start] < budget, "a shorter suffix would do");
            }
            if sizes.iter().sum::<usize>() < budget {
                prop_assert_eq!(start, 0);
            }
        }
    }
}
