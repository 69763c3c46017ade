// A small multi-kernel CUDA program for profiler captures and `kernelopt profile` (issue 15):
// three kernels of different cost in one process, so a ranking has something to rank.
//   nvcc -O3 -o multikernel multikernel.cu && ./multikernel      (or: cmake, kernelopt.toml)
// Prints one kernelopt JSON line: the time of one step (all four launches), from CUDA events.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale_add(const float* x, float* y, float a, size_t n) {  // streaming, large
    size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void row_max(const float* x, float* out, int cols) {  // one block per row
    __shared__ float best[256];
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

__global__ void tiny_bias(float* out, int n) {  // a small tail kernel
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += 1.0f;
}

int main() {
    const int rows = 8192, cols = 8192;
    const size_t n = static_cast<size_t>(rows) * cols;
    float *x, *y, *out;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&out, rows * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float));
    cudaMemset(y, 0, n * sizeof(float));
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    float step_ms = 0.0f;
    for (int step = 0; step < 3; ++step) {
        cudaEventRecord(start);
        scale_add<<<(n + 255) / 256, 256>>>(x, y, 2.0f, n);
        scale_add<<<(n + 255) / 256, 256>>>(y, x, 0.5f, n);
        row_max<<<rows, 256>>>(x, out, cols);
        tiny_bias<<<(rows + 255) / 256, 256>>>(out, rows);
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        cudaEventElapsedTime(&step_ms, start, stop);  // the last step's: warmed up
    }
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }
    std::printf("{\"kernelopt_bench\": 1, \"time_ms\": %.6f}\n", step_ms);
    return 0;
}
