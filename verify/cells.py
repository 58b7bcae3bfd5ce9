"""Deprecated: moved to :mod:`verify.model.cells` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.model.cells import *  # noqa: F403
from verify.model.cells import __all__ as __all__

warn_moved("verify.cells", "verify.model.cells")
