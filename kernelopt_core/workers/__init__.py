"""The core's side of bench workers (docs/plugins.md, "Bench workers"): ``protocol`` (one
worker's pipes: requests, replies, pause, close), ``replies`` (what replies mean), ``spare`` (a
worker started ahead), ``pool`` (the runner's workers, one record per tree role), ``sweep``
(bulk screening in a worker) and ``screening`` (the planners' ``ctx.screen``). Spawning stays
process.py's; the child's side is ``kernelopt_core.bench_worker``."""
