// RMSNorm kernel: one block of BLOCK threads normalizes ROWS_PER_BLOCK consecutive rows.
// Each thread walks its row in chunks of VEC contiguous elements, BLOCK * VEC apart (one
// vector load or store per chunk where the address allows: common/memory.cuh).
#pragma once

#include <cstddef>

#include "ops/common/block_reduce.cuh"
#include "ops/common/cpu_cuda_shim.h"
#include "ops/common/math.cuh"
#include "ops/common/memory.cuh"

namespace ninfer::kernel {

template <int BLOCK, int VEC, int ROWS_PER_BLOCK>
__global__ void __launch_bounds__(BLOCK)
    rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                   int rows, int cols, float eps) {
    static_assert(VEC >= 1, "VEC must be >= 1");
    static_assert(ROWS_PER_BLOCK >= 1, "ROWS_PER_BLOCK must be >= 1");
    constexpr int kStride = BLOCK * VEC;
    __shared__ float partial[BLOCK];

    const int row0 = static_cast<int>(blockIdx.x) * ROWS_PER_BLOCK;
    for (int r = 0; r < ROWS_PER_BLOCK; ++r) {
        const int row = row0 + r;
        if (row >= rows) break;  // block-uniform
        const float* xr = x + static_cast<std::size_t>(row) * cols;
        float* yr = y + static_cast<std::size_t>(row) * cols;

        NINFER_BLOCK_THREADS(tid, BLOCK) {
            float acc[VEC] = {};
            int c = tid * VEC;
            for (; c + VEC <= cols; c += kStride) {
                float xv[VEC];
                common::load_vec<VEC>(xr + c, xv);
                for (int v = 0; v < VEC; ++v) acc[v] += xv[v] * xv[v];
            }
            for (int v = 0; v < VEC && c + v < cols; ++v) {  // the one partial chunk
                const float xv = common::load_ro(xr + c + v);
                acc[v] += xv * xv;
            }
            float sum = 0.0f;
            for (int v = 0; v < VEC; ++v) sum += acc[v];
            partial[tid] = sum;
        }
        const float inv_rms = common::rsqrt(common::block_reduce_sum<BLOCK>(partial) / cols + eps);

        NINFER_BLOCK_THREADS(tid, BLOCK) {
            int c = tid * VEC;
            for (; c + VEC <= cols; c += kStride) {
                float xv[VEC], wv[VEC], out[VEC];
                common::load_vec<VEC>(xr + c, xv);
                common::load_vec<VEC>(w + c, wv);
                for (int v = 0; v < VEC; ++v) out[v] = xv[v] * inv_rms * wv[v];
                common::store_vec<VEC>(yr + c, out);
            }
            for (int v = 0; v < VEC && c + v < cols; ++v)
                yr[c + v] = common::load_ro(xr + c + v) * inv_rms * common::load_ro(w + c + v);
        }
        NINFER_BARRIER();  // partial[] is rewritten for the next row
    }
}

}  // namespace ninfer::kernel
