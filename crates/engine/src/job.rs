//! Jobs: one request's partitions, their state, and what waiters get back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind};
use zkforge_groth16::{Proof, Urgency};

use crate::failure::Failure;

pub type JobId = u64;

/// A job's scheduling priority, least urgent first: a higher one runs first. A request that
/// names none gets its kind's ([`Priority::default_for`]). Everything below the engine's queues
/// schedules by the [`Urgency`] it maps to ([`Priority::urgency`], the one place).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    Low,
    Normal,
    High,
    Critical,
}

impl Priority {
    /// WinningPoSt is due within a block, WindowPoSt within its deadline; sealing can wait.
    pub fn default_for(kind: ProofKind) -> Self {
        match kind {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPost => Priority::High,
            ProofKind::PoRep | ProofKind::SnapDeals => Priority::Normal,
        }
    }

    /// Whether the job is due by a deadline: what every gate that keeps room bulk work cannot
    /// take asks (the line is [`Urgency::is_urgent`]'s).
    pub fn is_urgent(self) -> bool {
        self.urgency().is_urgent()
    }

    /// How urgent the budget, the kernel lock and VRAM placement take it to be: the one
    /// mapping, exhaustive, so a new priority is classified before it compiles.
    pub fn urgency(self) -> Urgency {
        match self {
            Priority::Low => Urgency::Low,
            Priority::Normal => Urgency::Normal,
            Priority::High => Urgency::High,
            Priority::Critical => Urgency::Critical,
        }
    }
}

/// Where a job's time went, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct JobTimings {
    /// Submit → first synthesis start.
    pub queue_wait_ms: f64,
    /// Parameter loading this job waited for.
    pub srs_load_ms: f64,
    /// First synthesis start → last synthesis end.
    pub synthesis_wall_ms: f64,
    /// Synthesis time summed over partitions.
    pub synthesis_sum_ms: f64,
    /// Proving time summed over partitions (lock held).
    pub prove_ms: f64,
    /// Device time summed over partitions: the phases the backend timed with device events
    /// (upload, constraint products, NTTs, MSMs). 0 on the CPU backend, which has none.
    pub device_ms: f64,
    pub total_ms: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum JobOutcome {
    /// The partitions' proofs, concatenated in order, each self-verified.
    Completed(Vec<u8>),
    /// Why it failed: what the client can do about it, and the cause named.
    Failed(Failure),
    Cancelled,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobResult {
    pub id: JobId,
    pub kind: ProofKind,
    pub outcome: JobOutcome,
    pub timings: JobTimings,
}

#[derive(Debug)]
pub(crate) struct Progress {
    pub proofs: Vec<Option<Proof>>,
    pub stages: Vec<crate::stats::Stage>,
    /// When each partition entered its current stage.
    pub stage_since: Vec<Instant>,
    pub remaining: usize,
    pub outcome: Option<JobOutcome>,
    pub first_synth: Option<Instant>,
    pub last_synth_end: Option<Instant>,
    pub timings: JobTimings,
    pub finished_at: Option<Instant>,
    /// Units synthesizing or proving right now.
    pub running: usize,
}

/// A job as the workers share it.
pub(crate) struct Job {
    pub id: JobId,
    pub priority: Priority,
    pub kind: ProofKind,
    pub params_id: ParamsId,
    /// The request's circuits while the job runs. Dropped when it ends: a finished job stays
    /// for AwaitProof (up to result_ttl_secs, result_max jobs) with its result, not its inputs
    /// (a 32 GiB C1 output is ~100 MB, outside the memory budget).
    circuits: Mutex<Option<Arc<dyn PartitionedCircuit>>>,
    pub submitted: Instant,
    /// Bytes of the request as the client sent it, counted against
    /// `max_queued_request_bytes` while the job is unfinished.
    pub input_bytes: u64,
    /// Digest of the request's payload: a `request_id` reused with another payload is refused.
    pub payload_digest: Option<[u8; 32]>,
    /// Where its partitions' r and s come from.
    pub randomness: crate::Randomness,
    pub stop: AtomicBool,
    pub progress: Mutex<Progress>,
    /// Blocking waiters ([`Job::wait`]).
    pub changed: Condvar,
    /// Async waiters: true once the outcome is set. A waiter holds a receiver, not a thread.
    done: tokio::sync::watch::Sender<bool>,
}

impl Progress {
    pub fn set_stage(&mut self, k: usize, stage: crate::stats::Stage) {
        self.stages[k] = stage;
        self.stage_since[k] = Instant::now();
    }
}

impl Job {
    pub fn new(
        id: JobId,
        priority: Priority,
        circuits: Arc<dyn PartitionedCircuit>,
        input_bytes: u64,
        payload_digest: Option<[u8; 32]>,
        randomness: crate::Randomness,
    ) -> Self {
        let n = circuits.partitions();
        Self {
            id,
            priority,
            kind: circuits.kind(),
            params_id: circuits.params_id().clone(),
            circuits: Mutex::new(Some(circuits)),
            submitted: Instant::now(),
            input_bytes,
            payload_digest,
            randomness,
            stop: AtomicBool::new(false),
            progress: Mutex::new(Progress {
                proofs: vec![None; n],
                stages: vec![crate::stats::Stage::Queued; n],
                stage_since: vec![Instant::now(); n],
                remaining: n,
                outcome: None,
                first_synth: None,
                last_synth_end: None,
                timings: JobTimings::default(),
                finished_at: None,
                running: 0,
            }),
            changed: Condvar::new(),
            done: tokio::sync::watch::Sender::new(false),
        }
    }

    pub fn kind(&self) -> ProofKind {
        self.kind
    }

    /// The circuits, until the job ends.
    pub fn circuits(&self) -> Option<Arc<dyn PartitionedCircuit>> {
        self.circuits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// True once the job failed, was cancelled or completed: its units are dropped.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the job with `outcome` unless it already ended, running `account` (given the
    /// outcome and the job's total milliseconds) before any waiter wakes; returns whether this
    /// call ended it.
    pub fn finish(&self, outcome: JobOutcome, account: impl FnOnce(&JobOutcome, f64)) -> bool {
        let mut p = self.lock();
        if p.outcome.is_some() {
            return false;
        }
        self.stop.store(true, Ordering::Release);
        p.timings.total_ms = ms(self.submitted.elapsed());
        p.finished_at = Some(Instant::now());
        account(&outcome, p.timings.total_ms);
        p.outcome = Some(outcome);
        drop(p);
        self.changed.notify_all();
        self.done.send_replace(true);
        // Units still running hold their own reference; the inputs go when the last one ends.
        let inputs = self
            .circuits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // Freeing a large request can take a while: not on a worker or an RPC thread.
        zkforge_groth16::exec::reaper::drop_later(inputs);
        true
    }

    pub fn result(&self) -> Option<JobResult> {
        let p = self.lock();
        p.outcome.clone().map(|outcome| JobResult {
            id: self.id,
            kind: self.kind(),
            outcome,
            timings: p.timings,
        })
    }

    /// Waits for the outcome; `None` when `timeout` passed first.
    pub fn wait(&self, timeout: Option<Duration>) -> Option<JobResult> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut p = self.lock();
        while p.outcome.is_none() {
            p = match deadline {
                None => self.changed.wait(p).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.checked_duration_since(Instant::now())?;
                    self.changed
                        .wait_timeout(p, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        drop(p);
        self.result()
    }
}

/// A job's completion, awaited without a thread: what an async server holds for each waiting
/// client. Dropping it (the client left) releases everything it held.
pub struct JobWatch {
    job: Arc<Job>,
    done: tokio::sync::watch::Receiver<bool>,
}

impl JobWatch {
    pub(crate) fn new(job: Arc<Job>) -> Self {
        let done = job.done.subscribe();
        Self { job, done }
    }

    pub fn id(&self) -> JobId {
        self.job.id
    }

    /// The job's priority (its kind's default where the request named none).
    pub fn priority(&self) -> Priority {
        self.job.priority
    }

    /// The result once the job ends. The sender lives in the job this watch holds, so the
    /// channel cannot close first; `None` would mean an ended job without an outcome.
    pub async fn finished(mut self) -> Option<JobResult> {
        let _ = self.done.wait_for(|done| *done).await;
        self.job.result()
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_map_to_urgencies_in_order_above_background() {
        let all = [
            Priority::Low,
            Priority::Normal,
            Priority::High,
            Priority::Critical,
        ];
        let urgencies: Vec<Urgency> = all.iter().map(|p| p.urgency()).collect();
        assert_eq!(urgencies, Urgency::ALL[1..]);
        assert!(urgencies.iter().all(|&u| u > Urgency::Background));
        assert_eq!(
            Priority::default_for(ProofKind::WinningPost).urgency(),
            Urgency::Critical
        );
    }
}
