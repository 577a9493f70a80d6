// Short-Weierstrass (a = 0) points in XYZZ coordinates: x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2.
#pragma once
#include "../ff/called.cuh"

namespace zkf {

// Same bytes as blst_p1_affine / blst_p2_affine; blst encodes infinity as x = y = 0,
// which is not on the curve (y^2 = x^3 + 4), so it is an unambiguous sentinel.
template<class F> struct affine {
    F x, y;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

// XYZZ needs no inversion and its mixed add is 8M + 2S; formulas from the EFD
// (madd-2008-s, add-2008-s, dbl-2008-s, mdbl-2008-s) with the special cases made explicit
// because buckets routinely meet equal or opposite points (repeated bases).
template<class F> struct xyzz {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
    __device__ __forceinline__ void inf() { X.zero(); Y.zero(); ZZ.zero(); ZZZ.zero(); }
    __device__ __forceinline__ void neg() { Y = -Y; }

    __device__ __forceinline__ void set(const affine<F>& p)
    {
        if (p.is_inf()) { inf(); return; }
        X = p.x; Y = p.y; ZZ = F::one(); ZZZ = F::one();
    }

    // COMPACT (here and below): the products called out of line (ff/called.cuh), for loops
    // whose inlined products would be tens of KB of code.
    template<bool COMPACT = false>
    __device__ void dbl()
    {
        if (is_inf()) return;
        F U = Y + Y;
        F V = square_of<COMPACT>(U);
        F W = mul_of<COMPACT>(U, V);
        F S = mul_of<COMPACT>(X, V);
        F X2 = square_of<COMPACT>(X);
        F M = X2 + X2 + X2;
        X = square_of<COMPACT>(M) - (S + S);
        Y = mul_of<COMPACT>(M, S - X) - mul_of<COMPACT>(W, Y);
        ZZ = mul_of<COMPACT>(V, ZZ);
        ZZZ = mul_of<COMPACT>(W, ZZZ);
    }

    template<bool COMPACT = false>
    __device__ void dbl_affine(const affine<F>& p)
    {
        F U = p.y + p.y;
        F V = square_of<COMPACT>(U);
        F W = mul_of<COMPACT>(U, V);
        F S = mul_of<COMPACT>(p.x, V);
        F X2 = square_of<COMPACT>(p.x);
        F M = X2 + X2 + X2;
        X = square_of<COMPACT>(M) - (S + S);
        Y = mul_of<COMPACT>(M, S - X) - mul_of<COMPACT>(W, p.y);
        ZZ = V;
        ZZZ = W;
    }

    // this += p (affine); p may be infinity, equal to this, or its negation.
    template<bool COMPACT = false>
    __device__ void add_affine(const affine<F>& p, bool negate = false)
    {
        if (p.is_inf()) return;
        F py = p.y;
        if (negate) py = -py;
        if (is_inf()) { X = p.x; Y = py; ZZ = F::one(); ZZZ = F::one(); return; }
        F U2 = mul_of<COMPACT>(p.x, ZZ);
        F S2 = mul_of<COMPACT>(py, ZZZ);
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero()) { affine<F> q{p.x, py}; dbl_affine<COMPACT>(q); }
            else inf();
            return;
        }
        F PP = square_of<COMPACT>(P);
        F PPP = mul_of<COMPACT>(P, PP);
        F Q = mul_of<COMPACT>(X, PP);
        X = square_of<COMPACT>(R) - PPP - (Q + Q);
        Y = mul_of<COMPACT>(R, Q - X) - mul_of<COMPACT>(Y, PPP);
        ZZ = mul_of<COMPACT>(ZZ, PP);
        ZZZ = mul_of<COMPACT>(ZZZ, PPP);
    }

    // this += q (XYZZ), all special cases handled.
    template<bool COMPACT = false>
    __device__ void add(const xyzz& q)
    {
        if (q.is_inf()) return;
        if (is_inf()) { *this = q; return; }
        F U1 = mul_of<COMPACT>(X, q.ZZ);
        F U2 = mul_of<COMPACT>(q.X, ZZ);
        F S1 = mul_of<COMPACT>(Y, q.ZZZ);
        F S2 = mul_of<COMPACT>(q.Y, ZZZ);
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero()) dbl<COMPACT>();
            else inf();
            return;
        }
        F PP = square_of<COMPACT>(P);
        F PPP = mul_of<COMPACT>(P, PP);
        F Q = mul_of<COMPACT>(U1, PP);
        X = square_of<COMPACT>(R) - PPP - (Q + Q);
        Y = mul_of<COMPACT>(R, Q - X) - mul_of<COMPACT>(S1, PPP);
        ZZ = mul_of<COMPACT>(mul_of<COMPACT>(ZZ, q.ZZ), PP);
        ZZZ = mul_of<COMPACT>(mul_of<COMPACT>(ZZZ, q.ZZZ), PPP);
    }
};

using g1_affine = affine<fp_t>;
using g2_affine = affine<fp2>;
using g1_xyzz = xyzz<fp_t>;
using g2_xyzz = xyzz<fp2>;

} // namespace zkf
