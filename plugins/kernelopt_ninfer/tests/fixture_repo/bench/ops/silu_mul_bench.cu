// Microbenchmark of ninfer::ops::silu_mul (512 rows, 4096 output columns).
#include <cstdio>
#include <exception>

#include "ninfer/device.h"
#include "ninfer/ops/silu_mul.h"
#include "ninfer_bench_common.h"

int main(int argc, char** argv) {
    ninfer::bench::parse_no_args(argc, argv);
    try {
        const int rows = 512, cols = 4096;
        const std::size_t n = static_cast<std::size_t>(rows) * cols;
        ninfer::DeviceArray<float> gu(2 * n), out(n);
        gu.upload(ninfer::bench::random_data(2 * n, -6.0f, 6.0f, 1));
        ninfer::bench::run_case("silu_mul rows=512 cols=4096", 3.0 * n * sizeof(float),
                                [&] { ninfer::ops::silu_mul(gu.get(), out.get(), rows, cols, nullptr); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ninfer_silu_mul_bench: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
