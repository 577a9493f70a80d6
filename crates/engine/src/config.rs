//! Engine settings, with documented defaults, checked once at start.

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

/// How much host memory the engine may hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BudgetSetting {
    /// MemAvailable at start minus `memory_margin`.
    Auto,
    Bytes(u64),
}

/// What `/proc/meminfo` says of the machine's memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
}

impl MemInfo {
    /// This machine's, now; inside a memory cgroup with a limit, the cgroup's (its limit, and
    /// its room where less than MemAvailable, which is the host's).
    pub fn now() -> Result<Self> {
        let r = crate::host_memory::HostReading::now()?;
        Ok(Self {
            total: r.memory(),
            available: r.room(),
        })
    }
}

/// Share of the machine's memory `memory_margin = "auto"` leaves to the kernel (page tables:
/// 0.2% of the memory mapped at 4 KiB a page; slab; its free-page watermarks) and the page
/// cache (a key file read at start passes through it, and the binary's and the CUDA driver's
/// own pages must stay in it, or the machine thrashes before it runs out), in 1/1000.
const AUTO_MARGIN_PER_MILLE: u64 = 40;
/// Memory of the daemon that no reservation covers, which `memory_margin = "auto"` leaves
/// besides: requests being received (the server's `limits.max_receiving_bytes`, 1 GiB by
/// default), the CUDA driver's contexts and staging, the heap, thread stacks.
const AUTO_MARGIN_PROCESS: u64 = 2 << 30;

/// `memory_margin = "auto"` on a machine of `mem_total` bytes whose unfinished jobs may hold
/// `queued_request_bytes` of requests: 4% of the memory, those requests, and 2 GiB for the
/// rest of the daemon (9 GiB on a 125 GiB box with the defaults).
pub fn auto_margin(mem_total: u64, queued_request_bytes: u64) -> u64 {
    mem_total / 1000 * AUTO_MARGIN_PER_MILLE + queued_request_bytes + AUTO_MARGIN_PROCESS
}

impl BudgetSetting {
    /// Parses "auto", plain bytes, or a number with KiB/MiB/GiB/TiB.
    pub fn parse(s: &str) -> Result<Self> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(Self::Auto);
        }
        Ok(Self::Bytes(parse_bytes(t)?))
    }

    /// The budget in bytes on this machine: a configured size must fit in the machine's
    /// memory; `auto` is what is available now minus the margin.
    pub fn resolve(&self, margin: u64) -> Result<u64> {
        self.resolve_on(margin, MemInfo::now()?)
    }

    /// [`resolve`](Self::resolve) on a machine whose memory is `mem`.
    pub fn resolve_on(&self, margin: u64, mem: MemInfo) -> Result<u64> {
        match self {
            Self::Bytes(b) => {
                ensure!(
                    *b <= mem.total,
                    "memory_budget ({}) is more than this machine's memory (MemTotal {}): the \
                     budget could not hold",
                    gib(*b),
                    gib(mem.total)
                );
                Ok(*b)
            }
            Self::Auto => {
                ensure!(
                    mem.available > margin,
                    "memory_margin ({}) is not below MemAvailable ({}): nothing is left for \
                     memory_budget = \"auto\"; set a margin or a budget by hand",
                    gib(margin),
                    gib(mem.available)
                );
                Ok(mem.available - margin)
            }
        }
    }
}

/// "16GiB", "512MiB", "1000"...
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .with_context(|| format!("not a byte size: {s:?}"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        u => bail!("unknown unit {u:?} in {s:?} (use B, KiB, MiB, GiB or TiB)"),
    };
    n.checked_mul(mult)
        .with_context(|| format!("{s:?} overflows"))
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// `Field:   1234 kB` of a /proc file, in bytes.
pub(crate) fn kib_field(text: &str, field: &str) -> Result<u64> {
    let line = text
        .lines()
        .find(|l| l.split(':').next() == Some(field))
        .with_context(|| format!("no {field}"))?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .with_context(|| format!("bad {field}"))?
        .parse()?;
    Ok(kib * 1024)
}

/// This process's resident memory now and at its peak (VmRSS, VmHWM), in bytes.
pub fn process_memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    (
        kib_field(&status, "VmRSS").unwrap_or(0),
        kib_field(&status, "VmHWM").unwrap_or(0),
    )
}

/// The engine's knobs. Every field has a default; unknown keys in a config file are errors.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// CPU workers synthesizing partitions concurrently: a number, or "auto" (0 here): one per
    /// core when a GPU proves (the memory budget admits as many partitions as fit, so extra
    /// workers wait rather than overcommit), half the cores when the CPU proves too.
    #[serde(with = "auto_count")]
    pub synthesis_workers: usize,
    /// Threads of the synthesis thread pool (0: one per core).
    pub synthesis_threads: usize,
    /// Niceness of the synthesis threads (0..=19): above the provers' 0, so that synthesis on
    /// every core never delays the prover threads that feed the GPU.
    pub synthesis_nice: i32,
    /// Prover workers per device (the CPU backend counts as one device); they share a lock
    /// held only around the device-exclusive region.
    pub prover_workers_per_device: usize,
    /// Threads of the CPU prover's pool (0: one per core).
    pub prover_threads: usize,
    /// Synthesized partitions that may wait for a prover worker.
    pub prove_queue_depth: usize,
    /// One more synthesis worker, and one more prover per device, that take only High and
    /// Critical partitions (WindowPoSt and WinningPoSt by default): an urgent proof starts at
    /// once instead of waiting for a PoRep partition to finish its synthesis or its proving.
    /// They idle otherwise; the device's lock goes to the most urgent partition waiting.
    pub urgent_lanes: bool,
    /// With a GPU backend: when a key loads, pin a witness buffer for every partition that can
    /// be in flight before any is proved (page-locking holds the driver, and so the kernels,
    /// back while it runs). Off: each buffer is pinned when synthesis first takes it, its
    /// pages faulted in by the synthesis threads first, so the first partitions start at once.
    pub pin_buffers_at_load: bool,
    /// Host memory for everything proving holds: keys decoded in host memory, recorded
    /// constraint matrices, partitions in flight, idle pooled (pinned) witness buffers and
    /// buffers on their way to being freed. "auto" (MemAvailable at start − margin) or a size
    /// such as "64GiB", which must not exceed the machine's memory.
    pub memory_budget: String,
    /// Memory left to the rest of the machine when the budget is "auto": a size, or "auto"
    /// ([`auto_margin`]: 4% of MemTotal for the kernel and the page cache, the queued requests'
    /// `max_queued_request_bytes`, and 2 GiB for the daemon's memory outside the budget).
    pub memory_margin: String,
    /// Seconds a finished job's result stays available.
    pub result_ttl_secs: u64,
    /// Finished jobs kept at most.
    pub result_max: usize,
    /// Unfinished jobs (queued or running) at most; a submission beyond is refused as busy
    /// (RESOURCE_EXHAUSTED on the wire), so a client cannot grow the queue without bound.
    pub max_queued_jobs: usize,
    /// Unfinished High and Critical jobs (WindowPoSt and WinningPoSt by default) at most, in
    /// room of their own: a High job is counted with the High and Critical ones only, a
    /// Critical job with the Critical ones only, so no amount of bulk work (or of High work,
    /// for a Critical proof) gets an urgent proof refused.
    pub max_urgent_jobs: usize,
    /// Bytes of requests (as received) that unfinished jobs may hold together, e.g. "2GiB":
    /// a queued 32 GiB PoRep C1 holds its parsed vanilla proofs until its job ends. Counted
    /// per class as jobs are (all jobs for bulk work, the urgent ones for urgent work).
    pub max_queued_request_bytes: String,
    /// Check every proof against the verifying key before returning it (a few ms each). Only
    /// benchmarks with synthetic keys, whose proofs cannot verify, turn this off.
    pub verify_proofs: bool,
    /// Partitions held between synthesis start and proof end at most (High and Critical ones
    /// aside): a number, or "auto" (0 here): as many as keep the provers busy, from each
    /// kind's measured synthesis time and device cycle (`depth.rs`), never more than the
    /// workers could hold. The rest of the budget stays free, not page-locked.
    #[serde(with = "auto_count")]
    pub pipeline_depth: usize,
    /// Host memory urgent work (High and Critical: WindowPoSt, WinningPoSt) may always hold,
    /// however little the host leaves the engine, e.g. "8GiB" ("0": none). While the host
    /// leaves less than this, bulk submissions are refused naming it. At most the budget.
    pub memory_floor: String,
    /// Seconds idle pooled witness buffers are kept while no partition is in flight; then
    /// they return to the system.
    pub idle_buffer_secs: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            synthesis_workers: 0,
            synthesis_threads: 0,
            synthesis_nice: 10,
            prover_workers_per_device: 2,
            prover_threads: 0,
            prove_queue_depth: 2,
            urgent_lanes: true,
            pin_buffers_at_load: false,
            memory_budget: "auto".into(),
            memory_margin: "auto".into(),
            result_ttl_secs: 600,
            result_max: 1000,
            max_queued_jobs: 256,
            max_urgent_jobs: 32,
            max_queued_request_bytes: "2GiB".into(),
            verify_proofs: true,
            pipeline_depth: 0,
            memory_floor: "0".into(),
            idle_buffer_secs: 60,
        }
    }
}

/// A count that may be "auto", kept as 0 (`#[serde(with = "auto_count")]`; the server's
/// limits use it too).
pub mod auto_count {
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &usize, s: S) -> Result<S::Ok, S::Error> {
        match n {
            0 => s.serialize_str("auto"),
            n => s.serialize_u64(*n as u64),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Count {
            Number(u64),
            Word(String),
        }
        match Count::deserialize(d)? {
            Count::Number(0) => Err(de::Error::custom("must be at least 1 (or \"auto\")")),
            Count::Number(n) => Ok(n as usize),
            Count::Word(w) if w == "auto" => Ok(0),
            Count::Word(w) => Err(de::Error::custom(format!(
                "expected a number or \"auto\", found {w:?}"
            ))),
        }
    }
}

impl EngineConfig {
    /// `synthesis_workers` resolved on this machine for a backend that computes a, b, c on
    /// its device (a GPU) or not (the CPU, whose prover needs the cores too).
    pub fn synthesis_worker_count(&self, gpu: bool) -> usize {
        if self.synthesis_workers > 0 {
            return self.synthesis_workers;
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        if gpu {
            cores
        } else {
            (cores / 2).max(1)
        }
    }

    /// Checks the settings; returns the budget in bytes.
    pub fn validate(&self) -> Result<u64> {
        ensure!(
            (0..=19).contains(&self.synthesis_nice),
            "synthesis_nice must lie in 0..=19"
        );
        ensure!(
            self.prover_workers_per_device > 0,
            "prover_workers_per_device must be at least 1"
        );
        ensure!(
            self.prove_queue_depth > 0,
            "prove_queue_depth must be at least 1"
        );
        ensure!(self.result_max > 0, "result_max must be at least 1");
        ensure!(
            self.max_queued_jobs > 0,
            "max_queued_jobs must be at least 1"
        );
        ensure!(
            self.max_urgent_jobs > 0,
            "max_urgent_jobs must be at least 1"
        );
        parse_bytes(&self.max_queued_request_bytes).context("max_queued_request_bytes")?;
        self.budget_on(MemInfo::now()?)
    }

    /// `memory_floor` in bytes, checked against the budget `budget`.
    pub fn floor_bytes(&self, budget: u64) -> Result<u64> {
        let floor = parse_bytes(&self.memory_floor).context("memory_floor")?;
        ensure!(
            floor <= budget,
            "memory_floor ({}) is more than the memory budget ({}): urgent work could never \
             hold it",
            gib(floor),
            gib(budget)
        );
        Ok(floor)
    }

    /// `memory_margin` in bytes on a machine of `mem_total` bytes.
    pub fn margin_bytes(&self, mem_total: u64) -> Result<u64> {
        if self.memory_margin.trim().eq_ignore_ascii_case("auto") {
            let queued =
                parse_bytes(&self.max_queued_request_bytes).context("max_queued_request_bytes")?;
            return Ok(auto_margin(mem_total, queued));
        }
        parse_bytes(&self.memory_margin).context("memory_margin")
    }

    /// The memory budget in bytes on a machine whose memory is `mem`.
    pub fn budget_on(&self, mem: MemInfo) -> Result<u64> {
        let margin = self.margin_bytes(mem.total)?;
        let budget = BudgetSetting::parse(&self.memory_budget)
            .context("memory_budget")?
            .resolve_on(margin, mem)?;
        ensure!(budget > 0, "memory_budget must be positive");
        Ok(budget)
    }

    /// `max_queued_request_bytes` in bytes (checked by [`EngineConfig::validate`]; an
    /// unparsable value, possible only without it, admits nothing).
    pub fn max_queued_request_bytes(&self) -> u64 {
        parse_bytes(&self.max_queued_request_bytes).unwrap_or(0)
    }

    /// One `key = value` line per knob, for the start-up log.
    pub fn describe(&self) -> Vec<String> {
        let v = serde_json::to_value(self).expect("config serializes");
        let map = v.as_object().expect("config is an object");
        map.iter().map(|(k, v)| format!("{k} = {v}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_named() {
        let c = EngineConfig {
            synthesis_nice: 40,
            ..Default::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("synthesis_nice"));
        let c = EngineConfig {
            memory_budget: "12 parsecs".into(),
            ..Default::default()
        };
        assert!(format!("{:#}", c.validate().unwrap_err()).contains("memory_budget"));
        let c = EngineConfig {
            memory_budget: "1GiB".into(),
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap(), 1 << 30);
        let c = EngineConfig {
            memory_budget: "1000TiB".into(),
            ..Default::default()
        };
        let err = format!("{:#}", c.validate().unwrap_err());
        assert!(err.contains("more than this machine's memory"), "{err}");
        // auto = MemAvailable − the auto margin (MemAvailable moves with other processes: read
        // around it).
        let before = MemInfo::now().unwrap();
        let margin = auto_margin(before.total, 2 << 30);
        let auto = EngineConfig::default().validate().unwrap() + margin;
        let after = MemInfo::now().unwrap().available;
        let slack = 1 << 30;
        assert!(
            auto + slack >= before.available.min(after)
                && auto <= before.available.max(after) + slack
        );
        assert!(EngineConfig::default()
            .describe()
            .iter()
            .any(|l| l == "synthesis_workers = \"auto\""));
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(EngineConfig::default().synthesis_worker_count(true), cores);
        let two = EngineConfig {
            synthesis_workers: 2,
            ..Default::default()
        };
        assert_eq!(two.synthesis_worker_count(false), 2);
    }

    #[test]
    fn the_auto_budget_leaves_the_machine_what_it_needs() {
        const GIB: u64 = 1 << 30;
        // The H200 box of issue 35: 125 GiB, 123.96 GiB available at start. The old default
        // (MemAvailable − 2 GiB) gave 121.96 GiB, and the daemon was killed at 123.95 GiB of
        // anonymous memory.
        let h200 = MemInfo {
            total: 125 * GIB,
            available: 123_960 * GIB / 1000,
        };
        let defaults = EngineConfig::default();
        let margin = defaults.margin_bytes(h200.total).unwrap();
        assert_eq!(
            margin,
            5 * GIB + 2 * GIB + 2 * GIB,
            "4%, the queued requests, 2 GiB"
        );
        let budget = defaults.budget_on(h200).unwrap();
        assert_eq!(budget, h200.available - 9 * GIB);
        // What a 32 GiB PoRep set streamed from host memory holds (44.13 GiB key, 6.84 GiB of
        // matrices) still leaves room for 16 partitions of 3.88 GiB.
        let set = 44_130 * GIB / 1000 + 6_840 * GIB / 1000;
        assert!((budget - set) / (3_880 * GIB / 1000) >= 16);
        // A fixed margin and a fixed budget are taken as given.
        let fixed = EngineConfig {
            memory_margin: "2GiB".into(),
            ..Default::default()
        };
        assert_eq!(fixed.budget_on(h200).unwrap(), h200.available - 2 * GIB);
        let set_by_hand = EngineConfig {
            memory_budget: "88GiB".into(),
            ..Default::default()
        };
        assert_eq!(set_by_hand.budget_on(h200).unwrap(), 88 * GIB);
        // A small machine whose margin leaves nothing: named.
        let tiny = MemInfo {
            total: 4 * GIB,
            available: 3 * GIB,
        };
        let err = format!("{:#}", defaults.budget_on(tiny).unwrap_err());
        assert!(
            err.contains("memory_margin") && err.contains("MemAvailable"),
            "{err}"
        );
    }

    #[test]
    fn a_floor_above_the_budget_is_named() {
        const GIB: u64 = 1 << 30;
        let floor = |f: &str| EngineConfig {
            memory_floor: f.into(),
            ..Default::default()
        };
        assert_eq!(floor("8GiB").floor_bytes(64 * GIB).unwrap(), 8 * GIB);
        assert_eq!(EngineConfig::default().floor_bytes(GIB).unwrap(), 0);
        let err = format!("{:#}", floor("80GiB").floor_bytes(64 * GIB).unwrap_err());
        assert!(
            err.contains("memory_floor") && err.contains("budget"),
            "{err}"
        );
        let err = format!("{:#}", floor("lots").floor_bytes(64 * GIB).unwrap_err());
        assert!(err.contains("memory_floor"), "{err}");
    }
}
