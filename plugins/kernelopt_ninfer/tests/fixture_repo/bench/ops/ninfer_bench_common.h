// Common harness of the per-op microbenchmarks. Per case: warm-ups, inner iterations sized to
// ~500 us per timed batch, then batches until both the minimum repeat count and the minimum
// total time are reached; one line per case:
//   <tag>  median=   X.XX us  min=   X.XX us  p95=   X.XX us   X.X GB/s  (X.X% of 1792 GB/s roofline)
// CUDA path: CUDA events, 20 warm-ups, >= 100 repeats and >= 500 ms.
// CPU path: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time the bench spends preempted
// or descheduled on a loaded machine is not its kernel's), 3 warm-ups, >= 30 repeats and
// >= 150 ms (fixture only, keeps CI fast).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "ninfer/device.h"

namespace ninfer::bench {

#ifdef NINFER_CPU_KERNELS
constexpr int kWarmups = 3;
constexpr int kMinRepeats = 30;
constexpr double kMinTotalUs = 150e3;
#else
constexpr int kWarmups = 20;
constexpr int kMinRepeats = 100;
constexpr double kMinTotalUs = 500e3;
#endif
constexpr int kMaxRepeats = 100000;
constexpr double kBatchTargetUs = 500.0;
constexpr double kRooflineGBs = 1792.0;  // RTX 5090, hard-coded like upstream

#ifdef NINFER_CPU_KERNELS
class Timer {
public:
    void start() { t0_ = now_us(); }
    double stop_us() { return now_us() - t0_; }

private:
    static double now_us() {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
    }
    double t0_ = 0.0;
};
#else
class Timer {
public:
    Timer() {
        cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
        cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    }
    ~Timer() {
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
    }
    void start() { cuda_check(cudaEventRecord(start_, nullptr), "cudaEventRecord"); }
    double stop_us() {
        cuda_check(cudaEventRecord(stop_, nullptr), "cudaEventRecord");
        cuda_check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
        check_launch("kernel");
        float ms = 0.0f;
        cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
        return 1e3 * ms;
    }

private:
    cudaEvent_t start_{}, stop_{};
};
#endif

// Times fn (one op call) and prints the case's line. bytes: bytes one call moves.
template <class F>
void run_case(const std::string& tag, double bytes, F&& fn) {
    Timer timer;
    auto batch_us = [&](int iters) {
        timer.start();
        for (int i = 0; i < iters; ++i) fn();
        return timer.stop_us();
    };
    for (int i = 0; i < kWarmups; ++i) fn();
    device_synchronize();
    const double one = std::max(batch_us(1), 1e-3);
    const int iters = static_cast<int>(std::clamp(std::ceil(kBatchTargetUs / one), 1.0, 1e6));

    std::vector<double> samples;
    double total_us = 0.0;
    while ((static_cast<int>(samples.size()) < kMinRepeats || total_us < kMinTotalUs) &&
           static_cast<int>(samples.size()) < kMaxRepeats) {
        const double t = batch_us(iters);
        total_us += t;
        samples.push_back(t / iters);
    }
    device_synchronize();

    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    const double p95 = samples[static_cast<std::size_t>(std::ceil(0.95 * n)) - 1];
    const double gbs = bytes / (median * 1e3);
    std::printf("%s  median=%7.2f us  min=%7.2f us  p95=%7.2f us %5.1f GB/s  (%.1f%% of %.0f GB/s roofline)\n",
                tag.c_str(), median, samples.front(), p95, gbs, 100.0 * gbs / kRooflineGBs, kRooflineGBs);
    std::fflush(stdout);
}

// Deterministic non-zero synthetic data in [lo, hi).
inline std::vector<float> random_data(std::size_t n, float lo, float hi, std::uint64_t seed) {
    std::vector<float> out(n);
    std::uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (auto& v : out) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f);
        v = lo + (hi - lo) * u;
        if (v == 0.0f) v = 0.5f * hi;
    }
    return out;
}

// Benches take no options; anything else is a usage error (exit 2).
inline void parse_no_args(int argc, char** argv) {
    if (argc > 1) {
        std::fprintf(stderr, "usage: %s   (no options; prints one line per case)\n", argv[0]);
        std::exit(std::string(argv[1]) == "--help" ? 0 : 2);
    }
}

}  // namespace ninfer::bench
