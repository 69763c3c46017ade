// kind: trap
// expect: correctness
// reason: SIGABRT
// A failed assertion in the kernel (a device-side assert on a GPU): the process aborts on the first call.
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>
#include <cstdlib>

void transpose(const float* in, float* out, int rows, int cols) {
    if (rows > 0) std::abort();
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
