//! What the web benchmarks share: the data home of 10,000 memories and 100
//! sessions they serve, and `engram-scorer web` started on it.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use shared::base::paths::Paths;

/// Memories in the data home.
pub const MEMORIES: usize = 10_000;
/// Session events in the data home (100 sessions).
pub const SESSION_EVENTS: usize = 20_000;

/// Writes the data home into `home` through the journal, and says so.
///
/// # Panics
/// When the journal cannot be written.
pub fn build_home(home: &Path) {
    let paths = Paths::at(home);
    let t = Instant::now();
    let mut j = shared::projection::open(&paths, "engram-bench").expect("open the journal");
    for chunk in crate::session_events(SESSION_EVENTS, 7).chunks(5000) {
        j.append(chunk).expect("append session events");
    }
    for chunk in crate::memory_events(MEMORIES, 11).chunks(5000) {
        j.append(chunk).expect("append memories");
    }
    println!("data home: {MEMORIES} memories, {SESSION_EVENTS} session events, written in {:.1?}", t.elapsed());
}

/// `engram-scorer web --port 0` on a data home, killed when dropped.
#[derive(Debug)]
pub struct Server {
    /// The server process.
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Server {
    /// Starts `bin` on `home` and waits for the address it prints.
    ///
    /// # Panics
    /// When the server does not start.
    pub fn start(bin: &Path, home: &Path) -> Server {
        let mut child = Command::new(bin)
            .args(["web", "--port", "0"])
            .env("ENGRAM_HOME", home)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start engram-scorer web");
        let mut line = String::new();
        let out = child.stdout.take().expect("a piped stdout");
        BufReader::new(out).read_line(&mut line).expect("read the server's address");
        let addr = line.trim().trim_start_matches("http://").trim_end_matches('/').to_owned();
        assert!(!addr.is_empty(), "the server printed no address");
        Server { child, addr }
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
