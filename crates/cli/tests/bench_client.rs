//! The bench client against real daemons: a batch through an in-process daemon (CPU backend,
//! 2 KiB WinningPoSt, the cheapest real proof) adds up, saves proofs that filecoin-proofs
//! accepts; a batch over two daemons spreads its proofs and reports each daemon as the
//! daemons themselves count them; unreachable or silent daemons fail fast with a clear
//! message; `bench sweep --daemon-config` starts and stops a `zkforge daemon` whose log
//! `zkforge timeline` reads.

use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::{params_2kib, run_fails_with, run_ok, winning_post_batch, zkforge};
use zkforge_bench_client::{
    run_batch, run_fleet, BatchConfig, DaemonAddr, InputSpec, ProofInput, ProofType,
};
use zkforge_engine::{Engine, EngineConfig, ParamsDir};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;
use zkforge_groth16::CpuBackend;
use zkforge_server::{Access, Listen, Running};

/// A sealed 2 KiB sector and its PoSt inputs, in a fresh directory.
fn fixture(seed: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixtures::make(2048, dir.path(), seed).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_through_a_daemon_adds_up_and_its_proofs_verify() {
    let dir = params_2kib(ProofKind::WinningPost);
    let fx = fixture(41);
    let engine = Engine::start(
        EngineConfig::default(),
        Arc::new(CpuBackend::new()),
        Box::new(ParamsDir(dir)),
    )
    .unwrap();
    let sock_dir = tempfile::tempdir().unwrap();
    let sock = sock_dir.path().join("zkforge.sock");
    let daemon = Running::start(
        Arc::new(engine),
        Listen::Unix(sock.clone()),
        Access::default(),
    )
    .await
    .unwrap();

    let out = tempfile::tempdir().unwrap();
    let saved = out.path().join("proofs");
    let report = run_batch(&BatchConfig {
        count: 3,
        concurrency: 2,
        save_proofs: Some(saved.clone()),
        verify: true,
        ..winning_post_batch(
            format!("unix:{}", sock.display()).parse().unwrap(),
            fx.path(),
            1,
            1,
        )
    })
    .await
    .unwrap();

    assert_eq!(report.completed + report.failed, 3);
    assert_eq!(report.completed, 3, "{:#?}", report.proofs);
    assert_eq!(report.verified_ok, Some(3));
    let ids: std::collections::HashSet<&str> =
        report.proofs.iter().map(|p| p.job_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "three distinct daemon jobs");
    // A CPU daemon reports no GPU time (gpu_compute_ms unset), not its prove time as GPU time.
    assert!(report.gpu_s.is_none(), "{:?}", report.gpu_s);
    let total = report.total_s.unwrap();
    assert!(total.min > 0.0 && total.min <= total.avg && total.avg <= total.max);
    assert!(report.proofs_per_min > 0.0 && report.wall_s >= total.max);
    // The saved files are the proofs, and the official verifier accepts them as read back.
    let m = fixtures::load(fx.path()).unwrap();
    for p in &report.proofs {
        assert_eq!(p.status, "COMPLETED");
        assert_eq!(p.gpu_ms, 0);
        let file = p.saved_to.as_ref().unwrap();
        assert_eq!(file, &saved.join(format!("proof-{:04}.bin", p.index)));
        let bytes = std::fs::read(file).unwrap();
        assert_eq!(bytes.len(), 192);
        assert!(m.verify_winning_post(&bytes).unwrap(), "{}", file.display());
    }
    daemon.stop().await.unwrap();
}

/// An in-process CPU daemon on a unix socket in `dir`, and its engine (to ask what it did).
async fn start_daemon(
    params: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
) -> (Running, Arc<Engine>, DaemonAddr) {
    let engine = Arc::new(
        Engine::start(
            EngineConfig::default(),
            Arc::new(CpuBackend::new()),
            Box::new(ParamsDir(params.to_path_buf())),
        )
        .unwrap(),
    );
    let sock = dir.join(format!("{name}.sock"));
    let daemon = Running::start(
        engine.clone(),
        Listen::Unix(sock.clone()),
        Access::default(),
    )
    .await
    .unwrap();
    (daemon, engine, DaemonAddr::Unix(sock))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_two_daemons_spreads_its_proofs_and_reports_each() {
    let dir = params_2kib(ProofKind::WinningPost);
    let fx = fixture(46);
    let socks = tempfile::tempdir().unwrap();
    let (a, engine_a, addr_a) = start_daemon(&dir, socks.path(), "a").await;
    let (b, engine_b, addr_b) = start_daemon(&dir, socks.path(), "b").await;
    let addrs = [addr_a.clone(), addr_b.clone()];

    let config = BatchConfig {
        verify: true,
        ..winning_post_batch(addr_a.clone(), fx.path(), 6, 2)
    };
    let report = run_fleet(&config, &addrs).await.unwrap();

    let fleet = &report.fleet;
    assert_eq!(fleet.completed, 6, "{:#?}", fleet.proofs);
    assert_eq!(fleet.verified_ok, Some(6));
    assert_eq!(fleet.addr, format!("{addr_a},{addr_b}"));
    assert_eq!(report.daemons.len(), 2);
    let engines = [&engine_a, &engine_b];
    for ((d, addr), engine) in report.daemons.iter().zip(&addrs).zip(engines) {
        assert_eq!(d.addr, addr.to_string());
        assert!(d.count >= 1, "each daemon gets work: {:#?}", report.daemons);
        assert!(d.proofs.iter().all(|p| p.daemon == d.addr));
        // What the client attributes to a daemon is what that daemon proved.
        assert_eq!(engine.status().completed, d.completed as u64, "{}", d.addr);
        assert_eq!(d.verified_ok, Some(d.completed));
        // Least outstanding: with 2 in flight over 2 idle daemons, a request always finds a
        // daemon with none, so neither ever holds two.
        assert_eq!(d.concurrency, 1, "{}", d.addr);
    }
    let sent: usize = report.daemons.iter().map(|d| d.count).sum();
    assert_eq!(sent, 6);
    let per_min: f64 = report.daemons.iter().map(|d| d.proofs_per_min).sum();
    assert!((per_min - fleet.proofs_per_min).abs() < 1e-6 * fleet.proofs_per_min);

    // The command line: one row per daemon, the fleet's summary, the JSON of both.
    let json = socks.path().join("fleet.json");
    let mut cmd = zkforge();
    cmd.args([
        "bench",
        "batch",
        "--type",
        "winning-post",
        "-c",
        "2",
        "-j",
        "2",
    ])
    .arg(format!(
        "--addr=unix:{},unix:{}",
        sock_of(&addr_a),
        sock_of(&addr_b)
    ))
    .arg("--fixtures")
    .arg(fx.path())
    .arg("--json")
    .arg(&json);
    // The daemons serve on this runtime: the child runs off its worker threads.
    let stdout = tokio::task::spawn_blocking(move || run_ok(&mut cmd))
        .await
        .unwrap();
    for addr in &addrs {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&addr.to_string()))
            .unwrap_or_else(|| panic!("no row for {addr}:\n{stdout}"));
        assert!(row.contains("1/1"), "{row}");
    }
    assert!(
        stdout.contains("fleet of 2:") && stdout.contains("completed    2/2"),
        "{stdout}"
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(written["fleet"]["completed"], 2);
    assert_eq!(written["daemons"].as_array().unwrap().len(), 2);
    a.stop().await.unwrap();
    b.stop().await.unwrap();
}

fn sock_of(addr: &DaemonAddr) -> String {
    match addr {
        DaemonAddr::Unix(p) => p.display().to_string(),
        DaemonAddr::Tcp(uri) => panic!("not a socket: {uri}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_or_silent_daemons_fail_fast_with_a_clear_message() {
    let fx = fixture(42);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    // Accepts connections and never answers: the timeout must end the wait.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let missing = fx.path().join("no/such.sock");
    for (addr, expect) in [
        (format!("{closed}"), "cannot reach the zkforge daemon"),
        (format!("http://{silent_addr}"), "no answer within"),
        (format!("unix:{}", missing.display()), "no socket at"),
    ] {
        let mut c = winning_post_batch(addr.parse().unwrap(), fx.path(), 1, 1);
        c.connect_timeout = Duration::from_secs(1);
        let t = Instant::now();
        let err = format!("{:#}", run_batch(&c).await.unwrap_err());
        assert!(err.contains(expect), "{addr}: {err}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{addr}: took {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn inputs_from_flags_equal_inputs_from_fixtures_and_bad_ones_are_named() {
    let fx = fixture(45);
    let m = fixtures::load(fx.path()).unwrap();
    let from_fixtures =
        ProofInput::load(&InputSpec::from_fixtures(ProofType::WinningPost, fx.path())).unwrap();
    let flags = InputSpec {
        fixtures: None,
        input: Some(fx.path().join(&m.winning_post().unwrap().vanilla)),
        sector_size: Some("2KiB".into()),
        randomness: Some(m.winning_post().unwrap().randomness.clone()),
        ..InputSpec::from_fixtures(ProofType::WinningPost, fx.path())
    };
    let from_flags = ProofInput::load(&flags).unwrap();
    assert_eq!(from_flags.request("a"), from_fixtures.request("a"));
    assert!(!from_flags.can_verify() && from_fixtures.can_verify());

    let err = |spec: InputSpec| format!("{:#}", ProofInput::load(&spec).unwrap_err());
    let e = err(InputSpec {
        randomness: None,
        ..flags.clone()
    });
    assert!(e.contains("--randomness is required"), "{e}");
    let e = err(InputSpec {
        input: Some(fx.path().join("missing.json")),
        ..flags.clone()
    });
    assert!(e.contains("missing.json"), "{e}");
    let e = err(InputSpec {
        input: Some(fx.path().join(&m.c1_wrapper)),
        ..flags
    });
    assert!(e.contains("JSON array of base64"), "{e}");
}

#[test]
fn bench_batch_refuses_a_bad_address_and_a_dead_daemon() {
    let fx = fixture(43);
    let base = |addr: &str| {
        let mut c = zkforge();
        c.args([
            "bench",
            "batch",
            "--type",
            "winning-post",
            "--addr",
            addr,
            "--fixtures",
        ])
        .arg(fx.path())
        .args(["--connect-timeout", "2"]);
        c
    };
    let out = base("localhost").output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad daemon address"));
    run_fails_with(
        &mut base("127.0.0.1:1,localhost"),
        "bad daemon address \"localhost\"",
    );
    let mut single = zkforge();
    single
        .args(["bench", "single", "--type", "winning-post"])
        .args(["--addr", "127.0.0.1:1,127.0.0.1:2", "--fixtures"])
        .arg(fx.path());
    run_fails_with(&mut single, "bench single drives one daemon");
    run_fails_with(
        &mut base("127.0.0.1:1"),
        "cannot reach the zkforge daemon at http://127.0.0.1:1",
    );
}

#[test]
fn sweep_starts_a_daemon_per_config_and_its_timeline_reads_back() {
    let dir = params_2kib(ProofKind::WinningPost);
    let fx = fixture(44);
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("one-synth.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nparams = {:?}\nbackend = \"cpu\"\n\n[engine]\nsynthesis_workers = 1\n",
            dir.display().to_string()
        ),
    )
    .unwrap();
    let logs = work.path().join("logs");
    let json = work.path().join("sweep.json");
    let stdout = run_ok(
        zkforge()
            .args([
                "bench",
                "sweep",
                "--type",
                "winning-post",
                "--points",
                "1x1",
            ])
            .arg("--fixtures")
            .arg(fx.path())
            .arg("--daemon-config")
            .arg(&config)
            .arg("--daemon-logs")
            .arg(&logs)
            .arg("--json")
            .arg(&json)
            .arg("--verify"),
    );
    let row = stdout
        .lines()
        .find(|l| l.contains("one-synth.toml"))
        .unwrap_or_else(|| panic!("no row for the config:\n{stdout}"));
    assert!(row.contains("1x1") && row.contains("1/1"), "{row}");
    let rows: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(rows[0]["report"]["completed"], 1);
    assert_eq!(rows[0]["report"]["verified_ok"], 1);

    // The daemon stopped on SIGTERM (its last words are in the log) and its TIMELINE reads.
    let log = logs.join("daemon-one-synth.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("daemon stopped"), "{text}");
    let svg = work.path().join("daemon.svg");
    let report = run_ok(zkforge().arg("timeline").arg(&log).arg("--svg").arg(&svg));
    assert!(report.contains("1 submitted, 1 done"), "{report}");
    assert!(roxmltree::Document::parse(&std::fs::read_to_string(&svg).unwrap()).is_ok());
}
