//! Fuzzes the web UI's REST API in process (`scorer::web::api::router`: the
//! guard, then every write route's body parser). The first byte picks the
//! route, the second the headers (a second `Host`, a `Content-Length` over
//! the limit, no token, no JSON content type); the rest is the body. Checks
//! beyond "no panic": every error is JSON; two `Host` headers are a 400; an
//! announced body over the limit a 413; no setting that names a program or
//! opens the server (`*.command`, `web.*`) ever reaches `config.toml`.
#![no_main]

use std::cell::RefCell;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use libfuzzer_sys::fuzz_target;
use scorer::web::{App, api};
use shared::base::config::Config;
use shared::base::paths::Paths;
use tower::ServiceExt as _;

const HOST: &str = "127.0.0.1:37820";
const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/memories"),
    ("PATCH", "/api/memories/mem_fuzz"),
    ("PUT", "/api/config"),
    ("POST", "/api/staging/stg_fuzz/resolve"),
    ("POST", "/api/memories/mem_fuzz/feedback"),
    ("DELETE", "/api/memories/mem_fuzz"),
];

struct World {
    runtime: tokio::runtime::Runtime,
    paths: Paths,
    app: App,
}

thread_local! {
    static WORLD: RefCell<World> = RefCell::new({
        let dir = std::env::temp_dir().join(format!("engram-fuzz-web-{}", std::process::id()));
        let paths = Paths::at(&dir);
        let app = App::with(paths.clone(), TOKEN.into(), vec![HOST.into()]);
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        World { runtime, paths, app }
    });
}

/// The settings that only `config.toml` and the command line may set.
fn locked_settings(config: &Config) -> Vec<(String, serde_json::Value)> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, x, out);
                }
            }
            x => {
                if scorer::web::settings::locked(prefix).is_some() {
                    out.push((prefix.to_owned(), x.clone()));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk("", &serde_json::to_value(config).unwrap_or_default(), &mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let [route, flags, body @ ..] = data else { return };
    let (method, path) = ROUTES[usize::from(*route) % ROUTES.len()];
    let (two_hosts, huge, no_token, not_json) = (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0, flags & 8 != 0);
    WORLD.with(|w| {
        let w = w.borrow();
        let mut req = Request::builder().method(method).uri(path).header(header::HOST, HOST);
        if two_hosts {
            req = req.header(header::HOST, "evil.example");
        }
        if !no_token {
            req = req.header("x-engram-token", TOKEN);
        }
        req = req.header(header::CONTENT_TYPE, if not_json { "text/plain" } else { "application/json" });
        if huge {
            req = req.header(header::CONTENT_LENGTH, "10000000000");
        }
        let Ok(req) = req.body(Body::from(body.to_vec())) else { return };
        let resp = w.runtime.block_on(api::router(w.app.clone()).oneshot(req)).expect("the router answers");
        let status = resp.status();
        if two_hosts {
            assert_eq!(status, StatusCode::BAD_REQUEST, "two Host headers");
        } else if huge {
            assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "an announced body over the limit");
        }
        if status.is_client_error() || status.is_server_error() {
            let json = resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
            assert!(json, "an error that is not JSON: {status}");
        }
        if path == "/api/config" && status.is_success() {
            let config = Config::load(&w.paths.config()).expect("a saved config.toml loads");
            assert_eq!(locked_settings(&config), locked_settings(&Config::default()), "a locked setting was written");
        }
    });
});
