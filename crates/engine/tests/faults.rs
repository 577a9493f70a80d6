//! An injected device failure in one partition (the CPU backend wrapped in
//! `fault::FaultyBackend`): that job fails with a message naming the failure, the other jobs in
//! flight complete and verify, and the engine keeps serving. The GPU variant is in
//! scripts/gpu-faults.sh.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{engine, job, proofs_verify, submit};
use zkforge_engine::{EngineConfig, JobOutcome};
use zkforge_groth16::fault::{FaultPlan, FaultyBackend};
use zkforge_groth16::CpuBackend;

#[test]
fn an_injected_msm_failure_fails_one_job_and_the_others_complete() {
    // The third MSM phase fails.
    let backend = FaultyBackend::new(Arc::new(CpuBackend::new()), FaultPlan::parse("msm:3"));
    let (e, pk) = engine(
        EngineConfig {
            memory_budget: "1GiB".into(),
            ..Default::default()
        },
        Arc::new(backend),
        10,
    );
    // Four jobs of two partitions in flight at once: eight MSM phases, the third one fails.
    let jobs: Vec<_> = (0..4).map(|_| job(10, 2)).collect();
    let ids: Vec<u64> = jobs.iter().map(|j| submit(&e, j.clone())).collect();
    let mut failed = Vec::new();
    for (j, id) in jobs.iter().zip(&ids) {
        let result = e
            .wait(*id, Some(Duration::from_secs(300)))
            .unwrap()
            .expect("every job ends");
        match result.outcome {
            JobOutcome::Completed(bytes) => {
                assert!(proofs_verify(&pk, j, &bytes), "job {id}: proofs verify")
            }
            JobOutcome::Failed(f) => failed.push(f.message),
            JobOutcome::Cancelled => panic!("job {id} was cancelled"),
        }
    }
    assert_eq!(failed.len(), 1, "exactly one job failed: {failed:?}");
    assert!(
        failed[0].contains("injected fault (ZKFORGE_FAULT): msm call 3 failed"),
        "the message names the failure: {}",
        failed[0]
    );
    assert_eq!((e.status().completed, e.status().failed), (3, 1));

    // The backend keeps serving: the next job completes and verifies.
    let next = job(10, 2);
    let id = submit(&e, next.clone());
    match e
        .wait(id, Some(Duration::from_secs(300)))
        .unwrap()
        .unwrap()
        .outcome
    {
        JobOutcome::Completed(bytes) => assert!(proofs_verify(&pk, &next, &bytes)),
        other => panic!("after the fault: {other:?}"),
    }
    let key_bytes: u64 = e.status().loaded_srs.iter().map(|k| k.bytes).sum();
    assert_eq!(e.budget().used(), key_bytes, "only the key holds memory");
}
