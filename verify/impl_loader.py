"""Deprecated: moved to :mod:`verify.impl.loader` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.impl.loader import *  # noqa: F403
from verify.impl.loader import __all__ as __all__

warn_moved("verify.impl_loader", "verify.impl.loader")
