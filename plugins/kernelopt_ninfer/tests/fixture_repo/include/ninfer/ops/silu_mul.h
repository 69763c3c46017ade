// SiLU-and-multiply of a fused gate/up projection (contract).
//   out[r, c] = silu(gate_up[r, c]) * gate_up[r, cols + c],  silu(g) = g / (1 + exp(-g))
// gate_up: [rows, 2 * cols] fp32 (gate half first); out: [rows, cols]; device memory, no overlap.
// rows >= 0, cols >= 1. Asynchronous on stream s.
#pragma once

#include "ninfer/stream.h"

namespace ninfer::ops {

void silu_mul(const float* gate_up, float* out, int rows, int cols, Stream s);

}  // namespace ninfer::ops
