"""Deprecated: moved to :mod:`verify.gpu.float32_sampling` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.gpu.float32_sampling import *  # noqa: F403
from verify.gpu.float32_sampling import __all__ as __all__

warn_moved("verify.float32_sampling", "verify.gpu.float32_sampling")
