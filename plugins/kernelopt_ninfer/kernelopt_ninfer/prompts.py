"""What the ninfer backend adds to the planner's prompt."""

STRATEGIES = """Strategies for NInfer ops (contract → wrapper → launcher → kernel):
- edit only the launcher (grid/block/shared-memory policy) and the kernel; the wrapper's
  validation and dispatch and the contract header are not yours;
- block size and rows per block against the pinned case's row length; one warp per short row,
  one CTA per long row; __launch_bounds__ matching the block;
- vectorized loads (float4, bf16x2) where the row length and alignment allow, with a scalar
  tail for the rest (the test has odd shapes);
- warp-shuffle reductions from src/ops/common/ over shared-memory trees; fewer __syncthreads;
- correctness is the op's FP64 oracle test on fresh inputs per seed; NaN/Inf always fail."""

