"""Measurement: bench-output parsers and statistics."""
