r"""SnAp-n: RTRL with the influence matrix kept on its n-step sparsity pattern (deterministic, biased).

Menick, Elsen, Evci, Osindero, Simonyan & Graves (2021), "Practical Real Time Recurrent
Learning with a Sparse Approximation", ICLR 2021, arXiv:2006.07232, §2 (RTRL) and §3
(the Sparse n-Step Approximation). With the immediate Jacobian
:math:`I_t = \partial F/\partial\theta` and the dynamics Jacobian :math:`D_t = \partial F/\partial s`
(the paper's notation), RTRL is :math:`J_t = I_t + D_t J_{t-1}` and SnAp-n keeps only the
entries of :math:`J_t` in a fixed pattern :math:`M_n`:

.. math::
    \tilde J_t = \bigl(I_t + D_t \tilde J_{t-1}\bigr) \odot M_n,\qquad
    M_n = \operatorname{pattern}\Bigl(\sum_{m=0}^{n-1} \bar D^{\,m}\,\bar I\Bigr),\qquad
    \tilde g_t = \frac{\partial \ell_t}{\partial s_t}\tilde J_t + \frac{\partial \ell_t}{\partial\theta}\Big|_{s_t}.

**The reading implemented** (the paper states it in words: "only keeps entries that are nonzero
within n steps of the recurrent core"): :math:`\bar I` (state units × p) and :math:`\bar D` (n × n)
are the *structural* (boolean) patterns of the two Jacobians, derived from the cell's equations and
the connectivity of its recurrent weights ``W`` -- not from the values of a particular step, so an
accidental zero (a saturated unit, a dead relu) never removes an entry. :math:`M_n` is then the
pattern of :math:`J_n` when the recursion starts from :math:`J_0 = 0`: entry (i, k) is kept when state
unit i is reached, in at most n − 1 recurrent steps, from a unit that parameter k touches directly.
The same reading as a public JAX implementation (kevinlopezandrade/snapjax,
``snapjax/cells/utils.py``: a weight on edge u → v is kept on unit i when the shortest path v ⇝ i has
length ≤ n − 1). Per cell (``connectivity`` C = the structural nonzeros of ``W``):

* Elman and linear: ``W[i, :]``, ``U[i, :]``, ``b[i]`` touch unit i; :math:`\bar D = C`
  (:math:`D_t = \operatorname{diag}(\phi') W`);
* GRU (blocks r, z, n of ``W``): row i of any block touches unit i;
  :math:`\bar D = C_r \lor C_z \lor C_n \lor \mathrm{Id}` (the :math:`z \circ h` term);
* LSTM (state (c, h), blocks f, i, o, z): row k of any block touches :math:`c_k` and :math:`h_k`;
  with :math:`G = C_f \lor C_i \lor C_o \lor C_z`,
  :math:`\bar D = \begin{pmatrix}\mathrm{Id} & G\\ \mathrm{Id} & G\end{pmatrix}`.

Readout parameters touch no state unit: their columns are zero in :math:`J` and :math:`\tilde J`,
and their gradient is exact. The pattern is taken from θ at ``init`` (the zeros of ``W``: the
paper's sparse network) and kept fixed for the run, as in the paper's training with a fixed mask.

**Where SnAp-n is exact** (the recursion keeps every entry RTRL can fill): whenever the pattern is
closed, :math:`\bar D M_n \subseteq M_n` (full fill-in: :math:`M_{n+1} = M_n`) -- a diagonal
recurrence for n = 1, a dense ``W`` for n ≥ 2, a strongly connected ``W`` whose every unit is reached
from every other in at most n − 1 steps; and, for any ``W``, at the first n steps (:math:`J_t` has the
pattern :math:`M_t \subseteq M_n` for t ≤ n). Elsewhere it is biased; the bias is measured by
:func:`verify.estimators.snap.relative_bias` against exact RTRL.

Departure from the paper: the influence is stored dense (|B|, n, p) and masked after the dense update,
so the cost is RTRL's O(n²p) per step, not SnAp's sparse cost; this module checks *what* SnAp computes,
not how fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from verify._validate import require_finite_number, require_generator, require_positive_int
from verify.errors import InvalidArgument
from verify.estimators import kernels
from verify.estimators.base import OnlineEstimator, run_estimator
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
from verify.model.builders import random_problem
from verify.model.cells import ElmanCell, GRUCell, LinearCell, LSTMCell
from verify.model.problem import Problem

__all__ = [
    "BiasMeasurement",
    "SnAp",
    "SnApState",
    "bias_sweep",
    "connectivity_of",
    "exactness_suite",
    "relative_bias",
    "snap_pattern",
    "sparse_elman_problem",
    "structural_patterns",
]

_SOURCE = "Menick et al. 2021, arXiv:2006.07232, §3 (SnAp-n)"


class SnApState(NamedTuple):
    """SnAp's state: the forward state, the masked influence :math:`\\tilde J_t`, and the pattern :math:`M_n`."""

    s: torch.Tensor  #: (M, *B, n)
    influence: torch.Tensor  #: (M, *B, n, p)
    mask: torch.Tensor  #: (M, n, p), 0/1 in the problem's dtype


def connectivity_of(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    """The structural nonzeros of the cell's recurrent weights ``W`` at θ (a bool tensor of ``W``'s shape)."""
    if "cell.W" not in problem.layout.names:
        raise InvalidArgument("problem", problem.cell.describe(), "SnAp needs a cell with recurrent weights W")
    return problem.cell_params(theta)["W"].detach() != 0


def structural_patterns(problem: Problem, connectivity: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""(:math:`\bar I` (n, p), :math:`\bar D` (n, n)): the state units each parameter and each unit touch in a step.

    ``connectivity``: bool, the shape of the cell's ``W``. Cells: Elman, linear, GRU, LSTM (see the module
    docstring); others are refused with :class:`InvalidArgument` naming the cell.
    """
    cell, n, p = problem.cell, problem.n, problem.p
    if not isinstance(cell, (ElmanCell, LinearCell, GRUCell, LSTMCell)):
        raise InvalidArgument(
            "problem.cell", cell.describe(), "SnAp's sparsity pattern is defined here for elman, linear, gru and lstm"
        )
    W_shape = problem.layout["cell.W"].shape
    if not isinstance(connectivity, torch.Tensor) or tuple(connectivity.shape) != W_shape:
        shape = tuple(connectivity.shape) if isinstance(connectivity, torch.Tensor) else type(connectivity).__name__
        raise InvalidArgument("connectivity", shape, f"expected a bool tensor of W's shape {W_shape}")
    C = connectivity.to(torch.bool).cpu()
    H = W_shape[1]  # units that feed the gates (n for Elman/GRU, hidden for LSTM)
    G = W_shape[0] // H  # gate blocks: 1, 3 (GRU), 4 (LSTM)
    touched = torch.zeros(n, p, dtype=torch.bool)
    for name in ("cell.W", "cell.U", "cell.b"):
        e = problem.layout[name]
        rows = e.shape[0]  # G*H rows; row r touches unit r mod H
        cols = e.size // rows
        unit = torch.arange(rows).repeat_interleave(cols) % H
        col = torch.arange(e.offset, e.offset + e.size)
        touched[unit, col] = True
        if isinstance(cell, LSTMCell):
            touched[unit + H, col] = True  # the same gate row reaches c_k and h_k = o_k tanh(c_k)
    gate_conn = C.reshape(G, H, H).any(dim=0)  # unit k reads unit j through some gate
    eye = torch.eye(H, dtype=torch.bool)
    if isinstance(cell, LSTMCell):
        D = torch.cat([torch.cat([eye, gate_conn], 1), torch.cat([eye, gate_conn], 1)], 0)
    elif isinstance(cell, GRUCell):
        D = gate_conn | eye  # h' = (1 - z) n + z h
    else:
        D = gate_conn  # D_t = diag(φ') W
    return touched, D


def snap_pattern(problem: Problem, connectivity: torch.Tensor, order: int) -> torch.Tensor:
    r""":math:`M_n` (bool, (n_state, p)): the structural pattern of :math:`J_n` started from :math:`J_0 = 0`.

    .. math:: M_1 = \bar I,\qquad M_{m+1} = \bar I \lor (\bar D M_m)\quad(\text{boolean product})

    so :math:`M_n = \operatorname{pattern}(\sum_{m<n}\bar D^m \bar I)` (Menick et al. 2021, §3).
    """
    order = require_positive_int("order", order)
    touched, D = structural_patterns(problem, connectivity)
    M = touched
    Df = D.to(torch.float64)
    for _ in range(order - 1):
        M = touched | ((Df @ M.to(torch.float64)) > 0)
    return M


@dataclass(frozen=True)
class SnAp(_Named):
    r"""SnAp-n (Menick et al. 2021, arXiv:2006.07232, §3): :math:`\tilde J_t = (I_t + D_t\tilde J_{t-1})\odot M_n`.

    ``order`` is n (>= 1). Deterministic: the M samples are identical. ``label`` overrides the name
    (default ``"snap-<n>"``); ``path`` as for :class:`~verify.estimators.rtrl.RTRL` (the one-step Jacobians
    are RTRL's). Subclasses may override :meth:`pattern` (the mutant catalog does).
    """

    order: int = 1
    label: str = ""
    path: str = "auto"

    def __post_init__(self) -> None:
        require_positive_int("order", self.order)
        kernels.check_path(self.path)
        object.__setattr__(self, "name", self.label or f"snap-{self.order}")

    @property
    def guarantee(self) -> Guarantee:
        """Biased in general; exact only where the n-step pattern is closed (tested, not declared)."""
        return Guarantee("biased", source=_SOURCE)

    def pattern(self, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
        """:math:`M_n` for the connectivity of θ's ``W`` (:func:`snap_pattern`)."""
        return snap_pattern(problem, connectivity_of(problem, theta), self.order)

    # ---------------------------------------------------------------- contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> SnApState:
        """State at t = 0: :math:`s_0`, :math:`\\tilde J_0 = 0` and the fixed pattern :math:`M_n` from θ's ``W``."""
        M = require_positive_int("samples", samples)
        check_problem_theta(problem, theta)
        RTRL().require_memory(problem)
        mask = self.pattern(problem, theta).to(dtype=problem.dtype, device=problem.device)
        J = torch.zeros((*problem.batch_shape, problem.n, problem.p), dtype=problem.dtype, device=problem.device)
        return SnApState(expand_samples(problem.s0.clone(), M), expand_samples(J, M), expand_samples(mask, M))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: SnApState, t: int, rng: torch.Generator
    ) -> tuple[SnApState, torch.Tensor]:
        """One masked RTRL step; returns :math:`\\tilde g_t` for every sample."""
        n, p, B = problem.n, problem.p, problem.batch_shape
        shapes = {"s": (*B, n), "influence": (*B, n, p), "mask": (n, p)}
        theta, M = check_step(self.name, problem, theta, state, t, shapes)
        s_prev = shared("state.s", state.s)
        J_prev = shared("state.influence", state.influence)
        mask = shared("state.mask", state.mask)
        nb = batch_numel(problem)
        rtrl = RTRL(path=self.path)
        x, y = problem.inputs[t - 1], problem.targets[t - 1]
        if kernels.use_fast(self.path, problem, self.name):
            s_next, J_s, J_th = rtrl.transition_jacobians(problem, theta, s_prev, x)
            dl_ds, dl_dth = kernels.loss_gradients(problem, theta, s_next, y)
        else:
            with torch.enable_grad():
                th = theta.clone().requires_grad_(True)
                s_in = s_prev.detach().clone().requires_grad_(True)
                s_next, J_s, J_th = rtrl.transition_jacobians(problem, th, s_in, x)
                s_leaf = s_next.detach().requires_grad_(True)
                loss = problem.step_loss(th, s_leaf, y)
                d_th, d_s = torch.autograd.grad(loss, (th, s_leaf), allow_unused=True)
            dl_dth = torch.zeros_like(theta) if d_th is None else d_th
            dl_ds = torch.zeros_like(s_leaf) if d_s is None else d_s
        J = torch.baddbmm(J_th.detach(), J_s.detach(), J_prev.reshape(nb, n, p)) * mask  # §3: (I + D J̃) ⊙ M_n
        g = torch.einsum("bi,bip->p", dl_ds.reshape(nb, n), J) + dl_dth  # ∂ℓ/∂s J̃ + ∂ℓ/∂θ
        new = SnApState(
            expand_samples(s_next.detach().reshape(*B, n), M),
            expand_samples(J.reshape(*B, n, p).detach(), M),
            state.mask,
        )
        return new, expand_samples(g.detach(), M)


# ------------------------------------------------------------------ bias measurement
class BiasMeasurement(NamedTuple):
    r"""How far a deterministic estimator is from exact float64 RTRL on one problem.

    ``per_step`` (T,): :math:`\|\tilde g_t - g_t\| / \|g_t\|`; ``total``: the same for
    :math:`\sum_t g_t` (the gradient of the whole loss); ``cosine``: :math:`\cos(\sum\tilde g_t, \sum g_t)`;
    ``per_block``: per parameter block of θ's layout (``cell.W`` ...), its part of ``per_step`` (T,), on the same
    scale :math:`\|g_t\|` -- where a wrong estimate is wrong (:meth:`worst`).
    """

    per_step: torch.Tensor
    total: float
    cosine: float
    per_block: dict[str, torch.Tensor] | None = None

    def worst(self, steps: int | None = None) -> tuple[int, str] | None:
        """Among the first ``steps`` steps (default: all), the step t (1-based) with the largest error and, at that
        step, the parameter block with the largest error; None without ``per_block``."""
        if not self.per_block:
            return None
        per = self.per_step if steps is None else self.per_step[:steps]
        t = int(torch.argmax(per))
        block = max(self.per_block, key=lambda name: float(self.per_block[name][t]))  # type: ignore[index]
        return t + 1, block


def relative_bias(estimator: OnlineEstimator, problem: Problem, theta: torch.Tensor) -> BiasMeasurement:
    """:class:`BiasMeasurement` of ``estimator`` (deterministic: sample 0) against :class:`RTRL` at frozen θ.

    The reference is RTRL in the problem's dtype (pass a float64 problem: exact RTRL to round-off,
    ``rtrl.exact``). No generator is needed: a deterministic estimator ignores it (one is made here).
    """
    theta = problem.check_theta(theta)
    rng = torch.Generator(device=problem.device).manual_seed(0)
    ref = run_estimator(RTRL(), problem, theta, rng)[:, 0]
    est = run_estimator(estimator, problem, theta, rng)[:, 0]
    tiny = torch.finfo(problem.dtype).tiny
    scale = ref.norm(dim=-1).clamp_min(tiny)
    per_step = (est - ref).norm(dim=-1) / scale
    per_block = {e.name: (est[:, e.slice] - ref[:, e.slice]).norm(dim=-1) / scale for e in problem.layout.entries}
    G, Gt = ref.sum(0), est.sum(0)
    total = float((Gt - G).norm() / G.norm().clamp_min(tiny))
    cosine = float(torch.dot(Gt, G) / (Gt.norm() * G.norm()).clamp_min(tiny))
    return BiasMeasurement(per_step, total, cosine, per_block)


def sparse_elman_problem(
    *, n: int, T: int, radius: float, density: float, generator: torch.Generator, d: int = 2
) -> tuple[Problem, torch.Tensor]:
    r"""A float64 tanh Elman problem whose ``W`` keeps each off-diagonal entry with probability ``density``.

    The diagonal is always kept (every unit has a self-connection, so that the n-step pattern grows
    with n); the kept entries are Gaussian and ``W`` is rescaled to spectral radius ``radius``
    (:math:`\max|\lambda_i(W)|`). Inputs, targets and the rest of θ are :func:`random_problem`'s.
    """
    require_generator("generator", generator)
    radius = require_finite_number("radius", radius, minimum=0.0)
    density = require_finite_number("density", density, minimum=0.0)
    if density > 1:
        raise InvalidArgument("density", density, "a probability in [0, 1]")
    P, theta = random_problem("elman-tanh", n=n, d=d, T=T, k=2, generator=generator)
    keep = (torch.rand(n, n, generator=generator, dtype=torch.float64) < density) | torch.eye(n, dtype=torch.bool)
    W = torch.randn(n, n, generator=generator, dtype=torch.float64) * keep
    rho = float(torch.linalg.eigvals(W).abs().max())
    W = W * (radius / rho) if rho > 0 else W
    theta = theta.clone()
    theta[P.layout["cell.W"].slice] = W.reshape(-1)
    return P, theta


def bias_sweep(
    *,
    orders: tuple[int, ...] = (1, 2),
    lengths: tuple[int, ...] = (5, 20),
    radii: tuple[float, ...] = (0.5, 0.9, 1.2),
    n: int = 8,
    density: float = 0.2,
    seeds: int = 3,
    generator: torch.Generator,
) -> list[dict[str, float]]:
    r"""SnAp-n's relative bias over n, T and the spectral radius of a sparse ``W`` (one row per cell and seed).

    Each row: ``order``, ``T``, ``radius``, ``seed``, ``bias_total`` (:math:`\|\sum\tilde g-\sum g\|/\|\sum g\|`),
    ``bias_last`` (the last step's), ``cosine``, and ``closed`` (1.0 when the n-step pattern is closed, so
    that SnAp-n is exact and the bias must be round-off).
    """
    require_generator("generator", generator)
    seeds = require_positive_int("seeds", seeds)
    rows: list[dict[str, float]] = []
    for seed in range(seeds):
        for T in lengths:
            for radius in radii:
                P, theta = sparse_elman_problem(n=n, T=T, radius=radius, density=density, generator=generator)
                C = connectivity_of(P, theta)
                for order in orders:
                    m = relative_bias(SnAp(order), P, theta)
                    closed = bool(torch.equal(snap_pattern(P, C, order), snap_pattern(P, C, order + 1)))
                    rows.append(
                        {
                            "order": float(order),
                            "T": float(T),
                            "radius": float(radius),
                            "seed": float(seed),
                            "bias_total": m.total,
                            "bias_last": float(m.per_step[-1]),
                            "cosine": m.cosine,
                            "closed": float(closed),
                        }
                    )
    return rows


# ------------------------------------------------------------------ the exactness suite (rtrl.snap-exactness)
#: structural recurrences of the suite (H x H, every gate block): exact-pattern ones and one where SnAp is biased
_SUITE_H = 4


def _suite_connectivity(name: str) -> torch.Tensor:
    H = _SUITE_H
    if name == "diagonal":
        return torch.eye(H)
    if name == "dense":
        return torch.ones(H, H)
    if name == "ring":  # unit i reads unit i-1 and itself: directed, fills in after H - 1 steps
        return torch.eye(H) + torch.roll(torch.eye(H), 1, 0)
    raise InvalidArgument("connectivity", name, "one of diagonal, dense, ring")


def _problem_with_w(kind: str, name: str, T: int, generator: torch.Generator) -> tuple[Problem, torch.Tensor]:
    P, th = random_problem(kind, n=_SUITE_H, d=2, T=T, k=2, generator=generator)
    e = P.layout["cell.W"]
    C = _suite_connectivity(name).to(th.dtype).repeat(e.shape[0] // _SUITE_H, 1)
    th = th.clone()
    th[e.slice] = (th[e.slice].reshape(e.shape) * C).reshape(-1)
    return P, th


def exactness_suite(
    snap: Callable[[int], OnlineEstimator],
    generator: torch.Generator,
    *,
    cells: tuple[str, ...],
    T: int = 8,
    orders: tuple[int, ...] = (1, 2),
) -> list[dict[str, Any]]:
    r"""SnAp-n (``snap(n)``) against exact float64 RTRL where §3's pattern says exact and where it says biased.

    Rows (one per cell kind, recurrence and n): ``cell``, ``W`` (``diagonal``/``dense``/``ring``), ``order``,
    ``steps`` (``"all"`` or ``"first n"``), ``expect`` (``"exact"`` or ``"biased"``), ``error`` (the largest
    per-step :math:`\|\tilde g_t - g_t\|/\|g_t\|` over those steps), ``bias_total`` and ``cosine`` of the
    summed gradient (:class:`BiasMeasurement`), ``worst_step`` and ``worst_block`` (where the error is largest:
    the step and, at it, the parameter block), ``closed`` (the n-step pattern is closed: :math:`M_{n+1} = M_n`,
    computed here from the structural pattern, not from the estimator under test). Cases: diagonal ``W`` at
    n = 1 and dense ``W`` at n = 2 over all T steps (closed: exact); a directed ring at n = 1, 2 (not closed for
    H = 4 units: exact at the first n steps, biased over all T). ``orders``: the n to run (an implementation of
    SnAp-1 only is judged at n = 1).
    """
    require_generator("generator", generator)
    rows: list[dict[str, Any]] = []
    plan = [("diagonal", 1, "all"), ("dense", 2, "all"), ("ring", 1, "first n"), ("ring", 2, "first n")]
    plan += [("ring", 1, "all"), ("ring", 2, "all")]
    plan = [step for step in plan if step[1] in orders]
    for kind in cells:
        for name, order, steps in plan:
            P, th = _problem_with_w(kind, name, T, generator)
            C = connectivity_of(P, th)
            closed = bool(torch.equal(snap_pattern(P, C, order), snap_pattern(P, C, order + 1)))
            m = relative_bias(snap(order), P, th)
            per = m.per_step[:order] if steps == "first n" else m.per_step
            worst = m.worst(order if steps == "first n" else None)
            rows.append(
                {
                    "cell": kind,
                    "W": name,
                    "order": order,
                    "steps": steps,
                    "expect": "exact" if (closed or steps == "first n") else "biased",
                    "error": float(per.max()),
                    "bias_total": m.total,
                    "cosine": m.cosine,
                    "closed": closed,
                    # where the error is largest: the step (1-based) and the parameter block at that step
                    "worst_step": None if worst is None else worst[0],
                    "worst_block": None if worst is None else worst[1],
                }
            )
    return rows
