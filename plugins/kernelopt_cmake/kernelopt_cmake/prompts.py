"""What the cmake backend adds to the planner's prompt."""

STRATEGIES = """Strategies that often pay off in CUDA/HIP/C++ kernels of this kind of project:
- coalesced global loads and stores (consecutive threads touch consecutive addresses);
- vector loads (float2/float4) where alignment and sizes allow, with a scalar tail;
- more independent work per thread (several rows or elements) to keep loads in flight;
- block and tile sizes matched to the problem; shared-memory tiles for transposed access;
- warp-level reductions (__shfl_down_sync) instead of shared-memory trees; fewer __syncthreads;
- on CPUs: cache blocking, contiguous inner loops the compiler can vectorize."""

