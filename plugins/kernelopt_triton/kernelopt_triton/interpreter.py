"""Triton's interpreter (TRITON_INTERPRET=1) made to run Inductor's kernels on the CPU: a
libdevice stand-in, a NumPy 2 patch, and Inductor's CPU backend set to emit Triton
(inductor.py's ``--device cpu`` capture, engine.py's CPU runs, harness.py's interpreter)."""

from __future__ import annotations

from typing import Any


class InterpreterLibdevice:
    """Stand-in for ``libdevice`` under TRITON_INTERPRET=1: names resolved in ``tl.math``.

    Triton's interpreter patches ``tl.math`` but not the libdevice extern functions Inductor's
    kernels call (rsqrt, erf, exp...). Resolved at call time, while the interpreter's patch is
    active. Functions tl.math lacks (tanh, log1p...) stay unsupported under the interpreter.
    """

    def __getattr__(self, name: str) -> Any:
        import triton.language as tl

        fn = getattr(tl.math, name, None) or getattr(tl, name, None)
        if fn is None:
            raise AttributeError(f"libdevice.{name} has no interpreter stand-in in triton.language.math")
        return fn


def patch_interpreter() -> None:
    """Make Triton 3.6's interpreter work with NumPy 2: scalar kernel arguments are 1-element
    arrays there, and ``int()`` of those (``tl.range(0, n, B)`` with a runtime ``n``) raises."""
    import numpy as np
    import triton.runtime.interpreter as interp

    original = getattr(interp, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_kernelopt", False):
        return

    def patched(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    patched._kernelopt = True  # type: ignore[attr-defined]
    interp._patch_lang_tensor = patched


def prepare_cpu_triton() -> None:
    """Let Inductor emit Triton kernels for the CPU and run them with Triton's interpreter."""
    import torch._inductor.config as config
    import torch._inductor.runtime.triton_helpers as helpers
    import torch.utils._triton as utils_triton
    from torch._inductor.codegen.triton import TritonKernel
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    config.cpu_backend = "triton"
    config.compile_threads = 1
    patch_interpreter()
    # Benchmarking every config under the interpreter takes minutes: take the first config.
    CachingAutotuner.benchmark_all_configs = lambda self, *a, **k: {  # type: ignore[method-assign]
        launcher: float(i) for i, launcher in enumerate(self.launchers)}
    # Inductor's benchmark-harness imports for the CPU are a multi-line def that its dedent
    # breaks (IndentationError in every kernel module); the CUDA variant is one import line.
    TritonKernel.imports_for_benchmark_kernel = lambda self: (  # type: ignore[method-assign]
        "\nfrom torch._dynamo.testing import rand_strided\n"
        "def get_raw_stream(_):\n    return 0\nimport torch\n")
    # The backend hash asks the active Triton driver, and the interpreter has none.
    utils_triton.triton_hash_with_backend = lambda: "0" * 64  # type: ignore[assignment]
    helpers.libdevice = InterpreterLibdevice()
