//! Synthetic Signet `memories.db` files for tests and benchmarks, with a
//! planted pattern: a session is about one topic, and the memories of that
//! topic are the ones that turn out relevant (judged relevant when injected,
//! hit by later prompts' FTS when not).

use std::path::Path;

use rusqlite::{Connection, params};

use crate::error::{Error, Result};

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct SignetDbSpec {
    /// Memories.
    pub memories: usize,
    /// Scored sessions (a fifth more are added below the confidence threshold).
    pub sessions: usize,
    /// Candidates per session.
    pub candidates: usize,
    /// Embedding size.
    pub dim: usize,
    /// Topics.
    pub topics: usize,
    /// Seed.
    pub seed: u64,
}

impl Default for SignetDbSpec {
    fn default() -> Self {
        SignetDbSpec { memories: 200, sessions: 30, candidates: 20, dim: 32, topics: 8, seed: 7 }
    }
}

/// Signet's tables and indexes (reference §12; the columns `train_from_db` reads and the daemon writes).
pub const SIGNET_SCHEMA: &str = "
CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT NOT NULL, type TEXT NOT NULL DEFAULT 'fact',
  importance REAL DEFAULT 0.5, tags TEXT, pinned INTEGER DEFAULT 0, project TEXT, created_at TEXT NOT NULL,
  access_count INTEGER DEFAULT 0, is_deleted INTEGER DEFAULT 0);
CREATE TABLE embeddings (id TEXT PRIMARY KEY, content_hash TEXT NOT NULL UNIQUE, vector BLOB NOT NULL,
  dimensions INTEGER NOT NULL, source_type TEXT NOT NULL, source_id TEXT NOT NULL, chunk_text TEXT,
  created_at TEXT NOT NULL);
CREATE TABLE session_scores (id TEXT PRIMARY KEY, session_key TEXT NOT NULL, project TEXT, harness TEXT,
  score REAL NOT NULL, memories_recalled INTEGER, memories_used INTEGER, novel_context_count INTEGER,
  reasoning TEXT, created_at TEXT NOT NULL, confidence REAL, continuity_reasoning TEXT);
CREATE TABLE session_memories (id TEXT PRIMARY KEY, session_key TEXT NOT NULL, memory_id TEXT NOT NULL,
  source TEXT NOT NULL, effective_score REAL, predictor_score REAL, final_score REAL NOT NULL,
  rank INTEGER NOT NULL, was_injected INTEGER NOT NULL, relevance_score REAL,
  fts_hit_count INTEGER NOT NULL DEFAULT 0, agent_preference TEXT, created_at TEXT NOT NULL,
  entity_slot INTEGER, aspect_slot INTEGER, is_constraint INTEGER NOT NULL DEFAULT 0, structural_density INTEGER,
  predictor_rank INTEGER, agent_relevance_score REAL, agent_feedback_count INTEGER DEFAULT 0,
  UNIQUE(session_key, memory_id));
CREATE INDEX idx_session_scores_project ON session_scores(project, created_at);
CREATE INDEX idx_session_scores_session ON session_scores(session_key);
CREATE INDEX idx_session_memories_session ON session_memories(session_key);
CREATE INDEX idx_session_memories_memory ON session_memories(memory_id);
";

/// A small deterministic generator (xorshift64*).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

fn iso(day: f64) -> String {
    shared::base::time::Ts(1_772_000_000_000 + (day * 86_400_000.0) as i64).to_rfc3339()
}

/// A random vector near topic `t`'s centre.
fn embedding(rng: &mut Rng, centres: &[Vec<f32>], t: usize, dim: usize) -> Vec<f32> {
    (0..dim).map(|d| centres[t][d] + (rng.unit() - 0.5) * 0.6).collect()
}

/// Writes a Signet database at `path` (see the module documentation).
pub fn signet_db(path: &Path, spec: &SignetDbSpec) -> Result<()> {
    let mut conn = Connection::open(path).map_err(|e| Error::db(path, "create", e))?;
    conn.execute_batch(SIGNET_SCHEMA).map_err(|e| Error::db(path, "create tables", e))?;
    let mut rng = Rng::new(spec.seed);
    let dim = spec.dim;
    let centres: Vec<Vec<f32>> = (0..spec.topics).map(|_| (0..dim).map(|_| rng.unit() * 2.0 - 1.0).collect()).collect();
    let tx = conn.transaction().map_err(|e| Error::db(path, "begin", e))?;
    let db = |e| Error::db(path, "insert", e);
    let topic_of = |i: usize| i % spec.topics;
    for i in 0..spec.memories {
        let t = topic_of(i);
        let content = format!("memory {i} topic{t} detail{} about subject{t} and area{}", i % 7, t * 3);
        tx.execute(
            "INSERT INTO memories (id, content, importance, pinned, project, created_at, access_count)
             VALUES (?1, ?2, ?3, 0, 'proj', ?4, ?5)",
            params![
                format!("mem_{i:05}"),
                content,
                0.3 + 0.6 * f64::from(rng.unit()),
                iso(i as f64 * 0.05),
                rng.below(20) as i64
            ],
        )
        .map_err(db)?;
        // One memory in ten has no embedding (the daemon sends null for those).
        if i % 10 != 9 {
            let v = embedding(&mut rng, &centres, t, dim);
            let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            tx.execute(
                "INSERT INTO embeddings (id, content_hash, vector, dimensions, source_type, source_id, created_at)
                 VALUES (?1, ?2, ?3, ?4, 'memory', ?5, ?6)",
                params![format!("emb_{i}"), format!("h{i}"), blob, dim as i64, format!("mem_{i:05}"), iso(0.0)],
            )
            .map_err(db)?;
        }
    }
    let total = spec.sessions + spec.sessions / 5;
    for s in 0..total {
        let key = format!("session-{s:04}");
        let topic = rng.below(spec.topics);
        let day = 10.0 + s as f64 * 0.5;
        let confident = s < spec.sessions;
        tx.execute(
            "INSERT INTO session_scores (id, session_key, project, harness, score, novel_context_count, created_at, confidence)
             VALUES (?1, ?2, 'proj', 'claude-code', ?3, 0, ?4, ?5)",
            params![format!("score-{s}"), key, 0.7, iso(day + 0.2), if confident { 0.8 } else { 0.3 }],
        )
        .map_err(db)?;
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < spec.candidates.min(spec.memories) {
            let m = if chosen.len() < spec.candidates / 3 {
                // Memories of the session's topic...
                topic + spec.topics * rng.below(spec.memories / spec.topics.max(1))
            } else {
                rng.below(spec.memories)
            };
            if m < spec.memories && !chosen.contains(&m) {
                chosen.push(m);
            }
        }
        // ...placed anywhere in the baseline order.
        for i in (1..chosen.len()).rev() {
            let j = rng.below(i + 1);
            chosen.swap(i, j);
        }
        for (rank, &m) in chosen.iter().enumerate() {
            let on_topic = topic_of(m) == topic;
            let injected = rank < 5;
            let relevance = injected.then_some(if on_topic { 0.9 } else { 0.1 });
            let fts = if !injected && on_topic { 2 } else { 0 };
            tx.execute(
                "INSERT INTO session_memories (id, session_key, memory_id, source, effective_score, final_score, rank,
                   was_injected, relevance_score, fts_hit_count, created_at)
                 VALUES (?1, ?2, ?3, 'effective', 0.5, 0.5, ?4, ?5, ?6, ?7, ?8)",
                params![
                    format!("{key}|{m}"),
                    key,
                    format!("mem_{m:05}"),
                    rank as i64,
                    injected,
                    relevance,
                    fts,
                    iso(day)
                ],
            )
            .map_err(db)?;
        }
    }
    tx.commit().map_err(|e| Error::db(path, "commit", e))?;
    Ok(())
}
