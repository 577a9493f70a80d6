//! What another local process can do beside Curio (any process on the machine can connect
//! to loopback), and what Curio must still get: its proofs, its connection, its scrapes, a
//! GetStatus within its 5 s, a WinningPoSt in time.

use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;
use tonic::Code;
use zkforge_engine::EngineConfig;
use zkforge_filecoin::ProofKind;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::Limits;

use crate::client::{Address, Curio};
use crate::common::raw;
use crate::daemon::{Setup, TestDaemon};
use crate::requests::Sector;

async fn stranger(d: &TestDaemon) -> ProvingEngineClient<tonic::transport::Channel> {
    ProvingEngineClient::connect(format!("http://{}", d.tcp()))
        .await
        .unwrap()
        .max_encoding_message_size(usize::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessed_job_ids_cancel_nothing_of_curios() {
    let sector = Sector::new(21);
    let d = TestDaemon::start(Setup {
        held: vec![ProofKind::PoRep],
        ..Setup::default()
    })
    .await;
    let req = sector.porep();
    let task = d.curio().spawn_task(req.clone());
    d.until_unfinished(ProofKind::PoRep, 1).await;
    let mut other = stranger(&d).await;
    for n in 1..=20u64 {
        for id in [
            n.to_string(),
            format!("{n}-{}", "0".repeat(32)),
            format!("porep-1000-{n}"),
        ] {
            let e = other
                .cancel_proof(pb::CancelProofRequest { job_id: id.clone() })
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::NotFound, "{id}: {}", e.message());
        }
    }
    assert_eq!(
        d.unfinished(ProofKind::PoRep),
        1,
        "Curio's PoRep still runs"
    );
    d.hold.release(true);
    let outcome = task.await.unwrap();
    assert!(sector.verifies(&req, outcome.proof()));
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_squatted_request_id_leaves_curios_proof_alone() {
    let sector = Sector::new(22);
    let d = TestDaemon::start(Setup::default()).await;
    let porep = sector.porep();
    // Another process proves a WinningPoSt under the id Curio will use for the sector's PoRep.
    let mut squat = sector.winning_post();
    squat.request_id = porep.request_id.clone();
    let mut other = stranger(&d).await;
    let theirs = other
        .prove(pb::ProveRequest {
            submit: Some(squat),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(theirs.status, pb::ProofStatus::Completed as i32);
    let outcome = d.curio().task(porep.clone(), |_, _| {}).await;
    assert!(sector.verifies(&porep, outcome.proof()));
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_bodies_cannot_hold_the_receive_budget() {
    let sector = Sector::new(23);
    let d = TestDaemon::start(Setup {
        limits: Limits {
            max_request_bytes: "2MiB".into(),
            max_receiving_bytes: "8MiB".into(),
            urgent_receiving_bytes: "2MiB".into(),
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    // Three bodies announcing 2 MiB hold the 6 MiB bulk work may use, then trickle a byte
    // every 500 ms (the stall timeout is 30 s: each byte restarts it).
    let announced = 2 << 20;
    let mut trickles = Vec::new();
    for _ in 0..3 {
        let mut c = raw::start(
            d.tcp(),
            "SubmitProof",
            announced,
            &vec![0x0a; announced as usize - 64],
        )
        .await;
        let answer = tokio::spawn(async move {
            let answer = raw::answer(c.response, Duration::from_secs(20)).await;
            (answer, Instant::now())
        });
        let drip = tokio::spawn(async move {
            for _ in 0..60 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if c.body
                    .send_data(Bytes::from_static(&[0x0a]), false)
                    .is_err()
                {
                    return;
                }
            }
        });
        trickles.push((answer, drip));
    }
    let t = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Curio's one connection: a SnapDeals upload (bulk) that must wait for room, and on the
    // same connection a WinningPoSt (one try), which the urgent reserve takes in at once and
    // which the waiting upload must not hold back.
    let mut curio = d.curio();
    curio.get_status().await.unwrap();
    let snap = sector.snap();
    let waiting = tokio::spawn({
        let (mut curio, snap) = (curio.clone(), snap.clone());
        async move { curio.prove(snap).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let winning = sector.winning_post();
    let proving = tokio::spawn({
        let (mut curio, winning) = (curio.clone(), winning.clone());
        async move { curio.prove(winning).await }
    });
    // Received and parsed while the tricklers hold the budget: a job (its proof then takes
    // what the CPU has, beside the other tests).
    let mut admitted = None;
    for _ in 0..400 {
        if d.unfinished(ProofKind::WinningPost) > 0 || d.engine.status().completed > 0 {
            admitted = Some(Instant::now());
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let admitted = admitted.expect("the WinningPoSt became a job within 4 s");
    let proof = proving.await.unwrap().expect("the one try");
    assert!(sector.verifies(&winning, &proof.proof));
    // Bulk work waited for room instead of being refused, and got it when the tricklers were
    // cut: Curio's SnapDeals proves on its first try.
    let proof = waiting.await.unwrap().expect("the first try");
    assert!(sector.verifies(&snap, &proof.proof));
    // Each trickler was cut at the end of its first rate window (5 s), not after its 30 s;
    // the WinningPoSt was proved while they still held the budget.
    for (answer, drip) in trickles {
        let ((status, msg), at) = answer.await.unwrap();
        assert_eq!(status, Code::ResourceExhausted as i32, "{msg}");
        assert!(msg.contains("min_receive_rate"), "{msg}");
        let cut = at - t;
        assert!(cut < Duration::from_secs(8), "cut after {cut:?}");
        assert!(
            admitted < at,
            "the WinningPoSt waited {:?} for the bulk upload",
            admitted - t
        );
        drip.abort();
    }
    d.stop().await;
}

/// The daemon's side of its TCP connections on `port` (its listener excluded), from the
/// kernel's socket tables: what a leaked slot would hold open. Other tests in this process
/// open and close files meanwhile, so the process's descriptor count would not do.
fn daemon_connections(port: u16) -> usize {
    let tables = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(t).ok())
        .collect::<Vec<_>>();
    tables
        .iter()
        .flat_map(|table| table.lines().skip(1))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| {
            let local_port = f[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            // Field 3 is the state (0A: listening), field 9 the inode (0: no socket left).
            local_port == Some(port) && f[3] != "0A" && f[9] != "0"
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_holding_every_connection_cannot_lock_curio_out() {
    let sector = Sector::new(24);
    let d = TestDaemon::start(Setup {
        limits: Limits {
            max_connections_per_client: 8,
            idle_timeout_secs: 3,
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let port = d.tcp().port();
    // Curio connects first and goes idle; then another process takes every slot of the
    // loopback client and keeps each busy with a GetStatus every 2 s.
    let mut curio = d.curio();
    curio.get_status().await.unwrap();
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    // Holders with a connection, and their calls so far: the test arrives just after a round
    // of them, when every slot has just been used (the calls are in step).
    let (live, calls) = (
        std::sync::Arc::new(AtomicUsize::new(0)),
        std::sync::Arc::new(AtomicUsize::new(0)),
    );
    let mut holders = Vec::new();
    for _ in 0..8 {
        let addr = d.tcp();
        let (stop, live, calls) = (stop.clone(), live.clone(), calls.clone());
        holders.push(tokio::spawn(async move {
            let mut c = ProvingEngineClient::connect(format!("http://{addr}"))
                .await
                .ok();
            live.fetch_add(c.is_some() as usize, SeqCst);
            while !stop.load(SeqCst) {
                if let Some(c) = c.as_mut() {
                    let _ = c.get_status(pb::GetStatusRequest {}).await;
                    calls.fetch_add(1, SeqCst);
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Curio's channel, idle-closed meanwhile, and a new one: both answered, and proving.
    curio
        .get_status()
        .await
        .expect("Curio's channel after its idle close");
    let round = calls.load(SeqCst) + live.load(SeqCst);
    while calls.load(SeqCst) < round {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let winning = sector.winning_post();
    let proof = Curio::new(Address::Tcp(d.tcp()))
        .prove(winning.clone())
        .await
        .expect("a new channel's one try");
    assert!(sector.verifies(&winning, &proof.proof));
    // Slots go back when connections close: the daemon holds no connection open after.
    let held = daemon_connections(port);
    assert!(held >= 2, "the socket table shows the connections: {held}");
    stop.store(true, SeqCst);
    for h in holders {
        h.await.unwrap();
    }
    drop(curio);
    let mut open = daemon_connections(port);
    for _ in 0..50 {
        if open == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        open = daemon_connections(port);
    }
    assert_eq!(
        open, 0,
        "daemon-side connections still open 5 s after every client left"
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scraper_gets_every_scrape_past_slowloris_sockets() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let limits = Limits {
        max_connections_per_client: 8,
        ..Limits::default()
    };
    let params = Box::new(zkforge_engine::ParamsDir(crate::daemon::param_dir()));
    let (addr, stop, task) = crate::common::spawn_http(params, limits.check().unwrap()).await;
    // Eight sockets: half send a header a byte at a time, half an idle keep-alive.
    let mut held = Vec::new();
    for k in 0..8 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        if k % 2 == 0 {
            s.write_all(b"GET /metr").await.unwrap();
        } else {
            s.write_all(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
        }
        held.push(s);
    }
    let drip = tokio::spawn(async move {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            for s in held.iter_mut().step_by(2) {
                let _ = s.write_all(b"i").await;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut scraped = 0;
    for _ in 0..13 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut body = String::new();
        if let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut body)).await
        {
            scraped += body.contains("zkforge_memory_budget_bytes") as usize;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(scraped, 13, "scrapes answered");
    drip.abort();
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_that_is_not_utf8_is_an_invalid_argument() {
    let sector = Sector::new(26);
    let d = TestDaemon::start(Setup::default()).await;
    let mut bytes = sector.winning_post().encode_to_vec();
    // Field 1 (request_id) comes first: its first byte of text made invalid UTF-8.
    assert_eq!(bytes[0], 0x0a);
    bytes[2] = 0xff;
    let (status, msg) = raw::call(d.tcp(), "SubmitProof", &bytes).await;
    assert_eq!(status, Code::InvalidArgument as i32, "{msg}");
    assert!(
        msg.contains("UTF-8") || msg.contains("utf-8") || msg.contains("string"),
        "{msg}"
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critical_winning_post_is_parsed_ahead_of_queued_c1_outputs() {
    let sector = Sector::new(27);
    let big = tempfile::tempdir().unwrap();
    let m =
        zkforge_fixtures::make_sparse(32 << 30, big.path(), 1, &[ProofKind::PoRep], &()).unwrap();
    let c1 = std::fs::read(big.path().join(&m.c1_wrapper)).unwrap();
    let d = TestDaemon::start(Setup {
        engine: EngineConfig {
            max_queued_jobs: 8,
            ..Setup::default().engine
        },
        limits: Limits {
            parse_workers: 1,
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let c1_request = |n: usize| pb::SubmitProofRequest {
        request_id: format!("porep-1000-{n}"),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        priority: pb::Priority::Normal as i32,
        vanilla_proof: c1.clone(),
        ..Default::default()
    };
    // Three 32 GiB C1 outputs (51 MB each) on connections of their own: one parses (seconds
    // of CPU), the others wait for the one parse worker.
    let (parsed_tx, mut parsed) = tokio::sync::mpsc::unbounded_channel();
    for n in 0..3 {
        let mut c = stranger(&d).await;
        let r = c1_request(n);
        let parsed_tx = parsed_tx.clone();
        tokio::spawn(async move {
            let answer = c.submit_proof(r).await;
            let _ = parsed_tx.send((Instant::now(), answer.map(|_| ())));
        });
    }
    drop(parsed_tx);
    // Once the first is parsed the other two have long arrived and wait in line: one of them
    // has just taken the parse worker, the other waits. The WinningPoSt (one try) comes now.
    let (first, answer) = parsed.recv().await.expect("a C1 answered");
    answer.expect("the first C1 admitted");
    let winning = sector.winning_post();
    let sent = Instant::now();
    let proving = tokio::spawn({
        let (mut curio, winning) = (d.curio(), winning.clone());
        async move { curio.prove(winning).await }
    });
    let mut admitted = None;
    while admitted.is_none() && sent.elapsed() < Duration::from_secs(60) {
        if d.unfinished(ProofKind::WinningPost) > 0 || d.engine.status().completed > 0 {
            admitted = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let admitted = admitted.expect("the WinningPoSt became a job within 60 s");
    // In arrival order it would wait for both queued C1s to be parsed: it must become a job
    // before even the one being parsed when it came is through.
    let (next, answer) = parsed.recv().await.expect("the second C1 answered");
    answer.expect("the second C1 admitted");
    eprintln!(
        "first C1 parsed; WinningPoSt a job {:?} later; next C1 parsed {:?} after the first",
        admitted - sent,
        next - first
    );
    assert!(
        admitted < next,
        "the WinningPoSt waited in line: a job {:?} after it was sent, when the next C1 was \
         parsed {:?} after the first",
        admitted - sent,
        next - first
    );
    let proof = proving.await.unwrap().expect("the one try");
    assert!(sector.verifies(&winning, &proof.proof));
    let (_, answer) = parsed.recv().await.expect("the third C1 answered");
    answer.expect("the third C1 admitted");
    d.stop().await;
}
