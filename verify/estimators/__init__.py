"""Online gradient algorithms under one contract (see :mod:`verify.estimators.base`)."""

from verify.estimators.base import OnlineEstimator, run_estimator

__all__ = ["OnlineEstimator", "run_estimator"]
