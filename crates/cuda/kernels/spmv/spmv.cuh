// The constraint evaluations a = A·z, b = B·z (and c = C·z, or c = a∘b) from the recorded
// matrices (CSR, see zkforge-groth16's r1cs module) and the assignment z = inputs ‖ aux, so only
// the assignment crosses PCIe and a, b, c land where the h step reads them.
//
// Rows are short on average (A 2.4, B 1.0, C 2.2 entries for a PoRep partition) but not all
// of them: 0.45% of A's rows (SHA-256 word additions, bits packed into field elements) have
// ~200 entries, up to ~900, and hold 38% of its entries. With one thread per row a warp waits
// for its longest row, walking its entries one dependent load at a time, so rows longer than
// `long_len` are left to `spmv_csr_long`, a warp per row over a list made at upload; the rest
// stay one thread per row, where neighbouring rows' entries are neighbours in memory.
// Coefficient index 0 is 1 and 1 is −1: those terms cost an addition.
#pragma once
#include <ff/shfl.cuh>
#include "../ff/fp2.cuh"
#include "../util.cuh"

namespace zkf {

__device__ __forceinline__ fr_t spmv_term(uint2 en, const fr_t* __restrict__ coefficients,
                                          const fr_t* __restrict__ inputs, uint32_t n_inputs,
                                          const fr_t* __restrict__ aux, fr_t acc)
{
    const fr_t v = en.x < n_inputs ? inputs[en.x] : aux[en.x - n_inputs];
    if (en.y == 0) return acc + v;
    if (en.y == 1) return acc - v;
    return acc + v * coefficients[en.y];
}

} // namespace zkf

// One thread per row; rows past the matrix (the domain's padding) are zero, rows longer than
// `long_len` are skipped (spmv_csr_long writes them).
extern "C" __global__ void spmv_csr(zkf::fr_t* out, uint64_t padded_rows,
                                    const uint32_t* __restrict__ row_starts,
                                    const uint2* __restrict__ entries, uint64_t rows,
                                    const zkf::fr_t* __restrict__ coefficients,
                                    const zkf::fr_t* __restrict__ inputs, uint32_t n_inputs,
                                    const zkf::fr_t* __restrict__ aux, uint32_t long_len)
{
    using zkf::fr_t;
    const uint64_t r = zkf::global_tid();
    if (r >= padded_rows) return;
    fr_t acc;
    acc.zero();
    if (r < rows) {
        const uint32_t start = row_starts[r], end = row_starts[r + 1];
        if (end - start > long_len) return;
        for (uint32_t e = start; e < end; e++)
            acc = zkf::spmv_term(entries[e], coefficients, inputs, n_inputs, aux, acc);
    }
    out[r] = acc;
}

// One warp per listed row: lane i takes the row's entries i, i + 32, ..., then the warp sums
// its 32 partial sums through butterfly shuffles and lane 0 writes the row.
extern "C" __global__ void spmv_csr_long(zkf::fr_t* out, const uint32_t* __restrict__ long_rows,
                                         uint64_t n_long, const uint32_t* __restrict__ row_starts,
                                         const uint2* __restrict__ entries,
                                         const zkf::fr_t* __restrict__ coefficients,
                                         const zkf::fr_t* __restrict__ inputs,
                                         uint32_t n_inputs, const zkf::fr_t* __restrict__ aux)
{
    using zkf::fr_t;
    const uint64_t warp = zkf::global_tid() / 32;
    const uint32_t lane = threadIdx.x % 32;
    if (warp >= n_long) return; // the whole warp: n_long is the same for all its lanes
    const uint32_t r = long_rows[warp];
    const uint32_t end = row_starts[r + 1];
    fr_t acc;
    acc.zero();
    for (uint32_t e = row_starts[r] + lane; e < end; e += 32)
        acc = zkf::spmv_term(entries[e], coefficients, inputs, n_inputs, aux, acc);
    for (unsigned mask = 16; mask > 0; mask /= 2)
        acc = acc + shfl_xor(acc, mask);
    if (lane == 0) out[r] = acc;
}

// c[i] = a[i]·b[i]: C·z for an assignment that satisfies every constraint (row i of a
// satisfied R1CS has ⟨A_i, z⟩·⟨B_i, z⟩ = ⟨C_i, z⟩, and padding rows are zero in all three).
extern "C" __global__ void fr_hadamard(zkf::fr_t* c, const zkf::fr_t* __restrict__ a,
                                       const zkf::fr_t* __restrict__ b, uint64_t n)
{
    const uint64_t i = zkf::global_tid();
    if (i >= n) return;
    c[i] = a[i] * b[i];
}
