"""Deprecated: split into :mod:`verify.run.check` (one claim), :mod:`verify.run.catalog` (``run_claims``) and
:mod:`verify.run.sweep.executors` (``stop_processes``) (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.run.catalog import run_claims
from verify.run.check import run_check, select_claims
from verify.run.sweep.executors import stop_processes

__all__ = ["run_check", "run_claims", "select_claims", "stop_processes"]

warn_moved(
    "verify.runner",
    "verify.run.check (run_check, select_claims), verify.run.catalog (run_claims) and "
    "verify.run.sweep.executors (stop_processes)",
)
