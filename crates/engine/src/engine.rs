//! The engine's public face: submit, await, cancel, status, preload and evict.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind};
use zkforge_groth16::prover::placement::KeyPlacement;
use zkforge_groth16::{PriorityLock, ProverBackend, Urgency};

use crate::failure::{Failure, FailureKind};

use crate::admission::{self, Admission, Candidate, SubmitError};
use crate::budget::{MemoryBudget, Reclaimable};
use crate::config::{EngineConfig, MemInfo};
use crate::depth::{Depth, Shape};
use crate::job::{Job, JobId, JobOutcome, JobResult, JobWatch, Priority};
use crate::jobs::JobTable;
use crate::memory_watch;
use crate::params_source::ParamsSource;
use crate::pipeline::{Pipeline, SynthUnit};
use crate::queue::{UnitKey, UnitQueue};
use crate::randomness::Randomness;
use crate::srs_store::SrsStore;
use crate::stats::WorkerId;
use crate::status::{self, EngineStatus};
use crate::telemetry::Telemetry;
use crate::timeline::{StageEvent, TimelineEvent};
use crate::workers;

/// One proving request.
pub struct JobRequest {
    /// Client's id: submitting the same id (and payload) again returns the same job.
    pub request_id: Option<String>,
    pub circuits: Arc<dyn PartitionedCircuit>,
    /// `None`: the default for the proof kind.
    pub priority: Option<Priority>,
    /// The request's size as received (0 for in-process callers), held against
    /// `max_queued_request_bytes` while the job is unfinished.
    pub input_bytes: u64,
    /// Digest of the payload, so that a `request_id` reused for another request is refused.
    pub payload_digest: Option<[u8; 32]>,
    /// Where the partitions' r and s come from: entropy for every client's request.
    pub randomness: Randomness,
}

impl JobRequest {
    /// An in-process request: no client id, the kind's default priority.
    pub fn new(circuits: Arc<dyn PartitionedCircuit>) -> Self {
        Self {
            request_id: None,
            circuits,
            priority: None,
            input_bytes: 0,
            payload_digest: None,
            randomness: Randomness::Entropy,
        }
    }

    /// This request with r and s drawn from `seed` (see [`Randomness::Seeded`]).
    pub fn seeded(self, seed: u64) -> Self {
        Self {
            randomness: Randomness::Seeded(seed),
            ..self
        }
    }
}

/// A running engine; dropping it stops the workers after their current unit.
pub struct Engine {
    pipeline: Arc<Pipeline>,
    jobs: JobTable,
    /// The workers, until a stop joins or leaves them.
    threads: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl Engine {
    /// Starts the workers. Logs every setting.
    pub fn start(
        mut config: EngineConfig,
        backend: Arc<dyn ProverBackend>,
        params: Box<dyn ParamsSource>,
    ) -> Result<Self> {
        let budget_bytes = config.validate()?;
        let floor = config.floor_bytes(budget_bytes)?;
        let margin = config.margin_bytes(MemInfo::now()?.total)?;
        config.synthesis_workers = config.synthesis_worker_count(backend.evaluates_constraints());
        for line in config.describe() {
            tracing::info!("engine config: {line}");
        }
        tracing::info!(backend = backend.name(), budget_bytes, "engine starting");
        let devices = backend.devices().len().max(1);
        let depth = Depth::new(
            Shape {
                devices,
                provers_per_device: config.prover_workers_per_device,
                slack: config.prove_queue_depth,
                synthesis_workers: config.synthesis_workers,
            },
            (config.pipeline_depth > 0).then_some(config.pipeline_depth),
        );
        let (_, first) = depth.report();
        tracing::info!(
            "pipeline depth: {} partitions in flight at first ({}); then as measured: \
             ceil(synthesis / device cycle) + provers + queued, per proof kind; urgent \
             partitions beside them",
            first.depth,
            first.why
        );
        tracing::info!(
            "host memory: budget {budget_bytes} bytes at most, following what the host leaves \
             (MemAvailable, a memory cgroup, memory pressure) less a margin of {margin} bytes; \
             urgent work keeps a floor of {floor} bytes"
        );
        // Idle pooled witness buffers are memory too: the budget counts them and shrinks the
        // pool when a reservation needs the room.
        let pool = backend
            .scalar_pool()
            .map(|p| Arc::new(PoolMemory(p)) as Arc<dyn Reclaimable>);
        let budget = MemoryBudget::with_reclaimable(budget_bytes, floor, pool);
        let nice = config.synthesis_nice;
        let synth_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.synthesis_threads)
            .thread_name(|i| format!("synth-pool-{i}"))
            .start_handler(move |_| lower_priority(nice))
            .build()
            .context("building the synthesis thread pool")?;
        let srs = SrsStore::new(params, budget.clone(), backend.clone());
        let pipeline = Arc::new(Pipeline {
            device_locks: (0..devices).map(|_| PriorityLock::new()).collect(),
            backend,
            srs,
            budget,
            depth,
            synth_queue: UnitQueue::new(usize::MAX),
            prove_queue: UnitQueue::new(config.prove_queue_depth),
            synth_pool,
            telemetry: Telemetry::new(),
            config,
        });
        let mut threads = Vec::new();
        let config = &pipeline.config;
        let lanes = |ordinary: usize, of: &dyn Fn(usize) -> WorkerId| {
            let urgent = config.urgent_lanes.then(|| of(0).urgent());
            (0..ordinary).map(of).chain(urgent).collect::<Vec<_>>()
        };
        for worker in lanes(config.synthesis_workers, &WorkerId::synthesis) {
            let p = pipeline.clone();
            threads.push(spawn(worker, move || workers::synthesis_loop(&p, worker))?);
        }
        for d in 0..devices {
            for worker in lanes(config.prover_workers_per_device, &|w| {
                WorkerId::prover(d, w)
            }) {
                let p = pipeline.clone();
                threads.push(spawn(worker, move || workers::prover_loop(&p, d, worker))?);
            }
        }
        let p = pipeline.clone();
        threads.push(
            std::thread::Builder::new()
                .name("memory-watch".into())
                .spawn(move || memory_watch::watch_loop(&p, margin))
                .context("spawning the memory watch")?,
        );
        Ok(Self {
            pipeline,
            jobs: JobTable::default(),
            threads: std::sync::Mutex::new(threads),
        })
    }

    /// Queues a request. A known `request_id` (of the same proof kind) resolves as
    /// `admission` says: the same payload is the same job while it runs or once it completed;
    /// a job that failed or was cancelled is started again, as is an ended one resubmitted
    /// with another payload. Refusals are [`SubmitError`]s.
    pub fn submit(&self, req: JobRequest) -> Result<JobId, SubmitError> {
        let s = &self.pipeline;
        if req.circuits.partitions() == 0 {
            return Err(SubmitError::NoPartitions);
        }
        let kind = req.circuits.kind();
        let priority = req.priority.unwrap_or_else(|| Priority::default_for(kind));
        let mut jobs = self.jobs.lock();
        jobs.prune(&s.config);
        let candidate = Candidate {
            kind,
            priority,
            request_id: req.request_id.as_deref(),
            digest: req.payload_digest,
            bytes: req.input_bytes,
        };
        let replaces = match admission::admit(&jobs, &s.config, &candidate)? {
            Admission::Existing(id) => return Ok(id),
            Admission::New { replaces } => replaces,
        };
        // A retry that resolves to its job needs no memory; a new job does.
        self.check_host_memory(priority)?;
        jobs.next_id += 1;
        let id = jobs.next_id;
        let partitions = req.circuits.partitions();
        let job = Arc::new(Job::new(
            id,
            priority,
            req.circuits,
            req.input_bytes,
            req.payload_digest,
            req.randomness,
        ));
        jobs.by_id.insert(id, job.clone());
        if let Some(r) = req.request_id {
            if let Some(old) = replaces {
                tracing::info!(
                    request_id = %r,
                    ended_job = old,
                    job = id,
                    "request_id submitted again after its job ended: a new job"
                );
            }
            jobs.by_request.insert((kind, r), id);
        }
        drop(jobs);
        s.telemetry
            .record(TimelineEvent::new(StageEvent::JobSubmit, id));
        for k in 0..partitions {
            let unit = SynthUnit {
                job: job.clone(),
                partition: k,
            };
            if s.synth_queue
                .push(UnitKey::new(priority, id, k), unit)
                .is_err()
            {
                s.end_job(
                    &job,
                    JobOutcome::Failed(Failure::new(
                        FailureKind::Unavailable,
                        "the engine is shutting down",
                    )),
                );
            }
        }
        Ok(id)
    }

    /// Whether a job of `kind` and `priority` with `request_bytes` of request would find room
    /// now, before the caller spends seconds parsing it. `Ok` also when `request_id` names
    /// that kind's unfinished or COMPLETED job: a retry resolves to it without new work,
    /// whatever the load. An id whose job ended FAILED or CANCELLED is checked as a new job,
    /// since its resubmission starts the job again. [`Engine::submit`] decides again (a
    /// COMPLETED job's id resubmitted with another payload is a new job, checked then).
    pub fn check_room(
        &self,
        kind: ProofKind,
        priority: Priority,
        request_id: Option<&str>,
        request_bytes: u64,
    ) -> Result<(), SubmitError> {
        let jobs = self.jobs.lock();
        let known = request_id.and_then(|r| jobs.by_request(kind, r));
        if known.is_some_and(|job| admission::resolves_without_work(job)) {
            return Ok(());
        }
        self.check_host_memory(priority)?;
        admission::check_room(&jobs, &self.pipeline.config, priority, request_bytes)
    }

    /// Bulk work is refused while the host leaves less than `engine.memory_floor`.
    fn check_host_memory(&self, priority: Priority) -> Result<(), SubmitError> {
        let b = &self.pipeline.budget;
        if !priority.is_urgent() && b.below_floor() {
            return Err(SubmitError::HostMemoryBelowFloor {
                limit: b.limit(),
                floor: b.floor(),
            });
        }
        Ok(())
    }

    /// The jobs a client's `request_id` names, at most one per proof kind (ids are scoped by
    /// kind), with their kinds: how a cuzk client, whose job id is its request_id, finds its
    /// job.
    pub fn jobs_named(&self, request_id: &str) -> Vec<(ProofKind, JobId)> {
        let jobs = self.jobs.lock();
        ProofKind::ALL
            .iter()
            .filter_map(|&k| jobs.by_request(k, request_id).map(|j| (k, j.id)))
            .collect()
    }

    fn job(&self, id: JobId) -> Option<Arc<Job>> {
        self.jobs.get(id)
    }

    /// How many unfinished jobs will be served before job `id` (0: next or running); `None`
    /// for an unknown id.
    pub fn queue_position(&self, id: JobId) -> Option<usize> {
        let jobs = self.jobs.lock();
        let job = jobs.by_id.get(&id)?;
        Some(admission::queue_position(&jobs, job))
    }

    /// The job's completion as a future that holds no thread (for async servers); `Err` for
    /// an unknown id.
    pub fn watch(&self, id: JobId) -> Result<JobWatch> {
        let job = self
            .job(id)
            .with_context(|| format!("unknown job id {id}"))?;
        Ok(JobWatch::new(job))
    }

    /// Waits for a job's result on this thread. `Err` for an unknown id; `Ok(None)` when the
    /// timeout passed.
    pub fn wait(&self, id: JobId, timeout: Option<Duration>) -> Result<Option<JobResult>> {
        let job = self
            .job(id)
            .with_context(|| format!("unknown job id {id}"))?;
        Ok(job.wait(timeout))
    }

    /// Cancels a job: queued units are removed, running ones dropped at their next stage
    /// boundary, memory released. Returns whether any of its units was running.
    pub fn cancel(&self, id: JobId) -> Result<bool> {
        let job = self
            .job(id)
            .with_context(|| format!("unknown job id {id}"))?;
        let was_running = job.lock().running > 0;
        self.pipeline.end_job(&job, JobOutcome::Cancelled);
        Ok(was_running)
    }

    /// Fails every unfinished job with `reason` (a shutdown past its deadline): its waiters
    /// are answered at once, its units dropped at their next stage boundary. Returns how many.
    pub fn fail_unfinished(&self, reason: &str) -> usize {
        let open: Vec<Arc<Job>> = self
            .jobs
            .all()
            .into_iter()
            .filter(|j| !j.stopped())
            .collect();
        for j in &open {
            self.pipeline.end_job(
                j,
                JobOutcome::Failed(Failure::new(FailureKind::Unavailable, reason)),
            );
        }
        open.len()
    }

    /// Loads a parameter set ahead of its jobs. Returns (already loaded, milliseconds taken);
    /// a refusal is of the kind a job's would be (no room, missing parameters).
    pub fn preload(&self, id: &ParamsId) -> Result<(bool, f64), Failure> {
        let t = Instant::now();
        // Below every job's urgency: a preload takes memory no waiting partition wants.
        let (key, loaded_now) = self
            .pipeline
            .srs
            .get(id, None, Urgency::Background)
            .map_err(|e| Failure::of(&e, FailureKind::NotProvisioned))?;
        if loaded_now {
            crate::workers::ready_for_partitions(&self.pipeline, &key);
        }
        Ok((!loaded_now, t.elapsed().as_secs_f64() * 1e3))
    }

    /// Where the backend would put the set `id`'s key and partitions, before anything is
    /// read but its lengths (see [`ProverBackend::place`]), the host budget applied as a load
    /// applies it.
    pub fn placement(&self, id: &ParamsId) -> Result<KeyPlacement> {
        self.pipeline.srs.placement(id)
    }

    /// [`placement`](Self::placement), refused where a job's first load would refuse the set
    /// for want of host memory (key, matrices and a partition over the budget).
    pub fn placement_for_a_job(&self, id: &ParamsId) -> Result<KeyPlacement> {
        self.pipeline.srs.placement_for_a_job(id)
    }

    /// Drops a parameter set; returns the bytes it held, if it was loaded.
    pub fn evict(&self, id: &ParamsId) -> Option<u64> {
        self.pipeline.srs.evict(id)
    }

    pub fn status(&self) -> EngineStatus {
        status::status(&self.pipeline, &self.jobs)
    }

    /// Every TIMELINE event so far (the most recent 200,000).
    pub fn timeline(&self) -> Vec<TimelineEvent> {
        self.pipeline.telemetry.timeline.snapshot()
    }

    pub fn budget(&self) -> &Arc<MemoryBudget> {
        &self.pipeline.budget
    }

    /// Stops taking work, lets running units finish, fails what was still queued.
    pub fn shutdown(self) {
        self.stop_within(None);
    }

    /// Stops taking work, waits for the workers to finish their units at most `grace`
    /// (`None`: however long that takes), then fails every unfinished job. A worker still busy
    /// after `grace` — a CPU partition takes tens of seconds — is left to the process's exit:
    /// a daemon told to stop must not outlive its deadline for work nobody will collect.
    /// Returns how many were left running.
    pub fn stop_within(&self, grace: Option<Duration>) -> usize {
        let s = &self.pipeline;
        s.synth_queue.close();
        s.prove_queue.close();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let deadline = grace.map(|g| Instant::now() + g);
        let mut left = 0;
        for t in threads {
            while deadline.is_some_and(|d| Instant::now() < d) && !t.is_finished() {
                std::thread::sleep(Duration::from_millis(10));
            }
            if deadline.is_none() || t.is_finished() {
                let _ = t.join();
            } else {
                left += 1;
            }
        }
        for job in self.jobs.all() {
            s.end_job(
                &job,
                JobOutcome::Failed(Failure::new(
                    FailureKind::Unavailable,
                    "the engine shut down before the job finished",
                )),
            );
        }
        if left > 0 {
            tracing::warn!(left, "engine stopped with workers still running a unit");
        }
        left
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_within(None);
    }
}

/// A witness buffer pool as memory the budget counts.
struct PoolMemory(Arc<zkforge_groth16::ScalarPool>);

impl Reclaimable for PoolMemory {
    fn held(&self) -> u64 {
        self.0.idle_bytes() as u64
    }

    fn shrink_to(&self, target: u64) {
        self.0.shrink_to(target as usize);
    }
}

/// Lowers this thread's scheduling priority (on Linux `setpriority` applies to the calling
/// thread only); failure is harmless, so it is only logged.
fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: plain syscall on the calling thread.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if r != 0 {
        tracing::debug!(
            "setpriority({nice}) failed: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn spawn(worker: WorkerId, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    let name = worker.to_string();
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .with_context(|| format!("spawning {name}"))
}
