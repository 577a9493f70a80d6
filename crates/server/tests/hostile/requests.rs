//! What a request can ask for: each bound refuses it by name, before it sizes anything.

use std::time::{Duration, Instant};

use tonic::Code;
use zkforge_engine::EngineConfig;
use zkforge_filecoin::MAX_PARTITIONS_PER_DEADLINE;
use zkforge_server::pb;
use zkforge_server::Limits;

use crate::common::{await_proof, winning_post_request};
use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_window_post_partition_index_past_a_deadline_is_refused_before_it_sizes_anything() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let before = peak_rss();
    // Once: u32::MAX made a 343 GB allocation (SIGABRT), 10^8 one of 7.6 GB.
    let deadline = MAX_PARTITIONS_PER_DEADLINE as u32;
    for index in [deadline, deadline + 1, 1 << 23, 100_000_000, u32::MAX] {
        let mut r = window_post_request(dir.path(), &m);
        r.partition_index = index;
        let t = Instant::now();
        assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "partition");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "{index}: {:?}",
            t.elapsed()
        );
    }
    // The last partition a deadline has is a valid index: the request is checked further (its
    // vanilla proofs are for partition 0's challenges) but sizes nothing from the index.
    let mut r = window_post_request(dir.path(), &m);
    r.partition_index = deadline - 1;
    let _ = c.submit_proof(r).await;
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 64 << 20, "peak memory grew {grew} bytes");
    d.answers_then_stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn floods_of_vanilla_proofs_are_refused_before_they_are_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    // 3M empty entries: 6 MB on the wire, 72 MB as decoded Vec headers. Built before the
    // baseline so that only the daemon's side counts.
    let mut flood = window_post_request(dir.path(), &m);
    flood.vanilla_proofs = vec![Vec::new(); 3_000_000];
    let mut copies = window_post_request(dir.path(), &m);
    let one = copies.vanilla_proofs[0].clone();
    copies.vanilla_proofs = vec![one; 35_000];
    let mut json = window_post_request(dir.path(), &m);
    json.vanilla_proofs.clear();
    json.vanilla_proof = format!("[{}\"\"]", "\"\",".repeat(3_000_000)).into_bytes();
    let before = peak_rss();
    assert_refused(
        c.submit_proof(flood).await,
        Code::InvalidArgument,
        "vanilla_proofs has 3000000 entries",
    );
    let grew = peak_rss().saturating_sub(before);
    // The 6 MB message arrives once and is scanned, never decoded into 72 MB of headers.
    assert!(grew < 48 << 20, "peak memory grew {grew} bytes");
    // 35,000 real proofs (each message ~100 MB, so no memory bound here): counted before any
    // is decoded (once: 4.8 s of decoding first).
    let t = Instant::now();
    assert_refused(c.submit_proof(copies).await, Code::InvalidArgument, "35000");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "counted before decoding: {:?}",
        t.elapsed()
    );
    let t = Instant::now();
    assert_refused(
        c.submit_proof(json).await,
        Code::InvalidArgument,
        "vanilla_proof",
    );
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "counted while read: {:?}",
        t.elapsed()
    );
    d.answers_then_stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundreds_of_waiting_clients_hold_no_threads() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let job = c
        .submit_proof(winning_post_request(dir.path(), &m, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let before = threads();
    // 600 waits without a timeout over 4 connections (256 streams each at most).
    let mut waits = Vec::new();
    for k in 0..600 {
        if k % 150 == 0 {
            c = d.client().await;
        }
        let mut c = c.clone();
        let job = job.clone();
        waits.push(tokio::spawn(async move {
            c.await_proof(pb::AwaitProofRequest {
                job_id: job,
                timeout_ms: 0,
            })
            .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        waits.iter().all(|w| !w.is_finished()),
        "the job is still running"
    );
    let grew = threads().saturating_sub(before);
    assert!(grew < 16, "600 waiting clients took {grew} threads");
    d.answers().await;
    // A wait with a timeout answers TIMEOUT on time, even now.
    let t = Instant::now();
    let r = await_proof(&mut c, &job, 200).await;
    assert_eq!(r.status, pb::ProofStatus::Timeout as i32);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // The clients leave; then the job ends and nothing was waiting on a thread.
    for w in &waits {
        w.abort();
    }
    d.gate.release();
    let done = await_proof(&mut c, &job, 10_000).await;
    assert_eq!(
        done.status,
        pb::ProofStatus::Failed as i32,
        "{}",
        done.error_message
    );
    assert!(
        done.error_message.contains("withheld by the test"),
        "{}",
        done.error_message
    );
    d.answers_then_stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn request_ids_are_bounded_and_not_reused_for_another_request() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let max = zkforge_engine::MAX_REQUEST_ID_BYTES;
    let before = peak_rss();
    for len in [max + 1, 1 << 20] {
        let r = winning_post_request(dir.path(), &m, &"r".repeat(len));
        assert_refused(
            c.submit_proof(r).await,
            Code::InvalidArgument,
            "request_id is",
        );
    }
    assert!(peak_rss().saturating_sub(before) < 32 << 20);
    let id = "w".repeat(max);
    let first = c
        .submit_proof(winning_post_request(dir.path(), &m, &id))
        .await
        .unwrap()
        .into_inner();
    let again = c
        .submit_proof(winning_post_request(dir.path(), &m, &id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        first.job_id, again.job_id,
        "the same request again is the same job"
    );
    // The same id for another request while its job runs: refused, not silently the old job.
    let mut other = winning_post_request(dir.path(), &m, &id);
    other.miner_id += 1;
    assert_refused(
        c.submit_proof(other).await,
        Code::AlreadyExists,
        "different payload",
    );
    // Ids are scoped by proof kind: a WindowPoSt under the same id is a job of its own.
    let mut window = window_post_request(dir.path(), &m);
    window.request_id = id;
    let window = c.submit_proof(window).await.unwrap().into_inner();
    assert_ne!(window.job_id, first.job_id);
    d.answers_then_stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_answers_resource_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let config = EngineConfig {
        max_queued_jobs: 2,
        ..Default::default()
    };
    let d = Daemon::start(Limits::default(), config).await;
    let mut c = d.client().await;
    let normal = |id: &str| pb::SubmitProofRequest {
        priority: pb::Priority::Normal as i32,
        ..winning_post_request(dir.path(), &m, id)
    };
    for k in 0..2 {
        let r = c
            .submit_proof(normal(&format!("j{k}")))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.assigned_gpu, "", "the CPU backend has no GPU");
        assert!(r.queue_position <= k, "{r:?}");
    }
    let third = c.submit_proof(normal("j2")).await;
    assert_refused(third, Code::ResourceExhausted, "engine.max_queued_jobs");
    // Urgent work has room of its own: a WinningPoSt (Critical by default) still gets in.
    c.submit_proof(winning_post_request(dir.path(), &m, "urgent"))
        .await
        .expect("a critical proof is admitted past a full queue of bulk work");
    d.answers_then_stop().await;

    // Bytes held by queued requests: a limit below one request's size refuses it.
    let config = EngineConfig {
        max_queued_request_bytes: "1KiB".into(),
        ..Default::default()
    };
    let d = Daemon::start(Limits::default(), config).await;
    let mut c = d.client().await;
    let r = c
        .submit_proof(pb::SubmitProofRequest {
            priority: pb::Priority::Normal as i32,
            ..winning_post_request(dir.path(), &m, "big")
        })
        .await;
    assert_refused(
        r,
        Code::ResourceExhausted,
        "engine.max_queued_request_bytes",
    );
    d.answers_then_stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_wire_fields_must_agree_with_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let wrapper = std::fs::read(dir.path().join(&m.c1_wrapper)).unwrap();
    let sector_num = serde_json::from_slice::<serde_json::Value>(&wrapper).unwrap()["SectorNum"]
        .as_u64()
        .unwrap();
    let porep = |f: fn(&mut pb::SubmitProofRequest)| {
        let mut r = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            vanilla_proof: wrapper.clone(),
            ..Default::default()
        };
        f(&mut r);
        r
    };
    // The C1 is StackedDrg2KiBV1_1 (ffi number 5).
    assert_refused(
        c.submit_proof(porep(|r| r.registered_proof = 8)).await,
        Code::InvalidArgument,
        "registered_proof 8 does not match",
    );
    assert_refused(
        c.submit_proof(porep(|r| r.sector_size = 8 << 20)).await,
        Code::InvalidArgument,
        "sector_size 8388608",
    );
    let mut r = porep(|_| {});
    r.sector_number = sector_num + 1;
    assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "SectorNum");
    let mut r = porep(|r| {
        r.registered_proof = 5;
        r.sector_size = 2048;
    });
    r.sector_number = sector_num;
    c.submit_proof(r)
        .await
        .expect("agreeing fields are accepted");
    // PoSt: the number must be of the request's kind and agree with sector_size.
    let mut r = winning_post_request(dir.path(), &m, "");
    r.registered_proof = 13; // StackedDrgWindow32GiBV1_2
    assert_refused(
        c.submit_proof(r).await,
        Code::InvalidArgument,
        "is not a winning-post proof type",
    );
    let mut r = winning_post_request(dir.path(), &m, "");
    r.registered_proof = 3; // StackedDrgWinning32GiBV1, but sector_size says 2 KiB
    assert_refused(
        c.submit_proof(r).await,
        Code::InvalidArgument,
        "does not match registered_proof 3",
    );
    // A 2 KiB sector's proofs presented as a 32 GiB request (the type chosen by the number).
    let mut r = winning_post_request(dir.path(), &m, "");
    r.sector_size = 0;
    r.registered_proof = 3;
    assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "32GiB");
    // WinningPoSt: sector_number must be the proven sector.
    let mut r = winning_post_request(dir.path(), &m, "");
    r.sector_number = 1 << 40;
    assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "sector");
    d.answers_then_stop().await;
}
