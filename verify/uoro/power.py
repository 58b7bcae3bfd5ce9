r"""The operating characteristic of the sequential unbiasedness test (:func:`verify.stats.sequential_test`) on a
biased UORO mutant (Tallec & Ollivier 2017, Prop. 1: what a bias in Algorithm 1 costs the test to see).

The sampler returns the mutant's estimate of :math:`\sum_t \tilde g_t` with probability λ and the UORO under test's
(``good``: the check passes ``config.impls.uoro.uoro()``) otherwise, so
:math:`E = g + (1-\lambda)(E\hat g_{good} - g) + \lambda\,(E\hat g_{mut} - g)`: for an unbiased UORO under test the
relative bias is λ·b₁ with b₁ the mutant's exact relative bias (enumeration over every noise pattern,
:func:`verify.estimators.enumerate.enumerate_expectation`). Where the UORO under test is enumerable (the noise hook
of :mod:`verify.estimators.noise`) its own exact mean enters the mixture's bias; where it is not, λ·b₁ is reported
and ``good_relative_bias`` is None (not known).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.enumerate import enumerate_expectation
from verify.estimators.fused import sampler_for
from verify.estimators.uoro import event_floor_of
from verify.stats import TestOptions, sequential_test
from verify.uoro.cases import Case, truths

__all__ = ["POWER_FRACTIONS", "power_curve"]

#: contamination λ: each draw is the mutant's with probability λ, else correct UORO's (bias = λ·b₁ exactly)
POWER_FRACTIONS = (1.0, 0.3, 0.1, 0.03, 0.01)


def _exact_total(est: Any, case: Case) -> torch.Tensor | None:
    r""":math:`E\sum_t\tilde g_t` by enumeration; None where ``est`` cannot be enumerated (no noise hook, a
    continuous law, randomness outside the hook)."""
    try:
        return enumerate_expectation(est, case.problem.to(dtype=torch.float64), case.theta).gradients.sum(0)
    except (NotApplicable, InvalidArgument):
        return None


def power_curve(
    mutant: str,
    bad: Any,
    case: Case,
    opts: TestOptions,
    gens: Sequence[torch.Generator],
    budget: int,
    *,
    good: Any,
) -> list[dict[str, Any]]:
    r"""Operating characteristic of the sequential test on one biased mutant: bias/‖g‖ against draws to FAIL.

    ``bad`` is the estimator of mutant ``mutant``, ``good`` the UORO under test; the draws mix ``bad`` into
    ``good`` with probability λ (:data:`POWER_FRACTIONS`), so the relative bias is ‖(1−λ)b_good + λ b_bad‖ with
    the exact mean biases (module docstring; λ·b₁ where ``good`` cannot be enumerated). One sequential test
    (error rates ``opts``, first look at 100 draws, ×1.5, generator ``gens[i]`` for the i-th λ) per λ; a run
    that has not FAILed within ``budget`` is censored there.
    """
    P, th = case.problem, case.theta
    T = P.T
    g = truths(case, (T,), ("total",))[0]
    gn = torch.linalg.vector_norm(g)
    exact_bad = _exact_total(bad, case)
    if exact_bad is None:
        raise InvalidArgument("bad", mutant, "a power-curve mutant must be enumerable (discrete noise, the hook)")
    exact_good = _exact_total(good, case)
    b_good = None if exact_good is None else exact_good - g
    s_good, _, _ = sampler_for(good, P, th, steps=(T,), quantities=("total",))
    s_bad, _, _ = sampler_for(bad, P, th, steps=(T,), quantities=("total",))
    rows = []
    for lam, gen in zip(POWER_FRACTIONS, gens, strict=True):
        sampler = _Mixture(s_good, s_bad, lam)
        # declared: the mixture's pick is an event of probability lam (or 1 - lam), each draw UORO's own law
        floor = min(event_floor_of(good), event_floor_of(bad), *(f for f in (lam, 1.0 - lam) if f > 0))
        res = sequential_test(
            sampler, g, options=dataclasses.replace(opts, event_floor=floor), generator=gen, max_samples=budget,
            first=100, growth=1.5, names=["dL/dtheta"],
        )  # fmt: skip
        mix = lam * (exact_bad - g) + (0.0 if b_good is None else (1 - lam) * b_good)
        rows.append(
            {
                "mutant": mutant,
                "problem": case.label,
                "fraction": lam,
                "relative_bias": float(torch.linalg.vector_norm(mix) / gn),
                "good_relative_bias": None if b_good is None else float(torch.linalg.vector_norm(b_good) / gn),
                "verdict": res.verdict.value,
                "draws": res.samples_used,
                "censored": not res.failed,
            }
        )
    return rows


class _Mixture:
    """Draws of ``bad`` with probability ``lam``, else of ``good`` (one call: good's draws, bad's, then the picks).

    With ``draw_calls`` where both samplers draw their noise first (the fused samplers, :mod:`verify.estimators.fused`):
    several calls' noise and picks drawn call by call in that order, the runs stepped in one pass -- the same draws
    as the calls one by one (issue 42).
    """

    def __init__(self, good: Any, bad: Any, lam: float) -> None:
        self.good, self.bad, self.lam = good, bad, lam
        if all(callable(getattr(s, "noise_tables", None)) for s in (good, bad)):
            self.draw_calls = self._calls

    def _pick(self, m: int, rng: torch.Generator) -> torch.Tensor:
        return torch.rand(m, 1, generator=rng, dtype=torch.float64) < self.lam

    def __call__(self, m: int, rng: torch.Generator) -> torch.Tensor:
        a, b = self.good(m, rng)[0], self.bad(m, rng)[0]
        return torch.where(self._pick(m, rng), b, a)

    def _calls(self, sizes: Sequence[int], rng: torch.Generator) -> torch.Tensor:
        if not all(s.predraws(sum(sizes)) for s in (self.good, self.bad)):
            return torch.cat([self(m, rng) for m in sizes])
        tg, tb, picks = [], [], []
        for m in sizes:
            tg.append(self.good.noise_tables(m, rng))
            tb.append(self.bad.noise_tables(m, rng))
            picks.append(self._pick(m, rng))
        return torch.where(torch.cat(picks), self.bad.run_drawn(tb)[0], self.good.run_drawn(tg)[0])
