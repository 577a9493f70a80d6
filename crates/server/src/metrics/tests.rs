//! The exposition, read back by a parser of the Prometheus text format that refuses what
//! Prometheus would: families, names, labels, histograms that add up.

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
            if !["counter", "gauge", "histogram", "summary"].contains(&kind) || !is_name(name, true)
            {
                return Err(err("bad TYPE".into()));
            }
            if families
                .insert(name.to_string(), kind.to_string())
                .is_some()
            {
                return Err(err(format!("family {name} again")));
            }
            // cuzk's names are kept as cuzk wrote them (`cuzk_proofs_completed`, a counter).
            if kind == "counter" && !name.ends_with("_total") && !name.starts_with("cuzk_") {
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
                    .any(|s| name.strip_suffix(s) == Some(family)))
            || (kind == "summary"
                && ["_sum", "_count"]
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
    s.outcomes = vec![(ProofKind::PoRep, "completed", 2)];
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

#[test]
fn get_status_counts_jobs_and_cuzk_names_are_answered() {
    let mut s = status_with_observations();
    // One 32 GiB PoRep queued (10 partitions), one SnapDeals running (16, 3 of them started).
    let counts = |pending, in_progress, jobs_queued, jobs_running| zkforge_engine::KindCounts {
        pending,
        in_progress,
        jobs_queued,
        jobs_running,
    };
    s.queues = vec![
        (ProofKind::PoRep, counts(10, 0, 1, 0)),
        (ProofKind::SnapDeals, counts(13, 3, 0, 1)),
    ];
    s.outcomes.push((ProofKind::WinningPost, "failed", 1));
    s.failed = 1;
    let queues = status_response(&s).queues;
    let of = |kind: &str| {
        let q = queues.iter().find(|q| q.proof_kind == kind).unwrap();
        (q.pending, q.in_progress)
    };
    assert_eq!(of("porep-c2"), (1, 0));
    assert_eq!(of("snap-update"), (0, 1));
    // Partitions stay on /metrics.
    let text = prometheus(&s);
    assert!(
        text.contains("zkforge_partitions_pending{kind=\"porep\"} 10\n"),
        "{text}"
    );

    let cuzk = cuzk_exposition(&s);
    let (_, samples) = parse(&cuzk).unwrap_or_else(|e| panic!("{e}\n{cuzk}"));
    let at = |name, labels: &[(&str, &str)]| value(&samples, name, labels);
    let kind = |k| [("proof_kind", k)];
    assert_eq!(at("cuzk_proofs_completed_total", &[]), Some(2.0));
    assert_eq!(at("cuzk_proofs_failed_total", &[]), Some(1.0));
    assert_eq!(at("cuzk_queue_depth", &[]), Some(1.0));
    assert_eq!(at("cuzk_running_jobs", &[]), Some(1.0));
    assert_eq!(at("cuzk_gpu_workers", &[]), Some(0.0));
    assert_eq!(at("cuzk_proofs_completed", &kind("porep_c2")), Some(2.0));
    assert_eq!(at("cuzk_proofs_failed", &kind("winning_post")), Some(1.0));
    assert_eq!(at("cuzk_proofs_failed", &kind("snap_update")), Some(0.0));
    let count = at("cuzk_proof_duration_seconds_count", &kind("porep_c2"));
    let sum = at("cuzk_proof_duration_seconds_sum", &kind("porep_c2")).unwrap();
    assert_eq!(count, Some(2.0));
    assert!((sum - 921.4).abs() < 1e-6, "{sum}");
    assert!(at("cuzk_uptime_seconds", &[]).is_some());
    // Both expositions together (GetMetrics) name no family twice.
    parse(&format!("{text}{cuzk}")).unwrap();
}
