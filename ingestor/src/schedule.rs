//! `install --schedule [cron|systemd]`: run `engram-trainer run --log-file`
//! on a timer, and `uninstall` takes the timer out again, exactly.
//!
//! The hooks already start a run when one is due ([`shared::domain::training::auto`]);
//! a schedule also catches sessions that end with no hook to say so (a
//! session the harness closed without its end hook, which a later scan ends
//! for idleness) and serves users who turn the hooks' runs off
//! (`predictor.auto_train = false`). A scheduled run that finds another one
//! running exits at once.
//!
//! | kind | what is added | how it is removed |
//! |---|---|---|
//! | `cron` | one line in the user's crontab, tagged `# engram: …`, written with `crontab -` | if the crontab is still exactly what install wrote, its bytes before install are put back (`crontab -r` if there was none); otherwise only the tagged line is taken out |
//! | `systemd` | `engram-trainer.service` and `.timer` in `$XDG_CONFIG_HOME/systemd/user` (else `~/.config/systemd/user`), then `systemctl --user daemon-reload` and `enable --now` the timer | `disable --now`, the two files deleted if they are still what install wrote (else left, with a warning), `daemon-reload` |
//!
//! Without a kind, `systemd` when `systemctl --user` answers, else `cron`.
//! One schedule serves every install that asked for it (Claude Code and Codex,
//! user and project scope): `install/schedule.json` in the data home lists
//! them, and the schedule goes when the last of them is uninstalled. Runs
//! every 30 minutes, with the data home of the install (`ENGRAM_HOME`).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use shared::base::paths::Paths;

use crate::error::Error;

/// The tag on Engram's crontab line.
const CRON_TAG: &str = "# engram: added by `engram-ingestor install --schedule`";
/// The unit name.
const UNIT: &str = "engram-trainer";
/// The first line of Engram's unit files.
const UNIT_TAG: &str = "# Added by `engram-ingestor install --schedule`; `engram-ingestor uninstall` removes it.";

/// How runs are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A crontab line.
    Cron,
    /// A systemd user timer.
    Systemd,
}

impl Kind {
    /// From `cron`, `systemd`, or `auto` / empty (systemd when `systemctl --user` answers).
    pub fn parse(s: &str) -> Result<Kind, Error> {
        match s {
            "cron" => Ok(Kind::Cron),
            "systemd" => Ok(Kind::Systemd),
            "" | "auto" => Ok(if systemd_available() { Kind::Systemd } else { Kind::Cron }),
            other => Err(Error::InvalidArgument(format!("unknown schedule {other:?}; one of: cron, systemd"))),
        }
    }
}

fn systemd_available() -> bool {
    Command::new("systemctl")
        .args(["--user", "show-environment"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What install remembers about the schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Record {
    kind: Option<Kind>,
    /// The installs that asked for it (`claude-user`, `codex-project-…`).
    owners: Vec<String>,
    /// cron: the crontab before install (`None`: there was none).
    original: Option<String>,
    /// cron: the crontab install wrote.
    written: String,
    /// systemd: the unit files written, with the blake3 of their text.
    files: Vec<(PathBuf, String)>,
    /// systemd: the directories install created for them, deepest first.
    #[serde(default)]
    dirs: Vec<PathBuf>,
}

fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

fn record_path(paths: &Paths) -> PathBuf {
    paths.home().join("install").join("schedule.json")
}

fn load(paths: &Paths) -> Record {
    fs::read(record_path(paths)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

fn store(paths: &Paths, record: &Record) -> Result<(), Error> {
    let path = record_path(paths);
    if record.owners.is_empty() {
        return match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
            _ => Ok(()),
        };
    }
    let bytes = serde_json::to_vec_pretty(record).unwrap_or_default();
    shared::base::fsutil::atomic_write(&path, &bytes).map_err(|e| Error::io(&path, e))
}

/// What install or uninstall did to the schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Change {
    /// `cron` or `systemd`.
    pub kind: Option<Kind>,
    /// `+ …` / `- …` / `= …` lines.
    pub items: Vec<String>,
    /// Things left alone and why.
    pub warnings: Vec<String>,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(kind) = self.kind {
            writeln!(f, "S schedule ({})", if kind == Kind::Cron { "crontab" } else { "systemd user timer" })?;
        }
        for i in &self.items {
            writeln!(f, "    {i}")?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%=".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn cron_line(paths: &Paths, trainer: &Path) -> String {
    format!(
        "*/30 * * * * ENGRAM_HOME={} {} run --log-file {CRON_TAG}",
        shell_quote(&paths.home().to_string_lossy()),
        shell_quote(&trainer.to_string_lossy())
    )
}

fn crontab_read() -> Result<Option<String>, Error> {
    let out = Command::new("crontab").arg("-l").stdin(Stdio::null()).output().map_err(|e| {
        Error::InvalidArgument(format!("cannot run crontab ({e}); use --schedule systemd, or install cron"))
    })?;
    if out.status.success() {
        return Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("no crontab") {
        return Ok(None);
    }
    Err(Error::InvalidArgument(format!("crontab -l failed: {}", err.trim())))
}

fn crontab_write(text: Option<&str>) -> Result<(), Error> {
    let run = |mut c: Command, input: Option<&str>| -> Result<(), Error> {
        let mut child = c
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::InvalidArgument(format!("cannot run crontab: {e}")))?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).map_err(|e| Error::InvalidArgument(format!("crontab: {e}")))?;
        }
        let out = child.wait_with_output().map_err(|e| Error::InvalidArgument(format!("crontab: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("crontab failed: {}", String::from_utf8_lossy(&out.stderr).trim())))
        }
    };
    match text {
        Some(t) => {
            let mut c = Command::new("crontab");
            c.arg("-");
            run(c, Some(t))
        }
        None => {
            let mut c = Command::new("crontab");
            c.arg("-r");
            run(c, None)
        }
    }
}

/// The crontab without Engram's lines.
fn without_ours(text: &str) -> String {
    text.split_inclusive('\n').filter(|l| !l.trim_end().ends_with(CRON_TAG)).collect()
}

fn systemd_dir() -> Result<PathBuf, Error> {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
    match (var("XDG_CONFIG_HOME"), var("HOME")) {
        (Some(x), _) => Ok(x.join("systemd/user")),
        (None, Some(h)) => Ok(h.join(".config/systemd/user")),
        (None, None) => Err(Error::InvalidArgument("HOME is not set".into())),
    }
}

fn units(paths: &Paths, trainer: &Path) -> [(String, String); 2] {
    let service = format!(
        "{UNIT_TAG}\n[Unit]\nDescription=Engram: label ended sessions and train the memory predictor\n\n\
         [Service]\nType=oneshot\nEnvironment=ENGRAM_HOME={}\nExecStart={} run --log-file\nNice=10\n",
        paths.home().display(),
        shell_quote(&trainer.to_string_lossy())
    );
    let timer = format!(
        "{UNIT_TAG}\n[Unit]\nDescription=Run engram-trainer every 30 minutes\n\n\
         [Timer]\nOnBootSec=10min\nOnUnitActiveSec=30min\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n"
    );
    [(format!("{UNIT}.service"), service), (format!("{UNIT}.timer"), timer)]
}

fn systemctl(args: &[&str]) -> Result<(), String> {
    let out = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run systemctl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("systemctl --user {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Adds the schedule for `owner` (or only records `owner` when it exists).
pub fn install(paths: &Paths, kind: Kind, owner: &str, trainer: &Path, dry_run: bool) -> Result<Change, Error> {
    if !trainer.is_file() {
        return Err(Error::InvalidArgument(format!(
            "{} not found: build it (cargo build --profile dist) to schedule training",
            trainer.display()
        )));
    }
    let mut record = load(paths);
    let mut change = Change { kind: Some(kind), ..Change::default() };
    if let Some(existing) = record.kind.filter(|k| *k != kind) {
        change.kind = Some(existing);
        change.warnings.push(format!(
            "a {} schedule is already installed; kept (uninstall every install that asked for it to change kind)",
            if existing == Kind::Cron { "cron" } else { "systemd" }
        ));
    } else {
        match kind {
            Kind::Cron => install_cron(&cron_line(paths, trainer), &mut record, &mut change, dry_run)?,
            Kind::Systemd => install_systemd(&units(paths, trainer), &mut record, &mut change, dry_run)?,
        }
        record.kind = Some(kind);
    }
    if !record.owners.iter().any(|o| o == owner) {
        record.owners.push(owner.to_owned());
    }
    if !dry_run {
        store(paths, &record)?;
    }
    Ok(change)
}

/// Adds `line` to the user's crontab (or says it is there).
fn install_cron(line: &str, record: &mut Record, change: &mut Change, dry_run: bool) -> Result<(), Error> {
    let current = crontab_read()?;
    let base = current.as_deref().map(without_ours).unwrap_or_default();
    let mut next = base.clone();
    if !next.is_empty() && !next.ends_with('\n') {
        next.push('\n');
    }
    next.push_str(line);
    next.push('\n');
    if current.as_deref() == Some(next.as_str()) {
        change.items.push(format!("= crontab: {line}"));
        return Ok(());
    }
    if current.as_deref().is_some_and(|c| c != base) {
        change.items.push("- crontab: Engram's older line".to_owned());
    }
    change.items.push(format!("+ crontab: {line}"));
    if dry_run {
        return Ok(());
    }
    crontab_write(Some(&next))?;
    // The bytes before the first install stay the original; a crontab
    // edited since install last wrote it has no original to restore.
    if record.kind.is_none() {
        record.original = current;
    } else if current.as_deref() != Some(record.written.as_str()) {
        record.original = None;
    }
    record.written = next;
    Ok(())
}

/// Writes the service and timer `units` and enables the timer (or says they
/// are there); a failed enable takes back everything it wrote.
fn install_systemd(
    units: &[(String, String); 2],
    record: &mut Record,
    change: &mut Change,
    dry_run: bool,
) -> Result<(), Error> {
    let dir = systemd_dir()?;
    let mut files = Vec::new();
    let mut same = true;
    for (name, text) in units {
        let path = dir.join(name);
        match fs::read_to_string(&path) {
            Ok(t) if t == *text => {}
            Ok(t) if !t.starts_with(UNIT_TAG) => {
                return Err(Error::InvalidArgument(format!(
                    "{} exists and is not Engram's; remove it or use --schedule cron",
                    path.display()
                )));
            }
            _ => same = false,
        }
        files.push((path, hash(text)));
    }
    if same {
        change.items.push(format!("= {} and {}", files[0].0.display(), files[1].0.display()));
        return Ok(());
    }
    for (f, _) in &files {
        change.items.push(format!("+ {}", f.display()));
    }
    change.items.push(format!("+ systemctl --user enable --now {UNIT}.timer"));
    if dry_run {
        return Ok(());
    }
    let missing: Vec<PathBuf> = dir.ancestors().take_while(|d| !d.exists()).map(Path::to_path_buf).collect();
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    for ((_, text), (path, _)) in units.iter().zip(&files) {
        shared::base::fsutil::atomic_write(path, text.as_bytes()).map_err(|e| Error::io(path, e))?;
    }
    let enabled =
        systemctl(&["daemon-reload"]).and_then(|()| systemctl(&["enable", "--now", &format!("{UNIT}.timer")]));
    if let Err(why) = enabled {
        for (f, _) in &files {
            let _ = fs::remove_file(f);
        }
        for d in &missing {
            let _ = fs::remove_dir(d);
        }
        let _ = systemctl(&["daemon-reload"]);
        return Err(Error::InvalidArgument(format!("{why}; nothing was installed (try --schedule cron)")));
    }
    record.files = files;
    if record.dirs.is_empty() {
        record.dirs = missing;
    }
    Ok(())
}

/// Removes `owner`'s claim on the schedule, and the schedule itself when no
/// install asks for it any more (see the module documentation).
pub fn uninstall(paths: &Paths, owner: &str, dry_run: bool) -> Result<Option<Change>, Error> {
    let mut record = load(paths);
    if !record.owners.iter().any(|o| o == owner) {
        return Ok(None);
    }
    record.owners.retain(|o| o != owner);
    let mut change = Change { kind: record.kind, ..Change::default() };
    if !record.owners.is_empty() {
        change.items.push(format!("= kept for {}", record.owners.join(", ")));
    } else {
        match record.kind {
            Some(Kind::Cron) => uninstall_cron(&record, &mut change, dry_run)?,
            Some(Kind::Systemd) => uninstall_systemd(&record, &mut change, dry_run),
            None => {}
        }
        record = Record::default();
    }
    if !dry_run {
        store(paths, &record)?;
    }
    Ok(Some(change))
}

fn uninstall_cron(record: &Record, change: &mut Change, dry_run: bool) -> Result<(), Error> {
    let Some(current) = crontab_read()? else {
        change.items.push("= crontab: none".to_owned());
        return Ok(());
    };
    let next = if current == record.written {
        change.items.push("- crontab: restored to its lines before install".to_owned());
        record.original.clone()
    } else {
        let rest = without_ours(&current);
        if rest == current {
            change.items.push("= crontab: Engram's line is already gone".to_owned());
            return Ok(());
        }
        change.items.push("- crontab: Engram's line (the rest was edited since install and is kept)".to_owned());
        Some(rest)
    };
    if !dry_run {
        match next {
            Some(text) => crontab_write(Some(&text))?,
            None => crontab_write(None)?,
        }
    }
    Ok(())
}

fn uninstall_systemd(record: &Record, change: &mut Change, dry_run: bool) {
    change.items.push(format!("- systemctl --user disable --now {UNIT}.timer"));
    if !dry_run && let Err(why) = systemctl(&["disable", "--now", &format!("{UNIT}.timer")]) {
        change.warnings.push(why);
    }
    for (f, written) in &record.files {
        match fs::read_to_string(f) {
            Ok(t) if hash(&t) == *written => {
                change.items.push(format!("- {}", f.display()));
                if !dry_run && let Err(e) = fs::remove_file(f) {
                    change.warnings.push(format!("cannot remove {}: {e}", f.display()));
                }
            }
            Ok(_) => change.warnings.push(format!("{} was edited since install; left in place", f.display())),
            Err(_) => {}
        }
    }
    // The directories install created, when nothing else is in them now.
    if !dry_run {
        for d in &record.dirs {
            let _ = fs::remove_dir(d);
        }
    }
    if !dry_run && let Err(why) = systemctl(&["daemon-reload"]) {
        change.warnings.push(why);
    }
}
