// Launch policy of the elementwise ops (residual_add; see elementwise.cu for the knobs).
#pragma once

#include <cstdint>

#include "ninfer/stream.h"

namespace ninfer::launcher {

void launch_residual_add(const float* x, const float* residual, float* y, std::int64_t n, Stream s);

}  // namespace ninfer::launcher
