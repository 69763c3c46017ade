// SiLU-and-mul launch policy (the knob SILU_MUL_BLOCK_SIZE is in silu_mul.h).
#include "ops/launcher/silu_mul.h"

#include "ops/common/cpu_cuda_shim.h"
#include "ops/kernel/silu_and_mul.cuh"

namespace ninfer::launcher {

void launch_silu_mul(const float* gate_up, float* out, int rows, int cols, Stream s) {
    NINFER_LAUNCH(kernel::silu_and_mul_kernel<SILU_MUL_BLOCK_SIZE>, dim3(static_cast<unsigned>(rows)),
                  dim3(SILU_MUL_BLOCK_SIZE), 0, s, gate_up, out, cols);
}

}  // namespace ninfer::launcher
