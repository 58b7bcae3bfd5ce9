r"""A float32 numpy RTRL and a float32 numpy UORO, written as published code is, and their wraps (issue 37, item 3).

Much published code computes in float32 (numpy ``astype(np.float32)``, torch's default dtype). Its round-off,
about :math:`u_{32} = 2^{-24} \approx 6\cdot10^{-8}` relative per operation, is far above the float64 budgets
rnn-verify judges exact claims by; the code *declares* its precision (``Batch1(..., dtype="float32")``, or
``rnn-verify run --dtype float32``) and is then judged against the predicted float32 budget
(:mod:`verify.impl.precision`) -- a wrong derivative still FAILs.

:class:`Float32RTRL` -- Williams & Zipser 1989, the influence recursion of Tallec & Ollivier 2017
("Unbiased Online Recurrent Optimization", arXiv:1702.05043) eq. (4), for
:math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)`, :math:`o_t = W_y h_t + b_y`, loss :math:`\tfrac12\|o_t - y_t\|^2`:

.. math::
    J_t = \mathrm{diag}(1 - h_t^2)\big(W_h J_{t-1} + \partial a_t/\partial\theta\big),\qquad
    \nabla_\theta\ell_t = (W_y^\top e_t)^\top J_t .

Its influence is kept per parameter block (a dict of (n, *shape) arrays), every array float32. Seeded bugs:
``tanh_prime="1-h"`` (the derivative of tanh as :math:`1 - h` instead of :math:`1 - h^2`), ``stale_h=True``
(:math:`\partial a_t/\partial W_h` from :math:`h_t` instead of :math:`h_{t-1}`).

:class:`Float32UORO` -- Algorithm 1 of the same paper, in its order (g̃ from s̃_{t-1}, θ̃_{t-1}, *before* the update),
with the normalizers :math:`\rho_0 = \sqrt{\|\tilde\theta\|/\|J_s\tilde s\|}`, :math:`\rho_1 =
\sqrt{\|\nu^\top J_\theta\|/\|\nu\|}` (ε = 1e-7 added, as in Algorithm 1), ν through the toolkit's noise hook.
Seeded bugs: ``tanh_prime="1-h"`` in :math:`\nu^\top J_\theta` (a biased θ̃), ``no_rho1=True`` (θ̃ gains
:math:`\nu^\top J_\theta` without the :math:`1/\rho_1`: E[s̃ ⊗ θ̃] is off by ρ₁, biased).

What a user writes to have them judged::

    rnn-verify run --impl rtrl=verify.examples.numpy_float32:MyFloat32RTRL --impl-only
    rnn-verify run --impl uoro=verify.examples.numpy_float32:MyFloat32UORO --impl-only
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
EPS = F32(1e-7)
_BLOCKS = ("Wx", "Wh", "bh")


class Float32RTRL:
    """RTRL for a tanh RNN in float32 (batch 1); ``step(x, y)`` returns the gradient as a dict of float32 arrays."""

    def __init__(self, params, h0, tanh_prime="1-h^2", stale_h=False):  # type: ignore[no-untyped-def]
        self.p = {k: np.asarray(v, dtype=F32) for k, v in params.items()}
        self.h = np.asarray(h0, dtype=F32)
        n = self.h.size
        self.J = {k: np.zeros((n, *self.p[k].shape), dtype=F32) for k in _BLOCKS}  # dh/dtheta per block
        self.tanh_prime, self.stale_h = tanh_prime, stale_h

    def step(self, x, y):  # type: ignore[no-untyped-def]
        p, x, y = self.p, np.asarray(x, dtype=F32), np.asarray(y, dtype=F32)
        n = self.h.size
        h = np.tanh(p["Wh"] @ self.h + p["Wx"] @ x + p["bh"])
        D = F32(1) - h if self.tanh_prime == "1-h" else F32(1) - h * h  # the seeded bug: 1 - h
        h_in = h if self.stale_h else self.h  # the seeded bug: h_t where h_{t-1} belongs
        eye = np.eye(n, dtype=F32)
        direct = {"Wx": eye[:, :, None] * x, "Wh": eye[:, :, None] * h_in, "bh": eye}  # da_t/dtheta, eq. (4)
        for k in _BLOCKS:
            carried = np.tensordot(p["Wh"], self.J[k], axes=(1, 0))  # W_h J_{t-1}
            self.J[k] = D.reshape((n,) + (1,) * (self.J[k].ndim - 1)) * (carried + direct[k])
        self.h = h
        e = p["Wy"] @ h + p["by"] - y
        dl_dh = p["Wy"].T @ e
        out = {k: np.tensordot(dl_dh, self.J[k], axes=(0, 0)) for k in _BLOCKS}  # eq. (7)
        out["Wy"], out["by"] = np.outer(e, h), e
        return out


class Float32UORO:
    """UORO (Algorithm 1) for a tanh RNN in float32 (batch 1); ``step(x, y)`` returns g̃_t as a dict, float32."""

    def __init__(self, params, h0, noise, tanh_prime="1-h^2", no_rho1=False):  # type: ignore[no-untyped-def]
        self.p = {k: np.asarray(v, dtype=F32) for k, v in params.items()}
        self.h = np.asarray(h0, dtype=F32)
        self.s_tilde = np.zeros_like(self.h)
        self.theta_tilde = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.noise, self.tanh_prime, self.no_rho1 = noise, tanh_prime, no_rho1

    def step(self, x, y):  # type: ignore[no-untyped-def]
        p, x, y = self.p, np.asarray(x, dtype=F32), np.asarray(y, dtype=F32)
        h_prev = self.h
        h = np.tanh(p["Wh"] @ h_prev + p["Wx"] @ x + p["bh"])
        D = F32(1) - h * h
        e = p["Wy"] @ h + p["by"] - y
        dl_dh = p["Wy"].T @ e
        # g~_t = (dl_t/ds_t . J_s s~_{t-1}) theta~_{t-1} + dl_t/dtheta  (Algorithm 1, before the update)
        s_fwd = D * (p["Wh"] @ self.s_tilde)  # J_s s~_{t-1}
        c = F32(dl_dh @ s_fwd)
        grad = {k: c * v for k, v in self.theta_tilde.items()}
        dh_da = dl_dh * D
        grad["Wx"] = grad["Wx"] + np.outer(dh_da, x)
        grad["Wh"] = grad["Wh"] + np.outer(dh_da, h_prev)
        grad["bh"] = grad["bh"] + dh_da
        grad["Wy"] = grad["Wy"] + np.outer(e, h)
        grad["by"] = grad["by"] + e
        # the update of s~, theta~ (eq. (5), (6))
        nu = np.asarray(self.noise(), dtype=F32)
        nD = nu * (F32(1) - h if self.tanh_prime == "1-h" else D)  # the seeded bug: 1 - h
        dth = {"Wx": np.outer(nD, x), "Wh": np.outer(nD, h_prev), "bh": nD}
        norm_tt = np.sqrt(sum(np.sum(v * v) for v in self.theta_tilde.values()))
        norm_dth = np.sqrt(sum(np.sum(v * v) for v in dth.values()))
        rho0 = np.sqrt(norm_tt / (np.linalg.norm(s_fwd) + EPS)) + EPS
        rho1 = np.sqrt(norm_dth / (np.linalg.norm(nu) + EPS)) + EPS
        div1 = F32(1) if self.no_rho1 else rho1  # the seeded bug: theta~ without 1/rho1
        self.s_tilde = rho0 * s_fwd + rho1 * nu
        self.theta_tilde = {k: v / rho0 + (dth[k] / div1 if k in dth else F32(0)) for k, v in self.theta_tilde.items()}
        self.h = h
        return grad


# ------------------------------------------------------------ the wraps (what a user writes)
from verify.impl.adapters import Batch1  # noqa: E402

NAMES = {"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"}


def _rtrl(name, dtype: str | None = "float32", **bugs):  # type: ignore[no-untyped-def]
    return Batch1(
        lambda ctx: Float32RTRL(ctx.params, ctx.s0, **bugs),
        names=NAMES,
        influence=lambda est: est.J,
        state=lambda est: est.h,
        dtype=dtype,  # the declaration: judged against the predicted float32 budget
        name=name,
    )


def _uoro(name, dtype: str | None = "float32", **bugs):  # type: ignore[no-untyped-def]
    return Batch1(
        lambda ctx: Float32UORO(ctx.params, ctx.s0, ctx.noise, **bugs),
        names=NAMES,
        factors=lambda est: (est.s_tilde, est.theta_tilde),
        noise_hook=True,
        gtilde="pre",
        dtype=dtype,
        name=name,
    )


MyFloat32RTRL = _rtrl("float32-rtrl")
MyFloat32RTRLTanhPrime = _rtrl("float32-rtrl-tanh-prime", tanh_prime="1-h")
MyFloat32RTRLStaleH = _rtrl("float32-rtrl-stale-h", stale_h=True)
#: the same code without the declaration (judged at float64 unless run with ``--dtype float32``)
MyFloat32RTRLUndeclared = _rtrl("float32-rtrl-undeclared", dtype=None)
MyFloat32UORO = _uoro("float32-uoro")
MyFloat32UOROTanhPrime = _uoro("float32-uoro-tanh-prime", tanh_prime="1-h")
MyFloat32UORONoRho1 = _uoro("float32-uoro-no-rho1", no_rho1=True)
MyFloat32UOROUndeclared = _uoro("float32-uoro-undeclared", dtype=None)
