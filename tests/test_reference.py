"""The exact references agree with each other (DESIGN.md targets), property-based.

Targets on well-conditioned problems (every cell, both losses, optional batch):
BPTT vs explicit adjoint ≤ 1e-12 relative; influence matrices vs torch.func.jacfwd
≤ 1e-12; complex step vs BPTT ≤ 1e-12 (analytic cells); Richardson central
differences vs BPTT ≤ 1e-8. Each test also asserts the measured error is within
the predicted round-off budget of :mod:`verify.oracles.budget`.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings

from tests.conftest import examples
from verify.errors import InvalidArgument
from verify.oracles.bptt import (
    adjoint_gradient,
    bptt_gradient,
    influence_jacfwd,
    influence_matrices,
    per_step_gradients,
    tbptt_gradient,
    truncated_model_gradient,
    truncated_model_states,
)
from verify.oracles.budget import conditioning
from verify.oracles.finite_diff import complex_problem, complex_step_directional, jacobian_fd, richardson_directional
from verify.testing.strategies import ProblemCase, contractive_problem, problems, random_problem


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    return float(torch.linalg.vector_norm(a - b)) / den if den > 0 else float(torch.linalg.vector_norm(a))


@settings(max_examples=examples(200))
@given(problems(batch=True))
def test_adjoint_equals_bptt(case: ProblemCase) -> None:
    P, th = case.problem, case.theta
    g = bptt_gradient(P, th)
    assert rel(adjoint_gradient(P, th), g) <= 1e-12
    G = per_step_gradients(P, th)
    assert rel(adjoint_gradient(P, th, per_step=True), G) <= 1e-12
    assert rel(G.sum(0), g) <= 1e-12
    budget = conditioning(P, th, with_influence=False).gradient_budget()
    assert rel(adjoint_gradient(P, th), g) <= budget


@settings(max_examples=examples(200))
@given(problems(batch=True))
def test_influence_reverse_equals_forward(case: ProblemCase) -> None:
    P, th = case.problem, case.theta
    I = influence_matrices(P, th)
    assert I.shape == (P.T, *P.batch_shape, P.n, P.p)
    assert rel(I, influence_jacfwd(P, th)) <= 1e-12


@settings(max_examples=examples(200))
@given(problems(cells=("elman-tanh", "linear", "lstm", "gru"), batch=True))
def test_complex_step_equals_bptt(case: ProblemCase) -> None:
    P, th = case.problem, case.theta
    g = bptt_gradient(P, th)
    gen = torch.Generator().manual_seed(case.seed)
    v = torch.randn(P.p, generator=gen)
    v = v / v.norm()
    cs = complex_step_directional(complex_problem(P).total_loss, th, v)
    scale = max(float(g.norm()), 1e-300)
    assert abs(float(cs) - float(g @ v)) / scale <= 1e-12


@settings(max_examples=examples(200))
@given(problems(batch=True))
def test_richardson_equals_bptt(case: ProblemCase) -> None:
    P, th = case.problem, case.theta
    g = bptt_gradient(P, th)
    gen = torch.Generator().manual_seed(case.seed + 1)
    v = torch.randn(P.p, generator=gen)
    v = v / v.norm()
    est = richardson_directional(P.total_loss, th, v)
    scale = max(float(g.norm()), 1e-300)
    assert abs(float(est.value) - float(g @ v)) / scale <= 1e-8
    # the extrapolation's own error estimate must cover the error it makes
    assert abs(float(est.value) - float(g @ v)) <= 2 * est.error + 1e-13 * scale


def test_full_jacobians_small_p() -> None:
    gen = torch.Generator().manual_seed(5)
    P, th = random_problem("elman-tanh", n=2, d=1, T=6, k=1, generator=gen)
    g = bptt_gradient(P, th)
    Jc, _ = jacobian_fd(complex_problem(P).total_loss, th, method="complex")
    Jr, err = jacobian_fd(P.total_loss, th, method="richardson")
    assert rel(Jc, g) <= 1e-12 and rel(Jr, g) <= 1e-8 and err < 1e-8
    # full Jacobian of the states = influence matrices
    Ic, _ = jacobian_fd(lambda t: complex_problem(P).rollout(t)[1:], th, method="complex")
    assert rel(Ic, influence_matrices(P, th)) <= 1e-12


def test_relu_across_kinks_reduces_step() -> None:
    """A relu problem where the default step crosses a kink: the estimate retries with smaller steps."""
    found = False
    for seed in range(40):
        gen = torch.Generator().manual_seed(seed)
        P, th = random_problem("elman-relu", n=5, d=3, T=20, generator=gen, loss="cross-entropy", batch=(2,))
        g = bptt_gradient(P, th)
        v = torch.randn(P.p, generator=gen)
        v /= v.norm()
        one = richardson_directional(P.total_loss, th, v, retries=0)
        if abs(float(one.value) - float(g @ v)) / float(g.norm()) > 1e-8:
            found = True
            est = richardson_directional(P.total_loss, th, v)
            assert abs(float(est.value) - float(g @ v)) / float(g.norm()) <= 1e-8
            assert est.step < one.step  # the retry used a smaller starting step
            break
    assert found, "no kink-crossing instance found among 40 seeds: the test lost its premise"


def test_influence_balancing_reference() -> None:
    from verify.testing.strategies import influence_balancing_problem

    P, th = influence_balancing_problem(n=23, p=10, T=300)
    I = influence_matrices(P, th)
    assert abs(float(I[-1, 0, 0]) - (4 * 10 - 2 * 23)) < 1e-9


# ------------------------------------------------------------------ truncation
def test_truncated_model_with_full_window_is_exact() -> None:
    gen = torch.Generator().manual_seed(7)
    P, th = contractive_problem("elman-tanh", lam=0.8, T=12, generator=gen)
    assert torch.allclose(truncated_model_states(P, th, 12), P.rollout(th)[1:], rtol=0, atol=0)
    g_full = torch.autograd.functional.jacobian(lambda t: P.losses(t)[-1], th)
    assert rel(truncated_model_gradient(P, th, 12), g_full) <= 1e-13
    assert rel(tbptt_gradient(P, th, 12, which="final"), g_full) <= 1e-13
    assert rel(tbptt_gradient(P, th, 12), bptt_gradient(P, th)) <= 1e-13


def test_truncated_model_restarts_from_zero_k_back() -> None:
    gen = torch.Generator().manual_seed(8)
    P, th = contractive_problem("linear", lam=0.7, T=10, generator=gen)
    hk = truncated_model_states(P, th, 3)
    # h_t^3 = 3 transitions from 0 starting at t-3
    s = torch.zeros(P.n)
    for tau in range(7, 10):
        s = P.transition(th, s, P.inputs[tau - 1])
    torch.testing.assert_close(hk[9 - 1], s, rtol=0, atol=0)


def test_tbptt_k1_is_one_step_gradient() -> None:
    gen = torch.Generator().manual_seed(9)
    P, th = random_problem("gru", T=5, generator=gen)
    states = P.rollout(th)
    G = tbptt_gradient(P, th, 1, which="per_step")
    t = 3
    thr = th.clone().requires_grad_(True)
    loss = P.step_loss(thr, P.transition(thr, states[t - 1], P.inputs[t - 1]), P.targets[t - 1])
    (g,) = torch.autograd.grad(loss, thr)
    assert rel(G[t - 1], g) <= 1e-14


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_reference_refused(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    P, th = random_problem("elman-tanh", generator=gen)
    with pytest.raises(InvalidArgument, match="float64"):
        bptt_gradient(P.to(dtype), th.to(dtype))


def test_theta_dtype_must_match() -> None:
    gen = torch.Generator().manual_seed(0)
    P, th = random_problem("elman-tanh", generator=gen)
    with pytest.raises(InvalidArgument, match="theta"):
        adjoint_gradient(P, th.float())


def test_complex_step_refuses_relu() -> None:
    gen = torch.Generator().manual_seed(0)
    P, _ = random_problem("elman-relu", generator=gen)
    with pytest.raises(InvalidArgument, match="analytic"):
        complex_problem(P)


def test_oversized_influence_refused_before_allocating() -> None:
    gen = torch.Generator().manual_seed(0)
    P, th = random_problem("elman-tanh", n=4, d=1, T=3, generator=gen)
    big = P.with_sequence(torch.zeros(2_000_000, 1), torch.zeros(2_000_000, 2))
    with pytest.raises(InvalidArgument, match="GiB"):
        influence_matrices(big, th)


@pytest.mark.parametrize("k", [0, -2, 1.5])
def test_bad_truncation(k: object) -> None:
    gen = torch.Generator().manual_seed(0)
    P, th = random_problem("elman-tanh", generator=gen)
    with pytest.raises(InvalidArgument, match="k="):
        tbptt_gradient(P, th, k)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="k="):
        truncated_model_states(P, th, k)  # type: ignore[arg-type]


def test_bad_direction() -> None:
    gen = torch.Generator().manual_seed(0)
    P, th = random_problem("elman-tanh", generator=gen)
    with pytest.raises(InvalidArgument, match="direction"):
        richardson_directional(P.total_loss, th, torch.zeros(P.p))
