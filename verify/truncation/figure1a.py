r"""Fig. 1(a) of Miller & Hardt ("Stable Recurrent Models", §7.1, App. A.5): gradient truncation error against k.

:math:`\|\nabla_w p_T - \nabla_w p^k_T\|` for k = 1..K, mean over runs of random instances
(:func:`~verify.truncation.fixtures.figure1_instance`), with the explicit Lemma 2 bound, the
fitted :math:`c\,k\lambda^k` curve and the rate fit of the mean curve
(:func:`~verify.truncation.rate_fit.fit_log_rate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from verify.model.problem import Problem
from verify.truncation.fixtures import TANH_UNSATURATED, figure1_instance, tanh_saturation
from verify.truncation.instances import TruncationParts, evaluate_instance, measured_contraction_rate
from verify.truncation.rate_fit import RateFit, fit_log_rate

__all__ = ["MIN_POINTS", "Figure1aKind", "Figure1aSetup", "degenerate_reasons", "figure1a_kind"]

#: fewest k above the round-off floor for a curve to be a curve (the rate fit needs 4 points)
MIN_POINTS = 4


@dataclass(frozen=True)
class Figure1aSetup:
    """§7.1: λ, n = d, T, number of runs, largest k (K)."""

    n: int
    T: int
    runs: int
    K: int
    lam: float = 0.75

    @property
    def ks(self) -> list[int]:
        return list(range(1, self.K + 1))


@dataclass(frozen=True)
class Figure1aKind:
    """One model kind of Fig. 1(a): the record (JSON-ready), each run's bound verdict, the fit, the first instance."""

    record: dict[str, Any]
    holds: list[bool]
    fit: RateFit | None
    first: tuple[Problem, torch.Tensor]


def _amplitude(ks: list[int], mean: list[float], lam: float, floor: float) -> float:
    r"""c of the fitted :math:`c\,k\lambda^k`: the geometric mean of e_k/(kλ^k) over the points above ``floor``."""
    above = [i for i, e in enumerate(mean) if e > floor]
    return math.exp(sum(math.log(mean[i] / (ks[i] * lam ** ks[i])) for i in above) / len(above)) if above else math.nan


def figure1a_kind(
    kind: str, impl: TruncationParts, gen: torch.Generator, setup: Figure1aSetup, *, input_sd: float | None = None
) -> Figure1aKind:
    """``setup.runs`` instances of ``kind`` drawn from ``gen``: Lemma 2's error and bound at every k; the mean's fit.

    ``input_sd``: ``None``, App. A.5's instance as printed; a value, the same draws with U rescaled so that each
    unit's input drive has that s.d. (:func:`~verify.truncation.fixtures.figure1_instance`). The record's
    ``instance``: the worst tanh saturation over the runs (:func:`~verify.truncation.fixtures.tanh_saturation`)
    and ``points_above_floor``, the k whose mean error lies above the fit's round-off floor (10x the budget).
    """
    lam, ks, runs, K = setup.lam, setup.ks, setup.runs, setup.K
    errs, bounds, gammas, budgets, tights, rates, holds, sats = [], [], [], [], [], [], [], []
    first: tuple[Problem, torch.Tensor] | None = None
    for _ in range(runs):
        P, th = figure1_instance(kind, setup.n, setup.n, setup.T, lam, gen, input_sd=input_sd)
        if first is None:
            first = (P, th)
        ev = evaluate_instance(P, th, ks=ks, impl=impl, parts=("model",), forms=("gamma",), with_rate=False)
        s = ev.series["model"]
        holds.append(s.holds)
        errs.append(s.errors)
        bounds.append(s.bounds)
        gammas.append(ev.gamma)
        budgets.append(s.budget)
        tights.append(s.tightness)
        rates.append(math.log(measured_contraction_rate(P, th)))
        sats.append(tanh_saturation(P, th))
    assert first is not None
    mean = [sum(e[i] for e in errs) / runs for i in range(K)]
    budget = max(budgets)
    fit = fit_log_rate(ks, mean, 10 * budget)
    amp = _amplitude(ks, mean, lam, 10 * budget)
    record = {
        "mean_error": mean,
        "errors": errs,
        "mean_bound": [sum(b[i] for b in bounds) / runs for i in range(K)],
        "gamma": gammas,
        "fitted_k_lam_k": [amp * k * lam**k for k in ks],
        "amplitude": amp,
        "slope": fit.slope if fit else None,
        "ci": [fit.lo, fit.hi] if fit else None,
        "log_lam": math.log(lam),
        "tightness": max(tights),
        "log_measured_contraction": sum(rates) / runs,
        "instance": {
            "input_sd": input_sd,
            "preactivation_sd": max(x["preactivation_sd"] for x in sats),
            "mean_derivative": min(x["mean_derivative"] for x in sats),
            "saturated_fraction": max(x["saturated_fraction"] for x in sats),
            "saturated": min(x["mean_derivative"] for x in sats) < TANH_UNSATURATED,
            "points_above_floor": sum(e > 10 * budget for e in mean),
        },
    }
    return Figure1aKind(record, holds, fit, first)


def degenerate_reasons(name: str, record: dict[str, Any] | None) -> list[str]:
    """Why the Fig. 1(a) curve ``record`` (:func:`figure1a_kind`) is no curve; [] when it is one.

    Degenerate: not run; the model's tanh saturated (mean tanh' below
    :data:`~verify.truncation.fixtures.TANH_UNSATURATED`: the truncation error collapses to round-off within a few
    k, far faster than λ^k, and the rate criterion holds vacuously); or fewer than :data:`MIN_POINTS` k above the
    round-off floor.
    """
    if record is None:
        return [f"{name}: not run"]
    inst, out = record["instance"], []
    if inst["saturated"]:
        out.append(
            f"{name}: tanh saturated (mean tanh' {inst['mean_derivative']:.2g} < {TANH_UNSATURATED}, pre-activation "
            f"s.d. {inst['preactivation_sd']:.2g}; fitted slope {record['slope']:.3g} vs log lambda "
            f"{record['log_lam']:.3g})"
        )
    if inst["points_above_floor"] < MIN_POINTS:
        out.append(f"{name}: {inst['points_above_floor']} k above the round-off floor (< {MIN_POINTS})")
    return out
