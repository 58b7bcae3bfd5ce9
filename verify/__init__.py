"""rnn-verify: check online recurrent learning algorithms against exact references.

Reading order = data flow (see ``docs/reading-the-code.md``): :mod:`theory` says what
must hold → a domain package computes (:mod:`verify.model`, :mod:`verify.oracles`,
:mod:`verify.estimators`, :mod:`verify.stats`, :mod:`verify.truncation`, :mod:`verify.rtrl`,
:mod:`verify.uoro`, :mod:`verify.fpp`, :mod:`verify.gpu`) → :mod:`verify.checks` decides →
:mod:`verify.run` schedules → :mod:`verify.report` shows.

The names below are loaded on first use (PEP 562), so that ``import verify.errors`` --
which :mod:`theory` does -- loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from verify.errors import AssumptionViolated, InvalidArgument, VerifyError

if TYPE_CHECKING:
    from verify.config import RunConfig
    from verify.model.problem import Problem
    from verify.verdict import CheckResult, Verdict

__version__ = "0.1.0"

__all__ = [
    "AssumptionViolated",
    "CheckResult",
    "InvalidArgument",
    "Problem",
    "RunConfig",
    "Verdict",
    "VerifyError",
    "__version__",
]

_LAZY = {
    "CheckResult": "verify.verdict",
    "Verdict": "verify.verdict",
    "Problem": "verify.model.problem",
    "RunConfig": "verify.config",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'verify' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
