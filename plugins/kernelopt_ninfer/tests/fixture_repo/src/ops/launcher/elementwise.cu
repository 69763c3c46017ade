// Elementwise launch policy: residual_add, RESIDUAL_ADD_BLOCK_SIZE threads per block, each
// adding RESIDUAL_ADD_VEC contiguous elements. Knobs: powers of two, BLOCK_SIZE in [1, 1024].
#define RESIDUAL_ADD_BLOCK_SIZE 256
#define RESIDUAL_ADD_VEC 1

#include "ops/launcher/elementwise.h"

#include <stdexcept>

#include "ops/common/cpu_cuda_shim.h"
#include "ops/common/math.cuh"
#include "ops/kernel/residual_add.cuh"

namespace ninfer::launcher {

void launch_residual_add(const float* x, const float* residual, float* y, std::int64_t n, Stream s) {
    const long long blocks = common::ceil_div(n, static_cast<long long>(RESIDUAL_ADD_BLOCK_SIZE) * RESIDUAL_ADD_VEC);
    if (blocks > 0x7fffffffLL) throw std::invalid_argument("residual_add: n too large for one launch");
    NINFER_LAUNCH(kernel::residual_add_kernel<RESIDUAL_ADD_BLOCK_SIZE, RESIDUAL_ADD_VEC>,
                  dim3(static_cast<unsigned>(blocks)), dim3(RESIDUAL_ADD_BLOCK_SIZE), 0, s, x, residual, y, n);
}

}  // namespace ninfer::launcher
