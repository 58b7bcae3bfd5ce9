"""Deprecated: moved to :mod:`verify.oracles.budget` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.oracles.budget import *  # noqa: F403
from verify.oracles.budget import __all__ as __all__

warn_moved("verify.budget", "verify.oracles.budget")
