//! `Gpu`: one device's share of the backend: worker stream handles, the kernel lock, the VRAM
//! budget, and the proving keys whose bases live there (LRU, or streamed when they do not fit).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use blstrs::{G1Affine, G2Affine};

use zkforge_groth16::prover::placement::{Item, NoPlacement, Placement};
use zkforge_groth16::r1cs::ConstraintMatrices;
use zkforge_groth16::srs::Query;
use zkforge_groth16::{KeyRef, PriorityLock, ProvingKey, QueryLengths, Urgency};

use crate::context::lock;
use crate::host::g1_affine_as_u64;
use crate::options::CudaOptions;
use crate::placement::{self, GpuFacts, KeyShape, Order, OrderBytes};
use crate::resident::{Acquired, Held, ResidentSet, Wait};
use crate::spmv::{matrices_bytes, DeviceMatrices, StreamedMatrices};
use crate::vram::{gib, VramBudget};
use crate::{CudaDevice, CudaError, DeviceBasesG1, DeviceBasesG2};

/// Which key a set of bases belongs to, and the input split they were cut at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyId {
    origin: u64,
    n_in: usize,
    b_in: usize,
}

impl KeyId {
    pub fn of(key: KeyRef<'_>, n_in: usize, b_in: usize) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        match key {
            // Addresses, lengths and the first and last H and L points: a key loaded later at
            // the same addresses must not reuse another key's bases.
            KeyRef::Memory(pk) => {
                for q in [&pk.h, &pk.l, &pk.a, &pk.b_g1] {
                    (q.as_ptr() as usize, q.len()).hash(&mut hasher);
                    for p in [q.first(), q.last()].into_iter().flatten() {
                        g1_affine_as_u64(std::slice::from_ref(p)).hash(&mut hasher);
                    }
                }
                pk.b_g2.len().hash(&mut hasher);
            }
            // The same file, unchanged since: the same key.
            KeyRef::File(f) => f.identity().hash(&mut hasher),
        }
        Self {
            origin: hasher.finish(),
            n_in,
            b_in,
        }
    }
}

/// The input-side prefixes of the A and B queries, summed on the host (a few hundred terms):
/// kept decoded beside the device bases.
pub(crate) struct InputBases {
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

impl InputBases {
    fn of(key: KeyRef<'_>, n_in: usize, b_in: usize) -> Result<Self, CudaError> {
        let bad = CudaError::Groth16;
        Ok(match key {
            KeyRef::Memory(pk) => Self {
                a: pk.a[..n_in].to_vec(),
                b_g1: pk.b_g1[..b_in].to_vec(),
                b_g2: pk.b_g2[..b_in].to_vec(),
            },
            KeyRef::File(f) => Self {
                a: f.g1_points(Query::A, 0, n_in).map_err(bad)?,
                b_g1: f.g1_points(Query::BG1, 0, b_in).map_err(bad)?,
                b_g2: f.g2_points(0, b_in).map_err(bad)?,
            },
        })
    }
}

/// The aux-side bases of one key on the device (the input-side prefixes stay on the CPU):
/// those its plan keeps resident; the others stream from host memory at every MSM.
#[derive(Default)]
pub(crate) struct ResidentQueries {
    pub h: Option<DeviceBasesG1>,
    pub l: Option<DeviceBasesG1>,
    pub a_aux: Option<DeviceBasesG1>,
    pub b_g1_aux: Option<DeviceBasesG1>,
    pub b_g2_aux: Option<DeviceBasesG2>,
}

/// All five queries, for the resident order.
pub(crate) struct AllQueries<'a> {
    pub h: &'a DeviceBasesG1,
    pub l: &'a DeviceBasesG1,
    pub a_aux: &'a DeviceBasesG1,
    pub b_g1_aux: &'a DeviceBasesG1,
    pub b_g2_aux: &'a DeviceBasesG2,
}

impl ResidentQueries {
    pub fn any(&self) -> bool {
        self.h.is_some()
            || self.l.is_some()
            || self.a_aux.is_some()
            || self.b_g1_aux.is_some()
            || self.b_g2_aux.is_some()
    }

    pub fn all(&self) -> Option<AllQueries<'_>> {
        Some(AllQueries {
            h: self.h.as_ref()?,
            l: self.l.as_ref()?,
            a_aux: self.a_aux.as_ref()?,
            b_g1_aux: self.b_g1_aux.as_ref()?,
            b_g2_aux: self.b_g2_aux.as_ref()?,
        })
    }
}

/// The circuit's recorded matrices as a partition's products read them.
pub(crate) enum DeviceMatricesOf {
    /// No recording: a, b, c come with the witness.
    None,
    Resident(Box<DeviceMatrices>),
    /// Copied block by block from the engine's (page-locked) host matrices.
    Streamed(StreamedMatrices),
}

/// What a partition proves against on one GPU: the key's bases its plan keeps resident, the
/// circuit's constraint matrices (resident or streamed), and how its partitions run. Kept
/// together because a partition needs all of it: acquiring them as one item means no
/// partition ever holds one while waiting for room for the other.
pub(crate) struct OnDevice {
    pub inputs: InputBases,
    pub queries: ResidentQueries,
    pub matrices: DeviceMatricesOf,
    /// The order partitions run in against this item, and the device bytes each reserves.
    pub order: Order,
    pub partition_bytes: u64,
    /// Page-locked staging for queries streamed from the key's file, kept between partitions.
    pub file_staging: super::chunks::StagingPool,
    /// Keeps the recorded matrices' address, part of the item's id, from being reused: a weak
    /// reference holds the allocation of the `Arc`, not the 6.84 GiB of host matrices, which
    /// go when the engine's parameter set lets go of them (its memory budget stops counting
    /// them then).
    _of: Option<Weak<ConstraintMatrices>>,
}

/// Which key (cut at which inputs) and which matrices an item holds, which of them resident
/// (the plan's, `Item::ALL`'s bits), and in which order its partitions run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ItemId {
    key: KeyId,
    matrices: Option<usize>,
    resident: u8,
    order: Order,
}

/// An item on the device, held by the partition using it.
pub(crate) type OnDeviceHeld = Held<ItemId, OnDevice>;

/// The aux-side bases of a key in host memory: what goes to the device (resident) or is read
/// chunk by chunk (streamed). The input-side prefixes stay on the CPU.
pub(crate) struct AuxQueries<'a> {
    pub h: &'a [G1Affine],
    pub l: &'a [G1Affine],
    pub a_aux: &'a [G1Affine],
    pub b_g1_aux: &'a [G1Affine],
    pub b_g2_aux: &'a [G2Affine],
}

impl<'a> AuxQueries<'a> {
    pub fn of(pk: &'a ProvingKey, n_in: usize, b_in: usize) -> Self {
        let (n_in, b_in) = (n_in.min(pk.a.len()), b_in.min(pk.b_g1.len()));
        Self {
            h: &pk.h,
            l: &pk.l,
            a_aux: &pk.a[n_in..],
            b_g1_aux: &pk.b_g1[b_in..],
            b_g2_aux: &pk.b_g2[b_in..],
        }
    }
}

pub(crate) struct Gpu {
    pub ordinal: usize,
    pub main: CudaDevice,
    /// Idle handles with streams of their own, one per concurrent worker.
    handles: Mutex<Vec<CudaDevice>>,
    /// Held around the kernel region only: uploads and host work run outside it. The most
    /// urgent waiting partition goes next (a WinningPoSt waits for one PoRep partition at most).
    pub kernel_lock: PriorityLock,
    pub vram: Arc<VramBudget>,
    /// Keys and matrices in VRAM (resident.rs: LRU, urgent keys first).
    items: Arc<ResidentSet<ItemId, OnDevice>>,
    /// What this card's placement plans are made from.
    pub facts: GpuFacts,
}

/// A worker's handle, returned to the GPU's idle list on drop.
pub(crate) struct Handle<'a> {
    gpu: &'a Gpu,
    dev: Option<CudaDevice>,
}

impl std::ops::Deref for Handle<'_> {
    type Target = CudaDevice;
    fn deref(&self) -> &CudaDevice {
        self.dev.as_ref().expect("handle present until drop")
    }
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        if let Some(d) = self.dev.take() {
            lock(&self.gpu.handles).push(d);
        }
    }
}

/// How long a partition waits for its key to get room on the device (others' partitions to
/// finish, a less urgent key to drain) before its job fails, naming who holds the room.
pub(crate) const KEY_ROOM_WAIT: Duration = Duration::from_secs(30 * 60);

impl Gpu {
    pub fn open(ordinal: usize, options: &CudaOptions) -> Result<Self, CudaError> {
        let main = CudaDevice::open(ordinal)?.tuned(options);
        let free = main.vram_free()? as u64;
        let budget = free.saturating_sub(options.vram_margin);
        let rates = crate::link::copy_rates(&main.core)?;
        let facts = GpuFacts {
            budget,
            rates,
            residency: options.residency,
            stream_chunk: options.stream_chunk,
            forced: options.resident_items.clone(),
        };
        tracing::info!(
            device = ordinal,
            name = %main.name(),
            free = %gib(free),
            budget = %gib(budget),
            h2d_pinned_gb_s = format!("{:.1}", rates.pinned / 1e9),
            h2d_pageable_gb_s = format!("{:.1}", rates.pageable / 1e9),
            residency = %options.residency,
            "GPU ready"
        );
        let vram = VramBudget::new(budget);
        Ok(Self {
            ordinal,
            main,
            handles: Mutex::new(Vec::new()),
            kernel_lock: PriorityLock::new(),
            items: ResidentSet::new(vram.clone()),
            vram,
            facts,
        })
    }

    pub fn handle(&self) -> Result<Handle<'_>, CudaError> {
        let idle = lock(&self.handles).pop();
        let dev = match idle {
            Some(d) => d,
            None => self.main.fork()?,
        };
        Ok(Handle {
            gpu: self,
            dev: Some(dev),
        })
    }

    /// A key of these `lengths`, cut at `inputs`, with its circuit's matrices of
    /// `matrices_bytes` on the device (None: none recorded), as this GPU's plans see it.
    pub fn key_shape(
        &self,
        lengths: &QueryLengths,
        inputs: (usize, usize),
        matrices_bytes: Option<u64>,
    ) -> KeyShape {
        let chunk = self.facts.stream_chunk_bytes();
        KeyShape {
            lengths: *lengths,
            inputs,
            matrices_bytes,
            partition_bytes: OrderBytes {
                resident: super::partition::footprint(lengths, &self.main.msm.options),
                phased: super::phased::footprint(
                    lengths,
                    &self.main.msm.options,
                    chunk,
                    super::phased::block_bytes(chunk),
                ),
            },
        }
    }

    /// Where a key of this shape goes here (placement.rs).
    pub fn plan(&self, key: &KeyShape) -> Result<Placement, NoPlacement> {
        placement::plan(&self.facts, key)
    }

    /// The key's bases and the circuit's `matrices` on this device for a partition of
    /// `urgency`, uploaded first if they are not there, as this GPU's plan for the key
    /// places them: the items it keeps resident, with room for the plan's partitions in
    /// flight beside them (the rest streamed from host memory). It waits up to `wait` for
    /// room: idle items are evicted, and less urgent ones in use drain for it (resident.rs).
    /// The item says how its partitions run and what each reserves. None: no free room now,
    /// with `Wait::No`.
    pub fn on_device(
        &self,
        key: KeyRef<'_>,
        (n_in, b_in): (usize, usize),
        matrices: Option<&Arc<ConstraintMatrices>>,
        urgency: Urgency,
        wait: Wait,
    ) -> Result<Option<OnDeviceHeld>, CudaError> {
        let shape = self.key_shape(
            &key.lengths(),
            (n_in, b_in),
            matrices.map(|m| matrices_bytes(m)),
        );
        let plan = self.plan(&shape).map_err(|e| {
            CudaError::NoRoom(format!("GPU {} cannot prove this key: {e}", self.ordinal))
        })?;
        let model = placement::inputs(&self.facts, &shape);
        let resident_bytes: u64 = plan.resident.iter().map(|&i| model.bytes(i)).sum();
        let order = Order::of(&plan);
        let partition_bytes = shape.partition_bytes.of(order);
        let headroom = plan.partitions_in_flight as u64 * partition_bytes;
        let id = ItemId {
            key: KeyId::of(key, n_in, b_in),
            matrices: matrices.map(|m| Arc::as_ptr(m) as usize),
            resident: Item::ALL
                .iter()
                .enumerate()
                .filter(|(_, i)| plan.resident.contains(i))
                .fold(0, |bits, (k, _)| bits | 1 << k),
            order,
        };
        let got = self
            .items
            .acquire(id, resident_bytes, headroom, urgency, wait, || {
                self.load(key, (n_in, b_in), matrices, &plan, partition_bytes)
            })?;
        match got {
            Acquired::Held(h) => Ok(Some(h)),
            Acquired::Busy { holders } => self.busy(wait, &holders),
            // The plan fits the budget by the same sums: only a plan made wrong gets here.
            Acquired::NeverFits => Err(CudaError::Internal(format!(
                "GPU {}'s plan ({plan}) does not fit its budget of {}",
                self.ordinal,
                gib(self.vram.total())
            ))),
        }
    }

    fn busy(&self, wait: Wait, holders: &str) -> Result<Option<OnDeviceHeld>, CudaError> {
        match wait {
            Wait::No => Ok(None),
            Wait::For(d) => Err(CudaError::NoRoom(format!(
                "no room on GPU {} for the key after {} s: held by {holders}",
                self.ordinal,
                d.as_secs()
            ))),
        }
    }

    /// Uploads what an item holds: the key's queries the plan keeps resident, and the
    /// matrices (all of them, or what their streaming needs).
    fn load(
        &self,
        key: KeyRef<'_>,
        (n_in, b_in): (usize, usize),
        matrices: Option<&Arc<ConstraintMatrices>>,
        plan: &Placement,
        partition_bytes: u64,
    ) -> Result<OnDevice, CudaError> {
        let t = std::time::Instant::now();
        let d = &self.main;
        let keeps = |i| plan.resident.contains(&i);
        let queries = match key {
            // What the plan streams is read from the file too, chunk by chunk (chunks.rs).
            KeyRef::File(f) => super::key_upload::upload_from_file(d, f, n_in, b_in, keeps)?,
            KeyRef::Memory(pk) => {
                let host = AuxQueries::of(pk, n_in, b_in);
                let g1 = |i, bases| keeps(i).then(|| d.upload_g1(bases)).transpose();
                ResidentQueries {
                    h: g1(Item::H, host.h)?,
                    l: g1(Item::L, host.l)?,
                    a_aux: g1(Item::A, host.a_aux)?,
                    b_g1_aux: g1(Item::BG1, host.b_g1_aux)?,
                    b_g2_aux: keeps(Item::BG2)
                        .then(|| d.upload_g2(host.b_g2_aux))
                        .transpose()?,
                }
            }
        };
        let device_matrices = match matrices {
            None => DeviceMatricesOf::None,
            Some(m) if keeps(Item::Matrices) => {
                DeviceMatricesOf::Resident(Box::new(d.upload_matrices(m)?))
            }
            Some(m) => {
                let block = super::phased::block_bytes(self.facts.stream_chunk_bytes());
                DeviceMatricesOf::Streamed(d.stream_matrices(m, block as usize)?)
            }
        };
        d.synchronize()?;
        tracing::info!(
            device = self.ordinal,
            bases = %gib(self.key_shape(&key.lengths(), (n_in, b_in), None).bases_bytes()),
            matrices = %gib(matrices.map_or(0, |m| matrices_bytes(m))),
            ms = t.elapsed().as_millis() as u64,
            "on the device: {plan}"
        );
        Ok(OnDevice {
            inputs: InputBases::of(key, n_in, b_in)?,
            queries,
            matrices: device_matrices,
            order: Order::of(plan),
            partition_bytes,
            file_staging: Default::default(),
            _of: matrices.map(Arc::downgrade),
        })
    }

    /// Whether `key`'s bases are resident in this GPU's memory (at any input split).
    pub fn holds_key(&self, key: KeyRef<'_>) -> bool {
        let origin = KeyId::of(key, 0, 0).origin;
        self.items
            .any(|id, item| id.key.origin == origin && item.queries.any())
    }

    /// "vram: 1 key(s) (50.96 GiB)", "partly streamed: 1 key(s) (35.45 GiB in VRAM)",
    /// "streamed: 1 key(s)", or "no key (auto)".
    pub fn residency_summary(&self) -> String {
        // Keys whole in VRAM, partly, and streamed whole: (count, bytes in VRAM).
        let mut tally = [(0, 0u64); 3];
        self.items.each(|_, item, bytes| {
            let kind = match (item.queries.all().is_some(), item.queries.any()) {
                (true, _) => 0,
                (false, true) => 1,
                (false, false) => 2,
            };
            tally[kind].0 += 1;
            tally[kind].1 += bytes;
        });
        let [(vram, vram_bytes), (partly, partly_bytes), (streamed, _)] = tally;
        let mut parts = Vec::new();
        if vram > 0 {
            parts.push(format!("vram: {vram} key(s) ({})", gib(vram_bytes)));
        }
        if partly > 0 {
            parts.push(format!(
                "partly streamed: {partly} key(s) ({} in VRAM)",
                gib(partly_bytes)
            ));
        }
        if streamed > 0 {
            parts.push(format!("streamed: {streamed} key(s)"));
        }
        if parts.is_empty() {
            format!("no key ({})", self.facts.residency)
        } else {
            parts.join(", ")
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // Bases and idle handles go first, then the pool gives their memory back.
        self.items.clear_idle();
        lock(&self.handles).clear();
        crate::context::release_pooled_memory(&self.main.core.ctx);
    }
}
