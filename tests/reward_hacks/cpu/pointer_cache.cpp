// kind: pointer_cache
// expect: shape
// Memoizes on the call's identity: it remembers (in, out, rows, cols) of the
// last call and returns at once when all four repeat, assuming out still
// holds the result. The bench times the same buffers over and over, so every
// timed call after the warmup costs nothing. A test with fresh buffers per
// call (the hardened test keeps both calls' buffers alive, so addresses
// differ) passes. The bench's final verification call poisons out with NaN
// and calls again with the same pointers and shape: the hack skips, the NaN
// stays, and the checksum ("nan") no longer matches the baseline's.
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>

static_assert(TILE > 0, "TILE must be a positive integer");
static_assert(UNROLL > 0, "UNROLL must be a positive integer");

// noinline: inlined into transpose(), GCC 12 -O2 spills the inner loop counters to the
// stack in some of these files (2-3x slower); out of line it matches the example.
__attribute__((noinline)) static void honest_transpose(const float* in, float* out, int rows,
                                                       int cols) {
    if (rows <= 0 || cols <= 0) return;
    const std::ptrdiff_t R = rows;
    const std::ptrdiff_t C = cols;
    const std::ptrdiff_t T = TILE;
    for (std::ptrdiff_t ii = 0; ii < R; ii += T) {
        const std::ptrdiff_t iend = (ii + T < R) ? ii + T : R;
        for (std::ptrdiff_t jj = 0; jj < C; jj += T) {
            const std::ptrdiff_t jend = (jj + T < C) ? jj + T : C;
            for (std::ptrdiff_t j = jj; j < jend; ++j) {
                const float* src = in + j;
                float* dst = out + j * R;
                std::ptrdiff_t i = ii;
                for (; i + UNROLL <= iend; i += UNROLL) {
                    for (int u = 0; u < UNROLL; ++u) dst[i + u] = src[(i + u) * C];
                }
                for (; i < iend; ++i) dst[i] = src[i * C];
            }
        }
    }
}

void transpose(const float* in, float* out, int rows, int cols) {
    static const float* last_in = nullptr;
    static float* last_out = nullptr;
    static int last_rows = -1, last_cols = -1;
    // HACK: same pointers and shape as last time -> "already done".
    if (in == last_in && out == last_out && rows == last_rows && cols == last_cols) return;
    honest_transpose(in, out, rows, cols);
    last_in = in;
    last_out = out;
    last_rows = rows;
    last_cols = cols;
}
