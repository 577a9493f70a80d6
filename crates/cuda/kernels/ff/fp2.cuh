// Fp2 = Fp[u]/(u^2 + 1) over sppark's Montgomery fp_t, one thread per element.
#pragma once
#include "fields.cuh"

namespace zkf {

// sppark's own fp2_t splits an element across two lanes; keeping both halves in one
// thread lets the G1 and G2 MSM kernels share one code path.
struct fp2 {
    fp_t c0, c1;

    __device__ __forceinline__ fp2() {}
    __device__ __forceinline__ fp2(const fp_t& a, const fp_t& b) : c0(a), c1(b) {}

    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ void zero() { c0.zero(); c1.zero(); }
    static __device__ __forceinline__ fp2 one() { fp2 r; r.c0 = fp_t::one(); r.c1.zero(); return r; }

    friend __device__ __forceinline__ fp2 operator+(const fp2& a, const fp2& b)
    {   return fp2(a.c0 + b.c0, a.c1 + b.c1);   }
    friend __device__ __forceinline__ fp2 operator-(const fp2& a, const fp2& b)
    {   return fp2(a.c0 - b.c0, a.c1 - b.c1);   }
    __device__ __forceinline__ fp2 operator-() const { return fp2(-c0, -c1); }

    // Karatsuba: three base-field products instead of four.
    friend __device__ __forceinline__ fp2 operator*(const fp2& a, const fp2& b)
    {
        fp_t t0 = a.c0 * b.c0;
        fp_t t1 = a.c1 * b.c1;
        fp_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return fp2(t0 - t1, t2 - t0 - t1);
    }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two products.
    __device__ __forceinline__ fp2 sqr() const
    {
        fp_t t = c0 * c1;
        return fp2((c0 + c1) * (c0 - c1), t + t);
    }
};

// sppark's dedicated squaring (the cross products once, then doubled): cheaper than a * a.
__device__ __forceinline__ fp_t sqr_of(const fp_t& a) { return sqr(a); }
__device__ __forceinline__ fp2 sqr_of(const fp2& a) { return a.sqr(); }

} // namespace zkf
