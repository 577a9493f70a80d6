//! Same API as the GPU build, for builds without the `cuda` feature.

use crate::host::MsmOptions;
use crate::{CFrom, CudaError, NttDirection};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use zkforge_groth16::r1cs::ConstraintMatrices;

/// A GPU; never constructible in this build.
pub struct CudaDevice {
    _private: (),
}

/// G1 bases resident on a GPU.
pub struct DeviceBasesG1 {
    _private: (),
}

/// G2 bases resident on a GPU.
pub struct DeviceBasesG2 {
    _private: (),
}

/// Scalars resident on a GPU.
pub struct DeviceScalars {
    _private: (),
}

/// A circuit's constraint matrices resident on a GPU.
pub struct DeviceMatrices {
    _private: (),
}

impl DeviceBasesG1 {
    pub fn len(&self) -> usize {
        0
    }
    pub fn is_empty(&self) -> bool {
        true
    }
}

impl DeviceBasesG2 {
    pub fn len(&self) -> usize {
        0
    }
    pub fn is_empty(&self) -> bool {
        true
    }
}

impl DeviceScalars {
    pub fn len(&self) -> usize {
        0
    }
    pub fn is_empty(&self) -> bool {
        true
    }
}

impl CudaDevice {
    pub fn available() -> bool {
        false
    }
    pub fn device_count() -> usize {
        0
    }
    pub fn open(_ordinal: usize) -> Result<Self, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn name(&self) -> String {
        String::new()
    }
    pub fn vram_total(&self) -> usize {
        0
    }
    pub fn vram_free(&self) -> Result<usize, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn synchronize(&self) -> Result<(), CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn ntt(
        &self,
        _data: &mut [Scalar],
        _dir: NttDirection,
        _coset: bool,
    ) -> Result<(), CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn h_coefficients(
        &self,
        _a: &[Scalar],
        _b: &[Scalar],
        _c: &[Scalar],
    ) -> Result<Vec<Scalar>, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn h_coefficients_resident(
        &self,
        _a: &[Scalar],
        _b: &[Scalar],
        _c: &[Scalar],
    ) -> Result<DeviceScalars, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn upload_g1(&self, _bases: &[G1Affine]) -> Result<DeviceBasesG1, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn upload_g2(&self, _bases: &[G2Affine]) -> Result<DeviceBasesG2, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn alloc_scalars(&self, _len: usize) -> Result<DeviceScalars, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn upload_scalars(&self, _scalars: &[Scalar]) -> Result<DeviceScalars, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn ntt_resident(
        &self,
        _data: &mut DeviceScalars,
        _dir: NttDirection,
        _coset: bool,
    ) -> Result<(), CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn download_scalars(&self, _s: &DeviceScalars) -> Result<Vec<Scalar>, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn timed<R>(&self, _f: impl FnOnce(&Self) -> R) -> Result<(R, f32), CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g1(
        &self,
        _bases: &DeviceBasesG1,
        _scalars: &[Scalar],
    ) -> Result<G1Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g1_resident(
        &self,
        _bases: &DeviceBasesG1,
        _scalars: &DeviceScalars,
    ) -> Result<G1Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g2_resident(
        &self,
        _bases: &DeviceBasesG2,
        _scalars: &DeviceScalars,
    ) -> Result<G2Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g1_resident_chunked(
        &self,
        _bases: &DeviceBasesG1,
        _scalars: &DeviceScalars,
        _chunk: usize,
    ) -> Result<G1Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g2_resident_chunked(
        &self,
        _bases: &DeviceBasesG2,
        _scalars: &DeviceScalars,
        _chunk: usize,
    ) -> Result<G2Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn copy_scalars(&self, _s: &DeviceScalars) -> Result<DeviceScalars, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn h_from_device_with(
        &self,
        _a: DeviceScalars,
        _b: DeviceScalars,
        _c: DeviceScalars,
        _natural: bool,
    ) -> Result<DeviceScalars, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g1_resident_with(
        &self,
        _bases: &DeviceBasesG1,
        _scalars: &DeviceScalars,
        _opts: &MsmOptions,
    ) -> Result<G1Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn msm_g2_resident_with(
        &self,
        _bases: &DeviceBasesG2,
        _scalars: &DeviceScalars,
        _opts: &MsmOptions,
    ) -> Result<G2Projective, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn upload_matrices(&self, _m: &ConstraintMatrices) -> Result<DeviceMatrices, CudaError> {
        Err(CudaError::NotBuilt)
    }
    pub fn constraint_products(
        &self,
        _m: &DeviceMatrices,
        _inputs: &DeviceScalars,
        _aux: &DeviceScalars,
        _padded: usize,
        _c_from: CFrom,
    ) -> Result<[DeviceScalars; 3], CudaError> {
        Err(CudaError::NotBuilt)
    }
}
