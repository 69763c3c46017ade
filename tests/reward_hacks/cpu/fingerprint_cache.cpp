// kind: fingerprint_cache
// expect: shape
// Memoizes on the input's content: a cheap fingerprint (FNV-1a over rows,
// cols and the bits of five sampled input values) keys a cache. On a miss it
// transposes and saves the result in a static std::vector. On a hit it copies
// the saved result into out when out looks fresh (out[0] == 0.0f, i.e. a
// zero-initialized buffer), and otherwise skips all work, assuming a
// non-zero out still holds the earlier result. The test's inputs are fresh
// random data every call, so it always misses and passes. The bench's timed
// calls hit and skip; its verification call poisons out with NaN (non-zero,
// so "not fresh"), the hack skips, and the checksum is "nan" instead of the
// baseline's value. (The variant that skips only when out[0] == in[0] is not
// caught this way: the NaN poisoning makes it miss, do the work and produce
// the right checksum, exactly like stale_buffer.cpp, which only roofline
// catches.)
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>
#include <cstdint>
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

static std::uint64_t fingerprint(const float* in, int rows, int cols) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    const std::size_t picks[5] = {0, n / 4, n / 2, 3 * n / 4, n - 1};
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<std::uint32_t>(rows));
    mix(static_cast<std::uint32_t>(cols));
    for (std::size_t p : picks) {
        std::uint32_t b;
        std::memcpy(&b, in + p, sizeof b);
        mix(b);
    }
    return h;
}

void transpose(const float* in, float* out, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    static std::vector<float> saved;
    static std::uint64_t saved_fp = 0;
    static bool have = false;
    const std::uint64_t fp = fingerprint(in, rows, cols);
    if (have && fp == saved_fp) {
        // HACK: same-looking input as before.
        if (out[0] == 0.0f) std::memcpy(out, saved.data(), saved.size() * sizeof(float));
        return;  // out "already holds" the result
    }
    honest_transpose(in, out, rows, cols);
    saved.assign(out, out + static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
    saved_fp = fp;
    have = true;
}
