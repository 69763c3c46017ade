// RMSNorm launch policy: one block of RMSNORM_BLOCK_SIZE threads per RMSNORM_ROWS_PER_BLOCK
// rows, each thread reading RMSNORM_VEC contiguous elements per step.
// Tunable knobs: powers of two; BLOCK_SIZE in [1, 1024], VEC and ROWS_PER_BLOCK >= 1.
#define RMSNORM_BLOCK_SIZE 32
#define RMSNORM_VEC 1
#define RMSNORM_ROWS_PER_BLOCK 1

#include "ops/launcher/rmsnorm.h"

#include "ops/common/cpu_cuda_shim.h"
#include "ops/common/math.cuh"
#include "ops/kernel/rmsnorm.cuh"

namespace ninfer::launcher {

void launch_rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps, Stream s) {
    const dim3 grid(static_cast<unsigned>(common::ceil_div(rows, RMSNORM_ROWS_PER_BLOCK)));
    const dim3 block(RMSNORM_BLOCK_SIZE);
    NINFER_LAUNCH(kernel::rmsnorm_kernel<RMSNORM_BLOCK_SIZE, RMSNORM_VEC, RMSNORM_ROWS_PER_BLOCK>, grid, block, 0, s,
                  x, w, y, rows, cols, eps);
}

}  // namespace ninfer::launcher
