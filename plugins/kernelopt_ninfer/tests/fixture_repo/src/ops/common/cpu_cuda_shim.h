// The portability layer: kernels and launchers are written once and build either with nvcc
// (CUDA path) or as plain C++ (CPU path, NINFER_CPU_KERNELS).
//
// Execution model on the CPU: NINFER_LAUNCH runs the blocks of the grid one after another
// (setting blockIdx/blockDim/gridDim); inside a block, the threads are run serially by
// NINFER_BLOCK_THREADS(tid, n) loops, and NINFER_BARRIER() separates those loops. So a
// kernel is a sequence of thread loops separated by barriers; per-thread state that must
// survive a barrier lives in __shared__ arrays indexed by tid. On CUDA a thread loop runs its
// body once with tid = threadIdx.x and NINFER_BARRIER() is __syncthreads(). Never `break` or
// `continue` out of a thread loop, and keep barriers block-uniform.
//
//   NINFER_LAUNCH(kernel, grid, block, smem_bytes, stream, args...)
//   NINFER_BLOCK_THREADS(tid, n) { ... }
//   NINFER_BARRIER();
#pragma once

#include <cstddef>

#include "ninfer/device.h"
#include "ninfer/stream.h"

#ifdef NINFER_CPU_KERNELS

#define __global__
#define __device__
#define __host__
#define __shared__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace ninfer::cpu {
inline dim3 g_block_idx;
inline dim3 g_block_dim;
inline dim3 g_grid_dim;
}  // namespace ninfer::cpu

#define blockIdx (::ninfer::cpu::g_block_idx)
#define blockDim (::ninfer::cpu::g_block_dim)
#define gridDim (::ninfer::cpu::g_grid_dim)
// threadIdx deliberately does not exist on the CPU path: use NINFER_BLOCK_THREADS.

#define NINFER_BLOCK_THREADS(tid, n) for (int tid = 0; tid < static_cast<int>(n); ++tid)
#define NINFER_BARRIER() ((void)0)

namespace ninfer {
template <class... KArgs, class... Args>
inline void launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t /*smem*/,
                          Stream /*stream*/, Args... args) {
    cpu::g_grid_dim = grid;
    cpu::g_block_dim = block;
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                cpu::g_block_idx = dim3(x, y, z);
                kernel(args...);
            }
}
}  // namespace ninfer

#else  // CUDA

#include <cuda_runtime.h>

#define NINFER_BLOCK_THREADS(tid, n) \
    for (int tid = static_cast<int>(threadIdx.x), ninfer_once_ = 1; ninfer_once_; ninfer_once_ = 0)
#define NINFER_BARRIER() __syncthreads()

namespace ninfer {
template <class... KArgs, class... Args>
inline void launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem,
                          Stream stream, Args... args) {
    kernel<<<grid, block, smem, stream>>>(args...);
    check_launch("kernel launch");
}
}  // namespace ninfer

#endif

#define NINFER_LAUNCH(...) ::ninfer::launch_kernel(__VA_ARGS__)
