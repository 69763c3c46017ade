// rowsum_test.cu - correctness test for row_sum().
//
// usage: rowsum_test --seed N [--rows R --cols C]
//   Without --rows/--cols a fixed list of shapes is checked (including odd
//   shapes such as 1x1, 3x1000, 1000x3, 257x4099 and the benchmarked
//   16384x4096). With them, only that shape is checked.
//   Exit 0: all match, 1: mismatch or CUDA error, 2: bad usage.
//
// Inputs are fresh random floats in [-1, 1) (never zero) from std::mt19937(seed),
// generated on the host. The reference is computed on the host in double; a
// row passes when |got - ref| <= 1e-5 * sum_c |in[r][c]| + 1e-6 (fp32
// accumulation in any order stays far inside this).
//
// Each shape is reduced TWICE, each time with a fresh random input and a fresh
// output buffer (all buffers of the whole run stay allocated until exit, so no
// two calls ever share an address):
//   call 1: `in` 256-byte aligned (cudaMalloc), on the legacy default stream 0;
//   call 2: `in` offset by one float (only 4-byte aligned, so vector loads must
//           fall back), on a created non-blocking stream.
// Around every buffer lie guard regions poisoned with NaN bytes (0xFF): reading
// before/after the matrix puts NaN into a sum, writing past out[rows-1] is
// reported. Outputs are poisoned with 0xFF (NaN) before the call. After every
// call: cudaDeviceSynchronize + error check, then the output is compared with
// the reference, the input (guards included) must be bit-for-bit unchanged,
// and after the second call the first call's buffers are checked again
// (nothing may write to them once it has returned).
#include "kernel.cuh"

#include <cuda_runtime.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t kGuard = 64;  // floats of NaN guard before/after every buffer

void usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s --seed N [--rows R --cols C]\n", argv0);
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

bool cuda_ok(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return true;
    std::fprintf(stderr, "CUDA error in %s: %s (%s)\n", what, cudaGetErrorName(err),
                 cudaGetErrorString(err));
    return false;
}

std::uint32_t bits(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

// A device buffer of `n` floats plus NaN guards: [kGuard + offset | n | kGuard].
struct DevBuf {
    float* base = nullptr;     // the allocation
    float* data = nullptr;     // base + kGuard + offset
    std::size_t n = 0;         // floats the caller uses
    std::size_t total = 0;     // floats allocated
};

bool alloc_poisoned(DevBuf* b, std::size_t n, std::size_t offset) {
    b->n = n;
    b->total = kGuard + offset + n + kGuard;
    if (!cuda_ok(cudaMalloc(&b->base, b->total * sizeof(float)), "cudaMalloc")) return false;
    b->data = b->base + kGuard + offset;
    return cuda_ok(cudaMemset(b->base, 0xFF, b->total * sizeof(float)), "cudaMemset (poison)");
}

}  // namespace

int main(int argc, char** argv) {
    long long seed = -1, rows = -1, cols = -1;
    for (int a = 1; a < argc; ++a) {
        const char* opt = argv[a];
        const char* val = (a + 1 < argc) ? argv[a + 1] : nullptr;
        bool ok = false, known = true;
        if (std::strcmp(opt, "--seed") == 0) {
            ok = parse_ll(val, 0, 0xFFFFFFFFLL, &seed);
        } else if (std::strcmp(opt, "--rows") == 0) {
            ok = parse_ll(val, 1, 1 << 20, &rows);
        } else if (std::strcmp(opt, "--cols") == 0) {
            ok = parse_ll(val, 1, 1 << 20, &cols);
        } else {
            known = false;
            std::fprintf(stderr, "unknown argument: %s\n", opt);
        }
        if (!ok) {
            if (known) std::fprintf(stderr, "invalid or missing value for %s\n", opt);
            usage(argv[0]);
            return 2;
        }
        ++a;
    }
    if (seed < 0 || ((rows < 0) != (cols < 0))) {
        if (seed < 0) std::fprintf(stderr, "--seed is required\n");
        else std::fprintf(stderr, "--rows and --cols must be given together\n");
        usage(argv[0]);
        return 2;
    }
    if (rows > 0 && rows * cols > (1LL << 28)) {
        std::fprintf(stderr, "--rows * --cols must be at most 2^28\n");
        usage(argv[0]);
        return 2;
    }

    std::vector<std::pair<int, int>> shapes;
    if (rows > 0) {
        shapes.emplace_back(static_cast<int>(rows), static_cast<int>(cols));
    } else {
        shapes = {{1, 1},     {1, 17},     {17, 1},    {2, 3},      {3, 1000},  {1000, 3},
                  {5, 33},    {7, 4094},   {33, 130},  {129, 1024}, {4099, 128}, {2, 16384},
                  {257, 4099}, {16384, 4096}};
    }

    cudaStream_t side = nullptr;
    if (!cuda_ok(cudaSetDevice(0), "cudaSetDevice") ||
        !cuda_ok(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreate")) {
        std::printf("rowsum_test: FAIL seed=%lld (CUDA setup)\n", seed);
        return 1;
    }

    std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);

    auto fail = [&](int r, int c) {
        std::printf("rowsum_test: FAIL seed=%lld shape=%dx%d\n", seed, r, c);
        return 1;
    };

    std::vector<DevBuf> keep;  // every device buffer, freed only at exit
    long long checked = 0;
    for (const auto& s : shapes) {
        const int r = s.first, c = s.second;
        const std::size_t n = static_cast<std::size_t>(r) * static_cast<std::size_t>(c);

        // Host inputs and double-precision references for both calls.
        std::vector<float> in[2];
        std::vector<double> ref[2], mag[2];
        for (int k = 0; k < 2; ++k) {
            in[k].resize(n);
            for (auto& x : in[k]) {
                float v;
                do { v = dist(rng); } while (v == 0.0f);  // never zeros
                x = v;
            }
            ref[k].assign(static_cast<std::size_t>(r), 0.0);
            mag[k].assign(static_cast<std::size_t>(r), 0.0);
            for (int i = 0; i < r; ++i) {
                double sum = 0.0, abs_sum = 0.0;
                const float* row = in[k].data() + static_cast<std::size_t>(i) * c;
                for (int j = 0; j < c; ++j) {
                    sum += static_cast<double>(row[j]);
                    abs_sum += std::fabs(static_cast<double>(row[j]));
                }
                ref[k][static_cast<std::size_t>(i)] = sum;
                mag[k][static_cast<std::size_t>(i)] = abs_sum;
            }
        }

        // Device buffers: call 1 aligned, call 2 with `in` offset by one float.
        DevBuf d_in[2], d_out[2];
        for (int k = 0; k < 2; ++k) {
            if (!alloc_poisoned(&d_in[k], n, k == 0 ? 0 : 1) ||
                !alloc_poisoned(&d_out[k], static_cast<std::size_t>(r), 0))
                return fail(r, c);
            keep.push_back(d_in[k]);
            keep.push_back(d_out[k]);
            if (!cuda_ok(cudaMemcpy(d_in[k].data, in[k].data(), n * sizeof(float),
                                    cudaMemcpyHostToDevice), "cudaMemcpy (upload)"))
                return fail(r, c);
        }
        if (!cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize (setup)")) return fail(r, c);

        // Copies back call k's input and output (with guards) and checks them.
        std::vector<float> host;
        auto verify = [&](int k) -> bool {
            const int call = k + 1;
            // Input: guards still NaN bytes, data bit-for-bit unchanged.
            host.resize(d_in[k].total);
            if (!cuda_ok(cudaMemcpy(host.data(), d_in[k].base, d_in[k].total * sizeof(float),
                                    cudaMemcpyDeviceToHost), "cudaMemcpy (input back)"))
                return false;
            const std::size_t lead = static_cast<std::size_t>(d_in[k].data - d_in[k].base);
            for (std::size_t q = 0; q < d_in[k].total; ++q) {
                const bool is_data = q >= lead && q < lead + n;
                const std::uint32_t want = is_data ? bits(in[k][q - lead]) : 0xFFFFFFFFu;
                if (bits(host[q]) != want) {
                    if (is_data)
                        std::fprintf(stderr, "input modified at shape=%dx%d call=%d index=%zu "
                                     "(row %zu, col %zu) expected=%.9g got=%.9g\n", r, c, call,
                                     q - lead, (q - lead) / c, (q - lead) % c,
                                     static_cast<double>(in[k][q - lead]),
                                     static_cast<double>(host[q]));
                    else
                        std::fprintf(stderr, "write to the guard around the input at shape=%dx%d "
                                     "call=%d (float %lld relative to in[0])\n", r, c, call,
                                     static_cast<long long>(q) - static_cast<long long>(lead));
                    return false;
                }
            }
            // Output: guards untouched, every row within tolerance of the reference.
            host.resize(d_out[k].total);
            if (!cuda_ok(cudaMemcpy(host.data(), d_out[k].base, d_out[k].total * sizeof(float),
                                    cudaMemcpyDeviceToHost), "cudaMemcpy (output back)"))
                return false;
            for (std::size_t q = 0; q < d_out[k].total; ++q) {
                const bool is_data = q >= kGuard && q < kGuard + static_cast<std::size_t>(r);
                if (!is_data) {
                    if (bits(host[q]) != 0xFFFFFFFFu) {
                        std::fprintf(stderr, "write outside out[0, rows) at shape=%dx%d call=%d "
                                     "(float %lld relative to out[0])\n", r, c, call,
                                     static_cast<long long>(q) - static_cast<long long>(kGuard));
                        return false;
                    }
                    continue;
                }
                const std::size_t i = q - kGuard;
                const double got = static_cast<double>(host[q]);
                const double tol = 1e-5 * mag[k][i] + 1e-6;
                const double err = std::fabs(got - ref[k][i]);
                if (!(err <= tol)) {  // also catches NaN (the poison) and inf
                    std::fprintf(stderr, "MISMATCH shape=%dx%d call=%d row=%zu expected=%.9g "
                                 "got=%.9g |err|=%.3g tol=%.3g\n", r, c, call, i, ref[k][i], got,
                                 err, tol);
                    return false;
                }
            }
            return true;
        };

        // Call 1: legacy default stream. Call 2: a non-blocking stream.
        const cudaStream_t streams[2] = {nullptr, side};
        for (int k = 0; k < 2; ++k) {
            row_sum(d_in[k].data, d_out[k].data, r, c, streams[k]);
            if (!cuda_ok(cudaGetLastError(), "row_sum (launch)") ||
                !cuda_ok(cudaDeviceSynchronize(), "row_sum (cudaDeviceSynchronize)") ||
                !verify(k))
                return fail(r, c);
        }
        // The first call's buffers must be untouched by the second call.
        if (!verify(0)) return fail(r, c);

        checked += static_cast<long long>(n);
    }

    for (auto& b : keep) cudaFree(b.base);
    cudaStreamDestroy(side);
    std::printf("rowsum_test: OK seed=%lld shapes=%zu elements=%lld\n", seed, shapes.size(),
                checked);
    return 0;
}
