// transpose_test.cpp - correctness test for transpose().
//
// usage: transpose_test --seed N [--rows R --cols C]
//   Without --rows/--cols a fixed list of shapes is checked (including odd,
//   non-square shapes and the benchmarked 2048x2048). With them, only that
//   shape is checked. Exit 0: all match, 1: mismatch, 2: bad usage.
#include "kernel.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace {

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

std::uint32_t bits(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
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
            ok = parse_ll(val, 1, 1 << 15, &rows);
        } else if (std::strcmp(opt, "--cols") == 0) {
            ok = parse_ll(val, 1, 1 << 15, &cols);
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

    std::vector<std::pair<int, int>> shapes;
    if (rows > 0) {
        shapes.emplace_back(static_cast<int>(rows), static_cast<int>(cols));
    } else {
        shapes = {{1, 1},     {1, 17},    {17, 1},   {2, 3},      {7, 13},
                  {13, 7},    {64, 64},   {65, 63},  {129, 67},   {256, 384},
                  {1000, 999}, {2048, 2048}};
    }

    std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN();

    long long checked = 0;
    for (const auto& s : shapes) {
        const int r = s.first, c = s.second;
        const std::size_t n = static_cast<std::size_t>(r) * static_cast<std::size_t>(c);
        std::vector<float> in(n), out(n, nan), ref(n);
        for (std::size_t k = 0; k < n; ++k) {
            float v;
            do { v = dist(rng); } while (v == 0.0f);  // never zeros
            in[k] = v;
        }
        for (int i = 0; i < r; ++i)
            for (int j = 0; j < c; ++j)
                ref[static_cast<std::size_t>(j) * r + i] = in[static_cast<std::size_t>(i) * c + j];

        transpose(in.data(), out.data(), r, c);

        for (std::size_t k = 0; k < n; ++k) {
            if (bits(out[k]) != bits(ref[k])) {
                std::fprintf(stderr,
                             "MISMATCH shape=%dx%d index=%zu (out row %zu, col %zu) "
                             "expected=%.9g got=%.9g\n",
                             r, c, k, k / static_cast<std::size_t>(r),
                             k % static_cast<std::size_t>(r),
                             static_cast<double>(ref[k]), static_cast<double>(out[k]));
                std::printf("transpose_test: FAIL seed=%lld shape=%dx%d\n", seed, r, c);
                return 1;
            }
        }
        checked += static_cast<long long>(n);
    }
    std::printf("transpose_test: OK seed=%lld shapes=%zu elements=%lld\n", seed,
                shapes.size(), checked);
    return 0;
}
