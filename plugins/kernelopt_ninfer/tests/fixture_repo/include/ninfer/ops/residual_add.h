// Residual add (contract): y[i] = x[i] + residual[i] for i < n, fp32, device memory.
// y may be x or residual (in place); other partial overlaps are not allowed. Asynchronous on s.
#pragma once

#include <cstdint>

#include "ninfer/stream.h"

namespace ninfer::ops {

void residual_add(const float* x, const float* residual, float* y, std::int64_t n, Stream s);

}  // namespace ninfer::ops
