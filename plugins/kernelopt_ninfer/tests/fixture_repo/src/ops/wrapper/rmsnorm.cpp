// ninfer::ops::rmsnorm: validation and dispatch to the launcher.
#include "ninfer/ops/rmsnorm.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/launcher/rmsnorm.h"

namespace ninfer::ops {

void rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps, Stream s) {
    if (rows < 0 || cols < 1) throw std::invalid_argument("rmsnorm: need rows >= 0 and cols >= 1");
    if (!(eps > 0.0f) || !std::isfinite(eps)) throw std::invalid_argument("rmsnorm: eps must be finite and > 0");
    if (rows == 0) return;
    if (x == nullptr || w == nullptr || y == nullptr) throw std::invalid_argument("rmsnorm: null pointer");
    const std::size_t bytes = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * sizeof(float);
    const auto xb = reinterpret_cast<std::uintptr_t>(x), yb = reinterpret_cast<std::uintptr_t>(y);
    if (xb < yb + bytes && yb < xb + bytes) throw std::invalid_argument("rmsnorm: x and y must not overlap");
    launcher::launch_rmsnorm(x, w, y, rows, cols, eps, s);
}

}  // namespace ninfer::ops
