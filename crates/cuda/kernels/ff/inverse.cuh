// Inversion in Fp and Fp2 by Fermat's little theorem: a^(p-2). About 380 squarings and 190
// products — slower than a binary GCD, but branch-free across a warp and needing no partner
// lane, so any thread may call it at any point of a kernel. Used where one inversion is
// amortised over a whole scalar multiplication (key generation), never in the MSM.
#pragma once
#include "fp2.cuh"

namespace zkf {

// p − 2 as 32-bit limbs, least significant first.
__device__ __constant__ const uint32_t FP_P_MINUS_2[12] = {
    0xffffaaa9, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
    0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea
};

// a^-1, and 0 for a = 0.
__device__ inline fp_t fp_inverse(const fp_t& a)
{
    fp_t r = fp_t::one();
    for (int w = 11; w >= 0; w--) {
        const uint32_t bits = FP_P_MINUS_2[w];
        for (int b = 31; b >= 0; b--) {
            r = r * r;
            if ((bits >> b) & 1) r = r * a;
        }
    }
    return r;
}

// (c0 + c1 u)^-1 = (c0 − c1 u) / (c0² + c1²), since u² = −1.
__device__ inline fp2 fp2_inverse(const fp2& a)
{
    fp_t t = fp_inverse(a.c0 * a.c0 + a.c1 * a.c1);
    return fp2(a.c0 * t, -(a.c1 * t));
}

__device__ __forceinline__ fp_t inverse_of(const fp_t& a) { return fp_inverse(a); }
__device__ __forceinline__ fp2 inverse_of(const fp2& a) { return fp2_inverse(a); }

} // namespace zkf
