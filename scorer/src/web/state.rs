//! The server's shared state: the data home, the token, the accepted hosts,
//! the page, a few projection connections kept for reuse and the serving
//! model, the dashboard's counts; and the two ways a request's work runs off the async thread
//! ([`App::read`] on a pooled connection, [`App::write`] through the journal).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use shared::base::config::{Config, WebConfig};
use shared::base::paths::Paths;
use shared::base::time::Ts;
use shared::domain::injection::{self, LoadedModel};
use shared::storage::journal::Journal;
use shared::storage::store::Store;

use super::api::{ApiError, ApiResult};
use super::{BLOCKING_THREADS, assets, guard};
use crate::error::Result;
use crate::native::writer_name;

/// The web server's state; cheap to clone.
#[derive(Clone, Debug)]
pub struct App(pub(crate) Arc<Inner>);

/// What [`App`] holds.
#[derive(Debug)]
pub(crate) struct Inner {
    pub paths: Paths,
    pub token: String,
    /// `Host` header values accepted (lower case, with the port).
    pub hosts: Vec<String>,
    /// The page, with the token in it.
    pub index: String,
    pub started: Ts,
    pool: Mutex<Vec<Store>>,
    model: Mutex<Option<(String, Arc<LoadedModel>)>>,
    /// The counts of `/api/stats` that scan the memories, per project, with
    /// the projection (file and last applied position) they were read from.
    counts: Mutex<HashMap<Option<String>, (CountsKey, Value)>>,
}

/// What a cached count was read from: it holds until the projection applies
/// another event (every change is one) or a replay swaps in another file.
type CountsKey = (std::path::PathBuf, shared::storage::tape::Lsn);

/// Projects whose counts are kept (the page asks for one or two).
const COUNTS_KEPT: usize = 16;

/// What a read runs with.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub paths: &'a Paths,
    pub store: &'a Store,
    pub config: &'a Config,
    pub now: Ts,
    app: &'a App,
}

impl Ctx<'_> {
    /// The serving model, if one is promoted (loaded once per checkpoint).
    pub fn model(&self) -> Option<Arc<LoadedModel>> {
        self.app.model()
    }

    /// When the server started.
    pub fn started(&self) -> Ts {
        self.app.0.started
    }

    /// `compute()` for `project`, or what it gave for this projection before:
    /// counts over every memory cost tens of milliseconds at 10,000 of them,
    /// and the dashboard asks for them at every load while nothing changed.
    pub fn counts(&self, project: Option<&str>, compute: impl FnOnce() -> ApiResult<Value>) -> ApiResult<Value> {
        let lsn = self.store.applied_lsn().map_err(|e| ApiError::internal(e.to_string()))?;
        let key: CountsKey = (self.store.file().to_path_buf(), lsn);
        let project = project.map(str::to_owned);
        if let Ok(cache) = self.app.0.counts.lock()
            && let Some((k, v)) = cache.get(&project)
            && *k == key
        {
            return Ok(v.clone());
        }
        let value = compute()?;
        if let Ok(mut cache) = self.app.0.counts.lock() {
            if cache.len() >= COUNTS_KEPT {
                cache.clear();
            }
            cache.insert(project, (key, value.clone()));
        }
        Ok(value)
    }
}

/// What a write runs with.
#[derive(Debug)]
pub(crate) struct WriteCtx<'a> {
    pub journal: &'a mut Journal,
    pub config: &'a Config,
    pub now: Ts,
}

fn config(paths: &Paths) -> ApiResult<Config> {
    Config::load(&paths.config())
        .map_err(|e| ApiError::internal(format!("config.toml cannot be read ({e}); fix it or reset it in Settings")))
}

impl App {
    /// The state of a server listening on `local`.
    pub fn new(paths: Paths, local: SocketAddr, web: &WebConfig) -> Result<App> {
        let token = guard::token(&paths)?;
        let hosts = guard::allowed_hosts(local, web);
        Ok(App::with(paths, token, hosts))
    }

    /// The state with a given token and accepted hosts (tests, benchmarks).
    pub fn with(paths: Paths, token: String, hosts: Vec<String>) -> App {
        let index = assets::index_html(&token);
        App(Arc::new(Inner {
            paths,
            token,
            hosts,
            index,
            started: Ts::now(),
            pool: Mutex::new(Vec::new()),
            model: Mutex::new(None),
            counts: Mutex::new(HashMap::new()),
        }))
    }

    /// The write token.
    pub fn token(&self) -> &str {
        &self.0.token
    }

    fn model(&self) -> Option<Arc<LoadedModel>> {
        let hash = match shared::storage::models::current_hash(&self.0.paths) {
            Ok(Some(h)) => h,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read models/current; searching with the baseline only");
                return None;
            }
        };
        let mut slot = self.0.model.lock().ok()?;
        if let Some((h, m)) = slot.as_ref()
            && *h == hash
        {
            return Some(m.clone());
        }
        match injection::load_model(&self.0.paths) {
            Ok(Some(m)) => {
                let m = Arc::new(m);
                *slot = Some((hash, m.clone()));
                Some(m)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot load the serving model; searching with the baseline only");
                None
            }
        }
    }

    fn take_store(&self) -> ApiResult<Store> {
        let pooled = self.0.pool.lock().ok().and_then(|mut p| p.pop());
        match pooled {
            Some(s) if !s.is_replaced() => Ok(s),
            _ => Store::open(&self.0.paths.db()).map_err(|e| ApiError::internal(format!("open the projection: {e}"))),
        }
    }

    fn give_back(&self, store: Store) {
        if let Ok(mut p) = self.0.pool.lock()
            && p.len() < BLOCKING_THREADS
        {
            p.push(store);
        }
    }

    /// Runs a read on a pooled projection connection, off the async thread.
    pub(crate) async fn read<T, F>(&self, f: F) -> Response
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Ctx<'_>) -> ApiResult<T> + Send + 'static,
    {
        let app = self.clone();
        blocking(move || {
            let config = config(&app.0.paths)?;
            let store = app.take_store()?;
            let ctx = Ctx { paths: &app.0.paths, store: &store, config: &config, now: Ts::now(), app: &app };
            let out = f(&ctx);
            app.give_back(store);
            out
        })
        .await
    }

    /// Runs a write through the journal (tape log, then projection), off the
    /// async thread.
    pub(crate) async fn write<T, F>(&self, f: F) -> Response
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&mut WriteCtx<'_>) -> ApiResult<T> + Send + 'static,
    {
        let app = self.clone();
        blocking(move || {
            let config = config(&app.0.paths)?;
            let mut journal = shared::projection::open(&app.0.paths, &writer_name())
                .map_err(|e| ApiError::internal(format!("open the tape log: {e}")))?;
            f(&mut WriteCtx { journal: &mut journal, config: &config, now: Ts::now() })
        })
        .await
    }

    /// Runs work that needs neither (settings).
    pub(crate) async fn run<T, F>(&self, f: F) -> Response
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Paths) -> ApiResult<T> + Send + 'static,
    {
        let app = self.clone();
        blocking(move || f(&app.0.paths)).await
    }
}

async fn blocking<T, F>(f: F) -> Response
where
    T: Serialize + Send + 'static,
    F: FnOnce() -> ApiResult<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(value)) => axum::Json(value).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(join) => {
            let why = if join.is_panic() {
                shared::base::logging::panic_message(join.into_panic().as_ref())
            } else {
                "cancelled".to_owned()
            };
            tracing::error!(%why, "a request's handler panicked");
            ApiError::internal(format!("the handler failed: {why}")).into_response()
        }
    }
}
