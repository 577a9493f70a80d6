// Radix-2 decimation-in-frequency NTT over the BLS12-381 scalar field, natural order in and out.
#pragma once
#include "../ff/fp2.cuh"
#include "../util.cuh"

namespace zkf {

// w^e from two tables (lo[i] = w^i, hi[i] = w^(i << lb)), so no table needs n/2 entries:
// one extra product per butterfly instead of a 2 GB twiddle array at n = 2^27.
__device__ __forceinline__ fr_t pow_tab(const fr_t* lo, const fr_t* hi, uint32_t lb, uint64_t e)
{
    fr_t r = lo[e & ((1ull << lb) - 1)];
    uint64_t h = e >> lb;
    if (h) r = r * hi[h];
    return r;
}

} // namespace zkf

using namespace zkf;

// One pass of a decimation-in-frequency NTT, split Cooley-Tukey style: the 2^k elements that
// differ in index bits t_lo .. t_lo+k-1 (one block, in shared memory) get a plain 2^k-point DIF
// whose twiddles come from one small table, then each is multiplied once by the cross twiddle
// w_n^(lowp · bitrev_k(l) · 2^(L - t_lo - k)). That costs one product per element per pass
// instead of one extra table product per butterfly, and 2^27 needs 3 passes over memory.
// Elements are 32 bytes, one full sector, so the strided loads waste no bandwidth.
// The first pass can also apply the coset shift x[i] *= g^i as it loads (glo non-null).
extern "C" __global__ void ntt_dif_pass(fr_t* d, uint32_t L, uint32_t t_lo, uint32_t k,
                                        const fr_t* __restrict__ roots, uint32_t K,
                                        const fr_t* tlo, const fr_t* thi, uint32_t lb,
                                        const fr_t* glo, const fr_t* ghi, uint32_t glb)
{
    extern __shared__ uint4 shraw[];
    fr_t* sh = reinterpret_cast<fr_t*>(shraw);
    const uint32_t tid = threadIdx.x;
    const uint32_t half = 1u << (k - 1);
    const uint64_t b = blockIdx.x;
    const uint64_t lowp = b & ((1ull << t_lo) - 1);
    const uint64_t base = ((b >> t_lo) << (t_lo + k)) | lowp;

    #pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t l = tid + h * half;
        const uint64_t i = base | ((uint64_t)l << t_lo);
        fr_t x = d[i];
        if (glo && i) x = x * pow_tab(glo, ghi, glb, i);
        sh[l] = x;
    }
    __syncthreads();

    for (int s = (int)k - 1; s >= 0; s--) {
        const uint32_t hl = 1u << s;
        const uint32_t j = tid & (hl - 1);
        const uint32_t l0 = ((tid >> s) << (s + 1)) | j;
        const uint32_t l1 = l0 + hl;
        fr_t x = sh[l0], y = sh[l1];
        fr_t sum = x + y;
        fr_t dif = x - y;
        if (j) dif = dif * roots[j << (K - 1 - s)];
        sh[l0] = sum;
        sh[l1] = dif;
        __syncthreads();
    }

    #pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t l = tid + h * half;
        fr_t x = sh[l];
        const uint64_t e = (lowp * (__brev(l) >> (32 - k))) << (L - t_lo - k);
        if (e) x = x * pow_tab(tlo, thi, lb, e);
        d[base | ((uint64_t)l << t_lo)] = x;
    }
}

// The transpose of ntt_dif_pass: a decimation-in-time pass over the index bits t_lo .. t_lo+k-1,
// for input in bit-reversed order and output in natural order, passes from the low bits up.
// Each element is first multiplied by the same cross twiddle w_n^(lowp · bitrev_k(l) ·
// 2^(L - t_lo - k)) (the four-step twist of the block's sub-transform), then a plain 2^k-point DIT
// runs in shared memory. With twist tables (glo non-null) the load also multiplies the element at
// bit-reversed position i by glo/ghi's power bitrev_L(i): the h step's coset shift g^j, with the
// previous inverse transform's n^-1 folded into the table, so neither needs a pass of its own.
extern "C" __global__ void ntt_dit_pass(fr_t* d, uint32_t L, uint32_t t_lo, uint32_t k,
                                        const fr_t* __restrict__ roots, uint32_t K,
                                        const fr_t* tlo, const fr_t* thi, uint32_t lb,
                                        const fr_t* glo, const fr_t* ghi, uint32_t glb)
{
    extern __shared__ uint4 shraw[];
    fr_t* sh = reinterpret_cast<fr_t*>(shraw);
    const uint32_t tid = threadIdx.x;
    const uint32_t half = 1u << (k - 1);
    const uint64_t b = blockIdx.x;
    const uint64_t lowp = b & ((1ull << t_lo) - 1);
    const uint64_t base = ((b >> t_lo) << (t_lo + k)) | lowp;

    #pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t l = tid + h * half;
        const uint64_t i = base | ((uint64_t)l << t_lo);
        fr_t x = d[i];
        if (glo) x = x * pow_tab(glo, ghi, glb, __brevll(i) >> (64 - L));
        const uint64_t e = (lowp * (__brev(l) >> (32 - k))) << (L - t_lo - k);
        if (e) x = x * pow_tab(tlo, thi, lb, e);
        sh[l] = x;
    }
    __syncthreads();

    for (uint32_t s = 0; s < k; s++) {
        const uint32_t hl = 1u << s;
        const uint32_t j = tid & (hl - 1);
        const uint32_t l0 = ((tid >> s) << (s + 1)) | j;
        const uint32_t l1 = l0 + hl;
        fr_t x = sh[l0], y = sh[l1];
        if (j) y = y * roots[j << (K - 1 - s)];
        sh[l0] = x + y;
        sh[l1] = x - y;
        __syncthreads();
    }

    #pragma unroll
    for (uint32_t h = 0; h < 2; h++) {
        const uint32_t l = tid + h * half;
        d[base | ((uint64_t)l << t_lo)] = sh[l];
    }
}

// In-place bit reversal fused with the output scaling (n^-1 and/or g^-j), saving a scratch
// buffer and a pass. Each pair (i, rev i) is handled by the thread with the smaller index.
extern "C" __global__ void ntt_bitrev_scale(fr_t* d, uint32_t L, const fr_t* cst,
                                            const fr_t* tlo, const fr_t* thi, uint32_t lb)
{
    const uint64_t i = global_tid();
    if (i >> L) return;
    const uint64_t r = L ? (__brevll(i) >> (64 - L)) : 0;
    if (r < i) return;
    fr_t a = d[i], b = d[r];
    if (cst) { fr_t c = *cst; a = a * c; b = b * c; }
    if (tlo) {
        a = a * pow_tab(tlo, thi, lb, r);
        if (r != i) b = b * pow_tab(tlo, thi, lb, i);
    }
    d[r] = a;
    if (r != i) d[i] = b;
}

// t = (a·b − c)·z^-1 on the coset, where z = g^m − 1 is the vanishing polynomial's value.
extern "C" __global__ void h_combine(fr_t* a, const fr_t* b, const fr_t* c, uint64_t n,
                                     const fr_t* zinv)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    fr_t t = a[i] * b[i] - c[i];
    a[i] = t * *zinv;
}
