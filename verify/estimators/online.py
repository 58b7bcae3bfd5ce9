r"""Machinery shared by the online estimators, the online (learning) mode, and the contract checker.

Three parts:

* **Helpers** every estimator of this package uses: validating a ``step`` call
  (t, θ, and that the state belongs to this problem), the shared forward trajectory,
  rollouts, and reverse-mode products with batched cotangents.
* **The online mode** (:func:`run_online`): θ is updated after every step by a
  caller-provided optimizer, as in RTRL's online forward SGD
  (rtrl-convergence-analysis.md §2.3, eq. (2.24)-(2.26)) and UORO's Algorithm 1
  ("SGDOpt.update"). The estimator is the same object in both modes: its ``step``
  uses whatever θ it is given, so the forward sensitivities mix the successive
  θ_t exactly as eq. (2.24) prescribes. :class:`RobbinsMonroSGD` is plain SGD with
  steps :math:`\alpha_t = \alpha_0/(1 + t/t_0)^{a}`, :math:`1/2 < a \le 1`
  (Assumption 2.14: :math:`\sum\alpha_t = \infty`, :math:`\sum\alpha_t^2 < \infty`).
* **The contract checker** (:func:`check_contract`): runs any object claiming the
  :class:`~verify.estimators.base.OnlineEstimator` contract through the properties
  the toolkit relies on (shapes, dtype, purity, bounded state, leading sample
  dimension, no mutation of inputs) and raises :class:`ContractViolation` naming the
  first property that fails.

**Shared forward trajectory.** θ is shared by the M samples and the noise of the
stochastic estimators never enters the forward pass, so the M samples of every
estimator here follow one forward trajectory :math:`s_t`. The estimators store it
with the leading sample dimension the contract asks for (as a broadcast view,
``expand``: no M-fold memory) and compute the primal once per step; only the
sample-dependent quantities (UORO's :math:`\tilde s, \tilde\theta, \nu`) are batched.
A state whose samples carry *different* forward states is refused (it cannot come
from ``init``/``step`` of these estimators).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch

from verify._validate import require_positive, require_positive_int
from verify.errors import InvalidArgument, VerifyError
from verify.estimators.base import OnlineEstimator
from verify.model.problem import Problem

__all__ = [
    "ContractViolation",
    "OnlineRun",
    "Optimizer",
    "RobbinsMonroSGD",
    "batch_numel",
    "check_contract",
    "check_problem_theta",
    "check_step",
    "expand_samples",
    "grad_batched",
    "rollout",
    "run_online",
    "shared",
    "state_jvp",
]


# --------------------------------------------------------------------------- helpers
class _Named:
    """Mixin: the contract's ``name`` as a plain (settable-typed) attribute.

    The contract's ``Protocol`` declares ``name: str``; mypy reads fields of a frozen
    dataclass as read-only and would refuse them, so the estimators keep ``name``
    outside their dataclass fields and set it in ``__post_init__``.
    """

    name: str


def batch_numel(problem: Problem) -> int:
    """Number of sequences in the problem's batch shape (1 without a batch)."""
    return math.prod(problem.batch_shape)


def expand_samples(x: torch.Tensor, samples: int) -> torch.Tensor:
    """``x`` with a leading sample dimension of size ``samples`` (a broadcast view)."""
    return x.unsqueeze(0).expand(samples, *x.shape)


def check_problem_theta(problem: Problem, theta: torch.Tensor, *, finite: bool = True) -> torch.Tensor:
    """θ validated against the problem (shape, device, the problem's dtype; finite unless ``finite=False``).

    ``step`` skips the finiteness scan (``init`` and the online driver do it): a
    non-finite θ then shows up as a non-finite estimate, which
    :func:`~verify.estimators.base.run_estimator` and :func:`run_online` refuse.
    """
    if not isinstance(problem, Problem):
        raise InvalidArgument("problem", type(problem).__name__, "must be a verify.Problem")
    if not isinstance(theta, torch.Tensor):
        raise InvalidArgument("theta", type(theta).__name__, "must be a torch.Tensor")
    if finite:
        theta = problem.check_theta(theta)
    elif theta.dim() != 1 or theta.shape[0] != problem.p or theta.device != problem.device:
        problem.check_theta(theta)  # raises with the problem's own message
    if theta.dtype != problem.dtype:
        raise InvalidArgument("theta", f"dtype {theta.dtype}", f"must match the problem's dtype {problem.dtype}")
    return theta.detach()


def check_step(
    estimator: str,
    problem: Problem,
    theta: torch.Tensor,
    state: NamedTuple,
    t: int,
    shapes: Mapping[str, Sequence[int]],
) -> tuple[torch.Tensor, int]:
    """Validate a ``step`` call; returns (θ, M).

    ``shapes`` gives, for each field of ``state``, its expected shape after the
    leading sample dimension M (which must be the same for every field). A state
    made for another problem size, dtype or device is refused with
    :class:`InvalidArgument` naming the field and its shape.
    """
    theta = check_problem_theta(problem, theta, finite=False)
    if isinstance(t, bool) or not isinstance(t, int) or not (1 <= t <= problem.T):
        raise InvalidArgument("t", t, f"must be an integer step index in 1..T={problem.T}")
    fields = getattr(state, "_fields", None)
    if fields is None or tuple(fields) != tuple(shapes):
        raise InvalidArgument(
            "state", type(state).__name__, f"{estimator} expects its own state with fields {tuple(shapes)}"
        )
    M: int | None = None
    for name, want in shapes.items():
        x = getattr(state, name)
        if not isinstance(x, torch.Tensor):
            raise InvalidArgument(f"state.{name}", type(x).__name__, "must be a torch.Tensor")
        if M is None:
            M = int(x.shape[0]) if x.dim() > 0 else 0
        if tuple(x.shape) != (M, *want):
            raise InvalidArgument(
                f"state.{name}",
                f"tensor of shape {tuple(x.shape)}",
                f"expected {(M, *tuple(want))} (samples M, then the sizes of this problem: n={problem.n}, "
                f"p={problem.p}, batch={problem.batch_shape}); was the state made for another problem?",
            )
        if x.dtype != problem.dtype:
            raise InvalidArgument(
                f"state.{name}", f"dtype {x.dtype}", f"must match the problem's dtype {problem.dtype}"
            )
        if x.device != problem.device:
            raise InvalidArgument(f"state.{name}", f"device {x.device}", f"problem tensors live on {problem.device}")
    if not M:
        raise InvalidArgument("state", "empty sample dimension", "the state needs M >= 1 samples")
    return theta, M


def shared(name: str, x: torch.Tensor) -> torch.Tensor:
    """The common value of a per-sample tensor that must not vary over samples (``x[0]``).

    Broadcast views (stride 0, as this package stores them) are accepted without
    a look; materialised tensors are compared elementwise.
    """
    if x.shape[0] > 1 and x.stride(0) != 0 and not torch.equal(x, x[:1].expand_as(x)):
        raise InvalidArgument(
            name,
            "samples with different values",
            "the M samples share one forward trajectory (θ is shared, noise never enters the forward pass)",
        )
    return x[0]


def rollout(problem: Problem, theta: torch.Tensor, s: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Apply the transitions of steps ``start+1 .. stop`` to ``s`` (differentiable)."""
    for tau in range(start + 1, stop + 1):
        s = problem.transition(theta, s, problem.inputs[tau - 1])
    return s


def grad_batched(
    output: torch.Tensor,
    inputs: Sequence[torch.Tensor],
    cotangents: torch.Tensor,
    *,
    retain_graph: bool = True,
) -> tuple[torch.Tensor, ...]:
    """Row-vector × Jacobian for a batch of cotangents (leading dim K): each (K, *input.shape).

    "F.backprop(v, δo)" of UORO §1, vectorized over K cotangents in one pass
    (``torch.autograd.grad(..., is_grads_batched=True)``). For K ≤ 2 the same
    products go through the plain engine one cotangent at a time: the batched
    engine's fixed cost per call exceeds a second pass at that size (the sample
    dimension itself is never looped over for M > 2).
    """
    K = cotangents.shape[0]
    if K <= 2:
        rows = [
            torch.autograd.grad(
                output,
                tuple(inputs),
                grad_outputs=cotangents[i],
                retain_graph=retain_graph or i < K - 1,
                allow_unused=True,
            )
            for i in range(K)
        ]
        return tuple(
            torch.stack([torch.zeros_like(x) if row[j] is None else row[j] for row in rows])
            for j, x in enumerate(inputs)
        )
    out = torch.autograd.grad(
        output,
        tuple(inputs),
        grad_outputs=cotangents,
        is_grads_batched=True,
        retain_graph=retain_graph,
        allow_unused=True,
    )
    return tuple(
        torch.zeros((cotangents.shape[0], *x.shape), dtype=x.dtype, device=x.device) if g is None else g
        for g, x in zip(out, inputs, strict=True)
    )


def state_jvp(output: torch.Tensor, state_input: torch.Tensor, tangents: torch.Tensor) -> torch.Tensor:
    r"""Tangent forward propagation :math:`(\partial F/\partial s)\,v` for K tangents (K, *s.shape).

    UORO §1 eq. (1), "F.forwarddiff((x, s, θ), (0, v, 0))", on the existing reverse
    graph of ``output = F(s)``: the pullback :math:`u \mapsto u^\top \partial F/\partial s`
    is linear in u, and differentiating it w.r.t. u along v gives :math:`(\partial F/\partial s) v`
    exactly (the "double-backward" form of forward mode). We use it instead of
    ``torch.func.jvp`` because it reuses the forward pass already taken for the
    backprop of Algorithm 1 and measured 2-3× faster on CPU at n = 64.
    """
    u = torch.zeros_like(output, requires_grad=True)
    (gT,) = torch.autograd.grad(output, state_input, grad_outputs=u, create_graph=True, retain_graph=True)
    (jv,) = grad_batched(gT, (u,), tangents, retain_graph=False)
    return jv


# ------------------------------------------------------------------- online mode
class Optimizer(Protocol):
    """A pure parameter-update rule: ``init(θ) -> opt_state``; ``update(θ, g, opt_state, t) -> (θ, opt_state)``."""

    def init(self, theta: torch.Tensor) -> Any: ...

    def update(self, theta: torch.Tensor, grad: torch.Tensor, opt_state: Any, t: int) -> tuple[torch.Tensor, Any]: ...


@dataclass(frozen=True)
class RobbinsMonroSGD:
    r"""SGD with Robbins–Monro steps (rtrl-convergence-analysis.md eq. (2.26), Assumption 2.14).

    .. math:: \theta_{t+1} = \theta_t - \alpha_t\,\hat g_t,\qquad
              \alpha_t = \frac{\alpha_0}{(1 + t/t_0)^{a}},\quad \tfrac12 < a \le 1,

    so that :math:`\sum_t\alpha_t = \infty` and :math:`\sum_t\alpha_t^2 < \infty`.
    ``clip`` (optional) bounds the norm of each update; it is off by default.
    """

    lr: float
    t0: float = 100.0
    power: float = 1.0
    clip: float | None = None

    def __post_init__(self) -> None:
        require_positive("lr", self.lr)
        require_positive("t0", self.t0)
        if not isinstance(self.power, (int, float)) or not (0.5 < float(self.power) <= 1.0):
            raise InvalidArgument("power", self.power, "Robbins–Monro steps need 1/2 < power <= 1")
        if self.clip is not None:
            require_positive("clip", self.clip)

    def step_size(self, t: int) -> float:
        return float(self.lr / (1.0 + t / self.t0) ** self.power)  # Assumption 2.14

    def init(self, theta: torch.Tensor) -> None:
        return None

    def update(self, theta: torch.Tensor, grad: torch.Tensor, opt_state: Any, t: int) -> tuple[torch.Tensor, Any]:
        delta = self.step_size(t) * grad
        if self.clip is not None:
            norm = float(torch.linalg.vector_norm(delta))
            if norm > self.clip:
                delta = delta * (self.clip / norm)
        return theta - delta, opt_state  # eq. (2.26)


class OnlineRun(NamedTuple):
    """Result of :func:`run_online`: the final θ, θ at the recorded steps, and the estimates' means."""

    theta: torch.Tensor
    steps: tuple[int, ...]
    thetas: torch.Tensor
    grad_norms: torch.Tensor


def run_online(
    estimator: OnlineEstimator,
    problem: Problem,
    theta0: torch.Tensor,
    optimizer: Optimizer,
    rng: torch.Generator,
    *,
    samples: int = 1,
    steps: int | None = None,
    record: Sequence[int] = (),
    callback: Callable[[int, torch.Tensor], None] | None = None,
) -> OnlineRun:
    r"""The online mode: θ updated after every step with the sample mean of the estimate.

    For t = 1..steps: ``(state, ĝ) = estimator.step(problem, θ_t, state, t, rng)``;
    :math:`\theta_{t+1} = \text{optimizer.update}(\theta_t, \operatorname{mean}_M \hat g, t)`.
    So step t's forward pass and sensitivities use θ_t, the value current when
    :math:`x_t` arrives (rtrl-convergence-analysis.md eq. (2.24)-(2.26); UORO
    Algorithm 1's last line). θ after step t is stored for every t in ``record``
    (0 = θ₀). The estimator's state is carried across θ changes unchanged: that is
    what makes the algorithm online (and its estimates biased by the drift of θ,
    UORO §2 "unbiasedness only holds in the limit of small learning rates").
    """
    samples = require_positive_int("samples", samples)
    steps = problem.T if steps is None else require_positive_int("steps", steps)
    if steps > problem.T:
        raise InvalidArgument("steps", steps, f"the problem has T={problem.T} steps")
    theta = check_problem_theta(problem, theta0).clone()
    want = sorted(set(record))
    if want and (want[0] < 0 or want[-1] > steps):
        raise InvalidArgument("record", tuple(record), f"recorded steps must lie in 0..{steps}")
    kept: list[torch.Tensor] = [theta.clone()] if want and want[0] == 0 else []
    norms = torch.empty(steps, dtype=torch.float64)
    state = estimator.init(problem, theta, rng, samples=samples)
    opt_state = optimizer.init(theta)
    for t in range(1, steps + 1):
        state, est = estimator.step(problem, theta, state, t, rng)
        g = est.mean(0)
        if not bool(torch.isfinite(g).all()):
            raise InvalidArgument(f"{estimator.name}.step(...) estimate", f"non-finite at t={t}", "cannot update θ")
        norms[t - 1] = float(torch.linalg.vector_norm(g))
        theta, opt_state = optimizer.update(theta, g, opt_state, t)
        if not bool(torch.isfinite(theta).all()):
            raise InvalidArgument("optimizer", f"non-finite θ after step {t}", "the online iteration diverged")
        if callback is not None:
            callback(t, theta)
        if t in want:
            kept.append(theta.clone())
    thetas = torch.stack(kept) if kept else torch.empty(0, problem.p, dtype=theta.dtype)
    return OnlineRun(theta, tuple(want), thetas, norms)


# ------------------------------------------------------------------ contract check
class ContractViolation(VerifyError, AssertionError):
    """An object does not follow the online-estimator contract (the property is named)."""


def _tensors(state: Any) -> list[tuple[str, torch.Tensor]]:
    fields = getattr(state, "_fields", None)
    if fields is None:
        raise ContractViolation(f"state must be a NamedTuple of tensors, got {type(state).__name__}")
    out = []
    for f in fields:
        x = getattr(state, f)
        if not isinstance(x, torch.Tensor):
            raise ContractViolation(f"state field {f!r} is a {type(x).__name__}, not a tensor")
        out.append((f, x))
    return out


def check_contract(
    estimator: Any,
    problem: Problem,
    theta: torch.Tensor,
    *,
    samples: int = 3,
    steps: int | None = None,
    seed: int = 0,
) -> None:
    """Check that ``estimator`` follows the contract of :mod:`verify.estimators.base` on ``problem``.

    Properties (each failure raises :class:`ContractViolation` naming it):

    1. it has a ``name`` (str) and ``init``/``step`` (the ``OnlineEstimator`` protocol);
    2. the state is a NamedTuple of tensors, each with leading sample dimension M,
       in the problem's dtype and on its device;
    3. ``step`` returns an (M, p) estimate in the problem's dtype, on its device, finite;
    4. purity: the same inputs and generator state give identical states and estimates,
       and the generator ends in the same state; inputs (θ, state, problem) are not mutated;
    5. the state's size does not grow with t (bounded memory);
    6. samples are exchangeable in shape: M = 1 and M = ``samples`` both work.
    """
    if not isinstance(estimator, OnlineEstimator) or not isinstance(getattr(estimator, "name", None), str):
        raise ContractViolation("estimator lacks name: str, init(...) or step(...)")
    theta = check_problem_theta(problem, theta)
    steps = problem.T if steps is None else min(steps, problem.T)
    theta_copy = theta.clone()
    inputs_copy = problem.inputs.clone()
    for M in sorted({1, samples}):
        g1 = torch.Generator(device="cpu").manual_seed(seed)
        g2 = torch.Generator(device="cpu").manual_seed(seed)
        st1 = estimator.init(problem, theta, g1, samples=M)
        st2 = estimator.init(problem, theta, g2, samples=M)
        size0 = None
        for t in range(1, steps + 1):
            tens = _tensors(st1)
            _check_state_fields(tens, M, problem)
            size = sum(x.numel() for _, x in tens)
            if size0 is None:
                size0 = size
            elif size > size0:
                raise ContractViolation(f"state grows with t: {size0} elements at t=1, {size} at t={t}")
            snapshot = [x.clone() for _, x in tens]
            st1, e1 = estimator.step(problem, theta, st1, t, g1)
            st2, e2 = estimator.step(problem, theta, st2, t, g2)
            for (f, x), x0 in zip(tens, snapshot, strict=True):
                if not torch.equal(x, x0):
                    raise ContractViolation(f"step mutated its input state (field {f!r}) at t={t}")
            _check_estimate(e1, M, problem, t)
            if not torch.equal(e1, e2) or any(
                not torch.equal(a, b) for (_, a), (_, b) in zip(_tensors(st1), _tensors(st2), strict=True)
            ):
                raise ContractViolation(f"not pure: two runs from the same generator state differ at t={t}")
        if not torch.equal(g1.get_state(), g2.get_state()):
            raise ContractViolation("not pure: the generator consumption differs between identical runs")
    if not torch.equal(theta, theta_copy) or not torch.equal(problem.inputs, inputs_copy):
        raise ContractViolation("the estimator mutated θ or the problem's inputs")


def _check_state_fields(tens: list[tuple[str, torch.Tensor]], M: int, problem: Problem) -> None:
    """Contract 2: every state field has leading sample dimension M, the problem's dtype and device."""
    for f, x in tens:
        if x.dim() == 0 or x.shape[0] != M:
            raise ContractViolation(f"state field {f!r} has shape {tuple(x.shape)}: no leading sample dim {M}")
        if x.dtype != problem.dtype and x.is_floating_point():
            raise ContractViolation(f"state field {f!r} has dtype {x.dtype}, problem is {problem.dtype}")
        if x.device != problem.device:
            raise ContractViolation(f"state field {f!r} lives on {x.device}, problem on {problem.device}")


def _check_estimate(e1: Any, M: int, problem: Problem, t: int) -> None:
    """Contract 3: the estimate is an (M, p) tensor in the problem's dtype, on its device, finite."""
    if not isinstance(e1, torch.Tensor) or tuple(e1.shape) != (M, problem.p):
        shape = tuple(e1.shape) if isinstance(e1, torch.Tensor) else type(e1).__name__
        raise ContractViolation(f"estimate has shape {shape} at t={t}, expected {(M, problem.p)}")
    if e1.dtype != problem.dtype or e1.device != problem.device:
        raise ContractViolation(f"estimate is {e1.dtype} on {e1.device}; problem {problem.dtype} on {problem.device}")
    if not bool(torch.isfinite(e1).all()):
        raise ContractViolation(f"estimate not finite at t={t}")
