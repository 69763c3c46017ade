// SiLU-and-mul launch policy: one block of SILU_MUL_BLOCK_SIZE threads per row.
// Tunable knob (power of two in [1, 1024]):
#pragma once

#define SILU_MUL_BLOCK_SIZE 64

#include "ninfer/stream.h"

namespace ninfer::launcher {

void launch_silu_mul(const float* gate_up, float* out, int rows, int cols, Stream s);

}  // namespace ninfer::launcher
