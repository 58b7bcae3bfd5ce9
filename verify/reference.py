"""Deprecated: moved to :mod:`verify.oracles.bptt` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.oracles.bptt import *  # noqa: F403
from verify.oracles.bptt import __all__ as __all__

warn_moved("verify.reference", "verify.oracles.bptt")
