//! The engine's public face: submit, await, cancel, status, preload and evict.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind};
use zkforge_groth16::ProverBackend;

use crate::admission::{self, SubmitError};
use crate::budget::{MemoryBudget, Reclaimable};
use crate::config::EngineConfig;
use crate::job::{Job, JobId, JobOutcome, JobResult, JobWatch, Priority};
use crate::params_source::ParamsSource;
use crate::queue::{UnitKey, UnitQueue};
use crate::srs_store::{LoadedSrs, SrsStore};
use crate::stats::{LatencySeries, Measure, Stage, Stats};
use crate::timeline::{StageEvent, Timeline, TimelineEvent};
use crate::workers::{self, ProveUnit, SynthUnit};

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

/// Queued and running units (partitions) and jobs of one proof kind.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct KindCounts {
    pub pending: usize,
    pub in_progress: usize,
    /// Unfinished jobs none of whose partitions has started synthesis yet.
    pub jobs_queued: usize,
    /// Unfinished jobs with a partition started.
    pub jobs_running: usize,
}

/// One unfinished partition.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PartitionStatus {
    pub job: JobId,
    pub kind: String,
    pub partition: usize,
    pub stage: Stage,
    /// Milliseconds spent in the current stage so far.
    pub in_stage_ms: f64,
}

/// What a worker is doing.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WorkerStatus {
    pub name: String,
    pub job: Option<JobId>,
    pub partition: Option<usize>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct EngineStatus {
    pub partitions: Vec<PartitionStatus>,
    pub workers: Vec<WorkerStatus>,
    /// (kind, outcome, jobs).
    pub outcomes: Vec<(String, String, u64)>,
    /// Latency histograms by proof kind and what they time.
    pub latency: Vec<LatencySeries>,
    /// Seconds each prover device was busy, in the order of `devices` (one entry, the CPU,
    /// for a backend without devices).
    pub device_busy_secs: Vec<f64>,
    pub uptime_secs: f64,
    pub queues: Vec<(ProofKind, KindCounts)>,
    pub loaded_srs: Vec<LoadedSrs>,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub memory_budget_bytes: u64,
    pub memory_used_bytes: u64,
    /// Highest budget use so far.
    pub memory_peak_bytes: u64,
    /// This process's resident memory now and at its peak (VmRSS, VmHWM): what the budget
    /// is meant to bound.
    pub process_rss_bytes: u64,
    pub process_peak_rss_bytes: u64,
    pub backend: String,
    pub devices: Vec<DeviceStatus>,
    /// Page-locked host memory held for witness staging, and the most kept idle.
    pub pinned_memory_bytes: u64,
    pub pinned_memory_limit_bytes: u64,
}

/// A prover device and the unit its first worker is on.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DeviceStatus {
    pub ordinal: u32,
    pub name: String,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
    /// The backend's device-memory budget and what partitions and keys hold of it.
    pub vram_budget_bytes: u64,
    pub vram_reserved_bytes: u64,
    /// Where proving keys live on this device.
    pub params_residency: String,
    pub current_job: Option<JobId>,
    pub current_kind: Option<ProofKind>,
}

/// State the workers share.
pub(crate) struct Shared {
    pub config: EngineConfig,
    pub backend: Arc<dyn ProverBackend>,
    pub budget: Arc<MemoryBudget>,
    pub srs: SrsStore,
    pub timeline: Timeline,
    pub synth_queue: UnitQueue<SynthUnit>,
    pub prove_queue: UnitQueue<ProveUnit>,
    /// One lock per device for backends that do not lock their kernel region themselves.
    pub device_locks: Vec<Mutex<()>>,
    pub synth_pool: rayon::ThreadPool,
    pub counters: [AtomicU64; 3],
    pub jobs: Mutex<Jobs>,
    pub stats: Mutex<Stats>,
}

#[derive(Default)]
pub(crate) struct Jobs {
    pub by_id: HashMap<JobId, Arc<Job>>,
    pub by_request: HashMap<String, JobId>,
    pub next_id: JobId,
}

const COMPLETED: usize = 0;
const FAILED: usize = 1;
const CANCELLED: usize = 2;

impl Shared {
    pub fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_worker(&self, name: &str, unit: Option<(JobId, usize)>) {
        self.stats().workers.insert(name.to_string(), unit);
    }

    pub fn all_jobs(&self) -> Vec<Arc<Job>> {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.by_id.values().cloned().collect()
    }

    pub fn record(&self, e: TimelineEvent) {
        self.timeline.record(e);
    }

    /// Ends a job and counts it; drops its queued units.
    pub fn end_job(&self, job: &Job, outcome: JobOutcome) {
        let (counter, event, label) = match &outcome {
            JobOutcome::Completed(_) => (COMPLETED, StageEvent::JobDone, "completed"),
            JobOutcome::Failed(_) => (FAILED, StageEvent::JobFailed, "failed"),
            JobOutcome::Cancelled => (CANCELLED, StageEvent::JobCancelled, "cancelled"),
        };
        let failure = match &outcome {
            JobOutcome::Failed(msg) => Some(msg.clone()),
            _ => None,
        };
        let ended = job.finish(outcome, |total_ms| {
            if let Some(msg) = &failure {
                tracing::warn!(job = job.id, "job failed: {msg}");
            }
            self.counters[counter].fetch_add(1, Ordering::Relaxed);
            let mut st = self.stats();
            *st.outcomes
                .entry((job.kind().to_string(), label))
                .or_default() += 1;
            st.observe(job.kind(), Measure::Job(label), total_ms / 1e3);
            drop(st);
            self.record(TimelineEvent::new(event, job.id).duration(total_ms));
        });
        if ended {
            // Release the memory of synthesized partitions nobody will prove.
            drop(self.prove_queue.take_where(|u| u.job.id == job.id));
            drop(self.synth_queue.take_where(|u| u.job.id == job.id));
        }
    }
}

/// A running engine; dropping it stops the workers after their current unit.
pub struct Engine {
    shared: Arc<Shared>,
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
        let shared = Arc::new(Shared {
            device_locks: (0..devices).map(|_| Mutex::new(())).collect(),
            backend,
            srs,
            budget,
            timeline: Timeline::new(),
            synth_queue: UnitQueue::new(usize::MAX),
            prove_queue: UnitQueue::new(config.prove_queue_depth),
            synth_pool,
            counters: Default::default(),
            jobs: Mutex::default(),
            stats: Mutex::default(),
            config,
        });
        let mut threads = Vec::new();
        for w in 0..shared.config.synthesis_workers {
            let s = shared.clone();
            threads.push(spawn(format!("synth-{w}"), move || {
                workers::synthesis_loop(&s, w)
            })?);
        }
        for d in 0..devices {
            for w in 0..shared.config.prover_workers_per_device {
                let s = shared.clone();
                threads.push(spawn(format!("prover-{d}-{w}"), move || {
                    workers::prover_loop(&s, d, w)
                })?);
            }
        }
        Ok(Self { shared, threads })
    }

    /// Queues a request; a known `request_id` with the same payload returns its existing job.
    /// Refusals are [`SubmitError`]s.
    pub fn submit(&self, req: JobRequest) -> Result<JobId, SubmitError> {
        let s = &self.shared;
        if req.circuits.partitions() == 0 {
            return Err(SubmitError::NoPartitions);
        }
        let mut jobs = s.jobs.lock().unwrap_or_else(|e| e.into_inner());
        self.prune(&mut jobs);
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
        s.record(TimelineEvent::new(StageEvent::JobSubmit, id));
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

    /// Forgets finished jobs past the result TTL or beyond `result_max`, oldest first.
    fn prune(&self, jobs: &mut Jobs) {
        let cfg = &self.shared.config;
        let ttl = Duration::from_secs(cfg.result_ttl_secs);
        let mut finished: Vec<(Instant, JobId)> = jobs
            .by_id
            .values()
            .filter_map(|j| j.lock().finished_at.map(|t| (t, j.id)))
            .collect();
        finished.sort();
        let excess = finished.len().saturating_sub(cfg.result_max);
        let drop_ids: Vec<JobId> = finished
            .iter()
            .enumerate()
            .filter(|(i, (t, _))| *i < excess || t.elapsed() > ttl)
            .map(|(_, (_, id))| *id)
            .collect();
        for id in drop_ids {
            jobs.by_id.remove(&id);
        }
        jobs.by_request.retain(|_, id| jobs.by_id.contains_key(id));
    }

    fn job(&self, id: JobId) -> Option<Arc<Job>> {
        self.shared
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .get(&id)
            .cloned()
    }

    /// How many unfinished jobs will be served before job `id` (0: next or running); `None`
    /// for an unknown id.
    pub fn queue_position(&self, id: JobId) -> Option<usize> {
        let jobs = self.shared.jobs.lock().unwrap_or_else(|e| e.into_inner());
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
        self.shared.end_job(&job, JobOutcome::Cancelled);
        Ok(was_running)
    }

    /// Cancels every unfinished job (a shutdown past its deadline); returns how many.
    pub fn cancel_all(&self) -> usize {
        let s = &self.shared;
        let open: Vec<Arc<Job>> = s.all_jobs().into_iter().filter(|j| !j.stopped()).collect();
        for j in &open {
            s.end_job(j, JobOutcome::Cancelled);
        }
        open.len()
    }

    /// Loads a parameter set ahead of its jobs. Returns (already loaded, milliseconds taken).
    pub fn preload(&self, id: &ParamsId) -> Result<(bool, f64)> {
        let t = Instant::now();
        // Rank 0, below every job's: a preload takes memory no waiting partition wants.
        let (_, loaded_now) = self.shared.srs.get(id, None, 0)?;
        Ok((!loaded_now, t.elapsed().as_secs_f64() * 1e3))
    }

    /// Drops a parameter set; returns the bytes it held, if it was loaded.
    pub fn evict(&self, id: &ParamsId) -> Option<u64> {
        self.shared.srs.evict(id)
    }

    pub fn status(&self) -> EngineStatus {
        let s = &self.shared;
        let kinds = [
            ProofKind::PoRep,
            ProofKind::SnapDeals,
            ProofKind::WindowPost,
            ProofKind::WinningPost,
        ];
        let jobs = s.all_jobs();
        let (pinned_memory_bytes, pinned_memory_limit_bytes) = s.backend.pinned_memory();
        let (rss, peak_rss) = crate::config::process_memory();
        let queues = kinds
            .iter()
            .map(|&k| {
                let pending = s.synth_queue.count_where(|u| u.job.kind() == k);
                let unfinished = || jobs.iter().filter(|j| j.kind() == k && !j.stopped());
                let in_progress = unfinished().map(|j| j.lock().running).sum::<usize>()
                    + s.prove_queue.count_where(|u| u.job.kind() == k);
                let jobs_queued = unfinished()
                    .filter(|j| j.lock().first_synth.is_none())
                    .count();
                (
                    k,
                    KindCounts {
                        pending,
                        in_progress,
                        jobs_queued,
                        jobs_running: unfinished().count() - jobs_queued,
                    },
                )
            })
            .collect();
        let mut partitions = Vec::new();
        for j in jobs.iter().filter(|j| !j.stopped()) {
            let p = j.lock();
            for (k, stage) in p
                .stages
                .iter()
                .enumerate()
                .filter(|(_, st)| **st != Stage::Done)
            {
                partitions.push(PartitionStatus {
                    job: j.id,
                    kind: j.kind().to_string(),
                    partition: k,
                    stage: *stage,
                    in_stage_ms: p.stage_since[k].elapsed().as_secs_f64() * 1e3,
                });
            }
        }
        partitions.sort_by_key(|p| (p.job, p.partition));
        let st = s.stats();
        let workers = st
            .workers
            .iter()
            .map(|(name, unit)| WorkerStatus {
                name: name.clone(),
                job: unit.map(|u| u.0),
                partition: unit.map(|u| u.1),
            })
            .collect();
        let outcomes = st
            .outcomes
            .iter()
            .map(|((k, o), n)| (k.clone(), o.to_string(), *n))
            .collect();
        let latency = st.latency_series();
        let device_busy_secs = st.device_busy(s.device_locks.len());
        drop(st);
        EngineStatus {
            partitions,
            workers,
            outcomes,
            latency,
            device_busy_secs,
            uptime_secs: s.timeline.uptime().as_secs_f64(),
            queues,
            loaded_srs: s.srs.list(),
            completed: s.counters[COMPLETED].load(Ordering::Relaxed),
            failed: s.counters[FAILED].load(Ordering::Relaxed),
            cancelled: s.counters[CANCELLED].load(Ordering::Relaxed),
            memory_budget_bytes: s.budget.total(),
            memory_used_bytes: s.budget.used(),
            memory_peak_bytes: s.budget.peaks().0,
            process_rss_bytes: rss,
            process_peak_rss_bytes: peak_rss,
            backend: s.backend.name().to_string(),
            devices: self.devices(&jobs),
            pinned_memory_bytes,
            pinned_memory_limit_bytes,
        }
    }

    fn devices(&self, jobs: &[Arc<Job>]) -> Vec<DeviceStatus> {
        let st = self.shared.stats();
        self.shared
            .backend
            .devices()
            .into_iter()
            .enumerate()
            .map(|(index, d)| {
                let prefix = format!("prover-{index}-");
                let current = st.workers.iter().find_map(|(name, unit)| {
                    unit.filter(|_| name.starts_with(&prefix)).map(|u| u.0)
                });
                let kind = current
                    .and_then(|id| jobs.iter().find(|j| j.id == id))
                    .map(|j| j.kind());
                DeviceStatus {
                    ordinal: d.ordinal,
                    name: d.name,
                    memory_total_bytes: d.memory_total_bytes,
                    memory_free_bytes: d.memory_free_bytes,
                    vram_budget_bytes: d.budget_bytes,
                    vram_reserved_bytes: d.reserved_bytes,
                    params_residency: d.residency,
                    current_job: current,
                    current_kind: kind,
                }
            })
            .collect()
    }

    /// Every TIMELINE event so far (the most recent 200,000).
    pub fn timeline(&self) -> Vec<TimelineEvent> {
        self.shared.timeline.snapshot()
    }

    pub fn budget(&self) -> &Arc<MemoryBudget> {
        &self.shared.budget
    }

    /// Stops taking work, lets running units finish, fails what was still queued.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let s = &self.shared;
        s.synth_queue.close();
        s.prove_queue.close();
        let jobs = s.all_jobs();
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

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .with_context(|| format!("spawning {name}"))
}
