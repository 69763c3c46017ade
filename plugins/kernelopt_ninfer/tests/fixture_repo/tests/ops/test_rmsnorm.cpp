// Numerical test of ninfer::ops::rmsnorm against an FP64 oracle.
// Usage: ninfer_rmsnorm_test [--seed N]; exit 0 pass, 1 fail, 2 usage error.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "ninfer/device.h"
#include "ninfer/ops/rmsnorm.h"
#include "ninfer_test_common.h"

namespace {

using ninfer::test::Tolerance;
constexpr Tolerance kRmsnormFp32{"rmsnorm_fp32", 1e-5, 1e-5};
constexpr float kEps = 1e-6f;

struct Case {
    int rows, cols;
};
// Odd shapes (rows not a multiple of the rows-per-block, cols not a multiple of the vector
// width or block) and both shapes the bench times (4096x4096, 64x4096).
constexpr Case kCases[] = {{1, 1}, {3, 7}, {5, 333}, {17, 1000}, {33, 4097}, {2, 8192}, {64, 4096}, {4096, 4096}};

bool run_case(const Case& c, ninfer::test::Rng& rng) {
    const std::size_t n = static_cast<std::size_t>(c.rows) * c.cols;
    const std::vector<float> hx = rng.vector(n, -2.0f, 2.0f);
    const std::vector<float> hw = rng.vector(c.cols, 0.5f, 1.5f);

    std::vector<double> ref(n);
    for (int r = 0; r < c.rows; ++r) {
        const float* xr = hx.data() + static_cast<std::size_t>(r) * c.cols;
        double ss = 0.0;
        for (int j = 0; j < c.cols; ++j) ss += static_cast<double>(xr[j]) * xr[j];
        const double inv = 1.0 / std::sqrt(ss / c.cols + static_cast<double>(kEps));
        for (int j = 0; j < c.cols; ++j) ref[static_cast<std::size_t>(r) * c.cols + j] = xr[j] * inv * hw[j];
    }

    ninfer::DeviceArray<float> x(n), w(c.cols), y(n + ninfer::test::kGuard);
    x.upload(hx);
    w.upload(hw);
    y.upload(ninfer::test::poison(n));
    ninfer::ops::rmsnorm(x.get(), w.get(), y.get(), c.rows, c.cols, kEps, nullptr);
    ninfer::device_synchronize();
    const std::string name = "rows" + std::to_string(c.rows) + "_cols" + std::to_string(c.cols);
    return ninfer::test::check_close("rmsnorm", name, y.download(), ref, kRmsnormFp32);
}

bool rejects_bad_arguments() {
    try {
        ninfer::ops::rmsnorm(nullptr, nullptr, nullptr, 1, 0, kEps, nullptr);
    } catch (const std::invalid_argument&) {
        return true;
    }
    std::fprintf(stderr, "FAIL op=rmsnorm: cols=0 was accepted\n");
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    const auto seed = ninfer::test::parse_seed(argc, argv);
    return ninfer::test::run_test("ninfer_rmsnorm_test", [&] {
        ninfer::test::Rng rng(seed);
        bool ok = rejects_bad_arguments();
        for (const Case& c : kCases) ok = run_case(c, rng) && ok;
        return ok;
    });
}
