//! `zkforge daemon`'s configuration end to end: the sets named in `daemon.preload` are resident
//! before the first job asks for them, and a preload entry the daemon cannot serve stops it at
//! start with a message naming the entry. With `daemon.verify_params`, a preloaded key whose
//! digest fails is refused (its jobs fail with the same message); without it, a key with a
//! valid point in the wrong place is proved with, and the engine's self-check fails the job.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{params_2kib, winning_post_batch, zkforge, DaemonProcess};
use zkforge_bench_client::{run_batch, BatchConfig};
use zkforge_filecoin::{param_digest, registry, ProofKind};
use zkforge_fixtures as fixtures;
use zkforge_groth16::srs::Query;
use zkforge_groth16::ParamsFile;

fn write_config(dir: &Path, preload: &str) -> PathBuf {
    write_config_with(dir, preload, "")
}

fn write_config_with(dir: &Path, preload: &str, extra: &str) -> PathBuf {
    let path = dir.join("zkforge.toml");
    std::fs::write(&path, format!("[daemon]\npreload = [{preload}]\n{extra}")).unwrap();
    path
}

/// A copy of the shared 2 KiB WinningPoSt set (with its test-key record and recorded circuit)
/// in a directory of its own, its `.params` changed by `damage`; the copy's path.
fn damaged_copy(params: &Path, dir: &Path, damage: impl Fn(&mut Vec<u8>, &ParamsFile)) -> PathBuf {
    let id = registry::params_id(ProofKind::WinningPost, 2048).unwrap();
    for p in [
        id.params_path(params),
        id.vk_path(params),
        id.meta_path(params),
        id.matrices_path(params),
        param_digest::record_path(&id, params),
    ] {
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    let path = id.params_path(dir);
    let file = ParamsFile::open(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    damage(&mut bytes, &file);
    std::fs::write(&path, &bytes).unwrap();
    path
}

/// One WinningPoSt proof of the fixtures in `fx` through the daemon: its error, if it failed.
async fn one_proof_error(daemon: &DaemonProcess, fx: &Path) -> String {
    let report = run_batch(&winning_post_batch(daemon.addr(), fx, 1, 1))
        .await
        .unwrap();
    assert_eq!((report.completed, report.failed), (0, 1), "{report:#?}");
    report.proofs[0].error.clone()
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_params_refuses_a_damaged_preloaded_key_and_its_jobs() {
    let shared = params_2kib(ProofKind::WinningPost);
    let fx = tempfile::tempdir().unwrap();
    fixtures::make(2048, fx.path(), 72).unwrap();
    let work = tempfile::tempdir().unwrap();
    let params = tempfile::tempdir().unwrap();
    // One byte in the middle of l: a download damaged where no header would notice.
    let path = damaged_copy(&shared, params.path(), |b, f| {
        let l = f.section(Query::L);
        b[f.point_offset(Query::L, l.len / 2) as usize + 7] ^= 0x10;
    });
    let got = param_digest::digest_bytes(&std::fs::read(&path).unwrap());
    let config = write_config_with(
        work.path(),
        "\"winning-post-2KiB\"",
        "verify_params = true\n",
    );
    let mut daemon = DaemonProcess::start(
        params.path(),
        &work.path().join("zkforge.sock"),
        &work.path().join("daemon.log"),
        &["--config", config.to_str().unwrap()],
    );
    daemon.wait_for_log("preload refused", Duration::from_secs(120));
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        log.contains("verify_params = true"),
        "the setting is logged at start"
    );
    let refused = log.lines().find(|l| l.contains("preload refused")).unwrap();
    assert!(
        refused.contains(name) && refused.contains(&got) && refused.contains("differs from"),
        "{refused}"
    );
    assert!(!log.contains("parameters preloaded"), "{log}");

    // A job needing the set fails with the same message instead of proving with it.
    let error = one_proof_error(&daemon, fx.path()).await;
    assert!(
        error.contains("daemon.verify_params: refusing winning-post-2KiB")
            && error.contains(name)
            && error.contains(&got),
        "{error}"
    );
    daemon.stop();
}

/// Two valid points of h swapped: the key loads (nothing in the file is malformed), is proved
/// with, and the engine's self-check of the proof fails the job: no proof is returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_with_a_valid_point_in_the_wrong_place_never_yields_a_proof() {
    let shared = params_2kib(ProofKind::WinningPost);
    let fx = tempfile::tempdir().unwrap();
    fixtures::make(2048, fx.path(), 73).unwrap();
    let work = tempfile::tempdir().unwrap();
    let params = tempfile::tempdir().unwrap();
    damaged_copy(&shared, params.path(), |b, f| {
        let (a, c) = (
            f.point_offset(Query::H, 0) as usize,
            f.point_offset(Query::H, 1) as usize,
        );
        let first = b[a..c].to_vec();
        b.copy_within(c..c + 96, a);
        b[c..c + 96].copy_from_slice(&first);
    });
    let mut daemon = DaemonProcess::start(
        params.path(),
        &work.path().join("zkforge.sock"),
        &work.path().join("daemon.log"),
        &[],
    );
    let error = one_proof_error(&daemon, fx.path()).await;
    assert!(error.contains("the proof failed its self-check"), "{error}");
    daemon.stop();
}
