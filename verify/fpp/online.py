r"""Online FPP (App. A, Algorithm 1), FPP without state update, and online truncated BPTT.

Paper: ``fpp-explicit-state-variables.md`` App. A (Algorithm 1), §5 ("Comparison to
T-BPTT", "Benefits of mini-batch updates and multiple updates per step").

**Algorithm 1** (per step t): drop the oldest transition when the buffer (size N)
is full; observe :math:`o_t, y_t`; compute :math:`s_t = f_W(s_{t-1}, o_t)` from the
newest state in the buffer; predict :math:`g_\beta(s_t)` (the online loss is that
prediction's loss on :math:`y_t`); add :math:`(s_t, o_t, y_t)`; then M times: sample
B trajectories :math:`(s_{i-T}, o_{i-T+1..i}, y_i, s_i)` uniformly from the buffer,
take the mini-batch average of eq. (7), update W and β, and write the updated
:math:`s_{i-T}, s_i` back into the buffer.

* **FPP without state update** (the §5 baseline, "similar to Stored State T-BPTT"):
  the same updates of W and β, the buffer's states are never changed.
* **T-BPTT** (our own small trainer, the baseline of Fig. 2/3): the running state
  :math:`s_t = f_W(s_{t-1}, o_t)` is kept; each step the last T transitions are
  re-run from the stored :math:`s_{t-T}` (treated as a constant) with the current
  weights, and the gradient of the current loss :math:`\ell(g_\beta(\hat s_t); y_t)`
  through those T transitions updates W and β (one update per step, O(T) compute
  like FPP with M = B = 1).

Optimiser (App. D: RMSprop for all experiments): RMSprop for W and β; the buffer's
states get RMSprop too, with one accumulator per buffer slot that starts at zero
when the slot is filled (the paper does not say how the states are optimised;
``state_lr`` sets their step, default the parameters' step).

Departures: a trajectory needs :math:`s_{i-T}` in the buffer, so updates start once
the buffer holds T + 1 transitions (Algorithm 1 says t ≥ T; the initial
:math:`s_0 = 0` is not stored). All functions are pure and ``vmap`` over
independent runs (each run's learning rate may differ: a learning-rate grid runs
in one pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import torch
from torch.func import grad, vmap

from verify._narrow import as_reference_dtype
from verify._validate import require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.fpp.objective import SampleGradFn, eq7_gradients, prediction_loss, unroll_window
from verify.model.cells import Cell
from verify.model.losses import Loss, Readout
from verify.model.problem import Problem

__all__ = [
    "METHODS",
    "OnlineConfig",
    "OnlineState",
    "fpp_step",
    "init_online_state",
    "model_problem",
    "run_online",
    "tbptt_step",
    "tbptt_window_gradient",
]

METHODS = ("fpp", "fpp-no-state-update", "tbptt")
#: how the buffer's states are optimised: RMSprop (one accumulator per slot) or plain SGD (the authors' code)
STATE_OPTIMIZERS = ("rmsprop", "sgd")


@dataclass(frozen=True)
class OnlineConfig:
    """Hyperparameters of the online learners (Algorithm 1 and the baselines).

    ``T`` trajectory / truncation length, ``buffer_size`` N, ``updates`` M per
    step, ``batch`` B, ``lam`` λ of eq. (6), ``lr`` the RMSprop step, ``state_lr``
    the states' step (None: ``lr``), ``decay`` and ``eps`` RMSprop's constants,
    ``state_optimizer`` how the buffer's states are optimised: ``"rmsprop"`` (one
    accumulator per slot, the default) or ``"sgd"`` (``s <- s - state_lr * grad``,
    as the authors' code does: ``model/torch_fpp.py`` of VincentLiu3/fpp).
    """

    T: int = 1
    buffer_size: int = 100
    updates: int = 1
    batch: int = 1
    lam: float = 1.0
    lr: float = 0.01
    state_lr: float | None = None
    decay: float = 0.99
    eps: float = 1e-8
    state_optimizer: str = "rmsprop"

    def __post_init__(self) -> None:
        require_positive_int("T", self.T)
        require_positive_int("buffer_size", self.buffer_size)
        require_positive_int("updates", self.updates)
        require_positive_int("batch", self.batch)
        require_positive("lam", self.lam)
        require_positive("lr", self.lr)
        if self.state_lr is not None:
            require_positive("state_lr", self.state_lr)
        if not (0.0 < self.decay < 1.0):
            raise InvalidArgument("decay", self.decay, "RMSprop decay must lie in (0, 1)")
        require_positive("eps", self.eps)
        if self.state_optimizer not in STATE_OPTIMIZERS:
            raise InvalidArgument("state_optimizer", self.state_optimizer, f"must be one of {STATE_OPTIMIZERS}")
        if self.buffer_size < self.T + 1:
            raise InvalidArgument(
                "buffer_size", self.buffer_size, f"the buffer must hold T + 1 = {self.T + 1} transitions"
            )


class OnlineState(NamedTuple):
    """One run's state: θ and its RMSprop accumulator; the buffer (newest transition last)."""

    theta: torch.Tensor  # (p,)
    theta_v: torch.Tensor  # (p,)
    states: torch.Tensor  # (N, k): s_j of the buffered transitions
    states_v: torch.Tensor  # (N, k): RMSprop accumulators of the buffered states
    inputs: torch.Tensor  # (N, d): o_j
    targets: torch.Tensor  # (N, m): y_j
    current: torch.Tensor  # (k,): the newest state s_{t-1} (the running state for T-BPTT)


def model_problem(cell: Cell, readout: Readout, loss: Loss, dtype: torch.dtype = torch.float64) -> Problem:
    """A one-step :class:`Problem` carrying the model (cell, readout, loss) and its θ layout."""
    return Problem(
        cell,
        readout,
        loss,
        torch.zeros(1, cell.input_size, dtype=dtype),
        torch.zeros(1, readout.output_size, dtype=dtype),
        torch.zeros(cell.state_size, dtype=dtype),
    )


def init_online_state(model: Problem, cfg: OnlineConfig, theta: torch.Tensor) -> OnlineState:
    """Empty buffer, :math:`s_0 = 0` (Algorithm 1), θ as given."""
    N, k = cfg.buffer_size, model.n
    d, m = model.cell.input_size, model.readout.output_size
    dt, dev = theta.dtype, theta.device

    def z(*shape: int) -> torch.Tensor:
        return torch.zeros(*shape, dtype=dt, device=dev)

    return OnlineState(theta, torch.zeros_like(theta), z(N, k), z(N, k), z(N, d), z(N, m), z(k))


def _rmsprop(
    x: torch.Tensor, v: torch.Tensor, g: torch.Tensor, lr: torch.Tensor, cfg: OnlineConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    v = cfg.decay * v + (1 - cfg.decay) * g * g
    return x - lr * g / (torch.sqrt(v) + cfg.eps), v


def _push(st: OnlineState, s_t: torch.Tensor, o_t: torch.Tensor, y_t: torch.Tensor) -> OnlineState:
    def roll(buf: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        return torch.cat([buf[1:], new[None]], dim=0)

    return st._replace(
        states=roll(st.states, s_t),
        states_v=roll(st.states_v, torch.zeros_like(s_t)),
        inputs=roll(st.inputs, o_t),
        targets=roll(st.targets, y_t),
        current=s_t,
    )


def fpp_step(
    model: Problem,
    cfg: OnlineConfig,
    st: OnlineState,
    o_t: torch.Tensor,
    y_t: torch.Tensor,
    positions: torch.Tensor | None,
    lr: torch.Tensor,
    update_states: bool = True,
    sample_grad: SampleGradFn = eq7_gradients,
) -> tuple[OnlineState, torch.Tensor]:
    r"""One step of Algorithm 1 for one run; returns the new state and the online loss of step t.

    ``positions`` (M, B) are buffer slots of the sampled :math:`i` (slot N−1 is the
    newest; slot i−T must hold a transition), or None before updates start.
    ``update_states=False`` is "FPP without state update".
    """
    with torch.no_grad():
        s_t = model.transition(st.theta, st.states[-1], o_t)  # s_t = f_W(s_{t-1}, o_t), s_{t-1} from the buffer
        loss_t = prediction_loss(model, st.theta, s_t, y_t)
    st = _push(st, s_t, o_t, y_t)
    if positions is None:
        return st, loss_t
    T, N = cfg.T, cfg.buffer_size
    offs = torch.arange(T)
    w = torch.full((positions.shape[-1],), 1.0 / positions.shape[-1], dtype=st.theta.dtype)
    eye = torch.eye(N, dtype=st.theta.dtype)
    state_lr = lr if cfg.state_lr is None else cfg.state_lr * torch.ones_like(lr)
    for m in range(positions.shape[0]):
        idx = positions[m]
        window = st.inputs[idx[:, None] - T + 1 + offs]  # o_{i-T+1..i}
        g_th, g_start, g_end = (  # eq. (7), mini-batch average (float32 code under test: into float64, noted)
            as_reference_dtype(g, st.theta)
            for g in sample_grad(
                model, T, cfg.lam, st.theta, st.states[idx - T], st.states[idx], window, st.targets[idx], w
            )
        )
        theta, theta_v = _rmsprop(st.theta, st.theta_v, g_th, lr, cfg)
        st = st._replace(theta=theta, theta_v=theta_v)
        if update_states:
            g_S = eye[idx - T].transpose(0, 1) @ g_start + eye[idx].transpose(0, 1) @ g_end
            touched = (eye[idx - T].sum(0) + eye[idx].sum(0))[:, None] > 0
            if cfg.state_optimizer == "sgd":  # the authors' code: s <- s - lr * grad (model/torch_fpp.py)
                S_new, v_new = st.states - state_lr * g_S, st.states_v
            else:
                S_new, v_new = _rmsprop(st.states, st.states_v, g_S, state_lr, cfg)
            st = st._replace(
                states=torch.where(touched, S_new, st.states), states_v=torch.where(touched, v_new, st.states_v)
            )
    return st, loss_t


def tbptt_window_gradient(
    model: Problem, theta: torch.Tensor, s_start: torch.Tensor, window: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    r"""Truncated BPTT's gradient: :math:`\partial\ell(g_\beta(\hat s_t); y_t)/\partial\theta` through the
    T transitions of ``window`` (:math:`o_{t-T+1}..o_t`), :math:`s_{t-T}` = ``s_start`` held constant."""

    def window_loss(th: torch.Tensor) -> torch.Tensor:
        return prediction_loss(model, th, unroll_window(model, th, s_start, window), target)

    out: torch.Tensor = grad(window_loss)(theta)
    return out


def tbptt_step(
    model: Problem,
    cfg: OnlineConfig,
    st: OnlineState,
    o_t: torch.Tensor,
    y_t: torch.Tensor,
    ready: bool,
    lr: torch.Tensor,
) -> tuple[OnlineState, torch.Tensor]:
    r"""One step of online T-BPTT for one run (module docstring); returns the new state and the online loss.

    FPP (fpp-explicit-state-variables.md) §5: the T-BPTT baseline of Fig. 2 and 3(b).
    """
    with torch.no_grad():
        s_t = model.transition(st.theta, st.current, o_t)
        loss_t = prediction_loss(model, st.theta, s_t, y_t)
    st = _push(st, s_t, o_t, y_t)
    if not ready:
        return st, loss_t
    T = cfg.T
    g = tbptt_window_gradient(model, st.theta, st.states[-T - 1], st.inputs[-T:], st.targets[-1])
    theta, theta_v = _rmsprop(st.theta, st.theta_v, g, lr, cfg)
    return st._replace(theta=theta, theta_v=theta_v), loss_t


def run_online(
    method: str,
    model: Problem,
    cfg: OnlineConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    theta0: torch.Tensor,
    lrs: torch.Tensor,
    generator: torch.Generator,
    sample_grad: SampleGradFn = eq7_gradients,
) -> torch.Tensor:
    """Run ``method`` on R runs in lockstep (vmapped); returns the online losses (R, steps).

    FPP App. A, Algorithm 1 (and §5's T-BPTT baseline).

    ``inputs`` (R, steps, d), ``targets`` (R, steps, m) (one-hot for cross-entropy),
    ``theta0`` (R, p), ``lrs`` (R,) per-run RMSprop steps. FPP's sample positions
    are drawn from ``generator`` (uniform over the buffer's valid slots).
    """
    if method not in METHODS:
        raise InvalidArgument("method", method, f"must be one of {METHODS}")
    R, steps = inputs.shape[0], inputs.shape[1]
    if targets.shape[:2] != (R, steps) or theta0.shape != (R, model.p) or lrs.shape != (R,):
        raise InvalidArgument(
            "inputs/targets/theta0/lrs",
            (tuple(inputs.shape), tuple(targets.shape), tuple(theta0.shape), tuple(lrs.shape)),
            f"expected (R, steps, d), (R, steps, m), (R, p={model.p}), (R,)",
        )
    states = vmap(lambda th: init_online_state(model, cfg, th))(theta0)
    N, T = cfg.buffer_size, cfg.T
    losses = torch.empty(R, steps, dtype=inputs.dtype)
    update_states = method == "fpp"

    def tbptt(s: OnlineState, o: torch.Tensor, y: torch.Tensor, lr: torch.Tensor, ready: bool) -> Any:
        return tbptt_step(model, cfg, s, o, y, ready, lr)

    def fpp(s: OnlineState, o: torch.Tensor, y: torch.Tensor, p: torch.Tensor, lr: torch.Tensor) -> Any:
        return fpp_step(model, cfg, s, o, y, p, lr, update_states, sample_grad)

    def fill(s: OnlineState, o: torch.Tensor, y: torch.Tensor, lr: torch.Tensor) -> Any:
        return fpp_step(model, cfg, s, o, y, None, lr)

    for t in range(steps):
        count = min(t + 1, N)  # transitions in the buffer after pushing step t
        ready = count >= T + 1
        if method == "tbptt":
            states, losses[:, t] = vmap(partial(tbptt, ready=ready))(states, inputs[:, t], targets[:, t], lrs)
        elif ready:
            low = N - count + T
            pos = torch.randint(low, N, (R, cfg.updates, cfg.batch), generator=generator)
            states, losses[:, t] = vmap(fpp)(states, inputs[:, t], targets[:, t], pos, lrs)
        else:
            states, losses[:, t] = vmap(fill)(states, inputs[:, t], targets[:, t], lrs)
    return losses
