"""The conformance diagnosis says why s~, theta~ differ from Algorithm 1's (issue 37 item 6).

Tallec & Ollivier 2017, Algorithm 1, eq. (5)-(6): an estimator with Algorithm 1's update and other (consistent)
normalizers is told "the order is right; the normalizers differ"; one whose normalizers do not cancel in
s~ theta~^T is told so, naming the factor; the inverted rho0 is named as the reciprocal.
"""

from __future__ import annotations

import torch

from verify.estimators.uoro import UORO, NormalizerInputs, pair_norm
from verify.uoro.cases import problem_case
from verify.uoro.conformance import formula_conformance


def _rho0(z: NormalizerInputs) -> torch.Tensor:
    return torch.sqrt((pair_norm(z.theta_tilde) + 1e-3) / (pair_norm(z.s_forward) + 1e-3))


def _rho1(z: NormalizerInputs) -> torch.Tensor:
    return torch.sqrt((pair_norm(z.delta_theta_g) + 1e-3) / (pair_norm(z.nu) + 1e-3))


def _diagnosis(est: UORO) -> str | None:
    case = problem_case("elman-tanh", n=3, T=5, seed=1, salt=0)
    out = formula_conformance(est, case, torch.Generator().manual_seed(0), samples=3)
    return out["normalizers"]


def test_algorithm_1_itself_has_no_diagnosis() -> None:
    assert _diagnosis(UORO()) is None


def test_eps_in_the_normalizers_is_the_order_right_the_normalizers_differ() -> None:
    said = _diagnosis(UORO(rho0=_rho0, rho1=_rho1))
    assert said is not None and "order of Algorithm 1's update is right; the normalizers differ" in said
    assert "first at t = 1" in said and "rho1 = " in said and "keeps its expectation" in said


def test_a_normalizer_on_one_factor_only_is_named_as_not_cancelling() -> None:
    said = _diagnosis(UORO(rho1_on="state"))
    assert said is not None and "do not cancel" in said and "rho1: s~ x" in said and "theta~ / 1 " in said


def test_an_inverted_rho0_is_named_as_the_reciprocal() -> None:
    from verify.impl.mutants import get

    said = _diagnosis(get("uoro.rho0-inverted").part())
    assert said is not None and "its reciprocal" in said and "rho0 = " in said


def test_an_update_out_of_algorithm_1s_span_is_named() -> None:
    from verify.uoro.conformance import update_structure

    g = torch.Generator().manual_seed(3)
    nu, J_s, J_th = torch.randn(2, 1, 3, generator=g), torch.randn(3, 3, generator=g), torch.randn(3, 5, generator=g)
    s_now, th_now = torch.randn(2, 1, 3, generator=g), torch.randn(2, 1, 5, generator=g)  # not of eq. (5)-(6)'s form
    said = update_structure(None, (s_now, th_now), nu, J_s, J_th, 1)
    assert "not of Algorithm 1's form" in said and "relative residual" in said
