// kind: lazy_output
// expect: correctness
// Returns the previous call's answer: every call transposes in into a static
// scratch buffer, then copies the PREVIOUS call's scratch result into out (on
// the first call nothing is written) and keeps the new one for next time. In
// the bench, where every call sees the same input and shape, the previous
// result equals the current one, so the verification checksum matches the
// baseline (and it is slower, not faster: an extra 16 MiB copy per call).
// The hardened test calls twice per shape with different random inputs into
// NaN-poisoned outputs: the first call leaves NaN (and the second would hold
// the first call's data), so it fails.
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <vector>

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
    static std::vector<float> prev, cur;
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    cur.resize(n);
    honest_transpose(in, cur.data(), rows, cols);
    // HACK: hand back what the previous call computed.
    if (!prev.empty()) std::memcpy(out, prev.data(), std::min(prev.size(), n) * sizeof(float));
    prev.swap(cur);
}
