"""``[ninfer]`` in kernelopt.toml: the option table of the ``ninfer`` backend and
``run-ninfer``."""

from __future__ import annotations

import attrs

from kernelopt_core.api import option, option_table


@option_table("ninfer")
@attrs.frozen
class NInferOptions:
    """``[ninfer]`` in kernelopt.toml; flags of ``kernelopt run`` and ``run-ninfer``. ``op`` and
    ``case`` carry the ``ninfer_`` prefix in their names: plain, they would be the same option
    (a string, unset) as kernelopt-llamacpp's and share its ``--op`` and ``--case``; so
    ``--ninfer-op`` is the flag whether or not kernelopt-llamacpp is installed (``run-ninfer``
    takes ``--op`` and ``--case``)."""

    ninfer_op: str | None = option(None, "The NInfer op to optimize (run-ninfer --op).")
    ninfer_case: str | None = option(None, "The bench case to time, its tag as the bench prints "
                                     "it (run-ninfer --case); the largest median when unset.")
    device: str = option("auto", "Where NInfer's kernels run: cuda, or cpu through the tree's "
                         "NINFER_CPU_KERNELS (fixtures only); auto: cuda when nvcc and a GPU are "
                         "here, else cpu when the tree offers it.", choices=("auto", "cuda", "cpu"))
    cuda_arch: str | None = option(None, "CMAKE_CUDA_ARCHITECTURES to build, one the tree's "
                                   "CMakeLists.txt allows; the GPU's own when unset.")
    artifact: str | None = option(None, "A .ninfer artifact: the engine gate runs ninfer_bench "
                                  "-p 512 -n 128 over it, baseline against candidate.")
    editable: tuple[str, ...] = option((), "Override the op table: the files the search may "
                                       "edit (comma-separated, relative to the tree).")
    context: tuple[str, ...] = option((), "Override the op table: the files shown as context.")
    bench_args: str = option("", "Arguments for the op's bench program (e.g. '--kind "
                             "dflash_hidden --tokens 1024'), to narrow the cases it runs.")

