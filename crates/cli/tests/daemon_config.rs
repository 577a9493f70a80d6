//! `zkforge daemon`'s configuration end to end: the sets named in `daemon.preload` are resident
//! before the first job asks for them, and a preload entry the daemon cannot serve stops it at
//! start with a message naming the entry.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{params_2kib, winning_post_batch, zkforge, DaemonProcess};
use zkforge_bench_client::{run_batch, BatchConfig};
use zkforge_filecoin::{fixtures, ProofKind};

fn write_config(dir: &Path, preload: &str) -> PathBuf {
    let path = dir.join("zkforge.toml");
    std::fs::write(&path, format!("[daemon]\npreload = [{preload}]\n")).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preloaded_parameters_are_resident_before_the_first_job() {
    let params = params_2kib(ProofKind::WinningPost);
    let fx = tempfile::tempdir().unwrap();
    fixtures::make(2048, fx.path(), 71).unwrap();
    let work = tempfile::tempdir().unwrap();
    let config = write_config(work.path(), "\"winning-post-2KiB\"");
    let mut daemon = DaemonProcess::start(
        &params,
        &work.path().join("zkforge.sock"),
        &work.path().join("daemon.log"),
        &["--config", config.to_str().unwrap()],
    );
    daemon.wait_for_log("parameters preloaded", Duration::from_secs(120));

    let report = run_batch(&BatchConfig {
        verify: true,
        ..winning_post_batch(daemon.addr(), fx.path(), 1, 1)
    })
    .await
    .unwrap();
    assert_eq!(report.verified_ok, Some(1), "{report:#?}");
    let p = &report.proofs[0];
    assert_eq!(p.srs_load_ms, 0, "the job found its parameters loaded");
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    assert!(
        log.contains("preload = [\"winning-post-2KiB\"]"),
        "the setting is logged at start"
    );
    daemon.stop();
}

#[test]
fn a_preload_the_daemon_cannot_serve_stops_it_at_start() {
    let work = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let start = |preload: &str| {
        let config = write_config(work.path(), preload);
        let out = zkforge()
            .arg("daemon")
            .arg(format!(
                "--listen=unix://{}",
                work.path().join("zkforge.sock").display()
            ))
            .args(["--backend=cpu", "--config"])
            .arg(&config)
            .arg("--params")
            .arg(empty.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{preload}: the daemon started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = start("\"winning-post-2KiB\", \"porep-3KiB\"");
    assert!(
        err.contains("daemon.preload[1]") && err.contains("porep-3KiB"),
        "{err}"
    );
    let err = start("\"winning-post-2KiB\"");
    assert!(
        err.contains("winning-post-2KiB has no parameter file")
            && err.contains("zkforge params generate --proof winning-post --sector-size 2KiB"),
        "{err}"
    );
}
