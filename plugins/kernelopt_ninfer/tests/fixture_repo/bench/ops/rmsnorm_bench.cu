// Microbenchmark of ninfer::ops::rmsnorm: two cases (a prefill-sized and a decode-sized batch).
#include <cstdio>
#include <exception>
#include <string>

#include "ninfer/device.h"
#include "ninfer/ops/rmsnorm.h"
#include "ninfer_bench_common.h"

int main(int argc, char** argv) {
    ninfer::bench::parse_no_args(argc, argv);
    try {
        struct Case {
            int rows, cols;
        };
        for (const Case c : {Case{4096, 4096}, Case{64, 4096}}) {
            const std::size_t n = static_cast<std::size_t>(c.rows) * c.cols;
            ninfer::DeviceArray<float> x(n), w(c.cols), y(n);
            x.upload(ninfer::bench::random_data(n, -2.0f, 2.0f, 1));
            w.upload(ninfer::bench::random_data(c.cols, 0.5f, 1.5f, 2));
            const double bytes = (2.0 * static_cast<double>(n) + c.cols) * sizeof(float);
            const std::string tag = "rmsnorm rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols);
            ninfer::bench::run_case(tag, bytes, [&] {
                ninfer::ops::rmsnorm(x.get(), w.get(), y.get(), c.rows, c.cols, 1e-6f, nullptr);
            });
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ninfer_rmsnorm_bench: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
