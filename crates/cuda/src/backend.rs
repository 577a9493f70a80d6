//! The CUDA prover backend: the h polynomial and the five MSMs on the GPU, with each proving
//! key's bases uploaded once and kept resident.

use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use zkforge_groth16::msm::{msm, msm_with_density, G1, G2};
use zkforge_groth16::poly::Domain;
use zkforge_groth16::{reaper, Density, Error, ProverBackend, ProvingKey, QuerySums, Witness};

use crate::{CudaDevice, CudaError, DeviceBasesG1, DeviceBasesG2};

/// The bases of one proving key on the device; the input-side prefixes stay on the CPU.
struct ResidentBases {
    key: KeyId,
    h: DeviceBasesG1,
    l: DeviceBasesG1,
    a_aux: DeviceBasesG1,
    b_g1_aux: DeviceBasesG1,
    b_g2_aux: DeviceBasesG2,
}

/// Which key the resident bases belong to: its query buffers and the input split.
#[derive(Clone, Copy, PartialEq, Eq)]
struct KeyId {
    h: usize,
    l: usize,
    a: usize,
    b_inputs: usize,
}

impl KeyId {
    fn of(pk: &ProvingKey, b_inputs: usize) -> Self {
        Self {
            h: pk.h.as_ptr() as usize,
            l: pk.l.as_ptr() as usize,
            a: pk.a.as_ptr() as usize,
            b_inputs,
        }
    }
}

/// Proves on one GPU.
pub struct CudaBackend {
    device: CudaDevice,
    resident: Mutex<Option<Arc<ResidentBases>>>,
}

fn backend_err(e: CudaError) -> Error {
    Error::Backend {
        backend: "cuda",
        message: e.to_string(),
    }
}

impl CudaBackend {
    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        Ok(Self {
            device: CudaDevice::open(ordinal)?,
            resident: Mutex::new(None),
        })
    }

    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    fn bases(
        &self,
        pk: &ProvingKey,
        n_in: usize,
        b_in: usize,
    ) -> Result<Arc<ResidentBases>, CudaError> {
        let key = KeyId::of(pk, b_in);
        let mut slot = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = slot.as_ref().filter(|r| r.key == key) {
            return Ok(r.clone());
        }
        // One key resident at a time: free the previous one before uploading.
        *slot = None;
        let d = &self.device;
        let r = Arc::new(ResidentBases {
            key,
            h: d.upload_g1(&pk.h)?,
            l: d.upload_g1(&pk.l)?,
            a_aux: d.upload_g1(&pk.a[n_in..])?,
            b_g1_aux: d.upload_g1(&pk.b_g1[b_in..])?,
            b_g2_aux: d.upload_g2(&pk.b_g2[b_in..])?,
        });
        *slot = Some(r.clone());
        Ok(r)
    }

    fn sums(&self, pk: &ProvingKey, w: Witness) -> Result<QuerySums, CudaError> {
        let Witness {
            mut a,
            mut b,
            mut c,
            inputs,
            aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
        } = w;
        let (n_in, b_in) = (inputs.len(), b_input_density.count());
        let bases = self.bases(pk, n_in, b_in)?;
        let d = &self.device;

        let n = Domain::for_len(a.len())
            .map_err(|e| CudaError::Invalid(e.to_string()))?
            .n;
        for v in [&mut a, &mut b, &mut c] {
            v.resize(n, Scalar::from(0u64));
        }
        let h = d.h_coefficients_resident(&a, &b, &c)?;
        reaper::drop_later((a, b, c));
        let h_sum = d.msm_g1_resident(&bases.h, &h)?;
        let l = d.msm_g1(&bases.l, &aux)?;

        let a_aux = compact(&aux, &a_aux_density);
        let b_aux = compact(&aux, &b_aux_density);
        let a_sum = gpu_or_zero_g1(d, &bases.a_aux, &a_aux)? + msm::<G1>(&pk.a[..n_in], &inputs);
        let b_g1 = gpu_or_zero_g1(d, &bases.b_g1_aux, &b_aux)?
            + msm_with_density::<G1>(&pk.b_g1[..b_in], &inputs, &b_input_density);
        let b_g2 = if b_aux.is_empty() {
            <blstrs::G2Projective as group::Group>::identity()
        } else {
            d.msm_g2(&bases.b_g2_aux, &b_aux)?
        } + msm_with_density::<G2>(&pk.b_g2[..b_in], &inputs, &b_input_density);
        reaper::drop_later((
            aux,
            inputs,
            a_aux,
            b_aux,
            a_aux_density,
            b_aux_density,
            b_input_density,
        ));
        Ok(QuerySums {
            h: h_sum,
            l,
            a: a_sum,
            b_g1,
            b_g2,
        })
    }
}

fn gpu_or_zero_g1(
    d: &CudaDevice,
    bases: &DeviceBasesG1,
    scalars: &[Scalar],
) -> Result<blstrs::G1Projective, CudaError> {
    if scalars.is_empty() {
        return Ok(<blstrs::G1Projective as group::Group>::identity());
    }
    d.msm_g1(bases, scalars)
}

/// The scalars of the variables marked in `density`, in order: what the filtered query needs.
fn compact(values: &[Scalar], density: &Density) -> Vec<Scalar> {
    let mut out = Vec::with_capacity(density.count());
    for (w, word) in density.words().iter().enumerate() {
        let mut bits = *word;
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            out.push(values[i]);
            bits &= bits - 1;
        }
    }
    out
}

impl ProverBackend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn devices(&self) -> Vec<zkforge_groth16::DeviceInfo> {
        vec![zkforge_groth16::DeviceInfo {
            ordinal: 0,
            name: self.device.name(),
            memory_total_bytes: self.device.vram_total() as u64,
            memory_free_bytes: self.device.vram_free().unwrap_or(0) as u64,
        }]
    }

    fn query_sums(&self, pk: &ProvingKey, witness: Witness) -> zkforge_groth16::Result<QuerySums> {
        self.sums(pk, witness).map_err(backend_err)
    }
}
