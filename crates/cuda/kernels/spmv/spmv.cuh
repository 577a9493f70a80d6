// The constraint evaluations a = A·z, b = B·z, c = C·z from the recorded matrices (CSR, see
// zkforge-groth16's r1cs module) and the assignment z = inputs ‖ aux, so only the assignment
// crosses PCIe and a, b, c land where the h step reads them.
//
// One thread per row: Filecoin's rows are short (A 2.4, B 1.0, C 2.2 entries on average for a
// 32 GiB PoRep partition) and neighbouring rows' entries are neighbours in memory, so a warp's
// loads stay within a few sectors. Coefficient index 0 is 1 and 1 is −1: those terms cost an
// addition. Rows past the matrix (the domain's padding) are zero.
#pragma once
#include "../ff/fp2.cuh"
#include "../util.cuh"

extern "C" __global__ void spmv_csr(zkf::fr_t* out, uint64_t padded_rows,
                                    const uint32_t* __restrict__ row_starts,
                                    const uint2* __restrict__ entries, uint64_t rows,
                                    const zkf::fr_t* __restrict__ coefficients,
                                    const zkf::fr_t* __restrict__ inputs, uint32_t n_inputs,
                                    const zkf::fr_t* __restrict__ aux)
{
    using zkf::fr_t;
    const uint64_t r = zkf::global_tid();
    if (r >= padded_rows) return;
    fr_t acc;
    acc.zero();
    if (r < rows) {
        const uint32_t end = row_starts[r + 1];
        for (uint32_t e = row_starts[r]; e < end; e++) {
            const uint2 en = entries[e];
            const fr_t v = en.x < n_inputs ? inputs[en.x] : aux[en.x - n_inputs];
            if (en.y == 0) acc = acc + v;
            else if (en.y == 1) acc = acc - v;
            else acc = acc + v * coefficients[en.y];
        }
    }
    out[r] = acc;
}
