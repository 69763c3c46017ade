"""Can this machine build the tree, and for which device: the tree's guards against the GPU and
nvcc found here, decided before anything is configured.

NInfer's root CMakeLists.txt stops the configure with ``message(FATAL_ERROR ...)`` inside an
``if()`` when the CUDA architecture or the CUDA version is not one it supports. Upstream::

    if(NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "120a")
      message(FATAL_ERROR "NInfer supports only CMAKE_CUDA_ARCHITECTURES=120a; got ...")
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13.1)
      message(FATAL_ERROR "NInfer requires CUDA 13.1 or newer; found ...")

Relaxed trees list several architectures (``IN_LIST`` a ``set()`` list, ``STREQUAL ... AND NOT
... STREQUAL``, ``MATCHES``) and may guard the version per architecture; a tree with no
architecture guard accepts any. The guards are read from the text (NInfer keeps these conditions
simple), so the refusal can name what the tree needs next to what was found, before any
configure.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from kernelopt_core.api import (
    CudaGpu,
    Nvcc,
    PrerequisiteError,
    UsageError,
    cuda_gpus,
    find_nvcc,
    nvcc_version,
)
from kernelopt_ninfer.cmakelists import calls, expand, options

ARCH_VAR = "CMAKE_CUDA_ARCHITECTURES"
VERSION_VAR = "CMAKE_CUDA_COMPILER_VERSION"


@attrs.frozen
class Guards:
    """What the tree's CMakeLists.txt accepts. ``archs`` None: any architecture."""

    archs: tuple[str, ...] | None
    arch_text: str  # the tree's own words (the FATAL_ERROR message), for the refusal
    # (architecture it applies to or None for all, lowest version, first version refused or None)
    versions: tuple[tuple[str | None, str | None, str | None], ...]
    version_text: str
    cpu_kernels: bool  # the tree offers -DNINFER_CPU_KERNELS=ON (a CPU stand-in, never upstream)

    def arch_allowed(self, arch: str) -> bool:
        return self.archs is None or arch in self.archs

    def version_problem(self, arch: str, version: str) -> str | None:
        """Why CUDA ``version`` cannot build ``arch`` here, or None."""
        for applies, low, high in self.versions:
            if applies is not None and applies != arch:
                continue
            if low is not None and _ver(version) < _ver(low):
                return f"CUDA ≥ {low}"
            if high is not None and _ver(version) >= _ver(high):
                return f"CUDA < {high}"
        return None


def _ver(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _set_lists(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for call in calls(text):
        if call.name == "set" and call.args:
            values = list(call.args[1:])
            if "CACHE" in values:
                values = values[:values.index("CACHE")]
            found[call.args[0]] = [v for value in values for v in expand(value, found).split(";") if v]
    return found


def _fatal_guards(text: str) -> list[tuple[str, str]]:
    """(the enclosing if()'s condition, the FATAL_ERROR message) for every fatal message."""
    out: list[tuple[str, str]] = []
    stack: list[str] = []
    for call in calls(text):
        if call.name == "if":
            stack.append(call.raw)
        elif call.name == "endif" and stack:
            stack.pop()
        elif call.name == "elseif" and stack:
            stack[-1] = call.raw  # the branch's own condition guards what follows
        elif call.name == "else" and stack:
            stack[-1] = ""  # not evaluated: an else branch's guard is not read
        elif call.name == "message" and call.args[:1] == ("FATAL_ERROR",) and stack and stack[-1]:
            out.append((" ".join(stack[-1].split()), " ".join(call.args[1:])))
    return out


def _words(message: str, lists: dict[str, list[str]]) -> str:
    """The tree's message as a user reads it: its lists spelled out, the rest of its variables
    (what the configure would have found) as …, whitespace collapsed."""
    text = re.sub(r"\$\{(\w+)\}", lambda m: "…" if m.group(1).startswith("CMAKE_")
                  else " ".join(lists.get(m.group(1), [])) or "…", message)
    return " ".join(text.replace("'…'", "…").split())


def _archs_of(condition: str, message: str, lists: dict[str, list[str]]) -> list[str]:
    archs = re.findall(rf'{ARCH_VAR}\s+STREQUAL\s+"?([0-9]+[a-z]?)"?', condition)
    for name in re.findall(rf"{ARCH_VAR}\s+IN_LIST\s+(\w+)", condition):
        archs += lists.get(name, [])
    for pattern in re.findall(rf'{ARCH_VAR}\s+MATCHES\s+"([^"]+)"', condition):
        archs += re.findall(r"[0-9]+[a-z]?", pattern)
    if not archs:  # the message's own words: "=120a or 70", "in ${LIST}"
        for name in re.findall(r"\$\{(\w+)\}", message):
            if name != ARCH_VAR:
                archs += lists.get(name, [])
        head = message.split("got")[0]
        archs += re.findall(r"=\s*([0-9]+[a-z]?)", head)
        archs += re.findall(r"\bor\s+([0-9]+[a-z]?)\b", head)
    return list(dict.fromkeys(archs))


def read_guards(root: Path) -> Guards:
    """The architecture and CUDA-version guards of ``root/CMakeLists.txt``."""
    path = root / "CMakeLists.txt"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    lists = _set_lists(text)
    archs: list[str] = []
    arch_words: list[str] = []
    versions: list[tuple[str | None, str | None, str | None]] = []
    version_words: list[str] = []
    for condition, message in _fatal_guards(text):
        if VERSION_VAR in condition:
            applies = re.search(rf'{ARCH_VAR}\s+STREQUAL\s+"?([0-9]+[a-z]?)"?', condition)
            arch = applies.group(1) if applies else None
            low = re.search(rf"{VERSION_VAR}\s+VERSION_LESS\s+\"?([0-9.]+)", condition)
            high = re.search(rf"{VERSION_VAR}\s+VERSION_GREATER_EQUAL\s+\"?([0-9.]+)", condition)
            if low or high:
                versions.append((arch, low.group(1) if low else None, high.group(1) if high else None))
                version_words.append(_words(message, lists))
        elif ARCH_VAR in condition or ARCH_VAR in message:
            found = _archs_of(condition, message, lists)
            if found:  # a guard that names no architecture ("set CMAKE_CUDA_...") limits none
                archs += found
                arch_words.append(_words(message, lists))
    return Guards(archs=tuple(dict.fromkeys(archs)) if arch_words else None,
                  arch_text=" / ".join(arch_words), versions=tuple(versions),
                  version_text=" / ".join(version_words),
                  cpu_kernels="NINFER_CPU_KERNELS" in options(text))


# --------------------------------------------------------------------------- the machine


def choose_arch(guards: Guards, gpu: CudaGpu, forced: str | None) -> str | None:
    """The CMAKE_CUDA_ARCHITECTURES to build: ``forced`` when the tree allows it, else the GPU's
    own (``90``, or an arch-specific ``90a`` the tree lists); None when the tree allows neither."""
    if forced:
        return forced if guards.arch_allowed(forced) else None
    for arch in (gpu.arch, f"{gpu.arch}a", f"{gpu.arch}f"):
        if guards.arch_allowed(arch):
            return arch
    return None


def describe_needs(guards: Guards) -> str:
    """What the tree needs, in words: its architectures and CUDA versions."""
    parts = []
    if guards.archs is not None:
        parts.append(f"CMAKE_CUDA_ARCHITECTURES {' or '.join(guards.archs) or '(none readable)'}")
    for arch, low, high in guards.versions:
        span = " and ".join(s for s in (f"≥ {low}" if low else "", f"< {high}" if high else "") if s)
        parts.append(f"CUDA {span}" + (f" for {arch}" if arch else ""))
    return ", ".join(parts) or "no architecture or CUDA version guard"


# --------------------------------------------------------------------------- the decision


@attrs.frozen
class Platform:
    """Where the op runs: ``device`` cuda (``arch`` for CMAKE_CUDA_ARCHITECTURES, the probed
    ``nvcc`` and ``gpu``) or cpu (the tree's NINFER_CPU_KERNELS stand-in)."""

    device: str
    arch: str | None = None
    nvcc: Nvcc | None = None
    gpu: CudaGpu | None = None
    why: str = ""  # how the device was chosen, in words


def _family(arch: str) -> str:
    """``90`` for 90 and 90a: the compute capability an architecture's code runs on."""
    return arch.rstrip("abcdefghijklmnopqrstuvwxyz")


def decide(root: Path, device: str, forced_arch: str | None) -> Platform:
    """The device for ``--device auto|cuda|cpu``; raises PrerequisiteError (exit 3) where the
    tree cannot build here, naming what was found and what the tree needs, before any build."""
    guards = read_guards(root)
    if device == "cpu":
        if not guards.cpu_kernels:
            raise PrerequisiteError(
                f"{root} has no NINFER_CPU_KERNELS option: its kernels build only with CUDA "
                "(upstream NInfer never offers a CPU path)",
                hint="run with --device cuda (or auto) on a machine with an NVIDIA GPU and nvcc")
        return Platform("cpu", why="--device cpu: the tree's NINFER_CPU_KERNELS=ON (kernels as C++)")
    path = find_nvcc()
    nvcc = nvcc_version(path) if path else None
    gpu = next(iter(cuda_gpus()), None)  # the first GPU nvidia-smi lists
    if nvcc is None or gpu is None:
        missing = " and ".join(m for m in (
            "" if nvcc else "no nvcc (the CUDA toolkit) on PATH or in /usr/local/cuda/bin",
            "" if gpu else "no NVIDIA GPU (`nvidia-smi --query-gpu=name,compute_cap` lists none)")
            if m)
        if device == "auto" and guards.cpu_kernels:
            return Platform("cpu", nvcc=nvcc, gpu=gpu,
                            why=f"--device auto: {missing}, and the tree offers NINFER_CPU_KERNELS "
                                "(a CPU stand-in: its times say nothing about a GPU)")
        raise PrerequisiteError(
            f"NInfer at {root} cannot build or run here: {missing}; the tree needs "
            f"{describe_needs(guards)}. Nothing was configured or built",
            hint="run on a machine with an NVIDIA GPU and its CUDA toolkit")
    if forced_arch and not guards.arch_allowed(forced_arch):
        raise UsageError(f"--cuda-arch {forced_arch} is not an architecture {root} allows "
                         f"({describe_needs(guards)})",
                         hint=f"choose one of {', '.join(guards.archs or ())}")
    if forced_arch and _family(forced_arch) != _family(gpu.arch):
        # sm_120a code does not run on an sm_90 GPU (nor the reverse): the tests would only fail
        raise UsageError(f"--cuda-arch {forced_arch} builds code this GPU cannot run: it is "
                         f"{gpu.name}, sm_{gpu.arch}",
                         hint=f"leave --cuda-arch out, or give one of sm_{gpu.arch}'s family "
                              f"({_family(gpu.arch)}, {_family(gpu.arch)}a) that the tree allows")
    arch = choose_arch(guards, gpu, forced_arch)
    problems = []
    if arch is None:
        problems.append(
            f"the GPU is {gpu.name} (compute capability {gpu.compute_cap}, sm_{gpu.arch}) and the "
            f"tree accepts only CMAKE_CUDA_ARCHITECTURES {' or '.join(guards.archs or ())} "
            f"(its CMakeLists.txt: \"{guards.arch_text}\")")
    needed = guards.version_problem(arch or (guards.archs or (gpu.arch,))[0], nvcc.release)
    if needed:
        problems.append(f"nvcc {nvcc.path} is CUDA {nvcc.release} ({nvcc.text}) and the tree "
                        f"requires {needed} (its CMakeLists.txt: \"{guards.version_text}\")")
    if problems:
        raise PrerequisiteError(
            f"NInfer at {root} cannot build on this machine, so nothing was configured or built: "
            + "; ".join(problems),
            hint="upstream NInfer builds only for sm_120a (RTX 5090) with CUDA ≥ 13.1; use a "
                 "machine that has them, or a port whose CMakeLists.txt allows this GPU")
    assert arch is not None
    return Platform("cuda", arch, nvcc, gpu,
                    why=f"{gpu.name} (compute capability {gpu.compute_cap}) with CUDA "
                        f"{nvcc.release}: CMAKE_CUDA_ARCHITECTURES={arch}"
                        + (" (--cuda-arch)" if forced_arch else ""))
