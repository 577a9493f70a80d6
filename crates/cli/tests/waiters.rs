//! Waiters against a `zkforge daemon` process (issue 52): a thousand AwaitProof calls from one
//! process on a job whose key load never ends (its parameter file is a FIFO nobody writes)
//! leave that process's next GetStatus, SubmitProof and Prove answered at once, on the
//! waiters' own connection (gRPC clients send all their calls over one: grpc-go's ClientConn,
//! grpcio's channels to one target) as on another; the waiters get their answers when the job
//! ends; the daemon's threads and memory stay bounded; a client past its cap is refused at
//! once, and its urgent waiters keep their room.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::DaemonProcess;
use tonic::Code;
use zkforge_bench_client::address::Client;
use zkforge_bench_client::{connect, InputSpec, ProofInput, ProofType};
use zkforge_filecoin::{registry, ProofKind};
use zkforge_fixtures as fixtures;
use zkforge_server::pb;

const WAITERS: usize = 1000;
/// What the issue asks of every other call while the waiters wait.
const ANSWER_WITHIN: Duration = Duration::from_millis(100);

/// A parameter directory holding the shared 2 KiB WinningPoSt set, its `.params` file replaced
/// by a FIFO: a load opens it and waits for a writer. Returns the directory and the FIFO.
fn params_with_a_stuck_winning_post(root: &Path) -> (PathBuf, PathBuf) {
    let shared = common::params_2kib(ProofKind::WinningPost);
    let dir = root.join("params");
    std::fs::create_dir_all(&dir).unwrap();
    let id = registry::params_id(ProofKind::WinningPost, 2048).unwrap();
    let fifo = id.params_path(&dir);
    for entry in std::fs::read_dir(&shared).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let ours = name.to_string_lossy().starts_with(&id.stem);
        if ours && !name.to_string_lossy().ends_with(".lock") && dir.join(&name) != fifo {
            std::os::unix::fs::symlink(&path, dir.join(&name)).unwrap();
        }
    }
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    (dir, fifo)
}

/// Ends the stuck load: the FIFO moves aside (the load holds it open-pending), the real file
/// takes its name for later loads, and a writer that closes at once gives the stuck load an
/// empty file, which it refuses.
fn unstick(fifo: &Path) {
    let aside = fifo.with_extension("stuck");
    std::fs::rename(fifo, &aside).unwrap();
    let shared = common::params_2kib(ProofKind::WinningPost);
    let real = shared.join(fifo.file_name().unwrap());
    std::os::unix::fs::symlink(real, fifo).unwrap();
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .open(&aside)
            .unwrap(),
    );
}

/// The daemon's threads (`Threads` of /proc/PID/status).
fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// Runs `call` and returns its result and how long it took, given a second at most.
async fn timed<T>(call: impl std::future::Future<Output = T>) -> (T, Duration) {
    let t = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(1), call)
        .await
        .expect("no answer within a second");
    (out, t.elapsed())
}

/// Unfinished WinningPoSt jobs the daemon reports (one partition each).
async fn winning_posts(c: &mut Client) -> u32 {
    let s = c.get_status(pb::GetStatusRequest {}).await.unwrap();
    s.into_inner()
        .queues
        .iter()
        .filter(|q| q.proof_kind == "winning-post")
        .map(|q| q.pending + q.in_progress)
        .sum()
}

fn daemon(work: &Path, params: &Path, config: &str) -> DaemonProcess {
    std::fs::write(work.join("daemon.toml"), config).unwrap();
    let config = format!("--config={}", work.join("daemon.toml").display());
    DaemonProcess::start(
        params,
        &work.join("zkforge.sock"),
        &work.join("daemon.log"),
        &[&config],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_waiters_on_one_connection_leave_its_other_calls_answered_at_once() {
    let work = tempfile::tempdir().unwrap();
    let (params, fifo) = params_with_a_stuck_winning_post(work.path());
    let fx = work.path().join("fx");
    fixtures::make(2048, &fx, 52).unwrap();
    let input = ProofInput::load(&InputSpec::from_fixtures(ProofType::WinningPost, &fx)).unwrap();
    let d = daemon(work.path(), &params, "");
    let pid = d.child.id();

    // One connection for the waiters, as one gRPC client holds it; another beside it.
    let mut one = connect(&d.addr(), Duration::from_secs(10)).await.unwrap();
    let mut other = connect(&d.addr(), Duration::from_secs(10)).await.unwrap();
    let stuck = one
        .submit_proof(input.request("stuck"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (threads_before, rss_before) = (threads(pid), common::rss_kib(pid).unwrap());

    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| {
            let (mut c, job_id) = (one.clone(), stuck.clone());
            tokio::spawn(async move {
                c.await_proof(pb::AwaitProofRequest {
                    job_id,
                    timeout_ms: 0,
                })
                .await
            })
        })
        .collect();
    // As the client did: the waiters settle, then the other calls come.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut slowest = Duration::ZERO;
    for c in [&mut one, &mut other] {
        for _ in 0..10 {
            let (status, took) = timed(c.get_status(pb::GetStatusRequest {})).await;
            status.expect("GetStatus answers");
            slowest = slowest.max(took);
        }
    }
    for (c, id) in [(&mut one, "fresh-1"), (&mut other, "fresh-2")] {
        let (job, took) = timed(c.submit_proof(input.request(id))).await;
        assert!(!job.expect("admitted").into_inner().job_id.is_empty());
        slowest = slowest.max(took);
    }
    assert!(
        slowest < ANSWER_WITHIN,
        "with {WAITERS} waiters on one connection the slowest GetStatus or SubmitProof took \
         {slowest:?}"
    );
    // A WinningPoSt Prove on the waiters' connection: its job admitted at once (it then waits
    // for the same key as the others).
    let before = winning_posts(&mut other).await;
    let t = Instant::now();
    let prove = {
        let mut c = one.clone();
        let req = input.request("prove");
        tokio::spawn(async move {
            c.prove(pb::ProveRequest { submit: Some(req) })
                .await
                .map(|r| r.into_inner())
        })
    };
    while winning_posts(&mut other).await == before {
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "the Prove's job never came"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let admitted = t.elapsed();
    assert!(
        admitted < ANSWER_WITHIN,
        "the Prove's job admitted after {admitted:?}"
    );

    let (threads_during, rss_during) = (threads(pid), common::rss_kib(pid).unwrap());
    assert!(
        threads_during <= threads_before + 8,
        "threads {threads_before} -> {threads_during} with {WAITERS} waiters"
    );
    let grown_mib = rss_during.saturating_sub(rss_before) / 1024;
    assert!(
        grown_mib < 64,
        "RSS grew {grown_mib} MiB for {WAITERS} waiters"
    );
    eprintln!(
        "{WAITERS} waiters: slowest call {slowest:?}, Prove admitted in {admitted:?}, threads \
         {threads_before} -> {threads_during}, RSS +{grown_mib} MiB"
    );

    // The load ends (its file refused): every waiter gets the job's answer.
    unstick(&fifo);
    for w in waiters {
        let r = tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("a waiter answered within a minute of the job's end")
            .unwrap()
            .expect("the waiter's call succeeds")
            .into_inner();
        assert_eq!(r.status, pb::ProofStatus::Failed as i32, "{r:?}");
    }
    // The Prove behind it gets an answer too (proved once the real file is in place, or
    // failed with the same load).
    let answer = tokio::time::timeout(Duration::from_secs(120), prove)
        .await
        .expect("the Prove answered")
        .unwrap();
    if let Ok(r) = answer {
        let status = r.result.unwrap().status;
        assert!(
            [pb::ProofStatus::Completed, pb::ProofStatus::Failed]
                .map(|s| s as i32)
                .contains(&status),
            "{status}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_past_its_waiter_cap_is_refused_at_once_and_keeps_its_urgent_room() {
    let work = tempfile::tempdir().unwrap();
    let (params, fifo) = params_with_a_stuck_winning_post(work.path());
    let fx = work.path().join("fx");
    fixtures::make(2048, &fx, 53).unwrap();
    let input = ProofInput::load(&InputSpec::from_fixtures(ProofType::WinningPost, &fx)).unwrap();
    let d = daemon(
        work.path(),
        &params,
        "[limits]\nmax_waiters_per_client = 8\nurgent_waiters_per_client = 2\n",
    );
    let mut c = connect(&d.addr(), Duration::from_secs(10)).await.unwrap();
    // A WinningPoSt at LOW priority is bulk work; at its default (CRITICAL), urgent.
    let mut bulk_req = input.request("bulk");
    bulk_req.priority = pb::Priority::Low as i32;
    let bulk = c.submit_proof(bulk_req).await.unwrap().into_inner().job_id;
    let urgent = c
        .submit_proof(input.request("urgent"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let waiting = c.clone();
    let wait = |job_id: &str| {
        let (mut c, job_id) = (waiting.clone(), job_id.to_string());
        tokio::spawn(async move {
            c.await_proof(pb::AwaitProofRequest {
                job_id,
                timeout_ms: 0,
            })
            .await
        })
    };
    let mut waiters: Vec<_> = (0..8).map(|_| wait(&bulk)).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (refused, took) = timed(c.await_proof(pb::AwaitProofRequest {
        job_id: bulk.clone(),
        timeout_ms: 0,
    }))
    .await;
    let refused = refused.expect_err("a ninth bulk waiter");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("limits.max_waiters_per_client = 8"),
        "{}",
        refused.message()
    );
    assert!(took < ANSWER_WITHIN, "refused after {took:?}");
    // The urgent job's waiters have their own room: a bounded wait is admitted and times out.
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: urgent.clone(),
            timeout_ms: 50,
        })
        .await
        .expect("an urgent waiter past the bulk cap")
        .into_inner();
    assert_eq!(r.status, pb::ProofStatus::Timeout as i32);
    waiters.push(wait(&urgent));

    unstick(&fifo);
    for w in waiters {
        let r = tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("an answer once the load ended")
            .unwrap()
            .expect("the waiter's call succeeds")
            .into_inner();
        assert_ne!(r.status, pb::ProofStatus::Timeout as i32);
    }
}
