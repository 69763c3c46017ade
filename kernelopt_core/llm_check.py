"""One cheap request to the LLM provider a run in a directory would use (``kernelopt init``
checks the setting before anything depends on it). The agents wing does the request: it is
reached by name through the plugin host, never imported (tests/test_architecture.py).
Nothing is checked without a key: the built-in tuner needs none."""

from __future__ import annotations

from pathlib import Path

from kernelopt_core import settings as settings_mod


def check_llm_provider(directory: Path) -> str | None:
    """None when no LLM key is configured for ``directory`` (its .env, the environment, the
    user's config) or no agents planner is installed; else what answered ("opencode-go: model
    m answered in 0.8 s"). A provider that does not answer raises a PrerequisiteError that
    names the provider, URL, model and error."""
    from kernelopt_core.plugins import PluginHost

    host = PluginHost()
    settings = settings_mod.load(None, {}, cwd=directory, tables=tuple(host.option_tables()))
    planner = host.registry("planners").get("agents")
    if planner is None:
        return None
    agents = planner() if isinstance(planner, type) else planner
    agents.host = host
    answered: str | None = agents.check_provider(settings)
    return answered
