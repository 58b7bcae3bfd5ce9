r"""FPP Thm 1, corrected: the stationarity bound of projected mini-batch SGD with a variance term.

Paper: ``fpp-explicit-state-variables.md`` §4.1, App. B.1 (Thm 1 applies Ghadimi,
Lan & Zhang 2016, Cor. 3). The paper prints :math:`\mathbb{E}\|G(x_R)\|^2 = O(1/N)`
for a constant step :math:`\alpha = 1/(2D)` and one sample per step. The result it
cites carries a variance term; for a constant step and batch size m the true
statement is a bound with a floor that does not vanish as N grows.

Derivation (D-smooth L on the ball C, :math:`x^+ = \Gamma(x - \alpha g)`,
:math:`g = \nabla L(x) + \xi`, :math:`\mathbb{E}[\xi \mid x] = 0`,
:math:`\mathbb{E}\|\xi\|^2 \le \sigma^2/m`; :math:`\tilde G = (x - x^+)/\alpha`,
:math:`G = (x - \Gamma(x - \alpha\nabla L))/\alpha`):

1. projection: :math:`\langle g, \tilde G\rangle \ge \|\tilde G\|^2`;
2. descent lemma: :math:`L(x^+) \le L(x) - c_1\|\tilde G\|^2 + \alpha\langle\xi, \tilde G\rangle`,
   :math:`c_1 = \alpha - D\alpha^2/2`;
3. Γ is non-expansive: :math:`\|\tilde G - G\| \le \|\xi\|`, so
   :math:`\mathbb{E}\langle\xi,\tilde G\rangle \le \mathbb{E}\|\xi\|^2` and
   :math:`\|G\|^2 \le 2\|\tilde G\|^2 + 2\|\xi\|^2`;
4. sum over t = 1..N, with R uniform on 1..N (P_N is uniform for a constant step):

.. math::
    \mathbb{E}\|G(x_R)\|^2 \le \frac{2\,(L(x_1) - L^*)}{c_1 N}
        + \frac{2(c_1 + \alpha)}{c_1}\,\frac{\sigma^2}{m}
    \;\overset{\alpha = 1/(2D)}{=}\; \frac{16 D (L(x_1) - L^*)}{3N} + \frac{14\sigma^2}{3m}.

While the projection is inactive (:math:`\tilde G = g`) the sharper interior form
is :math:`\frac{2(L(x_1)-L^*)}{(2\alpha - D\alpha^2) N} + \frac{D\alpha}{2 - D\alpha}\frac{\sigma^2}{m}`
:math:`= \frac{8D(L(x_1)-L^*)}{3N} + \frac{\sigma^2}{3m}`. Either way the rate is
O(1/N) only when σ = 0 (full batch) or when m grows like N.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

__all__ = ["bound_coefficients", "stationarity_bound"]


@lru_cache(maxsize=8)
def bound_coefficients(projected: bool = True) -> tuple[sp.Expr, sp.Expr]:
    r"""(A, B) with :math:`\mathbb{E}\|G(x_R)\|^2 \le A\,D\,\Delta/N + B\,\sigma^2/m` at α = 1/(2D), exact rationals.

    Derived from the inequalities in the module docstring with α = c/D, c = 1/2.
    """
    c, D, delta, N, sigma2, m = sp.symbols("c D Delta N sigma2 m", positive=True)
    alpha = c / D
    if projected:
        c1 = alpha - D * alpha**2 / 2
        bound = 2 * delta / (c1 * N) + 2 * (c1 + alpha) / c1 * sigma2 / m
    else:
        c1 = alpha - D * alpha**2 / 2
        bound = (delta + N * D * alpha**2 / 2 * sigma2 / m) / (c1 * N)
    bound = sp.simplify(bound.subs(c, sp.Rational(1, 2)))
    A = sp.simplify(sp.diff(bound, delta) * N / D)
    B = sp.simplify(sp.diff(bound, sigma2) * m)
    return sp.nsimplify(A), sp.nsimplify(B)


def stationarity_bound(D: float, gap: float, sigma2: float, N: int, m: float, projected: bool = True) -> float:
    r"""The corrected Thm 1 bound :math:`A D \Delta / N + B \sigma^2 / m` (``m = inf`` for full batch)."""
    A, B = bound_coefficients(projected)
    floor = 0.0 if m == float("inf") else float(B) * sigma2 / m
    return float(A) * D * gap / N + floor
