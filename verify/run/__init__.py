"""Scheduling: running one check, running the catalog, sweeps.

:mod:`verify.run.check` (one claim, never raises) → :mod:`verify.run.sweep` (cells on a
process pool or Dask) → :mod:`verify.run.catalog` (the selection of claims, in parallel).
The configuration a check receives is :class:`verify.config.RunConfig`.
"""
