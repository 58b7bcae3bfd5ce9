r"""The ci gate's α plan: the family-wise false-FAIL budget shared across claims by what α costs each (issue 42).

A run of ``rnn-verify run --profile ci`` FAILs a correct implementation with probability at most the sum of the
claims' stated rates (Bonferroni, :func:`theory.catalog.gate_budget`). The gate's budget is
:data:`theory.catalog.GATE_ALPHA` = 1e-3; the claims of today are planned within half of it,
:data:`STATED_BUDGET` = 5e-4, so that 20 more claims fit at :data:`HEADROOM_SHARE` = 2.5e-5 each without
squeezing the others.

Who gets what: a deterministic claim (equality within a round-off budget, an exact enumeration) needs no α. A
claim whose stated rate is a property of its fixed design, not a level it chooses
(:data:`FIXED`), keeps it; so does a negative control's miss probability (``control_beta``). The rest,
:data:`PLANNED`, is shared among the statistical claims so that the draws they need cost least: a test at level
α with power 1 − β needs a sample size :math:`\propto (z_{1-\alpha} + z_{1-\beta})^2`, so with :math:`c_i` the
seconds claim *i* costs at the reference level α₀ = 5e-5 the plan solves

.. math:: \min_{\alpha} \sum_i c_i \frac{(z_{1-\alpha_i} + z_{1-\beta})^2}{(z_{1-\alpha_0} + z_{1-\beta})^2}
   \quad\text{s.t.}\quad \sum_i \alpha_i = A,\ \alpha_i \ge \alpha_{\min}

whose KKT condition is :math:`2 c_i (z_i + z_{1-\beta}) / \varphi(z_i) = \lambda` for every claim above the
floor (:func:`allocate`; bisection on λ): an expensive claim gets a larger α (fewer draws), a cheap one the floor
:data:`ALPHA_FLOOR` (its intervals widen by at most :math:`z_{1-10^{-5}} / z_{1-5\cdot10^{-5}} \approx 1.14`).
:data:`ALPHAS` is that allocation rounded down to two significant digits (so the sum stays within the
budget); a test recomputes it from :data:`COST_S`. The costs are the claims' seconds in the ci profile (toolkit
implementation, one torch thread, a 2-core machine shared with other work, 2026-11-27), where α sets the draws
(sequential and planned tests) and where it only sets a decision level alike: a conservative proxy.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import NormalDist

from theory.catalog import GATE_ALPHA
from theory.claims.uoro_learning import ALPHA as LEARNING_ALPHA
from verify.errors import InvalidArgument

__all__ = [
    "ALPHAS",
    "ALPHA_FLOOR",
    "CONTROL_BETAS",
    "COST_S",
    "FIXED",
    "HEADROOM_CLAIMS",
    "HEADROOM_SHARE",
    "PLANNED",
    "STATED_BUDGET",
    "allocate",
    "planned_alpha",
]

#: what the ci profile's claims state together (α + control β): half the gate's budget
STATED_BUDGET = GATE_ALPHA / 2
#: claims that can still be added within :data:`theory.catalog.GATE_ALPHA`, each at :data:`HEADROOM_SHARE`
HEADROOM_CLAIMS = 20
#: the share of each of those (the rest of the budget, split evenly)
HEADROOM_SHARE = (GATE_ALPHA - STATED_BUDGET) / HEADROOM_CLAIMS
#: the least α a statistical claim is given (a cheap claim's level; 1/50 of the planned budget)
ALPHA_FLOOR = 1e-5
#: the reference level the costs were measured at (every statistical claim's α before this plan)
REFERENCE_ALPHA = 5e-5
#: the power every planned test is sized for (β of the unbiasedness tests, :mod:`verify.uoro.unbiased`)
PLAN_BETA = 1e-3

#: stated rates that are a bound of the claim's fixed design, not a level: ``uoro.influence-balancing-learning``
#: states P(>= 8 of 15 runs above the converged loss) <= 6.1e-5 at the Clopper-Pearson end of its calibration, 1e-4
#: with margin (:data:`theory.claims.uoro_learning.ALPHA`)
#: ``truncation.figure-1a``: its rate criterion's level is also the level at which its negative control (the
#: block-restart truncation) must be told apart; at the floor 1e-5 the control passed at seed 6 of 0-20 (not caught,
#: a FAIL of correct code), so it keeps the level it was calibrated at, 5e-5
FIXED: dict[str, float] = {"uoro.influence-balancing-learning": LEARNING_ALPHA, "truncation.figure-1a": 5e-5}
#: the negative controls' miss probabilities stated in the catalog (``Claim.control_beta``)
CONTROL_BETAS: dict[str, float] = {"uoro.variance-matches-algorithm-1": 2e-5}
#: what is left for the planned claims
PLANNED = STATED_BUDGET - sum(FIXED.values()) - sum(CONTROL_BETAS.values())

#: seconds each planned claim costs in the ci profile at :data:`REFERENCE_ALPHA` (see the module docstring)
COST_S: dict[str, float] = {
    "uoro.unbiased-statistical": 12.7, "uoro.mutants-caught": 6.2, "uoro.truncated-unbiased": 3.0,
    "uoro.ok-variance": 2.75, "uoro.preactivation": 2.3, "uoro.rank-unbiased": 2.26, "uoro.kfrtrl-unbiased": 2.2,
    "rtrl.bias-alignment": 1.64, "uoro.kfrtrl-variance": 0.83,
    "uoro.variance-reduction-optimal": 0.56, "uoro.reinforce-link": 0.31, "uoro.variance-growth": 0.19,
    "uoro.variance-matches-algorithm-1": 0.18, "uoro.algorithm-1-conformance": 0.1, "uoro.rank-variance": 0.06,
    "truncation.rate": 0.03,
}  # fmt: skip

#: the plan: ``allocate(COST_S, PLANNED)`` rounded down to two significant digits (a test recomputes it)
ALPHAS: dict[str, float] = {
    "uoro.unbiased-statistical": 9.7e-5, "uoro.mutants-caught": 4.6e-5, "uoro.truncated-unbiased": 2.2e-5,
    "uoro.ok-variance": 2e-5, "uoro.preactivation": 1.7e-5, "uoro.rank-unbiased": 1.6e-5,
    "uoro.kfrtrl-unbiased": 1.6e-5, "rtrl.bias-alignment": 1.2e-5, "uoro.kfrtrl-variance": 1e-5,
    "uoro.variance-reduction-optimal": 1e-5, "uoro.reinforce-link": 1e-5, "uoro.variance-growth": 1e-5,
    "uoro.variance-matches-algorithm-1": 1e-5, "uoro.algorithm-1-conformance": 1e-5, "uoro.rank-variance": 1e-5,
    "truncation.rate": 1e-5,
}  # fmt: skip

_N = NormalDist()


def _marginal(cost: float, alpha: float, z_beta: float) -> float:
    """:math:`2 c (z_{1-\\alpha} + z_{1-\\beta}) / \\varphi(z_{1-\\alpha})`: the draws' cost saved per unit of α."""
    z = _N.inv_cdf(1.0 - alpha)
    return 2.0 * cost * (z + z_beta) / _N.pdf(z)


def _alpha_at(cost: float, lam: float, z_beta: float, floor: float, cap: float) -> float:
    """The α at which claim of ``cost`` has marginal saving ``lam`` (clipped to [floor, cap]; bisection in log)."""
    if _marginal(cost, floor, z_beta) <= lam:
        return floor
    lo, hi = floor, cap
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        if _marginal(cost, mid, z_beta) > lam:
            lo = mid
        else:
            hi = mid
    return hi


def allocate(
    costs: Mapping[str, float], total: float, *, beta: float = PLAN_BETA, floor: float = ALPHA_FLOOR
) -> dict[str, float]:
    """Share ``total`` among the claims of ``costs`` (seconds at the reference level) minimizing the draws' cost
    (see the module docstring): each α at least ``floor``, the sum ``total`` (to 1e-9 relative)."""
    if not costs:
        raise InvalidArgument("costs", dict(costs), "at least one claim to share the budget among")
    bad = {k: c for k, c in costs.items() if not c > 0.0}
    if bad:
        raise InvalidArgument("costs", bad, "every cost must be > 0 seconds")
    if not 0.0 < beta < 0.5:
        raise InvalidArgument("beta", beta, "must be in (0, 0.5)")
    if not 0.0 < floor * len(costs) <= total < 0.5:
        raise InvalidArgument("total", total, f"must be in [{len(costs)} x floor {floor:g}, 0.5)")
    z_beta = _N.inv_cdf(1.0 - beta)
    cap = total
    lo, hi = 1e-12, 1e15  # lambda: larger -> smaller alphas
    for _ in range(200):
        lam = (lo * hi) ** 0.5
        if sum(_alpha_at(c, lam, z_beta, floor, cap) for c in costs.values()) > total:
            lo = lam
        else:
            hi = lam
        if hi / lo < 1.0 + 1e-12:
            break
    return {k: _alpha_at(c, hi, z_beta, floor, cap) for k, c in costs.items()}


def planned_alpha(claim_id: str) -> float:
    """The false-FAIL rate the plan gives ``claim_id`` (:data:`ALPHAS`, or :data:`FIXED`)."""
    if claim_id in ALPHAS:
        return ALPHAS[claim_id]
    if claim_id in FIXED:
        return FIXED[claim_id]
    raise InvalidArgument("claim_id", claim_id, f"has no planned alpha; planned: {sorted(ALPHAS) + sorted(FIXED)}")
