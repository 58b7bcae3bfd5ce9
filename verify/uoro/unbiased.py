"""Unbiasedness of UORO by the sequential test (Tallec & Ollivier 2017, Prop. 1 and App. A; §3 for UORO-T and
rank-r UORO; Cooijmans & Martens 2019 for preactivation-space UORO).

One anytime-valid sequential test (:func:`verify.stats.sequential_test`) of g̃_t at chosen steps, of Σ_t g̃_t and
of s̃_t ⊗ θ̃_t on one problem, drawn by the fused sampler where it covers the estimator
(:func:`verify.estimators.fused.sampler_for`, the same draws as init/step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

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
    "block_diagnosis",
    "block_ratios",
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

    return _Selected(both, idx, dtype == torch.float32), [truths_all[i] for i in idx], [names_all[i] for i in idx]


class _Selected:
    """The outputs ``idx`` of a sampler (one run of the estimator yields every quantity), as float32 if ``low``;
    with the sampler's ``draw_calls`` where it has one (:func:`verify.stats.unbiased.sequential_test`)."""

    def __init__(self, both: Callable[[int, torch.Generator], list[torch.Tensor]], idx: list[int], low: bool) -> None:
        self.both, self.idx, self.low = both, idx, low
        if callable(getattr(both, "draw_calls", None)):
            self.draw_calls = self._calls

    def _pick(self, out: list[torch.Tensor]) -> list[torch.Tensor]:
        return [out[i].to(torch.float32) if self.low else out[i] for i in self.idx]

    def __call__(self, m: int, rng: torch.Generator) -> list[torch.Tensor]:
        return self._pick(self.both(m, rng))

    def _calls(self, sizes: Sequence[int], rng: torch.Generator) -> list[torch.Tensor]:
        return self._pick(self.both.draw_calls(sizes, rng))  # type: ignore[attr-defined]


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
    res = sequential_test(
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
    if res.failed:
        diagnosis = block_diagnosis(res, refs, case.problem)
        if diagnosis:
            res.extra["diagnosis"] = diagnosis
    return res


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


#: a block's mean counts as "~ 0" (or "~ 1") of its truth within this much (a pointer to the code, not a verdict)
NEAR = 0.25


def block_ratios(mean_error: torch.Tensor, ref: torch.Tensor, problem: Any) -> dict[str, float]:
    r"""Per parameter block of θ's layout (``cell.W``, ``readout.V`` ...), the sample mean's projection on the truth,
    :math:`c_b = \langle \bar X_b, g_b\rangle / \|g_b\|^2` (1 for an unbiased estimator, up to the noise of the
    mean); blocks whose truth is 0 are left out. ``mean_error`` = X̄ − g, ``ref`` = g, of any shape (..., p)."""
    g = ref.reshape(-1, problem.p)
    m = g + mean_error.reshape(-1, problem.p).to(g.dtype)
    out = {}
    for e in problem.layout.entries:
        gb, mb = g[:, e.slice].reshape(-1), m[:, e.slice].reshape(-1)
        gg = float(torch.dot(gb, gb))
        if gg > 0.0:
            out[e.name] = float(torch.dot(mb, gb)) / gg
    return out


def block_diagnosis(res: UnbiasednessResult, refs: Sequence[torch.Tensor], problem: Any) -> str:
    r"""Where a detected bias lies, per parameter block (:func:`block_ratios` of the failed quantities), and the part
    of UORO (Tallec & Ollivier 2017, eq. (5)-(6)) it points at: a mean ~ 0 on the cell's blocks with the readout's
    right is :math:`E[\tilde s\,\tilde\theta^\top] = 0` -- s̃ and θ̃ not built from one shared draw ν (an
    independent ν' for θ̃ makes every cross term vanish); one common factor c ≠ 1 on the cell's blocks is a scale,
    not a direction (a normalizer that does not cancel, or a noise whose
    covariance is not the identity). Empty when no failed quantity has a per-coordinate mean."""
    failed = [
        (q, r)
        for q, r in zip(res.quantities, refs, strict=True)
        if q.verdict is Verdict.FAIL and q.mean_error is not None
    ]
    if not failed:
        return ""
    failed.sort(key=lambda qr: -qr[0].bias_norm / max(qr[0].truth_norm, 1e-300))
    hints, worst = [], None
    for q, ref in failed:
        ratios = block_ratios(q.mean_error, ref, problem)  # type: ignore[arg-type]
        cell = {k: v for k, v in ratios.items() if k.startswith("cell.")}
        rest = {k: v for k, v in ratios.items() if not k.startswith("cell.")}
        worst = worst or (q.name, ratios)
        if cell and all(abs(v) <= NEAR for v in cell.values()) and all(abs(v - 1.0) <= NEAR for v in rest.values()):
            hints.append(
                f"E g~ ~ 0 on the cell's parameters in {q.name}"
                + (" while the readout's is right" if rest else "")
                + ": E[s~ theta~^T] vanishes -- theta~ (eq. (6)) gets no term correlated with s~'s (eq. (5)): is it "
                "updated with nu^T dF/dtheta, the same draw nu as s~? (an independent nu', or no update, gives "
                "E[s~ theta~^T] = 0)"
            )
            break
        vals = list(cell.values())
        if len(vals) >= 2 and max(vals) - min(vals) <= 0.1 * max(abs(v) for v in vals) and abs(vals[0] - 1) > NEAR:
            c = sum(vals) / len(vals)
            hints.append(
                f"E g~ ~ {c:.3g} x dl/dtheta on every cell block in {q.name}: a scale, not a direction -- a "
                "normalizer (rho0, rho1) that does not cancel between s~ and theta~, or a noise with E[nu nu^T] != I?"
            )
            break
    assert worst is not None
    name, ratios = worst
    shown = ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
    return "; ".join([f"the mean per block as a multiple of the truth in {name}: {shown}", *hints])
