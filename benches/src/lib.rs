//! Helpers shared by the hand-run benchmarks in `benches/benches/`: a
//! deterministic generator of realistic agent-session events.

pub mod claude_corpus;
pub mod web;

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use shared::base::ids::{EventId, SessionKey};
use shared::base::time::Ts;
use shared::storage::event::*;

/// Words with a Zipf-like frequency profile, mixing prose and code vocabulary.
const VOCAB: &[&str] = &[
    "the",
    "to",
    "a",
    "of",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "this",
    "we",
    "file",
    "function",
    "test",
    "error",
    "fix",
    "let",
    "fn",
    "self",
    "return",
    "value",
    "need",
    "should",
    "can",
    "use",
    "check",
    "run",
    "cargo",
    "build",
    "struct",
    "impl",
    "pub",
    "mut",
    "string",
    "result",
    "ok",
    "err",
    "match",
    "some",
    "none",
    "config",
    "path",
    "update",
    "now",
    "add",
    "remove",
    "change",
    "line",
    "code",
    "type",
    "async",
    "await",
    "request",
    "response",
    "server",
    "client",
    "database",
    "query",
    "index",
    "cache",
    "token",
    "auth",
    "timeout",
    "retry",
    "handler",
    "module",
    "import",
    "export",
    "const",
    "class",
    "interface",
    "component",
    "props",
    "state",
    "render",
    "hook",
    "migration",
    "schema",
    "table",
    "column",
    "sqlite",
    "postgres",
    "docker",
    "compose",
    "deploy",
    "branch",
    "commit",
    "merge",
    "rebase",
    "review",
    "lint",
    "format",
    "clippy",
    "warning",
    "panic",
    "unwrap",
    "option",
    "vector",
    "hash",
    "map",
    "iterator",
    "closure",
    "trait",
    "generic",
    "lifetime",
    "borrow",
    "clone",
    "copy",
];

fn zipf_word(rng: &mut impl Rng) -> &'static str {
    // Inverse-CDF sampling of a Zipf(1) distribution over VOCAB.
    let n = VOCAB.len() as f64;
    let u: f64 = rng.random();
    let idx = ((n + 1.0).powf(u) - 1.0) as usize;
    VOCAB[idx.min(VOCAB.len() - 1)]
}

fn sentence(rng: &mut impl Rng, words: usize) -> String {
    let mut s = String::with_capacity(words * 7);
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(zipf_word(rng));
        if rng.random_bool(0.03) {
            s.push_str(&format!("_{}", rng.random_range(0..500)));
        }
    }
    s
}

fn code_block(rng: &mut impl Rng, lines: usize) -> String {
    let mut s = String::new();
    for i in 0..lines {
        let indent = "    ".repeat(rng.random_range(0..3));
        s.push_str(&format!(
            "{:>4}\t{indent}{} {}({}) {{ {} }}\n",
            i + 1,
            zipf_word(rng),
            zipf_word(rng),
            zipf_word(rng),
            sentence(rng, 4)
        ));
    }
    s
}

/// `n` events of realistic session content spread over sessions of ~200
/// events: prompts, answers, tool calls with arguments, tool outputs with code,
/// reads and edits. Deterministic for a seed.
pub fn session_events(n: usize, seed: u64) -> Vec<Event> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let mut ts = Ts(1_750_000_000_000);
    let mut session = SessionKey::new("claude", "s0");
    for i in 0..n {
        if i % 200 == 0 {
            session = SessionKey::new("claude", &format!("s{}", i / 200));
        }
        ts = ts.plus_millis(rng.random_range(100..5000));
        let call_id = format!("toolu_{:08x}", rng.random::<u32>());
        let len: usize = rng.random_range(1..1000);
        let body = match rng.random_range(0..100) {
            0..=9 => Body::MsgIn(MsgIn { text: sentence(&mut rng, 8 + len % 72), ..Default::default() }),
            10..=34 => Body::MsgOut(MsgOut { text: sentence(&mut rng, 20 + len % 230), ..Default::default() }),
            35..=57 => Body::ToolCall(ToolCall {
                tool: ["Read", "Bash", "Edit", "Grep"][rng.random_range(0..4)].into(),
                call_id,
                args: json!({"file_path": format!("/home/u/proj/src/{}.rs", zipf_word(&mut rng)), "command": sentence(&mut rng, 6)}),
            }),
            58..=85 => Body::ToolResult(ToolResult {
                tool: "Read".into(),
                call_id,
                stdout: code_block(&mut rng, 3 + len % 57),
                ..Default::default()
            }),
            86..=93 => Body::CodeRead(CodeRead {
                file: format!("/home/u/proj/src/{}.rs", zipf_word(&mut rng)),
                range: Some([1, rng.random_range(10..400)]),
                content_hash: None,
            }),
            _ => Body::CodeEdit(CodeEdit {
                file: format!("/home/u/proj/src/{}.rs", zipf_word(&mut rng)),
                before_range: Some([10, 20]),
                after_range: Some([10, 24]),
                before_hash: Some(format!("{:032x}", rng.random::<u128>())),
                after_hash: Some(format!("{:032x}", rng.random::<u128>())),
                ..Default::default()
            }),
        };
        out.push(Event {
            v: SCHEMA_VERSION,
            id: EventId::derived(&[session.as_str(), &i.to_string()]),
            ts,
            writer: "engram-bench".into(),
            session: Some(session.clone()),
            body,
        });
    }
    out
}

/// Size of the long-tailed vocabulary of [`lesson`].
const LEXICON: usize = 20_000;

/// Word `rank` of a synthetic lexicon: the code vocabulary first, then
/// pronounceable made-up words.
fn lexicon_word(rank: usize) -> String {
    if rank < VOCAB.len() {
        return VOCAB[rank].to_owned();
    }
    const SYLLABLES: &[&str] =
        &["ka", "lo", "mi", "ster", "ven", "dor", "qui", "pa", "rel", "tun", "bex", "sho", "gra", "nim", "zu", "fen"];
    let mut n = rank;
    let mut w = String::new();
    for _ in 0..3 {
        w.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
        if n == 0 {
            break;
        }
    }
    w
}

/// A word drawn with Zipf(1) frequency from a lexicon of [`LEXICON`] words, so
/// document frequencies look like those of real text.
fn lexicon_draw(rng: &mut impl Rng) -> String {
    let n = LEXICON as f64;
    let u: f64 = rng.random();
    lexicon_word((((n + 1.0).powf(u) - 1.0) as usize).min(LEXICON - 1))
}

/// A lesson-like sentence of `words` words from the long-tailed lexicon.
pub fn lesson(rng: &mut impl Rng, words: usize) -> String {
    (0..words).map(|_| lexicon_draw(rng)).collect::<Vec<_>>().join(" ")
}

/// `n` memories of lesson-like text (deterministic), spread over a year, with
/// every 500th pinned and one source session per 20 memories.
pub fn memory_events(n: usize, seed: u64) -> Vec<Event> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let now = 1_780_000_000_000i64;
    (0..n)
        .map(|i| {
            let words = 8 + (rng.random::<u32>() % 30) as usize;
            let ts = Ts(now - (rng.random::<u32>() % 365) as i64 * 86_400_000 - i as i64);
            let session = SessionKey::new("claude", &format!("s{}", i / 20));
            Event {
                v: SCHEMA_VERSION,
                id: EventId::derived(&["bench-memory", &i.to_string()]),
                ts,
                writer: "engram-bench".into(),
                session: Some(session.clone()),
                body: Body::MemoryAdded(MemoryAdded {
                    memory_id: shared::base::ids::MemoryId::derived(&["bench", &i.to_string()]),
                    content: lesson(&mut rng, words),
                    memory_type: MemoryType::Fact,
                    importance: rng.random_range(0.1..1.0),
                    project: Some(["engram", "web", "infra"][i % 3].into()),
                    tags: vec![zipf_word(&mut rng).into()],
                    pinned: i % 500 == 0,
                    source: "extracted".into(),
                    source_session: Some(session),
                    ..Default::default()
                }),
            }
        })
        .collect()
}

/// The moment the benchmark corpora are "now".
pub const BENCH_NOW: Ts = Ts(1_780_000_000_000);

/// `engram-scorer` built in release (or brought up to date) in the workspace's
/// target directory (`CARGO_TARGET_DIR` if set), for benchmarks that run the
/// real binary; [`binaries`] says which other build it can be.
///
/// # Panics
/// When the build fails.
pub fn release_scorer() -> std::path::PathBuf {
    binaries(&["scorer"]).remove(0)
}

/// `engram-<package>` for each package, built (or brought up to date) in the
/// workspace's target directory (`CARGO_TARGET_DIR` if set) with the release
/// profile, or the one `ENGRAM_BENCH_PROFILE` names (`dist` measures the
/// shipped binaries). `ENGRAM_BENCH_BIN_DIR` takes them from that directory
/// as they are, to compare two builds kept side by side.
///
/// # Panics
/// When the build fails.
pub fn binaries(packages: &[&str]) -> Vec<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("ENGRAM_BENCH_BIN_DIR") {
        let dir = std::path::PathBuf::from(dir);
        return packages.iter().map(|p| dir.join(format!("engram-{p}"))).collect();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let profile = std::env::var("ENGRAM_BENCH_PROFILE").unwrap_or_else(|_| "release".to_owned());
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "--profile", &profile, "--target-dir"]).arg(&target);
    for p in packages {
        cmd.args(["-p", p, "--bin", &format!("engram-{p}")]);
    }
    let out = cmd.output().expect("run cargo build");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    packages.iter().map(|p| target.join(&profile).join(format!("engram-{p}"))).collect()
}
