"""The engine's swap, pure text: a candidate's standalone kernel file put back into Inductor's
kernel source, its launch config fixed (engine.py's compile reads the result). A file with
both reduction forms (inductor_forms.py) swaps in the form its ``REDUCTION_FORM`` picks: the
other form's function under the kernel's name, with that form's Inductor metadata."""

from __future__ import annotations

import ast
import re

from kernelopt_triton.inductor_template import inductor_form


def _module_literals(tree: ast.Module) -> dict[str, object]:
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                continue
    return out


def chosen_form(candidate_text: str) -> tuple[str | None, dict[str, str]]:
    """(the other form's function, its Inductor metadata) when the file runs Inductor's other
    reduction form (``REDUCTION_FORM = 1``), else (None, {}). A file that switches to a form
    it does not describe is refused: the screen would time one form and the engine another."""
    found = _module_literals(ast.parse(candidate_text))
    kernel, meta = found.get("FORM_KERNEL"), found.get("FORM_META")
    if "REDUCTION_FORM" not in found or found["REDUCTION_FORM"] == 0:
        return None, {}
    if found["REDUCTION_FORM"] != 1 or not isinstance(kernel, str) or not isinstance(meta, dict) \
            or not {"triton_meta", "inductor_meta"} <= set(meta):
        raise ValueError("REDUCTION_FORM is 0 (Inductor's form) or 1 (the form FORM_KERNEL and "
                         "FORM_META describe, both as generated)")
    return kernel, {str(k): str(v) for k, v in meta.items()}


# of the other form's metadata, what its code generation decided (its signature: a persistent
# kernel has no R0_BLOCK parameter; its loads and reductions); the rest (the device, the mode's
# autotuning flags) stays the engine's own compile's
FORM_TRITON_META = ("signature", "constants", "configs")
FORM_INDUCTOR_META = ("no_x_dim", "num_load", "num_store", "num_reduction", "tiling_scores",
                      "atomic_add_found", "kernel_num_gb")


def _entries(text: str) -> list[tuple[str | None, str]]:
    """A dict literal's source as (key, value source) pairs; None keys for ``**x``."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Dict):
        raise ValueError(f"not a dict: {text[:80]}")
    out: list[tuple[str | None, str]] = []
    for key, value in zip(node.keys, node.values, strict=True):
        segment = ast.get_source_segment(text.strip(), value) or ast.unparse(value)
        if key is None:
            out.append((None, segment))
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            out.append((key.value, segment))
        else:
            raise ValueError(f"a key that is not a string in {text[:80]}")
    return out


def dict_with(text: str, updates: dict[str, str]) -> str:
    """A dict literal's source with each key of ``updates`` set to that value source."""
    entries = _entries(text)
    keys = {k for k, _ in entries}
    merged = [(k, updates.get(k, v) if k is not None else v) for k, v in entries]
    merged += [(k, v) for k, v in updates.items() if k not in keys]
    return "{" + ", ".join(f"**{v}" if k is None else f"{k!r}: {v}" for k, v in merged) + "}"


def _form_meta(kws: dict[str | None, str | None], form_meta: dict[str, str]) -> None:
    """The engine's decorator keywords with the other form's own parts of its metadata."""
    for key, own in (("triton_meta", FORM_TRITON_META), ("inductor_meta", FORM_INDUCTOR_META)):
        theirs = {k: v for k, v in _entries(form_meta[key]) if k is not None and k in own}
        kws[key] = dict_with(kws.get(key) or "{}", theirs)


def candidate_parts(candidate_text: str, name: str) -> tuple[list[str], dict[str, int]]:
    """The candidate's @triton.jit functions (sources, NAME last) and its launch keywords: of
    the form it runs, under NAME, where the file holds two (``chosen_form``)."""
    tree = ast.parse(candidate_text)
    found = _module_literals(tree)
    form, _meta = chosen_form(candidate_text)
    runs = form or name
    idle = (name if form else found.get("FORM_KERNEL")) if "REDUCTION_FORM" in found else None
    lines = candidate_text.splitlines()
    funcs: list[tuple[int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            if node.name == idle:
                continue  # the form not run
            start = min(d.lineno for d in node.decorator_list) - 1
            text = "\n".join(lines[start:node.end_lineno]) + "\n"
            if node.name == runs != name:
                text = re.sub(rf"\b{re.escape(runs)}\b", name, text)
            funcs.append((1 if node.name == runs else 0, text))
    if not any(is_main for is_main, _ in funcs):
        raise ValueError(f"the candidate defines no @triton.jit function {runs}")
    config: dict[str, int] = {}
    for walked in ast.walk(tree):
        # NAME[grid](..., XBLOCK=64, num_warps=4): the launch keywords are the config.
        if (isinstance(walked, ast.Call) and isinstance(walked.func, ast.Subscript)
                and ast.unparse(walked.func.value) == runs):
            for kw in walked.keywords:
                if kw.arg and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, int):
                    config[kw.arg] = kw.value.value
    funcs.sort(key=lambda f: f[0])
    return [text for _, text in funcs], config


def swap_kernel_source(inductor_source: str, candidate_text: str, name: str) -> str:
    """Inductor's kernel source with the candidate's jit function(s) and a fixed launch config."""
    tree = ast.parse(inductor_source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise ValueError(f"kernel {name} not found in Inductor's source")
    heur = next((d for d in fn.decorator_list if isinstance(d, ast.Call)
                 and ast.unparse(d.func).startswith("triton_heuristics.")), None)
    funcs, config = candidate_parts(candidate_text, name)
    form, form_meta = chosen_form(candidate_text)
    lines = inductor_source.splitlines()
    start = min(d.lineno for d in fn.decorator_list) - 1
    end = fn.end_lineno or len(lines)
    decorator: list[str] = []
    if heur is not None:
        kws = {k.arg: ast.get_source_segment(inductor_source, k.value) for k in heur.keywords}
        if form:  # the other form compiles with its own signature
            _form_meta(kws, form_meta)
        # the candidate's config as given: max-autotune's coordinate descent would otherwise
        # tune a fixed config again on its first run (triton_heuristics.CachingAutotuner.run)
        kws["inductor_meta"] = dict_with(kws.get("inductor_meta") or "{}",
                                         {"coordinate_descent_tuning": "False"})
        if ast.unparse(heur.func) == "triton_heuristics.template":
            # a GEMM template: its meta parameters back in its body, num_warps/num_stages in
            # its own decorator (inductor_template.py); the grid follows in engine_switch
            meta = sorted(set(config) - {"num_warps", "num_stages"})
            if meta:  # the tiles the grid and the bench follow are the body's: one place
                raise ValueError(f"a GEMM template's {', '.join(meta)} given at its launch: "
                                 "its tiles are set in its body (BLOCK_M: tl.constexpr = 64)")
            funcs[-1] = inductor_form(funcs[-1], name, tuple(a.arg for a in fn.args.args))
            kws.update({k: str(v) for k, v in config.items() if k in ("num_warps", "num_stages")})
            decorator = ["@triton_heuristics.template("]
            decorator += [f"    {k}={v}," for k, v in kws.items() if k]
            decorator.append(")")
        elif config:
            decorator = [
                "@triton_heuristics.fixed_config(",
                f"    config={config!r},",
                "    filename=__file__,",
                f"    triton_meta={kws.get('triton_meta', '{}')},",
                f"    inductor_meta={kws.get('inductor_meta', '{}')},",
                ")",
            ]
        elif form:
            raise ValueError(f"the other form {form} is launched without keywords: no config")
        else:  # no launch keywords found: keep Inductor's own autotuning
            decorator = lines[heur.lineno - 1:heur.end_lineno]
    helpers, main = funcs[:-1], funcs[-1]
    new = lines[:start] + [h.rstrip("\n") for h in helpers] + decorator + main.rstrip("\n").splitlines()
    return "\n".join(new + lines[end:]) + "\n"
