//! `engram-ingestor install` / `uninstall` end to end, on copies of
//! real-looking settings (`tests/fixtures/install/`: a Claude Code home with
//! its own hooks, MCP servers and state, a Codex home with hooks, a commented
//! `config.toml` and another MCP server): install merges, installing again
//! changes nothing, uninstall puts back the exact bytes; the installed hook
//! commands work when a shell runs them.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::World;
use serde_json::{Value, json};

const ENGRAM_EVENTS: [&str; 7] =
    ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd", "PreCompact"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/install").join(name)
}

/// Every file under `dir` (skipping the data home), relative path → bytes;
/// directories are listed too (as empty entries ending in `/`).
fn snapshot(w: &World, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, skip: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p == skip {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if p.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(root, &p, skip, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &w.home(), &mut out);
    out
}

/// The ingestor with the harness directories at their defaults under `HOME`
/// (`~/.claude`, `~/.claude.json`, `~/.codex`), where the fixtures are.
fn install_cmd(w: &World, args: &[&str]) -> Command {
    common::scorer_bin(); // install wants both binaries side by side
    let mut c = w.cmd(args);
    c.env_remove("CLAUDE_CONFIG_DIR").env_remove("CODEX_HOME");
    c
}

fn run(w: &World, args: &[&str]) -> String {
    run_cmd(install_cmd(w, args), args)
}

/// Runs `cmd`, which must succeed; its stdout.
fn run_cmd(mut cmd: Command, args: &[&str]) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn report(w: &World, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&run(w, &args)).unwrap()
}

/// `file name → status` of a report.
fn statuses(r: &Value) -> BTreeMap<String, String> {
    r["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = Path::new(f["path"].as_str().unwrap()).file_name().unwrap().to_str().unwrap().to_owned();
            (name, f["status"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A JSON document's object keys in the file's order (`serde_json::Value`
/// sorts them).
enum Ordered {
    Obj(Vec<(String, Ordered)>),
    Other,
}

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Ordered>()? {
                    entries.push(entry);
                }
                Ok(Ordered::Obj(entries))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Ordered::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of the object at `pointer` (`/a/b`) in the file, in order.
fn keys_in_order(path: &Path, pointer: &str) -> Vec<String> {
    let mut node: Ordered = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for part in pointer.split('/').filter(|p| !p.is_empty()) {
        let Ordered::Obj(entries) = node else { panic!("{pointer}: not an object") };
        node = entries.into_iter().find(|(k, _)| k == part).unwrap().1;
    }
    match node {
        Ordered::Obj(entries) => entries.into_iter().map(|(k, _)| k).collect(),
        Ordered::Other => panic!("{pointer}: not an object"),
    }
}

/// Every hook command of `settings.hooks`, event → commands in order.
fn hook_commands(settings: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for (event, groups) in settings["hooks"].as_object().unwrap() {
        let cmds = groups
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap().iter().map(|h| h["command"].as_str().unwrap().to_owned()))
            .collect();
        out.insert(event.clone(), cmds);
    }
    out
}

/// Checks a merged hooks file: the user's hooks first and unchanged, then
/// one Engram handler per event for `harness`.
fn check_hooks(before_file: &Path, after_file: &Path, harness: &str) {
    let (before, after) = (&read_json(before_file), &read_json(after_file));
    let (b, a) = (hook_commands(before), hook_commands(after));
    for (event, cmds) in &b {
        assert_eq!(&a[event][..cmds.len()], &cmds[..], "{event}: the user's hooks stay first and unchanged");
    }
    for event in ENGRAM_EVENTS {
        let ours: Vec<&String> = a[event].iter().filter(|c| c.contains("engram-")).collect();
        assert_eq!(ours.len(), 1, "{event}: {:?}", a[event]);
        let bin = if ["SessionStart", "UserPromptSubmit", "PreToolUse"].contains(&event) {
            "engram-scorer"
        } else {
            "engram-ingestor"
        };
        assert!(ours[0].contains(bin) && ours[0].ends_with(&format!("--harness {harness}")), "{}", ours[0]);
    }
    let user_keys = keys_in_order(before_file, "");
    let after_keys = keys_in_order(after_file, "");
    assert_eq!(after_keys[..user_keys.len()], user_keys[..], "top-level keys keep their order");
    let added: Vec<&str> = after_keys[user_keys.len()..].iter().map(String::as_str).collect();
    let plugin: &[&str] = if harness == "claude" { &["extraKnownMarketplaces", "enabledPlugins"] } else { &[] };
    assert_eq!(added, plugin, "only the plugin's keys are added at the end");
    if harness == "claude" {
        assert_eq!(after["enabledPlugins"]["engram@engram"], true);
        assert_eq!(after["extraKnownMarketplaces"]["engram"]["source"]["source"], "directory");
    }
    let user_events = keys_in_order(before_file, "/hooks");
    assert_eq!(keys_in_order(after_file, "/hooks")[..user_events.len()], user_events[..], "events keep their order");
    for k in user_keys.iter().filter(|k| *k != "hooks") {
        assert_eq!(after[k], before[k], "{k} is untouched");
    }
}

/// The SessionStart command install wrote, run by a shell as the harness
/// does: a JSON object with `additionalContext` comes back.
fn run_installed_session_start(w: &World, settings: &Value, input: &Value) -> Output {
    let cmd = hook_commands(settings)["SessionStart"].iter().find(|c| c.contains("engram-scorer")).unwrap().clone();
    let mut child = tests::isolated("sh", w.root())
        .args(["-c", &cmd])
        .env_remove("ENGRAM_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn seed_one_memory(w: &World) {
    w.ok(&["memory", "add", "--type", "convention", "Always run the linter before committing."]);
}

#[test]
fn claude_install_merges_twice_is_a_no_op_and_uninstall_restores_every_byte() {
    let w = World::new();
    w.copy(&fixture("claude-home"), w.root());
    let before = snapshot(&w, w.root());
    let state_before = read_json(&w.root().join(".claude.json"));

    // Install: prints what changed, merges both files.
    let text = run(&w, &["install", "claude"]);
    assert!(text.contains("settings.json") && text.contains(".claude.json"), "{text}");
    assert!(text.contains("modified"), "{text}");
    assert!(text.contains("SessionStart") && text.contains("mcpServers.engram"), "{text}");
    let settings = read_json(&w.root().join(".claude/settings.json"));
    check_hooks(&fixture("claude-home/.claude/settings.json"), &w.root().join(".claude/settings.json"), "claude");
    let state = read_json(&w.root().join(".claude.json"));
    let state_keys = keys_in_order(&fixture("claude-home/.claude.json"), "");
    assert_eq!(keys_in_order(&w.root().join(".claude.json"), ""), state_keys, "~/.claude.json keeps its keys in order");
    for k in state_keys.iter().filter(|k| *k != "mcpServers") {
        assert_eq!(state[k], state_before[k], "{k} is untouched");
    }
    let servers = &state["mcpServers"];
    assert_eq!(keys_in_order(&w.root().join(".claude.json"), "/mcpServers"), ["github", "sentry", "engram"]);
    assert_eq!(servers["github"], state_before["mcpServers"]["github"]);
    let engram = &servers["engram"];
    assert!(engram["command"].as_str().unwrap().ends_with("engram-scorer"), "{engram}");
    assert_eq!(engram["args"], json!(["mcp"]));
    let installed = snapshot(&w, w.root());
    assert_ne!(installed, before);
    // The plugin's marketplace is in the data home, where the settings point.
    let market = PathBuf::from(settings["extraKnownMarketplaces"]["engram"]["source"]["path"].as_str().unwrap());
    assert!(market.starts_with(w.home()), "{}", market.display());
    let manifest = read_json(&market.join(".claude-plugin/marketplace.json"));
    let plugin = market.join(manifest["plugins"][0]["source"].as_str().unwrap());
    assert_eq!(read_json(&plugin.join(".claude-plugin/plugin.json"))["name"], "engram");
    for skill in ["remember", "forget", "recall", "stash", "resume", "checkpoint", "resolve"] {
        let text = std::fs::read_to_string(plugin.join(format!("skills/{skill}/SKILL.md"))).unwrap();
        assert!(text.starts_with(&format!("---\nname: {skill}\n")), "{text}");
    }

    // The installed hook works when the shell runs it.
    seed_one_memory(&w);
    let out = run_installed_session_start(
        &w,
        &settings,
        &json!({"session_id": "s1", "transcript_path": "/tmp/s1.jsonl", "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "startup"}),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("linter"), "{v}");

    // Install again: nothing changes.
    let again = report(&w, &["install", "claude"]);
    assert!(statuses(&again).values().all(|s| s == "unchanged"), "{again}");
    assert_eq!(snapshot(&w, w.root()), installed);

    // Uninstall: byte-identical to before, and says so; the plugin's files are gone.
    let text = run(&w, &["uninstall", "claude"]);
    assert!(text.contains("restored"), "{text}");
    assert_eq!(snapshot(&w, w.root()), before);
    assert!(!market.exists(), "the plugin's marketplace is removed");
    assert!(!w.home().join("install/claude-user.json").exists());
    // Uninstalling again is harmless.
    let r = report(&w, &["uninstall", "claude"]);
    assert!(statuses(&r).values().all(|s| s == "unchanged"), "{r}");
    assert_eq!(snapshot(&w, w.root()), before);
}

#[test]
fn codex_install_keeps_comments_and_other_servers_and_uninstall_restores_every_byte() {
    let w = World::new();
    w.copy(&fixture("codex-home"), w.root());
    let before = snapshot(&w, w.root());
    let config_before = std::fs::read_to_string(w.root().join(".codex/config.toml")).unwrap();

    let r = report(&w, &["install", "codex"]);
    assert_eq!(
        statuses(&r),
        BTreeMap::from([("config.toml".into(), "modified".into()), ("hooks.json".into(), "modified".into())])
    );
    check_hooks(&fixture("codex-home/.codex/hooks.json"), &w.root().join(".codex/hooks.json"), "codex");
    let config = std::fs::read_to_string(w.root().join(".codex/config.toml")).unwrap();
    for line in config_before.lines() {
        assert!(config.lines().any(|l| l == line), "line {line:?} lost:\n{config}");
    }
    let parsed: toml::Table = config.parse().unwrap();
    assert_eq!(parsed["features"]["codex_hooks"].as_bool(), Some(true));
    assert_eq!(parsed["features"]["web_search_request"].as_bool(), Some(true));
    assert_eq!(parsed["features"]["unified_exec"].as_bool(), Some(false));
    assert_eq!(parsed["mcp_servers"]["github"]["command"].as_str(), Some("npx"));
    assert!(parsed["mcp_servers"]["engram"]["command"].as_str().unwrap().ends_with("engram-scorer"));
    assert_eq!(parsed["model"].as_str(), Some("gpt-5-codex"), "top-level keys stay top-level");
    let installed = snapshot(&w, w.root());

    let again = report(&w, &["install", "codex"]);
    assert!(statuses(&again).values().all(|s| s == "unchanged"), "{again}");
    assert_eq!(snapshot(&w, w.root()), installed);

    let r = report(&w, &["uninstall", "codex"]);
    assert!(statuses(&r).values().all(|s| s == "restored"), "{r}");
    assert_eq!(snapshot(&w, w.root()), before);
}

#[test]
fn dry_run_prints_the_changes_and_writes_nothing() {
    let w = World::new();
    w.copy(&fixture("claude-home"), w.root());
    w.copy(&fixture("codex-home"), w.root());
    let before = snapshot(&w, w.root());
    for harness in ["claude", "codex"] {
        let text = run(&w, &["install", harness, "--dry-run"]);
        assert!(text.contains("modified") && text.contains("SessionStart"), "{text}");
        let r = report(&w, &["install", harness, "--dry-run"]);
        assert_eq!(r["dry_run"], true);
        assert!(statuses(&r).iter().all(|(f, s)| s == "modified" || (f == "claude-plugin" && s == "created")), "{r}");
    }
    assert_eq!(snapshot(&w, w.root()), before);
    assert!(!w.home().join("install").exists(), "no install record");

    run(&w, &["install", "claude"]);
    let installed = snapshot(&w, w.root());
    let r = report(&w, &["uninstall", "claude", "--dry-run"]);
    assert!(statuses(&r).iter().all(|(f, s)| s == "restored" || (f == "claude-plugin" && s == "deleted")), "{r}");
    assert_eq!(snapshot(&w, w.root()), installed);
}

#[test]
fn project_scope_creates_its_files_and_uninstall_leaves_the_project_as_it_was() {
    let w = World::new();
    let project = w.root().join("work/webapp");
    w.write(&project.join("src/main.ts"), b"console.log('hi')\n");
    w.write(&project.join(".mcp.json"), b"{\n  \"mcpServers\": {\n    \"db\": {\"command\": \"pg-mcp\"}\n  }\n}\n");
    let before = snapshot(&w, &project);
    let p = project.to_str().unwrap();
    for harness in ["claude", "codex"] {
        let r = report(&w, &["install", harness, "--project", p]);
        assert!(statuses(&r).values().all(|s| s == "created" || s == "modified"), "{r}");
    }
    assert!(project.join(".claude/settings.json").is_file() && project.join(".codex/hooks.json").is_file());
    assert_eq!(keys_in_order(&project.join(".mcp.json"), "/mcpServers"), ["db", "engram"]);
    assert!(!w.root().join(".claude").exists() && !w.root().join(".codex").exists(), "the user scope is untouched");
    for harness in ["claude", "codex"] {
        run(&w, &["uninstall", harness, "--project", p]);
    }
    assert_eq!(snapshot(&w, &project), before, "created files and directories are gone, .mcp.json restored");
}

#[test]
fn a_project_that_does_not_exist_is_refused_and_not_created() {
    let w = World::new();
    let missing = w.root().join("work/typo");
    for harness in ["claude", "codex"] {
        let out = install_cmd(&w, &["install", harness, "--project", missing.to_str().unwrap()]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "an invalid argument");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no such directory"), "{stderr}");
    }
    assert!(!missing.exists(), "nothing was created");
}

#[test]
fn uninstall_after_the_user_edited_the_files_removes_only_engram() {
    let w = World::new();
    w.copy(&fixture("claude-home"), w.root());
    w.copy(&fixture("codex-home"), w.root());
    run(&w, &["install", "claude"]);
    run(&w, &["install", "codex"]);

    // The user adds a permission and a Codex profile after installing.
    let settings_path = w.root().join(".claude/settings.json");
    let edited = std::fs::read_to_string(&settings_path)
        .unwrap()
        .replace("\"Bash(git status)\",", "\"Bash(git status)\",\n      \"Bash(git diff)\",");
    std::fs::write(&settings_path, &edited).unwrap();
    let config_path = w.root().join(".codex/config.toml");
    w.append(&config_path, b"\n[profiles.slow]\nmodel = \"gpt-5\"\n");

    let r = report(&w, &["uninstall", "claude"]);
    assert_eq!(statuses(&r)["settings.json"], "modified", "{r}");
    assert_eq!(statuses(&r)[".claude.json"], "restored", "{r}");
    let settings = read_json(&settings_path);
    assert!(settings.get("enabledPlugins").is_none() && settings.get("extraKnownMarketplaces").is_none(), "{settings}");
    assert!(settings["permissions"]["allow"].as_array().unwrap().contains(&json!("Bash(git diff)")));
    let commands = hook_commands(&settings);
    assert!(commands.values().flatten().all(|c| !c.contains("engram-")), "{commands:?}");
    assert_eq!(commands, hook_commands(&read_json(&fixture("claude-home/.claude/settings.json"))));

    run(&w, &["uninstall", "codex"]);
    let config = std::fs::read_to_string(&config_path).unwrap();
    assert!(config.contains("[profiles.slow]") && !config.contains("engram"), "{config}");
    let original = std::fs::read_to_string(fixture("codex-home/.codex/config.toml")).unwrap();
    assert!(config.starts_with(original.trim_end()), "{config}");
    assert_eq!(
        std::fs::read(w.root().join(".codex/hooks.json")).unwrap(),
        std::fs::read(fixture("codex-home/.codex/hooks.json")).unwrap()
    );
}

/// Fake `crontab` and `systemctl` for the schedule tests: the crontab lives
/// in `<tools>/crontab.txt`; systemctl logs its arguments to
/// `<tools>/systemctl.log` and answers `show-environment` when
/// `<tools>/systemd` exists. Returns the tools directory.
fn fake_tools(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let t = tools.display();
    let crontab = format!(
        "#!/bin/sh\nf={t}/crontab.txt\ncase \"$1\" in\n  -l) if [ -f \"$f\" ]; then cat \"$f\"; else echo 'no crontab for me' >&2; exit 1; fi;;\n  \
         -r) rm -f \"$f\";;\n  -) cat > \"$f\";;\n  *) exit 2;;\nesac\n"
    );
    let systemctl = format!(
        "#!/bin/sh\necho \"$*\" >> {t}/systemctl.log\nif [ \"$2\" = show-environment ] && [ ! -f {t}/systemd ]; then exit 1; fi\nexit 0\n"
    );
    for (name, text) in [("crontab", crontab), ("systemctl", systemctl)] {
        let p = tools.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    tools
}

fn with_tools(w: &World, tools: &Path, args: &[&str]) -> String {
    tests::build_bin("trainer", "engram-trainer"); // --schedule wants it beside the others
    let mut c = install_cmd(w, args);
    c.env("PATH", format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default()));
    run_cmd(c, args)
}

#[test]
fn install_schedule_cron_adds_one_line_and_uninstall_restores_the_crontab() {
    let w = World::new();
    let scratch = tempfile::tempdir().unwrap();
    let tools = fake_tools(scratch.path());
    let crontab = tools.join("crontab.txt");
    let mine = "MAILTO=me@example.com\n# nightly\n0 3 * * * /usr/local/bin/backup.sh\n";
    std::fs::write(&crontab, mine).unwrap();

    let out = with_tools(&w, &tools, &["install", "claude", "--schedule", "cron"]);
    assert!(out.contains("S schedule (crontab)"), "{out}");
    let text = std::fs::read_to_string(&crontab).unwrap();
    assert!(text.starts_with(mine), "the user's lines stay first and unchanged:\n{text}");
    let ours: Vec<&str> = text.lines().filter(|l| l.contains("engram-trainer")).collect();
    assert_eq!(ours.len(), 1, "{text}");
    assert!(ours[0].starts_with("*/30 * * * * ENGRAM_HOME=") && ours[0].contains(" run --log-file # engram"), "{text}");
    // A second install (another harness) shares it; nothing changes.
    with_tools(&w, &tools, &["install", "codex", "--schedule", "cron"]);
    assert_eq!(std::fs::read_to_string(&crontab).unwrap(), text);
    // Uninstalling one keeps it for the other; the last one restores the bytes.
    let out = with_tools(&w, &tools, &["uninstall", "claude"]);
    assert!(out.contains("kept for codex-user"), "{out}");
    assert_eq!(std::fs::read_to_string(&crontab).unwrap(), text);
    with_tools(&w, &tools, &["uninstall", "codex"]);
    assert_eq!(std::fs::read_to_string(&crontab).unwrap(), mine, "restored byte for byte");

    // No crontab before: none after.
    std::fs::remove_file(&crontab).unwrap();
    with_tools(&w, &tools, &["install", "claude", "--schedule", "cron"]);
    assert!(crontab.exists());
    with_tools(&w, &tools, &["uninstall", "claude"]);
    assert!(!crontab.exists(), "crontab -r: there was none before install");

    // Edited since install: only Engram's line goes, the user's new one stays.
    std::fs::write(&crontab, mine).unwrap();
    with_tools(&w, &tools, &["install", "claude", "--schedule", "cron"]);
    let mut edited = std::fs::read_to_string(&crontab).unwrap();
    edited.push_str("15 * * * * /usr/local/bin/sync.sh\n");
    std::fs::write(&crontab, &edited).unwrap();
    with_tools(&w, &tools, &["uninstall", "claude"]);
    assert_eq!(std::fs::read_to_string(&crontab).unwrap(), format!("{mine}15 * * * * /usr/local/bin/sync.sh\n"));
}

#[test]
fn install_schedule_systemd_writes_a_user_timer_and_uninstall_removes_it() {
    let w = World::new();
    let scratch = tempfile::tempdir().unwrap();
    let tools = fake_tools(scratch.path());
    std::fs::write(tools.join("systemd"), "").unwrap();
    let before = snapshot(&w, w.root());
    // No kind given: systemd, since `systemctl --user` answers.
    let out = with_tools(&w, &tools, &["install", "claude", "--schedule"]);
    assert!(out.contains("S schedule (systemd user timer)"), "{out}");
    let units = w.root().join(".config/systemd/user");
    let service = std::fs::read_to_string(units.join("engram-trainer.service")).unwrap();
    let timer = std::fs::read_to_string(units.join("engram-trainer.timer")).unwrap();
    assert!(service.contains("ExecStart=") && service.contains("engram-trainer run --log-file"), "{service}");
    assert!(service.contains(&format!("Environment=ENGRAM_HOME={}", w.home().display())), "{service}");
    assert!(timer.contains("OnUnitActiveSec=30min"), "{timer}");
    let log = std::fs::read_to_string(tools.join("systemctl.log")).unwrap();
    assert!(log.contains("--user daemon-reload") && log.contains("--user enable --now engram-trainer.timer"), "{log}");
    assert!(!tools.join("crontab.txt").exists(), "no crontab touched");

    with_tools(&w, &tools, &["uninstall", "claude"]);
    let log = std::fs::read_to_string(tools.join("systemctl.log")).unwrap();
    assert!(log.contains("--user disable --now engram-trainer.timer"), "{log}");
    // The units and the directories install created for them are gone; the
    // Claude Code settings are back to what they were.
    assert_eq!(snapshot(&w, w.root()), before);
}
