//! `engram-ingestor extractor test [--session KEY]`: what the configured
//! extractor model returns for one recorded session (the given one, or the
//! latest with something to learn from): the request sent (the prompt of a
//! preset, the JSON of a command), the raw answer, and the memories parsed
//! from it or why the answer was refused. Nothing is recorded; the call
//! counts against the extractor's daily budget and waits for any other
//! model call of the data home to finish.

use serde::Serialize;
use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::model::{ModelClient, budget};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::storage::event::Event;

use crate::error::{EngramContext, Error};
use crate::external::{self, ExtractorRequest};
use crate::redact::{DEFAULT_EXCLUDES, Privacy};
use crate::runner;

/// Turn text of the request, as a scan of history sends for one session.
const MAX_BYTES: usize = 48 * 1024;
/// Memories asked for at most.
const MAX_MEMORIES: u32 = 8;
/// Sessions looked at for one with something to learn from.
const LATEST: usize = 50;

/// One memory of the answer.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeMemory {
    /// Type.
    #[serde(rename = "type")]
    pub memory_type: String,
    /// Text (redacted).
    pub text: String,
    /// 0..=1.
    pub importance: f32,
    /// Tags.
    pub tags: Vec<String>,
}

/// What the probe saw.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// The model ([`shared::base::model::ModelConfig::describe`]).
    pub model: String,
    /// The session.
    pub session: String,
    /// Turns sent.
    pub turns: usize,
    /// What was sent.
    pub sent: String,
    /// What came back (lossy UTF-8).
    pub raw: String,
    /// The memories, when the answer was valid.
    pub memories: Option<Vec<ProbeMemory>>,
    /// Why there are none, otherwise.
    pub error: Option<String>,
}

fn privacy(config: &Config) -> Privacy {
    let mut p = Privacy { exclude: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect() };
    p.exclude.extend(config.privacy.exclude.iter().cloned());
    p
}

fn request_for(
    journal: &shared::storage::journal::Journal,
    key: &SessionKey,
    privacy: &Privacy,
) -> Result<ExtractorRequest, Error> {
    let events: Vec<Event> =
        journal.session_events(key).context("read the session's events")?.into_iter().map(|(_, e)| e).collect();
    let mut req = external::build_request(&events, MAX_BYTES, MAX_MEMORIES, privacy);
    if req.project.is_none() {
        req.project = journal
            .store()
            .conn()
            .query_row("SELECT project FROM sessions WHERE session_key = ?1", [key.as_str()], |r| r.get(0))
            .unwrap_or(None);
    }
    Ok(req)
}

/// Runs the probe (see the module docs).
pub fn run(paths: &Paths, config: &Config, session: Option<&str>, now: Ts) -> Result<Probe, Error> {
    let model = &config.extractor;
    if !model.enabled() {
        return Err(Error::InvalidArgument(
            "no extractor model is configured; add to config.toml:\n  [extractor]\n  preset = \"claude\"   # or \"codex\", \
             or \"openai\" with base_url and model"
                .into(),
        ));
    }
    let journal = shared::projection::open(paths, crate::adapter::WRITER).context("open the journal")?;
    let privacy = privacy(config);
    let (key, req) = match session {
        Some(s) => {
            let key = SessionKey::from(s.trim());
            let known: bool = journal
                .store()
                .conn()
                .query_row("SELECT COUNT(*) > 0 FROM sessions WHERE session_key = ?1", [key.as_str()], |r| r.get(0))
                .unwrap_or(false);
            if !known {
                return Err(Error::InvalidArgument(format!(
                    "no session {s:?}; `engram-ingestor session audit` lists the latest"
                )));
            }
            let req = request_for(&journal, &key, &privacy)?;
            (key, req)
        }
        None => {
            let keys: Vec<String> = journal
                .store()
                .conn()
                .prepare("SELECT session_key FROM sessions WHERE prompt_count > 0 ORDER BY last_event_ms DESC LIMIT ?1")
                .and_then(|mut s| s.query_map([LATEST as i64], |r| r.get(0))?.collect())
                .map_err(|e| Error::engram("list sessions", shared::base::error::Error::sqlite("list sessions", e)))?;
            let mut found = None;
            for k in keys {
                let key = SessionKey(k);
                let req = request_for(&journal, &key, &privacy)?;
                if !req.turns.is_empty() {
                    found = Some((key, req));
                    break;
                }
            }
            found.ok_or_else(|| {
                Error::InvalidArgument("no recorded session has turns to send; run `engram-ingestor scan` first".into())
            })?
        }
    };
    if req.turns.is_empty() {
        return Err(Error::InvalidArgument(format!("session {key} has no turns to send (or only excluded ones)")));
    }
    let lock = budget::single_flight(paths, model.timeout().saturating_mul(2))
        .map_err(|e| Error::io(budget::call_lock_file(paths), e))?
        .ok_or_else(|| {
            Error::InvalidArgument("another model call of this data home is still running; try again".into())
        })?;
    let client = ModelClient::new(model, paths);
    let ran = runner::ask(&client, paths, now, &req).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    drop(lock);
    let (memories, error) = match ran.result {
        Ok(cands) => (
            Some(
                cands
                    .into_iter()
                    .map(|c| ProbeMemory {
                        memory_type: c.memory_type.as_str().to_owned(),
                        text: c.text,
                        importance: c.importance,
                        tags: c.tags,
                    })
                    .collect(),
            ),
            None,
        ),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(Probe {
        model: model.describe(),
        session: key.as_str().to_owned(),
        turns: req.turns.len(),
        sent: ran.exchange.sent,
        raw: String::from_utf8_lossy(&ran.exchange.raw).into_owned(),
        memories,
        error,
    })
}

/// Longest raw answer printed as text.
const RAW_SHOWN: usize = 20_000;

/// The probe as text.
pub fn render(p: &Probe) -> String {
    let mut out = format!("model: {}\nsession: {} ({} turn(s) sent)\n\n", p.model, p.session, p.turns);
    out.push_str("--- request sent ---\n");
    out.push_str(p.sent.trim_end());
    out.push_str("\n\n--- raw answer ---\n");
    let raw = p.raw.trim_end();
    if raw.is_empty() {
        out.push_str("(nothing)\n");
    } else if raw.chars().count() > RAW_SHOWN {
        out.push_str(&raw.chars().take(RAW_SHOWN).collect::<String>());
        out.push_str(&format!("\n… ({} bytes in all)\n", p.raw.len()));
    } else {
        out.push_str(raw);
        out.push('\n');
    }
    out.push_str("\n--- parsed ---\n");
    match (&p.memories, &p.error) {
        (Some(m), _) if m.is_empty() => out.push_str("a valid answer with no memories\n"),
        (Some(m), _) => {
            for x in m {
                out.push_str(&format!("[{}] {} (importance {:.2}", x.memory_type, x.text, x.importance));
                if !x.tags.is_empty() {
                    out.push_str(&format!("; tags {}", x.tags.join(", ")));
                }
                out.push_str(")\n");
            }
        }
        (None, Some(e)) => out.push_str(&format!("refused: {e}\n")),
        (None, None) => {}
    }
    out
}
