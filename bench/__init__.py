"""Benchmark suites, named by what they measure: `python -m bench list`, `python -m bench run NAME`."""
