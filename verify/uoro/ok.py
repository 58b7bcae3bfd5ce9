r"""The computations behind the OK claims (Benzing et al. 2019, arXiv:1902.03993; reading in
:mod:`verify.estimators.ok`).

The checks (:mod:`verify.checks.uoro_ok`) only decide; what they decide on is computed here:

* :func:`exact_mean_rows` -- an OK's exact expectation (its ``exact_mean`` hook: one uniform per step with
  finitely many outcomes) against exact float64 RTRL, one row per fixture problem and rank;
* :func:`step_variance_rows` -- along one trajectory, the exact variance of each reduction step (every outcome of
  the step's uniform, from the estimator's own ``breakpoints``) against eq. (2)'s minimum
  (:func:`verify.estimators.ok.optimal_variance`) and, for rank 1, against KF-RTRL's reduction of the same two
  terms (:func:`kf_step_variance`, its 4 sign patterns);
* :func:`pooled_ratio` -- the inverse-variance pooled log ratio of several :func:`verify.uoro.kfrtrl.variance_ratios`
  rows, with its CI (the trajectory comparison over n).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import torch

from verify.estimators.ok import optimal_variance
from verify.oracles.bptt import per_step_gradients
from verify.stats import dist
from verify.uoro.cases import Case

__all__ = ["HOOKS", "as_matrix", "exact_mean_rows", "kf_step_variance", "pooled_ratio", "step_variance_rows"]

#: what :func:`step_variance_rows` needs of an OK (the toolkit's :class:`~verify.estimators.ok.OK` has them)
HOOKS = ("terms", "reduce", "breakpoints", "init", "step", "rank")


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(a - b)) / float(torch.linalg.vector_norm(b))


def as_matrix(us: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    r""":math:`C = \sum_i\operatorname{vec}(B_i)u_i^\top` of N sums: ``us`` (N, k, a), ``Bs`` (N, k, b, c) ->
    (N, b·c, a)."""
    return torch.einsum("nkb,nka->nba", Bs.flatten(-2), us)


def exact_mean_rows(ests: Sequence[tuple[int, Any]], cases: Sequence[Case]) -> list[dict[str, Any]]:
    """Per (rank, estimator) and case: ``est.exact_mean(P, θ)`` (T, p) against exact float64 BPTT, relative error."""
    rows = []
    for rank, est in ests:
        for case in cases:
            P, th = case.problem, case.theta
            mean = torch.as_tensor(est.exact_mean(P, th), dtype=th.dtype)
            rows.append({"problem": case.label, "rank": rank, "gradient_error": _rel(mean, per_step_gradients(P, th))})
    return rows


def kf_step_variance(us: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    r"""KF-RTRL's step variance :math:`E\|C' - C\|_F^2` reducing N sums of two terms to one (Mujika et al. 2018,
    the Kronecker-sum lemma of §4): :math:`C' = (c_1\rho_1u_1 + c_2\rho_2u_2)\otimes(c_1B_1/\rho_1 + c_2B_2/\rho_2)`
    over the 4 sign patterns, with the lemma's variance-minimizing :math:`\rho_i = \sqrt{\|B_i\|/\|u_i\|}`
    (UORO's ε = 0; a zero term contributes nothing). (N,)."""
    if us.shape[-2] != 2:
        raise ValueError(f"kf_step_variance needs two terms, got {us.shape[-2]}")
    C = as_matrix(us, Bs)
    nu = torch.linalg.vector_norm(us, dim=-1)
    nB = torch.linalg.vector_norm(Bs.flatten(-2), dim=-1)
    live = (nu > 0) & (nB > 0)
    rho = torch.where(live, torch.sqrt(nB / torch.where(live, nu, 1.0)), 1.0)  # (N, 2)
    var = torch.zeros(us.shape[0], dtype=us.dtype, device=us.device)
    for c1 in (-1.0, 1.0):
        for c2 in (-1.0, 1.0):
            c = torch.tensor([c1, c2], dtype=us.dtype, device=us.device)
            u = torch.einsum("nk,nka->na", c * rho, us)
            B = torch.einsum("nk,nkb->nb", c / rho, Bs.flatten(-2))
            var += 0.25 * ((torch.einsum("nb,na->nba", B, u) - C) ** 2).sum((-1, -2))
    return var


def _step_moments(est: Any, us: torch.Tensor, Bs: torch.Tensor) -> tuple[float, float]:
    """(E‖C' − C‖², ‖E C' − C‖/‖C‖) of one reduction of one sum, over every outcome of the step's uniform."""
    C = as_matrix(us, Bs)
    bp = torch.as_tensor(est.breakpoints(us, Bs)).flatten().to(us.dtype)
    cuts = torch.unique(torch.cat([bp, torch.tensor([0.0, 1.0], dtype=us.dtype)]).clamp(0.0, 1.0)).tolist()
    var, mean = 0.0, torch.zeros_like(C)
    for lo, hi in itertools.pairwise(cuts):
        if hi - lo <= 1e-14:  # a round-off sliver of the breakpoints (as verify.estimators.ok.exact_expectation)
            continue
        u, B = est.reduce(us, Bs, torch.tensor([0.5 * (lo + hi)], dtype=us.dtype))
        Cp = as_matrix(u, B)
        var += (hi - lo) * float(((Cp - C) ** 2).sum())
        mean += (hi - lo) * Cp
    return var, _rel(mean, C) if float(torch.linalg.vector_norm(C)) > 0 else 0.0


def step_variance_rows(est: Any, case: Case, gen: torch.Generator) -> dict[str, Any]:
    """Along one trajectory of ``est`` (its own draws from ``gen``) on the unbatched ``case``: at every step the
    exact variance of the reduction of the r + 1 terms, eq. (2)'s minimum and (rank 1) KF-RTRL's on the same terms.

    Row keys: ``excess`` (largest (var − min)/‖C‖², the reduction's distance from the theorem's minimum),
    ``step_bias`` (largest ‖E C' − C‖/‖C‖), ``ok_over_kf`` (largest var/var_KF, rank 1 only, steps with
    var_KF > 0), ``mean_ok_over_kf`` and ``steps``.
    """
    P, th = case.problem, case.theta
    state = est.init(P, th, gen)
    excess, bias, over, ratios = 0.0, 0.0, 0.0, []
    for t in range(1, P.T + 1):
        tm = est.terms(P, th, state, t)
        k, a = tm.us.shape[-2:]
        n = tm.Bs.shape[-1]
        us, Bs = tm.us.reshape(-1, k, a)[:1], tm.Bs.reshape(-1, k, n, n)[:1]
        var, b = _step_moments(est, us, Bs)
        scale = float((as_matrix(us, Bs) ** 2).sum()) or 1.0
        best = float(optimal_variance(us, Bs, est.rank)[0])
        excess, bias = max(excess, (var - best) / scale), max(bias, b)
        if k == 2:
            kf = float(kf_step_variance(us, Bs)[0])
            if kf > 1e-12 * scale:
                ratios.append(var / kf)
        state, _ = est.step(P, th, state, t, gen)
    if ratios:
        over = max(ratios)
    return {
        "problem": case.label,
        "rank": int(est.rank),
        "steps": P.T,
        "excess": excess,
        "step_bias": bias,
        "ok_over_kf": over if ratios else None,
        "mean_ok_over_kf": sum(ratios) / len(ratios) if ratios else None,
    }


def pooled_ratio(rows: Sequence[dict[str, Any]], level: float) -> tuple[float, tuple[float, float]]:
    """The inverse-variance weighted mean of the rows' log ratios (weights 1/log_se²), exponentiated, and its
    ``level`` normal CI: the typical ratio over the n's (the rows are independent)."""
    w = [1.0 / r["log_se"] ** 2 for r in rows]
    lr = sum(wi * math.log(r["ratio"]) for wi, r in zip(w, rows, strict=True)) / sum(w)
    se = math.sqrt(1.0 / sum(w))
    q = float(dist.norm_ppf(0.5 + level / 2))
    return math.exp(lr), (math.exp(lr - q * se), math.exp(lr + q * se))
