// Helpers every kernel family shares.
#pragma once
#include <cstdint>

namespace zkf {

__device__ __forceinline__ uint64_t global_tid()
{   return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;   }

} // namespace zkf
