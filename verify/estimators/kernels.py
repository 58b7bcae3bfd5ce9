r"""Structured one-step derivatives of the standard cells: the estimators' fast paths.

For the cells of :mod:`verify.model.cells` whose parameters are ``W`` (G×H), ``U`` (G×d)
and ``b`` (G) -- :class:`~verify.model.cells.ElmanCell` (tanh, relu), :class:`~verify.model.cells.LinearCell`,
:class:`~verify.model.cells.LSTMCell` (G = 4H) and :class:`~verify.model.cells.GRUCell` (G = 3n) -- every
derivative product an online estimator needs is written out by hand, for K cotangents or
tangents at once, on the one shared trajectory (θ is shared by the samples, see
:mod:`verify.estimators.online`):

* ``jvp_state(V)`` -- :math:`\partial F/\partial s\,v` (UORO §1 eq. (1), "forwarddiff"),
* ``vjp_state(U)`` -- :math:`u^\top\partial F/\partial s` ("backprop", state part),
* ``pre_cotangents(U)`` -- the cotangents :math:`g^W, g^U` of the gate preactivations, from which
  the parameter part of the backprop is a sum of **outer products**:

  .. math::
      u^\top\frac{\partial F}{\partial W} = \textstyle\sum_b g^W_b\otimes h_b,\qquad
      u^\top\frac{\partial F}{\partial U} = \textstyle\sum_b g^U_b\otimes x_b,\qquad
      u^\top\frac{\partial F}{\partial b} = \textstyle\sum_b g^U_b

  (b over the problem's batch; :math:`g^W = g^U` except in the GRU's candidate block, where
  :math:`W_n h` enters through :math:`r\circ W_n h`). For Elman this is the
  :math:`(\nu\odot\sigma')\otimes[s; x; 1]` of the issue: the per-sample Jacobian
  :math:`\partial F/\partial\theta` (n×p) is never formed, and no autograd graph or vmapped jvp
  intermediate is built.

:func:`loss_gradients` does the same for the readout and the loss (linear or select readout;
squared error or softmax cross-entropy): :math:`\partial\ell_t/\partial s_t` and the readout's own
:math:`\partial\ell_t/\partial\theta` at fixed :math:`s_t`.

:func:`linearize` returns ``None`` for any other cell (a user's cell, a subclass of a standard
cell, influence balancing) or a complex/half dtype: the estimators then use their generic
autograd path, which stays the reference the fast paths are tested against
(``tests/estimators/test_fast_paths.py``: equal to round-off on every cell, dtype and device).
"""

from __future__ import annotations

import functools
from typing import Literal

import torch

from verify.errors import InvalidArgument
from verify.model.cells import ElmanCell, GRUCell, LinearCell, LSTMCell
from verify.model.losses import LinearReadout, SelectReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.params import ParamLayout
from verify.model.problem import Problem

__all__ = [
    "PATHS",
    "Linearization",
    "Path",
    "check_path",
    "linearize",
    "loss_gradients",
    "recognized",
    "use_fast",
]

Path = Literal["auto", "fast", "generic"]
#: the values of the estimators' ``path`` option
PATHS: tuple[str, ...] = ("auto", "fast", "generic")
_FAST_DTYPES = (torch.float64, torch.float32)
_CELLS = (ElmanCell, LinearCell, LSTMCell, GRUCell)


def check_path(path: object) -> str:
    """Validate an estimator's ``path`` option."""
    if path not in PATHS:
        raise InvalidArgument("path", path, f"must be one of {PATHS} ('generic' forces the autograd reference path)")
    return str(path)


def recognized(problem: Problem) -> str | None:
    """``None`` if the fast path covers ``problem``, else the reason it does not."""
    if type(problem.cell) not in _CELLS:
        return f"no fast path for cell {problem.cell.describe()} (standard Elman/linear/LSTM/GRU cells only)"
    if problem.dtype not in _FAST_DTYPES:
        return f"no fast path in {problem.dtype} (float64 and float32 only)"
    return None


def use_fast(path: str, problem: Problem, who: str) -> bool:
    """Whether an estimator with option ``path`` takes the fast path on ``problem`` (``"fast"`` insists)."""
    if path == "generic":
        return False
    why = recognized(problem)
    if why is None:
        return True
    if path == "fast":
        raise InvalidArgument(f"{who} path", "fast", why + "; use path='auto' or 'generic'")
    return False


class Linearization:
    r"""One step :math:`s_t = f_\theta(s_{t-1}, x_t)` of a standard cell, linearized at its point.

    Shapes: the batch shape *B of the problem is flattened to ``nb`` rows; tangents and
    cotangents are (K, nb, n). ``h`` (nb, H) and ``x`` (nb, d) are the features that multiply
    the rows of ``W`` and ``U``.
    """

    G: int
    H: int
    n: int
    W: torch.Tensor
    h: torch.Tensor
    x: torch.Tensor
    s_next: torch.Tensor  #: (nb, n)

    def jvp_state(self, V: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def vjp_state(self, U: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def pre_cotangents(self, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(g^W, g^U), each (K, nb, G): cotangents of the rows of W and of (U, b)."""
        raise NotImplementedError

    def vjp(self, U: torch.Tensor, *, state: bool = True) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """(uᵀ∂F/∂s or None, g^W, g^U) in one pass (shares the gate products)."""
        gW, gU = self.pre_cotangents(U)
        return (self._state_from(U, gW) if state else None), gW, gU

    def _state_from(self, U: torch.Tensor, gW: torch.Tensor) -> torch.Tensor:
        return gW @ self.W

    # ------------------------------------------------------------ dense forms (RTRL)
    def jac_state(self) -> torch.Tensor:
        """∂F/∂s per sequence, (nb, n, n)."""
        nb, n = self.s_next.shape
        eye = torch.eye(n, dtype=self.s_next.dtype, device=self.s_next.device)
        V = eye.unsqueeze(1).expand(n, nb, n)
        return self.jvp_state(V).permute(1, 2, 0)  # column j = J e_j

    def state_rows_pre(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(g^W, g^U) of the n basis cotangents of every sequence: (nb, n, G) each (rows of ∂F/∂θ)."""
        nb, n = self.s_next.shape
        eye = torch.eye(n, dtype=self.s_next.dtype, device=self.s_next.device)
        gW, gU = self.pre_cotangents(eye.unsqueeze(1).expand(n, nb, n))
        return gW.transpose(0, 1), gU.transpose(0, 1)


class _Elman(Linearization):
    def __init__(self, kind: str, W: torch.Tensor, U: torch.Tensor, b: torch.Tensor, s: torch.Tensor, x: torch.Tensor):
        self.W, self.h, self.x = W, s, x
        self.G = self.H = self.n = W.shape[0]
        a = s @ W.T + x @ U.T + b  # the cell's preactivation, in its own order of operations
        if kind == "tanh":
            y = torch.tanh(a)
            self.dphi: torch.Tensor | None = 1 - y * y  # tanh' = 1 - tanh^2 (as autograd's tanh_backward)
        elif kind == "relu":
            y = torch.relu(a)
            self.dphi = (a > 0).to(a.dtype)  # relu'(0) = 0, as autograd's threshold_backward
        else:
            y = a
            self.dphi = None  # linear cell: phi' = 1
        self.s_next = y

    def jvp_state(self, V: torch.Tensor) -> torch.Tensor:
        out = V @ self.W.T
        return out if self.dphi is None else out.mul_(self.dphi)

    def vjp_state(self, U: torch.Tensor) -> torch.Tensor:
        g = U if self.dphi is None else U * self.dphi
        return g @ self.W

    def pre_cotangents(self, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g = U if self.dphi is None else U * self.dphi
        return g, g


class _LSTM(Linearization):
    """s = (c, h); gates f, i, o (sigmoid), z (tanh); c' = i z + f c; h' = o tanh(c')."""

    def __init__(self, W: torch.Tensor, U: torch.Tensor, b: torch.Tensor, s: torch.Tensor, x: torch.Tensor):
        H = W.shape[1]
        self.W, self.x, self.H, self.G, self.n = W, x, H, 4 * H, 2 * H
        c, h = s[..., :H], s[..., H:]
        self.h, self.c = h, c
        pre = h @ W.T + x @ U.T + b
        pf, pi, po, pz = pre.chunk(4, dim=-1)
        self.f, self.i, self.o, self.z = torch.sigmoid(pf), torch.sigmoid(pi), torch.sigmoid(po), torch.tanh(pz)
        c_new = self.i * self.z + self.f * c
        self.tc = torch.tanh(c_new)
        h_new = self.o * self.tc
        self.s_next = torch.cat([c_new, h_new], dim=-1)
        self.df = self.f * (1 - self.f)
        self.di = self.i * (1 - self.i)
        self.do = self.o * (1 - self.o)
        self.dz = 1 - self.z * self.z
        self.dtc = 1 - self.tc * self.tc

    def jvp_state(self, V: torch.Tensor) -> torch.Tensor:
        H = self.H
        vc, vh = V[..., :H], V[..., H:]
        dp = vh @ self.W.T
        dpf, dpi, dpo, dpz = dp.chunk(4, dim=-1)
        dc = self.di * dpi * self.z + self.i * self.dz * dpz + self.df * dpf * self.c + self.f * vc
        dh = self.do * dpo * self.tc + self.o * self.dtc * dc
        return torch.cat([dc, dh], dim=-1)

    def _gates(self, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        H = self.H
        uc, uh = U[..., :H], U[..., H:]
        ucp = uc + uh * self.o * self.dtc  # cotangent of c' (through h' = o tanh(c'))
        g = torch.cat(
            [ucp * self.c * self.df, ucp * self.z * self.di, uh * self.tc * self.do, ucp * self.i * self.dz], dim=-1
        )
        return ucp, g

    def pre_cotangents(self, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, g = self._gates(U)
        return g, g

    def vjp(self, U: torch.Tensor, *, state: bool = True) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
        ucp, g = self._gates(U)
        if not state:
            return None, g, g
        return torch.cat([ucp * self.f, g @ self.W], dim=-1), g, g

    def vjp_state(self, U: torch.Tensor) -> torch.Tensor:
        out, _, _ = self.vjp(U)
        assert out is not None
        return out


class _GRU(Linearization):
    """r, z (sigmoid); m = W_n h; cand = tanh(U_n x + r m + b_n); h' = (1 - z) cand + z h."""

    def __init__(self, W: torch.Tensor, U: torch.Tensor, b: torch.Tensor, s: torch.Tensor, x: torch.Tensor):
        n = W.shape[1]
        self.W, self.h, self.x, self.H, self.G, self.n = W, s, x, n, 3 * n, n
        W_r, W_z, W_n = W.chunk(3, dim=0)
        ux = x @ U.T
        ux_r, ux_z, ux_n = ux.chunk(3, dim=-1)
        b_r, b_z, b_n = b.chunk(3, dim=0)
        self.r = torch.sigmoid(s @ W_r.T + ux_r + b_r)
        self.z = torch.sigmoid(s @ W_z.T + ux_z + b_z)
        self.m = s @ W_n.T
        self.cand = torch.tanh(ux_n + self.r * self.m + b_n)
        self.s_next = (1 - self.z) * self.cand + self.z * s
        self.dr = self.r * (1 - self.r)
        self.dzz = self.z * (1 - self.z)
        self.dc = 1 - self.cand * self.cand
        self.hmc = s - self.cand

    def jvp_state(self, V: torch.Tensor) -> torch.Tensor:
        pr, pz, pm = (V @ self.W.T).chunk(3, dim=-1)
        d_r = self.dr * pr
        d_z = self.dzz * pz
        d_cand = self.dc * (d_r * self.m + self.r * pm)
        return d_z * self.hmc + (1 - self.z) * d_cand + self.z * V

    def pre_cotangents(self, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        gn = U * (1 - self.z) * self.dc  # cotangent of the candidate's preactivation
        g_r = gn * self.m * self.dr
        g_z = U * self.hmc * self.dzz
        gW = torch.cat([g_r, g_z, gn * self.r], dim=-1)  # W_n h enters as r * (W_n h)
        gU = torch.cat([g_r, g_z, gn], dim=-1)
        return gW, gU

    def _state_from(self, U: torch.Tensor, gW: torch.Tensor) -> torch.Tensor:
        return U * self.z + gW @ self.W

    def vjp_state(self, U: torch.Tensor) -> torch.Tensor:
        gW, _ = self.pre_cotangents(U)
        return self._state_from(U, gW)


@functools.lru_cache(maxsize=256)
def cell_slices(layout: ParamLayout) -> tuple[slice, tuple[int, ...], slice, tuple[int, ...], slice]:
    """(W slice, W shape, U slice, U shape, b slice) of a standard cell's θ layout (cached: looked up every step)."""
    W, U, b = layout["cell.W"], layout["cell.U"], layout["cell.b"]
    return W.slice, W.shape, U.slice, U.shape, b.slice


def linearize(problem: Problem, theta: torch.Tensor, s: torch.Tensor, x: torch.Tensor) -> Linearization:
    """The step at (x_t = ``x`` (*B, d), s_{t-1} = ``s`` (*B, n), θ) of a recognized cell (see :func:`recognized`)."""
    cell = problem.cell
    ws, wshape, us, ushape, bs = cell_slices(problem.layout)
    W = theta[ws].view(wshape)
    U = theta[us].view(ushape)
    b = theta[bs]
    nb = s.numel() // problem.n
    s2 = s.reshape(nb, problem.n)
    x2 = x.reshape(nb, cell.input_size)
    if type(cell) is ElmanCell:
        return _Elman(cell.activation, W, U, b, s2, x2)
    if type(cell) is LinearCell:
        return _Elman("linear", W, U, b, s2, x2)
    if type(cell) is LSTMCell:
        return _LSTM(W, U, b, s2, x2)
    if type(cell) is GRUCell:
        return _GRU(W, U, b, s2, x2)
    raise InvalidArgument("problem.cell", cell.describe(), "no fast path (standard Elman/linear/LSTM/GRU cells only)")


# ----------------------------------------------------------------- θ-layout assembly
def theta_grad(
    problem: Problem, lin: Linearization, gW: torch.Tensor, gU: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    r"""Σ_b outer products of the preactivation cotangents (K, nb, G) with the features, in θ's layout (K, p).

    The readout's entries are 0 (F_state does not depend on them). ``out`` (K, p), if given,
    is accumulated into (``out += ...``) and returned.
    """
    ws, _, us, _, bs = cell_slices(problem.layout)
    K, nb, G = gW.shape
    H, d = lin.H, lin.x.shape[-1]
    acc = out is not None
    if out is None:
        out = torch.zeros(K, problem.p, dtype=gW.dtype, device=gW.device)
    Wv = out[:, ws].view(K, G, H)
    Uv = out[:, us].view(K, G, d)
    bv = out[:, bs]
    if nb == 1:
        gw, gu = gW[:, 0, :, None], gU[:, 0, :, None]
        Wv.addcmul_(gw, lin.h[0]) if acc else torch.mul(gw, lin.h[0], out=Wv)
        if d:
            Uv.addcmul_(gu, lin.x[0]) if acc else torch.mul(gu, lin.x[0], out=Uv)
        bv.add_(gU[:, 0]) if acc else bv.copy_(gU[:, 0])
    else:
        Wv.add_(torch.matmul(gW.transpose(1, 2), lin.h))
        if d:
            Uv.add_(torch.matmul(gU.transpose(1, 2), lin.x))
        bv.add_(gU.sum(1))
    return out


def theta_rows(problem: Problem, lin: Linearization) -> torch.Tensor:
    """∂F/∂θ per sequence, (nb, n, p): the rows of the basis cotangents, readout columns 0 (RTRL)."""
    lay = problem.layout
    gW, gU = lin.state_rows_pre()  # (nb, n, G)
    nb, n, G = gW.shape
    H, d = lin.H, lin.x.shape[-1]
    out = torch.zeros(nb, n, problem.p, dtype=gW.dtype, device=gW.device)
    torch.mul(gW.unsqueeze(-1), lin.h[:, None, None, :], out=out[..., lay["cell.W"].slice].view(nb, n, G, H))
    if d:
        torch.mul(gU.unsqueeze(-1), lin.x[:, None, None, :], out=out[..., lay["cell.U"].slice].view(nb, n, G, d))
    out[..., lay["cell.b"].slice] = gU
    return out


def add_theta_rows_(problem: Problem, lin: Linearization, J: torch.Tensor) -> torch.Tensor:
    """``J += ∂F/∂θ`` in place, ``J`` (nb, n, p): RTRL's immediate term without forming the zeros of ∂F/∂θ.

    Elman/linear: row i of ∂F/∂θ is φ'_i (h, x, 1) in the i-th rows of W, U, b only, added on the
    diagonal of the (n × n) row blocks (n·(n + d + 1) entries touched, not n·p); LSTM/GRU: the
    outer products of the gate cotangents with (h, x, 1), added in place.
    """
    lay = problem.layout
    nb, n, _ = J.shape
    H, d = lin.H, lin.x.shape[-1]
    Wv = J[..., lay["cell.W"].slice].view(nb, n, lin.G, H)
    Uv = J[..., lay["cell.U"].slice].view(nb, n, lin.G, d)
    bv = J[..., lay["cell.b"].slice]
    if isinstance(lin, _Elman):
        dphi = torch.ones_like(lin.s_next) if lin.dphi is None else lin.dphi  # (nb, n)
        Wv.diagonal(dim1=1, dim2=2).add_(lin.h.unsqueeze(-1) * dphi.unsqueeze(1))  # (nb, H, n): φ'_i h_j
        if d:
            Uv.diagonal(dim1=1, dim2=2).add_(lin.x.unsqueeze(-1) * dphi.unsqueeze(1))
        bv.diagonal(dim1=1, dim2=2).add_(dphi)
        return J
    gW, gU = lin.state_rows_pre()  # (nb, n, G)
    Wv.addcmul_(gW.unsqueeze(-1), lin.h[:, None, None, :])
    if d:
        Uv.addcmul_(gU.unsqueeze(-1), lin.x[:, None, None, :])
    bv.add_(gU)
    return J


# ------------------------------------------------------------------------ the loss
def loss_gradients(
    problem: Problem, theta: torch.Tensor, s: torch.Tensor, target: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""(∂ℓ/∂s (*B, n), ∂ℓ/∂θ at fixed s (p,)) of :math:`\ell(g_\theta(\mathrm{obs}(s)), \hat y)`.

    Written out for a linear or select readout with squared error or softmax cross-entropy;
    any other readout or loss goes through autograd (one small graph, shared by the samples).
    """
    ro, loss = problem.readout, problem.loss
    if type(ro) in (LinearReadout, SelectReadout) and type(loss) in (SquaredError, SoftmaxCrossEntropy):
        obs = problem.cell.observe(s)
        if type(ro) is LinearReadout:
            lay = problem.layout
            V = theta[lay["readout.V"].slice].view(lay["readout.V"].shape)
            c = theta[lay["readout.c"].slice]
            y = obs @ V.T + c
        else:
            y = obs[..., list(ro.indices)]  # type: ignore[attr-defined]
        if type(loss) is SquaredError:
            dy = y - target
        else:
            shift = y.detach().amax(dim=-1, keepdim=True)
            e = torch.exp(y - shift)
            sm = e / e.sum(dim=-1, keepdim=True)
            dy = sm * target.sum(-1, keepdim=True) - target  # d/dy of -sum q (y - lse(y))
        dl_ds = torch.zeros_like(s)
        dl_dth = torch.zeros_like(theta)
        obs_grad = dl_ds[..., problem.n - problem.cell.observed_size :]  # obs = the last observed_size entries
        if type(ro) is LinearReadout:
            obs_grad.copy_(dy @ V)
            dy2 = dy.reshape(-1, dy.shape[-1])
            lay = problem.layout
            dl_dth[lay["readout.V"].slice].view(lay["readout.V"].shape).copy_(dy2.T @ obs.reshape(-1, obs.shape[-1]))
            dl_dth[lay["readout.c"].slice] = dy2.sum(0)
        else:
            obs_grad[..., list(ro.indices)] += dy  # type: ignore[attr-defined]
        return dl_ds, dl_dth
    with torch.enable_grad():
        th = theta.detach().clone().requires_grad_(True)
        s_leaf = s.detach().clone().requires_grad_(True)
        value = problem.step_loss(th, s_leaf, target)
        g_th, g_s = torch.autograd.grad(value, (th, s_leaf), allow_unused=True)
    return (
        torch.zeros_like(s) if g_s is None else g_s.detach(),
        torch.zeros_like(theta) if g_th is None else g_th.detach(),
    )


# ------------------------------------------------------------------ windows of steps
def forward_window(
    problem: Problem, theta: torch.Tensor, s: torch.Tensor, start: int, stop: int
) -> tuple[list[Linearization], torch.Tensor]:
    """Steps ``start+1 .. stop`` from ``s`` (*B, n): their linearizations and :math:`s_{stop}` (*B, n)."""
    lins = []
    for tau in range(start + 1, stop + 1):
        lin = linearize(problem, theta, s, problem.inputs[tau - 1])
        lins.append(lin)
        s = lin.s_next.reshape(s.shape)
    return lins, s


def backprop_window(
    problem: Problem, lins: list[Linearization], U: torch.Tensor, out: torch.Tensor, *, state: bool = True
) -> torch.Tensor | None:
    r"""Backprop K cotangents ``U`` (K, nb, n) of the window's last state through its steps.

    Accumulates :math:`u^\top\partial s_{stop}/\partial\theta` into ``out`` (K, p) and returns
    :math:`u^\top\partial s_{stop}/\partial s_{start}` (K, nb, n), or ``None`` with ``state=False``
    (the last state product is then skipped).
    """
    if len(lins) == 1:
        U_prev, gW, gU = lins[0].vjp(U, state=state)
        theta_grad(problem, lins[0], gW, gU, out=out)
        return U_prev
    # collect the gate cotangents of every step, then form Σ_j g_j ⊗ (h_j, x_j, 1) with one product per block
    gWs, gUs = [], []
    for j, lin in enumerate(reversed(lins)):
        need = state or j < len(lins) - 1
        U_prev, gW, gU = lin.vjp(U, state=need)
        gWs.append(gW)
        gUs.append(gU)
        if U_prev is not None:
            U = U_prev
    ws, _, us, _, bs = cell_slices(problem.layout)
    K, G, H, d = U.shape[0], lins[0].G, lins[0].H, lins[0].x.shape[-1]
    gW = torch.cat(gWs, dim=1).transpose(1, 2)  # (K, G, L), L = steps × nb (latest step first)
    gU = torch.cat(gUs, dim=1).transpose(1, 2)
    hs = torch.cat([lin.h for lin in reversed(lins)])  # (L, H), rows in the same order
    out[:, ws].view(K, G, H).add_(gW @ hs)
    if d:
        xs = torch.cat([lin.x for lin in reversed(lins)])
        out[:, us].view(K, G, d).add_(gU @ xs)
    out[:, bs].add_(gU.sum(-1))
    return U if state else None


def window_loss_gradient(
    problem: Problem, theta: torch.Tensor, s: torch.Tensor, start: int, t: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""(s_t, ∂ℓ_t/∂θ, ∂ℓ_t/∂s_{start}) of the loss of step t through steps start+1..t from ``s`` = :math:`s_{start}`.

    Truncated BPTT's per-step gradient (``s`` held fixed) and UORO's "F_out.backprop"
    (δs, δθ) of Algorithm 1 (through the T steps of a block for UORO-T).
    """
    lins, s_t = forward_window(problem, theta, s, start, t)
    dl_ds, dl_dth = loss_gradients(problem, theta, s_t, problem.targets[t - 1])
    nb = s.numel() // problem.n
    u = backprop_window(problem, lins, dl_ds.reshape(1, nb, problem.n), dl_dth.view(1, -1))
    assert u is not None
    return s_t, dl_dth, u.reshape(s.shape)
