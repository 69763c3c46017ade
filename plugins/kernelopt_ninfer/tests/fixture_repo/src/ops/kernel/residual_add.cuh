// Residual add kernel: each thread adds VEC contiguous elements; a block covers BLOCK * VEC.
#pragma once

#include <cstdint>

#include "ops/common/cpu_cuda_shim.h"

namespace ninfer::kernel {

// No __restrict__: y may alias x or residual (same index read, then written, by one thread).
template <int BLOCK, int VEC>
__global__ void __launch_bounds__(BLOCK)
    residual_add_kernel(const float* x, const float* residual, float* y, std::int64_t n) {
    static_assert(BLOCK >= 1 && BLOCK <= 1024, "BLOCK must be in [1, 1024]");
    static_assert(VEC >= 1, "VEC must be >= 1");
    const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * BLOCK * VEC;
    NINFER_BLOCK_THREADS(tid, BLOCK) {
        const std::int64_t i = base + static_cast<std::int64_t>(tid) * VEC;
        if (i + VEC <= n) {
            for (int v = 0; v < VEC; ++v) y[i + v] = x[i + v] + residual[i + v];
        } else {
            for (int v = 0; v < VEC && i + v < n; ++v) y[i + v] = x[i + v] + residual[i + v];
        }
    }
}

}  // namespace ninfer::kernel
