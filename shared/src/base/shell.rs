//! Reading shell command lines without running them: the part that does the
//! work, what it is for, whether it only looks, and which file it writes.
//! Extraction uses it to tell a fix from a retry, injection to tell a
//! command that needs a warning from one that only reads.

/// The part of a command line that does the work: the last `&&`/`;`/`||`
/// segment that is not `cd`, `export`, `source` or `set`, on one line.
pub fn main_segment(cmd: &str) -> String {
    let one: String = cmd.split_whitespace().collect::<Vec<_>>().join(" ");
    let segments: Vec<&str> = one.split("&&").flat_map(|s| s.split("||")).flat_map(|s| s.split(';')).collect();
    let is_setup = |s: &str| {
        let f = s.split_whitespace().next().unwrap_or("");
        matches!(f, "cd" | "export" | "source" | "." | "set" | "pushd" | "popd" | "unset" | "")
    };
    segments.iter().rev().find(|s| !is_setup(s)).map_or_else(|| one.trim().to_owned(), |s| s.trim().to_owned())
}

const WRAPPERS: &[&str] = &["sudo", "env", "time", "nice", "npx", "bunx", "pnpx", "exec", "command", "nohup"];
const RUNNERS: &[&[&str]] = &[
    &["uv", "run"],
    &["poetry", "run"],
    &["pipenv", "run"],
    &["pdm", "run"],
    &["hatch", "run"],
    &["bundle", "exec"],
    &["python", "-m"],
    &["python3", "-m"],
    &["npm", "run"],
    &["pnpm", "run"],
    &["yarn", "run"],
    &["bun", "run"],
    &["npm", "exec"],
    &["pnpm", "exec"],
    &["pnpm", "dlx"],
    &["yarn", "dlx"],
    &["go", "run"],
    &["cargo", "run"],
];
const PACKAGE_MANAGERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// What a command is for, without who runs it: environment assignments,
/// wrappers (`sudo`, `npx`), runners (`uv run`, `npm run`, `python -m`) and
/// the package manager are dropped, then its first two words are kept
/// (`npm test` and `pnpm test` → `test`; `PYTHONPATH=src pytest -x` →
/// `pytest`; `cargo test -p x` → `cargo test`).
pub fn goal(cmd: &str) -> String {
    let seg = main_segment(cmd);
    let mut w: Vec<&str> = seg.split_whitespace().collect();
    loop {
        let before = w.len();
        while w.first().is_some_and(|x| is_assignment(x) || WRAPPERS.contains(x)) {
            w.remove(0);
        }
        if let Some(r) = RUNNERS.iter().find(|r| w.len() > r.len() && w[..r.len()] == ***r) {
            w.drain(..r.len());
        }
        if w.first().is_some_and(|x| PACKAGE_MANAGERS.contains(x)) && w.len() > 1 {
            w.remove(0);
        }
        if w.len() == before {
            break;
        }
    }
    // `docker-compose up` and `docker compose up` are one goal.
    let first = w.first().map(|f| f.rsplit('/').next().unwrap_or(f).replace('-', " "));
    let rest = w.iter().skip(1).filter(|x| !x.starts_with('-') && !is_assignment(x));
    let words: Vec<&str> = first.iter().flat_map(|f| f.split(' ')).chain(rest.copied()).take(2).collect();
    // A second word that is a path or value says where, not what.
    match words.as_slice() {
        [a, b] if b.contains(['/', '.', '=', '"', '\'']) || b.parse::<f64>().is_ok() => (*a).to_owned(),
        _ => words.join(" "),
    }
}

/// The program a command line runs (its main segment's first word, without
/// environment assignments, wrappers and directories): `yarn`, `docker`, `go`.
pub fn program(cmd: &str) -> Option<String> {
    let seg = main_segment(cmd);
    let first =
        seg.split_whitespace().find(|x| !is_assignment(x) && !WRAPPERS.contains(x))?.rsplit('/').next()?.to_owned();
    Some(first.split('-').next().unwrap_or(&first).to_owned())
}

/// Whether `w` is an environment assignment (`FOO=1`) before a command.
pub fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// Commands that only look (listing, reading, searching, status): they never fix anything.
pub fn is_read_only(cmd: &str) -> bool {
    let seg = main_segment(cmd);
    let w: Vec<&str> = seg.split_whitespace().filter(|x| !is_assignment(x)).collect();
    let Some(first) = w.first().map(|f| f.rsplit('/').next().unwrap_or(f)) else { return true };
    if matches!(
        first,
        "ls" | "cat"
            | "head"
            | "tail"
            | "less"
            | "more"
            | "grep"
            | "rg"
            | "ag"
            | "find"
            | "fd"
            | "pwd"
            | "echo"
            | "printf"
            | "which"
            | "type"
            | "whoami"
            | "printenv"
            | "ps"
            | "top"
            | "df"
            | "du"
            | "wc"
            | "file"
            | "stat"
            | "tree"
            | "man"
            | "sleep"
            | "true"
            | "date"
            | "lsof"
            | "netstat"
            | "ss"
            | "id"
            | "uname"
            | "cd"
            | "sed"
            | "awk"
            | "jq"
            | "diff"
            | "curl"
            | "wget"
            | "ping"
            | "nc"
            | "hostname"
            | "env"
    ) {
        // `sed -i` edits in place.
        return !(first == "sed" && w.iter().any(|x| x.starts_with("-i")));
    }
    let sub = w.get(1).copied().unwrap_or("");
    match first {
        // `git remote set-url` / `add` / `remove` change the repository.
        "git" if sub == "remote" => w.get(2).is_none_or(|x| x.starts_with('-') || matches!(*x, "show" | "get-url")),
        "git" => matches!(
            sub,
            "status"
                | "log"
                | "diff"
                | "show"
                | "branch"
                | "rev-parse"
                | "blame"
                | "grep"
                | "ls-files"
                | "ls-remote"
                | "check-ignore"
                | "reflog"
                | "shortlog"
                | "describe"
        ),
        "docker" | "podman" => matches!(sub, "ps" | "logs" | "images" | "inspect" | "version" | "info"),
        "kubectl" => matches!(sub, "get" | "describe" | "logs"),
        "systemctl" | "service" => matches!(sub, "status" | "is-active"),
        _ => w.iter().any(|x| matches!(*x, "--version" | "-V" | "--help" | "-h")) && w.len() <= 3,
    }
}

/// Whether a command only looks something up: it reads ([`is_read_only`]),
/// asks for help or a version, or lists, shows or checks state
/// (`gh run list`, `kubectl get pods`, `npm outdated`). A look-up is never
/// the fix of a failure, and its failure is no lesson.
pub fn is_diagnostic(cmd: &str) -> bool {
    if is_read_only(cmd) {
        return true;
    }
    let seg = main_segment(cmd);
    let w: Vec<&str> = seg.split_whitespace().filter(|x| !is_assignment(x)).collect();
    if w.iter().skip(1).any(|x| matches!(*x, "--help" | "-h" | "help" | "--version" | "-V" | "version" | "-v")) {
        return true;
    }
    w.iter().skip(1).take(2).any(|x| {
        matches!(
            *x,
            "list"
                | "ls"
                | "status"
                | "info"
                | "show"
                | "view"
                | "describe"
                | "inspect"
                | "logs"
                | "ps"
                | "whoami"
                | "doctor"
                | "outdated"
                | "check-ignore"
                | "ls-files"
                | "which"
        )
    })
}

/// Whether a command is a version-control operation (`git`, `hg`, `svn`):
/// what it needs first depends on the repository's state at that moment
/// (a commit, a stash, a fetch), not on the project's environment, so a
/// failure and its fix are no lesson for later sessions.
pub fn is_vcs(cmd: &str) -> bool {
    matches!(program(cmd).as_deref(), Some("git" | "hg" | "svn"))
}

/// Whether a command runs tests: their failures are the code's, not the
/// environment's.
pub fn runs_tests(cmd: &str) -> bool {
    let g = goal(cmd);
    g.contains("test") || g.contains("spec") || matches!(g.as_str(), "jest" | "vitest" | "mocha" | "rspec" | "phpunit")
}

/// Whether a command prepares the environment another command needs: it
/// starts a service, installs or fetches dependencies, builds or generates
/// code, migrates or seeds a database, creates something, logs in or
/// activates an environment. Only such a command, run between a failure and
/// its success, is credited as what had to run first.
pub fn is_setup(cmd: &str) -> bool {
    if is_diagnostic(cmd) || writes_file(cmd).is_some() {
        return false;
    }
    let seg = main_segment(cmd);
    let w: Vec<&str> = seg.split_whitespace().filter(|x| !is_assignment(x)).collect();
    let Some(first) = w.first().map(|f| f.rsplit('/').next().unwrap_or(f)) else { return false };
    if is_vcs(cmd) {
        // Configuring the repository is setup; committing, stashing or
        // fetching is the moment's workflow.
        let (sub, third) = (w.get(1).copied().unwrap_or(""), w.get(2).copied().unwrap_or(""));
        return matches!(sub, "config" | "submodule" | "lfs")
            || (sub == "remote" && matches!(third, "set-url" | "add"));
    }
    if matches!(first, "source" | "." | "export" | "createdb" | "initdb" | "mkdir" | "ln" | "chmod" | "direnv") {
        return true;
    }
    w.iter().skip(1).take(3).any(|x| {
        matches!(
            *x,
            "up" | "start"
                | "serve"
                | "install"
                | "i"
                | "add"
                | "sync"
                | "restore"
                | "get"
                | "fetch"
                | "pull"
                | "build"
                | "generate"
                | "gen"
                | "codegen"
                | "prisma"
                | "migrate"
                | "seed"
                | "compile"
                | "init"
                | "create"
                | "login"
                | "auth"
                | "activate"
                | "setup"
                | "bootstrap"
                | "prepare"
                | "link"
                | "configure"
                | "enable"
                | "use"
                | "venv"
        )
    })
}

/// Whether a setup command's effect outlives the session that ran it:
/// installing or fetching dependencies, configuring the repository, logging
/// in, creating a database, a folder or a link. A later session need not run
/// it again, unlike starting a service, activating an environment,
/// building, migrating or seeding.
pub fn persists(cmd: &str) -> bool {
    if !is_setup(cmd) {
        return false;
    }
    let seg = main_segment(cmd);
    let w: Vec<&str> = seg.split_whitespace().filter(|x| !is_assignment(x)).collect();
    let first = w.first().map_or("", |f| f.rsplit('/').next().unwrap_or(f));
    is_vcs(cmd)
        || matches!(first, "createdb" | "initdb" | "mkdir" | "ln" | "chmod")
        || w.iter().skip(1).take(3).any(|x| PERSISTING.contains(x))
}

/// Sub-commands of setup whose effect outlives the session ([`persists`]).
const PERSISTING: &[&str] = &[
    "install",
    "i",
    "add",
    "sync",
    "restore",
    "get",
    "fetch",
    "init",
    "create",
    "login",
    "auth",
    "link",
    "configure",
    "enable",
];

/// The file a shell command writes, when it patches or writes one (`Some(None)`
/// when the file cannot be told, as for `apply_patch`).
pub fn writes_file(cmd: &str) -> Option<Option<String>> {
    let seg = main_segment(cmd);
    let first = seg.split_whitespace().next().unwrap_or("");
    if matches!(first, "apply_patch" | "patch" | "applypatch") {
        return Some(None);
    }
    let w: Vec<&str> = seg.split_whitespace().collect();
    if (first == "sed" || first == "perl") && w.iter().any(|x| x.starts_with("-i") || x.starts_with("-pi")) {
        return Some(w.last().map(|f| (*f).to_owned()));
    }
    // `… > file` or `… >> file` (not to /dev/null), `tee file`.
    let target = w
        .windows(2)
        .find(|p| matches!(p[0], ">" | ">>") || (p[0] == "tee" && !p[1].starts_with('-')))
        .map(|p| p[1])
        .or_else(|| {
            w.iter().find_map(|x| x.strip_prefix(">>").or_else(|| x.strip_prefix('>'))).filter(|t| !t.is_empty())
        });
    match target {
        Some(t) if !t.starts_with("/dev/") && !t.starts_with('&') => Some(Some(t.trim_matches(['"', '\'']).to_owned())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_ignore_who_runs_it() {
        assert_eq!(goal("npm test"), "test");
        assert_eq!(goal("pnpm test -- --run"), "test");
        assert_eq!(goal("npm run build"), "build");
        assert_eq!(goal("PYTHONPATH=src pytest -x"), "pytest");
        assert_eq!(goal("uv run pytest tests/"), "pytest");
        assert_eq!(goal("python -m pytest"), "pytest");
        assert_eq!(goal("cargo test -p engram"), "cargo test");
        assert_eq!(goal("cd todo-app && npm test"), "test");
        assert_eq!(goal("go test ./..."), "go test");
        assert_eq!(goal("DATABASE_URL=postgres://x cargo sqlx migrate run"), "cargo sqlx");
        assert_eq!(goal("docker compose up -d redis"), "docker compose");
        assert_eq!(goal("docker-compose up -d"), "docker compose");
        assert_eq!(program("CGO_ENABLED=1 go test -race ./..."), Some("go".into()));
        assert_eq!(program("docker-compose up"), Some("docker".into()));
    }

    #[test]
    fn read_only_commands() {
        for c in
            ["ls -la", "cat package.json", "git status", "docker ps", "grep -r x .", "node --version", "git remote -v"]
        {
            assert!(is_read_only(c), "{c}");
        }
        for c in [
            "docker compose up -d redis",
            "pnpm install",
            "sed -i s/a/b/ f",
            "export X=1 && make",
            "git remote set-url origin git@github.com:a/b.git",
        ] {
            assert!(!is_read_only(c), "{c}");
        }
        assert_eq!(writes_file("cat > src/a.rs <<'EOF'"), Some(Some("src/a.rs".into())));
        assert_eq!(writes_file("echo X=1 >> .env"), Some(Some(".env".into())));
        assert_eq!(writes_file("apply_patch *** Begin Patch"), Some(None));
        assert_eq!(writes_file("make build > /dev/null"), None);
        assert_eq!(writes_file("pnpm test 2>&1"), None);
    }
}
