"""kernelopt: makes GPU kernels faster by search, and never lies about it.

The core defines the hooks (:mod:`kernelopt_core.hookspecs`), the one optimization loop
(:mod:`kernelopt_core.loop`) and the contracts; backends, gates, planners, profilers, LLM
providers and doc lookup are plugins registered through :mod:`kernelopt_core.plugins`.
"""

__version__ = "0.1.0"
