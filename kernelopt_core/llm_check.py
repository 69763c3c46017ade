"""One cheap request to the LLM provider a run in a directory would use (``kernelopt init``
checks the setting before anything depends on it). The planners that call a service do the
request (``ChecksProvider``): reached through the plugin host, never imported
(tests/test_architecture.py).
Nothing is checked without a key: the built-in tuner needs none."""

from __future__ import annotations

from pathlib import Path

from kernelopt_core import settings as settings_mod
from kernelopt_core.capabilities import ChecksProvider
from kernelopt_core.errors import KerneloptError


def check_llm_provider(directory: Path) -> str | None:
    """None when no LLM key is configured for ``directory`` (its .env, the environment, the
    user's config) or no installed planner calls a service; else what answered ("opencode-go: model
    m answered in 0.8 s"). A provider that does not answer raises a PrerequisiteError that
    names the provider, URL, model and error."""
    from kernelopt_core.plugins import PluginHost
    from kernelopt_core.resolve import instantiate

    host = PluginHost()
    settings = settings_mod.load(None, {}, cwd=directory, tables=tuple(host.option_tables()))
    for record in host.registry("planners").values():
        if not isinstance(record, ChecksProvider):  # only those that call a service
            continue
        try:
            answered = instantiate(record, host).check_provider(settings)
        except KerneloptError:  # a provider that cannot answer: said, exit 3
            raise
        except Exception:  # a plugin's fault is its own: `kernelopt plugins` shows it
            continue
        if answered:
            return str(answered)
    return None
