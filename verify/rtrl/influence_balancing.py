r"""What ``rtrl.influence-balancing`` computes: UORO §4's example, RTRL at equilibrium and TBPTT(k)'s view of it.

Tallec & Ollivier (arXiv:1702.05043) §4, eq. (8)-(9): on the influence-balancing problem
(:func:`verify.model.builders.influence_balancing_problem`) RTRL's recursion (eq. (4)) run to
equilibrium gives :math:`\partial s^1/\partial\theta = e_1^\top (I - A)^{-1} c = 4p - 2n`, while
the online truncated-BPTT estimator with window k sees :math:`\hat D_k = \sum_{j<k} (A^j c)_1`.
Both exact values come from :mod:`theory.influence_balancing` (sympy); this module measures
the estimators' values and the round-off budget they are compared with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from theory.influence_balancing import equilibrium_derivative, truncated_derivative
from verify.errors import AssumptionViolated
from verify.estimators.base import OnlineEstimator
from verify.estimators.tbptt import TBPTT
from verify.model.builders import influence_balancing_problem
from verify.model.problem import Problem
from verify.oracles.budget import roundoff_budget, unit_roundoff

__all__ = [
    "MAIN",
    "BalancingSetup",
    "Equilibrium",
    "balancing_setup",
    "describe",
    "equilibrium_rtrl",
    "first_exact_right_sign",
    "first_right_signs",
    "rtrl_equilibria",
    "sign",
    "sweep_failures",
    "sweep_ks",
    "sweep_point",
    "tbptt_equilibrium_derivative",
    "truncated_budget",
    "truncation_sweep",
]

#: the (n, p) of the truncation sweep and of the controls (13 minus signs: TBPTT(5) gets the sign wrong)
MAIN = (23, 10)
#: the relative change of ∂s¹/∂θ over the last step below which RTRL counts as at equilibrium
EQUILIBRIUM_CHANGE = 1e-13


@dataclass(frozen=True)
class BalancingSetup:
    """The (n, p) pairs RTRL runs on, θ, and the truncations k of the TBPTT sweep (on :data:`MAIN`)."""

    pairs: Sequence[tuple[int, int]]
    grid: Sequence[int]
    theta: float = 0.5
    limit: int = 150


def balancing_setup(full: bool) -> BalancingSetup:
    """Four (n, p) and every k ≤ 150 under ``full``; two (n, p) and nine k otherwise."""
    limit = 150
    if full:
        return BalancingSetup(((23, 10), (5, 2), (10, 3), (40, 17)), range(1, limit + 1), limit=limit)
    return BalancingSetup(((23, 10), (5, 2)), (1, 2, 5, 10, 20, 30, 50, 60, 80), limit=limit)


class Equilibrium(NamedTuple):
    """RTRL run to equilibrium: ∂s¹/∂θ, its relative change over the last step, the final state, problem, θ."""

    derivative: float
    change: float
    state: torch.Tensor
    problem: Problem
    theta: torch.Tensor


def equilibrium_rtrl(rtrl: Callable[[], OnlineEstimator], n: int, p: int, theta: float) -> Equilibrium:
    r"""RTRL run to equilibrium: (∂s¹/∂θ, relative change over the last step, final state, problem, θ).

    ``rtrl()`` builds the estimator (the implementation under test, or a mutant's for a control).

    ∂s¹/∂θ is read from the estimator's ``influence_estimate`` where it has one, else from its
    gradient: :math:`\partial\ell_t/\partial\theta = (s^1_t - 1)\,\partial s^1_t/\partial\theta` (eq. (9)).
    """
    T = 10 * n + 50
    P, th = influence_balancing_problem(n=n, p=p, T=T, theta=theta)
    est = rtrl()
    influence = getattr(est, "influence_estimate", None)
    with torch.no_grad():
        states = P.rollout(th)
    rng = torch.Generator().manual_seed(0)
    state = est.init(P, th, rng)
    prev = val = 0.0
    for t in range(1, T + 1):
        state, g = est.step(P, th, state, t, rng)
        prev = val
        if influence is not None:
            val = float(influence(P, state)[0, 0, 0])
        else:
            val = float(g[0, 0]) / (float(states[t, 0]) - 1.0)  # eq. (9): dl/ds^1 = s^1 - 1
    change = abs(val - prev) / max(abs(val), 1e-300)
    return Equilibrium(val, change, states[-1], P, th)


def rtrl_equilibria(
    rtrl: Callable[[], OnlineEstimator], setup: BalancingSetup
) -> tuple[list[dict[str, Any]], dict[tuple[int, int], Equilibrium]]:
    """RTRL at equilibrium on every (n, p) of ``setup``: rows (closed form 4p − 2n, RTRL's value, |error|) and runs.

    Raises :class:`~verify.errors.AssumptionViolated` when a run has not reached equilibrium
    (relative change of ∂s¹/∂θ over the last step above :data:`EQUILIBRIUM_CHANGE`).
    """
    rows, runs = [], {}
    for n, p in setup.pairs:
        exact = float(equilibrium_derivative(n, p))
        eq = equilibrium_rtrl(rtrl, n, p, setup.theta)
        if eq.change > EQUILIBRIUM_CHANGE:
            raise AssumptionViolated("equilibrium reached (relative change of ∂s¹/∂θ <= 1e-13)", eq.change, f"n={n}")
        rows.append(
            {"n": n, "p": p, "closed_form": exact, "rtrl": eq.derivative, "abs_error": abs(eq.derivative - exact)}
        )
        runs[(n, p)] = eq
    return rows, runs


def tbptt_equilibrium_derivative(
    P: Problem,
    theta: torch.Tensor,
    s_eq: torch.Tensor,
    k: int,
    tbptt: Callable[[int], OnlineEstimator] = TBPTT,
) -> float:
    r"""The online TBPTT(k) estimator's implied :math:`\partial s^1/\partial\theta` at equilibrium (UORO §4).

    Along the stationary trajectory :math:`s_t = s^*` the estimator's state is the
    window :math:`(s^*, \dots, s^*)` of its last k states -- exactly what ``init``
    holds on a problem started at :math:`s^*` -- so one ``step`` at t = k + 1 (window
    start t − k = 1 > 0: the truncated branch, :math:`s_1 = s^*` held fixed) gives
    the steady-state estimate of :math:`\partial\ell/\partial\theta`. Dividing by
    :math:`\partial\ell/\partial s^1 = s^1 - 1` (eq. (9), at the step's state)
    leaves

    .. math:: \hat D_k = \sum_{j<k} (A^j c)_1 ,

    which :func:`theory.influence_balancing.truncated_derivative` derives exactly.
    ``tbptt(k)`` builds the estimator (the toolkit's by default; a mutant's for the negative control).
    """
    Pk = P.slice(0, k + 1, s0=s_eq)
    est = tbptt(k)
    rng = torch.Generator().manual_seed(0)
    state = est.init(Pk, theta, rng)
    state, g = est.step(Pk, theta, state, k + 1, rng)
    with torch.no_grad():
        s_t = Pk.rollout(theta)[k + 1]  # the forward state of step k + 1 (= s* to round-off)
    dl_ds1 = float(s_t[0]) - 1.0  # eq. (9): l = ½(s¹ − 1)², at the fixed point s_t = s*
    return float(g[0, 0]) / dl_ds1


def truncated_budget(P: Problem, k: int) -> float:
    r"""Absolute round-off budget for :math:`\hat D_k` vs the exact :math:`\sum_{j<k}(A^j c)_1`.

    The estimate is a sum of k backpropagated terms :math:`(A^j c)_1`, each at most 1
    in magnitude (A ≥ 0 with row sums ≤ 1, :math:`|c_i| = 1`), each produced by at most
    k adjoint steps of depth m = n + d + 1 (:mod:`verify.oracles.budget`): so
    :math:`|\hat D_k - D_k| \le C\,u\,m\,k \cdot k` (the relative budget of
    :func:`verify.oracles.budget.roundoff_budget` times the terms' magnitude sum ≤ k).
    """
    depth = P.n + P.cell.input_size + P.readout.output_size
    return roundoff_budget(unit_roundoff(P.dtype), depth, k, 1.0) * k


def first_exact_right_sign(n: int, p: int, limit: int) -> int | None:
    r"""Smallest k ≤ ``limit`` whose truncated sum has the sign of the equilibrium derivative (exact, sympy).

    .. math:: \operatorname{sign} \sum_{j<k} (A^j c)_1 = \operatorname{sign}(4p - 2n)

    None when 4p − 2n = 0 (no sign) or no k ≤ ``limit`` has it.
    """
    target = equilibrium_derivative(n, p)
    if target == 0:
        return None
    for k in range(1, limit + 1):
        if truncated_derivative(n, p, k) * target > 0:
            return k
    return None


def sign(x: float) -> int:
    return (x > 0) - (x < 0)


def sweep_ks(setup: BalancingSetup) -> list[int]:
    """The sweep's k: the grid plus the derived first k with the right sign on :data:`MAIN` and the k before it."""
    k_star = first_exact_right_sign(*MAIN, setup.limit)  # derived, exact
    extra = () if k_star is None else (k_star - 1, k_star)
    return sorted({k for k in (*setup.grid, *extra) if k >= 1})


def sweep_point(tbptt: Callable[[int], OnlineEstimator], eq: Equilibrium, k: int) -> dict[str, Any]:
    r"""Online ``tbptt(k)`` at the equilibrium ``eq`` of :data:`MAIN`: measured and derived values, budget, signs.

    The derived value is :math:`\sum_{j<k}(A^j c)_1` (:func:`theory.influence_balancing.truncated_derivative`).
    """
    derived = truncated_derivative(*MAIN, k)  # exact Rational
    measured = tbptt_equilibrium_derivative(eq.problem, eq.theta, eq.state, k, tbptt)
    budget = truncated_budget(eq.problem, k)
    err = abs(measured - float(derived))
    return {
        "k": k,
        "tbptt_derivative": measured,
        "derived": float(derived),
        "abs_error": err,
        "budget": budget,
        "sign_resolvable": abs(float(derived)) > budget,
        "sign_agrees": sign(measured) == sign(float(derived)),
        "passed": err <= budget,
    }


def truncation_sweep(
    tbptt: Callable[[int], OnlineEstimator], eq: Equilibrium, ks: Sequence[int]
) -> list[dict[str, Any]]:
    """:func:`sweep_point` for every k of ``ks``."""
    return [sweep_point(tbptt, eq, k) for k in ks]


def first_right_signs(sweep: Sequence[dict[str, Any]], target_sign: int) -> tuple[int | None, int | None]:
    """The first k of the sweep whose sign is ``target_sign``, measured and derived, among the resolvable k."""
    resolvable = [r for r in sweep if r["sign_resolvable"]]
    first_right = next((r["k"] for r in resolvable if sign(float(r["tbptt_derivative"])) == target_sign), None)
    first_right_derived = next((r["k"] for r in resolvable if sign(float(r["derived"])) == target_sign), None)
    return first_right, first_right_derived


def describe(
    rows: Sequence[dict[str, Any]],
    sweep: Sequence[dict[str, Any]],
    ks: Sequence[int],
    exact: float,
    first: tuple[int | None, int | None],
) -> str:
    """The measurements in words: RTRL's value on :data:`MAIN`, the sweep's worst error, the first right sign."""
    first_right, first_right_derived = first
    worst_sweep = max(sweep, key=lambda r: float(r["abs_error"]) / float(r["budget"]))
    return (
        f"n=23, p=10: RTRL {rows[0]['rtrl']:+.12g}, exact {int(exact):+d}; online TBPTT(k) vs derived "
        f"Σ_(j<k) (A^j c)_1 on {len(sweep)} k in [{ks[0]}, {ks[-1]}]: worst |error| {worst_sweep['abs_error']:.2e} "
        f"(k={worst_sweep['k']}, budget {worst_sweep['budget']:.2e}); sign wrong for k < "
        f"{first_right if first_right is not None else '>' + str(max(ks))} "
        f"(derived first right sign: k={first_right_derived}; the paper's negative result)"
    )


def sweep_failures(sweep: list[dict[str, Any]], first: tuple[int | None, int | None]) -> list[str]:
    """k over budget, k of the wrong sign (where resolvable), a first k with the right sign other than derived."""
    failures = [
        f"k={r['k']}: |error| {r['abs_error']:.2e} > budget {r['budget']:.2e}" for r in sweep if not r["passed"]
    ]
    failures += [
        f"k={r['k']}: wrong sign vs the derived value" for r in sweep if r["sign_resolvable"] and not r["sign_agrees"]
    ]
    if first[0] != first[1]:
        failures.append(f"first k with the right sign: measured {first[0]}, derived {first[1]}")
    return failures
