// RMSNorm launch policy (see rmsnorm.cu for the tunable knobs).
#pragma once

#include "ninfer/stream.h"

namespace ninfer::launcher {

void launch_rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps, Stream s);

}  // namespace ninfer::launcher
