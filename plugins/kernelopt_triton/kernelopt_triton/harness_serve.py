"""The harness's ``serve`` mode: a bench worker (kernelopt_core.bench_worker) that warms torch,
triton and the CUDA context before its hello, then answers load, check, bench, compile and
sweep requests on one Session of its tree's kernel file."""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path

from kernelopt_triton.harness_check import EXIT_CONVENTION, EXIT_WRONG, Mismatch
from kernelopt_triton.harness_device import setup_device
from kernelopt_triton.harness_session import Session
from kernelopt_triton.loading import ConventionError


def _library_imports(original: Path | None) -> list[str]:
    """The torch and triton modules the original kernel file imports at its top level (read,
    not run): Inductor's runtime alone takes seconds, better spent before the first request."""
    import ast

    try:
        tree = ast.parse(original.read_text(encoding="utf-8")) if original else None
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in tree.body if tree else []:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return [n for n in names if n.split(".")[0] in ("torch", "triton")]


def _warm_start(original: Path | None = None) -> None:
    torch, device, _interpreted = setup_device()
    import triton  # noqa: F401 - imported for its start-up cost, before any request

    for name in _library_imports(original):  # library code only: the original names them
        with contextlib.suppress(Exception):
            importlib.import_module(name)

    if device == "cuda":
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the context exists before the first locked request


def serve_requests(path: Path, oracle: Path | None) -> int:
    """The bench-worker loop (kernelopt_core.bench_worker): the channel is bound and ``hello``
    answered before torch, triton or any kernel file is imported. Requests: ``load`` (seeds:
    the original's expectations, then the candidate; its reply lists the optional ``compile``),
    ``check``, ``bench`` (work), ``compile`` (configs, sent outside the GPU lock just before
    their sweep) and ``sweep`` (configs). A failure is a reply (exit 1 wrong output, 2
    convention, 4 anything else)."""
    import traceback

    from kernelopt_core.bench_worker import Channel

    # torch, triton and the CUDA context before hello's reply: the core starts workers
    # outside the GPU lock, so this start-up is never counted as (or blocks) GPU time
    channel = Channel.from_env(setup=lambda: _warm_start(oracle))
    session: Session | None = None
    while (request := channel.read()) is not None:
        op = request.get("op")
        try:
            if op == "load":
                bench_seeds = tuple(int(s) for s in request.get("bench_seeds", (0, 1)))[:2]
                if session is not None:
                    session.close()
                session = Session(path, oracle, tuple(int(s) for s in request.get("seeds", ())),
                                  bench_seeds if len(bench_seeds) == 2 else (0, 1))
                channel.reply(request, ok=True, device=session.device,
                              interpreted=session.interpreted, ops=["compile"],
                              stages=session.stages)
                continue
            if session is None:
                raise ConventionError(f"request {op!r} before load")
            if op == "check":
                channel.reply(request, ok=True, lines=session.check())
            elif op == "bench":
                channel.reply(request, ok=True,
                              reading=session.bench(float(request.get("work", 1.0)),
                                                    request.get("iters")))
            elif op == "compile":
                channel.reply(request, ok=True, **session.compile(
                    request.get("configs", []), request.get("deadline_s")))
            elif op == "sweep":
                channel.reply(request, ok=True, **session.sweep(
                    request.get("configs", []), request.get("iters"), request.get("deadline_s")))
            else:
                channel.reply(request, ok=False, exit=2, error=f"unknown request {op!r}")
        except Mismatch as exc:
            channel.reply(request, ok=False, exit=EXIT_WRONG, error=f"MISMATCH: {exc}")
        except ConventionError as exc:
            channel.reply(request, ok=False, exit=EXIT_CONVENTION, error=f"kernel file: {exc}")
        except SystemExit as exc:  # a prerequisite missing (exit 3) or a kernel file leaving
            channel.reply(request, ok=False, exit=exc.code if isinstance(exc.code, int) else 4,
                          error=f"exited during {op}: {exc}")
            break
        except BaseException:
            channel.reply(request, ok=False, exit=4, error=traceback.format_exc()[-4000:])
    if session is not None:
        session.close()
    Channel.leave(0)
    return 0
