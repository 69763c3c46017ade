// Does the harness's seeded init_tensor_uniform give the same values for a seed in any process,
// whatever tensor the process initialized first (upstream's n_threads was static)?
#define main tbo_main
#include TBO_PATCHED  // the harnessed test-backend-ops.cpp (bench/llamacpp_seed_check.sh)
#undef main
#include "ggml-alloc.h"
#include "ggml-cpu.h"
#include <cstdio>

static std::vector<uint8_t> values(ggml_backend_t backend, ggml_type type, int64_t n0, int64_t n1, int64_t warm) {
    ggml_init_params params = {ggml_tensor_overhead() * 8, nullptr, true};
    ggml_context * ctx = ggml_init(params);
    ggml_tensor * first = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, warm);
    ggml_set_name(first, "first");
    ggml_tensor * t = ggml_new_tensor_2d(ctx, type, n0, n1);
    ggml_set_name(t, "a");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    init_tensor_uniform(first);  // a process's first tensor, of another size
    init_tensor_uniform(t);
    ggml_tensor * twin = ggml_new_tensor_2d(ctx, type, n0, n1);  // unnamed, the same shape as t
    ggml_set_name(twin, "a");
    ggml_backend_buffer_t buf2 = ggml_backend_alloc_ctx_tensors(ctx, backend);
    init_tensor_uniform(twin);
    std::vector<uint8_t> a(ggml_nbytes(t)), b(ggml_nbytes(twin));
    ggml_backend_tensor_get(t, a.data(), 0, a.size());
    ggml_backend_tensor_get(twin, b.data(), 0, b.size());
    printf("same name and shape, another place: %s\n", a == b ? "SAME VALUES" : "other values");
    ggml_backend_buffer_free(buf2);
    std::vector<uint8_t> out(ggml_nbytes(t));
    ggml_backend_tensor_get(t, out.data(), 0, out.size());
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return out;
}

int main(int argc, char ** argv) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    const ggml_type type = argc > 1 && std::string(argv[1]) == "q4_1" ? GGML_TYPE_Q4_1 : GGML_TYPE_F16;
    const int64_t warm = argc > 2 ? atoll(argv[2]) : 16;
    auto v = values(backend, type, 4096, 256, warm);
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : v) { h ^= b; h *= 1099511628211ull; }
    printf("%s %zu bytes hash %016llx\n", ggml_type_name(type), v.size(), (unsigned long long) h);
    return 0;
}
