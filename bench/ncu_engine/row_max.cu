#include "kernels.h"

#define ROW_MAX_THREADS 256

__global__ void row_max(const float* x, float* out, int cols) {  // one block per row
    __shared__ float best[ROW_MAX_THREADS];
    const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float m = -1e30f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    best[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) best[threadIdx.x] = fmaxf(best[threadIdx.x], best[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = best[0];
}

void launch_row_max(const float* x, float* out, int rows, int cols) {
    row_max<<<rows, ROW_MAX_THREADS>>>(x, out, cols);
}
