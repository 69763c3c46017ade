// ninfer::ops::silu_mul: validation and dispatch (kernel: src/ops/kernel/silu_and_mul.cuh).
#include "ninfer/ops/silu_mul.h"

#include <stdexcept>

#include "ops/launcher/silu_mul.h"

namespace ninfer::ops {

void silu_mul(const float* gate_up, float* out, int rows, int cols, Stream s) {
    if (rows < 0 || cols < 1) throw std::invalid_argument("silu_mul: need rows >= 0 and cols >= 1");
    if (rows == 0) return;
    if (gate_up == nullptr || out == nullptr) throw std::invalid_argument("silu_mul: null pointer");
    launcher::launch_silu_mul(gate_up, out, rows, cols, s);
}

}  // namespace ninfer::ops
