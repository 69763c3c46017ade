"""Profiling: the built-in profilers (builtin.py), their output parsed into one record per
kernel (parsers.py), a tree's bench run under one (bench.py), what a profile says as tables
(view.py), the recorded profiles of ``kernelopt profile`` (store.py) and that command
(command.py)."""
