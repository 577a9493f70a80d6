// Points read from parameter files, decoded on the device: the file encoding (ec/encode.cuh)
// into blst's affine layout, the flags, the field bounds and the curve equation checked.
#pragma once
#include "encode.cuh"
#include "../util.cuh"

#define ZKF_DECODE_ENTRY_POINT(name, F)                                                       \
    /* Decodes n file-encoded points into blst affine layout; the first bad one (lowest    */ \
    /* index) is reported in bad[0] = index, bad[1] = reason.                               */ \
    extern "C" __global__ void decode_points_##name(zkf::affine<F>* out, const uint32_t* in,  \
                                                    uint64_t n,                               \
                                                    unsigned long long* bad)                  \
    {                                                                                         \
        const uint64_t i = zkf::global_tid();                                                 \
        if (i >= n) return;                                                                   \
        zkf::affine<F> p;                                                                     \
        const uint32_t why = zkf::decode_affine<F>(p, in + i * zkf::encoding<F>::WORDS);      \
        out[i] = p;                                                                           \
        if (why != zkf::DECODE_OK)                                                            \
            atomicMin(bad, ((unsigned long long)i << 8) | why);                               \
    }
