"""Unbiasedness of UORO by the sequential test (Tallec & Ollivier 2017, Prop. 1 and App. A; §3 for UORO-T and
rank-r UORO; Cooijmans & Martens 2019 for preactivation-space UORO).

One anytime-valid sequential test (:func:`verify.stats.sequential_test`) of g̃_t at chosen steps, of Σ_t g̃_t and
of s̃_t ⊗ θ̃_t on one problem, drawn by the fused sampler where it covers the estimator
(:func:`verify.estimators.fused.sampler_for`, the same draws as init/step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from verify.estimators.base import OnlineEstimator
from verify.estimators.fused import sampler_for
from verify.estimators.uoro import event_floor_of
from verify.stats import TestOptions, UnbiasednessResult, sequential_test
from verify.stats.unbiased import Sampler
from verify.uoro.cases import Case, truths
from verify.verdict import Verdict

__all__ = [
    "BETA",
    "DELTA",
    "claim_options",
    "declared_options",
    "event_floor_of",
    "family_sampler",
    "unbiased_family",
    "unbiased_runs",
]

#: miss probability of a bias certificate, and the bias (relative to ‖g‖) it certifies against
BETA = 1e-3
DELTA = 0.02


def claim_options(alpha: float, beta: float = BETA, delta: float = DELTA, *, split: int = 1) -> TestOptions:
    """The error rates (α, β, δ) of a claim, α and β split over ``split`` tests (Bonferroni)."""
    return TestOptions(alpha=alpha / split, beta=beta / split, delta=delta)


def declared_options(opts: TestOptions, est: object) -> TestOptions:
    """``opts`` with the claim's declaration for ``est`` (:func:`event_floor_of`) unless ``opts`` states one."""
    return opts if opts.event_floor is not None else dataclasses.replace(opts, event_floor=event_floor_of(est))


def family_sampler(
    est: OnlineEstimator,
    case: Case,
    steps: Sequence[int],
    influence_steps: Sequence[int] | None = None,
    dtype: torch.dtype = torch.float64,
) -> tuple[Sampler, list[torch.Tensor], list[str]]:
    """The sampler of g̃_t (``steps``), Σ_t g̃_t and s̃_t ⊗ θ̃_t (``influence_steps``) on ``case``, their float64
    references and names: what :func:`unbiased_family` tests (and a plan's pilot draws).

    The influence is drawn only where the estimator has ``influence_estimate`` (optional). ``dtype``: the precision
    the estimator is judged at; float32 hands the draws over as float32, so that the test's round-off model
    allows float32 round-off (:mod:`verify.stats.roundoff`: u is the coarsest dtype the sampler returned;
    :mod:`verify.impl.precision`).
    """
    P, th = case.problem, case.theta
    isteps = tuple(steps if influence_steps is None else influence_steps)
    if not callable(getattr(est, "influence_estimate", None)):
        isteps = ()
    allsteps = sorted(set(steps) | set(isteps))
    quantities = ("gradient", "total", "influence") if isteps else ("gradient", "total")
    # the fused sampler where it covers the estimator (same draws as init/step, issue 15), else init/step
    both, names_all, _ = sampler_for(est, P, th, steps=allsteps, quantities=quantities)
    truths_all = truths(case, tuple(allsteps), quantities)
    k = len(allsteps)
    idx = [allsteps.index(t) for t in steps] + [k] + [k + 1 + allsteps.index(t) for t in isteps]

    low = dtype == torch.float32

    def sampler(m: int, rng: torch.Generator) -> list[torch.Tensor]:
        out = both(m, rng)  # one run of the estimator yields every quantity
        return [out[i].to(torch.float32) if low else out[i] for i in idx]

    return sampler, [truths_all[i] for i in idx], [names_all[i] for i in idx]


def unbiased_family(
    est: OnlineEstimator,
    case: Case,
    steps: Sequence[int],
    opts: TestOptions,
    gen: torch.Generator,
    max_samples: int,
    *,
    influence_steps: Sequence[int] | None = None,
    first: int = 1000,
    dtype: torch.dtype = torch.float64,
) -> UnbiasednessResult:
    """Sequential test of g̃_t (``steps``), Σ_t g̃_t and s̃_t ⊗ θ̃_t (``influence_steps``) for one problem.

    The influence is tested only where the estimator has ``influence_estimate`` (optional); ``dtype``: the
    precision the estimator is judged at (:func:`family_sampler`).
    """
    sampler, refs, names = family_sampler(est, case, steps, influence_steps, dtype)
    return sequential_test(
        sampler,
        refs,
        options=declared_options(opts, est),
        generator=gen,
        max_samples=max_samples,
        first=first,
        growth=1.1,
        min_step=4000,  # the estimators are ~2x faster per draw in batches of >= 4000 than of 1000
        names=names,
    )


def unbiased_runs(
    runs: Sequence[tuple[Case, OnlineEstimator, Sequence[int], Sequence[int] | None]],
    opts: TestOptions,
    gen: torch.Generator,
    max_samples: int,
    first: int = 1000,
    dtype: torch.dtype = torch.float64,
) -> list[tuple[str, UnbiasednessResult]]:
    """:func:`unbiased_family` for each (problem, estimator, gradient steps, influence steps) of ``runs`` in turn,
    drawing from ``gen``; labelled "<estimator> on <problem>". Stops at the first FAIL (a bias detected: the claim
    fails, the remaining problems add nothing)."""
    results: list[tuple[str, UnbiasednessResult]] = []
    for case, est, steps, isteps in runs:
        res = unbiased_family(
            est, case, steps, opts, gen, max_samples, influence_steps=isteps, first=first, dtype=dtype
        )
        results.append((f"{getattr(est, 'name', 'estimator')} on {case.label}", res))
        if res.verdict is Verdict.FAIL:
            break
    return results
