//! The engine on small synthetic circuits with the CPU backend: pipeline throughput, memory
//! budget, priorities, cancellation, failures, idempotent submits — asserted on outcomes and
//! TIMELINE events, never on wall time alone.

#[path = "../common/mod.rs"]
mod common;
mod depth;
mod priorities;
mod recordings;
mod resubmission;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::MemorySource;
use rand_core::SeedableRng;
use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind, SyntheticCircuit, SyntheticJob};
use zkforge_engine::{
    Engine, EngineConfig, Failure, FailureKind, JobOutcome, JobRequest, Priority, Stage,
    StageEvent, TimelineEvent, WorkerId,
};
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::{
    CpuBackend, DeviceInfo, Dispatch, KeyRef, Phase, ProveReport, ProverBackend, ProvingKey,
    QuerySums, ScalarPool, Witness,
};

/// The CPU backend, made slower so that the prover is the bottleneck on purpose.
struct SlowBackend(CpuBackend, Duration);

impl ProverBackend for SlowBackend {
    fn name(&self) -> &'static str {
        "slow-cpu"
    }

    fn query_sums_on(
        &self,
        on: Dispatch,
        key: KeyRef<'_>,
        w: Witness,
        report: &mut ProveReport,
    ) -> zkforge_groth16::Result<QuerySums> {
        std::thread::sleep(self.1);
        self.0.query_sums_on(on, key, w, report)
    }
}

fn circuit(seed: u64) -> SyntheticCircuit {
    SyntheticCircuit::new(1 << 9, 2, 0.8, seed)
}

fn job(partitions: usize, synth_ms: u64) -> SyntheticJob {
    let mut j = SyntheticJob::new(circuit(1), partitions, ProofKind::PoRep);
    j.synthesis_delay = Duration::from_millis(synth_ms);
    j
}

fn keys() -> (ParamsId, ProvingKey) {
    let j = job(1, 0);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    (
        j.params_id().clone(),
        generate_random_keys(j.circuit.clone(), &mut rng, &()).unwrap(),
    )
}

/// The bytes the engine holds for the parameter set of `job` (key and recorded matrices),
/// from a probe job on a roomy budget.
fn resident_bytes() -> u64 {
    let (e, _) = engine(config(1), 0);
    completed(&e, submit(&e, job(1, 0), None));
    e.status().loaded_srs[0].bytes
}

fn engine(config: EngineConfig, prove_ms: u64) -> (Engine, ProvingKey) {
    let (id, pk) = keys();
    let backend: Arc<dyn ProverBackend> = Arc::new(SlowBackend(
        CpuBackend::new(),
        Duration::from_millis(prove_ms),
    ));
    let source = MemorySource([(id.stem, pk.clone())].into_iter().collect());
    (
        Engine::start(config, backend, Box::new(source)).unwrap(),
        pk,
    )
}

fn config(synthesis_workers: usize) -> EngineConfig {
    EngineConfig {
        synthesis_workers,
        memory_budget: "4GiB".into(),
        ..Default::default()
    }
}

fn submit(e: &Engine, j: SyntheticJob, priority: Option<Priority>) -> u64 {
    e.submit(JobRequest {
        priority,
        ..JobRequest::new(Arc::new(j))
    })
    .unwrap()
}

fn completed(e: &Engine, id: u64) -> Vec<u8> {
    match e
        .wait(id, Some(Duration::from_secs(120)))
        .unwrap()
        .expect("finished in time")
        .outcome
    {
        JobOutcome::Completed(p) => p,
        other => panic!("job {id}: {other:?}"),
    }
}

/// Why job `id`, which must fail within `within`, failed.
fn failed(e: &Engine, id: u64, within: Duration) -> Failure {
    match e.wait(id, Some(within)).unwrap().unwrap().outcome {
        JobOutcome::Failed(f) => f,
        other => panic!("{other:?}"),
    }
}

fn events(e: &Engine, kind: StageEvent) -> Vec<TimelineEvent> {
    e.timeline()
        .into_iter()
        .filter(|ev| ev.event == kind)
        .collect()
}

/// Gaps between one prove ending and the next starting, in ms.
fn prover_gaps(e: &Engine) -> Vec<f64> {
    let starts = events(e, StageEvent::ProveStart);
    let ends = events(e, StageEvent::ProveEnd);
    starts
        .iter()
        .skip(1)
        .zip(&ends)
        .map(|(s, end)| s.t_ms - end.t_ms)
        .collect()
}

#[test]
fn two_synthesis_workers_keep_the_prover_busy() {
    // Synthesis takes 500 ms, proving 300 ms: one synthesis worker leaves the prover idle
    // ~200 ms per partition, two keep a partition always waiting for it.
    let mut mean_gap = Vec::new();
    for workers in [1, 2] {
        let (e, pk) = engine(config(workers), 300);
        let id = submit(&e, job(6, 500), None);
        let proof = completed(&e, id);
        let inputs = circuit(1).public_values();
        for chunk in proof.chunks(192) {
            let p = zkforge_groth16::Proof::from_bytes(chunk).unwrap();
            assert!(zkforge_groth16::verify::verify(&pk.vk, &p, &inputs).unwrap());
        }
        let gaps = prover_gaps(&e);
        assert_eq!(gaps.len(), 5);
        mean_gap.push(gaps[1..].iter().sum::<f64>() / 4.0);
    }
    assert!(
        mean_gap[0] > 60.0,
        "one worker: the prover waits for synthesis ({mean_gap:?})"
    );
    assert!(
        mean_gap[1] < 30.0,
        "two workers: the prover barely idles ({mean_gap:?})"
    );
}

#[test]
fn memory_budget_bounds_the_partitions_in_flight() {
    let (_, pk) = keys();
    let c = circuit(1);
    let partition = common::partition_bytes(&pk);
    let budget = resident_bytes() + 2 * partition + partition / 2;
    let cfg = EngineConfig {
        prove_queue_depth: 4,
        memory_budget: budget.to_string(),
        ..config(2)
    };
    let (e, _) = engine(cfg, 150);
    let ids: Vec<u64> = (0..3).map(|_| submit(&e, job(3, 10), None)).collect();
    for id in ids {
        completed(&e, id);
    }
    let (peak_bytes, peak_reservations) = e.budget().peaks();
    assert!(peak_bytes <= budget);
    assert_eq!(
        peak_reservations, 3,
        "the parameter set (one reservation) and exactly two partitions at most"
    );
    assert_eq!(c.constraints, 512);
}

#[test]
fn cancelled_jobs_release_memory_and_others_complete() {
    let (e, pk) = engine(config(1), 100);
    let running = submit(&e, job(4, 200), None);
    let queued = submit(&e, job(2, 200), None);
    let other = submit(&e, job(2, 10), Some(Priority::High));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        e.cancel(running).unwrap(),
        "its first partition was synthesizing"
    );
    assert!(!e.cancel(queued).unwrap());
    for id in [running, queued] {
        let r = e.wait(id, Some(Duration::from_secs(5))).unwrap().unwrap();
        assert_eq!(r.outcome, JobOutcome::Cancelled);
    }
    let proof = completed(&e, other);
    assert_eq!(proof.len(), 2 * 192);
    let p = zkforge_groth16::Proof::from_bytes(&proof[..192]).unwrap();
    assert!(zkforge_groth16::verify::verify(&pk.vk, &p, &circuit(1).public_values()).unwrap());
    // Everything in flight is released once the workers pass their stage boundaries.
    std::thread::sleep(Duration::from_millis(500));
    let id = job(1, 0).params_id().clone();
    assert!(e.evict(&id).is_some());
    assert_eq!(
        e.budget().used(),
        0,
        "the budget is back to its initial value"
    );
    assert_eq!(e.status().cancelled, 2);
}

#[test]
fn a_failing_job_fails_alone() {
    let (e, _) = engine(config(2), 0);
    let mut bad = job(3, 10);
    bad.fail_partition = Some(1);
    let bad = submit(&e, bad, None);
    let good = submit(&e, job(3, 10), None);
    let f = failed(&e, bad, Duration::from_secs(60));
    assert!(f.message.contains("partition 1"), "{f:?}");
    // Nothing the engine knows of: a circuit's own error is not the client's fault by default.
    assert_eq!(f.kind, FailureKind::Internal, "{f:?}");
    assert_eq!(completed(&e, good).len(), 3 * 192);
    let s = e.status();
    assert_eq!((s.completed, s.failed), (1, 1));
}

#[test]
fn request_ids_are_idempotent_and_waits_time_out() {
    let (e, _) = engine(config(1), 300);
    let req = |rid: &str| JobRequest {
        request_id: Some(rid.into()),
        ..JobRequest::new(Arc::new(job(1, 0)))
    };
    let a = e.submit(req("sector-7")).unwrap();
    assert_eq!(
        e.submit(req("sector-7")).unwrap(),
        a,
        "same request id, same job"
    );
    let b = e.submit(req("sector-8")).unwrap();
    assert_ne!(a, b);
    assert_eq!(
        e.wait(b, Some(Duration::from_millis(10))).unwrap(),
        None,
        "a wait that times out"
    );
    assert!(e.wait(9999, None).is_err(), "unknown job id");
    completed(&e, a);
    completed(&e, b);
    let s = e.status();
    assert_eq!(s.loaded_srs.len(), 1);
    assert_eq!(s.loaded_srs[0].ref_count, 0);
}

#[test]
fn invalid_config_and_missing_parameters_are_clear_errors() {
    let backend: Arc<dyn ProverBackend> = Arc::new(CpuBackend::new());
    let bad = EngineConfig {
        prover_workers_per_device: 0,
        ..config(1)
    };
    let err = Engine::start(bad, backend.clone(), Box::new(MemorySource(HashMap::new())))
        .err()
        .unwrap();
    assert!(err.to_string().contains("prover_workers_per_device"));

    let e = Engine::start(config(1), backend, Box::new(MemorySource(HashMap::new()))).unwrap();
    let id = submit(&e, job(1, 0), None);
    let f = failed(&e, id, Duration::from_secs(10));
    assert!(f.message.contains("no keys for synthetic"), "{f:?}");
    assert_eq!(f.kind, FailureKind::NotProvisioned, "missing parameters");
}

#[test]
fn status_shows_partition_stages_and_workers_and_fail_unfinished_stops_everything() {
    let (e, _) = engine(config(1), 0);
    let id = submit(&e, job(3, 300), None);
    std::thread::sleep(Duration::from_millis(100));
    let s = e.status();
    let stages: Vec<_> = s
        .partitions
        .iter()
        .filter(|p| p.job == id)
        .map(|p| p.stage)
        .collect();
    assert_eq!(stages, [Stage::Synthesizing, Stage::Queued, Stage::Queued]);
    let synth = s
        .partitions
        .iter()
        .find(|p| p.job == id && p.partition == 0)
        .unwrap();
    assert!(
        synth.in_stage_ms > 10.0 && synth.in_stage_ms < 300.0,
        "{synth:?}"
    );
    assert!(s.workers.iter().any(|w| w.worker == WorkerId::synthesis(0)
        && w.job == Some(id)
        && w.partition == Some(0)));
    assert_eq!(e.fail_unfinished("stopping"), 1);
    assert_eq!(
        e.wait(id, None).unwrap().unwrap().outcome,
        JobOutcome::Failed(Failure::new(FailureKind::Unavailable, "stopping"))
    );
    assert_eq!(e.fail_unfinished("stopping"), 0);
    assert!(e.status().partitions.is_empty());
}

/// A two-device backend that locks only its "kernel region" (a sleep) itself, like the CUDA
/// backend: reports device phases and lock waits, hands synthesis a buffer pool, and counts
/// how many calls run at once per device, inside and outside the kernel region.
struct KernelLockBackend {
    cpu: CpuBackend,
    pool: Arc<ScalarPool>,
    kernels: [Mutex<()>; 2],
    inside: [AtomicUsize; 2],
    calls: [AtomicUsize; 2],
    most_in_calls: [AtomicUsize; 2],
    most_in_kernels: AtomicUsize,
    /// Keys staged on the devices (`stage` calls).
    staged: AtomicUsize,
}

impl ProverBackend for KernelLockBackend {
    fn name(&self) -> &'static str {
        "kernel-lock"
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        (0..2)
            .map(|i| DeviceInfo {
                ordinal: i,
                name: format!("fake-{i}"),
                memory_total_bytes: 1 << 30,
                memory_free_bytes: 1 << 30,
                budget_bytes: 1 << 29,
                reserved_bytes: 0,
                reserved_peak_bytes: 0,
                residency: "vram: 1 key(s)".into(),
                h2d_pinned_bytes_per_s: 50_000_000_000,
                h2d_pageable_bytes_per_s: 6_000_000_000,
            })
            .collect()
    }

    fn locks_devices(&self) -> bool {
        true
    }

    fn scalar_pool(&self) -> Option<Arc<ScalarPool>> {
        Some(self.pool.clone())
    }

    fn stage(
        &self,
        _: KeyRef<'_>,
        _: Option<&Arc<zkforge_groth16::ConstraintMatrices>>,
    ) -> zkforge_groth16::Result<()> {
        self.staged.fetch_add(1, SeqCst);
        Ok(())
    }

    fn query_sums_on(
        &self,
        on: Dispatch,
        pk: KeyRef<'_>,
        w: Witness,
        report: &mut ProveReport,
    ) -> zkforge_groth16::Result<QuerySums> {
        let d = on.device;
        assert!(
            w.recycle.0.is_some(),
            "synthesis drew the witness from the pool"
        );
        let now = self.calls[d].fetch_add(1, SeqCst) + 1;
        self.most_in_calls[d].fetch_max(now, SeqCst);
        std::thread::sleep(Duration::from_millis(40)); // "upload", outside the lock
        let t = std::time::Instant::now();
        let guard = self.kernels[d].lock().unwrap();
        report.lock_wait_ms = t.elapsed().as_secs_f64() * 1e3;
        let inside = self.inside[d].fetch_add(1, SeqCst) + 1;
        self.most_in_kernels.fetch_max(inside, SeqCst);
        std::thread::sleep(Duration::from_millis(40));
        let sums = self
            .cpu
            .query_sums_on(Dispatch::on(0), pk, w, &mut ProveReport::default());
        self.inside[d].fetch_sub(1, SeqCst);
        drop(guard);
        report.locked_ms = 40.0;
        report.phases.push(Phase {
            name: "msm",
            start_ms: 40.0,
            duration_ms: 40.0,
        });
        self.calls[d].fetch_sub(1, SeqCst);
        sums
    }
}

#[test]
fn kernel_locking_backends_get_concurrent_workers_on_every_device() {
    let (id, pk) = keys();
    let backend = Arc::new(KernelLockBackend {
        cpu: CpuBackend::new(),
        pool: ScalarPool::new(None, 1 << 30),
        kernels: Default::default(),
        inside: Default::default(),
        calls: Default::default(),
        most_in_calls: Default::default(),
        most_in_kernels: AtomicUsize::new(0),
        staged: AtomicUsize::new(0),
    });
    let source = MemorySource([(id.stem, pk)].into_iter().collect());
    let config = EngineConfig {
        synthesis_workers: 4,
        prover_workers_per_device: 2,
        prove_queue_depth: 4,
        ..config(4)
    };
    let e = Engine::start(config, backend.clone(), Box::new(source)).unwrap();
    let ids: Vec<u64> = (0..4).map(|_| submit(&e, job(4, 0), None)).collect();
    for id in ids {
        assert_eq!(
            completed(&e, id).len(),
            4 * 192,
            "four verified partition proofs"
        );
    }
    // Both devices proved; their two workers overlapped outside the kernel region only.
    let phases = events(&e, StageEvent::GpuPhase);
    assert_eq!(phases.len(), 16);
    for d in 0..2 {
        assert!(
            phases.iter().any(|p| p.device == Some(d)),
            "device {d} unused"
        );
        assert_eq!(backend.most_in_calls[d].load(SeqCst), 2, "device {d}");
    }
    assert_eq!(backend.most_in_kernels.load(SeqCst), 1);
    assert_eq!(
        backend.staged.load(SeqCst),
        1,
        "the key was staged on the devices once, when it loaded"
    );
    assert!(phases
        .iter()
        .all(|p| p.phase == Some("msm") && p.duration_ms == Some(40.0)));
    let names: std::collections::HashSet<_> = events(&e, StageEvent::ProveEnd)
        .into_iter()
        .filter_map(|p| p.worker)
        .collect();
    assert!(
        names.contains("prover-1-1") && names.contains("prover-0-0"),
        "{names:?}"
    );
    let st = e.status();
    assert_eq!(st.devices.len(), 2);
    assert_eq!(st.devices[1].info.residency, "vram: 1 key(s)");
}

/// A seeded job is the one proving pipeline with r and s fixed: its bytes are the reference
/// prover's for partition k's pair drawn k-th from the seed, whichever worker proved it when;
/// a job from entropy proves other bytes.
#[test]
fn a_seeded_job_proves_the_reference_bytes() {
    let (e, pk) = engine(config(2), 0);
    let seeded = e
        .submit(JobRequest::new(Arc::new(job(3, 0))).seeded(5))
        .unwrap();
    let fresh = e.submit(JobRequest::new(Arc::new(job(3, 0)))).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let j = job(3, 0);
    let mut expected = Vec::new();
    for k in 0..3 {
        let randomness = zkforge_groth16::ProofRandomness::random(&mut rng);
        let w = j.synthesize(k).unwrap();
        let proof = zkforge_groth16::prover::prove(&CpuBackend::new(), &pk, w, randomness).unwrap();
        expected.extend_from_slice(&proof.to_bytes());
    }
    assert_eq!(completed(&e, seeded), expected);
    assert_ne!(completed(&e, fresh), expected);
}
