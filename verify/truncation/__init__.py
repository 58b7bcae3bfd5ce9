r"""Miller & Hardt, "Stable Recurrent Models" (arXiv:1805.10369): what the ``truncation.*`` claims compute.

Paper: ``stable-recurrent-models-miller-hardt.md``; bounds and constants: :mod:`theory.truncation`;
the contraction certificates and constants of an instance: :mod:`verify.oracles.contraction`.
Every function takes an implementation part (or a :class:`~verify.truncation.instances.TruncationParts`:
the fields of :class:`verify.impl.TruncationImpl`), a generator and a setup -- never a run configuration.

Conventions. The truncated model is eq. (3) (:math:`h^k_{t-k} = 0`, k transitions);
:math:`p_T` is the loss at the last step (``which="final"``); w = (W, U) -- the readout
is not trained (the paper's prediction function is not parameterized) and there is
no bias (:math:`\phi_w(0,0) = 0`). Measured errors are compared with
``bound + budget`` where the budget is the predicted float64 round-off
(:func:`verify.oracles.budget.roundoff_budget`) of the compared quantities: far out in k the
bound drops below round-off and the comparison is reported as below the floor, not
as a violation.

* :mod:`verify.truncation.instances` -- Lemma 1 and Lemma 2 (truncated model, truncated BPTT)
  measured against their explicit bounds on one instance (:func:`evaluate_instance`), the
  measured contraction rate;
* :mod:`verify.truncation.fixtures` -- the extremal scalar system and its closed form, Prop. 3's
  unstable system, the §7.1 instances, the random contractive suite;
* :mod:`verify.truncation.bounds` -- the bounds on suites and on the extremal system, the rate fits;
* :mod:`verify.truncation.rate_fit` -- the fit of the :math:`k\lambda^k` rate (:func:`fit_log_rate`);
* :mod:`verify.truncation.prop2` -- Prop. 2: projected GD on the recurrent and truncated models (§7.1);
* :mod:`verify.truncation.counterexamples` -- Prop. 3 (unbounded truncation error) and Prop. 4 (divergence);
* :mod:`verify.truncation.certificates` -- the contraction checker's witness and suite (eq. (2), Prop. 5);
* :mod:`verify.truncation.figure1a` -- Fig. 1(a).

>>> import torch
>>> from verify.truncation import evaluate_instance, extremal_linear_problem
>>> P, theta = extremal_linear_problem(0.6, 60)
>>> ev = evaluate_instance(P, theta, ks=range(1, 11), parts=("state",), with_rate=False)
>>> ev.series["state"].holds, ev.series["state"].tightness > 0.9
(True, True)
"""

from __future__ import annotations

from verify.truncation.fixtures import (
    FIB,
    SuiteSetup,
    conformance,
    extremal_linear_problem,
    figure1_instance,
    prop3_problem,
    random_suite,
    scalar_closed_form,
)
from verify.truncation.instances import (
    DEFAULT_TRUNCATION_IMPL,
    BoundSeries,
    InstanceEvaluation,
    TruncationParts,
    evaluate_instance,
    final_gradient,
    measured_contraction_rate,
    weight_index,
)
from verify.truncation.rate_fit import RATE_DECADES, TRUNCATION_RATE, fit_log_rate, informative, rate_verdict

__all__ = [
    "DEFAULT_TRUNCATION_IMPL",
    "FIB",
    "RATE_DECADES",
    "TRUNCATION_RATE",
    "BoundSeries",
    "InstanceEvaluation",
    "SuiteSetup",
    "TruncationParts",
    "conformance",
    "evaluate_instance",
    "extremal_linear_problem",
    "figure1_instance",
    "final_gradient",
    "fit_log_rate",
    "informative",
    "measured_contraction_rate",
    "prop3_problem",
    "random_suite",
    "rate_verdict",
    "scalar_closed_form",
    "weight_index",
]
