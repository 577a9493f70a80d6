//! Priorities: a CRITICAL job overtakes queued work, starts at once on the urgent lanes while
//! every ordinary worker is busy, preempts partitions waiting for memory and loads its
//! parameters ahead of them (asserted on the TIMELINE's order of events).

use super::*;

#[test]
fn critical_job_overtakes_queued_normal_jobs() {
    // The queue's order alone: no lane kept for urgent jobs.
    let cfg = EngineConfig {
        urgent_lanes: false,
        ..config(1)
    };
    let (e, _) = engine(cfg, 0);
    let normal: Vec<u64> = (0..5).map(|_| submit(&e, job(1, 150), None)).collect();
    std::thread::sleep(Duration::from_millis(50));
    let mut winning = SyntheticJob::new(circuit(1), 1, ProofKind::WinningPost);
    winning.synthesis_delay = Duration::from_millis(150);
    let critical = submit(&e, winning, None);
    completed(&e, critical);
    for id in &normal {
        completed(&e, *id);
    }
    let submit_t = events(&e, StageEvent::JobSubmit)
        .iter()
        .find(|ev| ev.job == critical)
        .unwrap()
        .t_ms;
    let next = events(&e, StageEvent::SynthStart)
        .into_iter()
        .find(|ev| ev.t_ms > submit_t)
        .unwrap();
    assert_eq!(
        next.job, critical,
        "the next free synthesis slot goes to the CRITICAL job"
    );
}

#[test]
fn a_critical_job_starts_at_once_on_the_urgent_lanes_while_every_worker_is_busy() {
    // Issue 21's WinningPoSt under PoRep load: every ordinary synthesis worker in the middle
    // of a partition, both provers taken (one on the device, one waiting for it). Without the
    // urgent lanes the WinningPoSt waited for a synthesis to end, then for a prover to free
    // (a whole partition), then for the device (another).
    let cfg = EngineConfig {
        prover_workers_per_device: 2,
        ..config(2)
    };
    let (e, pk) = engine(cfg, 150);
    let sealing: Vec<u64> = (0..2).map(|_| submit(&e, job(6, 250), None)).collect();
    // Both provers busy and both synthesis workers inside a partition.
    let busy = || {
        let s = e.status();
        let working = |prover: bool| {
            s.workers
                .iter()
                .filter(|w| w.worker.device.is_some() == prover && !w.worker.urgent)
                .filter(|w| w.job.is_some())
                .count()
        };
        working(true) == 2 && working(false) == 2
    };
    let t = std::time::Instant::now();
    while !busy() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the PoRep load never filled the workers"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut winning = SyntheticJob::new(circuit(1), 1, ProofKind::WinningPost);
    winning.synthesis_delay = Duration::from_millis(10);
    let urgent = submit(&e, winning, None);
    let proof = completed(&e, urgent);
    let p = zkforge_groth16::Proof::from_bytes(&proof).unwrap();
    assert!(zkforge_groth16::verify::verify(&pk.vk, &p, &circuit(1).public_values()).unwrap());
    for id in &sealing {
        completed(&e, *id);
    }

    let of = |kind, job| {
        events(&e, kind)
            .into_iter()
            .find(|ev| ev.job == job)
            .unwrap()
    };
    let submitted = of(StageEvent::JobSubmit, urgent).t_ms;
    let synth = of(StageEvent::SynthStart, urgent);
    let queued = of(StageEvent::ProveQueue, urgent).t_ms;
    let proved = of(StageEvent::ProveStart, urgent);
    let between = |kind, from: f64, to: f64| {
        events(&e, kind)
            .iter()
            .filter(|ev| ev.job != urgent && ev.t_ms > from && ev.t_ms < to)
            .count()
    };
    assert_eq!(synth.worker.as_deref(), Some("synth-urgent"));
    assert_eq!(
        between(StageEvent::SynthEnd, submitted, synth.t_ms),
        0,
        "the WinningPoSt waited for a PoRep synthesis to end"
    );
    assert_eq!(proved.worker.as_deref(), Some("prover-0-urgent"));
    // The partition on the device when it arrived finishes; the one waiting for the device
    // before it does not go first.
    assert!(
        between(StageEvent::ProveEnd, queued, proved.t_ms) <= 1,
        "the WinningPoSt waited for more than the partition on the device"
    );
    assert_eq!(
        between(StageEvent::ProveStart, queued, proved.t_ms),
        0,
        "a PoRep partition took the device ahead of the WinningPoSt"
    );
}

#[test]
fn an_urgent_job_preempts_partitions_waiting_for_memory() {
    // Issue 17's deadline on small shapes. Room for two partitions beside the key and a slow
    // prover: the four synthesis workers spend their time holding PoRep partitions while
    // waiting for memory. A CRITICAL job arriving then must take the next two memory slots and
    // the prover's next turns, not queue behind the partitions already taken: the waiting
    // workers give their units back (two take the urgent ones), and the two left with PoRep
    // units defer to the urgent waiters for memory.
    let (_, pk) = keys();
    let partition = common::partition_bytes(&pk);
    let cfg = EngineConfig {
        prove_queue_depth: 1,
        memory_budget: (pk.heap_bytes() as u64 + 2 * partition + partition / 2).to_string(),
        ..config(4)
    };
    let (e, pk) = engine(cfg, 200);
    let sealing: Vec<u64> = (0..2).map(|_| submit(&e, job(6, 20), None)).collect();
    std::thread::sleep(Duration::from_millis(500));
    // Its parameters are the PoRep jobs' (a WindowPoSt's own are preloaded in production; here
    // a second set would first wait for the PoRep jobs' to be evicted).
    let urgent = submit(&e, job(2, 20), Some(Priority::Critical));
    let proof = completed(&e, urgent);
    let p = zkforge_groth16::Proof::from_bytes(&proof[192..]).unwrap();
    assert!(zkforge_groth16::verify::verify(&pk.vk, &p, &circuit(1).public_values()).unwrap());
    for id in &sealing {
        completed(&e, *id);
    }

    let order = UrgentOrder::of(&e, urgent, &sealing);
    // Without preemption both waiting PoRep partitions start first (2); one may slip in if
    // it had its memory the instant the urgent job arrived.
    assert!(
        order.overtaking <= 1,
        "{} PoRep partitions started between the CRITICAL job's submission and its last \
         partition's synthesis",
        order.overtaking
    );
    // On the prover: at most one PoRep partition between its arrival and its last partition
    // (the one already synthesized and queued when the urgent job's first partition still
    // waited for the memory that partition's end frees).
    assert!(
        order.proved_between <= 1,
        "{} PoRep partitions were proved while the CRITICAL job waited",
        order.proved_between
    );
    println!(
        "CRITICAL job (2 partitions, 200 ms proves) under a 12-partition PoRep load: done \
         {:.0} ms after submission, {} PoRep prove(s) in between",
        order.done_ms, order.proved_between
    );
}

#[test]
fn an_urgent_job_loads_its_parameters_ahead_of_partitions_waiting_for_memory() {
    // As above, but the CRITICAL job has its own parameters, not resident, and the budget has
    // no room for both sets: the PoRep set must be evicted first, which it can be only once no
    // partition holds it. The load waits ranked: workers holding PoRep units hand them (and
    // the key) back instead of taking memory, the PoRep partitions in flight drain, the set
    // is evicted and the urgent one loads.
    let urgent_circuit = circuit(2);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let urgent_pk = generate_random_keys(urgent_circuit.clone(), &mut rng, &()).unwrap();
    let (id, pk) = keys();
    let source = || {
        let keys = [
            (id.stem.clone(), pk.clone()),
            (urgent_circuit.stem(), urgent_pk.clone()),
        ];
        Box::new(MemorySource(keys.into_iter().collect()))
    };
    // Both sets have this size (same shape).
    let resident = resident_bytes();
    let partition = common::partition_bytes(&pk);
    let budget = resident + 2 * partition + partition / 2;
    assert!(2 * resident > budget, "the two sets must not fit together");
    let cfg = EngineConfig {
        prove_queue_depth: 1,
        memory_budget: budget.to_string(),
        ..config(4)
    };
    let slow = SlowBackend(CpuBackend::new(), Duration::from_millis(200));
    let e = Engine::start(cfg, Arc::new(slow), source()).unwrap();
    let sealing: Vec<u64> = (0..2).map(|_| submit(&e, job(6, 20), None)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut window = SyntheticJob::new(urgent_circuit.clone(), 2, ProofKind::WindowPost);
    window.synthesis_delay = Duration::from_millis(20);
    let urgent = submit(&e, window, Some(Priority::Critical));
    let proof = completed(&e, urgent);
    let p = zkforge_groth16::Proof::from_bytes(&proof[192..]).unwrap();
    let public = urgent_circuit.public_values();
    assert!(zkforge_groth16::verify::verify(&urgent_pk.vk, &p, &public).unwrap());
    for id in &sealing {
        completed(&e, *id);
    }

    let order = UrgentOrder::of(&e, urgent, &sealing);
    assert_eq!(
        order.overtaking, 0,
        "PoRep partitions started synthesis while the CRITICAL job's parameters waited"
    );
    // On the prover: the PoRep partitions in flight when it arrived (memory for two), no more.
    assert!(
        order.proved_between <= 2,
        "{} PoRep partitions were proved while the CRITICAL job waited",
        order.proved_between
    );
    let reloads = events(&e, StageEvent::SrsLoadEnd)
        .iter()
        .filter(|ev| sealing.contains(&ev.job))
        .count();
    assert_eq!(
        reloads, 2,
        "the PoRep set was evicted for the urgent one and loaded again"
    );
    println!(
        "CRITICAL job with its own parameters under a 12-partition PoRep load: done {:.0} ms \
         after submission, {} PoRep prove(s) in between",
        order.done_ms, order.proved_between
    );
}

/// What a CRITICAL job waited for, from the TIMELINE; it must have finished before every
/// sealing job.
struct UrgentOrder {
    /// Other partitions that started synthesis between its submission and its last
    /// partition's synthesis.
    overtaking: usize,
    /// Other partitions proved between its submission and its last prove.
    proved_between: usize,
    /// From its submission to its end.
    done_ms: f64,
}

impl UrgentOrder {
    fn of(e: &Engine, urgent: u64, sealing: &[u64]) -> Self {
        let at = |kind, job| {
            let ev = events(e, kind);
            ev.iter()
                .filter(|ev| ev.job == job)
                .map(|ev| ev.t_ms)
                .collect::<Vec<_>>()
        };
        let submitted = at(StageEvent::JobSubmit, urgent)[0];
        let others_between = |kind, until: f64| {
            events(e, kind)
                .iter()
                .filter(|ev| ev.job != urgent && ev.t_ms > submitted && ev.t_ms < until)
                .count()
        };
        let last_synth = *at(StageEvent::SynthStart, urgent).last().unwrap();
        let last_prove = *at(StageEvent::ProveStart, urgent).last().unwrap();
        let done = at(StageEvent::JobDone, urgent)[0];
        for &id in sealing {
            assert!(
                done < at(StageEvent::JobDone, id)[0],
                "the CRITICAL job finishes before the PoRep job {id}"
            );
        }
        Self {
            overtaking: others_between(StageEvent::SynthStart, last_synth),
            proved_between: others_between(StageEvent::ProveStart, last_prove),
            done_ms: done - submitted,
        }
    }
}
