// Memory primitives: read-only (non-coherent cache) loads.
#pragma once

#include "ops/common/cpu_cuda_shim.h"

namespace ninfer::common {

__device__ __forceinline__ float load_ro(const float* p) {
#ifdef NINFER_CPU_KERNELS
    return *p;
#else
    return __ldg(p);
#endif
}

}  // namespace ninfer::common
