r"""Local eligibility-trace approximations of RTRL: RFLO and e-prop (both *declared biased*).

Both keep a per-synapse trace :math:`P_t` of the shape of RTRL's influence :math:`\partial s_t/\partial\theta`
and drop the part of RTRL's recursion (Tallec & Ollivier 2017, eq. (4), arXiv:1702.05043)

.. math:: J_t = \frac{\partial F}{\partial s}\,J_{t-1} + \frac{\partial F}{\partial\theta}

that carries a parameter's influence from one unit to another through the recurrent weights. They
differ in which part of :math:`\partial F/\partial s` they keep:

**RFLO** (Murray 2019, "Local online learning in recurrent networks with random feedback", eLife 8:e43299,
doi 10.7554/eLife.43299, preprint bioRxiv 10.1101/458570; the network is his eq. (1), the rule is the RFLO
learning rule of his Results, whose equation numbers are not checked here against the published text). The
reading implemented is the one of the public numpy implementation accompanying Marschall, Cho & Savin 2020
(omarschall/vanilla-rtrl, ``learning_algorithms/RFLO.py``: :math:`B \leftarrow (1-\alpha)B +
\alpha\,\phi'(h)\,\hat a^\top`, gradient :math:`q_i B_{ij}`). For the leaky rate units
:math:`s_t = (1-\alpha)s_{t-1} + \alpha\phi(a_t)`, :math:`a_t = W s_{t-1} + U x_t + b`
(:class:`~verify.model.cells.LeakyElmanCell`; an :class:`~verify.model.cells.ElmanCell` is α = 1):

.. math::
    P_t = (1-\alpha)\,P_{t-1} + \frac{\partial F}{\partial\theta}(x_t, s_{t-1}, \theta),
    \qquad P^t_{ab} = (1-\alpha)P^{t-1}_{ab} + \alpha\phi'(a^t_a)\,\hat s^{t-1}_b \text{ for } W, U, b

-- the leak only, the whole :math:`\alpha\,\mathrm{diag}(\phi'(a_t))\,W` term dropped ("the nonlocal term").

**e-prop** (Bellec, Scherr, Subramoney, Hajek, Salaj, Legenstein & Maass 2020, "A solution to the learning
dilemma for recurrent networks of spiking neurons", Nat. Commun. 11:3625, doi 10.1038/s41467-020-17236-y,
preprint bioRxiv 10.1101/738385; an earlier version of e-prop is arXiv:1901.09049): the loss gradient factorised
as :math:`\sum_t L^t_j e^t_{ji}` (their eq. (3), which their Fig. 6 says the eligibility traces and learning
signals "merge into"), with the eligibility vector :math:`\epsilon^t_{ji} = \frac{\partial h^t_j}{\partial
h^{t-1}_j}\epsilon^{t-1}_{ji} + \frac{\partial h^t_j}{\partial W_{ji}}` and trace :math:`e^t_{ji} =
\frac{\partial z^t_j}{\partial h^t_j}\epsilon^t_{ji}` computed forward in time (their eq. (14) and the one
before it, Methods; Fig. 6b). *Reading implemented, for a non-spiking rate unit whose hidden state is its
output* (:math:`h_j = z_j = s_j`): the neuron's own derivative :math:`\partial s^t_j/\partial s^{t-1}_j` is
kept whole -- the diagonal of :math:`\partial F/\partial s`, :math:`(1-\alpha) + \alpha\phi'(a_{t,j})W_{jj}`,
self-connection included -- and every cross-unit term dropped:

.. math:: P_t = \mathrm{diag}\Big(\frac{\partial F}{\partial s}\Big) \odot P_{t-1} + \frac{\partial F}{\partial\theta}.

So e-prop = RFLO when :math:`\mathrm{diag}(W) = 0`, and e-prop = RTRL when W is diagonal (no cross-unit
path, so nothing is dropped). Another reading takes the hidden state :math:`h` as the pre-activation and the
output :math:`z = \phi(h)` as what other neurons (and the neuron itself) receive; holding z fixed in the
partial then drops the self-connection as well, which for this cell gives RFLO's trace exactly (the
vanilla-rtrl library of Marschall et al. 2020 has an RFLO module and no separate e-prop one for the rate
network). The reading here keeps e-prop and RFLO apart and is the one whose exactness limit (diagonal W) is
checked by ``rtrl.eprop-limits``.

**Learning signal** (both): :math:`\hat g_t = L_t^\top P_t + \partial\ell_t/\partial\theta|_{s_t}` with
:math:`L_t = \partial\ell_t/\partial s_t` (``feedback=None``: symmetric feedback, the readout's transpose;
Bellec's "symmetric e-prop", Murray's RFLO with :math:`B = W_{out}^\top`), or :math:`L_t = B\,\partial\ell_t/
\partial o_t` with a fixed (n, k) matrix ``feedback`` = B (random feedback: Murray's fixed random matrix B; Bellec's
"random e-prop"), which needs the linear readout of an observed state equal to the whole state.

Guarantee: **biased** (no claim about the mean); the limits in which each equals RTRL are the claims
``rtrl.rflo-limits`` and ``rtrl.eprop-limits`` (rows computed by :func:`limits_suite`, decided by
:mod:`verify.checks.rtrl_local`), and :mod:`verify.estimators.alignment` measures how far each is elsewhere.

The traces are stored densely, shape (M, *B, n, p) like RTRL's influence, and the one-step Jacobians come
from autograd by default: clarity over speed (the point here is the comparison with exact RTRL, not RFLO's O(n²)
cost); ``path="auto"`` takes RTRL's structured Jacobians (:mod:`verify.estimators.kernels`, tested equal to
autograd's) on the standard cells, for long training runs (the ``marschall-add`` sweep).
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
from verify.estimators import kernels
from verify.estimators.base import OnlineEstimator
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
from verify.estimators.snap import relative_bias
from verify.model.builders import leaky_problem, random_problem
from verify.model.cells import ElmanCell, LeakyElmanCell, LinearCell
from verify.model.losses import LinearReadout
from verify.model.problem import Problem

__all__ = [
    "LIMIT_CELLS",
    "LIMIT_PLANS",
    "RFLO",
    "EProp",
    "Immediate",
    "TraceState",
    "identity_immediate",
    "limits_suite",
    "transposed_recurrent_trace",
]

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
    path: str = "generic"

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
        kernels.check_path(self.path)
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

    def learning_signal(
        self,
        problem: Problem,
        theta: torch.Tensor,
        dl_ds: torch.Tensor,
        dl_do: torch.Tensor,
        feedback: torch.Tensor | None,
    ) -> torch.Tensor:
        r""":math:`L_t`, shape (*B, n): the exact :math:`\partial\ell_t/\partial s_t` (symmetric feedback) or
        :math:`B\,\partial\ell_t/\partial o_t` (a fixed feedback matrix B)."""
        if feedback is None:
            return dl_ds
        return dl_do @ feedback.transpose(0, 1)

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
            jac = _JACOBIANS if self.path == "generic" else RTRL(path=self.path, label="local-trace-jacobians")
            s_next, J_s, J_th = jac.transition_jacobians(problem, th, s_in, problem.inputs[t - 1])
            s_leaf = s_next.detach().requires_grad_(True)
            out = problem.output(th, s_leaf)
            o_leaf = out.detach().requires_grad_(True)
            loss_o = problem.loss(o_leaf, problem.targets[t - 1])
            (dl_do,) = torch.autograd.grad(loss_o, (o_leaf,))
            d_th, d_s = torch.autograd.grad(out, (th, s_leaf), grad_outputs=dl_do, allow_unused=True)
        dl_dth = torch.zeros_like(theta) if d_th is None else d_th.detach()
        dl_ds = torch.zeros_like(s_leaf) if d_s is None else d_s.detach()
        signal = self.learning_signal(problem, theta, dl_ds, dl_do.detach(), fb)
        imm = self.immediate(problem, J_th.detach())
        P = (
            self.decay(problem, J_s.detach()).unsqueeze(-1) * P_prev.reshape(nb, n, p) + imm
        )  # the trace (module docstring)
        g = torch.einsum("bi,bip->p", signal.reshape(nb, n), P) + dl_dth  # Σ_j L_j P_j· (Bellec eq. (3))
        new = TraceState(expand_samples(s_next.detach(), M), expand_samples(P.reshape(*B, n, p), M))
        return new, expand_samples(g, M)


@dataclass(frozen=True, eq=False)
class RFLO(_LocalTrace):
    r"""RFLO (Murray 2019, RFLO learning rule): the trace decays by the leak :math:`1-\alpha` only (module docstring).

    ``feedback``: None (symmetric: :math:`B = W_{out}^\top`) or a fixed (n, k) matrix B. Defined for
    :class:`~verify.model.cells.LeakyElmanCell`, :class:`~verify.model.cells.ElmanCell` and
    :class:`~verify.model.cells.LinearCell` (α = 1); other cells are refused naming the problem.
    """

    _default_name = "rflo"

    @property
    def guarantee(self) -> Guarantee:
        """Biased: exact only without recurrent interaction (W = 0) or at t = 1 (Murray 2019, §"RFLO learning")."""
        return Guarantee("biased", source="Murray 2019, eLife 8:e43299, RFLO learning rule")

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        return torch.full(J_s.shape[:2], _leak(problem, self.name), dtype=J_s.dtype, device=J_s.device)  # the leak only


@dataclass(frozen=True, eq=False)
class EProp(_LocalTrace):
    r"""e-prop for rate units (Bellec et al. 2020, eq. (14) and (3)): the trace decays by each unit's own
    derivative, the diagonal of :math:`\partial F/\partial s` (module docstring for the reading)."""

    _default_name = "eprop"

    @property
    def guarantee(self) -> Guarantee:
        """Biased: exact only when no unit influences another (diagonal W): the cross-unit terms are dropped."""
        return Guarantee("biased", source="Bellec et al. 2020, Nat. Commun. 11:3625, eq. (3), (14)")

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        _leak(problem, self.name)
        return torch.diagonal(
            J_s, dim1=-2, dim2=-1
        )  # ∂s_j^t/∂s_j^{t-1}: the eligibility vector's factor (Bellec eq. (14))


#: the rows of :func:`limits_suite` per rule: (recurrence, steps, what the theory says)
LIMIT_PLANS: dict[str, tuple[tuple[str, str, str], ...]] = {
    # RFLO drops all of alpha*diag(phi')W J_{t-1}: exact at W = 0 and at t = 1 (J_0 = P_0 = 0); it drops the
    # self-connection too, so it is biased for a diagonal W (where e-prop is exact) and for a dense one
    "rflo": (
        ("zero", "all", "exact"),
        ("dense", "first", "exact"),
        ("diagonal", "all", "biased"),
        ("dense", "all", "biased"),
    ),
    # e-prop keeps each unit's own derivative: exact for a diagonal W (no cross-unit path) and at t = 1
    "eprop": (("diagonal", "all", "exact"), ("dense", "first", "exact"), ("dense", "all", "biased")),
}


#: the cells :func:`limits_suite` runs on: Murray's leaky rate units (one row per leak alpha) and the plain Elman
#: tanh cell s' = tanh(W s + U x + b) (the leak-free case alpha = 1 as a user's Elman-only implementation declares it)
LIMIT_CELLS = ("leaky-elman-tanh", "elman-tanh")


def _limit_problem(
    W_kind: str, alpha: float, n: int, T: int, generator: torch.Generator, cell: str = "leaky-elman-tanh"
) -> tuple[Problem, torch.Tensor]:
    if cell == "leaky-elman-tanh":
        P, theta = leaky_problem(n=n, T=T, alpha=alpha, radius=0.0 if W_kind == "zero" else 0.9, generator=generator)
    else:
        P, theta = random_problem(cell, n=n, d=2, T=T, k=2, generator=generator)
        W = torch.randn(n, n, generator=generator, dtype=torch.float64)
        W = torch.zeros_like(W) if W_kind == "zero" else W * (0.9 / float(torch.linalg.eigvals(W).abs().max()))
        theta = theta.clone()
        theta[P.layout["cell.W"].slice] = W.reshape(-1)
    if W_kind == "diagonal":
        d = torch.randn(n, generator=generator, dtype=torch.float64)
        theta = theta.clone()
        theta[P.layout["cell.W"].slice] = torch.diag(0.9 * d / d.abs().max()).reshape(-1)
    return P, theta


def limits_suite(
    make: Callable[[], OnlineEstimator],
    rule: str,
    generator: torch.Generator,
    *,
    alphas: tuple[float, ...] = (0.5, 1.0),
    n: int = 4,
    T: int = 8,
    cells: tuple[str, ...] = ("leaky-elman-tanh",),
) -> list[dict[str, object]]:
    r"""RFLO (``rule="rflo"``) or e-prop (``"eprop"``), built by ``make()``, against exact float64 RTRL.

    One row per leak α and case of :data:`LIMIT_PLANS`: ``rule``, ``alpha``, ``W`` (``zero`` / ``diagonal``
    (entries scaled to max |W_jj| = 0.9) / ``dense`` (Gaussian, spectral radius 0.9)), ``steps`` (``"all"`` T
    steps or ``"first"``: t = 1), ``expect`` (``"exact"`` or ``"biased"``, from the theory, not from the
    estimator), ``error`` (the largest per-step :math:`\|\hat g_t - g_t\|/\|g_t\|` over those steps), and
    ``bias_total`` / ``cosine`` of the summed gradient against RTRL's, and ``cell``. Problems (``cells``, from
    :data:`LIMIT_CELLS`): :func:`leaky_problem` (tanh units, linear readout, squared error), one per leak α; and
    the plain Elman tanh cell (:func:`random_problem`, W replaced by the case's; the leak-free α = 1), n units,
    T steps, drawn from ``generator``.
    """
    if rule not in LIMIT_PLANS:
        raise InvalidArgument("rule", rule, f"one of {', '.join(LIMIT_PLANS)}")
    for c in cells:
        if c not in LIMIT_CELLS:
            raise InvalidArgument("cells", c, f"each one of {', '.join(LIMIT_CELLS)}")
    rows: list[dict[str, object]] = []
    runs = [(c, a) for c in cells for a in (alphas if c == "leaky-elman-tanh" else (1.0,))]
    for cell, alpha in runs:
        for W_kind, steps, expect in LIMIT_PLANS[rule]:
            P, theta = _limit_problem(W_kind, alpha, n, T, generator, cell)
            m = relative_bias(make(), P, theta)  # the same measurement as SnAp's suite
            per = m.per_step[:1] if steps == "first" else m.per_step
            rows.append(
                {
                    "cell": cell,
                    "rule": rule,
                    "alpha": alpha,
                    "W": W_kind,
                    "steps": steps,
                    "expect": expect,
                    "error": float(per.max()),
                    "bias_total": m.total,
                    "cosine": m.cosine,
                }
            )
    return rows
