"""Deprecated: moved to :mod:`verify.oracles.finite_diff` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.oracles.finite_diff import *  # noqa: F403
from verify.oracles.finite_diff import __all__ as __all__

warn_moved("verify.finite_diff", "verify.oracles.finite_diff")
