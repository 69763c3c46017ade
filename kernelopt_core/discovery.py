"""Which backend and which target: precedence is --backend, then `backend =` in kernelopt.toml,
then the highest detect() confidence; a tie is an error listing the candidates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernelopt_core.errors import PluginError, PrerequisiteError, UsageError
from kernelopt_core.hookspecs import Backend
from kernelopt_core.plugins import PluginHost
from kernelopt_core.settings import Settings, read_toml
from kernelopt_core.target import Target

# backend -> (distribution, its directory in the kernelopt source tree)
KNOWN_PACKAGES = {
    "cmake": ("kernelopt-cmake", "plugins/kernelopt_cmake"),
    "triton": ("kernelopt-triton", "plugins/kernelopt_triton"),
    "llamacpp": ("kernelopt-llamacpp", "plugins/kernelopt_llamacpp"),
    "ninfer": ("kernelopt-ninfer", "plugins/kernelopt_ninfer"),
}


def install_hint(name: str) -> str:
    """The command that installs a backend's package today: the packages are not on the
    package index yet, so the source tree's plugin directory (found next to this install when
    it is a checkout)."""
    dist, directory = KNOWN_PACKAGES[name]
    checkout = Path(__file__).resolve().parent.parent / directory
    where = str(checkout) if checkout.is_dir() else f"<kernelopt source tree>/{directory}"
    return f"python3 -m pip install -e {where}  ({dist} is not on the package index yet)"


def project_toml(path: Path) -> Path | None:
    if path.is_file() and path.name == "kernelopt.toml":
        return path
    directory = path if path.is_dir() else path.parent
    found = directory / "kernelopt.toml"
    return found if found.is_file() else None


class NotRecognised(UsageError):
    """No installed backend recognises the path (the upward search for a project may help)."""


def enclosing_project(path: Path) -> Path | None:
    """The nearest directory above ``path`` with a kernelopt.toml, looked for as git looks for
    .git: upward, stopping after a directory that holds .git (the repository's top)."""
    directory = path if path.is_dir() else path.parent
    if path.is_file() and (directory / "kernelopt.toml").is_file():  # a file beside its toml
        return directory
    if (directory / ".git").exists():  # already at a repository's top
        return None
    for parent in directory.parents:
        if (parent / "kernelopt.toml").is_file():
            return parent
        if (parent / ".git").exists():
            return None
    return None


def focus_targets(targets: list[Target], focus: Path, project: Path) -> list[Target]:
    """The targets that edit ``focus`` (a file) or a file under it (a directory)."""
    def edits(target: Target) -> bool:
        files = [(target.root / rel).resolve() for rel in target.editable]
        return any(f == focus or focus in f.parents for f in files)

    chosen = [t for t in targets if edits(t)]
    if not chosen:
        listing = "; ".join(f"{t.name}: {', '.join(t.editable)}" for t in targets)
        raise UsageError(f"{focus} is inside the project {project} (its kernelopt.toml), but "
                         "no target there edits it",
                         hint=f"run the project ({project}) or a target's file ({listing})")
    return chosen


def locate(host: PluginHost, path: Path, load: Callable[[Path | None], Settings]
           ) -> tuple[Backend, Path, Path | None, Settings]:
    """(backend, project path, focus, settings) for PATH. A file or subdirectory that no
    backend recognises, inside a project whose kernelopt.toml is further up: that project,
    with PATH as the focus its targets are narrowed to (focus_targets)."""
    settings = load(project_toml(path))
    try:
        backend = choose_backend(host, path, settings.backend)
    except NotRecognised:
        project = enclosing_project(path)
        if project is None:
            raise
    else:
        # a file the backend its kernelopt.toml declares does not take by itself (kernel.cpp
        # beside the toml that builds it): that project, focused on the file
        project = enclosing_project(path) if path.is_file() and path.name != "kernelopt.toml" \
            and backend.detect(path) == 0.0 else None
        if project is None:
            return backend, path, None, settings
    settings = load(project_toml(project))
    return choose_backend(host, project, settings.backend), project, path, settings


def declared_backend(toml: Path | None) -> str | None:
    if toml is None:
        return None
    data, _text = read_toml(toml)
    value = data.get("backend")
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{toml}: `backend` must be a string (a backend name)")
    return value


def choose_backend(host: PluginHost, path: Path, explicit: str | None) -> Backend:
    backends = host.registry("backends")
    if not backends:
        raise PrerequisiteError(
            "no backend plugin is installed",
            hint=f"{install_hint('cmake')}; the triton and llamacpp backends likewise; "
            "`kernelopt plugins` shows what is installed",
        )
    name = explicit or declared_backend(project_toml(path))
    if name is not None:
        if name in backends:
            return backends[name]
        failed = next((i for i in host.plugin_infos() if i.name == name and i.error), None)
        if failed is not None:  # installed, but broken: not "install it"
            raise PluginError(f"backend {name!r}: {failed.label} failed: {failed.error}",
                              hint=failed.hint or "reinstall or upgrade it")
        if name in KNOWN_PACKAGES:
            raise PrerequisiteError(
                f"backend {name!r} is not installed", hint=install_hint(name)
            )
        raise UsageError(f"unknown backend {name!r}",
                         hint=f"installed backends: {', '.join(sorted(backends))}")
    scores: dict[str, float] = {}
    broken: list[str] = []
    for n, backend in backends.items():
        try:  # one broken plugin must not take the tool down
            scores[n] = float(backend.detect(path) or 0.0)
        except Exception as exc:
            scores[n] = 0.0
            broken.append(f"{n} ({host.owner('backends', n)}): detect() raised "
                          f"{type(exc).__name__}: {exc}")
    top = max(scores.values())
    if top <= 0:
        cmake = next((d for d in (path, *path.parents[:2]) if (d / "CMakeLists.txt").is_file()
                      and d.is_dir()), None)
        raise NotRecognised(
            f"no installed backend recognises {path}"
            + (f"; broken: {'; '.join(broken)}" if broken else ""),
            hint=(f"{cmake} is a CMake project without a kernelopt.toml: `kernelopt init {cmake}` "
                  "writes one from its targets and a smoke baseline (docs/descriptor.md)")
            if cmake else "add a kernelopt.toml (docs/descriptor.md), name one with --backend, "
            f"or install the backend for this kind of project (installed: {', '.join(sorted(backends))})",
        )
    best = [n for n, s in scores.items() if s == top]
    if len(best) > 1:
        raise UsageError(
            f"backends {', '.join(sorted(best))} all claim {path} with confidence {top:g}",
            hint="choose one with --backend NAME or `backend = \"NAME\"` in kernelopt.toml",
        )
    return backends[best[0]]


def choose_targets(targets: list[Target], name: str | None, path: Path) -> list[Target]:
    """The targets to run: the one named by ``--target``, else every target, in order."""
    if not targets:
        raise UsageError(f"no targets found at {path}")
    if name is None:
        return list(targets)
    for target in targets:
        if target.name == name:
            return [target]
    raise UsageError(f"no target named {name!r} at {path}",
                     hint=f"targets: {', '.join(t.name for t in targets)}")


def choose_target(targets: list[Target], name: str | None, path: Path) -> Target:
    """Exactly one target (commands that work on one, like gate-selftest)."""
    chosen = choose_targets(targets, name, path)
    if len(chosen) > 1:
        raise UsageError(
            f"{path} declares {len(chosen)} targets",
            hint=f"choose one with --target: {', '.join(t.name for t in chosen)}",
        )
    return chosen[0]
