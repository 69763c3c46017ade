// Numerical test of ninfer::ops::residual_add against an FP64 oracle (also in place).
// Usage: ninfer_residual_add_test [--seed N]; exit 0 pass, 1 fail, 2 usage error.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ninfer/device.h"
#include "ninfer/ops/residual_add.h"
#include "ninfer_test_common.h"

namespace {

using ninfer::test::Tolerance;
constexpr Tolerance kResidualAddFp32{"residual_add_fp32", 1e-6, 1e-6};

struct Case {
    int tokens, hidden;
};
// Odd sizes and the bench's shape (4096 tokens x 4096 hidden).
constexpr Case kCases[] = {{1, 1}, {1, 7}, {3, 85}, {5, 200}, {1, 4097}, {17, 3855}, {4096, 4096}};

bool run_case(const Case& c, bool in_place, ninfer::test::Rng& rng) {
    const std::int64_t n = static_cast<std::int64_t>(c.tokens) * c.hidden;
    const auto un = static_cast<std::size_t>(n);
    const std::vector<float> hx = rng.vector(un, -4.0f, 4.0f);
    const std::vector<float> hr = rng.vector(un, -4.0f, 4.0f);
    std::vector<double> ref(un);
    for (std::size_t i = 0; i < un; ++i) ref[i] = static_cast<double>(hx[i]) + hr[i];

    ninfer::DeviceArray<float> r(un), y(un + ninfer::test::kGuard);
    r.upload(hr);
    std::vector<float> hy = ninfer::test::poison(un);
    if (in_place) std::copy(hx.begin(), hx.end(), hy.begin());  // y = x, then y += r
    y.upload(hy);
    if (in_place) {
        ninfer::ops::residual_add(y.get(), r.get(), y.get(), n, nullptr);
        ninfer::device_synchronize();
    } else {
        ninfer::DeviceArray<float> x(un);
        x.upload(hx);
        ninfer::ops::residual_add(x.get(), r.get(), y.get(), n, nullptr);
        ninfer::device_synchronize();
    }
    std::string name = "tokens";
    name += std::to_string(c.tokens) + "_hidden" + std::to_string(c.hidden);
    if (in_place) name += "_inplace";
    return ninfer::test::check_close("residual_add", name, y.download(), ref, kResidualAddFp32);
}

}  // namespace

int main(int argc, char** argv) {
    const auto seed = ninfer::test::parse_seed(argc, argv);
    return ninfer::test::run_test("ninfer_residual_add_test", [&] {
        ninfer::test::Rng rng(seed);
        bool ok = true;
        for (const Case& c : kCases) ok = run_case(c, false, rng) && ok;
        ok = run_case(Case{3, 1365}, true, rng) && ok;
        return ok;
    });
}
