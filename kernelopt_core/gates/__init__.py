"""Gates: the pipeline every candidate passes. Built-ins live in :mod:`.builtin`."""
