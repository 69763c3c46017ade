"""What the llamacpp backend adds to the planner's prompt."""

STRATEGIES = """Strategies for ggml-cuda ops (llama.cpp):
- the op's CUDA_*_BLOCK_SIZE and launch bounds against the pinned shape's row length;
- warp-level reductions (warp_reduce_sum/max in common.cuh) over shared-memory trees;
- vectorized loads (float2/float4, half2) where ne00 is a multiple and rows are aligned;
- several rows per block for short rows; fewer __syncthreads; keep the existing template
  specializations (ncols) that test-backend-ops exercises;
- correctness is NMSE against the CPU backend over every case of `test-backend-ops test -o OP`."""

