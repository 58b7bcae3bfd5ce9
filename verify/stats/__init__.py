"""Statistics for stochastic claims: unbiasedness tests with stated error rates and their helpers.

* :mod:`verify.stats.unbiased` -- fixed-sample, planned and sequential (anytime-valid)
  unbiasedness tests: FAIL (false-fail rate ≤ α), PASS (certified bias bound
  δ·‖g‖ at confidence 1 − β), INCONCLUSIVE (budget exhausted, premise, variance anomaly).
* :mod:`verify.stats.premises` -- what the draws must show before a Gaussian verdict (no heavy tail, skew
  within the Edgeworth allowance) and what they cannot show (flat draws are not determinism; the unseen-event
  bound), issue 22.
* :mod:`verify.stats.roundoff` -- the round-off model: what "no noise" and "no deviation"
  mean in floating point (deterministic coordinates, eigen resolution, the mean's budget).
* :mod:`verify.stats.calibration` -- the adversarial calibration suite of both error rates.
* :mod:`verify.stats.planner` -- sample-size planner from (δ, α, β, pilot covariance).
* :mod:`verify.stats.bounds` -- Laurent–Massart norm bounds and normal-mixture
  confidence sequences.
* :mod:`verify.stats.variance` -- two-sample second-moment comparisons, variance ratios.
* :mod:`verify.stats.rates` -- the rate engine: one slope fit with a confidence interval, one decision.
* :mod:`verify.stats.binomial` -- Clopper–Pearson intervals.
* :mod:`verify.stats.multiple` -- Holm and Bonferroni.
"""

from verify.stats.binomial import binomial_upper_quantile, clopper_pearson, clopper_pearson_upper
from verify.stats.moments import Moments, empty_moments, update_moments
from verify.stats.multiple import adjusted_pvalues, bonferroni, holm
from verify.stats.planner import SamplePlan, plan_from_pilot, plan_samples
from verify.stats.rates import RateFit, decide_rate, fit_rate
from verify.stats.unbiased import (
    QuantityResult,
    Sampler,
    SubTest,
    TestOptions,
    UnbiasednessResult,
    fixed_sample_test,
    plan_quantity,
    planned_test,
    sequential_test,
)
from verify.stats.variance import (
    MomentComparison,
    compare_second_moments,
    draws_to_separate,
    log_mean_with_se,
    squared_errors,
)

__all__ = [
    "MomentComparison",
    "Moments",
    "QuantityResult",
    "RateFit",
    "SamplePlan",
    "Sampler",
    "SubTest",
    "TestOptions",
    "UnbiasednessResult",
    "adjusted_pvalues",
    "binomial_upper_quantile",
    "bonferroni",
    "clopper_pearson",
    "clopper_pearson_upper",
    "compare_second_moments",
    "decide_rate",
    "draws_to_separate",
    "empty_moments",
    "fit_rate",
    "fixed_sample_test",
    "holm",
    "log_mean_with_se",
    "plan_from_pilot",
    "plan_quantity",
    "plan_samples",
    "planned_test",
    "sequential_test",
    "squared_errors",
    "update_moments",
]
