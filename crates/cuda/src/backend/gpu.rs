//! `Gpu`: one device's share of the backend: worker stream handles, the kernel lock, the VRAM
//! budget, and the proving keys whose bases live there (LRU, or streamed when they do not fit).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use blstrs::{G1Affine, G2Affine};

use zkforge_groth16::prover::fit::KeyPolicy;
use zkforge_groth16::r1cs::ConstraintMatrices;
use zkforge_groth16::srs::Query;
use zkforge_groth16::{KeyRef, PriorityLock, ProvingKey, QueryLengths};

use crate::device::lock;
use crate::host::g1_affine_as_u64;
use crate::options::{CudaOptions, Residency};
use crate::resident::{Acquired, Held, ResidentSet, Wait};
use crate::spmv::{matrices_bytes, DeviceMatrices};
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
        let bad = |e: zkforge_groth16::Error| CudaError::Invalid(e.to_string());
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

/// The aux-side bases of one key on the device (the input-side prefixes stay on the CPU).
pub(crate) struct DeviceQueries {
    pub h: DeviceBasesG1,
    pub l: DeviceBasesG1,
    pub a_aux: DeviceBasesG1,
    pub b_g1_aux: DeviceBasesG1,
    pub b_g2_aux: DeviceBasesG2,
}

/// What a partition proves against on one GPU: a key's aux-side bases (or none, when they
/// stay in host memory and are streamed at every MSM) and, for a recorded circuit, its
/// constraint matrices. Kept together because a partition needs both: acquiring them as one
/// item means no partition ever holds one while waiting for room for the other.
pub(crate) struct OnDevice {
    pub inputs: InputBases,
    /// None: streamed from the key in host memory.
    pub queries: Option<DeviceQueries>,
    pub matrices: Option<DeviceMatrices>,
    /// Keeps the recorded matrices' address, part of the item's id, from being reused: a weak
    /// reference holds the allocation of the `Arc`, not the 6.84 GiB of host matrices, which
    /// go when the engine's parameter set lets go of them (its memory budget stops counting
    /// them then).
    _of: Option<Weak<ConstraintMatrices>>,
}

/// Which key (cut at which inputs) and which matrices an item holds, and whether the key is
/// resident or streamed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ItemId {
    key: KeyId,
    matrices: Option<usize>,
    streamed: bool,
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

/// Device bytes of the aux-side bases of a key of these lengths (n_in = b_in = 0: all of them).
pub(crate) fn aux_bases_bytes(l: &QueryLengths, n_in: usize, b_in: usize) -> u64 {
    let g1 = l.h + l.l + l.a.saturating_sub(n_in) + l.b_g1.saturating_sub(b_in);
    (g1 * std::mem::size_of::<G1Affine>()
        + l.b_g2.saturating_sub(b_in) * std::mem::size_of::<G2Affine>()) as u64
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
    residency: Residency,
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
        let residency = options.residency;
        let main = CudaDevice::open(ordinal)?.tuned(options);
        let free = main.vram_free()? as u64;
        let budget = free.saturating_sub(options.vram_margin);
        tracing::info!(
            device = ordinal,
            name = %main.name(),
            free = %gib(free),
            budget = %gib(budget),
            %residency,
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
            residency,
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

    /// Room kept free beside a key for its partitions: two in `auto` (so that two workers
    /// overlap), otherwise one (a key that leaves no room for a partition is of no use).
    fn headroom(&self, partition_bytes: u64) -> u64 {
        self.key_policy(false).headroom_partitions * partition_bytes
    }

    /// Where `on_device` may put a key (left in its file when `in_file`), for the capacity
    /// check made before a key is read.
    pub fn key_policy(&self, in_file: bool) -> KeyPolicy {
        KeyPolicy {
            resident: self.residency != Residency::Host,
            streamed: !in_file && self.residency != Residency::Vram,
            headroom_partitions: match self.residency {
                Residency::Auto => 2,
                _ => 1,
            },
        }
    }

    /// The key's bases and the circuit's `matrices` on this device for a partition of
    /// `priority`, uploaded first if they are not there. `partition_bytes` is one partition's
    /// working memory. A key that fits the budget with its headroom is resident, waiting (up
    /// to `wait`) for room: idle items are evicted, and less urgent ones in use drain for it
    /// (resident.rs). One that never fits is streamed from host memory in `auto` and `host`
    /// (a key left in its file cannot be). None: no free room now, with `Wait::No`.
    #[allow(clippy::too_many_arguments)]
    pub fn on_device(
        &self,
        key: KeyRef<'_>,
        (n_in, b_in): (usize, usize),
        matrices: Option<&Arc<ConstraintMatrices>>,
        partition_bytes: u64,
        priority: u8,
        wait: Wait,
    ) -> Result<Option<OnDeviceHeld>, CudaError> {
        let key_id = KeyId::of(key, n_in, b_in);
        let key_bytes = aux_bases_bytes(&key.lengths(), n_in, b_in);
        let matrix_bytes = matrices.map_or(0, |m| matrices_bytes(m));
        let headroom = self.headroom(partition_bytes);
        let id = |streamed| ItemId {
            key: key_id,
            matrices: matrices.map(|m| Arc::as_ptr(m) as usize),
            streamed,
        };
        if self.residency != Residency::Host {
            let got = self.items.acquire(
                id(false),
                key_bytes + matrix_bytes,
                headroom,
                priority,
                wait,
                || self.load(key, (n_in, b_in), matrices, true),
            )?;
            match got {
                Acquired::Held(h) => return Ok(Some(h)),
                Acquired::Busy { holders } => return self.busy(wait, &holders),
                Acquired::NeverFits => {}
            }
        }
        let too_large = |headroom| {
            format!(
                "{} of bases and {} of matrices (with {} for partitions) do not fit GPU {}'s \
                 budget of {}",
                gib(key_bytes),
                gib(matrix_bytes),
                gib(headroom),
                self.ordinal,
                gib(self.vram.total())
            )
        };
        match key {
            KeyRef::File(f) => {
                return Err(CudaError::Invalid(format!(
                    "the key {} was left in its file for VRAM, but its {}; set \
                     params_residency = \"host\" to stream it from host memory",
                    f.path().display(),
                    too_large(headroom)
                )))
            }
            KeyRef::Memory(_) if self.residency == Residency::Vram => {
                return Err(CudaError::Invalid(format!(
                    "params_residency = \"vram\" but the key's {}",
                    too_large(headroom)
                )))
            }
            KeyRef::Memory(_) => {}
        }
        // Streamed, the key's chunks share the partitions' room: one partition beside the
        // matrices is enough to make progress (a second one waits for it).
        let got = self.items.acquire(
            id(true),
            matrix_bytes,
            partition_bytes,
            priority,
            wait,
            || self.load(key, (n_in, b_in), matrices, false),
        )?;
        match got {
            Acquired::Held(h) => Ok(Some(h)),
            Acquired::Busy { holders } => self.busy(wait, &holders),
            Acquired::NeverFits => Err(CudaError::Invalid(format!(
                "even with the key streamed from host memory, its {}",
                too_large(partition_bytes)
            ))),
        }
    }

    fn busy(&self, wait: Wait, holders: &str) -> Result<Option<OnDeviceHeld>, CudaError> {
        match wait {
            Wait::No => Ok(None),
            Wait::For(d) => Err(CudaError::Invalid(format!(
                "no room on GPU {} for the key after {} s: held by {holders}",
                self.ordinal,
                d.as_secs()
            ))),
        }
    }

    /// Uploads what an item holds: the bases when `resident`, and the matrices.
    fn load(
        &self,
        key: KeyRef<'_>,
        (n_in, b_in): (usize, usize),
        matrices: Option<&Arc<ConstraintMatrices>>,
        resident: bool,
    ) -> Result<OnDevice, CudaError> {
        let t = std::time::Instant::now();
        let queries = match (resident, key) {
            (false, _) => None,
            (true, KeyRef::Memory(pk)) => Some(self.upload(&AuxQueries::of(pk, n_in, b_in))?),
            (true, KeyRef::File(f)) => Some(super::key_upload::upload_from_file(
                &self.main, f, n_in, b_in,
            )?),
        };
        let device_matrices = matrices.map(|m| self.main.upload_matrices(m)).transpose()?;
        self.main.synchronize()?;
        tracing::info!(
            device = self.ordinal,
            bases = %gib(aux_bases_bytes(&key.lengths(), n_in, b_in)),
            matrices = %gib(matrices.map_or(0, |m| matrices_bytes(m))),
            ms = t.elapsed().as_millis() as u64,
            "{}",
            if resident {
                "proving key and matrices resident in VRAM"
            } else {
                "matrices resident in VRAM, proving key streamed from host memory"
            }
        );
        Ok(OnDevice {
            inputs: InputBases::of(key, n_in, b_in)?,
            queries,
            matrices: device_matrices,
            _of: matrices.map(Arc::downgrade),
        })
    }

    /// Whether a key whose aux-side bases take `bytes` stays resident here: it fits the budget
    /// with room for its partitions of `partition_bytes` (other keys make way for it).
    pub fn would_keep_resident(&self, bytes: u64, partition_bytes: u64) -> bool {
        self.residency != Residency::Host
            && bytes + self.headroom(partition_bytes) <= self.vram.total()
    }

    /// The aux-side bases of a key in host memory, queued on the main stream (`load`
    /// synchronizes once for them and the matrices).
    fn upload(&self, host: &AuxQueries) -> Result<DeviceQueries, CudaError> {
        let d = &self.main;
        Ok(DeviceQueries {
            h: d.upload_g1(host.h)?,
            l: d.upload_g1(host.l)?,
            a_aux: d.upload_g1(host.a_aux)?,
            b_g1_aux: d.upload_g1(host.b_g1_aux)?,
            b_g2_aux: d.upload_g2(host.b_g2_aux)?,
        })
    }

    /// Whether `key`'s bases are resident in this GPU's memory (at any input split).
    pub fn holds_key(&self, key: KeyRef<'_>) -> bool {
        let origin = KeyId::of(key, 0, 0).origin;
        self.items
            .any(|id, item| id.key.origin == origin && item.queries.is_some())
    }

    /// "vram: 1 key (6.10 GiB)", "streamed: 1 key", or "no key".
    pub fn residency_summary(&self) -> String {
        let (mut vram, mut vram_bytes, mut streamed) = (0, 0, 0);
        self.items.each(|_, item, bytes| {
            if item.queries.is_some() {
                vram += 1;
                vram_bytes += bytes;
            } else {
                streamed += 1;
            }
        });
        let mut parts = Vec::new();
        if vram > 0 {
            parts.push(format!("vram: {vram} key(s) ({})", gib(vram_bytes)));
        }
        if streamed > 0 {
            parts.push(format!("streamed: {streamed} key(s)"));
        }
        if parts.is_empty() {
            format!("no key ({})", self.residency)
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
        crate::device::release_pooled_memory(&self.main.ctx);
    }
}
