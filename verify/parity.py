"""Deprecated: moved to :mod:`verify.gpu.parity` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.gpu.parity import *  # noqa: F403
from verify.gpu.parity import __all__ as __all__

warn_moved("verify.parity", "verify.gpu.parity")
