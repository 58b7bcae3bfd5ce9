r"""Local eligibility-trace approximations of RTRL: RFLO and e-prop (both *declared biased*).

Both keep a per-synapse trace :math:`P_t` of the shape of RTRL's influence :math:`\partial s_t/\partial\theta`
and drop the part of RTRL's recursion (Tallec & Ollivier 2017, eq. (4), arXiv:1702.05043)

.. math:: J_t = \frac{\partial F}{\partial s}\,J_{t-1} + \frac{\partial F}{\partial\theta}

that carries a parameter's influence from one unit to another through the recurrent weights. They
differ in which part of :math:`\partial F/\partial s` they keep:

**RFLO** (Murray 2019, "Local online learning in recurrent networks with random feedback", eLife 8:e43299,
bioRxiv 10.1101/458570; eq. (1) for the network, eqs. (10)-(13) for the rule; the reading of the public
numpy implementation of Marschall, Cho & Savin 2020, arXiv:1907.02649, §4.3). For the leaky rate units
:math:`s_t = (1-\alpha)s_{t-1} + \alpha\phi(a_t)`, :math:`a_t = W s_{t-1} + U x_t + b`
(:class:`~verify.model.cells.LeakyElmanCell`; an :class:`~verify.model.cells.ElmanCell` is α = 1):

.. math::
    P_t = (1-\alpha)\,P_{t-1} + \frac{\partial F}{\partial\theta}(x_t, s_{t-1}, \theta)
    \qquad\text{(Murray eq. (12): } P^t_{ab} = (1-\alpha)P^{t-1}_{ab} + \alpha\phi'(a^t_a)\,\hat h^{t-1}_b)

-- the leak only, the whole :math:`\alpha\,\mathrm{diag}(\phi'(a_t))\,W` term dropped ("the nonlocal term").

**e-prop** (Bellec, Scherr, Subramoney, Hajek, Salaj, Legenstein & Maass 2020, "A solution to the learning
dilemma for recurrent networks of spiking neurons", Nat. Commun. 11:3625, arXiv:1901.09049; eq. (13)-(14)
(eligibility vector :math:`\epsilon^t_{ji} = \frac{\partial h^t_j}{\partial h^{t-1}_j}\epsilon^{t-1}_{ji}
+ \frac{\partial h^t_j}{\partial W_{ji}}`, eligibility trace :math:`e^t_{ji} = \frac{\partial z^t_j}{\partial
h^t_j}\epsilon^t_{ji}`) and eq. (4) (gradient :math:`\sum_t L^t_j e^t_{ji}`)). *Reading implemented, for a
non-spiking rate unit whose hidden state is its output* (:math:`h_j = z_j = s_j`): the neuron's own
derivative :math:`\partial s^t_j/\partial s^{t-1}_j` is kept whole -- the diagonal of
:math:`\partial F/\partial s`, :math:`(1-\alpha) + \alpha\phi'(a_{t,j})W_{jj}`, self-connection included --
and every cross-unit term dropped:

.. math:: P_t = \mathrm{diag}\Big(\frac{\partial F}{\partial s}\Big) \odot P_{t-1} + \frac{\partial F}{\partial\theta}.

So e-prop = RFLO when :math:`\mathrm{diag}(W) = 0`, and e-prop = RTRL when W is diagonal (no cross-unit
path: the "implicit" term of Bellec eq. (3) vanishes). (Another reading holds z fixed in the partial, which
for this cell gives back RFLO's trace -- Marschall et al. 2020 note that for the vanilla RNN e-prop and RFLO
coincide; the reading here keeps them apart and is the one whose exactness limit is tested.)

**Learning signal** (both): :math:`\hat g_t = L_t^\top P_t + \partial\ell_t/\partial\theta|_{s_t}` with
:math:`L_t = \partial\ell_t/\partial s_t` (``feedback=None``: symmetric feedback, the readout's transpose;
Bellec's "symmetric e-prop", Murray's RFLO with :math:`B = W_{out}^\top`), or :math:`L_t = B\,\partial\ell_t/
\partial o_t` with a fixed (n, k) matrix ``feedback`` = B (random feedback: Murray eq. (11); Bellec's
"random e-prop"), which needs the linear readout of an observed state equal to the whole state.

Guarantee: **biased** (no claim about the mean); the limits in which each equals RTRL are tested in
``tests/estimators/test_local.py``, and :mod:`verify.estimators.alignment` measures how far each is.

The traces are stored densely, shape (M, *B, n, p) like RTRL's influence, and the one-step Jacobians come
from autograd: clarity over speed (the point here is the comparison with exact RTRL, not RFLO's O(n²) cost).
``immediate`` transforms :math:`\partial F/\partial\theta` before it enters the trace (identity by default):
the mutant catalog's "transposed eligibility trace" is such a transform.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.estimators.guarantee import Guarantee
from verify.estimators.online import (
    _Named,
    batch_numel,
    check_problem_theta,
    check_step,
    expand_samples,
    shared,
)
from verify.estimators.rtrl import RTRL
from verify.model.cells import ElmanCell, LeakyElmanCell, LinearCell
from verify.model.losses import LinearReadout
from verify.model.problem import Problem

__all__ = ["RFLO", "EProp", "TraceState", "identity_immediate", "transposed_recurrent_trace"]

#: (problem, ∂F/∂θ of shape (|B|, n, p)) -> the immediate term that enters the trace
Immediate = Callable[[Problem, torch.Tensor], torch.Tensor]

_JACOBIANS = RTRL(path="generic", label="local-trace-jacobians")


class TraceState(NamedTuple):
    """The state of RFLO / e-prop: the forward state and the eligibility trace."""

    s: torch.Tensor  #: (M, *B, n)
    trace: torch.Tensor  #: P_t, (M, *B, n, p)


def identity_immediate(problem: Problem, J_th: torch.Tensor) -> torch.Tensor:
    """The paper's immediate term: ∂F/∂θ unchanged."""
    return J_th


def transposed_recurrent_trace(problem: Problem, J_th: torch.Tensor) -> torch.Tensor:
    r"""A seeded bug: the W block of the immediate term transposed, :math:`\phi'(a_b)s_a` in place of
    :math:`\phi'(a_a)s_b` (pre- and postsynaptic indices swapped), moved to the row of the unit it belongs to."""
    sl = problem.layout["cell.W"].slice
    n = problem.n
    blk = J_th[:, :, sl].reshape(-1, n, n, n)  # (|B|, unit i, row r, column c), nonzero only at r = i
    v = torch.diagonal(blk, dim1=1, dim2=2).transpose(1, 2)  # v[b, i, c] = blk[b, i, i, c]
    out = J_th.clone()
    new = torch.zeros_like(blk)
    idx = torch.arange(n, device=J_th.device)
    new[:, idx, idx, :] = v.transpose(1, 2)  # entry (i, c) takes the value of (c, i)
    out[:, :, sl] = new.reshape(J_th.shape[0], n, n * n)
    return out


def _leak(problem: Problem, who: str) -> float:
    cell = problem.cell
    if isinstance(cell, LeakyElmanCell):
        return cell.leak
    if isinstance(cell, (ElmanCell, LinearCell)):
        return 0.0  # α = 1: no leak
    raise InvalidArgument(
        "problem",
        cell.describe(),
        f"{who} is defined for rate units (LeakyElmanCell, ElmanCell, LinearCell), not {type(cell).__name__}",
    )


@dataclass(frozen=True, eq=False)
class _LocalTrace(_Named):
    feedback: torch.Tensor | None = None
    immediate: Immediate = identity_immediate
    label: str = ""

    _default_name = "local"

    @property
    def guarantee(self) -> Guarantee:
        raise NotImplementedError

    def __post_init__(self) -> None:
        fb = self.feedback
        if fb is not None and (not isinstance(fb, torch.Tensor) or fb.dim() != 2):
            what = f"tensor of shape {tuple(fb.shape)}" if isinstance(fb, torch.Tensor) else type(fb).__name__
            raise InvalidArgument("feedback", what, "must be None (symmetric) or an (n, k) feedback matrix B")
        if not callable(self.immediate):
            raise InvalidArgument("immediate", self.immediate, "must be a function (problem, dF/dtheta) -> tensor")
        object.__setattr__(self, "name", self.label or self._default_name + ("" if fb is None else "-random-B"))

    def _check_feedback(self, problem: Problem) -> torch.Tensor | None:
        fb = self.feedback
        if fb is None:
            return None
        k = problem.readout.output_size
        if not isinstance(problem.readout, LinearReadout) or problem.cell.observed_size != problem.n:
            raise InvalidArgument("feedback", "a matrix B", "random feedback needs a linear readout of the whole state")
        if tuple(fb.shape) != (problem.n, k):
            raise InvalidArgument("feedback", f"shape {tuple(fb.shape)}", f"expected (n, k) = ({problem.n}, {k})")
        return fb.to(dtype=problem.dtype, device=problem.device)

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        """The kept part of ∂F/∂s as a per-unit factor, shape (|B|, n)."""
        raise NotImplementedError

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> TraceState:
        """:math:`s_0` and :math:`P_0 = 0`."""
        M = require_positive_int("samples", samples)
        check_problem_theta(problem, theta)
        _leak(problem, self.name)
        self._check_feedback(problem)
        P = torch.zeros((*problem.batch_shape, problem.n, problem.p), dtype=problem.dtype, device=problem.device)
        return TraceState(expand_samples(problem.s0.clone(), M), expand_samples(P, M))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: TraceState, t: int, rng: torch.Generator
    ) -> tuple[TraceState, torch.Tensor]:
        r"""One step of the trace recursion; the estimate :math:`L_t^\top P_t + \partial\ell_t/\partial\theta`."""
        n, p, B = problem.n, problem.p, problem.batch_shape
        theta, M = check_step(self.name, problem, theta, state, t, {"s": (*B, n), "trace": (*B, n, p)})
        fb = self._check_feedback(problem)
        s_prev = shared("state.s", state.s)
        P_prev = shared("state.trace", state.trace)
        nb = batch_numel(problem)
        with torch.enable_grad():
            th = theta.clone().requires_grad_(True)
            s_in = s_prev.detach().clone().requires_grad_(True)
            s_next, J_s, J_th = _JACOBIANS.transition_jacobians(problem, th, s_in, problem.inputs[t - 1])
            s_leaf = s_next.detach().requires_grad_(True)
            out = problem.output(th, s_leaf)
            o_leaf = out.detach().requires_grad_(True)
            loss_o = problem.loss(o_leaf, problem.targets[t - 1])
            (dl_do,) = torch.autograd.grad(loss_o, (o_leaf,))
            d_th, d_s = torch.autograd.grad(out, (th, s_leaf), grad_outputs=dl_do, allow_unused=True)
        dl_dth = torch.zeros_like(theta) if d_th is None else d_th.detach()
        if fb is None:  # symmetric feedback: the exact ∂ℓ_t/∂s_t
            signal = torch.zeros_like(s_leaf) if d_s is None else d_s.detach()
        else:  # random feedback B (Murray eq. (11)): L_t = B ∂ℓ_t/∂o_t
            signal = dl_do.detach() @ fb.transpose(0, 1)
        imm = self.immediate(problem, J_th.detach())
        P = self.decay(problem, J_s.detach()).unsqueeze(-1) * P_prev.reshape(nb, n, p) + imm  # eq. (12) / (13)
        g = torch.einsum("bi,bip->p", signal.reshape(nb, n), P) + dl_dth  # Murray eq. (13), Bellec eq. (4)
        new = TraceState(expand_samples(s_next.detach(), M), expand_samples(P.reshape(*B, n, p), M))
        return new, expand_samples(g, M)


@dataclass(frozen=True, eq=False)
class RFLO(_LocalTrace):
    r"""RFLO (Murray 2019, eq. (12)-(13)): the trace decays by the leak :math:`1-\alpha` only (module docstring).

    ``feedback``: None (symmetric: :math:`B = W_{out}^\top`) or a fixed (n, k) matrix B. Defined for
    :class:`~verify.model.cells.LeakyElmanCell`, :class:`~verify.model.cells.ElmanCell` and
    :class:`~verify.model.cells.LinearCell` (α = 1); other cells are refused naming the problem.
    """

    _default_name = "rflo"

    @property
    def guarantee(self) -> Guarantee:
        """Biased: exact only without recurrent interaction (W = 0) or at t = 1 (Murray 2019, §"RFLO learning")."""
        return Guarantee("biased", source="Murray 2019, eLife 8:e43299, eq. (12)-(13)")

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        return torch.full(J_s.shape[:2], _leak(problem, self.name), dtype=J_s.dtype, device=J_s.device)  # eq. (12)


@dataclass(frozen=True, eq=False)
class EProp(_LocalTrace):
    r"""e-prop for rate units (Bellec et al. 2020, eq. (13)-(14), (4)): the trace decays by each unit's own
    derivative, the diagonal of :math:`\partial F/\partial s` (module docstring for the reading)."""

    _default_name = "eprop"

    @property
    def guarantee(self) -> Guarantee:
        """Biased: exact only when no unit influences another (diagonal W), Bellec et al. 2020 eq. (3)."""
        return Guarantee("biased", source="Bellec et al. 2020, Nat. Commun. 11:3625, eq. (13)-(14)")

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        _leak(problem, self.name)
        return torch.diagonal(J_s, dim1=-2, dim2=-1)  # ∂s_j^t/∂s_j^{t-1}, Bellec eq. (13)
