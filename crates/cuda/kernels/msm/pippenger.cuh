// Point-side Pippenger kernels, generic over the coordinate field (Fp for G1, Fp2 for G2).
#pragma once
#include "scalars.cuh"
#include "../ec/xyzz.cuh"

namespace zkf {

// Buckets are cut into tasks of at most `cap` points (task offsets toffs from a prefix sum of
// ceil(count/cap)), one thread per task: a bucket holding most points (equal or small scalars)
// then spreads over many threads instead of serialising one. The host raises cap to about
// sqrt(fullest bucket), which balances this loop against the partial sums in bucket_reduce.
template<class F>
__device__ void accumulate(const affine<F>* bases, const uint32_t* offs, const uint32_t* idx,
                           const uint32_t* toffs, uint32_t nb, uint32_t cap, xyzz<F>* sums)
{
    const uint64_t t = global_tid();
    if (t >= toffs[nb]) return;
    uint32_t lo = 0, hi = nb;               // largest b with toffs[b] <= t
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (toffs[mid] <= t) lo = mid; else hi = mid;
    }
    const uint32_t start = offs[lo] + ((uint32_t)t - toffs[lo]) * cap;
    const uint32_t end = min(start + cap, offs[lo + 1]);
    xyzz<F> acc;
    acc.inf();
    for (uint32_t k = start; k < end; k++)
        acc.add_affine(bases[idx[k]]);
    sums[t] = acc;
}

template<class F>
__device__ void mul_small(xyzz<F>& r, const xyzz<F>& p, uint32_t m)
{
    r.inf();
    for (int bit = 31 - __clz(m | 1); bit >= 0; bit--) {
        r.dbl();
        if ((m >> bit) & 1) r.add(p);
    }
}

// Σ_d d·B_d for one segment [lo, lo+len) of one window's buckets, via the running-sum trick
// (which yields Σ (d-lo+1)·B_d) plus (lo-1)·Σ B_d; segments make the reduction parallel.
// Σ_d d·B_d for one segment [lo, lo+len) of one window's buckets, via the running-sum trick
// (which yields Σ (d-lo+1)·B_d) plus (lo-1)·Σ B_d; segments make the reduction parallel.
// B_d is read as the sum of its task partials.
template<class F>
__device__ void bucket_reduce(const xyzz<F>* sums, const uint32_t* toffs, uint32_t c, uint32_t wb,
                              uint32_t len, xyzz<F>* partials)
{
    const uint64_t t = global_tid();
    const uint32_t nseg = (1u << c) / len;
    if (t >= (uint64_t)wb * nseg) return;
    const uint32_t w = (uint32_t)(t / nseg), s = (uint32_t)(t % nseg);
    const uint32_t lo = s * len;
    const uint32_t* T = toffs + ((uint64_t)w << c);
    xyzz<F> run, acc;
    run.inf();
    acc.inf();
    for (int d = (int)(lo + len) - 1; d >= (int)lo; d--) {
        for (uint32_t k = T[d]; k < T[d + 1]; k++)
            run.add(sums[k]);
        acc.add(run);
    }
    if (lo == 0) {
        run.neg();
        acc.add(run);
    } else if (lo > 1) {
        xyzz<F> m;
        mul_small(m, run, lo - 1);
        acc.add(m);
    }
    partials[t] = acc;
}

template<class F>
__device__ void block_sum_store(xyzz<F> acc, xyzz<F>* out)
{
    extern __shared__ uint4 shraw[];
    xyzz<F>* sh = reinterpret_cast<xyzz<F>*>(shraw);
    const uint32_t tid = threadIdx.x;
    sh[tid] = acc;
    __syncthreads();
    for (uint32_t s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            xyzz<F> a = sh[tid];
            a.add(sh[tid + s]);
            sh[tid] = a;
        }
        __syncthreads();
    }
    if (tid == 0) *out = sh[0];
}

// out[g] = Σ in[g·gsize .. (g+1)·gsize); one block per group, blockDim a power of two.
template<class F>
__device__ void reduce_groups(const xyzz<F>* in, uint32_t gsize, xyzz<F>* out)
{
    xyzz<F> acc;
    acc.inf();
    const xyzz<F>* g = in + (uint64_t)blockIdx.x * gsize;
    for (uint32_t k = threadIdx.x; k < gsize; k += blockDim.x)
        acc.add(g[k]);
    block_sum_store(acc, out + blockIdx.x);
}

// Σ bases[i] over scalars equal to 1: Filecoin witnesses are mostly bits, and these points need
// one addition each instead of a pass through every window.
template<class F>
__device__ void sum_ones(const affine<F>* bases, const uint32_t* sc, uint64_t n, xyzz<F>* partials)
{
    xyzz<F> acc;
    acc.inf();
    for (uint64_t i = global_tid(); i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t* s = sc + 8 * i;
        if (scalar_le_one(s) && s[0] == 1)
            acc.add_affine(bases[i]);
    }
    block_sum_store(acc, partials + blockIdx.x);
}

} // namespace zkf

#define ZKF_MSM_ENTRY_POINTS(G, F)                                                              \
extern "C" __global__ void msm_accumulate_##G(const zkf::affine<F>* bases, const uint32_t* offs,\
                                              const uint32_t* idx, const uint32_t* toffs,       \
                                              uint32_t nb, uint32_t cap, zkf::xyzz<F>* sums)    \
{   zkf::accumulate<F>(bases, offs, idx, toffs, nb, cap, sums);   }                             \
extern "C" __global__ void msm_bucket_reduce_##G(const zkf::xyzz<F>* sums, const uint32_t* toffs,\
                                                 uint32_t c, uint32_t wb, uint32_t len,         \
                                                 zkf::xyzz<F>* partials)                        \
{   zkf::bucket_reduce<F>(sums, toffs, c, wb, len, partials);   }                               \
extern "C" __global__ void msm_reduce_groups_##G(const zkf::xyzz<F>* in, uint32_t gsize,        \
                                                 zkf::xyzz<F>* out)                             \
{   zkf::reduce_groups<F>(in, gsize, out);   }                                                  \
extern "C" __global__ void msm_sum_ones_##G(const zkf::affine<F>* bases, const uint32_t* sc,    \
                                            uint64_t n, zkf::xyzz<F>* partials)                 \
{   zkf::sum_ones<F>(bases, sc, n, partials);   }
