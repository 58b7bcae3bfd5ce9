r"""A batched engine for the §5 learners on Elman-tanh models: the same algorithms as :mod:`verify.fpp.online`.

Paper: ``fpp-explicit-state-variables.md`` App. A (Algorithm 1) and §5. The
reproductions run thousands of steps for tens of runs × learning rates; the
generic learners of :mod:`verify.fpp.online` (any cell, ``vmap`` over runs,
autograd per window) spend most of their time in per-operation overhead. This
module runs the *same* updates for the one model family the reproductions use --
an Elman-tanh cell :math:`s' = \tanh(W s + U x + b)` with a linear readout and a
squared-error or softmax cross-entropy loss -- with explicit batched tensors (a
leading run dimension R) and the window's backward pass written out:

.. math::
    \delta_T = \nabla_{\hat s_i}\ell - \lambda(s_i - \hat s_i), \quad
    a_t = \delta_t \odot (1 - s_t^2), \quad \delta_{t-1} = W^\top a_t, \quad
    \nabla_W L_i = \textstyle\sum_t a_t s_{t-1}^\top,\ \nabla_U L_i = \sum_t a_t x_t^\top,\ \nabla_b L_i = \sum_t a_t

(eq. (7); :math:`\nabla_{s_{i-T}} L_i = \delta_0`, :math:`\nabla_{s_i} L_i = \lambda(s_i - \hat s_i)`).
The buffer is circular (no copies per step). Random draws (FPP's sampled
positions) are taken from the generator in exactly the order
:func:`verify.fpp.online.run_online` takes them, so for the same inputs both
engines produce the same losses to round-off: ``tests/fpp/test_batched.py``
checks this for every method, both losses, M, B > 1 and both state optimisers
-- the generic engine is the reference, this one is the fast path.

Methods (:data:`BATCHED_METHODS`): ``fpp``, ``fpp-no-state-update`` (§5's
baseline), ``tbptt`` (one update per step on the last T transitions, the current
loss only) and ``tbptt-no-overlap`` (§5's No-Overlap T-BPTT: one update every T
steps on the T transitions since the last update, the mean loss over all T
predictions -- the authors' ``model/torch_tbptt.py`` with ``overlap=False``).

``theta_grad`` transforms every parameter gradient before the optimiser step:
the identity for the algorithm, a mutant for the negative controls of the
reproduction checks (:mod:`verify.impl.mutants.fpp`: sign flipped, zeroed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from verify.errors import InvalidArgument
from verify.fpp.online import OnlineConfig
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.problem import Problem

__all__ = ["BATCHED_METHODS", "ThetaGradFn", "batched_supported", "run_online_batched"]

BATCHED_METHODS = ("fpp", "fpp-no-state-update", "tbptt", "tbptt-no-overlap")
ThetaGradFn = Callable[[torch.Tensor], torch.Tensor]


def batched_supported(model: Problem) -> bool:
    """True for an Elman-tanh cell with a linear readout and squared-error or softmax-CE loss."""
    return (
        isinstance(model.cell, ElmanCell)
        and model.cell.activation == "tanh"
        and isinstance(model.readout, LinearReadout)
        and isinstance(model.loss, (SquaredError, SoftmaxCrossEntropy))
    )


@dataclass(frozen=True)
class _Model:
    n: int
    d: int
    m: int
    ce: bool
    sl_W: slice
    sl_U: slice
    sl_b: slice
    sl_V: slice
    sl_c: slice

    def split(self, theta: torch.Tensor) -> tuple[torch.Tensor, ...]:
        R = theta.shape[0]
        n, d, m = self.n, self.d, self.m
        return (
            theta[:, self.sl_W].reshape(R, n, n),
            theta[:, self.sl_U].reshape(R, n, d),
            theta[:, self.sl_b],
            theta[:, self.sl_V].reshape(R, m, n),
            theta[:, self.sl_c],
        )

    def join(self, gW: torch.Tensor, gU: torch.Tensor, gb: torch.Tensor, gV: torch.Tensor, gc: torch.Tensor,
             p: int) -> torch.Tensor:  # fmt: skip
        R = gW.shape[0]
        out = gW.new_zeros(R, p)
        out[:, self.sl_W] = gW.reshape(R, -1)
        out[:, self.sl_U] = gU.reshape(R, -1)
        out[:, self.sl_b] = gb
        out[:, self.sl_V] = gV.reshape(R, -1)
        out[:, self.sl_c] = gc
        return out

    def loss_and_grad(self, out: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ℓ and ∂ℓ/∂out (last dim reduced for ℓ)."""
        if self.ce:
            lse = torch.logsumexp(out, dim=-1, keepdim=True)
            loss = -(y * (out - lse)).sum(-1)
            return loss, torch.softmax(out, dim=-1) * y.sum(-1, keepdim=True) - y
        r = out - y
        return 0.5 * (r * r).sum(-1), r


def _model(model: Problem) -> _Model:
    if not batched_supported(model):
        raise InvalidArgument(
            "model", model.describe(), "the batched engine runs Elman-tanh + linear readout + squared error/softmax CE"
        )
    lay = model.layout
    return _Model(
        model.cell.state_size, model.cell.input_size, model.readout.output_size,
        isinstance(model.loss, SoftmaxCrossEntropy),
        lay["cell.W"].slice, lay["cell.U"].slice, lay["cell.b"].slice, lay["readout.V"].slice, lay["readout.c"].slice,
    )  # fmt: skip


def _forward(W: torch.Tensor, xu: torch.Tensor, s0: torch.Tensor) -> list[torch.Tensor]:
    """States s_0..s_T of windows: ``xu`` (R, B, T, n) = U x_t + b, ``s0`` (R, B, n)."""
    out = [s0]
    Wt = W.transpose(1, 2)
    s = s0
    for t in range(xu.shape[2]):
        s = torch.tanh(torch.bmm(s, Wt) + xu[:, :, t])
        out.append(s)
    return out


def _backward(
    W: torch.Tensor, states: list[torch.Tensor], X: torch.Tensor, delta: torch.Tensor,
    step_grads: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """Backprop ``delta`` = ∂/∂s_T (R, B, n) through the window; ``step_grads`` (R, B, T, n) adds ∂/∂s_t.

    Returns ∇W (R, n, n), ∇U (R, n, d), ∇b (R, n) summed over the B rows and ∂/∂s_0 (R, B, n).
    """
    T = X.shape[2]
    das = []
    for t in range(T, 0, -1):
        if step_grads is not None:
            delta = delta + step_grads[:, :, t - 1]
        s_t = states[t]
        da = delta * (1 - s_t * s_t)
        das.append(da)
        delta = torch.bmm(da, W)
    das.reverse()  # das[t-1] belongs to transition t
    R, B, n = delta.shape
    A = torch.stack(das, dim=2).reshape(R, B * T, n)  # (R, B*T, n)
    Sprev = torch.stack(states[:-1], dim=2).reshape(R, B * T, n)
    Xs = X.reshape(R, B * T, X.shape[-1])
    At = A.transpose(1, 2)
    return torch.bmm(At, Sprev), torch.bmm(At, Xs), A.sum(1), delta


def _rmsprop(
    x: torch.Tensor, v: torch.Tensor, g: torch.Tensor, lr: torch.Tensor, cfg: OnlineConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    v = cfg.decay * v + (1 - cfg.decay) * g * g
    return x - lr * g / (torch.sqrt(v) + cfg.eps), v


def run_online_batched(
    method: str,
    model: Problem,
    cfg: OnlineConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    theta0: torch.Tensor,
    lrs: torch.Tensor,
    generator: torch.Generator,
    theta_grad: ThetaGradFn | None = None,
) -> torch.Tensor:
    """:func:`verify.fpp.online.run_online` for Elman-tanh models, batched over runs; online losses (R, steps).

    Same arguments and the same random draws; ``method`` may also be ``tbptt-no-overlap``.
    ``theta_grad`` (default identity) is applied to every parameter gradient (mutants).
    """
    if method not in BATCHED_METHODS:
        raise InvalidArgument("method", method, f"must be one of {BATCHED_METHODS}")
    mm = _model(model)
    R, steps = inputs.shape[0], inputs.shape[1]
    p = model.p
    if targets.shape[:2] != (R, steps) or theta0.shape != (R, p) or lrs.shape != (R,):
        raise InvalidArgument(
            "inputs/targets/theta0/lrs",
            (tuple(inputs.shape), tuple(targets.shape), tuple(theta0.shape), tuple(lrs.shape)),
            f"expected (R, steps, d), (R, steps, m), (R, p={p}), (R,)",
        )
    st, buf = _start(mm, cfg, p, theta0, lrs, theta_grad)
    N, T, B, M = cfg.buffer_size, cfg.T, cfg.batch, cfg.updates
    losses = torch.empty(R, steps, dtype=inputs.dtype)
    x_all = inputs.to(theta0.dtype)
    y_all = targets.to(theta0.dtype)
    fpp = method in ("fpp", "fpp-no-state-update")
    update_states = method == "fpp"
    for t in range(steps):
        losses[:, t] = _observe(st, buf, x_all[:, t], y_all[:, t], t, fpp).to(inputs.dtype)
        count = min(t + 1, N)
        if count < T + 1:
            continue
        head = t + 1 - N  # logical position j (0 = oldest slot of a full buffer) -> physical (head + j) % N
        if method == "tbptt":
            buf.theta, buf.theta_v = _tbptt_update(
                mm, cfg, buf.theta, buf.theta_v, buf.S, buf.Xb, buf.Yb, t, N, T, st.lr, st.tg, p, mean=False
            )
            continue
        if method == "tbptt-no-overlap":
            if (t + 1) % T == 0:
                buf.theta, buf.theta_v = _tbptt_update(
                    mm, cfg, buf.theta, buf.theta_v, buf.S, buf.Xb, buf.Yb, t, N, T, st.lr, st.tg, p, mean=True
                )
            continue
        low = N - count + T
        pos = torch.randint(low, N, (R, M, B), generator=generator)
        for j in range(M):
            _fpp_update(st, buf, pos[:, j], head, update_states)  # pos[:, j]: (R, B) logical positions of the i
    return losses


@dataclass(frozen=True)
class _Setup:
    """The constants of one :func:`run_online_batched` run: model, config, learning rates (R, 1), gradient map."""

    mm: _Model
    cfg: OnlineConfig
    p: int
    lr: torch.Tensor
    state_lr: torch.Tensor
    sgd_states: bool
    tg: ThetaGradFn
    rows: torch.Tensor
    offs: torch.Tensor


@dataclass
class _Buffers:
    """The learners' state: parameters and their RMSprop accumulator, the circular buffer of states (and their
    accumulators), inputs and targets -- the physical slot of step t is t % N -- and T-BPTT's running state."""

    theta: torch.Tensor
    theta_v: torch.Tensor
    S: torch.Tensor
    Sv: torch.Tensor
    Xb: torch.Tensor
    Yb: torch.Tensor
    current: torch.Tensor


def _start(
    mm: _Model, cfg: OnlineConfig, p: int, theta0: torch.Tensor, lrs: torch.Tensor, theta_grad: ThetaGradFn | None
) -> tuple[_Setup, _Buffers]:
    """The constants and the initial state of :func:`run_online_batched` (empty buffers, s_0 = 0)."""
    R, dt = theta0.shape[0], theta0.dtype
    n, d, m = mm.n, mm.d, mm.m
    N, T = cfg.buffer_size, cfg.T
    lr = lrs.to(dt)[:, None]
    state_lr = lr if cfg.state_lr is None else torch.full_like(lr, cfg.state_lr)
    sgd_states = cfg.state_optimizer == "sgd"
    tg = theta_grad if theta_grad is not None else (lambda g: g)
    theta, theta_v = theta0.clone(), torch.zeros_like(theta0)
    S = theta0.new_zeros(R, N, n)  # circular buffer: physical slot of step t is t % N
    Sv = theta0.new_zeros(R, N, n)
    Xb = theta0.new_zeros(R, N, d)
    Yb = theta0.new_zeros(R, N, m)
    current = theta0.new_zeros(R, n)  # T-BPTT's running state
    rows = torch.arange(R)[:, None, None]
    offs = torch.arange(T)
    setup = _Setup(mm, cfg, p, lr, state_lr, sgd_states, tg, rows, offs)
    return setup, _Buffers(theta, theta_v, S, Sv, Xb, Yb, current)


def _observe(st: _Setup, buf: _Buffers, x_t: torch.Tensor, y_t: torch.Tensor, t: int, fpp: bool) -> torch.Tensor:
    """Step t online: the new state s_t from the previous one, its loss (returned), pushed into the buffer."""
    mm, N = st.mm, st.cfg.buffer_size
    W, U, b, V, c = mm.split(buf.theta)
    prev = buf.S[:, (t - 1) % N] if fpp else buf.current
    if t == 0 and fpp:
        prev = torch.zeros_like(buf.current)  # s_0 = 0 (Algorithm 1), not stored in the buffer
    s_t = torch.tanh(torch.bmm(W, prev[:, :, None])[..., 0] + torch.bmm(U, x_t[:, :, None])[..., 0] + b)
    out_t = torch.bmm(V, s_t[:, :, None])[..., 0] + c
    loss = mm.loss_and_grad(out_t, y_t)[0]
    slot = t % N
    buf.S[:, slot], buf.Sv[:, slot], buf.Xb[:, slot], buf.Yb[:, slot] = s_t, 0.0, x_t, y_t
    buf.current = s_t
    return loss


def _fpp_update(st: _Setup, buf: _Buffers, idx: torch.Tensor, head: int, update_states: bool) -> None:
    """One FPP update at the sampled logical positions ``idx`` (R, B): eq. (7) for θ, then s_{i-T} and s_i."""
    mm, cfg, rows = st.mm, st.cfg, st.rows
    N, T, B, lam = cfg.buffer_size, cfg.T, cfg.batch, cfg.lam
    W, U, b, V, c = mm.split(buf.theta)
    ph_end = (head + idx) % N
    ph_start = (head + idx - T) % N
    ph_win = (head + idx[..., None] - T + 1 + st.offs) % N  # (R, B, T): o_{i-T+1..i}
    s_start, s_end = buf.S[rows[..., 0], ph_start], buf.S[rows[..., 0], ph_end]
    X = buf.Xb[rows, ph_win]  # (R, B, T, d)
    y = buf.Yb[rows[..., 0], ph_end]  # (R, B, m)
    xu = torch.einsum("rbtd,rnd->rbtn", X, U) + b[:, None, None, :]
    states = _forward(W, xu, s_start)
    s_hat = states[-1]
    out = torch.bmm(s_hat, V.transpose(1, 2)) + c[:, None, :]
    _, dl = mm.loss_and_grad(out, y)  # (R, B, m)
    w = 1.0 / B
    resid = s_end - s_hat
    delta = (torch.bmm(dl, V) - lam * resid) * w  # eq. (7)
    gW, gU, gb, g_start = _backward(W, states, X, delta)
    gV = torch.bmm(dl.transpose(1, 2), s_hat) * w
    gc = dl.sum(1) * w
    g = st.tg(mm.join(gW, gU, gb, gV, gc, st.p))
    buf.theta, buf.theta_v = _rmsprop(buf.theta, buf.theta_v, g, st.lr, cfg)
    if update_states and B == 1:  # s_{i-T} and s_i are two distinct slots: update just those
        _update_slots(st, buf, ph_start, ph_end, g_start, lam * resid * w)
    elif update_states:
        _update_touched(st, buf, ph_start, ph_end, g_start, lam * resid * w)


def _update_slots(
    st: _Setup, buf: _Buffers, ph_start: torch.Tensor, ph_end: torch.Tensor, g_start: torch.Tensor,
    g_end: torch.Tensor,
) -> None:  # fmt: skip
    """B = 1: the state step on the two slots s_{i-T} and s_i of each run."""
    r0 = st.rows[:, 0, 0]
    for ph, gs in ((ph_start[:, 0], g_start[:, 0]), (ph_end[:, 0], g_end[:, 0])):
        if st.sgd_states:
            buf.S[r0, ph] = buf.S[r0, ph] - st.state_lr * gs
        else:
            buf.S[r0, ph], buf.Sv[r0, ph] = _rmsprop(buf.S[r0, ph], buf.Sv[r0, ph], gs, st.state_lr, st.cfg)


def _update_touched(
    st: _Setup, buf: _Buffers, ph_start: torch.Tensor, ph_end: torch.Tensor, g_start: torch.Tensor,
    g_end: torch.Tensor,
) -> None:  # fmt: skip
    """B > 1: the gradients of every sampled window accumulated per slot, one step on the touched slots."""
    rows, S, Sv = st.rows, buf.S, buf.Sv
    R, N = S.shape[0], S.shape[1]
    gS = torch.zeros_like(S)
    gS.index_put_((rows[..., 0].expand_as(ph_start), ph_start), g_start, accumulate=True)
    gS.index_put_((rows[..., 0].expand_as(ph_end), ph_end), g_end, accumulate=True)
    touched = torch.zeros(R, N, dtype=torch.bool)
    touched[rows[..., 0].expand_as(ph_start), ph_start] = True
    touched[rows[..., 0].expand_as(ph_end), ph_end] = True
    if st.sgd_states:
        S_new, v_new = S - st.state_lr[:, :, None] * gS, Sv
    else:
        S_new, v_new = _rmsprop(S, Sv, gS, st.state_lr[:, :, None], st.cfg)
    tm = touched[..., None]
    buf.S, buf.Sv = torch.where(tm, S_new, S), torch.where(tm, v_new, Sv)


def _tbptt_update(
    mm: _Model, cfg: OnlineConfig, theta: torch.Tensor, theta_v: torch.Tensor, S: torch.Tensor, Xb: torch.Tensor,
    Yb: torch.Tensor, t: int, N: int, T: int, lr: torch.Tensor, tg: ThetaGradFn, p: int, *, mean: bool,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """T-BPTT on the last T transitions from :math:`s_{t-T}` (a constant): the current loss, or (``mean``) all T."""
    W, U, b, V, c = mm.split(theta)
    ph = torch.tensor([(t - T + 1 + k) % N for k in range(T)])
    s0 = S[:, (t - T) % N][:, None]  # (R, 1, n)
    X = Xb[:, ph][:, None]  # (R, 1, T, d)
    xu = torch.einsum("rbtd,rnd->rbtn", X, U) + b[:, None, None, :]
    states = _forward(W, xu, s0)
    if mean:
        H = torch.stack(states[1:], dim=2)  # (R, 1, T, n)
        out = torch.einsum("rbtn,rmn->rbtm", H, V) + c[:, None, None, :]
        _, dl = mm.loss_and_grad(out, Yb[:, ph][:, None])  # (R, 1, T, m)
        dl = dl / T
        step_grads = torch.einsum("rbtm,rmn->rbtn", dl, V)
        gW, gU, gb, _ = _backward(W, states, X, torch.zeros_like(s0), step_grads)
        gV = torch.einsum("rbtm,rbtn->rmn", dl, H)
        gc = dl.sum((1, 2))
    else:
        s_hat = states[-1]
        out = torch.bmm(s_hat, V.transpose(1, 2)) + c[:, None, :]
        _, dl = mm.loss_and_grad(out, Yb[:, t % N][:, None])
        gW, gU, gb, _ = _backward(W, states, X, torch.bmm(dl, V))
        gV = torch.bmm(dl.transpose(1, 2), s_hat)
        gc = dl.sum(1)
    g = tg(mm.join(gW, gU, gb, gV, gc, p))
    return _rmsprop(theta, theta_v, g, lr, cfg)
