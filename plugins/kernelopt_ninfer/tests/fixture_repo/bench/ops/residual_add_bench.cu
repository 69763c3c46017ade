// Microbenchmark of ninfer::ops::residual_add (4096 tokens x 4096 hidden, out of place).
#include <cstdint>
#include <cstdio>
#include <exception>

#include "ninfer/device.h"
#include "ninfer/ops/residual_add.h"
#include "ninfer_bench_common.h"

int main(int argc, char** argv) {
    ninfer::bench::parse_no_args(argc, argv);
    try {
        const std::int64_t n = 4096LL * 4096;
        const auto un = static_cast<std::size_t>(n);
        ninfer::DeviceArray<float> x(un), r(un), y(un);
        x.upload(ninfer::bench::random_data(un, -4.0f, 4.0f, 1));
        r.upload(ninfer::bench::random_data(un, -4.0f, 4.0f, 2));
        ninfer::bench::run_case("residual_add tokens=4096 hidden=4096", 3.0 * n * sizeof(float),
                                [&] { ninfer::ops::residual_add(x.get(), r.get(), y.get(), n, nullptr); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ninfer_residual_add_bench: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
