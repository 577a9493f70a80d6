// Scalar-side MSM kernels: Montgomery conversion, 0/1 classification, and the counting sort
// of (window, digit) buckets. Scalars are canonical little-endian u32 words after fr_from_mont.
#pragma once
#include "../ff/fields.cuh"
#include "../util.cuh"

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

// Window digits of one scalar, w0 <= w < min(w0 + wb, nwin), passed to emit(w - w0, slot, neg)
// when nonzero; slot = |digit| - 1, so bucket slot s weighs s + 1.
// Unsigned: the plain c-bit digits. Signed (sgn): a digit above 2^(c-1) becomes digit - 2^c and
// carries one into the next window, so |digit| <= 2^(c-1) and a window needs half the buckets;
// the carry of window w depends on every window below, so they are all recomputed (a few
// integer operations each). The host picks nwin = ceil(256/c) for signed digits: the top window
// then has at most c-1 bits, keeps its carry (never negated) and still fits 2^(c-1) slots.
template<class Emit>
__device__ __forceinline__ void window_digits(const uint32_t* s, uint32_t c, uint32_t w0,
                                              uint32_t wb, uint32_t nwin, bool sgn, Emit emit)
{
    const uint32_t half = 1u << (c - 1);
    const uint32_t wend = min(w0 + wb, nwin);
    uint32_t carry = 0;
    for (uint32_t w = sgn ? 0 : w0; w < wend; w++) {
        const uint32_t bit = w * c;
        uint32_t d = (bit < 256 ? scalar_digit(s, bit, c) : 0) + carry;
        bool neg = false;
        carry = 0;
        if (sgn && d > half && w + 1 < nwin) {
            d = (1u << c) - d;
            neg = true;
            carry = 1;
        }
        if (w >= w0 && d) emit(w - w0, d - 1, neg);
    }
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


// The indices of the scalars equal to 1, in no particular order (a sum does not care): one
// atomic per warp for its place in the list.
extern "C" __global__ void msm_list_ones(const uint32_t* sc, uint64_t n, uint32_t* idx,
                                         uint32_t* count)
{
    const uint64_t i = global_tid();
    bool one = false;
    if (i < n) {
        const uint32_t* s = sc + 8 * i;
        one = scalar_le_one(s) && s[0] == 1;
    }
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t mask = __ballot_sync(0xffffffffu, one);
    uint32_t base = 0;
    if (lane == 0 && mask) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (one) idx[base + __popc(mask & ((1u << lane) - 1))] = (uint32_t)i;
}

// Bucket sizes for windows w0 .. w0+wb-1; bucket id = (w - w0) << cb | slot, cb = c - sgn.
// Scalars 0 and 1 are left out: zero contributes nothing and ones are summed directly.
extern "C" __global__ void msm_hist(const uint32_t* sc, uint64_t n, uint32_t c, uint32_t w0,
                                    uint32_t wb, uint32_t nwin, uint32_t sgn, uint32_t* counts)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    const uint32_t* s = sc + 8 * i;
    if (scalar_le_one(s)) return;
    const uint32_t cb = c - (sgn ? 1 : 0);
    window_digits(s, c, w0, wb, nwin, sgn != 0, [&](uint32_t w, uint32_t slot, bool) {
        atomicAdd(&counts[(w << cb) | slot], 1u);
    });
}

// Point indices sorted by bucket; bit 31 of an entry marks a negative digit (negate the base).
extern "C" __global__ void msm_scatter(const uint32_t* sc, uint64_t n, uint32_t c, uint32_t w0,
                                       uint32_t wb, uint32_t nwin, uint32_t sgn, uint32_t* cursor,
                                       uint32_t* idx)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    const uint32_t* s = sc + 8 * i;
    if (scalar_le_one(s)) return;
    const uint32_t cb = c - (sgn ? 1 : 0);
    window_digits(s, c, w0, wb, nwin, sgn != 0, [&](uint32_t w, uint32_t slot, bool neg) {
        idx[atomicAdd(&cursor[(w << cb) | slot], 1u)] = (uint32_t)i | ((uint32_t)neg << 31);
    });
}

// Fullest bucket of the batch, to size the per-thread task cap.
extern "C" __global__ void msm_max_count(const uint32_t* offs, uint32_t nb, uint32_t* out)
{
    const uint64_t b = global_tid();
    if (b >= nb) return;
    const uint32_t c = offs[b + 1] - offs[b];
    if (c > 256) atomicMax(out, c);
}

// Exclusive prefix sum of nb counts into out[0..nb], in three launches: scan_tiles scans each
// tile of SCAN_TILE entries in one block (a thread per 8 consecutive entries) and writes the
// tile's total; scan_u32 scans the totals (one block); scan_add adds each tile's offset.
#define ZKF_SCAN_TILE 8192
extern "C" __global__ void scan_tiles(const uint32_t* in, uint32_t* out, uint32_t nb,
                                      uint32_t* tile_sums)
{
    __shared__ uint32_t part[1024];
    const uint32_t tid = threadIdx.x;
    const uint64_t lo = (uint64_t)blockIdx.x * ZKF_SCAN_TILE + tid * 8;
    uint32_t v[8], sum = 0;
    #pragma unroll
    for (int j = 0; j < 8; j++) {
        v[j] = lo + j < nb ? in[lo + j] : 0;
        sum += v[j];
    }
    part[tid] = sum;
    __syncthreads();
    for (uint32_t off = 1; off < 1024; off <<= 1) {
        uint32_t x = tid >= off ? part[tid - off] : 0;
        __syncthreads();
        part[tid] += x;
        __syncthreads();
    }
    uint32_t run = part[tid] - sum;
    #pragma unroll
    for (int j = 0; j < 8; j++) {
        if (lo + j < nb) out[lo + j] = run;
        run += v[j];
    }
    if (tid == 1023) tile_sums[blockIdx.x] = part[1023];
}

extern "C" __global__ void scan_add(uint32_t* out, uint32_t nb, const uint32_t* tile_offs)
{
    const uint64_t i = global_tid();
    if (i < nb) out[i] += tile_offs[i / ZKF_SCAN_TILE];
    if (i == 0) out[nb] = tile_offs[(nb + ZKF_SCAN_TILE - 1) / ZKF_SCAN_TILE];
}

// Exclusive prefix sum of nb counts into out[0..nb] with one block of 1024 threads; used for
// the tile totals above (nb at most a few thousand).
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
