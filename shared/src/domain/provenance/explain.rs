//! `explain`: the sessions that produced a span of code, with the raw
//! transcript around each moment they touched it (seed 003, "Query
//! Algorithm").
//!
//! 1. The span's text is fingerprinted ([`fingerprint::Evidence`]): its
//!    winnowed fingerprints, all its k-grams and its line hashes. It is
//!    looked up by its line hashes and, when short (at most
//!    [`SHORT_KGRAMS`] k-grams), all its k-grams, else its winnowed
//!    fingerprints ([`Probe`]).
//! 2. **Direct**: each event holding at least [`MIN_EVIDENCE`] of those
//!    keys (one shared hash is no match) is a touch when it holds at least
//!    [`DIRECT_FLOOR`] of what it could: an edit is indexed by every k-gram
//!    and line it wrote, so its share is of all the keys; another text by
//!    its winnowed fingerprints, so its share is of the span's winnowed
//!    count. An edit that wrote at least [`WRITE_FLOOR`] of the span
//!    *wrote* it.
//! 3. **Lineage**: the edits that wrote the span (touches themselves, or
//!    their tool call or result is a touch, and their written side holds
//!    the span) are traversed backwards, breadth first: an edge into a span
//!    is followed when it is lineage at `min_confidence` or more, or an
//!    agent's link (always); the older span's fingerprints are looked up
//!    like the query (their touches are lineage touches), and the edits that
//!    wrote *them* continue the walk. At most `max_fanout` edges per span
//!    (best first), `max_edges` in all, `max_depth` deep. An agent's link
//!    declared for the target's place is followed even when the apply could
//!    not resolve it.
//! 4. **Order**: the sessions that wrote the span first, the latest writer
//!    first; then those that wrote an older version of it (through
//!    lineage), the latest first; then the others by touch count, then most
//!    recent touch; then key.
//! 5. **Continuations**: a returned session whose first messages carry over
//!    an earlier session's last ones (same project, started before; harness
//!    scaffolding excluded; a compaction summary adds
//!    [`COMPACTION_BOOST`]) brings that session in, labelled with the
//!    crossing, up to [`CONTINUATION_DEPTH`] sessions back.
//! 6. **Windows**: around the best touches of each session, `before` and
//!    `after` events of raw transcript, read from the tapes.
//!
//! Nothing is interpreted: the output is touches, edges and transcript.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use super::fingerprint::{self, Fingerprinter};
use super::index::overlaps;
use crate::base::error::{Result, SqlContext};
use crate::base::time::Ts;
use crate::storage::event::Body;
use crate::storage::journal::decode;
use crate::storage::store::Store;
use crate::storage::tape::{Frame, Lsn, Snapshot};

/// Share of the span's fingerprints an event must hold to touch it.
pub const DIRECT_FLOOR: f32 = 0.25;
/// Share of the span's keys an edit's written text must hold for the edit
/// to have written the span.
pub const WRITE_FLOOR: f32 = 0.25;
/// Fingerprints an event must share with a span to touch it (with `all`,
/// one is enough).
pub const MIN_EVIDENCE: usize = 2;
/// A span with at most this many k-grams is looked up by all of them (a
/// text holding it may have selected any); a longer one by its winnowed
/// fingerprints.
pub const SHORT_KGRAMS: usize = 64;
/// Most line hashes, and most k-grams, one span is looked up by (the
/// smallest values: a consistent sample).
pub const MAX_KEYS: usize = 160;
/// Lineage edges at or above this confidence are traversed by default.
pub const MIN_CONFIDENCE: f32 = 0.50;
/// Share of a session's head found in an earlier session's tail that makes
/// it a continuation.
pub const CONTINUATION_FLOOR: f32 = 0.30;
/// Fingerprints a continuation must share (one phrase is no signal).
pub const CONTINUATION_SHARED: usize = 3;
/// Added to a continuation's confidence when the later session starts from
/// a compaction summary (Claude's `isCompactSummary`, Codex's `compacted`).
pub const COMPACTION_BOOST: f32 = 0.25;
/// Content events at the end of a session that make its tail.
pub const TAIL_EVENTS: i64 = 40;
/// How long an earlier session may go on after a later one started and
/// still be what it continues (a continuation starts when the other stops;
/// a subagent, which runs alongside its parent, is never one).
pub const OVERLAP_MS: i64 = 5 * 60_000;
/// Continuation crossings followed from one session.
pub const CONTINUATION_DEPTH: usize = 3;

/// What `explain` returns and how far it walks.
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainOptions {
    /// Events of transcript before each touch in a window.
    pub before: usize,
    /// Events after it.
    pub after: usize,
    /// Touches only, no transcript.
    pub brief: bool,
    /// Lineage edges below this are not traversed (agent links always are).
    pub min_confidence: f32,
    /// Include weak touches, low-confidence and location-only edges.
    pub all: bool,
    /// Sessions returned (the count found is reported too).
    pub limit: usize,
    /// Edges followed from one span.
    pub max_fanout: usize,
    /// Edges followed in all.
    pub max_edges: usize,
    /// Depth of the lineage walk.
    pub max_depth: usize,
    /// Windows per session.
    pub windows: usize,
    /// Characters of one event's text in a window.
    pub event_chars: usize,
}

impl Default for ExplainOptions {
    fn default() -> Self {
        ExplainOptions {
            before: 3,
            after: 3,
            brief: false,
            min_confidence: MIN_CONFIDENCE,
            all: false,
            limit: 10,
            max_fanout: 50,
            max_edges: 500,
            max_depth: 10,
            windows: 3,
            event_chars: 1500,
        }
    }
}

/// What is explained: a text, and where it lies when it comes from a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Target {
    /// The span's text.
    pub text: String,
    /// The file (absolute), for tombstones and agent links at that place.
    pub file: Option<String>,
    /// Its lines (1-based, inclusive).
    pub range: Option<(u32, u32)>,
}

/// The answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Explanation {
    /// The span.
    pub target: TargetInfo,
    /// Sessions found, ordered (at most `limit`).
    pub sessions: Vec<SessionEvidence>,
    /// Sessions found in all.
    pub sessions_found: usize,
    /// Edges traversed.
    pub lineage: Vec<EdgeInfo>,
    /// Code removed at the target's place, or whose text was the span's.
    pub tombstones: Vec<TombstoneInfo>,
    /// What the walk left out.
    pub truncated: Truncation,
    /// Conditions the caller should know (an index built before the
    /// upgrade, a span too short to fingerprint).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The span explained.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TargetInfo {
    /// The span asked for, when `expand_until` grew it into `start..=end`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded_from: Option<[u32; 2]>,
    /// File, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// First line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<u32>,
    /// Last line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<u32>,
    /// The fingerprints (line hashes and k-grams) it was looked up by.
    pub fingerprints: usize,
}

/// One session's evidence.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionEvidence {
    /// `harness:id`.
    pub session: String,
    /// Project, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Title, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Events that touched the span (or its ancestors).
    pub touch_count: usize,
    /// Time of the latest touch (RFC 3339).
    pub latest_touch: String,
    /// Best touch confidence.
    pub confidence: f32,
    /// `direct`, `lineage` or `continuation`: how the session was reached.
    pub via: &'static str,
    /// `span` when one of its edits wrote the span, `lineage` when one wrote
    /// an older version of it (absent when it only read or discussed it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrote: Option<&'static str>,
    /// When reached across a continuation: which session it continues into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuation: Option<Continuation>,
    /// The touches, in transcript order.
    pub touches: Vec<Touch>,
    /// Raw transcript around the best touches (empty with `brief`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Window>,
    #[serde(skip)]
    latest_ms: i64,
    #[serde(skip)]
    latest_write_ms: i64,
}

/// A crossing from a later session back into the one it continues.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Continuation {
    /// The later session (the one the walk came from).
    pub into: String,
    /// Overlap of the later session's head with this one's tail, plus the
    /// compaction boost; 0..=1.
    pub confidence: f32,
    /// Fingerprints shared.
    pub shared: usize,
    /// The later session starts from a compaction summary.
    pub compaction: bool,
}

/// One event that touched the span.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Touch {
    /// Position of the event in its session (0-based).
    pub offset: u64,
    /// Event kind.
    pub kind: String,
    /// Tool, for tool calls and results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// File, when the event names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Time (RFC 3339).
    pub ts: String,
    /// Share of the (ancestor) span's fingerprints the event holds, 0..=1.
    pub confidence: f32,
    /// `direct`, `lineage` (through `depth` edges) or `continuation`.
    pub via: &'static str,
    /// Edges between the target and the span this touch matched.
    pub depth: usize,
    /// The event is an edit that wrote (at `depth` 0) the span, or (deeper)
    /// the older span it matched.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub wrote: bool,
    #[serde(skip)]
    lsn: Lsn,
    #[serde(skip)]
    ts_ms: i64,
}

impl Touch {
    /// The event's log position.
    pub fn lsn(&self) -> Lsn {
        self.lsn
    }
}

/// A stretch of raw transcript.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Window {
    /// Offset of the first event.
    pub from: u64,
    /// Offset of the last event.
    pub to: u64,
    /// The events.
    pub events: Vec<TranscriptLine>,
}

/// One event as transcript.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TranscriptLine {
    /// Position in the session.
    pub offset: u64,
    /// Time (RFC 3339).
    pub ts: String,
    /// Event kind.
    pub kind: String,
    /// Who or what: `user`, `assistant`, `assistant reasoning`, a tool name,
    /// an origin (`compact_summary`, `system`, …), a meta label.
    pub role: String,
    /// The text (tool arguments as JSON).
    pub text: String,
    /// Characters cut from the text.
    #[serde(skip_serializing_if = "is_zero")]
    pub cut: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A lineage edge as traversed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EdgeInfo {
    /// The older span.
    pub from: SpanRef,
    /// The newer span.
    pub to: SpanRef,
    /// Fingerprint similarity (1.0 for an agent's link).
    pub confidence: f32,
    /// `same`, `adjacent`, `moved`, `absent`.
    pub location_delta: String,
    /// `1:1`, `1:N`, `N:1`.
    pub cardinality: String,
    /// Declared by an agent (`span.link`).
    pub agent_link: bool,
    /// `lineage` or `location_only`.
    pub class: String,
    /// The agent's note.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Edges between the target and this edge's newer end.
    pub depth: usize,
}

/// A span an edit replaced (`before`) or wrote (`after`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SpanRef {
    /// Session of the edit.
    pub session: String,
    /// Offset of the edit in it.
    pub offset: u64,
    /// `before` or `after`.
    pub side: String,
    /// File.
    pub file: String,
    /// Lines, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[i64; 2]>,
}

/// Code removed by an edit.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TombstoneInfo {
    /// Session of the edit.
    pub session: String,
    /// Offset of the edit.
    pub offset: u64,
    /// File.
    pub file: String,
    /// Lines removed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[i64; 2]>,
    /// When (RFC 3339).
    pub ts: String,
    /// `location` (removed where the target now is) or `content` (the
    /// removed text is the target's: re-inserted since).
    pub matched: &'static str,
}

/// What the walk left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Truncation {
    /// A span had more edges than `max_fanout`.
    pub fanout: bool,
    /// `max_edges` was reached.
    pub edges: bool,
    /// `max_depth` stopped the walk.
    pub depth: bool,
}

/// A span node: (edit lsn, side).
type Node = (i64, &'static str);

struct Walk<'a> {
    conn: &'a Connection,
    opts: &'a ExplainOptions,
    fp: Fingerprinter,
    touches: BTreeMap<Lsn, Touch>,
    out: Explanation,
    info: HashMap<Lsn, EventInfo>,
    tails: Tails,
    /// Postings counted per probe already looked up (the same older span
    /// is often reached from many edits).
    memo: HashMap<Vec<i64>, std::rc::Rc<Vec<(Lsn, u32)>>>,
}

/// What one span is looked up by.
#[derive(Clone, Debug, Default, PartialEq)]
struct Probe {
    /// The keys (sorted): line hashes and k-grams.
    keys: Vec<i64>,
    /// How many of the keys an ordinary indexed text (winnowed) holding the
    /// whole span shares with them, about: the denominator of its share.
    winnowed: usize,
}

impl Probe {
    /// A text's probe: its line hashes and, when short, all its k-grams, else
    /// its winnowed fingerprints.
    fn of_text(e: &fingerprint::Evidence) -> Probe {
        let short = e.kgrams.len() <= SHORT_KGRAMS;
        let kgrams = if short { &e.kgrams } else { &e.winnowed };
        Probe::new(&e.lines, kgrams, e.winnowed.len())
    }

    /// The probe of a span known by its dense set (an edit's side): its line
    /// hashes and, when short, all its k-grams, else the smallest of them,
    /// as many as winnowing would select (small values are the ones windows
    /// select, so texts holding the span hold most of them).
    fn of_dense(dense: &[i64]) -> Probe {
        let (lines, kgrams): (Vec<i64>, Vec<i64>) = dense.iter().partition(|&&v| fingerprint::is_line(v));
        let expected = (kgrams.len() * 2).div_ceil(fingerprint::W + 1);
        if kgrams.len() <= SHORT_KGRAMS {
            Probe::new(&lines, &kgrams, expected)
        } else {
            Probe::new(&lines, &kgrams[..expected], expected)
        }
    }

    fn new(lines: &[i64], kgrams: &[i64], winnowed: usize) -> Probe {
        // Sorted values: the first ones are the smallest.
        let mut keys: Vec<i64> = kgrams.iter().take(MAX_KEYS).copied().collect();
        keys.extend(lines.iter().take(MAX_KEYS));
        keys.sort_unstable();
        keys.dedup();
        Probe { keys, winnowed: winnowed.clamp(1, MAX_KEYS) }
    }
}

/// An event found holding a probe's keys.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Found {
    lsn: Lsn,
    confidence: f32,
    wrote: bool,
}

#[derive(Clone, Debug)]
struct EventInfo {
    session: String,
    kind: String,
    ts_ms: i64,
    tool: Option<String>,
    file: Option<String>,
    call_id: Option<String>,
}

/// A file on disk, read for explaining spans of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileSpan {
    /// Its absolute path (symbolic links resolved).
    pub path: String,
    /// Its lines.
    pub lines: Vec<String>,
}

impl FileSpan {
    /// Reads `path` (as UTF-8, invalid bytes replaced).
    pub fn read(path: &std::path::Path) -> Result<FileSpan> {
        let bytes = std::fs::read(path).map_err(|e| crate::base::error::Error::io("read", path, e))?;
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let text = String::from_utf8_lossy(&bytes);
        Ok(FileSpan { path: abs.to_string_lossy().into_owned(), lines: text.lines().map(str::to_owned).collect() })
    }

    /// The target of lines `start..=end` (1-based); `end` past the last line
    /// is cut to it.
    pub fn target(&self, start: u32, end: u32) -> Result<Target> {
        let n = self.lines.len() as u32;
        if start == 0 || start > end || start > n {
            return Err(crate::base::error::Error::InvalidInput(format!(
                "lines {start}-{end} are not in {} ({n} lines)",
                self.path
            )));
        }
        let end = end.min(n);
        Ok(Target {
            text: self.lines[(start - 1) as usize..end as usize].join("\n"),
            file: Some(self.path.clone()),
            range: Some((start, end)),
        })
    }
}

/// Explains lines `start..=end` of a file; with `expand_until`, the span
/// grows in both directions (by half its length each time) until at most
/// that many sessions are found or it covers the file.
pub fn explain_file(
    store: &Store,
    tapes: Option<&Snapshot>,
    file: &FileSpan,
    (start, end): (u32, u32),
    expand_until: Option<usize>,
    opts: &ExplainOptions,
) -> Result<Explanation> {
    let mut target = file.target(start, end)?;
    if let Some(n) = expand_until {
        let total = file.lines.len() as u32;
        let brief = ExplainOptions { brief: true, ..opts.clone() };
        let (mut a, mut b) = target.range.unwrap_or((start, end));
        loop {
            let found = explain(store, None, &target, &brief)?.sessions_found;
            if found <= n || (a == 1 && b == total) {
                break;
            }
            let grow = (b - a + 1).div_ceil(2);
            a = a.saturating_sub(grow).max(1);
            b = (b + grow).min(total);
            target = file.target(a, b)?;
        }
    }
    let mut out = explain(store, tapes, &target, opts)?;
    if target.range != Some((start, end.min(file.lines.len() as u32))) {
        out.target.expanded_from = Some([start, end]);
    }
    Ok(out)
}

/// Explains `target` from the projection (and the tapes, for windows).
pub fn explain(store: &Store, tapes: Option<&Snapshot>, target: &Target, opts: &ExplainOptions) -> Result<Explanation> {
    let conn = store.conn();
    let mut walk = Walk {
        conn,
        opts,
        fp: Fingerprinter::default(),
        touches: BTreeMap::new(),
        out: Explanation::default(),
        info: HashMap::new(),
        tails: Tails::default(),
        memo: HashMap::new(),
    };
    walk.out.target = TargetInfo {
        expanded_from: None,
        file: target.file.clone(),
        start: target.range.map(|r| r.0),
        end: target.range.map(|r| r.1),
        fingerprints: 0,
    };
    let from: i64 = conn
        .query_row("SELECT value FROM engram_state WHERE key = 'provenance_from_lsn'", [], |r| r.get::<_, String>(0))
        .optional()
        .sql("read provenance_from_lsn")?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if from > 0 {
        walk.out.warnings.push(format!(
            "events up to log position {from} were applied before provenance existed and are not indexed: \
             run `engram-ingestor replay` to index them"
        ));
    }
    let version: u32 = conn
        .query_row("SELECT value FROM engram_state WHERE key = 'provenance_version'", [], |r| r.get::<_, String>(0))
        .optional()
        .sql("read provenance_version")?
        .and_then(|v| v.parse().ok())
        .unwrap_or(fingerprint::VERSION);
    if version < fingerprint::VERSION {
        walk.out.warnings.push(
            "the evidence index was built by an older version (without line hashes or what edits wrote): \
             run `engram-ingestor replay` to rebuild it"
                .to_owned(),
        );
    }
    let evidence = walk.fp.evidence(&target.text);
    let probe = Probe::of_text(&evidence);
    walk.out.target.fingerprints = probe.keys.len();
    if probe.keys.len() < MIN_EVIDENCE && !opts.all {
        walk.out.warnings.push(format!(
            "the span has too few words to fingerprint: it needs {} words in a row, or {} lines of {} words",
            fingerprint::K,
            MIN_EVIDENCE,
            fingerprint::LINE_MIN_TOKENS
        ));
        return Ok(walk.out);
    }
    let dense = evidence.dense();
    let direct = walk.lookup(&probe)?;
    let seeds = walk.seeds(&direct, &dense)?;
    for f in &direct {
        walk.touch(*f, "direct", 0)?;
    }
    walk.lineage(seeds, target)?;
    walk.tombstones(target, &dense)?;
    let mut sessions = walk.sessions()?;
    walk.out.sessions_found = sessions.len();
    sessions.truncate(opts.limit);
    walk.finish(&mut sessions)?;
    walk.continuations(&mut sessions)?;
    if !opts.brief
        && let Some(snapshot) = tapes
    {
        windows(conn, snapshot, &mut sessions, opts)?;
    }
    walk.out.sessions = sessions;
    Ok(walk.out)
}

impl Walk<'_> {
    /// Postings of each key of `probe` counted per event (memoised).
    fn count(&mut self, probe: &Probe) -> Result<std::rc::Rc<Vec<(Lsn, u32)>>> {
        if let Some(hits) = self.memo.get(&probe.keys) {
            return Ok(hits.clone());
        }
        let mut hits: HashMap<Lsn, u32, BuildHasherDefault<IntHasher>> = HashMap::default();
        let mut stmt =
            self.conn.prepare_cached("SELECT lsn FROM prov_postings WHERE fp = ?1").sql("prepare evidence lookup")?;
        for f in &probe.keys {
            let mut rows = stmt.query([f]).sql("evidence lookup")?;
            while let Some(row) = rows.next().sql("evidence lookup")? {
                let lsn: i64 = row.get(0).sql("evidence lookup")?;
                *hits.entry(lsn as Lsn).or_insert(0) += 1;
            }
        }
        let mut hits: Vec<(Lsn, u32)> = hits.into_iter().collect();
        hits.sort_unstable();
        let hits = std::rc::Rc::new(hits);
        self.memo.insert(probe.keys.clone(), hits.clone());
        Ok(hits)
    }

    /// Events holding at least [`MIN_EVIDENCE`] of `probe`'s keys, with
    /// their share (see the module docs), those at the floor or above.
    fn lookup(&mut self, probe: &Probe) -> Result<Vec<Found>> {
        let hits = self.count(probe)?;
        let (floor, min_hits) = if self.opts.all { (0.0, 1) } else { (DIRECT_FLOOR, MIN_EVIDENCE as u32) };
        let keys = probe.keys.len().max(1) as f32;
        let mut out = Vec::new();
        for &(lsn, n) in hits.iter() {
            // An ordinary text's share is the larger one: skip the event
            // lookup for what cannot reach the floor either way.
            let winnowed = (n as f32 / probe.winnowed as f32).min(1.0);
            if n < min_hits || winnowed < floor {
                continue;
            }
            let Some(info) = self.event_info(lsn)? else { continue };
            let (confidence, wrote) = if info.kind == "code.edit" {
                let share = (n as f32 / keys).min(1.0);
                (share, share >= WRITE_FLOOR)
            } else {
                (winnowed, false)
            };
            if confidence >= floor {
                out.push(Found { lsn, confidence, wrote });
            }
        }
        Ok(out)
    }

    fn event_info(&mut self, lsn: Lsn) -> Result<Option<EventInfo>> {
        if let Some(i) = self.info.get(&lsn) {
            return Ok(Some(i.clone()));
        }
        let info = self
            .conn
            .prepare_cached("SELECT session_key, kind, ts_ms, tool, file, call_id FROM session_events WHERE lsn = ?1")
            .sql("prepare event lookup")?
            .query_row([lsn as i64], |r| {
                Ok(EventInfo {
                    session: r.get(0)?,
                    kind: r.get(1)?,
                    ts_ms: r.get(2)?,
                    tool: r.get(3)?,
                    file: r.get(4)?,
                    call_id: r.get(5)?,
                })
            })
            .optional()
            .sql("look up event")?;
        if let Some(i) = &info {
            self.info.insert(lsn, i.clone());
        }
        Ok(info)
    }

    /// Records a touch (the strongest, shallowest one per event wins).
    fn touch(&mut self, found: Found, via: &'static str, depth: usize) -> Result<()> {
        let Found { lsn, confidence, wrote } = found;
        let Some(info) = self.event_info(lsn)? else { return Ok(()) };
        let better = |t: &Touch| depth < t.depth || (depth == t.depth && confidence > t.confidence);
        if self.touches.get(&lsn).is_some_and(|t| !better(t)) {
            return Ok(());
        }
        self.touches.insert(
            lsn,
            Touch {
                offset: 0,
                kind: info.kind,
                tool: info.tool,
                file: info.file,
                ts: Ts(info.ts_ms).to_rfc3339(),
                confidence,
                via,
                depth,
                wrote,
                lsn,
                ts_ms: info.ts_ms,
            },
        );
        Ok(())
    }

    /// Spans written by the edits among `touches` (the edits themselves, or
    /// through their tool call or result) whose written side holds `fps` (a
    /// dense set) at `min_confidence` or more: where the lineage walk starts.
    fn seeds(&mut self, touches: &[Found], fps: &[i64]) -> Result<Vec<Node>> {
        let mut calls: Vec<(String, String)> = Vec::new();
        let mut edits: Vec<i64> = Vec::new();
        for f in touches {
            let Some(i) = self.event_info(f.lsn)? else { continue };
            if i.kind == "code.edit" {
                edits.push(f.lsn as i64);
            } else if let Some(call) = i.call_id
                && matches!(i.kind.as_str(), "tool.call" | "tool.result")
            {
                calls.push((i.session, call));
            }
        }
        calls.sort();
        calls.dedup();
        let mut candidates: Vec<(i64, Option<Vec<u8>>)> = Vec::new();
        let mut by_call = self
            .conn
            .prepare_cached("SELECT lsn, after_fp FROM prov_spans WHERE session_key = ?1 AND call_id = ?2")
            .sql("prepare span lookup")?;
        for (session, call) in calls {
            let rows: Vec<(i64, Option<Vec<u8>>)> = by_call
                .query_map(params![session, call], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|r| r.collect())
                .sql("span lookup")?;
            candidates.extend(rows);
        }
        let mut by_lsn =
            self.conn.prepare_cached("SELECT after_fp FROM prov_spans WHERE lsn = ?1").sql("prepare span lookup")?;
        for lsn in edits {
            let after: Option<Option<Vec<u8>>> = by_lsn.query_row([lsn], |r| r.get(0)).optional().sql("span lookup")?;
            candidates.push((lsn, after.flatten()));
        }
        candidates.sort_unstable_by_key(|c| c.0);
        candidates.dedup_by_key(|c| c.0);
        // Copies of one text (the same edit replayed in many sessions) are
        // compared once.
        let mut held: HashMap<Vec<u8>, bool> = HashMap::new();
        let mut out = Vec::new();
        for (lsn, after) in candidates {
            let Some(after) = after.filter(|a| !a.is_empty()) else { continue };
            let holds = match held.get(&after) {
                Some(&h) => h,
                None => {
                    let h = fingerprint::containment(fps, &fingerprint::decode(&after)) >= self.opts.min_confidence;
                    held.insert(after, h);
                    h
                }
            };
            if holds {
                out.push((lsn, "after"));
            }
        }
        Ok(out)
    }

    fn span_fps(&self, node: Node) -> Result<Vec<i64>> {
        let sql = if node.1 == "before" {
            "SELECT before_fp FROM prov_spans WHERE lsn = ?1"
        } else {
            "SELECT after_fp FROM prov_spans WHERE lsn = ?1"
        };
        let blob: Option<Option<Vec<u8>>> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([node.0], |r| r.get(0)).optional())
            .sql("read span fingerprints")?;
        Ok(blob.flatten().map(|b| fingerprint::decode(&b)).unwrap_or_default())
    }

    fn span_ref(&self, node: Node) -> Result<SpanRef> {
        type Row = (String, String, Option<i64>, Option<i64>, Option<i64>, Option<i64>);
        let row: Option<Row> = self
            .conn
            .prepare_cached(
                "SELECT session_key, file, before_start, before_end, after_start, after_end FROM prov_spans WHERE lsn = ?1",
            )
            .and_then(|mut s| {
                s.query_row([node.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
                    .optional()
            })
            .sql("read span")?;
        let Some((session, file, bs, be, a_s, ae)) = row else {
            return Ok(SpanRef { side: node.1.to_owned(), ..SpanRef::default() });
        };
        let lines = if node.1 == "before" { bs.zip(be) } else { a_s.zip(ae) }.map(|(a, b)| [a, b]);
        Ok(SpanRef {
            offset: offset_of(self.conn, &session, node.0 as Lsn)?,
            session,
            side: node.1.to_owned(),
            file,
            lines,
        })
    }

    /// The breadth-first walk backwards from `seeds` (and the agents'
    /// links declared for the target's place).
    fn lineage(&mut self, seeds: Vec<Node>, target: &Target) -> Result<()> {
        let mut queue: VecDeque<(Node, usize)> = seeds.into_iter().map(|n| (n, 0)).collect();
        let mut seen: HashSet<Node> = queue.iter().map(|(n, _)| *n).collect();
        let mut edges_seen: HashSet<(Node, Node)> = HashSet::new();
        // Links the apply could not resolve: declared for this place.
        let mut pending_links = self.links_at(target)?;
        loop {
            let Some((node, depth)) = queue.pop_front() else {
                let Some((from, edge)) = pending_links.pop() else { break };
                self.follow(from, edge, 0, &mut queue, &mut seen)?;
                continue;
            };
            if depth >= self.opts.max_depth {
                self.out.truncated.depth = true;
                continue;
            }
            let mut edges = self.edges_into(node)?;
            edges.retain(|(from, _)| edges_seen.insert((*from, node)));
            edges.sort_by(|a, b| b.1.confidence.total_cmp(&a.1.confidence));
            if edges.len() > self.opts.max_fanout {
                self.out.truncated.fanout = true;
                edges.truncate(self.opts.max_fanout);
            }
            for (from, mut edge) in edges {
                if self.out.lineage.len() >= self.opts.max_edges {
                    self.out.truncated.edges = true;
                    return Ok(());
                }
                edge.to = self.span_ref(node)?;
                edge.depth = depth;
                self.follow(from, edge, depth, &mut queue, &mut seen)?;
            }
        }
        Ok(())
    }

    /// Records `edge` into `from`, the touches of `from`'s text and the
    /// spans that wrote it (queued).
    fn follow(
        &mut self,
        from: Node,
        mut edge: EdgeInfo,
        depth: usize,
        queue: &mut VecDeque<(Node, usize)>,
        seen: &mut HashSet<Node>,
    ) -> Result<()> {
        edge.from = self.span_ref(from)?;
        self.out.lineage.push(edge);
        if !seen.insert(from) {
            return Ok(());
        }
        let fps = self.span_fps(from)?;
        if fps.is_empty() {
            return Ok(());
        }
        let hits = self.lookup(&Probe::of_dense(&fps))?;
        for f in &hits {
            self.touch(*f, "lineage", depth + 1)?;
        }
        if from.1 == "after" {
            queue.push_back((from, depth + 1));
        }
        for next in self.seeds(&hits, &fps)? {
            if next.0 < from.0 && seen.insert(next) {
                queue.push_back((next, depth + 1));
            }
        }
        Ok(())
    }

    /// Edges into `node` worth following.
    fn edges_into(&self, node: Node) -> Result<Vec<(Node, EdgeInfo)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT from_lsn, from_side, confidence, location_delta, cardinality, agent_link, class, note
                 FROM prov_edges WHERE to_lsn = ?1 AND to_side = ?2",
            )
            .sql("prepare edges")?;
        type Row = (i64, String, f64, String, String, bool, String, String);
        let rows: Vec<Row> = stmt
            .query_map(params![node.0, node.1], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
            })
            .and_then(|r| r.collect())
            .sql("read edges")?;
        Ok(rows
            .into_iter()
            .filter(|(_, _, c, _, _, agent, class, _)| {
                *agent || self.opts.all || (class == "lineage" && *c as f32 >= self.opts.min_confidence)
            })
            .map(|(from, side, c, delta, card, agent, class, note)| {
                let side: &'static str = if side == "before" { "before" } else { "after" };
                (
                    (from, side),
                    EdgeInfo {
                        confidence: c as f32,
                        location_delta: delta,
                        cardinality: card,
                        agent_link: agent,
                        class,
                        note,
                        ..EdgeInfo::default()
                    },
                )
            })
            .collect())
    }

    /// Agents' links whose destination is the target's place, with the span
    /// their source names (the latest removed, else written, span there
    /// before the link).
    fn links_at(&self, target: &Target) -> Result<Vec<(Node, EdgeInfo)>> {
        let Some(file) = &target.file else { return Ok(Vec::new()) };
        let range = target.range.map_or((None, None), |(a, b)| (Some(i64::from(a)), Some(i64::from(b))));
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT lsn, from_file, from_start, from_end, to_start, to_end, note FROM prov_links WHERE to_file = ?1
                 ORDER BY lsn",
            )
            .sql("prepare links")?;
        type Row = (i64, String, Option<i64>, Option<i64>, Option<i64>, Option<i64>, String);
        let rows: Vec<Row> = stmt
            .query_map([file], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
            .and_then(|r| r.collect())
            .sql("read links")?;
        let mut out = Vec::new();
        for (lsn, from_file, fs, fe, ts, te, note) in rows {
            if !overlaps((ts, te), range) {
                continue;
            }
            let mut spans = self
                .conn
                .prepare_cached(
                    "SELECT lsn, before_start, before_end, after_start, after_end, before_fp IS NOT NULL,
                        after_fp IS NOT NULL
                     FROM prov_spans WHERE file = ?1 AND lsn < ?2 ORDER BY lsn DESC",
                )
                .sql("prepare link source")?;
            type Span = (i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>, bool, bool);
            let candidates: Vec<Span> = spans
                .query_map(params![from_file, lsn], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
                })
                .and_then(|r| r.collect())
                .sql("read link source")?;
            let from =
                candidates.iter().find(|s| s.5 && overlaps((s.1, s.2), (fs, fe))).map(|s| (s.0, "before")).or_else(
                    || candidates.iter().find(|s| s.6 && overlaps((s.3, s.4), (fs, fe))).map(|s| (s.0, "after")),
                );
            if let Some(from) = from {
                out.push((
                    from,
                    EdgeInfo {
                        to: SpanRef {
                            session: String::new(),
                            offset: 0,
                            side: "target".into(),
                            file: file.clone(),
                            lines: ts.zip(te).map(|(a, b)| [a, b]),
                        },
                        confidence: 1.0,
                        location_delta: if from_file == *file { "same".into() } else { "moved".into() },
                        cardinality: "1:1".into(),
                        agent_link: true,
                        class: "lineage".into(),
                        note,
                        depth: 0,
                        ..EdgeInfo::default()
                    },
                ));
            }
        }
        out.reverse();
        Ok(out)
    }

    fn tombstones(&mut self, target: &Target, fps: &[i64]) -> Result<()> {
        let range = target.range.map_or((None, None), |(a, b)| (Some(i64::from(a)), Some(i64::from(b))));
        type Row = (i64, String, String, Option<i64>, Option<i64>, i64);
        let mut found: BTreeMap<i64, (Row, &'static str)> = BTreeMap::new();
        if let Some(file) = &target.file {
            let rows: Vec<Row> = self
                .conn
                .prepare_cached(
                    "SELECT lsn, session_key, file, start_line, end_line, ts_ms FROM prov_tombstones WHERE file = ?1",
                )
                .and_then(|mut s| {
                    s.query_map([file], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
                        .collect()
                })
                .sql("read tombstones")?;
            for row in rows {
                if overlaps((row.3, row.4), range) {
                    found.insert(row.0, (row, "location"));
                }
            }
        }
        // Removed text that is the target's own (re-inserted since).
        let removed: Vec<Lsn> =
            self.touches.values().filter(|t| t.kind == "tool.call" && t.confidence >= 0.9).map(|t| t.lsn).collect();
        for lsn in removed {
            let Some(info) = self.event_info(lsn)? else { continue };
            let Some(call) = info.call_id else { continue };
            let rows: Vec<(Row, Option<Vec<u8>>)> = self
                .conn
                .prepare_cached(
                    "SELECT t.lsn, t.session_key, t.file, t.start_line, t.end_line, t.ts_ms, s.before_fp
                     FROM prov_spans s JOIN prov_tombstones t ON t.lsn = s.lsn
                     WHERE s.session_key = ?1 AND s.call_id = ?2",
                )
                .and_then(|mut s| {
                    s.query_map(params![info.session, call], |r| {
                        Ok(((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?), r.get(6)?))
                    })?
                    .collect()
                })
                .sql("read tombstones")?;
            for (row, before) in rows {
                let before = before.map(|b| fingerprint::decode(&b)).unwrap_or_default();
                if fingerprint::containment(fps, &before) >= 0.9 {
                    found.entry(row.0).or_insert((row, "content"));
                }
            }
        }
        for ((lsn, session, file, start, end, ts), matched) in found.into_values() {
            self.out.tombstones.push(TombstoneInfo {
                offset: offset_of(self.conn, &session, lsn as Lsn)?,
                session,
                file,
                lines: start.zip(end).map(|(a, b)| [a, b]),
                ts: Ts(ts).to_rfc3339(),
                matched,
            });
        }
        Ok(())
    }

    /// Touches grouped by session, ordered.
    fn sessions(&mut self) -> Result<Vec<SessionEvidence>> {
        let mut by: BTreeMap<String, SessionEvidence> = BTreeMap::new();
        let touches = std::mem::take(&mut self.touches);
        for (lsn, t) in touches {
            let session = self.info.get(&lsn).map(|i| i.session.clone()).unwrap_or_default();
            let s = by.entry(session.clone()).or_insert_with(|| SessionEvidence {
                session,
                via: "lineage",
                latest_ms: i64::MIN,
                latest_write_ms: i64::MIN,
                ..SessionEvidence::default()
            });
            if t.via == "direct" {
                s.via = "direct";
            }
            if t.wrote {
                let what = if t.depth == 0 { "span" } else { "lineage" };
                if s.wrote.is_none() || what == "span" {
                    s.wrote = Some(what);
                }
                s.latest_write_ms = s.latest_write_ms.max(t.ts_ms);
            }
            s.confidence = s.confidence.max(t.confidence);
            s.latest_ms = s.latest_ms.max(t.ts_ms);
            s.touches.push(t);
        }
        let mut out: Vec<SessionEvidence> = by.into_values().collect();
        for s in &mut out {
            s.touch_count = s.touches.len();
        }
        // Writers of the span, then of its older versions (the latest
        // writer first), then the sessions that read or discussed it.
        let tier = |s: &SessionEvidence| match s.wrote {
            Some("span") => 0,
            Some(_) => 1,
            None => 2,
        };
        out.sort_by(|a, b| {
            tier(a)
                .cmp(&tier(b))
                .then(b.latest_write_ms.cmp(&a.latest_write_ms))
                .then(b.touch_count.cmp(&a.touch_count))
                .then(b.latest_ms.cmp(&a.latest_ms))
                .then(a.session.cmp(&b.session))
        });
        Ok(out)
    }

    /// Fills in what only returned sessions show: touch offsets, the latest
    /// touch's time, project and title.
    fn finish(&self, sessions: &mut [SessionEvidence]) -> Result<()> {
        for s in sessions {
            for t in &mut s.touches {
                t.offset = offset_of(self.conn, &s.session, t.lsn)?;
            }
            s.latest_touch = Ts(s.latest_ms).to_rfc3339();
            self.describe(s)?;
        }
        Ok(())
    }

    fn describe(&self, s: &mut SessionEvidence) -> Result<()> {
        let row: Option<(Option<String>, Option<String>)> = self
            .conn
            .prepare_cached("SELECT project, title FROM sessions WHERE session_key = ?1")
            .and_then(|mut st| st.query_row([&s.session], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .sql("read session")?;
        if let Some((project, title)) = row {
            s.project = project;
            s.title = title;
        }
        Ok(())
    }

    /// Brings in the sessions the returned ones continue (see the module docs).
    fn continuations(&mut self, sessions: &mut Vec<SessionEvidence>) -> Result<()> {
        let mut present: HashSet<String> = sessions.iter().map(|s| s.session.clone()).collect();
        let mut i = 0;
        let mut crossings: HashMap<String, usize> = HashMap::new();
        while i < sessions.len() {
            let later = sessions[i].session.clone();
            let hops = crossings.get(&later).copied().unwrap_or(0);
            i += 1;
            if hops >= CONTINUATION_DEPTH {
                continue;
            }
            let Some((earlier, c)) = self.tails.continues(self.conn, &later)? else { continue };
            if let Some(s) = sessions.iter_mut().find(|s| s.session == earlier) {
                if s.continuation.is_none() {
                    s.continuation = Some(c);
                }
                continue;
            }
            if !present.insert(earlier.clone()) {
                continue;
            }
            let tail = tail_touch(self.conn, &earlier, c.confidence)?;
            let mut s = SessionEvidence {
                session: earlier.clone(),
                via: "continuation",
                confidence: c.confidence,
                continuation: Some(c),
                ..SessionEvidence::default()
            };
            if let Some(t) = tail {
                s.latest_ms = t.ts_ms;
                s.latest_touch = t.ts.clone();
                s.touch_count = 1;
                s.touches.push(t);
            }
            self.describe(&mut s)?;
            crossings.insert(earlier, hops + 1);
            sessions.push(s);
        }
        Ok(())
    }
}

/// The session `later` continues, if any: the earlier session of the same
/// project, ended by the time `later` started (within [`OVERLAP_MS`]) and
/// not its parent or subagent, whose last [`TAIL_EVENTS`] events hold most
/// of `later`'s head (harness scaffolding left out).
pub fn continues(conn: &Connection, later: &str) -> Result<Option<(String, Continuation)>> {
    Tails::default().continues(conn, later)
}

/// Hashes integer keys (log positions, fingerprints) with one multiply:
/// the maps of continuation lookup hold tens of thousands of them.
#[derive(Debug, Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

/// A session that may be continued, as [`Tails`] keeps it.
#[derive(Debug)]
struct Earlier {
    key: String,
    started_ms: i64,
    last_event_ms: i64,
    parent: Option<String>,
    tail_read: bool,
}

/// What continuation detection reads of the projection, kept for one
/// `explain` (its sessions mostly share projects): the sessions of each
/// project, and which session's tail (last [`TAIL_EVENTS`] events) each log
/// position is in. A head's postings are then matched against tails in
/// memory instead of looking up the owner of every posting.
#[derive(Debug, Default)]
struct Tails {
    projects: HashMap<Option<String>, Vec<usize>>,
    sessions: Vec<Earlier>,
    owner: HashMap<i64, usize, BuildHasherDefault<IntHasher>>,
    /// Postings of head fingerprints (the sessions an explain returns often
    /// start alike).
    postings: HashMap<i64, Vec<i64>, BuildHasherDefault<IntHasher>>,
    /// Per harness, whether a fingerprint is boilerplate.
    boilerplate: HashMap<String, HashMap<i64, bool, BuildHasherDefault<IntHasher>>>,
}

impl Tails {
    /// The sessions of `project` (read once).
    fn project(&mut self, conn: &Connection, project: &Option<String>) -> Result<&[usize]> {
        if !self.projects.contains_key(project) {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT session_key, started_ms, last_event_ms, parent_session_key FROM sessions
                     WHERE project IS ?1 ORDER BY session_key",
                )
                .sql("prepare project sessions")?;
            let rows: Vec<Earlier> = stmt
                .query_map([project], |r| {
                    Ok(Earlier {
                        key: r.get(0)?,
                        started_ms: r.get(1)?,
                        last_event_ms: r.get(2)?,
                        parent: r.get(3)?,
                        tail_read: false,
                    })
                })
                .and_then(|r| r.collect())
                .sql("read project sessions")?;
            let first = self.sessions.len();
            self.sessions.extend(rows);
            self.projects.insert(project.clone(), (first..self.sessions.len()).collect());
        }
        Ok(self.projects.get(project).map_or(&[], Vec::as_slice))
    }

    /// Reads the tail of session `i` into `owner` (once).
    fn read_tail(&mut self, conn: &Connection, i: usize) -> Result<()> {
        if self.sessions[i].tail_read {
            return Ok(());
        }
        let lsns: Vec<i64> = conn
            .prepare_cached("SELECT lsn FROM session_events WHERE session_key = ?1 ORDER BY lsn DESC LIMIT ?2")
            .and_then(|mut s| s.query_map(params![self.sessions[i].key, TAIL_EVENTS], |r| r.get(0))?.collect())
            .sql("read session tail")?;
        self.owner.extend(lsns.into_iter().map(|l| (l, i)));
        self.sessions[i].tail_read = true;
        Ok(())
    }

    /// See [`continues`].
    fn continues(&mut self, conn: &Connection, later: &str) -> Result<Option<(String, Continuation)>> {
        type Head = (Vec<u8>, bool, Option<String>, i64, String, Option<String>);
        let row: Option<Head> = conn
            .prepare_cached(
                "SELECT p.head, p.compaction, s.project, s.started_ms, s.harness, s.parent_session_key
                 FROM prov_sessions p JOIN sessions s ON s.session_key = p.session_key WHERE p.session_key = ?1",
            )
            .and_then(|mut s| {
                s.query_row([later], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
                    .optional()
            })
            .sql("read session head")?;
        let Some((head, compaction, project, started, harness, parent)) = row else { return Ok(None) };
        let mut head = fingerprint::decode(&head);
        {
            let mut stmt = conn
                .prepare_cached("SELECT 1 FROM prov_boilerplate WHERE harness = ?1 AND fp = ?2")
                .sql("prepare boilerplate")?;
            let known = self.boilerplate.entry(harness.clone()).or_default();
            let mut keep = Vec::with_capacity(head.len());
            for f in head {
                let boilerplate = match known.get(&f) {
                    Some(&b) => b,
                    None => {
                        let b = stmt.exists(params![harness, f]).sql("boilerplate")?;
                        known.insert(f, b);
                        b
                    }
                };
                if !boilerplate {
                    keep.push(f);
                }
            }
            head = keep;
        }
        if head.len() < CONTINUATION_SHARED {
            return Ok(None);
        }
        // The sessions it may continue: earlier in the project, ended by the
        // time it started, neither itself nor its parent nor its subagent.
        let in_project = self.project(conn, &project)?.to_vec();
        let candidates: Vec<usize> = in_project
            .into_iter()
            .filter(|&i| {
                let e = &self.sessions[i];
                e.key != later
                    && e.started_ms <= started
                    && e.last_event_ms <= started + OVERLAP_MS
                    && parent.as_deref() != Some(e.key.as_str())
                    && e.parent.as_deref() != Some(later)
            })
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        for &i in &candidates {
            self.read_tail(conn, i)?;
        }
        // Head fingerprints found in each candidate's tail (index-only scans
        // of the postings).
        // slot[i]: where session i's hits go, when it is a candidate.
        let mut slot = vec![usize::MAX; self.sessions.len()];
        for (k, &i) in candidates.iter().enumerate() {
            slot[i] = k;
        }
        let mut hits: Vec<Vec<i64>> = vec![Vec::new(); candidates.len()];
        {
            let mut stmt =
                conn.prepare_cached("SELECT lsn FROM prov_postings WHERE fp = ?1").sql("prepare postings")?;
            for &f in &head {
                let lsns = match self.postings.entry(f) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => e.insert(
                        stmt.query_map([f], |r| r.get(0)).and_then(|r| r.collect()).sql("continuation postings")?,
                    ),
                };
                for lsn in lsns.iter() {
                    if let Some(shared) = self.owner.get(lsn).and_then(|&i| hits.get_mut(slot[i])) {
                        shared.push(f);
                    }
                }
            }
        }
        let mut best: Option<(String, Continuation)> = None;
        // Candidates in session key order (ties keep the first).
        for (i, mut shared) in candidates.into_iter().zip(hits) {
            shared.sort_unstable();
            shared.dedup();
            if shared.len() < CONTINUATION_SHARED {
                continue;
            }
            let overlap = shared.len() as f32 / head.len() as f32;
            if overlap < CONTINUATION_FLOOR && !(compaction && overlap + COMPACTION_BOOST >= CONTINUATION_FLOOR) {
                continue;
            }
            let confidence = (overlap + if compaction { COMPACTION_BOOST } else { 0.0 }).min(1.0);
            if best.as_ref().is_none_or(|(_, b)| confidence > b.confidence) {
                best = Some((
                    self.sessions[i].key.clone(),
                    Continuation { into: later.to_owned(), confidence, shared: shared.len(), compaction },
                ));
            }
        }
        Ok(best)
    }
}

/// The last content event of a session, as the touch a continuation
/// crossing lands on.
fn tail_touch(conn: &Connection, session: &str, confidence: f32) -> Result<Option<Touch>> {
    type Row = (i64, String, i64, Option<String>, Option<String>);
    let row: Option<Row> = conn
        .prepare_cached(
            "SELECT lsn, kind, ts_ms, tool, file FROM session_events WHERE session_key = ?1 ORDER BY lsn DESC LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))).optional()
        })
        .sql("read session end")?;
    let Some((lsn, kind, ts_ms, tool, file)) = row else { return Ok(None) };
    Ok(Some(Touch {
        offset: offset_of(conn, session, lsn as Lsn)?,
        kind,
        tool,
        file,
        ts: Ts(ts_ms).to_rfc3339(),
        confidence,
        via: "continuation",
        depth: 0,
        wrote: false,
        lsn: lsn as Lsn,
        ts_ms,
    }))
}

/// Position of the event at `lsn` in its session.
pub fn offset_of(conn: &Connection, session: &str, lsn: Lsn) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM session_events WHERE session_key = ?1 AND lsn < ?2")
        .and_then(|mut s| s.query_row(params![session, lsn as i64], |r| r.get(0)))
        .sql("count session events")?;
    Ok(n.max(0) as u64)
}

/// The lsns of a session's events at offsets `from..=to`.
fn lsns_at(conn: &Connection, session: &str, from: u64, to: u64) -> Result<Vec<Lsn>> {
    let mut stmt = conn
        .prepare_cached("SELECT lsn FROM session_events WHERE session_key = ?1 ORDER BY lsn LIMIT ?2 OFFSET ?3")
        .sql("prepare window")?;
    let rows = stmt
        .query_map(params![session, (to - from + 1) as i64, from as i64], |r| r.get::<_, i64>(0))
        .and_then(|r| r.collect::<rusqlite::Result<Vec<i64>>>())
        .sql("read window")?;
    Ok(rows.into_iter().map(|l| l as Lsn).collect())
}

/// Offsets of the windows around the best touches of a session, merged
/// where they overlap.
fn window_spans(s: &SessionEvidence, opts: &ExplainOptions) -> Vec<(u64, u64)> {
    let mut best: Vec<&Touch> = s.touches.iter().collect();
    best.sort_by(|a, b| b.confidence.total_cmp(&a.confidence).then(b.ts_ms.cmp(&a.ts_ms)));
    best.truncate(opts.windows);
    let mut spans: Vec<(u64, u64)> =
        best.iter().map(|t| (t.offset.saturating_sub(opts.before as u64), t.offset + opts.after as u64)).collect();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// The windows of every session, their events read from the tapes in one
/// pass (a chunk that several windows need is decompressed once).
fn windows(
    conn: &Connection,
    snapshot: &Snapshot,
    sessions: &mut [SessionEvidence],
    opts: &ExplainOptions,
) -> Result<()> {
    let mut plans: Vec<Vec<(u64, Vec<Lsn>)>> = Vec::with_capacity(sessions.len());
    let mut all: Vec<Lsn> = Vec::new();
    for s in sessions.iter() {
        let mut plan = Vec::new();
        for (a, b) in window_spans(s, opts) {
            let lsns = lsns_at(conn, &s.session, a, b)?;
            all.extend_from_slice(&lsns);
            plan.push((a, lsns));
        }
        plans.push(plan);
    }
    all.sort_unstable();
    all.dedup();
    let frames: HashMap<Lsn, Frame> = snapshot.frames_at(&all)?.into_iter().map(|f| (f.lsn, f)).collect();
    for (s, plan) in sessions.iter_mut().zip(plans) {
        s.windows = plan
            .into_iter()
            .map(|(from, lsns)| window(from, lsns.iter().filter_map(|l| frames.get(l)), opts.event_chars))
            .collect();
    }
    Ok(())
}

/// The events of `session` at offsets `from..=to` as transcript lines
/// (each text cut to `max_chars`; 0 keeps everything).
pub fn transcript(
    conn: &Connection,
    snapshot: &Snapshot,
    session: &str,
    from: u64,
    to: u64,
    max_chars: usize,
) -> Result<Window> {
    let lsns = lsns_at(conn, session, from, to)?;
    let frames = snapshot.frames_at(&lsns)?;
    Ok(window(from, frames.iter(), max_chars))
}

/// A window of the frames found (in log order) for offsets from `from`.
fn window<'a>(from: u64, frames: impl Iterator<Item = &'a Frame>, max_chars: usize) -> Window {
    let events: Vec<TranscriptLine> = frames
        .enumerate()
        .map(|(i, f)| {
            let event = decode(f.lsn, &f.payload);
            let mut l = line(from + i as u64, &event.body, max_chars);
            l.ts = event.ts.to_rfc3339();
            l
        })
        .collect();
    let to = from + events.len().saturating_sub(1) as u64;
    Window { from, to, events }
}

fn line(offset: u64, body: &Body, max_chars: usize) -> TranscriptLine {
    let (role, text): (String, String) = match body {
        Body::MsgIn(m) => (if m.origin.is_empty() { "user".into() } else { m.origin.clone() }, m.text.clone()),
        Body::MsgOut(m) => (
            if m.part.is_empty() || m.part == "text" { "assistant".into() } else { format!("assistant {}", m.part) },
            m.text.clone(),
        ),
        Body::ToolCall(t) => (format!("{} call", t.tool), args_text(&t.args)),
        Body::ToolResult(t) => {
            let mut text = t.stdout.clone();
            if !t.stderr.is_empty() {
                text.push_str("\n[stderr]\n");
                text.push_str(&t.stderr);
            }
            let role = if t.tool.is_empty() { "tool result".to_owned() } else { format!("{} result", t.tool) };
            (if t.is_error { format!("{role} (error)") } else { role }, text)
        }
        Body::CodeEdit(e) => {
            let r = |r: Option<[u32; 2]>| r.map_or("?".to_owned(), |[a, b]| format!("{a}-{b}"));
            let op = if e.op.is_empty() { "update" } else { e.op.as_str() };
            ("edit".into(), format!("{op} {} lines {} -> {}", e.file, r(e.before_range), r(e.after_range)))
        }
        Body::CodeRead(r) => {
            let range = r.range.map_or(String::new(), |[a, b]| format!(" lines {a}-{b}"));
            ("read".into(), format!("{}{range}", r.file))
        }
        Body::SpanLink(l) => ("link".into(), format!("{} -> {}: {}", l.from_file, l.to_file, l.note)),
        Body::Meta(m) => (m.label.clone(), m.text.clone().unwrap_or_default()),
        other => (other.kind().to_owned(), String::new()),
    };
    let (text, cut) = cut_chars(text, max_chars);
    TranscriptLine { offset, ts: String::new(), kind: body.kind().to_owned(), role, text, cut }
}

/// A tool's arguments as one text: a lone string as is, else JSON.
fn args_text(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn cut_chars(text: String, max: usize) -> (String, usize) {
    if max == 0 {
        return (text, 0);
    }
    let n = text.chars().count();
    if n <= max {
        return (text, 0);
    }
    (text.chars().take(max).collect(), n - max)
}
