"""The policy gate judges added *code*: prose in comments and strings is not a finding,
and the constructs each reward hack needs are, also through aliases."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernelopt_core.gates.policy import PolicyGate

PY_BASE = '"""A kernel file for kernelopt\'s triton backend."""\nimport torch\n'


def judge(path: str, new: str, old: str = "") -> tuple[bool, str]:
    result = PolicyGate().evaluate(SimpleNamespace(edits={path: new.encode()},
                                                   baseline_files={path: old.encode()}))
    return result.passed, result.reason


@pytest.mark.parametrize("path,new", [
    ("k.py", '"""Rewritten for kernelopt\'s triton backend: it does not print."""\nimport torch\n'),
    ("k.py", PY_BASE + "def launch(x, dtype: torch.dtype = torch.float32):\n"
                       "    out: torch.Tensor = torch.empty_like(x)\n"),
    ("k.py", PY_BASE + "class F(torch.autograd.Function):\n    def forward(ctx, x):\n"
                       "        ctx.scale = 2\n"),
    ("k.py", PY_BASE + 'msg = "the block kernelopt chose; no print(...) here"\n'),
    ("k.cu", '/* printf("x") is not used,\n   nor kernelopt */\nint a;\n'),
    ("k.cu", "struct P { int time; } p;\nvoid f() { p.time = 3; }\n"),
    ("k.cu", 'const char* s = "printf(\\"x\\")";\n'),
])
def test_honest_edits_pass(path: str, new: str) -> None:
    passed, reason = judge(path, new, PY_BASE if path.endswith(".py") else "")
    assert passed, reason


@pytest.mark.parametrize("path,new,reason", [
    ("k.py", PY_BASE + "import statistics as _st\n_st.median = lambda xs: 0.123\n", "rebinding"),
    ("k.py", PY_BASE + "import json\njson.dumps = str\n", "rebinding"),
    ("k.py", PY_BASE + "import os\nos.dup2(2, 1)\n", "output forging"),
    ("k.py", PY_BASE + "print('{\"time_ms\": 0.1}')\n", "output forging"),
    ("k.py", PY_BASE + 'x = f"{print(1)}"\n', "output forging"),
    ("k.py", PY_BASE + 'import importlib\nh = importlib.import_module("m")\n', "instrumentation"),
    ("k.py", PY_BASE + "import kernelopt_triton.harness as h\n", "instrumentation"),
    ("k.py", PY_BASE + 'vars(torch)["x"] = 1\n', "instrumentation"),
    ("k.py", PY_BASE + 'import os\nos.environ["LD_PRELOAD"] = "x"\n', "environment"),
    # reaching the bench worker's channel from inside its process (a reviewer's forgery)
    ("k.py", PY_BASE + "import gc\nch = [o for o in gc.get_objects()][0]\n", "instrumentation"),
    ("k.py", PY_BASE + "_, ch.reply = 0, wrapper\n", "rebinding"),
    ("k.py", PY_BASE + "import sys\nf = sys._getframe(1)\n", "instrumentation"),
    ("k.py", PY_BASE + "import inspect\nst = inspect.stack()\n", "instrumentation"),
    ("k.cu", 'void f() { freopen("/dev/null", "w", stdout); }\n', "output forging"),
    ("k.cu", "void f() { ::write(1, buf, n); }\n", "output forging"),
    ("k.cu", '#include "cublas_v2.h"\n', "vendor library"),
    ("k.cu", "void f() { std::thread t(g); }\n", "side stream or thread"),
    ("k.cpp", "void f() { pid_t p; posix_spawn(&p, \"/bin/sh\", 0, 0, argv, 0); }\n",
     "side stream or thread"),
])
def test_hack_constructs_are_found(path: str, new: str, reason: str) -> None:
    passed, why = judge(path, new, PY_BASE if path.endswith(".py") else "")
    assert not passed and reason in why, why


def test_only_added_lines_are_judged() -> None:
    old = PY_BASE + "print('existing debug line')\n"
    assert judge("k.py", old + "BLOCK = 128\n", old)[0]


def test_unparsable_python_is_judged_line_by_line() -> None:
    # an unclosed bracket (tokenize fails) with a blank line in it: still judged, no crash
    passed, why = judge("k.py", PY_BASE + "x = (1,\n\nprint('forged')\n", PY_BASE)
    assert not passed and "output forging" in why


@pytest.mark.parametrize("path,old,new,no_op", [
    ("k.cpp", "#define TILE 1\nint f() { return TILE; }\n",
     "// reviewed: no change needed\n#define TILE 1\n\nint f()  {   return TILE;  /* same */ }\n", True),
    ("k.cpp", "#define TILE 1\n", "#define TILE 2\n", False),
    ("k.cpp", 'const char* s = "a b";\n', 'const char* s = "a c";  // a string is code\n', False),
    ("k.py", PY_BASE + "BLOCK = 64\n", PY_BASE + "BLOCK = 64  # tuned\n\n# the end\n", True),
    ("k.py", PY_BASE + "BLOCK = 64\n", PY_BASE + "BLOCK = 128\n", False),
    # a review's cases: whitespace inside a string, a macro's parameter list, an unparsable
    # Python file's floor division, a shell line: each a change
    ("k.cu", 'const char* f = "%d %d";\n', 'const char* f = "%d%d";\n', False),
    ("k.cu", "#define F(x) (x)\n", "#define F (x) (x)\n", False),
    ("k.py", "def f(:\n    return a // b\n", "def f(:\n    return a // c\n", False),
    ("k.sh", "X=1 cmd\n", "X = 1 cmd\n", False),
    ("k.cu", "int a = b+c;\n", "int a = b + c;\n", False),  # spacing added: a change (rather
    # let a cosmetic edit through than refuse a real one)
])
def test_an_edit_that_changes_no_code_is_refused(path: str, old: str, new: str,
                                                 no_op: bool) -> None:
    """A no-op edit can win only by noise (the CPU corpus' original_fallback once won 3 of 3
    confirm rounds on a loaded machine): refused by content, not by time."""
    passed, reason = judge(path, new, old)
    assert passed is not no_op, reason
    assert ("no code changed: " + path in reason) is no_op
