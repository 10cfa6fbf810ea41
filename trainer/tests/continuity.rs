//! The continuity scorer on sessions written by hand: a session record in, labels,
//! score and confidence out.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use serde_json::json;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::time::Ts;
use shared::domain::training::data::{RecordedCandidate, RecordedRanking};
use shared::storage::event::*;
use trainer::continuity::{
    self, Assessment, Corpus, FeedbackRecord, FtsHitRecord, JudgeVerdict, MemoryFacts, SessionRecord,
};

const T0: i64 = 1_780_000_000_000;

/// A session under construction.
struct S {
    record: SessionRecord,
    next: i64,
}

fn key() -> SessionKey {
    SessionKey::new("claude", "s1")
}

impl S {
    fn new(memories: &[(&str, &str)]) -> S {
        let memories: BTreeMap<MemoryId, MemoryFacts> = memories
            .iter()
            .map(|(id, text)| (MemoryId::from(*id), MemoryFacts { content: (*text).into(), ..MemoryFacts::default() }))
            .collect();
        // A corpus where every term is rare (each memory has its own vocabulary).
        let corpus = Corpus { live_memories: 200, df: Default::default() };
        S {
            record: SessionRecord {
                session_key: key(),
                project: Some("app".into()),
                memories,
                corpus,
                ..Default::default()
            },
            next: T0,
        }
    }

    fn push(&mut self, body: Body) -> &mut Self {
        self.record.events.push(Event::new(Ts(self.next), "test", Some(key()), body));
        self.next += 1_000;
        self
    }

    /// A ranking served now: `candidates` in baseline order, `injected` among them.
    fn rank(&mut self, id: &str, query: &str, candidates: &[&str], injected: &[&str]) -> &mut Self {
        let cands = candidates
            .iter()
            .enumerate()
            .map(|(i, m)| RecordedCandidate {
                memory_id: (*m).into(),
                baseline_score: 1.0 / (i as f32 + 1.0),
                baseline_rank: i as u32 + 1,
                predictor_score: Some(i as f32),
                predictor_rank: Some((candidates.len() - i) as u32),
                rank: i as u32 + 1,
                injected: injected.contains(m),
            })
            .collect();
        self.record.rankings.push(RecordedRanking {
            ranking_id: id.into(),
            session_key: Some(key()),
            trigger: trigger::PROMPT.into(),
            query: query.into(),
            project: Some("app".into()),
            served_ms: self.next,
            alpha: 1.0,
            model_version: Some(1),
            candidates: cands,
        });
        // The hook injects the memories' text: never evidence.
        let text: Vec<String> =
            injected.iter().map(|m| self.record.memories[&MemoryId::from(*m)].content.clone()).collect();
        self.push(Body::MsgIn(MsgIn { text: text.join("\n"), origin: origin::ENGRAM.into(), ..Default::default() }))
    }

    fn user(&mut self, text: &str) -> &mut Self {
        self.push(Body::MsgIn(MsgIn { text: text.into(), ..Default::default() }))
    }

    fn say(&mut self, text: &str) -> &mut Self {
        self.push(Body::MsgOut(MsgOut { text: text.into(), ..Default::default() }))
    }

    fn tool(&mut self, tool: &str, args: serde_json::Value, result: &str) -> &mut Self {
        let call_id = format!("c{}", self.record.events.len());
        self.push(Body::ToolCall(ToolCall { tool: tool.into(), call_id: call_id.clone(), args }));
        self.push(Body::ToolResult(ToolResult {
            tool: tool.into(),
            call_id,
            stdout: result.into(),
            ..Default::default()
        }))
    }

    fn edit(&mut self, file: &str, new_text: &str) -> &mut Self {
        self.tool("Edit", json!({"file_path": file, "new_string": new_text}), "ok")
    }

    fn fts(&mut self, ranking: Option<&str>, ids: &[&str]) -> &mut Self {
        self.record.fts_hits.push(FtsHitRecord {
            at_ms: self.next,
            ranking_id: ranking.map(str::to_owned),
            memory_ids: ids.iter().map(|m| MemoryId::from(*m)).collect(),
        });
        self
    }

    /// Ordinary activity without any memory's vocabulary.
    fn busywork(&mut self, n: usize) -> &mut Self {
        for i in 0..n {
            self.tool("Bash", json!({"command": format!("cargo test --quiet shard{i}")}), "test result: ok");
        }
        self
    }

    fn score(&self) -> Assessment {
        continuity::score(&self.record)
    }
}

fn label(a: &Assessment, id: &str) -> f32 {
    a.labels.get(&MemoryId::from(id)).copied().unwrap_or(f32::NAN)
}

const AUTH: &str = "Raise AUTH_TIMEOUT to 30s in services/auth/config.toml when logins hang";
const DEPLOY: &str = "Deploy with scripts/release_canary.sh before promoting to production";
const LINT: &str = "Run clippy_pedantic_gate before merging frontend changes";

#[test]
fn identifiers_and_paths_reused_after_injection_are_use() {
    let mut s = S::new(&[("m_auth", AUTH), ("m_deploy", DEPLOY), ("m_lint", LINT)]);
    s.user("logins are hanging again")
        .rank("r1", "logins are hanging again", &["m_auth", "m_deploy", "m_lint"], &["m_auth", "m_deploy"])
        .say("I'll raise the timeout.")
        .edit("/repo/services/auth/config.toml", "AUTH_TIMEOUT = \"30s\"")
        .say("Set AUTH_TIMEOUT to 30s.")
        .busywork(4);
    let a = s.score();
    assert!(label(&a, "m_auth") >= 0.8, "{a:#?}");
    assert_eq!(label(&a, "m_deploy"), 0.0, "injected but never used");
    assert_eq!(label(&a, "m_lint"), 0.0, "in the labelled pool without evidence: an explicit 0");
    assert_eq!((a.memories_recalled, a.memories_used, a.novel_context_count), (2, 1, 0));
    assert!(a.confidence >= 0.6, "{}", a.confidence);
    assert!(a.score > 0.5 && a.score < 1.0, "{}", a.score);
    assert!(a.reasoning.contains("m_auth"), "{}", a.reasoning);
    assert!(a.reasoning.contains("1 of 2 injected memories used"), "{}", a.reasoning);
}

#[test]
fn what_the_user_or_a_tool_supplied_is_not_evidence_of_use() {
    let mut s = S::new(&[("m_auth", AUTH)]);
    s.user("hello")
        .rank("r1", "hello", &["m_auth"], &["m_auth"])
        .user("please set AUTH_TIMEOUT to 30s in services/auth/config.toml")
        .edit("services/auth/config.toml", "AUTH_TIMEOUT = 30s")
        .busywork(4);
    let a = s.score();
    assert!(label(&a, "m_auth") < 0.3, "the user supplied every term: {a:#?}");

    let mut s = S::new(&[("m_auth", AUTH)]);
    s.user("hello")
        .rank("r1", "hello", &["m_auth"], &["m_auth"])
        .tool("Grep", json!({"pattern": "timeout"}), "services/auth/config.toml:3: AUTH_TIMEOUT = 5s")
        .edit("services/auth/config.toml", "AUTH_TIMEOUT = 30s")
        .busywork(4);
    let a = s.score();
    // Only `30s` was not discovered by the tool.
    assert!(label(&a, "m_auth") < 0.6, "found by grep, not by memory: {a:#?}");
}

#[test]
fn terms_known_before_the_injection_are_not_evidence() {
    let mut s = S::new(&[("m_auth", AUTH)]);
    s.user("look at logins")
        .edit("services/auth/config.toml", "AUTH_TIMEOUT = 30s")
        .user("why do logins hang")
        .rank("r2", "why do logins hang", &["m_auth"], &["m_auth"])
        .edit("services/auth/config.toml", "AUTH_TIMEOUT = 30s")
        .busywork(4);
    let a = s.score();
    assert!(label(&a, "m_auth") < 0.3, "the agent already had them: {a:#?}");
}

#[test]
fn needed_but_not_injected_memories_get_missed_labels() {
    let mut s = S::new(&[("m_auth", AUTH), ("m_deploy", DEPLOY), ("m_other", LINT)]);
    s.user("ship it")
        .rank("r1", "ship it", &["m_other", "m_deploy", "m_auth"], &["m_other"])
        .tool("Bash", json!({"command": "ls scripts"}), "release_canary.sh\nbuild.sh")
        .tool("Bash", json!({"command": "./scripts/release_canary.sh --production"}), "done")
        .say("Ran scripts/release_canary.sh")
        .busywork(3);
    let a = s.score();
    let deploy = label(&a, "m_deploy");
    assert!(deploy > 0.3 && deploy <= 0.6, "needed (found by the agent), at most the missed label: {a:#?}");
    assert_eq!(label(&a, "m_auth"), 0.0);
    assert_eq!(a.novel_context_count, 1);
    assert!(a.score < 0.3, "nothing injected was used and something was needed: {}", a.score);
}

#[test]
fn fts_hits_of_later_prompts_boost_and_mark_misses() {
    let mut s = S::new(&[("m_auth", AUTH), ("m_deploy", DEPLOY), ("m_lint", LINT)]);
    s.user("logins hang")
        .rank("r1", "logins hang", &["m_auth", "m_deploy", "m_lint"], &["m_auth"])
        .fts(Some("r1"), &["m_auth"])
        .edit("services/auth/config.toml", "AUTH_TIMEOUT = 30s")
        .busywork(4);
    let without = label(&s.score(), "m_auth");
    s.user("and the deploy?").fts(Some("r2"), &["m_auth", "m_deploy", "m_lint"]);
    s.user("deploy to production").fts(Some("r3"), &["m_deploy"]);
    let a = s.score();
    assert!((label(&a, "m_auth") - (without + 0.1).min(1.0)).abs() < 1e-3, "{without} → {}", label(&a, "m_auth"));
    assert_eq!(label(&a, "m_deploy"), 0.6, "not injected, matched twice");
    assert_eq!(label(&a, "m_lint"), 0.3, "not injected, matched once");
    assert_eq!(a.fts_overlap, Some(1.0));
}

#[test]
fn feedback_and_negative_signals() {
    let mut s = S::new(&[
        ("m_auth", AUTH),
        ("m_deploy", DEPLOY),
        ("m_lint", LINT),
        ("m_old", "Old rule about legacy_deploy.sh"),
    ]);
    s.user("hi")
        .rank("r1", "hi", &["m_auth", "m_deploy", "m_lint", "m_old"], &["m_auth", "m_deploy", "m_lint"])
        .busywork(6);
    s.record.feedback.push(FeedbackRecord { memory_id: "m_auth".into(), relevance: 1.0, by: "user".into() });
    s.record.memories.get_mut(&MemoryId::from("m_old")).unwrap().superseded = true;
    s.record.memories.get_mut(&MemoryId::from("m_deploy")).unwrap().forgotten_ms = Some(T0 + 3_600_000);
    s.record.memories.get_mut(&MemoryId::from("m_lint")).unwrap().forgotten_ms = Some(T0 + 3 * 86_400_000);
    let a = s.score();
    assert!(label(&a, "m_auth") >= 0.8, "the user said it was exactly what was needed: {a:#?}");
    assert_eq!(label(&a, "m_old"), -0.3, "superseded");
    assert_eq!(label(&a, "m_deploy"), -0.5, "forgotten within a day of being injected");
    assert_eq!(label(&a, "m_lint"), -0.3, "forgotten later");
}

#[test]
fn confidence_grows_with_evidence() {
    let mut s = S::new(&[("m_auth", AUTH)]);
    s.user("hi").rank("r1", "hi", &["m_auth"], &["m_auth"]).say("Hello.");
    let small = s.score();
    assert!(small.confidence < 0.6, "one prompt and one reply: {}", small.confidence);
    s.user("run the tests").busywork(8).user("thanks");
    let big = s.score();
    assert!(big.confidence >= 0.6 && big.confidence > small.confidence, "{}", big.confidence);
    assert!(big.confidence < 1.0);
}

#[test]
fn engram_context_and_reasoning_channels() {
    // The injected text itself never makes a memory "used"; reasoning counts less than an edit.
    let mut s = S::new(&[("m_auth", AUTH)]);
    s.user("hi").rank("r1", "hi", &["m_auth"], &["m_auth"]).busywork(6);
    assert_eq!(label(&s.score(), "m_auth"), 0.0);
    let mut thought = S::new(&[("m_auth", AUTH)]);
    thought.user("hi").rank("r1", "hi", &["m_auth"], &["m_auth"]);
    thought.push(Body::MsgOut(MsgOut {
        text: "maybe AUTH_TIMEOUT".into(),
        part: "reasoning".into(),
        ..Default::default()
    }));
    thought.busywork(6);
    let mut edited = S::new(&[("m_auth", AUTH)]);
    edited.user("hi").rank("r1", "hi", &["m_auth"], &["m_auth"]).edit("x.toml", "AUTH_TIMEOUT").busywork(6);
    let (t, e) = (label(&thought.score(), "m_auth"), label(&edited.score(), "m_auth"));
    assert!(t > 0.0 && e > t, "reasoning {t} < edit {e}");
}

#[test]
fn labelled_pool_is_both_top_tens_and_the_injected() {
    let ids: Vec<String> = (0..30).map(|i| format!("m{i:02}")).collect();
    let mems: Vec<(&str, &str)> = ids.iter().map(|i| (i.as_str(), "filler memory about nothing")).collect();
    let mut s = S::new(&mems);
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    // Baseline ranks m00..m29; predictor ranks them in reverse; m15 injected.
    s.user("hi").rank("r1", "hi", &refs, &["m15"]).busywork(6);
    let a = s.score();
    let pool: Vec<&str> = a.labelled_pool.iter().map(MemoryId::as_str).collect();
    assert_eq!(pool.len(), 21, "{pool:?}");
    assert!(pool.contains(&"m00") && pool.contains(&"m29") && pool.contains(&"m15"));
    assert!(!pool.contains(&"m12"));
    assert!(!a.labels.contains_key(&MemoryId::from("m12")), "outside the pool without evidence: no label");
}

#[test]
fn a_judge_verdict_is_blended_in() {
    let mut s = S::new(&[("m_auth", AUTH), ("m_deploy", DEPLOY)]);
    s.user("logins hang").rank("r1", "logins hang", &["m_auth", "m_deploy"], &["m_auth", "m_deploy"]).busywork(6);
    let evidence = continuity::gather(&s.record);
    let plain = continuity::assess(&s.record, &evidence, None);
    let verdict = JudgeVerdict {
        overall_score: 1.0,
        confidence: 1.0,
        per_memory_scores: [("m_deploy".into(), 1.0)].into(),
        novel_context_count: 2,
        reasoning: "deploy was discussed".into(),
        ..Default::default()
    };
    let judged = continuity::assess(&s.record, &evidence, Some(&verdict));
    assert_eq!(judged.scorer, continuity::SCORER_WITH_JUDGE);
    assert_eq!(plain.scorer, continuity::SCORER);
    assert!((label(&judged, "m_deploy") - 0.5).abs() < 1e-3, "half weight at full confidence: {judged:#?}");
    assert_eq!(label(&judged, "m_auth"), label(&plain, "m_auth"));
    assert!(judged.score > plain.score && judged.confidence > plain.confidence);
    assert_eq!(judged.novel_context_count, 2);
    assert!(judged.reasoning.contains("deploy was discussed"));
}

#[test]
fn common_words_weigh_little_and_parts_never_suffice() {
    let mut s = S::new(&[("m_deploy", DEPLOY)]);
    // Document frequencies are keyed by stemmed terms.
    s.record.corpus.df = [("deploi".to_owned(), 50), ("script".to_owned(), 60), ("product".to_owned(), 40)].into();
    s.user("hi").rank("r1", "hi", &["m_deploy"], &["m_deploy"]).say("I will deploy to production now.").busywork(6);
    let common = label(&s.score(), "m_deploy");
    assert!(common > 0.0 && common < 0.15, "two words a quarter of the memories share: {common}");

    let mut s = S::new(&[("m_deploy", DEPLOY)]);
    s.user("hi").rank("r1", "hi", &["m_deploy"], &["m_deploy"]).edit("scripts/release_notes.md", "canary").busywork(6);
    assert_eq!(label(&s.score(), "m_deploy"), 0.0, "words inside a path only corroborate");

    let mut s = S::new(&[("m_deploy", DEPLOY)]);
    s.user("hi").rank("r1", "hi", &["m_deploy"], &["m_deploy"]).edit("scripts/release_canary.sh", "set -e").busywork(6);
    assert!(label(&s.score(), "m_deploy") > 0.7, "the whole path, then its parts too");
}
