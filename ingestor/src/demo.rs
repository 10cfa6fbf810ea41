//! The built-in demo corpus for the first run: twelve agent sessions on two
//! made-up projects (`webapp`, TypeScript with pnpm and vitest; `api`, Rust
//! with sqlx), written as real Claude Code transcripts and Codex rollouts,
//! then eighteen short routine sessions on `webapp`.
//!
//! The twelve hold what Engram learns from: corrections ("No, don't use npm
//! here"), stated conventions ("Always run pnpm lint before committing"),
//! commands that fail several times before they succeed, and errors the agent
//! explains.
//!
//! The routines carry a **pattern of this user's that the baseline cannot
//! see**, for the predictor to learn: from day 3 to day 11, a 09:00 session
//! works on the tests and uses the Redis and lint lessons, an 18:00 session
//! works on the API and uses the codegen and zod lessons, and neither says so
//! in its prompt ("Morning, picking up where I left off"). Which lessons a
//! session needs depends only on the hour. Everything is generated in code from the scripts below; the
//! only input is the base time, so the same base gives the same bytes (and
//! ingesting the corpus twice changes nothing).
//!
//! Layout under the given directory, as the harnesses write it:
//! `claude/projects/-home-demo-<project>/<session>.jsonl` and
//! `codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<session>.jsonl`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use shared::base::time::Ts;

use crate::error::Error;

/// Which harness wrote a demo session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemoHarness {
    /// A Claude Code transcript.
    Claude,
    /// A Codex rollout.
    Codex,
}

/// One step of a scripted session.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The user types.
    User(&'static str),
    /// The agent answers.
    Say(&'static str),
    /// A shell command and its output; `code` is its exit status.
    Run { cmd: &'static str, out: &'static str, code: i32 },
    /// The agent reads a file (relative to the project).
    Read(&'static str),
    /// The agent edits a file: (file, old, new).
    Edit(&'static str, &'static str, &'static str),
}

use Step::{Edit, Read, Run, Say, User};

struct Script<'a> {
    name: &'a str,
    harness: DemoHarness,
    project: &'static str,
    day: i64,
    hour: i64,
    steps: &'a [Step],
}

const SCRIPTS: &[Script<'static>] = &[
    Script {
        name: "health-endpoint",
        harness: DemoHarness::Claude,
        project: "webapp",
        day: 0,
        hour: 9,
        steps: &[
            User("Add a /health endpoint to src/server.ts that reports the database status."),
            Say("I'll read the server file first."),
            Read("src/server.ts"),
            Run { cmd: "npm install express-healthcheck", out: "added 1 package in 2s", code: 0 },
            User("No, don't use npm here. We use pnpm in this repo, the lockfile is pnpm-lock.yaml."),
            Say("Understood, switching to pnpm."),
            Run { cmd: "pnpm add express-healthcheck", out: "Progress: resolved 1, added 1, done", code: 0 },
            Edit("src/server.ts", "app.listen(port);", "app.get('/health', health);\napp.listen(port);"),
            Run {
                cmd: "pnpm test",
                out: "Error: Cannot find module 'vitest'\nRequire stack: vitest.config.ts",
                code: 1,
            },
            Run {
                cmd: "pnpm test",
                out: "Error: Cannot find module 'vitest'\nRequire stack: vitest.config.ts",
                code: 1,
            },
            Say(
                "The problem is that vitest is not installed; it needs to be added as a dev dependency before the tests can run.",
            ),
            Run { cmd: "pnpm add -D vitest", out: "devDependencies: + vitest 3.2.4", code: 0 },
            Run { cmd: "pnpm test", out: "Test Files  8 passed (8)\nTests  41 passed (41)", code: 0 },
            User("Always run pnpm lint before committing, CI rejects anything with lint errors."),
            Run { cmd: "pnpm lint", out: "All files pass linting.", code: 0 },
            Say("The /health endpoint is in place, tests and lint pass."),
        ],
    },
    Script {
        name: "migration-index",
        harness: DemoHarness::Codex,
        project: "api",
        day: 1,
        hour: 10,
        steps: &[
            User("Add a migration that creates an index on users.email."),
            Say("I'll add a sqlx migration and run it."),
            Edit("migrations/0007_users_email_index.sql", "", "CREATE INDEX users_email_idx ON users (email);"),
            Run { cmd: "cargo sqlx migrate run", out: "error: DATABASE_URL must be set", code: 1 },
            Run { cmd: "cargo sqlx migrate run", out: "error: DATABASE_URL must be set", code: 1 },
            Say(
                "The migration requires DATABASE_URL; it has to be exported from .env.example before sqlx can connect.",
            ),
            Run {
                cmd: "DATABASE_URL=postgres://localhost/api_dev cargo sqlx migrate run",
                out: "Applied 7/migrate users email index (12.3ms)",
                code: 0,
            },
            User("Never run migrations against the production database from a dev machine."),
            Say("Noted: migrations only ever run against api_dev locally."),
        ],
    },
    Script {
        name: "flaky-login",
        harness: DemoHarness::Claude,
        project: "webapp",
        day: 1,
        hour: 14,
        steps: &[
            User("Fix the flaky login test in tests/login.spec.ts, it fails about one run in five."),
            Read("tests/login.spec.ts"),
            Run {
                cmd: "pnpm test tests/login.spec.ts",
                out: "Error: Timeout of 5000ms exceeded in login.spec.ts",
                code: 1,
            },
            Say("It turns out the session cache TTL is shorter than the test in CI, so the login expires mid-test."),
            Read("src/session/cache.ts"),
            Edit("src/session/cache.ts", "ttlMs: 2_000", "ttlMs: process.env.SESSION_TTL_MS ?? 60_000"),
            Run { cmd: "pnpm test tests/login.spec.ts", out: "Tests  6 passed (6)", code: 0 },
            User("Never edit the generated files in src/gen/; regenerate them with pnpm codegen instead."),
            Say("I left src/gen untouched; only src/session/cache.ts changed."),
        ],
    },
    Script {
        name: "rate-limit",
        harness: DemoHarness::Codex,
        project: "webapp",
        day: 2,
        hour: 11,
        steps: &[
            User("Add rate limiting to the /api/login route."),
            Edit("src/routes/login.ts", "router.post('/login', login);", "router.post('/login', limiter, login);"),
            Run { cmd: "pnpm test", out: "Error: Redis connection refused at 127.0.0.1:6379", code: 1 },
            Run { cmd: "pnpm test", out: "Error: Redis connection refused at 127.0.0.1:6379", code: 1 },
            Say(
                "The issue is that the rate limiter needs a running Redis; start it with docker compose up -d redis first.",
            ),
            Run { cmd: "docker compose up -d redis", out: "Container webapp-redis-1  Started", code: 0 },
            Run { cmd: "pnpm test", out: "Tests  44 passed (44)", code: 0 },
            User("We use zod for all request validation, not hand-written checks."),
            Edit("src/routes/login.ts", "if (!body.email)", "const body = LoginSchema.parse(req.body)"),
            Say("Switched the login route to a zod schema."),
        ],
    },
    Script {
        name: "env-docs",
        harness: DemoHarness::Claude,
        project: "webapp",
        day: 3,
        hour: 9,
        steps: &[
            User("Document the new SESSION_TTL_MS and REDIS_URL environment variables in the README."),
            Read("README.md"),
            Edit("README.md", "## Configuration", "## Configuration\n\n- SESSION_TTL_MS\n- REDIS_URL"),
            User("Actually, the env vars are documented in docs/config.md, not the README."),
            Edit("docs/config.md", "| Variable |", "| SESSION_TTL_MS | session cache TTL |\n| Variable |"),
            Say("Moved the documentation to docs/config.md and reverted the README."),
            User("Always use pnpm, never npm or yarn, in this repo."),
        ],
    },
    Script {
        name: "retry-backoff",
        harness: DemoHarness::Claude,
        project: "api",
        day: 4,
        hour: 10,
        steps: &[
            User("Make the retry logic in src/client.rs use exponential backoff with jitter."),
            Read("src/client.rs"),
            Edit("src/client.rs", "Retry::fixed(3)", "Retry::exponential(3).with_jitter()"),
            Run {
                cmd: "cargo test",
                out: "error[E0599]: no method named `with_jitter` found for struct `Retry`",
                code: 101,
            },
            Say(
                "The problem is that with_jitter is behind the jitter feature of the retry crate; it needs features = [\"jitter\"] in Cargo.toml.",
            ),
            Edit("Cargo.toml", "retry = \"2\"", "retry = { version = \"2\", features = [\"jitter\"] }"),
            Run { cmd: "cargo test", out: "test result: ok. 58 passed; 0 failed", code: 0 },
            User("Don't add new dependencies without asking first."),
            Say("Understood. This only enabled a feature of an existing dependency."),
        ],
    },
    Script {
        name: "serial-tests",
        harness: DemoHarness::Codex,
        project: "api",
        day: 5,
        hour: 15,
        steps: &[
            User("Speed up the integration tests in tests/integration."),
            Say("I'll run them in parallel with cargo nextest."),
            Run {
                cmd: "cargo nextest run --test-threads 8",
                out: "FAIL [0.8s] api::users::create_twice\nError: duplicate key value violates unique constraint",
                code: 100,
            },
            User("No, keep the integration tests serial; they share one database."),
            Run { cmd: "cargo nextest run --test-threads 1", out: "Summary: 64 tests run: 64 passed", code: 0 },
            Say("Kept them serial and instead reused one connection pool, which cut the run from 90 s to 35 s."),
        ],
    },
    Script {
        name: "dark-mode",
        harness: DemoHarness::Claude,
        project: "webapp",
        day: 6,
        hour: 16,
        steps: &[
            User("Add a dark mode toggle to the settings page."),
            Read("src/pages/settings.tsx"),
            Edit("src/pages/settings.tsx", "color: '#222'", "color: 'var(--fg)'"),
            User("We use CSS variables for theming, never hard-coded colors."),
            Edit("src/styles/theme.css", ":root {", ":root {\n  --fg: #222;\n}\n[data-theme=dark] {\n  --fg: #eee;"),
            Run { cmd: "pnpm lint", out: "All files pass linting.", code: 0 },
            Say("The toggle sets data-theme on the root element; colors come from the CSS variables."),
        ],
    },
    Script {
        name: "clippy",
        harness: DemoHarness::Claude,
        project: "api",
        day: 7,
        hour: 9,
        steps: &[
            User("Fix the clippy warnings before the release."),
            Run {
                cmd: "cargo clippy -- -D warnings",
                out: "error: this `if` has identical blocks\n --> src/handlers.rs:88:5",
                code: 101,
            },
            Edit("src/handlers.rs", "if admin { allow() } else { allow() }", "allow()"),
            Run {
                cmd: "cargo clippy -- -D warnings",
                out: "error: redundant clone\n --> src/client.rs:41:20",
                code: 101,
            },
            Edit("src/client.rs", "url.clone()", "url"),
            Run { cmd: "cargo clippy -- -D warnings", out: "Finished `dev` profile", code: 0 },
            User("Always run cargo clippy with -D warnings before pushing."),
        ],
    },
    Script {
        name: "express-bump",
        harness: DemoHarness::Codex,
        project: "webapp",
        day: 8,
        hour: 10,
        steps: &[
            User("Bump express to 5.1 and make sure nothing breaks."),
            Edit("package.json", "\"express\": \"^4.21.0\"", "\"express\": \"^5.1.0\""),
            Run {
                cmd: "pnpm install --frozen-lockfile",
                out: "ERR_PNPM_OUTDATED_LOCKFILE Cannot install with frozen-lockfile",
                code: 1,
            },
            Run {
                cmd: "pnpm install --frozen-lockfile",
                out: "ERR_PNPM_OUTDATED_LOCKFILE Cannot install with frozen-lockfile",
                code: 1,
            },
            Say(
                "The lockfile needs to be regenerated after a version bump: pnpm install without --frozen-lockfile, then commit pnpm-lock.yaml.",
            ),
            Run { cmd: "pnpm install", out: "dependencies: - express 4.21.2 + express 5.1.0", code: 0 },
            Run { cmd: "pnpm test", out: "Tests  44 passed (44)", code: 0 },
        ],
    },
    Script {
        name: "limiter-tests",
        harness: DemoHarness::Claude,
        project: "webapp",
        day: 9,
        hour: 13,
        steps: &[
            User("Write tests for the rate limiter on /api/login."),
            Read("src/routes/login.ts"),
            Edit("tests/limiter.spec.ts", "", "await sleep(61_000);"),
            User("No, use vi.useFakeTimers instead of real sleeps in tests."),
            Edit(
                "tests/limiter.spec.ts",
                "await sleep(61_000);",
                "vi.useFakeTimers();\nvi.advanceTimersByTime(61_000);",
            ),
            Run {
                cmd: "pnpm test tests/limiter.spec.ts",
                out: "Error: Redis connection refused at 127.0.0.1:6379",
                code: 1,
            },
            Say("The issue is that Redis is not running again; the tests need docker compose up -d redis."),
            Run { cmd: "docker compose up -d redis", out: "Container webapp-redis-1  Started", code: 0 },
            Run { cmd: "pnpm test tests/limiter.spec.ts", out: "Tests  5 passed (5)", code: 0 },
        ],
    },
    Script {
        name: "pagination",
        harness: DemoHarness::Codex,
        project: "api",
        day: 10,
        hour: 11,
        steps: &[
            User("Add cursor pagination to GET /users."),
            Read("src/handlers.rs"),
            Edit("src/handlers.rs", "LIMIT 100", "WHERE id > $1 ORDER BY id LIMIT $2"),
            Run { cmd: "cargo test users", out: "test result: ok. 9 passed; 0 failed", code: 0 },
            User("We always paginate with opaque cursors, never with page numbers."),
            Say("The cursor is the base64 of the last id, so clients treat it as opaque."),
        ],
    },
];

/// The morning routine: tests, so Redis must run, and lint before the commit.
const MORNING: &[Step] = &[
    User("Morning, picking up where I left off yesterday."),
    Run { cmd: "docker compose up -d redis", out: "Container webapp-redis-1  Started", code: 0 },
    Read("tests/limiter.spec.ts"),
    Edit("tests/limiter.spec.ts", "expect(res.status).toBe(200)", "expect(res.status).toBe(429)"),
    Run { cmd: "pnpm test tests/limiter.spec.ts", out: "Tests  5 passed (5)", code: 0 },
    Run { cmd: "pnpm lint", out: "All files pass linting.", code: 0 },
    Say("Redis is up, the limiter tests pass and lint is clean."),
    User("Good, commit it."),
    Run {
        cmd: "git commit -am 'limiter: 429 after the limit'",
        out: "[main 4f2c1d0] limiter: 429 after the limit",
        code: 0,
    },
];

/// The evening routine: the API, so the client is regenerated and bodies validated with zod.
const EVENING: &[Step] = &[
    User("Evening, let's finish what is left on my list."),
    Run { cmd: "pnpm codegen", out: "Generated src/gen/api.ts (42 operations)", code: 0 },
    Read("src/gen/api.ts"),
    Edit("src/routes/users.ts", "const body = req.body", "const body = UserSchema.parse(req.body) // zod"),
    Edit("src/schemas/user.ts", "", "export const UserSchema = z.object({ email: z.string().email() })"),
    Run { cmd: "pnpm test", out: "Tests  44 passed (44)", code: 0 },
    Say("Regenerated src/gen with pnpm codegen and validated the body with a zod schema."),
    User("Thanks, that's it for today."),
    Run { cmd: "git commit -am 'users: validate the body'", out: "[main 9a1e2b3] users: validate the body", code: 0 },
];

/// Days of the routines (after the lessons they use were learned).
const ROUTINE_DAYS: std::ops::RangeInclusive<i64> = 3..=11;

/// The routine sessions (see the module documentation), named `morning-<day>` / `evening-<day>`.
fn routines(names: &[String]) -> Vec<Script<'_>> {
    names
        .iter()
        .map(|name| {
            let (kind, day) = name.split_once('-').unwrap_or(("morning", "3"));
            let day = day.parse().unwrap_or(3);
            let morning = kind == "morning";
            Script {
                name,
                harness: if day % 3 == 0 { DemoHarness::Codex } else { DemoHarness::Claude },
                project: "webapp",
                day,
                hour: if morning { 9 } else { 18 },
                steps: if morning { MORNING } else { EVENING },
            }
        })
        .collect()
}

fn routine_names() -> Vec<String> {
    ROUTINE_DAYS.flat_map(|d| [format!("morning-{d}"), format!("evening-{d}")]).collect()
}

/// The hour a routine session of the demo runs at, for a preview of the
/// pattern: `morning` sessions need the Redis and lint lessons, `evening`
/// ones the codegen and zod lessons.
pub const ROUTINE_HOURS: [(&str, i64); 2] = [("morning", 9), ("evening", 18)];

/// Words of the lessons the morning routine needs, and of those the evening routine needs.
pub const ROUTINE_LESSONS: [(&str, &[&str]); 2] = [("morning", &["redis", "lint"]), ("evening", &["codegen", "zod"])];

/// A generated session, for callers that replay it (the first run serves
/// rankings at each prompt before ingesting the session).
#[derive(Clone, Debug)]
pub struct DemoSession {
    /// Harness.
    pub harness: DemoHarness,
    /// The harness's session id.
    pub id: String,
    /// Project name.
    pub project: String,
    /// Working directory.
    pub cwd: String,
    /// The transcript written.
    pub path: PathBuf,
    /// When it starts.
    pub start: Ts,
    /// The user's prompts with their times.
    pub prompts: Vec<(Ts, String)>,
}

/// The harness session ids of every demo session (they depend on nothing
/// but the scripts' names), to recognise demo data wherever it landed.
pub fn session_ids() -> Vec<String> {
    let names = routine_names();
    SCRIPTS.iter().map(|s| uuid(s.name)).chain(names.iter().map(|n| uuid(n))).collect()
}

/// A uuid-shaped id derived from the session's name.
fn uuid(name: &str) -> String {
    let h = blake3::hash(format!("engram-demo:{name}").as_bytes()).to_hex();
    let h = h.as_str();
    format!("{}-{}-4{}-8{}-{}", &h[0..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

fn iso(t: Ts) -> String {
    t.to_rfc3339()
}

/// Writes the demo corpus under `dir` with the first session on `base`'s
/// day; returns the sessions in time order. Files whose bytes are already
/// right are not rewritten.
pub fn generate(dir: &Path, base: Ts) -> Result<Vec<DemoSession>, Error> {
    let day0 = Ts(base.0 - base.0.rem_euclid(86_400_000));
    let mut out = Vec::new();
    let names = routine_names();
    let routines = routines(&names);
    let mut scripts: Vec<&Script<'_>> = SCRIPTS.iter().chain(&routines).collect();
    scripts.sort_by_key(|s| (s.day, s.hour));
    for s in scripts {
        let start = Ts(day0.0 + s.day * 86_400_000 + s.hour * 3_600_000);
        let id = uuid(s.name);
        let cwd = format!("/home/demo/{}", s.project);
        let (text, prompts) = match s.harness {
            DemoHarness::Claude => claude(s, &id, &cwd, start),
            DemoHarness::Codex => codex(s, &id, &cwd, start),
        };
        let path = match s.harness {
            DemoHarness::Claude => {
                dir.join("claude/projects").join(format!("-home-demo-{}", s.project)).join(format!("{id}.jsonl"))
            }
            DemoHarness::Codex => {
                let stamp = iso(start);
                let (date, time) = (&stamp[..10], &stamp[11..19]);
                dir.join("codex/sessions")
                    .join(&date[..4])
                    .join(&date[5..7])
                    .join(&date[8..10])
                    .join(format!("rollout-{date}T{}-{id}.jsonl", time.replace(':', "-")))
            }
        };
        if fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            let parent = shared::base::fsutil::parent_dir(&path);
            fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
            fs::write(&path, &text).map_err(|e| Error::io(&path, e))?;
        }
        out.push(DemoSession { harness: s.harness, id, project: s.project.to_owned(), cwd, path, start, prompts });
    }
    Ok(out)
}

fn line(v: &Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

fn claude(s: &Script, id: &str, cwd: &str, start: Ts) -> (String, Vec<(Ts, String)>) {
    let mut text = String::new();
    let mut prompts = Vec::new();
    let mut parent: Option<String> = None;
    let mut t = start;
    let mut n = 0;
    let mut record = |kind: &str, message: Value, extra: Option<(&str, Value)>, t: Ts, parent: &mut Option<String>| {
        n += 1;
        let uuid = format!("{}-{n:04}", &id[..8]);
        let mut v = json!({
            "parentUuid": parent.clone(), "isSidechain": false, "userType": "external", "cwd": cwd,
            "sessionId": id, "version": "2.1.90", "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": iso(t), "message": message,
        });
        if kind == "assistant" {
            v["requestId"] = json!(format!("req_{}_{n}", &id[..8]));
        }
        if let Some((k, x)) = extra {
            v[k] = x;
        }
        *parent = Some(uuid);
        text.push_str(&line(&v));
    };
    for (i, step) in s.steps.iter().enumerate() {
        t = Ts(t.0 + 45_000 + (i as i64 % 3) * 20_000);
        let msg_id = format!("msg_{}_{i}", &id[..8]);
        let assistant = |content: Value| json!({"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [content]});
        match *step {
            User(p) => {
                prompts.push((t, p.to_owned()));
                record("user", json!({"role": "user", "content": p}), None, t, &mut parent);
            }
            Say(x) => record("assistant", assistant(json!({"type": "text", "text": x})), None, t, &mut parent),
            Run { cmd, out, code } => {
                let call = format!("toolu_{}_{i}", &id[..8]);
                let input = json!({"command": cmd, "description": "run a command"});
                record(
                    "assistant",
                    assistant(json!({"type": "tool_use", "id": call, "name": "Bash", "input": input})),
                    None,
                    t,
                    &mut parent,
                );
                let t2 = Ts(t.0 + 5_000);
                let mut result = json!({"type": "tool_result", "tool_use_id": call, "content": out});
                let tur = if code == 0 {
                    json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false})
                } else {
                    result["is_error"] = json!(true);
                    json!(format!("Error: {out}"))
                };
                record(
                    "user",
                    json!({"role": "user", "content": [result]}),
                    Some(("toolUseResult", tur)),
                    t2,
                    &mut parent,
                );
            }
            Read(file) => {
                let call = format!("toolu_{}_{i}", &id[..8]);
                let path = format!("{cwd}/{file}");
                record(
                    "assistant",
                    assistant(json!({"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": path}})),
                    None,
                    t,
                    &mut parent,
                );
                let body = format!("// {file}\nexport {{}};\n");
                let tur = json!({"type": "text", "file": {"filePath": path, "content": body, "numLines": 2, "startLine": 1, "totalLines": 2}});
                record(
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": body}]}),
                    Some(("toolUseResult", tur)),
                    Ts(t.0 + 2_000),
                    &mut parent,
                );
            }
            Edit(file, old, new) => {
                let call = format!("toolu_{}_{i}", &id[..8]);
                let path = format!("{cwd}/{file}");
                let input = json!({"file_path": path, "old_string": old, "new_string": new});
                record(
                    "assistant",
                    assistant(json!({"type": "tool_use", "id": call, "name": "Edit", "input": input})),
                    None,
                    t,
                    &mut parent,
                );
                let old_lines: Vec<String> = old.lines().map(|l| format!("-{l}")).collect();
                let new_lines: Vec<String> = new.lines().map(|l| format!("+{l}")).collect();
                let mut lines = old_lines.clone();
                lines.extend(new_lines.iter().cloned());
                let tur = json!({
                    "filePath": path, "oldString": old, "newString": new, "originalFile": old,
                    "structuredPatch": [{"oldStart": 1, "oldLines": old_lines.len(), "newStart": 1, "newLines": new_lines.len(), "lines": lines}],
                    "userModified": false, "replaceAll": false,
                });
                let ok = format!("The file {path} has been updated.");
                record(
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": ok}]}),
                    Some(("toolUseResult", tur)),
                    Ts(t.0 + 2_000),
                    &mut parent,
                );
            }
        }
    }
    (text, prompts)
}

fn codex(s: &Script, id: &str, cwd: &str, start: Ts) -> (String, Vec<(Ts, String)>) {
    let mut text = String::new();
    let mut prompts = Vec::new();
    let rec = |text: &mut String, t: Ts, kind: &str, payload: Value| {
        text.push_str(&line(&json!({"timestamp": iso(t), "type": kind, "payload": payload})));
    };
    rec(
        &mut text,
        start,
        "session_meta",
        json!({"id": id, "timestamp": iso(start), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.140.0",
               "source": "cli", "git": {"branch": "main", "commit_hash": "3f2a9c1", "repository_url": format!("https://example.invalid/{}.git", s.project)}}),
    );
    let mut t = start;
    let mut turn = 0;
    for (i, step) in s.steps.iter().enumerate() {
        t = Ts(t.0 + 40_000 + (i as i64 % 4) * 15_000);
        match *step {
            User(p) => {
                turn += 1;
                rec(
                    &mut text,
                    t,
                    "turn_context",
                    json!({"turn_id": format!("t{turn}"), "cwd": cwd, "model": "gpt-5-codex", "approval_policy": "on-request"}),
                );
                rec(
                    &mut text,
                    t,
                    "response_item",
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": p}]}),
                );
                rec(&mut text, t, "event_msg", json!({"type": "user_message", "message": p, "images": []}));
                prompts.push((t, p.to_owned()));
            }
            Say(x) => {
                rec(
                    &mut text,
                    t,
                    "response_item",
                    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": x}]}),
                );
                rec(&mut text, t, "event_msg", json!({"type": "agent_message", "message": x}));
            }
            Run { cmd, out, code } => {
                let call = format!("call_{}_{i}", &id[..8]);
                let args = json!({"cmd": cmd, "workdir": cwd}).to_string();
                rec(
                    &mut text,
                    t,
                    "response_item",
                    json!({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call}),
                );
                let output = format!("Process exited with code {code}\nOutput:\n{out}");
                rec(
                    &mut text,
                    Ts(t.0 + 4_000),
                    "response_item",
                    json!({"type": "function_call_output", "call_id": call, "output": output}),
                );
            }
            Read(file) => {
                let call = format!("call_{}_{i}", &id[..8]);
                let args = json!({"cmd": format!("cat {file}"), "workdir": cwd}).to_string();
                rec(
                    &mut text,
                    t,
                    "response_item",
                    json!({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call}),
                );
                let output = format!("Process exited with code 0\nOutput:\n// {file}\nexport {{}};\n");
                rec(
                    &mut text,
                    Ts(t.0 + 2_000),
                    "response_item",
                    json!({"type": "function_call_output", "call_id": call, "output": output}),
                );
            }
            Edit(file, old, new) => {
                let call = format!("call_{}_{i}", &id[..8]);
                let mut patch = format!("*** Begin Patch\n*** Update File: {file}\n@@\n");
                for l in old.lines() {
                    patch.push_str(&format!("-{l}\n"));
                }
                for l in new.lines() {
                    patch.push_str(&format!("+{l}\n"));
                }
                patch.push_str("*** End Patch");
                rec(
                    &mut text,
                    t,
                    "response_item",
                    json!({"type": "custom_tool_call", "status": "completed", "call_id": call, "name": "apply_patch", "input": patch}),
                );
                let mut diff = String::from("@@ -1 +1 @@\n");
                for l in old.lines() {
                    diff.push_str(&format!("-{l}\n"));
                }
                for l in new.lines() {
                    diff.push_str(&format!("+{l}\n"));
                }
                let abs = format!("{cwd}/{file}");
                rec(
                    &mut text,
                    Ts(t.0 + 1_000),
                    "event_msg",
                    json!({"type": "patch_apply_end", "call_id": call, "turn_id": format!("t{turn}"), "stdout": "ok", "stderr": "",
                           "success": true, "status": "completed", "changes": {abs: {"type": "update", "unified_diff": diff, "move_path": null}}}),
                );
                let output = format!(
                    "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM {file}\n"
                );
                rec(
                    &mut text,
                    Ts(t.0 + 2_000),
                    "response_item",
                    json!({"type": "custom_tool_call_output", "call_id": call, "output": output}),
                );
            }
        }
    }
    rec(
        &mut text,
        Ts(t.0 + 5_000),
        "event_msg",
        json!({"type": "task_complete", "turn_id": format!("t{turn}"), "last_agent_message": null}),
    );
    (text, prompts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_corpus_is_deterministic_and_in_time_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let base = Ts(1_767_600_000_000);
        let sa = generate(a.path(), base).unwrap();
        let sb = generate(b.path(), base).unwrap();
        assert_eq!(sa.len(), SCRIPTS.len() + 2 * ROUTINE_DAYS.count());
        for (x, y) in sa.iter().zip(&sb) {
            assert_eq!(fs::read(&x.path).unwrap(), fs::read(&y.path).unwrap());
            assert_eq!(x.id, y.id);
        }
        assert!(sa.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(sa.iter().any(|s| s.harness == DemoHarness::Codex));
        assert!(sa.iter().all(|s| !s.prompts.is_empty()));
        for s in &sa {
            for l in fs::read_to_string(&s.path).unwrap().lines() {
                serde_json::from_str::<Value>(l).unwrap();
            }
        }
    }
}
