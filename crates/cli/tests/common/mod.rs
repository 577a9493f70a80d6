//! What the CLI test files share: the binary under test, a run that must succeed or fail, and
//! a daemon process. Each test file uses a part of it.

#![allow(dead_code)]

use std::process::Command;

pub fn zkforge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zkforge"))
}

/// Runs `cmd`, asserts it succeeded (showing both streams if not), returns its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `cmd` and returns its result with stdout and stderr together, for a test that asserts
/// on its exit code and what it said.
pub fn run_said(cmd: &mut Command) -> (std::process::Output, String) {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// Runs `cmd`, asserts it failed with `text` in its stderr (shown if not).
pub fn run_fails_with(cmd: &mut Command, text: &str) {
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(text), "{stderr}");
}

/// A `zkforge daemon` process on a unix socket (CPU backend), killed if still running on drop.
pub struct DaemonProcess {
    pub child: std::process::Child,
    pub socket: std::path::PathBuf,
    pub log: std::path::PathBuf,
}

impl DaemonProcess {
    /// Starts a daemon with `args` added, logging to `log`, and waits until it serves.
    pub fn start(
        params: &std::path::Path,
        socket: &std::path::Path,
        log: &std::path::Path,
        args: &[&str],
    ) -> Self {
        let child = zkforge()
            .arg("daemon")
            .arg(format!("--listen=unix://{}", socket.display()))
            .arg("--backend=cpu")
            .arg("--params")
            .arg(params)
            .args(args)
            .env_remove("RUST_LOG")
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let d = Self {
            child,
            socket: socket.to_path_buf(),
            log: log.to_path_buf(),
        };
        d.wait_for_log("serving cuzk.v1", std::time::Duration::from_secs(60));
        d
    }

    /// Waits until the daemon's log contains `text`.
    pub fn wait_for_log(&self, text: &str, timeout: std::time::Duration) {
        Self::wait_for_log_in(&self.log, text, timeout)
    }

    /// Waits until the log file `log` contains `text`.
    pub fn wait_for_log_in(log: &std::path::Path, text: &str, timeout: std::time::Duration) {
        let t = std::time::Instant::now();
        while !std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains(text)
        {
            assert!(
                t.elapsed() < timeout,
                "no {text:?} in the daemon log within {timeout:?}:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn addr(&self) -> zkforge_bench_client::DaemonAddr {
        zkforge_bench_client::DaemonAddr::Unix(self.socket.clone())
    }

    fn signal(&mut self, signal: i32) {
        self.send(signal);
        self.child.wait().unwrap();
    }

    /// Sends `signal` without waiting for the process to exit.
    pub fn send(&self, signal: i32) {
        // SAFETY: a plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// SIGKILL: no chance to clean up, as a crash or the OOM killer.
    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
    }

    /// SIGTERM, the daemon's graceful stop, and its exit.
    pub fn stop(&mut self) {
        self.signal(libc::SIGTERM);
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Resident memory of process `pid` now, in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The shared test parameters of `kind` at 2 KiB (generated on first use) and their directory,
/// set as FIL_PROOFS_PARAMETER_CACHE first: filecoin-proofs reads it once, at its first use
/// (the verifier).
pub fn params_2kib(kind: zkforge_filecoin::ProofKind) -> std::path::PathBuf {
    use zkforge_filecoin::params;
    let dir = params::zkforge_cache_dir().join("params");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    params::ensure_test_params(kind, 2048, &dir, &()).unwrap();
    dir
}

/// A batch of `count` 2 KiB WinningPoSt proofs of the fixtures in `fx` (the cheapest real
/// proof), `concurrency` at once, unsaved and unverified.
pub fn winning_post_batch(
    addr: zkforge_bench_client::DaemonAddr,
    fx: &std::path::Path,
    count: usize,
    concurrency: usize,
) -> zkforge_bench_client::BatchConfig {
    use zkforge_bench_client::{InputSpec, ProofInput, ProofType};
    let spec = InputSpec::from_fixtures(ProofType::WinningPost, fx);
    zkforge_bench_client::BatchConfig {
        addr,
        input: std::sync::Arc::new(ProofInput::load(&spec).unwrap()),
        count,
        concurrency,
        connect_timeout: std::time::Duration::from_secs(10),
        proof_timeout: Some(std::time::Duration::from_secs(600)),
        save_proofs: None,
        verify: false,
        progress: false,
        print_lines: false,
    }
}
