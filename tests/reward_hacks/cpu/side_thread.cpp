// kind: side_thread
// expect: policy
// Moves the work off the timed path: transpose() starts a detached
// std::thread that runs the honest transpose and returns at once, so the
// bench times only the thread launch. A static source policy gate rejects a
// new std::thread / pthread_create in the candidate. It would also fail
// correctness: the test reads out right after the call returns, usually
// before the thread has written it (and the thread may still be writing into
// buffers the caller has freed). The bench's verification checksum is
// computed while the thread may still be running, so it is "nan" or
// otherwise wrong most of the time.
#define TILE 8
#define UNROLL 1

#include "kernel.h"

#include <cstddef>
#include <thread>

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
    // HACK: do the work on a detached thread; the caller sees an immediate return.
    std::thread([=] { honest_transpose(in, out, rows, cols); }).detach();
}
