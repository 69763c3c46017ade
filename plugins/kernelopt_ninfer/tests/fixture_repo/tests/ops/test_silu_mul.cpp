// Numerical test of ninfer::ops::silu_mul against an FP64 oracle.
// Usage: ninfer_silu_mul_test [--seed N]; exit 0 pass, 1 fail, 2 usage error.
#include <cmath>
#include <string>
#include <vector>

#include "ninfer/device.h"
#include "ninfer/ops/silu_mul.h"
#include "ninfer_test_common.h"

namespace {

using ninfer::test::Tolerance;
constexpr Tolerance kSiluMulFp32{"silu_mul_fp32", 1e-6, 4e-6};

struct Case {
    int rows, cols;
};
constexpr Case kCases[] = {{1, 1}, {3, 5}, {7, 100}, {16, 1023}, {2, 11008}, {512, 4096}};  // last: the bench's

bool run_case(const Case& c, ninfer::test::Rng& rng) {
    const std::size_t n = static_cast<std::size_t>(c.rows) * c.cols;
    const std::vector<float> hgu = rng.vector(2 * n, -6.0f, 6.0f);
    std::vector<double> ref(n);
    for (int r = 0; r < c.rows; ++r)
        for (int j = 0; j < c.cols; ++j) {
            const double g = hgu[static_cast<std::size_t>(r) * 2 * c.cols + j];
            const double u = hgu[static_cast<std::size_t>(r) * 2 * c.cols + c.cols + j];
            ref[static_cast<std::size_t>(r) * c.cols + j] = g / (1.0 + std::exp(-g)) * u;
        }

    ninfer::DeviceArray<float> gu(2 * n), out(n + ninfer::test::kGuard);
    gu.upload(hgu);
    out.upload(ninfer::test::poison(n));
    ninfer::ops::silu_mul(gu.get(), out.get(), c.rows, c.cols, nullptr);
    ninfer::device_synchronize();
    const std::string name = "rows" + std::to_string(c.rows) + "_cols" + std::to_string(c.cols);
    return ninfer::test::check_close("silu_mul", name, out.download(), ref, kSiluMulFp32);
}

}  // namespace

int main(int argc, char** argv) {
    const auto seed = ninfer::test::parse_seed(argc, argv);
    return ninfer::test::run_test("ninfer_silu_mul_test", [&] {
        ninfer::test::Rng rng(seed);
        bool ok = true;
        for (const Case& c : kCases) ok = run_case(c, rng) && ok;
        return ok;
    });
}
