//! Engine status as the GetStatus message and as Prometheus text.

use std::fmt::Write;

use zkforge_engine::{DeviceStatus, EngineStatus, Histogram, KeyTier, KindCounts, Measure};
use zkforge_filecoin::ProofKind;

use crate::pb;
use crate::pb::srs_status::Tier;

pub fn status_response(s: &EngineStatus) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: s
            .devices
            .iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.ordinal,
                name: d.name.clone(),
                vram_total_bytes: d.memory_total_bytes,
                vram_free_bytes: d.memory_free_bytes,
                current_job_id: d.current_job.map(|j| j.to_string()).unwrap_or_default(),
                current_proof_kind: d.current_kind.map(cuzk_kind).unwrap_or_default().into(),
            })
            .collect(),
        loaded_srs: s
            .loaded_srs
            .iter()
            .map(|l| pb::SrsStatus {
                circuit_id: l.circuit_id.clone(),
                tier: match l.tier {
                    KeyTier::Device => Tier::Hot,
                    KeyTier::Host => Tier::Warm,
                    KeyTier::File => Tier::Cold,
                } as i32,
                size_bytes: l.bytes,
                ref_count: l.ref_count as u32,
            })
            .collect(),
        queues: s
            .queues
            .iter()
            .map(|(k, c)| pb::QueueStatus {
                proof_kind: cuzk_kind(*k).into(),
                pending: c.pending as u32,
                in_progress: c.in_progress as u32,
            })
            .collect(),
        total_proofs_completed: s.completed,
        total_proofs_failed: s.failed,
        uptime_seconds: s.uptime_secs as u64,
        pinned_memory_bytes: s.pinned_memory_bytes,
        pinned_memory_limit_bytes: s.pinned_memory_limit_bytes,
    }
}

/// A proof kind as cuzk names it in its status strings.
fn cuzk_kind(k: ProofKind) -> &'static str {
    match k {
        ProofKind::PoRep => "porep_c2",
        ProofKind::SnapDeals => "snap_update",
        ProofKind::WindowPost => "window_post",
        ProofKind::WinningPost => "winning_post",
    }
}

/// The latency histograms' families, in exposition order: name, help, and the label a
/// measure adds beside `kind`.
const LATENCY_FAMILIES: [(&str, &str); 6] = [
    (
        "zkforge_job_queue_wait_seconds",
        "Time from a job's submission to its first partition's synthesis start (its parameter \
         load and any wait for memory included), by proof kind.",
    ),
    (
        "zkforge_params_load_seconds",
        "Time to load a parameter set (key and recorded matrices) for a job that found it not \
         resident, by proof kind.",
    ),
    (
        "zkforge_partition_synthesis_seconds",
        "Witness generation of one partition, by proof kind.",
    ),
    (
        "zkforge_partition_gpu_phase_seconds",
        "One device phase of one partition (h2d, spmv, ntt, msm), timed with device events, by \
         proof kind and phase.",
    ),
    (
        "zkforge_partition_prove_seconds",
        "One partition's prover call, wall time (the engine's device lock wait excluded, a CUDA \
         kernel lock wait included), by proof kind.",
    ),
    (
        "zkforge_job_duration_seconds",
        "Time from a job's submission to its end, by proof kind and outcome.",
    ),
];

/// The family a measure is exported as, and the label it adds beside `kind`.
fn latency_family(m: Measure) -> (&'static str, Option<(&'static str, &'static str)>) {
    match m {
        Measure::QueueWait => ("zkforge_job_queue_wait_seconds", None),
        Measure::ParamsLoad => ("zkforge_params_load_seconds", None),
        Measure::Synthesis => ("zkforge_partition_synthesis_seconds", None),
        Measure::GpuPhase(phase) => (
            "zkforge_partition_gpu_phase_seconds",
            Some(("phase", phase)),
        ),
        Measure::Prove => ("zkforge_partition_prove_seconds", None),
        Measure::Job(outcome) => ("zkforge_job_duration_seconds", Some(("outcome", outcome))),
    }
}

const KINDS: [ProofKind; 4] = [
    ProofKind::PoRep,
    ProofKind::SnapDeals,
    ProofKind::WindowPost,
    ProofKind::WinningPost,
];
const OUTCOMES: [&str; 3] = ["completed", "failed", "cancelled"];

/// Text exposition format 0.0.4 being written: a family's HELP and TYPE, then its samples.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape_label_value(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// A gauge or counter with one sample per label set.
    fn metric<'a>(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Vec<(&'a str, &'a str)>, f64)>,
    ) {
        self.family(name, kind, help);
        for (labels, value) in samples {
            self.sample(name, &labels, value);
        }
    }

    /// One histogram series: `_bucket` per bound and +Inf, `_sum`, `_count`.
    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let bucket = format!("{name}_bucket");
        for (bound, n) in h.upper_bounds_secs.iter().zip(&h.cumulative_counts) {
            let le = bound.to_string();
            self.sample(&bucket, &[labels, &[("le", &le)]].concat(), *n as f64);
        }
        let inf = [labels, &[("le", "+Inf")]].concat();
        self.sample(&bucket, &inf, h.count as f64);
        self.sample(&format!("{name}_sum"), labels, h.sum_secs);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }
}

/// Label values are ours (kinds, outcomes, phases), but a backend's phase name must not be
/// able to break the exposition.
fn escape_label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus text exposition of the engine's status: job counters, queue gauges, latency
/// histograms (seconds) by proof kind, device busy time, memory.
pub fn prometheus(s: &EngineStatus) -> String {
    let mut out = Exposition::default();
    jobs(&mut out, s);
    queues(&mut out, s);
    latency(&mut out, s);
    devices(&mut out, s);
    memory(&mut out, s);
    out.metric(
        "zkforge_build_info",
        "gauge",
        "Always 1; the daemon's version as a label.",
        [(vec![("version", env!("CARGO_PKG_VERSION"))], 1.0)],
    );
    out.metric(
        "zkforge_uptime_seconds",
        "gauge",
        "Seconds since start.",
        [(vec![], s.uptime_secs)],
    );
    out.text
}

fn jobs(out: &mut Exposition, s: &EngineStatus) {
    out.metric(
        "zkforge_jobs_total",
        "counter",
        "Jobs finished, by outcome (zkforge_proofs_total split by proof kind).",
        [
            (vec![("outcome", "completed")], s.completed as f64),
            (vec![("outcome", "failed")], s.failed as f64),
            (vec![("outcome", "cancelled")], s.cancelled as f64),
        ],
    );
    // Every (kind, outcome) from the start, at 0 until it happens: a series appearing at its
    // first failure would hide that failure from increase() and rate().
    let kinds: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
    let finished = |kind: &str, outcome: &str| {
        s.outcomes
            .iter()
            .filter(|(k, o, _)| k == kind && o == outcome)
            .map(|(_, _, n)| *n)
            .sum::<u64>() as f64
    };
    let samples = kinds.iter().flat_map(|kind| {
        OUTCOMES.iter().map(move |outcome| {
            let n = finished(kind, outcome);
            (vec![("kind", kind.as_str()), ("outcome", *outcome)], n)
        })
    });
    out.metric(
        "zkforge_proofs_total",
        "counter",
        "Proof requests (jobs) finished, by proof kind and outcome.",
        samples.collect::<Vec<_>>(),
    );
}

fn queues(out: &mut Exposition, s: &EngineStatus) {
    let kinds: Vec<(String, &KindCounts)> =
        s.queues.iter().map(|(k, c)| (k.to_string(), c)).collect();
    let mut by_kind = |name: &str, help: &str, f: fn(&KindCounts) -> usize| {
        let samples = kinds
            .iter()
            .map(|(k, c)| (vec![("kind", k.as_str())], f(c) as f64));
        out.metric(name, "gauge", help, samples.collect::<Vec<_>>());
    };
    by_kind(
        "zkforge_partitions_pending",
        "Partitions waiting for synthesis.",
        |c| c.pending,
    );
    by_kind(
        "zkforge_partitions_in_progress",
        "Partitions being synthesized or proved.",
        |c| c.in_progress,
    );
    by_kind(
        "zkforge_jobs_queued",
        "Unfinished jobs none of whose partitions has started synthesis.",
        |c| c.jobs_queued,
    );
    by_kind(
        "zkforge_jobs_running",
        "Unfinished jobs with a partition started.",
        |c| c.jobs_running,
    );
}

fn latency(out: &mut Exposition, s: &EngineStatus) {
    for (family, help) in LATENCY_FAMILIES {
        out.family(family, "histogram", help);
        for series in &s.latency {
            let (name, extra) = latency_family(series.measure);
            if name != family {
                continue;
            }
            let kind = series.kind.to_string();
            let mut labels = vec![("kind", kind.as_str())];
            labels.extend(extra);
            out.histogram(name, &labels, &series.histogram);
        }
    }
}

fn devices(out: &mut Exposition, s: &EngineStatus) {
    // The CPU backend has no devices but one prover lane: labelled "cpu".
    let label = |i: usize| match s.devices.get(i) {
        Some(d) => d.ordinal.to_string(),
        None if s.devices.is_empty() => "cpu".to_string(),
        None => i.to_string(),
    };
    let labels: Vec<String> = (0..s.device_busy_secs.len()).map(label).collect();
    out.metric(
        "zkforge_device_busy_seconds_total",
        "counter",
        "Seconds a prover device was busy: the CUDA kernel lock held, or the whole prover call \
         on the CPU backend.",
        labels
            .iter()
            .zip(&s.device_busy_secs)
            .map(|(d, secs)| (vec![("device", d.as_str())], *secs))
            .collect::<Vec<_>>(),
    );
    let ordinals: Vec<String> = s.devices.iter().map(|d| d.ordinal.to_string()).collect();
    let mut per_device = |name: &str, help: &str, f: fn(&DeviceStatus) -> u64| {
        let samples = s
            .devices
            .iter()
            .zip(&ordinals)
            .map(|(d, o)| (vec![("device", o.as_str())], f(d) as f64));
        out.metric(name, "gauge", help, samples.collect::<Vec<_>>());
    };
    per_device(
        "zkforge_vram_budget_bytes",
        "Device memory the backend may reserve, per GPU.",
        |d| d.vram_budget_bytes,
    );
    per_device(
        "zkforge_vram_reserved_bytes",
        "Device memory reserved by keys and partitions, per GPU.",
        |d| d.vram_reserved_bytes,
    );
}

fn memory(out: &mut Exposition, s: &EngineStatus) {
    let mut gauge = |name: &str, help: &str, value: f64| {
        out.metric(name, "gauge", help, [(vec![], value)]);
    };
    gauge(
        "zkforge_memory_budget_bytes",
        "Host memory budget.",
        s.memory_budget_bytes as f64,
    );
    gauge(
        "zkforge_memory_used_bytes",
        "Host memory reserved, idle pooled buffers included.",
        s.memory_used_bytes as f64,
    );
    gauge(
        "zkforge_memory_peak_bytes",
        "Highest host memory reserved since start.",
        s.memory_peak_bytes as f64,
    );
    gauge(
        "zkforge_process_resident_bytes",
        "Resident memory of the daemon (VmRSS).",
        s.process_rss_bytes as f64,
    );
    gauge(
        "zkforge_process_peak_resident_bytes",
        "Peak resident memory of the daemon (VmHWM).",
        s.process_peak_rss_bytes as f64,
    );
    gauge(
        "zkforge_srs_loaded",
        "Parameter sets resident.",
        s.loaded_srs.len() as f64,
    );
    gauge(
        "zkforge_pinned_memory_bytes",
        "Page-locked host memory held for witness staging.",
        s.pinned_memory_bytes as f64,
    );
    gauge(
        "zkforge_pinned_memory_limit_bytes",
        "Most page-locked host memory kept idle for reuse (gpu.staging_pool).",
        s.pinned_memory_limit_bytes as f64,
    );
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};
    use std::sync::Arc;

    use zkforge_engine::{Engine, EngineConfig, LatencySeries, ParamsDir};
    use zkforge_groth16::CpuBackend;

    use super::*;

    /// One sample line: metric name, labels, value.
    #[derive(Debug)]
    struct Sample {
        name: String,
        labels: BTreeMap<String, String>,
        value: f64,
    }

    fn is_name(s: &str, colon: bool) -> bool {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':');
        s.chars().next().is_some_and(|c| !c.is_ascii_digit()) && s.chars().all(ok)
    }

    fn parse_value(v: &str) -> Result<f64, String> {
        match v {
            "+Inf" => Ok(f64::INFINITY),
            "-Inf" => Ok(f64::NEG_INFINITY),
            "NaN" => Ok(f64::NAN),
            _ => v.parse().map_err(|_| format!("bad value {v:?}")),
        }
    }

    /// `{a="x",b="y\"z"}` → labels; the rest of the line after the closing brace.
    fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
        let mut labels = BTreeMap::new();
        let mut rest = s.strip_prefix('{').ok_or("no {")?;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                return Ok((labels, after));
            }
            let (name, after) = rest.split_once("=\"").ok_or("no =\" after a label")?;
            if !is_name(name, false) {
                return Err(format!("bad label name {name:?}"));
            }
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next().ok_or("unterminated label value")? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    (_, c) => value.push(c),
                }
            };
            if labels.insert(name.to_string(), value).is_some() {
                return Err(format!("label {name} twice"));
            }
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }

    /// Parses the text format and checks what Prometheus would refuse or what would mislead
    /// a query: each sample under its family's TYPE, families once, series once, counters
    /// named `_total`, histograms' buckets cumulative up to +Inf == `_count`, with `_sum`.
    /// Returns family → type and the samples.
    fn parse(text: &str) -> Result<(BTreeMap<String, String>, Vec<Sample>), String> {
        let mut families = BTreeMap::new();
        let mut samples = Vec::new();
        let mut current: Option<(String, String)> = None;
        let mut series = HashSet::new();
        for (n, line) in text.lines().enumerate() {
            let err = |e: String| format!("line {}: {e}: {line:?}", n + 1);
            if let Some(help) = line.strip_prefix("# HELP ") {
                let (name, _) = help.split_once(' ').ok_or_else(|| err("no help".into()))?;
                if families.contains_key(name) {
                    return Err(err(format!("family {name} again")));
                }
                continue;
            }
            if let Some(ty) = line.strip_prefix("# TYPE ") {
                let (name, kind) = ty.split_once(' ').ok_or_else(|| err("no type".into()))?;
                if !["counter", "gauge", "histogram"].contains(&kind) || !is_name(name, true) {
                    return Err(err("bad TYPE".into()));
                }
                if families
                    .insert(name.to_string(), kind.to_string())
                    .is_some()
                {
                    return Err(err(format!("family {name} again")));
                }
                if kind == "counter" && !name.ends_with("_total") {
                    return Err(err("a counter's name ends in _total".into()));
                }
                current = Some((name.to_string(), kind.to_string()));
                continue;
            }
            let name_end = line
                .find(['{', ' '])
                .ok_or_else(|| err("no value".into()))?;
            let name = &line[..name_end];
            let (labels, rest) = if line[name_end..].starts_with('{') {
                parse_labels(&line[name_end..]).map_err(err)?
            } else {
                (BTreeMap::new(), &line[name_end..])
            };
            let value = parse_value(
                rest.strip_prefix(' ')
                    .ok_or_else(|| err("no space".into()))?,
            )
            .map_err(err)?;
            let (family, kind) = current
                .as_ref()
                .ok_or_else(|| err("before any TYPE".into()))?;
            let belongs = name == family
                || (kind == "histogram"
                    && ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|s| name.strip_suffix(s) == Some(family)));
            if !belongs || !is_name(name, true) {
                return Err(err(format!("{name} outside its family {family}")));
            }
            if kind == "counter" && (value < 0.0 || value.is_nan()) {
                return Err(err("negative counter".into()));
            }
            if !series.insert(format!("{name}{labels:?}")) {
                return Err(err("series twice".into()));
            }
            samples.push(Sample {
                name: name.to_string(),
                labels,
                value,
            });
        }
        for (family, _) in families.iter().filter(|(_, k)| *k == "histogram") {
            check_histogram(family, &samples)?;
        }
        Ok((families, samples))
    }

    /// A histogram's series (its labels without `le`) → its buckets (`le`, count) in order.
    type SeriesBuckets = BTreeMap<Vec<(String, String)>, Vec<(f64, f64)>>;

    fn check_histogram(family: &str, samples: &[Sample]) -> Result<(), String> {
        let bucket = format!("{family}_bucket");
        let mut buckets = SeriesBuckets::new();
        for s in samples.iter().filter(|s| s.name == bucket) {
            let le = s.labels.get("le").ok_or(format!("{bucket} without le"))?;
            let mut key: Vec<_> = s.labels.clone().into_iter().collect();
            key.retain(|(k, _)| k != "le");
            buckets
                .entry(key)
                .or_default()
                .push((parse_value(le)?, s.value));
        }
        for (labels, b) in &buckets {
            let find = |suffix: &str| {
                samples
                    .iter()
                    .find(|s| {
                        s.name == format!("{family}{suffix}")
                            && s.labels.clone().into_iter().collect::<Vec<_>>() == *labels
                    })
                    .map(|s| s.value)
                    .ok_or(format!("{family}{suffix} missing for {labels:?}"))
            };
            let (count, _sum) = (find("_count")?, find("_sum")?);
            let ordered = b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1);
            if !ordered {
                return Err(format!(
                    "{family} {labels:?}: buckets not cumulative: {b:?}"
                ));
            }
            match b.last() {
                Some(&(le, n)) if le == f64::INFINITY && n == count => {}
                _ => return Err(format!("{family} {labels:?}: no +Inf equal to _count")),
            }
        }
        Ok(())
    }

    /// A real status (CPU engine, no jobs) with histograms and counters as jobs would leave.
    fn status_with_observations() -> EngineStatus {
        let engine = Engine::start(
            EngineConfig {
                memory_budget: "1GiB".into(),
                ..Default::default()
            },
            Arc::new(CpuBackend::new()),
            Box::new(ParamsDir(tempfile::tempdir().unwrap().keep())),
        )
        .unwrap();
        let mut s = engine.status();
        let series = |kind, measure, values: &[f64]| {
            let mut histogram = Histogram::new();
            values.iter().for_each(|v| histogram.observe(*v));
            LatencySeries {
                kind,
                measure,
                histogram,
            }
        };
        s.latency = vec![
            series(ProofKind::PoRep, Measure::QueueWait, &[0.2, 95.0]),
            series(
                ProofKind::PoRep,
                Measure::GpuPhase("msm"),
                &[1.03, 0.99, 1.2],
            ),
            series(ProofKind::PoRep, Measure::GpuPhase("ntt"), &[0.41]),
            series(ProofKind::PoRep, Measure::Job("completed"), &[21.4, 900.0]),
            series(ProofKind::WinningPost, Measure::Prove, &[0.004]),
            series(
                ProofKind::WinningPost,
                Measure::GpuPhase("odd\"name"),
                &[0.1],
            ),
        ];
        s.outcomes = vec![("porep".into(), "completed".into(), 2)];
        s.completed = 2;
        s.device_busy_secs = vec![2.5];
        s
    }

    fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        samples
            .iter()
            .find(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
    }

    #[test]
    fn the_exposition_parses_and_its_histograms_add_up() {
        let text = prometheus(&status_with_observations());
        let (families, samples) = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        for (family, _) in LATENCY_FAMILIES {
            assert_eq!(families[family], "histogram", "{family}");
        }
        let msm = [("kind", "porep"), ("phase", "msm")];
        let bucket = |le| {
            let labels = [msm[0], msm[1], ("le", le)];
            value(
                &samples,
                "zkforge_partition_gpu_phase_seconds_bucket",
                &labels,
            )
        };
        assert_eq!(bucket("0.5"), Some(0.0));
        assert_eq!(bucket("1"), Some(1.0));
        assert_eq!(bucket("2.5"), Some(3.0));
        assert_eq!(bucket("+Inf"), Some(3.0));
        let sum = value(&samples, "zkforge_partition_gpu_phase_seconds_sum", &msm).unwrap();
        assert!((sum - 3.22).abs() < 1e-9, "{sum}");
        // 900 s is past the last bound: in +Inf only.
        let job = [("kind", "porep"), ("outcome", "completed")];
        let labels = [job[0], job[1], ("le", "600")];
        assert_eq!(
            value(&samples, "zkforge_job_duration_seconds_bucket", &labels),
            Some(1.0)
        );
        assert_eq!(
            value(&samples, "zkforge_job_duration_seconds_count", &job),
            Some(2.0)
        );
        // A label value with a quote round-trips through the escaping.
        let odd = [("kind", "winning-post"), ("phase", "odd\"name")];
        assert_eq!(
            value(&samples, "zkforge_partition_gpu_phase_seconds_count", &odd),
            Some(1.0)
        );
        // Counters exist for every kind and outcome from the start.
        let proofs = |kind, outcome| {
            let labels = [("kind", kind), ("outcome", outcome)];
            value(&samples, "zkforge_proofs_total", &labels)
        };
        assert_eq!(proofs("porep", "completed"), Some(2.0));
        assert_eq!(proofs("snap", "failed"), Some(0.0));
        assert_eq!(
            value(
                &samples,
                "zkforge_device_busy_seconds_total",
                &[("device", "cpu")]
            ),
            Some(2.5)
        );
        // Names dashboards already use are unchanged.
        assert!(text.contains("zkforge_jobs_total{outcome=\"completed\"} 2\n"));
        assert!(text.contains("zkforge_memory_budget_bytes 1073741824\n"));
        assert!(text.contains("zkforge_partitions_pending{kind=\"porep\"} 0\n"));
        assert_eq!(
            value(&samples, "zkforge_jobs_queued", &[("kind", "window-post")]),
            Some(0.0)
        );
        assert!(!text.contains("_ms"), "base units only");
        assert!(!text.contains(" -0\n"), "zero is written 0");
    }

    #[test]
    fn the_parser_refuses_what_prometheus_would() {
        let family = "# HELP h_seconds x\n# TYPE h_seconds histogram\n";
        let good = format!(
            "{family}h_seconds_bucket{{le=\"1\"}} 1\nh_seconds_bucket{{le=\"+Inf\"}} 2\n\
             h_seconds_sum 3\nh_seconds_count 2\n"
        );
        assert!(parse(&good).is_ok(), "{:?}", parse(&good));
        for (broken, why) in [
            (good.replace("le=\"1\"} 1", "le=\"1\"} 3"), "not cumulative"),
            (
                good.replace("h_seconds_count 2", "h_seconds_count 5"),
                "+Inf",
            ),
            (good.replace("h_seconds_sum 3\n", ""), "_sum missing"),
            (good.replace("+Inf", "2"), "+Inf"),
            (format!("{good}other 1\n"), "outside its family"),
            (format!("{good}h_seconds_sum 3\n"), "twice"),
            ("# TYPE c counter\nc 1\n".to_string(), "_total"),
            ("# TYPE g gauge\ng{a=\"x} 1\n".to_string(), "unterminated"),
            ("# TYPE g gauge\ng 1 2\n".to_string(), "bad value"),
        ] {
            let e = parse(&broken).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
    }
}
