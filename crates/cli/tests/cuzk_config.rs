//! A provider's cuzk configuration file, as Curio's cuzk daemon takes it (every table and key
//! of extern/cuzk's `cuzk.example.toml`, its deprecated keys, and the keys its config.rs reads
//! that the example leaves out), run by `zkforge daemon --config` and converted by
//! `zkforge config from-cuzk`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{params_2kib, run_ok, zkforge, DaemonProcess};
use zkforge_bench_client::{run_batch, BatchConfig, InputSpec, ProofInput, ProofType};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;

/// A cuzk file listening on `socket` and reading parameters from `params`; every other value
/// is the example's, or one a provider might set.
fn cuzk_file(socket: &Path, params: &Path) -> String {
    format!(
        r#"# cuzk daemon configuration
[daemon]
listen = "unix://{socket}"
status_listen = ""

[srs]
param_cache = "{params}"
preload = ["porep-32g"]

[memory]
total_budget = "auto"
safety_margin = "5GiB"
eviction_min_idle = "5m"
pinned_budget = "50GiB"
working_memory_budget = "80GiB"

[gpus]
devices = []
gpu_threads = 32
gpu_workers_per_device = 2

[scheduler]
max_batch_size = 1
max_batch_wait_ms = 10000
sort_by_type = true

[synthesis]
threads = 0
partition_workers = 12

[pipeline]
enabled = true
synthesis_lookahead = 1
synthesis_concurrency = 1
max_parallel_synthesis = 2
slot_size = 0
max_gpu_queue_depth = 3

[logging]
level = "info"
format = "json"
"#,
        socket = socket.display(),
        params = params.display()
    )
}

/// Every `table.key` the file sets.
fn keys_of(text: &str) -> Vec<String> {
    let table: toml::Table = text.parse().unwrap();
    table
        .iter()
        .flat_map(|(t, v)| {
            let keys = v.as_table().unwrap().keys();
            keys.map(move |k| format!("{t}.{k}"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cuzk_config_file_runs_the_daemon_that_proves_a_2kib_porep() {
    let params = params_2kib(ProofKind::PoRep);
    let work = tempfile::tempdir().unwrap();
    let fx = work.path().join("fx");
    fixtures::make(2048, &fx, 91).unwrap();
    let socket = work.path().join("cuzk.sock");
    let text = cuzk_file(&socket, &params);
    let config = work.path().join("cuzk.toml");
    std::fs::write(&config, &text).unwrap();
    let log = work.path().join("daemon.log");
    // Nothing but the file says where to listen and where the parameters are.
    let child = zkforge()
        .args(["daemon", "--backend=cpu", "--config"])
        .arg(&config)
        .env_remove("RUST_LOG")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut daemon = DaemonProcess {
        child,
        socket: socket.clone(),
        log: log.clone(),
    };
    daemon.wait_for_log("serving cuzk.v1", Duration::from_secs(60));

    let input = ProofInput::load(&InputSpec::from_fixtures(ProofType::Porep, &fx)).unwrap();
    let report = run_batch(&BatchConfig {
        addr: daemon.addr(),
        input: std::sync::Arc::new(input),
        count: 1,
        concurrency: 1,
        connect_timeout: Duration::from_secs(10),
        proof_timeout: Some(Duration::from_secs(600)),
        save_proofs: None,
        verify: true,
        progress: false,
        print_lines: false,
    })
    .await
    .unwrap();
    assert_eq!(report.verified_ok, Some(1), "{report:#?}");
    daemon.stop();

    let log = std::fs::read_to_string(&log).unwrap();
    // One line per key of the file, each saying what it became.
    for key in keys_of(&text) {
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(&format!("cuzk {key} = ")))
            .collect();
        assert_eq!(lines.len(), 1, "{key}: {lines:#?}\n{log}");
        assert!(lines[0].contains(" -> "), "{}", lines[0]);
    }
    for expected in [
        "cuzk gpus.gpu_workers_per_device = 2 -> engine.prover_workers_per_device = 2",
        "cuzk pipeline.max_gpu_queue_depth = 3 -> engine.prove_queue_depth = 3",
        "cuzk srs.preload = [\"porep-32g\"] -> ignored: deprecated in cuzk",
        "cuzk synthesis.partition_workers = 12 -> ignored: deprecated in cuzk",
        "cuzk scheduler.max_batch_size = 1 -> no equivalent",
        // The effective configuration the daemon prints carries the mapped values.
        "config: prove_queue_depth = 3",
        "config: synthesis_workers = 2",
        "config: memory_margin = \"5GiB\"",
    ] {
        assert!(log.contains(expected), "no {expected:?} in\n{log}");
    }
}

#[test]
fn from_cuzk_prints_the_native_file_with_a_comment_per_key() {
    let work = tempfile::tempdir().unwrap();
    let (socket, params) = (
        Path::new("/run/curio/cuzk.sock"),
        Path::new("/data/zk/params"),
    );
    let text = cuzk_file(socket, params);
    let cuzk = work.path().join("cuzk.toml");
    std::fs::write(&cuzk, &text).unwrap();
    let converted = run_ok(zkforge().args(["config", "from-cuzk"]).arg(&cuzk));

    // What the file amounts to, written by hand as a native file: the same TOML once the
    // comments are taken out (the defaults printed by `config print` around it).
    let native = work.path().join("native.toml");
    std::fs::write(
        &native,
        "[daemon]\nlisten = \"unix:///run/curio/cuzk.sock\"\nparams = \"/data/zk/params\"\n\
         [engine]\nmemory_margin = \"5GiB\"\nprover_workers_per_device = 2\n\
         synthesis_threads = 0\nsynthesis_workers = 2\nprove_queue_depth = 3\n\
         memory_budget = \"auto\"\n[gpu]\ndevices = \"all\"\n",
    )
    .unwrap();
    let expected = run_ok(zkforge().args(["config", "print", "--config"]).arg(&native));
    let uncommented: String = converted
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(uncommented, expected, "converted:\n{converted}");

    // Each cuzk key is named in a comment, the mapped ones above the key they set.
    let comments: Vec<&str> = converted.lines().filter(|l| l.starts_with('#')).collect();
    for key in keys_of(&text) {
        assert!(
            comments
                .iter()
                .any(|c| c.contains(&format!("cuzk {key} = "))),
            "{key} is not named:\n{converted}"
        );
    }
    let lines: Vec<&str> = converted.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "prove_queue_depth = 3")
        .unwrap();
    assert_eq!(
        lines[at - 1],
        "# cuzk pipeline.max_gpu_queue_depth = 3 -> engine.prove_queue_depth = 3"
    );
    // The converted file is one the daemon takes as it is.
    let back = work.path().join("converted.toml");
    std::fs::write(&back, &converted).unwrap();
    let printed = run_ok(zkforge().args(["config", "print", "--config"]).arg(&back));
    assert_eq!(printed, expected);
}

#[test]
fn a_size_cuzk_would_misread_stops_the_daemon_at_start() {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("cuzk.toml");
    std::fs::write(&config, "[memory]\ntotal_budget = \"256G\"\n").unwrap();
    common::run_fails_with(
        zkforge()
            .args(["daemon", "--backend=cpu", "--config"])
            .arg(&config),
        "memory.total_budget = \"256G\" is not a size",
    );
}
