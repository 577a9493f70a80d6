//! A good neighbour (issue 48): a `zkforge daemon` process proves a stream of 2 KiB WinningPoSt
//! jobs while another process, started by the test, takes host memory in steps down to the
//! daemon's margin. The daemon's limit follows within seconds, every job completes and
//! filecoin-proofs accepts its proof, nothing is killed, and the limit grows back to the
//! budget once the other process has exited and the host is quiet.
//!
//! The other process is this test binary run again as [`hog`]: it allocates and touches what
//! it is told on its standard input, and holds it until its input ends.

mod common;

use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::DaemonProcess;
use zkforge_bench_client::address::Client;
use zkforge_bench_client::{connect, InputSpec, ProofInput, ProofType};
use zkforge_engine::{auto_margin, parse_bytes, HostReading};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;
use zkforge_server::pb;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// How soon the limit must follow a step (the daemon reads the host every 250 ms).
const FOLLOWS_WITHIN: Duration = Duration::from_secs(5);
/// How close to the host's room the limit must come (the daemon's own use moves meanwhile).
const SLACK: u64 = 768 * MIB;
/// Memory the hog leaves above the margin at its last step.
const ABOVE_MARGIN: u64 = GIB;

/// Run by the test as a separate process: allocates and touches `N` MiB per line "N" read from
/// standard input, answering "held" after each, and exits when its input closes.
#[test]
#[ignore = "a helper process of the_daemon_follows_the_host_and_every_job_completes"]
fn hog() {
    let mut held: Vec<Vec<u8>> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let mib: usize = line.unwrap().trim().parse().unwrap();
        let mut v = vec![0u8; mib << 20];
        // One write a page, so that every page is resident.
        for page in v.chunks_mut(4096) {
            page[0] = 1;
        }
        held.push(v);
        println!("held");
        std::io::stdout().flush().unwrap();
    }
    std::hint::black_box(&held);
}

struct Hog {
    child: Child,
    answers: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Hog {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "hog", "--nocapture", "--quiet"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let answers = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, answers }
    }

    fn take(&mut self, bytes: u64) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{}", bytes / MIB).unwrap();
        stdin.flush().unwrap();
        loop {
            let line = self.answers.next().expect("the hog answers").unwrap();
            if line.trim() == "held" {
                return;
            }
        }
    }

    /// Lets go of everything: the process exits on its own, and must exit well.
    fn release(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the hog was killed: {status:?}");
    }
}

/// A gauge of the daemon's metrics (GetMetrics, the Prometheus text).
async fn gauge(c: &mut Client, name: &str) -> u64 {
    let text = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in the metrics"));
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<f64>()
        .unwrap() as u64
}

/// Waits until the daemon's limit is `at_most`, returning when it got there.
async fn limit_falls_to(c: &mut Client, at_most: u64) -> Duration {
    let t = Instant::now();
    loop {
        let limit = gauge(c, "zkforge_memory_limit_bytes").await;
        if limit <= at_most {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < FOLLOWS_WITHIN,
            "the limit stayed at {} MiB, above {} MiB",
            limit / MIB,
            at_most / MIB
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_follows_the_host_and_every_job_completes() {
    let params = common::params_2kib(ProofKind::WinningPost);
    let work = tempfile::tempdir().unwrap();
    let fx = work.path().join("fx");
    fixtures::make(2048, &fx, 48).unwrap();
    let d = DaemonProcess::start(
        &params,
        &work.path().join("zkforge.sock"),
        &work.path().join("daemon.log"),
        &[],
    );
    let input =
        Arc::new(ProofInput::load(&InputSpec::from_fixtures(ProofType::WinningPost, &fx)).unwrap());
    let mut c = connect(&d.addr(), Duration::from_secs(10)).await.unwrap();
    let budget = gauge(&mut c, "zkforge_memory_budget_bytes").await;
    assert_eq!(gauge(&mut c, "zkforge_memory_limit_bytes").await, budget);
    let host = HostReading::now().unwrap();
    let margin = auto_margin(host.memory(), parse_bytes("2GiB").unwrap());

    // The stream: one client proving jobs back to back until the test ends it.
    let stop = Arc::new(AtomicBool::new(false));
    let proofs = Arc::new(Mutex::new(Vec::new()));
    let stream = {
        let (mut c, stop, proofs, input) = (c.clone(), stop.clone(), proofs.clone(), input.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let req = input.request(&format!("stream-{n}"));
                let r = c.prove(pb::ProveRequest { submit: Some(req) }).await;
                let result = r
                    .expect("every job is answered")
                    .into_inner()
                    .result
                    .unwrap();
                assert_eq!(
                    result.status,
                    pb::ProofStatus::Completed as i32,
                    "job {n}: {}",
                    result.error_message
                );
                proofs.lock().unwrap().push(result.proof);
            }
        })
    };

    // Three steps down to the margin (and a little above it).
    let mut hog = Hog::start();
    let room = HostReading::now().unwrap().room();
    let step = room.saturating_sub(margin + ABOVE_MARGIN) / 3;
    assert!(
        step >= GIB,
        "this machine leaves {} MiB above the margin: too little to squeeze",
        room / MIB
    );
    let mut report = Vec::new();
    for k in 1..=3 {
        hog.take(step);
        let held_by_daemon = gauge(&mut c, "zkforge_memory_used_bytes").await;
        let room = HostReading::now().unwrap().room();
        let expected = (held_by_daemon + room).saturating_sub(margin);
        limit_falls_to(&mut c, expected + SLACK).await;
        report.push(format!(
            "step {k}: the hog holds {} MiB, the host has {} MiB left, the daemon holds {} MiB \
             and may hold {} MiB (budget {} MiB)",
            k as u64 * step / MIB,
            room / MIB,
            held_by_daemon / MIB,
            gauge(&mut c, "zkforge_memory_limit_bytes").await / MIB,
            budget / MIB
        ));
        // Jobs go on proving under the squeeze.
        let before = proofs.lock().unwrap().len();
        let t = Instant::now();
        while proofs.lock().unwrap().len() == before {
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "no job completed under step {k}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let squeezed = gauge(&mut c, "zkforge_memory_limit_bytes").await;
    assert!(squeezed < budget - 2 * step, "{squeezed} of {budget}");

    // The hog exits; the limit grows back to the budget once the host is quiet.
    hog.release();
    let t = Instant::now();
    // The host's memory moved meanwhile (this process, the page cache): back within a GiB.
    while gauge(&mut c, "zkforge_memory_limit_bytes").await + GIB < budget {
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "the limit did not grow back to the budget"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    report.push(format!("grew back to the budget in {:?}", t.elapsed()));
    stop.store(true, Ordering::Relaxed);
    stream.await.unwrap();
    let mut d = d;
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon lives");

    let proofs = std::mem::take(&mut *proofs.lock().unwrap());
    let verified = tokio::task::spawn_blocking(move || {
        proofs.iter().filter(|p| input.verify(p).unwrap()).count() == proofs.len()
    })
    .await
    .unwrap();
    assert!(verified, "filecoin-proofs accepts every proof");
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(
        log.contains("MEMORY_LIMIT") && log.contains("host memory: the engine may hold"),
        "each change is logged and a TIMELINE event"
    );
    eprintln!("{}", report.join("\n"));
}
