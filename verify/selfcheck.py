"""Deprecated: moved to :mod:`verify.oracles.selfcheck` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.oracles.selfcheck import *  # noqa: F403
from verify.oracles.selfcheck import __all__ as __all__

warn_moved("verify.selfcheck", "verify.oracles.selfcheck")
