//! The budget follows the machine: what the host has left (MemAvailable, a memory cgroup's
//! room, the kernel's pressure stall information), read while the engine runs, sets how much
//! of the configured budget the engine may hold now.
//!
//! A budget read once at start belonged to a machine that no longer existed a minute later:
//! Curio building C1 outputs, a sealing pipeline, a second daemon took their memory and the
//! kernel killed the daemon, the largest process, with every proof in flight. Now:
//!
//! - the **limit** is what the engine holds plus what the host has left, less the margin,
//!   and at most the configured budget; it falls at once when others take memory, and grows
//!   back only after the host has been quiet (no memory pressure) for [`GROW_AFTER`];
//! - over the limit, the engine gives back in order: idle pooled buffers, keys no job holds,
//!   then admits fewer partitions (those in flight finish; new ones wait);
//! - urgent work reserves within `max(limit, memory_floor)`; while the limit is below the
//!   floor, bulk submissions are refused naming both (`admission`).
//!
//! Each change is a log line, a MEMORY_LIMIT TIMELINE event and the `memory_limit_bytes`
//! gauge.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::kib_field;

/// How often the host is read.
pub const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How long the host must have been quiet before the limit grows back.
pub const GROW_AFTER: Duration = Duration::from_secs(5);
/// Memory pressure (the share of the last 10 s in which some task stalled on memory, in
/// percent) under which the host counts as quiet.
const QUIET_PRESSURE: f64 = 1.0;
/// Smallest change of the limit worth making (and logging): below it, the limit stays.
const STEP: u64 = 256 << 20;

/// One reading of the host's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostReading {
    /// MemTotal and MemAvailable (bytes).
    pub total: u64,
    pub available: u64,
    /// `some avg10` of /proc/pressure/memory, percent; `None` where the kernel has no PSI.
    pub pressure: Option<f64>,
    /// The daemon's memory cgroup, where it has a limit.
    pub cgroup: Option<Cgroup>,
}

/// A cgroup v2 memory controller's limit and use (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cgroup {
    pub max: u64,
    pub current: u64,
    /// File pages on the inactive list (`memory.stat`): counted in `current`, but the kernel
    /// reclaims them before the cgroup runs out (a 47 GB key read once lands there).
    pub inactive_file: u64,
}

impl HostReading {
    /// This machine's, now.
    pub fn now() -> Result<Self> {
        let meminfo = std::fs::read_to_string("/proc/meminfo")
            .context("the memory budget needs /proc/meminfo")?;
        Ok(Self {
            total: kib_field(&meminfo, "MemTotal")?,
            available: kib_field(&meminfo, "MemAvailable")?,
            pressure: std::fs::read_to_string("/proc/pressure/memory")
                .ok()
                .and_then(|t| some_avg10(&t)),
            cgroup: own_cgroup().and_then(|dir| read_cgroup(&dir)),
        })
    }

    /// Memory the host can still give: MemAvailable, or the cgroup's room where less.
    pub fn room(&self) -> u64 {
        match self.cgroup {
            Some(c) => self
                .available
                .min((c.max + c.inactive_file).saturating_sub(c.current)),
            None => self.available,
        }
    }

    /// The machine's memory as this process sees it: MemTotal, or the cgroup's limit.
    pub fn memory(&self) -> u64 {
        self.cgroup.map_or(self.total, |c| c.max.min(self.total))
    }

    pub fn quiet(&self) -> bool {
        self.pressure.is_none_or(|p| p < QUIET_PRESSURE)
    }
}

/// `some avg10` of a PSI file.
fn some_avg10(text: &str) -> Option<f64> {
    let some = text.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))
        .and_then(|v| v.parse().ok())
}

/// This process's cgroup v2 directory ("0::/system.slice/zkforge.service").
fn own_cgroup() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_dir(&text, Path::new("/sys/fs/cgroup"))
}

fn cgroup_dir(proc_self_cgroup: &str, root: &Path) -> Option<PathBuf> {
    let path = proc_self_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))?;
    Some(root.join(path.trim_start_matches('/')))
}

/// The controller's `memory.max` and `memory.current`; `None` without a limit ("max") or
/// without the controller.
fn read_cgroup(dir: &Path) -> Option<Cgroup> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let max = read("memory.max")?.trim().parse().ok()?;
    let current = read("memory.current")?.trim().parse().ok()?;
    let inactive_file = read("memory.stat")
        .and_then(|stat| {
            stat.lines()
                .find_map(|l| l.strip_prefix("inactive_file "))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    Some(Cgroup {
        max,
        current,
        inactive_file,
    })
}

/// Why the limit moved.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitChange {
    pub from: u64,
    pub to: u64,
}

/// The limit as readings come: down at once, up after the host has been quiet.
#[derive(Debug)]
pub struct Follower {
    /// The configured budget: the limit never exceeds it.
    ceiling: u64,
    /// What is left to the rest of the host (`memory_margin`).
    margin: u64,
    limit: u64,
    quiet_since: Option<Instant>,
}

impl Follower {
    pub fn new(ceiling: u64, margin: u64) -> Self {
        Self {
            ceiling,
            margin,
            limit: ceiling,
            quiet_since: None,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// What the engine may hold when it holds `held` and the host reads `r`.
    pub fn target(&self, held: u64, r: &HostReading) -> u64 {
        (held + r.room())
            .saturating_sub(self.margin)
            .min(self.ceiling)
    }

    /// The next limit, given what the engine holds now and a reading taken at `now`.
    pub fn follow(&mut self, held: u64, r: &HostReading, now: Instant) -> Option<LimitChange> {
        let target = self.target(held, r);
        let from = self.limit;
        if target + STEP <= from {
            self.quiet_since = None;
            self.limit = target;
        } else if target >= from + STEP || (target > from && target == self.ceiling) {
            if !r.quiet() {
                self.quiet_since = None;
                return None;
            }
            let since = *self.quiet_since.get_or_insert(now);
            if now.duration_since(since) < GROW_AFTER {
                return None;
            }
            self.limit = target;
        } else {
            // Within a step of the limit: the quiet spell counts only while there is room to
            // grow into.
            self.quiet_since = None;
            return None;
        }
        Some(LimitChange {
            from,
            to: self.limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn reading(available: u64, pressure: f64) -> HostReading {
        HostReading {
            total: 125 * GIB,
            available,
            pressure: Some(pressure),
            cgroup: None,
        }
    }

    #[test]
    fn the_limit_falls_at_once_and_grows_back_after_quiet() {
        let t0 = Instant::now();
        let mut f = Follower::new(116 * GIB, 9 * GIB);
        // The daemon holds 70 GiB with 55 available: what it started with (116 + 9 - 70).
        assert_eq!(f.follow(70 * GIB, &reading(55 * GIB, 0.0), t0), None);
        // Another process takes 48 GiB: 7 GiB left, 2 below the margin.
        let down = f.follow(70 * GIB, &reading(7 * GIB, 40.0), t0).unwrap();
        assert_eq!((down.from, down.to), (116 * GIB, 68 * GIB));
        // It leaves; the pressure lingers, then the host is quiet for 5 s.
        let after = |s| t0 + Duration::from_secs(s);
        assert_eq!(f.follow(66 * GIB, &reading(59 * GIB, 20.0), after(1)), None);
        assert_eq!(f.follow(66 * GIB, &reading(59 * GIB, 0.2), after(2)), None);
        assert_eq!(f.follow(66 * GIB, &reading(59 * GIB, 0.1), after(6)), None);
        // (A reading within a step of the limit would have started the spell again.)
        let up = f
            .follow(66 * GIB, &reading(59 * GIB, 0.0), after(7))
            .unwrap();
        assert_eq!(
            up.to,
            116 * GIB,
            "back to the configured budget, no further"
        );
        assert_eq!(f.limit(), 116 * GIB);
    }

    #[test]
    fn a_cgroup_bounds_the_room_and_the_machine() {
        let r = HostReading {
            cgroup: Some(Cgroup {
                max: 64 * GIB,
                current: 60 * GIB,
                inactive_file: 2 * GIB,
            }),
            ..reading(100 * GIB, 0.0)
        };
        assert_eq!(
            r.room(),
            6 * GIB,
            "4 GiB free and 2 of file pages to reclaim"
        );
        assert_eq!(r.memory(), 64 * GIB);
    }

    #[test]
    fn the_kernels_files_are_read() {
        let psi = "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\n\
                   full avg10=2.00 avg60=0.00 avg300=0.00 total=45\n";
        assert_eq!(some_avg10(psi), Some(12.5));
        let dir = cgroup_dir(
            "0::/system.slice/zkforge.service\n",
            Path::new("/sys/fs/cgroup"),
        );
        assert_eq!(
            dir.unwrap(),
            Path::new("/sys/fs/cgroup/system.slice/zkforge.service")
        );
        assert_eq!(cgroup_dir("1:name=systemd:/x\n", Path::new("/c")), None);
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("memory.max"), "max\n").unwrap();
        std::fs::write(tmp.path().join("memory.current"), "1000\n").unwrap();
        assert_eq!(read_cgroup(tmp.path()), None, "no limit");
        std::fs::write(tmp.path().join("memory.max"), "4096\n").unwrap();
        std::fs::write(
            tmp.path().join("memory.stat"),
            "anon 500\nfile 300\ninactive_file 200\n",
        )
        .unwrap();
        assert_eq!(
            read_cgroup(tmp.path()),
            Some(Cgroup {
                max: 4096,
                current: 1000,
                inactive_file: 200,
            })
        );
        let now = HostReading::now().unwrap();
        assert!(now.available <= now.total && now.room() <= now.available);
    }
}
