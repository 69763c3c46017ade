// Scalar math primitives for the kernels.
#pragma once

#include "ops/common/cpu_cuda_shim.h"

#ifdef NINFER_CPU_KERNELS
#include <cmath>
#endif

namespace ninfer::common {

__host__ __device__ constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

__device__ __forceinline__ float rsqrt(float v) {
#ifdef NINFER_CPU_KERNELS
    return 1.0f / std::sqrt(v);
#else
    return rsqrtf(v);
#endif
}

__device__ __forceinline__ float silu(float g) {
#ifdef NINFER_CPU_KERNELS
    return g / (1.0f + std::exp(-g));
#else
    return g / (1.0f + expf(-g));
#endif
}

}  // namespace ninfer::common
