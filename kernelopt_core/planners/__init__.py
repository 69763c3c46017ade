"""Planners: where proposals come from. Built-in: ``tuner``."""
