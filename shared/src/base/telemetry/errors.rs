//! The last warnings and errors the background processes logged: the tail of
//! `logs/hooks.log` (hooks, their recorder, the ingestion worker) and of
//! `logs/trainer.log` (unattended training runs), as written by
//! [`crate::base::logging::init_file`] (`<RFC 3339 time> <LEVEL> <target>: <message>`).

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use serde::Serialize;

use crate::base::paths::Paths;

/// How much of the end of each log file is read.
pub const TAIL_BYTES: u64 = 256 * 1024;

/// One logged warning or error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// The time as logged (RFC 3339).
    pub at: String,
    /// `WARN` or `ERROR`.
    pub level: String,
    /// The log it came from (`hooks`, `trainer`).
    pub source: String,
    /// The rest of the line: the module, the message and its fields.
    pub message: String,
}

/// The last `TAIL_BYTES` of `path` (empty when it cannot be read).
fn tail(path: &Path) -> String {
    let Ok(mut f) = File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::with_capacity((len - start) as usize);
    if f.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // A tail that starts mid-line drops that line.
    match (start > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_owned(),
        _ => text,
    }
}

/// The warning or error a log line records, if it is one.
pub fn parse_line(line: &str, source: &str) -> Option<LogEntry> {
    let mut parts = line.trim_start().splitn(2, char::is_whitespace);
    let at = parts.next()?;
    let rest = parts.next()?.trim_start();
    let (level, message) = rest.split_once(char::is_whitespace)?;
    if !matches!(level, "WARN" | "ERROR") || !at.contains('T') {
        return None;
    }
    Some(LogEntry {
        at: at.to_owned(),
        level: level.to_owned(),
        source: source.to_owned(),
        message: message.trim().to_owned(),
    })
}

/// The latest `limit` warnings and errors of the hooks' and the trainer's
/// logs, newest first.
pub fn recent(paths: &Paths, limit: usize) -> Vec<LogEntry> {
    let mut out: Vec<LogEntry> = Vec::new();
    for (source, file) in [("hooks", "hooks.log"), ("trainer", "trainer.log")] {
        let text = tail(&paths.logs().join(file));
        out.extend(text.lines().filter_map(|l| parse_line(l, source)));
    }
    // RFC 3339 times in UTC sort as text.
    out.sort_by(|a, b| b.at.cmp(&a.at));
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn warnings_and_errors_are_read_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        std::fs::create_dir_all(paths.logs()).unwrap();
        std::fs::write(
            paths.logs().join("hooks.log"),
            "2026-01-02T10:00:00.000001Z ERROR shared::domain::hook: hook failed error=boom hook=\"stop\"\n\
             2026-01-02T10:00:01.000000Z  INFO shared::domain::hook: spooled\n\
             not a log line\n\
             2026-01-02T10:00:03.000000Z  WARN scorer: cannot load the serving model\n",
        )
        .unwrap();
        std::fs::write(paths.logs().join("trainer.log"), "2026-01-02T10:00:02.000000Z ERROR trainer: run failed\n")
            .unwrap();
        let got = recent(&paths, 10);
        let summary: Vec<(&str, &str, &str)> =
            got.iter().map(|e| (e.level.as_str(), e.source.as_str(), e.message.as_str())).collect();
        assert_eq!(
            summary,
            vec![
                ("WARN", "hooks", "scorer: cannot load the serving model"),
                ("ERROR", "trainer", "trainer: run failed"),
                ("ERROR", "hooks", "shared::domain::hook: hook failed error=boom hook=\"stop\""),
            ]
        );
        assert_eq!(recent(&paths, 1).len(), 1);
        assert!(recent(&Paths::at(dir.path().join("none")), 5).is_empty());
    }
}
