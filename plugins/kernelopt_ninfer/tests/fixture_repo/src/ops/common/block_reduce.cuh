// Block-wide reductions over a __shared__ array with one partial per thread.
#pragma once

#include "ops/common/cpu_cuda_shim.h"
#include "ops/common/warp.cuh"

namespace ninfer::common {

// Call outside any thread loop, after each thread tid < BLOCK wrote partial[tid]; returns the
// sum to every thread. partial is clobbered: put a barrier before writing it again.
template <int BLOCK>
__device__ __forceinline__ float block_reduce_sum(float* partial) {
    static_assert(BLOCK >= 1 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
                  "block size must be a power of two in [1, 1024]");
#ifdef NINFER_CPU_KERNELS
    // Pairwise tree: independent adds, so the CPU can overlap and vectorize them.
    for (int stride = BLOCK / 2; stride > 0; stride /= 2)
        for (int i = 0; i < stride; ++i) partial[i] += partial[i + stride];
    return partial[0];
#else
    constexpr int kWarp = BLOCK < 32 ? BLOCK : 32;
    constexpr int kWarps = BLOCK / kWarp;
    const int tid = static_cast<int>(threadIdx.x);
    __syncthreads();
    float v = warp_reduce_sum<kWarp>(partial[tid]);
    if constexpr (kWarps > 1) {
        __syncthreads();  // everyone has read partial[] before it is reused
        if (tid % 32 == 0) partial[tid / 32] = v;
        __syncthreads();
        if (tid < 32) {
            v = warp_reduce_sum<32>(tid < kWarps ? partial[tid] : 0.0f);
            if (tid == 0) partial[0] = v;
        }
    } else {
        if (tid == 0) partial[0] = v;
    }
    __syncthreads();
    return partial[0];
#endif
}

}  // namespace ninfer::common
