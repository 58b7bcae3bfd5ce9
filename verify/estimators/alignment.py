r"""How far an online estimator is from the gradient: normalized bias and cosine alignment vs exact RTRL.

For an estimator :math:`\hat g` of the sequence gradient :math:`g = \sum_{t\le T}\partial\ell_t/\partial\theta`
(what one online pass applies at frozen θ), with the float64 exact RTRL estimate as :math:`g`
(Tallec & Ollivier 2017, eq. (4), arXiv:1702.05043), the two estimands are

.. math::
    \mathrm{bias} = \frac{\|E\hat g - g\|}{\|g\|},\qquad
    \cos = \frac{\langle E\hat g, g\rangle}{\|E\hat g\|\,\|g\|}

-- the comparison Marschall, Cho & Savin 2020 ("A Unified Framework of Online Learning Algorithms for Training
Recurrent Neural Networks", JMLR 21(135), arXiv:1907.02649) draw between online algorithms: the alignment
(normalized dot product) of each algorithm's gradient with the exact one, in their experiments.

**Two kinds of estimator, two kinds of interval** (the declared :class:`~verify.estimators.guarantee.Guarantee`
says which; an ``unbiased`` declaration is the only stochastic one here):

* *Deterministic* (``exact``, ``biased``, ``truncated``: RTRL, SnAp-n, RFLO, e-prop): :math:`E\hat g = \hat g`, so
  bias and cosine are **exact per problem** (one run, round-off only). What varies is the problem: each grid point
  draws ``problems`` random problems and reports the mean over them with a **Student-t interval over the problems**
  (level ``level``, clipped to the quantity's range: bias >= 0, cosine in [-1, 1]): an interval for the mean bias
  over the random-problem distribution of that grid point.
* *Stochastic* (``unbiased``: UORO, KF-RTRL): :math:`E\hat g` is estimated by the mean :math:`\bar g` of M draws,
  and :math:`\|\bar g - g\|` is inflated by the Monte-Carlo noise (:math:`E\|\bar g-g\|^2 = \|E\hat g-g\|^2 +
  \mathrm{tr}\,\Sigma/M`). Each problem's draws go through the toolkit's unbiasedness test
  (:func:`verify.stats.unbiased.fixed_sample_test`, one quantity per problem and grid point, α and β split over
  them by its Bonferroni rule): its verdict (FAIL = bias detected at the stated α) and its confidence ball
  :math:`\{\mu: \|\mu - \bar g\| \le r\}` (level 1 − β/J each, so all balls hold together with probability
  ≥ 1 − β). The row's interval is the **mean over the problems of the per-problem ball bounds**:
  :math:`[\max(0, \|\bar g-g\| - r), \|\bar g-g\| + r]/\|g\|` for the bias and the range of the cosine over
  the ball for the alignment -- a simultaneous interval for the mean *true* bias over those problems.

  The test runs with no declared event floor (:class:`~verify.stats.unbiased.TestOptions`): a direction in which
  the M draws happen not to vary is not taken as deterministic -- KF-RTRL's draws vary along some directions only
  on rare sign patterns (at n = 4, T = 5, a direction of relative variance 1e-5 is absent from 60 draws and present
  in 100), so the floor 1/2 it declares would turn those directions into false "deterministic offsets". **Flat
  draws**: an estimator declared unbiased whose M draws on a problem are all identical has shown no randomness at
  all; it is judged as deterministic there (bias detected when :math:`\|\hat g - g\|` exceeds the test's round-off
  budget). Premise: a correct unbiased estimator repeats one value with probability q < 1 -- all M draws equal has
  probability :math:`q^{M-1}` (below 1e-3 for M = 200 when q < 0.96; UORO and KF-RTRL leave their most
  common value on >= 93 % of draws in every coordinate that varies). Too few draws break the test's own premise:
  at M = 60 its unresolved-directions subtest FAILed correct KF-RTRL (n = 4, T = 5) -- the direction that varies
  only on rare sign patterns looks deterministic; use M >= 100 (the claim uses 200).

:func:`alignment_sweep` measures a product grid of state size n, length T, spectral radius of W and the
density of W's nonzeros (the sparsity SnAp is built for; :func:`~verify.estimators.snap.sparse_elman_problem`);
:func:`axis_sweep` varies one axis at a time around a centre (the one-line-per-algorithm figures), and
:func:`alignment_figures` turns rows into figure specs (:mod:`verify.figure_spec`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch

from verify._validate import require_positive_int, require_probability
from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator, run_estimator
from verify.estimators.guarantee import guarantee_of
from verify.estimators.rtrl import RTRL
from verify.estimators.snap import sparse_elman_problem
from verify.figure_spec import Figure
from verify.model.builders import leaky_problem
from verify.model.problem import Problem
from verify.oracles.budget import conditioning, pair_unit, roundoff_budget
from verify.stats.rates import mean_interval
from verify.stats.unbiased import QuantityResult, TestOptions, fixed_sample_test

__all__ = [
    "AXES",
    "Alignment",
    "AlignmentRow",
    "GridPoint",
    "alignment_figures",
    "alignment_sweep",
    "axis_sweep",
    "cosine_range",
    "float32_budget",
    "measure_alignment",
    "rows_as_dicts",
]

#: the grid axes: state size, sequence length, spectral radius of W, density of W's off-diagonal nonzeros
AXES = ("n", "T", "radius", "density")
CELLS = ("leaky", "elman")


@dataclass(frozen=True)
class Alignment:
    """One problem: normalized bias and cosine of the mean estimate against exact RTRL."""

    bias: float
    cosine: float
    mc_noise: float  #: Monte-Carlo standard error of the mean estimate, relative to ‖g‖ (0 if deterministic)
    samples: int


class GridPoint(NamedTuple):
    """One point of the grid (:data:`AXES`)."""

    n: int
    T: int
    radius: float
    density: float


@dataclass(frozen=True)
class AlignmentRow:
    """One estimator at one grid point: means over random problems and their intervals (module docstring).

    ``interval`` says which: ``"t over problems"`` (deterministic estimator) or ``"confidence balls"``
    (stochastic); ``failed`` counts the problems whose unbiasedness test detected a bias (stochastic only);
    ``axis``: the axis this row varies in an :func:`axis_sweep` (``""`` in a product grid).
    """

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
    density: float = 1.0
    guarantee: str = ""
    interval: str = "t over problems"
    samples: int = 1
    failed: int = 0
    axis: str = ""
    max_bias: float = 0.0  #: the largest per-problem bias (deterministic: exact; stochastic: ‖ḡ − g‖/‖g‖)
    #: the precision the estimator was judged at (float32: its draws tested with float32 round-off, its
    #: deterministic bias against the predicted float32 budget -- :mod:`verify.impl.precision`)
    precision: str = "float64"
    #: judged at float32, deterministic: the largest per-problem bias / its predicted float32 budget
    #: (:func:`float32_budget`); NaN otherwise
    budget_ratio: float = math.nan


def _exact_gradient(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    g = run_estimator(RTRL(), problem, theta, torch.Generator().manual_seed(0))[:, 0].sum(0)
    if float(g.norm()) == 0.0:
        raise InvalidArgument(
            "problem", problem.describe(), "the exact gradient is zero: bias relative to it is undefined"
        )
    return g


def float32_budget(problem: Problem, theta: torch.Tensor) -> float:
    r"""The predicted round-off budget of :math:`\|\hat g - g\|/\|g\|` for the summed sequence gradient of an
    estimator computing in float32 against float64 RTRL: :math:`C\,u\,m\,T\,\kappa` with the pair unit
    :math:`(u_{32}+u_{64})/2` (:func:`verify.oracles.budget.pair_unit`) and κ of the total gradient."""
    cond = conditioning(problem, theta, with_influence=False)
    return roundoff_budget(pair_unit(torch.float32), cond.depth, cond.steps, cond.kappa_grad)


def _draws(estimator: OnlineEstimator, problem: Problem, theta: torch.Tensor, samples: int, seed: int) -> torch.Tensor:
    """(M, p) draws of the summed sequence gradient, float64."""
    return run_estimator(estimator, problem, theta, torch.Generator().manual_seed(seed), samples=samples).sum(0)


def measure_alignment(
    estimator: OnlineEstimator, problem: Problem, theta: torch.Tensor, *, samples: int = 1, seed: int = 0
) -> Alignment:
    """Normalized bias and cosine of ``estimator``'s mean sequence gradient vs float64 RTRL (module docstring)."""
    samples = require_positive_int("samples", samples)
    p64, th64 = problem.to(torch.float64), theta.to(torch.float64)
    g = _exact_gradient(p64, th64)
    est = _draws(estimator, p64, th64, samples, seed)
    gn = float(g.norm())
    mean = est.mean(0)
    mn = float(mean.norm())
    cos = float(mean @ g) / (mn * gn) if mn > 0 else 0.0
    noise = float(est.var(0, unbiased=True).sum().sqrt()) / math.sqrt(samples) / gn if samples > 1 else 0.0
    return Alignment(float((mean - g).norm()) / gn, cos, noise, samples)


def cosine_range(mean: torch.Tensor, g: torch.Tensor, r: float) -> tuple[float, float]:
    r"""The smallest and largest :math:`\cos(\mu, g)` over the ball :math:`\|\mu - \bar g\| \le r`.

    The angle between μ and :math:`\bar g` is at most :math:`\arcsin(r/\|\bar g\|)` when :math:`r < \|\bar g\|`
    (the ball then excludes 0); otherwise every direction is reached, (−1, 1).
    """
    mn, gn = float(mean.norm()), float(g.norm())
    if r < 0 or not math.isfinite(r):
        raise InvalidArgument("r", r, "the ball's radius must be finite and >= 0")
    if gn == 0.0:
        raise InvalidArgument("g", "0", "the cosine with a zero vector is undefined")
    if r >= mn:
        return -1.0, 1.0
    angle = math.acos(max(-1.0, min(1.0, float(mean @ g) / (mn * gn))))
    spread = math.asin(r / mn)
    return math.cos(min(math.pi, angle + spread)), math.cos(max(0.0, angle - spread))


def _interval(
    values: Sequence[float], level: float, lo: float = -math.inf, hi: float = math.inf
) -> tuple[float, float, float]:
    """Mean and Student-t interval over the problems (:func:`verify.stats.rates.mean_interval`), clipped to the
    quantity's range [lo, hi]."""
    m, a, b = mean_interval(values, level)
    return (m, a, b) if math.isnan(a) else (m, max(lo, a), min(hi, b))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _problem(cell: str, pt: GridPoint, alpha: float, generator: torch.Generator) -> tuple[Problem, torch.Tensor]:
    if cell == "leaky":
        return leaky_problem(n=pt.n, T=pt.T, alpha=alpha, radius=pt.radius, generator=generator)
    return sparse_elman_problem(n=pt.n, T=pt.T, radius=pt.radius, density=pt.density, generator=generator)


class _Measured(NamedTuple):
    g: torch.Tensor  #: exact gradient (p,)
    draws: torch.Tensor  #: (M, p)


def _sweep(
    estimators: Mapping[str, OnlineEstimator],
    points: Sequence[tuple[str, GridPoint]],
    *,
    cell: str,
    alpha: float,
    problems: int,
    samples: int,
    seed: int,
    level: float,
    test_alpha: float,
    beta: float,
    precisions: Mapping[str, torch.dtype] | None = None,
) -> list[AlignmentRow]:
    problems = require_positive_int("problems", problems)
    samples = require_positive_int("samples", samples, minimum=2)
    if not estimators:
        raise InvalidArgument("estimators", estimators, "give at least one estimator to measure")
    if not 0.0 < level < 1.0:
        raise InvalidArgument("level", level, "the confidence level must be in (0, 1)")
    if cell not in CELLS:
        raise InvalidArgument("cell", cell, f"must be one of {CELLS}")
    require_probability("test_alpha", test_alpha)
    require_probability("beta", beta)
    unique = list(dict.fromkeys(pt for _, pt in points))
    if cell == "leaky" and any(pt.density != 1.0 for pt in unique):
        raise InvalidArgument("densities", [pt.density for pt in unique], "the leaky cell has a dense W: use 1.0")
    cases = {
        pt: [_problem(cell, pt, alpha, torch.Generator().manual_seed(seed + 1000 * i)) for i in range(problems)]
        for pt in unique
    }
    grads = {pt: [_exact_gradient(P, th) for P, th in cases[pt]] for pt in unique}
    stochastic = {label: guarantee_of(est).kind == "unbiased" for label, est in estimators.items()}
    rows: list[AlignmentRow] = []
    for label, est in estimators.items():
        M = samples if stochastic[label] else 1
        f32 = (precisions or {}).get(label, torch.float64) == torch.float32
        measured = {
            pt: [
                _Measured(g, _draws(est, P, th, M, seed + i))
                for i, ((P, th), g) in enumerate(zip(cases[pt], grads[pt], strict=True))
            ]
            for pt in unique
        }
        tests: dict[GridPoint, list[QuantityResult]] = {}
        if stochastic[label]:
            order = [(pt, i) for pt in unique for i in range(problems)]
            opts = TestOptions(alpha=test_alpha, beta=beta)  # no event floor declared: flat directions prove nothing
            res = fixed_sample_test(  # float32 draws: the test's round-off model takes u32 (verify.stats.roundoff)
                [measured[pt][i].draws.to(torch.float32 if f32 else torch.float64) for pt, i in order],
                [measured[pt][i].g for pt, i in order],
                options=opts,
                generator=torch.Generator().manual_seed(seed),
            )
            for (pt, _), q in zip(order, res.quantities, strict=True):
                tests.setdefault(pt, []).append(q)
        kind = guarantee_of(est).kind
        for axis, pt in points:
            ms = measured[pt]
            biases = [float((m.draws.mean(0) - m.g).norm() / m.g.norm()) for m in ms]
            cosines = [_cos(m.draws.mean(0), m.g) for m in ms]
            noise = max(_mc_noise(m.draws) / float(m.g.norm()) for m in ms)
            ratio = math.nan
            if stochastic[label]:
                qs = tests[pt]
                radii = [q.radius / float(m.g.norm()) for q, m in zip(qs, ms, strict=True)]
                cr = [cosine_range(m.draws.mean(0), m.g, q.radius) for q, m in zip(qs, ms, strict=True)]
                b = (_mean(biases), _mean([max(0.0, x - r) for x, r in zip(biases, radii, strict=True)]),
                     _mean([x + r for x, r in zip(biases, radii, strict=True)]))  # fmt: skip
                c = (_mean(cosines), _mean([lo for lo, _ in cr]), _mean([hi for _, hi in cr]))
                failed = sum(_detected(q, m) for q, m in zip(qs, ms, strict=True))
                interval = "confidence balls"
            else:
                b, c = _interval(biases, level, lo=0.0), _interval(cosines, level, lo=-1.0, hi=1.0)
                failed, interval = 0, "t over problems"
                if f32:
                    ratio = max(x / float32_budget(P, th) for x, (P, th) in zip(biases, cases[pt], strict=True))
            rows.append(
                AlignmentRow(
                    label,
                    pt.n,
                    pt.T,
                    float(pt.radius),
                    alpha,
                    problems,
                    *b,
                    *c,
                    noise,
                    density=float(pt.density),
                    guarantee=kind,
                    interval=interval,
                    samples=M,
                    failed=failed,
                    axis=axis,
                    max_bias=max(biases),
                    precision="float32" if f32 else "float64",
                    budget_ratio=ratio,
                )
            )
    return rows


def _detected(q: QuantityResult, m: _Measured) -> bool:
    """A bias detected on one problem: the test FAILs, or the draws are all equal (no randomness shown) and differ
    from g beyond the test's round-off budget (module docstring, "flat draws")."""
    flat = bool((m.draws == m.draws[0]).all())
    return q.verdict.value == "FAIL" or (flat and float((m.draws[0] - m.g).norm()) > q.roundoff_budget)


def _cos(mean: torch.Tensor, g: torch.Tensor) -> float:
    mn = float(mean.norm())
    return float(mean @ g) / (mn * float(g.norm())) if mn > 0 else 0.0


def _mc_noise(draws: torch.Tensor) -> float:
    if draws.shape[0] < 2:
        return 0.0
    return float(draws.var(0, unbiased=True).sum().sqrt()) / math.sqrt(draws.shape[0])


def alignment_sweep(
    estimators: Mapping[str, OnlineEstimator],
    *,
    ns: Sequence[int] = (4,),
    Ts: Sequence[int] = (10,),
    radii: Sequence[float] = (0.0, 0.5, 0.9),
    densities: Sequence[float] = (1.0,),
    cell: str = "leaky",
    alpha: float = 0.5,
    problems: int = 5,
    samples: int = 200,
    seed: int = 0,
    level: float = 0.95,
    test_alpha: float = 1e-3,
    beta: float = 1e-3,
    precisions: Mapping[str, torch.dtype] | None = None,
) -> list[AlignmentRow]:
    """Bias and alignment of each estimator over the product grid ns × Ts × radii × densities; one row each.

    ``cell``: ``"leaky"`` (leaky rate units, leak ``alpha``, dense W: :func:`~verify.model.builders.leaky_problem`)
    or ``"elman"`` (tanh Elman, W with off-diagonal density ``density``: every estimator here is defined on it,
    KF-RTRL included). ``samples``: draws per problem of an estimator declared ``unbiased`` (deterministic ones
    run once); ``test_alpha``, ``beta``: the error rates of its unbiasedness test over the whole sweep;
    ``precisions``: estimator label -> the precision it is judged at (float32: :attr:`AlignmentRow.precision`).
    """
    points = [("", GridPoint(n, T, float(r), float(dn))) for n in ns for T in Ts for r in radii for dn in densities]
    return _sweep(
        estimators, points, cell=cell, alpha=alpha, problems=problems, samples=samples, seed=seed, level=level,
        test_alpha=test_alpha, beta=beta, precisions=precisions,
    )  # fmt: skip


def axis_sweep(
    estimators: Mapping[str, OnlineEstimator],
    *,
    center: GridPoint,
    axes: Mapping[str, Sequence[float]],
    cell: str = "elman",
    alpha: float = 0.5,
    problems: int = 3,
    samples: int = 200,
    seed: int = 0,
    level: float = 0.95,
    test_alpha: float = 1e-3,
    beta: float = 1e-3,
    precisions: Mapping[str, torch.dtype] | None = None,
) -> list[AlignmentRow]:
    """One axis at a time around ``center``: for each ``axes[name]`` value, the centre with that coordinate
    replaced; rows tagged with ``axis`` (a grid point shared by several axes is measured once)."""
    if not axes:
        raise InvalidArgument("axes", axes, f"give at least one axis of {AXES}")
    points: list[tuple[str, GridPoint]] = []
    for name, values in axes.items():
        if name not in AXES:
            raise InvalidArgument("axes", name, f"an axis is one of {AXES}")
        if not values:
            raise InvalidArgument(f"axes[{name!r}]", values, "give at least one value")
        for v in values:
            coords: dict[str, Any] = {name: int(v) if name in ("n", "T") else float(v)}
            pt = center._replace(**coords)
            points.append((name, pt))
    return _sweep(
        estimators, points, cell=cell, alpha=alpha, problems=problems, samples=samples, seed=seed, level=level,
        test_alpha=test_alpha, beta=beta, precisions=precisions,
    )  # fmt: skip


_YLABEL = {"bias": "||E g^ - g|| / ||g||", "cosine": "cos(E g^, g)"}


def alignment_figures(rows: Sequence[AlignmentRow], *, over: str = "radius") -> list[Figure]:
    """Normalized bias and cosine alignment against ``over`` (one of :data:`AXES`), one series per estimator.

    In an :func:`axis_sweep` only the rows of that axis are drawn; in a product grid the other coordinates must be
    fixed. The bars are each row's interval (t over problems, or the confidence balls: module docstring).
    """
    if over not in AXES:
        raise InvalidArgument("over", over, f"must be one of {AXES}")
    rows = [r for r in rows if r.axis in ("", over)]
    by: dict[str, list[AlignmentRow]] = {}
    for r in rows:
        by.setdefault(r.estimator, []).append(r)
    if not by:
        raise InvalidArgument("rows", len(rows), f"no rows vary {over!r}")
    fixed = {a: sorted({getattr(r, a) for r in rows}) for a in AXES if a != over}
    held = ", ".join(f"{a} = {v[0]:g}" for a, v in fixed.items() if len(v) == 1)
    figs: list[Figure] = []
    for stat in ("bias", "cosine"):
        series: list[dict[str, Any]] = []
        for label, rs in by.items():
            rs = sorted(rs, key=lambda r: float(getattr(r, over)))
            series.append(
                {
                    "label": f"{label} ({rs[0].guarantee})" if rs[0].guarantee else label,
                    "x": [getattr(r, over) for r in rs],
                    "y": [getattr(r, stat) for r in rs],
                    "ylow": [getattr(r, f"{stat}_low") for r in rs],
                    "yhigh": [getattr(r, f"{stat}_high") for r in rs],
                    "style": "dashed" if rs[0].interval == "confidence balls" else "solid",
                }
            )
        figs.append(
            {
                "kind": "line",
                "title": f"{'normalized bias' if stat == 'bias' else 'alignment'} vs exact RTRL over {over}",
                "xlabel": over,
                "ylabel": _YLABEL[stat],
                "series": series,
                "caption": f"mean over {rows[0].problems} random problems per point"
                + (f" ({held})" if held else "")
                + "; bars: deterministic estimators (solid), Student-t interval over the problems; estimators "
                "declared unbiased (dashed), mean of the per-problem confidence balls of their unbiasedness test "
                f"(E g^ from {max(r.samples for r in rows)} draws). On an Elman cell SnAp-1 and e-prop keep the "
                "same entries of the influence, so their lines coincide",
            }
        )
    return figs


def rows_as_dicts(rows: Sequence[AlignmentRow]) -> list[dict[str, Any]]:
    """The rows as plain dicts (for ``CheckResult.data`` / JSON)."""
    return [asdict(r) for r in rows]
