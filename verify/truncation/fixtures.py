r"""Fixtures of the truncation claims (Miller & Hardt, "Stable Recurrent Models"): instances with known answers.

* :func:`extremal_linear_problem` -- the scalar linear system on which Lemmas 1–2 are nearly
  tight, with its independent closed form :func:`scalar_closed_form` and the conformance of an
  implementation part to it (:func:`conformance`);
* :func:`prop3_problem` -- Prop. 3's unstable scalar system (App. A.4);
* :func:`figure1_instance` -- a random instance of §7.1 / App. A.5 (Fig. 1(a), Prop. 2), or the same
  instance with U rescaled so that tanh is not saturated (:data:`UNSATURATED_INPUT_SD`), and how
  saturated an instance's tanh is (:func:`tanh_saturation`);
* :func:`random_suite` -- random λ-contractive tanh and linear instances, λ in [0.3, 0.95].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.model.builders import clip_spectral_norm, contractive_problem, make_cell
from verify.model.cells import ElmanCell, LinearCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem
from verify.oracles.budget import roundoff_budget
from verify.truncation.instances import TruncationParts, final_gradient, judged_unit, weight_index
from verify.truncation.rate_fit import RATE_DECADES

__all__ = [
    "FIB",
    "TANH_UNSATURATED",
    "UNSATURATED_INPUT_SD",
    "Instance",
    "SuiteSetup",
    "conformance",
    "extremal_linear_problem",
    "figure1_instance",
    "prop3_problem",
    "random_suite",
    "scalar_closed_form",
    "scalar_theta",
    "tanh_saturation",
    "unstable_suite",
]

#: the k at which the (costlier, every-t) state comparison is made
FIB = (1, 2, 3, 5, 8, 13, 21, 34, 55)

#: a labelled instance: (label, problem, θ)
Instance = tuple[str, Problem, torch.Tensor]

#: Fig. 1(b) beside the printed instance: the s.d. of each unit's input drive (U x_t)_i after U is rescaled. App. A.5's
#: U_ij ~ N(0, 0.5), x_t ~ N(0, 4I_d) gives s.d. sqrt(2d) = 8 at d = 32: tanh is saturated (mean tanh' ~ 0.1) and
#: the truncation changes nothing above round-off. At 0.5 (pre-activation s.d. ~ 0.6, mean tanh' ~ 0.77) the k = 35
#: curve lies ~1e4 above the round-off allowance; at 1.0 (mean tanh' ~ 0.57) it lies within ~10x of it.
UNSATURATED_INPUT_SD = 0.5
#: tanh counts as not saturated on an instance when the mean of tanh'(a) over its units and steps is at least this
#: (the gradient keeps half its size through the nonlinearity on average; App. A.5: ~0.1 at d = 32, ~0.23 at d = 8)
TANH_UNSATURATED = 0.5


def scalar_theta(P: Problem, w: float, u: float, v: float) -> torch.Tensor:
    """θ of a scalar linear problem: W = w, U = u, b = 0, readout V = v, c = 0 (float64)."""

    def one(x: float) -> torch.Tensor:
        return torch.full((1, 1), float(x), dtype=torch.float64)

    zero = torch.zeros(1, dtype=torch.float64)
    return P.layout.flatten(
        {"cell.W": one(w), "cell.U": one(u), "cell.b": zero, "readout.V": one(v), "readout.c": zero}
    )


def extremal_linear_problem(
    lam: float, T: int = 120, *, u: float = 10.0, v: float = 0.1, y: float = -100.0
) -> tuple[Problem, torch.Tensor]:
    r"""The scalar linear system on which Lemmas 1–2 are nearly tight.

    :math:`h_t = \lambda h_{t-1} + u x_t` with :math:`x_t = 1`.

    States climb to :math:`B_h = u/(1-\lambda)` and every term of the proofs adds up
    with the same sign: the state error is exactly :math:`\lambda^k h_{T-k}`, the
    truncated-BPTT error is the dropped long-term sum, and with a target far from the
    prediction (``y`` ≪ 0, small ``v``) the loss gradient in h is close to :math:`L_p`.
    """
    cell = LinearCell(1, 1)
    P = Problem(
        cell,
        LinearReadout(1, 1),
        SquaredError(),
        torch.ones(T, 1, dtype=torch.float64),
        torch.full((T, 1), float(y), dtype=torch.float64),
        torch.zeros(1, dtype=torch.float64),
    )
    return P, scalar_theta(P, lam, u, v)


def scalar_closed_form(lam: float, u: float, v: float, y: float, T: int, k: int) -> dict[str, Any]:
    r"""Independent plain-float evaluation for :func:`extremal_linear_problem` (x_t = 1).

    Returns the truncated states :math:`h^k_t` (t = 1..T), and the (W, U) components of
    :math:`\nabla p_T - \nabla p^k_T` and :math:`\nabla p_T - \hat g^k_T`, from
    :math:`\nabla_W p_T = p'(h_T)\sum_t\lambda^{T-t}h_{t-1}`, :math:`\nabla_U p_T = p'(h_T)\sum_t\lambda^{T-t}`,
    :math:`p'(h) = v(vh - y)`.
    """
    h = [0.0]
    for _ in range(T):
        h.append(lam * h[-1] + u)
    trunc_states = [h[t] if t <= k else u * (1 - lam**k) / (1 - lam) for t in range(1, T + 1)]
    g = [0.0] * (T + 1)  # truncated chain ending at T
    for t in range(max(T - k, 0) + 1, T + 1):
        g[t] = lam * g[t - 1] + u
    if T - k <= 0:
        g = h[:]

    def dp(x: float) -> float:
        return v * (v * x - y)

    full = (
        dp(h[T]) * sum(lam ** (T - t) * h[t - 1] for t in range(1, T + 1)),
        dp(h[T]) * sum(lam ** (T - t) for t in range(1, T + 1)),
    )
    lo = max(T - k, 0) + 1
    model = (
        dp(g[T]) * sum(lam ** (T - t) * g[t - 1] for t in range(lo, T + 1)),
        dp(g[T]) * sum(lam ** (T - t) for t in range(lo, T + 1)),
    )
    tb = (
        dp(h[T]) * sum(lam ** (T - t) * h[t - 1] for t in range(lo, T + 1)),
        dp(h[T]) * sum(lam ** (T - t) for t in range(lo, T + 1)),
    )
    return {
        "states": trunc_states,
        "model_error": (full[0] - model[0], full[1] - model[1]),
        "tbptt_error": (full[0] - tb[0], full[1] - tb[1]),
        "scale": max(abs(full[0]), abs(full[1]), abs(model[0]), abs(h[T])),
    }


def conformance(
    part: str, impl: TruncationParts, lam: float, T: int, ks: Sequence[int], **kw: float
) -> tuple[bool, float]:
    """Worst |implementation − closed form| / budget on the scalar fixture (≤ 1: conforms)."""
    u, v, y = kw.get("u", 10.0), kw.get("v", 0.1), kw.get("y", -100.0)
    P, th = extremal_linear_problem(lam, T, u=u, v=v, y=y)
    idx = weight_index(P)
    g = final_gradient(P, th)[idx]
    worst = 0.0
    for k in ks:
        cf = scalar_closed_form(lam, u, v, y, T, k)
        budget = 64 * roundoff_budget(judged_unit(impl, P), 3, T, 1.0) * cf["scale"]
        if part == "state":
            got = impl.model_states(P, th, k)[:, 0]
            err = float((got - torch.tensor(cf["states"], dtype=torch.float64)).abs().max())
        else:
            fn = impl.model_gradient if part == "model" else impl.tbptt_gradient
            got = g - fn(P, th, k)[idx]
            want = torch.tensor(cf["model_error" if part == "model" else "tbptt_error"], dtype=torch.float64)
            err = float((got - want).abs().max())
        worst = max(worst, err / budget)
    return worst <= 1.0, worst


def prop3_problem(a: float = 2.0, T: int = 30) -> tuple[Problem, torch.Tensor]:
    r"""Prop. 3's scalar system (App. A.4).

    :math:`h_t = a h_{t-1} + x_t`, :math:`x_1 = 1`, :math:`x_t = 0` afterwards, :math:`y = h`.
    """
    x = torch.zeros(T, 1, dtype=torch.float64)
    x[0] = 1.0
    P = Problem(
        LinearCell(1, 1),
        LinearReadout(1, 1),
        SquaredError(),
        x,
        torch.zeros(T, 1, dtype=torch.float64),
        torch.zeros(1, dtype=torch.float64),
    )
    theta = P.layout.flatten(
        {
            "cell.W": torch.tensor([[a]], dtype=torch.float64),
            "cell.U": torch.ones(1, 1, dtype=torch.float64),
            "cell.b": torch.zeros(1, dtype=torch.float64),
            "readout.V": torch.ones(1, 1, dtype=torch.float64),
            "readout.c": torch.zeros(1, dtype=torch.float64),
        }
    )
    return P, theta


def figure1_instance(
    kind: str, n: int, d: int, T: int, lam: float, gen: torch.Generator, *, input_sd: float | None = None
) -> tuple[Problem, torch.Tensor]:
    r"""A random instance of §7.1 / App. A.5: :math:`x_t \sim N(0, 4I)`, :math:`U_{ij}, W_{ij} \sim N(0, 0.5)`,
    W's singular values thresholded at λ, :math:`y_T \sim U[-2, 2]`, prediction :math:`f(h, x) = Ch + Dx`
    with :math:`C, D \sim N(0, I)`, squared loss at step T.

    ``input_sd``: ``None``, the printed instance; a value s, the same draws with U multiplied by
    :math:`s/\sqrt{2d}`, so that each unit's input drive :math:`(Ux_t)_i` has s.d. s instead of
    :math:`\sqrt{2d}` (:data:`UNSATURATED_INPUT_SD`); W, and so the contraction λ, are unchanged.
    Departure: the term :math:`Dx_T` is folded into the target (:math:`y_T - Dx_T`), which
    leaves :math:`p_T` and its gradient unchanged; no bias, :math:`h_0 = 0`.
    """
    if input_sd is not None and not (math.isfinite(input_sd) and input_sd > 0):
        raise InvalidArgument("input_sd", input_sd, "a positive finite number, or None for the printed instance")
    cell = make_cell(kind, n, d)
    x = 2.0 * torch.randn(T, d, generator=gen, dtype=torch.float64)
    U = math.sqrt(0.5) * torch.randn(n, d, generator=gen, dtype=torch.float64)
    if input_sd is not None:
        U = U * (input_sd / math.sqrt(2 * d))  # Var((Ux)_i) = d * 0.5 * 4 = 2d before the rescaling
    W = clip_spectral_norm(math.sqrt(0.5) * torch.randn(n, n, generator=gen, dtype=torch.float64), lam)
    C = torch.randn(1, n, generator=gen, dtype=torch.float64)
    D = torch.randn(1, d, generator=gen, dtype=torch.float64)
    yT = 4.0 * torch.rand(1, generator=gen, dtype=torch.float64) - 2.0
    targets = torch.zeros(T, 1, dtype=torch.float64)
    targets[-1] = yT - D @ x[-1]
    P = Problem(cell, LinearReadout(n, 1), SquaredError(), x, targets, torch.zeros(n, dtype=torch.float64))
    theta = P.layout.flatten(
        {
            "cell.W": W,
            "cell.U": U,
            "cell.b": torch.zeros(n, dtype=torch.float64),
            "readout.V": C,
            "readout.c": torch.zeros(1, dtype=torch.float64),
        }
    )
    return P, theta


def tanh_saturation(problem: Problem, theta: torch.Tensor) -> dict[str, float]:
    r"""How saturated the tanh of ``problem`` at ``theta`` is along its input sequence (from :math:`h_0`).

    The pre-activations :math:`a_t = Wh_{t-1} + Ux_t + b`: their s.d. over units and steps
    (``preactivation_sd``), the mean of :math:`\tanh'(a_t) = 1 - \tanh^2(a_t)` (``mean_derivative``; not
    saturated: at least :data:`TANH_UNSATURATED`) and the fraction with :math:`|a| > 2`, where
    :math:`\tanh' < 0.071` (``saturated_fraction``). For a cell without tanh (linear): derivative 1, fraction 0.
    """
    cell = problem.cell
    tanh = isinstance(cell, ElmanCell) and cell.activation == "tanh"
    if not (tanh or isinstance(cell, LinearCell)):
        raise InvalidArgument("problem", cell.describe(), "a tanh Elman cell or a linear cell")
    prm = problem.layout.unflatten(theta)
    W, U, b = prm["cell.W"], prm["cell.U"], prm["cell.b"]
    h, pre = problem.s0.clone(), []
    for x in problem.inputs:
        a = W @ h + U @ x + b
        pre.append(a)
        h = torch.tanh(a) if tanh else a
    A = torch.stack(pre)
    deriv = 1.0 - torch.tanh(A) ** 2 if tanh else torch.ones_like(A)
    frac = (A.abs() > 2.0).double().mean() if tanh else torch.zeros(())
    return {
        "preactivation_sd": float(A.std()),
        "mean_derivative": float(deriv.mean()),
        "saturated_fraction": float(frac),
    }


@dataclass(frozen=True)
class SuiteSetup:
    """The random suite: ``full`` draws ``count`` instances (λ, kind, sizes random); otherwise six fixed λ."""

    full: bool = False
    count: int = 200


def random_suite(gen: torch.Generator, setup: SuiteSetup) -> list[Instance]:
    """Random λ-contractive instances (``verify.testing.strategies.contractive_problem``), λ in [0.3, 0.95]."""
    out = []
    if setup.full:
        for i in range(setup.count):
            lam = 0.3 + 0.65 * float(torch.rand(1, generator=gen))
            kind = ("elman-tanh", "linear")[i % 2]
            n, d = int(torch.randint(1, 9, (1,), generator=gen)), int(torch.randint(1, 4, (1,), generator=gen))
            T = int(torch.randint(20, 101, (1,), generator=gen))
            P, th = contractive_problem(kind, lam=lam, n=n, d=d, T=T, k=2, generator=gen)
            out.append((f"{kind}/lam={lam:.3f}/n={n}/d={d}/T={T}", P, th))
    else:
        for i, lam in enumerate((0.3, 0.5, 0.65, 0.8, 0.9, 0.95)):
            kind = ("elman-tanh", "linear")[i % 2]
            n, d = 2 + i % 4, 1 + i % 3
            T = max(24, math.ceil(RATE_DECADES * math.log(10.0) / -math.log(lam)) + 6)  # a window the rate fit can use
            P, th = contractive_problem(kind, lam=lam, n=n, d=d, T=T, k=2, generator=gen)
            out.append((f"{kind}/lam={lam:.2f}/n={n}/d={d}/T={T}", P, th))
    return out


def unstable_suite() -> list[Instance]:
    """Prop. 3's unstable system a = 2 (T = 12) as the suite: every bound check must refuse it."""
    P, th = prop3_problem(2.0, 12)
    return [("prop3 a=2", P, th)]
