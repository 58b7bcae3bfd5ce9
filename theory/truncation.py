r"""Miller & Hardt (2018) truncation bounds, derived with sympy from the proofs' own terms.

Source: ``stable-recurrent-models-miller-hardt.md`` (Lemma 1, Lemma 2, Lemma 3,
Lemma 4, Prop. 2, Prop. 3, Prop. 4 and their proofs in App. A). Symbols follow the
paper: λ the contraction factor (eq. (2)), :math:`L_x` the Lipschitz constant of
:math:`\phi_w` in x, :math:`B_x` the input bound, :math:`L_w` the Lipschitz constant
in w (:math:`\|\partial h_t/\partial w\| \le L_w`), :math:`L_p, \beta_p` the
Lipschitz and smoothness constants of the loss p in the state, and the four
smoothness constants :math:`\beta_{ww}, \beta_{wh}, \beta_{hw}, \beta_{hh}` of App. A.2.

Every bound is assembled from the proof's steps: the geometric sums that the
proofs bound are summed here by sympy (:func:`sympy.summation`, with the
convergence condition 0 < λ < 1 checked), never typed in. Numerical versions for
the checks in ``verify/`` are produced by :func:`sympy.lambdify`.

Errata found while re-deriving (they are the reason the checks use the corrected
bound; the printed one is kept as :func:`lemma2_terms` ``(printed=True)`` so that it
can be shown to fail):

* Lemma 2 is stated with "=" but the proof establishes "≤".
* Step (c) of the proof of Lemma 2 prints :math:`\beta_{hh}\|h_{T-1} - h_{T-1}\|`;
  it must be :math:`\beta_{hh}\|h_{T-1} - h^k_{T-1}\|`.
* Off by one in (b) and (c): the partial derivative :math:`\partial h_t/\partial w`
  is taken at :math:`h_{t-1}`, so (b) is :math:`\sum_t \lambda^{T-t}\beta_{wh}
  \|h_{t-1} - h^k_{t-1}\|`, and :math:`\|h_{t-1} - h^k_{t-1}\| \le \lambda^{t-1-(T-k)}
  L_x B_x/(1-\lambda)`. Each of the k terms is therefore :math:`\lambda^{k-1}`, not
  :math:`\lambda^{k}` (the same happens in (c), whose chain of k Jacobians has only
  k − 1 factors after the first difference). The printed bound is violated by an
  explicit scalar linear system (``verify.truncation.fixtures.extremal_linear_problem``); the corrected
  :math:`\gamma` carries a factor :math:`1/\lambda` on the (b) and (c) parts.
* The intermediate line of the proof of Lemma 3 that carries
  :math:`\beta_{hh} L_w\|w-w'\|/(1-\lambda)^2` should carry :math:`(T-t)/(1-\lambda)`;
  the final :math:`(1-\lambda)^{-3}` term is right.
* Prop. 4: :math:`h_t = \sum_{i=0}^{t-1} a^t b` should read :math:`a^i b`; the
  sequence length is called both L and T. Eq. (6) is right (re-derived below).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, fields
from functools import lru_cache

import sympy as sp

from verify.errors import DerivationError, InvalidArgument

__all__ = [
    "SYMBOLS",
    "TruncationConstants",
    "beta",
    "gamma",
    "gradient_bound",
    "lemma1_bound",
    "lemma1_state_norm",
    "lemma2_bound",
    "lemma2_bound_weakened",
    "lemma2_gamma",
    "lemma2_gamma_terms",
    "lemma2_terms",
    "lemma3_beta",
    "lemma4_bound",
    "prop2_bound",
    "prop2_bound_sum",
    "prop2_recurrence_bound",
    "prop3_full_state",
    "prop3_truncation_error",
    "prop4_gradient",
    "prop4_gradient_closed_form",
    "state_bound",
    "tbptt_bound",
    "tbptt_bound_expr",
    "weaken_one_minus_lambda",
]

# --------------------------------------------------------------------------- symbols
lam = sp.Symbol("lambda", positive=True)
k = sp.Symbol("k", positive=True, integer=True)
L_x, B_x, L_p, L_w = sp.symbols("L_x B_x L_p L_w", positive=True)
beta_p, beta_wh, beta_hh, beta_hw, beta_ww = sp.symbols("beta_p beta_wh beta_hh beta_hw beta_ww", nonnegative=True)
alpha, N = sp.symbols("alpha N", positive=True)
gamma_s, beta_s = sp.symbols("gamma beta", positive=True)
_T, _t, _i, _j = sp.symbols("T t i j", integer=True, positive=True)

#: the constants of the truncation lemmas, in the order of :class:`TruncationConstants`
SYMBOLS: tuple[sp.Symbol, ...] = (lam, L_x, B_x, L_p, L_w, beta_p, beta_wh, beta_hh, beta_hw, beta_ww)


@dataclass(frozen=True)
class TruncationConstants:
    r"""Numerical values of the constants of Lemmas 1–3 for one instance (see module docstring).

    ``lam`` is the contraction factor (< 1 for the bounds to apply), ``L_x``/``B_x``
    the input Lipschitz constant and bound, ``L_p``/``beta_p`` the loss's Lipschitz and
    smoothness constants in the state on the reachable set, ``L_w`` the Lipschitz
    constant in the weights, and ``beta_wh, beta_hh, beta_hw, beta_ww`` the smoothness
    constants of App. A.2.
    """

    lam: float
    L_x: float
    B_x: float
    L_p: float
    L_w: float
    beta_p: float
    beta_wh: float
    beta_hh: float
    beta_hw: float
    beta_ww: float

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or not math.isfinite(float(v)) or float(v) < 0:
                raise InvalidArgument(f"TruncationConstants.{f.name}", v, "must be a finite number >= 0")
        if not (0.0 < float(self.lam) < 1.0):
            raise InvalidArgument(
                "TruncationConstants.lam", self.lam, "the bounds need a contraction factor 0 < lam < 1"
            )

    def values(self) -> tuple[float, ...]:
        return tuple(float(v) for v in astuple(self))

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


# ------------------------------------------------------------- sympy sum helpers
def _converged(expr: sp.Expr) -> sp.Expr:
    """The value of a summation whose convergence needs |λ| < 1 (checked, then the branch is taken)."""
    expr = sp.piecewise_fold(expr)
    if isinstance(expr, sp.Piecewise):
        for value, cond in expr.args:
            if cond is sp.true:
                if value.has(sp.Sum):
                    raise DerivationError(f"sum did not converge in closed form: {expr}")
                return value
            # the condition must hold for every λ in (0, 1): test interior points
            if all(bool(cond.subs(lam, sp.Rational(q, 10))) for q in range(1, 10)):
                return value
        raise DerivationError(f"no branch of {expr} is valid for 0 < lambda < 1")
    if expr.has(sp.Sum):
        raise DerivationError(f"sum did not evaluate in closed form: {expr}")
    return expr


def _sum(term: sp.Expr, var: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    return _converged(sp.summation(term, (var, lo, hi)))


def _nonnegative_on_unit_interval(expr: sp.Expr) -> bool:
    """True when ``expr`` (positive symbols, 0 < λ < 1) is provably ≥ 0.

    Substitutes λ = 1/(1+r), r > 0, and checks that the expanded numerator and
    denominator each consist of terms of one sign (sums of products of positive symbols).
    """
    r = sp.Symbol("r", positive=True)
    num, den = sp.fraction(sp.together(sp.expand(expr.subs(lam, 1 / (1 + r)))))
    signs = []
    for part in (sp.expand(num), sp.expand(den)):
        terms = sp.Add.make_args(part)
        if all(t.is_nonnegative for t in terms):
            signs.append(1)
        elif all(t.is_nonpositive for t in terms):
            signs.append(-1)
        else:
            return False
    return signs[0] == signs[1] or num == 0


def _geometric_tail(start: sp.Expr) -> sp.Expr:
    r""":math:`\sum_{j \ge \text{start}} \lambda^j` for 0 < λ < 1 (upper bound of every finite sum of the proofs)."""
    return _sum(lam**_j, _j, start, sp.oo)


# -------------------------------------------------------------------- Lemma 1 / 4
@lru_cache(maxsize=1)
def lemma1_state_norm() -> sp.Expr:
    r"""Proof of Lemma 1, first display: :math:`\|h_t\| \le \sum_{i\ge0}\lambda^i L_x B_x = L_x B_x/(1-\lambda)`.

    From :math:`\|h_t\| \le \lambda\|h_{t-1}\| + L_x\|x_t\|` (contraction (2), Lipschitz in x,
    :math:`\phi_w(0,0) = 0`, :math:`h_0 = 0`).
    """
    return sp.simplify(L_x * B_x * _geometric_tail(0))


@lru_cache(maxsize=1)
def lemma1_bound() -> sp.Expr:
    r"""Lemma 1: :math:`\|h_t - h_t^k\| \le \lambda^k L_x B_x/(1-\lambda)`.

    .. math:: \|h_t - h^k_t\| \le \lambda\|h_{t-1} - h^k_{t-1}\| \le \dots \le \lambda^k\|h_{t-k}\|

    (k applications of the contraction (2) to the truncated model eq. (3), which
    restarts from :math:`h^k_{t-k} = 0`), then the state norm bound.
    """
    return lam**k * lemma1_state_norm()  # Lemma 1


@lru_cache(maxsize=1)
def lemma4_bound() -> sp.Expr:
    r"""Lemma 4: :math:`\|h_t(w) - h_t(w')\| \le L_w\|w-w'\|/(1-\lambda)` (per unit :math:`\|w-w'\|`)."""
    return sp.simplify(L_w * _geometric_tail(0))  # Lemma 4


# ------------------------------------------------------------------------ Lemma 2
def _state_gap(s: sp.Expr) -> sp.Expr:
    r"""Lemma 1 inside the window: :math:`\|h_s - h^k_s\| \le \lambda^{s-(T-k)} L_x B_x/(1-\lambda)`, s ≥ T − k."""
    return lam ** (s - (_T - k)) * lemma1_state_norm()


@lru_cache(maxsize=2)
def lemma2_terms(printed: bool = False) -> dict[str, sp.Expr]:
    r"""The four terms of the proof of Lemma 2 (App. A.2.1), each summed by sympy.

    .. math::
        \|\nabla_w p_T - \nabla_w p^k_T\| \le
        \underbrace{L_pL_w\sum_{t\le T-k}\lambda^{T-t}}_{\text{long-term}}
        + \underbrace{\sum_{t>T-k}\beta_p\|h_T-h^k_T\|\lambda^{T-t}L_w}_{(a)}
        + \underbrace{\sum_{t>T-k}L_p\lambda^{T-t}\beta_{wh}\|h_{t-1}-h^k_{t-1}\|}_{(b)}
        + \underbrace{L_pL_w\sum_{t>T-k}\Big\|\frac{\partial h_T}{\partial h_t}
          - \frac{\partial h^k_T}{\partial h^k_t}\Big\|}_{(c)}

    with, for (c), :math:`\|\partial h_T/\partial h_t - \partial h^k_T/\partial h^k_t\| \le
    \sum_{i=t}^{T-1}\beta_{hh}\lambda^{T-t-1}\|h_i - h^k_i\|` (peeling one Jacobian at
    a time). Finite sums that run towards the start of the sequence are bounded by
    their infinite tails, as in the paper.

    ``printed=True`` reproduces the paper's indices (:math:`\|h_t - h^k_t\|` in (b) and
    the exponent of (c) as printed), which give :math:`k\lambda^k` where the
    correct derivation gives :math:`k\lambda^{k-1}`; see the module docstring.
    """
    Bh = lemma1_state_norm()
    # long-term components: sum_{t=1}^{T-k} lam^(T-t) <= sum_{j>=k} lam^j
    long_term = L_p * L_w * _geometric_tail(k)  # Lemma 2 proof, first term
    # (a): ||grad p(h_T) - grad p(h^k_T)|| <= beta_p lam^k Bh; sum_{t>T-k} lam^(T-t) L_w <= L_w sum_{j>=0} lam^j
    term_a = beta_p * lam**k * Bh * L_w * _geometric_tail(0)  # (a)
    # (b): sum over the k window steps of lam^(T-t) beta_wh ||h_{t-1} - h^k_{t-1}||
    gap_b = _state_gap(_t) if printed else _state_gap(_t - 1)  # paper: ||h_t - h_t^k||
    term_b = L_p * beta_wh * sp.powsimp(_sum(sp.powsimp(lam ** (_T - _t) * gap_b), _t, _T - k + 1, _T))  # (b)
    # (c): sum_{i=t}^{T-1} beta_hh lam^(T-t-1) ||h_i - h^k_i||, bounded by its tail, then summed over t
    if printed:
        # as printed: lam^k beta_hh L_x B_x/(1-lam)^2 for every t (exponent k)
        inner = beta_hh * lam**k * Bh * _geometric_tail(0)
    else:
        inner = beta_hh * sp.powsimp(lam ** (_T - _t - 1) * _state_gap(_t)) * _geometric_tail(0)
    term_c = L_p * L_w * sp.powsimp(_sum(sp.powsimp(inner), _t, _T - k + 1, _T))  # (c)
    out = {"long_term": long_term, "a": term_a, "b": term_b, "c": term_c}
    return {name: sp.factor(sp.powsimp(expr)) for name, expr in out.items()}


@lru_cache(maxsize=2)
def lemma2_bound(printed: bool = False) -> sp.Expr:
    """The proof's bound on :math:`\\|\\nabla_w p_T - \\nabla_w p_T^k\\|` as a function of k (sum of the four terms)."""
    return sum(lemma2_terms(printed).values(), sp.Integer(0))


def _pole_order_at_one(expr: sp.Expr) -> int:
    """The order p of the pole of ``expr`` at λ = 1 (``expr`` = C λ^a/(1-λ)^p with C free of λ)."""
    num, den = sp.fraction(sp.factor(expr))
    p = 0
    for fac, mult in sp.factor_list(den, lam)[1]:
        if sp.degree(fac, lam) == 1 and fac.subs(lam, 1) == 0:
            p += int(mult)
    for fac, _ in sp.factor_list(num, lam)[1]:
        if fac.subs(lam, 1) == 0:
            raise ArithmeticError(f"{expr} vanishes at lambda = 1")
    return p


def weaken_one_minus_lambda(term: sp.Expr) -> sp.Expr:
    r"""A deliberately wrong "bound": one proof term with :math:`(1-\lambda)^{-2}` replaced by :math:`(1-\lambda)^{-1}`.

    ``term`` must be one term of a proof (a monomial in the constants times powers of
    λ and :math:`1-\lambda`); terms with a pole of another order are returned unchanged.
    """
    return sp.factor(term * (1 - lam)) if _pole_order_at_one(term) == 2 else term


@lru_cache(maxsize=4)
def lemma2_gamma_terms(printed: bool = False, weakened: bool = False) -> dict[str, sp.Expr]:
    r"""The four parts of :math:`\gamma` (one per proof term): term/(kλ^k) at k = 1.

    Each term of :func:`lemma2_terms` divided by :math:`k\lambda^k` is either
    :math:`A/k` (long-term, (a)) or a constant ((b), (c)), with A ≥ 0, so its largest
    value over k ≥ 1 is at k = 1 (sympy checks the form and the sign).
    """
    out: dict[str, sp.Expr] = {}
    for name, term in lemma2_terms(printed).items():
        q = sp.expand(sp.simplify(sp.powsimp(term / lam**k, force=True)))  # = A + B k
        A, B = q.coeff(k, 0), q.coeff(k, 1)
        ratio = A / k + B
        if sp.expand(q - A - B * k) != 0:
            raise ArithmeticError(f"{name}/lambda^k is not affine in k: {q}")
        for part in (A, B):
            if part.has(k) or not _nonnegative_on_unit_interval(part):
                raise ArithmeticError(f"{name}/(k lam^k) is not of the form A/k + B with A, B >= 0: {ratio}")
        g = sp.factor(A + B)
        out[name] = weaken_one_minus_lambda(g) if weakened else g
    return out


@lru_cache(maxsize=4)
def lemma2_gamma(printed: bool = False, weakened: bool = False) -> sp.Expr:
    r""":math:`\gamma` of Lemma 2: a k-free constant with bound(k) ≤ γ k λ^k for all k ≥ 1.

    The sum of :func:`lemma2_gamma_terms`:

    .. math::
        \gamma = \frac{L_pL_w}{1-\lambda} + \frac{\beta_pL_wL_xB_x}{(1-\lambda)^2}
               + \frac{L_p\beta_{wh}L_xB_x}{\lambda(1-\lambda)}
               + \frac{L_pL_w\beta_{hh}L_xB_x}{\lambda(1-\lambda)^2}
               = O\!\left(\frac{B_x}{(1-\lambda)^2}\right).

    (The paper's :math:`\gamma` has no :math:`1/\lambda`: see the module docstring.)
    ``weakened=True`` replaces :math:`(1-\lambda)^{-2}` by :math:`(1-\lambda)^{-1}` in
    each part (a deliberately wrong bound).
    """
    return sum(lemma2_gamma_terms(printed, weakened).values(), sp.Integer(0))


def lemma2_bound_weakened() -> sp.Expr:
    r"""The proof's k-dependent bound with :math:`(1-\lambda)^{-2}` replaced by :math:`(1-\lambda)^{-1}` per term."""
    return sum((weaken_one_minus_lambda(t) for t in lemma2_terms().values()), sp.Integer(0))


@lru_cache(maxsize=1)
def tbptt_bound_expr() -> sp.Expr:
    r"""Truncated BPTT on the full model (Lemma 2's long-term part alone).

    Forward states are exact, so only the components :math:`t \le T-k` are dropped:

    .. math:: \|\nabla_w p_T - \hat g^k_T\| \le \lambda^k\frac{L_pL_w}{1-\lambda} \;(\le \gamma k\lambda^k).
    """
    return lemma2_terms()["long_term"]


# ------------------------------------------------------------------------ Lemma 3
@lru_cache(maxsize=1)
def lemma3_beta() -> sp.Expr:
    r""":math:`\beta` of Lemma 3 (App. A.2.2): :math:`\|\nabla p_T(w) - \nabla p_T(w')\| \le \beta\|w-w'\|`.

    .. math::
        \beta = \frac{\beta_pL_w^2}{(1-\lambda)^2} + \frac{L_p\beta_{wh}L_w}{(1-\lambda)^2}
              + \frac{L_p\beta_{ww}}{1-\lambda} + \frac{L_pL_w\beta_{hw}}{(1-\lambda)^2}
              + \frac{L_pL_w^2\beta_{hh}}{(1-\lambda)^3} = O((1-\lambda)^{-3}),

    from Lemma 4 (:math:`\|h_t - h'_t\| \le L_w\|w-w'\|/(1-\lambda)`),
    :math:`\sum_t\lambda^{T-t} \le 1/(1-\lambda)` and
    :math:`\sum_t (T-t)\lambda^{T-t-1} \le \sum_{j\ge1} j\lambda^{j-1} = 1/(1-\lambda)^2`.
    """
    geo = _geometric_tail(0)
    lemma4 = lemma4_bound()  # per unit ||w - w'||
    jsum = _sum(_j * lam ** (_j - 1), _j, 1, sp.oo)  # sum_j j lam^(j-1)
    first = beta_p * lemma4 * L_w * geo  # sum_t beta_p ||h_T - h'_T|| lam^(T-t) L_w
    second = L_p * geo * (beta_wh * lemma4 + beta_ww)  # L_p sum_t lam^(T-t)(beta_wh ||h-h'|| + beta_ww)
    third = L_p * L_w * jsum * (beta_hw + beta_hh * lemma4)  # (b): peeled Jacobian differences
    return sp.simplify(first + second + third)  # Lemma 3


# ------------------------------------------------------------------------ Prop. 2
@lru_cache(maxsize=1)
def _prop2_derivation() -> tuple[sp.Expr, sp.Expr]:
    r"""The unwinding of the proof of Prop. 2 (App. A.2.3), returning (sharper sum form, printed form).

    :math:`\delta_{i} \le e^{\alpha_i\beta}\delta_{i-1} + \alpha_i\gamma k\lambda^k`,
    :math:`\alpha_i = \alpha/i`; :math:`\sum_{j=i+1}^N 1/j \le \int_i^N dx/x = \log(N/i)`.
    """
    x, i = sp.symbols("x i", positive=True)
    harmonic_tail = sp.integrate(1 / x, (x, i, N))  # sum_{j=i+1}^N 1/j <= log(N/i)
    growth = sp.simplify(sp.exp(alpha * beta_s * sp.expand_log(harmonic_tail, force=True)))
    term = sp.powsimp(sp.simplify(growth * alpha * gamma_s * k * lam**k / i), force=True)
    ii = sp.Symbol("i", integer=True, positive=True)
    summed = sp.Sum(term.subs(i, ii), (ii, 1, N))  # = alpha gamma k lam^k N^(alpha beta) sum_i i^-(alpha beta + 1)
    printed = alpha * gamma_s * k * lam**k * N ** (alpha * beta_s + 1)  # each of the N terms i^-(ab+1) <= 1
    return summed, printed


def prop2_bound_sum() -> sp.Expr:
    r"""Prop. 2 before the last loosening of its proof.

    .. math:: \alpha\gamma k\lambda^k N^{\alpha\beta}\sum_{i=1}^N i^{-(\alpha\beta+1)}
    """
    return _prop2_derivation()[0]


def prop2_bound_expr() -> sp.Expr:
    r"""Prop. 2 as printed: :math:`\|w^N_{recurr} - w^N_{trunc}\| \le \alpha\gamma k\lambda^k N^{\alpha\beta+1}`."""
    return _prop2_derivation()[1]


# ---------------------------------------------------------------- Props. 3 and 4
def prop3_full_state(a: sp.Expr | int = 2, b: sp.Expr | int = 1, t: int | None = None) -> sp.Expr:
    r"""Prop. 3's system :math:`h_t = a h_{t-1} + b x_t`, :math:`x_1 = 1`, then 0 (App. A.4).

    Solved by sympy ``rsolve``: :math:`h_t = b a^{t-1}`.

    A sympy expression in the time symbol ``t``, or its value at ``t``.
    """
    sol = _prop3_solution(sp.sympify(a), sp.sympify(b))
    return sol if t is None else sol.subs(_t, t)


@lru_cache(maxsize=16)
def _prop3_solution(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    h = sp.Function("h")
    return sp.simplify(sp.rsolve(h(_t) - a * h(_t - 1), h(_t), {h(1): b}))


def prop3_truncation_error(a: sp.Expr | int = 2, b: sp.Expr | int = 1, t: int | None = None) -> sp.Expr:
    r""":math:`|y_t - y^k_t|` for t ≥ k + 1 (App. A.4).

    The truncated model never sees :math:`x_1`, so :math:`h^k_t = 0`.
    """
    return sp.Abs(prop3_full_state(a, b, t))


@lru_cache(maxsize=32)
def prop4_gradient(T: int) -> sp.Expr:
    r"""d/da of :math:`\tfrac12(h_T - 1)^2` with :math:`h_T = \sum_{i=0}^{T-1} a^i` (x_t = y_t = 1, b = 1), by sympy."""
    a = sp.Symbol("a")
    h_T = sum((a**i for i in range(T)), sp.Integer(0))
    return sp.expand(sp.diff(sp.Rational(1, 2) * (h_T - 1) ** 2, a))


def prop4_gradient_closed_form(T: int | None = None, a_value: sp.Expr | float | None = None) -> sp.Expr:
    r"""Eq. (6) of App. A.4, the gradient of the loss at step T in a.

    .. math:: \Big(\frac{1-a^T}{1-a} - 1\Big)\Big[\frac{1-a^T}{(1-a)^2} - \frac{Ta^{T-1}}{1-a}\Big]

    In the symbols ``a`` and ``T``; with ``T`` and/or ``a_value`` given, substituted.
    """
    a = sp.Symbol("a")
    expr = ((1 - a**_T) / (1 - a) - 1) * ((1 - a**_T) / (1 - a) ** 2 - _T * a ** (_T - 1) / (1 - a))  # eq. (6)
    if T is not None:
        expr = expr.subs(_T, T)
    if a_value is not None:
        expr = expr.subs(a, a_value)
    return expr


# ------------------------------------------------------------ numerical versions
@lru_cache(maxsize=32)
def _compiled(name: str, printed: bool = False, weakened: bool = False) -> Callable[..., float]:
    exprs: dict[str, Callable[[], sp.Expr]] = {
        "state": lemma1_bound,
        "proof": lambda: lemma2_bound(printed),
        "gamma": lambda: lemma2_gamma(printed, weakened),
        "proof_weakened": lemma2_bound_weakened,
        "tbptt": tbptt_bound_expr,
        "beta": lemma3_beta,
    }
    fn: Callable[..., float] = sp.lambdify((*SYMBOLS, k), exprs[name](), modules="math")
    return fn


def _truncation_length(func: str, k: object, k_: object) -> int:
    """The truncation length k (``k_`` is the pre-0.2 keyword, still accepted with a DeprecationWarning)."""
    if k_ is not None:
        if k is not None:
            raise TypeError(f"{func}() got both k={k!r} and the deprecated k_={k_!r}; pass k only")
        warnings.warn(f"{func}(k_=...) is deprecated; use k=...", DeprecationWarning, stacklevel=3)
        k = k_
    if k is None:
        raise TypeError(f"{func}() missing the truncation length k")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 0:
        raise InvalidArgument("k", k, f"{func}(): the truncation length must be an integer >= 0")
    return int(k)


def state_bound(c: TruncationConstants, k: int | None = None, *, k_: int | None = None) -> float:
    """Lemma 1 evaluated at truncation length k: :math:`\\lambda^k L_xB_x/(1-\\lambda)`."""
    k = _truncation_length("state_bound", k, k_)
    return float(_compiled("state")(*c.values(), k))


def gradient_bound(
    c: TruncationConstants, k: int | None = None, form: str = "proof", *, k_: int | None = None
) -> float:
    r"""Lemma 2 evaluated at truncation length k (``gradient_bound(c, k=10)`` or ``gradient_bound(c, 10)``).

    ``form``: ``"proof"`` (the sum of the proof's four terms, corrected indices),
    ``"gamma"`` (:math:`\gamma k\lambda^k`), ``"printed-proof"`` / ``"printed-gamma"``
    (the paper's indices), ``"weakened-proof"`` / ``"weakened-gamma"``
    (:math:`(1-\lambda)^{-2} \to (1-\lambda)^{-1}`, a deliberately wrong bound).
    """
    forms = {
        "proof": ("proof", False, False),
        "gamma": ("gamma", False, False),
        "printed-proof": ("proof", True, False),
        "printed-gamma": ("gamma", True, False),
        "weakened-proof": ("proof_weakened", False, False),
        "weakened-gamma": ("gamma", False, True),
    }
    if form not in forms:
        raise InvalidArgument("form", form, f"form must be one of {sorted(forms)}")
    k = _truncation_length("gradient_bound", k, k_)
    name, printed, weakened = forms[form]
    val = float(_compiled(name, printed, weakened)(*c.values(), k))
    if name == "gamma":
        return val * k * c.lam**k
    return val


def gamma(c: TruncationConstants, printed: bool = False, weakened: bool = False) -> float:
    """:func:`lemma2_gamma` evaluated (Miller & Hardt Lemma 2)."""
    return float(_compiled("gamma", printed, weakened)(*c.values(), 1))


def tbptt_bound(c: TruncationConstants, k: int | None = None, *, k_: int | None = None) -> float:
    """:func:`tbptt_bound_expr` evaluated: :math:`\\lambda^k L_pL_w/(1-\\lambda)` (Miller & Hardt Lemma 2)."""
    k = _truncation_length("tbptt_bound", k, k_)
    return float(_compiled("tbptt")(*c.values(), k))


def beta(c: TruncationConstants) -> float:
    """:func:`lemma3_beta` evaluated (Miller & Hardt Lemma 3)."""
    return float(_compiled("beta")(*c.values(), 1))


def prop2_bound(
    alpha_: float, gamma_: float, beta_: float, lam_: float, k_: int, N_: int, form: str = "printed"
) -> float:
    r"""Prop. 2 evaluated, in log-safe arithmetic (``inf`` where it overflows a float).

    ``form="printed"``: :math:`\alpha\gamma k\lambda^k N^{\alpha\beta+1}`;
    ``form="sum"``: :math:`\alpha\gamma k\lambda^k N^{\alpha\beta}\sum_{i\le N} i^{-(\alpha\beta+1)}`.
    """
    if form not in ("printed", "sum"):
        raise InvalidArgument("form", form, "form must be 'printed' or 'sum'")
    if gamma_ == 0.0:
        return 0.0  # no truncation error: the weights never separate
    ab = alpha_ * beta_
    log_pref = math.log(alpha_) + math.log(gamma_) + math.log(k_) + k_ * math.log(lam_)
    if form == "printed":
        log_val = log_pref + (ab + 1.0) * math.log(N_)  # Prop. 2
    else:
        # log-sum-exp of sum_i (N/i)^(ab) / i
        logs = [ab * (math.log(N_) - math.log(i)) - math.log(i) for i in range(1, N_ + 1)]
        m = max(logs)
        log_val = log_pref + m + math.log(sum(math.exp(v - m) for v in logs))
    return math.exp(log_val) if log_val < 709.0 else math.inf


def prop2_recurrence_bound(alphas: Sequence[float], beta_: float, gamma_k: float) -> list[float]:
    r"""The proof's recurrence before the α/t-specific steps, for any step sizes.

    :math:`\bar\delta_i = (1+\alpha_i\beta)\bar\delta_{i-1} + \alpha_i\,\gamma k\lambda^k`,
    :math:`\bar\delta_0 = 0`; returns :math:`\bar\delta_1..\bar\delta_N` (``gamma_k`` = γkλ^k).
    """
    out, d = [], 0.0
    for a in alphas:
        d = (1.0 + a * beta_) * d + a * gamma_k
        out.append(d)
    return out
