"""rnn-verify: check online recurrent learning algorithms against exact references.

Layers (see the README):

* :mod:`verify.cells`, :mod:`verify.losses`, :mod:`verify.problem` -- the problem model;
* :mod:`verify.reference`, :mod:`verify.finite_diff`, :mod:`verify.selfcheck`,
  :mod:`verify.budget` -- exact float64 references and their cross-checks;
* :mod:`verify.strategies` -- problem builders and hypothesis strategies;
* :mod:`verify.checks`, :mod:`verify.runner`, :mod:`verify.cli` -- the claims'
  checks and the ``rnn-verify`` command; :mod:`theory` holds the claim catalog.
"""

from verify.errors import AssumptionViolated, InvalidArgument, VerifyError
from verify.problem import Problem
from verify.results import CheckResult, RunConfig, Verdict

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
