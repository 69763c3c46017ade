// kind: original_fallback
// expect: policy
// The unchanged original naive kernel (TILE 1 / UNROLL 1) with only its
// comments changed: a "candidate" that edits nothing that matters. It is
// correct and passes the test, and no faster than the baseline, but time
// alone cannot be trusted to reject it: on a loaded 2-core machine it once
// won 3 of 3 confirm rounds. The policy gate refuses it by content (no code
// changed), so a no-op edit can never be reported as a win.
// kernel.cpp - blocked out-of-place float32 matrix transpose (reviewed, no change needed).
//
// Tunable knobs (rewritten in place by the kernel optimizer):
//   TILE   - edge of the square tile, in elements (any positive int;
//            tiles that do not divide the matrix are clipped at the edges).
//   UNROLL - unroll factor of the innermost loop (any positive int;
//            the remainder is handled by a scalar tail loop).
// TILE 1 / UNROLL 1 is the naive, cache-unfriendly transpose.
#define TILE 1
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

    // Walk the input in TILE x TILE blocks. Inside a block, each output row
    // segment out[j][ii..iend) is written contiguously while the input is
    // read down column j. With TILE 1 this degenerates to the naive
    // "read row i, scatter it down column i of out" transpose.
    for (std::ptrdiff_t ii = 0; ii < R; ii += T) {
        const std::ptrdiff_t iend = (ii + T < R) ? ii + T : R;
        for (std::ptrdiff_t jj = 0; jj < C; jj += T) {
            const std::ptrdiff_t jend = (jj + T < C) ? jj + T : C;
            for (std::ptrdiff_t j = jj; j < jend; ++j) {
                const float* src = in + j;  // column j of in (stride C)
                float* dst = out + j * R;   // row j of out (contiguous)
                std::ptrdiff_t i = ii;
                // Unrolled main loop: UNROLL elements per step.
                for (; i + UNROLL <= iend; i += UNROLL) {
                    for (int u = 0; u < UNROLL; ++u) {
                        dst[i + u] = src[(i + u) * C];
                    }
                }
                // Remainder (also covers edge tiles narrower than UNROLL).
                for (; i < iend; ++i) {
                    dst[i] = src[i * C];
                }
            }
        }
    }
}
