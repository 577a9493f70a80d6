// Groth16's quotient h = (A·B − C)/Z on the coset, the kernels that surround its NTTs: the
// pointwise combine and the last pass (coset shift undone, C subtracted, divided by Z(g)).
// The transforms themselves are ntt/'s.
#pragma once
#include "../ntt/ntt.cuh"

// a·b on the coset; with c, (a·b − c)·zinv (the natural-order chain's combine).
extern "C" __global__ void h_combine(fr_t* a, const fr_t* b, const fr_t* c, uint64_t n,
                                     const fr_t* zinv)
{
    const uint64_t i = global_tid();
    if (i >= n) return;
    fr_t t = a[i] * b[i];
    if (c) t = (t - c[i]) * *zinv;
    a[i] = t;
}

// The h step's last kernel, an in-place bit reversal like ntt_bitrev_scale: d holds
// n·iNTT(a·b) and c holds n·C's coefficients, both bit-reversed (unscaled inverse DIF passes);
// h_j = (g^-j·d_j − c_j)·cst with cst = (g^m − 1)^-1·n^-1, i.e. (coset-iNTT(a·b) − C)/Z(g).
extern "C" __global__ void h_finish(fr_t* d, const fr_t* c, uint32_t L, const fr_t* cst,
                                    const fr_t* tlo, const fr_t* thi, uint32_t lb)
{
    const uint64_t i = global_tid();
    if (i >> L) return;
    const uint64_t r = L ? (__brevll(i) >> (64 - L)) : 0;
    if (r < i) return;
    const fr_t s = *cst;
    const fr_t a = (d[i] * pow_tab(tlo, thi, lb, r) - c[i]) * s;
    if (r != i) d[i] = (d[r] * pow_tab(tlo, thi, lb, i) - c[r]) * s;
    d[r] = a;
}
