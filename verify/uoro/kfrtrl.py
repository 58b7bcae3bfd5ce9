r"""The computations behind the KF-RTRL claims (Mujika, Meier & Steger 2018, arXiv:1805.10842, §4).

The checks (:mod:`verify.checks.uoro_kfrtrl`) only decide; what they decide on is computed here:

* :func:`enumeration_rows` -- KF-RTRL's expectation over every sign pattern (c1, c2 per step) against exact
  float64 RTRL (influence matrices and per-step BPTT gradients), one row per fixture problem;
* :func:`gradient_squared_errors` -- ``draws`` per-draw squared errors ‖g̃_t − ∂ℓ_t/∂θ‖² of any online estimator
  on one problem (the reusable variance measurement: KF-RTRL's, UORO's, OK's ...);
* :func:`variance_ratios` -- E‖g̃_T − g_T‖² of an estimator over UORO's (Algorithm 1, rank 1) with a CI, on the
  same problems at several state sizes n, and :func:`ratio_slope`, the slope of log ratio on log n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.estimators import UORO, enumerate_expectation, run_estimator
from verify.estimators.base import OnlineEstimator
from verify.oracles.bptt import influence_matrices, per_step_gradients
from verify.rtrl.exact import locate
from verify.stats import compare_second_moments, squared_errors
from verify.stats.rates import fit_rate
from verify.stats.variance import log_mean_with_se
from verify.uoro.cases import Case, problem_case

__all__ = [
    "CHUNK",
    "SCALE_FIT",
    "enumeration_rows",
    "gradient_squared_errors",
    "mean_scale",
    "ratio_slope",
    "variance_ratios",
]

#: draws per estimator run in :func:`gradient_squared_errors` (memory: T·CHUNK·p floats of every step's g̃)
CHUNK = 2000


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(a - b)) / float(torch.linalg.vector_norm(b))


def enumeration_rows(est: Any, cases: Sequence[Case], budget: float = 1e-12) -> list[dict[str, Any]]:
    """Per case: the enumerated E g̃_t (t = 1..T) and E[u_t ⊗ A_t] vs exact RTRL, relative errors (float64), and
    ``where`` E g̃ first leaves ``budget`` (:func:`verify.rtrl.exact.locate`: the step and the parameter block;
    ``{}`` where it does not).

    ``est`` must have the noise hook (:mod:`verify.estimators.noise`) with a discrete law; the influence row is
    ``None`` for an estimator without ``influence_estimate``.
    """
    rows = []
    for case in cases:
        P, th = case.problem, case.theta
        E = enumerate_expectation(est, P, th)
        infl = None if E.influence is None else _rel(E.influence, influence_matrices(P, th))
        ref = per_step_gradients(P, th)
        where = locate(E.gradients, ref, P, budget)
        at = {k: where[k] for k in ("first_step", "block", "block_errors")} if where else {}
        if where:
            at["scale"] = mean_scale(E.gradients[where["first_step"] - 1], ref[where["first_step"] - 1], P)
        rows.append(
            {
                "problem": case.label,
                "patterns": E.patterns,
                "gradient_error": _rel(E.gradients, ref),
                "influence_error": infl,
                "where": at,
            }
        )
    return rows


#: a mean that is this close (relative residual) to a multiple of the truth differs from it by a scale alone
SCALE_FIT = 1e-6


def mean_scale(mean: torch.Tensor, ref: torch.Tensor, problem: Any) -> float | None:
    r"""The factor c with ``mean`` = c·``ref`` on the cell's parameters at one step, where ``mean`` is that (relative
    residual <= :data:`SCALE_FIT`) and c differs from 1; None otherwise. KF-RTRL's expectation is
    :math:`E[u_t\otimes A_t] = u_{t-1}\otimes H_tA_{t-1} + a_t\otimes D_t` when each normalizer cancels
    (Mujika et al. 2018 §4: :math:`\rho` on one factor, :math:`1/\rho` on the other); at the first step that
    leaves RTRL a pure scale of the cell's gradient is what a normalizer that does not cancel gives (at t = 1, where
    only the immediate term :math:`a_1\otimes D_1` is present, :math:`\rho_2^2` for :math:`\rho_2` on both)."""
    cell = [e.slice for e in problem.layout.entries if e.name.startswith("cell.")]
    if not cell:
        return None
    m = torch.cat([mean.reshape(-1, problem.p)[..., sl].reshape(-1) for sl in cell])
    g = torch.cat([ref.reshape(-1, problem.p)[..., sl].reshape(-1) for sl in cell])
    gg = float(torch.dot(g, g))
    if gg == 0.0:
        return None
    c = float(torch.dot(m, g)) / gg
    residual = float(torch.linalg.vector_norm(m - c * g)) / gg**0.5
    return c if residual <= SCALE_FIT and abs(c - 1.0) > SCALE_FIT else None


def gradient_squared_errors(
    est: OnlineEstimator, case: Case, draws: int, gen: torch.Generator, *, step: int | None = None
) -> torch.Tensor:
    """``draws`` squared errors ‖g̃_t − ∂ℓ_t/∂θ‖² of ``est`` on ``case`` at step ``t`` (default T), from ``gen``.

    A 1-D float64 tensor; its mean is the estimator's total variance at t (its bias² included: zero for an
    unbiased estimator). The reference is exact float64 BPTT (:func:`verify.oracles.bptt.per_step_gradients`).
    The draws are run in chunks of :data:`CHUNK` samples from the same ``gen`` (still i.i.d.).
    """
    P, th = case.problem, case.theta
    t = P.T if step is None else step
    g = per_step_gradients(P, th)[t - 1]
    out = []
    for start in range(0, draws, CHUNK):  # run_estimator keeps every step's g~ (T x M x p): bound M
        m = min(CHUNK, draws - start)
        out.append(squared_errors(run_estimator(est, P, th, gen, samples=m)[t - 1], g))
    return torch.cat(out)


def variance_ratios(
    est: OnlineEstimator,
    ns: Sequence[int],
    *,
    T: int,
    draws: int,
    seed: int,
    salt: int,
    gen: torch.Generator,
    level: float,
    kind: str = "elman-tanh",
    baseline: OnlineEstimator | None = None,
) -> list[dict[str, Any]]:
    """For each n: E‖g̃_T − g_T‖² of ``est`` over ``baseline``'s (default: the toolkit's UORO) on the same problem,
    with a ``level`` CI (row keys ``variance``, ``uoro_variance`` -- the baseline's --, ``ratio``, ``ci``, ``log_se``).

    The problem of state size n is :func:`~verify.uoro.cases.problem_case` (kind, n, T, seed, salt + n); ``draws``
    i.i.d. draws of each estimator (independent: the two runs take consecutive streams of ``gen``). The CI is the
    delta-method interval of the log ratio of two sample means (:func:`verify.stats.compare_second_moments`).
    """
    rows = []
    for n in ns:
        case = problem_case(kind, n, T, seed, salt + n)
        q_est = gradient_squared_errors(est, case, draws, gen)
        q_uoro = gradient_squared_errors(UORO() if baseline is None else baseline, case, draws, gen)
        cmp = compare_second_moments(q_est, q_uoro, level=level)
        rows.append(
            {
                "n": n,
                "problem": case.label,
                "draws": draws,
                "variance": cmp.mean_a,
                "uoro_variance": cmp.mean_b,
                "ratio": cmp.ratio,
                "ci": list(cmp.ratio_ci),
                "log_se": _log_se(q_est, q_uoro),
            }
        )
    return rows


def _log_se(a: torch.Tensor, b: torch.Tensor) -> float:
    """Delta-method standard error of log(mean a / mean b) (independent samples)."""
    return math.hypot(log_mean_with_se(a)[1], log_mean_with_se(b)[1])


def ratio_slope(rows: Sequence[dict[str, Any]], level: float) -> tuple[float, tuple[float, float]]:
    """Weighted least-squares slope of log ratio on log n (weights 1/se², :func:`verify.stats.rates.fit_rate`'s
    ``"wls"``) and its ``level`` normal CI."""
    if len(rows) < 2:
        raise InvalidArgument("rows", f"{len(rows)} state size(s)", "the slope needs at least two")
    fit = fit_rate(
        [math.log(r["n"]) for r in rows], [math.log(r["ratio"]) for r in rows], errors="wls",
        se=[r["log_se"] for r in rows], level=level,
    )  # fmt: skip
    return fit.slope, (fit.lo, fit.hi)
