"""Deprecated: moved to :mod:`verify.testing.strategies` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.testing.strategies import *  # noqa: F403
from verify.testing.strategies import __all__ as __all__

warn_moved("verify.strategies", "verify.testing.strategies")
