// ninfer::ops::residual_add: validation and dispatch. Its launcher is the shared elementwise
// one (src/ops/launcher/elementwise.cu): there is no launcher named residual_add.
#include "ninfer/ops/residual_add.h"

#include <stdexcept>

#include "ops/launcher/elementwise.h"

namespace ninfer::ops {

void residual_add(const float* x, const float* residual, float* y, std::int64_t n, Stream s) {
    if (n < 0) throw std::invalid_argument("residual_add: n must be >= 0");
    if (n == 0) return;
    if (x == nullptr || residual == nullptr || y == nullptr) throw std::invalid_argument("residual_add: null pointer");
    launcher::launch_residual_add(x, residual, y, n, s);
}

}  // namespace ninfer::ops
