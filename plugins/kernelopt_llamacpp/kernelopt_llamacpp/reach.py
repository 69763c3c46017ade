"""Which kernels an edit can change, read from the source: a knob value that changes none of the
kernels the pinned case launches cannot change its time, so it is not a candidate.

For each changed span of an edited file (against the tree's own):

* inside a ``__global__`` function: that kernel;
* inside a host function: the kernels launched (``k<<<…>>>``, ``k<T><<<…>>>``,
  ``ggml_cuda_kernel_launch(k<T>, …)``, also through the functions of the op's files called) by
  the innermost block around the change that launches any — a branch's or a lambda's own
  launch, not the whole function's (cpy.cu's ``CUDA_CPY_BLOCK_SIZE`` sizes ``cpy_scalar``'s
  launch; the transposed branch beside it launches ``cpy_scalar_transpose`` with its tiles);
* at file scope (``#define CUDA_CPY_BLOCK_SIZE 64``, ``const int CUDA_CPY_TILE_DIM_2D = 32;``):
  the kernels whose body uses the name defined there, and those launched next to its uses in
  host code (as above).

A kernel reached through a launch is named with the template arguments the launch gives
(``norm_f32<1024>``), one reached through its body or a name it uses with none (every
instance). ``may_run`` tells whether such an instance can be one the pinned case dispatched
(ncu's ``norm_f32<32>``): norm.cu's 1024-thread block sizes the ``norm_f32<1024>`` launch, a
branch rows of fewer than 1024 columns never take.

None means "cannot tell" (a span in a template helper the launches do not name, a name the
files never use): the value is then judged as before, by compiling it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

GLOBAL = re.compile(r"__global__\s+(?:[\w:]+\s+)*?(\w+)\s*\(")  # a kernel's name after it
LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^()]*(?:\([^()]*\)[^()]*)*\)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DEFINED = re.compile(r"^\s*#\s*define\s+(\w+)|^\s*(?:static\s+)?(?:constexpr|const)\s+[\w:]+\s+(\w+)\s*=",
                      re.M)
_CALLED = re.compile(r"\b(\w+)\s*[(<]")
_CONSTANT = re.compile(r"^\s*#\s*define\s+(\w+)\s+\(?\s*(-?\d+)[uUlL]*\s*\)?\s*$"
                       r"|^\s*(?:static\s+)?(?:constexpr|const)\s+[\w:]+\s+(\w+)\s*=\s*(-?\d+)[uUlL]*\s*;",
                       re.M)
_TEMPLATE = re.compile(r"\btemplate\s*<((?:[^<>]|<[^<>]*>)*)>")  # a template head's parameters
_PARAMETER = re.compile(r"(\w+)\s*(?:=[^,]*)?(?:,|$)")  # each one's name (before any default)
_INTEGER = re.compile(r"^(?:\(\s*[\w\s]+\))?\s*(-?\d+)[uUlL]*$")  # 32, 32u, (int)32
DEPTH = 4


def template_args(text: str, at: int) -> str:
    """The template argument list at ``text[at:]`` (``<1024>`` of ``norm_f32<1024><<<…``), with
    its spacing collapsed; "" where none is given (``k<<<…``, ``k(…)``)."""
    while at < len(text) and text[at].isspace():
        at += 1
    if at >= len(text) or text[at] != "<" or text.startswith("<<<", at):
        return ""
    depth = 0
    for i in range(at, len(text)):
        depth += {"<": 1, ">": -1}.get(text[i], 0)
        if depth == 0:
            return re.sub(r"\s+", " ", text[at:i + 1])
        if text[i] in ";{}":
            break
    return ""


def split_instance(instance: str) -> tuple[str, list[str] | None]:
    """``norm_f32<1024, true>`` → ("norm_f32", ["1024", "true"]); a bare name: (name, None)."""
    name, _, rest = instance.partition("<")
    if not rest:
        return name.strip(), None
    args, depth, current = [], 0, ""
    for ch in rest[:-1]:
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += ch
    return name.strip(), [*args, current.strip()]


def dispatched_instance(kernel: str, function: str) -> str:
    """ncu's demangled ``void norm_f32<32>(const float *, …)`` → ``norm_f32<32>``."""
    found = re.search(rf"\b{re.escape(function)}\b", kernel)
    return function + (template_args(kernel, found.end()) if found else "")


def _declared_name(head: str) -> str:
    """The function a definition's head declares: the identifier just before its parameter
    list, the last top-level ``( … )`` (``template <float (*op)(float), …> static __global__
    void k_bin_bcast(…)`` is ``k_bin_bcast``); "" when the head is not a function's."""
    text = head.rstrip()
    while text.endswith("const") or text.endswith("noexcept"):
        text = text.rsplit(None, 1)[0] if " " in text else ""
    if not text.endswith(")"):
        return ""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            found = re.search(r"(\w+)\s*$", text[:i])
            return found.group(1) if found and found.group(1) not in _NOT_NAMES else ""
    return ""


_NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def _functions(text: str) -> list[tuple[int, int, str, bool]]:
    """(start, end, name, is a kernel) of every top-level function body ``{...}`` in ``text``
    (a brace at depth 0 preceded by a parameter list)."""
    out = []
    i = 0
    while i < len(text):
        if text[i] == "{":
            head = text[max(0, text.rfind(";", 0, i), text.rfind("}", 0, i)) + 1:i]
            head_clean = LAUNCH_BOUNDS.sub("", _COMMENT.sub(" ", head))
            j = matching_brace(text, i)
            name = _declared_name(head_clean)
            if name:
                out.append((i, j, name, "__global__" in head_clean))
            i = j
            continue
        i += 1
    return out


def matching_brace(text: str, start: int) -> int:
    """The offset just past the ``}`` that closes the ``{`` at ``start`` (the end of ``text``
    when it is never closed)."""
    level = 0
    for j in range(start, len(text)):
        level += {"{": 1, "}": -1}.get(text[j], 0)
        if level == 0:
            return j + 1
    return len(text)


class Reach:
    """The op's files (relative path → text) read once."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = dict(texts)
        self.functions = {path: _functions(text) for path, text in self.texts.items()}
        self.kernels = {name for spans in self.functions.values()
                        for _, _, name, kernel in spans if kernel}
        self.constants = self._file_constants()
        self.bodies: dict[str, list[str]] = {}
        for path, spans in self.functions.items():
            for start, end, name, _ in spans:
                self.bodies.setdefault(name, []).append(self.texts[path][start:end])

    def _file_constants(self) -> dict[str, str]:
        """Integer constants defined at file scope, outside every function (a local
        ``constexpr int c_ncols_dst = 2;`` per switch case is not one); a name defined with two
        values (``#if`` alternatives) or used as a template parameter anywhere is left out."""
        values: dict[str, set[str]] = {}
        for path, text in self.texts.items():
            spans = self.functions[path]
            for m in _CONSTANT.finditer(text):
                if not any(start <= m.start() < end for start, end, _, _ in spans):
                    values.setdefault(m.group(1) or m.group(3), set()).add(
                        str(int(m.group(2) or m.group(4))))
        parameters = {name for text in self.texts.values() for head in _TEMPLATE.findall(text)
                      for name in _PARAMETER.findall(head)}
        return {name: next(iter(vs)) for name, vs in values.items()
                if len(vs) == 1 and name not in parameters}

    def _instances(self, code: str) -> set[str]:
        """The kernels ``code`` names, each with the template arguments it gives there."""
        return {m.group(1) + template_args(code, m.end(1)) for m in _CALLED.finditer(code)
                if m.group(1) in self.kernels}

    def launched_in(self, code: str) -> set[str]:
        """Kernels ``code`` launches, also through the functions of these files it calls."""
        called = set(_CALLED.findall(code))
        seen, found = set(called), self._instances(code)
        frontier = sorted(called & set(self.bodies) - self.kernels)
        for _ in range(DEPTH):
            bodies = [body for name in frontier for body in self.bodies.get(name, [])]
            called = {c for body in bodies for c in _CALLED.findall(body)}
            found |= {instance for body in bodies for instance in self._instances(body)}
            frontier = sorted((called - seen) & set(self.bodies) - self.kernels)
            seen |= called
        return found

    def launched_near(self, path: str, function: tuple[int, int, str, bool], at: int) -> set[str]:
        """Kernels launched by the innermost block of host ``function`` around offset ``at``
        that launches any (a branch's or a lambda's own launch, not the whole function's)."""
        text = self.texts[path]
        start, end, _, _ = function
        stack, blocks = [], []
        for i in range(start, end):
            if text[i] == "{":
                stack.append(i)
            elif text[i] == "}" and stack:
                opened = stack.pop()
                if opened <= at < i:
                    blocks.append((opened, i + 1))  # closed innermost first
        for block_start, block_end in blocks:
            found = self.launched_in(text[block_start:block_end])
            if found:
                return found
        return set()

    def using(self, name: str) -> set[str]:
        """Kernels whose body uses ``name``, and those launched next to its uses in host code."""
        word = re.compile(rf"\b{re.escape(name)}\b")
        out: set[str] = set()
        for path, spans in self.functions.items():
            text = self.texts[path]
            for span in spans:
                start, end, function, kernel = span
                for use in word.finditer(text, start, end):
                    out |= {function} if kernel else self.launched_near(path, span, use.start())
        return out

    def touched(self, path: str, edited: str) -> set[str] | None:
        """The kernels that ``edited`` (a new text of ``path``) can change; None: cannot tell."""
        original = self.texts.get(path)
        if original is None:
            return None
        out: set[str] = set()
        lines = original.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        matcher = difflib.SequenceMatcher(None, lines, edited.splitlines(keepends=True),
                                          autojunk=False)
        for tag, l0, l1, _, _ in matcher.get_opcodes():
            if tag == "equal":
                continue
            # the changed lines as offsets (an insertion: the line it goes before)
            a0, a1 = offsets[l0], max(offsets[l0], offsets[l1] - 1)
            inside = [(s, e, n, k) for s, e, n, k in self.functions[path] if s <= a0 and a1 <= e]
            if inside:
                _, _, name, kernel = inside[0]
                reached = {name} if kernel else self.launched_near(path, inside[0], a0)
            else:  # file scope: the name defined on the changed line
                line_start = original.rfind("\n", 0, a0) + 1
                line_end = original.find("\n", a1)
                defined = _DEFINED.search(original[line_start:line_end if line_end >= 0 else None])
                defined_name = (defined.group(1) or defined.group(2)) if defined else None
                reached = self.using(defined_name) if defined_name else set()
            if not reached:
                return None
            out |= reached
        return out

    def _literal(self, arg: str) -> str | None:
        """A template argument's value where it is a literal or a constant of these files
        (``true`` is ncu's ``1``); None where it depends on what these files cannot tell."""
        arg = self.constants.get(arg, arg)
        if arg in ("true", "false"):
            return str(int(arg == "true"))
        found = _INTEGER.match(arg)
        return str(int(found.group(1))) if found else None

    def may_run(self, instance: str, dispatched: str) -> bool:
        """Whether the kernel ``instance`` an edit reaches can be the ``dispatched`` one: the same
        kernel, and no template argument both name as a different known value."""
        name, args = split_instance(instance)
        other, other_args = split_instance(dispatched)
        if name != other:
            return False
        # the source may leave defaulted arguments out; ncu names them all
        for mine, theirs in zip(args or [], other_args or [], strict=False):
            a, b = self._literal(mine), self._literal(theirs)
            if a is not None and b is not None and a != b:
                return False
        return True
