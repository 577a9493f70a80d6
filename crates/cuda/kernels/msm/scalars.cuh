// Scalar-side MSM kernels: Montgomery conversion, 0/1 classification, and the counting sort
// of (window, digit) buckets. Scalars are canonical little-endian u32 words after fr_from_mont.
#pragma once
#include "../ntt/ntt.cuh"

namespace zkf {

__device__ __forceinline__ bool scalar_le_one(const uint32_t* s)
{
    const uint4 a = reinterpret_cast<const uint4*>(s)[0];
    const uint4 b = reinterpret_cast<const uint4*>(s)[1];
    return ((a.x & ~1u) | a.y | a.z | a.w | b.x | b.y | b.z | b.w) == 0;
}

__device__ __forceinline__ uint32_t scalar_digit(const uint32_t* s, uint32_t bit, uint32_t c)
{
    const uint32_t w = bit >> 5, o = bit & 31;
    uint64_t v = s[w];
    if (w < 7) v |= (uint64_t)s[w + 1] << 32;
    return (uint32_t)(v >> o) & ((1u << c) - 1);
}

} // namespace zkf

// Out of place so that scalars resident on the device stay in Montgomery form for reuse.
extern "C" __global__ void fr_from_mont(const fr_t* in, fr_t* out, uint64_t n)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    fr_t v = in[i];
    v.from();
    out[i] = v;
}

// cnt[0] += scalars > 1 (the Pippenger tail), cnt[1] += scalars == 1.
extern "C" __global__ void msm_classify(const uint32_t* sc, uint64_t n, uint32_t* cnt)
{
    const uint64_t i = global_tid();
    bool tail = false, one = false;
    if (i < n) {
        const uint32_t* s = sc + 8 * i;
        bool le1 = scalar_le_one(s);
        tail = !le1;
        one = le1 && s[0] == 1;
    }
    const int nt = __syncthreads_count(tail);
    const int no = __syncthreads_count(one);
    if (threadIdx.x == 0) {
        if (nt) atomicAdd(&cnt[0], nt);
        if (no) atomicAdd(&cnt[1], no);
    }
}

// Bucket sizes for windows w0 .. w0+wb-1; bucket id = (w - w0) << c | digit. Scalars 0 and 1
// are left out: zero contributes nothing and ones are summed directly.
extern "C" __global__ void msm_hist(const uint32_t* sc, uint64_t n, uint32_t c, uint32_t w0,
                                    uint32_t wb, uint32_t* counts)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    const uint32_t* s = sc + 8 * i;
    if (scalar_le_one(s)) return;
    for (uint32_t w = 0; w < wb; w++) {
        const uint32_t bit = (w0 + w) * c;
        if (bit >= 256) break;
        const uint32_t d = scalar_digit(s, bit, c);
        if (d) atomicAdd(&counts[(w << c) | d], 1u);
    }
}

extern "C" __global__ void msm_scatter(const uint32_t* sc, uint64_t n, uint32_t c, uint32_t w0,
                                       uint32_t wb, uint32_t* cursor, uint32_t* idx)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    const uint32_t* s = sc + 8 * i;
    if (scalar_le_one(s)) return;
    for (uint32_t w = 0; w < wb; w++) {
        const uint32_t bit = (w0 + w) * c;
        if (bit >= 256) break;
        const uint32_t d = scalar_digit(s, bit, c);
        if (d) idx[atomicAdd(&cursor[(w << c) | d], 1u)] = (uint32_t)i;
    }
}

// Fullest bucket of the batch, to size the per-thread task cap.
extern "C" __global__ void msm_max_count(const uint32_t* offs, uint32_t nb, uint32_t* out)
{
    const uint64_t b = global_tid();
    if (b >= nb) return;
    const uint32_t c = offs[b + 1] - offs[b];
    if (c > 256) atomicMax(out, c);
}

// Tasks per bucket: ceil(count / cap).
extern "C" __global__ void msm_task_counts(const uint32_t* offs, uint32_t nb, uint32_t cap,
                                           uint32_t* tcount)
{
    const uint64_t b = global_tid();
    if (b >= nb) return;
    tcount[b] = (offs[b + 1] - offs[b] + cap - 1) / cap;
}

// Exclusive prefix sum of nb counts into out[0..nb] with one block of 1024 threads; nb is at
// most a few million, so one block finishes in well under a millisecond.
extern "C" __global__ void scan_u32(const uint32_t* in, uint32_t* out, uint32_t nb)
{
    __shared__ uint32_t part[1024];
    const uint32_t tid = threadIdx.x;
    const uint32_t chunk = (nb + 1023) / 1024;
    const uint32_t lo = min(nb, tid * chunk), hi = min(nb, lo + chunk);
    uint32_t sum = 0;
    for (uint32_t k = lo; k < hi; k++) sum += in[k];
    part[tid] = sum;
    __syncthreads();
    for (uint32_t off = 1; off < 1024; off <<= 1) {
        uint32_t v = tid >= off ? part[tid - off] : 0;
        __syncthreads();
        part[tid] += v;
        __syncthreads();
    }
    uint32_t run = part[tid] - sum;
    for (uint32_t k = lo; k < hi; k++) { out[k] = run; run += in[k]; }
    if (tid == 1023) out[nb] = part[1023];
}
