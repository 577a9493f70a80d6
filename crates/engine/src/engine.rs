//! The engine's public face: submit, await, cancel, status, preload and evict.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zkforge_circuits::{ParamsId, PartitionedCircuit};
use zkforge_groth16::{PriorityLock, ProverBackend};

use crate::admission::{self, SubmitError};
use crate::budget::{MemoryBudget, Reclaimable};
use crate::config::EngineConfig;
use crate::job::{Job, JobId, JobOutcome, JobResult, JobWatch, Priority};
use crate::jobs::JobTable;
use crate::params_source::ParamsSource;
use crate::pipeline::{Pipeline, SynthUnit};
use crate::queue::{UnitKey, UnitQueue};
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
        }
    }
}

/// A running engine; dropping it stops the workers after their current unit.
pub struct Engine {
    pipeline: Arc<Pipeline>,
    jobs: JobTable,
    threads: Vec<JoinHandle<()>>,
}

impl Engine {
    /// Starts the workers. Logs every setting.
    pub fn start(
        mut config: EngineConfig,
        backend: Arc<dyn ProverBackend>,
        params: Box<dyn ParamsSource>,
    ) -> Result<Self> {
        let budget_bytes = config.validate()?;
        config.synthesis_workers = config.synthesis_worker_count(backend.evaluates_constraints());
        for line in config.describe() {
            tracing::info!("engine config: {line}");
        }
        tracing::info!(backend = backend.name(), budget_bytes, "engine starting");
        // Idle pooled witness buffers are memory too: the budget counts them and shrinks the
        // pool when a reservation needs the room.
        let pool = backend
            .scalar_pool()
            .map(|p| Arc::new(PoolMemory(p)) as Arc<dyn Reclaimable>);
        let budget = MemoryBudget::with_reclaimable(budget_bytes, pool);
        let nice = config.synthesis_nice;
        let synth_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.synthesis_threads)
            .thread_name(|i| format!("synth-pool-{i}"))
            .start_handler(move |_| lower_priority(nice))
            .build()
            .context("building the synthesis thread pool")?;
        let devices = backend.devices().len().max(1);
        let srs = SrsStore::new(params, budget.clone(), backend.clone());
        let pipeline = Arc::new(Pipeline {
            device_locks: (0..devices).map(|_| PriorityLock::new()).collect(),
            backend,
            srs,
            budget,
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
        Ok(Self {
            pipeline,
            jobs: JobTable::default(),
            threads,
        })
    }

    /// Queues a request; a known `request_id` with the same payload returns its existing job.
    /// Refusals are [`SubmitError`]s.
    pub fn submit(&self, req: JobRequest) -> Result<JobId, SubmitError> {
        let s = &self.pipeline;
        if req.circuits.partitions() == 0 {
            return Err(SubmitError::NoPartitions);
        }
        let mut jobs = self.jobs.lock();
        jobs.prune(&s.config);
        let known = admission::admit(
            &jobs,
            &s.config,
            req.request_id.as_deref(),
            req.payload_digest,
            req.input_bytes,
        )?;
        if let Some(id) = known {
            return Ok(id);
        }
        jobs.next_id += 1;
        let id = jobs.next_id;
        let priority = req
            .priority
            .unwrap_or_else(|| Priority::default_for(req.circuits.kind()));
        let partitions = req.circuits.partitions();
        let job = Arc::new(Job::new(
            id,
            priority,
            req.circuits,
            req.input_bytes,
            req.payload_digest,
        ));
        jobs.by_id.insert(id, job.clone());
        if let Some(r) = req.request_id {
            jobs.by_request.insert(r, id);
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
                    JobOutcome::Failed("the engine is shutting down".into()),
                );
            }
        }
        Ok(id)
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

    /// Cancels every unfinished job (a shutdown past its deadline); returns how many.
    pub fn cancel_all(&self) -> usize {
        let open: Vec<Arc<Job>> = self
            .jobs
            .all()
            .into_iter()
            .filter(|j| !j.stopped())
            .collect();
        for j in &open {
            self.pipeline.end_job(j, JobOutcome::Cancelled);
        }
        open.len()
    }

    /// Loads a parameter set ahead of its jobs. Returns (already loaded, milliseconds taken).
    pub fn preload(&self, id: &ParamsId) -> Result<(bool, f64)> {
        let t = Instant::now();
        // Rank 0, below every job's: a preload takes memory no waiting partition wants.
        let (key, loaded_now) = self.pipeline.srs.get(id, None, 0)?;
        if loaded_now {
            crate::workers::ready_for_partitions(&self.pipeline, &key);
        }
        Ok((!loaded_now, t.elapsed().as_secs_f64() * 1e3))
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
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let s = &self.pipeline;
        s.synth_queue.close();
        s.prove_queue.close();
        let jobs = self.jobs.all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        for job in jobs {
            s.end_job(
                &job,
                JobOutcome::Failed("the engine shut down before the job finished".into()),
            );
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
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
