"""Deprecated: moved to :mod:`verify.hardware` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.hardware import *  # noqa: F403
from verify.hardware import __all__ as __all__

warn_moved("verify.device", "verify.hardware")
