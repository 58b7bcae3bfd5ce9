"""theory.influence_balancing: ∂s¹/∂θ = 4p − 2n at equilibrium (UORO §4, eq. (8)), re-derived and evaluated.

The symbolic result is compared with an independent numerical evaluation: reverse-mode
influence matrices (verify.oracles.bptt.influence_matrices) on the influence-balancing
problem run long enough to reach the equilibrium (A has spectral radius 1/2).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory.influence_balancing import (
    equilibrium_derivative,
    equilibrium_derivative_closed_form,
    equilibrium_matrix,
)
from verify.oracles.bptt import influence_matrices
from verify.testing.strategies import influence_balancing_problem


@pytest.mark.parametrize("n", range(1, 11))
def test_symbolic_equals_closed_form(n: int) -> None:
    nn, pp = sp.symbols("n p", integer=True, positive=True)
    for p in range(n + 1):
        assert equilibrium_derivative(n, p) == 4 * p - 2 * n
        assert equilibrium_derivative_closed_form().subs({nn: n, pp: p}) == 4 * p - 2 * n


@pytest.mark.parametrize("n", [1, 3, 7, 12])
def test_inverse_matrix_against_numpy(n: int) -> None:
    A = 0.5 * np.eye(n) + 0.5 * np.eye(n, k=1)
    B = np.linalg.inv(np.eye(n) - A)
    assert np.allclose(np.array(equilibrium_matrix(n), dtype=float), B, rtol=0, atol=1e-12)
    assert np.allclose(np.triu(B), B) and np.allclose(B[np.triu_indices(n)], 2.0)  # B_ij = 2 for j >= i


@pytest.mark.parametrize(("n", "p"), [(4, 1), (6, 3), (8, 2), (8, 6)])
def test_against_influence_matrices_at_equilibrium(n: int, p: int) -> None:
    T = 160  # A^T ~ T^(n-1) 2^-T: far below round-off
    P, th = influence_balancing_problem(n=n, p=p, T=T)
    infl = influence_matrices(P, th)  # (T, n, 1)
    assert float(infl[-1, 0, 0]) == pytest.approx(4 * p - 2 * n, abs=1e-10)
    # the whole equilibrium column B c (derivative of every unit)
    c = np.array([1.0] * p + [-1.0] * (n - p))
    want = np.array(equilibrium_matrix(n), dtype=float) @ c
    assert np.allclose(infl[-1, :, 0].numpy(), want, atol=1e-10)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        equilibrium_derivative(3, 4)
