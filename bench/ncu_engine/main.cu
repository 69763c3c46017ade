// The pipeline: per step two scale_adds over 8192x8192 floats, a row max, a small bias.
//   pipeline [--steps N]   prints one kernelopt JSON line: the last step's time (CUDA events)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include "kernels.h"

int main(int argc, char** argv) {
    int steps = 3;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
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
    for (int step = 0; step < steps; ++step) {
        cudaEventRecord(start);
        launch_scale_add(x, y, 2.0f, n);
        launch_scale_add(y, x, 0.5f, n);
        launch_row_max(x, out, rows, cols);
        launch_tiny_bias(out, rows);
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
