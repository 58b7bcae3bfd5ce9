"""Projected SGD on a fixed buffer: eq. (8)-(9), the stopping time of Thm 1, the gradient mapping."""

from __future__ import annotations

import pytest
import torch

from theory.fpp_sgd import bound_coefficients, stationarity_bound
from verify.errors import InvalidArgument
from verify.fpp.objective import FPPObjective, autograd_gradient, flatten_variables
from verify.fpp.sgd import (
    gradient_mapping,
    project_ball,
    projected_sgd,
    sample_stopping_time,
    stopping_time_pmf,
)
from verify.testing.strategies import random_problem


def test_projection_onto_the_ball() -> None:
    """Eq. (8): points inside are unchanged, points outside land on the sphere along their ray; idempotent."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 7, generator=g, dtype=torch.float64) * 3
    y = project_ball(x, 2.0)
    n_x = torch.linalg.vector_norm(x, dim=-1)
    n_y = torch.linalg.vector_norm(y, dim=-1)
    inside = n_x <= 2.0
    assert torch.equal(y[inside], x[inside])
    assert torch.allclose(n_y[~inside], torch.full_like(n_y[~inside], 2.0), rtol=1e-15, atol=0)
    assert torch.allclose(y[~inside] / n_y[~inside, None], x[~inside] / n_x[~inside, None], rtol=1e-14, atol=1e-15)
    assert torch.allclose(project_ball(y, 2.0), y, rtol=1e-15, atol=0)


def test_stopping_time_pmf() -> None:
    """Thm 1's P_N is uniform for a constant step and proportional to alpha - D alpha^2 otherwise."""
    pmf = stopping_time_pmf(torch.full((10,), 0.25), D=2.0)
    assert torch.allclose(pmf, torch.full((10,), 0.1, dtype=torch.float64))
    a = torch.tensor([0.1, 0.2, 0.3])
    pmf = stopping_time_pmf(a, D=1.0)
    w = a.double() - a.double() ** 2
    assert torch.allclose(pmf, w / w.sum())
    R = sample_stopping_time(pmf, 1000, torch.Generator().manual_seed(0))
    assert set(R.tolist()) <= {1, 2, 3} and set(R.tolist()) == {1, 2, 3}
    with pytest.raises(InvalidArgument, match="alpha_k"):
        stopping_time_pmf(torch.tensor([0.1, 2.0]), D=1.0)  # alpha > 1/D: negative weight
    with pytest.raises(InvalidArgument):
        stopping_time_pmf(torch.tensor([0.1]), D=0.0)


def _instance():
    P, th = random_problem("elman-tanh", n=2, d=1, T=10, k=1, generator=torch.Generator().manual_seed(4))
    obj = FPPObjective(P, 2, 1.0)
    return obj, obj.rollout_variables(th)


def test_gradient_mapping_is_the_gradient_inside_the_ball() -> None:
    obj, v = _instance()
    x = flatten_variables(v)
    G = gradient_mapping(obj, x, 0.01, 1e3)
    assert torch.allclose(G, flatten_variables(autograd_gradient(obj, v)), rtol=1e-10, atol=1e-14)
    # where the projection binds the mapping is (x - Gamma(x - alpha g))/alpha, not the gradient
    g = flatten_variables(autograd_gradient(obj, v))
    r = 0.5 * float(torch.linalg.vector_norm(x))
    G2 = gradient_mapping(obj, x, 0.5, r)
    assert torch.allclose(G2, (x - project_ball(x - 0.5 * g, r)) / 0.5, rtol=1e-12, atol=1e-15)
    assert not torch.allclose(G2, g)


def test_projected_sgd_stays_in_the_ball_and_quadrature_is_exact_with_stride_one() -> None:
    obj, v = _instance()
    r = float(torch.linalg.vector_norm(flatten_variables(v)))  # the start lies on the sphere
    tr = projected_sgd(
        obj, v, steps=40, step_size=0.2, radius=r, generator=torch.Generator().manual_seed(0),
        batches=(None, 1, 3), replicates=4, head=8, stride=1, snapshot_every=10,
    )  # fmt: skip
    assert tr.final.shape == (1 + 2 * 4, obj.size)
    assert bool((torch.linalg.vector_norm(tr.final, dim=-1) <= r * (1 + 1e-12)).all())
    assert tr.batch.tolist() == [0] + [1] * 4 + [3] * 4
    assert not torch.isnan(tr.measure).any()
    assert torch.allclose(tr.expected_measure(40), tr.measure.mean(0))
    assert tr.snapshots.shape == (4, 9, obj.size)
    assert bool(tr.active.any())  # the small ball is hit


def test_strided_quadrature_horizons() -> None:
    obj, v = _instance()
    tr = projected_sgd(
        obj, v, steps=30, step_size=0.05, radius=100.0, generator=torch.Generator().manual_seed(0), head=6, stride=4
    )
    assert tr.valid_horizons()[-1] == 30
    assert 7 not in tr.valid_horizons() and 10 in tr.valid_horizons()
    with pytest.raises(InvalidArgument):
        tr.expected_measure(7)
    assert int((tr.weight > 0).sum()) == 6 + 6  # the head, then one row per block of 4


def test_radius_that_excludes_the_start_is_rejected() -> None:
    obj, v = _instance()
    r = 0.5 * float(torch.linalg.vector_norm(flatten_variables(v)))
    with pytest.raises(InvalidArgument, match="contain the start"):
        projected_sgd(obj, v, steps=3, step_size=0.1, radius=r, generator=torch.Generator())
    with pytest.raises(InvalidArgument):
        projected_sgd(obj, v, steps=3, step_size=0.0, radius=10.0, generator=torch.Generator())


def test_corrected_thm1_constants() -> None:
    """theory/fpp_sgd.py: 16/3 and 14/3 (projected), 8/3 and 1/3 (interior) at alpha = 1/(2D)."""
    import sympy as sp

    assert bound_coefficients(True) == (sp.Rational(16, 3), sp.Rational(14, 3))
    assert bound_coefficients(False) == (sp.Rational(8, 3), sp.Rational(1, 3))
    assert stationarity_bound(2.0, 3.0, 0.5, 4, float("inf")) == pytest.approx(16 / 3 * 6 / 4)
    assert stationarity_bound(2.0, 3.0, 0.5, 4, 2) == pytest.approx(16 / 3 * 6 / 4 + 14 / 3 * 0.25)


def test_interior_bound_holds_on_a_quadratic() -> None:
    """The interior bound 8DΔ/(3N) + σ²/(3m) for SGD on a quadratic with exact noise (sanity of the derivation)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    D = 2.0
    H = torch.tensor([D, 0.3], dtype=torch.float64)
    sigma2 = 0.5
    alpha = 1 / (2 * D)
    K, N = 4000, 50
    x = torch.tensor([3.0, -2.0], dtype=torch.float64).expand(K, 2).clone()
    gap = float(0.5 * (H * x[0] ** 2).sum())
    acc = torch.zeros(K, dtype=torch.float64)
    for _ in range(N):
        grad = H * x
        acc += (grad * grad).sum(-1)
        noise = torch.randn(K, 2, generator=g, dtype=torch.float64) * (sigma2 / 2) ** 0.5
        x = x - alpha * (grad + noise)
    measured = float(acc.mean() / N)
    bound = stationarity_bound(D, gap, sigma2, N, 1, projected=False)
    assert measured <= bound
