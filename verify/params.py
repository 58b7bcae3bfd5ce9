"""Deprecated: moved to :mod:`verify.model.params` (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.model.params import ParamEntry, ParamLayout

__all__ = ["ParamEntry", "ParamLayout"]

warn_moved("verify.params", "verify.model.params")
