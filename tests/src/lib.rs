//! Support code for the end-to-end tests that run the real Engram binaries,
//! the session driver that plays agent sessions through the real hooks
//! ([`driver`]), the scenario benchmark built on it ([`scenario`]), the
//! real-data extraction benchmark ([`realdata`]), and the topic-shift labels
//! of the real sessions ([`topic`]).

pub mod driver;
pub mod learning;
pub mod realdata;
pub mod scenario;
pub mod topic;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds (or brings up to date) `bin` of `package` in the profile the calling
/// test (or binary) was built with, and returns its path. Call it once per
/// process (behind a `OnceLock`).
///
/// # Panics
/// When the build fails (the test cannot run without the binary).
pub fn build_bin(package: &str, bin: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    // <target>/<profile>/deps/<test binary>, or <target>/<profile>/<binary>
    let dir = exe.parent().expect("the executable's directory");
    let profile_dir = if dir.file_name().is_some_and(|n| n == "deps" || n == "examples") {
        dir.parent().expect("<target>/<profile>/deps").to_path_buf()
    } else {
        dir.to_path_buf()
    };
    let target_dir = profile_dir.parent().expect("a target directory");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "-p", package, "--bin", bin, "--target-dir"]).arg(target_dir);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo build");
    assert!(out.status.success(), "building {bin} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    profile_dir.join(bin)
}

/// Variables a test's subprocess keeps from the test's own environment:
/// where programs are, how to reach the network, whether CI runs; never a
/// place to write.
pub const KEPT_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "TZ",
    "CI",
    "CHROMEDRIVER",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// A command for a test's subprocess with every place a program writes
/// under a home inside `root`: `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`,
/// `XDG_CACHE_HOME`, `XDG_STATE_HOME` and `ENGRAM_HOME` (`root/engram`);
/// the rest of the test's environment is dropped but for [`KEPT_ENV`].
/// Callers may point any of them elsewhere inside `root`. Every test starts
/// its subprocesses through this (`tests/tests/isolation.rs` checks), so
/// that nothing, a browser's profile included, lands in the user's home.
pub fn isolated(program: impl AsRef<std::ffi::OsStr>, root: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear();
    for k in KEPT_ENV {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    c.env("HOME", root)
        .env("XDG_CONFIG_HOME", root.join("xdg/config"))
        .env("XDG_DATA_HOME", root.join("xdg/data"))
        .env("XDG_CACHE_HOME", root.join("xdg/cache"))
        .env("XDG_STATE_HOME", root.join("xdg/state"))
        .env("ENGRAM_HOME", root.join("engram"));
    c
}

/// The stdout of a finished command that must have succeeded; on failure,
/// panics with `what`, the status, stdout and stderr.
pub fn success_stdout(what: impl std::fmt::Debug, out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{what:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// A Python with `package` installed (importable as `module`): the venv
/// `<target>/<venv>`, created and filled with pip on first use. `None` (with
/// a message) when that cannot be done locally; a panic under `CI`, where the
/// test must run. Call it once per test process (behind a `OnceLock`).
///
/// # Panics
/// Under `CI`, when the package cannot be installed.
pub fn python_with(venv: &str, package: &str, module: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("the test executable's path");
    // <target>/<profile>/deps/<test binary>
    let target = exe.parent().and_then(Path::parent).and_then(Path::parent).expect("a target directory");
    let venv = target.join(venv);
    let python = venv.join("bin/python");
    // pip's cache and the venv's own files stay in the target directory.
    let home = PathBuf::from(format!("{}-home", venv.display()));
    let has = || {
        isolated(&python, &home).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success())
    };
    if has() {
        return Some(python);
    }
    let steps: [(&str, Vec<&std::ffi::OsStr>); 2] = [
        ("python3", vec!["-m".as_ref(), "venv".as_ref(), venv.as_os_str()]),
        (
            python.to_str().expect("a UTF-8 path"),
            ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", package].map(|s| s.as_ref()).to_vec(),
        ),
    ];
    let mut failure = None;
    for (program, args) in steps {
        // pip's configuration may live in the user's home (an index mirror):
        // it keeps the real environment, with its cache moved here.
        let pip_cache = home.join("pip-cache");
        match Command::new(program)
            .args(&args)
            .env("PIP_CACHE_DIR", &pip_cache)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .output()
        {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                failure = Some(format!("{program} {args:?}: {}", String::from_utf8_lossy(&o.stderr)));
                break;
            }
            Err(e) => {
                failure = Some(format!("{program}: {e}"));
                break;
            }
        }
    }
    match failure {
        None if has() => Some(python),
        _ => {
            let why = failure.unwrap_or_else(|| format!("pip installed {package} but it does not import"));
            assert!(std::env::var_os("CI").is_none(), "CI is set but {package} could not be installed: {why}");
            eprintln!("skipping: the Python package {package} could not be installed into {} ({why})", venv.display());
            None
        }
    }
}
