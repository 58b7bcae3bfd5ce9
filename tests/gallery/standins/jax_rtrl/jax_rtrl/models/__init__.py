"""Stand-in package path ``jax_rtrl.models`` (tests only; see :mod:`jax_rtrl.models.cells.ctrnn`)."""
