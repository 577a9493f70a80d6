//! The CUDA prover backend: several workers per GPU that overlap their uploads with each
//! other's kernels, a VRAM budget per GPU, a placement plan per GPU and key (which of the
//! key's queries and the matrices stay in VRAM, which stream from page-locked host memory, how
//! many partitions are in flight, in which order they run), and witness buffers page-locked
//! once and reused.

mod chunks;
mod footprint;
mod gpu;
mod items;
mod key_upload;
mod partition;
mod phased;
mod pinner;
mod timing;

use std::sync::Arc;

use zkforge_groth16::prover::placement::KeyPlacement;
use zkforge_groth16::{
    ConstraintMatrices, DeviceInfo, Dispatch, Error, KeyRef, MatricesShape, ProveReport,
    ProverBackend, QueryLengths, QuerySums, ScalarPool, Urgency, Witness,
};

use crate::options::CudaOptions;
use crate::resident::Wait;
use crate::{CudaDevice, CudaError};
use gpu::Gpu;
use pinner::CudaPinner;

/// Device bytes one partition of a key of these lengths reserves on a GPU configured with
/// `options` (for tests and capacity planning).
pub fn partition_footprint(lengths: &QueryLengths, options: &CudaOptions) -> u64 {
    footprint::resident(lengths, &options.msm)
}

/// Proves on one or more GPUs.
pub struct CudaBackend {
    gpus: Vec<Gpu>,
    pool: Arc<ScalarPool>,
    pinner: Arc<CudaPinner>,
}

fn backend_err(e: CudaError) -> Error {
    Error::from(e)
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
            ctx: gpus[0].main.core.ctx.clone(),
        });
        let pool = ScalarPool::new(Some(pinner.clone()), options.staging_pool_bytes as usize);
        Ok(Self { gpus, pool, pinner })
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
                h2d_pinned_bytes_per_s: g.facts.rates.pinned as u64,
                h2d_pageable_bytes_per_s: g.facts.rates.pageable as u64,
            })
            .collect()
    }

    fn locks_devices(&self) -> bool {
        true
    }

    fn scalar_pool(&self) -> Option<Arc<ScalarPool>> {
        Some(self.pool.clone())
    }

    fn host_pinner(&self) -> Option<Arc<dyn zkforge_groth16::HostPinner>> {
        Some(self.pinner.clone())
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

    /// Each GPU's plan for the key (a partition may be dispatched to any of them). The key
    /// stays in its file (and off the host) when every plan keeps it resident: it is then
    /// uploaded through two page-locked staging buffers per GPU (key_upload.rs), GPUs side by
    /// side; otherwise it is decoded, to be streamed from host memory.
    fn place(
        &self,
        lengths: &QueryLengths,
        matrices: Option<&MatricesShape>,
    ) -> zkforge_groth16::Result<KeyPlacement> {
        let inputs = matrices.map_or((0, 0), |m| (m.num_inputs, m.b_dense_inputs));
        let bytes = matrices.map(crate::spmv::shape_bytes);
        let devices = self
            .gpus
            .iter()
            .map(|g| {
                g.plan(&g.key_shape(lengths, inputs, bytes)).map_err(|e| {
                    backend_err(CudaError::NoRoom(format!(
                        "GPU {} cannot prove this key: {e} (VRAM free at start less \
                         gpu.vram_margin)",
                        g.ordinal
                    )))
                })
            })
            .collect::<zkforge_groth16::Result<Vec<_>>>()?;
        Ok(crate::placement::key_placement(
            devices,
            key_upload::STAGING_HOST_BYTES,
            chunks::FILE_STAGING_BYTES,
        ))
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
                        // Free room only, at the lowest urgency: staging evicts nothing and
                        // never waits for, or drains, keys in use.
                        let staged =
                            g.on_device(key, inputs, Some(m), Urgency::Background, Wait::No)?;
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
                    .unwrap_or_else(|_| Err(CudaError::Internal("staging panicked".into())))
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
            backend_err(CudaError::Internal(format!(
                "device index {}, but {} GPU(s) are open",
                on.device,
                self.gpus.len()
            )))
        })?;
        partition::query_sums(gpu, on.urgency, pk, witness, report).map_err(backend_err)
    }
}
