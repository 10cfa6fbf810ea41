//! The BM25 top-N of the candidate pool, computed from FTS5's postings with
//! exactly the scores and order of FTS5's own `bm25()` ranking
//! (`SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank`).
//!
//! FTS5 computes `bm25()` for every matching document, and each call looks
//! the document's length up in `memories_fts_docsize` (a statement and a
//! b-tree seek per match, up to the pool's postings bound): about half of a
//! ranking. Only the best `limit` matter. Here the query words' postings are
//! read from an `fts5vocab` instance table (term frequencies of every match,
//! a fraction of FTS5's cost per match), every match gets an upper bound of
//! its score (a document holds at least the query tokens found in it, and
//! the score only falls as the length grows), and lengths are looked up in
//! decreasing order of bound only until no remaining bound can reach the
//! `limit`-th exact score.
//!
//! The arithmetic is FTS5's `fts5Bm25Function` (k1 = 1.2, b = 0.75, IDF
//! `ln((N − n + 0.5)/(n + 0.5))` floored at 1e-6, the same f64 operations in
//! the same order, phrases summed in query order), so the scores are
//! bit-identical and ties break the same way (lower rowid first). Whenever
//! that cannot be guaranteed (a query word FTS5 does not read as exactly one
//! token, temporary tables that cannot be written, a missing or odd
//! statistics record), [`top`] returns `None` and the caller asks FTS5.
//!
//! A long-running process ranks against the same index over and over, so
//! each [`Store`] keeps what it has read of it in a [`Cache`]: the token of
//! each query word (FTS5's tokenizer does not depend on the index), and the
//! postings of each token, the length of each document and the statistics
//! record, all three valid only while the index is unchanged. Every ranking
//! first reads what identifies the index's content ([`index_version`]: one
//! statement, two point lookups, in its read snapshot), and when it differs from what the
//! cache was read under, the index's part of the cache is emptied. Scores
//! are computed from cached data exactly as from fresh data, so a ranking
//! is the same warm or cold.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use foldhash::HashMap;

use rusqlite::OptionalExtension;

use crate::base::error::{Result, SqlContext};
use crate::storage::store::{MEMORY_CONTENT_WRITES, Store};

/// FTS5's `bm25()` constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The connection's temporary tables: the query words, tokenized by FTS5 with
/// `memories_fts`'s tokenizer (see migrations/0001_initial.sql), and the
/// per-token instances of `memories_fts` and of the query words.
const CREATE: &str = "
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_query_words USING fts5(word, tokenize='porter unicode61');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_query_tokens USING fts5vocab(temp, engram_query_words, instance);
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_memory_postings USING fts5vocab(main, memories_fts, instance);";

const INSERT_WORDS: &str = "INSERT INTO temp.engram_query_words (rowid, word) SELECT key, value FROM json_each(?1)";

/// Creates the temporary tables if this connection lacks them. Called before
/// a ranking opens its read snapshot, so that they outlive it (created inside
/// the snapshot, they would be rolled back with it and made again for every
/// ranking).
pub(super) fn prepare(store: &Store) {
    if store.conn().prepare_cached(INSERT_WORDS).is_err()
        && let Err(e) = store.conn().execute_batch(CREATE)
    {
        tracing::debug!(error = %e, "no temporary tables for BM25; FTS5 will rank");
    }
}

/// The `limit` best BM25 hits of the FTS5 query OR-ing `phrases` (each a
/// quoted word, in this order), best first, ties by lower rowid; `None` when
/// they cannot be computed exactly here (see the module docs).
pub(super) fn top(store: &Store, phrases: &[String], limit: usize) -> Option<Vec<(i64, f64)>> {
    let mut cache = store.cached::<Cache>();
    let top = match cached_tokens(&cache, phrases) {
        Some(Some(tokens)) => try_top(store, &mut cache, tokens, limit),
        // A word FTS5 does not read as one token.
        Some(None) => return None,
        None => tokenize_then_top(store, &mut cache, phrases, limit),
    };
    match top {
        Ok(top) => top,
        Err(e) => {
            tracing::debug!(error = %e, "BM25 from postings failed; FTS5 will rank");
            // Start afresh, temporary tables and all: a rolled-back outer
            // transaction may have taken them.
            *cache = Cache::default();
            None
        }
    }
}

/// The best hits, or `None` when FTS5 must rank them (see [`top`]).
type Top = Option<Vec<(i64, f64)>>;

/// [`try_top`] after FTS5 has tokenized the query words in the temporary
/// table (`None` when the savepoint around it cannot be taken).
fn tokenize_then_top(store: &Store, cache: &mut Cache, phrases: &[String], limit: usize) -> Result<Top> {
    // The query words written to the temporary table are always rolled back:
    // committed and deleted again for every query (a caller without a
    // transaction), FTS5's segments and tombstones would pile up in it.
    let conn = store.conn();
    // Before the savepoint: tables created inside it would be rolled back with it.
    prepare(store);
    let run = |sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([]).map(drop));
    if let Err(e) = run("SAVEPOINT engram_bm25") {
        tracing::debug!(error = %e, "no savepoint for BM25; FTS5 will rank");
        return Ok(None);
    }
    let top = tokenize(store, cache, phrases).and_then(|tokens| match tokens {
        Some(tokens) => try_top(store, cache, tokens, limit),
        None => Ok(None),
    });
    if let Err(e) = run("ROLLBACK TO engram_bm25").and_then(|()| run("RELEASE engram_bm25")) {
        tracing::warn!(error = %e, "could not roll the BM25 query words back");
    }
    top
}

/// What a [`Store`] remembers of FTS5 between rankings (see the module docs).
#[derive(Debug)]
pub struct Cache {
    /// Each query word's token, `None` when FTS5 does not read it as exactly one.
    words: HashMap<String, Option<String>>,
    /// The [`index_version`] the entries below were read under.
    version: Option<(i64, Vec<u8>)>,
    /// Documents and tokens in the table.
    totals: Option<(i64, i64)>,
    /// Each token's documents, ascending, with its count in each.
    postings: HashMap<String, Vec<(i64, u32)>>,
    /// Each document's length in tokens.
    lengths: HashMap<i64, u32>,
    /// Postings and lengths held, against `capacity`.
    entries: usize,
    /// Postings and lengths held before the least needed are dropped ([`CACHE_ENTRIES`]).
    capacity: usize,
}

impl Default for Cache {
    fn default() -> Cache {
        Cache {
            words: HashMap::default(),
            version: None,
            totals: None,
            postings: HashMap::default(),
            lengths: HashMap::default(),
            entries: 0,
            capacity: CACHE_ENTRIES,
        }
    }
}

/// Postings and document lengths a [`Cache`] holds before it is emptied
/// (16 bytes each: about 32 MB).
const CACHE_ENTRIES: usize = 2 << 20;
/// Query words a [`Cache`] holds before it forgets them.
const CACHE_WORDS: usize = 1 << 16;

impl Cache {
    /// Empties the index's part of the cache unless `version` is the one it was read under.
    fn check(&mut self, version: (i64, Vec<u8>)) {
        if self.version.as_ref() != Some(&version) {
            self.forget_index();
            self.version = Some(version);
        }
    }

    fn forget_index(&mut self) {
        self.totals = None;
        self.postings.clear();
        self.lengths.clear();
        self.entries = 0;
    }

    /// Counts `n` new entries. When they would not fit, the lengths and
    /// every token's postings but those of `keep` (the ranking in hand still
    /// reads them) are dropped first.
    fn make_room(&mut self, n: usize, keep: &[&str]) {
        if self.entries + n > self.capacity {
            self.lengths.clear();
            self.postings.retain(|token, _| keep.contains(&token.as_str()));
            self.entries = self.postings.values().map(Vec::len).sum();
        }
        self.entries += n;
    }
}

/// The tokens of `phrases` when the cache knows every one of them (`Some(None)`
/// when one of them is not exactly one token), `None` when it does not.
fn cached_tokens(cache: &Cache, phrases: &[String]) -> Option<Option<Vec<String>>> {
    phrases.iter().map(|p| cache.words.get(p).cloned()).collect()
}

/// What identifies the index's content: the projection's count of content
/// writes (`memory_content_writes`, bumped by the apply in the transaction
/// that writes `memories_fts`, so this connection's own uncommitted writes
/// show too), and FTS5's structure record (id 10, rewritten with a new
/// segment and write counter whenever anything is flushed to the index).
/// `None` when FTS5 has no structure record.
fn index_version(store: &Store) -> Result<Option<(i64, Vec<u8>)>> {
    let (writes, structure): (Option<i64>, Option<Vec<u8>>) = store
        .conn()
        .prepare_cached(
            "SELECT (SELECT value FROM engram_counters WHERE name = ?1),
                    (SELECT block FROM memories_fts_data WHERE id = 10)",
        )
        .and_then(|mut s| s.query_row([MEMORY_CONTENT_WRITES], |r| Ok((r.get(0)?, r.get(1)?))))
        .sql("read the index version")?;
    Ok(structure.map(|s| (writes.unwrap_or(0), s)))
}

fn try_top(store: &Store, cache: &mut Cache, tokens: Vec<String>, limit: usize) -> Result<Top> {
    if tokens.is_empty() || limit == 0 {
        return Ok(Some(Vec::new()));
    }
    let Some(version) = index_version(store)? else { return Ok(None) };
    cache.check(version);
    let (rows, tokens_total) = match cache.totals {
        Some(t) => t,
        None => {
            let Some(t) = totals(store)? else { return Ok(None) };
            cache.totals = Some(t);
            t
        }
    };
    let avgdl = tokens_total as f64 / rows as f64;

    // The postings of every query token, then the term frequencies of each
    // document, one row of `distinct.len()` counts in `tf` per entry of `docs`.
    let mut distinct: Vec<&str> = tokens.iter().map(String::as_str).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let phrase_token: Vec<usize> =
        tokens.iter().map(|t| distinct.binary_search(&t.as_str()).unwrap_or(usize::MAX)).collect();
    for token in &distinct {
        if !cache.postings.contains_key(*token) {
            let list = postings(store, token)?;
            cache.make_room(list.len(), &distinct);
            cache.postings.insert((*token).to_owned(), list);
        }
    }
    let lists: Vec<&[(i64, u32)]> =
        distinct.iter().map(|t| cache.postings.get(*t).map_or(&[][..], Vec::as_slice)).collect();
    let hits: Vec<i64> = lists.iter().map(|l| l.len() as i64).collect();
    let mut matches: Vec<(i64, usize, u32)> =
        lists.iter().enumerate().flat_map(|(k, l)| l.iter().map(move |&(doc, n)| (doc, k, n))).collect();
    matches.sort_unstable();
    let width = distinct.len();
    let mut docs: Vec<i64> = Vec::new();
    let mut tf: Vec<u32> = Vec::new();
    for &(doc, k, n) in &matches {
        if docs.last() != Some(&doc) {
            docs.push(doc);
            tf.resize(tf.len() + width, 0);
        }
        let at = tf.len() - width + k;
        tf[at] = n;
    }
    let idf: Vec<f64> = phrase_token
        .iter()
        .map(|&k| {
            let n = hits.get(k).copied().unwrap_or(0);
            let idf = (((rows - n) as f64 + 0.5) / (n as f64 + 0.5)).ln();
            if idf <= 0.0 { 1e-6 } else { idf }
        })
        .collect();
    let score = |tf: &[u32], length: f64| -> f64 {
        let mut score = 0.0;
        for (i, &k) in phrase_token.iter().enumerate() {
            let f = f64::from(tf.get(k).copied().unwrap_or(0));
            score += idf[i] * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * length / avgdl)));
        }
        score
    };

    // Bounds: the length is at least the number of query tokens found.
    let freqs = |d: usize| &tf[d * width..(d + 1) * width];
    let mut bounded: Vec<(f64, usize)> =
        (0..docs.len()).map(|d| (score(freqs(d), f64::from(freqs(d).iter().sum::<u32>())), d)).collect();
    bounded.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut best: BinaryHeap<Hit> = BinaryHeap::with_capacity(limit + 1);
    // Lengths not yet cached are read a batch at a time (one statement for
    // many seeks); the batches grow, as the bounds of later documents are
    // further from their scores, but only to 64: every length read past the
    // cut-off is wasted.
    let mut next = 0;
    let mut batch = 16;
    while next < bounded.len() {
        if best.len() == limit && best.peek().is_some_and(|worst| bounded[next].0 < worst.score) {
            break;
        }
        let end = (next + batch).min(bounded.len());
        let missing: Vec<i64> =
            bounded[next..end].iter().map(|&(_, d)| docs[d]).filter(|doc| !cache.lengths.contains_key(doc)).collect();
        if !missing.is_empty() {
            let read = lengths(store, &missing)?;
            if read.len() != missing.len() {
                // A match without a length: FTS5 would fail (corrupt index).
                return Ok(None);
            }
            cache.make_room(read.len(), &distinct);
            cache.lengths.extend(read);
        }
        for &(bound, d) in &bounded[next..end] {
            // Any document whose bound cannot reach the worst score kept
            // is left out (the worst kept only improves).
            if best.len() == limit && best.peek().is_some_and(|worst| bound < worst.score) {
                continue;
            }
            let Some(&length) = cache.lengths.get(&docs[d]) else { return Ok(None) };
            best.push(Hit { score: score(freqs(d), f64::from(length)), rowid: docs[d] });
            if best.len() > limit {
                best.pop();
            }
        }
        next = end;
        batch = (batch * 2).min(64);
    }
    let mut out: Vec<Hit> = best.into_vec();
    out.sort_unstable();
    Ok(Some(out.into_iter().map(|h| (h.rowid, h.score)).collect()))
}

/// Every document holding `token`, ascending, with the token's count in it.
fn postings(store: &Store, token: &str) -> Result<Vec<(i64, u32)>> {
    let mut stmt = store
        .conn()
        .prepare_cached("SELECT doc FROM temp.engram_memory_postings WHERE term = ?1")
        .sql("prepare postings")?;
    let mut docs: Vec<i64> = Vec::new();
    let mut found = stmt.query([token]).sql("read postings")?;
    while let Some(row) = found.next().sql("read postings")? {
        docs.push(row.get(0).sql("read postings")?);
    }
    docs.sort_unstable();
    let mut out: Vec<(i64, u32)> = Vec::new();
    for doc in docs {
        match out.last_mut() {
            Some((last, n)) if *last == doc => *n += 1,
            _ => out.push((doc, 1)),
        }
    }
    Ok(out)
}

/// The lengths of `docs` from `memories_fts_docsize` (a document without a
/// readable record is left out).
fn lengths(store: &Store, docs: &[i64]) -> Result<Vec<(i64, u32)>> {
    let mut stmt = store
        .conn()
        .prepare_cached("SELECT d.id, d.sz FROM json_each(?1) AS j JOIN memories_fts_docsize AS d ON d.id = j.value")
        .sql("prepare document lengths")?;
    let list = serde_json::to_string(docs).unwrap_or_else(|_| "[]".into());
    let mut out = Vec::with_capacity(docs.len());
    let mut rows = stmt.query([list]).sql("read document lengths")?;
    while let Some(row) = rows.next().sql("read document lengths")? {
        let doc: i64 = row.get(0).sql("read document lengths")?;
        let blob = row.get_ref(1).sql("read document lengths")?.as_blob().ok();
        if let Some(length) = blob.and_then(document_length) {
            out.push((doc, length));
        }
    }
    Ok(out)
}

/// A scored document, ordered best first (higher score, then lower rowid):
/// the greatest is the worst, at the top of a [`BinaryHeap`].
#[derive(Clone, Copy, Debug)]
struct Hit {
    score: f64,
    rowid: i64,
}

impl Ord for Hit {
    fn cmp(&self, other: &Hit) -> Ordering {
        other.score.total_cmp(&self.score).then(self.rowid.cmp(&other.rowid))
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Hit) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Hit {
    fn eq(&self, other: &Hit) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Hit {}

/// Each phrase's token as FTS5 reads it in a query, or `None` if one of them
/// is not exactly one token (FTS5 would match a multi-token phrase by
/// position, which is not reproduced here). Every word's answer is cached.
fn tokenize(store: &Store, cache: &mut Cache, phrases: &[String]) -> Result<Option<Vec<String>>> {
    let conn = store.conn();
    let Ok(mut insert) = conn.prepare_cached(INSERT_WORDS) else { return Ok(None) };
    // Empty: [`top`] rolls every insert back.
    let list = serde_json::to_string(phrases).unwrap_or_else(|_| "[]".into());
    insert.execute([list]).sql("tokenize words")?;
    let mut stmt = conn.prepare_cached("SELECT doc, term FROM temp.engram_query_tokens").sql("prepare tokens")?;
    let mut tokens: Vec<Vec<String>> = vec![Vec::new(); phrases.len()];
    let mut rows = stmt.query([]).sql("read tokens")?;
    while let Some(row) = rows.next().sql("read tokens")? {
        let doc: i64 = row.get(0).sql("read tokens")?;
        let term: String = row.get(1).sql("read tokens")?;
        match usize::try_from(doc).ok().and_then(|i| tokens.get_mut(i)) {
            Some(found) => found.push(term),
            None => return Ok(None),
        }
    }
    if cache.words.len() + phrases.len() > CACHE_WORDS {
        cache.words.clear();
    }
    let mut out = Vec::with_capacity(phrases.len());
    for (word, mut found) in phrases.iter().zip(tokens) {
        let token = if found.len() == 1 { found.pop() } else { None };
        cache.words.insert(word.clone(), token.clone());
        out.extend(token);
    }
    Ok((out.len() == phrases.len()).then_some(out))
}

/// FTS5's statistics record: documents and tokens in the table, as its
/// `xRowCount` and `xColumnTotalSize(-1)` read them.
fn totals(store: &Store) -> Result<Option<(i64, i64)>> {
    let block: Option<Vec<u8>> = store
        .conn()
        .prepare_cached("SELECT block FROM memories_fts_data WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
        .sql("read FTS5 totals")?;
    let Some(block) = block else { return Ok(None) };
    let Some((rows, mut at)) = varint(&block) else { return Ok(None) };
    let mut tokens = 0i64;
    while at < block.len() {
        let Some((n, len)) = varint(&block[at..]) else { return Ok(None) };
        tokens = tokens.wrapping_add(n as i64);
        at += len;
    }
    let rows = rows as i64;
    Ok((rows > 0 && tokens >= 0).then_some((rows, tokens)))
}

/// A document's length in tokens from its `docsize` record (one varint per
/// column, summed), or `None` if the record is not exactly that.
fn document_length(blob: &[u8]) -> Option<u32> {
    let mut at = 0;
    let mut total = 0u32;
    while at < blob.len() {
        let (n, len) = varint(&blob[at..])?;
        total = total.checked_add(u32::try_from(n).ok().filter(|n| *n <= i32::MAX as u32)?)?;
        at += len;
    }
    (at == blob.len() && !blob.is_empty()).then_some(total)
}

/// SQLite's variable-length integer (big-endian, 7 bits a byte, the ninth
/// byte whole) and its length in bytes.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((v << 8) | u64::from(b), 9));
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::base::paths::Paths;
    use crate::base::time::Ts;
    use crate::domain::memory::ops::{MemoryChange, NewMemory, Origin, add, forget, update};

    /// FTS5's own top `limit` for the OR of `phrases`, as (rowid, score bits).
    fn fts5_top(store: &Store, phrases: &[String], limit: usize) -> Vec<(i64, u64)> {
        let expr = phrases.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(" OR ");
        let sql =
            format!("SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank LIMIT {limit}");
        let mut stmt = store.conn().prepare(&sql).unwrap();
        stmt.query_map([expr], |r| Ok((r.get(0)?, r.get::<_, f64>(1)?.to_bits())))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn postings_give_fts5_scores_and_order_or_step_aside() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = crate::projection::open(&Paths::at(dir.path()), "test").unwrap();
        let words = ["caching", "cached", "retries", "deploys", "queue", "worker", "the", "schema", "migrated", "lint"];
        for i in 0..120usize {
            let n = 1 + (i * 7) % 13;
            let text: Vec<&str> = (0..n).map(|k| words[(i * 3 + k * k + k) % words.len()]).collect();
            add(&mut j, memory(&text.join(" ")), &Origin::user(), Ts(1_000 + i as i64)).unwrap();
        }
        let store = j.store();
        let phrases = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let queries = [
            (phrases(&["cache", "caching", "retry"]), 60),
            (phrases(&["worker", "schema", "migrations", "lint"]), 10),
            (phrases(&["queue"]), 200),
            (phrases(&["absent"]), 5),
        ];
        let ours = |store: &Store, query: &[String], limit: usize| -> Vec<(i64, u64)> {
            top(store, query, limit).unwrap().into_iter().map(|(r, s)| (r, s.to_bits())).collect()
        };
        // Cold, then from the cache.
        for pass in ["cold", "warm"] {
            for (query, limit) in &queries {
                assert_eq!(ours(store, query, *limit), fts5_top(store, query, *limit), "{pass} {query:?}");
            }
        }
        assert!(!store.cached::<Cache>().postings.is_empty(), "the postings were kept");
        // A cache too small for one query's postings still gives FTS5's answers.
        for capacity in [1, 40, 400] {
            *store.cached::<Cache>() = Cache { capacity, ..Cache::default() };
            for pass in ["cold", "warm"] {
                for (query, limit) in &queries {
                    let found = ours(store, query, *limit);
                    assert_eq!(found, fts5_top(store, query, *limit), "capacity {capacity}, {pass} {query:?}");
                }
            }
        }
        // "deploy-queue" is two tokens for FTS5 (a phrase): left to FTS5, cold and warm.
        for _ in 0..2 {
            assert_eq!(top(store, &phrases(&["deploy-queue", "lint"]), 10), None);
        }
        // Every change to the index is noticed: an added memory, an edit, a forgotten one.
        let id = add(&mut j, memory("queue queue worker caching"), &Origin::user(), Ts(5_000)).unwrap();
        let store = j.store();
        for (query, limit) in &queries {
            assert_eq!(ours(store, query, *limit), fts5_top(store, query, *limit), "after an add {query:?}");
        }
        let edit = MemoryChange { text: Some("lint lint lint schema".into()), ..Default::default() };
        update(&mut j, id.as_str(), edit, Ts(6_000)).unwrap();
        for (query, limit) in &queries {
            assert_eq!(ours(j.store(), query, *limit), fts5_top(j.store(), query, *limit), "after an edit {query:?}");
        }
        forget(&mut j, id.as_str(), None, Ts(7_000)).unwrap();
        for (query, limit) in &queries {
            assert_eq!(
                ours(j.store(), query, *limit),
                fts5_top(j.store(), query, *limit),
                "after forgetting {query:?}"
            );
        }
    }

    /// A memory of this text (importance 0.5, no project or tags).
    fn memory(text: &str) -> NewMemory {
        NewMemory {
            text: text.into(),
            memory_type: crate::storage::event::MemoryType::Fact,
            importance: 0.5,
            project: None,
            tags: vec![],
            pinned: false,
        }
    }

    #[test]
    fn varints_read_like_sqlite() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0xff, 0x7f]), Some((16383, 2)));
        assert_eq!(varint(&[0x81]), None);
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(document_length(&[0x03]), Some(3));
        assert_eq!(document_length(&[0x03, 0x04]), Some(7));
        assert_eq!(document_length(&[]), None);
        assert_eq!(document_length(&[0x83]), None);
    }
}
