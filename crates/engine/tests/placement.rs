//! Where the engine puts a key: the backend's placement (a model device here, proving on the
//! CPU) and the host budget decide its form (decoded, or left in its file), what is page-locked,
//! and what the daemon prints at start; a key the devices can never hold is refused before it is
//! read.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{job, keys, refused, submit};
use zkforge_engine::{Engine, EngineConfig, FailureKind, JobOutcome};
use zkforge_groth16::prover::placement::{
    Choices, Item, KeyPlacement, PlacementInputs, QueryPoints, ResidentTimes, WorkingSet,
};
use zkforge_groth16::{CpuBackend, LoadedKey, ProverBackend, ProvingKey, QueryLengths};

/// Proves one 2^10 job on `e`, which must complete.
fn prove_one(e: &Engine) {
    let done = e.wait(submit(e, job(10, 1)), Some(Duration::from_secs(60)));
    let outcome = done.unwrap().unwrap().outcome;
    assert!(matches!(outcome, JobOutcome::Completed(_)), "{outcome:?}");
}

/// A backend with one device of `vram` bytes, placing keys by the placement model (what it
/// streams, `pinner` page-locks): proofs run on the CPU.
struct ModelDevice {
    cpu: CpuBackend,
    vram: u64,
    pinner: Option<Arc<RecordingPinner>>,
    /// Host bytes of staging to stream the key from its file, where the device can.
    file_streaming: Option<u64>,
}

impl ModelDevice {
    fn new(vram: u64) -> Self {
        Self {
            cpu: CpuBackend::new(),
            vram,
            pinner: None,
            file_streaming: None,
        }
    }

    /// A GPU of a few KiB: too small for any key.
    fn small() -> Self {
        Self::new(1 << 10)
    }
}

impl ProverBackend for ModelDevice {
    fn name(&self) -> &'static str {
        "model-device"
    }
    fn host_pinner(&self) -> Option<Arc<dyn zkforge_groth16::HostPinner>> {
        self.pinner
            .clone()
            .map(|p| p as Arc<dyn zkforge_groth16::HostPinner>)
    }
    /// The model's plan; the key stays in its file wherever the plan keeps it resident, with
    /// a MiB of staging beside it.
    fn place(
        &self,
        lengths: &QueryLengths,
        matrices: Option<&zkforge_groth16::MatricesShape>,
    ) -> zkforge_groth16::Result<KeyPlacement> {
        let queries = QueryPoints::aux_side(lengths, 0, 0);
        let inputs = PlacementInputs {
            vram_budget: self.vram,
            witness_bytes_per_s: 1e10,
            stream_bytes_per_s: 1e10,
            queries,
            matrices_bytes: matrices.map_or(0, |m| m.host_bytes()),
            witness_bytes: 0,
            working_sets: vec![WorkingSet {
                name: "a partition",
                peak_bytes: 1 << 20,
                extra_h2d_bytes: 0,
                streams_items: true,
            }],
            kernels: ResidentTimes::scaled(&queries, lengths.h as u64 + 1),
            stream_chunk_bytes: 0,
            stream_buffer_bytes: 0,
            partitions_per_proof: 1,
            choices: Choices::any(),
        };
        let plan = inputs.plan().map_err(|e| zkforge_groth16::Error::Backend {
            backend: "model-device",
            kind: zkforge_groth16::FailureKind::NoRoom,
            message: e.to_string(),
        })?;
        let streams = |i| plan.streamed.contains(&i);
        Ok(KeyPlacement {
            key_in_file: plan.keeps_key_resident(),
            host_overhead_bytes: if plan.keeps_key_resident() {
                1 << 20
            } else {
                0
            },
            pin_key: Item::QUERIES.into_iter().any(streams),
            pin_matrices: streams(Item::Matrices),
            file_streaming_bytes: self.file_streaming,
            devices: vec![plan],
        })
    }
    fn query_sums_on(
        &self,
        on: zkforge_groth16::Dispatch,
        key: zkforge_groth16::KeyRef<'_>,
        w: zkforge_groth16::Witness,
        report: &mut zkforge_groth16::ProveReport,
    ) -> zkforge_groth16::Result<zkforge_groth16::QuerySums> {
        match key {
            // A device streaming from the file reads every point from it at each partition:
            // the model decodes it for the CPU's sums.
            zkforge_groth16::KeyRef::File(f) => {
                let pk = f.decode(Default::default())?;
                self.cpu.query_sums_on(on, (&pk).into(), w, report)
            }
            key => self.cpu.query_sums_on(on, key, w, report),
        }
    }
}

#[test]
fn the_backends_placement_decides_the_keys_form_and_status_shows_each_plan() {
    let (id, pk) = keys(10);
    let forms = Arc::new(Mutex::new(Vec::new()));
    let source = FormSource {
        forms: forms.clone(),
        ..FormSource::of(&id, &pk)
    };
    let backend = Arc::new(ModelDevice::new(1 << 40));
    let expected = backend.place(&pk.lengths(), None).unwrap();
    assert!(expected.key_in_file, "a TiB of VRAM keeps the key resident");
    let e = Engine::start(EngineConfig::default(), backend, Box::new(source)).unwrap();
    prove_one(&e);
    assert_eq!(
        *forms.lock().unwrap(),
        vec![true],
        "loaded in its file, once"
    );
    let status = e.status();
    let set = &status.loaded_srs[0];
    // One device, its plan as the model made it once the matrices were read.
    assert_eq!(set.placement.len(), 1, "{:?}", set.placement);
    assert!(
        set.placement[0].starts_with("resident h, l, a, b_g1, b_g2, matrices; streamed nothing"),
        "{:?}",
        set.placement
    );
    // The source handed over the decoded key all the same: its bytes and the staging count,
    // beside the matrices.
    assert!(
        set.bytes > pk.heap_bytes() as u64 + (1 << 20),
        "{}",
        set.bytes
    );
}

#[test]
fn the_start_up_placement_is_the_one_the_first_load_takes() {
    let (id, pk) = keys(10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.r1cs");
    let m = zkforge_circuits::cached_matrices(&job(10, 1), Some(&path))
        .unwrap()
        .unwrap();
    let shape = m.shape();
    // One byte short of the plan with everything resident, matrices included: the plan
    // changes with the matrices' bytes, so a start-up answer without them would differ.
    let roomy = ModelDevice::new(1 << 40).place(&pk.lengths(), Some(&shape));
    let vram = roomy.unwrap().devices[0].vram_bytes - 1;
    let backend = Arc::new(ModelDevice::new(vram));
    let shown = |p: KeyPlacement| p.devices[0].to_string();
    let without = shown(backend.place(&pk.lengths(), None).unwrap());
    let with = shown(backend.place(&pk.lengths(), Some(&shape)).unwrap());
    assert_ne!(without, with, "the recording must matter to this plan");

    let source = FormSource {
        matrices: Some(path),
        ..FormSource::of(&id, &pk)
    };
    let e = Engine::start(EngineConfig::default(), backend, Box::new(source)).unwrap();
    let at_start = shown(e.placement(&id).unwrap());
    assert_eq!(
        at_start, with,
        "the start-up answer plans with the recording's header"
    );
    prove_one(&e);
    assert_eq!(e.status().loaded_srs[0].placement, vec![at_start]);
}

#[test]
fn a_streamed_key_whose_decoded_form_does_not_fit_is_read_from_its_file() {
    let (id, pk) = keys(10);
    // Room for the matrices (twice the estimate), two partitions and half the decoded key.
    let estimate = (pk.h.len() as u64 + 1) * 60;
    let partition = common::partition_bytes(&pk);
    let decoded = pk.lengths().decoded_bytes() as u64;
    let budget = 2 * estimate + 2 * partition + decoded / 2;
    assert!(
        decoded + estimate + partition > budget,
        "the decoded key must not fit"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.params");
    pk.write_file(&path).unwrap();
    let run = |file_streaming: Option<u64>| {
        let forms = Arc::new(Mutex::new(Vec::new()));
        let source = FormSource {
            file: Some(path.clone()),
            forms: forms.clone(),
            ..FormSource::of(&id, &pk)
        };
        // A device with room for a partition only: every query streams.
        let backend = Arc::new(ModelDevice {
            file_streaming,
            ..ModelDevice::new(1 << 20)
        });
        let config = EngineConfig {
            memory_budget: budget.to_string(),
            ..Default::default()
        };
        let e = Engine::start(config, backend, Box::new(source)).unwrap();
        // What the daemon prints at start, before any load.
        let shown = e.placement(&id).unwrap();
        let done = e.wait(submit(&e, job(10, 1)), Some(Duration::from_secs(60)));
        let outcome = done.unwrap().unwrap().outcome;
        let forms = forms.lock().unwrap().clone();
        (outcome, forms, e.status(), shown)
    };
    // A backend that can read the streamed queries from the file is handed the key there,
    // and the start-up placement already says so.
    let (outcome, forms, status, shown) = run(Some(4096));
    assert!(matches!(outcome, JobOutcome::Completed(_)), "{outcome:?}");
    assert_eq!(forms, vec![true], "loaded in its file");
    assert!(
        shown.key_in_file,
        "the start-up placement keeps the key in host memory: {shown:?}"
    );
    assert!(
        status.memory_peak_bytes <= budget,
        "{} > {budget}",
        status.memory_peak_bytes
    );
    // One that cannot is refused at once, with the numbers, before the key is read.
    let (outcome, forms, _, _) = run(None);
    match outcome {
        JobOutcome::Failed(f) => {
            assert!(f.message.contains("engine.memory_budget"), "{f}");
            assert_eq!(f.kind, FailureKind::NoRoom, "{f}");
        }
        other => panic!("the job should fail: {other:?}"),
    }
    assert!(
        forms.is_empty(),
        "refused before the key was read: {forms:?}"
    );
}

/// A source of one key that records the form each load was asked for, and hands over the key
/// in it where it has the key's `file` (without, always decoded); its circuit's recording is
/// cached at `matrices`, if anywhere.
struct FormSource {
    keys: common::MemorySource,
    file: Option<std::path::PathBuf>,
    matrices: Option<std::path::PathBuf>,
    forms: Arc<Mutex<Vec<bool>>>,
}

impl FormSource {
    /// `pk` as `id`, from memory, no recording.
    fn of(id: &zkforge_circuits::ParamsId, pk: &ProvingKey) -> Self {
        Self {
            keys: common::MemorySource([(id.stem.clone(), pk.clone())].into_iter().collect()),
            file: None,
            matrices: None,
            forms: Arc::default(),
        }
    }
}

impl zkforge_engine::ParamsSource for FormSource {
    fn lengths(&self, id: &zkforge_circuits::ParamsId) -> anyhow::Result<QueryLengths> {
        self.keys.lengths(id)
    }
    fn load(&self, id: &zkforge_circuits::ParamsId, in_file: bool) -> anyhow::Result<LoadedKey> {
        self.forms.lock().unwrap().push(in_file);
        match &self.file {
            Some(path) if in_file => Ok(LoadedKey::File(Box::new(
                zkforge_groth16::ParamsFile::open(path)?,
            ))),
            _ => self.keys.load(id, in_file),
        }
    }
    fn matrices_cache(&self, _: &zkforge_circuits::ParamsId) -> Option<std::path::PathBuf> {
        self.matrices.clone()
    }
}

#[test]
fn a_set_the_devices_cannot_hold_is_refused_before_its_key_is_read() {
    let (f, took, loads) = refused(1 << 30, Arc::new(ModelDevice::small()));
    let msg = &f.message;
    assert!(
        msg.contains("model-device") && msg.contains("budget is 0.00 GiB"),
        "{msg}"
    );
    assert_eq!(f.kind, FailureKind::NoRoom, "the backend's kind is kept");
    assert_eq!(loads, 0, "refused before the key was read");
    assert!(took < Duration::from_secs(5), "at once: {took:?}");
}

/// Records what is page-locked: (address, bytes) while pinned.
#[derive(Default)]
struct RecordingPinner {
    pinned: Mutex<Vec<(usize, usize)>>,
    unpins: AtomicUsize,
}

impl zkforge_groth16::HostPinner for RecordingPinner {
    fn pin(&self, addr: usize, bytes: usize) -> bool {
        self.pinned.lock().unwrap().push((addr, bytes));
        true
    }
    fn unpin(&self, addr: usize) {
        self.unpins.fetch_add(1, Ordering::SeqCst);
        self.pinned.lock().unwrap().retain(|&(a, _)| a != addr);
    }
}

#[test]
fn a_streamed_set_is_page_locked_while_loaded_and_unlocked_before_it_is_freed() {
    let (id, pk) = keys(10);
    let pinner = Arc::new(RecordingPinner::default());
    // Room for a partition only: the key and the matrices stream.
    let backend = Arc::new(ModelDevice {
        pinner: Some(pinner.clone()),
        ..ModelDevice::new(1 << 20)
    });
    let source = common::MemorySource([(id.stem.clone(), pk.clone())].into_iter().collect());
    let e = Engine::start(EngineConfig::default(), backend, Box::new(source)).unwrap();
    prove_one(&e);
    // The key's five queries by their sizes, and the recorded matrices' seven vectors (row
    // starts and entries of A, B, C, and the coefficients).
    let mut sizes: Vec<usize> = pinner.pinned.lock().unwrap().iter().map(|p| p.1).collect();
    sizes.sort_unstable();
    let mut key_sizes: Vec<usize> = [
        std::mem::size_of_val(&pk.h[..]),
        std::mem::size_of_val(&pk.l[..]),
        std::mem::size_of_val(&pk.a[..]),
        std::mem::size_of_val(&pk.b_g1[..]),
        std::mem::size_of_val(&pk.b_g2[..]),
    ]
    .into_iter()
    .filter(|&b| b > 0)
    .collect();
    key_sizes.sort_unstable();
    assert_eq!(sizes.len(), key_sizes.len() + 7, "{sizes:?}");
    assert!(
        key_sizes.iter().all(|k| sizes.contains(k)),
        "{key_sizes:?} in {sizes:?}"
    );
    // Evicted: every region unpinned (before its memory was freed: the guard goes first).
    assert!(e.evict(&id).is_some());
    assert!(pinner.pinned.lock().unwrap().is_empty());
    assert_eq!(pinner.unpins.load(Ordering::SeqCst), sizes.len());
}
