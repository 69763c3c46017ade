// Memory primitives: read-only (non-coherent cache) loads; VEC contiguous floats moved in 8- or
// 16-byte vector accesses where the address allows (CUDA), else one by one.
#pragma once

#include <cstdint>

#include "ops/common/cpu_cuda_shim.h"

namespace ninfer::common {

__device__ __forceinline__ float load_ro(const float* p) {
#ifdef NINFER_CPU_KERNELS
    return *p;
#else
    return __ldg(p);
#endif
}

template <int VEC>
__device__ __forceinline__ void load_vec(const float* p, float (&out)[VEC]) {
#ifndef NINFER_CPU_KERNELS
    constexpr int kWide = VEC % 4 == 0 ? 4 : (VEC % 2 == 0 ? 2 : 1);
    if constexpr (kWide > 1) {
        if ((reinterpret_cast<std::uintptr_t>(p) & (kWide * sizeof(float) - 1)) == 0) {
            for (int v = 0; v < VEC; v += kWide) {
                if constexpr (kWide == 4) {
                    const float4 q = __ldg(reinterpret_cast<const float4*>(p + v));
                    out[v] = q.x; out[v + 1] = q.y; out[v + 2] = q.z; out[v + 3] = q.w;
                } else {
                    const float2 q = __ldg(reinterpret_cast<const float2*>(p + v));
                    out[v] = q.x; out[v + 1] = q.y;
                }
            }
            return;
        }
    }
#endif
    for (int v = 0; v < VEC; ++v) out[v] = load_ro(p + v);
}

template <int VEC>
__device__ __forceinline__ void store_vec(float* p, const float (&in)[VEC]) {
#ifndef NINFER_CPU_KERNELS
    constexpr int kWide = VEC % 4 == 0 ? 4 : (VEC % 2 == 0 ? 2 : 1);
    if constexpr (kWide > 1) {
        if ((reinterpret_cast<std::uintptr_t>(p) & (kWide * sizeof(float) - 1)) == 0) {
            for (int v = 0; v < VEC; v += kWide) {
                if constexpr (kWide == 4)
                    *reinterpret_cast<float4*>(p + v) = make_float4(in[v], in[v + 1], in[v + 2], in[v + 3]);
                else
                    *reinterpret_cast<float2*>(p + v) = make_float2(in[v], in[v + 1]);
            }
            return;
        }
    }
#endif
    for (int v = 0; v < VEC; ++v) p[v] = in[v];
}

}  // namespace ninfer::common
