r"""The assumption checker of the truncation bounds (Miller & Hardt §2 eq. (2), §6, Prop. 5).

Given a problem and θ it decides whether the state-transition map is contractive
and reports the contraction factor λ:

* Elman RNN and linear system (§6.1–6.2): :math:`\lambda = L_\rho\|W\|_2` with
  :math:`L_\rho` the activation's Lipschitz constant (``theory.instances``; tanh and
  relu 1, identity 1) -- a sufficient condition for eq. (2) in the ℓ2 norm.
* LSTM (Prop. 5, App. A.3.2): the proof's ℓ∞ contraction factor on the reachable set,
  :math:`\lambda_\infty = (\|W_i\|_\infty + \|c\|_\infty\|W_f\|_\infty + \|W_o\|_\infty)/4
  + \|W_z\|_\infty + \|f\|_\infty`, with :math:`\|f\|_\infty` bounded from θ and the
  problem's inputs (Lemma 5, with biases) and the number r of iterations after which
  the r-fold map is ℓ2-contractive.
* Anything else (GRU, influence balancing): no certificate -- refused.

:func:`require_contraction` raises :class:`~verify.errors.AssumptionViolated` when
the certificate fails; every truncation bound check calls it first, so a
non-contractive instance is refused, never PASSed and never silently FAILed.
:func:`truncation_constants` then measures the instance (‖W‖₂, ‖U‖₂, B_x, the
readout) and asks ``theory.instances`` for the constants of Lemmas 1–3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from verify.errors import AssumptionViolated, InvalidArgument
from verify.model.cells import ElmanCell, LinearCell, LSTMCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem

if TYPE_CHECKING:
    from theory.truncation import TruncationConstants

__all__ = [
    "ContractionCertificate",
    "contraction_certificate",
    "require_bound_setting",
    "require_contraction",
    "require_smooth",
    "truncation_constants",
]

#: relative slack for "λ < 1": a certificate within round-off of 1 is not trusted
_LAM_MARGIN = 1e-12


@dataclass(frozen=True)
class ContractionCertificate:
    """The checker's decision for one (cell, θ).

    ``lam``: the certified contraction factor in ``norm`` (``"l2"`` or ``"linf"``);
    ``contractive``: ``lam < 1``; ``iterations``: r such that the r-fold map is
    ℓ2-contractive (1 for ℓ2 certificates); ``method``: how λ was obtained;
    ``detail``: the measured quantities; ``cell_bound``: the LSTM's Lemma 5 bound on
    ‖c_t‖_∞ (the reachable set the ℓ∞ certificate holds on), ``None`` otherwise.
    """

    cell: str
    lam: float
    norm: str
    contractive: bool
    method: str
    iterations: int = 1
    detail: str = ""
    cell_bound: float | None = None


def _spectral_norm(M: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(M.detach().to(torch.float64), ord=2))


def _inf_norm(M: torch.Tensor) -> float:
    """Induced ℓ∞ norm: the largest absolute row sum."""
    return float(M.detach().to(torch.float64).abs().sum(-1).max()) if M.numel() else 0.0


def contraction_certificate(problem: Problem, theta: torch.Tensor) -> ContractionCertificate:
    r"""Decide contraction (eq. (2)) for ``problem``'s cell at θ and report λ (see module docstring).

    Never raises for a non-contractive instance (``contractive=False``); raises
    :class:`AssumptionViolated` for a cell without a certificate.
    """
    theta = problem.check_theta(theta)
    cell = problem.cell
    params = problem.cell_params(theta)
    if isinstance(cell, ElmanCell | LinearCell):
        from theory.instances import activation_constants  # sympy: imported when a certificate is asked for

        act = "identity" if isinstance(cell, LinearCell) else cell.activation
        L_rho = 1.0 if act == "relu" else activation_constants("tanh" if act == "tanh" else "identity").L
        nW = _spectral_norm(params["W"])
        lam = L_rho * nW  # §6.2: ||rho(Wh+Ux) - rho(Wh'+Ux)|| <= L_rho ||W|| ||h - h'||
        return ContractionCertificate(
            cell.describe(),
            lam,
            "l2",
            lam < 1.0 - _LAM_MARGIN,
            f"L_rho * ||W||_2 ({act}: L_rho = {L_rho:g})",
            1,
            f"||W||_2 = {nW:.6g}",
        )
    if isinstance(cell, LSTMCell):
        return _lstm_certificate(problem, theta)
    raise AssumptionViolated(
        "contraction certificate (Miller & Hardt §6: linear system, Elman RNN, LSTM Prop. 5)",
        cell.describe(),
        "no sufficient condition for this cell is implemented; the truncation bounds cannot be applied",
    )


def _lstm_certificate(problem: Problem, theta: torch.Tensor) -> ContractionCertificate:
    """Prop. 5 with Lemma 5's gate bound computed from θ, the inputs and s0 (biases included)."""
    cell = problem.cell
    assert isinstance(cell, LSTMCell)
    H = cell.hidden
    p = problem.cell_params(theta)
    W, U, b = (p[n].detach().to(torch.float64) for n in ("W", "U", "b"))
    Wf, Wi, Wo, Wz = W.chunk(4, dim=0)  # gate order f, i, o, z (verify.model.cells.LSTMCell)
    Uf, bf = U.chunk(4, dim=0)[0], b.chunk(4, dim=0)[0]
    s0 = problem.s0.detach().to(torch.float64).reshape(-1, 2 * H)
    c0_inf = float(s0[:, :H].abs().max()) if s0.numel() else 0.0
    h_inf = max(1.0, float(s0[:, H:].abs().max()) if s0.numel() else 0.0)  # |h_t| <= 1 for t >= 1
    x = problem.inputs.detach().to(torch.float64).reshape(-1, cell.d)
    drive = (x @ Uf.T + bf).max(0).values if x.numel() else bf  # max_t (U_f x_t + b_f)_j
    pre_max = float((Wf.abs().sum(1) * h_inf + drive).max())
    f_inf = float(torch.sigmoid(torch.tensor(pre_max, dtype=torch.float64)))  # Lemma 5: sigma monotone
    norms = {n: _inf_norm(M) for n, M in (("W_i", Wi), ("W_f", Wf), ("W_o", Wo), ("W_z", Wz))}
    if f_inf >= 1.0:
        return ContractionCertificate(cell.describe(), math.inf, "linf", False, "Prop. 5", 0, f"||f||_inf = {f_inf}")
    from theory.instances import lstm_condition  # sympy: imported when a certificate is asked for

    cond = lstm_condition(norms["W_i"], norms["W_f"], norms["W_o"], norms["W_z"], f_inf, c0_inf, dim=2 * H)
    detail = (
        ", ".join(f"||{n}||_inf = {v:.4g}" for n, v in norms.items())
        + f", ||f||_inf <= {f_inf:.4g}, ||c||_inf <= {cond.cell_bound:.4g}, Prop. 5 statement "
        + ("holds" if cond.statement else "fails")
    )
    return ContractionCertificate(
        cell.describe(),
        cond.lam_inf,
        "linf",
        cond.proof_condition,
        "Prop. 5 (proof's l_inf factor on the reachable set)",
        cond.iterations,
        detail,
        cond.cell_bound,
    )


def require_contraction(problem: Problem, theta: torch.Tensor, *, norm: str = "l2") -> ContractionCertificate:
    """The certificate, or :class:`AssumptionViolated` when it does not show λ < 1 (in ``norm``).

    With ``norm="l2"`` an ℓ∞ certificate (LSTM) is refused too: the bounds of
    Lemmas 1–2 are stated for the single-step ℓ2 contraction (eq. (2)).
    """
    cert = contraction_certificate(problem, theta)
    if not cert.contractive:
        raise AssumptionViolated(
            "contraction (Miller & Hardt eq. (2)): lambda < 1", cert.lam, f"{cert.method}; {cert.detail}"
        )
    if norm == "l2" and cert.norm != "l2":
        raise AssumptionViolated(
            "single-step l2 contraction (eq. (2))",
            f"{cert.norm} factor {cert.lam:.4g}, l2 after r = {cert.iterations} steps",
            "the explicit-constant bounds are implemented for l2-contractive cells (linear, Elman)",
        )
    return cert


def require_smooth(problem: Problem) -> None:
    """Lemma 2/3 premise: φ smooth (tanh, linear); relu is not (§6.2: 'our results do not apply for ReLu')."""
    cell = problem.cell
    if isinstance(cell, ElmanCell) and cell.activation != "tanh":
        raise AssumptionViolated("smooth state-transition map (Lemma 2)", cell.activation, "relu is not smooth")
    if not isinstance(cell, ElmanCell | LinearCell):
        raise AssumptionViolated("smoothness constants available (linear or tanh cell)", cell.describe())


def require_bound_setting(problem: Problem, theta: torch.Tensor) -> None:
    r"""The setting of Lemmas 1–3 as implemented: :math:`\phi_w(0,0) = 0` (no bias), :math:`h_0 = 0`,
    an unbatched sequence, squared error on a linear readout (the loss whose constants are derived)."""
    if problem.batch_shape:
        raise InvalidArgument("problem", problem.describe(), "the truncation bounds take an unbatched sequence")
    if not isinstance(problem.loss, SquaredError) or not isinstance(problem.readout, LinearReadout):
        raise InvalidArgument(
            "problem", problem.describe(), "loss constants are derived for squared error on a linear readout"
        )
    if not isinstance(problem.cell, ElmanCell | LinearCell):
        raise AssumptionViolated("cell with explicit constants (linear or Elman)", problem.cell.describe())
    b = problem.cell_params(theta)["b"]
    if bool((b != 0).any()):
        raise AssumptionViolated(
            "phi_w(0, 0) = 0 (Miller & Hardt §2: no bias)", float(b.abs().max()), "use a bias-free instance"
        )
    if bool((problem.s0 != 0).any()):
        raise AssumptionViolated("h_0 = 0 (Miller & Hardt §2)", float(problem.s0.abs().max()))


def truncation_constants(
    problem: Problem,
    theta: torch.Tensor,
    *,
    trainable: tuple[str, ...] = ("W", "U"),
    omega: tuple[float, float] | None = None,
) -> TruncationConstants:
    r"""Constants of Lemmas 1–3 for this instance (``theory.instances.rnn_constants``), premises checked first.

    Measurements: :math:`\|W\|_2`, :math:`\|U\|_2`, :math:`B_x = \max_t\|x_t\|`,
    :math:`\|V\|_2` and :math:`\|c - y_T\|` (the loss is the one at the last step,
    :math:`p_T`). With ``omega = (W_radius, U_radius)`` the constants hold on the whole
    set Ω = {‖W‖₂ ≤ W_radius, ‖U‖₂ ≤ U_radius} (Lemma 3 and Prop. 2), not only at θ.
    """
    require_bound_setting(problem, theta)
    require_contraction(problem, theta)
    require_smooth(problem)
    p = problem.cell_params(theta)
    nW, nU = _spectral_norm(p["W"]), _spectral_norm(p["U"])
    if omega is not None:
        if nW > omega[0] * (1 + 1e-12) or nU > omega[1] * (1 + 1e-12):
            raise InvalidArgument("omega", omega, f"theta lies outside: ||W|| = {nW:.6g}, ||U|| = {nU:.6g}")
        nW, nU = float(omega[0]), float(omega[1])
    Bx = float(torch.linalg.vector_norm(problem.inputs.detach().to(torch.float64), dim=-1).max())
    r = problem.readout_params(theta)
    nV = _spectral_norm(r["V"])
    resid = float(torch.linalg.vector_norm((r["c"] - problem.targets[-1]).detach().to(torch.float64)))
    act = "identity" if isinstance(problem.cell, LinearCell) else "tanh"
    from theory.instances import rnn_constants  # sympy: imported when constants are asked for

    try:
        return rnn_constants(nW, nU, Bx, nV, resid, act, trainable)
    except ValueError as exc:  # omega radius not contractive
        raise AssumptionViolated("contraction on Omega: L_rho * W_radius < 1", nW, str(exc)) from None
