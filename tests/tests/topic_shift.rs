//! Topic-shift detection on the labelled real sessions: the real
//! `engram-ingestor scan` records every transcript of `../shared/realdata`
//! (read at run time, never copied here) into a fresh data home; then, at
//! each typed prompt (selected as `tests::topic` says, checked against the
//! labels' BLAKE3), the thread is read from that projection as it stood just
//! before the prompt (`conversation::current_before`: earlier prompts, the
//! agent's replies, files, tools, the time of the last activity) and the
//! prompt hook's own decision (`prompt::shift_note_in`) is made and its
//! events recorded, so a suggestion already made keeps the next prompts of
//! its topic quiet, as in the hook.
//!
//! Held: the ask tier (a stash suggested or made) fires on at most 3 % of
//! the prompts labelled `continue`, and catches at least [`MIN_SHIFTS`] of
//! those labelled `shift` (a ratchet). Thresholds are the configured
//! defaults, not adapted (every replayed suggestion would otherwise count as
//! declined). Locally the test skips when the corpus is missing; under `CI`
//! it fails.
//!
//! `cargo test --release -p tests --test topic_shift -- --nocapture` prints
//! recall, false alarms and precision, overall and per language.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::knowledge::{conversation, prompt};
use tests::topic::{Label, Tally, load_labels, prompts};

/// Shifts the ask tier must catch (of 30 labelled).
const MIN_SHIFTS: usize = 4;
/// Share of continues it may fire at.
const MAX_FALSE_ALARMS: f64 = 0.03;

#[test]
fn the_ask_tier_is_rare_on_follow_ups_and_catches_real_switches() {
    let Some(corpus) = tests::realdata::default_corpus() else {
        println!("SKIP: the real-session corpus ../shared/realdata is missing (set ENGRAM_SHARED_DIR)");
        return;
    };
    let labels = load_labels(&Path::new(env!("CARGO_MANIFEST_DIR")).join(tests::topic::LABELS)).unwrap();
    let languages: BTreeMap<String, String> = tests::realdata::load_labels(&corpus)
        .unwrap()
        .into_iter()
        .map(|s| (s.claude.trim_start_matches("claude/").to_owned(), s.language))
        .collect();
    let mut by_session: BTreeMap<&str, BTreeMap<usize, &Label>> = BTreeMap::new();
    for l in &labels {
        assert!(["shift", "continue", "unsure"].contains(&l.label.as_str()), "{l:?}");
        assert!(by_session.entry(&l.session).or_default().insert(l.index, l).is_none(), "{l:?} twice");
    }

    // The real ingestor records the corpus.
    let ingestor = tests::build_bin("ingestor", "engram-ingestor");
    let root = tempfile::tempdir().unwrap();
    tests::realdata::run::lay_out(&corpus, root.path()).unwrap();
    let scan =
        tests::isolated(&ingestor, root.path()).args(["scan", "--json"]).current_dir(root.path()).output().unwrap();
    tests::success_stdout("engram-ingestor scan", scan);

    let mut config = Config::default();
    config.knowledge.topic.adaptive = false;
    let mut journal = shared::projection::open(&Paths::at(root.path().join("engram")), "topic-replay").unwrap();
    let mut all = Tally::default();
    let mut per_language: BTreeMap<String, Tally> = BTreeMap::new();
    let mut fired = Vec::new();
    let mut timed = 0;
    for (session, labelled) in &by_session {
        let path = corpus.join("claude").join(session);
        let selected = prompts(&std::fs::read_to_string(&path).unwrap());
        // The labels and the selection agree: the 2nd prompt on, each hashed.
        assert_eq!(labelled.keys().copied().collect::<Vec<_>>(), (1..selected.len()).collect::<Vec<_>>(), "{session}");
        for (i, l) in labelled {
            assert_eq!(selected[*i].blake3(), l.prompt_blake3, "{session} prompt {i}: not the labelled text");
        }
        let stem = session.rsplit('/').next().unwrap().trim_end_matches(".jsonl");
        let key = SessionKey::from(format!("claude:{stem}").as_str());
        let project: Option<String> = journal
            .store()
            .conn()
            .query_row("SELECT project FROM sessions WHERE session_key = ?1", [key.as_str()], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{session}: the scan recorded no session {key} ({e})"));
        let language = languages.get(*session).cloned().unwrap_or_else(|| "?".into());
        for (i, p) in selected.iter().enumerate() {
            let at = p.ts_ms.unwrap_or_else(|| panic!("{session} prompt {i} has no time"));
            let thread = conversation::current_before(journal.store(), &key, at).unwrap();
            let Some(thread) = thread else { panic!("{session}: no thread at prompt {i}") };
            assert!(
                thread.prompts.iter().all(|(t, _)| *t < at),
                "{session} prompt {i}: the thread holds later prompts"
            );
            if i > 0 && thread.replies.is_empty() && thread.prompts.is_empty() {
                panic!("{session} prompt {i}: the thread holds nothing of the earlier turns");
            }
            timed += usize::from(!thread.replies.is_empty());
            let decision =
                prompt::shift_note_in(journal.store(), &config, &key, project.as_deref(), &thread, &p.text, Ts(at))
                    .unwrap();
            let (shift, bodies) = match decision {
                Some((shift, _, bodies)) => (Some(shift), bodies),
                None => (None, Vec::new()),
            };
            if !bodies.is_empty() {
                let events: Vec<_> = bodies.into_iter().map(|b| journal.event(Ts(at), Some(key.clone()), b)).collect();
                journal.append(&events).unwrap();
            }
            let Some(l) = labelled.get(&i) else { continue };
            let suggested = shift.as_ref().is_some_and(|s| s.tier != "ignore");
            all.add(&l.label, suggested);
            per_language.entry(language.clone()).or_default().add(&l.label, suggested);
            if suggested {
                let s = shift.unwrap();
                fired.push(format!(
                    "  {session} #{i} [{}] {} score {:.2} signals {:?}",
                    l.label, s.tier, s.score, s.signals
                ));
            }
        }
    }
    assert!(timed > 300, "the agent's replies reach the thread at only {timed} prompts");

    println!("topic shift on the labelled real prompts: {}", all.line());
    for (lang, t) in &per_language {
        println!("  {lang}: {}", t.line());
    }
    println!("fired at:\n{}", fired.join("\n"));
    let (tp, shifts) = all.recall();
    let (fp, continues) = all.false_alarms();
    assert_eq!((shifts, continues), (30, 465), "the label set changed: update the floors");
    assert!(
        fp as f64 <= MAX_FALSE_ALARMS * continues as f64,
        "the ask tier fired at {fp} of {continues} follow-ups (over {:.0}%)",
        MAX_FALSE_ALARMS * 100.0
    );
    assert!(tp >= MIN_SHIFTS, "the ask tier caught {tp} of {shifts} real switches (floor {MIN_SHIFTS})");
}
