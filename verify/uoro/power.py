r"""The operating characteristic of the sequential unbiasedness test (:func:`verify.stats.sequential_test`) on a
biased UORO mutant (Tallec & Ollivier 2017, Prop. 1: what a bias in Algorithm 1 costs the test to see).

The sampler returns the mutant's estimate of :math:`\sum_t \tilde g_t` with probability λ and correct UORO's
otherwise, so :math:`E = g + \lambda\,(E\hat g_{mut} - g)`: the relative bias is λ·b₁ with b₁ the mutant's exact
relative bias (enumeration over every noise pattern, :func:`verify.estimators.enumerate.enumerate_expectation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from verify.estimators.enumerate import enumerate_expectation
from verify.estimators.fused import sampler_for
from verify.estimators.uoro import UORO
from verify.stats import TestOptions, sequential_test
from verify.uoro.cases import Case, truths

__all__ = ["POWER_FRACTIONS", "power_curve"]

#: contamination λ: each draw is the mutant's with probability λ, else correct UORO's (bias = λ·b₁ exactly)
POWER_FRACTIONS = (1.0, 0.3, 0.1, 0.03, 0.01)


def power_curve(
    mutant: str, bad: Any, case: Case, opts: TestOptions, gens: Sequence[torch.Generator], budget: int
) -> list[dict[str, Any]]:
    r"""Operating characteristic of the sequential test on one biased mutant: bias/‖g‖ against draws to FAIL.

    ``bad`` is the estimator of mutant ``mutant``; the draws mix it into correct UORO with probability λ
    (:data:`POWER_FRACTIONS`), so the relative bias is λ·b₁ with b₁ the mutant's exact relative bias. One sequential
    test (error rates ``opts``, first look at 100 draws, ×1.5, generator ``gens[i]`` for the i-th λ) per λ; a run
    that has not FAILed within ``budget`` is censored there.
    """
    good = UORO()
    P, th = case.problem, case.theta
    T = P.T
    g = truths(case, (T,), ("total",))[0]
    exact = enumerate_expectation(bad, P.to(dtype=torch.float64), th)
    b1 = float(torch.linalg.vector_norm(exact.gradients.sum(0) - g) / torch.linalg.vector_norm(g))
    s_good, _, _ = sampler_for(good, P, th, steps=(T,), quantities=("total",))
    s_bad, _, _ = sampler_for(bad, P, th, steps=(T,), quantities=("total",))
    rows = []
    for lam, gen in zip(POWER_FRACTIONS, gens, strict=True):

        def sampler(m: int, rng: torch.Generator, lam: float = lam) -> torch.Tensor:
            a, b = s_good(m, rng)[0], s_bad(m, rng)[0]
            pick = torch.rand(m, 1, generator=rng, dtype=torch.float64) < lam
            return torch.where(pick, b, a)

        res = sequential_test(
            sampler, g, options=opts, generator=gen, max_samples=budget, first=100, growth=1.5, names=["dL/dtheta"]
        )
        rows.append(
            {
                "mutant": mutant,
                "problem": case.label,
                "fraction": lam,
                "relative_bias": lam * b1,
                "verdict": res.verdict.value,
                "draws": res.samples_used,
                "censored": not res.failed,
            }
        )
    return rows
