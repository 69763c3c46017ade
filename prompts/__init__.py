"""Prompt templates, shipped as package data of kernelopt_core (kernelopt_core.prompts)."""
