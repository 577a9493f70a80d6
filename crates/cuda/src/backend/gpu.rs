//! `Gpu`: one device's share of the backend: worker stream handles, the kernel lock, the VRAM
//! budget, and the proving keys whose bases live there (LRU, or streamed when they do not fit).

use std::sync::{Arc, Mutex};

use blstrs::{G1Affine, G2Affine};

use zkforge_groth16::ProvingKey;

use crate::device::lock;
use crate::host::g1_affine_as_u64;
use crate::options::Residency;
use crate::vram::{gib, VramBudget, VramReservation};
use crate::{CudaDevice, CudaError, DeviceBasesG1, DeviceBasesG2};

/// Which key a set of bases belongs to: its query buffers and the input split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyId {
    h: usize,
    l: usize,
    a: usize,
    n_in: usize,
    b_in: usize,
    /// Lengths and the first and last H and L points: a key loaded later at the same
    /// addresses must not reuse another key's bases.
    fingerprint: u64,
}

impl KeyId {
    pub fn of(pk: &ProvingKey, n_in: usize, b_in: usize) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for q in [&pk.h, &pk.l, &pk.a, &pk.b_g1] {
            q.len().hash(&mut hasher);
            for p in [q.first(), q.last()].into_iter().flatten() {
                g1_affine_as_u64(std::slice::from_ref(p)).hash(&mut hasher);
            }
        }
        pk.b_g2.len().hash(&mut hasher);
        Self {
            h: pk.h.as_ptr() as usize,
            l: pk.l.as_ptr() as usize,
            a: pk.a.as_ptr() as usize,
            n_in,
            b_in,
            fingerprint: hasher.finish(),
        }
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
    bytes: u64,
    _vram: Option<VramReservation>,
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
        Self {
            h: &pk.h,
            l: &pk.l,
            a_aux: &pk.a[n_in..],
            b_g1_aux: &pk.b_g1[b_in..],
            b_g2_aux: &pk.b_g2[b_in..],
        }
    }

    /// Bytes on the device.
    fn bytes(&self) -> u64 {
        use std::mem::size_of_val;
        (size_of_val(self.h)
            + size_of_val(self.l)
            + size_of_val(self.a_aux)
            + size_of_val(self.b_g1_aux)
            + size_of_val(self.b_g2_aux)) as u64
    }
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
    pub fn open(ordinal: usize, margin: u64, residency: Residency) -> Result<Self, CudaError> {
        let main = CudaDevice::open(ordinal)?;
        let free = main.vram_free()? as u64;
        let budget = free.saturating_sub(margin);
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
        pk: &ProvingKey,
        n_in: usize,
        b_in: usize,
        partition_bytes: u64,
    ) -> Result<Arc<KeyBases>, CudaError> {
        let id = KeyId::of(pk, n_in, b_in);
        let mut keys = lock(&self.keys);
        if let Some(i) = keys.iter().position(|k| k.id == id) {
            let k = keys.remove(i);
            keys.push(k.clone());
            return Ok(k);
        }
        let host = AuxQueries::of(pk, n_in, b_in);
        let bytes = host.bytes();
        let headroom = match self.residency {
            Residency::Auto => 2 * partition_bytes,
            _ => 0,
        };
        let reservation = if self.residency == Residency::Host {
            None
        } else {
            self.make_room(&mut keys, bytes, headroom)
        };
        let placement = match &reservation {
            Some(_) => Placement::Resident(Box::new(self.upload(&host)?)),
            None if self.residency == Residency::Vram => {
                return Err(CudaError::Invalid(format!(
                    "params_residency = \"vram\" but the key's {} of bases do not fit in GPU {}'s \
                     budget ({} free of {})",
                    gib(bytes),
                    self.ordinal,
                    gib(self.vram.total() - self.vram.used()),
                    gib(self.vram.total())
                )))
            }
            None => Placement::Streamed,
        };
        let mode = match placement {
            Placement::Resident(_) => "resident in VRAM",
            Placement::Streamed => "streamed from host memory",
        };
        tracing::info!(device = self.ordinal, bases = %gib(bytes), "proving key {mode}");
        let k = Arc::new(KeyBases {
            id,
            placement,
            bytes,
            _vram: reservation,
        });
        keys.push(k.clone());
        Ok(k)
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
        lock(&self.handles).clear();
        crate::device::release_pooled_memory(&self.main.ctx);
    }
}
