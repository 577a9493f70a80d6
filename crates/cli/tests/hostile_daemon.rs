//! Hostile clients against a `zkforge daemon` process (issue 22), for what only a separate
//! process shows: its open-file limit, its own peak memory, its exit. The in-process rows are
//! in crates/server/tests/hostile.rs.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{zkforge, DaemonProcess};
use zkforge_bench_client::{connect, DaemonAddr};
use zkforge_server::pb;

/// `zkforge daemon` on a unix socket with `config` (TOML), an empty parameter directory, and at
/// most `open_files` descriptors.
fn daemon(dir: &Path, config: &str, open_files: u64) -> DaemonProcess {
    let socket = dir.join("zkforge.sock");
    let log = dir.join("daemon.log");
    std::fs::write(dir.join("daemon.toml"), config).unwrap();
    let mut cmd = zkforge();
    cmd.arg("daemon")
        .arg(format!("--listen=unix://{}", socket.display()))
        .arg("--backend=cpu")
        .arg("--params")
        .arg(dir.join("no-params"))
        .arg("--config")
        .arg(dir.join("daemon.toml"))
        .env_remove("RUST_LOG")
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: setrlimit between fork and exec touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: open_files,
                rlim_max: open_files,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &lim) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let d = DaemonProcess {
        child: cmd.spawn().unwrap(),
        socket,
        log,
    };
    d.wait_for_log("serving cuzk.v1", Duration::from_secs(60));
    d
}

/// GetStatus on a fresh connection, within a second.
async fn answers(addr: &DaemonAddr) -> Duration {
    let t = Instant::now();
    let mut c = connect(addr, Duration::from_secs(1))
        .await
        .expect("the daemon answers within a second");
    c.get_status(pb::GetStatusRequest {}).await.unwrap();
    t.elapsed()
}

/// VmHWM of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_descriptors_never_stops_the_listener() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), "[limits]\nidle_timeout_secs = 2\n", 64);
    // Three times more silent connections than the daemon has descriptors: accept fails with
    // EMFILE (once: "daemon stopped", exit 0).
    let mut idle = Vec::new();
    for _ in 0..200 {
        match std::os::unix::net::UnixStream::connect(&d.socket) {
            Ok(s) => idle.push(s),
            Err(_) => break, // the backlog is full: enough
        }
    }
    assert!(idle.len() > 100, "only {} connections queued", idle.len());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        d.child.try_wait().unwrap().is_none(),
        "the daemon is still running"
    );
    d.wait_for_log("accepting a connection failed", Duration::from_secs(5));
    // The idle clock frees descriptors; the listener takes the backlog as they come back.
    tokio::time::sleep(Duration::from_secs(7)).await;
    drop(idle);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        d.child.try_wait().unwrap().is_none(),
        "the daemon is still running"
    );
    answers(&d.addr()).await;
    d.wait_for_log("accepting connections again", Duration::from_secs(5));
    d.stop();
}

#[test]
fn a_partition_index_past_a_deadline_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let m = zkforge_fixtures::make(2048, dir.path(), 5).unwrap();
    let p = m.window_post().unwrap();
    let out = zkforge()
        .args([
            "prove",
            "window-post",
            "--backend",
            "cpu",
            "--sector-size",
            "2KiB",
        ])
        .arg("--vanilla")
        .arg(dir.path().join(&p.vanilla))
        .args(["--randomness", &p.randomness, "--miner-id", "1000"])
        .args(["--partition-index", "4294967295"])
        .arg("--params")
        .arg(dir.path().join("no-params"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit status (an abort has none): {stderr}"
    );
    assert!(stderr.contains("partition"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_c1_submissions_leave_status_calls_answering() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx32");
    common::run_ok(
        zkforge()
            .args([
                "fixtures",
                "--sector-size",
                "32GiB",
                "--kinds",
                "porep",
                "--seed",
                "3",
            ])
            .arg("--out")
            .arg(&fx),
    );
    let c1 = std::fs::read(fx.join("porep-c1.json")).unwrap();
    let d = daemon(dir.path(), "[limits]\nparse_workers = 1\n", 1024);
    let addr = d.addr();
    let pid = d.child.id();
    let before = peak_rss(pid);
    // Six 32 GiB C1 outputs at once (once: GetStatus took 15.6 s while they were parsed on
    // the async threads).
    let mut submits = Vec::new();
    for k in 0..6 {
        let (addr, c1) = (addr.clone(), c1.clone());
        submits.push(tokio::spawn(async move {
            let mut c = connect(&addr, Duration::from_secs(5)).await.unwrap();
            c.submit_proof(pb::SubmitProofRequest {
                request_id: format!("c1-{k}"),
                proof_kind: pb::ProofKind::PorepSealCommit as i32,
                vanilla_proof: c1,
                ..Default::default()
            })
            .await
        }));
    }
    let mut slowest = Duration::ZERO;
    while !submits.iter().all(|s| s.is_finished()) {
        slowest = slowest.max(answers(&addr).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for s in submits {
        let job = s.await.unwrap().expect("a valid C1 is queued").into_inner();
        assert!(!job.job_id.is_empty());
    }
    assert!(
        slowest < Duration::from_secs(1),
        "GetStatus took {slowest:?}"
    );
    // Six messages in transit at most, one parse at a time.
    let grew = peak_rss(pid).saturating_sub(before);
    let bound = 6 * c1.len() as u64 + (1 << 30);
    assert!(
        grew < bound,
        "peak RSS grew {grew} bytes (bound {bound}, C1 {} bytes)",
        c1.len()
    );
    eprintln!(
        "C1 {} bytes; daemon peak RSS +{} MiB; slowest GetStatus {slowest:?}",
        c1.len(),
        grew >> 20
    );
    drop(d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_proofs_in_flight_answers_them_and_exits_by_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx");
    let m = zkforge_fixtures::make(2048, &fx, 9).unwrap();
    // The WinningPoSt key is a FIFO nobody writes: its load never ends (a stuck disk).
    let params = dir.path().join("no-params");
    std::fs::create_dir_all(&params).unwrap();
    let stem =
        zkforge_filecoin::registry::params_id(zkforge_filecoin::ProofKind::WinningPost, 2048)
            .unwrap()
            .stem;
    let fifo =
        std::ffi::CString::new(params.join(format!("{stem}.params")).to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let mut d = daemon(dir.path(), "[daemon]\nshutdown_deadline_secs = 2\n", 1024);
    let addr = d.addr();
    let p = m.winning_post().unwrap();
    let request = |k: usize| pb::SubmitProofRequest {
        request_id: format!("winpost-1000-{k}"),
        proof_kind: pb::ProofKind::WinningPost as i32,
        sector_size: 2048,
        vanilla_proofs: zkforge_fixtures::read_base64_list(
            &std::fs::read(fx.join(&p.vanilla)).unwrap(),
        )
        .unwrap(),
        randomness: zkforge_fixtures::unhex32(&p.randomness).unwrap().to_vec(),
        ..Default::default()
    };
    let mut calls = Vec::new();
    for k in 0..3 {
        let mut c = connect(&addr, Duration::from_secs(5)).await.unwrap();
        let r = request(k);
        calls.push(tokio::spawn(async move {
            c.prove(pb::ProveRequest { submit: Some(r) }).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    d.send(libc::SIGTERM);
    let t = Instant::now();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // During the drain a new connection is refused at once (it once waited 20 s).
    let refused = connect(&addr, Duration::from_secs(5)).await;
    assert!(refused.is_err(), "a new call during the drain is refused");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // Every call in flight gets an answer naming the deadline.
    for call in calls {
        let r = call.await.unwrap().unwrap().into_inner().result.unwrap();
        let answered = t.elapsed();
        assert!(
            answered > Duration::from_millis(1900),
            "the deadline: {answered:?}"
        );
        assert_eq!(r.status, pb::ProofStatus::Failed as i32);
        assert!(
            r.error_message.contains("shutdown_deadline"),
            "{}",
            r.error_message
        );
    }
    // The process exits within the deadline and its graces (it once took 136 s).
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "still running after {:?}",
            t.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}");
    eprintln!("SIGTERM to exit: {:?}", t.elapsed());
}
