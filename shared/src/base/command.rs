//! Running an optional external command (a local LLM command line, say):
//! one child process per request, the request on stdin, the response on
//! stdout, killed with its process group when the timeout passes; its
//! stderr is kept for the error message. The extractor, the discovery
//! engine, the summariser and the dedup judge all run through [`run`] (or
//! [`run_json`]); each validates the answer it gets.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Most bytes read from the command's stdout; more is a broken contract.
pub const MAX_OUTPUT: usize = 4 << 20;
/// Bytes of the command's stderr quoted in an error.
const STDERR_TAIL: usize = 2048;

/// An optional external command (JSON on stdin, JSON on stdout).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandConfig {
    /// Program and arguments; empty means off.
    pub command: Vec<String>,
    /// Kill the command after this long.
    pub timeout_ms: u64,
}

impl Default for CommandConfig {
    fn default() -> Self {
        CommandConfig { command: Vec::new(), timeout_ms: 20_000 }
    }
}

impl CommandConfig {
    /// Whether a command is configured.
    pub fn enabled(&self) -> bool {
        !self.command.is_empty()
    }
}

/// Why a command gave no usable output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{command}: {reason}")]
pub struct CommandError {
    /// The program.
    pub command: String,
    /// What happened.
    pub reason: String,
}

/// Runs the configured command with `request` as JSON on stdin and returns
/// what it wrote on stdout.
pub fn run_json<T: Serialize>(config: &CommandConfig, request: &T) -> Result<Vec<u8>, CommandError> {
    let input = serde_json::to_vec(request).map_err(|e| CommandError {
        command: config.command.first().cloned().unwrap_or_default(),
        reason: format!("cannot encode the request: {e}"),
    })?;
    run(&config.command, &input, Duration::from_millis(config.timeout_ms))
}

/// Where and with what environment a command runs (beyond the caller's own).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The working directory (the caller's when `None`).
    pub cwd: Option<std::path::PathBuf>,
    /// Variables set for the command, on top of the caller's environment.
    pub env: Vec<(String, String)>,
}

/// Runs `argv` with `input` on stdin and returns its stdout, or an error when
/// it cannot start, exits unsuccessfully, writes too much or outlives `timeout`.
pub fn run(argv: &[String], input: &[u8], timeout: Duration) -> Result<Vec<u8>, CommandError> {
    run_with(argv, input, timeout, &RunOptions::default())
}

/// [`run`] in the working directory and with the variables of `opts`.
pub fn run_with(argv: &[String], input: &[u8], timeout: Duration, opts: &RunOptions) -> Result<Vec<u8>, CommandError> {
    let program = argv.first().cloned().unwrap_or_default();
    let fail = |reason: String| CommandError { command: program.clone(), reason };
    if program.is_empty() {
        return Err(fail("no command configured".into()));
    }
    let mut cmd = Command::new(&program);
    if let Some(dir) = &opts.cwd {
        cmd.current_dir(dir);
    }
    cmd.envs(opts.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut child = cmd
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a timeout also stops what it started.
        .process_group(0)
        .spawn()
        .map_err(|e| fail(format!("cannot start: {e}")))?;
    let deadline = Instant::now() + timeout;
    let (tx, rx) = mpsc::channel::<(bool, std::io::Result<Vec<u8>>)>();
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        std::thread::spawn(move || {
            // A command that does not read its input is not our problem here.
            let _ = stdin.write_all(&input);
        });
    }
    for (is_stdout, stream) in [
        (true, child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>)),
        (false, child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>)),
    ] {
        let Some(stream) = stream else { continue };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let limit = if is_stdout { MAX_OUTPUT + 1 } else { 64 * 1024 };
            let mut buf = Vec::new();
            let res = stream.take(limit as u64).read_to_end(&mut buf).map(|_| buf);
            let _ = tx.send((is_stdout, res));
        });
    }
    drop(tx);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill_group(&mut child);
                return Err(fail(format!("timed out after {} ms and was killed", timeout.as_millis())));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(&mut child);
                return Err(fail(format!("cannot wait for it: {e}")));
            }
        }
    };
    let (mut stdout, mut stderr) = (None, Vec::new());
    // Both streams end when the command and anything it left behind exit.
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(200));
        match rx.recv_timeout(left) {
            Ok((true, res)) => stdout = Some(res.map_err(|e| fail(format!("cannot read its output: {e}")))?),
            Ok((false, res)) => stderr = res.unwrap_or_default(),
            Err(_) => break,
        }
    }
    let stderr_tail = {
        let text = String::from_utf8_lossy(&stderr);
        let text = text.trim();
        let start = text.len().saturating_sub(STDERR_TAIL);
        let start = (start..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
        text[start..].to_owned()
    };
    if !status.success() {
        let mut reason = format!("exited with {status}");
        if !stderr_tail.is_empty() {
            reason.push_str(&format!(": {stderr_tail}"));
        }
        return Err(fail(reason));
    }
    let stdout = stdout.ok_or_else(|| fail("its output could not be read before the timeout".into()))?;
    if stdout.len() > MAX_OUTPUT {
        return Err(fail(format!("wrote more than {MAX_OUTPUT} bytes")));
    }
    Ok(stdout)
}

/// Kills the child and its process group (by `kill -KILL -<pgid>`, as the
/// crate denies unsafe code), then reaps it.
fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn output_of_a_successful_command() {
        let out = run(&sh("cat; echo done"), b"in ", Duration::from_secs(10)).expect("run");
        assert_eq!(out, b"in done\n");
    }

    #[test]
    fn failures_say_why() {
        let err = run(&sh("echo oops >&2; exit 3"), b"", Duration::from_secs(10)).expect_err("fails");
        let msg = err.to_string();
        assert!(msg.contains("exit status: 3") && msg.contains("oops"), "{msg}");
        let err = run(&["/nonexistent/extractor".to_owned()], b"", Duration::from_secs(1)).expect_err("x");
        assert!(err.to_string().contains("cannot start"), "{err}");
        assert!(run(&[], b"", Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_slow_command_is_killed_with_what_it_started() {
        let start = Instant::now();
        let err = run(&sh("sleep 20 & sleep 20"), b"", Duration::from_millis(200)).expect_err("timeout");
        assert!(err.to_string().contains("timed out"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    }
}
