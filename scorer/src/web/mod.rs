//! `engram-scorer web`: the local web UI and its REST API (seed 004 "Web UI"
//! and "REST API", seed 002 §4.1–4.8), served on `127.0.0.1:37820` by default
//! (`[web]` in `config.toml`, `--port`, `--bind`).
//!
//! * **Stack.** axum on a current-thread tokio runtime: one thread accepts
//!   and parses HTTP; each request's SQLite work runs on a small blocking
//!   pool (at most [`BLOCKING_THREADS`] threads, which exit when idle) with
//!   projection connections kept for reuse ([`state`]).
//! * **Page.** One HTML page with its script and style built into the binary
//!   ([`assets`]); nothing is loaded from the network. Views are addressed by
//!   the URL's fragment (`#/search?q=…`), so the server serves `/` only.
//! * **Reads** (`GET /api/…`, [`api`]) query the projection as it is; a
//!   search ranks with the serving model exactly as the CLI does, but records
//!   nothing (a GET changes nothing).
//! * **Writes** (`POST`/`PUT`/`PATCH`/`DELETE`) go through the journal with
//!   the memory commands every writer shares ([`shared::domain::memory::ops`]), so
//!   they land on the tapes; settings are written to `config.toml`
//!   ([`settings`]), only after the whole file validates.
//! * **Safe by default** ([`guard`]): loopback only unless `web.allow_remote`;
//!   a request whose `Host` is not the server's own is refused (DNS
//!   rebinding); a write needs the per-install token the page holds
//!   (`X-Engram-Token`) and, when the browser names one, a same-origin
//!   `Origin`; no CORS header is ever sent; every error is a JSON body with
//!   a 4xx or 5xx status, and a refused request changes nothing.

pub mod api;
mod assets;
pub mod guard;
mod knowledge;
mod predictor;
mod queries;
pub mod settings;
mod state;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::serve::ListenerExt as _;

use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;

use crate::error::{Error, Result};

pub use state::App;

/// Most threads running requests' SQLite work at once.
pub const BLOCKING_THREADS: usize = 4;

/// How `engram-scorer web` runs; `None` takes the configuration's value.
#[derive(Clone, Debug, Default)]
pub struct WebOptions {
    /// Address to listen on.
    pub bind: Option<IpAddr>,
    /// Port (0: any free port).
    pub port: Option<u16>,
    /// Allow a non-loopback address.
    pub allow_remote: bool,
}

/// The address to listen on, refusing a non-loopback one unless allowed.
pub fn listen_address(config: &Config, opts: &WebOptions) -> Result<SocketAddr> {
    let ip = match opts.bind {
        Some(ip) => ip,
        None => config
            .web
            .bind
            .parse()
            .map_err(|_| Error::params("web.bind", format!("{:?} is not an IP address", config.web.bind)))?,
    };
    if !(ip.is_loopback() || opts.allow_remote || config.web.allow_remote) {
        return Err(Error::params(
            "bind",
            format!(
                "{ip} is not a loopback address: the web UI serves your memory to anyone who can reach it; \
                 set web.allow_remote = true in config.toml (or pass --allow-remote) to listen there anyway"
            ),
        ));
    }
    Ok(SocketAddr::new(ip, opts.port.unwrap_or(config.web.port)))
}

/// Serves the web UI until a signal; prints its address on stdout once it
/// listens (`http://127.0.0.1:37820/`).
pub fn run(paths: Paths, opts: WebOptions, shutdown: Shutdown) -> Result<()> {
    let config = Config::load(&paths.config())?;
    let addr = listen_address(&config, &opts)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_keep_alive(Duration::from_secs(5))
        .build()
        .map_err(|e| Error::io("start the web server's runtime", std::path::Path::new("."), e))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::io("listen on", std::path::Path::new(&addr.to_string()), e))?;
        let local = listener.local_addr().map_err(|e| Error::io("read the bound address", paths.home(), e))?;
        let app = App::new(paths, local, &config.web)?;
        println!("http://{}/", guard::display_host(local));
        tracing::info!(%local, "web UI listening");
        // No Nagle: a response's last small segment would otherwise wait for
        // the browser's delayed ACK (40 ms) on a kept-alive connection.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY");
            }
        });
        axum::serve(listener, api::router(app))
            .with_graceful_shutdown(async move {
                while !shutdown.requested() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
            .await
            .map_err(|e| Error::io("serve HTTP", std::path::Path::new("."), e))
    })
}
