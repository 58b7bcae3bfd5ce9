"""Online gradient algorithms under one contract (see :mod:`verify.estimators.base`).

* :class:`RTRL` -- exact forward sensitivities (UORO eq. (4));
* :class:`TBPTT`, :class:`TruncatedModel` -- truncated BPTT and Miller & Hardt's truncated model;
* :class:`UORO` (Algorithm 1; ``rank=r``, UORO-T ``block=T``), :class:`PreactivationUORO`;
* :func:`enumerate_expectation` -- exact expectations over every noise pattern (tiny sizes);
* :func:`run_online` -- the online mode (θ updated every step); :func:`check_contract`.
"""

from verify.estimators.base import OnlineEstimator, run_estimator
from verify.estimators.enumerate import EnumeratedExpectation, enumerate_expectation
from verify.estimators.guarantee import GUARANTEES, Guarantee, guarantee_of
from verify.estimators.online import ContractViolation, OnlineRun, RobbinsMonroSGD, check_contract, run_online
from verify.estimators.rtrl import RTRL, RTRLState
from verify.estimators.tbptt import TBPTT, TBPTTState, TruncatedModel, TruncatedModelState
from verify.estimators.uoro import (
    UORO,
    Gaussian,
    NoiseSource,
    NormalizerInputs,
    PreactivationUORO,
    PreactivationUOROState,
    Rademacher,
    Tabulated,
    UOROState,
    paper_rho0,
    paper_rho1,
)

__all__ = [
    "GUARANTEES",
    "RTRL",
    "TBPTT",
    "UORO",
    "ContractViolation",
    "EnumeratedExpectation",
    "Gaussian",
    "Guarantee",
    "NoiseSource",
    "NormalizerInputs",
    "OnlineEstimator",
    "OnlineRun",
    "PreactivationUORO",
    "PreactivationUOROState",
    "RTRLState",
    "Rademacher",
    "RobbinsMonroSGD",
    "TBPTTState",
    "Tabulated",
    "TruncatedModel",
    "TruncatedModelState",
    "UOROState",
    "check_contract",
    "enumerate_expectation",
    "guarantee_of",
    "paper_rho0",
    "paper_rho1",
    "run_estimator",
    "run_online",
]
