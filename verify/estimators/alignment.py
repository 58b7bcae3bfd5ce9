r"""How far a declared-biased estimator is from the gradient: normalized bias and cosine alignment vs exact RTRL.

For an estimator :math:`\hat g` of the sequence gradient :math:`g = \sum_{t\le T}\partial\ell_t/\partial\theta`
(what one online pass applies at frozen θ), with the float64 exact RTRL estimate as :math:`g`
(Tallec & Ollivier 2017, eq. (4), arXiv:1702.05043) and the mean :math:`\bar g` of M draws:

.. math::
    \mathrm{bias} = \frac{\|\bar g - g\|}{\|g\|},\qquad
    \cos = \frac{\langle \bar g, g\rangle}{\|\bar g\|\,\|g\|}

-- the quantities of Marschall, Cho & Savin 2020 (arXiv:1907.02649, Fig. 4: alignment of each
algorithm's gradient with the exact one) and Murray 2019 (eLife 8:e43299, Fig. 2: alignment of the RFLO update).
For a deterministic estimator (RFLO, e-prop) M = 1 suffices; for a stochastic one :math:`\bar g` carries
Monte-Carlo noise of order :math:`\sqrt{\mathrm{tr}\,\Sigma/M}/\|g\|`, reported as ``mc_noise`` so that a
bias below it is not read as bias (round-off/noise is not bias).

:func:`alignment_sweep` repeats this over random leaky-rate problems
(:func:`~verify.model.builders.leaky_problem`) on a grid of state size n, length T and spectral radius of W;
each grid point reports the mean over ``problems`` random problems and a Student-t confidence interval over
them (the spread between problems, which dominates for a deterministic estimator). :func:`alignment_figures`
turns the rows into figure specs (:mod:`verify.figure_spec`) for the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from scipy import stats as sstats

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator, run_estimator
from verify.estimators.rtrl import RTRL
from verify.figure_spec import Figure
from verify.model.builders import leaky_problem
from verify.model.problem import Problem

__all__ = ["Alignment", "AlignmentRow", "alignment_figures", "alignment_sweep", "measure_alignment"]


@dataclass(frozen=True)
class Alignment:
    """One problem: normalized bias and cosine of the mean estimate against exact RTRL."""

    bias: float
    cosine: float
    mc_noise: float  #: Monte-Carlo standard error of the mean estimate, relative to ‖g‖ (0 if deterministic)
    samples: int


@dataclass(frozen=True)
class AlignmentRow:
    """One estimator at one grid point: means over random problems and their (1 - ``level``) t-intervals."""

    estimator: str
    n: int
    T: int
    radius: float
    alpha: float
    problems: int
    bias: float
    bias_low: float
    bias_high: float
    cosine: float
    cosine_low: float
    cosine_high: float
    mc_noise: float


def measure_alignment(
    estimator: OnlineEstimator, problem: Problem, theta: torch.Tensor, *, samples: int = 1, seed: int = 0
) -> Alignment:
    """Normalized bias and cosine of ``estimator``'s mean sequence gradient vs float64 RTRL (module docstring)."""
    samples = require_positive_int("samples", samples)
    p64, th64 = problem.to(torch.float64), theta.to(torch.float64)
    g = run_estimator(RTRL(), p64, th64, torch.Generator().manual_seed(0))[:, 0].sum(0)
    est = run_estimator(estimator, p64, th64, torch.Generator().manual_seed(seed), samples=samples).sum(0)  # (M, p)
    gn = float(g.norm())
    if gn == 0.0:
        raise InvalidArgument(
            "problem", problem.describe(), "the exact gradient is zero: bias relative to it is undefined"
        )
    mean = est.mean(0)
    mn = float(mean.norm())
    cos = float(mean @ g) / (mn * gn) if mn > 0 else 0.0
    noise = float(est.var(0, unbiased=True).sum().sqrt()) / math.sqrt(samples) / gn if samples > 1 else 0.0
    return Alignment(float((mean - g).norm()) / gn, cos, noise, samples)


def _interval(values: Sequence[float], level: float) -> tuple[float, float, float]:
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, float("nan"), float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
    half = float(sstats.t.ppf(0.5 + level / 2, len(values) - 1)) * sd / math.sqrt(len(values))
    return m, m - half, m + half


def alignment_sweep(
    estimators: Mapping[str, OnlineEstimator],
    *,
    ns: Sequence[int] = (4,),
    Ts: Sequence[int] = (10,),
    radii: Sequence[float] = (0.0, 0.5, 0.9),
    alpha: float = 0.5,
    problems: int = 5,
    samples: int = 1,
    seed: int = 0,
    level: float = 0.95,
) -> list[AlignmentRow]:
    """Bias and alignment of each estimator over the grid ns × Ts × radii (module docstring); one row each."""
    problems = require_positive_int("problems", problems)
    if not estimators:
        raise InvalidArgument("estimators", estimators, "give at least one estimator to measure")
    if not 0.0 < level < 1.0:
        raise InvalidArgument("level", level, "the confidence level must be in (0, 1)")
    rows: list[AlignmentRow] = []
    for n in ns:
        for T in Ts:
            for radius in radii:
                cases = [
                    leaky_problem(
                        n=n, T=T, alpha=alpha, radius=radius, generator=torch.Generator().manual_seed(seed + 1000 * i)
                    )
                    for i in range(problems)
                ]
                for label, est in estimators.items():
                    res = [
                        measure_alignment(est, P, th, samples=samples, seed=seed + i) for i, (P, th) in enumerate(cases)
                    ]
                    b = _interval([r.bias for r in res], level)
                    c = _interval([r.cosine for r in res], level)
                    noise = max(r.mc_noise for r in res)
                    rows.append(AlignmentRow(label, n, T, float(radius), alpha, problems, *b, *c, noise))
    return rows


def alignment_figures(rows: Sequence[AlignmentRow], *, over: str = "radius") -> list[Figure]:
    """Draft figures: normalized bias and cosine alignment against ``over`` (``n``, ``T`` or ``radius``),
    one series per estimator (other grid coordinates must be fixed), with the t-intervals as error bars."""
    if over not in ("n", "T", "radius"):
        raise InvalidArgument("over", over, "must be 'n', 'T' or 'radius'")
    by: dict[str, list[AlignmentRow]] = {}
    for r in rows:
        by.setdefault(r.estimator, []).append(r)
    figs: list[Figure] = []
    for stat, ylabel in (("bias", "||E g^ - g|| / ||g||"), ("cosine", "cos(E g^, g)")):
        series: list[dict[str, Any]] = []
        for label, rs in by.items():
            rs = sorted(rs, key=lambda r: float(getattr(r, over)))
            series.append(
                {
                    "label": label,
                    "x": [getattr(r, over) for r in rs],
                    "y": [getattr(r, stat) for r in rs],
                    "ylow": [getattr(r, f"{stat}_low") for r in rs],
                    "yhigh": [getattr(r, f"{stat}_high") for r in rs],
                }
            )
        figs.append(
            {
                "kind": "errorbar",
                "title": f"{'normalized bias' if stat == 'bias' else 'alignment'} vs exact RTRL over {over}",
                "xlabel": over,
                "ylabel": ylabel,
                "series": series,
                "caption": "mean over random leaky-rate problems; bars: Student-t interval over the problems",
            }
        )
    return figs


def rows_as_dicts(rows: Sequence[AlignmentRow]) -> list[dict[str, Any]]:
    """The rows as plain dicts (for ``CheckResult.data`` / JSON)."""
    return [asdict(r) for r in rows]
