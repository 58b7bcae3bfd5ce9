r"""Instantiations of the Miller & Hardt constants (§6.1, §6.2, App. A.3.1) and the LSTM condition (Prop. 5).

Source: ``stable-recurrent-models-miller-hardt.md``. ``verify`` measures the norms of a
concrete instance (‖W‖₂, ‖U‖₂, :math:`B_x = \max_t\|x_t\|`, the readout) and this
module turns them into the constants of :class:`theory.truncation.TruncationConstants`.
Nothing here imports ``verify``.

Elman RNN / linear system :math:`h' = \rho(Wh + Ux)` (ρ = identity for §6.1), with
w = the trainable blocks among (W, U) measured in the Euclidean norm of the flat
parameter vector (Frobenius norm of the blocks), :math:`L_\rho = \sup|\rho'|`,
:math:`L_{\rho'} = \sup|\rho''|`:

.. math::
    \lambda = L_\rho\|W\|,\quad L_x = L_\rho\|U\|,\quad B_h = \frac{L_xB_x}{1-\lambda}
    \;(\text{Lemma 1 with } k = 0),\quad M = \sqrt{[W]B_h^2 + [U]B_x^2},\\
    L_w = L_\rho M,\quad \beta_{hh} = L_{\rho'}\|W\|^2,\quad
    \beta_{wh} = \beta_{hw} = [W]L_\rho + L_{\rho'}\|W\|M,\quad \beta_{ww} = L_{\rho'}M^2,

where [W], [U] are 1 when the block is trained. Derivations (App. A.3.1, with the
activation's exact constants instead of "2-smooth"):
:math:`\|\partial\phi/\partial w\,[\Delta]\| = \|\mathrm{diag}(\rho'(a))(\Delta W h + \Delta U x)\|
\le L_\rho\sqrt{\|h\|^2+\|x\|^2}\,\|\Delta\|`;
:math:`\|\mathrm{diag}(\rho'(a)-\rho'(a'))W\| \le L_{\rho'}\|a-a'\|_\infty\|W\|` with
:math:`\|a-a'\|_\infty \le \|W\|\|h-h'\|` (β_hh) or :math:`\le M\|w-w'\|` (β_hw), and
similarly for :math:`\partial\phi/\partial w` (β_wh, β_ww).

Loss at step T, :math:`p(h) = \tfrac12\|Vh + c - y_T\|^2` on the reachable set
:math:`\|h\| \le B_h`: :math:`L_p = \|V\|(\|V\|B_h + \|c - y_T\|)`, :math:`\beta_p = \|V\|^2`.

Errata: §6.2 calls tanh "1-smooth", App. A.3.1 "2-smooth"; sympy gives
:math:`\sup|\tanh''| = 4\sqrt3/9 \approx 0.770`, so both are valid but loose, and the
appendix's :math:`\beta_{hh} = 2\lambda^2` can be :math:`(4\sqrt3/9)\lambda^2`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

import theory.truncation as tr
from theory.truncation import TruncationConstants, lemma1_state_norm
from verify.errors import InvalidArgument

__all__ = [
    "ACTIVATIONS",
    "ActivationConstants",
    "LSTMCondition",
    "activation_constants",
    "loss_constants",
    "lstm_cell_bound",
    "lstm_condition",
    "lstm_l2_iterations",
    "rnn_constant_exprs",
    "rnn_constants",
]

ACTIVATIONS = ("tanh", "identity", "sigmoid")


@dataclass(frozen=True)
class ActivationConstants:
    """Exact sup|ρ'| (Lipschitz) and sup|ρ''| (smoothness) of an activation, as sympy numbers and floats."""

    name: str
    lipschitz: sp.Expr
    smoothness: sp.Expr

    @property
    def L(self) -> float:
        return float(self.lipschitz)

    @property
    def L_prime(self) -> float:
        return float(self.smoothness)


def _sup_abs(f: sp.Expr, u: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """sup of |f(u)| over [lo, hi] for a polynomial f: critical points and endpoints, by sympy."""
    cands = [lo, hi] + [r for r in sp.solve(sp.diff(f, u), u) if r.is_real and lo <= r <= hi]
    return sp.nsimplify(sp.Max(*[sp.Abs(sp.simplify(f.subs(u, c))) for c in cands]))


@lru_cache(maxsize=8)
def activation_constants(name: str) -> ActivationConstants:
    r"""sup|ρ'| and sup|ρ''| derived by sympy.

    tanh in the variable :math:`u = \tanh(x) \in (-1, 1)`: :math:`\tanh' = 1 - u^2`,
    :math:`\tanh'' = -2u(1-u^2)`, so sup|tanh'| = 1 and sup|tanh''| = 4√3/9 (at
    :math:`u = 1/\sqrt3`). The logistic σ with :math:`s = \sigma(x) \in (0,1)`:
    :math:`\sigma' = s(1-s)` (sup 1/4), :math:`\sigma'' = s(1-s)(1-2s)` (sup √3/18).
    The identity: 1 and 0.
    """
    if name == "identity":
        return ActivationConstants(name, sp.Integer(1), sp.Integer(0))
    if name == "tanh":
        u = sp.Symbol("u", real=True)
        d1 = 1 - u**2  # tanh' as a function of u = tanh(x)
        d2 = sp.expand(sp.diff(d1, u) * d1)  # d/dx = (1 - u^2) d/du
        return ActivationConstants(name, _sup_abs(d1, u, -1, 1), _sup_abs(d2, u, -1, 1))
    if name == "sigmoid":
        s = sp.Symbol("s", real=True)
        d1 = s * (1 - s)  # sigma' as a function of s = sigma(x)
        d2 = sp.expand(sp.diff(d1, s) * d1)
        return ActivationConstants(name, _sup_abs(d1, s, 0, 1), _sup_abs(d2, s, 0, 1))
    raise InvalidArgument("activation", name, f"activation must be one of {ACTIVATIONS}")


# symbols of the instance measurements
nW, nU, Bx, nV, res = sp.symbols("norm_W norm_U B_x norm_V resid", nonnegative=True)
Lr, Lrp = sp.symbols("L_rho L_rho_prime", nonnegative=True)
iW, iU = sp.symbols("train_W train_U", nonnegative=True)
_MEASURED = (nW, nU, Bx, nV, res, Lr, Lrp, iW, iU)


@lru_cache(maxsize=1)
def rnn_constant_exprs() -> dict[str, sp.Expr]:
    r"""The constants of :class:`~theory.truncation.TruncationConstants` as sympy expressions of the measurements.

    Measurements: ``norm_W`` = ‖W‖₂ (or the radius of Ω), ``norm_U`` = ‖U‖₂,
    ``B_x``, ``norm_V`` = ‖V‖₂, ``resid`` = ‖c − y_T‖, the activation constants
    ``L_rho``, ``L_rho_prime`` and the 0/1 indicators ``train_W``, ``train_U``.
    The state bound :math:`B_h` is Lemma 1's (:func:`theory.truncation.lemma1_state_norm`).
    """
    lam_e = Lr * nW  # §6.2: stable if ||W|| < 1/L_rho
    Lx_e = Lr * nU  # Lipschitz in x (App. A.3.1: "B_U Lipschitz in x")
    Bh = lemma1_state_norm().subs({tr.L_x: Lx_e, tr.B_x: Bx, tr.lam: lam_e})  # ||h_t|| <= B_U B_x/(1 - lambda)
    M = sp.sqrt(iW * Bh**2 + iU * Bx**2)
    return {
        "lam": lam_e,
        "L_x": Lx_e,
        "B_x": Bx,
        "L_p": nV * (nV * Bh + res),  # sup_{||h|| <= B_h} ||V^T (V h + c - y)||
        "L_w": Lr * M,
        "beta_p": nV**2,  # ||V^T V||
        "beta_wh": iW * Lr + Lrp * nW * M,
        "beta_hh": Lrp * nW**2,  # App. A.3.1 (2 lambda^2 with the loose "2-smooth")
        "beta_hw": iW * Lr + Lrp * nW * M,
        "beta_ww": Lrp * M**2,
        "B_h": Bh,
    }


@lru_cache(maxsize=1)
def _compiled_rnn() -> dict[str, Callable[..., float]]:
    return {name: sp.lambdify(_MEASURED, e, modules="math") for name, e in rnn_constant_exprs().items()}


def rnn_constants(
    norm_W: float,
    norm_U: float,
    B_x: float,
    norm_V: float,
    resid: float,
    activation: str = "tanh",
    trainable: tuple[str, ...] = ("W", "U"),
) -> TruncationConstants:
    """:class:`TruncationConstants` of an Elman RNN (``activation="tanh"``) or linear system (``"identity"``).

    Raises ``ValueError`` when the instance is not contractive (λ = L_ρ‖W‖ ≥ 1):
    the caller (``verify.oracles.contraction``) turns that into ``AssumptionViolated``.
    """
    act = activation_constants(activation)
    unknown = set(trainable) - {"W", "U"}
    if unknown or not trainable:
        raise InvalidArgument("trainable", trainable, "trainable must be a non-empty subset of ('W', 'U')")
    args = (norm_W, norm_U, B_x, norm_V, resid, act.L, act.L_prime, float("W" in trainable), float("U" in trainable))
    lam_ = float(_compiled_rnn()["lam"](*args))
    if not lam_ < 1.0:
        raise InvalidArgument("norm_W", norm_W, f"not contractive: lambda = L_rho ||W|| = {lam_:.6g} >= 1")
    vals = {name: float(fn(*args)) for name, fn in _compiled_rnn().items() if name != "B_h"}
    return TruncationConstants(**vals)


def loss_constants(norm_V: float, resid: float, B_h: float) -> tuple[float, float]:
    r"""(:math:`L_p`, :math:`\beta_p`) of :math:`\tfrac12\|Vh + c - y\|^2` on :math:`\|h\| \le B_h`."""
    e = rnn_constant_exprs()
    Bh_sym = sp.Symbol("B_h")
    Lp = e["L_p"].subs(e["B_h"], Bh_sym)
    return float(Lp.subs({nV: norm_V, res: resid, Bh_sym: B_h})), float(e["beta_p"].subs(nV, norm_V))


# -------------------------------------------------------------------------- LSTM
@lru_cache(maxsize=1)
def _lemma5_cell_bound() -> sp.Expr:
    r"""Lemma 5: :math:`\|c_t\|_\infty \le \sum_i \|f\|_\infty^i = 1/(1-\|f\|_\infty)` (sympy sum)."""
    f, i = sp.symbols("f i", nonnegative=True)
    s = sp.piecewise_fold(sp.summation(f**i, (i, 0, sp.oo)))
    val = s.args[0][0] if isinstance(s, sp.Piecewise) else s
    return sp.simplify(val)


def lstm_cell_bound(f_inf: float, c0_inf: float = 0.0) -> float:
    r"""Lemma 5 bound on :math:`\|c_t\|_\infty`.

    With :math:`c_0 \ne 0` it is :math:`\max(\|c_0\|_\infty, 1/(1-\|f\|_\infty))`.

    (The paper assumes :math:`s_0 = 0`; unrolling :math:`\|c_t\| \le 1 + \|f\|\|c_{t-1}\|`
    from :math:`\|c_0\|` gives the max.)
    """
    if not (0.0 <= f_inf < 1.0):
        raise InvalidArgument("f_inf", f_inf, "need 0 <= ||f||_inf < 1")
    return max(float(c0_inf), float(_lemma5_compiled()(f_inf)))


@lru_cache(maxsize=1)
def _lemma5_compiled() -> Callable[[float], float]:
    fn: Callable[[float], float] = sp.lambdify(sp.Symbol("f", nonnegative=True), _lemma5_cell_bound(), modules="math")
    return fn


@dataclass(frozen=True)
class LSTMCondition:
    r"""Prop. 5 evaluated for one LSTM: the statement's predicate, the proof's condition and λ_∞.

    ``lam_inf`` is the ℓ∞ contraction factor on the reachable set shown by the proof,
    :math:`\lambda_\infty = (\|W_i\| + \|c\|\|W_f\| + \|W_o\|)L_\sigma + L_{\tanh}\|W_z\| + \|f\|`
    (all ∞-norms); ``statement`` is Prop. 5's sufficient condition; ``proof_condition``
    is the weaker inequality the proof uses (λ_∞ < 1); ``iterations`` is the r of
    Prop. 5 such that the r-fold map is ℓ2-contractive (:math:`\sqrt{\dim}\,\lambda_\infty^r < 1`).
    """

    lam_inf: float
    statement: bool
    proof_condition: bool
    iterations: int
    cell_bound: float


def lstm_l2_iterations(lam_inf: float, dim: int) -> int:
    r"""Smallest r ≥ 1 with :math:`\sqrt{\dim}\,\lambda_\infty^r < 1` (ℓ2 contraction of the r-fold map, Prop. 5)."""
    if not (0.0 < lam_inf < 1.0):
        raise InvalidArgument("lam_inf", lam_inf, "need 0 < lam_inf < 1")
    r = max(1, math.floor(math.log(math.sqrt(dim)) / math.log(1.0 / lam_inf)) + 1)
    return r


def lstm_condition(
    Wi_inf: float, Wf_inf: float, Wo_inf: float, Wz_inf: float, f_inf: float, c0_inf: float = 0.0, dim: int = 2
) -> LSTMCondition:
    r"""Prop. 5 as a predicate, with the proof's contraction factor (App. A.3.2).

    Statement: :math:`\|W_i\|, \|W_o\| < 1-\|f\|`, :math:`\|W_z\| \le \tfrac14(1-\|f\|)`,
    :math:`\|W_f\| < (1-\|f\|)^2`. Proof: :math:`(\|W_i\| + \|c\|\|W_f\| + \|W_o\|)/4 + \|W_z\|
    < 1 - \|f\|` with :math:`\|c\| \le 1/(1-\|f\|)` (Lemma 5). The σ and tanh Lipschitz
    constants (1/4, 1) come from :func:`activation_constants`.
    """
    Ls, Lt = activation_constants("sigmoid").L, activation_constants("tanh").L
    gap = 1.0 - f_inf
    statement = Wi_inf < gap and Wo_inf < gap and Wz_inf <= 0.25 * gap and Wf_inf < gap**2  # Prop. 5
    c_inf = lstm_cell_bound(f_inf, c0_inf) if f_inf < 1.0 else math.inf
    lam_inf = (Wi_inf + c_inf * Wf_inf + Wo_inf) * Ls + Lt * Wz_inf + f_inf  # proof of Prop. 5
    ok = lam_inf < 1.0
    its = lstm_l2_iterations(lam_inf, dim) if ok and lam_inf > 0 else (1 if ok else 0)
    return LSTMCondition(lam_inf, statement, ok, its, c_inf)
