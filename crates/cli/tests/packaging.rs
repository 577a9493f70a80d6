//! What a provider installs from `packaging/` and reads in docs/operations.md, checked against
//! the daemon itself: the example config is accepted by `zkforge config print` and says what
//! it sets; the systemd unit agrees with it (socket directory, shutdown deadline, file
//! descriptors); every query of the Grafana dashboard and of the doc's PromQL names a metric
//! the daemon exports (no rate() of a gauge); and a daemon that proved exports its latency
//! histograms and counters under those names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod common;

use common::{params_2kib, run_ok, winning_post_batch, zkforge};
use zkforge_bench_client::{run_batch, DaemonAddr};
use zkforge_engine::{Engine, EngineConfig, ParamsDir};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;
use zkforge_groth16::CpuBackend;
use zkforge_server::{Access, Listen, Running};

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `[section] key = value` of a TOML file, flattened to "section.key".
fn toml_keys(text: &str) -> BTreeMap<String, toml::Value> {
    let doc: toml::Table = toml::from_str(text).unwrap();
    let mut keys = BTreeMap::new();
    for (section, table) in doc {
        for (key, value) in table.as_table().unwrap() {
            keys.insert(format!("{section}.{key}"), value.clone());
        }
    }
    keys
}

#[test]
fn the_example_config_is_accepted_and_says_what_it_sets() {
    let text = read("packaging/zkforge.toml");
    let work = tempfile::tempdir().unwrap();
    let check = |text: &str| {
        let path = work.path().join("zkforge.toml");
        std::fs::write(&path, text).unwrap();
        zkforge()
            .args(["config", "print", "--config"])
            .arg(&path)
            .output()
            .unwrap()
    };
    let mut out = check(&text);
    let example = toml_keys(&text);
    let budget = example["engine.memory_budget"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tested = text.clone();
    if !out.status.success() {
        // The example's budget is sized for a GPU box; a smaller machine refuses exactly that
        // and nothing else, which a budget it has shows.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("more than this machine's memory"),
            "{stderr}"
        );
        tested = text.replace(
            &format!("memory_budget = \"{budget}\""),
            "memory_budget = \"256MiB\"",
        );
        assert_ne!(tested, text);
        out = check(&tested);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every key the example sets is in effect, with its value.
    let effective = toml_keys(&stdout);
    for (key, value) in toml_keys(&tested) {
        assert_eq!(effective.get(&key), Some(&value), "{key}");
    }
    assert_eq!(example["daemon.backend"].as_str(), Some("cuda"));
}

/// The unit's `Key=value` lines; a key set twice (Environment) keeps every value.
fn unit_settings(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut settings: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('[') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not Key=value: {line:?}"));
        settings
            .entry(key.to_string())
            .or_default()
            .push(value.to_string());
    }
    settings
}

#[test]
fn the_systemd_unit_agrees_with_the_example_config() {
    let unit = unit_settings(&read("packaging/zkforge.service"));
    let config = toml_keys(&read("packaging/zkforge.toml"));
    let one = |key: &str| -> &str {
        match unit.get(key).map(Vec::as_slice) {
            Some([v]) => v,
            other => panic!("{key}: {other:?}"),
        }
    };
    assert_eq!(one("Restart"), "on-failure");
    assert_eq!(one("LimitMEMLOCK"), "infinity");
    assert_ne!(one("User"), "root");
    // Both listeners may hold max_connections sockets, beside files and the driver's.
    let max_connections = config["limits.max_connections"].as_integer().unwrap();
    let nofile: i64 = one("LimitNOFILE").parse().unwrap();
    assert!(nofile >= 2 * max_connections + 256, "{nofile}");
    // systemd must not SIGKILL a daemon still draining its jobs.
    let deadline = config["daemon.shutdown_deadline_secs"]
        .as_integer()
        .unwrap();
    let stop: i64 = one("TimeoutStopSec").parse().unwrap();
    assert!(stop > deadline, "TimeoutStopSec {stop} <= {deadline}");
    // The socket lives in the directory systemd creates for it.
    let listen = config["daemon.listen"].as_str().unwrap();
    let socket = Path::new(listen.strip_prefix("unix://").unwrap());
    let run_dir = Path::new("/run").join(one("RuntimeDirectory"));
    assert_eq!(socket.parent(), Some(run_dir.as_path()));
    // The parameter cache in the environment is the config's (tools run by hand agree).
    let params = config["daemon.params"].as_str().unwrap();
    let env = &unit["Environment"];
    assert!(
        env.contains(&format!("FIL_PROOFS_PARAMETER_CACHE={params}")),
        "{env:?}"
    );
    // A JIT-compiled kernel image persists for a user without a home: the driver's cache is in
    // the directory systemd keeps for the unit, at a size the driver accepts (at most 4 GiB).
    let cache_dir = Path::new("/var/cache").join(one("CacheDirectory"));
    assert!(
        env.contains(&format!("CUDA_CACHE_PATH={}", cache_dir.display())),
        "{env:?}"
    );
    let max_size: u64 = env
        .iter()
        .find_map(|e| e.strip_prefix("CUDA_CACHE_MAXSIZE="))
        .expect("CUDA_CACHE_MAXSIZE")
        .parse()
        .unwrap();
    assert!((256 << 20..=4 << 30).contains(&max_size), "{max_size}");
    // A private /var/tmp would hide the shared parameter cache.
    assert!(unit.get("PrivateTmp").is_none_or(|v| v == &["false"]));
    let exec: Vec<&str> = one("ExecStart").split_whitespace().collect();
    assert_eq!(
        exec[1..],
        ["daemon", "--config", "/etc/zkforge/zkforge.toml"]
    );
    let help = run_ok(zkforge().args(["daemon", "--help"]));
    assert!(help.contains("--config"), "{help}");
}

/// Metric names in a PromQL expression: `zkforge_` and what follows of [a-z0-9_].
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("zkforge_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

/// Family → type of a daemon's /metrics (the `# TYPE` lines).
fn families(metrics: &str) -> BTreeMap<String, String> {
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (name, kind) = l.split_once(' ').unwrap();
            (name.to_string(), kind.to_string())
        })
        .collect()
}

/// Checks that every metric `expr` names is exported, with a type its use suits; returns
/// the families it uses.
fn check_expr(expr: &str, exported: &BTreeMap<String, String>) -> BTreeSet<String> {
    let names = metric_names(expr);
    assert!(!names.is_empty(), "no zkforge metric in {expr:?}");
    let mut used = BTreeSet::new();
    for name in names {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|f| exported.get(*f).is_some_and(|t| t == "histogram"))
            .unwrap_or(&name);
        let kind = exported
            .get(family)
            .unwrap_or_else(|| panic!("{name} is not exported (in {expr:?})"));
        if kind == "gauge" {
            for f in ["rate(", "increase(", "irate("] {
                assert!(!expr.contains(&format!("{f}{name}")), "{f} of gauge {name}");
            }
        }
        if kind == "histogram" {
            assert_ne!(
                name, family,
                "a histogram is queried by its series: {expr:?}"
            );
        }
        used.insert(family.to_string());
    }
    used
}

/// The metric families of a fresh daemon, as its HTTP /metrics serves them.
async fn exported_families() -> BTreeMap<String, String> {
    let engine = Engine::start(
        EngineConfig {
            memory_budget: "256MiB".into(),
            ..Default::default()
        },
        Arc::new(CpuBackend::new()),
        Box::new(ParamsDir(tempfile::tempdir().unwrap().keep())),
    )
    .unwrap();
    let (metrics, stop) = serve_metrics(Arc::new(engine)).await;
    let _ = stop.send(());
    families(&metrics)
}

/// Starts /metrics for `engine`, fetches it once; the sender stops the server.
async fn serve_metrics(engine: Arc<Engine>) -> (String, tokio::sync::oneshot::Sender<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(zkforge_server::serve_http(
        engine,
        "127.0.0.1:0".parse().unwrap(),
        Default::default(),
        move |a| {
            let _ = ready_tx.send(a);
        },
        async {
            let _ = stopped.await;
        },
    ));
    let addr = ready_rx.await.unwrap();
    (http_get(addr, "/metrics").await, stop)
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out[out.find("\r\n\r\n").unwrap() + 4..].to_string()
}

/// Every `"expr"` and template `"query"` string of a dashboard.
fn dashboard_queries(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr" | "definition", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => dashboard_queries(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| dashboard_queries(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_the_docs_query_only_what_the_daemon_exports() {
    let exported = exported_families().await;
    assert!(exported.len() > 20, "{exported:?}");

    let text = read("packaging/grafana/zkforge-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dashboard["uid"], "zkforge-overview");
    let panels = dashboard["panels"].as_array().unwrap();
    let ids: BTreeSet<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    let mut queries = Vec::new();
    dashboard_queries(&dashboard, &mut queries);
    let mut used = BTreeSet::new();
    for q in &queries {
        used.extend(check_expr(q, &exported));
    }
    // The panels the dashboard is for.
    for family in [
        "zkforge_proofs_total",
        "zkforge_jobs_queued",
        "zkforge_device_busy_seconds_total",
        "zkforge_partition_gpu_phase_seconds",
        "zkforge_memory_used_bytes",
        "zkforge_memory_budget_bytes",
    ] {
        assert!(used.contains(family), "no panel uses {family}");
    }
    assert!(
        queries.iter().any(|q| q.contains("outcome=~\"failed")),
        "a failures panel"
    );

    // The PromQL in docs/operations.md: ```promql blocks, one expression a line.
    let doc = read("docs/operations.md");
    let mut blocks = 0;
    for block in doc.split("```promql\n").skip(1) {
        blocks += 1;
        let body = &block[..block.find("```").unwrap()];
        for line in body.lines().filter(|l| l.contains("zkforge_")) {
            check_expr(line, &exported);
        }
    }
    assert!(blocks >= 3, "{blocks} promql blocks in docs/operations.md");
}

/// A sample's value from exposition text, by its exact name and labels.
fn sample(metrics: &str, series: &str) -> f64 {
    let prefix = format!("{series} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_that_proved_exports_its_histograms_and_counters() {
    let dir = params_2kib(ProofKind::WinningPost);
    let fx = tempfile::tempdir().unwrap();
    fixtures::make(2048, fx.path(), 47).unwrap();
    let engine = Arc::new(
        Engine::start(
            EngineConfig::default(),
            Arc::new(CpuBackend::new()),
            Box::new(ParamsDir(dir)),
        )
        .unwrap(),
    );
    let sock_dir = tempfile::tempdir().unwrap();
    let sock = sock_dir.path().join("zkforge.sock");
    let daemon = Running::start(
        engine.clone(),
        Listen::Unix(sock.clone()),
        Access::default(),
    )
    .await
    .unwrap();
    let config = winning_post_batch(DaemonAddr::Unix(sock), fx.path(), 2, 1);
    let report = run_batch(&config).await.unwrap();
    assert_eq!(report.completed, 2, "{:#?}", report.proofs);

    let (m, stop) = serve_metrics(engine).await;
    let _ = stop.send(());
    let kind = "kind=\"winning-post\"";
    let done = format!("{kind},outcome=\"completed\"");
    assert_eq!(sample(&m, &format!("zkforge_proofs_total{{{done}}}")), 2.0);
    assert_eq!(
        sample(
            &m,
            &format!("zkforge_proofs_total{{{kind},outcome=\"failed\"}}")
        ),
        0.0
    );
    // One job, one partition each: two of every per-job and per-partition measure, one load.
    for family in [
        "zkforge_job_queue_wait_seconds",
        "zkforge_partition_synthesis_seconds",
        "zkforge_partition_prove_seconds",
    ] {
        assert_eq!(
            sample(&m, &format!("{family}_count{{{kind}}}")),
            2.0,
            "{family}"
        );
        let inf = sample(&m, &format!("{family}_bucket{{{kind},le=\"+Inf\"}}"));
        assert_eq!(inf, 2.0, "{family}");
    }
    let job = format!("zkforge_job_duration_seconds_count{{{done}}}");
    assert_eq!(sample(&m, &job), 2.0);
    // The histogram's sum is the daemon's total_ms of each proof (whole ms on the wire).
    let total = sample(&m, &format!("zkforge_job_duration_seconds_sum{{{done}}}"));
    let reported: f64 = report.proofs.iter().map(|p| p.total_ms as f64 / 1e3).sum();
    assert!(
        reported <= total && total < reported + 0.002 + 1e-9,
        "{total} vs {reported}"
    );
    let loads = format!("zkforge_params_load_seconds_count{{{kind}}}");
    assert_eq!(sample(&m, &loads), 1.0, "the key loads once");
    // The CPU prover's lane: busy for the two proofs' prove time.
    let busy = sample(&m, "zkforge_device_busy_seconds_total{device=\"cpu\"}");
    let prove = sample(
        &m,
        &format!("zkforge_partition_prove_seconds_sum{{{kind}}}"),
    );
    assert!(
        busy > 0.0 && (busy - prove).abs() < 1e-6 * prove.max(1.0),
        "{busy} {prove}"
    );
    assert_eq!(sample(&m, &format!("zkforge_jobs_queued{{{kind}}}")), 0.0);
    assert_eq!(sample(&m, "zkforge_jobs_total{outcome=\"completed\"}"), 2.0);
    // The CPU backend times no device phases: the family is declared, with no series.
    assert!(m.contains("# TYPE zkforge_partition_gpu_phase_seconds histogram"));
    assert!(!m.contains("zkforge_partition_gpu_phase_seconds_count{"));
    daemon.stop().await.unwrap();
}
