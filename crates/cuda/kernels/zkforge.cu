// The single translation unit built into the embedded fatbin: NTT, scalar and MSM kernels.
#include "ntt/ntt.cuh"
#include "msm/scalars.cuh"
#include "msm/density.cuh"
#include "msm/pippenger.cuh"

ZKF_MSM_ENTRY_POINTS(g1, zkf::fp_t)
ZKF_MSM_ENTRY_POINTS(g2, zkf::fp2)
