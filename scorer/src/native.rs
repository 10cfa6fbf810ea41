//! Engram's own methods against the data home: `rank` (the whole pipeline,
//! recorded as a `ranking.served` event) and the configuration `reload` reads.
//!
//! `rank` answers before its ranking is on disk: the event is handed to the
//! [`Recorder`] thread, which commits it in the background (see
//! [`crate::recorder`] for the durability this trades).
//!
//! The journal is opened on the first `rank`, not at start: a sidecar that
//! only answers Signet's methods never touches the data home's store. Before
//! every ranking the store is reopened if a replay swapped in a new
//! projection generation.

use shared::base::config::Config;
use shared::base::ids::SessionKey;
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::rank::{self, RankRequest, ServingModel, Unapplied};
use shared::storage::event::{Body, trigger};
use shared::storage::journal::Journal;

use crate::error::{Error, Result};
use crate::protocol::{RankParams, RankResult, RankedItem};
use crate::recorder::Recorder;
use crate::serving::Serving;

/// The earliest `now_ms` a `rank` request may give: 2000-01-01T00:00:00Z.
pub const EARLIEST_NOW_MS: i64 = 946_684_800_000;
/// How far past the scorer's clock a `rank` request's `now_ms` may lie (a
/// client's clock a little ahead): one day.
pub const NOW_AHEAD_MS: i64 = 86_400_000;

/// The name stamped on the events this process writes.
pub fn writer_name() -> String {
    format!("engram-scorer/{}", env!("CARGO_PKG_VERSION"))
}

/// The data home, its configuration and (once opened) its journal.
#[derive(Debug)]
pub struct Native {
    paths: Option<Paths>,
    config: Config,
    tz: jiff::tz::TimeZone,
    journal: Option<Journal>,
    /// Records served rankings; started with the first `rank`.
    recorder: Option<Recorder>,
}

/// Reads `config.toml` of `paths`, or the defaults (an invalid file is an error).
pub fn load_config(paths: Option<&Paths>) -> Result<Config> {
    match paths {
        Some(p) => Ok(Config::load(&p.config())?),
        None => Ok(Config::default()),
    }
}

impl Native {
    /// The state for `paths` (none when no data home could be found).
    pub fn new(paths: Option<Paths>) -> Native {
        let config = load_config(paths.as_ref()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "invalid configuration; using the defaults");
            Config::default()
        });
        let tz = config.time.zone();
        Native { paths, config, tz, journal: None, recorder: None }
    }

    /// The data home.
    pub fn paths(&self) -> Option<&Paths> {
        self.paths.as_ref()
    }

    /// The configured time zone.
    pub fn tz(&self) -> &jiff::tz::TimeZone {
        &self.tz
    }

    /// Re-reads the configuration; on an invalid file the old one stays.
    pub fn reload_config(&mut self) -> Result<()> {
        let config = load_config(self.paths.as_ref())?;
        self.tz = config.time.zone();
        self.config = config;
        Ok(())
    }

    /// Closes the journal (it is reopened on the next `rank`), e.g. after a
    /// handler panicked while using it.
    pub fn reset(&mut self) {
        self.journal = None;
    }

    /// Commits every ranking still queued and stops the recorder (the drain
    /// path calls this; dropping `Native` does the same).
    pub fn finish(&mut self) {
        if let Some(mut r) = self.recorder.take() {
            r.finish();
        }
    }

    /// The recorder, started on first use; `None` (logged) if its thread
    /// cannot be started, in which case rankings are appended synchronously.
    fn recorder(&mut self) -> Option<&Recorder> {
        if self.recorder.is_none()
            && let Some(paths) = &self.paths
        {
            match Recorder::start(paths.clone(), writer_name()) {
                Ok(r) => self.recorder = Some(r),
                Err(e) => tracing::error!(error = %e, "cannot start the recorder thread; recording synchronously"),
            }
        }
        self.recorder.as_ref()
    }

    fn journal(&mut self) -> Result<&mut Journal> {
        if self.journal.is_none() {
            let Some(paths) = &self.paths else {
                return Err(Error::params("rank", "no data home: set ENGRAM_HOME (or HOME)"));
            };
            let span = tracing::info_span!("open journal", home = %paths.home().display()).entered();
            self.journal = Some(shared::projection::open(paths, &writer_name())?);
            drop(span);
        }
        match self.journal.as_mut() {
            Some(j) => Ok(j),
            None => unreachable!("opened above"),
        }
    }

    /// `rank` (see `docs/protocol.md`).
    ///
    /// `now_ms`, when given, must lie between [`EARLIEST_NOW_MS`] and
    /// [`NOW_AHEAD_MS`] after the scorer's clock.
    pub fn rank(&mut self, p: RankParams, serving: &Serving) -> Result<RankResult> {
        let trigger = p.trigger.unwrap_or_else(|| trigger::RPC.to_owned());
        if trigger.is_empty() {
            return Err(Error::params("trigger", "must not be empty"));
        }
        let session = match p.session_key {
            Some(s) if s.is_empty() => return Err(Error::params("session_key", "must not be empty")),
            Some(s) => Some(SessionKey(s)),
            None => None,
        };
        if let Some(e) = &p.embedding
            && let Some(i) = e.iter().position(|v| !v.is_finite())
        {
            return Err(Error::params(format!("embedding[{i}]"), "not a finite number"));
        }
        let inj = &self.config.injection;
        let k = match p.k {
            Some(k) => usize::try_from(k).unwrap_or(usize::MAX),
            None => match trigger.as_str() {
                trigger::SESSION_START => inj.session_start_k,
                trigger::TOOL => inj.tool_k,
                _ => inj.prompt_k,
            },
        };
        let budget =
            p.budget_chars.map_or(inj.budget_chars, |b| usize::try_from(b).unwrap_or(usize::MAX)).min(inj.max_chars);
        let require_match = p.require_match.unwrap_or(trigger != trigger::SESSION_START);
        let clock = Ts::now();
        let now = match p.now_ms {
            None => clock,
            // It becomes the recorded event's time: an absurd one would
            // stretch the time span of a tape segment over millennia.
            Some(ms) if (EARLIEST_NOW_MS..=clock.0.saturating_add(NOW_AHEAD_MS)).contains(&ms) => Ts(ms),
            Some(ms) => {
                return Err(Error::params(
                    "now_ms",
                    format!(
                        "{ms} is out of range: between {EARLIEST_NOW_MS} (2000-01-01) and a day after the scorer's \
                         clock ({})",
                        clock.0.saturating_add(NOW_AHEAD_MS)
                    ),
                ));
            }
        };
        // Signet's weights score Signet's lists only: the pipeline then ranks with the baseline.
        let model =
            serving.engram().filter(|_| serving.trained).map(|model| ServingModel { model, version: serving.version });
        let config = self.config.clone();
        let tz = self.tz.clone();
        let unapplied = self.recorder().map(Recorder::unapplied).unwrap_or_default();
        let journal = self.journal()?;
        journal.reopen_if_replaced()?;
        let req = RankRequest {
            query: &p.query,
            query_embedding: p.embedding.as_deref(),
            session: session.as_ref(),
            project: p.project.as_deref(),
            trigger: &trigger,
            now,
            tz: &tz,
            k,
            budget_chars: budget,
            require_match,
            explore_draw: rand::random::<f32>(),
            context_reset_ms: None,
        };
        let ranking = rank::rank_after(journal.store(), &config, model, &req, &unapplied)?;
        let status_line = ranking.state.status_line();
        let model_version = ranking.served.model_version;
        let effects = Unapplied::of(&ranking, session.as_ref());
        // Ids are assigned here, before answering; the recorder only writes.
        let event = journal.event(now, session, Body::RankingServed(ranking.served));
        let recorded = match self.recorder.as_ref() {
            Some(r) => r.record(event, effects),
            None => match self.journal()?.append(&[event]) {
                Ok(_) => true,
                Err(e) => {
                    tracing::error!(error = %e, "could not record the served ranking");
                    false
                }
            },
        };
        let memories: Vec<RankedItem> = ranking
            .items
            .into_iter()
            .map(|it| RankedItem {
                id: it.memory.id.0,
                text: it.memory.content,
                memory_type: it.memory.memory_type.to_string(),
                project: it.memory.project,
                pinned: it.memory.pinned,
                score: it.final_score,
                rank: it.rank,
                baseline_score: it.baseline_score,
                baseline_rank: it.baseline_rank,
                predictor_score: it.predictor_score,
                predictor_rank: it.predictor_rank,
                sources: it.memory.sources.iter().map(|s| (*s).to_owned()).collect(),
                reasons: it.reasons,
                injected: it.injected,
                explored: it.explored,
            })
            .collect();
        Ok(RankResult {
            ranking_id: ranking.ranking_id,
            injected: memories.iter().filter(|m| m.injected).map(|m| m.id.clone()).collect(),
            memories,
            alpha: ranking.alpha,
            cold_start: ranking.alpha >= 1.0,
            model_version,
            status_line,
            fts_query: ranking.fts_query,
            recorded,
        })
    }
}
