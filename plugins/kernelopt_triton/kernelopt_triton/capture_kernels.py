"""What a compile left behind: its wrapper modules (one a compiled graph), the kernels they
define, under the names UniqueKernelNames gave them, and the config Inductor's autotuner
settled on per kernel (inductor.py's capture, and its other reduction forms)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kernelopt_triton.engine_switch import UniqueKernelNames, renamed_source
from kernelopt_triton.inductor_parse import (
    is_wrapper_module,
    parse_call_sites,
    parse_kernel_source,
    parse_output_code,
)


def chosen_configs() -> dict[str, dict[str, int]]:
    """The config Inductor's autotuner settled on per kernel, read from the loaded modules."""
    from torch._inductor.codecache import PyCodeCache

    modules = list(PyCodeCache.modules) + list(PyCodeCache.modules_no_attr.values())
    chosen: dict[str, dict[str, int]] = {}
    for module in modules:
        for name, obj in list(vars(module).items()):
            launchers = getattr(obj, "launchers", None)
            if not name.startswith("triton_") or not launchers:
                continue
            cfg = launchers[0].config
            # the kernel's own name (UniqueKernelNames may have renamed it; the global keeps
            # Inductor's name, which another graph's kernel also has)
            name = str((getattr(obj, "inductor_meta", None) or {}).get("kernel_name") or name)
            chosen[name] = {**{k: int(v) for k, v in cfg.kwargs.items()},
                            "num_warps": int(cfg.num_warps), "num_stages": int(cfg.num_stages)}
    return chosen


@attrs.frozen
class Found:
    """One kernel a wrapper module defines: its name (UniqueKernelNames'), its source under
    that name, its kernels.json entry, its graph (the wrapper module's resolved path) and
    Inductor's own name in that graph."""

    name: str
    source: str
    entry: dict[str, Any]
    graph: str
    inductor_name: str


def kernels_of(wrappers: list[Path], names: UniqueKernelNames,
               configs: dict[str, dict[str, int]]) -> list[Found]:
    """Each kernel the wrapper modules define, by the names ``names`` gave them."""
    found = []
    for gi, wrapper in enumerate(wrappers):
        sites = parse_call_sites(wrapper.read_text())
        for kdef in parse_output_code(wrapper.read_text()):
            name = names.renamed.get((str(wrapper.resolve()), kdef.name), kdef.name)
            source = renamed_source(kdef.source, kdef.name, name) if name != kdef.name else kdef.source
            ks = parse_kernel_source(source, name)
            found.append(Found(name, source, {
                "name": name, "file": f"kernels/{name}.py", "wrapper": f"output_code/graph_{gi}.py",
                **({"inductor_name": kdef.name} if name != kdef.name else {}),
                "device": kdef.device_str, "heuristic": ks.heuristic, "grid_type": ks.grid_type,
                "launch": configs.get(name, {}), "static_calls": len(sites.get(kdef.name, [])),
                "args": [a.to_json() for a in ks.args], "num_gb": ks.num_gb,
            }, str(wrapper.resolve()), kdef.name))
    return found


def wrapper_modules(cache: Path) -> list[Path]:
    """The wrapper modules (one a compiled graph) under an Inductor cache, in path order."""
    return sorted(p for p in cache.rglob("*.py") if is_wrapper_module(p.read_text(errors="replace")))
