// Points in the parameter files' encoding (uncompressed, big-endian, as bellperson writes
// them): G1 is x ‖ y, 48 bytes each; G2 is x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0. The top three bits of
// the first byte are flags: compressed (must be 0 here), infinity, sign (must be 0 here).
// Infinity is the infinity flag and all other bits zero.
//
// Words are u32 in memory order, so word j holds bytes 4j..4j+3: the big-endian image of a
// field element's limb 11 − j, byte-swapped.
#pragma once
#include "xyzz.cuh"

namespace zkf {

constexpr uint32_t FLAG_COMPRESSED = 0x80, FLAG_INFINITY = 0x40, FLAG_SIGN = 0x20;

__device__ __forceinline__ uint32_t bswap32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

// Canonical (non-Montgomery) limbs of a, as 12 big-endian words.
__device__ __forceinline__ void put_fp(uint32_t* out, fp_t a)
{
    a.from();
    #pragma unroll
    for (int j = 0; j < 12; j++) out[j] = bswap32(a[11 - j]);
}

// The modulus, least significant limb first: canonical encodings are below it.
__device__ __constant__ const uint32_t FP_P[12] = {
    0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
    0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea
};

// Reads 12 big-endian words into Montgomery form; false when the value is not below p.
__device__ __forceinline__ bool get_fp(fp_t& a, const uint32_t* in)
{
    #pragma unroll
    for (int j = 0; j < 12; j++) a[11 - j] = bswap32(in[j]);
    bool below = false, decided = false;
    #pragma unroll
    for (int i = 11; i >= 0; i--) {
        if (!decided && a[i] != FP_P[i]) { below = a[i] < FP_P[i]; decided = true; }
    }
    a.to();
    return below;
}

__device__ __forceinline__ void put_coords(uint32_t* out, const fp_t& x, const fp_t& y)
{   put_fp(out, x); put_fp(out + 12, y);   }

__device__ __forceinline__ void put_coords(uint32_t* out, const fp2& x, const fp2& y)
{   put_fp(out, x.c1); put_fp(out + 12, x.c0); put_fp(out + 24, y.c1); put_fp(out + 36, y.c0);   }

__device__ __forceinline__ bool get_coords(fp_t& x, fp_t& y, const uint32_t* in)
{   return get_fp(x, in) & get_fp(y, in + 12);   }

__device__ __forceinline__ bool get_coords(fp2& x, fp2& y, const uint32_t* in)
{   return get_fp(x.c1, in) & get_fp(x.c0, in + 12) & get_fp(y.c1, in + 24) & get_fp(y.c0, in + 36);   }

template<class F> struct encoding;
template<> struct encoding<fp_t> { static constexpr int WORDS = 24; };
template<> struct encoding<fp2>  { static constexpr int WORDS = 48; };

// The curve's b: 4 for G1, 4(1 + u) for G2, in Montgomery form.
__device__ __forceinline__ void curve_b(fp_t& b) { b = fp_t::one(); b = b + b; b = b + b; }
__device__ __forceinline__ void curve_b(fp2& b)  { fp_t four; curve_b(four); b = fp2(four, four); }

template<class F>
__device__ __forceinline__ void encode_affine(uint32_t* out, const F& x, const F& y, bool inf)
{
    constexpr int W = encoding<F>::WORDS;
    if (inf) {
        #pragma unroll
        for (int j = 0; j < W; j++) out[j] = 0;
        out[0] = FLAG_INFINITY;  // byte 0 is the low byte of word 0
        return;
    }
    put_coords(out, x, y);
}

// Why a point failed to decode, for the host's error message.
enum decode_error : uint32_t {
    DECODE_OK = 0, DECODE_FLAGS = 1, DECODE_NOT_CANONICAL = 2, DECODE_INFINITY = 3,
    DECODE_NOT_ON_CURVE = 4,
};

// Decodes one point into blst's affine layout (Montgomery; x = y = 0 for infinity).
template<class F>
__device__ __forceinline__ uint32_t decode_affine(affine<F>& p, const uint32_t* in)
{
    constexpr int W = encoding<F>::WORDS;
    uint32_t w[W];
    #pragma unroll
    for (int j = 0; j < W; j++) w[j] = in[j];
    const uint32_t flags = w[0] & 0xe0;
    w[0] &= ~0xe0u;
    if (flags & (FLAG_COMPRESSED | FLAG_SIGN)) return DECODE_FLAGS;
    if (flags & FLAG_INFINITY) {
        uint32_t any = 0;
        #pragma unroll
        for (int j = 0; j < W; j++) any |= w[j];
        p.x.zero(); p.y.zero();
        return any ? DECODE_FLAGS : DECODE_INFINITY;
    }
    if (!get_coords(p.x, p.y, w)) return DECODE_NOT_CANONICAL;
    F b; curve_b(b);
    F lhs = sqr_of(p.y), rhs = sqr_of(p.x) * p.x + b;
    F d = lhs - rhs;
    return d.is_zero() ? DECODE_OK : DECODE_NOT_ON_CURVE;
}

} // namespace zkf
