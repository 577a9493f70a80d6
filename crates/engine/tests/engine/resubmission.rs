//! Resubmissions as Curio's scheduler makes them (the same request_id and payload after any
//! failure), ids scoped by proof kind, and the room each priority class has of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkforge_circuits::{ParamsId, ProofKind, SyntheticJob};
use zkforge_engine::{Engine, EngineConfig, JobRequest, ParamsSource, Priority, SubmitError};
use zkforge_groth16::{LoadedKey, ProvingKey, QueryLengths};

use super::{circuit, completed, config, failed, job, keys};

/// Keys that appear when the test adds them: a parameter file missing, then copied in.
#[derive(Default)]
struct LateKeys(Mutex<HashMap<String, ProvingKey>>);

struct Shared(Arc<LateKeys>);

impl ParamsSource for Shared {
    fn lengths(&self, id: &ParamsId) -> anyhow::Result<QueryLengths> {
        Ok(self.key(id)?.lengths())
    }

    fn load(&self, id: &ParamsId, _: bool) -> anyhow::Result<LoadedKey> {
        Ok(LoadedKey::Memory(Arc::new(self.key(id)?)))
    }
}

impl Shared {
    fn key(&self, id: &ParamsId) -> anyhow::Result<ProvingKey> {
        match self.0 .0.lock().unwrap().get(&id.stem) {
            Some(pk) => Ok(pk.clone()),
            None => anyhow::bail!("{}.params is not in the parameter directory", id.stem),
        }
    }
}

/// An engine whose parameters are missing until the test adds them.
fn engine_without_keys(config: EngineConfig) -> (Engine, Arc<LateKeys>) {
    let late = Arc::new(LateKeys::default());
    let backend = Arc::new(zkforge_groth16::CpuBackend::new());
    let e = Engine::start(config, backend, Box::new(Shared(late.clone()))).unwrap();
    (e, late)
}

fn add_keys(late: &LateKeys) {
    let (id, pk) = keys();
    late.0.lock().unwrap().insert(id.stem, pk);
}

/// A request as the wire makes it: a client id and the payload's digest.
fn request(j: SyntheticJob, id: &str, payload: u8, priority: Option<Priority>) -> JobRequest {
    JobRequest {
        request_id: Some(id.into()),
        payload_digest: Some([payload; 32]),
        priority,
        ..JobRequest::new(Arc::new(j))
    }
}

#[test]
fn a_failed_job_is_started_again_by_the_same_request() {
    let (e, late) = engine_without_keys(config(1));
    let first = e
        .submit(request(job(2, 0), "porep-1000-7", 1, None))
        .unwrap();
    let msg = failed(&e, first, Duration::from_secs(30)).message;
    assert!(msg.contains("not in the parameter directory"), "{msg}");
    // The key arrives; Curio's retry carries the same id and payload.
    add_keys(&late);
    let retry = e
        .submit(request(job(2, 0), "porep-1000-7", 1, None))
        .unwrap();
    assert_ne!(retry, first, "a new job, not the failed one's answer");
    assert_eq!(completed(&e, retry).len(), 2 * 192);
    // Once it completed, the same request is that job (its proof), not a third proof.
    let again = e
        .submit(request(job(2, 0), "porep-1000-7", 1, None))
        .unwrap();
    assert_eq!(again, retry);
    let s = e.status();
    assert_eq!((s.completed, s.failed), (1, 1));
}

#[test]
fn a_cancelled_job_is_started_again_by_the_same_request() {
    let (e, _) = super::engine(config(1), 0);
    let first = e
        .submit(request(job(3, 300), "snap-1000-9", 1, None))
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    e.cancel(first).unwrap();
    let retry = e
        .submit(request(job(3, 0), "snap-1000-9", 1, None))
        .unwrap();
    assert_ne!(retry, first);
    assert_eq!(completed(&e, retry).len(), 3 * 192);
}

#[test]
fn another_payload_replaces_an_ended_job_and_is_refused_beside_a_running_one() {
    let (e, _) = super::engine(config(1), 0);
    let a = e
        .submit(request(job(2, 300), "porep-1000-8", 1, None))
        .unwrap();
    // A new C1 for the same sector while the old one is still proving: refused, by name.
    let err = e
        .submit(request(job(2, 0), "porep-1000-8", 2, None))
        .unwrap_err();
    assert!(
        matches!(err, SubmitError::RequestIdReused { job, .. } if job == a),
        "{err:?}"
    );
    assert!(err.to_string().contains("still running"), "{err}");
    completed(&e, a);
    // Once it has ended, the new payload is a new job, and the id is now its.
    let b = e
        .submit(request(job(2, 0), "porep-1000-8", 2, None))
        .unwrap();
    assert_ne!(a, b);
    completed(&e, b);
    assert_eq!(
        e.submit(request(job(2, 0), "porep-1000-8", 2, None))
            .unwrap(),
        b
    );
}

#[test]
fn request_ids_are_scoped_by_proof_kind() {
    let (e, _) = super::engine(config(1), 0);
    let porep = e
        .submit(request(job(1, 200), "porep-1000-5", 1, None))
        .unwrap();
    // Another kind under the same (predictable) id: its own job, the PoRep untouched.
    let squat = SyntheticJob::new(circuit(1), 1, ProofKind::WinningPost);
    let winning = e.submit(request(squat, "porep-1000-5", 9, None)).unwrap();
    assert_ne!(porep, winning);
    assert_eq!(
        e.submit(request(job(1, 0), "porep-1000-5", 1, None))
            .unwrap(),
        porep,
        "the PoRep's retry is still the PoRep"
    );
    completed(&e, porep);
}

#[test]
fn each_priority_class_has_room_of_its_own() {
    let cfg = EngineConfig {
        max_queued_jobs: 2,
        max_urgent_jobs: 2,
        ..config(1)
    };
    let (e, _) = super::engine(cfg, 0);
    let slow = || job(1, 2_000);
    let mut n = 0;
    let mut submit = |p: Priority| {
        n += 1;
        e.submit(request(slow(), &format!("r{n}"), n as u8, Some(p)))
    };
    let normal: Vec<_> = (0..2).map(|_| submit(Priority::Normal).unwrap()).collect();
    let full = submit(Priority::Normal).unwrap_err();
    assert!(full.is_busy() && full.to_string().contains("engine.max_queued_jobs"));
    // Past a full queue of bulk work: two High jobs, then High is full too...
    submit(Priority::High).unwrap();
    submit(Priority::High).unwrap();
    let high = submit(Priority::High).unwrap_err();
    assert!(
        high.to_string().contains("high-priority") && high.to_string().contains("max_urgent"),
        "{high}"
    );
    // ...and a Critical proof is counted with Critical ones only.
    submit(Priority::Critical).unwrap();
    assert!(e
        .check_room(ProofKind::PoRep, Priority::Normal, None, 0)
        .is_err());
    assert!(e
        .check_room(ProofKind::WinningPost, Priority::Critical, None, 0)
        .is_ok());
    // A retry of a known job needs no room: it resolves to that job.
    assert!(e
        .check_room(ProofKind::PoRep, Priority::Normal, Some("r1"), 0)
        .is_ok());
    for id in normal {
        e.cancel(id).unwrap();
    }
}

#[test]
fn a_resubmission_that_starts_an_ended_job_again_needs_room_before_parsing() {
    let cfg = EngineConfig {
        max_queued_jobs: 2,
        ..config(1)
    };
    let (e, late) = engine_without_keys(cfg);
    // "failed": its key is missing. "done": completed once the key is there.
    let failed_job = e.submit(request(job(1, 0), "failed", 1, None)).unwrap();
    let msg = failed(&e, failed_job, Duration::from_secs(30)).message;
    assert!(msg.contains("not in the parameter directory"), "{msg}");
    add_keys(&late);
    let done = e.submit(request(job(1, 0), "done", 2, None)).unwrap();
    completed(&e, done);
    // Two slow jobs fill the queue; the second of them is cancelled and a third takes its
    // place, so the queue is full with a CANCELLED id beside the FAILED one.
    let slow = |id: &str, payload: u8| e.submit(request(job(1, 3_000), id, payload, None));
    let running = slow("running", 3).unwrap();
    let cancelled = slow("cancelled", 4).unwrap();
    e.cancel(cancelled).unwrap();
    let third = slow("third", 5).unwrap();
    let room = |id: &str| e.check_room(ProofKind::PoRep, Priority::Normal, Some(id), 0);
    assert!(room("new").unwrap_err().is_busy(), "the queue is full");
    // Retries that resolve to a job without new work need no room: an unfinished one (the
    // same job) and a COMPLETED one (its proof).
    assert_eq!(room("running"), Ok(()));
    assert_eq!(room("done"), Ok(()));
    // A FAILED or CANCELLED job's retry starts it again: refused before it is parsed, as
    // its submission is after.
    for id in ["failed", "cancelled"] {
        let err = room(id).unwrap_err();
        assert!(
            err.is_busy() && err.to_string().contains("engine.max_queued_jobs"),
            "{id}: {err}"
        );
    }
    let err = e.submit(request(job(1, 0), "failed", 1, None)).unwrap_err();
    assert!(err.is_busy(), "{err}");
    // Once there is room, the FAILED job's retry is checked as a new job and admitted.
    e.cancel(third).unwrap();
    assert_eq!(room("failed"), Ok(()));
    let retry = e.submit(request(job(1, 0), "failed", 1, None)).unwrap();
    assert_ne!(retry, failed_job);
    e.cancel(running).unwrap();
    completed(&e, retry);
}
