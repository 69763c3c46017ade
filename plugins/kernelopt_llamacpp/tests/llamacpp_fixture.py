"""The llama.cpp-layout fixture repo (tests/fixtures/llamacpp-mini) and a copier."""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelopt_llamacpp.options import LlamaCppOptions

from kernelopt_core.settings import Settings

FIXTURE = Path(__file__).parent / "fixtures" / "llamacpp-mini"


def copy_fixture(dest: Path, marker: bool = True) -> Path:
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("build", ".kernelopt"))
    if not marker:
        (dest / "kernelopt-fixture.toml").unlink()
    return dest


def settings_with(state_root: Path, origins: dict[str, str] | None = None,
                  **options: object) -> Settings:
    """Settings as `kernelopt run` would make them with these [llamacpp] options (``origins``:
    where the given ones came from, e.g. {"llamacpp.top": "flag"})."""
    return Settings(state_root=state_root, tables={"llamacpp": LlamaCppOptions(**options)},
                    origins=dict(origins or {}))
