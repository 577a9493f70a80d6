// Density compaction on the device: the scalars a query touches are the assignment entries
// whose bit is set in the density bitmap, in order. Done here so the assignment crosses PCIe
// once instead of once per query.
#pragma once
#include "../ff/fields.cuh"
#include "../util.cuh"

// counts[w] = set bits of words[w].
extern "C" __global__ void density_popcount(const uint64_t* words, uint32_t nwords,
                                            uint32_t* counts)
{
    const uint64_t w = global_tid();
    if (w < nwords) counts[w] = __popcll(words[w]);
}

// out[offs[w] + j] = in[64w + b_j] for the j-th set bit b_j of words[w]; offs is the exclusive
// prefix sum of the popcounts. Indices at or past n (padding bits) are never set.
extern "C" __global__ void density_gather(const fr_t* in, uint64_t n, const uint64_t* words,
                                          const uint32_t* offs, uint32_t nwords, fr_t* out)
{
    const uint64_t w = global_tid();
    if (w >= nwords) return;
    uint64_t bits = words[w];
    uint32_t o = offs[w];
    while (bits) {
        const uint64_t i = w * 64 + (__ffsll((long long)bits) - 1);
        if (i < n) out[o++] = in[i];
        bits &= bits - 1;
    }
}
