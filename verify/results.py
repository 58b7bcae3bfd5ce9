"""Deprecated: split into :mod:`verify.verdict` (results) and :mod:`verify.config` (``RunConfig``)
(kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.config import RunConfig
from verify.verdict import CheckResult, Control, Verdict, to_jsonable

__all__ = ["CheckResult", "Control", "RunConfig", "Verdict", "to_jsonable"]

warn_moved("verify.results", "verify.verdict and verify.config (RunConfig)")
