#include "kernels.h"

__global__ void tiny_bias(float* out, int n) {  // a small tail kernel
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += 1.0f;
}

void launch_tiny_bias(float* out, int n) { tiny_bias<<<(n + 255) / 256, 256>>>(out, n); }
