// Shared helpers of the per-op tests: seed, synthetic data, NaN poisoning and the comparison
// against an FP64 oracle that prints OP_ERROR_STATS records.
//
// A comparison passes when every output is finite and max_abs_err <= limit, where
// limit = tol.atol + tol.rtol * max|ref|. With NINFER_OP_REPORT_STATS=1 each comparison prints
//   OP_ERROR_STATS op=<op> case=<name> max_abs_err=<e> limit=<l> ratio=<e/l>
// (%.6e numbers; `nan` when an output is NaN/Inf). Every output buffer has kGuard extra
// elements past its end that must still hold the poison afterwards.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "ninfer/device.h"

namespace ninfer::test {

struct Tolerance {
    const char* name;
    double atol;
    double rtol;
};

constexpr std::size_t kGuard = 64;

// --seed N (default: env NINFER_TEST_SEED, else 0). Exits 2 on bad arguments.
inline std::uint64_t parse_seed(int argc, char** argv) {
    std::uint64_t seed = 0;
    if (const char* env = std::getenv("NINFER_TEST_SEED"); env != nullptr && *env != '\0')
        seed = std::strtoull(env, nullptr, 10);
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        char* end = nullptr;
        if (arg == "--seed" && i + 1 < argc) {
            seed = std::strtoull(argv[++i], &end, 10);
            if (end == nullptr || *end != '\0') {
                std::fprintf(stderr, "%s: --seed needs a non-negative integer\n", argv[0]);
                std::exit(2);
            }
        } else {
            std::fprintf(stderr, "usage: %s [--seed N]\n", argv[0]);
            std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
        }
    }
    return seed;
}

class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) {}
    std::uint64_t next() {  // splitmix64
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi), never exactly zero.
    float uniform(float lo, float hi) {
        const float u = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
        const float v = lo + (hi - lo) * u;
        return v == 0.0f ? 0.5f * hi : v;
    }
    std::vector<float> vector(std::size_t n, float lo, float hi) {
        std::vector<float> out(n);
        for (auto& v : out) v = uniform(lo, hi);
        return out;
    }

private:
    std::uint64_t state_;
};

// An output buffer of n elements (+ guard) filled with NaN.
inline std::vector<float> poison(std::size_t n) {
    return std::vector<float>(n + kGuard, std::numeric_limits<float>::quiet_NaN());
}

inline bool report_stats() {
    const char* env = std::getenv("NINFER_OP_REPORT_STATS");
    return env != nullptr && std::strcmp(env, "1") == 0;
}

// got: n + kGuard elements downloaded from the device; ref: the n FP64 oracle values.
inline bool check_close(const char* op, const std::string& case_name, const std::vector<float>& got,
                        const std::vector<double>& ref, const Tolerance& tol) {
    const std::size_t n = ref.size();
    double max_err = 0.0, max_ref = 0.0;
    bool finite = got.size() == n + kGuard;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < n; ++i) max_ref = std::fmax(max_ref, std::fabs(ref[i]));
    for (std::size_t i = 0; finite && i < n; ++i) {
        if (!std::isfinite(got[i])) {
            finite = false;
            worst = i;
            break;
        }
        const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
        if (err > max_err) {
            max_err = err;
            worst = i;
        }
    }
    bool guard_ok = true;
    for (std::size_t i = n; finite && i < got.size(); ++i) guard_ok = guard_ok && std::isnan(got[i]);
    const double limit = tol.atol + tol.rtol * max_ref;
    const bool ok = finite && guard_ok && max_err <= limit;
    if (report_stats()) {
        if (finite)
            std::printf("OP_ERROR_STATS op=%s case=%s max_abs_err=%.6e limit=%.6e ratio=%.6e\n", op,
                        case_name.c_str(), max_err, limit, max_err / limit);
        else
            std::printf("OP_ERROR_STATS op=%s case=%s max_abs_err=nan limit=%.6e ratio=nan\n", op,
                        case_name.c_str(), limit);
    }
    if (!finite)
        std::fprintf(stderr, "FAIL op=%s case=%s: non-finite output at index %zu\n", op, case_name.c_str(), worst);
    else if (!guard_ok)
        std::fprintf(stderr, "FAIL op=%s case=%s: wrote past the end of the output\n", op, case_name.c_str());
    else if (!ok)
        std::fprintf(stderr, "FAIL op=%s case=%s: max_abs_err %.6e > limit %.6e (%s tolerance) at index %zu\n", op,
                     case_name.c_str(), max_err, limit, tol.name, worst);
    return ok;
}

// Runs body() and turns an exception into a failure; returns the process exit code.
template <class F>
int run_test(const char* name, F&& body) {
    try {
        const bool ok = body();
        std::printf("%s: %s\n", name, ok ? "PASS" : "FAIL");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", name, e.what());
        return 1;
    }
}

}  // namespace ninfer::test
