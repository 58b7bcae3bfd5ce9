"""rnn-verify: check online recurrent learning algorithms against exact references.

Layers (see the README):

* :mod:`verify.model.cells`, :mod:`verify.model.losses`, :mod:`verify.model.problem` -- the problem model;
* :mod:`verify.oracles.bptt`, :mod:`verify.oracles.finite_diff`, :mod:`verify.oracles.selfcheck`,
  :mod:`verify.oracles.budget` -- exact float64 references and their cross-checks;
* :mod:`verify.testing.strategies` -- problem builders and hypothesis strategies;
* :mod:`verify.checks`, :mod:`verify.run.catalog`, :mod:`verify.cli` -- the claims'
  checks and the ``rnn-verify`` command; :mod:`theory` holds the claim catalog.
"""

from verify.config import RunConfig
from verify.errors import AssumptionViolated, InvalidArgument, VerifyError
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
