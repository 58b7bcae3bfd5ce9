r"""Lemma 1, Lemma 2 and the :math:`k\lambda^k` rate on suites and fixtures (Miller & Hardt, "Stable Recurrent Models").

What the ``truncation.state-bound``, ``truncation.gradient-bound``,
``truncation.tbptt-gradient-bound`` and ``truncation.rate`` checks compute: every bound of
:func:`~verify.truncation.instances.evaluate_instance` on a suite of random contractive
instances, the bounds and closed forms on the extremal scalar system
(:func:`~verify.truncation.fixtures.extremal_linear_problem`, where Lemmas 1–2 are nearly
tight) and the rate fits of the measured errors (:func:`~verify.truncation.rate_fit.fit_log_rate`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from verify.model.problem import Problem
from verify.truncation.fixtures import FIB, Instance, conformance, extremal_linear_problem
from verify.truncation.instances import BoundSeries, InstanceEvaluation, TruncationParts, evaluate_instance
from verify.truncation.rate_fit import RateFit, fit_log_rate, rate_verdict

__all__ = [
    "FIXTURE_LAMS",
    "PRINTED_FORMS",
    "ExtremalCheck",
    "ExtremalFixture",
    "RateTable",
    "extremal_check",
    "extremal_fixture",
    "fixture_bound",
    "gradient_extremal_fixture",
    "model_rate_fit",
    "plain_evaluations",
    "quantiles",
    "rate_of",
    "rate_rows",
    "suite_evaluations",
    "suite_rate_fits",
]

#: the λ of the extremal scalar system at which every fixture is evaluated
FIXTURE_LAMS = (0.3, 0.6, 0.9)

#: forms of Lemma 2 compared on the extremal system: the lemma's γkλ^k and the paper's printed exponent
PRINTED_FORMS = ("gamma", "printed-proof", "printed-gamma")


def suite_evaluations(suite: Sequence[Instance], impl: TruncationParts, full: bool) -> tuple[InstanceEvaluation, ...]:
    """Every bound on a random suite: every k up to T = 59, every ⌊T/30⌋-th k beyond (cost ~ T²).

    The state bound at the Fibonacci k (the first seven unless ``full``); the model error also
    against γkλ^k.
    """
    return tuple(
        evaluate_instance(
            P,
            th,
            label=lab,
            ks=range(1, P.T, max(1, P.T // 30)),
            impl=impl,
            forms=("gamma",),
            state_ks=FIB if full else FIB[:7],
        )
        for lab, P, th in suite
    )


def plain_evaluations(suite: Sequence[Instance], impl: TruncationParts) -> tuple[InstanceEvaluation, ...]:
    """Every bound at every k on each instance of ``suite`` (:func:`evaluate_instance` with its defaults)."""
    return tuple(evaluate_instance(P, th, label=lab, impl=impl) for lab, P, th in suite)


def quantiles(vals: Sequence[float]) -> dict[str, float]:
    """Median, worst (largest), best (smallest) and count of the finite values."""
    v = sorted(x for x in vals if math.isfinite(x))
    if not v:
        return {"median": math.nan, "worst": math.nan, "best": math.nan, "count": 0}
    return {
        "median": v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2]),
        "worst": v[-1],
        "best": v[0],
        "count": len(v),
    }


def fixture_bound(
    part: str, impl: TruncationParts, lam: float, ks: Sequence[int] = range(1, 31)
) -> tuple[bool, BoundSeries]:
    """The bound on :func:`extremal_linear_problem` at k = 1..30 (states: T = 60 and the Fibonacci k, every t)."""
    P, th = extremal_linear_problem(lam, 60 if part == "state" else 120)
    ev = evaluate_instance(P, th, ks=ks, impl=impl, parts=(part,), with_rate=False, state_ks=FIB[:7])
    s = ev.series[part]
    return s.holds, s


@dataclass(frozen=True)
class ExtremalCheck:
    """One part on the extremal system at one λ: its bound (``holds``, ``series``) and its closed form.

    ``conforms``: |implementation − closed form| ≤ budget at every k compared; ``ratio``: the worst
    error/budget.
    """

    holds: bool
    series: BoundSeries
    conforms: bool
    ratio: float

    @property
    def ok(self) -> bool:
        return self.holds and self.conforms

    def record(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "tightness": self.series.tightness,
            "allowance": self.series.allowance,
            "closed_form_ok": self.conforms,
            "closed_form_ratio": self.ratio,
        }


def extremal_check(
    part: str, impl: TruncationParts, lam: float, conform_ks: Sequence[int], bound_ks: Sequence[int] = range(1, 31)
) -> ExtremalCheck:
    """``part`` of ``impl`` on the extremal system: its bound at ``bound_ks``, its closed form at ``conform_ks``."""
    holds, s = fixture_bound(part, impl, lam, bound_ks)
    ok_c, worst = conformance(part, impl, lam, 60, conform_ks)
    return ExtremalCheck(holds, s, ok_c, worst)


@dataclass(frozen=True)
class ExtremalFixture:
    """The extremal system at every λ of :data:`FIXTURE_LAMS`: per-λ records, the series to draw, failing labels."""

    records: dict[str, dict[str, Any]]
    series: dict[str, BoundSeries]
    fails: list[str]


def extremal_fixture(part: str, impl: TruncationParts) -> ExtremalFixture:
    """Lemma 1 (``state``) or truncated BPTT (``tbptt``) on the extremal system: bound and closed form.

    ``series``: the bound series at λ = 0.6 (the figure).
    """
    records: dict[str, dict[str, Any]] = {}
    series: dict[str, BoundSeries] = {}
    fails: list[str] = []
    for lam in FIXTURE_LAMS:
        r = extremal_check(part, impl, lam, (1, 2, 5, 13))
        if lam == 0.6:
            series[part] = r.series
        records[str(lam)] = r.record()
        if not r.ok:
            fails.append(f"extremal lam={lam}")
    return ExtremalFixture(records, series, fails)


def gradient_extremal_fixture(impl: TruncationParts) -> ExtremalFixture:
    """Lemma 2 (truncated model) on the extremal system at every λ, against the corrected and the printed forms.

    ``series``: the model series and its ``model:<form>`` companions at λ = 0.3 (the figure).
    """
    records: dict[str, dict[str, Any]] = {}
    series: dict[str, BoundSeries] = {}
    fails: list[str] = []
    for lam in FIXTURE_LAMS:
        P, th = extremal_linear_problem(lam, 120)
        ev = evaluate_instance(
            P, th, ks=range(1, 31), impl=impl, parts=("model",), forms=PRINTED_FORMS, with_rate=False
        )
        ok_c, worst = conformance("model", impl, lam, 60, (1, 2, 5, 13))
        if lam == 0.3:
            series = dict(ev.series)
        s = ev.series
        records[str(lam)] = {
            "holds": s["model"].holds,
            "tightness_proof": s["model"].tightness,
            "allowance": s["model"].allowance,
            "tightness_gamma": s["model:gamma"].tightness,
            "printed_proof_ratio": s["model:printed-proof"].tightness,
            "printed_gamma_ratio": s["model:printed-gamma"].tightness,
            "closed_form_ok": ok_c,
            "closed_form_ratio": worst,
        }
        if not (s["model"].holds and ok_c):
            fails.append(f"extremal lam={lam}")
    return ExtremalFixture(records, series, fails)


def rate_of(ev: InstanceEvaluation, name: str = "model") -> RateFit | None:
    """The rate fit of one error series, on the points above 10× its round-off budget."""
    s = ev.series[name]
    return fit_log_rate(s.ks, s.errors, 10.0 * s.budget)


def suite_rate_fits(
    evs: Sequence[InstanceEvaluation],
) -> tuple[list[tuple[InstanceEvaluation, str, RateFit]], list[str]]:
    """The rate fit of the truncated model and truncated BPTT on every instance; the series with no fit (skipped)."""
    fits: list[tuple[InstanceEvaluation, str, RateFit]] = []
    skipped: list[str] = []
    for ev in evs:
        for name in ("model", "tbptt"):
            fit = rate_of(ev, name)
            if fit is None:
                skipped.append(f"{ev.label}/{name}")
            else:
                fits.append((ev, name, fit))
    return fits, skipped


def model_rate_fit(
    problem: Problem, theta: torch.Tensor, impl: TruncationParts, ks: Sequence[int] | None = None
) -> tuple[InstanceEvaluation, RateFit | None]:
    """Lemma 2 (truncated model) at every k of ``ks`` (default 1..T−1) and the rate fit of its error."""
    ev = evaluate_instance(problem, theta, ks=ks, impl=impl, parts=("model",), with_rate=False)
    return ev, rate_of(ev)


@dataclass(frozen=True)
class RateTable:
    """The rate fits classified at one level: rows of the informative ones and the labels of each outcome."""

    rows: list[dict[str, Any]]
    slower: list[str]
    unadjusted: list[str]
    not_informative: list[str]


def rate_rows(fits: Sequence[tuple[InstanceEvaluation, str, RateFit]], alpha: float) -> RateTable:
    """Each fit's verdict (:func:`~verify.truncation.rate_fit.rate_verdict`) with its one-sided bound at ``alpha``.

    One row per informative fit; the labels of the fits slower than λ^k (on an informative
    window), of the unadjusted 99% intervals above log λ and of the fits not informative.
    """
    rows: list[dict[str, Any]] = []
    fails: list[str] = []
    unadjusted: list[str] = []
    skipped: list[str] = []
    for ev, name, fit in fits:
        log_lam = math.log(ev.lam)
        verdict = rate_verdict(fit, log_lam, alpha)
        if verdict == "not informative":
            skipped.append(f"{ev.label}/{name}")
            continue
        if rate_verdict(fit, log_lam) != "consistent":
            unadjusted.append(f"{ev.label}/{name} (+{fit.lo - log_lam:.3f})")
        rc = math.log(ev.contraction_rate) if ev.contraction_rate > 0 else None
        rows.append(
            {
                "label": ev.label,
                "series": name,
                "slope": fit.slope,
                "ci": [fit.lo, fit.hi],
                "adjusted_lower": fit.lower(alpha),
                "log_lam": log_lam,
                "log_measured_contraction": rc,
                "points": fit.points,
                "ok": verdict == "consistent",
            }
        )
        if verdict == "slower":
            fails.append(f"{ev.label}/{name}")
    return RateTable(rows, fails, unadjusted, skipped)
