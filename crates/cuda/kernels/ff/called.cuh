// Field products the MSM loops call out of line instead of inlining. Inlined, a loop of several
// 384-bit products is tens of KB of straight-line code: Nsight Compute found the batch-affine
// accumulation's warps waiting on instruction fetch 15% of their cycles ("no instruction"), and
// called it needed 112 registers instead of 138 and ran 6% faster (docs/gpu.md step 7).
// `mul_of<COMPACT>` and `square_of<COMPACT>` let one kernel source build either way.
#pragma once
#include "fp2.cuh"

namespace zkf {

// 1/a, 0 for a = 0. sppark's inversion pairs each lane with its neighbour through full-warp
// shuffles: every lane of the warp must call it at the same point.
__device__ __forceinline__ fp_t recip_of(const fp_t& a) { return a.reciprocal(); }
__device__ __forceinline__ fp2 recip_of(const fp2& a)
{
    const fp_t t = (sqr_of(a.c0) + sqr_of(a.c1)).reciprocal();
    return fp2(a.c0 * t, -(a.c1 * t));
}

// Only the first argument names the field: sppark's sums and differences have its base type.
template<class T> struct field_of { using type = T; };
template<class F> using same_field = typename field_of<F>::type;

// By reference, so the caller passes its elements through its stack: by value they travel in
// registers the caller must keep free across the call (ptxas: 166 registers instead of about
// 110 for the G1 batch-affine kernel, 255 for G2's).
template<class F> __device__ __noinline__ F mul_called(const F& a, const F& b) { return a * b; }
template<class F> __device__ __noinline__ F sqr_called(const F& a) { return sqr_of(a); }
template<class F> __device__ __noinline__ F recip_called(const F& a) { return recip_of(a); }

template<bool COMPACT, class F>
__device__ __forceinline__ F mul_of(const F& a, const same_field<F>& b)
{   if (COMPACT) return mul_called<F>(a, b); return a * b;   }
template<bool COMPACT, class F>
__device__ __forceinline__ F square_of(const F& a)
{   if (COMPACT) return sqr_called<F>(a); return sqr_of(a);   }
template<bool COMPACT, class F>
__device__ __forceinline__ F reciprocal_of(const F& a)
{   if (COMPACT) return recip_called<F>(a); return recip_of(a);   }

} // namespace zkf
