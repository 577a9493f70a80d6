// The two BLS12-381 fields as the kernels use them: sppark's Montgomery fp_t (the base field,
// point coordinates) and fr_t (the scalar field: NTT elements, MSM scalars, products).
#pragma once
#include <ff/bls12-381.hpp>

namespace zkf {

using bls12_381::fp_t;
using bls12_381::fr_t;

} // namespace zkf
