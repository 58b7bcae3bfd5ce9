"""Truncated BPTT and the truncated model as online estimators vs the offline references (float64)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from verify.estimators import TBPTT, TruncatedModel, run_estimator
from verify.oracles.bptt import per_step_gradients, tbptt_gradient, truncated_model_gradient, truncated_model_states
from verify.testing.strategies import ProblemCase, problems

TOL = 1e-12


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    return float(torch.linalg.vector_norm(a - b)) / den if den > 0 else float(torch.linalg.vector_norm(a))


@settings(max_examples=examples(40))
@given(case=problems(batch=True), k=st.integers(1, 14))
def test_tbptt_equals_offline_reference(case: ProblemCase, k: int) -> None:
    P, th = case.problem, case.theta
    G = run_estimator(TBPTT(k), P, th, torch.Generator(), samples=2)
    assert rel(G[:, 1], tbptt_gradient(P, th, k, which="per_step")) <= TOL
    if k >= P.T:  # the window reaches s_0: exact
        assert rel(G[:, 0], per_step_gradients(P, th)) <= TOL


@settings(max_examples=examples(30))
@given(case=problems(batch=True), k=st.integers(1, 14))
def test_truncated_model_equals_offline_reference(case: ProblemCase, k: int) -> None:
    P, th = case.problem, case.theta
    G = run_estimator(TruncatedModel(k), P, th, torch.Generator())
    assert rel(G[:, 0].sum(0), truncated_model_gradient(P, th, k, which="total")) <= TOL
    assert rel(G[-1, 0], truncated_model_gradient(P, th, k, which="final")) <= TOL


def test_tbptt_forward_state_is_exact() -> None:
    from tests.estimators.helpers import small_problem

    P, th = small_problem("gru", batch=(2,), T=7)
    est, rng = TBPTT(2), torch.Generator()
    state = est.init(P, th, rng)
    states = P.rollout(th)
    for t in range(1, P.T + 1):
        state, _ = est.step(P, th, state, t, rng)
        assert torch.allclose(state.window[0, -1], states[t], rtol=0, atol=1e-15)
    assert torch.allclose(truncated_model_states(P, th, 100), states[1:])


def test_truncation_changes_the_gradient() -> None:
    """Premise of the truncation checks: k < T differs from full BPTT on a generic problem."""
    from tests.estimators.helpers import small_problem

    P, th = small_problem("elman-tanh", T=8)
    G1 = run_estimator(TBPTT(1), P, th, torch.Generator())[:, 0]
    assert rel(G1, per_step_gradients(P, th)) > 1e-3
