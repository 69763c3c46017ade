// ninfer::Stream: cudaStream_t on CUDA; an opaque dummy pointer on the CPU path.
// nullptr is the default stream on both.
#pragma once

#ifdef NINFER_CPU_KERNELS
namespace ninfer {
struct CpuStream;
using Stream = CpuStream*;
}  // namespace ninfer
#else
#include <cuda_runtime_api.h>
namespace ninfer {
using Stream = cudaStream_t;
}  // namespace ninfer
#endif
