"""Deprecated: moved to :mod:`verify.model.problem` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.model.problem import *  # noqa: F403
from verify.model.problem import __all__ as __all__

warn_moved("verify.problem", "verify.model.problem")
