//! Prefix sums over u32 counts: a small kernel set (`scan_u32`, `scan_tiles`, `scan_add` in
//! `kernels/msm/scalars.cuh`) shared by the MSM (bucket offsets, msm.rs) and density
//! compaction (staging.rs).

use cudarc::driver::{CudaFunction, CudaSlice, DriverError, PushKernelArg};

use crate::context::{blocks, grid, single_block, Core};
use crate::CudaError;

/// Entries per tile of the prefix sum (ZKF_SCAN_TILE in kernels/msm/scalars.cuh).
const SCAN_TILE: u32 = 8192;

#[derive(Clone)]
pub(crate) struct Scan {
    /// One block's exclusive scan (`scan_u32`).
    one_block: CudaFunction,
    tiles: CudaFunction,
    add: CudaFunction,
}

impl Scan {
    pub fn load(core: &Core) -> Result<Self, DriverError> {
        let [one_block, tiles, add] = core.functions(["scan_u32", "scan_tiles", "scan_add"])?;
        Ok(Scan {
            one_block,
            tiles,
            add,
        })
    }

    /// Exclusive prefix sum of `n` counts into `out[0..=n]`, by a single block.
    pub fn one_block(
        &self,
        core: &Core,
        counts: &CudaSlice<u32>,
        out: &mut CudaSlice<u32>,
        n: u32,
    ) -> Result<(), CudaError> {
        let mut b = core.stream.launch_builder(&self.one_block);
        b.arg(counts).arg(out).arg(&n);
        unsafe { b.launch(single_block(1024)) }?;
        Ok(())
    }

    /// Exclusive prefix sum of `n` counts into `out[0..=n]` (`out` at least n + 1 long), in
    /// tiles: each tile's scan, the tiles' sums scanned, then added back.
    pub fn exclusive(&self, core: &Core, counts: u64, out: u64, n: u32) -> Result<(), CudaError> {
        let st = &core.stream;
        let tiles = n.div_ceil(SCAN_TILE).max(1);
        let mut sums = st.alloc_zeros::<u32>(tiles as usize)?;
        let mut offs = st.alloc_zeros::<u32>(tiles as usize + 1)?;
        let mut b = st.launch_builder(&self.tiles);
        b.arg(&counts).arg(&out).arg(&n).arg(&mut sums);
        unsafe { b.launch(blocks(tiles, 1024)) }?;
        self.one_block(core, &sums, &mut offs, tiles)?;
        let mut b = st.launch_builder(&self.add);
        b.arg(&out).arg(&n).arg(&offs);
        unsafe { b.launch(grid(n as u64 + 1, 256)) }?;
        Ok(())
    }
}
