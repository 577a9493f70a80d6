//! The CUDA prover backend: several workers per GPU that overlap their uploads with each
//! other's kernels, a VRAM budget per GPU, proving keys resident in VRAM (or streamed), and
//! witness buffers page-locked once and reused.

mod gpu;
mod key_upload;
mod partition;
mod pinner;
mod streamed;

use std::sync::Arc;

use zkforge_groth16::prover::fit::{key_site, DeviceNeeds};
use zkforge_groth16::{
    ConstraintMatrices, DeviceInfo, Dispatch, Error, KeyRef, ProveReport, ProverBackend,
    QueryLengths, QuerySums, ScalarPool, Witness,
};

use crate::options::CudaOptions;
use crate::resident::Wait;
use crate::{CudaDevice, CudaError};
use gpu::Gpu;
use pinner::CudaPinner;

/// Device bytes one partition of a key of these lengths reserves on a GPU configured with
/// `options` (for tests and capacity planning).
pub fn partition_footprint(lengths: &QueryLengths, options: &CudaOptions) -> u64 {
    partition::footprint(lengths, &options.msm)
}

/// Proves on one or more GPUs.
pub struct CudaBackend {
    gpus: Vec<Gpu>,
    pool: Arc<ScalarPool>,
}

fn backend_err(e: CudaError) -> Error {
    Error::Backend {
        backend: "cuda",
        message: e.to_string(),
    }
}

impl CudaBackend {
    /// One GPU with default options.
    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        Self::with_options(&CudaOptions {
            devices: vec![ordinal],
            ..Default::default()
        })
    }

    /// The GPUs `options.devices` names (all of them when empty).
    pub fn with_options(options: &CudaOptions) -> Result<Self, CudaError> {
        let ordinals = if options.devices.is_empty() {
            (0..CudaDevice::device_count()).collect()
        } else {
            options.devices.clone()
        };
        if ordinals.is_empty() {
            return Err(CudaError::NoDriver);
        }
        let gpus = ordinals
            .iter()
            .map(|&o| Gpu::open(o, options))
            .collect::<Result<Vec<_>, _>>()?;
        let pinner = Arc::new(CudaPinner {
            ctx: gpus[0].main.ctx.clone(),
        });
        let pool = ScalarPool::new(Some(pinner), options.staging_pool_bytes as usize);
        Ok(Self { gpus, pool })
    }

    /// The first GPU.
    pub fn device(&self) -> &CudaDevice {
        &self.gpus[0].main
    }
}

impl ProverBackend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        self.gpus
            .iter()
            .map(|g| DeviceInfo {
                ordinal: g.ordinal as u32,
                name: g.main.name(),
                memory_total_bytes: g.main.vram_total() as u64,
                memory_free_bytes: g.main.vram_free().unwrap_or(0) as u64,
                budget_bytes: g.vram.total(),
                reserved_bytes: g.vram.used(),
                reserved_peak_bytes: g.vram.peak(),
                residency: g.residency_summary(),
            })
            .collect()
    }

    fn locks_devices(&self) -> bool {
        true
    }

    fn scalar_pool(&self) -> Option<Arc<ScalarPool>> {
        Some(self.pool.clone())
    }

    fn pinned_memory(&self) -> (u64, u64) {
        (
            self.pool.pinned_bytes() as u64,
            self.pool.max_idle_bytes() as u64,
        )
    }

    fn evaluates_constraints(&self) -> bool {
        true
    }

    /// The key stays in its file (and off the host) when its bases would stay resident in
    /// every GPU's VRAM; otherwise it is decoded, to be streamed from host memory.
    fn prefers_key_file(&self, lengths: &QueryLengths) -> bool {
        let bytes = gpu::aux_bases_bytes(lengths, 0, 0);
        self.gpus.iter().all(|g| {
            let partition = partition::footprint(lengths, &g.main.msm);
            g.would_keep_resident(bytes, partition)
        })
    }

    /// A key left in its file is uploaded through two page-locked staging buffers per GPU
    /// (key_upload.rs), GPUs side by side; a streamed key is copied from its decoded points.
    fn key_host_overhead(&self, _lengths: &QueryLengths, in_file: bool) -> u64 {
        if in_file {
            key_upload::STAGING_HOST_BYTES * self.gpus.len() as u64
        } else {
            0
        }
    }

    /// Every GPU must be able to prove the key's partitions, by the rules `Gpu::on_device`
    /// places keys with (a partition may be dispatched to any of them).
    fn check_capacity(
        &self,
        lengths: &QueryLengths,
        matrices: Option<&ConstraintMatrices>,
        in_file: bool,
    ) -> zkforge_groth16::Result<()> {
        let (n_in, b_in) = matrices.map_or((0, 0), |m| (m.num_inputs, m.b_input_density.count()));
        for g in &self.gpus {
            let needs = DeviceNeeds {
                bases: gpu::aux_bases_bytes(lengths, n_in, b_in),
                matrices: matrices.map_or(0, crate::spmv::matrices_bytes),
                partition: partition::footprint(lengths, &g.main.msm),
            };
            key_site(g.vram.total(), &needs, &g.key_policy(in_file)).map_err(|e| {
                backend_err(CudaError::Invalid(format!(
                    "GPU {} cannot prove this key: {e} (VRAM free at start less gpu.vram_margin)",
                    g.ordinal
                )))
            })?;
        }
        Ok(())
    }

    fn key_on_device(&self, key: KeyRef<'_>) -> bool {
        self.gpus.iter().any(|g| g.holds_key(key))
    }

    /// Uploads the key's bases and the circuit's matrices to every GPU, side by side. Only a
    /// recorded circuit is staged: its matrices give the input split (public inputs, B-dense
    /// inputs) under which partitions will look the key up.
    fn stage(
        &self,
        key: KeyRef<'_>,
        matrices: Option<&Arc<ConstraintMatrices>>,
    ) -> zkforge_groth16::Result<()> {
        let Some(m) = matrices else {
            return Ok(());
        };
        let inputs = (m.num_inputs, m.b_input_density.count());
        std::thread::scope(|scope| {
            let staged: Vec<_> = self
                .gpus
                .iter()
                .map(|g| {
                    scope.spawn(move || -> Result<(), CudaError> {
                        let partition = partition::footprint(&key.lengths(), &g.main.msm);
                        // Free room only, at the lowest priority: staging evicts nothing and
                        // never waits for, or drains, keys in use.
                        let staged = g.on_device(key, inputs, Some(m), partition, 0, Wait::No)?;
                        if staged.is_none() {
                            tracing::info!(
                                device = g.ordinal,
                                "no free room to stage the key: it loads at first use"
                            );
                        }
                        Ok(())
                    })
                })
                .collect();
            staged.into_iter().try_for_each(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(CudaError::Invalid("staging panicked".into())))
                    .map_err(backend_err)
            })
        })
    }

    fn query_sums_on(
        &self,
        on: Dispatch,
        pk: KeyRef<'_>,
        witness: Witness,
        report: &mut ProveReport,
    ) -> zkforge_groth16::Result<QuerySums> {
        let gpu = self.gpus.get(on.device).ok_or_else(|| {
            backend_err(CudaError::Invalid(format!(
                "device index {}, but {} GPU(s) are open",
                on.device,
                self.gpus.len()
            )))
        })?;
        partition::query_sums(gpu, on.priority, pk, witness, report).map_err(backend_err)
    }
}
