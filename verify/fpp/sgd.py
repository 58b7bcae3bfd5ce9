r"""Projected SGD on a fixed buffer (eq. (8)-(9)) and the random stopping time of Thm 1.

Paper: ``fpp-explicit-state-variables.md`` §4.1 and App. B.1. With
:math:`x = (W, \beta, S) \in \mathbb{R}^z` and the ball :math:`C = \{\|x\| \le r\}`,

.. math::
    \Gamma(x) = \arg\min_{u \in C}\|x - u\|^2 = x\,\min(1, r/\|x\|)          \qquad (8)\\
    x_{t+1} = \Gamma\big(x_t - \alpha_t \nabla L_{k_t}(x_t)\big),\quad k_t \sim \mathrm{uniform}\{T..n\}  \qquad (9)

(with a mini-batch of m indices the stochastic gradient is their average), and the
stopping time :math:`R \sim P_N`, :math:`P_N(k) \propto \alpha_k - D\alpha_k^2`.
The stationarity measure is the gradient mapping of Ghadimi-Lan-Zhang,

.. math::
    G(x) = \frac{1}{\alpha}\big(x - \Gamma(x - \alpha\nabla L(x))\big),

which equals :math:`\nabla L(x)` while the projection is inactive. (The paper's
last proof step rewrites :math:`\Gamma(x - \alpha\nabla L) - x` as
:math:`\Gamma(\alpha\nabla L)`; that is not an identity -- the projection is onto
C, not onto C − x -- so the measure implemented is the gradient mapping itself.)
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.func import grad, vmap

from verify._validate import require_finite, require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.fpp.objective import (
    FPPObjective,
    FPPVariables,
    SampleGradFn,
    eq7_gradients,
    flatten_variables,
    index_distribution,
    minibatch_gradient,
    objective,
    sample_indices,
    unflatten_variables,
)

__all__ = [
    "SGDTrace",
    "gradient_mapping",
    "project_ball",
    "projected_sgd",
    "sample_stopping_time",
    "sgd_step",
    "stopping_time_pmf",
]


def project_ball(x: torch.Tensor, radius: float) -> torch.Tensor:
    r"""Eq. (8): the Euclidean projection onto :math:`\{\|u\| \le r\}` (over the last dim)."""
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    scale = torch.clamp(radius / torch.clamp(norm, min=torch.finfo(x.dtype).tiny), max=1.0)
    return x * scale  # eq. (8)


def stopping_time_pmf(step_sizes: torch.Tensor, D: float) -> torch.Tensor:
    r"""Thm 1: :math:`P_N(k) = (\alpha_k - D\alpha_k^2) / \sum_{j=1}^N (\alpha_j - D\alpha_j^2)`.

    Needs :math:`0 < \alpha_k \le 1/D` with at least one strict inequality
    (otherwise the weights are not a distribution).
    """
    D = require_positive("D", D)
    a = step_sizes.to(torch.float64)
    if a.dim() != 1 or a.numel() == 0:
        raise InvalidArgument("step_sizes", f"tensor of shape {tuple(a.shape)}", "expected a non-empty 1-D tensor")
    require_finite("step_sizes", a)
    w = a - D * a * a  # Thm 1
    if bool((a <= 0).any()) or bool((w < 0).any()) or float(w.sum()) <= 0:
        raise InvalidArgument("step_sizes", "some alpha_k", f"Thm 1 needs 0 < alpha_k <= 1/D = {1 / D:.3g}")
    return w / w.sum()


def sample_stopping_time(pmf: torch.Tensor, size: int, generator: torch.Generator) -> torch.Tensor:
    """Draw R ~ P_N (values in 1..N)."""
    require_positive_int("size", size)
    return torch.multinomial(pmf, size, replacement=True, generator=generator) + 1


def gradient_mapping(obj: FPPObjective, x: torch.Tensor, alpha: float, radius: float) -> torch.Tensor:
    r""":math:`G(x) = (x - \Gamma(x - \alpha\nabla L(x)))/\alpha` with ∇L by autograd (one x of shape (z,))."""
    g = grad(lambda xx: objective(obj, unflatten_variables(obj, xx)))(x)
    return (x - project_ball(x - alpha * g, radius)) / alpha


def sgd_step(
    obj: FPPObjective,
    x: torch.Tensor,
    indices: torch.Tensor,
    weights: torch.Tensor,
    alpha: float,
    radius: float,
    sample_grad: SampleGradFn = eq7_gradients,
) -> torch.Tensor:
    r"""One step of eq. (9) on the flat variables x (z,): :math:`\Gamma(x - \alpha\sum_b w_b\nabla L_{i_b}(x))`."""
    g = minibatch_gradient(obj, unflatten_variables(obj, x), indices, weights, sample_grad)
    return project_ball(x - alpha * flatten_variables(g), radius)  # eq. (9)


class SGDTrace(NamedTuple):
    r"""A run of eq. (9) on several batch configurations and replicates at once.

    Column r is one replicate; ``batch[r]`` its mini-batch size (0 = full batch,
    i.e. gradient descent). ``measure[t, r]`` = ‖G(x_{t+1})‖² (row t is iterate
    x_{t+1}; x_1 is the start) where measured, NaN elsewhere; ``weight[t]`` is the
    quadrature weight of row t (1 for the first ``head`` rows, the stride for the
    one measured row per stride block after that, 0 for unmeasured rows), so
    :math:`\sum_{t<N} w_t m_t / N` is an unbiased estimate of
    :math:`\frac1N\sum_{t \le N}\|G(x_t)\|^2 = \mathbb{E}_R\|G(x_R)\|^2` (R uniform, the
    constant-step :math:`P_N`) whenever N − head is a multiple of the stride
    (:meth:`expected_measure`). ``active[t, r]``: the projection was active in the
    step from row t; ``final`` (R, z) = x_N; ``snapshots`` (S, R, z) kept iterates.
    """

    measure: torch.Tensor
    weight: torch.Tensor
    active: torch.Tensor
    final: torch.Tensor
    batch: torch.Tensor
    head: int
    stride: int
    snapshots: torch.Tensor

    def valid_horizons(self) -> list[int]:
        """The N for which :meth:`expected_measure` is unbiased."""
        steps = self.measure.shape[0]
        return [N for N in range(1, steps + 1) if N <= self.head or (N - self.head) % self.stride == 0]

    def expected_measure(self, N: int) -> torch.Tensor:
        """Per-replicate estimate of E_R‖G(x_R)‖² for R uniform on 1..N, shape (R,)."""
        if N not in self.valid_horizons():
            raise InvalidArgument("N", N, f"need N <= {self.head} or N - {self.head} a multiple of {self.stride}")
        w = self.weight[:N, None]
        m = torch.nan_to_num(self.measure[:N], nan=0.0)
        return (w * m).sum(0) / N


def projected_sgd(
    obj: FPPObjective,
    start: FPPVariables,
    *,
    steps: int,
    step_size: float,
    radius: float,
    generator: torch.Generator,
    batches: tuple[int | None, ...] = (1,),
    replicates: int = 1,
    sample_grad: SampleGradFn = eq7_gradients,
    head: int = 32,
    stride: int = 1,
    snapshot_every: int = 0,
) -> SGDTrace:
    r"""Run eq. (9) from ``start`` for N = ``steps`` iterates, for every batch size in ``batches`` at once.

    A batch size m draws m indices i.i.d. uniform{T..n} per step (the mini-batch
    SGD of Ghadimi-Lan-Zhang); ``None`` uses the exact average over all n−T+1
    indices (gradient descent, the σ = 0 case) and runs one replicate (it is
    deterministic); every other configuration runs ``replicates`` independent
    copies. All copies advance in one vectorised step. The measure ‖G(x_t)‖² (by
    autograd, independent of ``sample_grad``) is taken at every iterate of the
    first ``head`` and then at one random row per block of ``stride`` iterates
    (see :class:`SGDTrace`); with ``snapshot_every`` > 0 the iterates of every
    such row are kept in ``snapshots`` (for premise checks). Raises :class:`InvalidArgument` when the radius
    excludes the start point.
    """
    alpha, radius, x1 = _check_sgd_arguments(obj, start, steps, step_size, radius, batches, replicates, head, stride)
    dtype = x1.dtype
    lab, w, idx_full = _batch_layout(obj, batches, replicates, dtype)
    R, width = w.shape
    full = lab == 0
    meas = vmap(lambda x: gradient_mapping(obj, x, alpha, radius))
    offset = int(torch.randint(0, stride, (1,), generator=generator))
    x = x1.expand(R, -1).clone()
    measure = torch.full((steps, R), float("nan"), dtype=dtype)
    weight = torch.zeros(steps, dtype=dtype)
    active = torch.zeros(steps, R, dtype=torch.bool)
    snaps: list[torch.Tensor] = []
    for t in range(steps):
        if snapshot_every and t % snapshot_every == 0:
            snaps.append(x.clone())
        if t < head or (t - head) % stride == offset:
            G = meas(x)
            measure[t] = (G * G).sum(-1)
            weight[t] = 1.0 if t < head else float(stride)
        if t == steps - 1:
            break
        idx = sample_indices(obj.n, obj.T, (R, width), generator)
        idx[full] = idx_full
        pre = x - alpha * flatten_variables(
            vmap(lambda xx, i, ww: minibatch_gradient(obj, unflatten_variables(obj, xx), i, ww, sample_grad))(x, idx, w)
        )
        active[t] = torch.linalg.vector_norm(pre, dim=-1) > radius
        x = project_ball(pre, radius)  # eq. (9)
    snapshots = torch.stack(snaps) if snaps else torch.zeros(0, R, x.shape[-1], dtype=dtype)
    return SGDTrace(measure, weight, active, x, lab, head, stride, snapshots)


def _check_sgd_arguments(
    obj: FPPObjective, start: FPPVariables, steps: int, step_size: float, radius: float,
    batches: tuple[int | None, ...], replicates: int, head: int, stride: int,
) -> tuple[float, float, torch.Tensor]:  # fmt: skip
    """Validate :func:`projected_sgd`'s arguments: the step size, the radius and the flat start point x_1."""
    obj.check_variables(start, "start")
    require_positive_int("steps", steps)
    require_positive_int("replicates", replicates)
    require_positive_int("stride", stride)
    require_positive_int("head", head, 0)
    alpha = require_positive("step_size", step_size)
    radius = require_positive("radius", radius)
    if not batches:
        raise InvalidArgument("batches", batches, "need at least one batch configuration")
    x1 = flatten_variables(start)
    norm = float(torch.linalg.vector_norm(x1))
    if norm > radius:
        raise InvalidArgument(
            "radius", radius, f"the projection ball must contain the start point (||x_1|| = {norm:.6g})"
        )
    return alpha, radius, x1


def _batch_layout(
    obj: FPPObjective, batches: tuple[int | None, ...], replicates: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Columns of the vectorised run: batch labels (0 = full batch), index weights (R, width) and the full batch's
    indices (width,) -- a batch of m draws m indices with weight 1/m; the full batch all n−T+1 with their law."""
    support, probs = index_distribution(obj.n, obj.T)
    width = max([b for b in batches if b is not None] + ([obj.num_samples] if None in batches else [1]))
    labels: list[int] = []
    for b in batches:
        if b is not None:
            require_positive_int("batch", b)
        labels += [0] if b is None else [b] * replicates
    R = len(labels)
    lab = torch.tensor(labels)
    full = lab == 0
    w = torch.zeros(R, width, dtype=dtype)
    for r, b in enumerate(labels):
        if b == 0:
            w[r, : obj.num_samples] = probs.to(dtype)
        else:
            w[r, :b] = 1.0 / b
    idx_full = torch.full((width,), obj.T, dtype=torch.long)
    if bool(full.any()):
        idx_full[: obj.num_samples] = support
    return lab, w, idx_full
