"""FPP objective eq. (5)/(6)/(11), eq. (7) and Lemma 3 (fpp-explicit-state-variables.md §3, App. B.1)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from verify.errors import InvalidArgument
from verify.fpp.objective import (
    FPPObjective,
    FPPVariables,
    autograd_gradient,
    flatten_variables,
    full_gradient,
    index_distribution,
    minibatch_gradient,
    objective,
    penalty_objective,
    predicted_states,
    relative_error,
    sample_gradient,
    sample_indices,
    sample_loss,
    sample_losses,
    unflatten_variables,
)
from verify.testing.strategies import problems, random_problem

# eq. (7) and autograd evaluate the same float64 operations in a different order: the
# DESIGN target for exactness is 1e-12 relative on well-conditioned problems.
TOL = 1e-12


def _perturbed(obj: FPPObjective, theta: torch.Tensor, seed: int, scale: float = 0.3) -> FPPVariables:
    v = obj.rollout_variables(theta)
    g = torch.Generator().manual_seed(seed)
    return FPPVariables(v.theta, v.states + scale * torch.randn(v.states.shape, generator=g, dtype=torch.float64))


@settings(max_examples=examples(40))
@given(case=problems(max_T=10), T=st.integers(1, 5), lam=st.floats(0.05, 20.0), data=st.data())
def test_eq7_equals_autograd_of_L_i(case, T, lam, data) -> None:
    """Eq. (7) = autograd of L_i (eq. (6)) for every sample, any cell and loss."""
    P = case.problem
    if P.T < T:
        T = P.T
    obj = FPPObjective(P, T, lam)
    v = _perturbed(obj, case.theta, case.seed)
    i = data.draw(st.integers(T, P.T))
    g7 = flatten_variables(sample_gradient(obj, v, i))
    ga = torch.func.grad(lambda th, S: sample_loss(obj, FPPVariables(th, S), i), argnums=(0, 1))(v.theta, v.states)
    assert relative_error(g7, torch.cat([ga[0], ga[1].reshape(-1)])) <= TOL


@settings(max_examples=examples(30))
@given(case=problems(max_T=10), T=st.integers(1, 5))
def test_lemma3_exact_average_is_the_gradient(case, T) -> None:
    """Lemma 3: (1/(n−T+1)) Σ_k ∇L_k = ∇L exactly (the expectation over uniform k is a finite sum)."""
    P = case.problem
    T = min(T, P.T)
    obj = FPPObjective(P, T, 0.9)
    v = _perturbed(obj, case.theta, case.seed)
    assert relative_error(flatten_variables(full_gradient(obj, v)), flatten_variables(autograd_gradient(obj, v))) <= TOL


def test_eq7_is_sparse_in_the_four_blocks() -> None:
    """∇L_i is non-zero only for W, β, s_{i−T} and s_i (§3 below eq. (6))."""
    P, th = random_problem("gru", T=9, generator=torch.Generator().manual_seed(3))
    obj = FPPObjective(P, 3, 1.0)
    v = _perturbed(obj, th, 1)
    g = sample_gradient(obj, v, 6)
    nonzero_rows = torch.nonzero(g.states.abs().sum(-1)).flatten().tolist()
    assert nonzero_rows == [3, 6]
    assert float(g.theta.abs().sum()) > 0


def test_objective_is_the_mean_of_the_samples_and_eq11_rescales_the_penalty() -> None:
    P, th = random_problem("elman-tanh", T=7, generator=torch.Generator().manual_seed(0))
    obj = FPPObjective(P, 2, 0.4)
    v = _perturbed(obj, th, 2)
    terms = sample_losses(obj, v)
    assert terms.shape == (obj.num_samples,)
    assert torch.allclose(terms.mean(), objective(obj, v), rtol=1e-14, atol=0)
    assert torch.allclose(terms[1], sample_loss(obj, v, 3), rtol=1e-14, atol=0)
    # eq. (11) = eq. (5) with penalty weight n*lambda (T = 1)
    lam = 0.3
    lhs = penalty_objective(P, v, lam)
    rhs = objective(FPPObjective(P, 1, P.T * lam), v)
    assert math.isclose(float(lhs), float(rhs), rel_tol=1e-13)


@pytest.mark.parametrize("kind", ["elman-tanh", "lstm", "linear"])
@pytest.mark.parametrize("T", [1, 2, 5])
def test_feasible_states_have_zero_residual(kind, T) -> None:
    """On the RNN's own rollout s_hat_i(s_{i-T}, W) = s_i: the T-step prediction uses T transitions."""
    P, th = random_problem(kind, T=8, generator=torch.Generator().manual_seed(1))
    obj = FPPObjective(P, T, 1.0)
    v = obj.rollout_variables(th)
    assert torch.allclose(predicted_states(obj, v), v.states[T:], rtol=0, atol=1e-15)


def test_minibatch_weights_and_flattening_round_trip() -> None:
    P, th = random_problem("lstm", T=6, generator=torch.Generator().manual_seed(5))
    obj = FPPObjective(P, 2, 0.8)
    v = _perturbed(obj, th, 3)
    idx = torch.tensor([2, 5, 5])
    g = minibatch_gradient(obj, v, idx)
    manual = sum(flatten_variables(sample_gradient(obj, v, int(i))) for i in idx) / 3
    assert relative_error(flatten_variables(g), manual) <= TOL
    back = unflatten_variables(obj, flatten_variables(v))
    assert torch.equal(back.theta, v.theta) and torch.equal(back.states, v.states)


def test_sampler_is_uniform_on_T_to_n_inclusive() -> None:
    gen = torch.Generator().manual_seed(0)
    draws = sample_indices(9, 3, 7000, gen)
    assert set(draws.tolist()) == set(range(3, 10))
    support, probs = index_distribution(9, 3)
    assert support.tolist() == list(range(3, 10))
    assert torch.allclose(probs.sum(), torch.tensor(1.0, dtype=torch.float64))


# ----------------------------------------------------------------- bad input
def test_bad_input_is_invalid_argument() -> None:
    P, th = random_problem("elman-tanh", T=4, generator=torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match="at least T"):
        FPPObjective(P, 5, 1.0)  # buffer smaller than T
    for lam in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidArgument, match="lam"):
            FPPObjective(P, 1, lam)
    with pytest.raises(InvalidArgument, match="T"):
        FPPObjective(P, 0, 1.0)
    obj = FPPObjective(P, 2, 1.0)
    v = obj.rollout_variables(th)
    bad = v.states.clone()
    bad[2, 1] = float("nan")
    with pytest.raises(InvalidArgument, match="non-finite"):
        obj.check_variables(FPPVariables(v.theta, bad))
    bad[2, 1] = float("inf")
    with pytest.raises(InvalidArgument, match="states"):
        obj.check_variables(FPPVariables(v.theta, bad))
    with pytest.raises(InvalidArgument, match="shape"):
        obj.check_variables(FPPVariables(v.theta, v.states[:-1]))
    with pytest.raises(InvalidArgument, match="sample index"):
        sample_loss(obj, v, 1)
    Pb, _ = random_problem("elman-tanh", T=4, batch=(2,), generator=torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match="unbatched"):
        FPPObjective(Pb, 1, 1.0)
