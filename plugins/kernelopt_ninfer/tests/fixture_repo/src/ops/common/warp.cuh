// Warp primitives (CUDA path only; the CPU path has no warps).
#pragma once

#include "ops/common/cpu_cuda_shim.h"

#ifndef NINFER_CPU_KERNELS
namespace ninfer::common {

// Sum over the first WIDTH lanes of a warp (WIDTH a power of two <= 32); every lane gets it.
template <int WIDTH>
__device__ __forceinline__ float warp_reduce_sum(float v) {
    static_assert(WIDTH >= 1 && WIDTH <= 32 && (WIDTH & (WIDTH - 1)) == 0, "WIDTH: power of two <= 32");
    constexpr unsigned kMask = WIDTH == 32 ? 0xffffffffu : ((1u << WIDTH) - 1u);
    for (int offset = WIDTH / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kMask, v, offset, WIDTH);
    return v;
}

}  // namespace ninfer::common
#endif
