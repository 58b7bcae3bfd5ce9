r"""Prop. 3 and Prop. 4 of Miller & Hardt ("Stable Recurrent Models", §5, App. A.4): what goes wrong without stability.

* Prop. 3: for :math:`h_t = 2h_{t-1} + x_t` (x_1 = 1, then 0) the truncation error
  :math:`|y_t - y^k_t| = 2^{t-1}` grows without bound for every k (:func:`prop3_errors`, against
  the sympy closed form :func:`theory.truncation.prop3_truncation_error`);
* Prop. 4: gradient descent on :math:`h_t = ah_{t-1} + x_t`, (x_t, y_t) = (1, 1), from outside the
  stable set diverges (:func:`prop4_gd` in mpmath; eq. (6) checked against sympy and autograd).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import mpmath
import sympy as sp
import torch

from theory import truncation as tt
from verify.model.cells import LinearCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem
from verify.oracles.bptt import truncated_model_states
from verify.truncation.fixtures import prop3_problem, scalar_theta
from verify.truncation.instances import final_gradient

__all__ = [
    "diverges",
    "log10_abs",
    "prop3_errors",
    "prop4_autograd_error",
    "prop4_gd",
    "prop4_grad",
    "prop4_symbolic_ok",
    "ungated_lemma1_bound",
]


def prop3_errors(T: int = 30, ks: Sequence[int] = (1, 3, 8)) -> tuple[list[dict[str, Any]], bool]:
    """|y_t − y^k_t| of Prop. 3's a = 2 system for each k and t = k+1..T, with the closed form 2^(t−1).

    Returns the rows (k, t, measured error, closed form) and whether every error equals its closed form exactly.
    """
    P, th = prop3_problem(2.0, T)
    rows: list[dict[str, Any]] = []
    exact = True
    with torch.no_grad():
        y = P.output(th, P.rollout(th)[1:])[:, 0]
        for k in ks:
            yk = P.output(th, truncated_model_states(P, th, k))[:, 0]
            err = (y - yk).abs()
            want = [float(tt.prop3_truncation_error(2, 1, t)) for t in range(k + 1, T + 1)]
            got = err[k:].tolist()
            exact = exact and got == want
            rows.append({"k": k, "t": list(range(k + 1, T + 1)), "error": got, "closed_form": want})
    return rows, exact


def ungated_lemma1_bound(lam: float = 2, L_x: float = 1, B_x: float = 1, k: int = 3) -> float:
    """Lemma 1's formula evaluated with the premise ignored (λ ≥ 1 gives a negative "bound")."""
    return float(tt.lemma1_bound().subs({tt.lam: lam, tt.L_x: L_x, tt.B_x: B_x, tt.k: k}))


def prop4_grad(a: Any, T: int) -> Any:
    """Eq. (6) evaluated (mpmath or float): d/da ½(h_T − 1)², h_T = Σ_{i<T} a^i."""
    h = sum(a**i for i in range(T))
    dh = sum(i * a ** (i - 1) for i in range(1, T))
    return (h - 1) * dh


#: digits of the Prop. 4 descent in mpmath (its iterates overflow float64)
MP_DPS = 30


def prop4_gd(a0: float, T: int, N: int, project: float | None) -> tuple[list[Any], list[Any]]:
    """GD with α_i = 1/i on a (b = 1), in mpmath (unbounded exponent range); optional projection onto [−λ, λ].

    Computed at :data:`MP_DPS` digits inside ``mpmath.workdps`` (the process-wide precision is left as it was)."""
    with mpmath.workdps(MP_DPS):
        a = mpmath.mpf(a0)
        iters, grads = [a], []
        for i in range(1, N + 1):
            g = prop4_grad(a, T)
            grads.append(g)
            a = a - g / i
            if project is not None:
                a = max(min(a, mpmath.mpf(project)), -mpmath.mpf(project))
            iters.append(a)
    return iters, grads


def diverges(iters: Sequence[Any], grads: Sequence[Any]) -> bool:
    """|a_i| and |∇| grow without bound: |a_i| increasing from step 2 on and both beyond 10^100 at the end."""
    with mpmath.workdps(MP_DPS):
        mags = [abs(x) for x in iters]
        return bool(
            all(b > a for a, b in itertools.pairwise(mags[1:]))
            and mpmath.log10(mags[-1]) > 100
            and mpmath.log10(abs(grads[-1])) > 100
        )


def log10_abs(values: Sequence[Any]) -> list[float]:
    """log10 |x| of mpmath numbers, as floats (the iterates overflow float64)."""
    with mpmath.workdps(MP_DPS):
        return [float(mpmath.log10(abs(x))) for x in values]


def prop4_symbolic_ok(Ts: Sequence[int] = range(2, 9)) -> bool:
    """Eq. (6) as printed equals sympy's direct derivative of the loss at step T, for each T of ``Ts``."""
    return all(sp.simplify(tt.prop4_gradient_closed_form(n) - tt.prop4_gradient(n)) == 0 for n in Ts)


def prop4_autograd_error(T: int = 10, avs: Sequence[float] = (-0.5, 0.3, 0.9, 1.2)) -> float:
    """Largest relative error of autograd's d p_T/da against eq. (6) (exact at the float a) over ``avs``."""
    P = Problem(
        LinearCell(1, 1),
        LinearReadout(1, 1),
        SquaredError(),
        torch.ones(T, 1, dtype=torch.float64),
        torch.ones(T, 1, dtype=torch.float64),
        torch.zeros(1, dtype=torch.float64),
    )
    num_err = 0.0
    for av in avs:
        th = scalar_theta(P, av, 1.0, 1.0)
        g = float(final_gradient(P, th)[P.layout["cell.W"].slice][0])
        ref = float(tt.prop4_gradient_closed_form(T, sp.Rational(av)))  # exact at the float av
        num_err = max(num_err, abs(g - ref) / max(abs(ref), 1e-300))
    return num_err
