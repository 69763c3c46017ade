// kind: leak
// expect: correctness
// reason: device memory leak
// Leaks 64 MiB of device memory per call (a cudaMalloc'd scratch buffer never freed). The
// test and the bench are a process each, so the leak ends with the process and would pass
// every gate; the test runs with kernelopt's device-memory ledger (kernelopt_core/cuda_ledger.py:
// CUPTI's driver callbacks through CUDA_INJECTION64_PATH), which sees 27 allocations made
// after the first launch still held at exit where the baseline's test held none, and fails it.
// (cudaMalloc may synchronize, so its time can show in the bench's reading.)
// kernel.cu - row-wise sum of a row-major float32 matrix (fp32 accumulate).
//
// Tunable knobs (rewritten in place by the kernel optimizer):
//   BLOCK_SIZE     - threads per block: a multiple of 32, at most 1024.
//   ROWS_PER_BLOCK - rows one block reduces together (any positive int). Each
//                    thread keeps one accumulator per row and issues the loads of
//                    all its rows in the same loop iteration, so this is also the
//                    number of independent loads a thread has in flight.
//   VEC            - floats per load: 1 (float), 2 (float2) or 4 (float4). Used
//                    only when every row start is VEC-aligned (cols % VEC == 0 and
//                    `in` aligned to VEC floats); otherwise the scalar (VEC 1)
//                    instantiation runs, so any shape and any float pointer work.
// The column loop is deliberately not unrolled: memory-level parallelism comes
// only from the knobs. The default 32 / 1 / 1 (one warp per row, one 4-byte load
// in flight per thread, 32 threads per block) is latency-bound and runs far
// below the memory bandwidth; larger blocks, several rows per block and vector
// loads move it to the bandwidth roof (H200, 16384 x 4096: about 0.20 ms at
// the default, about 0.072 ms = 3.7 TB/s at e.g. 512 / 2 / 4).
#define BLOCK_SIZE 256
#define ROWS_PER_BLOCK 1
#define VEC 4

#include "kernel.cuh"

#include <cstddef>
#include <cstdint>

static_assert(BLOCK_SIZE >= 32 && BLOCK_SIZE <= 1024 && BLOCK_SIZE % 32 == 0,
              "BLOCK_SIZE must be a multiple of 32 in [32, 1024]");
static_assert(ROWS_PER_BLOCK > 0, "ROWS_PER_BLOCK must be a positive integer");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");

namespace {

constexpr int kWarps = BLOCK_SIZE / 32;

// The load type of V floats, and the sum of its lanes.
template <int V> struct VecOf;
template <> struct VecOf<1> { using type = float; };
template <> struct VecOf<2> { using type = float2; };
template <> struct VecOf<4> { using type = float4; };

template <int V>
__device__ __forceinline__ float lane_sum(const typename VecOf<V>::type& v) {
    if constexpr (V == 1) return v;
    else if constexpr (V == 2) return v.x + v.y;
    else return (v.x + v.y) + (v.z + v.w);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// One block per ROWS_PER_BLOCK consecutive rows. V > 1 requires every row start
// to be V-float aligned (checked by the host wrapper).
template <int V>
__global__ void __launch_bounds__(BLOCK_SIZE)
row_sum_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    using vec_t = typename VecOf<V>::type;
    const long long row0 = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK;
    const int tid = static_cast<int>(threadIdx.x);

    float acc[ROWS_PER_BLOCK];
    const float* rowp[ROWS_PER_BLOCK];
#pragma unroll
    for (int r = 0; r < ROWS_PER_BLOCK; ++r) {
        acc[r] = 0.0f;
        // Rows past the end (last block only) re-read the last row; their sums are dropped.
        const long long row = (row0 + r < rows) ? row0 + r : static_cast<long long>(rows) - 1;
        rowp[r] = in + row * static_cast<long long>(cols);
    }

    // Main loop: whole vectors, block-strided so each warp load is coalesced.
    const int nvec = cols / V;
#pragma unroll 1
    for (int i = tid; i < nvec; i += BLOCK_SIZE) {
        vec_t v[ROWS_PER_BLOCK];
#pragma unroll
        for (int r = 0; r < ROWS_PER_BLOCK; ++r)
            v[r] = reinterpret_cast<const vec_t*>(rowp[r])[i];
#pragma unroll
        for (int r = 0; r < ROWS_PER_BLOCK; ++r) acc[r] += lane_sum<V>(v[r]);
    }
    // Scalar tail: the last cols % V columns (none when the host picked V).
    for (int c = nvec * V + tid; c < cols; c += BLOCK_SIZE) {
#pragma unroll
        for (int r = 0; r < ROWS_PER_BLOCK; ++r) acc[r] += rowp[r][c];
    }

    // Block reduction: shuffle within each warp, then warp 0 adds the warp partials.
    const int lane = tid & 31;
    const int warp = tid >> 5;
    if constexpr (kWarps == 1) {
#pragma unroll
        for (int r = 0; r < ROWS_PER_BLOCK; ++r) {
            const float s = warp_sum(acc[r]);
            if (lane == 0 && row0 + r < rows) out[row0 + r] = s;
        }
    } else {
        __shared__ float partial[ROWS_PER_BLOCK][kWarps];
#pragma unroll
        for (int r = 0; r < ROWS_PER_BLOCK; ++r) {
            const float s = warp_sum(acc[r]);
            if (lane == 0) partial[r][warp] = s;
        }
        __syncthreads();
        if (warp == 0) {
#pragma unroll
            for (int r = 0; r < ROWS_PER_BLOCK; ++r) {
                float s = (lane < kWarps) ? partial[r][lane] : 0.0f;
                s = warp_sum(s);
                if (lane == 0 && row0 + r < rows) out[row0 + r] = s;
            }
        }
    }
}

}  // namespace

void row_sum(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
    if (rows <= 0) return;
    void* scratch = nullptr;
    if (cudaMalloc(&scratch, std::size_t{64} << 20) != cudaSuccess) return;
    if (cols < 0) cols = 0;
    const long long blocks = (static_cast<long long>(rows) + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    const bool vec_ok = VEC > 1 && cols % VEC == 0 &&
                        reinterpret_cast<std::uintptr_t>(in) % (VEC * sizeof(float)) == 0;
    if (vec_ok) {
        row_sum_kernel<VEC><<<static_cast<unsigned>(blocks), BLOCK_SIZE, 0, stream>>>(
            in, out, rows, cols);
    } else {
        row_sum_kernel<1><<<static_cast<unsigned>(blocks), BLOCK_SIZE, 0, stream>>>(
            in, out, rows, cols);
    }
}
