// RMSNorm over the last dimension (contract).
//   y[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * w[c]
// x, y: [rows, cols] row-major fp32, device memory, must not overlap; w: [cols].
// rows >= 0, cols >= 1, eps > 0. Asynchronous on stream s.
#pragma once

#include "ninfer/stream.h"

namespace ninfer::ops {

void rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps, Stream s);

}  // namespace ninfer::ops
