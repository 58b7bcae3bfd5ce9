"""The ci gate's α plan (:mod:`theory.gate`, issue 42): the committed plan is the allocation of the costs, the
catalog states it, and the allocation does what its docstring says."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from theory.catalog import GATE_ALPHA, all_claims, gate_budget
from theory.gate import (
    ALPHA_FLOOR,
    ALPHAS,
    CONTROL_BETAS,
    COST_S,
    FIXED,
    HEADROOM_CLAIMS,
    HEADROOM_SHARE,
    PLAN_BETA,
    PLANNED,
    REFERENCE_ALPHA,
    STATED_BUDGET,
    allocate,
    planned_alpha,
)
from verify.errors import InvalidArgument

_N = NormalDist()


def _down2(x: float) -> float:
    """``x`` rounded down to two significant digits."""
    e = math.floor(math.log10(x)) - 1
    return float(f"{math.floor(x / 10**e + 1e-9) * 10**e:.2g}")


def _cost(costs: dict[str, float], alphas: dict[str, float]) -> float:
    """The draws' cost of a plan: sum of c_i (z_(1-a_i) + z_(1-beta))^2 / (z_(1-a0) + z_(1-beta))^2."""
    zb, z0 = _N.inv_cdf(1 - PLAN_BETA), _N.inv_cdf(1 - REFERENCE_ALPHA)
    return sum(c * ((_N.inv_cdf(1 - alphas[k]) + zb) / (z0 + zb)) ** 2 for k, c in costs.items())


def test_the_committed_plan_is_the_allocation_of_the_costs_rounded_down() -> None:
    assert ALPHAS == {k: _down2(a) for k, a in allocate(COST_S, PLANNED).items()}


def test_the_ci_profile_states_at_most_half_the_budget_leaving_room_for_20_more_claims() -> None:
    total, rows = gate_budget("ci")
    assert total <= STATED_BUDGET == GATE_ALPHA / 2, rows
    assert HEADROOM_CLAIMS == 20 and total + HEADROOM_CLAIMS * HEADROOM_SHARE <= GATE_ALPHA
    assert HEADROOM_SHARE >= 2 * ALPHA_FLOOR  # a new claim fits at more than the least share of today's


def test_every_claim_with_a_stated_rate_states_its_planned_share() -> None:
    """The catalog and the plan name the same claims; each states what the plan gives it (the checks read it
    through :func:`planned_alpha`), and the controls' miss probabilities are the catalog's."""
    claims = all_claims()
    with_alpha = {cid for cid, alpha, _ in gate_budget("ci")[1] if alpha}
    assert with_alpha == set(ALPHAS) | set(FIXED)
    for cid in with_alpha:
        assert claims[cid].alpha == planned_alpha(cid), cid
    assert {c.id: c.control_beta for c in claims.values() if c.control_beta} == CONTROL_BETAS
    assert PLANNED == pytest.approx(STATED_BUDGET - sum(FIXED.values()) - sum(CONTROL_BETAS.values()))


def test_allocate_spends_the_total_gives_more_to_costlier_claims_and_respects_the_floor() -> None:
    costs = {"a": 10.0, "b": 3.0, "c": 1.0, "d": 0.01}
    out = allocate(costs, 2e-4, floor=1e-5)
    assert sum(out.values()) == pytest.approx(2e-4, rel=1e-6)
    assert out["a"] > out["b"] > out["c"] >= out["d"] == pytest.approx(1e-5)
    even = allocate({"x": 2.0, "y": 2.0}, 1e-4, floor=1e-6)
    assert even["x"] == pytest.approx(even["y"]) == pytest.approx(5e-5, rel=1e-6)


def test_the_plan_costs_less_than_an_even_split_of_the_same_total() -> None:
    """The point of the plan: the same family-wise rate for fewer draws than the same share for every claim."""
    even = {k: PLANNED / len(COST_S) for k in COST_S}
    assert _cost(COST_S, allocate(COST_S, PLANNED)) < _cost(COST_S, even)
    # and halving today's budget costs about what the old even 5e-5 per claim did (within 5 %)
    old = {k: REFERENCE_ALPHA for k in COST_S}
    assert _cost(COST_S, ALPHAS) < 1.05 * _cost(COST_S, old)


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"costs": {}, "total": 1e-4}, "costs"),
        ({"costs": {"a": 0.0}, "total": 1e-4}, "costs"),
        ({"costs": {"a": 1.0, "b": 1.0}, "total": 1e-5}, "total"),
        ({"costs": {"a": 1.0}, "total": 1e-4, "beta": 0.7}, "beta"),
    ],
)
def test_allocate_names_a_bad_argument(kw: dict[str, object], name: str) -> None:
    with pytest.raises(InvalidArgument, match=name):
        allocate(**kw)  # type: ignore[arg-type]


def test_planned_alpha_of_an_unplanned_claim_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgument, match=r"reference\.adjoint"):
        planned_alpha("reference.adjoint")
