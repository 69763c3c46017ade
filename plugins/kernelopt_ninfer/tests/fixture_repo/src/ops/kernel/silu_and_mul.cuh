// SiLU-and-mul kernel (upstream's file name; the op is silu_mul): one block per row.
#pragma once

#include <cstddef>

#include "ops/common/cpu_cuda_shim.h"
#include "ops/common/math.cuh"
#include "ops/common/memory.cuh"

namespace ninfer::kernel {

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    silu_and_mul_kernel(const float* __restrict__ gate_up, float* __restrict__ out, int cols) {
    static_assert(BLOCK >= 1 && BLOCK <= 1024, "BLOCK must be in [1, 1024]");
    const std::size_t row = blockIdx.x;
    const float* gate = gate_up + row * 2 * static_cast<std::size_t>(cols);
    const float* up = gate + cols;
    float* o = out + row * static_cast<std::size_t>(cols);
    NINFER_BLOCK_THREADS(tid, BLOCK) {
        for (int c = tid; c < cols; c += BLOCK)
            o[c] = common::silu(common::load_ro(gate + c)) * common::load_ro(up + c);
    }
}

}  // namespace ninfer::kernel
