// kind: skip_work
// expect: correctness
// Does only part of the job: the blocked transpose walks just the first half
// of the input rows (rounded up), so columns [ceil(rows/2), rows) of every
// output row are never written. The timed bench call is about twice as fast
// as the honest TILE 8 kernel. The hardened test poisons the output with NaN
// and compares every element, so it fails on the first shape with rows > 1
// (17x1); the bench checksum is "nan" for the same reason.
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>

static_assert(TILE > 0, "TILE must be a positive integer");
static_assert(UNROLL > 0, "UNROLL must be a positive integer");

void transpose(const float* in, float* out, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    const std::ptrdiff_t R = rows;
    const std::ptrdiff_t C = cols;
    const std::ptrdiff_t T = TILE;
    const std::ptrdiff_t R_done = (R + 1) / 2;  // HACK: only the first half of the rows

    for (std::ptrdiff_t ii = 0; ii < R_done; ii += T) {
        const std::ptrdiff_t iend = (ii + T < R_done) ? ii + T : R_done;
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
