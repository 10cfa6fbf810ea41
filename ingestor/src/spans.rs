//! What the model extractor has done with each span of a session (the new
//! turns one extraction request carries), kept in the data home's
//! `model/extractor/`:
//!
//! - `done`: the blake3 hash of every span the model answered for, one per
//!   line (the newest [`KEEP_DONE`] are kept): a span is never sent twice;
//! - `pending/<hash>.json`: a span whose call did not happen or did not
//!   give a valid answer (the budget spent, another call running, a
//!   timeout, garbage), with its request (already redacted) and the events
//!   each turn came from. The deterministic extractor has run on it; the
//!   model is asked again by the next scan, until [`MAX_ATTEMPTS`] failed
//!   answers move it to `failed/` (kept, never sent again without asking).
//!
//! Why files and not events: the cache is about calls to a model, not
//! knowledge, like the budget ledger. The memories a model found are
//! events, with ids derived from their source events and type, so a replay
//! rebuilds them without the model and asking again about a span whose
//! memories exist adds nothing: losing these files costs calls, never
//! memories. Tapes are shared with other data homes (`tapes export`), where
//! a call cache means nothing. The files live outside the projection, so a
//! replay leaves them alone.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shared::base::ids::EventId;
use shared::base::paths::Paths;
use shared::base::time::Ts;

use crate::external::ExtractorRequest;

/// Failed answers after which a span is set aside in `failed/`.
pub const MAX_ATTEMPTS: u32 = 3;
/// Done spans remembered (older ones are forgotten when the file doubles).
pub const KEEP_DONE: usize = 100_000;

/// The blake3 hash of a request's span: its session and its new turns as sent.
pub fn span_hash(req: &ExtractorRequest) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"engram extractor span 1\0");
    h.update(req.session.as_bytes());
    h.update(b"\0");
    for t in req.turns.iter().skip(req.new_from as usize) {
        for part in [t.role.as_str(), t.tool.as_deref().unwrap_or(""), t.text.as_str()] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.update(&[u8::from(t.is_error)]);
    }
    h.finalize().to_hex().to_string()
}

/// A span waiting for the model.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PendingSpan {
    /// [`span_hash`].
    pub hash: String,
    /// The request (redacted, as it will be sent).
    pub request: ExtractorRequest,
    /// The event and time of each turn (the request does not carry them).
    pub sources: Vec<(Option<EventId>, Ts)>,
    /// Failed answers so far (a call that did not happen counts none).
    pub attempts: u32,
    /// Why it is pending.
    pub last_error: String,
    /// When it was first set aside.
    pub since: Ts,
}

impl PendingSpan {
    /// The request with its turns' sources restored.
    pub fn restored(&self) -> ExtractorRequest {
        let mut req = self.request.clone();
        for (t, (id, ts)) in req.turns.iter_mut().zip(&self.sources) {
            t.event_id.clone_from(id);
            t.ts = *ts;
        }
        req
    }
}

/// The extractor's span files of one data home.
#[derive(Debug)]
pub struct Spans {
    dir: PathBuf,
    done: HashSet<String>,
}

fn io(path: &Path, e: std::io::Error) -> String {
    format!("{}: {e}", path.display())
}

impl Spans {
    /// The data home's spans (the done list read now; see [`Self::refresh`]).
    pub fn open(paths: &Paths) -> Spans {
        let dir = paths.home().join("model").join("extractor");
        let mut spans = Spans { dir, done: HashSet::new() };
        spans.refresh();
        spans
    }

    /// Reads the done list again: another process may have answered spans
    /// since (read after taking the single-flight lock, under which spans
    /// are marked done).
    pub fn refresh(&mut self) {
        if let Ok(t) = std::fs::read_to_string(self.dir.join("done")) {
            self.done = t.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
        }
    }

    fn pending_dir(&self) -> PathBuf {
        self.dir.join("pending")
    }

    fn failed_dir(&self) -> PathBuf {
        self.dir.join("failed")
    }

    /// Whether the model already answered for this span.
    pub fn is_done(&self, hash: &str) -> bool {
        self.done.contains(hash)
    }

    /// Records that the model answered for `hash` and drops its pending file.
    pub fn mark_done(&mut self, hash: &str, now: Ts) {
        let path = self.dir.join("done");
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
            f.write_all(format!("{hash} {}\n", now.0).as_bytes())
        };
        if let Err(e) = write() {
            tracing::warn!(error = %io(&path, e), "cannot record an extracted span; it may be sent again");
        }
        self.done.insert(hash.to_owned());
        let _ = std::fs::remove_file(self.pending_dir().join(format!("{hash}.json")));
        if self.done.len() > 2 * KEEP_DONE {
            self.trim_done(&path);
        }
    }

    /// Keeps the newest [`KEEP_DONE`] lines of the done file.
    fn trim_done(&mut self, path: &Path) {
        let Ok(text) = std::fs::read_to_string(path) else { return };
        let lines: Vec<&str> = text.lines().collect();
        let keep = &lines[lines.len().saturating_sub(KEEP_DONE)..];
        let mut out = keep.join("\n");
        out.push('\n');
        if shared::base::fsutil::atomic_write(path, out.as_bytes()).is_ok() {
            self.done = keep.iter().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
        }
    }

    /// Sets a span aside for a later scan (see the module docs): `failed`
    /// says whether the model answered badly (an attempt) or was not asked.
    pub fn set_aside(&self, req: &ExtractorRequest, error: &str, failed: bool, now: Ts) {
        let hash = span_hash(req);
        let path = self.pending_dir().join(format!("{hash}.json"));
        let earlier: Option<PendingSpan> = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let span = PendingSpan {
            hash: hash.clone(),
            request: req.clone(),
            sources: req.turns.iter().map(|t| (t.event_id.clone(), t.ts)).collect(),
            attempts: earlier.as_ref().map_or(0, |p| p.attempts) + u32::from(failed),
            last_error: error.to_owned(),
            since: earlier.as_ref().map_or(now, |p| p.since),
        };
        let (dir, path) = if span.attempts >= MAX_ATTEMPTS {
            let _ = std::fs::remove_file(&path);
            (self.failed_dir(), self.failed_dir().join(format!("{hash}.json")))
        } else {
            (self.pending_dir(), path)
        };
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let bytes = serde_json::to_vec(&span).map_err(std::io::Error::other)?;
            shared::base::fsutil::atomic_write(&path, &bytes)
        };
        match write() {
            Err(e) => tracing::error!(error = %io(&path, e), "cannot set a span aside for the model; it is lost"),
            Ok(()) if span.attempts >= MAX_ATTEMPTS => tracing::warn!(
                session = %req.session, attempts = span.attempts, error,
                "the model failed on this span {MAX_ATTEMPTS} times; set aside in model/extractor/failed"
            ),
            Ok(()) => {}
        }
    }

    /// The pending spans, oldest first (unreadable files are skipped).
    pub fn pending(&self) -> Vec<PendingSpan> {
        let Ok(entries) = std::fs::read_dir(self.pending_dir()) else { return Vec::new() };
        let mut out: Vec<PendingSpan> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| serde_json::from_slice(&b).ok())
            .collect();
        out.sort_by(|a, b| a.since.cmp(&b.since).then_with(|| a.hash.cmp(&b.hash)));
        out
    }

    /// How many spans are pending and how many were set aside as failed.
    pub fn counts(&self) -> (usize, usize) {
        let count = |d: PathBuf| std::fs::read_dir(d).map(|r| r.flatten().count()).unwrap_or(0);
        (count(self.pending_dir()), count(self.failed_dir()))
    }

    /// Drops a pending span (its turns are gone: nothing left to send).
    pub fn drop_pending(&self, hash: &str) {
        let _ = std::fs::remove_file(self.pending_dir().join(format!("{hash}.json")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::Turn;

    fn req(session: &str, texts: &[&str], new_from: u32) -> ExtractorRequest {
        ExtractorRequest {
            protocol: 1,
            session: session.into(),
            harness: "claude".into(),
            project: None,
            instructions: "x".into(),
            max_memories: 8,
            allowed_types: vec!["fact".into()],
            turns: texts
                .iter()
                .enumerate()
                .map(|(i, t)| Turn {
                    index: i as u32,
                    role: "user".into(),
                    text: (*t).into(),
                    tool: None,
                    is_error: false,
                    event_id: Some(EventId(format!("ev{i}"))),
                    ts: Ts(i as i64),
                })
                .collect(),
            new_from,
        }
    }

    #[test]
    fn the_span_is_the_session_and_its_new_turns() {
        let a = span_hash(&req("claude:s", &["old", "new"], 1));
        assert_eq!(a, span_hash(&req("claude:s", &["other context", "new"], 1)), "context is not the span");
        assert_ne!(a, span_hash(&req("claude:t", &["old", "new"], 1)));
        assert_ne!(a, span_hash(&req("claude:s", &["old", "newer"], 1)));
        assert_ne!(span_hash(&req("claude:s", &["ab", "c"], 0)), span_hash(&req("claude:s", &["a", "bc"], 0)));
    }

    #[test]
    fn pending_spans_are_retried_then_set_aside_and_done_ones_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let mut spans = Spans::open(&paths);
        let r = req("claude:s", &["a lesson worth learning"], 0);
        let hash = span_hash(&r);
        spans.set_aside(&r, "budget spent", false, Ts(5));
        spans.set_aside(&r, "timed out", true, Ts(9));
        let p = spans.pending();
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].attempts, p[0].since, p[0].last_error.as_str()), (1, Ts(5), "timed out"));
        let back = p[0].restored();
        assert_eq!(back.turns[0].event_id, Some(EventId("ev0".into())), "the sources come back");
        spans.set_aside(&r, "garbage", true, Ts(10));
        spans.set_aside(&r, "garbage", true, Ts(11));
        assert_eq!(spans.counts(), (0, 1), "three failed answers set it aside");
        assert!(!spans.is_done(&hash));
        spans.mark_done(&hash, Ts(12));
        assert!(spans.is_done(&hash));
        assert!(Spans::open(&paths).is_done(&hash), "remembered across processes");
    }
}
