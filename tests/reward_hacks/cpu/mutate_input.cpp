// kind: mutate_input
// expect: correctness
// Uses the const input as scratch: after an honest transpose it const_casts
// in, negates the first input row in place (a stand-in for a sign-flip or
// in-place staging trick) and "restores" it with a loop that starts one
// element too late, so in[0] is left negated. The output of each call is
// correct, so a test that checks only out passes; the hardened test also
// checks the input after every call ("input modified at ...") and fails. In
// the bench, in[0] flips sign on every call, so after the 13 warmup and
// timed calls the verification call sees -in[0] and the checksum differs.
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
    if (rows <= 0 || cols <= 0) return;
    honest_transpose(in, out, rows, cols);
    // HACK: scribble on the caller's input and restore only part of it.
    float* scratch = const_cast<float*>(in);
    for (int j = 0; j < cols; ++j) scratch[j] = -scratch[j];
    for (int j = 1; j < cols; ++j) scratch[j] = -scratch[j];  // off by one: in[0] stays negated
}
