r"""Influence balancing (Tallec & Ollivier, UORO §4, eq. (8)-(9)), derived symbolically.

Dynamics :math:`s_{t+1} = A s_t + c\,\theta` with :math:`A_{ii} = A_{i,i+1} = 1/2`
and :math:`c = (1,\dots,1,-1,\dots,-1)^\top` (p plus signs, n − p minus signs). The
equilibrium solves :math:`(I - A) s^* = c\,\theta`; sympy inverts :math:`I - A`
exactly and differentiates. The paper states :math:`B = (I-A)^{-1}` has
:math:`B_{ij} = 2` for j ≥ i, hence :math:`\partial s^{*1}/\partial\theta = 4p - 2n`.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from verify.errors import InvalidArgument

__all__ = [
    "equilibrium_derivative",
    "equilibrium_derivative_closed_form",
    "equilibrium_matrix",
    "truncated_derivative",
]


@lru_cache(maxsize=64)
def equilibrium_matrix(n: int) -> sp.Matrix:
    """:math:`B = (I - A)^{-1}` computed exactly by sympy."""
    A = sp.zeros(n, n)
    for i in range(n):
        A[i, i] = sp.Rational(1, 2)
        if i + 1 < n:
            A[i, i + 1] = sp.Rational(1, 2)
    return (sp.eye(n) - A).inv()


@lru_cache(maxsize=256)
def equilibrium_derivative(n: int, p: int) -> sp.Rational:
    r""":math:`\partial s^{*1}/\partial\theta` at equilibrium, by exact inversion and differentiation."""
    if not (1 <= n and 0 <= p <= n):
        raise InvalidArgument("(n, p)", (n, p), "need n >= 1 and 0 <= p <= n")
    theta = sp.Symbol("theta")
    c = sp.Matrix([1] * p + [-1] * (n - p))
    s_star = equilibrium_matrix(n) * c * theta
    return sp.Rational(sp.diff(s_star[0], theta))


def equilibrium_derivative_closed_form() -> sp.Expr:
    r"""The paper's closed form :math:`4p - 2n` as a sympy expression in symbols n, p.

    UORO §4, eq. (8)-(9).
    """
    n, p = sp.symbols("n p", integer=True, positive=True)
    return 4 * p - 2 * n


@lru_cache(maxsize=1024)
def truncated_derivative(n: int, p: int, k: int) -> sp.Rational:
    r"""What truncated BPTT with truncation k sees at equilibrium: :math:`\sum_{j<k} (A^j c)_1`.

    Backpropagating :math:`\ell = \tfrac12(s^1-1)^2` through only the last k
    transitions of eq. (8) keeps the first k terms of the Neumann series
    :math:`(I-A)^{-1} c = \sum_{j\ge0} A^j c`; exact rationals. Its sign differs
    from :math:`4p-2n` when k is well below n (UORO §4).
    """
    if not (1 <= n and 0 <= p <= n and k >= 1):
        raise InvalidArgument("(n, p, k)", (n, p, k), "need n >= 1, 0 <= p <= n and k >= 1")
    A = sp.zeros(n, n)
    for i in range(n):
        A[i, i] = sp.Rational(1, 2)
        if i + 1 < n:
            A[i, i + 1] = sp.Rational(1, 2)
    v = sp.Matrix([1] * p + [-1] * (n - p))
    total = sp.Rational(0)
    for _ in range(k):
        total += v[0]
        v = A * v
    return sp.Rational(total)
