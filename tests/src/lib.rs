//! Support code for the end-to-end tests that run the real Engram binaries,
//! the session driver that plays agent sessions through the real hooks
//! ([`driver`]), and the scenario benchmark built on it ([`scenario`]).

pub mod driver;
pub mod learning;
pub mod scenario;

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
    let has =
        || Command::new(&python).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success());
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
        match Command::new(program).args(&args).output() {
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
