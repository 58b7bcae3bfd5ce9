"""Deprecated: moved to :mod:`verify.oracles.golden` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.oracles.golden import *  # noqa: F403
from verify.oracles.golden import __all__ as __all__

warn_moved("verify.golden", "verify.oracles.golden")
