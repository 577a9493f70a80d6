//! SIGKILL of a `zkforge daemon` in the middle of a batch (as a crash or the OOM killer would):
//! the bench client's waiting and later proofs fail fast with UNAVAILABLE instead of hanging, the
//! report counts them, nothing half-written is left, and a daemon restarted on the same socket
//! proves the next batch.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{params_2kib, winning_post_batch, DaemonProcess};
use zkforge_bench_client::{run_batch, BatchConfig};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;

/// Files under `dir` whose names say they were never finished.
fn partial_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(partial_files(&p));
        } else if p.to_string_lossy().contains(".partial") {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_daemon_fails_its_clients_fast_and_a_restarted_one_serves() {
    let params = params_2kib(ProofKind::WinningPost);
    let fx = tempfile::tempdir().unwrap();
    fixtures::make(2048, fx.path(), 61).unwrap();
    let work = tempfile::tempdir().unwrap();
    let sock = work.path().join("zkforge.sock");
    let saved = work.path().join("proofs");

    let mut daemon = DaemonProcess::start(&params, &sock, &work.path().join("first.log"), &[]);
    let config = BatchConfig {
        save_proofs: Some(saved.clone()),
        ..winning_post_batch(daemon.addr(), fx.path(), 12, 4)
    };
    let running = tokio::spawn(async move { run_batch(&config).await });
    // Kill it once a proof is out and others are in flight. "Out" means the client holds it (its
    // saved file is there): the daemon logs JOB_DONE before the client's AwaitProof returns, and
    // a kill in between leaves the batch with nothing done.
    let saved_dir = saved.clone();
    tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        while !std::fs::read_dir(&saved_dir).is_ok_and(|mut d| {
            d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "bin")))
        }) {
            assert!(
                t.elapsed() < Duration::from_secs(300),
                "no proof saved in 300 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    daemon.kill();
    let killed = Instant::now();

    let report = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the batch returns after the daemon died, not hangs")
        .unwrap()
        .expect("the batch reports failed proofs, it does not fail as a whole");
    let after_kill = killed.elapsed();
    println!(
        "killed with {} of 12 done: the batch returned {after_kill:?} later, {} failed: {:?}",
        report.completed,
        report.failed,
        report
            .proofs
            .iter()
            .find(|p| !p.completed())
            .map(|p| &p.error)
    );
    assert!(after_kill < Duration::from_secs(10), "{after_kill:?}");
    assert_eq!(report.completed + report.failed, 12);
    assert!(report.completed >= 1 && report.failed >= 1, "{report:#?}");
    for p in report.proofs.iter().filter(|p| !p.completed()) {
        assert!(
            p.error.contains("Unavailable"),
            "proof {}: {}",
            p.index,
            p.error
        );
    }
    // Nothing half-written: the parameters and the saved proofs are whole.
    assert!(partial_files(&params).is_empty());
    assert!(partial_files(&saved).is_empty());
    let files: Vec<_> = std::fs::read_dir(&saved).unwrap().flatten().collect();
    assert_eq!(files.len(), report.completed);
    assert!(files
        .iter()
        .all(|f| f.metadata().unwrap().len() == zkforge_groth16::Proof::BYTES as u64));

    // A daemon restarted on the same socket (the dead one's file is still there) serves.
    assert!(sock.exists(), "SIGKILL leaves the socket file behind");
    let mut restarted = DaemonProcess::start(&params, &sock, &work.path().join("second.log"), &[]);
    let report = run_batch(&BatchConfig {
        verify: true,
        ..winning_post_batch(restarted.addr(), fx.path(), 2, 2)
    })
    .await
    .unwrap();
    assert_eq!(report.completed, 2, "{report:#?}");
    assert_eq!(report.verified_ok, Some(2));
    restarted.stop();
}
