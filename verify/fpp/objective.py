r"""The FPP objective with explicit state variables and its per-sample gradients.

Paper: ``fpp-explicit-state-variables.md`` §3 and §4.1. A *buffer* of n transitions
is a :class:`~verify.model.problem.Problem` whose ``inputs`` are :math:`o_1..o_n`
(``inputs[i-1]`` = :math:`o_i`) and whose ``targets`` are :math:`y_1..y_n`; its
``s0`` is not used, because the states are explicit variables
:math:`S = [s_0, \dots, s_n]` (shape (n+1, k)) learned together with the cell's
parameters W (``cell.*`` in θ) and the readout's β (``readout.*`` in θ).

For a trajectory length T (1 ≤ T ≤ n) the T-step prediction of :math:`s_i` is

.. math::
    \hat s_i(s_{i-T}, W) = f_W(\dots f_W(f_W(s_{i-T}, o_{i-T+1}), o_{i-T+2}) \dots, o_i),

and eq. (6) defines, for :math:`i \in \{T, \dots, n\}`,

.. math::
    L_i(\beta, W, S) = \ell_\beta(\hat s_i; y_i) + \frac{\lambda}{2}\|s_i - \hat s_i\|_2^2,
    \qquad L = \frac{1}{n - T + 1}\sum_{i=T}^n L_i ,

which is eq. (5) for T = 1. The loss :math:`\ell_\beta(s; y)` is the problem's
loss of its readout :math:`g_\beta` on the cell's observed state (any cell, any
loss of :mod:`verify.model.losses`).

Departure (paper typo): the printed definition of :math:`\hat s_i` starts at
:math:`s_{i-T-1}` and applies :math:`o_{i-T}..o_i`, i.e. T+1 transitions; the
operator :math:`F_{T,W}` right above it and the name :math:`\hat s_i(s_{i-T}, W)`
use T transitions from :math:`s_{i-T}`, which is what is implemented.

The penalty form of Thm 2, eq. (11), divides the loss by n but not the penalty:

.. math::
    L_\lambda = \frac{1}{n}\sum_{i=1}^n \ell_\beta(f_W(s_{i-1}, o_i); y_i)
               + \frac{\lambda}{2}\sum_{i=1}^n \|s_i - f_W(s_{i-1}, o_i)\|_2^2 ,

i.e. eq. (5) with the penalty weight nλ (:func:`penalty_objective`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch.func import grad, vmap

from verify._func import vjp
from verify._narrow import as_reference_dtype
from verify._validate import require_finite, require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.model.problem import Problem

__all__ = [
    "FPPObjective",
    "FPPVariables",
    "SampleGradFn",
    "autograd_gradient",
    "eq7_gradients",
    "flatten_variables",
    "full_gradient",
    "index_distribution",
    "minibatch_gradient",
    "objective",
    "penalty_objective",
    "per_sample_gradients",
    "predicted_states",
    "prediction_loss",
    "sample_gradient",
    "sample_indices",
    "sample_loss",
    "sample_losses",
    "unflatten_variables",
    "unroll_window",
]


class FPPVariables(NamedTuple):
    """The FPP variables :math:`(W, \\beta, S)`: flat θ (cell.* = W, readout.* = β) and S (n+1, k)."""

    theta: torch.Tensor
    states: torch.Tensor


@dataclass(frozen=True, eq=False)
class FPPObjective:
    r"""A fixed buffer with trajectory length T and penalty λ: the objective eq. (5)/(6).

    ``problem.inputs`` (n, d) are :math:`o_1..o_n`, ``problem.targets`` (n, m) the
    :math:`y_i`; the problem must be unbatched. Raises
    :class:`~verify.errors.InvalidArgument` for a buffer smaller than T and for
    λ ≤ 0 (or non-finite).
    """

    problem: Problem
    T: int = 1
    lam: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.problem, Problem):
            raise InvalidArgument("problem", type(self.problem).__name__, "must be a verify.model.problem.Problem")
        if self.problem.batch_shape:
            raise InvalidArgument(
                "problem", f"batch shape {self.problem.batch_shape}", "an FPP buffer is one unbatched sequence"
            )
        require_positive_int("T", self.T)
        if self.problem.T < self.T:
            raise InvalidArgument(
                "buffer",
                f"{self.problem.T} transitions",
                f"the buffer must hold at least T={self.T} transitions (samples i range over T..n)",
            )
        require_positive("lam", self.lam)

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        """Number of transitions in the buffer."""
        return self.problem.T

    @property
    def k(self) -> int:
        """State size."""
        return self.problem.n

    @property
    def num_samples(self) -> int:
        """Number of terms :math:`L_i`, i ∈ {T..n}: n − T + 1."""
        return self.n - self.T + 1

    @property
    def size(self) -> int:
        """Dimension z of the variable vector (p + (n+1) k)."""
        return self.problem.p + (self.n + 1) * self.k

    def with_lam(self, lam: float) -> FPPObjective:
        return FPPObjective(self.problem, self.T, lam)

    # ------------------------------------------------------------- variables
    def check_variables(self, variables: object, name: str = "variables") -> FPPVariables:
        """Validate shapes, dtype, device and finiteness (non-finite states -> InvalidArgument)."""
        if not isinstance(variables, FPPVariables):
            raise InvalidArgument(name, type(variables).__name__, "must be an FPPVariables(theta, states)")
        self.problem.check_theta(variables.theta, f"{name}.theta")
        S = variables.states
        if not isinstance(S, torch.Tensor):
            raise InvalidArgument(f"{name}.states", type(S).__name__, "must be a torch.Tensor")
        if tuple(S.shape) != (self.n + 1, self.k):
            raise InvalidArgument(
                f"{name}.states", f"tensor of shape {tuple(S.shape)}", f"expected (n+1, k) = {(self.n + 1, self.k)}"
            )
        if S.dtype != self.problem.dtype or variables.theta.dtype != self.problem.dtype:
            raise InvalidArgument(
                name, f"dtypes {variables.theta.dtype}/{S.dtype}", f"must match the buffer's {self.problem.dtype}"
            )
        if S.device != self.problem.device:
            raise InvalidArgument(f"{name}.states", f"device {S.device}", f"buffer lives on {self.problem.device}")
        require_finite(f"{name}.states", S)
        return variables

    def rollout_variables(self, theta: torch.Tensor, s0: torch.Tensor | None = None) -> FPPVariables:
        """Feasible variables: S = the RNN's rollout from ``s0`` (default the problem's s0) under θ."""
        theta = self.problem.check_theta(theta)
        with torch.no_grad():
            states = self.problem.rollout(theta, s0)
        return FPPVariables(theta.detach().clone(), states.detach().clone())


SampleGradFn = Callable[
    [Problem, int, float, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    tuple[torch.Tensor, torch.Tensor, torch.Tensor],
]
"""(problem, T, λ, θ, s_{i−T} (B,k), s_i (B,k), windows (B,T,d), y_i (B,m), weights (B,))
-> (Σ_b w_b ∇_θ L_{i_b} (p,), w_b ∇_{s_{i−T}} L_{i_b} (B,k), w_b ∇_{s_i} L_{i_b} (B,k))."""


def unroll_window(problem: Problem, theta: torch.Tensor, s: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
    r""":math:`\hat s_i`: the cell run from ``s`` over the T observations of ``window`` (eq. (6)'s :math:`f^T`)."""
    params = problem.cell_params(theta)
    for t in range(window.shape[-2]):
        s = problem.cell.step(params, s, window[..., t, :])
    return s


def prediction_loss(problem: Problem, theta: torch.Tensor, s: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """:math:`\\ell_\\beta(s; y)` per state (reduces the last dim only)."""
    return problem.loss.pointwise(problem.output(theta, s), y)


def eq7_gradients(
    problem: Problem,
    T: int,
    lam: float,
    theta: torch.Tensor,
    s_start: torch.Tensor,
    s_end: torch.Tensor,
    window: torch.Tensor,
    target: torch.Tensor,
    weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""The explicit per-sample gradients of eq. (7) for a batch of B samples, weighted by ``weights``.

    .. math::
        \nabla_{s_{i-T}} L_i &= [\nabla_{\hat s_i}\ell_\beta(\hat s_i; y_i) - \lambda(s_i - \hat s_i)]^\top
                                 \nabla_{s_{i-T}}\hat s_i \\
        \nabla_{s_i} L_i &= \lambda(s_i - \hat s_i) \\
        \nabla_W L_i &= [\nabla_{\hat s_i}\ell_\beta(\hat s_i; y_i) - \lambda(s_i - \hat s_i)]^\top \nabla_W \hat s_i \\
        \nabla_\beta L_i &= \nabla_\beta \ell_\beta(\hat s_i; y_i)

    Row b holds sample :math:`i_b`: ``s_start`` = :math:`s_{i_b-T}`, ``s_end`` =
    :math:`s_{i_b}`, ``window`` = :math:`o_{i_b-T+1}..o_{i_b}` (B, T, d), ``target`` =
    :math:`y_{i_b}`. Returns :math:`\sum_b w_b\nabla_\theta L_{i_b}` (W in the
    ``cell.*`` slots, β in the ``readout.*`` slots) and the per-row
    :math:`w_b\nabla_{s_{i_b-T}} L_{i_b}`, :math:`w_b\nabla_{s_{i_b}} L_{i_b}`; every
    other variable has zero gradient. The vector-Jacobian products with
    :math:`\nabla\hat s_i` go through the T transitions of each window, all rows
    in one batched unroll (B = 1, w = 1 gives one :math:`\nabla L_i`).
    """
    s_hat, pull = vjp(lambda th, s: unroll_window(problem, th, s, window), theta, s_start)
    g_ell_theta, g_ell_s = grad(
        lambda th, s: (weights * prediction_loss(problem, th, s, target)).sum(), argnums=(0, 1)
    )(theta, s_hat)
    w_resid = weights[:, None] * (s_end - s_hat)
    bracket = g_ell_s - lam * w_resid  # eq. (7): w_b [∇_ŝ ℓ − λ(s_i − ŝ_i)]
    g_theta_cell, g_start = pull(bracket)  # eq. (7): [..]ᵀ ∇_W ŝ_i (summed over b) and [..]ᵀ ∇_{s_{i−T}} ŝ_i
    g_theta = g_theta_cell + g_ell_theta  # eq. (7): ∇_β ℓ sits in the readout slots (ŝ does not depend on β)
    g_end = lam * w_resid  # eq. (7): ∇_{s_i} L_i = λ(s_i − ŝ_i)
    return g_theta, g_start, g_end


# --------------------------------------------------------------------- sampling
def index_distribution(n: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Support and probabilities of k ~ uniform{T..n} (both ends inclusive; §4.1, Lemma 3)."""
    require_positive_int("T", T)
    require_positive_int("n", n, T)
    support = torch.arange(T, n + 1)
    return support, torch.full((n - T + 1,), 1.0 / (n - T + 1), dtype=torch.float64)


def sample_indices(n: int, T: int, size: tuple[int, ...] | int, generator: torch.Generator) -> torch.Tensor:
    r"""Draw i ~ uniform{T, ..., n} (inclusive of both endpoints, as in §4.1 before eq. (9))."""
    require_positive_int("T", T)
    require_positive_int("n", n, T)
    shape = (size,) if isinstance(size, int) else tuple(size)
    return torch.randint(T, n + 1, shape, generator=generator)  # high is exclusive: n + 1


# ------------------------------------------------------------------ objective
def predicted_states(obj: FPPObjective, variables: FPPVariables) -> torch.Tensor:
    r""":math:`\hat s_i(s_{i-T}, W)` for i = T..n, shape (n−T+1, k) (all samples in one batched unroll)."""
    P, T, m = obj.problem, obj.T, obj.num_samples
    params = P.cell_params(variables.theta)
    s = variables.states[:m]
    for t in range(T):
        s = P.cell.step(params, s, P.inputs[t : t + m])
    return s


def _terms(obj: FPPObjective, variables: FPPVariables, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    P, T = obj.problem, obj.T
    s_hat = predicted_states(obj, variables)
    ell = prediction_loss(P, variables.theta, s_hat, P.targets[T - 1 :])
    resid = variables.states[T:] - s_hat
    pen = 0.5 * lam * (resid * resid).sum(-1)
    return ell, pen


def objective(obj: FPPObjective, variables: FPPVariables) -> torch.Tensor:
    r"""Eq. (5) (T = 1) / eq. (6): :math:`L = \frac{1}{n-T+1}\sum_{i=T}^n L_i`."""
    ell, pen = _terms(obj, variables, obj.lam)
    return (ell + pen).sum() / obj.num_samples  # eq. (6)


def sample_losses(obj: FPPObjective, variables: FPPVariables) -> torch.Tensor:
    r"""All terms :math:`L_T, \dots, L_n` of eq. (6) as a vector (n − T + 1,)."""
    ell, pen = _terms(obj, variables, obj.lam)
    return ell + pen  # eq. (6)


def sample_loss(obj: FPPObjective, variables: FPPVariables, i: int) -> torch.Tensor:
    r"""One term :math:`L_i` of eq. (6), i ∈ {T..n}."""
    if not (obj.T <= i <= obj.n):
        raise InvalidArgument("i", i, f"sample index must lie in [T, n] = [{obj.T}, {obj.n}]")
    P, T = obj.problem, obj.T
    s_hat = unroll_window(P, variables.theta, variables.states[i - T], P.inputs[i - T : i])
    resid = variables.states[i] - s_hat
    return (
        prediction_loss(P, variables.theta, s_hat, P.targets[i - 1]) + 0.5 * obj.lam * (resid * resid).sum()
    )  # eq. (6)


def penalty_objective(problem: Problem, variables: FPPVariables, lam: float) -> torch.Tensor:
    r"""Eq. (11) (Thm 2, T = 1): loss averaged over n, penalty summed (not divided by n).

    .. math::
        L_\lambda = \frac1n\sum_{i=1}^n \ell_\beta(f_W(s_{i-1}, o_i); y_i)
                   + \frac{\lambda}{2}\sum_{i=1}^n\|s_i - f_W(s_{i-1}, o_i)\|^2
    """
    obj = FPPObjective(problem, 1, lam)
    ell, pen = _terms(obj, variables, lam)
    return ell.sum() / obj.n + pen.sum()  # eq. (11)


# ------------------------------------------------------------------ gradients
def _gather(obj: FPPObjective, variables: FPPVariables, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
    P, T = obj.problem, obj.T
    offs = torch.arange(T, device=idx.device)
    window = P.inputs[idx[..., None] - T + offs]  # o_{i−T+1..i}: inputs[i−T .. i−1]
    return variables.states[idx - T], variables.states[idx], window, P.targets[idx - 1]


def minibatch_gradient(
    obj: FPPObjective,
    variables: FPPVariables,
    indices: torch.Tensor,
    weights: torch.Tensor | None = None,
    sample_grad: SampleGradFn = eq7_gradients,
) -> FPPVariables:
    r""":math:`\sum_b w_b \nabla L_{i_b}` by eq. (7) (default :math:`w_b = 1/B`: the mini-batch gradient), dense.

    The state gradients are scattered to rows :math:`i_b - T` and :math:`i_b` of S
    (a one-hot product, so that the function is ``vmap``-able over replicates).
    """
    B = indices.shape[0]
    dtype = variables.theta.dtype
    w = torch.full((B,), 1.0 / B, dtype=dtype, device=variables.theta.device) if weights is None else weights
    s_start, s_end, window, target = _gather(obj, variables, indices)
    g_theta, g_start, g_end = (  # code under test may compute in float32: taken into the toolkit's dtype, noted
        as_reference_dtype(g, variables.theta)
        for g in sample_grad(obj.problem, obj.T, obj.lam, variables.theta, s_start, s_end, window, target, w)
    )
    eye = torch.eye(obj.n + 1, dtype=dtype, device=variables.states.device)
    g_states = eye[indices - obj.T].transpose(0, 1) @ g_start + eye[indices].transpose(0, 1) @ g_end
    return FPPVariables(g_theta, g_states)


def per_sample_gradients(
    obj: FPPObjective, variables: FPPVariables, sample_grad: SampleGradFn = eq7_gradients
) -> torch.Tensor:
    r"""Dense :math:`\nabla L_i` by eq. (7) for every i in {T..n}, flattened: shape (n−T+1, z) (Lemma 3's support)."""
    one = torch.ones(1, dtype=variables.theta.dtype)

    def g(i: torch.Tensor) -> torch.Tensor:
        return flatten_variables(minibatch_gradient(obj, variables, i[None], one, sample_grad))

    out: torch.Tensor = vmap(g)(torch.arange(obj.T, obj.n + 1))
    return out


def sample_gradient(
    obj: FPPObjective, variables: FPPVariables, i: int, sample_grad: SampleGradFn = eq7_gradients
) -> FPPVariables:
    """Dense :math:`\\nabla L_i` of eq. (7) for one index i ∈ {T..n}."""
    if not (obj.T <= i <= obj.n):
        raise InvalidArgument("i", i, f"sample index must lie in [T, n] = [{obj.T}, {obj.n}]")
    return minibatch_gradient(obj, variables, torch.tensor([i]), None, sample_grad)


def full_gradient(
    obj: FPPObjective, variables: FPPVariables, sample_grad: SampleGradFn = eq7_gradients
) -> FPPVariables:
    r"""Lemma 3: the exact average :math:`\frac{1}{n-T+1}\sum_{k=T}^n \nabla L_k` (= ∇L)."""
    support, probs = index_distribution(obj.n, obj.T)
    return minibatch_gradient(obj, variables, support, probs.to(variables.theta.dtype), sample_grad)


def autograd_gradient(obj: FPPObjective, variables: FPPVariables) -> FPPVariables:
    """Reference :math:`\\nabla L` of eq. (6) by ``torch.func.grad`` of :func:`objective`."""
    g_theta, g_states = grad(lambda th, S: objective(obj, FPPVariables(th, S)), argnums=(0, 1))(
        variables.theta, variables.states
    )
    return FPPVariables(g_theta, g_states)


# ------------------------------------------------------------------- flat form
def flatten_variables(variables: FPPVariables) -> torch.Tensor:
    """x = (θ, vec S) in R^z (the vector that eq. (8)-(9) project and update)."""
    S = variables.states
    return torch.cat([variables.theta, S.reshape(*S.shape[:-2], -1)], dim=-1)


def unflatten_variables(obj: FPPObjective, x: torch.Tensor) -> FPPVariables:
    """Inverse of :func:`flatten_variables` (leading dims kept)."""
    p = obj.problem.p
    if x.shape[-1] != obj.size:
        raise InvalidArgument("x", f"tensor of shape {tuple(x.shape)}", f"last dim must be z = {obj.size}")
    return FPPVariables(x[..., :p], x[..., p:].reshape(*x.shape[:-1], obj.n + 1, obj.k))


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖ / max(‖b‖, tiny) in float64."""
    den = float(torch.linalg.vector_norm(b))
    return float(torch.linalg.vector_norm(a - b)) / max(den, math.ulp(1.0))
