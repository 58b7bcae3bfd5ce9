"""Deprecated: moved to :mod:`verify.run.sweep` (kept until rnn-verify 0.2; importing it warns).

Its submodules (``verify.sweep.cache``, ...) are the new home's own module objects, registered under
their old names, so ``import verify.sweep.tasks`` keeps working (with this package's warning).
"""

from verify._moved import alias_submodules, warn_moved
from verify.run.sweep import *  # noqa: F403
from verify.run.sweep import __all__ as _new_all
from verify.run.sweep.cells import SweepCell as Cell

__all__ = [*_new_all, "Cell"]  # Cell: renamed SweepCell

alias_submodules("verify.sweep", "verify.run.sweep", ("cache", "cells", "definitions", "driver", "executors", "tasks"))
warn_moved("verify.sweep", "verify.run.sweep")
