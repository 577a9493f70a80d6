// The single translation unit built into the embedded fatbin: NTT and the quotient's kernels,
// scalar and MSM kernels, the constraint products, key generation's fixed-base products, and
// point decoding.
#include "ntt/ntt.cuh"
#include "poly/quotient.cuh"
#include "msm/scalars.cuh"
#include "msm/density.cuh"
#include "msm/pippenger.cuh"
#include "msm/affine.cuh"
#include "spmv/spmv.cuh"
#include "keygen/fixed_base.cuh"
#include "ec/decode.cuh"

ZKF_MSM_ENTRY_POINTS(g1, zkf::fp_t, true)
ZKF_MSM_ENTRY_POINTS(g2, zkf::fp2, true)
ZKF_MSM_AFFINE_ENTRY_POINT(g1, zkf::fp_t, true)
ZKF_MSM_AFFINE_ENTRY_POINT(g2, zkf::fp2, true)
ZKF_KEYGEN_ENTRY_POINT(g1, zkf::fp_t)
ZKF_KEYGEN_ENTRY_POINT(g2, zkf::fp2)
ZKF_DECODE_ENTRY_POINT(g1, zkf::fp_t)
ZKF_DECODE_ENTRY_POINT(g2, zkf::fp2)
