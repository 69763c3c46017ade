"""Inductor's Triton templates (max-autotune's GEMM kernels, ``triton_tem_*``) as standalone
kernels and back, without importing torch or triton.

A template kernel differs from Inductor's other kernels in two ways (torch's
``select_algorithm.py``):

- its config lives inside the body, ``BLOCK_M : tl.constexpr = 128`` (one line per meta
  parameter, before the first other statement), with ``num_warps``/``num_stages`` in its
  ``@triton_heuristics.template(...)`` decorator, and its problem sizes as body literals
  (``M = 4096``);
- it launches on a ``FixedGrid``: the wrapper passes the grid, computed for the config
  autotuning chose, as three extra arguments of ``run`` (``get_args()`` returns them last).

The standalone form moves the meta parameters a search may change into the signature as
``tl.constexpr`` defaults (the tuner's knobs, docs/triton.md) and launches on a grid that
follows them; ``inductor_form`` moves them back, so Inductor compiles a candidate as it compiles
its own template. Which parameters move:

- ``GROUP_M`` (the tile swizzle: any value ≥ 1 keeps every tile covered), always;
- ``BLOCK_M``/``BLOCK_N`` where the grid is the GEMM templates' one program per output tile
  (``grid_m``/``grid_n`` from ``tl.program_id(0)``, and the captured grid is
  ``cdiv(M, BLOCK_M) · cdiv(N, BLOCK_N)``), never for a persistent (``NUM_SMS``) template;
- ``BLOCK_K`` where the loads along K are masked (``EVEN_K`` False), or where ``K`` is a body
  literal: Inductor renders a template with ``EVEN_K`` True without the masks, so a BLOCK_K
  that does not divide K would read past the rows; ``tl.static_assert(K % BLOCK_K == 0)`` at
  the top of the body makes such a candidate fail to compile instead.

Any other template (a convolution's, a persistent TMA GEMM's) stands alone on its captured grid
with only ``num_warps``/``num_stages`` to tune.
"""

from __future__ import annotations

import ast
import re

import attrs

GRID_WORDS = ("BLOCK_M", "BLOCK_N")
_CONSTEXPR_LINE = re.compile(r"^(?P<indent>\s+)(?P<name>[A-Z_][A-Z0-9_]*)\s*:\s*tl\.constexpr\s*=\s*"
                             r"(?P<value>.+?)\s*$")
_SIZE_LINE = re.compile(r"^\s+(?P<name>[MNK])\s*=\s*(?P<value>\d+)\s*$", re.M)


@attrs.frozen
class Template:
    """What the standalone form needs of one template's ``@triton.jit`` function."""

    name: str
    runtime: tuple[str, ...]  # the signature's parameters (pointers), in order
    meta: dict[str, str]  # in-body constexpr name -> its value's source text, in order
    sizes: dict[str, int]  # body literals M, N, K (absent where the shape is symbolic)
    tile_grid: bool  # one program per (BLOCK_M, BLOCK_N) output tile, swizzled by GROUP_M

    def movable(self, fixed_grid: tuple[int, ...]) -> tuple[str, ...]:
        """The meta parameters that may move into the signature (module doc)."""
        ints = {k for k, v in self.meta.items() if re.fullmatch(r"\d+", v)}
        moved = [k for k in ("GROUP_M",) if k in ints]
        if self.tile_grid and len(fixed_grid) == 3 and {"M", "N"} <= set(self.sizes) \
                and set(GRID_WORDS) <= ints \
                and fixed_grid[0] == self.tiles(int(self.meta["BLOCK_M"]), int(self.meta["BLOCK_N"])):
            moved += list(GRID_WORDS)
        if "BLOCK_K" in ints and (self.meta.get("EVEN_K") == "False" or "K" in self.sizes):
            moved.append("BLOCK_K")
        return tuple(k for k in self.meta if k in moved)

    def tiles(self, block_m: int, block_n: int) -> int:
        """Programs of the tile grid: cdiv(M, BLOCK_M) · cdiv(N, BLOCK_N)."""
        return -(-self.sizes["M"] // block_m) * -(-self.sizes["N"] // block_n)


def _function(source: str, name: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise ValueError(f"no function {name} in the template's source")
    return fn


def parse_template(jit_source: str, name: str) -> Template:
    """The template's parts from its ``@triton.jit`` function's text."""
    fn = _function(jit_source, name)
    lines = jit_source.splitlines()
    meta: dict[str, str] = {}
    for stmt in fn.body:  # the leading run of `NAME : tl.constexpr = value` lines
        if isinstance(stmt, ast.Expr) and ast.unparse(stmt.value).startswith("tl.static_assert("):
            continue  # the standalone form's check on BLOCK_K (standalone_form)
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and ast.unparse(stmt.annotation).endswith("constexpr") and stmt.value is not None):
            break
        meta[stmt.target.id] = ast.get_source_segment(jit_source, stmt.value) or ""
    text = "\n".join(lines[fn.lineno - 1:fn.end_lineno])  # the function's own text
    sizes = {m.group("name"): int(m.group("value")) for m in _SIZE_LINE.finditer(text)}
    tile_grid = ("NUM_SMS" not in text and re.search(r"pid\s*=\s*tl\.program_id\(0\)", text) is not None
                 and re.search(r"grid_m\s*=\s*\(M \+ BLOCK_M - 1\) // BLOCK_M", text) is not None
                 and re.search(r"grid_n\s*=\s*\(N \+ BLOCK_N - 1\) // BLOCK_N", text) is not None)
    return Template(name, tuple(a.arg for a in fn.args.args), meta, sizes, tile_grid)


def _rewrite(jit_source: str, name: str, params: list[str], body_first: list[str],
             drop: set[str]) -> str:
    """The function with a new parameter list, ``body_first`` lines at the top of its body and
    the in-body constexpr lines of ``drop`` removed."""
    fn = _function(jit_source, name)
    lines = jit_source.splitlines()
    header_start, body_start = fn.lineno - 1, fn.body[0].lineno - 1
    indent = re.match(r"\s*", lines[body_start]).group(0)  # type: ignore[union-attr]
    body: list[str] = []
    for line in lines[body_start:]:
        match = _CONSTEXPR_LINE.match(line)
        if match and match.group("name") in drop:
            continue
        body.append(line)
    header = f"def {name}({', '.join(params)}):"
    return "\n".join(lines[:header_start] + [header] + [indent + b for b in body_first] + body) + "\n"


def standalone_form(jit_source: str, name: str, fixed_grid: tuple[int, ...]) -> tuple[str, str]:
    """(the jit function with its movable meta parameters as constexpr defaults, the launch
    grid as a lambda of the launch's meta-parameters)."""
    tpl = parse_template(jit_source, name)
    moved = tpl.movable(fixed_grid)
    params = list(tpl.runtime) + [f"{k}: tl.constexpr = {tpl.meta[k]}" for k in moved]
    first = []
    if "BLOCK_K" in moved and tpl.meta.get("EVEN_K", "True") != "False":
        first.append(f'tl.static_assert({tpl.sizes["K"]} % BLOCK_K == 0, "the loads along K are '
                     f'unmasked (EVEN_K): BLOCK_K must divide K = {tpl.sizes["K"]}")')
    text = _rewrite(jit_source, name, params, first, set(moved))
    if len(fixed_grid) != 3:
        raise ValueError(f"{name}: a template's get_args() ends with its three grid values, "
                         f"found {list(fixed_grid)}")
    if set(GRID_WORDS) <= set(moved):
        x = (f"triton.cdiv({tpl.sizes['M']}, meta['BLOCK_M']) * "
             f"triton.cdiv({tpl.sizes['N']}, meta['BLOCK_N'])")
    else:
        x = str(fixed_grid[0])
    return text, f"lambda meta: ({x}, {fixed_grid[1]}, {fixed_grid[2]})"


def inductor_form(candidate_jit: str, name: str, runtime: tuple[str, ...]) -> str:
    """A candidate's template function in Inductor's form: every constexpr parameter beyond
    Inductor's ``runtime`` ones back as an in-body line, in the signature's order, above the
    body's own lines (the static_assert on BLOCK_K among them)."""
    fn = _function(candidate_jit, name)
    args = fn.args.args
    defaults = dict(zip([a.arg for a in args[len(args) - len(fn.args.defaults):]],
                        fn.args.defaults, strict=True))
    extra = [a.arg for a in args if a.arg not in runtime]
    missing = [a.arg for a in args if a.arg in extra and a.arg not in defaults]
    if missing or [a.arg for a in args if a.arg not in extra] != list(runtime):
        raise ValueError(f"the candidate's {name} takes ({', '.join(a.arg for a in args)}): "
                         f"a template keeps Inductor's parameters ({', '.join(runtime)}) first, "
                         "and every other parameter needs a default")
    first = [f"{k} : tl.constexpr = {ast.get_source_segment(candidate_jit, defaults[k])}" for k in extra]
    return _rewrite(candidate_jit, name, list(runtime), first, set())


def tile_programs(inductor_source: str, name: str) -> int | None:
    """The grid's x size for a template in Inductor's form at its own BLOCK_M/BLOCK_N (a
    candidate's tiles differ from the captured ones), None where the grid is not the tile grid."""
    if not ("'grid_type': 'FixedGrid'" in inductor_source
            and "triton_heuristics.template" in inductor_source):
        return None
    tpl = parse_template(inductor_source, name)
    if not (tpl.tile_grid and {"M", "N"} <= set(tpl.sizes)
            and all(re.fullmatch(r"\d+", tpl.meta.get(k, "")) for k in GRID_WORDS)):
        return None
    return tpl.tiles(int(tpl.meta["BLOCK_M"]), int(tpl.meta["BLOCK_N"]))
