//! The provenance tables are part of the projection: replaying the tapes
//! builds exactly what incremental application built, however the events
//! were batched (and when writers died between append and apply), and a log
//! with every event twice builds what it builds once.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use shared::base::ids::{EventId, SessionKey};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::projection::replay;
use shared::storage::event::*;
use shared::storage::journal::JournalOptions;
use shared::storage::store::{Store, canonical_dump};
use shared::storage::tape::{TapeLog, TapeOptions};

const SESSIONS: &[&str] = &["claude:a", "claude:b", "codex:c"];
const FILES: &[&str] = &["src/auth.rs", "/work/src/lib.rs", "src/session.rs"];

/// Code-like lines: each text is a few of them.
const LINES: &[&str] = &[
    "fn verify_token(&self, token: &Token) -> Result<Claims, AuthError> {",
    "    let claims = decode(token, &self.key).map_err(AuthError::Invalid)?;",
    "    if claims.expires_at < now() { return Err(AuthError::Expired); }",
    "    Ok(claims)",
    "}",
    "pub struct Session { id: SessionId, started: Instant, ttl: Duration }",
    "impl Session { pub fn is_alive(&self) -> bool { self.started.elapsed() < self.ttl } }",
    "const TOKEN_TTL_SECONDS: u64 = 3600; // the gateway drops idle tokens after an hour",
    "let retries = config.retries.unwrap_or(3).min(10);",
    "for attempt in 0..retries { match client.send(&request) { Ok(r) => return Ok(r), Err(e) => last = Some(e) } }",
];

fn code() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(LINES), 1..7).prop_map(|l| l.join("\n"))
}

#[derive(Clone, Debug)]
enum Gen {
    Started(usize),
    Msg(usize, String, bool),
    Call(usize, String),
    Result(usize, String),
    Edit { s: usize, f: usize, before: Option<String>, after: Option<String>, call: u8, at: u32 },
    Link(usize, usize, usize, u32),
    Summary(usize, String),
    Duplicate(usize),
}

fn any_event() -> impl Strategy<Value = Gen> {
    let s = 0..SESSIONS.len();
    let f = 0..FILES.len();
    prop_oneof![
        1 => s.clone().prop_map(Gen::Started),
        3 => (s.clone(), code(), any::<bool>()).prop_map(|(s, t, o)| Gen::Msg(s, t, o)),
        2 => (s.clone(), code()).prop_map(|(s, t)| Gen::Call(s, t)),
        2 => (s.clone(), code()).prop_map(|(s, t)| Gen::Result(s, t)),
        4 => (s.clone(), f.clone(), prop::option::of(code()), prop::option::of(code()), 0u8..3, 1u32..40)
            .prop_map(|(s, f, before, after, call, at)| Gen::Edit { s, f, before, after, call, at }),
        1 => (s.clone(), f.clone(), f, 1u32..40).prop_map(|(s, a, b, at)| Gen::Link(s, a, b, at)),
        1 => (s, code()).prop_map(|(s, t)| Gen::Summary(s, t)),
        1 => (0usize..1000).prop_map(Gen::Duplicate),
    ]
}

fn build(items: &[Gen]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for (i, g) in items.iter().enumerate() {
        let ts = Ts(1_700_000_000_000 + i as i64 * 60_000);
        let sk = |s: usize| Some(SessionKey(SESSIONS[s].to_owned()));
        let ev = |session: Option<SessionKey>, body: Body| Event {
            v: SCHEMA_VERSION,
            id: EventId(format!("ev_{i:05}")),
            ts,
            writer: "test".into(),
            session,
            body,
        };
        let lines = |t: &str| u32::try_from(t.lines().count()).unwrap();
        let e = match g {
            Gen::Started(s) => ev(
                sk(*s),
                Body::SessionStarted(SessionStarted {
                    harness: "claude".into(),
                    harness_session_id: SESSIONS[*s].into(),
                    project: Some("work".into()),
                    cwd: Some("/work".into()),
                    ..Default::default()
                }),
            ),
            Gen::Msg(s, t, out_) if *out_ => ev(sk(*s), Body::MsgOut(MsgOut { text: t.clone(), ..Default::default() })),
            Gen::Msg(s, t, _) => ev(sk(*s), Body::MsgIn(MsgIn { text: t.clone(), ..Default::default() })),
            Gen::Call(s, t) => ev(
                sk(*s),
                Body::ToolCall(ToolCall {
                    tool: "Edit".into(),
                    call_id: format!("c{i}"),
                    args: serde_json::json!({"file_path": "/work/src/auth.rs", "new_string": t}),
                }),
            ),
            Gen::Result(s, t) => ev(
                sk(*s),
                Body::ToolResult(ToolResult {
                    tool: "Read".into(),
                    call_id: format!("c{i}"),
                    stdout: t.clone(),
                    ..Default::default()
                }),
            ),
            Gen::Edit { s, f, before, after, call, at } => ev(
                sk(*s),
                Body::CodeEdit(CodeEdit {
                    file: FILES[*f].into(),
                    op: "update".into(),
                    before_range: before.as_ref().map(|b| [*at, at + lines(b) - 1]),
                    after_range: after.as_ref().map(|a| [*at, at + lines(a) - 1]),
                    call_id: Some(format!("call{call}")),
                    before_text: before.clone(),
                    after_text: after.clone(),
                    ..Default::default()
                }),
            ),
            Gen::Link(s, a, b, at) => ev(
                sk(*s),
                Body::SpanLink(SpanLink {
                    from_file: FILES[*a].into(),
                    from_range: Some([*at, at + 5]),
                    to_file: FILES[*b].into(),
                    to_range: Some([1, 6]),
                    note: "extracted".into(),
                }),
            ),
            Gen::Summary(s, t) => ev(
                sk(*s),
                Body::MsgIn(MsgIn { text: t.clone(), origin: origin::COMPACT_SUMMARY.into(), ..Default::default() }),
            ),
            Gen::Duplicate(k) if !out.is_empty() => out[k % out.len()].clone(),
            Gen::Duplicate(_) => continue,
        };
        out.push(e);
    }
    out
}

fn home() -> (tempfile::TempDir, Paths) {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::at(dir.path());
    (dir, paths)
}

fn dump(store: &Store, positions: bool) -> String {
    canonical_dump(store.conn(), positions).unwrap()
}

fn rows(store: &Store, table: &str) -> i64 {
    store.conn().query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Replay of the tapes equals the incrementally built provenance
    /// tables, with writers "crashing" between append and apply.
    #[test]
    fn index_replay_equals_incremental(
        items in prop::collection::vec(any_event(), 1..60),
        cuts in prop::collection::vec((1usize..8, any::<bool>()), 1..20),
    ) {
        let events = build(&items);
        let (_dir, paths) = home();
        let opts = JournalOptions { tape: TapeOptions { segment_bytes: 4_000, chunk_bytes: 1_500, ..TapeOptions::default() } };
        let mut journal = shared::projection::open_with(&paths, "test", opts.clone()).unwrap();
        let mut rest: &[Event] = &events;
        let mut cut_iter = cuts.iter().cycle();
        while !rest.is_empty() {
            let (n, crash) = *cut_iter.next().unwrap();
            let (chunk, tail) = rest.split_at(n.min(rest.len()));
            rest = tail;
            if crash {
                let tape = TapeLog::open(&paths.tapes(), opts.tape.clone()).unwrap();
                let payloads: Vec<Vec<u8>> = chunk.iter().map(Event::to_json).collect();
                let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
                tape.lock().unwrap().append(&refs).unwrap();
            } else {
                journal.append(chunk).unwrap();
            }
        }
        journal.catch_up().unwrap();
        let incremental = dump(journal.store(), true);
        drop(journal);
        replay(&paths, &mut |_| {}).unwrap();
        let replayed = Store::open(&paths.db()).unwrap();
        prop_assert_eq!(incremental, dump(&replayed, true));
    }

    /// A log with every event twice builds the same tables as once.
    #[test]
    fn index_of_a_doubled_log_equals_once(items in prop::collection::vec(any_event(), 1..50)) {
        let events = build(&items);
        let doubled: Vec<Event> = events.iter().flat_map(|e| [e.clone(), e.clone()]).collect();
        let (_d1, once) = home();
        let (_d2, twice) = home();
        let mut a = shared::projection::open(&once, "test").unwrap();
        a.append(&events).unwrap();
        let mut b = shared::projection::open(&twice, "test").unwrap();
        b.append(&doubled).unwrap();
        prop_assert_eq!(dump(a.store(), false), dump(b.store(), false));
    }
}

/// The property tests above compare tables; this checks they are not empty.
#[test]
fn edits_fill_every_provenance_table() {
    let items = vec![
        Gen::Started(0),
        Gen::Msg(0, LINES.join("\n"), false),
        Gen::Edit { s: 0, f: 0, before: None, after: Some(LINES[..5].join("\n")), call: 0, at: 1 },
        // Small change: lineage.
        Gen::Edit {
            s: 0,
            f: 0,
            before: Some(LINES[..5].join("\n")),
            after: Some(LINES[..4].join("\n")),
            call: 1,
            at: 1,
        },
        // Replaced by unrelated code: location only, and a tombstone.
        Gen::Edit {
            s: 0,
            f: 0,
            before: Some(LINES[..4].join("\n")),
            after: Some(LINES[7..10].join("\n")),
            call: 2,
            at: 1,
        },
        Gen::Link(0, 0, 1, 1),
    ];
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&build(&items)).unwrap();
    let s = j.store();
    assert!(rows(s, "prov_postings") >= 3);
    assert_eq!(rows(s, "prov_spans"), 3);
    assert_eq!(rows(s, "prov_tombstones"), 1);
    assert_eq!(rows(s, "prov_links"), 1);
    assert_eq!(rows(s, "prov_sessions"), 1);
    let classes: Vec<(String, f64)> = s
        .conn()
        .prepare("SELECT class, confidence FROM prov_edges ORDER BY to_lsn")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(classes.len(), 2, "{classes:?}");
    assert_eq!(classes[0].0, "lineage");
    assert!(classes[0].1 > 0.5, "{classes:?}");
    assert_eq!(classes[1].0, "location_only");
    let file: String = s.conn().query_row("SELECT file FROM prov_spans LIMIT 1", [], |r| r.get(0)).unwrap();
    assert_eq!(file, "/work/src/auth.rs", "relative paths are joined to the session's cwd");
}

// ---------------------------------------------------------------------------
// explain: short spans, writers before readers, the latest writer first
// ---------------------------------------------------------------------------

use shared::domain::provenance::explain::{self, ExplainOptions, Explanation, Target};

const FUNCTION: &str =
    "pub fn settle_invoice(ledger: &mut Ledger, invoice: &Invoice) -> Result<Receipt, BillingError> {
    let account = ledger.account_mut(invoice.customer).ok_or(BillingError::UnknownCustomer)?;
    if account.frozen {
        return Err(BillingError::Frozen(invoice.customer));
    }
    let due = invoice.total_cents.saturating_sub(account.credit_cents);
    account.credit_cents = account.credit_cents.saturating_sub(invoice.total_cents);
    account.balance_cents += due;
    ledger.journal.push(Entry::settled(invoice.id, due));
    Ok(Receipt { invoice: invoice.id, charged_cents: due })
}";

struct Log {
    events: Vec<Event>,
    t: i64,
}

impl Log {
    fn new() -> Log {
        Log { events: Vec::new(), t: 1_780_000_000_000 }
    }

    fn push(&mut self, session: &str, body: Body) {
        self.t += 60_000;
        let n = self.events.len();
        self.events.push(Event {
            v: SCHEMA_VERSION,
            id: EventId(format!("ev_{n:05}")),
            ts: Ts(self.t),
            writer: "test".into(),
            session: Some(SessionKey(session.to_owned())),
            body,
        });
    }

    fn start(&mut self, session: &str) {
        self.push(
            session,
            Body::SessionStarted(SessionStarted {
                harness: "claude".into(),
                harness_session_id: session.into(),
                project: Some("billing".into()),
                cwd: Some("/work/billing".into()),
                ..Default::default()
            }),
        );
    }

    /// An `Edit` call and its `code.edit` (the hunk's text, context included).
    fn edit(&mut self, session: &str, call: &str, before: Option<&str>, after: &str, at: u32) {
        self.push(
            session,
            Body::ToolCall(ToolCall {
                tool: "Edit".into(),
                call_id: call.into(),
                args: serde_json::json!({"file_path": "/work/billing/src/settle.rs",
                    "old_string": before.unwrap_or(""), "new_string": after}),
            }),
        );
        let n = |t: &str| u32::try_from(t.lines().count()).unwrap();
        self.push(
            session,
            Body::CodeEdit(CodeEdit {
                file: "/work/billing/src/settle.rs".into(),
                op: if before.is_some() { "update" } else { "add" }.into(),
                before_range: before.map(|b| [at, at + n(b) - 1]),
                after_range: Some([at, at + n(after) - 1]),
                call_id: Some(call.into()),
                before_text: before.map(str::to_owned),
                after_text: Some(after.to_owned()),
                ..Default::default()
            }),
        );
    }

    fn read(&mut self, session: &str, call: &str, text: &str) {
        self.push(
            session,
            Body::ToolCall(ToolCall {
                tool: "Read".into(),
                call_id: call.into(),
                args: serde_json::json!({"file_path": "/work/billing/src/settle.rs"}),
            }),
        );
        let numbered: Vec<String> = text.lines().enumerate().map(|(i, l)| format!("{:>6}→{l}", i + 1)).collect();
        self.push(
            session,
            Body::ToolResult(ToolResult {
                tool: "Read".into(),
                call_id: call.into(),
                stdout: numbered.join("\n"),
                ..Default::default()
            }),
        );
    }

    fn say(&mut self, session: &str, text: &str) {
        self.push(session, Body::MsgOut(MsgOut { text: text.into(), ..Default::default() }));
    }
}

fn explain_text(store: &Store, text: &str, all: bool) -> Explanation {
    let opts = ExplainOptions { brief: true, all, ..ExplainOptions::default() };
    explain::explain(store, None, &Target { text: text.to_owned(), ..Target::default() }, &opts).unwrap()
}

fn keys(e: &Explanation) -> Vec<&str> {
    e.sessions.iter().map(|s| s.session.as_str()).collect()
}

fn lines(text: &str, from: usize, to: usize) -> String {
    text.lines().skip(from - 1).take(to - from + 1).collect::<Vec<_>>().join("\n")
}

/// A 2- or 3-line span of code a session just wrote is explained by that
/// session (from the lines' exact hashes), even inside a longer edit.
#[test]
fn short_spans_are_explained_by_the_session_that_wrote_them() {
    let mut log = Log::new();
    log.start("claude:writer");
    log.edit("claude:writer", "w1", None, FUNCTION, 10);
    log.say("claude:writer", "Added settle_invoice: credit is consumed before the balance is charged.");
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&log.events).unwrap();
    let three = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}";
    for (from, to) in [(3, 5), (6, 7), (7, 8), (9, 10), (1, 2)] {
        let span = lines(FUNCTION, from, to);
        let e = explain_text(j.store(), &span, false);
        assert_eq!(keys(&e), ["claude:writer"], "lines {from}-{to}: {e:#?}");
        assert_eq!(e.sessions[0].wrote, Some("span"));
        assert!(e.target.fingerprints >= 3, "lines {from}-{to} have line hashes and k-grams: {e:#?}");
    }
    // A 3-line function written by one session, beside another's.
    let mut log2 = Log::new();
    log2.start("claude:other");
    log2.edit("claude:other", "o1", None, "fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}", 1);
    log2.start("claude:adder");
    log2.edit("claude:adder", "a1", None, three, 5);
    j.append(
        &log2.events.iter().map(|e| Event { id: EventId(format!("{}b", e.id.0)), ..e.clone() }).collect::<Vec<_>>(),
    )
    .unwrap();
    let e = explain_text(j.store(), three, false);
    assert_eq!(keys(&e)[0], "claude:adder", "{e:#?}");
    assert_eq!(e.sessions[0].wrote, Some("span"));
    // One line of two words is one hash, which both functions share (words
    // only: `a + b` reads as `a - b`): no match, unless asked for all.
    let e = explain_text(j.store(), "    a + b", false);
    assert!(e.sessions.is_empty() && !e.warnings.is_empty(), "{e:#?}");
    let e = explain_text(j.store(), "    a + b", true);
    assert_eq!(e.sessions.len(), 2, "{e:#?}");
}

/// Sessions that wrote the span come before the many that only read it,
/// and among writers the latest comes first, without `--all`.
#[test]
fn writers_come_before_readers_and_the_latest_writer_first() {
    let mut log = Log::new();
    log.start("claude:author");
    log.edit("claude:author", "a1", None, FUNCTION, 1);
    // Eight sessions read the function, twice each, after it was written.
    for r in 0..8 {
        let s = format!("claude:reader{r}");
        log.start(&s);
        log.read(&s, &format!("r{r}a"), FUNCTION);
        log.say(&s, &format!("settle_invoice consumes credit first:\n{}", lines(FUNCTION, 6, 8)));
        log.read(&s, &format!("r{r}b"), FUNCTION);
        log.read(&s, &format!("r{r}c"), FUNCTION);
    }
    // A later session rewrites three lines in the middle (a hunk with its
    // three lines of context).
    let new_middle =
        "    let due = invoice.total_cents.saturating_sub(account.credit_cents).max(invoice.minimum_cents);
    account.credit_cents = account.credit_cents.saturating_sub(invoice.total_cents - due.min(invoice.total_cents));
    account.balance_cents = account.balance_cents.checked_add(due).ok_or(BillingError::Overflow)?;";
    let edited = FUNCTION.replace(&lines(FUNCTION, 6, 8), new_middle);
    log.start("claude:fixer");
    log.read("claude:fixer", "f0", FUNCTION);
    log.edit("claude:fixer", "f1", Some(&lines(FUNCTION, 3, 11)), &lines(&edited, 3, 11), 3);
    let (_d, paths) = home();
    let mut j = shared::projection::open(&paths, "test").unwrap();
    j.append(&log.events).unwrap();

    // The rewritten lines: the fixer wrote them, nobody read them.
    let e = explain_text(j.store(), &lines(&edited, 6, 8), false);
    assert_eq!(keys(&e)[0], "claude:fixer", "{e:#?}");
    assert_eq!(e.sessions[0].wrote, Some("span"));
    // The function as it is now: both wrote some of it, the fixer last;
    // the readers, with more touches each, come after the writers.
    let e = explain_text(j.store(), &edited, false);
    assert_eq!(keys(&e)[..2], ["claude:fixer", "claude:author"], "{e:#?}");
    assert!(e.sessions[2..].iter().all(|s| s.wrote.is_none() && s.session.starts_with("claude:reader")), "{e:#?}");
    assert!(e.sessions[2].touch_count > e.sessions[1].touch_count, "readers touched it more often: {e:#?}");
    // Lines the author wrote and the fixer kept as context: the author.
    let e = explain_text(j.store(), &lines(&edited, 1, 3), false);
    assert_eq!(keys(&e)[0], "claude:author", "{e:#?}");
    assert_eq!(e.sessions[0].wrote, Some("span"));
}
