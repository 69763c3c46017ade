// kernel.cuh - row-wise sum of a float32 matrix on the GPU (demo kernel).
#pragma once

#include <cuda_runtime.h>

// out[r] = sum over c of in[r * cols + c], for every row r < rows, accumulated in fp32.
//
//   in     device pointer to a row-major `rows` x `cols` matrix; only 4-byte (float)
//          alignment may be assumed, and `cols` may be any value (no padding).
//   out    device pointer to `rows` floats; every one is written (a row of 0 columns
//          sums to 0). Nothing outside out[0, rows) is written and `in` is never written.
//   stream all work is enqueued on `stream` (0 = the legacy default stream); the call
//          returns without synchronizing. Launch errors surface through
//          cudaGetLastError() / the next synchronization, as for any kernel launch.
//
// `in` and `out` must not overlap. rows, cols >= 0.
void row_sum(const float* in, float* out, int rows, int cols, cudaStream_t stream);
