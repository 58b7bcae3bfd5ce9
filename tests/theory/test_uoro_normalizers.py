"""theory.uoro_normalizers: what UORO's ρ₀, ρ₁ minimize (UORO Algorithm 1, eq. (5)-(6)), checked numerically.

The expected squared Frobenius error of one rank-one reduction is computed exactly
by enumerating every sign vector ν ∈ {±1}^n (no sampling), with torch, for the
normalizers of Algorithm 1 and for alternatives.
"""

from __future__ import annotations

import itertools
import math

import pytest
import sympy as sp
import torch

from theory import uoro_normalizers as un


def test_sympy_derivation_facts() -> None:
    d = un.derive()
    assert d.depends_only_on_ratio
    assert d.second_derivative_positive
    assert d.algorithm1_is_optimal
    assert d.rho0_alone_not_optimal
    assert d.frobenius_identity
    assert sp.simplify(d.optimal_ratio_sq - un.nB * un.nC / (un.nA * un.nD)) == 0
    assert sp.simplify(d.minimum - (2 * un.nA * un.nB * un.nC * un.nD + 2 * un.x)) == 0


def _expected_error_sq(A, B, M, rho0_fn, rho1_fn) -> float:
    """E over all nu in {±1}^n of ||(rho0 A + rho1 nu)(B/rho0 + D/rho1)^T - A B^T - nu D^T||_F^2, D = M^T nu."""
    n = A.shape[0]
    tot = 0.0
    for signs in itertools.product((-1.0, 1.0), repeat=n):
        nu = torch.tensor(signs, dtype=torch.float64)
        D = M.T @ nu
        r0, r1 = rho0_fn(A, B, nu, D), rho1_fn(A, B, nu, D)
        est = torch.outer(r0 * A + r1 * nu, B / r0 + D / r1)
        E = est - torch.outer(A, B) - torch.outer(nu, D)
        tot += float((E * E).sum())
    return tot / 2**n


def _alg1_rho0(A, B, nu, D):
    return math.sqrt(float(torch.linalg.vector_norm(B) / torch.linalg.vector_norm(A)))


def _alg1_rho1(A, B, nu, D):
    return math.sqrt(float(torch.linalg.vector_norm(D) / torch.linalg.vector_norm(nu)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_algorithm1_minimizes_the_expected_error_and_only_the_ratio_matters(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    n, p = 5, 7
    A = torch.randn(n, generator=g, dtype=torch.float64) * 0.1  # J s~ (contracted)
    B = torch.randn(p, generator=g, dtype=torch.float64) * 3.0  # theta~
    M = torch.randn(n, p, generator=g, dtype=torch.float64)  # dF/dtheta
    best = _expected_error_sq(A, B, M, _alg1_rho0, _alg1_rho1)
    # scaling the ratio either way increases the error
    for c in (0.5, 0.8, 0.95, 1.05, 1.25, 2.0):
        other = _expected_error_sq(A, B, M, lambda *a, c=c: c * _alg1_rho0(*a), _alg1_rho1)
        assert other > best
    # scaling both normalizers by the same factor changes nothing (only rho0/rho1 matters)
    same = _expected_error_sq(A, B, M, lambda *a: 3.7 * _alg1_rho0(*a), lambda *a: 3.7 * _alg1_rho1(*a))
    assert same == pytest.approx(best, rel=1e-12)
    # Algorithm 1's rho0 with rho1 = 1 (or with the inverted rho0 ratio) is not optimal
    assert _expected_error_sq(A, B, M, _alg1_rho0, lambda *a: 1.0) > best
    assert _expected_error_sq(A, B, M, lambda *a: 1 / _alg1_rho0(*a), _alg1_rho1) > best
    # the minimum equals the closed form 2||A|| ||B|| ||C|| ||D|| + 2<A,C><B,D>, averaged over nu
    closed = 0.0
    for signs in itertools.product((-1.0, 1.0), repeat=n):
        nu = torch.tensor(signs, dtype=torch.float64)
        D = M.T @ nu
        closed += float(2 * A.norm() * B.norm() * nu.norm() * D.norm() + 2 * torch.dot(A, nu) * torch.dot(B, D))
    assert best == pytest.approx(closed / 2**n, rel=1e-12)
    # the cross term's expectation is 2 A^T M B (independent of the normalizers)
    cross = (
        sum(
            float(
                2
                * torch.dot(A, torch.tensor(s, dtype=torch.float64))
                * torch.dot(B, M.T @ torch.tensor(s, dtype=torch.float64))
            )
            for s in itertools.product((-1.0, 1.0), repeat=n)
        )
        / 2**n
    )
    assert cross == pytest.approx(float(2 * A @ M @ B), rel=1e-10, abs=1e-12)
