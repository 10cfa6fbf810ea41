//! Environment detection for what a scan reads (`shared::domain::env`).
//!
//! Adapters parse logs and touch nothing else, so the `session.started` they
//! emit names the working directory's folder. The scan, which runs where the
//! folders are, detects each session's environment when it reads the
//! session: the `session.started` gets the detected project key, and an
//! `env.detected` event follows it (and follows a `meta` `cwd` that moves the
//! session into another project). Sessions recorded before detection existed
//! get theirs once ([`backfill`]). A working directory that no longer exists
//! and has no marker above it belongs to the known project whose root holds
//! it, if any.
//!
//! The `env.detected` of a record has an id derived from the session, the
//! directory and the project, so reading the record again adds nothing.

use std::collections::HashMap;
use std::path::Path;

use shared::base::ids::{EventId, SessionKey};
use shared::base::time::Ts;
use shared::domain::env::{DetectOptions, Detector, store as env_store};
use shared::storage::event::{Body, EnvDetected, Event, MemoryUpdated, SCHEMA_VERSION};
use shared::storage::journal::Journal;
use shared::storage::store::Store;

use crate::adapter::WRITER;
use crate::error::{EngramContext, Error};

/// Detects and remembers the environment of the sessions a scan reads.
#[derive(Debug)]
pub struct Enricher {
    detector: Detector,
    /// The project each session was last detected in.
    current: HashMap<SessionKey, String>,
}

impl Enricher {
    /// An enricher with the configuration's pattern tables.
    pub fn new(config: &shared::base::config::Config) -> Enricher {
        Enricher { detector: Detector::new(DetectOptions::from_env(&config.env, true)), current: HashMap::new() }
    }

    /// Adds the environment to `events` (see the module docs).
    pub fn enrich(&mut self, events: Vec<Event>, store: &Store) -> Vec<Event> {
        let mut out = Vec::with_capacity(events.len() + 4);
        for mut e in events {
            let Some(session) = e.session.clone() else {
                out.push(e);
                continue;
            };
            let (cwd, start) = match &e.body {
                Body::SessionStarted(s) => (s.cwd.clone(), true),
                Body::Meta(m) if m.label == "cwd" => (m.text.clone(), false),
                _ => (None, false),
            };
            let Some(cwd) = cwd.filter(|c| !c.trim().is_empty()) else {
                out.push(e);
                continue;
            };
            let env = self.detect(&cwd, store);
            if !start {
                let before = match self.current.get(&session) {
                    Some(p) => Some(p.clone()),
                    None => env_store::session_project(store.conn(), session.as_str()).ok().flatten(),
                };
                if before.as_deref() == Some(env.project.as_str()) {
                    out.push(e);
                    continue;
                }
            }
            if let Body::SessionStarted(s) = &mut e.body {
                s.project = Some(env.project.clone());
            }
            let ts = e.ts;
            out.push(e);
            self.current.insert(session.clone(), env.project.clone());
            out.push(detected_event(&session, ts, env));
        }
        out
    }

    /// The environment of `cwd`, falling back to the known project holding a
    /// directory that is gone.
    fn detect(&mut self, cwd: &str, store: &Store) -> EnvDetected {
        let mut env = self.detector.detect(cwd).clone();
        if env.marker.is_none()
            && !Path::new(cwd).exists()
            && let Ok(Some(known)) = env_store::project_containing(store.conn(), &env.cwd)
        {
            env.project = known.key;
            env.name = known.name;
            env.root = known.root;
            env.stack = known.stack.clone();
            env.tags = known.stack;
        }
        env
    }
}

/// The `env.detected` of `session` at `ts`, with its derived id.
fn detected_event(session: &SessionKey, ts: Ts, env: EnvDetected) -> Event {
    Event {
        v: SCHEMA_VERSION,
        id: EventId::derived(&[session.as_str(), "env.detected", &env.cwd, &env.project]),
        ts,
        writer: WRITER.to_owned(),
        session: Some(session.clone()),
        body: Body::EnvDetected(env),
    }
}

/// Detects the environment of every session recorded with a working
/// directory but without one (sessions from before detection existed) and
/// appends it. Returns the events appended.
///
/// Then a memory that still carries a bare folder name (added by an older
/// version outside any session with a working directory, `memory add
/// --project web`) moves to the project of that name, when exactly one
/// known project has it (a `memory.updated`); an ambiguous name is left alone.
pub fn backfill(journal: &mut Journal, enricher: &mut Enricher, now: Ts) -> Result<u64, Error> {
    let read = |e| shared::base::error::Error::sqlite("find what predates project detection", e);
    let todo = env_store::sessions_without_env(journal.store().conn()).map_err(read).context("read the projection")?;
    let mut events = Vec::with_capacity(todo.len());
    for u in todo {
        let env = enricher.detect(&u.cwd, journal.store());
        enricher.current.insert(u.session.clone(), env.project.clone());
        events.push(detected_event(&u.session, Ts(u.started_ms), env));
    }
    let sessions = events.len();
    append_all(journal, &events)?;
    let bare =
        env_store::memories_with_bare_project(journal.store().conn()).map_err(read).context("read the projection")?;
    let mut moves = Vec::new();
    for (id, name) in bare {
        let keys = env_store::keys_named(journal.store().conn(), &name).map_err(read).context("read the projection")?;
        if let [key] = keys.as_slice() {
            moves.push(Event {
                v: SCHEMA_VERSION,
                id: EventId::derived(&[&id, "env.project", key]),
                ts: now,
                writer: WRITER.to_owned(),
                session: None,
                body: Body::MemoryUpdated(MemoryUpdated {
                    memory_id: id.into(),
                    project: Some(key.clone()),
                    ..MemoryUpdated::default()
                }),
            });
        }
    }
    append_all(journal, &moves)?;
    if sessions + moves.len() > 0 {
        tracing::info!(sessions, memories = moves.len(), "filed what predates project detection under its project");
    }
    Ok((sessions + moves.len()) as u64)
}

fn append_all(journal: &mut Journal, events: &[Event]) -> Result<(), Error> {
    for chunk in events.chunks(4096) {
        journal.append(chunk).context("append detected environments")?;
    }
    Ok(())
}
