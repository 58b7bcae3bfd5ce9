"""Deprecated: moved to :mod:`verify.oracles.contraction` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.oracles.contraction import *  # noqa: F403
from verify.oracles.contraction import __all__ as __all__

warn_moved("verify.assumptions", "verify.oracles.contraction")
