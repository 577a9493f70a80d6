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

// Elements in shared memory as two planes of 16-byte halves (plane h holds words 4h..4h+3 of
// every element). A warp's 16-byte accesses go eight threads at a time, so eight consecutive
// positions fill the 32 banks, where whole 32-byte elements put two threads on each bank (and
// four or eight at the strides of the low rounds). The positions are swizzled (`data_slot`,
// `root_slot`) so that the strides the rounds and the twiddle lookups use spread too.
struct SharedPlanes {
    uint4* s;
    uint32_t n;  // positions per plane

    __device__ __forceinline__ fr_t get(uint32_t p) const
    {
        const uint4 a = s[p], b = s[n + p];
        fr_t x;
        x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
        x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
        return x;
    }
    __device__ __forceinline__ void put(uint32_t p, const fr_t& x) const
    {
        s[p] = make_uint4(x[0], x[1], x[2], x[3]);
        s[n + p] = make_uint4(x[4], x[5], x[6], x[7]);
    }
};

// A round's thread g touches l = base | i << s_lo; at s_lo = 0, 1, 2 the eight threads of an
// access differ in bits 3 and 4 as well as the low ones: folding those onto bits 1 and 2 keeps
// their positions distinct mod 8 (2-way at worst, at s_lo = 0). A bijection: only bits 1 and 2
// change, by a function of bits 3 and 4.
__device__ __forceinline__ uint32_t data_slot(uint32_t l) { return l ^ (((l >> 3) & 3) << 1); }

// Stage s looks up twiddle j << (k - 1 - s): eight threads with consecutive j hit positions a
// power of two apart, all on the same banks from a stride of 8 up. Folding bits 3..5 and 6..8
// onto bits 0..2 spreads every such stride over eight distinct values mod 8.
__device__ __forceinline__ uint32_t root_slot(uint32_t q) { return q ^ ((q >> 3) & 7) ^ ((q >> 6) & 7); }

} // namespace zkf

using namespace zkf;

// R radix-2 stages in registers on x[i] = element base | (i << s_lo) of a block's 2^k, i < 2^R:
// DIF stages s_lo+R-1 down to s_lo, or DIT stages s_lo up to s_lo+R-1. Stage s pairs elements
// l0 and l0 + 2^s; its twiddle is w_{2^k}^j for j = l0's bits below s (roots[j << (k-1-s)], the
// block's copy in shared memory).
template<int R, bool DIT>
__device__ __forceinline__ void stages_in_registers(fr_t (&x)[1 << R], uint32_t base,
                                                    uint32_t s_lo, const SharedPlanes& roots,
                                                    uint32_t k)
{
    #pragma unroll
    for (int n = 0; n < R; n++) {
        const int st = DIT ? n : R - 1 - n;
        const uint32_t s = s_lo + st;
        #pragma unroll
        for (int i = 0; i < (1 << R); i++) {
            if (i & (1 << st)) continue;
            const int i1 = i | (1 << st);
            const uint32_t j = (base | ((uint32_t)i << s_lo)) & ((1u << s) - 1);
            if (DIT) {
                fr_t y = x[i1];
                if (j) y = y * roots.get(root_slot(j << (k - 1 - s)));
                x[i1] = x[i] - y;
                x[i] = x[i] + y;
            } else {
                const fr_t sum = x[i] + x[i1];
                fr_t dif = x[i] - x[i1];
                if (j) dif = dif * roots.get(root_slot(j << (k - 1 - s)));
                x[i] = sum;
                x[i1] = dif;
            }
        }
    }
}

// Where a pass's block lives in memory and what its first load and last store multiply by.
struct PassBlock {
    fr_t* d;
    uint32_t L, t_lo, k;
    uint64_t base;  // global index of the block's element 0
    uint64_t lowp;  // the block's position within the lower index bits
    const fr_t *tlo, *thi; uint32_t lb;    // cross twiddles
    const fr_t *glo, *ghi; uint32_t glb;   // coset twist of the first pass (glo null: none)

    __device__ __forceinline__ uint64_t at(uint32_t l) const { return base | ((uint64_t)l << t_lo); }
    // The four-step twist w_n^(lowp · bitrev_k(l) · 2^(L - t_lo - k)) of element l.
    __device__ __forceinline__ fr_t cross(const fr_t& x, uint32_t l) const
    {
        const uint64_t e = (lowp * (__brev(l) >> (32 - k))) << (L - t_lo - k);
        if (e == 0) return x;
        return x * pow_tab(tlo, thi, lb, e);
    }
};

// One round of R stages: each thread takes whole groups of 2^R elements (the elements that
// differ in bits s_lo .. s_lo+R-1), from global memory in the first round and to it in the
// last, through shared memory in between. DIF loads apply the coset shift g^i; DIF stores the
// cross twiddle; DIT loads apply both (the twist at the bit-reversed position) and store plainly.
template<int R, bool DIT>
__device__ __forceinline__ void pass_round(const PassBlock& pb, const SharedPlanes& sh,
                                           uint32_t s_lo, bool first, bool last,
                                           const SharedPlanes& roots)
{
    const uint32_t groups = 1u << (pb.k - R);
    for (uint32_t g = threadIdx.x; g < groups; g += blockDim.x) {
        const uint32_t base = (g & ((1u << s_lo) - 1)) | ((g >> s_lo) << (s_lo + R));
        fr_t x[1 << R];
        #pragma unroll
        for (int i = 0; i < (1 << R); i++) {
            const uint32_t l = base | ((uint32_t)i << s_lo);
            if (!first) { x[i] = sh.get(data_slot(l)); continue; }
            const uint64_t gi = pb.at(l);
            x[i] = pb.d[gi];
            if (DIT) {
                if (pb.glo) x[i] = x[i] * pow_tab(pb.glo, pb.ghi, pb.glb, __brevll(gi) >> (64 - pb.L));
                x[i] = pb.cross(x[i], l);
            } else if (pb.glo && gi) {
                x[i] = x[i] * pow_tab(pb.glo, pb.ghi, pb.glb, gi);
            }
        }
        stages_in_registers<R, DIT>(x, base, s_lo, roots, pb.k);
        #pragma unroll
        for (int i = 0; i < (1 << R); i++) {
            const uint32_t l = base | ((uint32_t)i << s_lo);
            if (!last) sh.put(data_slot(l), x[i]);
            else pb.d[pb.at(l)] = DIT ? x[i] : pb.cross(x[i], l);
        }
    }
}

// Stages per round: each round is one trip through shared memory (the radix-2 version made one
// per stage, and the profile showed the passes bound by shared-memory throughput at 93-96%
// with DRAM at 9%). Three stages (8 elements a thread) took 128 registers and 25% occupancy
// and ran no faster: latency-bound instead (docs/gpu.md, step 4).
#define ZKF_NTT_RADIX_BITS 2
static_assert(ZKF_NTT_RADIX_BITS == 2, "ntt_pass dispatches rounds of one or two stages");

// The rounds of one pass over index bits t_lo .. t_lo+k-1: DIF top stage first, DIT bottom first.
template<bool DIT>
__device__ __forceinline__ void ntt_pass(fr_t* d, uint32_t L, uint32_t t_lo, uint32_t k,
                                         const fr_t* roots, uint32_t K, const fr_t* tlo,
                                         const fr_t* thi, uint32_t lb, const fr_t* glo,
                                         const fr_t* ghi, uint32_t glb)
{
    // The block's 2^k elements, then its 2^(k-1) in-block twiddles (w_{2^k}^m = roots[m <<
    // (K - k)]): read from shared memory, a stage's lookups no longer gather 32-byte lines
    // through L1 (one a butterfly).
    extern __shared__ uint4 shraw[];
    const SharedPlanes sh{shraw, 1u << k};
    const SharedPlanes tw{shraw + (2u << k), 1u << (k - 1)};
    for (uint32_t m = threadIdx.x; m < tw.n; m += blockDim.x)
        tw.put(root_slot(m), roots[m << (K - k)]);
    __syncthreads();
    const uint64_t b = blockIdx.x;
    const uint64_t lowp = b & ((1ull << t_lo) - 1);
    const PassBlock pb{d, L, t_lo, k, ((b >> t_lo) << (t_lo + k)) | lowp, lowp,
                       tlo, thi, lb, glo, ghi, glb};
    uint32_t done = 0;
    while (done < k) {
        const uint32_t R = min(k - done, (uint32_t)ZKF_NTT_RADIX_BITS);
        const uint32_t s_lo = DIT ? done : k - done - R;
        const bool first = done == 0, last = done + R == k;
        if (R == 2) pass_round<2, DIT>(pb, sh, s_lo, first, last, tw);
        else pass_round<1, DIT>(pb, sh, s_lo, first, last, tw);
        done += R;
        if (!last) __syncthreads();
    }
}

// One pass of a decimation-in-frequency NTT, split Cooley-Tukey style: the 2^k elements that
// differ in index bits t_lo .. t_lo+k-1 (one block, in shared memory) get a plain 2^k-point DIF
// whose twiddles come from one small table, then each is multiplied once by the cross twiddle
// w_n^(lowp · bitrev_k(l) · 2^(L - t_lo - k)). That costs one product per element per pass
// instead of one extra table product per butterfly, and 2^27 needs 3 passes over memory.
// Elements are 32 bytes, one full sector, so the strided loads waste no bandwidth.
// The first pass can also apply the coset shift x[i] *= g^i as it loads (glo non-null).
// Launched with 2^(k - min(k, ZKF_NTT_RADIX_BITS)) threads a block and 48·2^k bytes of shared
// memory (the elements, then the pass's twiddles).
extern "C" __global__ void ntt_dif_pass(fr_t* d, uint32_t L, uint32_t t_lo, uint32_t k,
                                        const fr_t* __restrict__ roots, uint32_t K,
                                        const fr_t* tlo, const fr_t* thi, uint32_t lb,
                                        const fr_t* glo, const fr_t* ghi, uint32_t glb)
{   ntt_pass<false>(d, L, t_lo, k, roots, K, tlo, thi, lb, glo, ghi, glb);   }

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
{   ntt_pass<true>(d, L, t_lo, k, roots, K, tlo, thi, lb, glo, ghi, glb);   }

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
