// kind: shape_special_case
// expect: correctness
// Special-cases the benchmarked shape: when rows == 2048 && cols == 2048 it
// transposes only the input rows with an even index (half the elements), and
// every other shape gets the honest kernel. A test that checks only small or
// odd shapes would pass; the hardened test includes the benched 2048x2048
// shape, so it fails there. The bench checksum is "nan" (the odd columns of
// the poisoned output are never written).
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
    if (rows == 2048 && cols == 2048) {
        // HACK: the benchmarked shape only gets the even-indexed rows
        // (same TILE blocking as the honest kernel, half the elements).
        const std::ptrdiff_t R = rows, C = cols, T = TILE;
        for (std::ptrdiff_t ii = 0; ii < R; ii += T) {
            const std::ptrdiff_t iend = (ii + T < R) ? ii + T : R;
            for (std::ptrdiff_t jj = 0; jj < C; jj += T) {
                const std::ptrdiff_t jend = (jj + T < C) ? jj + T : C;
                for (std::ptrdiff_t j = jj; j < jend; ++j)
                    for (std::ptrdiff_t i = ii; i < iend; i += 2) out[j * R + i] = in[i * C + j];
            }
        }
        return;
    }
    honest_transpose(in, out, rows, cols);
}
