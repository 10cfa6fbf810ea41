//! Boundary tests of the ranking pipeline: memories in a real store, a query in, a ranking out.

#![allow(clippy::unwrap_used)]

use predictor::model::{Model, ModelConfig};
use shared::base::config::Config;
use shared::base::ids::{MemoryId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::rank::{self, RankRequest, ServingModel};
use shared::storage::event::*;
use shared::storage::journal::Journal;

const DAY: i64 = 86_400_000;
const NOW: Ts = Ts(1_780_000_000_000);

struct Mem<'a> {
    id: &'a str,
    text: &'a str,
    importance: f32,
    age_days: i64,
    session: Option<&'a str>,
    project: Option<&'a str>,
}

fn mem<'a>(id: &'a str, text: &'a str) -> Mem<'a> {
    Mem { id, text, importance: 0.5, age_days: 10, session: None, project: None }
}

fn setup(mems: &[Mem<'_>]) -> (tempfile::TempDir, Journal) {
    let dir = tempfile::tempdir().unwrap();
    let mut j = shared::projection::open(&Paths::at(dir.path()), "test").unwrap();
    let events: Vec<Event> = mems
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let ts = Ts(NOW.0 - m.age_days * DAY + i as i64);
            Event::new(
                ts,
                "test",
                m.session.map(SessionKey::from),
                Body::MemoryAdded(MemoryAdded {
                    memory_id: m.id.into(),
                    content: m.text.into(),
                    memory_type: MemoryType::Fact,
                    importance: m.importance,
                    project: m.project.map(str::to_owned),
                    source_session: m.session.map(SessionKey::from),
                    ..Default::default()
                }),
            )
        })
        .collect();
    j.append(&events).unwrap();
    (dir, j)
}

fn request<'a>(query: &'a str, tz: &'a jiff::tz::TimeZone) -> RankRequest<'a> {
    RankRequest {
        query,
        query_embedding: None,
        session: None,
        project: None,
        trigger: trigger::PROMPT,
        now: NOW,
        tz,
        k: 5,
        budget_chars: 4_000,
        require_match: true,
        explore_draw: 0.99,
        context_reset_ms: None,
    }
}

fn injected_ids(r: &rank::Ranking) -> Vec<&str> {
    r.injected().map(|i| i.memory.id.as_str()).collect()
}

#[test]
fn keyword_matches_rank_first_and_unrelated_are_not_injected() {
    let (_d, j) = setup(&[
        mem("m_auth", "The auth service times out after 30 seconds; raise AUTH_TIMEOUT"),
        mem("m_build", "Run cargo build with two jobs on this machine"),
        mem("m_db", "SQLite migrations run inside BEGIN IMMEDIATE"),
    ]);
    let tz = jiff::tz::TimeZone::UTC;
    let r = rank::rank(j.store(), &Config::default(), None, &request("why does auth time out?", &tz)).unwrap();
    assert_eq!(r.items[0].memory.id.as_str(), "m_auth");
    assert_eq!(injected_ids(&r), vec!["m_auth"], "only the matching memory is injected at a prompt");
    assert!(r.items[0].reasons.iter().any(|x| x.contains("keyword match #1")), "{:?}", r.items[0].reasons);
    assert!(r.state.cold_start());
    assert_eq!(r.alpha, 1.0);
    assert_eq!(r.served.candidates.len(), 3, "every candidate is recorded");
}

#[test]
fn session_start_injects_by_effective_score_within_k_and_budget() {
    let (_d, j) = setup(&[
        Mem { importance: 0.9, age_days: 1, ..mem("m_new", "Fresh and important lesson about the release checklist") },
        Mem { importance: 0.9, age_days: 200, ..mem("m_old", "Ancient lesson about a removed service") },
        Mem { importance: 0.2, age_days: 1, ..mem("m_minor", "Minor note") },
        Mem { importance: 0.8, age_days: 2, ..mem("m_big", &"x".repeat(3_000)) },
    ]);
    let tz = jiff::tz::TimeZone::UTC;
    let mut req = request("project engram, branch main", &tz);
    req.require_match = false;
    req.trigger = trigger::SESSION_START;
    req.k = 2;
    req.budget_chars = 1_000;
    let r = rank::rank(j.store(), &Config::default(), None, &req).unwrap();
    let ids = injected_ids(&r);
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], "m_new");
    assert!(!ids.contains(&"m_big"), "a memory over the budget is skipped");
    assert!(!ids.contains(&"m_old"), "decayed memories lose to fresh ones");
}

#[test]
fn pinned_are_always_candidates_and_superseded_never_injected() {
    let (_d, mut j) = setup(&[
        mem("m_pin", "Always run the full test suite before pushing"),
        mem("m_old_rule", "Deploy with the legacy script deploy.sh"),
        mem("m_new_rule", "Deploy with the release workflow"),
    ]);
    j.append(&[
        Event::new(NOW, "test", None, Body::MemoryPinned(MemoryRef { memory_id: "m_pin".into() })),
        Event::new(
            NOW,
            "test",
            None,
            Body::MemoryDeprecated(MemoryDeprecated {
                memory_id: "m_old_rule".into(),
                reason: "replaced".into(),
                superseded_by: Some("m_new_rule".into()),
            }),
        ),
    ])
    .unwrap();
    let tz = jiff::tz::TimeZone::UTC;
    let r = rank::rank(j.store(), &Config::default(), None, &request("how do we deploy", &tz)).unwrap();
    let ids = injected_ids(&r);
    assert!(ids.contains(&"m_pin"));
    assert!(ids.contains(&"m_new_rule"));
    assert!(!ids.contains(&"m_old_rule"));
    let old = r.items.iter().find(|i| i.memory.id.as_str() == "m_old_rule").unwrap();
    assert!(old.memory.signals.superseded);
}

#[test]
fn neighbours_of_strong_hits_join_the_pool() {
    let (_d, j) = setup(&[
        Mem { session: Some("engram:s1"), ..mem("t1", "Caroline: I went to the support group yesterday") },
        Mem { session: Some("engram:s1"), ..mem("t2", "Melanie: That sounds wonderful, how was it?") },
        Mem { session: Some("engram:s1"), ..mem("t3", "Caroline: It was powerful and I felt accepted") },
        Mem { session: Some("engram:s2"), ..mem("t4", "Melanie: I painted a lake at sunrise") },
    ]);
    let tz = jiff::tz::TimeZone::UTC;
    let r = rank::rank(j.store(), &Config::default(), None, &request("support group", &tz)).unwrap();
    let t2 = r.items.iter().find(|i| i.memory.id.as_str() == "t2").expect("the neighbour is in the pool");
    assert!(t2.memory.sources.contains(source::NEIGHBOR));
    assert!(t2.memory.signals.neighbor_score > 0.9);
    assert!(r.items.iter().all(|i| i.memory.id.as_str() != "t4" || i.memory.signals.neighbor_score == 0.0));
}

#[test]
fn recorded_ranking_is_not_repeated_in_the_same_session() {
    let (_d, mut j) = setup(&[mem("m1", "auth tokens expire after an hour"), mem("m2", "auth uses OAuth device flow")]);
    let tz = jiff::tz::TimeZone::UTC;
    let session = SessionKey::from("claude:s");
    let mut req = request("auth tokens", &tz);
    req.session = Some(&session);
    let first = rank::rank(j.store(), &Config::default(), None, &req).unwrap();
    assert_eq!(first.injected().count(), 2);
    j.append(&[Event::new(NOW, "test", Some(session.clone()), Body::RankingServed(first.served.clone()))]).unwrap();
    let second = rank::rank(j.store(), &Config::default(), None, &req).unwrap();
    assert_eq!(second.injected().count(), 0, "memories already shown in the session are not injected again");
    assert!(second.items.iter().all(|i| i.memory.shown));
}

#[test]
fn predictor_ranking_is_computed_and_recorded_during_cold_start() {
    let (_d, j) = setup(&[mem("m1", "auth tokens expire"), mem("m2", "build uses cargo"), mem("m3", "auth flow")]);
    let tz = jiff::tz::TimeZone::UTC;
    let model = Model::new(ModelConfig { native_dim: 0, ..ModelConfig::default() }, 7).unwrap();
    let r = rank::rank(
        j.store(),
        &Config::default(),
        Some(ServingModel { model: &model, version: 1 }),
        &request("auth", &tz),
    )
    .unwrap();
    assert_eq!(r.alpha, 1.0, "no promoted model in the projection: the predictor has no influence");
    assert!(r.served.candidates.iter().all(|c| c.predictor_rank.is_some()));
    let by_baseline: Vec<u32> = r.items.iter().map(|i| i.baseline_rank).collect();
    assert_eq!(by_baseline, (1..=r.items.len() as u32).collect::<Vec<_>>(), "fused order equals the baseline's");
}

/// The pool of `query` built both ways: over the fixed set `ids`
/// (`gather_fixed`) and from the whole store (`gather`).
fn fixed_and_gathered(j: &Journal, query: &str, ids: &[&str]) -> [rank::pool::Pool; 2] {
    let ids: Vec<MemoryId> = ids.iter().map(|s| MemoryId::from(*s)).collect();
    let query = rank::PoolQuery { text: query, embedding: None, project: None, session: None, now: NOW };
    [
        rank::pool::gather_fixed(j.store(), &query, &ids).unwrap(),
        rank::pool::gather(j.store(), &query, &rank::PoolLimits::default()).unwrap(),
    ]
}

#[test]
fn an_answer_is_scored_with_the_question_before_it() {
    let (_d, j) = setup(&[
        Mem { session: Some("engram:s1"), ..mem("q", "Melanie: Which flowers do you grow in the garden?") },
        Mem { session: Some("engram:s1"), ..mem("a", "Audrey: Peruvian lilies, bright colours and delicate petals") },
        Mem { session: Some("engram:s1"), ..mem("after", "Melanie: Lovely! I should plant some too") },
        Mem { session: Some("engram:s2"), ..mem("other", "Audrey: The dogs love puzzles and hide-and-seek") },
    ]);
    for pool in fixed_and_gathered(&j, "garden flowers", &["q", "a", "after", "other"]) {
        let get = |id: &str| pool.memories.iter().find(|m| m.id.as_str() == id).expect(id).signals;
        let (q, a) = (get("q"), get("a"));
        // The answer shares no word with the query: only its window does.
        assert_eq!(a.bm25_score, None);
        assert!(a.context_before > 0.0 && a.context_before <= q.context_wide + 1e-6);
        assert_eq!(a.context_before, q.context_after, "the same two memories read together");
        assert!(q.context_before > 0.0, "a hit's window holds the hit");
        assert_eq!(a.context_after, 0.0, "the answer and the memory after it share nothing with the query");
        assert!(get("after").context_wide > 0.0, "two after the hit is still in its wide window");
        if let Some(other) = pool.memories.iter().find(|m| m.id.as_str() == "other") {
            assert_eq!(other.signals.context_wide, 0.0);
        }
    }
}

#[test]
fn the_memory_after_a_matching_question_is_marked_as_its_answer() {
    let (_d, j) = setup(&[
        Mem { session: Some("engram:s1"), ..mem("q", "Tim: How long do you hold that yoga pose?") },
        Mem { session: Some("engram:s1"), ..mem("a", "John: Usually 30-60 seconds, Tim. It builds strength!") },
        Mem { session: Some("engram:s1"), ..mem("after", "Tim: Nice, I will try yoga with Anna") },
        Mem { session: Some("engram:s2"), ..mem("statement", "John: My yoga mat is blue") },
    ]);
    for pool in fixed_and_gathered(&j, "How many seconds is the yoga pose held?", &["q", "a", "after", "statement"]) {
        let get = |id: &str| pool.memories.iter().find(|m| m.id.as_str() == id).expect(id).signals;
        let (q, a, after) = (get("q"), get("a"), get("after"));
        assert_eq!((q.is_question, a.is_question, after.is_question), (1.0, 0.0, 0.0));
        assert!(a.follows_question > 0.0, "the answer follows a question that matches the query");
        assert_eq!(after.follows_question, 0.0, "the memory before it is an answer, not a question");
        assert_eq!(q.follows_question, 0.0, "nothing comes before the question");
        assert_eq!(a.quantity_match, 1.0, "a number answers 'how many'");
        assert_eq!(q.quantity_match, 0.0);
        assert_eq!((a.proper_nouns, after.proper_nouns), (1, 1));
        assert_eq!((a.first_person, after.first_person, q.first_person), (0.0, 1.0, 0.0));
        assert_eq!(get("statement").first_person, 1.0);
    }
}

/// A pool read from the stored text equals one whose memories are analysed
/// afresh (rows without `text_terms`, or of another text version).
#[test]
fn stored_text_gives_the_same_pool_as_analysing_the_content() {
    let (_d, j) = setup(&[
        Mem { session: Some("engram:s1"), ..mem("q", "Tim: How long do you hold that yoga pose?") },
        Mem { session: Some("engram:s1"), ..mem("a", "John: Usually 30-60 seconds, Tim. It builds strength!") },
        Mem { session: Some("engram:s1"), ..mem("after", "Tim: Nice, I will try yoga with Anna in May") },
        Mem { session: Some("engram:s2"), ..mem("statement", "John: My yoga mat is blue") },
    ]);
    let ids = ["q", "a", "after", "statement"];
    let query = "How many seconds is the yoga pose held?";
    let signals = |pools: [rank::pool::Pool; 2]| -> Vec<String> {
        pools.iter().flat_map(|p| p.memories.iter().map(|m| format!("{} {:?} {:?}", m.id, m.signals, m.bag))).collect()
    };
    let stored = signals(fixed_and_gathered(&j, query, &ids));
    j.store().conn().execute("UPDATE memories SET text_terms = NULL WHERE id IN ('q', 'after')", []).unwrap();
    j.store().conn().execute("UPDATE memories SET text_terms = X'ff00' WHERE id = 'a'", []).unwrap();
    assert_eq!(signals(fixed_and_gathered(&j, query, &ids)), stored);
}

#[test]
fn fixed_pools_rescore_a_recorded_set_in_its_order() {
    let (_d, j) = setup(&[mem("m1", "auth tokens expire"), mem("m2", "build uses cargo"), mem("m3", "auth flow")]);
    let ids: Vec<MemoryId> = ["m3", "m2", "m1"].iter().map(|s| MemoryId::from(*s)).collect();
    let pool = rank::pool::gather_fixed(
        j.store(),
        &rank::PoolQuery { text: "auth tokens", embedding: None, project: None, session: None, now: NOW },
        &ids,
    )
    .unwrap();
    let order: Vec<&str> = pool.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(order, vec!["m3", "m2", "m1"]);
    assert_eq!(pool.memories[2].signals.bm25_rank, Some(1));
    assert_eq!(pool.memories[1].signals.bm25_rank, None);
}

#[test]
fn pool_stays_bounded_on_a_large_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = shared::projection::open(&Paths::at(dir.path()), "test").unwrap();
    let n = if cfg!(debug_assertions) { 20_000 } else { 100_000 };
    let words = ["auth", "cache", "token", "deploy", "sqlite", "index", "retry", "queue", "schema", "cargo"];
    for chunk in 0..(n / 5_000) {
        let events: Vec<Event> = (0..5_000)
            .map(|i| {
                let k = chunk * 5_000 + i;
                Event::new(
                    Ts(NOW.0 - (k as i64 % 400) * DAY),
                    "test",
                    None,
                    Body::MemoryAdded(MemoryAdded {
                        memory_id: MemoryId(format!("mem_{k}")),
                        content: format!("{} {} note {k}", words[k % 10], words[(k / 10) % 10]),
                        importance: 0.5,
                        pinned: k % 5_000 == 0,
                        ..Default::default()
                    }),
                )
            })
            .collect();
        j.append(&events).unwrap();
    }
    let tz = jiff::tz::TimeZone::UTC;
    let r = rank::rank(j.store(), &Config::default(), None, &request("auth token retry", &tz)).unwrap();
    assert!(r.items.len() <= 100, "pool of {}", r.items.len());
    assert!(r.items.len() >= 50);
    assert!(r.items.iter().any(|i| i.memory.pinned), "pinned memories are always candidates");
}

/// What a later ranking sees of each candidate: everything a recorded ranking can change.
fn seen(r: &rank::Ranking) -> Vec<String> {
    r.items
        .iter()
        .map(|i| {
            format!(
                "{} shown={} injected={} rank={} final={} signals={:?}",
                i.memory.id.as_str(),
                i.memory.shown,
                i.injected,
                i.rank,
                i.final_score,
                i.memory.signals
            )
        })
        .collect()
}

#[test]
fn ranking_after_unapplied_rankings_equals_ranking_after_applying_them() {
    let (_d, mut j) = setup(&[
        mem("m1", "auth tokens expire after an hour"),
        mem("m2", "auth uses OAuth device flow"),
        mem("m3", "tokens are refreshed by the auth middleware"),
        mem("m4", "the deploy script tags releases"),
    ]);
    let tz = jiff::tz::TimeZone::UTC;
    let (s, other) = (SessionKey::from("claude:s"), SessionKey::from("claude:t"));
    let mut req = request("auth tokens", &tz);
    req.k = 2;
    req.session = Some(&s);
    let mut req_other = req.clone();
    req_other.session = Some(&other);
    let config = Config::default();
    let first = rank::rank(j.store(), &config, None, &req).unwrap();
    assert_eq!(first.injected().count(), 2);
    let pending = [rank::Unapplied::of(&first, Some(&s))];

    let before_same = rank::rank_after(j.store(), &config, None, &req, &pending).unwrap();
    let before_other = rank::rank_after(j.store(), &config, None, &req_other, &pending).unwrap();
    assert_ne!(seen(&before_same), seen(&rank::rank(j.store(), &config, None, &req).unwrap()), "the overlay counts");

    j.append(&[Event::new(NOW, "test", Some(s.clone()), Body::RankingServed(first.served.clone()))]).unwrap();
    let applied_same = rank::rank(j.store(), &config, None, &req).unwrap();
    let applied_other = rank::rank(j.store(), &config, None, &req_other).unwrap();
    assert_eq!(seen(&before_same), seen(&applied_same));
    assert_eq!(seen(&before_other), seen(&applied_other));
    // Already applied and still listed: counted once.
    assert_eq!(seen(&rank::rank_after(j.store(), &config, None, &req, &pending).unwrap()), seen(&applied_same));
    assert_eq!(seen(&rank::rank_after(j.store(), &config, None, &req_other, &pending).unwrap()), seen(&applied_other));
    assert!(applied_same.items.iter().filter(|i| i.memory.shown).count() == 2);
}

#[test]
fn bm25_source_keeps_the_best_hits_in_the_order_of_order_by_rank() {
    // 160 memories over a small vocabulary, every text twice: many matches
    // and exact ties, more than the 60 hits kept.
    let words = ["cache", "token", "retry", "sqlite", "deploy", "lint", "redis", "timeout", "worker", "queue"];
    let texts: Vec<String> = (0..80)
        .map(|i| {
            let n = 3 + i % 5;
            (0..n).map(|k| words[(i * 7 + k * 3) % words.len()]).collect::<Vec<_>>().join(" ")
        })
        .collect();
    let ids: Vec<String> = (0..160).map(|i| format!("mem_{i:03}")).collect();
    let mems: Vec<Mem<'_>> = (0..160).map(|i| mem(&ids[i], &texts[i % 80])).collect();
    let (_dir, j) = setup(&mems);
    let store = j.store();
    for query in ["cache retry timeout", "sqlite deploy", "redis queue worker lint token"] {
        let q = rank::PoolQuery { text: query, embedding: None, project: None, session: None, now: NOW };
        let pool = rank::pool::gather(store, &q, &rank::PoolLimits::default()).unwrap();
        let mut hits: Vec<(u32, i64)> =
            pool.memories.iter().filter_map(|m| m.signals.bm25_rank.map(|r| (r, m.rowid))).collect();
        hits.sort();
        let ours: Vec<i64> = hits.into_iter().map(|(_, rowid)| rowid).collect();
        let expr = pool.fts_query.unwrap();
        let sqlite: Vec<i64> = store
            .conn()
            .prepare("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank LIMIT 60")
            .unwrap()
            .query_map([&expr], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ours.len(), 60, "{query}");
        assert_eq!(ours, sqlite, "{query}");
    }
}

#[test]
fn bm25_hits_have_the_scores_of_fts5_bm25_for_stemmed_and_repeated_words() {
    // Inflected forms (one porter token for several query words), repeated
    // words, texts of many lengths and duplicates (ties): the pool's BM25
    // hits, computed from the postings, must be FTS5's `bm25()` exactly.
    let words = [
        "caching",
        "cached",
        "caches",
        "retries",
        "retrying",
        "deployed",
        "deploys",
        "linting",
        "queue",
        "queues",
        "timeouts",
        "worker",
        "workers",
        "connection",
        "connected",
        "the",
        "a",
        "schema",
        "migrations",
        "migrated",
    ];
    let texts: Vec<String> = (0..150)
        .map(|i| {
            let n = 1 + (i * 13) % 17;
            (0..n).map(|k| words[(i * 11 + k * k * 7 + k) % words.len()]).collect::<Vec<_>>().join(" ")
        })
        .collect();
    let ids: Vec<String> = (0..300).map(|i| format!("mem_{i:03}")).collect();
    let mems: Vec<Mem<'_>> = (0..300).map(|i| mem(&ids[i], &texts[i % 150])).collect();
    let (_dir, j) = setup(&mems);
    let store = j.store();
    for query in [
        "cache caching cached",
        "retry deploy",
        "workers worker queue connection migrated schema",
        "lint timeouts caches",
        "ünïcode café deployed",
    ] {
        let q = rank::PoolQuery { text: query, embedding: None, project: None, session: None, now: NOW };
        let pool = rank::pool::gather(store, &q, &rank::PoolLimits::default()).unwrap();
        let mut hits: Vec<(u32, i64, f32)> = pool
            .memories
            .iter()
            .filter_map(|m| m.signals.bm25_rank.map(|r| (r, m.rowid, m.signals.bm25_score.unwrap())))
            .collect();
        hits.sort_by_key(|h| h.0);
        let ours: Vec<(i64, u32)> = hits.into_iter().map(|(_, rowid, s)| (rowid, s.to_bits())).collect();
        let expr = pool.fts_query.unwrap();
        let sqlite: Vec<(i64, u32)> = store
            .conn()
            .prepare("SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank LIMIT 60")
            .unwrap()
            .query_map([&expr], |r| Ok((r.get(0)?, (r.get::<_, f64>(1)? as f32).to_bits())))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!ours.is_empty(), "{query}");
        assert_eq!(ours, sqlite, "{query}");
    }
}

/// After a compaction the agent gets back what it had: what was injected
/// and what the session itself taught (the user's corrections, which a
/// compaction summary may drop); never another session's lesson that was
/// not injected.
#[test]
fn a_restart_brings_back_what_the_session_taught_and_nothing_else() {
    let tz = jiff::tz::TimeZone::UTC;
    let here = "claude:now";
    let (_d, j) = setup(&[
        Mem {
            session: Some(here),
            project: Some("github.com/acme/edge"),
            importance: 0.6,
            ..mem("mem_taught", "Always build images with --platform linux/amd64 in this repo.")
        },
        Mem {
            session: Some("claude:before"),
            project: Some("github.com/acme/edge"),
            importance: 0.6,
            ..mem("mem_other", "The proxy image tags follow the chart version.")
        },
    ]);
    let config = Config::default();
    let session = SessionKey::from(here);
    let serve = |restart: bool| {
        let mut req =
            shared::domain::injection::ServeRequest::new(trigger::SESSION_START, "edge proxy nginx buffers", NOW);
        req.session = Some(&session);
        req.project = Some("github.com/acme/edge");
        req.restart = restart;
        shared::domain::injection::serve(j.store(), &config, None, &tz, &req).unwrap()
    };
    let ids = |s: &shared::domain::injection::Served| s.injected.iter().map(|m| m.0.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&serve(true)), ["mem_taught"], "the session's own lesson comes back; the other session's does not");
    // Forgotten, it does not.
    let mut j = j;
    j.append(&[Event::new(
        NOW,
        "test",
        None,
        Body::MemoryForgotten(MemoryForgotten { memory_id: "mem_taught".into(), ..Default::default() }),
    )])
    .unwrap();
    let mut req = shared::domain::injection::ServeRequest::new(trigger::SESSION_START, "edge proxy nginx buffers", NOW);
    req.session = Some(&session);
    req.project = Some("github.com/acme/edge");
    req.restart = true;
    assert!(shared::domain::injection::serve(j.store(), &config, None, &tz, &req).unwrap().injected.is_empty());
}
