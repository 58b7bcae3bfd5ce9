r"""Cooijmans & Martens's variance-reduction experiment: the framework's exact variance, the matrix B, the optimal
:math:`\alpha_t` and :math:`Q_0`, and the measured variance of plain UORO, UORO's greedy rescaling and the optimum
(Cooijmans & Martens 2019, "On the Variance of Unbiased Online Recurrent Optimization", arXiv:1902.02405,
§ "Theoretical framework" and § "Toward improved variance reduction"; the estimator is
:class:`verify.estimators.framework.FrameworkUORO`).

The total estimate of the framework, projected in preactivation space (:math:`z_t = p_t`,
:math:`J_q = \mathcal J^{p_q}_{\theta_q} = I\otimes a_q^\top`), is

.. math:: \hat G = \sum_t b^{(t)\top} Q u u^\top Q^{-1} S^{(t)} J
    = \sum_{r,q} \beta_{rq}^\top Q_r u_r\,u_q^\top Q_q^{-1} J_q,\qquad
    \beta_{rq} = \sum_{t\ge\max(r,q)} b^{(t)}_r,\quad b^{(t)\top}_r = \mathcal J^{L_t}_{p_r},

a quadratic form :math:`\hat G_k = u^\top A_k u` per parameter k. For :math:`u\sim\mathcal N(0, I)`:
:math:`E\hat G_k = \operatorname{tr}A_k` (= the gradient: unbiased) and
:math:`E\|\hat G - g\|^2 = \sum_k \|A_k\|_F^2 + \operatorname{tr}(A_k^2)`. The first sum is the post's trace
product

.. math:: V(Q) = \sum_{s,t}\operatorname{tr}\Big(\sum_r b^{(s)}_r b^{(t)\top}_r Q_r Q_r^\top\Big)
    \operatorname{tr}\Big(\sum_q S^{(t)}_q J_q J_q^\top S^{(s)}_q (Q_q Q_q^\top)^{-1}\Big)
    = \operatorname{tr}(B\,Q_0Q_0^\top)\operatorname{tr}\big((Q_0Q_0^\top)^{-1}\big)

for :math:`Q_t = \alpha_t Q_0`, with the post's

.. math:: B = \sum_{q, r}\frac{\alpha_r^2}{\alpha_q^2}\|a_q\|^2
    \Big(\sum_{s=q}^T b^{(s)}_r\Big)\Big(\sum_{t=q}^T b^{(t)}_r\Big)^\top ;

the second sum, :math:`\sum_{r,q}(\beta_{rq}^\top J_r)\cdot(\beta_{qr}^\top J_q)`, does not depend on Q. So with
Gaussian noise minimising V minimises the variance itself, and the predictions are exact numbers:
:math:`V = \operatorname{tr}(B)\operatorname{tr}(I)` at :math:`Q_0 = I` and
:math:`V = \operatorname{tr}(B^{1/2})^2` at :math:`Q_0 = B^{-1/4}`.

*The optimum, computed here.* For fixed :math:`Q_0` (:math:`C = Q_0Q_0^\top`),
:math:`V = \sum_{r,q} K_{rq}\,\alpha_r^2/\alpha_q^2` with
:math:`K_{rq} = \|a_q\|^2\operatorname{tr}(C^{-1})\,\beta_{rq}^\top C\beta_{rq} \ge 0`: convex in
:math:`x = \log\alpha^2` (a sum of exponentials of differences), minimised by L-BFGS to a unique optimum up to a
common scale. For fixed α, :math:`Q_0 = B^{-1/4}` is the exact minimiser. The post calls joint optimisation
"analytically intractable" and alternation "difficult"; numerically, alternation is block-coordinate descent: V
never increases, and it stops at a stationary point (:func:`optimal_coefficients`; the history of V is reported).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import torch

from verify._lazy import scipy_optimize
from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator, run_estimator
from verify.estimators.framework import FORMS, step_terms
from verify.oracles.bptt import per_step_gradients
from verify.uoro.cases import Case

__all__ = [
    "Coefficients",
    "Exact",
    "FrameworkTerms",
    "Measured",
    "Setup",
    "b_matrix",
    "exact_moments",
    "framework_terms",
    "matrix_power",
    "measure",
    "optimal_alpha",
    "optimal_coefficients",
    "reduction_setup",
]

Array = npt.NDArray[np.float64]


class FrameworkTerms(NamedTuple):
    """The exact quantities of the framework on one problem (float64, from the deterministic trajectory)."""

    b: Array  #: b[t, r] = ∂L_t/∂p_r (zero for r > t), (T, T, n)
    J: Array  #: J_q = ∂p_q/∂θ_q (I ⊗ a_qᵀ in θ's layout), (T, n, p)
    a2: Array  #: ‖a_q‖² = ‖(h_{q-1}, x_q, 1)‖², (T,)
    readout: Array  #: Σ_t ∂ℓ_t/∂θ at fixed h_t (exact in every estimator), (p,)
    g: Array  #: the total gradient ∇L (BPTT), (p,)


def framework_terms(case: Case) -> FrameworkTerms:
    """:class:`FrameworkTerms` of ``case`` (Elman cell): b by explicit backprop through the dense step Jacobians."""
    P, th = case.problem, case.theta.detach()
    T, n = P.T, P.n
    s = P.s0.clone()
    Jh, Jhp, Jp, dls, ro, a2 = [], [], [], [], [], []
    for t in range(1, T + 1):
        x = P.inputs[t - 1]
        a2.append(float(s.pow(2).sum() + x.pow(2).sum() + 1.0))
        z = step_terms(P, th, s, t)
        Jh.append(z.J_h.numpy())
        Jhp.append(z.J_hp.numpy())
        Jp.append(z.J_p.numpy())
        dls.append(z.dl_ds.numpy())
        ro.append(z.dl_dth.numpy())
        s = z.s
    b = np.zeros((T, T, n))
    for t in range(T):
        v = dls[t]
        for r in range(t, -1, -1):  # b_r^(t) = dl_t/dh_t J^{h_t}_{h_r} J^{h_r}_{p_r}
            b[t, r] = v @ Jhp[r]
            v = v @ Jh[r]
    g = per_step_gradients(P, th).sum(0).numpy()
    return FrameworkTerms(b, np.stack(Jp), np.array(a2), np.sum(ro, axis=0), g)


def _beta(b: Array, lag: int, upto: int | None = None) -> Array:
    """β[r, q] = Σ_{max(r,q) + lag ≤ t < upto} b[t, r]: the coefficient of u_r ... u_q in the total up to ``upto``
    (lag 0: the post's form; lag 1: Algorithm 1's, whose estimate at t uses h̃_{t-1}, w̃_{t-1})."""
    T = b.shape[0]
    stop = T if upto is None else upto
    out = np.zeros((T, T, b.shape[2]))
    for r in range(T):
        for q in range(T):
            out[r, q] = b[max(r, q) + lag : stop, r].sum(0)
    return out


def _lag(form: str) -> int:
    if form not in FORMS:
        raise InvalidArgument("form", form, f"must be one of {FORMS}")
    return 0 if form == "post" else 1


class Exact(NamedTuple):
    """Exact moments of the framework's total estimate for given Q_t under Gaussian noise."""

    mean: Array  #: E Ĝ, (p,)
    variance: float  #: E‖Ĝ − g‖²
    V: float  #: Σ_k ‖A_k‖_F² (the post's V(Q))
    c: float  #: Σ_k tr(A_k²) (independent of Q), minus 2 Σ_k Σ_i (A_k)_ii² for random signs


def exact_moments(
    terms: FrameworkTerms, Q: Array, form: str, noise: str = "rademacher", upto: int | None = None
) -> Exact:
    """Exact mean and variance of Σ_{t < upto} g̃_t (default: all T steps) for per-step matrices ``Q`` (T, n, n), the
    estimate's ``form`` (:data:`~verify.estimators.framework.FORMS`) and the law of u (``noise``: random signs
    remove the diagonal's fourth moments, −2 Σ_i A_ii²); the mean is of the whole total only."""
    lag = _lag(form)
    T, n = terms.b.shape[0], terms.b.shape[2]
    if Q.shape != (T, n, n):
        raise InvalidArgument("Q", f"array of shape {Q.shape}", f"expected (T, n, n) = ({T}, {n}, {n})")
    beta = _beta(terms.b, lag, upto)
    stop = T if upto is None else upto
    J = terms.J.copy()
    J[stop:] = 0.0  # steps after ``upto`` contribute no w~ term to the prefix sum
    left = np.einsum("rqi,rij->rqj", beta, Q)  # beta_rq^T Q_r
    right = np.einsum("qij,qjk->qik", np.linalg.inv(Q), J)  # Q_q^{-1} J_q
    A = np.einsum("rqi,qjk->kriqj", left, right).reshape(J.shape[2], T * n, T * n)
    exact = terms.readout + lag * np.einsum("ti,tik->k", terms.b[np.arange(T), np.arange(T)], terms.J)
    mean = np.einsum("kii->k", A) + (exact if upto is None else 0.0)
    V = float((A**2).sum())
    c = float(np.einsum("kij,kji->", A, A))
    if noise == "rademacher":
        c -= 2.0 * float((np.einsum("kii->ki", A) ** 2).sum())
    elif noise != "gaussian":
        raise InvalidArgument("noise", noise, "must be 'rademacher' or 'gaussian'")
    return Exact(mean, V + c, V, c)


def b_matrix(terms: FrameworkTerms, alpha: Array, form: str) -> Array:
    """The post's B for the schedule ``alpha`` (T,) ("Toward improved variance reduction"); for Algorithm 1's form the
    sums over s, t start at q + 1 (the same derivation: its S^(t) stops at t − 1)."""
    beta = _beta(terms.b, _lag(form))
    w = (alpha[None, :] ** 2 / alpha[:, None] ** 2) * terms.a2[:, None]  # [q, r]
    out: Array = np.einsum("qr,rqi,rqj->ij", w, beta, beta)
    return out


def matrix_power(B: Array, power: float) -> Array:
    """B^power of a symmetric positive definite B (eigendecomposition)."""
    w, U = np.linalg.eigh((B + B.T) / 2)
    if w.min() <= 0:
        raise InvalidArgument("B", f"smallest eigenvalue {w.min():.3g}", "must be positive definite")
    out: Array = (U * w**power) @ U.T
    return out


def optimal_alpha(terms: FrameworkTerms, C: Array, form: str) -> Array:
    r"""The α (T,) minimising V = Σ K_rq α_r²/α_q² for :math:`C = Q_0Q_0^\top` (convex in log α²; geometric mean 1)."""
    beta = _beta(terms.b, _lag(form))
    K = np.einsum("rqi,ij,rqj->rq", beta, C, beta) * terms.a2[None, :] * np.trace(np.linalg.inv(C))
    K = K / K.max()

    def f(x: Array) -> tuple[float, Array]:
        E = K * np.exp(x[:, None] - x[None, :])
        return float(E.sum()), E.sum(1) - E.sum(0)

    res = scipy_optimize.minimize(
        f, np.zeros(len(K)), jac=True, method="L-BFGS-B", options={"gtol": 1e-11, "maxiter": 5000}
    )
    x = res.x - res.x.mean()
    out: Array = np.exp(x / 2)
    return out


@dataclass(frozen=True)
class Coefficients:
    """The framework's optimum found by alternation: α (T,), Q₀ = B^{-1/4}, B at α, and V after each sweep."""

    alpha: Array
    Q0: Array
    B: Array
    history: list[float]

    def schedule(self, Q0: Array | None = None) -> Array:
        """Q_t = α_t Q₀ (T, n, n), with this Q₀ unless another is given."""
        q = self.Q0 if Q0 is None else Q0
        out: Array = self.alpha[:, None, None] * q[None]
        return out


def optimal_coefficients(terms: FrameworkTerms, form: str, sweeps: int = 40, rtol: float = 1e-10) -> Coefficients:
    """Alternate α ← argmin V(·; Q₀) and Q₀ ← B(α)^{-1/4} from Q₀ = I until V changes by less than ``rtol``."""
    n = terms.b.shape[2]
    Q0 = np.eye(n)
    history: list[float] = []
    alpha = np.ones(terms.b.shape[0])
    for _ in range(sweeps):
        alpha = optimal_alpha(terms, Q0 @ Q0.T, form)
        B = b_matrix(terms, alpha, form)
        history.append(float(np.trace(B @ Q0 @ Q0.T) * np.trace(np.linalg.inv(Q0 @ Q0.T))))
        Q0 = matrix_power(B, -0.25)
        history.append(float(np.trace(matrix_power(B, 0.5)) ** 2))
        if len(history) > 2 and abs(history[-3] - history[-1]) <= rtol * history[-1]:
            break
    return Coefficients(alpha, Q0, b_matrix(terms, alpha, form), history)


@dataclass(frozen=True)
class Measured:
    """Squared errors of the running total Σ_{s≤t} g̃_s (T, M) of one estimator, and the bias z-scores of Σ_t g̃_t."""

    name: str
    q: torch.Tensor  #: ‖Σ_{s≤t} g̃_s − Σ_{s≤t} g_s‖², (T, M)
    bias_z: torch.Tensor  #: per coordinate: mean error / its standard error (round-off floor added), (p,)

    def mean(self, t: int | None = None) -> float:
        return float(self.q[-1 if t is None else t - 1].mean())

    def se(self, t: int | None = None) -> float:
        x = self.q[-1 if t is None else t - 1]
        return float(x.std()) / math.sqrt(x.numel())

    def row(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mean": [float(x.mean()) for x in self.q],
            "se": [self.se(t + 1) for t in range(self.q.shape[0])],
            "max_abs_bias_z": float(self.bias_z.abs().max()),
        }


def measure(estimators: Sequence[OnlineEstimator], case: Case, draws: int, gen: torch.Generator) -> list[Measured]:
    """Run each estimator ``draws`` times (from ``gen``, in turn) on ``case``: :class:`Measured` for each."""
    P, th = case.problem, case.theta
    G = per_step_gradients(P, th).cumsum(0)
    out = []
    for est in estimators:
        X = run_estimator(est, P, th, gen, samples=draws).cumsum(0)  # running totals (T, M, p)
        q = (X - G[:, None, :]).pow(2).sum(-1)
        err = X[-1] - G[-1]
        floor = 1e-12 * float(G[-1].norm())  # round-off: exact coordinates (the readout) have zero scatter
        z = err.mean(0) / (err.std(0) / math.sqrt(draws) + floor)
        out.append(Measured(est.name, q, z))
    return out


@dataclass(frozen=True)
class Setup:
    """The exact side of the experiment on one problem: the optimum, the predictions and the post's identities."""

    terms: FrameworkTerms
    coefficients: Coefficients
    predicted: dict[str, float]  #: exact E‖Ĝ − g‖² of named schedules (estimator's form and noise)
    prefix: dict[str, list[float]]  #: exact E‖Σ_{s≤t} g̃_s − Σ g_s‖², t = 1..T, of the optimum and of α ≡ 1, Q₀ = I
    traces: dict[str, float]  #: tr(B) tr(I), tr(B^{1/2})², V at both (the estimator's form), c
    identity_error: float  #: worst relative error of the post's identities and of E Ĝ = g (both forms)


def reduction_setup(case: Case, form: str = "algorithm-1", noise: str = "rademacher") -> Setup:
    """The framework's optimum on ``case`` and its exact predictions; the post's identities checked in both forms
    (``"post"`` as printed, and ``form``): E Ĝ = g, V(α, I) = tr(B) tr(I), V(α, B^{-1/4}) = tr(B^{1/2})²."""
    terms = framework_terms(case)
    T, n = terms.b.shape[0], terms.b.shape[2]
    errs: list[float] = []
    out: Coefficients | None = None
    traces: dict[str, float] = {}
    for f in dict.fromkeys(("post", form)):
        coef = optimal_coefficients(terms, f)
        at_i = exact_moments(terms, coef.schedule(np.eye(n)), f, noise)
        at_opt = exact_moments(terms, coef.schedule(), f, noise)
        tr_b = float(np.trace(coef.B)) * n
        tr_half = float(np.trace(matrix_power(coef.B, 0.5))) ** 2
        gnorm = float(np.linalg.norm(terms.g))
        errs += [abs(at_i.V - tr_b) / tr_b, abs(at_opt.V - tr_half) / tr_half]
        errs += [float(np.linalg.norm(e.mean - terms.g)) / gnorm for e in (at_i, at_opt)]
        if f == form:
            out = coef
            traces = {"trB_trI": tr_b, "trBhalf_sq": tr_half, "V_at_I": at_i.V, "V_at_opt": at_opt.V, "c": at_opt.c}
    assert out is not None
    ones = np.stack([np.eye(n)] * T)
    schedules = {
        "alpha = 1, Q0 = I": ones,
        "optimal alpha, Q0 = I": out.schedule(np.eye(n)),
        "optimal alpha, Q0 = B^(-1/4)": out.schedule(),
        "optimal alpha, Q0 = B^(+1/4)": out.schedule(matrix_power(out.B, 0.25)),
    }
    predicted = {k: exact_moments(terms, Q, form, noise).variance for k, Q in schedules.items()}
    prefix = {
        k: [exact_moments(terms, schedules[k], form, noise, upto=t).variance for t in range(1, T + 1)]
        for k in ("alpha = 1, Q0 = I", "optimal alpha, Q0 = B^(-1/4)")
    }
    return Setup(terms, out, predicted, prefix, traces, max(errs))
