// Batch-affine bucket accumulation: the same chunks, sums and heads as `accumulate`
// (pippenger.cuh), but each thread walks M chunks side by side and adds one entry to each of
// them per step in affine coordinates, sharing one field inversion among the M additions
// (Montgomery's trick). An affine addition with its share of the inversion costs 6 products
// (prefix product, two products back out of the inverse, λ, λ², y3) against 10 for an XYZZ
// mixed addition; the price is the per-chunk state (x, y and the prefix product) in device
// memory instead of registers, about 0.5 KB of traffic per addition for G1.
// COMPACT: the field products called out of line (ff/called.cuh). Inlined, the loop is tens of
// KB of code and its warps waited on instruction fetch 15% of their cycles; called, G1 needs 112
// registers instead of 138 and its accumulation at 2^27 took 621 ms instead of 658 (docs/gpu.md
// step 7).
#pragma once
#include "pippenger.cuh"

namespace zkf {

template<class F>
__device__ __forceinline__ void store_affine_as_xyzz(xyzz<F>* out, const F& x, const F& y,
                                                     bool inf)
{
    xyzz<F> p;
    if (inf) {
        p.inf();
    } else {
        p.X = x; p.Y = y; p.ZZ = F::one(); p.ZZZ = F::one();
    }
    *out = p;
}

// Chunk c = j·T + t (slot j of thread t, T threads in the grid) covers the sorted entries
// [c·K, (c+1)·K); its state lives at index c of ax, ay (the affine sum of the current bucket
// piece), pre (the prefix product of this step's denominators), sb (the bucket) and se (this
// step's entry). Per slot, registers hold bits: inf (the piece is still empty), head (the
// piece continues a bucket begun before the chunk), add and dbl (this step's operation).
// Every thread runs all K steps, so the warp stays converged for the inversion. M ≤ 64.
template<bool COMPACT, class F>
__device__ void accumulate_affine(const affine<F>* bases, const uint32_t* offs,
                                  const uint32_t* idx, uint32_t nb, uint32_t K, uint32_t M,
                                  uint4* scratch, xyzz<F>* sums, xyzz<F>* heads)
{
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t t = global_tid();
    const uint64_t S = T * M;
    F* ax = reinterpret_cast<F*>(scratch);
    F* ay = ax + S;
    F* pre = ay + S;
    uint32_t* sb = reinterpret_cast<uint32_t*>(pre + S);
    uint32_t* se = sb + S;
    const uint64_t total = offs[nb];
    uint64_t inf = 0, head = 0;

    for (uint32_t k = 0; k < K; k++) {
        F r = F::one();
        uint64_t add = 0, dbl = 0;
        for (uint32_t j = 0; j < M; j++) {
            const uint64_t c = (uint64_t)j * T + t;
            const uint64_t pos = c * K + k;
            if (pos >= total) continue;
            const uint64_t bit = 1ull << j;
            uint32_t b;
            if (k == 0) {
                uint32_t lo = 0, hi = nb;          // the bucket holding entry pos
                while (hi - lo > 1) {
                    const uint32_t mid = (lo + hi) / 2;
                    if (offs[mid] <= pos) lo = mid; else hi = mid;
                }
                b = lo;
                head = offs[b] < pos ? head | bit : head & ~bit;
                inf |= bit;
                sb[c] = b;
            } else {
                b = sb[c];
                if (pos == offs[b + 1]) {           // the piece ends: write it out
                    store_affine_as_xyzz((head & bit) ? heads + c : sums + b, ax[c], ay[c],
                                         inf & bit);
                    head &= ~bit;
                    inf |= bit;
                    do { b++; } while (offs[b + 1] <= pos);
                    sb[c] = b;
                }
            }
            const uint32_t e = idx[pos];
            const affine<F>* p = bases + (e & 0x7fffffffu);
            const F px = p->x;
            if (px.is_zero() && p->y.is_zero()) continue;   // the identity adds nothing
            if (inf & bit) {                                 // first point of the piece
                F py = p->y;
                if (e >> 31) py = -py;
                ax[c] = px;
                ay[c] = py;
                inf &= ~bit;
                continue;
            }
            F d = px - ax[c];
            if (d.is_zero()) {                               // equal or opposite points
                F py = p->y;
                if (e >> 31) py = -py;
                const F y = ay[c];
                if ((y - py).is_zero()) {
                    d = y + y;
                    dbl |= bit;
                } else {
                    inf |= bit;
                    continue;
                }
            } else {
                add |= bit;
            }
            se[c] = e;
            pre[c] = r;
            r = mul_of<COMPACT>(r, d);
        }
        F rinv = reciprocal_of<COMPACT>(r);
        for (int j = (int)M - 1; j >= 0; j--) {
            const uint64_t bit = 1ull << j;
            if (!((add | dbl) & bit)) continue;
            const uint64_t c = (uint64_t)j * T + t;
            const F x1 = ax[c], y1 = ay[c];
            F x2, d, num;
            if (dbl & bit) {
                x2 = x1;
                d = y1 + y1;
                const F xx = square_of<COMPACT>(x1);
                num = xx + xx + xx;
            } else {
                const uint32_t e = se[c];
                const affine<F>* p = bases + (e & 0x7fffffffu);
                x2 = p->x;
                F y2 = p->y;
                if (e >> 31) y2 = -y2;
                d = x2 - x1;
                num = y2 - y1;
            }
            const F invd = mul_of<COMPACT>(rinv, pre[c]);
            rinv = mul_of<COMPACT>(rinv, d);
            const F l = mul_of<COMPACT>(num, invd);
            const F x3 = square_of<COMPACT>(l) - x1 - x2;
            const F dx = x1 - x3;
            ay[c] = mul_of<COMPACT>(l, dx) - y1;
            ax[c] = x3;
        }
    }
    for (uint32_t j = 0; j < M; j++) {
        const uint64_t c = (uint64_t)j * T + t;
        if (c * K >= total) continue;
        const uint64_t bit = 1ull << j;
        store_affine_as_xyzz((head & bit) ? heads + c : sums + sb[c], ax[c], ay[c], inf & bit);
    }
}

} // namespace zkf

#define ZKF_MSM_AFFINE_ENTRY_POINT(G, F, COMPACT)                                               \
extern "C" __global__ void __launch_bounds__(128)                                               \
msm_accumulate_affine_##G(const zkf::affine<F>* bases, const uint32_t* offs,                    \
                          const uint32_t* idx, uint32_t nb, uint32_t K, uint32_t M,             \
                          uint4* scratch, zkf::xyzz<F>* sums, zkf::xyzz<F>* heads)              \
{   zkf::accumulate_affine<COMPACT, F>(bases, offs, idx, nb, K, M, scratch, sums, heads);   }
