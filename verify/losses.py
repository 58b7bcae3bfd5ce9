"""Deprecated: moved to :mod:`verify.model.losses` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.model.losses import *  # noqa: F403
from verify.model.losses import __all__ as __all__

warn_moved("verify.losses", "verify.model.losses")
