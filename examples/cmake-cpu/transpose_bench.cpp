// transpose_bench.cpp - benchmark for transpose().
//
// usage: transpose_bench [--rows 2048 --cols 2048 --iters 11 --warmup 2 --work 1]
// (defaults chosen so the default/naive kernel run takes well under 1 s wall)
// --work F (0 < F <= 1): the warmup and timed calls transpose only the first
//   max(1, round(F*rows)) rows (output then is cols x rows_used). Only for
//   planting a truly faster candidate in gate self-tests; `shape` and `bytes`
//   still describe the full shape.
// After the timed iterations one verification call transposes the FULL shape
// (regardless of --work) into an output poisoned with NaN; its checksum is
//   sum_k out[k] * (1 + k % 7)   (in double; position-weighted)
// and is printed as a number, or as the string "nan" ("inf", "-inf") when it
// is not finite (bare NaN is not valid JSON).
// Prints exactly one JSON line on stdout:
//   {"kernelopt_bench": 1, "time_ms": <median>, "shape": "f32[R,C]",
//    "bytes": <2*R*C*4>, "iters": <iters>, "checksum": <double or "nan">}
// Everything else goes to stderr.
#include "kernel.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--rows 2048 --cols 2048 --iters 11 --warmup 2 --work 1]\n",
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

constexpr std::size_t kFlushBytes = 32u << 20;  // 32 MiB

// Write over a buffer larger than the last-level cache so every timed
// iteration starts with cold caches.
void flush_caches(std::vector<unsigned char>& buf, unsigned iter) {
    std::memset(buf.data(), static_cast<int>(iter & 0xFF), buf.size());
}

}  // namespace

int main(int argc, char** argv) {
    long long rows = 2048, cols = 2048, iters = 11, warmup = 2;
    double work = 1.0;
    for (int a = 1; a < argc; ++a) {
        const char* opt = argv[a];
        const char* val = (a + 1 < argc) ? argv[a + 1] : nullptr;
        bool ok = false, known = true;
        if (std::strcmp(opt, "--rows") == 0) ok = parse_ll(val, 1, 1 << 15, &rows);
        else if (std::strcmp(opt, "--cols") == 0) ok = parse_ll(val, 1, 1 << 15, &cols);
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

    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    std::vector<float> in(n), out(n, 0.0f);
    std::mt19937 rng(12345u);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& v : in) v = dist(rng);
    std::vector<unsigned char> flush(kFlushBytes);

    const int R = static_cast<int>(rows), C = static_cast<int>(cols);
    // Rows the warmup/timed calls transpose (--work); the full shape when F == 1.
    long long rows_used = std::llround(work * static_cast<double>(rows));
    if (rows_used < 1) rows_used = 1;
    if (rows_used > rows) rows_used = rows;
    const int RU = static_cast<int>(rows_used);
    for (long long w = 0; w < warmup; ++w) transpose(in.data(), out.data(), RU, C);

    std::vector<double> times_ms;
    times_ms.reserve(static_cast<std::size_t>(iters));
    for (long long it = 0; it < iters; ++it) {
        flush_caches(flush, static_cast<unsigned>(it));
        const auto t0 = std::chrono::steady_clock::now();
        transpose(in.data(), out.data(), RU, C);
        const auto t1 = std::chrono::steady_clock::now();
        times_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }

    std::vector<double> sorted = times_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t m = sorted.size();
    const double median = (m % 2) ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);

    // Verification call: full shape, same buffers, output poisoned first, so a
    // kernel that skips work when called again (pointer cache, "already done"
    // checks) leaves NaN or stale values that change the checksum.
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    transpose(in.data(), out.data(), R, C);
    double checksum = 0.0;
    for (std::size_t k = 0; k < n; ++k) checksum += static_cast<double>(out[k]) * static_cast<double>(k % 7 + 1);
    char checksum_json[64];
    if (std::isnan(checksum)) std::snprintf(checksum_json, sizeof checksum_json, "\"nan\"");
    else if (std::isinf(checksum))
        std::snprintf(checksum_json, sizeof checksum_json, checksum > 0 ? "\"inf\"" : "\"-inf\"");
    else std::snprintf(checksum_json, sizeof checksum_json, "%.17g", checksum);
    unsigned long long flush_sum = 0;
    for (std::size_t k = 0; k < flush.size(); k += 4096) flush_sum += flush[k];

    std::fprintf(stderr,
                 "transpose_bench: %lldx%lld iters=%lld warmup=%lld median=%.4f ms "
                 "min=%.4f ms max=%.4f ms checksum=%.6f flush=%llu work=%g rows_used=%lld\n",
                 rows, cols, iters, warmup, median, sorted.front(), sorted.back(),
                 checksum, flush_sum, work, rows_used);
    std::printf("{\"kernelopt_bench\": 1, \"time_ms\": %.9g, \"shape\": \"f32[%lld,%lld]\", "
                "\"bytes\": %llu, \"iters\": %lld, \"cache_flushed\": true, \"checksum\": %s}\n",
                median, rows, cols,
                static_cast<unsigned long long>(2ull * n * sizeof(float)), iters, checksum_json);
    return 0;
}
