//! `engram-ingestor extractor sentences`: every user sentence of the recorded
//! sessions as extraction weighed it, one JSON object per line, to see why a
//! sentence became a memory or did not, and to study extraction on
//! labelled sessions.

use serde::Serialize;
use shared::base::ids::SessionKey;
use shared::storage::event::Event;

use crate::error::{EngramContext, Error};
use crate::extract;

/// One line of the listing.
#[derive(Debug, Serialize)]
pub struct Line {
    /// The session's project, when known.
    pub project: Option<String>,
    /// The sentence and what extraction saw in it.
    #[serde(flatten)]
    pub note: extract::Note,
}

/// The sentences of `session`, or of every recorded session in the order
/// they started.
pub fn list(paths: &shared::base::paths::Paths, session: Option<&str>) -> Result<Vec<Line>, Error> {
    let journal = shared::projection::open(paths, crate::adapter::WRITER).context("open the journal")?;
    let conn = journal.store().conn();
    let sessions: Vec<(String, Option<String>)> = conn
        .prepare("SELECT session_key, project FROM sessions ORDER BY started_ms, session_key")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(|e| Error::engram("list sessions", shared::base::error::Error::sqlite("list sessions", e)))?;
    let mut out = Vec::new();
    let mut found = false;
    for (key, project) in sessions {
        if session.is_some_and(|s| s.trim() != key && !key.ends_with(&format!(":{}", s.trim()))) {
            continue;
        }
        found = true;
        let key = SessionKey(key);
        let events: Vec<Event> =
            journal.session_events(&key).context("read the session's events")?.into_iter().map(|(_, e)| e).collect();
        for note in extract::notes(&events, project.as_deref()) {
            out.push(Line { project: project.clone(), note });
        }
    }
    if let Some(s) = session
        && !found
    {
        return Err(Error::InvalidArgument(format!(
            "no session {s:?}; `engram-ingestor session audit` lists the latest"
        )));
    }
    Ok(out)
}
