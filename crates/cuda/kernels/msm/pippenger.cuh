// Point-side Pippenger kernels, generic over the coordinate field (Fp for G1, Fp2 for G2).
#pragma once
#include "scalars.cuh"
#include "../ec/xyzz.cuh"

namespace zkf {

// Accumulation in equal chunks: thread t adds the sorted entries [t·K, (t+1)·K) whatever bucket
// they fall in, so every thread does the same number of additions (one thread per bucket left
// most threads idle once buckets averaged fewer points than the fullest held: with 2^21 buckets
// a window, about 64 ± 8 points each, a warp waited for its fullest lane). A bucket that begins
// in this chunk is written to sums[bucket]; the piece of a bucket begun by an earlier chunk (at
// most one, the first) goes to heads[t], and fold_heads adds a bucket's heads to its sum.
// The host takes K ≥ √(fullest bucket), so that chain of heads stays short too. COMPACT: the
// mixed addition's products called out of line (ff/called.cuh).
template<bool COMPACT, class F>
__device__ void accumulate(const affine<F>* bases, const uint32_t* offs, const uint32_t* idx,
                           uint32_t nb, uint32_t K, xyzz<F>* sums, xyzz<F>* heads)
{
    const uint64_t t = global_tid();
    const uint32_t total = offs[nb];
    if (t * K >= total) return;
    const uint32_t start = (uint32_t)(t * K);
    const uint32_t end = min(start + K, total);
    uint32_t lo = 0, hi = nb;               // the bucket holding entry `start`
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (offs[mid] <= start) lo = mid; else hi = mid;
    }
    uint32_t b = lo, next = offs[b + 1];
    bool head = offs[b] < start;
    xyzz<F> acc;
    acc.inf();
    for (uint32_t k = start; k < end; k++) {
        if (k == next) {
            if (head) heads[t] = acc; else sums[b] = acc;
            head = false;
            acc.inf();
            do { b++; } while (offs[b + 1] <= k);
            next = offs[b + 1];
        }
        const uint32_t e = idx[k];
        acc.template add_affine<COMPACT>(bases[e & 0x7fffffffu], e >> 31);
    }
    if (head) heads[t] = acc; else sums[b] = acc;
}

template<bool COMPACT, class F>
__device__ void mul_small(xyzz<F>& r, const xyzz<F>& p, uint32_t m)
{
    r.inf();
    for (int bit = 31 - __clz(m | 1); bit >= 0; bit--) {
        r.template dbl<COMPACT>();
        if ((m >> bit) & 1) r.template add<COMPACT>(p);
    }
}

// Adds to each bucket's sum the heads of the chunks that continued it (chunks o0/K + 1 ..
// (o1 − 1)/K), a thread a bucket, so that bucket_reduce reads one point a slot. (bucket_reduce
// once added them itself, a segment's heads one after another in one thread: a window of few,
// full buckets — the H MSM's top window, 2^15 buckets of ~4,096 entries — made that chain long
// once batch-affine chunks shortened; docs/gpu.md step 9.) The host takes K ≥ √(fullest), so
// no thread here adds more than √(fullest) heads.
template<bool COMPACT, class F>
__device__ void fold_heads(xyzz<F>* sums, const xyzz<F>* heads, const uint32_t* offs,
                           uint32_t nb, uint32_t K)
{
    const uint64_t b = global_tid();
    if (b >= nb) return;
    const uint32_t o0 = offs[b], o1 = offs[b + 1];
    if (o1 == o0) return;
    const uint32_t last = (o1 - 1) / K;
    uint32_t h = o0 / K + 1;
    if (h > last) return;
    xyzz<F> acc = sums[b];
    for (; h <= last; h++) acc.template add<COMPACT>(heads[h]);
    sums[b] = acc;
}

// Σ_s (s+1)·B_s for one segment [lo, lo+len) of one window's bucket slots, via the running-sum
// trick (which yields Σ (s-lo+1)·B_s) plus lo·Σ B_s; segments make the reduction parallel.
// B_s is the bucket's sum with its chunks' heads folded in; empty slots are skipped.
// COMPACT: the additions' products called out of line.
template<bool COMPACT, class F>
__device__ void bucket_reduce(const xyzz<F>* sums, const uint32_t* offs, uint32_t cb,
                              uint32_t wb, uint32_t len, xyzz<F>* partials)
{
    const uint64_t t = global_tid();
    const uint32_t nseg = (1u << cb) / len;
    if (t >= (uint64_t)wb * nseg) return;
    const uint32_t w = (uint32_t)(t / nseg), s = (uint32_t)(t % nseg);
    const uint32_t lo = s * len;
    const uint32_t base = w << cb;
    xyzz<F> run, acc;
    run.inf();
    acc.inf();
    for (int d = (int)(lo + len) - 1; d >= (int)lo; d--) {
        const uint32_t b = base + d;
        if (offs[b + 1] > offs[b]) run.template add<COMPACT>(sums[b]);
        acc.template add<COMPACT>(run);
    }
    if (lo > 0) {
        xyzz<F> m;
        mul_small<COMPACT>(m, run, lo);
        acc.template add<COMPACT>(m);
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

// Σ bases[idx[k]] over the list of scalars equal to 1 (msm_list_ones): Filecoin witnesses are
// mostly bits, and these points need one addition each instead of a pass through every window.
// Walking the list rather than every scalar keeps all lanes adding (with 45% ones, a warp over
// the scalars added on fewer than half its lanes). Each thread writes its own partial and
// reduce_groups adds them up: a block sum here would put the full addition's registers into
// this kernel (ptxas, G1: 196 registers, 2 blocks an SM; without it 90, 5).
template<bool COMPACT, class F>
__device__ void sum_listed(const affine<F>* bases, const uint32_t* idx, uint32_t count,
                           xyzz<F>* partials)
{
    xyzz<F> acc;
    acc.inf();
    for (uint64_t k = global_tid(); k < count; k += (uint64_t)gridDim.x * blockDim.x)
        acc.template add_affine<COMPACT>(bases[idx[k]]);
    partials[global_tid()] = acc;
}

} // namespace zkf

#define ZKF_MSM_ENTRY_POINTS(G, F, COMPACT)                                                     \
extern "C" __global__ void msm_accumulate_##G(const zkf::affine<F>* bases, const uint32_t* offs,\
                                              const uint32_t* idx, uint32_t nb, uint32_t K,     \
                                              zkf::xyzz<F>* sums, zkf::xyzz<F>* heads)          \
{   zkf::accumulate<COMPACT, F>(bases, offs, idx, nb, K, sums, heads);   }                      \
extern "C" __global__ void msm_fold_heads_##G(zkf::xyzz<F>* sums, const zkf::xyzz<F>* heads,    \
                                              const uint32_t* offs, uint32_t nb, uint32_t K)    \
{   zkf::fold_heads<COMPACT, F>(sums, heads, offs, nb, K);   }                                  \
extern "C" __global__ void msm_bucket_reduce_##G(const zkf::xyzz<F>* sums, const uint32_t* offs, \
                                                 uint32_t cb, uint32_t wb, uint32_t len,        \
                                                 zkf::xyzz<F>* partials)                        \
{   zkf::bucket_reduce<COMPACT, F>(sums, offs, cb, wb, len, partials);   }                      \
extern "C" __global__ void msm_reduce_groups_##G(const zkf::xyzz<F>* in, uint32_t gsize,        \
                                                 zkf::xyzz<F>* out)                             \
{   zkf::reduce_groups<F>(in, gsize, out);   }                                                  \
extern "C" __global__ void msm_sum_ones_##G(const zkf::affine<F>* bases, const uint32_t* idx,   \
                                            uint32_t count, zkf::xyzz<F>* partials)             \
{   zkf::sum_listed<COMPACT, F>(bases, idx, count, partials);   }
