//! The two worker loops: synthesis (CPU) and proving (per device, lock around the device work).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use zkforge_groth16::exec::pool::with_pool;
use zkforge_groth16::{
    exec::reaper, prover, verify::verify, Dispatch, EvaluationSite, Proof, ProveReport, Scalar,
    Witness,
};

use crate::failure::{Failure, FailureKind};
use crate::job::{ms, Job, JobOutcome, Priority};
use crate::pipeline::{Pipeline, ProveUnit, SynthUnit};
use crate::queue::UnitKey;
use crate::srs_store::Resident;
use crate::stats::{Measure, Stage, WorkerId};
use crate::timeline::{StageEvent, TimelineEvent};

/// How often a worker waiting for memory checks whether its job was cancelled.
const POLL: Duration = Duration::from_millis(20);

/// Whether `worker` takes a partition of `priority`: an urgent lane only urgent ones.
fn takes(worker: WorkerId, priority: Priority) -> bool {
    !worker.urgent || priority.is_urgent()
}

pub(crate) fn synthesis_loop(s: &Pipeline, worker: WorkerId) {
    while let Some(unit) = s.synth_queue.pop_if(|p| takes(worker, p)) {
        if !unit.job.stopped() {
            synthesize_unit(s, worker, unit);
        }
    }
}

fn synthesize_unit(s: &Pipeline, worker: WorkerId, unit: SynthUnit) {
    let SynthUnit { job, partition: k } = unit;
    let Some(circuits) = job.circuits() else {
        return; // the job ended meanwhile
    };
    let Some(key) = parameters(s, &job) else {
        return;
    };
    let bytes = key.plan.host_bytes();
    // The job's own key stays resident while the job runs: a witness that does not fit beside
    // it would wait for memory forever.
    let room = s.budget.total().saturating_sub(key.bytes());
    if bytes > room {
        let msg = format!(
            "a partition of {} needs about {bytes} bytes, more than the memory budget ({} bytes) \
             leaves beside its proving key ({} bytes)",
            job.params_id.circuit_id(),
            s.budget.total(),
            key.bytes()
        );
        s.end_job(&job, failed(FailureKind::NoRoom, msg));
        return;
    }
    // While it waits for memory, a more urgent unit arriving takes its turn: this one goes
    // back to the queue (preemption at a partition boundary, before any work is done).
    let priority = job.priority;
    let outranked = || s.synth_queue.top_priority().is_some_and(|p| p > priority);
    // Freed memory goes to the most urgent waiting unit first. A more urgent waiter (a
    // partition, or a job loading parameters that need this key's room) sends the unit back
    // too, letting go of the key so that an eviction can make that room.
    let urgency = priority.urgency();
    // A place in flight first (as many partitions as keep the provers busy), then the memory.
    let admitted = s
        .depth
        .enter(job.kind(), priority, POLL, || job.stopped() || outranked())
        .and_then(|in_flight| {
            let waiter = s.budget.waiter(urgency);
            let reservation =
                waiter.reserve_or_yield(bytes, POLL, || job.stopped() || outranked())?;
            Some((in_flight, reservation))
        });
    let Some((in_flight, reservation)) = admitted else {
        if !job.stopped() {
            let again = SynthUnit { job, partition: k };
            let key = UnitKey::new(again.job.priority, again.job.id, k);
            // Refused only when the engine is shutting down, which fails the job by name.
            drop(s.synth_queue.push(key, again));
        }
        drop(key);
        // Taking the next unit while outranked would only hold a key again.
        s.budget.wait_while_outranked(urgency, POLL, outranked);
        return;
    };

    let start = Instant::now();
    let first_partition = {
        let mut p = job.lock();
        p.running += 1;
        p.set_stage(k, Stage::Synthesizing);
        let first = p.first_synth.is_none();
        if first {
            p.first_synth = Some(start);
            p.timings.queue_wait_ms = ms(start - job.submitted);
        }
        first
    };
    if first_partition {
        let waited = (start - job.submitted).as_secs_f64();
        s.telemetry
            .stats()
            .observe(job.kind(), Measure::QueueWait, waited);
    }
    s.telemetry.set_worker(worker, Some((job.id, k)));
    s.telemetry.record(
        TimelineEvent::new(StageEvent::SynthStart, job.id)
            .partition(k)
            .worker(worker),
    );
    // Witness buffers come from the backend's pool (page-locked for a GPU), reused; a new one
    // is made at the size this key's partitions need, so it never grows (and is pinned once).
    let buffers = s.backend.scalar_pool();
    if let Some(pool) = &buffers {
        // Only synthesis without a recording (the reference builder) sizes new buffers by
        // this; assignments take buffers of their exact capacities.
        let largest = key.plan.pooled_buffers().iter().map(|b| b.1).max();
        pool.expect(largest.unwrap_or(0));
    }
    let synthesizing = s.depth.synthesis_starts();
    let result = catch_unwind(AssertUnwindSafe(|| {
        s.synth_pool
            .install(|| with_pool(buffers, || synthesize(circuits.as_ref(), k, &key)))
    }));
    let took = start.elapsed();
    {
        let mut p = job.lock();
        p.running -= 1;
        p.timings.synthesis_sum_ms += ms(took);
        let end = Instant::now();
        p.last_synth_end = Some(end);
        p.timings.synthesis_wall_ms = ms(end - p.first_synth.unwrap_or(start));
        p.set_stage(k, Stage::AwaitingProver);
    }
    s.telemetry.set_worker(worker, None);
    s.telemetry
        .stats()
        .observe(job.kind(), Measure::Synthesis, took.as_secs_f64());
    if !priority.is_urgent() {
        synthesizing.measured(job.kind());
    }
    drop(synthesizing);
    s.telemetry.record(
        TimelineEvent::new(StageEvent::SynthEnd, job.id)
            .partition(k)
            .worker(worker)
            .duration(ms(took)),
    );

    let witness = match result {
        Ok(Ok(w)) => w,
        Ok(Err(e)) => {
            let f = Failure::of(&e, FailureKind::Internal).context(format_args!("partition {k}"));
            return s.end_job(&job, JobOutcome::Failed(f));
        }
        Err(panic) => {
            let msg = format!(
                "partition {k}: synthesis panicked: {}",
                panic_message(&panic)
            );
            return s.end_job(&job, failed(FailureKind::Internal, msg));
        }
    };
    if job.stopped() {
        reaper::drop_later(witness);
        return;
    }
    s.telemetry.record(
        TimelineEvent::new(StageEvent::ProveQueue, job.id)
            .partition(k)
            .worker(worker),
    );
    let key_order = UnitKey::new(job.priority, job.id, k);
    let unit = ProveUnit {
        job,
        partition: k,
        witness,
        key,
        _memory: reservation,
        _in_flight: in_flight,
    };
    // A full queue holds synthesis back: that is the pipeline's back-pressure.
    drop(s.prove_queue.push(key_order, unit));
}

/// Partition k's witness: synthesized in full when the circuit has no recorded matrices, else
/// assigned, with a, b, c computed here only when the key's plan puts them on the host.
fn synthesize(
    circuits: &dyn zkforge_circuits::PartitionedCircuit,
    k: usize,
    key: &Resident,
) -> anyhow::Result<Witness> {
    let Some(m) = &key.matrices else {
        return circuits.synthesize(k);
    };
    let mut w = circuits.assign(k, m.clone())?;
    if key.plan.site == EvaluationSite::Host {
        w.evaluate()?;
    }
    Ok(w)
}

/// The job's proving key, loading it on first use (the load's time goes to the job).
fn parameters(s: &Pipeline, job: &Job) -> Option<Arc<Resident>> {
    let id = &job.params_id;
    let t = Instant::now();
    let circuits = job.circuits();
    let loaded = s.srs.get(id, circuits.as_deref(), job.priority.urgency());
    match loaded {
        Ok((key, loaded_now)) => {
            if loaded_now {
                ready_for_partitions(s, &key);
                let took = ms(t.elapsed());
                job.lock().timings.srs_load_ms += took;
                s.telemetry
                    .stats()
                    .observe(job.kind(), Measure::ParamsLoad, took / 1e3);
                s.telemetry
                    .record(TimelineEvent::new(StageEvent::SrsLoadEnd, job.id).duration(took));
            }
            Some(key)
        }
        Err(e) => {
            // What no load recognises is the parameters' own trouble (a missing file).
            let f = Failure::of(&e, FailureKind::NotProvisioned)
                .context(format_args!("parameters {}", id.circuit_id()));
            s.end_job(job, JobOutcome::Failed(f));
            None
        }
    }
}

/// Readies a key that just loaded for its partitions: the backend stages it on its devices on
/// a thread of its own (the partitions synthesize meanwhile, and the first prover finds it
/// there or waits for the upload under way); with `pin_buffers_at_load`, the witness buffers
/// of every partition that can be in flight are pinned now, before any is proved.
pub(crate) fn ready_for_partitions(s: &Pipeline, key: &Arc<Resident>) {
    stage_in_background(s, key.clone());
    let Some(pool) = s.backend.scalar_pool() else {
        return;
    };
    if !s.config.pin_buffers_at_load {
        return;
    }
    let shapes = key.plan.pooled_buffers();
    // The partitions admitted before any is measured; buffers for more are pinned as the
    // measured depth admits them.
    let in_flight = s.depth.initial();
    let per_partition: usize = shapes.iter().map(|(n, cap)| n * cap).sum();
    let per_partition = (per_partition * std::mem::size_of::<Scalar>()) as u64;
    let fits = (s.budget.total().saturating_sub(s.budget.used()) / per_partition.max(1)) as usize;
    let partitions = in_flight.min(fits);
    let t = Instant::now();
    let mut buffers = 0;
    for (per, capacity) in shapes {
        pool.prewarm(per * partitions, capacity);
        buffers += per * partitions;
    }
    tracing::info!(
        buffers,
        ms = ms(t.elapsed()),
        "witness buffers pooled and pinned"
    );
}

fn stage_in_background(s: &Pipeline, key: Arc<Resident>) {
    let backend = s.backend.clone();
    let spawned = std::thread::Builder::new()
        .name("stage-key".into())
        .spawn(move || {
            let t = Instant::now();
            // A failure here is not the job's: its first partition uploads again and fails
            // with the same error, named, if the device really cannot hold the key.
            match backend.stage(key.key.as_ref(), key.matrices.as_ref()) {
                Ok(()) => tracing::info!(ms = ms(t.elapsed()), "proving key staged on the devices"),
                Err(e) => tracing::warn!(
                    "staging the proving key failed ({e:#}); the first partition loads it"
                ),
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("no thread to stage the proving key ({e}); the first partition loads it");
    }
}

pub(crate) fn prover_loop(s: &Pipeline, device: usize, worker: WorkerId) {
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    while let Some(unit) = s.prove_queue.pop_if(|p| takes(worker, p)) {
        if !unit.job.stopped() {
            prove_unit(s, worker, device, unit, &mut rng);
        }
    }
}

fn prove_unit(
    s: &Pipeline,
    worker: WorkerId,
    device: usize,
    mut unit: ProveUnit,
    rng: &mut rand_chacha::ChaCha20Rng,
) {
    let (job, k) = (unit.job.clone(), unit.partition);
    let witness = std::mem::take(&mut unit.witness);
    {
        let mut p = job.lock();
        p.running += 1;
        p.set_stage(k, Stage::Proving);
    }
    s.telemetry.set_worker(worker, Some((job.id, k)));

    // Backends with a kernel lock run their preparation and copies concurrently; for the others
    // the whole call is the device-exclusive region.
    let waited = Instant::now();
    let guard =
        (!s.backend.locks_devices()).then(|| s.device_locks[device].lock(job.priority.urgency()));
    let engine_wait = ms(waited.elapsed());
    s.telemetry.record(
        TimelineEvent::new(StageEvent::ProveStart, job.id)
            .partition(k)
            .worker(worker)
            .device(device)
            .lock_wait(engine_wait),
    );
    let start = Instant::now();
    let rnd = job.randomness.for_partition(k, rng);
    let mut report = ProveReport::default();
    let result = catch_unwind(AssertUnwindSafe(|| {
        prover::prove_on(
            s.backend.as_ref(),
            Dispatch {
                device,
                urgency: job.priority.urgency(),
            },
            unit.key.key.as_ref(),
            witness,
            rnd,
            &mut report,
        )
    }));
    drop(guard);
    let took = ms(start.elapsed());
    for phase in &report.phases {
        s.telemetry.timeline.record_at(
            start + Duration::from_secs_f64(phase.start_ms / 1e3),
            TimelineEvent::new(StageEvent::GpuPhase, job.id)
                .partition(k)
                .worker(worker)
                .device(device)
                .phase(phase.name)
                .duration(phase.duration_ms),
        );
    }
    s.telemetry.record(
        TimelineEvent::new(StageEvent::ProveEnd, job.id)
            .partition(k)
            .worker(worker)
            .device(device)
            .duration(took)
            .lock_wait(engine_wait + report.lock_wait_ms),
    );
    // The device was busy for the locked region (the whole call without a kernel lock).
    let busy = if s.backend.locks_devices() {
        report.locked_ms
    } else {
        took
    };
    {
        let mut p = job.lock();
        p.running -= 1;
        p.timings.prove_ms += took;
        p.timings.device_ms += report.phases.iter().map(|ph| ph.duration_ms).sum::<f64>();
        p.set_stage(k, Stage::Done);
    }
    s.telemetry.set_worker(worker, None);
    {
        let mut st = s.telemetry.stats();
        st.observe(job.kind(), Measure::Prove, took / 1e3);
        for phase in &report.phases {
            let measure = Measure::GpuPhase(phase.name);
            st.observe(job.kind(), measure, phase.duration_ms / 1e3);
        }
        st.add_device_busy(device, busy / 1e3);
    }
    if !job.priority.is_urgent() {
        s.depth.proved(job.kind(), took / 1e3, busy / 1e3);
    }

    let proof = match result {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            let msg = format!("partition {k}: {e}");
            return s.end_job(&job, failed(e.kind(), msg));
        }
        Err(panic) => {
            let msg = format!("partition {k}: prover panicked: {}", panic_message(&panic));
            return s.end_job(&job, failed(FailureKind::Internal, msg));
        }
    };
    // Every proof is checked before it can be returned; outside the device lock.
    let checked = match (s.config.verify_proofs, job.circuits()) {
        (true, Some(circuits)) => circuits
            .public_inputs(k)
            .and_then(|x| Ok(verify(unit.key.key.as_ref().vk(), &proof, &x)?)),
        (true, None) => return, // the job ended meanwhile (failed elsewhere, cancelled)
        (false, _) => Ok(true),
    };
    drop(unit);
    match checked {
        Ok(true) => record_proof(s, &job, k, proof),
        Ok(false) => s.end_job(
            &job,
            failed(
                FailureKind::Internal,
                format!("partition {k}: the proof failed its self-check"),
            ),
        ),
        Err(e) => {
            let f = Failure::of(&e, FailureKind::Internal)
                .context(format_args!("partition {k}: self-check"));
            s.end_job(&job, JobOutcome::Failed(f))
        }
    }
}

fn record_proof(s: &Pipeline, job: &Job, k: usize, proof: Proof) {
    let mut p = job.lock();
    if p.outcome.is_some() {
        return;
    }
    p.proofs[k] = Some(proof);
    p.remaining -= 1;
    if p.remaining > 0 {
        return;
    }
    let bytes: Vec<u8> = p
        .proofs
        .iter()
        .flatten()
        .flat_map(|pr| pr.to_bytes())
        .collect();
    drop(p);
    s.end_job(job, JobOutcome::Completed(bytes));
}

fn failed(kind: FailureKind, message: String) -> JobOutcome {
    JobOutcome::Failed(Failure::new(kind, message))
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
