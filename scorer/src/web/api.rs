//! The routes of the REST API and the page (documented in `docs/rest-api.md`),
//! the API's error body, and strict readers of query strings and JSON bodies:
//! an unknown parameter, a value out of range or a malformed body is a 400
//! naming it, before anything is read or written.

use std::str::FromStr;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use shared::base::time::Ts;
use shared::domain::memory::ops::{self as ops, MemoryChange, NewMemory, OpError, Origin};

use super::{App, assets, guard, knowledge, predictor, queries, settings};
use crate::search::{self, SearchParams};

/// Largest request body accepted.
pub const MAX_BODY: usize = 1 << 20;

/// An API error: its status and `{"error":{"status","code","message"}}`.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// A stable machine-readable code (`bad_request`, `not_found`, …).
    pub code: &'static str,
    /// What went wrong and what to do.
    pub message: String,
}

/// Result of a handler's work.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// Any error.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into() }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: well formed, but the state forbids it (forgotten, already resolved).
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(status = %self.status, message = %self.message, "request failed");
        }
        let body = json!({"error": {"status": self.status.as_u16(), "code": self.code, "message": self.message}});
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<OpError> for ApiError {
    fn from(e: OpError) -> ApiError {
        match e {
            OpError::UnknownMemory(_) => ApiError::not_found(e.to_string()),
            OpError::Invalid(_) => ApiError::bad_request(e.to_string()),
            OpError::Conflict(_) => ApiError::conflict(e.to_string()),
            OpError::NotFound(_) => ApiError::not_found(e.to_string()),
            OpError::Store { .. } => ApiError::internal(e.to_string()),
        }
    }
}

impl From<shared::base::error::Error> for ApiError {
    fn from(e: shared::base::error::Error) -> ApiError {
        match e.class() {
            shared::base::error::ErrorClass::InvalidInput => ApiError::bad_request(e.to_string()),
            _ => ApiError::internal(e.to_string()),
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> ApiError {
        ApiError::internal(format!("database: {e}"))
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> ApiError {
        match e {
            crate::Error::InvalidParams { .. } => ApiError::bad_request(e.to_string()),
            crate::Error::Shared(e) => e.into(),
            e => ApiError::internal(e.to_string()),
        }
    }
}

/// A request's query string, read strictly.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Params, ApiError> {
        Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map(|q| Params(q.0))
            .map_err(|e| ApiError::bad_request(format!("the query string cannot be read: {e}")))
    }
}

impl Params {
    /// Refuses any parameter not in `known`.
    pub fn only(&self, known: &[&str]) -> ApiResult<()> {
        match self.0.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some((k, _)) if known.is_empty() => Err(ApiError::bad_request(format!("unknown parameter {k:?}"))),
            Some((k, _)) => Err(ApiError::bad_request(format!(
                "unknown parameter {k:?}; this endpoint takes: {}",
                known.join(", ")
            ))),
        }
    }

    /// The last non-empty value of `key`.
    pub fn str(&self, key: &str) -> Option<String> {
        self.0.iter().rev().find(|(k, v)| k == key && !v.trim().is_empty()).map(|(_, v)| v.trim().to_owned())
    }

    /// Every non-empty value of `key`.
    pub fn all(&self, key: &str) -> Vec<String> {
        self.0.iter().filter(|(k, v)| k == key && !v.trim().is_empty()).map(|(_, v)| v.trim().to_owned()).collect()
    }

    /// A number in `min..=max`, `default` when absent.
    pub fn num<T>(&self, key: &str, default: T, min: T, max: T) -> ApiResult<T>
    where
        T: FromStr + PartialOrd + std::fmt::Display + Copy,
    {
        let Some(s) = self.str(key) else { return Ok(default) };
        match s.parse::<T>() {
            Ok(v) if v >= min && v <= max => Ok(v),
            _ => Err(ApiError::bad_request(format!("{key} must be a number from {min} to {max}, not {s:?}"))),
        }
    }

    /// `true`/`false` (also `1`/`0`).
    pub fn bool(&self, key: &str) -> ApiResult<Option<bool>> {
        match self.str(key).as_deref() {
            None => Ok(None),
            Some("true" | "1") => Ok(Some(true)),
            Some("false" | "0") => Ok(Some(false)),
            Some(s) => Err(ApiError::bad_request(format!("{key} must be true or false, not {s:?}"))),
        }
    }

    /// An ISO 8601 date or time.
    pub fn time(&self, key: &str) -> ApiResult<Option<Ts>> {
        match self.str(key) {
            None => Ok(None),
            Some(s) => Ts::parse(&s).map(Some).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{key} {s:?} is not an ISO 8601 date or time (2026-01-31, 2026-01-31T12:00:00Z)"
                ))
            }),
        }
    }

    /// One of `choices`, `default` when absent.
    pub fn choice(&self, key: &str, choices: &[&'static str], default: &'static str) -> ApiResult<&'static str> {
        match self.str(key) {
            None => Ok(default),
            Some(s) => choices.iter().find(|c| **c == s).copied().ok_or_else(|| {
                ApiError::bad_request(format!("{key} must be one of {}, not {s:?}", choices.join(", ")))
            }),
        }
    }
}

/// A JSON body of type `T`: 415 unless the request says JSON, 400 naming the
/// bad field otherwise.
pub fn body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &Bytes) -> ApiResult<T> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON (Content-Type: application/json)",
        ));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path.is_empty() || path == "." || path == "?" {
            ApiError::bad_request(format!("the body is not valid: {inner}"))
        } else {
            ApiError::bad_request(format!("{path}: {inner}"))
        }
    })?;
    Ok(value)
}

/// The router: the page, its assets and every API route, behind [`guard::guard`].
pub fn router(app: App) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(|| async { assets::script() }))
        .route("/app.css", get(|| async { assets::style() }))
        .route("/favicon.svg", get(|| async { assets::icon() }))
        .route("/api", get(index))
        .route("/api/stats", get(stats))
        .route("/api/projects", get(projects))
        .route("/api/search", get(search_route))
        .route("/api/sessions", get(sessions))
        .route("/api/sessions/active", get(active_sessions))
        .route("/api/sessions/{key}", get(session))
        .route("/api/sessions/{key}/events/{lsn}", get(session_event))
        .route("/api/timeline", get(timeline))
        .route("/api/memories", get(memories).post(add_memory))
        .route("/api/memories/{id}", get(memory).patch(update_memory).delete(forget_memory))
        .route("/api/memories/{id}/pin", post(pin).delete(unpin))
        .route("/api/memories/{id}/feedback", post(feedback))
        .route("/api/knowledge", get(knowledge::list_route))
        .route("/api/knowledge/{id}/graph", get(knowledge::graph_route))
        .route("/api/conversations", get(knowledge::conversations_route))
        .route("/api/staging", get(knowledge::staging_route))
        .route("/api/staging/{id}/resolve", post(knowledge::resolve_route))
        .route("/api/config", get(config_get).put(config_put))
        .route("/api/export", get(export))
        .route("/api/data/{what}", axum::routing::delete(purge))
        .route("/api/predictor/status", get(predictor_status))
        .route("/api/predictor/comparisons", get(comparisons))
        .route("/api/predictor/comparisons/{id}", get(comparison))
        .route("/api/predictor/audit/{key}", get(audit))
        .route("/api/predictor/training", get(training))
        .route("/api/predictor/drift", get(drift))
        .route("/api/diagnostics", get(diagnostics))
        .route("/api/diagnostics/predictor", get(diagnostics_predictor))
        .route("/api/analytics/latency", get(latency))
        .route("/api/analytics/errors", get(errors))
        .fallback(|| async { ApiError::not_found("no such endpoint (GET /api lists them)") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard::guard))
        .with_state(app)
}

async fn page(State(app): State<App>, p: Params) -> Response {
    if let Err(e) = p.only(&[]) {
        return e.into_response();
    }
    assets::page(&app.0.index)
}

async fn index() -> Response {
    axum::Json(json!({
        "name": "engram",
        "version": env!("CARGO_PKG_VERSION"),
        "docs": "docs/rest-api.md",
        "read": [
            "GET /api/stats?project=", "GET /api/projects", "GET /api/search?q=&type=&project=&tag=&limit=",
            "GET /api/sessions?project=&before=&limit=", "GET /api/sessions/active", "GET /api/sessions/:key",
            "GET /api/sessions/:key/events/:lsn", "GET /api/timeline?zoom=&before=&project=&limit=",
            "GET /api/memories?type=&project=&tag=&q=&pinned=&include_forgotten=&limit=&offset=", "GET /api/memories/:id",
            "GET /api/knowledge?type=&project=&tag=&q=&connected=&order=&limit=&offset=",
            "GET /api/knowledge/:id/graph?depth=", "GET /api/conversations?project=&group=&q=&include_resumed=&limit=",
            "GET /api/staging?status=&project=&limit=",
            "GET /api/config", "GET /api/export", "GET /api/predictor/status",
            "GET /api/predictor/comparisons?winner=&ema_updated=&min_margin=&since=&until=&limit=&offset=",
            "GET /api/predictor/comparisons/:id", "GET /api/predictor/audit/:session_key", "GET /api/predictor/training",
            "GET /api/predictor/drift", "GET /api/diagnostics", "GET /api/diagnostics/predictor",
            "GET /api/analytics/latency?hours=", "GET /api/analytics/errors?limit=",
        ],
        "write": [
            "POST /api/memories", "PATCH /api/memories/:id", "DELETE /api/memories/:id", "POST /api/memories/:id/pin",
            "DELETE /api/memories/:id/pin", "POST /api/memories/:id/feedback", "POST /api/staging/:id/resolve",
            "PUT /api/config",
            "DELETE /api/data/knowledge?confirm=true",
        ],
        "write_header": "X-Engram-Token",
    }))
    .into_response()
}

/// Runs a read after refusing parameters not listed (see [`Params::only`]).
macro_rules! read {
    ($app:expr, $p:expr, [$($k:literal),*], |$ctx:ident| $body:expr) => {{
        if let Err(e) = $p.only(&[$($k),*]) {
            return e.into_response();
        }
        $app.read(move |$ctx| $body).await
    }};
}
pub(crate) use read;

async fn stats(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["project"], |ctx| queries::stats(ctx, p.str("project").as_deref()))
}

async fn projects(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| queries::projects(ctx))
}

async fn search_route(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["q", "type", "project", "tag", "category", "from", "to", "limit"], |ctx| {
        let Some(query) = p.str("q") else { return Err(ApiError::bad_request("q (the query) is required")) };
        let memory_type = p.str("type").filter(|t| t != "all").map(|t| ops::check_type(&t)).transpose()?;
        let params = SearchParams {
            query,
            memory_type,
            project: p.str("project"),
            tags: p.all("tag"),
            from: p.time("from")?,
            to: p.time("to")?,
            limit: p.num("limit", 20, 1, search::MAX_LIMIT)?,
            session: None,
            category: p.str("category"),
        };
        let model = ctx.model();
        let started = std::time::Instant::now();
        // Searching from the page records nothing: a GET changes nothing.
        let (result, _events) =
            search::search(ctx.store, ctx.config, model.as_ref().map(|m| m.serving()), &params, ctx.now)?;
        let mut v = serde_json::to_value(result).map_err(|e| ApiError::internal(e.to_string()))?;
        v["took_ms"] = json!(started.elapsed().as_secs_f64() * 1e3);
        v["model_version"] = json!(model.map(|m| m.version));
        Ok(v)
    })
}

async fn sessions(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["project", "before", "limit"], |ctx| {
        let before = p.time("before")?;
        let limit = p.num("limit", 50, 1, 500)?;
        queries::sessions(ctx, p.str("project").as_deref(), before, limit)
    })
}

async fn active_sessions(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| queries::active_sessions(ctx))
}

async fn session(State(app): State<App>, Path(key): Path<String>, p: Params) -> Response {
    read!(app, p, ["events"], |ctx| {
        let events = p.num("events", 300, 0, 5000)?;
        queries::session(ctx, &key, events)
    })
}

async fn session_event(State(app): State<App>, Path((key, lsn)): Path<(String, i64)>, p: Params) -> Response {
    read!(app, p, [], |ctx| queries::session_event(ctx, &key, lsn))
}

async fn timeline(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["zoom", "before", "project", "limit"], |ctx| {
        let zoom = p.choice("zoom", &["day", "week", "month"], "week")?;
        let before = p.time("before")?;
        let limit = p.num("limit", 3, 1, 60)?;
        queries::timeline(ctx, zoom, before, p.str("project").as_deref(), limit)
    })
}

async fn memories(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["type", "project", "tag", "q", "pinned", "include_forgotten", "limit", "offset"], |ctx| {
        let f = queries::MemoryQuery {
            types: p.str("type").filter(|t| t != "all").into_iter().collect(),
            project: p.str("project"),
            tags: p.all("tag"),
            text: p.str("q"),
            pinned: p.bool("pinned")?,
            include_forgotten: p.bool("include_forgotten")?.unwrap_or(false),
            limit: p.num("limit", 60, 1, 500)?,
            offset: p.num("offset", 0, 0, 1_000_000)?,
            ..queries::MemoryQuery::default()
        };
        queries::memories(ctx, &f)
    })
}

async fn memory(State(app): State<App>, Path(id): Path<String>, p: Params) -> Response {
    read!(app, p, [], |ctx| queries::memory(ctx, &id))
}

fn user() -> Origin {
    Origin { source: "web".into(), by: "user".into(), session: None }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMemoryBody {
    text: String,
    #[serde(rename = "type")]
    memory_type: String,
    #[serde(default)]
    tags: Vec<String>,
    project: Option<String>,
    #[serde(default = "default_importance")]
    importance: f32,
    #[serde(default)]
    pinned: bool,
}

fn default_importance() -> f32 {
    0.7
}

async fn add_memory(State(app): State<App>, headers: HeaderMap, bytes: Bytes) -> Response {
    let b: NewMemoryBody = match body(&headers, &bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let resp = app
        .write(move |w| {
            let new = NewMemory {
                text: b.text,
                memory_type: ops::check_type(&b.memory_type)?,
                importance: b.importance,
                project: b.project,
                tags: b.tags,
                pinned: b.pinned,
            };
            let id = ops::add(w.journal, new, &user(), w.now)?;
            Ok(json!({"id": id.0, "memory": ops::show(w.journal.store(), id.as_str())?}))
        })
        .await;
    created(resp)
}

fn created(mut resp: Response) -> Response {
    if resp.status() == StatusCode::OK {
        *resp.status_mut() = StatusCode::CREATED;
    }
    resp
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeBody {
    text: Option<String>,
    #[serde(rename = "type")]
    memory_type: Option<String>,
    importance: Option<f32>,
    tags: Option<Vec<String>>,
    project: Option<String>,
}

async fn update_memory(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap, bytes: Bytes) -> Response {
    let b: ChangeBody = match body(&headers, &bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    app.write(move |w| {
        let change = MemoryChange {
            text: b.text,
            memory_type: b.memory_type.as_deref().map(ops::check_type).transpose()?,
            importance: b.importance,
            tags: b.tags,
            project: b.project,
        };
        ops::update(w.journal, &id, change, w.now)?;
        Ok(ops::show(w.journal.store(), &id)?)
    })
    .await
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetBody {
    reason: Option<String>,
}

async fn forget_memory(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap, bytes: Bytes) -> Response {
    let b: ForgetBody = if bytes.is_empty() {
        ForgetBody::default()
    } else {
        match body(&headers, &bytes) {
            Ok(b) => b,
            Err(e) => return e.into_response(),
        }
    };
    app.write(move |w| {
        let forgotten = ops::forget(w.journal, &id, b.reason, w.now)?;
        Ok(json!({"id": id, "forgotten": forgotten}))
    })
    .await
}

async fn pin(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.write(move |w| {
        ops::set_pinned(w.journal, &id, true, w.now)?;
        Ok(ops::show(w.journal.store(), &id)?)
    })
    .await
}

async fn unpin(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.write(move |w| {
        ops::set_pinned(w.journal, &id, false, w.now)?;
        Ok(ops::show(w.journal.store(), &id)?)
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackBody {
    relevance: f32,
    reason: Option<String>,
    session: Option<String>,
}

async fn feedback(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap, bytes: Bytes) -> Response {
    let b: FeedbackBody = match body(&headers, &bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    app.write(move |w| {
        let session = b.session.as_deref().map(ops::parse_session).transpose()?;
        let origin = Origin { session, ..user() };
        ops::feedback(w.journal, &id, b.relevance, b.reason, &origin, w.now)?;
        Ok(ops::show(w.journal.store(), &id)?)
    })
    .await
}

async fn config_get(State(app): State<App>, p: Params) -> Response {
    if let Err(e) = p.only(&[]) {
        return e.into_response();
    }
    app.run(settings::describe).await
}

async fn config_put(State(app): State<App>, headers: HeaderMap, bytes: Bytes) -> Response {
    let b: Value = match body(&headers, &bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    app.run(move |paths| settings::update(paths, &b)).await
}

async fn export(State(app): State<App>, p: Params) -> Response {
    let mut resp = read!(app, p, [], |ctx| queries::export(ctx));
    if resp.status() == StatusCode::OK {
        resp.headers_mut().insert(
            header::CONTENT_DISPOSITION,
            axum::http::HeaderValue::from_static("attachment; filename=\"engram-export.json\""),
        );
    }
    resp
}

async fn purge(State(app): State<App>, Path(what): Path<String>, p: Params) -> Response {
    if let Err(e) = p.only(&["confirm"]) {
        return e.into_response();
    }
    match p.bool("confirm") {
        Ok(Some(true)) => {}
        Ok(_) => return ApiError::bad_request("purging needs ?confirm=true").into_response(),
        Err(e) => return e.into_response(),
    }
    match what.as_str() {
        "knowledge" | "memories" => app.write(queries::forget_all).await,
        "sessions" | "observations" | "all" => ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            format!(
                "purging {what} is not offered here: sessions are the tape log itself, which only \
                 `engram-ingestor` maintenance rewrites; DELETE /api/data/knowledge forgets every memory"
            ),
        )
        .into_response(),
        _ => ApiError::not_found(format!("no data set {what:?}; one of: knowledge")).into_response(),
    }
}

async fn predictor_status(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::status(ctx))
}

async fn comparisons(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["winner", "ema_updated", "min_margin", "since", "until", "limit", "offset", "project"], |ctx| {
        let f = predictor::ComparisonFilter {
            winner: match p.str("winner") {
                None => None,
                Some(_) => Some(p.choice("winner", &["predictor", "baseline", "tie"], "tie")?.to_owned()),
            },
            ema_updated: p.bool("ema_updated")?,
            min_margin: p.str("min_margin").map(|_| p.num("min_margin", 0.0, -1.0, 1.0)).transpose()?,
            since: p.time("since")?,
            until: p.time("until")?,
            project: p.str("project"),
            limit: p.num("limit", 50, 1, 1000)?,
            offset: p.num("offset", 0, 0, 1_000_000)?,
        };
        predictor::comparisons(ctx, &f)
    })
}

async fn comparison(State(app): State<App>, Path(id): Path<String>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::comparison(ctx, &id))
}

async fn audit(State(app): State<App>, Path(key): Path<String>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::audit(ctx, &key))
}

async fn training(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::training(ctx))
}

async fn drift(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::drift(ctx))
}

async fn diagnostics(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::diagnostics(ctx))
}

async fn diagnostics_predictor(State(app): State<App>, p: Params) -> Response {
    read!(app, p, [], |ctx| predictor::health(ctx))
}

async fn latency(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["hours"], |ctx| {
        let hours = p.num("hours", 24 * 7, 1, 24 * 365)?;
        Ok(predictor::latency(ctx, hours))
    })
}

async fn errors(State(app): State<App>, p: Params) -> Response {
    read!(app, p, ["limit"], |ctx| {
        let limit = p.num("limit", 50, 1, 500)?;
        predictor::errors(ctx, limit)
    })
}
