r"""Lemma 1 and Lemma 2 measured on one instance (Miller & Hardt, "Stable Recurrent Models", §3–§4).

The truncated model is eq. (3) (:math:`h^k_{t-k} = 0`, k transitions); :math:`p_T` is the loss
at the last step (``which="final"``); w = (W, U). :func:`evaluate_instance` compares, at every k,
the measured truncation errors of an implementation (its parts ``model_states``,
``model_gradient``, ``tbptt_gradient``, ``certificate``: the fields of
:class:`verify.impl.TruncationImpl`) with the bounds of :mod:`theory.truncation` evaluated with
the constants :func:`verify.oracles.contraction.truncation_constants` measures on the instance,
each with its predicted float64 round-off budget (:func:`verify.oracles.budget.roundoff_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch.func import jacrev

from theory import truncation as tt
from theory.truncation import TruncationConstants
from verify._narrow import as_reference_dtype
from verify.errors import AssumptionViolated
from verify.model.cells import ElmanCell, LinearCell
from verify.model.problem import Problem
from verify.oracles.bptt import tbptt_gradient, truncated_model_gradient, truncated_model_states
from verify.oracles.budget import pair_unit, roundoff_budget, unit_roundoff
from verify.oracles.contraction import ContractionCertificate, contraction_certificate, truncation_constants
from verify.stats.rates import fit_rate

__all__ = [
    "DEFAULT_TRUNCATION_IMPL",
    "WEIGHTS",
    "AtPrecision",
    "BoundSeries",
    "CertFn",
    "GradFn",
    "InstanceEvaluation",
    "OracleTruncationParts",
    "StatesFn",
    "TruncationParts",
    "at_precision",
    "evaluate_instance",
    "final_gradient",
    "judged_unit",
    "measured_contraction_rate",
    "truncated_final_gradient",
    "weight_index",
]

GradFn = Callable[[Problem, torch.Tensor, int], torch.Tensor]
StatesFn = Callable[[Problem, torch.Tensor, int], torch.Tensor]
CertFn = Callable[[Problem, torch.Tensor], ContractionCertificate]
WEIGHTS = ("W", "U")


class TruncationParts(Protocol):
    """The implementation parts the bound evaluations call (the fields of :class:`verify.impl.TruncationImpl`)."""

    @property
    def model_states(self) -> StatesFn: ...

    @property
    def model_gradient(self) -> GradFn: ...

    @property
    def tbptt_gradient(self) -> GradFn: ...

    @property
    def certificate(self) -> CertFn: ...


@dataclass(frozen=True)
class AtPrecision:
    """Truncation parts under test judged at the precision ``dtype`` they compute in (issue 37: declared, or
    ``--dtype float32``): every round-off budget of the bound comparisons and of the closed forms uses
    :func:`~verify.oracles.budget.pair_unit` of ``dtype`` instead of float64's unit. The parts are ``parts``'."""

    parts: Any
    dtype: torch.dtype

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parts, name)


def at_precision(parts: Any, dtype: torch.dtype) -> Any:
    """``parts`` judged at ``dtype``: :class:`AtPrecision` for float32, ``parts`` itself for float64."""
    return parts if dtype == torch.float64 else AtPrecision(parts, dtype)


def judged_unit(impl: Any, problem: Problem) -> float:
    """The rounding unit the budgets use for ``impl`` on ``problem``: the problem's, or float32's pair unit where
    ``impl`` is :class:`AtPrecision` float32."""
    dtype = impl.dtype if isinstance(impl, AtPrecision) else problem.dtype
    return pair_unit(dtype) if dtype != problem.dtype else unit_roundoff(problem.dtype)


def truncated_final_gradient(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    r""":math:`\nabla_\theta p^k_T`: the truncated model of eq. (3), loss at step T (:mod:`verify.oracles.bptt`)."""
    return truncated_model_gradient(problem, theta, k, which="final")


def _tbptt_final_gradient(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    return tbptt_gradient(problem, theta, k, which="final")


@dataclass(frozen=True)
class OracleTruncationParts:
    """The toolkit's parts: the float64 oracles (the default fields of :class:`verify.impl.TruncationImpl`)."""

    model_states: StatesFn = truncated_model_states
    model_gradient: GradFn = truncated_final_gradient
    tbptt_gradient: GradFn = _tbptt_final_gradient
    certificate: CertFn = contraction_certificate


#: the default truncation implementation (the toolkit's own parts) where no implementation is given
DEFAULT_TRUNCATION_IMPL = OracleTruncationParts()


def weight_index(problem: Problem, trainable: Sequence[str] = WEIGHTS) -> torch.Tensor:
    """Indices of the cell blocks ``cell.<name>`` (w of the paper) in the flat θ."""
    parts = [
        torch.arange(problem.layout[f"cell.{n}"].slice.start, problem.layout[f"cell.{n}"].slice.stop) for n in trainable
    ]
    return torch.cat(parts)


def final_gradient(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    r""":math:`\nabla_\theta p_T` untruncated: the truncated model with k = T (Miller & Hardt eq. (3))."""
    return truncated_model_gradient(problem, theta, problem.T, which="final")


@dataclass(frozen=True)
class BoundSeries:
    """Measured error and bound at each k for one instance and one bound.

    A comparison holds when ``error <= bound + budget`` (``budget``: predicted
    round-off of the error). ``tightness`` is the largest error/bound over the k
    whose bound lies above the budget (the informative comparisons).
    """

    name: str
    ks: tuple[int, ...]
    errors: tuple[float, ...]
    bounds: tuple[float, ...]
    budget: float

    @property
    def holds(self) -> bool:
        return all(e <= b + self.budget for e, b in zip(self.errors, self.bounds, strict=True))

    @property
    def informative(self) -> list[int]:
        """Indices whose bound exceeds the round-off budget 1000-fold (error/bound is meaningful there)."""
        return [i for i, b in enumerate(self.bounds) if b > 1e3 * self.budget]

    @property
    def tightness(self) -> float:
        idx = self.informative
        return max((self.errors[i] / self.bounds[i] for i in idx), default=math.nan)

    @property
    def allowance(self) -> float:
        """budget/bound where the tightness is largest: there ``holds`` means tightness <= 1 + allowance."""
        idx = self.informative
        if not idx:
            return 0.0
        i = max(idx, key=lambda j: self.errors[j] / self.bounds[j])
        return self.budget / self.bounds[i]

    @property
    def worst(self) -> tuple[int, float, float]:
        """(k, error, bound) of the largest error/(bound + budget)."""
        i = max(range(len(self.ks)), key=lambda j: self.errors[j] / (self.bounds[j] + self.budget))
        return self.ks[i], self.errors[i], self.bounds[i]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ks": list(self.ks),
            "errors": list(self.errors),
            "bounds": list(self.bounds),
            "budget": self.budget,
            "holds": self.holds,
            "tightness": self.tightness,
        }


@dataclass(frozen=True)
class InstanceEvaluation:
    """Every bound of the family evaluated on one instance (see :func:`evaluate_instance`)."""

    label: str
    kind: str
    lam: float
    T: int
    constants: TruncationConstants
    series: dict[str, BoundSeries]
    gamma: float
    grad_norm: float
    contraction_rate: float

    def summary_row(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "lam": self.lam,
            "T": self.T,
            "gamma": self.gamma,
            "measured_contraction": self.contraction_rate,
            **{f"{n}_holds": s.holds for n, s in self.series.items()},
            **{f"{n}_tightness": s.tightness for n, s in self.series.items()},
        }


def _state_budget(problem: Problem, scale: float, u: float) -> float:
    return roundoff_budget(u, problem.n + problem.cell.input_size, problem.T, 1.0) * max(scale, 1e-300)


def _grad_budget(problem: Problem, scale: float, u: float) -> float:
    depth = problem.n + problem.cell.input_size + problem.readout.output_size
    return roundoff_budget(u, depth, problem.T, 1.0) * max(scale, 1e-300)


def _state_series(
    problem: Problem, theta: torch.Tensor, impl: TruncationParts, c: TruncationConstants, sks: tuple[int, ...]
) -> BoundSeries:
    r"""Lemma 1: :math:`\max_t\|h_t - h^k_t\|` against :math:`\lambda^k L_xB_x/(1-\lambda)` at every k of ``sks``."""
    with torch.no_grad():
        h = problem.rollout(theta)[1:]
        hk = [as_reference_dtype(impl.model_states(problem, theta, k), h) for k in sks]
        errs = [float(torch.linalg.vector_norm(h - x, dim=-1).max()) for x in hk]
    scale = float(torch.linalg.vector_norm(h, dim=-1).max())
    return BoundSeries(
        "state",
        sks,
        tuple(errs),
        tuple(tt.state_bound(c, k) for k in sks),
        _state_budget(problem, scale, judged_unit(impl, problem)),
    )


def evaluate_instance(
    problem: Problem,
    theta: torch.Tensor,
    *,
    label: str = "",
    ks: Sequence[int] | None = None,
    impl: TruncationParts = DEFAULT_TRUNCATION_IMPL,
    parts: Sequence[str] = ("state", "model", "tbptt"),
    forms: Sequence[str] = (),
    with_rate: bool = True,
    state_ks: Sequence[int] | None = None,
) -> InstanceEvaluation:
    r"""Lemma 1 (``state``), Lemma 2 for the truncated model (``model``) and for truncated BPTT
    (``tbptt``) on one instance, at every k in ``ks`` (default 1..T−1).

    * state: :math:`\max_t\|h_t - h^k_t\| \le \lambda^k L_xB_x/(1-\lambda)`;
    * model: :math:`\|\nabla_w p_T - \nabla_w p^k_T\| \le` the proof's bound (sum of its four terms);
    * tbptt: :math:`\|\nabla_w p_T - \hat g^k_T\| \le \lambda^k L_pL_w/(1-\lambda)`.

    ``forms`` adds series of the model error against other forms of Lemma 2
    (``"gamma"``, ``"printed-proof"``, ...; see :func:`theory.truncation.gradient_bound`);
    ``state_ks`` restricts the (costlier, every-t) state comparison to some k.
    ``impl``: the implementation parts under test (default: the toolkit's own).
    Raises :class:`AssumptionViolated` when a premise fails (non-contractive, relu, bias).
    """
    cert = impl.certificate(problem, theta)
    if not cert.contractive:
        raise AssumptionViolated("contraction (Miller & Hardt eq. (2)): lambda < 1", cert.lam, cert.detail)
    c = truncation_constants(problem, theta)
    T = problem.T
    ks = tuple(ks) if ks is not None else tuple(range(1, T))
    series: dict[str, BoundSeries] = {}
    sks = tuple(k for k in state_ks if k < T) if state_ks is not None else ks
    if "state" in parts:
        series["state"] = _state_series(problem, theta, impl, c, sks)  # Lemma 1
    idx = weight_index(problem)
    u = judged_unit(impl, problem)
    gw = final_gradient(problem, theta)[idx]
    gnorm = float(torch.linalg.vector_norm(gw))
    if "model" in parts or forms:
        gk = [as_reference_dtype(impl.model_gradient(problem, theta, k), gw)[idx] for k in ks]
        series.update(_gradient_series(problem, "model", gw, gk, ks, c, forms, u))  # Lemma 2
    if "tbptt" in parts:
        gt = [as_reference_dtype(impl.tbptt_gradient(problem, theta, k), gw)[idx] for k in ks]
        series.update(_gradient_series(problem, "tbptt", gw, gt, ks, c, (), u))
    rate = measured_contraction_rate(problem, theta) if with_rate else math.nan
    kind = "linear" if isinstance(problem.cell, LinearCell) else "elman-tanh"
    return InstanceEvaluation(label, kind, c.lam, T, c, series, tt.gamma(c), gnorm, rate)


def _gradient_series(
    problem: Problem,
    name: str,
    gw: torch.Tensor,
    approx: Sequence[torch.Tensor],
    ks: tuple[int, ...],
    c: TruncationConstants,
    forms: Sequence[str],
    u: float,
) -> dict[str, BoundSeries]:
    r"""Lemma 2: :math:`\|\nabla_w p_T - g^k\|` at every k against its bound (``name``: ``model`` or ``tbptt``).

    ``model``: the proof's bound (:func:`theory.truncation.gradient_bound`), plus one series
    ``model:<form>`` per other form of ``forms``; ``tbptt``: :func:`theory.truncation.tbptt_bound`.
    """
    errs = tuple(float(torch.linalg.vector_norm(gw - x)) for x in approx)
    scale = max([float(torch.linalg.vector_norm(gw))] + [float(torch.linalg.vector_norm(x)) for x in approx])
    budget = _grad_budget(problem, scale, u)
    if name == "tbptt":
        return {"tbptt": BoundSeries("tbptt", ks, errs, tuple(tt.tbptt_bound(c, k) for k in ks), budget)}
    out = {"model": BoundSeries("model", ks, errs, tuple(tt.gradient_bound(c, k) for k in ks), budget)}
    for form in forms:
        out[f"model:{form}"] = BoundSeries(
            f"model:{form}", ks, errs, tuple(tt.gradient_bound(c, k, form) for k in ks), budget
        )
    return out


def _step_jacobian(problem: Problem, th: torch.Tensor, states: torch.Tensor, W: torch.Tensor | None, t: int) -> Any:
    r""":math:`\partial h_t/\partial h_{t-1}` along the trajectory (closed form for linear and tanh cells)."""
    if W is not None and isinstance(problem.cell, LinearCell):
        return W  # linear system: the Jacobian is W
    if W is not None and isinstance(problem.cell, ElmanCell) and problem.cell.activation == "tanh":
        return (1 - states[t] ** 2).unsqueeze(-1) * W  # diag(tanh'(a_t)) W, tanh' = 1 - h_t^2
    return jacrev(lambda s, t=t: problem.transition(th, s, problem.inputs[t - 1]))(states[t - 1])


def measured_contraction_rate(problem: Problem, theta: torch.Tensor) -> float:
    r"""The instance's measured contraction: exp of the slope of :math:`\log\|\partial h_T/\partial h_{T-j}\|_2` in j.

    :math:`\partial h_T/\partial h_{T-j} = J_T \cdots J_{T-j+1}` with the step
    Jacobians along the actual trajectory; for a linear system this tends to the
    spectral radius of W (≤ ‖W‖₂ = λ), for tanh it includes the saturation.
    """
    th = theta.detach()
    with torch.no_grad():
        states = problem.rollout(th)
    T = problem.T
    W = problem.cell_params(th)["W"] if isinstance(problem.cell, ElmanCell | LinearCell) else None
    Phi = torch.eye(problem.n, dtype=states.dtype)
    js, logs = [], []
    for j in range(1, T):
        Phi = Phi @ _step_jacobian(problem, th, states, W, T - j + 1)
        nrm = float(torch.linalg.matrix_norm(Phi, ord=2))
        if nrm <= 1e-280:
            break
        js.append(j)
        logs.append(math.log(nrm))
    if len(js) < 3:  # the rate engine's least fit; a 2-point "slope" has no interval
        return math.nan
    return math.exp(fit_rate(js, logs).slope)
