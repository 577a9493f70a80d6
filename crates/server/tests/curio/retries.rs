//! What Curio itself does: retry a failed or cancelled task with the same request, send
//! ProofShare's SnapDeals without a sector size, ask for urgent proofs while the queue is full
//! of PoRep, stop the daemon under load (systemd), and read GetStatus.

use std::time::{Duration, Instant};

use zkforge_engine::{EngineConfig, StageEvent};
use zkforge_filecoin::ProofKind;

use crate::daemon::{add_params, ReleaseOnDrop, Setup, TestDaemon};
use crate::requests::Sector;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_porep_that_failed_for_a_missing_key_is_proved_by_curios_retry() {
    crate::daemon::param_dir();
    let sector = Sector::new(11);
    let params = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(Setup {
        params: Some(params.path().to_path_buf()),
        ..Setup::default()
    })
    .await;
    let req = sector.porep();
    let mut curio = d.curio();
    let outcome = curio
        .task(req.clone(), |n, e| {
            // The operator copies the parameters in after the first failure.
            if n == 1 {
                assert!(e.contains("cuzk proof failed"), "{e}");
                add_params(ProofKind::PoRep, params.path());
            }
        })
        .await;
    assert!(sector.verifies(&req, outcome.proof()));
    assert_eq!(
        outcome.errors.len(),
        1,
        "the first retry proves: {:?}",
        outcome.errors
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cancelled_by_another_client_is_proved_by_curios_retry() {
    let sector = Sector::new(12);
    let d = TestDaemon::start(Setup {
        held: vec![ProofKind::WindowPost],
        ..Setup::default()
    })
    .await;
    let req = sector.window_post();
    let task = d.curio().spawn_task(req.clone());
    d.until_unfinished(ProofKind::WindowPost, 1).await;
    // Another client (an operator's tool given the job's id) cancels it.
    let job = d.engine.status().partitions[0].job;
    d.engine.cancel(job).unwrap();
    d.hold.release(true);
    let outcome = task.await.unwrap();
    assert_eq!(outcome.errors, ["cuzk proof cancelled"]);
    assert!(sector.verifies(&req, outcome.proof()));
    d.stop().await;
}

/// Jobs the engine has started so far (its TIMELINE's submissions).
fn jobs_started(d: &TestDaemon) -> usize {
    d.engine
        .timeline()
        .iter()
        .filter(|e| e.event == StageEvent::JobSubmit)
        .count()
}

// A WindowPoSt (Curio tries it 5 times) rather than a PoRep: the rules are the same for every
// kind, and a 2 KiB PoRep proof takes ~25 s of the CPU backend where a WindowPoSt takes ~1 s.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_proof_retried_by_curio_returns_its_proof_without_proving_again() {
    let sector = Sector::new(17);
    let d = TestDaemon::start(Setup::default()).await;
    let req = sector.window_post();
    let mut curio = d.curio();
    let first = curio.prove(req.clone()).await.expect("the first try");
    assert!(sector.verifies(&req, &first.proof));
    // Curio's task failed after the proof came back (its database, say): the scheduler
    // retries with the same request.
    let retry = curio.prove(req.clone()).await.expect("the retry");
    assert_eq!(retry.proof, first.proof, "the completed job's own proof");
    assert_eq!(retry.job_id, first.job_id, "the same job");
    assert_eq!(jobs_started(&d), 1, "no second job was started");
    let status = curio.get_status().await.unwrap();
    assert_eq!(
        (status.total_proofs_completed, status.total_proofs_failed),
        (1, 0),
        "one proof computed, as Curio's GetStatus reads it"
    );
    // The control: the same payload under another id is proved again, with new random
    // (r, s), so equal bytes above can only be the kept result.
    let mut other = req.clone();
    other.request_id.push_str("-again");
    let again = curio.prove(other.clone()).await.expect("another id");
    assert!(sector.verifies(&other, &again.proof));
    assert_ne!(again.proof, first.proof, "a second proof has other bytes");
    assert_eq!(jobs_started(&d), 2);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_payload_under_an_ended_jobs_request_id_replaces_it_and_is_proved() {
    // Two sectors' partitions under one request id: another payload for the same id, as a
    // new C1 for a sector after a reorg is.
    let (old, new) = (Sector::new(18), Sector::new(19));
    let params = tempfile::tempdir().unwrap();
    let d = TestDaemon::start(Setup {
        params: Some(params.path().to_path_buf()),
        ..Setup::default()
    })
    .await;
    let first = old.window_post();
    let mut second = new.window_post();
    second.request_id = first.request_id.clone();
    assert_ne!(first.vanilla_proofs, second.vanilla_proofs);
    let mut curio = d.curio();
    // The first payload's job ends FAILED (its key is missing); the key is added.
    let failed = curio.prove(first.clone()).await.unwrap_err();
    assert!(failed.contains("cuzk proof failed"), "{failed}");
    add_params(ProofKind::WindowPost, params.path());
    // The other payload under the FAILED job's id: a new job, proving that payload.
    let replaced = curio.prove(second.clone()).await.expect("the new payload");
    assert!(new.verifies(&second, &replaced.proof));
    assert!(
        !old.m.verify_window_post(&replaced.proof).unwrap_or(false),
        "the proof is of the new payload, not the failed job's"
    );
    assert_eq!(jobs_started(&d), 2);
    // The first payload again, under the id whose job is now COMPLETED with the other one:
    // it replaces that job too, and its own proof comes back, not the kept one.
    let back = curio
        .prove(first.clone())
        .await
        .expect("the first payload again");
    assert!(old.verifies(&first, &back.proof));
    assert!(!new.m.verify_window_post(&back.proof).unwrap_or(false));
    assert_ne!(back.job_id, replaced.job_id);
    assert_eq!(jobs_started(&d), 3);
    // That job's retry is that job's proof.
    let retry = curio.prove(first.clone()).await.expect("the retry");
    assert_eq!((retry.job_id, retry.proof), (back.job_id, back.proof));
    assert_eq!(jobs_started(&d), 3);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proofshare_snapdeals_request_without_a_sector_size_is_proved() {
    let sector = Sector::new(13);
    let d = TestDaemon::start(Setup::default()).await;
    let req = sector.ps_snap(77);
    assert_eq!((req.sector_size, req.registered_proof), (0, 0));
    let proof = d.curio().prove(req.clone()).await.expect("one try");
    assert!(sector.verifies(&req, &proof.proof));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urgent_proofs_are_admitted_and_proved_past_a_full_queue_of_porep() {
    let sector = Sector::new(14);
    let d = TestDaemon::start(Setup {
        engine: EngineConfig {
            max_queued_jobs: 3,
            synthesis_workers: 2,
            ..Default::default()
        },
        held: vec![ProofKind::PoRep],
        ..Setup::default()
    })
    .await;
    let mut porep = Vec::new();
    for n in 0..3 {
        let mut req = sector.porep();
        req.request_id = format!("porep-1000-{n}");
        let mut curio = d.curio();
        porep.push(tokio::spawn(async move { curio.prove(req).await }));
    }
    d.until_unfinished(ProofKind::PoRep, 3).await;
    let mut fourth = sector.porep();
    fourth.request_id = "porep-1000-3".into();
    let full = d.curio().prove(fourth).await.unwrap_err();
    assert!(full.contains("ResourceExhausted"), "{full}");
    // A WinningPoSt is tried once: it must be admitted, and prove.
    let winning = sector.winning_post();
    let outcome = d.curio().task(winning.clone(), |_, _| {}).await;
    assert!(sector.verifies(&winning, outcome.proof()));
    let window = sector.window_post();
    let proof = d
        .curio()
        .prove(window.clone())
        .await
        .expect("the first try");
    assert!(sector.verifies(&window, &proof.proof));
    d.hold.release(false);
    for p in porep {
        assert!(p.await.unwrap().unwrap_err().contains("withheld"));
    }
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_answers_every_call_in_flight_by_its_deadline_and_the_retries_prove_after() {
    let sector = Sector::new(15);
    let sockets = tempfile::tempdir().unwrap();
    let path = sockets.path().join("cuzk.sock");
    let deadline = Duration::from_secs(2);
    let d = TestDaemon::start(Setup {
        unix: Some(path.clone()),
        held: vec![ProofKind::PoRep, ProofKind::WindowPost],
        shutdown_deadline: deadline,
        ..Setup::default()
    })
    .await;
    let window = sector.window_post();
    let mut calls = Vec::new();
    for req in [sector.porep(), sector.ps_porep(5), window.clone()] {
        let mut curio = d.curio();
        calls.push(tokio::spawn(async move { curio.prove(req).await }));
    }
    d.until_unfinished(ProofKind::PoRep, 2).await;
    d.until_unfinished(ProofKind::WindowPost, 1).await;
    let mut curio = d.curio();
    let stopping = d.signal_stop();
    let t = Instant::now();
    (stopping.signal)();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A new call during the drain fails at once: Curio's task fails over, it does not hang.
    let refused = tokio::time::timeout(Duration::from_secs(1), curio.prove(sector.winning_post()))
        .await
        .expect("answered within a second during the drain")
        .unwrap_err();
    assert!(refused.contains("Unavailable"), "{refused}");
    for call in calls {
        let e = call.await.unwrap().unwrap_err();
        assert!(e.contains("shutdown_deadline"), "{e}");
    }
    stopping.served.await.unwrap();
    let stopped = t.elapsed();
    assert!(
        stopped < deadline + zkforge_server::AFTER_DEADLINE + Duration::from_secs(1),
        "serving ended {stopped:?} after the signal"
    );
    // The workers stuck in the held loads are left to the process's exit, within the grace.
    let t = Instant::now();
    stopping.engine.stop_within(Some(Duration::from_secs(1)));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    stopping.hold.release(false);
    drop(stopping.engine);
    // Restarted (same socket), the daemon proves Curio's retry of the same request.
    let d = TestDaemon::start(Setup {
        unix: Some(path),
        ..Setup::default()
    })
    .await;
    let outcome = d.curio().task(window.clone(), |_, _| {}).await;
    assert!(sector.verifies(&window, outcome.proof()));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_call_on_curios_open_channels_during_the_drain_is_unavailable_at_once() {
    let sector = Sector::new(20);
    let deadline = Duration::from_secs(2);
    let d = TestDaemon::start(Setup {
        held: vec![ProofKind::PoRep],
        shutdown_deadline: deadline,
        ..Setup::default()
    })
    .await;
    let addr = d.tcp();
    // Curio's channel, connected, with a PoRep in flight on it (its tasks share one client):
    // the connection stays open through the drain for that call's answer.
    let mut busy = d.curio();
    busy.get_status().await.expect("connected");
    let porep = tokio::spawn({
        let (mut curio, req) = (busy.clone(), sector.porep());
        async move { curio.prove(req).await }
    });
    d.until_unfinished(ProofKind::PoRep, 1).await;
    // Another Curio node's channel: connected, nothing in flight.
    let mut idle = d.curio();
    idle.get_status().await.expect("connected");
    let stopping = d.signal_stop();
    let _release = ReleaseOnDrop(stopping.hold.clone());
    (stopping.signal)();
    let signalled = Instant::now();
    // The drain has started once the listener refuses a new connection (it closes it first).
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(
            signalled.elapsed() < Duration::from_secs(2),
            "the listener still accepts"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A new Prove on either channel fails at once, UNAVAILABLE: Curio's task fails over
    // instead of waiting for the deadline or being admitted into a stopping daemon.
    let winning = sector.winning_post();
    for (channel, curio) in [("busy", &mut busy), ("idle", &mut idle)] {
        let t = Instant::now();
        let refused = tokio::time::timeout(Duration::from_secs(1), curio.prove(winning.clone()))
            .await
            .unwrap_or_else(|_| panic!("the {channel} channel's call waited past a second"))
            .unwrap_err();
        assert!(refused.contains("Unavailable"), "{channel}: {refused}");
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{channel}: {:?}",
            t.elapsed()
        );
    }
    // The call in flight on the busy channel is still answered, at the deadline.
    let e = porep.await.unwrap().unwrap_err();
    assert!(e.contains("shutdown_deadline"), "{e}");
    assert!(signalled.elapsed() > deadline - Duration::from_millis(100));
    stopping.served.await.unwrap();
    stopping.engine.stop_within(Some(Duration::from_secs(1)));
    stopping.hold.release(false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_status_names_proof_kinds_as_cuzk_does() {
    let sector = Sector::new(16);
    let d = TestDaemon::start(Setup {
        held: vec![
            ProofKind::PoRep,
            ProofKind::SnapDeals,
            ProofKind::WindowPost,
            ProofKind::WinningPost,
        ],
        ..Setup::default()
    })
    .await;
    let mut calls = Vec::new();
    for req in [
        sector.porep(),
        sector.snap(),
        sector.window_post(),
        sector.winning_post(),
    ] {
        let mut curio = d.curio();
        calls.push(tokio::spawn(async move { curio.prove(req).await }));
    }
    for kind in [
        ProofKind::PoRep,
        ProofKind::SnapDeals,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ] {
        d.until_unfinished(kind, 1).await;
    }
    let status = d.curio().get_status().await.unwrap();
    let mut kinds: Vec<&str> = status
        .queues
        .iter()
        .filter(|q| q.pending + q.in_progress > 0)
        .map(|q| q.proof_kind.as_str())
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        ["porep-c2", "snap-update", "window-post", "winning-post"]
    );
    // Curio's backpressure reads these counts.
    let pending: u32 = status
        .queues
        .iter()
        .map(|q| q.pending + q.in_progress)
        .sum();
    assert!(pending >= 4, "{status:?}");
    d.stop().await;
    for call in calls {
        assert!(call.await.unwrap().is_err());
    }
}
