"""RTRL (UORO eq. (4)) is exact: influence matrices and per-step gradients vs float64 BPTT ≤ 1e-11.

Property-based over every cell kind, both losses and optional batches (hypothesis,
``ci`` profile derandomized); the influence-balancing closed form 4p − 2n within
1e-9; the online mode.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from theory.influence_balancing import equilibrium_derivative
from verify.estimators import RTRL, RobbinsMonroSGD, run_estimator, run_online
from verify.oracles.bptt import influence_matrices, per_step_gradients
from verify.testing.strategies import CELL_KINDS, ProblemCase, influence_balancing_problem, problems

TOL = 1e-11  # DESIGN.md: RTRL vs BPTT <= 1e-11 relative


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    return float(torch.linalg.vector_norm(a - b)) / den if den > 0 else float(torch.linalg.vector_norm(a))


def rtrl_run(P, th, samples: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    est, rng = RTRL(), torch.Generator()
    state = est.init(P, th, rng, samples=samples)
    infl, grads = [], []
    for t in range(1, P.T + 1):
        state, g = est.step(P, th, state, t, rng)
        assert torch.equal(g[0], g[-1])  # deterministic: the samples agree
        infl.append(state.influence[-1])
        grads.append(g[0])
    return torch.stack(infl), torch.stack(grads)


@pytest.mark.parametrize("kind", CELL_KINDS)
@settings(max_examples=examples(12))
@given(data=st.data())
def test_rtrl_equals_bptt(kind: str, data: st.DataObject) -> None:
    case: ProblemCase = data.draw(problems(cells=(kind,), batch=True))
    P, th = case.problem, case.theta
    I, G = rtrl_run(P, th)
    assert rel(I, influence_matrices(P, th)) <= TOL
    assert rel(G, per_step_gradients(P, th)) <= TOL


def test_rtrl_influence_balancing_cell() -> None:
    P, th = influence_balancing_problem(n=6, p=2, T=15, theta=0.3)
    I, G = rtrl_run(P, th)
    assert rel(I, influence_matrices(P, th)) <= TOL
    assert rel(G, per_step_gradients(P, th)) <= TOL


@settings(max_examples=examples(6))
@given(n=st.integers(1, 12), data=st.data())
def test_influence_balancing_closed_form(n: int, data: st.DataObject) -> None:
    p = data.draw(st.integers(0, n))
    T = 10 * n + 50  # the tail of sum_j (A^j c)_1 is below 1e-16 by then
    P, th = influence_balancing_problem(n=n, p=p, T=T, theta=0.5)
    est, rng = RTRL(), torch.Generator()
    state = est.init(P, th, rng)
    for t in range(1, T + 1):
        state, _ = est.step(P, th, state, t, rng)
    exact = float(equilibrium_derivative(n, p))  # 4p - 2n, derived by sympy
    assert exact == 4 * p - 2 * n
    assert abs(float(state.influence[0, 0, 0]) - exact) <= 1e-9


def test_rtrl_state_is_shared_across_samples() -> None:
    P, th = influence_balancing_problem(n=4, p=1, T=3)
    st0 = RTRL().init(P, th, torch.Generator(), samples=1000)
    assert st0.influence.stride(0) == 0  # a broadcast view: M samples cost no memory


def test_online_mode_updates_theta_each_step_and_learns() -> None:
    from verify.rtrl.online_convergence import longrun_gradient, sequences, teacher

    gen = torch.Generator().manual_seed(3)
    P0, th_star = teacher("elman-tanh", 2, 1, gen)
    P = sequences(P0, th_star, 200, 8, gen)
    Pe = sequences(P0, th_star, 300, 16, gen)
    th0 = P.init_theta(torch.Generator().manual_seed(4), scale=0.1)
    seen: list[torch.Tensor] = []
    run = run_online(
        RTRL(),
        P,
        th0,
        RobbinsMonroSGD(0.1 / 8, t0=10),
        torch.Generator(),
        record=[0, 200],
        callback=lambda t, th: seen.append(th),
    )
    assert len(seen) == 200 and not torch.equal(seen[0], seen[1])
    g0, g1 = (float(longrun_gradient(Pe, th).norm()) for th in run.thetas)
    assert g1 < g0 / 3


def test_online_mode_matches_a_manual_loop() -> None:
    from tests.estimators.helpers import small_problem

    P, th = small_problem("gru", T=6)
    opt = RobbinsMonroSGD(0.05, t0=2.0, power=0.75)
    run = run_online(RTRL(), P, th, opt, torch.Generator())
    est, rng, theta = RTRL(), torch.Generator(), th.clone()
    state = est.init(P, theta, rng)
    for t in range(1, P.T + 1):
        state, g = est.step(P, theta, state, t, rng)
        theta = theta - opt.step_size(t) * g.mean(0)  # eq. (2.26)
    assert torch.allclose(run.theta, theta, rtol=0, atol=1e-15)


def test_frozen_run_estimator_matches_step_loop() -> None:
    from tests.estimators.helpers import small_problem

    P, th = small_problem("lstm", batch=(2,), T=5)
    G = run_estimator(RTRL(), P, th, torch.Generator(), samples=3)
    assert G.shape == (5, 3, P.p)
    assert rel(G[:, 1], per_step_gradients(P, th)) <= TOL
