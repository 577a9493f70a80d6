// Key generation's bulk work: out[i] = encode(s_i · G) for a fixed base G and many scalars.
//
// Window tables: table[w·(2^W − 1) + d − 1] = d·2^(W·w)·G for every window w and digit d ≥ 1,
// made on the host. A product is then one mixed addition per non-zero digit (32 for W = 8)
// and no doubling. W = 8 keeps the G1 table at 32·255·96 B = 0.8 MB (1.6 MB for G2), inside
// L2, where every thread's random table reads hit; W = 16 would halve the additions but
// make the table 100 MB and every read a DRAM miss.
//
// Each thread then normalises its own point with one Fermat inversion (x = X/ZZ, y = Y/ZZZ
// from 1/(ZZ·ZZZ)) and writes the file encoding, so the host only copies bytes to disk.
#pragma once
#include "../ec/encode.cuh"
#include "../ff/inverse.cuh"
#include "../util.cuh"

namespace zkf {

constexpr uint32_t KEYGEN_WINDOW = 8;
constexpr uint32_t KEYGEN_WINDOWS = (255 + KEYGEN_WINDOW - 1) / KEYGEN_WINDOW;
constexpr uint32_t KEYGEN_DIGITS = (1u << KEYGEN_WINDOW) - 1;
static_assert(32 % KEYGEN_WINDOW == 0, "a digit must not straddle two 32-bit limbs");

template<class F>
__device__ __forceinline__ void fixed_base_mul(uint32_t* out, const affine<F>* table, fr_t s)
{
    s.from();
    xyzz<F> acc;
    acc.inf();
    #pragma unroll 1
    for (uint32_t w = 0; w < KEYGEN_WINDOWS; w++) {
        const uint32_t bit = w * KEYGEN_WINDOW;
        const uint32_t digit = (s[bit / 32] >> (bit % 32)) & KEYGEN_DIGITS;
        if (digit) acc.add_affine(table[w * KEYGEN_DIGITS + digit - 1]);
    }
    const bool inf = acc.is_inf();
    F t = acc.ZZ * acc.ZZZ;
    F inv = inverse_of(t);
    F x = acc.X * acc.ZZZ * inv;   // X / ZZ
    F y = acc.Y * acc.ZZ * inv;    // Y / ZZZ
    encode_affine(out, x, y, inf);
}

} // namespace zkf

#define ZKF_KEYGEN_ENTRY_POINT(name, F)                                                       \
    extern "C" __global__ void keygen_fixed_base_##name(uint32_t* out,                        \
                                                        const zkf::affine<F>* table,          \
                                                        const zkf::fr_t* scalars, uint64_t n) \
    {                                                                                         \
        const uint64_t i = zkf::global_tid();                                                 \
        if (i >= n) return;                                                                   \
        zkf::fixed_base_mul<F>(out + i * zkf::encoding<F>::WORDS, table, scalars[i]);         \
    }
