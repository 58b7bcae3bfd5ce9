r"""FPP Prop. 2, derived symbolically: the KKT equations of (12) and (10) coincide (scalar RNN, n ≤ 3).

Paper: ``fpp-explicit-state-variables.md`` App. B.2 (Prop. 2, Lemma 1, eq. (13)-(18)).
For a scalar state and n transitions,

.. math::
    E(\theta, s_0) = \sum_{i=1}^n \ell(S_i; y_i),\quad S_0 = s_0,\ S_i = f(S_{i-1}, o_i)    \qquad (10)\\
    \mathcal{L}(\theta, s_{0:n}, \lambda) = \sum_{i=1}^n \ell(f(s_{i-1}, o_i); y_i)
        - \lambda_i\,(f(s_{i-1}, o_i) - s_i)                                                  \qquad (16)

Prop. 2 says: on the feasible set :math:`s_i = S_i`, the state equations
:math:`\partial\mathcal{L}/\partial s_j = 0` (j = 1..n) determine the multipliers
uniquely -- they are Lemma 1's :math:`\lambda_j = -\sum_{i=j}^{n-1}\ell'_{i+1}\prod_{l=j}^{i} f_s(s_l)`
-- and then :math:`\partial\mathcal{L}/\partial q = \partial E/\partial q` for every
parameter q and for :math:`s_0`. So (W, β, s₀) is a KKT point of (10) iff
(W, β, S, λ) is one of (12).

Two instances are derived:

* ``generic``: f(s, o; w) and ℓ(z, y; β) are arbitrary differentiable functions
  (sympy functions whose partial derivatives are the opaque functions
  ``f_s, f_o, f_w, ell_z, ell_y, ell_beta``), so the identity is shown for every
  smooth scalar cell and loss, not one example;
* ``elman``: :math:`f = \tanh(w s + u o + b)`, :math:`\ell = \tfrac12(v z + c - y)^2` --
  the toolkit's ``ElmanCell(1, 1, "tanh")`` + ``LinearReadout(1, 1)`` +
  ``SquaredError`` (the tests evaluate these expressions and compare them with
  the numerical KKT quantities of :mod:`verify.fpp.kkt`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp

from verify.errors import InvalidArgument

__all__ = ["KKTSystem", "kkt_system", "prop2_residuals", "verify_prop2"]

KINDS = ("generic", "elman")


class _fs(sp.Function):  # type: ignore[misc]
    """∂f/∂s (opaque)."""


class _fo(sp.Function):  # type: ignore[misc]
    """∂f/∂o (opaque)."""


class _fw(sp.Function):  # type: ignore[misc]
    """∂f/∂w (opaque)."""


class _f(sp.Function):  # type: ignore[misc]
    """A generic differentiable scalar transition f(s, o, w)."""

    def fdiff(self, argindex: int = 1) -> Any:
        return (_fs, _fo, _fw)[argindex - 1](*self.args)


class _lz(sp.Function):  # type: ignore[misc]
    """∂ℓ/∂z (opaque)."""


class _ly(sp.Function):  # type: ignore[misc]
    """∂ℓ/∂y (opaque)."""


class _lb(sp.Function):  # type: ignore[misc]
    """∂ℓ/∂β (opaque)."""


class _ell(sp.Function):  # type: ignore[misc]
    """A generic differentiable scalar loss ℓ(z, y, β) of the prediction state z."""

    def fdiff(self, argindex: int = 1) -> Any:
        return (_lz, _ly, _lb)[argindex - 1](*self.args)


@dataclass(frozen=True)
class KKTSystem:
    """The symbols and both KKT systems of one instance (see the module docstring)."""

    n: int
    kind: str
    params: tuple[sp.Symbol, ...]
    s: tuple[sp.Symbol, ...]
    o: tuple[sp.Symbol, ...]
    y: tuple[sp.Symbol, ...]
    lam: tuple[sp.Symbol, ...]
    rollout: tuple[sp.Expr, ...]
    E: sp.Expr
    lagrangian: sp.Expr
    kkt10: tuple[sp.Expr, ...]  # ∂E/∂q for q in params, then ∂E/∂s_0
    kkt12_params: tuple[sp.Expr, ...]  # ∂L/∂q for q in params, then ∂L/∂s_0
    kkt12_states: tuple[sp.Expr, ...]  # ∂L/∂s_j, j = 1..n
    constraints: tuple[sp.Expr, ...]  # h_i = f(s_{i-1}, o_i) - s_i
    lemma1: tuple[sp.Expr, ...]  # λ_1..λ_n of Lemma 1 in terms of s_j

    def f(self, s: sp.Expr, o: sp.Expr) -> sp.Expr:
        return _transition(self.kind, self.params, s, o)

    def feasible(self, expr: sp.Expr) -> sp.Expr:
        """Substitute the constraints s_i = S_i(s_0) (i = n..1)."""
        out = expr
        for i in range(self.n, 0, -1):
            out = out.subs(self.s[i], self.rollout[i])
        return out


def _transition(kind: str, params: tuple[sp.Symbol, ...], s: sp.Expr, o: sp.Expr) -> sp.Expr:
    if kind == "generic":
        return _f(s, o, params[0])
    w, u, b = params[:3]
    return sp.tanh(w * s + u * o + b)


def _loss(kind: str, params: tuple[sp.Symbol, ...], z: sp.Expr, y: sp.Expr) -> sp.Expr:
    if kind == "generic":
        return _ell(z, y, params[1])
    v, c = params[3:5]
    return (v * z + c - y) ** 2 / 2


@lru_cache(maxsize=16)
def kkt_system(n: int, kind: str = "elman") -> KKTSystem:
    r"""Build E (eq. (10)), the Lagrangian (eq. (16)), both KKT systems and Lemma 1's multipliers."""
    if not (isinstance(n, int) and 1 <= n <= 6):
        raise InvalidArgument("n", n, "n must be an integer in [1, 6] (symbolic growth)")
    if kind not in KINDS:
        raise InvalidArgument("kind", kind, f"kind must be one of {KINDS}")
    params: tuple[sp.Symbol, ...] = sp.symbols("w beta") if kind == "generic" else sp.symbols("w u b v c")
    s = sp.symbols(f"s0:{n + 1}")
    o = sp.symbols(f"o1:{n + 1}")
    y = sp.symbols(f"y1:{n + 1}")
    lam = sp.symbols(f"lambda1:{n + 1}")
    rollout = [s[0]]
    for i in range(n):
        rollout.append(_transition(kind, params, rollout[-1], o[i]))
    E = sp.Add(*[_loss(kind, params, rollout[i + 1], y[i]) for i in range(n)])  # eq. (10)
    pred = [_transition(kind, params, s[i], o[i]) for i in range(n)]
    lagr = sp.Add(*[_loss(kind, params, pred[i], y[i]) - lam[i] * (pred[i] - s[i + 1]) for i in range(n)])  # (16)
    qs = (*params, s[0])
    kkt10 = tuple(sp.diff(E, q) for q in qs)  # eq. (13)-(15)
    kkt12_params = tuple(sp.diff(lagr, q) for q in qs)  # eq. (17) and the j = 0 row of (18)
    kkt12_states = tuple(sp.diff(lagr, s[j]) for j in range(1, n + 1))  # eq. (18), j = 1..n
    constraints = tuple(pred[i] - s[i + 1] for i in range(n))
    # Lemma 1: λ_j = −Σ_{i=j}^{n−1} ℓ'_{i+1}(f(s_i)) Π_{l=j}^{i} ∂f(s_l, o_{l+1})/∂s_l
    z = sp.Symbol("z")
    lemma1 = []
    for j in range(1, n + 1):
        total = sp.Integer(0)
        for i in range(j, n):
            dl = sp.diff(_loss(kind, params, z, y[i]), z).subs(z, pred[i])
            prod = sp.Integer(1)
            for l in range(j, i + 1):
                prod *= sp.diff(_transition(kind, params, z, o[l]), z).subs(z, s[l])
            total += dl * prod
        lemma1.append(-total)
    return KKTSystem(
        n, kind, params, s, o, y, lam, tuple(rollout), E, lagr, kkt10, kkt12_params, kkt12_states, constraints,
        tuple(lemma1),
    )  # fmt: skip


def _zero(expr: sp.Expr) -> sp.Expr:
    return sp.simplify(sp.expand(expr.doit()))


@lru_cache(maxsize=16)
def prop2_residuals(n: int, kind: str = "elman") -> dict[str, tuple[sp.Expr, ...]]:
    r"""Every difference Prop. 2 says is identically zero, simplified.

    * ``multipliers``: (solution of :math:`\partial\mathcal{L}/\partial s_j = 0`, j=1..n) − Lemma 1;
    * ``params``: :math:`\partial\mathcal{L}/\partial q - \partial E/\partial q` on the feasible set with
      those multipliers, for each parameter q and for :math:`s_0`;
    * ``constraints``: the constraints on the feasible set.
    """
    sysm = kkt_system(n, kind)
    sols = sp.solve(list(sysm.kkt12_states), list(sysm.lam), dict=True)
    if len(sols) != 1:
        raise ArithmeticError(f"state equations do not determine the multipliers uniquely: {sols}")
    sol = sols[0]
    mult = tuple(_zero(sysm.feasible(sol[sysm.lam[j]] - sysm.lemma1[j])) for j in range(n))
    par = tuple(_zero(sysm.feasible(a.subs(sol)) - b) for a, b in zip(sysm.kkt12_params, sysm.kkt10, strict=True))
    cons = tuple(_zero(sysm.feasible(h)) for h in sysm.constraints)
    return {"multipliers": mult, "params": par, "constraints": cons}


def verify_prop2(n: int, kind: str = "elman") -> bool:
    """True when every residual of :func:`prop2_residuals` simplifies to 0.

    FPP Prop. 2 (the KKT systems of (12) and (10) coincide).
    """
    res = prop2_residuals(n, kind)
    return all(r == 0 for group in res.values() for r in group)
