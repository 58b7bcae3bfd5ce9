r"""UORO's normalizers ρ₀, ρ₁ (Tallec & Ollivier, eq. (5)–(6), Algorithm 1): what they minimize, by sympy.

Source: ``uoro-tallec-ollivier.md`` (eq. (5), (6), Algorithm 1 "compute normalizers")
and ``uoro-variance-cooijmans-martens.md`` ("Variance reduction through iterative
rescaling"). The paper says ρ₀ and ρ₁ are "normalizing constants aimed at minimizing
variance"; Cooijmans & Martens state that they minimize the expected norm of the
error of the rank-one approximation of one step. Derived here:

One UORO step replaces the rank-two matrix :math:`A B^\top + C D^\top` -- with
:math:`A = J\tilde s_t` (the forward-propagated :math:`\tilde s`, "s̃_{t+1}" before scaling),
:math:`B = \tilde\theta_t`, :math:`C = \nu`, :math:`D = \delta\theta_g = (\partial F/\partial\theta)^\top\nu` --
by :math:`(\rho_0 A + \rho_1 C)(B/\rho_0 + D/\rho_1)^\top`. The error is

.. math::
    E = r\,A D^\top + r^{-1} C B^\top,\qquad r = \rho_0/\rho_1,\qquad
    \|E\|_F^2 = r^2\|A\|^2\|D\|^2 + r^{-2}\|C\|^2\|B\|^2 + 2\langle A, C\rangle\langle B, D\rangle.

What is true (each item is checked by :func:`derive`):

1. The estimate and its error depend on (ρ₀, ρ₁) only through the ratio r = ρ₀/ρ₁.
2. For every ν, :math:`\|E\|_F^2` has a unique minimizer over r > 0,
   :math:`r^2 = \|B\|\|C\|/(\|A\|\|D\|)`, with minimum
   :math:`2\|A\|\|B\|\|C\|\|D\| + 2\langle A,C\rangle\langle B,D\rangle`. The minimizer is
   pointwise in ν, so it also minimizes the expectation over ν (of the norm or its square).
3. Algorithm 1's choice (ε = 0), :math:`\rho_0^2 = \|\tilde\theta_t\|/\|\tilde s_{t+1}\|`,
   :math:`\rho_1^2 = \|\delta\theta_g\|/\|\nu\|`, gives exactly that ratio.
4. "ρ₀² = ‖θ̃‖/‖s̃‖ minimizes the expected norm" is true only together with
   ρ₁² = ‖δθ_g‖/‖ν‖: any pair on the ray ρ₀/ρ₁ = r* is equally optimal, and ρ₀ of
   Algorithm 1 with another ρ₁ (e.g. ρ₁ = 1) is not optimal. The individual values of
   Algorithm 1 additionally balance the factors (:math:`\|\rho_0 A\| = \|B/\rho_0\|`,
   :math:`\|\rho_1 C\| = \|D/\rho_1\|`), a choice of scale with no effect on the error.
5. The cross term is not affected by any normalizer; its expectation over ν (with
   :math:`E[\nu\nu^\top] = I`) is :math:`2\,A^\top M B` for :math:`D = M^\top\nu`, M = ∂F/∂θ.
6. What is minimized is the error of one step; it is not the variance of the gradient
   estimate, which also has temporal cross-terms (Cooijmans & Martens).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

__all__ = [
    "NormalizerDerivation",
    "algorithm1_ratio_sq",
    "derive",
    "error_sq",
    "frobenius_identity_holds",
    "optimal_ratio_sq",
]

#: norms ‖A‖, ‖B‖, ‖C‖, ‖D‖, the cross term x = ⟨A,C⟩⟨B,D⟩, the normalizers and their ratio
nA, nB, nC, nD = sp.symbols("normA normB normC normD", positive=True)
x = sp.Symbol("x", real=True)
rho0, rho1, r = sp.symbols("rho0 rho1 r", positive=True)


def error_sq(ratio: sp.Expr = r) -> sp.Expr:
    r""":math:`\|E\|_F^2` as a function of the ratio :math:`r = \rho_0/\rho_1` (module docstring)."""
    return ratio**2 * nA**2 * nD**2 + ratio ** (-2) * nC**2 * nB**2 + 2 * x


def optimal_ratio_sq() -> sp.Expr:
    r"""The minimizing :math:`r^2 = \|B\|\|C\|/(\|A\|\|D\|)` (solved by sympy from :math:`\partial_r\|E\|^2 = 0`)."""
    sols = [s for s in sp.solve(sp.diff(error_sq(), r), r) if s.is_positive]
    if len(sols) != 1:
        raise ArithmeticError(f"expected one positive stationary point, got {sols}")
    return sp.simplify(sols[0] ** 2)


def algorithm1_ratio_sq() -> sp.Expr:
    r"""Algorithm 1 with ε = 0: :math:`(\rho_0/\rho_1)^2 = (\|B\|/\|A\|)\,(\|C\|/\|D\|)`."""
    rho0_sq = nB / nA  # rho_0^2 = ||theta~_t|| / ||s~_{t+1}||
    rho1_sq = nD / nC  # rho_1^2 = ||delta theta_g|| / ||nu||
    return sp.simplify(rho0_sq / rho1_sq)


@dataclass(frozen=True)
class NormalizerDerivation:
    """The facts of the module docstring, each as a checked boolean plus the expressions."""

    depends_only_on_ratio: bool
    optimal_ratio_sq: sp.Expr
    minimum: sp.Expr
    second_derivative_positive: bool
    algorithm1_is_optimal: bool
    rho0_alone_not_optimal: bool
    frobenius_identity: bool


def _rank_one_error(rho0_: sp.Expr, rho1_: sp.Expr) -> sp.Expr:
    """||E||^2 written with rho0 and rho1 separately (E = (rho0 A + rho1 C)(B/rho0 + D/rho1)^T - A B^T - C D^T)."""
    return (rho0_ / rho1_) ** 2 * nA**2 * nD**2 + (rho1_ / rho0_) ** 2 * nC**2 * nB**2 + 2 * x


@lru_cache(maxsize=1)
def derive() -> NormalizerDerivation:
    """Derive and check items 1–4 of the module docstring (item 1 also on explicit vectors)."""
    full = _rank_one_error(rho0, rho1)
    only_ratio = sp.simplify(full.subs(rho0, r * rho1) - error_sq(r)) == 0  # rho1 cancels
    r2 = optimal_ratio_sq()
    r_star = sp.sqrt(r2)
    minimum = sp.simplify(error_sq(r_star))
    second = sp.simplify(sp.diff(error_sq(), r, 2).subs(r, r_star))
    alg1 = sp.simplify(algorithm1_ratio_sq() - r2) == 0
    # rho_0 of Algorithm 1 with rho_1 = 1 is optimal only when ||D|| = ||C||
    alone = sp.simplify((nB / nA) - r2)  # (rho0/1)^2 - r*^2
    alone_not_optimal = not (sp.simplify(alone) == 0)
    return NormalizerDerivation(
        depends_only_on_ratio=bool(only_ratio),
        optimal_ratio_sq=r2,
        minimum=minimum,
        second_derivative_positive=bool(second.is_positive),
        algorithm1_is_optimal=bool(alg1),
        rho0_alone_not_optimal=alone_not_optimal,
        frobenius_identity=frobenius_identity_holds(2, 3),
    )


def frobenius_identity_holds(n: int, p: int) -> bool:
    r"""Sympy check, on symbolic vectors of sizes n and p, of the error formula:

    :math:`(\rho_0A + \rho_1C)(B/\rho_0 + D/\rho_1)^\top - AB^\top - CD^\top = rAD^\top + r^{-1}CB^\top` and
    :math:`\|rAD^\top + r^{-1}CB^\top\|_F^2
    = r^2\|A\|^2\|D\|^2 + r^{-2}\|C\|^2\|B\|^2 + 2\langle A,C\rangle\langle B,D\rangle`.
    """
    A = sp.Matrix(sp.symbols(f"a0:{n}", real=True))
    C = sp.Matrix(sp.symbols(f"c0:{n}", real=True))
    B = sp.Matrix(sp.symbols(f"b0:{p}", real=True))
    D = sp.Matrix(sp.symbols(f"d0:{p}", real=True))
    est = (rho0 * A + rho1 * C) * (B / rho0 + D / rho1).T
    E = sp.simplify(est - A * B.T - C * D.T)
    ratio = rho0 / rho1
    same = sp.simplify(E - (ratio * A * D.T + C * B.T / ratio)) == sp.zeros(n, p)
    fro = sum((E[i, j] ** 2 for i in range(n) for j in range(p)), sp.Integer(0))
    formula = ratio**2 * (A.dot(A)) * (D.dot(D)) + ratio ** (-2) * (C.dot(C)) * (B.dot(B)) + 2 * A.dot(C) * B.dot(D)
    return bool(same) and sp.expand(fro - formula) == 0
