//! The provenance tables of the projection (migration 0008), kept by the
//! apply: for every content event newly inserted into `session_events`,
//! [`Indexer::event`] fingerprints its texts ([`texts`]) into the evidence
//! index, and a `code.edit` with text is indexed by what it wrote and also
//! becomes a span with its lineage edge and, when its old text did not
//! survive, a tombstone; a `span.link`
//! becomes an agent link. Everything depends only on the events applied so
//! far, in log order, so replay builds the same tables as incremental
//! application, however the events are batched.
//!
//! Postings are buffered for a batch and written sorted by fingerprint at
//! [`Indexer::flush`] (B-tree inserts in key order touch each page once).

use std::borrow::Cow;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::fingerprint::{self, Fingerprinter};
use crate::storage::event::{Body, CodeEdit, Event, SpanLink, origin, prompt};
use crate::storage::tape::Lsn;

/// Fingerprint similarity at or above which an edge is lineage (seed 003's
/// `LINK_THRESHOLD`); below it, `location_only`.
pub const LINK_THRESHOLD: f32 = 0.30;
/// Postings written per statement.
const POSTING_ROWS: usize = 128;
/// Messages of a session whose fingerprints make its head.
pub const HEAD_EVENTS: i64 = 8;

/// The texts of an event that are fingerprinted (winnowed) into the
/// evidence index: messages (except what Engram itself injected), tool
/// arguments (every string in them; a string holding JSON is read as JSON),
/// tool output and metadata text. Reads (`code.read`: the text is in the
/// tool result) and links add no postings. An edit is indexed by what it
/// wrote, densely (see [`Indexer::event`]); the dense sets of its two sides
/// are kept with the span (`prov_spans`).
pub fn texts(body: &Body) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    match body {
        Body::MsgIn(m) if m.origin != origin::ENGRAM => out.push(Cow::Borrowed(m.text.as_str())),
        Body::MsgOut(m) => out.push(Cow::Borrowed(m.text.as_str())),
        Body::ToolCall(t) => strings(&t.args, &mut out),
        Body::ToolResult(t) => {
            out.push(Cow::Borrowed(t.stdout.as_str()));
            if !t.stderr.is_empty() {
                out.push(Cow::Borrowed(t.stderr.as_str()));
            }
        }
        Body::Meta(m) => out.extend(m.text.as_deref().map(Cow::Borrowed)),
        _ => {}
    }
    out.retain(|t| !t.is_empty());
    out
}

fn strings<'a>(v: &'a Value, out: &mut Vec<Cow<'a, str>>) {
    match v {
        Value::String(s) => {
            let t = s.trim_start();
            if (t.starts_with('{') || t.starts_with('['))
                && let Ok(inner) = serde_json::from_str::<Value>(s)
            {
                let mut owned = Vec::new();
                strings(&inner, &mut owned);
                out.extend(owned.into_iter().map(|c| Cow::Owned(c.into_owned())));
            } else {
                out.push(Cow::Borrowed(s.as_str()));
            }
        }
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => map.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// What of a message counts towards its session's head (what a
/// continuation carries over: the user's words, the agent's answers,
/// summaries), and what is harness scaffolding, boilerplate that many
/// unrelated sessions share: system and developer instructions, hook context,
/// the context blocks before a user's words, and whole turns the harness
/// wrote in the user's name (Claude Code's `/init` prompt, task
/// notifications).
fn head_parts(body: &Body) -> Parts<'_> {
    let head = |text, compaction| Parts { head: Some((text, compaction)), boilerplate: Vec::new() };
    let boilerplate = |text| Parts { head: None, boilerplate: vec![text] };
    match body {
        Body::MsgIn(m) if m.is_user_prompt() => {
            if prompt::is_harness_prompt(&m.text) {
                return boilerplate(&m.text);
            }
            let (context, typed) = prompt::split_context(&m.text);
            Parts { head: (!typed.is_empty()).then_some((typed, false)), boilerplate: context }
        }
        Body::MsgIn(m) if m.origin == origin::SUBAGENT_PROMPT => head(&m.text, false),
        Body::MsgIn(m) if m.origin == origin::COMPACT_SUMMARY => head(&m.text, true),
        Body::MsgIn(m) if matches!(m.origin.as_str(), origin::SYSTEM | origin::HOOK) => boilerplate(&m.text),
        Body::MsgOut(m) if m.part.is_empty() || m.part == "text" => head(&m.text, false),
        _ => Parts { head: None, boilerplate: Vec::new() },
    }
}

/// A message split by [`head_parts`].
struct Parts<'a> {
    /// Its text that counts towards the head, and whether it is a summary.
    head: Option<(&'a str, bool)>,
    /// Its boilerplate.
    boilerplate: Vec<&'a str>,
}

/// A path as the index keeps it: relative paths joined to the session's
/// working directory, `.` and `..` resolved lexically.
pub fn normalize_path(file: &str, cwd: Option<&str>) -> String {
    let joined = match cwd {
        Some(c) if !file.starts_with('/') && !file.is_empty() => format!("{}/{file}", c.trim_end_matches('/')),
        _ => file.to_owned(),
    };
    let absolute = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    if absolute { format!("/{body}") } else { body }
}

/// Whether two inclusive line ranges overlap (an unknown range overlaps all).
pub fn overlaps(a: (Option<i64>, Option<i64>), b: (Option<i64>, Option<i64>)) -> bool {
    match (a, b) {
        ((Some(s1), Some(e1)), (Some(s2), Some(e2))) => s1 <= e2 && s2 <= e1,
        _ => true,
    }
}

/// `same`, `adjacent` (same file, within 20 lines), `moved` (elsewhere) or
/// `absent` (a side has no known place).
fn location_delta(a: (&str, Option<i64>, Option<i64>), b: (&str, Option<i64>, Option<i64>)) -> &'static str {
    if a.0 != b.0 {
        return "moved";
    }
    match (a.1.zip(a.2), b.1.zip(b.2)) {
        (Some((s1, e1)), Some((s2, e2))) => {
            if s1 <= e2 && s2 <= e1 {
                "same"
            } else if (s1 - e2).abs() <= 20 || (s2 - e1).abs() <= 20 {
                "adjacent"
            } else {
                "moved"
            }
        }
        _ => "absent",
    }
}

/// The provenance part of one apply pass.
#[derive(Debug, Default)]
pub struct Indexer {
    fp: Fingerprinter,
    postings: Vec<(i64, i64)>,
}

impl Indexer {
    /// Indexes one content event just inserted into `session_events` at `lsn`:
    /// the winnowed fingerprints of its [`texts`], and for a `code.edit` with
    /// text its span and the dense set of what it wrote (every k-gram and
    /// line hash of its new text its old text lacks). With `direct`,
    /// postings are written now (an event applied in its own savepoint);
    /// otherwise they wait for [`Indexer::flush`].
    pub fn event(&mut self, conn: &Connection, lsn: Lsn, event: &Event, direct: bool) -> rusqlite::Result<()> {
        let lsn = lsn as i64;
        let texts = texts(&event.body);
        if !texts.is_empty() {
            let fps = self.fp.fingerprints(texts.iter().map(Cow::as_ref));
            self.postings.extend(fps.iter().map(|&f| (f, lsn)));
            if let Some(session) = &event.session {
                let parts = head_parts(&event.body);
                // The event's fingerprints serve when the part is its only text.
                let whole = texts.len() == 1;
                if let Some((text, compaction)) = parts.head {
                    if whole && parts.boilerplate.is_empty() {
                        extend_head(conn, session.as_str(), &fps, compaction)?;
                    } else {
                        extend_head(conn, session.as_str(), &self.fp.fingerprints([text]), compaction)?;
                    }
                }
                let boilerplate = match parts.boilerplate.as_slice() {
                    [] => Vec::new(),
                    [_] if whole && parts.head.is_none() => fps,
                    blocks => self.fp.fingerprints(blocks.iter().copied()),
                };
                if !boilerplate.is_empty() {
                    let mut stmt =
                        conn.prepare_cached("INSERT OR IGNORE INTO prov_boilerplate (harness, fp) VALUES (?1, ?2)")?;
                    for f in &boilerplate {
                        stmt.execute(params![session.harness(), f])?;
                    }
                }
            }
        }
        match &event.body {
            Body::CodeEdit(e) if e.before_text.is_some() || e.after_text.is_some() => self.edit(conn, lsn, event, e)?,
            Body::SpanLink(l) => link(conn, lsn, event, l)?,
            _ => {}
        }
        if direct {
            self.flush(conn)?;
        }
        Ok(())
    }

    /// Writes the buffered postings, in fingerprint order.
    pub fn flush(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if self.postings.is_empty() {
            return Ok(());
        }
        self.postings.sort_unstable();
        self.postings.dedup();
        let mut chunks = self.postings.chunks_exact(POSTING_ROWS);
        if chunks.len() > 0 {
            let sql = format!(
                "INSERT OR IGNORE INTO prov_postings (fp, lsn) VALUES {}",
                vec!["(?, ?)"; POSTING_ROWS].join(", ")
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            for chunk in chunks.by_ref() {
                for (i, (fp, lsn)) in chunk.iter().enumerate() {
                    stmt.raw_bind_parameter(2 * i + 1, fp)?;
                    stmt.raw_bind_parameter(2 * i + 2, lsn)?;
                }
                stmt.raw_execute()?;
            }
        }
        let mut one = conn.prepare_cached("INSERT OR IGNORE INTO prov_postings (fp, lsn) VALUES (?1, ?2)")?;
        for (fp, lsn) in chunks.remainder() {
            one.execute(params![fp, lsn])?;
        }
        self.postings.clear();
        Ok(())
    }

    fn edit(&mut self, conn: &Connection, lsn: i64, event: &Event, e: &CodeEdit) -> rusqlite::Result<()> {
        let session = event.session.as_ref().map_or("", |s| s.as_str());
        let cwd: Option<String> = conn
            .prepare_cached("SELECT cwd FROM sessions WHERE session_key = ?1")?
            .query_row([session], |r| r.get(0))
            .optional()?
            .flatten();
        let file = normalize_path(e.move_to.as_deref().unwrap_or(&e.file), cwd.as_deref());
        let before_file = normalize_path(&e.file, cwd.as_deref());
        let before = e.before_text.as_deref().map(|t| self.fp.dense(t)).unwrap_or_default();
        let after = e.after_text.as_deref().map(|t| self.fp.dense(t)).unwrap_or_default();
        // What the edit wrote: the k-grams and lines of its new text that
        // its old text did not have (a hunk's context lines are in both).
        // Every one is posted, so that any span of the written code, however
        // short, finds the edit by all of its evidence.
        self.postings.extend(fingerprint::difference(&after, &before).into_iter().map(|f| (f, lsn)));
        let similarity = (!before.is_empty() && !after.is_empty()).then(|| fingerprint::jaccard(&before, &after));
        let range = |r: Option<[u32; 2]>| (r.map(|r| i64::from(r[0])), r.map(|r| i64::from(r[1])));
        let (bs, be) = range(e.before_range);
        let (a_s, ae) = range(e.after_range);
        let blob = |f: &[i64]| (!f.is_empty()).then(|| fingerprint::encode(f));
        conn.prepare_cached(
            "INSERT OR IGNORE INTO prov_spans (lsn, session_key, file, op, call_id, before_start, before_end,
                after_start, after_end, before_fp, after_fp, similarity, ts_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?
        .execute(params![
            lsn,
            session,
            file,
            if e.op.is_empty() { "update" } else { e.op.as_str() },
            e.call_id,
            bs,
            be,
            a_s,
            ae,
            blob(&before),
            blob(&after),
            similarity,
            event.ts.0
        ])?;
        if let Some(sim) = similarity {
            let delta = if e.move_to.is_some() { "moved" } else { "same" };
            insert_edge(conn, (lsn, "before"), (lsn, "after"), sim, delta, false, "")?;
        }
        let removed = !before.is_empty() && similarity.is_none_or(|s| s < LINK_THRESHOLD);
        if removed {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO prov_tombstones (lsn, session_key, file, start_line, end_line, ts_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![lsn, session, before_file, bs, be, event.ts.0])?;
        }
        // Code removed in one place and written in another by the same tool
        // call (a patch moving a function): lineage across the two spans.
        let added = !after.is_empty() && similarity.is_none_or(|s| s < LINK_THRESHOLD);
        if let Some(call) = e.call_id.as_deref()
            && (removed || added)
        {
            let mut stmt = conn.prepare_cached(
                "SELECT lsn, file, before_start, before_end, after_start, after_end, before_fp, after_fp, similarity
                 FROM prov_spans WHERE session_key = ?1 AND call_id = ?2 AND lsn < ?3 ORDER BY lsn",
            )?;
            type Row = (
                i64,
                String,
                Option<i64>,
                Option<i64>,
                Option<i64>,
                Option<i64>,
                Option<Vec<u8>>,
                Option<Vec<u8>>,
                Option<f64>,
            );
            let rows: Vec<Row> = stmt
                .query_map(params![session, call, lsn], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                    ))
                })?
                .collect::<rusqlite::Result<_>>()?;
            for (other, ofile, obs, obe, oas, oae, obf, oaf, osim) in rows {
                let other_low = osim.is_none_or(|s| (s as f32) < LINK_THRESHOLD);
                if !other_low {
                    continue;
                }
                if added && let Some(obf) = obf.filter(|b| !b.is_empty()) {
                    let c = fingerprint::jaccard(&fingerprint::decode(&obf), &after);
                    if c >= LINK_THRESHOLD {
                        let d = location_delta((&ofile, obs, obe), (&file, a_s, ae));
                        insert_edge(conn, (other, "before"), (lsn, "after"), c, d, false, "")?;
                    }
                }
                if removed && let Some(oaf) = oaf.filter(|b| !b.is_empty()) {
                    let c = fingerprint::jaccard(&before, &fingerprint::decode(&oaf));
                    if c >= LINK_THRESHOLD {
                        let d = location_delta((&before_file, bs, be), (&ofile, oas, oae));
                        insert_edge(conn, (lsn, "before"), (other, "after"), c, d, false, "")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Adds a message's fingerprints to its session's head (its first
/// [`HEAD_EVENTS`] messages).
fn extend_head(conn: &Connection, session: &str, fps: &[i64], compaction: bool) -> rusqlite::Result<()> {
    let row: Option<(Vec<u8>, i64, bool)> = conn
        .prepare_cached("SELECT head, head_events, compaction FROM prov_sessions WHERE session_key = ?1")?
        .query_row([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let (head, n, was) = row.unwrap_or_default();
    if n >= HEAD_EVENTS {
        return Ok(());
    }
    let mut merged = fingerprint::decode(&head);
    merged.extend_from_slice(fps);
    merged.sort_unstable();
    merged.dedup();
    conn.prepare_cached(
        "INSERT INTO prov_sessions (session_key, head, head_events, compaction) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(session_key) DO UPDATE SET head = excluded.head, head_events = excluded.head_events,
           compaction = excluded.compaction",
    )?
    .execute(params![session, fingerprint::encode(&merged), n + 1, was || compaction])?;
    Ok(())
}

/// Inserts an edge with its class and cardinality as of now.
fn insert_edge(
    conn: &Connection,
    from: (i64, &str),
    to: (i64, &str),
    confidence: f32,
    delta: &str,
    agent: bool,
    note: &str,
) -> rusqlite::Result<()> {
    let count = |sql: &str, node: (i64, &str)| -> rusqlite::Result<i64> {
        conn.prepare_cached(sql)?.query_row(params![node.0, node.1], |r| r.get(0))
    };
    let out =
        count("SELECT COUNT(*) FROM prov_edges WHERE from_lsn = ?1 AND from_side = ?2 AND class = 'lineage'", from)?;
    let into = count("SELECT COUNT(*) FROM prov_edges WHERE to_lsn = ?1 AND to_side = ?2 AND class = 'lineage'", to)?;
    let cardinality = match (out > 0, into > 0) {
        (true, _) => "1:N",
        (false, true) => "N:1",
        (false, false) => "1:1",
    };
    let class = if agent || confidence >= LINK_THRESHOLD { "lineage" } else { "location_only" };
    conn.prepare_cached(
        "INSERT OR IGNORE INTO prov_edges (to_lsn, to_side, from_lsn, from_side, confidence, location_delta,
            cardinality, agent_link, class, note)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        to.0,
        to.1,
        from.0,
        from.1,
        f64::from(confidence),
        delta,
        cardinality,
        agent,
        class,
        note
    ])?;
    Ok(())
}

/// Records an agent's `span.link`, and its edge when both ends are spans
/// edits of this session already wrote or removed.
fn link(conn: &Connection, lsn: i64, event: &Event, l: &SpanLink) -> rusqlite::Result<()> {
    let session = event.session.as_ref().map_or("", |s| s.as_str());
    let cwd: Option<String> = conn
        .prepare_cached("SELECT cwd FROM sessions WHERE session_key = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()?
        .flatten();
    let from_file = normalize_path(&l.from_file, cwd.as_deref());
    let to_file = normalize_path(&l.to_file, cwd.as_deref());
    let range = |r: Option<[u32; 2]>| (r.map(|r| i64::from(r[0])), r.map(|r| i64::from(r[1])));
    let (fs, fe) = range(l.from_range);
    let (ts, te) = range(l.to_range);
    conn.prepare_cached(
        "INSERT OR IGNORE INTO prov_links (lsn, session_key, from_file, from_start, from_end, to_file, to_start,
            to_end, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![lsn, session, from_file, fs, fe, to_file, ts, te, l.note])?;
    let to = resolve(conn, session, lsn, &to_file, (ts, te), &["after"])?;
    let from = resolve(conn, session, lsn, &from_file, (fs, fe), &["before", "after"])?;
    if let (Some(from), Some(to)) = (from, to) {
        let delta = location_delta((&from_file, fs, fe), (&to_file, ts, te));
        insert_edge(conn, from, to, 1.0, delta, true, &l.note)?;
    }
    Ok(())
}

/// The latest span of `session` before `lsn` in `file` whose side (the
/// first of `sides` that matches) overlaps `range`.
fn resolve(
    conn: &Connection,
    session: &str,
    lsn: i64,
    file: &str,
    range: (Option<i64>, Option<i64>),
    sides: &[&'static str],
) -> rusqlite::Result<Option<(i64, &'static str)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT lsn, before_start, before_end, after_start, after_end, before_fp IS NOT NULL, after_fp IS NOT NULL
         FROM prov_spans WHERE file = ?1 AND session_key = ?2 AND lsn < ?3 ORDER BY lsn DESC",
    )?;
    type Row = (i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>, bool, bool);
    let rows: Vec<Row> = stmt
        .query_map(params![file, session, lsn], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for side in sides {
        for &(l, bs, be, a_s, ae, has_before, has_after) in &rows {
            let hit = match *side {
                "before" => has_before && overlaps((bs, be), range),
                _ => has_after && overlaps((a_s, ae), range),
            };
            if hit {
                return Ok(Some((l, side)));
            }
        }
    }
    Ok(None)
}

/// Records a note put into a session (`provenance.noted`).
pub fn noted(conn: &Connection, event: &Event, b: &crate::storage::event::ProvenanceNoted) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO prov_notes (session_key, source_session, file, ts_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        event.session.as_ref().map_or("", |s| s.as_str()),
        b.source_session.as_str(),
        b.file.as_deref().unwrap_or(""),
        event.ts.0
    ])?;
    Ok(())
}
