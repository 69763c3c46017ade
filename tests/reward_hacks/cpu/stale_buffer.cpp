// kind: stale_buffer
// expect: roofline
// Skips the work when out "looks already done": if out[0] == in[0] and
// out[rows*cols-1] == in[rows*cols-1] (the two corners a finished transpose
// shares with its input) it returns at once. The bench's timed calls reuse
// the output of the warmup, so each costs four loads (about a microsecond
// for 32 MiB, an implied bandwidth of tens of TB/s), far above the machine's
// memcpy peak: the roofline gate is what catches it. The bench checksum
// (shape gate) does NOT catch it: the verification call poisons out with
// NaN, NaN == x is false, so the hack does the full work and its checksum
// equals the baseline's. The test uses NaN-poisoned outputs too, so it
// passes.
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
    const std::size_t last = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) - 1;
    // HACK: the corners already match -> assume out is the finished transpose.
    if (out[0] == in[0] && out[last] == in[last]) return;
    honest_transpose(in, out, rows, cols);
}
