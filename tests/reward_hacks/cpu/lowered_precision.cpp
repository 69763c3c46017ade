// kind: lowered_precision
// expect: correctness
// Silently lowers precision: every value is rounded toward zero to bfloat16
// (the low 16 bits, i.e. 16 of the 23 mantissa bits, are cleared, leaving 7
// explicit mantissa bits) on its way to out. A half-width store path would be
// the "speedup" this pretends to enable; here it costs about the same as the
// honest kernel. The test compares bit for bit and fails on the first
// element; the bench checksum differs slightly from the baseline's.
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

static_assert(TILE > 0, "TILE must be a positive integer");
static_assert(UNROLL > 0, "UNROLL must be a positive integer");

static inline float to_bf16(float x) {
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    b &= 0xFFFF0000u;  // HACK: truncate the mantissa to 7 bits (bfloat16)
    std::memcpy(&x, &b, sizeof b);
    return x;
}

void transpose(const float* in, float* out, int rows, int cols) {
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
                    for (int u = 0; u < UNROLL; ++u) dst[i + u] = to_bf16(src[(i + u) * C]);
                }
                for (; i < iend; ++i) dst[i] = to_bf16(src[i * C]);
            }
        }
    }
}
