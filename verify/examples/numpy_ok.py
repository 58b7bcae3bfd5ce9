r"""A batch-1 numpy OK(r) written as a user would (Benzing, Gauy, Mujika, Martinsson & Steger 2019, "Optimal
Kronecker-Sum Approximation of Real Time Recurrent Learning", ICML 2019, arXiv:1902.03993), and its wrap.

:class:`NumpyOK` knows nothing of rnn-verify (nor of :mod:`verify.estimators.ok`, whose reading it follows:
equation numbers (1)-(2) below are that module's, the paper's own were not checked). The tanh RNN of
:mod:`verify.examples.numpy_rtrl` (:math:`h_t = \tanh(W_h h_{t-1} + W_x x_t + b_h)`, readout
:math:`o_t = W_y h_t + b_y`, loss :math:`\tfrac12\|o_t - y_t\|^2`), the recurrent parameters as one matrix
:math:`[W_h, W_x, b_h]` acting on :math:`a_t = [h_{t-1}, x_t, 1]` (m = n + d + 1 entries). RTRL's influence obeys
:math:`G_t = H_tG_{t-1} + a_t^\top\otimes D_t` (:math:`D_t = \mathrm{diag}(1 - h_t^2)`, :math:`H_t = D_tW_h`).
OK keeps :math:`G_t \approx \sum_{i\le r} u_i^\top\otimes A_i` (u_i ∈ R^m, A_i ∈ R^{n×n}); one step forms the
r + 1 terms :math:`u_i\otimes H_tA_i` and :math:`a_t\otimes D_t` (eq. (1)), as the n² × m matrix
:math:`C = \sum_i \mathrm{vec}(B_i)u_i^\top`, and reduces C to r terms without bias and with the least variance
(eq. (2)): with C's singular values :math:`\sigma_1\ge\dots` (at most r + 1 of them nonzero), keep the m leading
triplets exactly, m the smallest with :math:`(r - m)\sigma_{m+1}\le s_1 = \sum_{i>m}\sigma_i`; choose r − m of
the others by systematic sampling with inclusion probabilities :math:`p_i = (r - m)\sigma_i/s_1` -- one uniform U
per step, triplet i chosen iff an integer lies in :math:`[c_{i-1} - U, c_i - U)`, :math:`c_i = \sum_{j\le i}p_j`
-- and give each chosen one the weight :math:`\sigma_i/p_i = s_1/(r - m)`. A kept triplet (σ, l, v) becomes
:math:`u = \sqrt{w}\,v`, :math:`A = \sqrt{w}\,\mathrm{mat}(l)`. The gradient of the recurrent parameters is
:math:`\sum_i (q^\top A_i)\otimes u_i` with :math:`q = W_y^\top e_t`, from the terms after this step's reduction.

**The uniform** comes through the toolkit's noise hook as numpy_kfrtrl.py's signs do: one draw of n values per
step from :class:`UniformNoise` (a user's own law of ν, :class:`verify.estimators.uoro.IIDNoise`), of which U is
the first. **The hooks the claims need, and why.** U is continuous, so the toolkit's enumeration of sign patterns
cannot run and a sequential test cannot certify OK (an outcome can have any small probability: no event floor);
``uoro.ok-unbiased`` therefore needs ``exact_mean(problem, theta)``. The wrap gives it through the adapter's
``expectation=``: :meth:`NumpyOK.expected_gradients` enumerates the object's *own* outcomes (as U sweeps [0, 1)
the sample changes only at the fractional parts of the :math:`c_i`: at most r + 2 intervals per step, each path
weighted by the product of its interval lengths), so the toolkit computes nothing of OK's. Part (a) of
``uoro.ok-variance`` (each reduction step at eq. (2)'s minimum, never above KF-RTRL's) needs the reduction itself,
torch in and out: ``rank``, ``terms(problem, theta, state, t)`` (the r + 1 terms before the step),
``reduce(us, Bs, U)`` and ``breakpoints(us, Bs)`` (:data:`verify.uoro.ok.HOOKS`). A batch-1 adapter has none, so
:class:`NumpyOKAdapter` adds them, each a thin call of this module's numpy :meth:`NumpyOK.terms`,
:func:`reduce_terms`, :func:`breakpoints` (the one the object steps with); without them part (a) is not run (the
summary says so) and the claim decides on its trajectory part (b) alone, INCONCLUSIVE on some seeds.

``unweighted=True`` seeds the bug: a chosen triplet keeps its own :math:`\sigma_i` instead of
:math:`\sigma_i/p_i`, so :math:`E[C'] = \sum_{i\le m}\sigma_il_iv_i^\top + \sum_{i>m}p_i\sigma_il_iv_i^\top \ne C`
whenever a triplet is sampled with :math:`p_i < 1` -- biased (from step 2, once two terms are nonzero)::

    rnn-verify run --impl ok=verify.examples.numpy_ok:MyNumpyOK --claims uoro.ok-unbiased
    rnn-verify run --impl ok=verify.examples.numpy_ok:MyNumpyOKUnweighted --claims uoro.ok-unbiased   # exits 1
    rnn-verify run --impl ok=verify.examples.numpy_ok:MyNumpyOK --claims uoro.ok-variance   # ~30 s (3000 draws)

(the twin FAILs part (a) of ``uoro.ok-variance`` as well: its step mean is off.)
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from verify.estimators.uoro import IIDNoise

TINY = 1e-14  #: outcome intervals of U shorter than this (round-off slivers of the c_i) are skipped: mass < 1e-14


def _svd(us, Bs, rank):  # type: ignore[no-untyped-def]
    """The r + 1 leading singular triplets (σ, mat(l), v) of C = Σ_i vec(B_i) u_iᵀ (C has rank <= r + 1)."""
    n = Bs.shape[-1]
    C = np.einsum("kb,ka->ba", Bs.reshape(len(Bs), -1), us)  # (n², m)
    L, s, Vt = np.linalg.svd(C, full_matrices=False)
    k = min(rank + 1, s.size)
    return s[:k], L[:, :k].T.reshape(k, n, n), Vt[:k]


def _plan(s, rank):  # type: ignore[no-untyped-def]
    """(m kept exactly, inclusion probabilities p of the others (zeros for the kept), weight of a chosen one)."""
    r = rank
    if s.size <= r:  # nothing to reduce: keep every triplet
        return s.size, np.zeros(s.size), 0.0
    m = next(j for j in range(r) if (r - j) * s[j] <= s[j:].sum())  # j = r - 1 always qualifies
    s1 = s[m:].sum()
    p = np.zeros(s.size)
    if s1 > 0:
        p[m:] = (r - m) * s[m:] / s1
    return m, np.minimum(p, 1.0), s1 / (r - m)


def breakpoints(us, Bs, rank):  # type: ignore[no-untyped-def]
    """The values of U at which the systematic sample of eq. (2) can change: the fractional parts of the c_i."""
    c = np.cumsum(_plan(_svd(us, Bs, rank)[0], rank)[1])
    return c - np.floor(c)


def outcome_cuts(us, Bs, rank):  # type: ignore[no-untyped-def]
    """0, the :func:`breakpoints` and 1, sorted: U's intervals of one outcome each lie between two neighbours."""
    return np.unique(np.concatenate([[0.0, 1.0], np.clip(breakpoints(us, Bs, rank), 0.0, 1.0)]))


def reduce_terms(us, Bs, U, rank, unweighted=False):  # type: ignore[no-untyped-def]
    """Eq. (2): the k terms (u_i (k, m), B_i (k, n, n)) reduced to ``rank`` terms, given U in [0, 1)."""
    s, L, V = _svd(us, Bs, rank)
    m, p, w_chosen = _plan(s, rank)
    c = np.cumsum(p)
    chosen = (np.ceil(c - U) - np.ceil(c - p - U) > 0.5) & (p > 0)  # systematic sampling
    w = np.where(np.arange(s.size) < m, s, 0.0)
    w = np.where(chosen, s if unweighted else w_chosen, w)  # the seeded bug: sigma_i, not sigma_i / p_i
    keep = [i for i in range(s.size) if i < m or chosen[i]]
    u = np.zeros((rank, us.shape[-1]))
    A = np.zeros((rank, *Bs.shape[1:]))
    for slot, i in enumerate(keep[:rank]):
        u[slot], A[slot] = np.sqrt(w[i]) * V[i], np.sqrt(w[i]) * L[i]
    return u, A


class NumpyOK:
    """OK(``rank``) for a tanh RNN (batch 1). ``step(x, y)`` returns the gradient estimate as a dict."""

    def __init__(self, Wx, Wh, bh, Wy, by, h0=None, rank=1, rng=None, unweighted=False):  # type: ignore[no-untyped-def]
        self.Wx, self.Wh, self.bh, self.Wy, self.by = Wx, Wh, bh, Wy, by
        n, d = Wx.shape
        self.h = np.zeros(n) if h0 is None else np.array(h0, dtype=float)
        self.rank = int(rank)
        self.u = np.zeros((self.rank, n + d + 1))  # over a_t = [h_{t-1}, x_t, 1]
        self.A = np.zeros((self.rank, n, n))
        self.rng = rng if rng is not None else np.random.default_rng()
        self.unweighted = unweighted

    def draw_uniform(self, n):  # type: ignore[no-untyped-def]
        return self.rng.uniform(size=n)

    def terms(self, x):  # type: ignore[no-untyped-def]
        """h_t and the r + 1 terms of eq. (1): u_i (r + 1, m), B_i (r + 1, n, n) -- the last is a_t ⊗ D_t."""
        a = np.concatenate([self.h, x, [1.0]])
        h = np.tanh(self.Wh @ self.h + self.Wx @ x + self.bh)
        D = np.diag(1.0 - h * h)
        return h, np.vstack([self.u, a[None]]), np.concatenate([(D @ self.Wh) @ self.A, D[None]])

    def step(self, x, y, U=None):  # type: ignore[no-untyped-def]
        n = self.h.size
        h, us, Bs = self.terms(x)
        if U is None:
            U = float(self.draw_uniform(n)[0])
        self.u, self.A = reduce_terms(us, Bs, U, self.rank, self.unweighted)
        self.h = h
        e = self.Wy @ h + self.by - y
        q = self.Wy.T @ e
        G = np.einsum("ri,ra->ia", q @ self.A, self.u)  # (n, m): d l / d [Wh, Wx, bh]
        d = self.Wx.shape[1]
        return {"Wh": G[:, :n], "Wx": G[:, n : n + d], "bh": G[:, n + d], "Wy": np.outer(e, h), "by": e}

    # ------------------------------------------------------------------ the exact expectation
    def expected_gradients(self, xs, ys):  # type: ignore[no-untyped-def]
        """E[step t's gradient] for t = 1..T over every outcome of the uniforms, from this (fresh) object: at each
        step the intervals of U between :func:`outcome_cuts`, followed along every path with its probability."""
        T = len(xs)
        out = [None] * T

        def visit(obj, t, prob):  # type: ignore[no-untyped-def]
            if t == T:
                return
            _, us, Bs = obj.terms(xs[t])
            cuts = outcome_cuts(us, Bs, obj.rank)
            for lo, hi in itertools.pairwise(cuts):
                if hi - lo <= TINY:
                    continue
                nxt = copy.copy(obj)  # a step replaces the arrays, never writes into them
                g = nxt.step(xs[t], ys[t], U=0.5 * (lo + hi))
                wt = prob * (hi - lo)
                out[t] = {k: wt * v for k, v in g.items()} if out[t] is None else {k: out[t][k] + wt * g[k] for k in g}
                visit(nxt, t + 1, wt)

        visit(self, 0, 1.0)
        return out


@dataclass(frozen=True)
class UniformNoise(IIDNoise):
    """Independent uniform draws on [0, 1): continuous (``support`` None), so no sign enumeration."""

    support: tuple[float, ...] | None = None

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.rand(shape, generator=rng, device=rng.device, dtype=torch.float64)


# ------------------------------------------------------------ the wrap (what a user writes)
from verify.impl.adapters import Batch1  # noqa: E402


class _Terms(NamedTuple):
    us: torch.Tensor  # (1, r + 1, m)
    Bs: torch.Tensor  # (1, r + 1, n, n)


@dataclass(frozen=True, eq=False)
class NumpyOKAdapter(Batch1):
    """The batch-1 adapter plus OK's reduction hooks (``rank``, ``terms``, ``reduce``, ``breakpoints``) for part (a)
    of ``uoro.ok-variance``: the numpy reduction on one sample's terms, torch in and out."""

    rank: int = 1
    unweighted: bool = False

    def terms(self, problem, theta, state, t):  # type: ignore[no-untyped-def]
        obj = self.objects(state)[0]
        _, us, Bs = obj.terms(problem.inputs[t - 1].detach().to("cpu", torch.float64).numpy())
        return _Terms(torch.as_tensor(us)[None], torch.as_tensor(Bs)[None])

    def reduce(self, us, Bs, U):  # type: ignore[no-untyped-def]
        out = [
            reduce_terms(a.numpy(), b.numpy(), float(v), self.rank, self.unweighted)
            for a, b, v in zip(us, Bs, U, strict=True)
        ]
        return torch.as_tensor(np.stack([o[0] for o in out])), torch.as_tensor(np.stack([o[1] for o in out]))

    def breakpoints(self, us, Bs):  # type: ignore[no-untyped-def]
        return torch.as_tensor(
            np.stack([breakpoints(a.numpy(), b.numpy(), self.rank) for a, b in zip(us, Bs, strict=True)])
        )


def _wrap(rank, name, unweighted=False):  # type: ignore[no-untyped-def]
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        est = NumpyOK(
            p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0, rank=rank, rng=ctx.rng, unweighted=unweighted
        )
        est.draw_uniform = ctx.noise  # type: ignore[method-assign]  # U through the toolkit
        return est

    return NumpyOKAdapter(
        make,
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
        cells=("elman-tanh",),
        state=lambda est: est.h,
        noise_hook=True,
        noise=UniformNoise(),
        expectation=lambda est, xs, ys: est.expected_gradients(xs, ys),
        name=f"{name} (r = {rank})",
        rank=rank,
        unweighted=unweighted,
    )


def MyNumpyOK(rank=1):  # type: ignore[no-untyped-def]
    """The uoro.ok factory: ``ok(rank=r)`` -> the wrapped :class:`NumpyOK`."""
    return _wrap(rank, "numpy-ok")


def MyNumpyOKUnweighted(rank=1):  # type: ignore[no-untyped-def]
    """The seeded bug: a chosen triplet keeps its own σ_i, not σ_i / p_i (biased)."""
    return _wrap(rank, "numpy-ok-unweighted", unweighted=True)
