//! Partitions in flight are sized to the work (issue 48): as many as keep the prover busy,
//! from measured synthesis and prove times, however many more the workers and the budget
//! could hold.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use zkforge_engine::EngineConfig;

use super::{completed, engine, job, submit};

/// Synthesis 60 ms a partition, proving 40 ms on one prover: two synthesizing keep it busy, so
/// the depth is 2 + 1 prover + 2 queued = 5, where 8 synthesis workers, the prove queue and
/// the prover would hold 11 and the budget far more. Every job still completes.
#[test]
fn partitions_in_flight_stay_at_the_depth_that_keeps_the_prover_busy() {
    let config = EngineConfig {
        synthesis_workers: 8,
        prover_workers_per_device: 1,
        prove_queue_depth: 2,
        urgent_lanes: false,
        memory_budget: "4GiB".into(),
        ..Default::default()
    };
    let (e, _) = engine(config, 40);
    let id = submit(&e, job(24, 60), None);
    let done = AtomicBool::new(false);
    let (peak, depths) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let (mut peak, mut depths) = (0, Vec::new());
            while !done.load(Ordering::Relaxed) {
                let s = e.status();
                peak = peak.max(s.partitions_in_flight.0);
                depths.extend(s.pipeline_depth.iter().rev().skip(1).map(|d| d.depth));
                std::thread::sleep(Duration::from_millis(2));
            }
            (peak, depths)
        });
        completed(&e, id);
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap()
    });
    let measured = e.status().pipeline_depth;
    let porep = &measured[0];
    assert!(
        porep.synthesis_secs.is_some() && porep.cycle_secs.is_some(),
        "{measured:?}"
    );
    assert!(
        (4..=5).contains(&porep.depth),
        "depth {} ({})",
        porep.depth,
        porep.why
    );
    let deepest = depths.into_iter().max().unwrap_or(4).max(4);
    assert!(
        peak <= deepest,
        "{peak} partitions in flight at once, past the depth {deepest}"
    );
    assert!(peak >= 3, "the pipeline was used: {peak} at most");
    assert_eq!(e.status().partitions_in_flight, (0, 0), "all given back");
}

/// A fixed `engine.pipeline_depth` holds exactly.
#[test]
fn a_fixed_pipeline_depth_is_never_passed() {
    let config = EngineConfig {
        synthesis_workers: 6,
        pipeline_depth: 2,
        memory_budget: "4GiB".into(),
        ..Default::default()
    };
    let (e, _) = engine(config, 10);
    let id = submit(&e, job(12, 5), None);
    let done = AtomicBool::new(false);
    let peak = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(e.status().partitions_in_flight.0);
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        });
        completed(&e, id);
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap()
    });
    assert!((1..=2).contains(&peak), "{peak} in flight");
    let why = &e.status().pipeline_depth[0].why;
    assert!(why.contains("engine.pipeline_depth = 2"), "{why}");
}

/// While the host leaves less than `engine.memory_floor`, bulk submissions are refused naming
/// it and urgent work is admitted and proved within the floor.
#[test]
fn below_the_floor_bulk_work_is_refused_and_urgent_work_proves() {
    let config = EngineConfig {
        memory_budget: "4GiB".into(),
        memory_floor: "1GiB".into(),
        // The memory watch then leaves the limit alone unless the host has under 4 GiB left.
        memory_margin: "0".into(),
        ..Default::default()
    };
    let (e, _) = engine(config, 0);
    let named = || zkforge_engine::JobRequest {
        request_id: Some("porep-1000-7".into()),
        ..zkforge_engine::JobRequest::new(std::sync::Arc::new(job(1, 0)))
    };
    let before = e.submit(named()).unwrap();
    completed(&e, before);
    // What the memory watch sets when the host has 0.5 GiB left for the daemon.
    e.budget().set_limit(512 << 20);
    assert_eq!(
        e.submit(named()).unwrap(),
        before,
        "a retry of a completed job needs no memory: its proof answers"
    );
    let refused = e
        .submit(zkforge_engine::JobRequest::new(std::sync::Arc::new(job(
            1, 0,
        ))))
        .unwrap_err();
    assert!(refused.is_busy(), "{refused}");
    assert!(
        refused.to_string().contains("engine.memory_floor"),
        "{refused}"
    );
    let urgent = submit(&e, job(2, 0), Some(zkforge_engine::Priority::High));
    completed(&e, urgent);
    e.budget().set_limit(u64::MAX);
    completed(&e, submit(&e, job(1, 0), None));
}
