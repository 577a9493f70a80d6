//! A sweep: batches over (count, concurrency) points, against one daemon or against a local
//! daemon started per config file (stopped with SIGTERM after its points).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use super::address::{connect, DaemonAddr};
use super::batch::BatchConfig;
use super::fleet::run_batch;
use super::report::SweepRow;

/// One batch shape, written `COUNTxCONCURRENCY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub count: usize,
    pub concurrency: usize,
}

impl FromStr for Point {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || format!("bad sweep point {s:?}: expected COUNTxCONCURRENCY, e.g. 8x4");
        let (c, j) = s.trim().split_once(['x', 'X']).with_context(bad)?;
        let count: usize = c.parse().with_context(bad)?;
        let concurrency: usize = j.parse().with_context(bad)?;
        ensure!(
            count > 0 && concurrency > 0,
            "{}: both must be positive",
            bad()
        );
        Ok(Point { count, concurrency })
    }
}

/// A sweep's setup. `base` gives the address, input and per-batch options; count and
/// concurrency come from each point.
pub struct SweepConfig {
    pub base: BatchConfig,
    pub points: Vec<Point>,
    /// Start `zkforge daemon --config C` for each, in turn; empty: use `base.addr`.
    pub daemon_configs: Vec<PathBuf>,
    /// The `zkforge` binary to start daemons with.
    pub daemon_exe: PathBuf,
    /// Keep each daemon's log (stderr, with TIMELINE) here as `daemon-<config stem>.log`.
    pub daemon_logs: Option<PathBuf>,
    /// How long a started daemon may take to answer.
    pub start_timeout: Duration,
}

/// A daemon process of ours; killed if dropped without `stop`.
struct LocalDaemon {
    child: Child,
    addr: DaemonAddr,
    log: PathBuf,
}

/// The last lines of a log, for errors.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl LocalDaemon {
    async fn start(
        exe: &Path,
        config: &Path,
        dir: &Path,
        log: PathBuf,
        wait: Duration,
    ) -> Result<Self> {
        ensure!(
            config.exists(),
            "daemon config {} not found",
            config.display()
        );
        let sock = dir.join("zkforge.sock");
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(exe)
            .arg("daemon")
            .arg("--config")
            .arg(config)
            .arg("--listen")
            .arg(format!("unix://{}", sock.display()))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {} daemon", exe.display()))?;
        tracing::info!(config = %config.display(), pid = child.id(), log = %log.display(), "daemon started");
        let mut d = LocalDaemon {
            child,
            addr: DaemonAddr::Unix(sock),
            log,
        };
        d.wait_until_ready(wait).await?;
        Ok(d)
    }

    /// Polls until the daemon answers GetStatus; fails if it exits or takes too long.
    async fn wait_until_ready(&mut self, wait: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the daemon exited ({status}) before answering; its log ({}):\n{}",
                    self.log.display(),
                    tail(&self.log, 20)
                );
            }
            if connect(&self.addr, Duration::from_secs(1)).await.is_ok() {
                return Ok(());
            }
            if start.elapsed() > wait {
                bail!(
                    "the daemon did not answer within {} s; its log ({}):\n{}",
                    wait.as_secs(),
                    self.log.display(),
                    tail(&self.log, 20)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// SIGTERM, then wait for a graceful exit (SIGKILL after `grace`).
    async fn stop(mut self, grace: Duration) -> Result<()> {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped yet.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            bail!(
                "SIGTERM to daemon {pid}: {}",
                std::io::Error::last_os_error()
            );
        }
        let start = Instant::now();
        while start.elapsed() < grace {
            if let Some(status) = self.child.try_wait()? {
                tracing::info!(pid, %status, "daemon stopped");
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.child.kill()?;
        self.child.wait()?;
        bail!(
            "daemon {pid} ignored SIGTERM for {} s and was killed",
            grace.as_secs()
        )
    }
}

impl Drop for LocalDaemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn stem(config: &Path) -> String {
    config
        .file_stem()
        .map_or("config".into(), |s| s.to_string_lossy().into_owned())
}

async fn run_points(
    base: &BatchConfig,
    addr: &DaemonAddr,
    label: &str,
    points: &[Point],
) -> Result<Vec<SweepRow>> {
    let mut rows = Vec::new();
    for p in points {
        let config = BatchConfig {
            addr: addr.clone(),
            count: p.count,
            concurrency: p.concurrency,
            ..base.clone()
        };
        let report = run_batch(&config).await?;
        tracing::info!(
            config = label,
            point = %format!("{}x{}", p.count, p.concurrency),
            wall_s = report.wall_s,
            completed = report.completed,
            "sweep point done"
        );
        rows.push(SweepRow {
            config: label.to_string(),
            count: p.count,
            concurrency: p.concurrency,
            report,
        });
    }
    Ok(rows)
}

/// Runs every point for every config; rows in config, then point order.
pub async fn run_sweep(s: &SweepConfig) -> Result<Vec<SweepRow>> {
    ensure!(!s.points.is_empty(), "no sweep points");
    if s.daemon_configs.is_empty() {
        let label = s.base.addr.to_string();
        return run_points(&s.base, &s.base.addr, &label, &s.points).await;
    }
    let scratch = tempfile::Builder::new()
        .prefix("zkforge-sweep")
        .tempdir()
        .context("creating a scratch directory")?;
    let log_dir = s
        .daemon_logs
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    let mut rows = Vec::new();
    for (i, config) in s.daemon_configs.iter().enumerate() {
        let dir = scratch.path().join(format!("d{i}"));
        std::fs::create_dir_all(&dir)?;
        let log = log_dir.join(format!("daemon-{}.log", stem(config)));
        let daemon = LocalDaemon::start(&s.daemon_exe, config, &dir, log, s.start_timeout).await?;
        let label = config.display().to_string();
        let result = run_points(&s.base, &daemon.addr, &label, &s.points).await;
        let stopped = daemon.stop(Duration::from_secs(60)).await;
        rows.extend(result?);
        stopped?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_parse() {
        let p: Point = "8x4".parse().unwrap();
        assert_eq!((p.count, p.concurrency), (8, 4));
        for bad in ["8", "x4", "8x", "0x1", "4x0", "ax2"] {
            let err = bad.parse::<Point>().unwrap_err().to_string();
            assert!(err.contains("bad sweep point"), "{bad}: {err}");
        }
    }
}
