"""Thm 2 machinery: RNN objective eq. (10), Lemma 1's multipliers, the Lagrangian (16), Newton, the path."""

from __future__ import annotations

import pytest
import torch
from torch.func import grad, jacrev

from verify.errors import InvalidArgument
from verify.fpp.experiments import KKTSetup, kkt_instance, solve_path
from verify.fpp.kkt import (
    constraint_jacobian,
    constraint_residuals,
    full_loss_adjoints,
    kkt_path,
    lagrangian,
    lemma1_multipliers,
    multiplier_estimates,
    newton_minimize,
    rnn_gradient,
    rnn_objective,
)
from verify.fpp.objective import FPPVariables
from verify.oracles.bptt import bptt_gradient
from verify.testing.strategies import CELL_KINDS, random_problem


def _explicit_lemma1(P, theta, states):
    """Lemma 1's sum-of-products formula with explicit Jacobians (independent of the recursion)."""
    n = P.T
    k = states.shape[-1]
    J = [
        jacrev(lambda s, j=j: P.transition(theta, s, P.inputs[j]))(states[j]) for j in range(n)
    ]  # df(s_j,o_{j+1})/ds_j
    dl = [
        grad(lambda s, j=j: P.loss(P.output(theta, s), P.targets[j]))(P.transition(theta, states[j], P.inputs[j]))
        for j in range(n)
    ]  # dl_{j+1}/df at f(s_j, o_{j+1})
    out = torch.zeros(n + 1, k, dtype=torch.float64)
    for j in range(n + 1):
        total = torch.zeros(k, dtype=torch.float64)
        for i in range(j, n):
            prod = torch.eye(k, dtype=torch.float64)
            for l in range(i, j - 1, -1):
                prod = prod @ J[l]
            total = total + dl[i] @ prod
        out[j] = -total
    return out


@pytest.mark.parametrize("kind", CELL_KINDS)
def test_lemma1_recursion_equals_sum_of_products(kind) -> None:
    P, th = random_problem(kind, T=6, generator=torch.Generator().manual_seed(2))
    S = P.rollout(th)
    lam = lemma1_multipliers(P, th, S)
    assert torch.allclose(lam, _explicit_lemma1(P, th, S), rtol=1e-12, atol=1e-14)
    assert torch.equal(lam[-1], torch.zeros_like(lam[-1]))  # lambda_n = 0


@pytest.mark.parametrize("kind", CELL_KINDS)
def test_lemma1_is_minus_the_later_loss_adjoint(kind) -> None:
    """λ_j = −∂(ℓ_{j+1} + … + ℓ_n)/∂s_j along the rollout; the full-loss adjoint adds ∂ℓ_j/∂s_j."""
    P, th = random_problem(kind, T=5, generator=torch.Generator().manual_seed(7))
    S = P.rollout(th)
    for j in (1, 3):
        sub = P.slice(j, P.T, s0=S[j])
        g_later = grad(lambda s, sub=sub: sub.losses(th, s).sum())(S[j])
        assert torch.allclose(lemma1_multipliers(P, th, S)[j], -g_later, rtol=1e-12, atol=1e-14)
        own = grad(lambda s, j=j: P.loss(P.output(th, s), P.targets[j - 1]))(S[j])
        assert torch.allclose(full_loss_adjoints(P, th, S)[j], -g_later - own, rtol=1e-12, atol=1e-14)


def test_rnn_gradient_is_bptt_plus_s0() -> None:
    P, th = random_problem("gru", T=7, generator=torch.Generator().manual_seed(1))
    g = rnn_gradient(P, th, P.s0)
    assert torch.allclose(g[: P.p], bptt_gradient(P, th), rtol=1e-12, atol=0)
    g_s0 = grad(lambda s: rnn_objective(P, th, s))(P.s0)
    assert torch.equal(g[P.p :], g_s0)


def test_prop3_constraint_jacobian_has_full_row_rank() -> None:
    """Prop. 3: the −I blocks make ∇h full row rank everywhere (also off the feasible set)."""
    P, th = random_problem("lstm", T=5, generator=torch.Generator().manual_seed(3))
    S = P.rollout(th) + 0.5
    J = constraint_jacobian(P, FPPVariables(th, S))
    assert J.shape == (P.T * P.n, P.p + (P.T + 1) * P.n)
    assert float(torch.linalg.svdvals(J)[-1]) > 1e-3
    assert torch.allclose(
        constraint_residuals(P, FPPVariables(th, P.rollout(th))), torch.zeros(P.T, P.n), rtol=0, atol=1e-15
    )


def test_lagrangian_state_equations_vanish_with_lemma1_multipliers() -> None:
    P, th = random_problem("elman-tanh", T=6, generator=torch.Generator().manual_seed(4))
    S = P.rollout(th)
    lam = lemma1_multipliers(P, th, S)
    gS = grad(lambda SS: lagrangian(P, FPPVariables(th, SS), lam))(S)
    assert float(torch.linalg.vector_norm(gS[1:])) <= 1e-14
    assert torch.allclose(gS[0], rnn_gradient(P, th, P.s0)[P.p :], rtol=1e-12, atol=1e-15)


def test_newton_converges_quadratically_on_a_smooth_problem() -> None:
    A = torch.tensor([[3.0, 1.0], [1.0, 2.0]], dtype=torch.float64)

    def f(x):
        return 0.5 * x @ A @ x + torch.cosh(x).sum()

    res = newton_minimize(f, torch.tensor([2.0, -1.5], dtype=torch.float64), tol=1e-12)
    assert res.converged and res.grad_norm <= 1e-12 and res.iterations <= 8
    assert res.eig_min > 0


def test_penalty_path_shrinks_the_residual_like_one_over_lambda() -> None:
    """From a strict RNN minimiser: residual and multiplier error scale like 1/λ (slopes checked in the claim)."""
    setup = KKTSetup(n=20, lams=(1e2, 1e3, 1e4))
    P, th, s0, info = kkt_instance(setup, torch.Generator().manual_seed(3))
    assert info["rnn_grad_norm"] <= 1e-10
    path = solve_path(P, th, s0, setup.lams)
    assert all(pt.solve.converged for pt in path), [(pt.solve.grad_norm, pt.solve.iterations) for pt in path]
    assert 9.0 < path[1].residual / path[2].residual < 11.0
    target = lemma1_multipliers(P, th, P.rollout(th, s0))[1:] / P.T
    e1, e2 = (
        float(torch.linalg.vector_norm(multiplier_estimates(P, pt.variables, pt.lam) - target)) for pt in path[1:]
    )
    assert 9.0 < e1 / e2 < 11.0
    wrong = full_loss_adjoints(P, th, P.rollout(th, s0))[1:] / P.T
    w1, w2 = (float(torch.linalg.vector_norm(pt.multipliers - wrong)) for pt in path[1:])
    assert 0.9 < w1 / w2 < 1.1  # the full-loss adjoint is not the limit


def test_path_rejects_bad_penalties() -> None:
    P, th = random_problem("elman-tanh", T=4, generator=torch.Generator().manual_seed(0))
    start = FPPVariables(th, P.rollout(th))
    for lams in ([], [0.0], [-1.0], [10.0, 5.0], [float("nan")]):
        with pytest.raises(InvalidArgument):
            kkt_path(P, start, lams)
