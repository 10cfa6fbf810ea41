//! The page and its assets, built into the binary (nothing is loaded from the
//! network): `assets/index.html` (the token is written into it when the
//! server starts), `assets/app.js`, `assets/app.css`, `assets/favicon.svg`.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/favicon.svg");

/// The page with `token` in its `engram-token` meta tag.
pub fn index_html(token: &str) -> String {
    INDEX.replace("{{TOKEN}}", token).replace("{{VERSION}}", env!("CARGO_PKG_VERSION"))
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// `GET /`.
pub fn page(index: &str) -> Response {
    let mut r = index.to_owned().into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    r
}

/// `GET /app.js`.
pub fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /app.css`.
pub fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// `GET /favicon.svg`.
pub fn icon() -> Response {
    asset(ICON, "image/svg+xml")
}
