//! What the command-line tools tell a person to do next: commands printed so
//! that they run as printed (a binary by its bare name only when `PATH`
//! finds that very file), the note an empty data home gets instead of empty
//! output, and error chains printed with each cause once.

use std::path::Path;

/// How to type `name` (a binary in `bin_dir`) so that it runs as printed:
/// its bare name when `PATH` finds that very file, else its full path.
pub fn command_for(bin_dir: &Path, name: &str) -> String {
    let full = bin_dir.join(name);
    let same = |p: &Path| match (p.canonicalize(), full.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()).is_some_and(|p| same(&p))
    });
    if on_path { name.to_owned() } else { shell_word(&full.display().to_string()) }
}

/// How to type the sibling binary `name` of the running one (the Engram
/// binaries are installed side by side).
pub fn sibling(name: &str) -> String {
    match std::env::current_exe().ok().as_deref().and_then(Path::parent) {
        Some(dir) => command_for(dir, name),
        None => name.to_owned(),
    }
}

/// `s` quoted for a POSIX shell when it needs it.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What a read command prints when the data home at `home` holds no memory
/// yet: where it looked, and the two ways to fill it, as commands that run
/// as printed.
pub fn empty_store(home: &Path) -> String {
    let ingestor = sibling("engram-ingestor");
    format!(
        "no memories yet in {home}.\n\
         \x20  {ingestor} quickstart        # learn from your agent history (or a demo, in a data home of its own)\n\
         \x20  {ingestor} memory add \"…\"    # save one yourself (in a project folder, it belongs to that project)\n",
        home = home.display(),
    )
}

/// `error` and its causes on one line, each cause once: a cause whose text
/// the message already ends with (an error that prints its source, then
/// returns it from `source()`) is not repeated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("read {path}: {source}")]
    struct Printed {
        path: String,
        #[source]
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("open the journal")]
    struct Context {
        #[source]
        source: Printed,
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let once = io().to_string();
        let e = Printed { path: "/x".into(), source: io() };
        let text = error_chain(&e);
        assert_eq!(text.matches(&once).count(), 1, "{text}");
        let e = Context { source: Printed { path: "/x".into(), source: io() } };
        assert_eq!(error_chain(&e), format!("open the journal: read /x: {once}"));
    }

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("/usr/bin/engram-scorer"), "/usr/bin/engram-scorer");
        assert_eq!(shell_word("/my dir/it's"), "'/my dir/it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn an_empty_store_says_what_to_do() {
        let text = empty_store(Path::new("/data/engram"));
        assert!(text.starts_with("no memories yet in /data/engram."), "{text}");
        assert!(text.contains("engram-ingestor quickstart") && text.contains("memory add"), "{text}");
    }
}
