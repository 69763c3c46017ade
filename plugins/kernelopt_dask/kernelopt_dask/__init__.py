"""kernelopt campaign executor ``dask``: a campaign's jobs as Dask distributed tasks, one GPU
per worker (docs/scaling.md, "Many hosts: Dask")."""
