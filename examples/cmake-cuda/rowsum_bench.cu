// rowsum_bench.cu - benchmark for row_sum().
//
// usage: rowsum_bench [--rows 16384 --cols 4096 --iters 50 --warmup 5 --work 1]
// Default shape: 16384 x 4096 float32 = 256 MiB read (about 70-80 us per call
// at H200 bandwidth, far above the launch overhead and beyond the 50 MiB L2).
//
// Every timed iteration: a 256 MiB cudaMemsetAsync over a scratch buffer
// (flushes L2), then a cudaEvent pair on the bench's stream around ONE
// row_sum() call on that stream. time_ms is the median over the iterations.
// --work F (0 < F <= 1): the warmup and timed calls reduce only the first
//   max(1, round(F*rows)) rows. Only for planting a truly faster candidate in
//   gate self-tests; `shape` and `bytes` still describe the full shape.
// After the timed iterations one verification call reduces the FULL shape
// (regardless of --work) into the same output buffer, poisoned with NaN bytes
// first, on the same stream; the result is copied back on that stream after
// it. Its checksum is
//   sum_k out[k] * (1 + k % 7)   (in double; position-weighted)
// and is printed as a number, or as the string "nan" ("inf", "-inf") when it
// is not finite (bare NaN is not valid JSON). The input is fixed (a hash of
// the element index, uniform in [0, 1): all positive, so the checksum does
// not cancel; different summation orders agree to ~1e-9 relative, far inside
// the shape gate's 1e-5, while dropping even one column per row moves it by
// ~2e-4).
// Prints exactly one JSON line on stdout:
//   {"kernelopt_bench": 1, "time_ms": <median>, "shape": "f32[R,C]",
//    "bytes": <R*C*4 + R*4>, "iters": <iters>, "checksum": <double or "nan">}
// Everything else goes to stderr. Exit 0: ok, 1: CUDA error, 2: bad usage.
#include "kernel.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kFlushBytes = 256u << 20;  // 256 MiB, > 5x the H200's 50 MiB L2

void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--rows 16384 --cols 4096 --iters 50 --warmup 5 --work 1]\n",
                 argv0);
}

bool parse_ll(const char* s, long long lo, long long hi, long long* v) {
    if (s == nullptr || *s == '\0') return false;
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || x < lo || x > hi) return false;
    *v = x;
    return true;
}

bool parse_work(const char* s, double* v) {
    if (s == nullptr || *s == '\0') return false;
    errno = 0;
    char* end = nullptr;
    double x = std::strtod(s, &end);
    // !(x > 0) also rejects NaN.
    if (errno != 0 || end == s || *end != '\0' || !(x > 0.0) || x > 1.0) return false;
    *v = x;
    return true;
}

// Aborts the bench (exit 1) on any CUDA error.
void check(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "rowsum_bench: CUDA error in %s: %s (%s)\n", what,
                 cudaGetErrorName(err), cudaGetErrorString(err));
    std::exit(1);
}

// Deterministic input: splitmix64 of the index -> 24-bit uniform in [0, 1).
// Generated on the device: a bench invocation must be cheap (the gate runs many).
__host__ __device__ float input_value(std::uint64_t k) {
    std::uint64_t z = k + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

__global__ void fill_input(float* in, std::size_t n) {
    const std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (k < n) in[k] = input_value(k);
}

}  // namespace

int main(int argc, char** argv) {
    long long rows = 16384, cols = 4096, iters = 50, warmup = 5;
    double work = 1.0;
    for (int a = 1; a < argc; ++a) {
        const char* opt = argv[a];
        const char* val = (a + 1 < argc) ? argv[a + 1] : nullptr;
        bool ok = false, known = true;
        if (std::strcmp(opt, "--rows") == 0) ok = parse_ll(val, 1, 1 << 24, &rows);
        else if (std::strcmp(opt, "--cols") == 0) ok = parse_ll(val, 1, 1 << 24, &cols);
        else if (std::strcmp(opt, "--iters") == 0) ok = parse_ll(val, 1, 100000, &iters);
        else if (std::strcmp(opt, "--warmup") == 0) ok = parse_ll(val, 0, 100000, &warmup);
        else if (std::strcmp(opt, "--work") == 0) ok = parse_work(val, &work);
        else { known = false; std::fprintf(stderr, "unknown argument: %s\n", opt); }
        if (!ok) {
            if (known) std::fprintf(stderr, "invalid or missing value for %s\n", opt);
            usage(argv[0]);
            return 2;
        }
        ++a;
    }
    if (rows * cols > (1LL << 31)) {
        std::fprintf(stderr, "--rows * --cols must be at most 2^31 (8 GiB)\n");
        usage(argv[0]);
        return 2;
    }

    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    const int R = static_cast<int>(rows), C = static_cast<int>(cols);
    // Rows the warmup/timed calls reduce (--work); the full shape when F == 1.
    long long rows_used = std::llround(work * static_cast<double>(rows));
    if (rows_used < 1) rows_used = 1;
    if (rows_used > rows) rows_used = rows;
    const int RU = static_cast<int>(rows_used);

    check(cudaSetDevice(0), "cudaSetDevice");
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

    float* d_in = nullptr;
    float* d_out = nullptr;
    void* d_flush = nullptr;
    check(cudaMalloc(&d_in, n * sizeof(float)), "cudaMalloc (in)");
    check(cudaMalloc(&d_out, static_cast<std::size_t>(rows) * sizeof(float)), "cudaMalloc (out)");
    check(cudaMalloc(&d_flush, kFlushBytes), "cudaMalloc (flush)");
    fill_input<<<static_cast<unsigned>((n + 255) / 256), 256>>>(d_in, n);
    check(cudaGetLastError(), "fill_input");
    check(cudaMemset(d_out, 0, static_cast<std::size_t>(rows) * sizeof(float)), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (setup)");

    for (long long w = 0; w < warmup; ++w) {
        row_sum(d_in, d_out, RU, C, stream);
        check(cudaGetLastError(), "row_sum (warmup launch)");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (warmup)");

    std::vector<cudaEvent_t> start(static_cast<std::size_t>(iters)),
        stop(static_cast<std::size_t>(iters));
    for (long long it = 0; it < iters; ++it) {
        check(cudaEventCreate(&start[static_cast<std::size_t>(it)]), "cudaEventCreate");
        check(cudaEventCreate(&stop[static_cast<std::size_t>(it)]), "cudaEventCreate");
    }
    for (long long it = 0; it < iters; ++it) {
        const std::size_t i = static_cast<std::size_t>(it);
        check(cudaMemsetAsync(d_flush, static_cast<int>(it & 0xFF), kFlushBytes, stream),
              "cudaMemsetAsync (flush)");
        check(cudaEventRecord(start[i], stream), "cudaEventRecord");
        row_sum(d_in, d_out, RU, C, stream);
        check(cudaGetLastError(), "row_sum (timed launch)");
        check(cudaEventRecord(stop[i], stream), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (timed)");

    std::vector<double> times_ms;
    times_ms.reserve(static_cast<std::size_t>(iters));
    for (long long it = 0; it < iters; ++it) {
        const std::size_t i = static_cast<std::size_t>(it);
        float ms = 0.0f;
        check(cudaEventElapsedTime(&ms, start[i], stop[i]), "cudaEventElapsedTime");
        times_ms.push_back(static_cast<double>(ms));
    }
    std::vector<double> sorted = times_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t m = sorted.size();
    const double median = (m % 2) ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);

    // Verification call: full shape, same buffers, output poisoned first, all on
    // `stream`, so a kernel that skips work when called again (pointer cache,
    // "already done" checks) or leaves work off the stream changes the checksum.
    std::vector<float> h_out(static_cast<std::size_t>(rows));
    check(cudaMemsetAsync(d_out, 0xFF, h_out.size() * sizeof(float), stream),
          "cudaMemsetAsync (poison)");
    row_sum(d_in, d_out, R, C, stream);
    check(cudaGetLastError(), "row_sum (verification launch)");
    check(cudaMemcpyAsync(h_out.data(), d_out, h_out.size() * sizeof(float),
                          cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (result)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (verification)");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

    double checksum = 0.0;
    for (std::size_t k = 0; k < h_out.size(); ++k)
        checksum += static_cast<double>(h_out[k]) * static_cast<double>(k % 7 + 1);
    char checksum_json[64];
    if (std::isnan(checksum)) std::snprintf(checksum_json, sizeof checksum_json, "\"nan\"");
    else if (std::isinf(checksum))
        std::snprintf(checksum_json, sizeof checksum_json, checksum > 0 ? "\"inf\"" : "\"-inf\"");
    else std::snprintf(checksum_json, sizeof checksum_json, "%.17g", checksum);

    const unsigned long long bytes =
        static_cast<unsigned long long>(n) * sizeof(float) +
        static_cast<unsigned long long>(rows) * sizeof(float);
    const double bytes_used = static_cast<double>(rows_used) * static_cast<double>(cols + 1) * 4.0;
    std::fprintf(stderr,
                 "rowsum_bench: %lldx%lld iters=%lld warmup=%lld median=%.4f ms min=%.4f ms "
                 "max=%.4f ms (%.1f GB/s) checksum=%.6f work=%g rows_used=%lld\n",
                 rows, cols, iters, warmup, median, sorted.front(), sorted.back(),
                 median > 0 ? bytes_used / (median * 1e-3) / 1e9 : 0.0, checksum, work,
                 rows_used);

    for (long long it = 0; it < iters; ++it) {
        cudaEventDestroy(start[static_cast<std::size_t>(it)]);
        cudaEventDestroy(stop[static_cast<std::size_t>(it)]);
    }
    cudaFree(d_flush);
    cudaFree(d_out);
    cudaFree(d_in);
    cudaStreamDestroy(stream);

    std::printf("{\"kernelopt_bench\": 1, \"time_ms\": %.6f, \"shape\": \"f32[%lld,%lld]\", "
                "\"bytes\": %llu, \"iters\": %lld, \"cache_flushed\": true, \"checksum\": %s}\n",
                median, rows, cols, bytes, iters, checksum_json);
    return 0;
}
