"""Sweeps: many cells (claim × seed × configuration × learning rate) on an executor, cached by content.

* :mod:`verify.run.sweep.cells` -- a cell is a task name and JSON parameters; tasks are
  registered functions a worker looks up by name (:mod:`verify.run.sweep.tasks`).
* :mod:`verify.run.sweep.cache` -- each finished cell's value on disk, keyed by (task,
  parameters, code version), in a folder rnn-verify owns: an interrupted sweep
  resumes and a finished cell is never recomputed.
* :mod:`verify.run.sweep.executors` -- where cells run: a loopback Dask ``LocalCluster``
  or an existing Dask cluster (optional extra ``rnn-verify[dask]``), a local process
  pool, or this process; worker deaths and scheduler restarts are survived.
* :mod:`verify.run.sweep.driver` -- cache lookup, execution, progress, merge.
* :mod:`verify.run.sweep.definitions` -- the named sweeps: the FPP reproductions at the
  paper's settings, calibration of the statistical claims, claim runs, a self-test.

CLI: ``rnn-verify sweep NAME [--scale paper|full|ci] [--executor ...] [--workers N]
[--cache DIR] [--out DIR]``; ``rnn-verify run --executor dask[=ADDRESS]``.
"""

from __future__ import annotations

from verify.run.sweep.cache import CellCache, cell_key, code_version
from verify.run.sweep.cells import SweepCell, execute_cell, task, tasks
from verify.run.sweep.definitions import SweepDefinition, SweepOptions, definitions, get_definition
from verify.run.sweep.driver import CellOutcome, SweepPlan, SweepProgress, SweepRun, run_plan
from verify.run.sweep.executors import (
    DaskExecutor,
    Executor,
    ProcessExecutor,
    SerialExecutor,
    dask_available,
    make_executor,
    parse_executor,
)

__all__ = [
    "CellCache",
    "CellOutcome",
    "DaskExecutor",
    "Executor",
    "ProcessExecutor",
    "SerialExecutor",
    "SweepCell",
    "SweepDefinition",
    "SweepOptions",
    "SweepPlan",
    "SweepProgress",
    "SweepRun",
    "cell_key",
    "code_version",
    "dask_available",
    "definitions",
    "execute_cell",
    "get_definition",
    "make_executor",
    "parse_executor",
    "run_plan",
    "task",
    "tasks",
]
