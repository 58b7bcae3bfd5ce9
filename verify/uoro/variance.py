r"""Second moments of UORO's estimates: rank-r UORO (Tallec & Ollivier 2017, §3: r independent pairs averaged,
:math:`E\|\hat g_r - g\|^2 = \operatorname{tr}\operatorname{Cov}(\hat g_1)/r`), the growth of the relative
variance with t and n and preactivation-space UORO (Cooijmans & Martens 2019, "Theoretical framework",
"Variance reduction through iterative rescaling", "Projecting in preactivation space").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from verify.estimators.base import OnlineEstimator, run_estimator
from verify.estimators.enumerate import sign_patterns
from verify.estimators.uoro import UORO, Tabulated
from verify.oracles.algorithm1 import algorithm1_reference
from verify.oracles.bptt import per_step_gradients
from verify.stats import log_mean_with_se, squared_errors
from verify.stats.rates import RateFit, fit_rate
from verify.uoro.cases import Case, jacobians

__all__ = [
    "Growth",
    "exact_vs_measured",
    "preactivation_vs_uoro",
    "rank_slope",
    "relative_variances",
    "variance_growth",
]


def rank_slope(
    estimators: Sequence[tuple[int, OnlineEstimator]], case: Case, draws: int, gen: torch.Generator, level: float
) -> tuple[RateFit, list[dict[str, Any]]]:
    """Weighted fit of log E‖ĝ_r − g‖² (total gradient) on log r over the rank-r ``estimators`` (r, estimator).

    ``draws`` draws each from ``gen`` in turn; delta-method standard errors of the log means; CI at ``level``.
    """
    P, th = case.problem, case.theta
    g = per_step_gradients(P, th).sum(0)
    xs, ys, ses, rows = [], [], [], []
    for r, est in estimators:
        X = run_estimator(est, P, th, gen, samples=draws).sum(0)
        q = squared_errors(X, g)
        lm, se = log_mean_with_se(q)
        xs.append(math.log(r))
        ys.append(lm)
        ses.append(se)
        rows.append({"rank": r, "mse": math.exp(lm), "log_mse": lm, "se_log": se, "draws": draws})
    return fit_rate(xs, ys, errors="wls", se=ses, level=level), rows


def relative_variances(est: OnlineEstimator, case: Case, draws: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Per-draw relative squared errors ‖g̃_t − g_t‖²/‖g_t‖² for t = 1..T (one tensor of ``draws`` per t)."""
    P, th = case.problem, case.theta
    G = per_step_gradients(P, th)
    X = run_estimator(est, P, th, gen, samples=draws)
    out = []
    for t in range(P.T):
        q = squared_errors(X[t], G[t]) / float(G[t].norm() ** 2)
        out.append(q)
    return out


@dataclass(frozen=True)
class Growth:
    """The relative variance v_t per state size n, its table (with standard errors) and the growth exponents."""

    growth: dict[int, list[float]]
    table: list[dict[str, Any]]
    fit_n: RateFit
    fit_t: RateFit
    big: int


def variance_growth(
    runs: Sequence[tuple[int, Case, OnlineEstimator]], T: int, draws: int, gen: torch.Generator
) -> Growth:
    r"""Measure :math:`v_t = E\|\tilde g_t - g_t\|^2/\|g_t\|^2`, t = 1..T, for each (n, problem, estimator) of ``runs``.

    Growth exponents: log of the t-averaged v (t = 2..T) on log n, and log v_t on log t (t ≥ 2, largest n).
    """
    table: list[dict[str, Any]] = []
    growth: dict[int, list[float]] = {}
    for n, case, est in runs:
        qs = relative_variances(est, case, draws, gen)
        growth[n] = [float(q.mean()) for q in qs]
        for t, q in enumerate(qs, start=1):
            lm = float(q.mean())
            se = float(q.std()) / math.sqrt(draws)
            table.append({"n": n, "t": t, "relative_variance": lm, "se": se})
    ns = [n for n, _, _ in runs]
    avg = {n: sum(growth[n][1:]) / (T - 1) for n in ns}  # mean relative variance over t = 2..T
    ok_n = [n for n in ns if avg[n] > 0]
    fit_n = fit_rate([math.log(n) for n in ok_n], [math.log(avg[n]) for n in ok_n])
    big = ns[-1]
    tt = [t for t in range(2, T + 1) if growth[big][t - 1] > 0]
    fit_t = fit_rate([math.log(t) for t in tt], [math.log(growth[big][t - 1]) for t in tt])
    return Growth(growth, table, fit_n, fit_t, big)


def exact_vs_measured(
    est: OnlineEstimator,
    case: Case,
    gen: torch.Generator,
    draws: int = 4000,
    *,
    post: bool = False,
    meas: list[torch.Tensor] | None = None,
) -> list[dict[str, Any]]:
    """The relative variance of g̃_t measured on ``est`` (``draws`` from ``gen``) against its exact value under
    Algorithm 1 (enumeration over the 2^{nT} sign patterns of ``case``, n = 2, T = 6): z-scores for t = 2..T.
    ``post``: against Algorithm 1's post-update variant (g̃ from the updated s̃_t, θ̃_t), evaluated by the
    independent oracle :func:`~verify.oracles.algorithm1.algorithm1_reference`. ``meas``: the measurement
    (:func:`relative_variances`) where it is already made.
    """
    P, th = case.problem, case.theta
    T, n = P.T, P.n
    G = per_step_gradients(P, th)
    pats = sign_patterns((-1.0, 1.0), n * T)
    Mp = pats.shape[0]
    tab = pats.reshape(Mp, T, 1, n).transpose(0, 1).contiguous()
    if post:
        X = algorithm1_reference(jacobians(case), tab).g_post
    else:
        exact_est = UORO(noise=Tabulated(tab, (-1.0, 1.0)))  # Algorithm 1 enumerated: the reference
        X = run_estimator(exact_est, P, th, torch.Generator().manual_seed(0), samples=Mp)
    meas = relative_variances(est, case, draws, gen) if meas is None else meas
    rows = []
    for t in range(2, T + 1):
        ex = float(squared_errors(X[t - 1], G[t - 1]).mean() / G[t - 1].norm() ** 2)
        q = meas[t - 1]
        # round-off floor: for n = 2, t = 2 the squared error is the same for every pattern
        se = float(q.std()) / math.sqrt(q.numel()) + 1e-12 * abs(ex)
        z = (float(q.mean()) - ex) / se
        constant = float(q.std()) <= 1e-12 * abs(float(q.mean()))  # every draw's squared error the same
        rows.append({"t": t, "exact": ex, "measured": float(q.mean()), "z": z, "constant": constant})
    return rows


def gaussian_vs_measured(
    case: Case, meas: list[torch.Tensor], gen: torch.Generator, draws: int = 20_000, *, post: bool = False
) -> list[dict[str, Any]]:
    r"""The measured relative variance ``meas`` (:func:`relative_variances`) against Algorithm 1's under standard
    normal ν -- the Gaussian variant Tallec & Ollivier 2017 App. A keep unbiased (:math:`E[\nu\nu^\top] = I`),
    whose variance no enumeration gives (ν is continuous): a Monte Carlo reference from the independent oracle
    :func:`~verify.oracles.algorithm1.algorithm1_reference` with ``draws`` Gaussian draws from ``gen``, and a
    two-sample z-score per t = 2..T (both standard errors). ``post``: the post-update form."""
    P, th = case.problem, case.theta
    T, n = P.T, P.n
    G = per_step_gradients(P, th)
    nus = torch.randn(T, draws, 1, n, generator=gen, dtype=P.dtype)
    run = algorithm1_reference(jacobians(case), nus)
    X = run.g_post if post else run.g
    rows = []
    for t in range(2, T + 1):
        ref = squared_errors(X[t - 1], G[t - 1]) / float(G[t - 1].norm() ** 2)
        q = meas[t - 1]
        se = math.sqrt(float(q.var()) / q.numel() + float(ref.var()) / ref.numel())
        z = (float(q.mean()) - float(ref.mean())) / max(se, 1e-12 * abs(float(ref.mean())), 1e-300)
        rows.append({"t": t, "exact": float(ref.mean()), "measured": float(q.mean()), "z": z, "law": "gaussian"})
    return rows


def preactivation_vs_uoro(
    est: OnlineEstimator, case: Case, draws: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared errors ‖ĝ − g‖² of the total gradient: ``est`` (preactivation UORO), then Algorithm 1 (the toolkit's
    UORO, the reference here, not under test), ``draws`` each from ``gen`` in that order.
    """
    P, th = case.problem, case.theta
    g = per_step_gradients(P, th).sum(0)
    q_pre = squared_errors(run_estimator(est, P, th, gen, samples=draws).sum(0), g)
    q_uoro = squared_errors(run_estimator(UORO(), P, th, gen, samples=draws).sum(0), g)
    return q_pre, q_uoro
