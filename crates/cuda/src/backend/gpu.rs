//! `Gpu`: one device's share of the backend: worker stream handles, the kernel lock, the VRAM
//! budget, and the proving keys whose bases live there (LRU, or streamed when they do not fit).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkforge_groth16::prover::placement::{Item, NoPlacement, Placement};
use zkforge_groth16::r1cs::ConstraintMatrices;
use zkforge_groth16::{KeyRef, PriorityLock, QueryLengths, Urgency};

use super::items::{
    AuxQueries, DeviceMatricesOf, InputBases, ItemId, KeyId, OnDevice, OnDeviceHeld,
    ResidentQueries,
};
use crate::context::lock;
use crate::options::CudaOptions;
use crate::placement::{self, GpuFacts, KeyShape, Order, OrderBytes};
use crate::resident::{Acquired, ResidentSet, Wait};
use crate::spmv::matrices_bytes;
use crate::vram::{gib, VramBudget};
use crate::{CudaDevice, CudaError};

/// One device's share of the backend.
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
                resident: super::footprint::resident(lengths, &self.main.msm.options),
                phased: super::footprint::phased(
                    lengths,
                    &self.main.msm.options,
                    chunk,
                    super::footprint::block_bytes(chunk),
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
                let block = super::footprint::block_bytes(self.facts.stream_chunk_bytes());
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
