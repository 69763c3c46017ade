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
            except ValueError:
                continue
    return out


def chosen_form(candidate_text: str) -> tuple[str | None, dict[str, str]]:
    """(the other form's function, its Inductor metadata) when the file runs Inductor's other
    reduction form (``REDUCTION_FORM = 1``), else (None, {})."""
    found = _module_literals(ast.parse(candidate_text))
    kernel, meta = found.get("FORM_KERNEL"), found.get("FORM_META")
    if found.get("REDUCTION_FORM") != 1 or not isinstance(kernel, str):
        return None, {}
    return kernel, {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}


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
        if form:  # the other form compiles with its own signature and metadata
            kws.update(form_meta)
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
