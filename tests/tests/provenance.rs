//! Provenance end to end, through the real binaries: harness logs scanned by
//! `engram-ingestor`, files on disk explained by `engram-scorer explain`.
//!
//! - A real Claude Code `toolUseResult` edit (the ccv fixture) and a Codex
//!   `apply_patch`: the edited span, in a file on disk, is explained by the
//!   editing session first, also after a line shift, a move and a small edit.
//! - An unrelated function written where another was removed is not linked
//!   to it (a tombstone marks the place); the removed code re-inserted
//!   verbatim links back to the session that wrote it.
//! - An agent's `span.link` is followed.
//! - A continuation across a compaction is found and labelled.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::World;
use serde_json::{Value, json};
use shared::base::time::Ts;

/// `engram-scorer explain TARGET ARGS…` as JSON.
fn explain(w: &World, target: &str, args: &[&str]) -> Value {
    let mut all = vec!["explain", target];
    all.extend_from_slice(args);
    let out = tests::success_stdout(&all, w.scorer(&all).output().unwrap());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn sessions(e: &Value) -> Vec<String> {
    e["sessions"].as_array().unwrap().iter().map(|s| s["session"].as_str().unwrap().to_owned()).collect()
}

fn first(e: &Value) -> String {
    sessions(e).first().cloned().unwrap_or_else(|| panic!("no session found: {e}"))
}

/// Writes `lines` to `path`; returns the 1-based range of `span` in it.
fn put(path: &Path, before: &[String], span: &str, after: &[String]) -> String {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = before.join("\n");
    if !before.is_empty() {
        text.push('\n');
    }
    text.push_str(span.trim_end_matches('\n'));
    text.push('\n');
    text.push_str(&after.join("\n"));
    std::fs::write(path, text).unwrap();
    let start = before.len() + 1;
    let end = start + span.trim_end_matches('\n').lines().count() - 1;
    format!("{}:{start}-{end}", path.display())
}

/// Lines of unrelated filler (no word in common with the spans).
fn filler(n: usize, seed: &str) -> Vec<String> {
    (0..n).map(|i| format!("// {seed} note {i}: nothing here matters qqq{i} zzz{seed}{i}")).collect()
}

// ---------------------------------------------------------------------------
// A real Claude Code edit
// ---------------------------------------------------------------------------

/// The fixture's `MultiEdit` of `useTodos.test.ts` (several structuredPatch hunks,
/// made inside a sidechain), its largest hunk's new text and the session
/// key the adapter gives its sidechain.
fn fixture_edit(fixture: &Path) -> (String, String) {
    let records: Vec<Value> =
        std::fs::read_to_string(fixture).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let edit = records
        .iter()
        .find(|r| {
            let t = &r["toolUseResult"];
            t["filePath"].as_str().is_some_and(|f| f.ends_with("useTodos.test.ts"))
                && t["structuredPatch"].as_array().is_some_and(|h| h.len() >= 3)
        })
        .expect("the useTodos.test.ts edit");
    let hunk = edit["toolUseResult"]["structuredPatch"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|h| h["newLines"].as_u64().unwrap())
        .unwrap();
    let text: Vec<&str> = hunk["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .filter(|l| !l.starts_with('-'))
        .map(|l| &l[1..])
        .collect();
    // The sidechain's root: follow parentUuid up to the record that has none.
    let by_uuid: std::collections::HashMap<&str, &Value> =
        records.iter().filter_map(|r| Some((r["uuid"].as_str()?, r))).collect();
    let mut root = edit;
    while let Some(p) = root["parentUuid"].as_str().and_then(|p| by_uuid.get(p)) {
        root = p;
    }
    let session =
        format!("claude:{}/sidechain-{}", edit["sessionId"].as_str().unwrap(), root["uuid"].as_str().unwrap());
    (text.join("\n"), session)
}

#[test]
fn a_claude_edit_is_explained_by_its_session_after_shift_move_and_small_edit() {
    let Some(fixtures) = shared::base::testing::shared_data("fixtures/claude") else { return };
    let w = World::new();
    let src = fixtures.join("ccv-1.0.98-sidechains.jsonl");
    w.copy(&src, &w.claude_projects().join("-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"));
    w.copy(&fixtures.join("ccv-1.0.108.jsonl"), &w.claude_projects().join("-path-to-Demo/5c0375b4.jsonl"));
    w.scan();
    let (span, editor) = fixture_edit(&src);
    assert!(span.lines().count() >= 15, "{span}");
    let file = w.root().join("repo/src/hooks/useTodos.test.ts");

    // The span as the edit wrote it.
    let target = put(&file, &filler(12, "a"), &span, &filler(4, "b"));
    let e = explain(&w, &target, &[]);
    assert_eq!(first(&e), editor, "{e:#}");
    let s0 = &e["sessions"][0];
    let edited = |t: &Value| t["tool"] == "Edit" || t["tool"] == "MultiEdit";
    assert!(s0["touches"].as_array().unwrap().iter().any(edited), "{s0:#}");
    assert_eq!(s0["via"], "direct");
    assert!(s0["windows"].as_array().is_some_and(|w| !w.is_empty()), "transcript windows: {s0:#}");

    // Lines shifted: 40 more lines above.
    let target = put(&file, &filler(52, "c"), &span, &filler(4, "d"));
    assert_eq!(first(&explain(&w, &target, &["--brief"])), editor);

    // Moved to another file, at its end.
    let moved = w.root().join("repo/src/other/moved.test.ts");
    let target = put(&moved, &filler(30, "e"), &span, &[]);
    assert_eq!(first(&explain(&w, &target, &["--brief"])), editor);

    // A small edit inside the span: one identifier renamed, one line changed.
    let mut lines: Vec<String> = span.lines().map(str::to_owned).collect();
    let mid = lines.len() / 2;
    lines[mid] = format!("{}  // checked", lines[mid].replace("result", "outcome"));
    let target = put(&file, &filler(12, "f"), &lines.join("\n"), &filler(4, "g"));
    let e = explain(&w, &target, &["--brief"]);
    assert_eq!(first(&e), editor, "{e:#}");

    // `view` gives the complete transcript at a touch.
    let offset = e["sessions"][0]["touches"][0]["offset"].as_u64().unwrap().to_string();
    let out = tests::success_stdout(
        "view",
        w.scorer(&["view", &editor, "--at", &offset, "--before", "1", "--after", "1"]).output().unwrap(),
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["events"].as_array().unwrap().len(), 3, "{v:#}");
}

#[test]
fn a_real_rewrite_leaves_a_tombstone_and_its_location_only_edge_is_not_followed() {
    let Some(fixtures) = shared::base::testing::shared_data("fixtures/claude") else { return };
    let w = World::new();
    let src = fixtures.join("ccv-1.0.98-sidechains.jsonl");
    w.copy(&src, &w.claude_projects().join("-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"));
    w.scan();
    // The fixture's edit that replaced all of page.tsx (103 lines) by 14 others.
    let store = w.store();
    let (lsn, class, conf): (i64, String, f64) = store
        .conn()
        .query_row(
            "SELECT s.lsn, e.class, e.confidence FROM prov_spans s JOIN prov_edges e ON e.to_lsn = s.lsn
             WHERE s.file LIKE '%/src/app/page.tsx' AND s.before_end = 103",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(class, "location_only", "{conf}");
    let tomb: i64 =
        store.conn().query_row("SELECT COUNT(*) FROM prov_tombstones WHERE lsn = ?1", [lsn], |r| r.get(0)).unwrap();
    assert_eq!(tomb, 1);
}

// ---------------------------------------------------------------------------
// Hand-written transcripts (this project's own) in the harnesses' formats
// ---------------------------------------------------------------------------

/// Writes a Claude Code transcript, one record per call.
struct Claude {
    sid: String,
    cwd: String,
    t: i64,
    n: usize,
    parent: Option<String>,
    lines: Vec<Value>,
}

impl Claude {
    fn new(sid: &str, cwd: &Path, t: i64) -> Claude {
        Claude { sid: sid.into(), cwd: cwd.to_string_lossy().into(), t, n: 0, parent: None, lines: Vec::new() }
    }

    fn rec(&mut self, mut r: Value) {
        self.n += 1;
        self.t += 1_000;
        let uuid = format!("{}-{:04}", self.sid, self.n);
        let base = json!({"sessionId": self.sid, "cwd": self.cwd, "uuid": uuid, "parentUuid": self.parent,
            "timestamp": Ts(self.t).to_rfc3339(), "isSidechain": false, "userType": "external", "version": "1.0.98"});
        for (k, v) in base.as_object().unwrap() {
            r.as_object_mut().unwrap().entry(k.clone()).or_insert(v.clone());
        }
        self.parent = Some(uuid);
        self.lines.push(r);
    }

    fn user(&mut self, text: &str) {
        self.rec(json!({"type": "user", "message": {"role": "user", "content": text}}));
    }

    fn summary(&mut self, text: &str) {
        self.rec(json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": text}}));
    }

    fn say(&mut self, text: &str) {
        self.rec(
            json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}),
        );
    }

    fn tool(&mut self, name: &str, input: Value, result: &str, tur: Value) {
        let id = format!("toolu_{}_{}", self.sid, self.n);
        self.rec(json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}}));
        self.rec(json!({"type": "user", "toolUseResult": tur, "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]}}));
    }

    fn write(&mut self, path: &Path, content: &str) {
        let p = path.to_string_lossy();
        self.tool(
            "Write",
            json!({"file_path": p, "content": content}),
            &format!("File created successfully at: {p}"),
            json!({"type": "create", "filePath": p, "content": content, "structuredPatch": []}),
        );
    }

    /// An `Edit` of `original` (the file before), replacing the whole lines
    /// `old` by `new`, with its structuredPatch (three lines of context).
    fn edit(&mut self, path: &Path, original: &str, old: &str, new: &str) {
        let lines: Vec<&str> = original.lines().collect();
        let old_lines: Vec<&str> = old.lines().collect();
        let new_lines: Vec<&str> = new.lines().collect();
        let at = (0..lines.len()).find(|&i| lines[i..].starts_with(&old_lines)).expect("old text in the file");
        let cb = at.min(3);
        let end = at + old_lines.len();
        let ca = (lines.len() - end).min(3);
        let mut patch: Vec<String> = lines[at - cb..at].iter().map(|l| format!(" {l}")).collect();
        patch.extend(old_lines.iter().map(|l| format!("-{l}")));
        patch.extend(new_lines.iter().map(|l| format!("+{l}")));
        patch.extend(lines[end..end + ca].iter().map(|l| format!(" {l}")));
        let p = path.to_string_lossy();
        let hunk = json!({"oldStart": at - cb + 1, "oldLines": cb + old_lines.len() + ca,
            "newStart": at - cb + 1, "newLines": cb + new_lines.len() + ca, "lines": patch});
        self.tool(
            "Edit",
            json!({"file_path": p, "old_string": old, "new_string": new}),
            &format!("The file {p} has been updated."),
            json!({"filePath": p, "oldString": old, "newString": new, "originalFile": original,
                "structuredPatch": [hunk], "userModified": false, "replaceAll": false}),
        );
    }

    fn save(&self, w: &World) -> PathBuf {
        let dir = w.claude_projects().join(self.cwd.replace(['/', '.'], "-"));
        let path = dir.join(format!("{}.jsonl", self.sid));
        let text: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        w.write(&path, text.as_bytes());
        path
    }
}

const DAY: i64 = 86_400_000;
const T0: i64 = 1_780_000_000_000;

const VALIDATOR: &str = "pub fn validate_token(token: &str, key: &SigningKey) -> Result<Claims, AuthError> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(AuthError::Malformed);
    }
    let claims: Claims = decode_segment(parts[1])?;
    verify_signature(parts[0], parts[1], parts[2], key)?;
    if claims.expires_at < unix_now() - CLOCK_SKEW_SECONDS {
        return Err(AuthError::Expired);
    }
    Ok(claims)
}";

const LIMITER: &str = "pub struct RateLimiter { buckets: HashMap<IpAddr, Bucket>, per_minute: u32 }
impl RateLimiter {
    pub fn admit(&mut self, ip: IpAddr, now: Instant) -> bool {
        let bucket = self.buckets.entry(ip).or_insert_with(|| Bucket::full(self.per_minute));
        bucket.refill(now, self.per_minute);
        if bucket.tokens == 0 {
            return false;
        }
        bucket.tokens -= 1;
        true
    }
}";

fn header() -> String {
    "use std::collections::HashMap;\nuse std::net::IpAddr;\nuse crate::keys::SigningKey;\n".to_owned()
}

fn footer() -> String {
    "\n#[cfg(test)]\nmod tests;\n".to_owned()
}

#[test]
fn unrelated_code_at_the_same_place_is_not_linked_and_verbatim_reinsertion_links_back() {
    let w = World::new();
    let repo = w.root().join("repo");
    let file = repo.join("src/auth.rs");
    let with = |body: &str| format!("{}{body}\n{}", header(), footer());

    // A writes the validator.
    let mut a = Claude::new("aaaaaaaa-0000-4000-8000-000000000001", &repo, T0);
    a.user("write a token validator for the gateway");
    a.write(&file, &with(VALIDATOR));
    a.say("The validator checks the signature and allows a small clock skew.");
    a.save(&w);
    // B replaces it, at the same place, by an unrelated rate limiter.
    let mut b = Claude::new("bbbbbbbb-0000-4000-8000-000000000002", &repo, T0 + DAY);
    b.user("we no longer validate tokens here; put a per-IP rate limiter instead");
    b.edit(&file, &with(VALIDATOR), VALIDATOR, LIMITER);
    b.save(&w);
    w.scan();

    let on_disk = with(LIMITER);
    w.write(&file, on_disk.as_bytes());
    let start = on_disk.lines().position(|l| l.starts_with("pub struct RateLimiter")).unwrap() + 1;
    let target = format!("{}:{start}-{}", file.display(), start + LIMITER.lines().count() - 1);
    let e = explain(&w, &target, &[]);
    assert_eq!(sessions(&e), vec![format!("claude:{}", b.sid)], "the validator's session is not linked: {e:#}");
    assert!(e["lineage"].as_array().unwrap().is_empty(), "{e:#}");
    let tombs = e["tombstones"].as_array().unwrap();
    assert_eq!(tombs.len(), 1, "{e:#}");
    assert_eq!(tombs[0]["session"], format!("claude:{}", b.sid));
    assert_eq!(tombs[0]["matched"], "location");
    // The edge exists, for forensics only.
    let all = explain(&w, &target, &["--all", "--brief"]);
    let edges = all["lineage"].as_array().unwrap();
    assert!(edges.iter().any(|x| x["class"] == "location_only"), "{all:#}");

    // C puts the validator back, verbatim: it links back to A.
    let mut c = Claude::new("cccccccc-0000-4000-8000-000000000003", &repo, T0 + 2 * DAY);
    c.user("bring the token validator back, exactly as it was");
    c.edit(&file, &with(LIMITER), LIMITER, VALIDATOR);
    c.save(&w);
    w.scan();
    let on_disk = with(VALIDATOR);
    w.write(&file, on_disk.as_bytes());
    let target = format!("{}:{start}-{}", file.display(), start + VALIDATOR.lines().count() - 1);
    let e = explain(&w, &target, &[]);
    let found = sessions(&e);
    assert_eq!(found[0], format!("claude:{}", c.sid), "{e:#}");
    assert!(found.contains(&format!("claude:{}", a.sid)), "re-inserted text links back to its author: {e:#}");
    let tombs = e["tombstones"].as_array().unwrap();
    assert!(tombs.iter().any(|t| t["session"] == format!("claude:{}", b.sid)), "the gap stays marked: {e:#}");
}

#[test]
fn an_agent_link_is_followed() {
    let w = World::new();
    let repo = w.root().join("repo");
    let old_file = repo.join("src/auth.rs");
    let new_file = repo.join("src/auth/token.rs");
    let with = |body: &str| format!("{}{body}\n{}", header(), footer());
    // A restructured version: little in common with the validator's words.
    let restructured = "impl TokenCheck for Gateway {
    fn check(&self, raw: &str) -> Outcome {
        match Jwt::parse(raw) {
            Some(jwt) if self.keys.accepts(&jwt) && jwt.fresh_within(SKEW) => Outcome::Allowed(jwt.claims),
            Some(_) => Outcome::Denied(Reason::Stale),
            None => Outcome::Denied(Reason::Garbled),
        }
    }
}";

    let mut a = Claude::new("aaaaaaaa-0000-4000-8000-000000000011", &repo, T0);
    a.user("write a token validator for the gateway");
    a.write(&old_file, &with(VALIDATOR));
    a.save(&w);
    let mut b = Claude::new("bbbbbbbb-0000-4000-8000-000000000012", &repo, T0 + DAY);
    b.user("move token checking into its own module and make it a trait impl");
    b.edit(&old_file, &with(VALIDATOR), VALIDATOR, "");
    b.write(&new_file, restructured);
    b.save(&w);
    w.scan();
    w.write(&new_file, restructured.as_bytes());
    let target = format!("{}:1-{}", new_file.display(), restructured.lines().count());

    // Without the link, the rewrite is unrelated to A's validator.
    let before = explain(&w, &target, &["--brief"]);
    assert!(!sessions(&before).contains(&format!("claude:{}", a.sid)), "{before:#}");

    let start = header().lines().count() + 1;
    let from = format!("{}:{start}-{}", old_file.display(), start + VALIDATOR.lines().count() - 1);
    let session = format!("claude:{}", b.sid);
    w.ok(&["link", &from, &target, "--note", "extracted into a trait impl", "--session", &session]);
    let e = explain(&w, &target, &[]);
    let found = sessions(&e);
    assert_eq!(found[0], session, "{e:#}");
    let a_key = format!("claude:{}", a.sid);
    let a_ev = e["sessions"].as_array().unwrap().iter().find(|s| s["session"] == a_key.as_str());
    assert!(a_ev.is_some_and(|s| s["via"] == "lineage"), "the link leads to the validator's author: {e:#}");
    assert!(e["lineage"].as_array().unwrap().iter().any(|x| x["agent_link"] == true), "{e:#}");

    // A link declared outside any session is followed too (resolved at query time).
    let w2 = World::new();
    let repo2 = w2.root().join("repo");
    let (old2, new2) = (repo2.join("src/auth.rs"), repo2.join("src/auth/token.rs"));
    let mut a = Claude::new("aaaaaaaa-0000-4000-8000-000000000021", &repo2, T0);
    a.write(&old2, &with(VALIDATOR));
    a.save(&w2);
    let mut b = Claude::new("bbbbbbbb-0000-4000-8000-000000000022", &repo2, T0 + DAY);
    b.edit(&old2, &with(VALIDATOR), VALIDATOR, "");
    b.write(&new2, restructured);
    b.save(&w2);
    w2.scan();
    w2.write(&new2, restructured.as_bytes());
    let target2 = format!("{}:1-{}", new2.display(), restructured.lines().count());
    let from2 = format!("{}:{start}-{}", old2.display(), start + VALIDATOR.lines().count() - 1);
    w2.ok(&["link", &from2, &target2]);
    let e = explain(&w2, &target2, &["--brief"]);
    assert!(sessions(&e).contains(&format!("claude:{}", a.sid)), "{e:#}");
}

#[test]
fn a_continuation_across_a_compaction_is_found() {
    let w = World::new();
    let repo = w.root().join("repo");
    let decision = "We settled on evicting by last access with a hard cap of 512 entries per tenant, because the \
        billing service replays the same tenant keys in bursts and a frequency count would pin stale invoices \
        in memory for hours; entries older than the invoice retention window are dropped first.";
    let mut a = Claude::new("aaaaaaaa-0000-4000-8000-000000000031", &repo, T0);
    a.user("how should the invoice cache evict entries?");
    a.say("Two options: least recently used, or least frequently used with aging.");
    a.say(decision);
    a.user("agreed, but we are running out of context");
    a.save(&w);
    let mut b = Claude::new("bbbbbbbb-0000-4000-8000-000000000032", &repo, T0 + 600_000);
    b.summary(&format!(
        "This session is being continued from a previous conversation that ran out of context. \
         The conversation is summarized below:\nThe user asked how the invoice cache should evict. {decision}"
    ));
    b.user("now implement it");
    let code = "pub struct InvoiceCache { per_tenant: HashMap<TenantId, LruMap<InvoiceKey, Invoice>> }
impl InvoiceCache {
    pub const CAP_PER_TENANT: usize = 512;
    pub fn insert(&mut self, tenant: TenantId, key: InvoiceKey, invoice: Invoice) {
        let map = self.per_tenant.entry(tenant).or_insert_with(|| LruMap::new(Self::CAP_PER_TENANT));
        map.retain(|_, inv| !inv.past_retention());
        map.insert(key, invoice);
    }
}";
    let file = repo.join("src/cache.rs");
    b.write(&file, code);
    b.save(&w);
    w.scan();
    w.write(&file, code.as_bytes());
    let e = explain(&w, &format!("{}:1-9", file.display()), &[]);
    let (ka, kb) = (format!("claude:{}", a.sid), format!("claude:{}", b.sid));
    assert_eq!(first(&e), kb, "{e:#}");
    let s = e["sessions"].as_array().unwrap().iter().find(|s| s["session"] == ka.as_str());
    let s = s.unwrap_or_else(|| panic!("the session before the compaction is found: {e:#}"));
    assert_eq!(s["via"], "continuation");
    assert_eq!(s["continuation"]["into"], kb.as_str());
    assert_eq!(s["continuation"]["compaction"], true);
    let text = serde_json::to_string(&s["windows"]).unwrap();
    assert!(text.contains("hard cap of 512 entries"), "its transcript is shown: {s:#}");
}

#[test]
fn sessions_that_open_with_the_harness_init_prompt_do_not_continue_each_other() {
    let w = World::new();
    let repo = w.root().join("repo");
    // Claude Code's `/init` writes this turn in the user's name; every
    // session that runs it opens alike (the words after the harness's
    // opening are ours).
    let init = "Please analyze this codebase and create a CLAUDE.md file, which future agent sessions will read \
        before they work in this repository. Describe the commands that build, lint and test the code, how to run \
        one test on its own, and the architecture a newcomer needs several files to see. Keep it short and leave \
        out what any developer already knows or what can be found by listing the files.";
    let mut a = Claude::new("aaaaaaaa-0000-4000-8000-000000000041", &repo, T0);
    a.user(init);
    a.say("The repository is a command-line tool for pruning stale docker volumes; I will document make targets.");
    a.write(&repo.join("CLAUDE.md"), "# CLAUDE.md\n\nBuild with `make`; test with `make check`.\n");
    a.save(&w);
    let mut b = Claude::new("bbbbbbbb-0000-4000-8000-000000000042", &repo, T0 + 600_000);
    b.user(init);
    b.say("Since the last look the tool gained a scheduler; the notes should name the cron syntax it accepts.");
    let code = "pub fn next_run(spec: &CronSpec, after: Timestamp) -> Option<Timestamp> {
    let mut t = after.next_minute();
    for _ in 0..MAX_MINUTES_AHEAD {
        if spec.matches(t) {
            return Some(t);
        }
        t = t.next_minute();
    }
    None
}";
    let file = repo.join("src/schedule.rs");
    b.write(&file, code);
    b.save(&w);
    w.scan();
    w.write(&file, code.as_bytes());
    let e = explain(&w, &format!("{}:1-10", file.display()), &["--all"]);
    let (ka, kb) = (format!("claude:{}", a.sid), format!("claude:{}", b.sid));
    assert_eq!(first(&e), kb, "{e:#}");
    assert!(!sessions(&e).contains(&ka), "a shared /init opening is no continuation: {e:#}");
}

// ---------------------------------------------------------------------------
// Codex apply_patch
// ---------------------------------------------------------------------------

#[test]
fn a_codex_apply_patch_is_explained_by_its_session() {
    let w = World::new();
    let repo = w.root().join("repo");
    let code = "pub fn retry<T, E>(mut attempt: impl FnMut() -> Result<T, E>, policy: &Backoff) -> Result<T, E> {
    let mut delay = policy.initial;
    for _ in 1..policy.max_attempts {
        match attempt() {
            Ok(value) => return Ok(value),
            Err(_) => std::thread::sleep(delay),
        }
        delay = (delay * 2).min(policy.ceiling);
    }
    attempt()
}";
    let patch = format!(
        "*** Begin Patch\n*** Add File: src/retry.rs\n{}\n*** End Patch",
        code.lines().map(|l| format!("+{l}")).collect::<Vec<_>>().join("\n")
    );
    let ts = |s: i64| Ts(T0 + s * 1000).to_rfc3339();
    let sid = "0199aaaa-1111-7222-8333-444455556666";
    let cwd = repo.to_string_lossy();
    let path = format!("{cwd}/src/retry.rs");
    let lines = [
        json!({"timestamp": ts(0), "type": "session_meta", "payload": {"id": sid, "timestamp": ts(0), "cwd": cwd,
            "originator": "codex_cli_rs", "cli_version": "0.146.0", "source": "cli"}}),
        json!({"timestamp": ts(1), "type": "turn_context", "payload": {"turn_id": "t1", "cwd": cwd, "model": "gpt-5"}}),
        json!({"timestamp": ts(2), "type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "add a retry helper with exponential backoff"}]}}),
        json!({"timestamp": ts(3), "type": "response_item", "payload": {"type": "custom_tool_call", "status": "completed",
            "call_id": "call_p1", "name": "apply_patch", "input": patch}}),
        json!({"timestamp": ts(4), "type": "event_msg", "payload": {"type": "patch_apply_end", "call_id": "call_p1",
            "turn_id": "t1", "stdout": "Success. Updated the following files:\nA src/retry.rs\n", "stderr": "",
            "success": true, "status": "completed", "changes": {path.clone(): {"type": "add", "content": format!("{code}\n")}}}}),
        json!({"timestamp": ts(5), "type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": "call_p1",
            "output": "{\"output\":\"Success. Updated the following files:\\nA src/retry.rs\\n\",\"metadata\":{\"exit_code\":0}}"}}),
        json!({"timestamp": ts(6), "type": "response_item", "payload": {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Added src/retry.rs."}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    w.write(&w.codex_sessions().join(format!("2026/06/01/rollout-2026-06-01T00-00-00-{sid}.jsonl")), text.as_bytes());
    // Another Codex session that only talks about something else.
    let other = "0199bbbb-1111-7222-8333-444455556666";
    let distractor = [
        json!({"timestamp": ts(100), "type": "session_meta", "payload": {"id": other, "timestamp": ts(100), "cwd": cwd,
            "originator": "codex_cli_rs", "cli_version": "0.146.0", "source": "cli"}}),
        json!({"timestamp": ts(101), "type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "why does the retry helper sleep? explain policy.initial"}]}}),
    ];
    let text: String = distractor.iter().map(|l| format!("{l}\n")).collect();
    w.write(&w.codex_sessions().join(format!("2026/06/02/rollout-2026-06-02T00-00-00-{other}.jsonl")), text.as_bytes());
    w.scan();
    assert_eq!(w.count("SELECT COUNT(*) FROM prov_spans WHERE file LIKE '%/src/retry.rs'"), 1);

    let file = repo.join("src/retry.rs");
    let key = format!("codex:{sid}");
    let target = put(&file, &[], code, &[]);
    let e = explain(&w, &target, &[]);
    assert_eq!(sessions(&e), vec![key.clone()], "{e:#}");
    // The same through the MCP tool.
    let rpc = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_explain",
            "arguments": {"file": file.to_string_lossy(), "start": 1, "end": code.lines().count(), "brief": true}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_explain", "arguments": {"start": 1}}}),
    ];
    let input: String = rpc.iter().map(|l| format!("{l}\n")).collect();
    let out = tests::success_stdout("mcp", w.hook(w.scorer(&["mcp"]), input.as_bytes()));
    let answers: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let result = &answers[1]["result"];
    assert_eq!(result["isError"], false, "{result:#}");
    assert_eq!(result["structuredContent"]["sessions"][0]["session"], key.as_str(), "{result:#}");
    assert_eq!(answers[2]["result"]["isError"], true, "a file or a text is needed: {}", answers[2]);

    // Shifted, then slightly edited.
    let target = put(&file, &filler(25, "h"), code, &filler(3, "i"));
    assert_eq!(first(&explain(&w, &target, &["--brief"])), key);
    let edited = code.replace("std::thread::sleep(delay)", "sleeper.sleep(delay)");
    let target = put(&file, &filler(25, "j"), &edited, &filler(3, "k"));
    assert_eq!(first(&explain(&w, &target, &["--brief"])), key);
}

#[test]
fn record_stdin_takes_seed_tape_lines() {
    let w = World::new();
    let repo = w.root().join("repo");
    let file = repo.join("src/auth.rs");
    let tape = [
        json!({"t": "2026-02-15T17:30:00Z", "k": "msg.in", "role": "user", "content": "Fix the auth timeout bug"}),
        json!({"t": "2026-02-15T17:31:00Z", "k": "code.edit", "file": file.to_string_lossy(), "after_range": [1, 12],
            "after_text": VALIDATOR}),
        json!({"t": "2026-02-15T17:32:00Z", "k": "msg.out", "content": format!("Rewrote it:\n{VALIDATOR}")}),
    ];
    let input: String = tape.iter().map(|l| format!("{l}\n")).collect();
    let out = w.hook(w.cmd(&["record", "--stdin"]), input.as_bytes());
    let r: Value = serde_json::from_str(&tests::success_stdout("record", out)).unwrap();
    assert!(r["events"].as_u64().unwrap() >= 4, "{r}");
    let session = r["session"].as_str().unwrap().to_owned();
    // Recording the same transcript again adds nothing.
    let again: Value =
        serde_json::from_str(&tests::success_stdout("record", w.hook(w.cmd(&["record", "--stdin"]), input.as_bytes())))
            .unwrap();
    assert_eq!(again["events"], 0);
    let target = put(&file, &[], VALIDATOR, &[]);
    assert_eq!(first(&explain(&w, &target, &["--brief"])), session);
}

/// `record -- CMD` tees the command's output as it comes and returns with
/// its status (it used to wait forever for a lock on its own stdout as soon
/// as the command printed anything).
#[test]
fn record_a_command_that_prints_returns_with_its_output_and_status() {
    let w = World::new();
    let repo = w.root().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let script = "echo hi; echo careful >&2; printf 'fn main() {}\\n' > main.rs; exit 3";
    let mut cmd = w.cmd(&["record", "--", "sh", "-c", script]);
    cmd.current_dir(&repo).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("record -- CMD did not return within 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "the command's status");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("hi"), "the command's output first: {stdout}");
    let r: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("careful"));
    assert_eq!(r["exit"], 3, "{r}");
    assert!(r["files_changed"].as_u64().unwrap() >= 1, "{r}");
}

#[test]
fn before_an_edit_the_hook_says_why_the_code_exists_once() {
    let w = World::new();
    let repo = w.root().join("repo");
    let file = repo.join("src/auth.rs");
    let mut a = Claude::new("aaaaaaaa-0000-4000-8000-000000000041", &repo, T0);
    a.user("write a token validator for the gateway; tokens must survive a little clock skew");
    a.say("I will allow CLOCK_SKEW_SECONDS of skew because the edge proxies drift.");
    a.write(&file, &format!("{}{VALIDATOR}\n{}", header(), footer()));
    a.save(&w);
    w.scan();
    let hook = |session: &str| {
        let input = json!({"session_id": session, "transcript_path": null, "cwd": repo.to_string_lossy(),
            "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "toolu_1",
            "tool_input": {"file_path": file.to_string_lossy(), "old_string": VALIDATOR, "new_string": "pub fn validate() {}"}});
        let out = w.hook(w.scorer(&["hook", "pre-tool-use", "--harness", "claude"]), input.to_string().as_bytes());
        let text = String::from_utf8(out.stdout).unwrap();
        w.wait_for_recorder();
        text
    };
    let first = hook("bbbbbbbb-0000-4000-8000-000000000042");
    let v: Value = serde_json::from_str(first.trim()).unwrap_or_else(|e| panic!("{e}: {first:?}"));
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains(&format!("Why this code exists: session claude:{}", a.sid)), "{context}");
    assert!(context.contains("token validator"), "the request is quoted: {context}");
    assert!(context.starts_with("<engram-context>") && context.chars().count() <= 10_000, "{context}");
    // Not twice in the same session, and never about the session's own work.
    assert!(!hook("bbbbbbbb-0000-4000-8000-000000000042").contains("Why this code exists"));
    assert!(!hook(&a.sid).contains("Why this code exists"));
    assert_eq!(w.count("SELECT COUNT(*) FROM prov_notes"), 1);
}
