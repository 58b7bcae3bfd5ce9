"""Deprecated: moved to :mod:`verify.testing.assertions` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.testing.assertions import *  # noqa: F403
from verify.testing.assertions import __all__ as __all__

warn_moved("verify.assertions", "verify.testing.assertions")
