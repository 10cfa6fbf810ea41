//! What keeps the web UI safe by default, as one middleware around every
//! route ([`guard`]):
//!
//! * **Host.** A request whose `Host` header is not one of the server's own
//!   names (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`, the bound
//!   address, `web.allowed_hosts`) is refused with 403: a page on another
//!   site that rebinds its DNS name to 127.0.0.1 still sends its own name.
//!   A request with no `Host`, or more than one, is a 400 (RFC 9110 §7.2).
//! * **Size.** A body whose `Content-Length` is over [`MAX_BODY`] is refused
//!   with 413 from the header, before a byte of it is read.
//! * **Writes** (any method but GET and HEAD) need the per-install token in
//!   `X-Engram-Token` (401 without it, 403 when wrong). The token is made
//!   once, 32 random bytes, kept in the data home (`web/token`, mode 0600)
//!   and written into the page the server serves, which only same-origin
//!   script can read. A write whose `Origin` (or `Sec-Fetch-Site`) names
//!   another site is refused too.
//! * **No CORS.** No `Access-Control-*` header is ever sent, so browsers keep
//!   other sites from reading any response; `Cross-Origin-Resource-Policy:
//!   same-origin` and `nosniff` keep them from embedding one.
//! * **Errors are JSON.** Any 4xx or 5xx response that is not JSON already
//!   (an unknown path, a wrong method, a body too large) gets the API's error
//!   body `{"error":{"status":…,"code":…,"message":…}}`.

use std::io::Write as _;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use shared::base::config::WebConfig;
use shared::base::paths::Paths;

use super::App;
use super::api::{ApiError, MAX_BODY};
use crate::error::{Error, Result};

/// The header carrying the write token.
pub const TOKEN_HEADER: &str = "x-engram-token";

/// The token file in the data home.
pub fn token_path(paths: &Paths) -> std::path::PathBuf {
    paths.home().join("web").join("token")
}

/// The per-install token: read, or made on first use (mode 0600).
pub fn token(paths: &Paths) -> Result<String> {
    let path = token_path(paths);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let t = text.trim();
        if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(t.to_owned());
        }
        tracing::warn!(file = %path.display(), "the web token file is not a token; making a new one");
    }
    let dir = path.parent().unwrap_or(paths.home());
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    let bytes: [u8; 32] = rand::random();
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!("token.{}.tmp", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| Error::io("create", &tmp, e))?;
        f.write_all(token.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| Error::io("write", &tmp, e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| Error::io("rename into place", &path, e))?;
    Ok(token)
}

/// `addr` as a `Host` header names it (`127.0.0.1:37820`, `[::1]:37820`).
pub fn display_host(addr: SocketAddr) -> String {
    addr.to_string()
}

/// The `Host` values a server listening on `local` accepts, lower case.
pub fn allowed_hosts(local: SocketAddr, web: &WebConfig) -> Vec<String> {
    let port = local.port();
    let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
    if !local.ip().is_unspecified() {
        hosts.push(display_host(local).to_lowercase());
    }
    hosts.extend(web.allowed_hosts.iter().map(|h| h.trim().to_lowercase()));
    if port == 80 {
        let bare: Vec<String> = hosts.iter().filter_map(|h| h.strip_suffix(":80").map(str::to_owned)).collect();
        hosts.extend(bare);
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a request is refused before it reaches its handler, if it is.
pub fn check(app: &App, method: &Method, headers: &HeaderMap) -> std::result::Result<(), ApiError> {
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "duplicate_host",
            "the request has more than one Host header",
        ));
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_ascii_lowercase);
    let Some(host) = host else {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "no_host", "the request has no Host header"));
    };
    if !app.0.hosts.contains(&host) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "foreign_host",
            format!("Host {host:?} is not this server's (see web.allowed_hosts in config.toml)"),
        ));
    }
    // The parser refuses a malformed or repeated Content-Length; a valid
    // one over the limit is refused before the body is read.
    let announced = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the request body is too large (the limit is {MAX_BODY} bytes)"),
        ));
    }
    if matches!(*method, Method::GET | Method::HEAD) {
        return Ok(());
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| app.0.hosts.contains(&o.to_ascii_lowercase()));
        if !own {
            return Err(ApiError::new(StatusCode::FORBIDDEN, "cross_origin", "writes from another origin are refused"));
        }
    }
    if headers.get("sec-fetch-site").is_some_and(|v| v.as_bytes() == b"cross-site") {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "cross_origin", "writes from another site are refused"));
    }
    match headers.get(TOKEN_HEADER) {
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "token_required",
            "writes need the X-Engram-Token header (the page holds it; scripts read <data home>/web/token)",
        )),
        Some(t) if same_bytes(t.as_bytes(), app.0.token.as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::new(StatusCode::FORBIDDEN, "bad_token", "the X-Engram-Token header is wrong")),
    }
}

/// The middleware: [`check`], then the response headers, and JSON error bodies.
pub async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    let mut resp = match check(&app, req.method(), req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let is_json =
        resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if (status.is_client_error() || status.is_server_error()) && !is_json {
        let (code, message) = match status {
            StatusCode::NOT_FOUND => ("not_found", "no such endpoint".to_owned()),
            StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "this endpoint does not take that method".into()),
            StatusCode::PAYLOAD_TOO_LARGE => ("too_large", "the request body is too large".into()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported_media_type", "send JSON".into()),
            s => ("error", s.canonical_reason().unwrap_or("error").to_owned()),
        };
        let allow = resp.headers().get(header::ALLOW).cloned();
        resp = ApiError::new(status, code, message).into_response();
        if let Some(a) = allow {
            resp.headers_mut().insert(header::ALLOW, a);
        }
    }
    let h = resp.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// An empty 204 (HEAD of the page and the like).
pub fn no_content() -> Response {
    Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn loopback_names_with_the_port_are_the_only_hosts() {
        let hosts = allowed_hosts("127.0.0.1:37820".parse().unwrap(), &WebConfig::default());
        assert_eq!(hosts, vec!["127.0.0.1:37820", "[::1]:37820", "localhost:37820"]);
        let web = WebConfig { allowed_hosts: vec!["Box.LAN:80".into()], ..WebConfig::default() };
        let hosts = allowed_hosts("0.0.0.0:80".parse().unwrap(), &web);
        assert!(hosts.contains(&"box.lan:80".to_owned()) && hosts.contains(&"box.lan".to_owned()));
        assert!(!hosts.iter().any(|h| h.starts_with("0.0.0.0")));
    }

    #[test]
    fn the_token_is_made_once_and_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let t = token(&paths).unwrap();
        assert_eq!(t.len(), 64);
        assert_eq!(token(&paths).unwrap(), t);
        let mode = std::fs::metadata(token_path(&paths)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(same_bytes(b"abc", b"abc") && !same_bytes(b"abc", b"abd") && !same_bytes(b"ab", b"abc"));
    }
}
