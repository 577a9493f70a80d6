//! `Gpu`: one device's share of the backend: worker stream handles, the kernel lock, the VRAM
//! budget, and the proving keys whose bases live there (LRU, or streamed when they do not fit).

use std::sync::{Arc, Mutex};

use blstrs::{G1Affine, G2Affine};

use zkforge_groth16::r1cs::ConstraintMatrices;
use zkforge_groth16::srs::Query;
use zkforge_groth16::{KeyRef, ProvingKey, QueryLengths};

use crate::device::lock;
use crate::host::g1_affine_as_u64;
use crate::options::{CudaOptions, Residency};
use crate::spmv::{matrices_bytes, DeviceMatrices};
use crate::vram::{gib, VramBudget, VramReservation};
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

/// Where one key's bases are for this device.
pub(crate) enum Placement {
    Resident(Box<DeviceQueries>),
    /// Read from the key in host memory, chunk by chunk, at every MSM.
    Streamed,
}

pub(crate) struct KeyBases {
    pub id: KeyId,
    pub placement: Placement,
    pub inputs: InputBases,
    bytes: u64,
    _vram: Option<VramReservation>,
}

/// A circuit's constraint matrices resident on one GPU.
pub(crate) struct ResidentMatrices {
    of: Arc<ConstraintMatrices>,
    pub device: DeviceMatrices,
    _vram: VramReservation,
}

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
    /// Held around the kernel region only: uploads and host work run outside it.
    pub kernel_lock: Mutex<()>,
    pub vram: Arc<VramBudget>,
    /// Most recently used last.
    keys: Mutex<Vec<Arc<KeyBases>>>,
    matrices: Mutex<Vec<Arc<ResidentMatrices>>>,
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
        Ok(Self {
            ordinal,
            main,
            handles: Mutex::new(Vec::new()),
            kernel_lock: Mutex::new(()),
            vram: VramBudget::new(budget),
            keys: Mutex::new(Vec::new()),
            matrices: Mutex::new(Vec::new()),
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

    /// The key's bases on this device, uploading them on first use. `partition_bytes` is one
    /// partition's working memory: in `auto`, a key stays in VRAM only if two partitions still
    /// fit beside it (idle keys are evicted first), otherwise it is streamed.
    pub fn bases(
        &self,
        key: KeyRef<'_>,
        n_in: usize,
        b_in: usize,
        partition_bytes: u64,
    ) -> Result<Arc<KeyBases>, CudaError> {
        let id = KeyId::of(key, n_in, b_in);
        let mut keys = lock(&self.keys);
        if let Some(i) = keys.iter().position(|k| k.id == id) {
            let k = keys.remove(i);
            keys.push(k.clone());
            return Ok(k);
        }
        let bytes = aux_bases_bytes(&key.lengths(), n_in, b_in);
        let headroom = match self.residency {
            Residency::Auto => 2 * partition_bytes,
            _ => 0,
        };
        let reservation = if self.residency == Residency::Host {
            None
        } else {
            self.make_room(&mut keys, bytes, headroom)
        };
        let placement = match (&reservation, key) {
            (Some(_), KeyRef::Memory(pk)) => {
                Placement::Resident(Box::new(self.upload(&AuxQueries::of(pk, n_in, b_in))?))
            }
            (Some(_), KeyRef::File(f)) => Placement::Resident(Box::new(
                super::key_upload::upload_from_file(&self.main, f, n_in, b_in)?,
            )),
            (None, KeyRef::File(f)) => {
                return Err(CudaError::Invalid(format!(
                    "the key {} was left in its file for VRAM, but its {} of bases do not fit                      GPU {}'s budget ({} free of {}); set params_residency = \"host\" to                      stream it from host memory",
                    f.path().display(),
                    gib(bytes),
                    self.ordinal,
                    gib(self.vram.total() - self.vram.used()),
                    gib(self.vram.total())
                )))
            }
            (None, _) if self.residency == Residency::Vram => {
                return Err(CudaError::Invalid(format!(
                    "params_residency = \"vram\" but the key's {} of bases do not fit in GPU {}'s \
                     budget ({} free of {})",
                    gib(bytes),
                    self.ordinal,
                    gib(self.vram.total() - self.vram.used()),
                    gib(self.vram.total())
                )))
            }
            (None, KeyRef::Memory(_)) => Placement::Streamed,
        };
        let mode = match placement {
            Placement::Resident(_) => "resident in VRAM",
            Placement::Streamed => "streamed from host memory",
        };
        tracing::info!(device = self.ordinal, bases = %gib(bytes), "proving key {mode}");
        let k = Arc::new(KeyBases {
            id,
            placement,
            inputs: InputBases::of(key, n_in, b_in)?,
            bytes,
            _vram: reservation,
        });
        keys.push(k.clone());
        Ok(k)
    }

    /// Whether a key whose aux-side bases take `bytes` would stay resident here with room for
    /// two partitions of `partition_bytes` beside it (after evicting idle keys).
    pub fn would_keep_resident(&self, bytes: u64, partition_bytes: u64) -> bool {
        if self.residency == Residency::Host {
            return false;
        }
        let idle: u64 = lock(&self.keys)
            .iter()
            .filter(|k| Arc::strong_count(k) == 1)
            .map(|k| k.bytes)
            .sum();
        let headroom = match self.residency {
            Residency::Auto => 2 * partition_bytes,
            _ => 0,
        };
        self.vram.used() - idle.min(self.vram.used()) + bytes + headroom <= self.vram.total()
    }

    /// The circuit's matrices on this device, uploaded on first use (kept while the
    /// circuit's jobs run; idle ones are dropped for room like keys).
    pub fn matrices(
        &self,
        m: &Arc<ConstraintMatrices>,
    ) -> Result<Arc<ResidentMatrices>, CudaError> {
        let mut all = lock(&self.matrices);
        if let Some(r) = all.iter().find(|r| Arc::ptr_eq(&r.of, m)) {
            return Ok(r.clone());
        }
        let bytes = matrices_bytes(m);
        all.retain(|r| Arc::strong_count(r) > 1);
        let vram = self.vram.reserve(bytes, "constraint matrices")?;
        let device = self.main.upload_matrices(m)?;
        tracing::info!(
            device = self.ordinal,
            bytes = %gib(bytes),
            nonzeros = m.nonzeros(),
            "constraint matrices resident in VRAM"
        );
        let r = Arc::new(ResidentMatrices {
            of: m.clone(),
            device,
            _vram: vram,
        });
        all.push(r.clone());
        Ok(r)
    }

    /// Reserves `bytes` leaving `headroom` free, evicting keys no partition is using.
    fn make_room(
        &self,
        keys: &mut Vec<Arc<KeyBases>>,
        bytes: u64,
        headroom: u64,
    ) -> Option<VramReservation> {
        loop {
            let fits = self.vram.used() + bytes + headroom <= self.vram.total();
            if fits {
                if let Some(r) = self.vram.try_reserve(bytes) {
                    return Some(r);
                }
            }
            let idle = keys.iter().position(|k| Arc::strong_count(k) == 1)?;
            let evicted = keys.remove(idle);
            tracing::info!(device = self.ordinal, bases = %gib(evicted.bytes), "evicting a key's bases");
        }
    }

    fn upload(&self, host: &AuxQueries) -> Result<DeviceQueries, CudaError> {
        let d = &self.main;
        let q = DeviceQueries {
            h: d.upload_g1(host.h)?,
            l: d.upload_g1(host.l)?,
            a_aux: d.upload_g1(host.a_aux)?,
            b_g1_aux: d.upload_g1(host.b_g1_aux)?,
            b_g2_aux: d.upload_g2(host.b_g2_aux)?,
        };
        d.synchronize()?;
        Ok(q)
    }

    /// Whether `key`'s bases are resident in this GPU's memory (at any input split).
    pub fn holds_key(&self, key: KeyRef<'_>) -> bool {
        let id = KeyId::of(key, 0, 0);
        lock(&self.keys)
            .iter()
            .any(|k| k.id.origin == id.origin && matches!(k.placement, Placement::Resident(_)))
    }

    /// "vram: 1 key (6.10 GiB)", "streamed: 1 key", or "no key".
    pub fn residency_summary(&self) -> String {
        let keys = lock(&self.keys);
        let (mut vram, mut vram_bytes, mut streamed) = (0, 0, 0);
        for k in keys.iter() {
            match k.placement {
                Placement::Resident(_) => {
                    vram += 1;
                    vram_bytes += k.bytes;
                }
                Placement::Streamed => streamed += 1,
            }
        }
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
        lock(&self.keys).clear();
        lock(&self.matrices).clear();
        lock(&self.handles).clear();
        crate::device::release_pooled_memory(&self.main.ctx);
    }
}
