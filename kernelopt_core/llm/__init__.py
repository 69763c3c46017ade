"""The LLM agents' side of kernelopt: the tools a model may call and the diff applier behind them."""
