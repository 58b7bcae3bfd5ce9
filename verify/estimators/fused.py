r"""Fused multi-step samplers: M independent runs of UORO (and its family) at the memory-bandwidth limit.

The statistical checks need many independent draws of an estimator's outputs at a few time
steps (:func:`verify.assertions.estimator_sampler` drives ``init``/``step`` for that). For the
toolkit's own :class:`~verify.estimators.UORO` (any rank, block, normalizer rule, noise law,
mutant field) and :class:`~verify.estimators.PreactivationUORO` on the standard cells,
:func:`fused_sampler` computes the **same draws** -- the same ν from the same generator, the
same arithmetic up to round-off -- without the per-step contract's costs:

* the shared trajectory (states, the cells' linearizations, the loss gradients δs, δθ of every
  step, block by block for UORO-T) is computed once per sampler, not once per call and step;
* θ̃ is stored as :math:`c\,\Theta` with a per-(sample, pair) scale c, so the reduction
  :math:`\tilde\theta \leftarrow \tilde\theta/\rho_0 + \nu^\top\partial F/\partial\theta/\rho_1`
  is one in-place rank-L update of Θ (:math:`\Theta \mathrel{+}= g\,F^\top`, F the features
  (h, x, 1) of the L = |B|·block rows, g the preactivation cotangents scaled by
  :math:`r_0/(r_1 c)`): a single GEMM per step over the chunk, 2 passes over θ̃ instead of ~8
  allocations; :math:`\|\nu^\top\partial F/\partial\theta\|` comes from the L×L Gram matrices of g
  and F, never from the p-vector;
* the M samples are processed in chunks sized to the cache, **chunk-outer, time-inner**: a
  chunk's θ̃ stays in cache for all T steps, so throughput does not fall as M grows. The ν of
  all steps are drawn first, in the estimator's order (one ``noise.draw`` of shape (M, r, *B, n)
  per reduction, as ``step`` does), so chunking does not change the draws. When the pre-drawn
  ν would exceed :data:`PREDRAW_BYTES` the loop runs time-outer instead (same draws, same
  results, less cache reuse);
* all buffers are allocated once per sampler and reused across calls.

Internally Θ has the row layout (G, A) = (gate rows, [h | x | 1]); outputs are written in θ's
documented layout (:mod:`verify.params`), readout entries from δθ only (F_state does not depend
on the readout). Normalizer rules other than Algorithm 1's get their
:class:`~verify.estimators.uoro.NormalizerInputs` materialized exactly as ``step`` builds them
(and the whole sample runs as one chunk, so a rule sees the same M rows as in ``step``).

Tests (``tests/estimators/test_fast_paths.py``): every output of the fused samplers equals
:func:`~verify.assertions.estimator_sampler` on the generic (autograd) path to round-off, on every
standard cell, with and without batch, ranks, blocks, mutant fields, float64 and float32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from verify.errors import InvalidArgument
from verify.estimators import kernels
from verify.estimators.kernels import Linearization
from verify.estimators.online import batch_numel
from verify.estimators.uoro import (
    UORO,
    NormalizerInputs,
    PreactivationUORO,
    _check_rho,
    paper_rho0,
    paper_rho1,
)
from verify.problem import Problem

__all__ = ["PREDRAW_BYTES", "QUANTITIES", "Sampler", "default_chunk", "fused_sampler", "supports"]

#: ``sampler(m, rng) -> one (m, ·) tensor per name``: the interface of :mod:`verify.stats.unbiased`
Sampler = Callable[[int, torch.Generator], list[torch.Tensor]]
QUANTITIES = ("gradient", "total", "influence")
#: largest pre-drawn noise table (bytes) before the sampler switches to the time-outer loop
PREDRAW_BYTES = 256 * 2**20
#: target working set of one chunk (bytes): a few chunks fit the last-level cache of a small CPU
CHUNK_BYTES = 3 * 2**20
_RESCALE = 1e100  # renormalize Θ when the lazy scale c leaves [1/_RESCALE, _RESCALE]


def supports(estimator: object, problem: Problem) -> str | None:
    """``None`` if :func:`fused_sampler` covers ``estimator`` on ``problem``, else the reason it does not."""
    est_type = type(estimator)
    if est_type is UORO or est_type is PreactivationUORO:
        if getattr(estimator, "path", "auto") == "generic":
            return "the estimator asks for the generic path"
        why = kernels.recognized(problem)
        if why is None and est_type is PreactivationUORO and problem.cell.name != "elman":
            why = "preactivation UORO needs an Elman cell"
        return why
    return f"no fused sampler for {est_type.__name__} (UORO and PreactivationUORO only, not subclasses)"


def default_chunk(per_sample_bytes: int, samples: int) -> int:
    """Samples per chunk: :data:`CHUNK_BYTES` of working set, at least 16 (per-call overhead), at most M."""
    return max(1, min(samples, max(16, CHUNK_BYTES // max(per_sample_bytes, 1))))


def _names(steps: Sequence[int], quantities: Sequence[str]) -> list[str]:
    names: list[str] = []
    if "gradient" in quantities:
        names += [f"dl_{t}/dtheta" for t in steps]
    if "total" in quantities:
        names.append("dL/dtheta")
    if "influence" in quantities:
        names += [f"ds_{t}/dtheta" for t in steps]
    return names


def _check(steps: Sequence[int], quantities: Sequence[str], T: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    for q in quantities:
        if q not in QUANTITIES:
            raise InvalidArgument("quantity", q, f"must be one of {QUANTITIES}")
    ts = tuple(steps)
    if not ts or any(isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= T for t in ts):
        raise InvalidArgument("steps", ts, f"need time steps in [1, T={T}]")
    return ts, tuple(quantities)


def fused_sampler(
    estimator: UORO | PreactivationUORO,
    problem: Problem,
    theta: torch.Tensor,
    *,
    steps: Sequence[int],
    quantities: Sequence[str] = ("gradient", "total"),
    chunk: int | None = None,
) -> tuple[Sampler, list[str]]:
    """A sampler of M independent runs with the interface (and draws) of :func:`~verify.assertions.estimator_sampler`.

    ``sampler(m, rng)`` returns one (m, ·) tensor per name, in the order of ``names``: the
    gradient estimates at ``steps``, the total Σ_t g̃_t, the influence estimates at ``steps``
    (flattened (*B, n, p)). ``chunk`` overrides the samples per chunk. Raises
    :class:`InvalidArgument` where :func:`supports` says no.
    """
    why = supports(estimator, problem)
    if why is not None:
        raise InvalidArgument("estimator", getattr(estimator, "name", type(estimator).__name__), why)
    theta = problem.check_theta(theta).detach()
    ts, qs = _check(steps, quantities, problem.T)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise InvalidArgument("chunk", chunk, "must be an integer >= 1")
    if isinstance(estimator, UORO):
        return _UOROSampler(estimator, problem, theta, ts, qs, chunk), _names(ts, qs)
    return _PreactSampler(estimator, problem, theta, ts, qs, chunk), _names(ts, qs)


# ===================================================================== shared pieces
@dataclass
class _Layout:
    """θ's cell blocks (W: G×H, U: G×d, b: G) and the internal row layout (G, A), A = H + d + 1."""

    p: int
    G: int
    H: int
    d: int
    W: slice
    U: slice
    b: slice

    @property
    def A(self) -> int:
        return self.H + self.d + 1

    @staticmethod
    def of(problem: Problem, lin: Linearization) -> _Layout:
        lay = problem.layout
        return _Layout(
            problem.p,
            lin.G,
            lin.H,
            problem.cell.input_size,
            lay["cell.W"].slice,
            lay["cell.U"].slice,
            lay["cell.b"].slice,
        )

    def write(self, X: torch.Tensor, out: torch.Tensor) -> None:
        """Internal (K, G, A) -> θ layout ``out`` (K, p) (cell blocks only; the readout entries are left alone)."""
        K, G, H, d = X.shape[0], self.G, self.H, self.d
        out[:, self.W].view(K, G, H).copy_(X[..., :H])
        if d:
            out[:, self.U].view(K, G, d).copy_(X[..., H : H + d])
        out[:, self.b].copy_(X[..., H + d])

    def write_rows(self, X: torch.Tensor, out: torch.Tensor) -> None:
        """Internal (K, N, G, A) -> (K, N, p) in θ's layout (readout columns zero)."""
        K, N, G, H, d = X.shape[0], X.shape[1], self.G, self.H, self.d
        out.zero_()
        out[..., self.W].view(K, N, G, H).copy_(X[..., :H])
        if d:
            out[..., self.U].view(K, N, G, d).copy_(X[..., H : H + d])
        out[..., self.b].copy_(X[..., H + d])


def _features(lins: Sequence[Linearization]) -> tuple[torch.Tensor, torch.Tensor]:
    """(F_W (L, H), F_U (L, d+1)): the rows h and (x, 1) of the steps' sequences, L = steps × |B|."""
    hs, xs = [], []
    for lin in lins:
        hs.append(lin.h)
        ones = torch.ones(lin.x.shape[0], 1, dtype=lin.x.dtype, device=lin.x.device)
        xs.append(torch.cat([lin.x, ones], dim=-1))
    return torch.cat(hs), torch.cat(xs)


def _draw_all(
    est: UORO | PreactivationUORO,
    problem: Problem,
    rng: torch.Generator,
    m: int,
    draws: int,
) -> list[torch.Tensor]:
    """The estimator's noise draws 0..draws-1 for m samples, in the order and shapes ``step`` makes them."""
    shape = (m, *est.noise_shape(problem))
    prev = torch.zeros(shape, dtype=problem.dtype, device=problem.device)
    out = []
    for index in range(draws):
        nu = est.noise.draw(rng, shape, problem.dtype, problem.device, index, prev)
        if tuple(nu.shape) != shape:
            raise InvalidArgument("noise.draw(...)", f"shape {tuple(nu.shape)}", f"expected {shape}")
        out.append(nu)
        prev = nu
    return out


# ============================================================================= UORO
@dataclass
class _Reduction:
    """What the reduction at the end of a block needs: the block's linearizations and feature Grams."""

    lins: list[Linearization]
    FW: torch.Tensor  #: (L, H)
    FU: torch.Tensor  #: (L, d+1)
    F: torch.Tensor  #: (L, A) = [FW | FU]
    gram_W: torch.Tensor  #: FW FWᵀ (L, L)
    gram_U: torch.Tensor  #: FU FUᵀ
    gram_F: torch.Tensor  #: F Fᵀ


class _UOROSampler:
    """M runs of :class:`~verify.estimators.UORO` (Algorithm 1; rank r, UORO-T, every field) in chunks."""

    def __init__(
        self,
        est: UORO,
        problem: Problem,
        theta: torch.Tensor,
        steps: tuple[int, ...],
        quantities: tuple[str, ...],
        chunk: int | None,
    ) -> None:
        self.est, self.P, self.steps, self.q, self.chunk = est, problem, steps, quantities, chunk
        self.last = problem.T if "total" in quantities else max(steps)
        self.nb, self.n = batch_numel(problem), problem.n
        self.N = self.nb * self.n
        Tb = est.block
        with torch.no_grad():
            # the shared trajectory, its linearizations, and the loss gradients (δs, δθ) of every step,
            # backpropagated to the start of the step's block (Algorithm 1 applied to F^T for UORO-T)
            s = problem.s0
            self.lins: list[Linearization] = []
            for t in range(1, self.last + 1):
                lin = kernels.linearize(problem, theta, s, problem.inputs[t - 1])
                self.lins.append(lin)
                s = lin.s_next.reshape(problem.s0.shape)
            states = [problem.s0] + [lin.s_next.reshape(problem.s0.shape) for lin in self.lins]
            self.delta_s, self.delta_theta = [], []
            for t in range(1, self.last + 1):
                t0 = ((t - 1) // Tb) * Tb
                _, d_th, d_s = kernels.window_loss_gradient(problem, theta, states[t0], t0, t)
                self.delta_s.append(d_s.reshape(self.N))
                self.delta_theta.append(d_th)
            self.lay = _Layout.of(problem, self.lins[0])
            self.reductions: dict[int, _Reduction] = {}
            for t in range(Tb, self.last + 1, Tb):
                block = self.lins[t - Tb : t]
                FW, FU = _features(block)
                F = torch.cat([FW, FU], dim=-1)
                self.reductions[t] = _Reduction(block, FW, FU, F, FW @ FW.T, FU @ FU.T, F @ F.T)
            self.delta_theta_sum = torch.stack(self.delta_theta).sum(0)
        self.gru = type(problem.cell).__name__ == "GRUCell"
        self.paper = est.rho0 is paper_rho0 and est.rho1 is paper_rho1
        self._buffers: dict[int, dict[str, torch.Tensor]] = {}

    # ------------------------------------------------------------------ buffers
    def per_sample_bytes(self) -> int:
        lay, r = self.lay, self.est.rank
        Pint = lay.G * lay.A
        item = torch.empty((), dtype=self.P.dtype).element_size()
        return item * (r * Pint + 2 * Pint + 4 * r * self.N)

    def _buf(self, mc: int) -> dict[str, torch.Tensor]:
        if mc in self._buffers:
            return self._buffers[mc]
        r, lay, dt, dev = self.est.rank, self.lay, self.P.dtype, self.P.device
        Pint = lay.G * lay.A

        def z(*shape: int) -> torch.Tensor:
            return torch.zeros(shape, dtype=dt, device=dev)

        b = {
            "S": z(mc, r, self.N),
            "Th": z(mc, r, lay.G, lay.A),
            "c": z(mc, r),
            "p0": z(mc, r),
            "p1": z(mc, r),
            "tot": z(mc, Pint),
            "tmp": z(mc, Pint),
        }
        self._buffers = {mc: b}  # keep one set (the chunk size is the same from call to call)
        return b

    # ------------------------------------------------------------------ driver
    def __call__(self, m: int, rng: torch.Generator) -> list[torch.Tensor]:
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidArgument("m", m, "need at least one draw")
        P, est = self.P, self.est
        draws = self.last // est.block
        out_g = {t: torch.empty(m, P.p, dtype=P.dtype, device=P.device) for t in self.steps} if "gradient" in self.q else {}
        out_tot = torch.empty(m, P.p, dtype=P.dtype, device=P.device) if "total" in self.q else None
        out_inf = (
            {t: torch.empty(m, self.N, P.p, dtype=P.dtype, device=P.device) for t in self.steps}
            if "influence" in self.q
            else {}
        )
        mc = m if not self.paper else (self.chunk or default_chunk(self.per_sample_bytes(), m))
        mc = min(mc, m)
        item = torch.empty((), dtype=P.dtype).element_size()
        table_bytes = draws * m * est.rank * self.N * item
        if table_bytes <= PREDRAW_BYTES:
            nus = _draw_all(est, P, rng, m, draws)
            b = self._buf(mc)
            for lo in range(0, m, mc):
                hi = min(m, lo + mc)
                self._start(b, hi - lo)
                for t in range(1, self.last + 1):
                    nu = None
                    if t % est.block == 0:
                        nu = nus[t // est.block - 1][lo:hi]
                    self._step(b, hi - lo, lo, t, nu, out_g, out_inf)
                self._finish(b, hi - lo, lo, out_tot)
        else:  # time-outer: one noise draw per reduction for all m, as step() does
            bufs = []
            for lo in range(0, m, mc):
                hi = min(m, lo + mc)
                bb = {k: v[: hi - lo].clone() for k, v in self._buf(mc).items()}
                self._start(bb, hi - lo)
                bufs.append((lo, hi, bb))
            prev = torch.zeros((m, *est.noise_shape(P)), dtype=P.dtype, device=P.device)
            for t in range(1, self.last + 1):
                nu_all = None
                if t % est.block == 0:
                    index = t // est.block - 1
                    nu_all = est.noise.draw(rng, tuple(prev.shape), P.dtype, P.device, index, prev)
                    if tuple(nu_all.shape) != tuple(prev.shape):
                        raise InvalidArgument(
                            "noise.draw(...)", f"shape {tuple(nu_all.shape)}", f"expected {tuple(prev.shape)}"
                        )
                    prev = nu_all
                for lo, hi, bb in bufs:
                    self._step(bb, hi - lo, lo, t, None if nu_all is None else nu_all[lo:hi], out_g, out_inf)
            for lo, hi, bb in bufs:
                self._finish(bb, hi - lo, lo, out_tot)
        out: list[torch.Tensor] = []
        out += [out_g[t] for t in self.steps] if out_g else []
        if out_tot is not None:
            out.append(out_tot)
        out += [out_inf[t].reshape(m, -1) for t in self.steps] if out_inf else []
        return out

    def _start(self, b: dict[str, torch.Tensor], k: int) -> None:
        for key in ("S", "Th", "tot"):
            b[key][:k].zero_()
        for key in ("c", "p0", "p1"):
            b[key][:k].fill_(1.0)

    def _finish(self, b: dict[str, torch.Tensor], k: int, lo: int, out_tot: torch.Tensor | None) -> None:
        if out_tot is None:
            return
        lay = self.lay
        rows = out_tot[lo : lo + k]
        rows.zero_()
        lay.write(b["tot"][:k].view(k, lay.G, lay.A), rows)
        if self.est.include_delta_theta:
            rows.add_(self.delta_theta_sum)

    # ------------------------------------------------------------------ one step
    def _step(
        self,
        b: dict[str, torch.Tensor],
        k: int,
        lo: int,
        t: int,
        nu: torch.Tensor | None,
        out_g: dict[int, torch.Tensor],
        out_inf: dict[int, torch.Tensor],
    ) -> None:
        est, lay = self.est, self.lay
        r = est.rank
        Pint = lay.G * lay.A
        S, Th, c = b["S"][:k], b["Th"][:k], b["c"][:k]
        Th2 = Th.view(k, r, Pint)
        want_g = t in out_g
        # g̃_t = (1/r) Σ_pairs (δs_t · s̃) θ̃ + δθ_t,   θ̃ = c Θ   (Algorithm 1, eq. (7))
        if t > est.block and ("total" in self.q or want_g):  # before the first reduction θ̃ = 0
            kap = (S @ self.delta_s[t - 1]).mul_(c).div_(r)  # (k, r)
            if want_g:
                tmp = b["tmp"][:k]
                if r == 1:
                    torch.mul(Th2[:, 0], kap, out=tmp)
                else:
                    torch.bmm(kap.unsqueeze(1), Th2, out=tmp.unsqueeze(1))
                if "total" in self.q:
                    b["tot"][:k].add_(tmp)
                rows = out_g[t][lo : lo + k]
                rows.zero_()
                lay.write(tmp.view(k, lay.G, lay.A), rows)
            else:
                tot = b["tot"][:k]
                if r == 1:
                    tot.addcmul_(Th2[:, 0], kap)
                else:
                    tot.unsqueeze(1).baddbmm_(kap.unsqueeze(1), Th2)
        elif want_g:
            out_g[t][lo : lo + k].zero_()
        if want_g and est.include_delta_theta:
            out_g[t][lo : lo + k].add_(self.delta_theta[t - 1])
        if nu is not None:
            self._reduce(b, k, t, nu)
        if t in out_inf:
            self._influence(b, k, lo, t, out_inf[t])

    def _reduce(self, b: dict[str, torch.Tensor], k: int, t: int, nu: torch.Tensor) -> None:
        est, lay, P = self.est, self.lay, self.P
        r, nb, n, eps = est.rank, self.nb, self.n, est.eps
        red = self.reductions[t]
        S, Th, c = b["S"][:k], b["Th"][:k], b["c"][:k]
        K = k * r
        nu3 = nu.reshape(K, nb, n)
        # (_, δθ_g) <- F_state.backprop(νᵀ): preactivation cotangents of every step of the block
        gWs, gUs = [], []
        U: torch.Tensor | None = nu3
        for j, lin in enumerate(reversed(red.lins)):
            assert U is not None
            U, gW, gU = lin.vjp(U, state=j < len(red.lins) - 1)
            gWs.append(gW)
            gUs.append(gU)
        gW = torch.cat(gWs[::-1], dim=1)  # (K, L, G), rows in the order of red.F
        gU = gW if not self.gru else torch.cat(gUs[::-1], dim=1)
        # s̃ <- F_state.forwarddiff(s̃)   (eq. (1))
        V = S.reshape(K, nb, n)
        for lin in red.lins:
            V = lin.jvp_state(V)
        s_fwd = V.reshape(k, r, self.N)
        # norms of Algorithm 1: ‖θ̃‖ = |c| ‖Θ‖, ‖νᵀ∂F/∂θ‖ from the L×L Grams (never the p-vector)
        n_theta = torch.linalg.vector_norm(Th.view(k, r, -1), dim=-1).mul_(c.abs())
        n_fwd = torch.linalg.vector_norm(s_fwd, dim=-1)
        n_nu = torch.linalg.vector_norm(nu.reshape(k, r, -1), dim=-1)
        if self.gru:
            sq = ((red.gram_W @ gW) * gW).sum((1, 2)) + ((red.gram_U @ gU) * gU).sum((1, 2))
        else:
            sq = ((red.gram_F @ gW) * gW).sum((1, 2))
        n_g = sq.clamp_(min=0).sqrt_().view(k, r)
        paper0 = torch.sqrt(n_theta / (n_fwd + eps)) + eps  # Algorithm 1, ρ0
        paper1 = torch.sqrt(n_g / (n_nu + eps)) + eps  # Algorithm 1, ρ1
        if self.paper:
            rho0, rho1 = paper0, paper1
        else:
            rho0, rho1 = self._rules(b, k, t, nu, s_fwd, gW, gU, red)
            rho0 = paper0 if est.rho0 is paper_rho0 else rho0
            rho1 = paper1 if est.rho1 is paper_rho1 else rho1
        one = torch.ones_like(rho0)
        r0_s = rho0 if est.rho0_on in ("both", "state") else one
        r0_t = rho0 if est.rho0_on in ("both", "theta") else one
        r1_s = rho1 if est.rho1_on in ("both", "state") else one
        r1_t = rho1 if est.rho1_on in ("both", "theta") else one
        # eq. (5): s̃ = ρ0 ∂F/∂s s̃ + ρ1 ν
        torch.add(s_fwd * r0_s.unsqueeze(-1), nu.reshape(k, r, self.N) * r1_s.unsqueeze(-1), out=S)
        # eq. (6) with θ̃ = c Θ:  c <- σ c / r0_t,  Θ += (νᵀ∂F/∂θ) σ / (r1_t c_new)   (σ = theta_tilde_scale)
        c_new = c * (est.theta_tilde_scale / r0_t)
        f = (est.theta_tilde_scale / (r1_t * c_new)).reshape(K, 1, 1)
        Th2 = Th.view(K * lay.G, lay.A)
        gWt = (gW * f).transpose(1, 2).reshape(K * lay.G, -1)
        if self.gru:
            gUt = (gU * f).transpose(1, 2).reshape(K * lay.G, -1)
            Th2[:, : lay.H].addmm_(gWt, red.FW)
            Th2[:, lay.H :].addmm_(gUt, red.FU)
        else:
            Th2.addmm_(gWt, red.F)
        c.copy_(c_new)
        b["p0"][:k].copy_(paper0)
        b["p1"][:k].copy_(paper1)
        big = (c.abs() > _RESCALE) | (c.abs() < 1 / _RESCALE)
        if bool(big.any()):  # fold the scale back into Θ (rare; keeps c in range)
            Th.mul_(torch.where(big, c, torch.ones_like(c)).view(k, r, 1, 1))
            c.copy_(torch.where(big, torch.ones_like(c), c))

    def _rules(
        self,
        b: dict[str, torch.Tensor],
        k: int,
        t: int,
        nu: torch.Tensor,
        s_fwd: torch.Tensor,
        gW: torch.Tensor,
        gU: torch.Tensor,
        red: _Reduction,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A non-paper normalizer rule: :class:`NormalizerInputs` materialized as ``step`` builds them."""
        est, lay, P = self.est, self.lay, self.P
        r, K = est.rank, k * est.rank
        B = P.batch_shape
        theta_tilde = torch.zeros(K, P.p, dtype=P.dtype, device=P.device)
        cth = b["Th"][:k].reshape(K, lay.G, lay.A) * b["c"][:k].reshape(K, 1, 1)
        lay.write(cth, theta_tilde)
        D = torch.zeros(K, lay.G, lay.A, dtype=P.dtype, device=P.device)
        if self.gru:
            D[..., : lay.H] = gW.transpose(1, 2) @ red.FW
            D[..., lay.H :] = gU.transpose(1, 2) @ red.FU
        else:
            D = gW.transpose(1, 2) @ red.F
        dthg = torch.zeros(K, P.p, dtype=P.dtype, device=P.device)
        lay.write(D, dthg)
        z = NormalizerInputs(
            theta_tilde=theta_tilde.view(k, r, P.p),
            s_forward=s_fwd.reshape(k, r, *B, self.n),
            nu=nu.reshape(k, r, *B, self.n),
            delta_theta_g=dthg.view(k, r, P.p),
            prev_rho0=b["p0"][:k].clone(),
            prev_rho1=b["p1"][:k].clone(),
            eps=est.eps,
            reduction=t // est.block - 1,
        )
        rho0 = _check_rho("rho0", est.rho0(z), (k, r))
        rho1 = _check_rho("rho1", est.rho1(z), (k, r))
        return rho0, rho1

    def _influence(self, b: dict[str, torch.Tensor], k: int, lo: int, t: int, out: torch.Tensor) -> None:
        """(1/r) Σ_pairs s̃ ⊗ θ̃ at the last reduction, (k, N, p) in θ's layout."""
        lay, r = self.lay, self.est.rank
        S, Th, c = b["S"][:k], b["Th"][:k], b["c"][:k]
        X = torch.einsum("mri,mrga->miga", S * (c / r).unsqueeze(-1), Th)
        lay.write_rows(X, out[lo : lo + k])


# ============================================================ preactivation UORO
class _PreactSampler:
    r"""M runs of :class:`~verify.estimators.PreactivationUORO` (Elman cells) with pre-drawn τ, in chunks.

    The recursion of the estimator (H̃, ã; γ, β as UORO's rule with Frobenius norms) with the
    shared quantities (δs, δθ, φ′, a_t) computed once; :math:`\|\tau D\|_F = |\tau|\,\|\phi'\|`.
    """

    def __init__(
        self,
        est: PreactivationUORO,
        problem: Problem,
        theta: torch.Tensor,
        steps: tuple[int, ...],
        quantities: tuple[str, ...],
        chunk: int | None,
    ) -> None:
        self.est, self.P, self.steps, self.q, self.chunk = est, problem, steps, quantities, chunk
        self.last = problem.T if "total" in quantities else max(steps)
        self.nb, self.n = batch_numel(problem), problem.n
        lay = problem.layout
        self.W = theta[lay["cell.W"].slice].view(lay["cell.W"].shape)
        with torch.no_grad():
            s = problem.s0
            self.delta_s, self.delta_theta, self.dphi, self.a = [], [], [], []
            for t in range(1, self.last + 1):
                _, d_th, d_s = kernels.window_loss_gradient(problem, theta, s, t - 1, t)
                lin = kernels.linearize(problem, theta, s, problem.inputs[t - 1])
                dphi = getattr(lin, "dphi", None)
                self.dphi.append(torch.ones_like(lin.s_next) if dphi is None else dphi)  # (nb, n)
                ones = torch.ones(self.nb, 1, dtype=problem.dtype, device=problem.device)
                self.a.append(torch.cat([lin.h, lin.x, ones], dim=-1))  # a_t = (s_{t-1}, x_t, 1), (nb, A)
                self.delta_s.append(d_s.reshape(self.nb, self.n))
                self.delta_theta.append(d_th)
                s = lin.s_next.reshape(problem.s0.shape)
            self.lay = _Layout.of(problem, lin)
        self.dnorm = [torch.linalg.vector_norm(dp) for dp in self.dphi]
        self.anorm = [torch.linalg.vector_norm(a) for a in self.a]

    def per_sample_bytes(self) -> int:
        r, n, A = self.est.rank, self.n, self.lay.A
        item = torch.empty((), dtype=self.P.dtype).element_size()
        return item * (3 * r * self.nb * n * n + r * self.nb * A + 2 * n * A)

    def __call__(self, m: int, rng: torch.Generator) -> list[torch.Tensor]:
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidArgument("m", m, "need at least one draw")
        P, est, lay = self.P, self.est, self.lay
        r, nb, n, A = est.rank, self.nb, self.n, lay.A
        taus = _draw_all(est, P, rng, m, self.last)  # one τ (m, r) per step, as step() draws them
        out_g = {t: torch.empty(m, P.p, dtype=P.dtype, device=P.device) for t in self.steps} if "gradient" in self.q else {}
        out_tot = torch.zeros(m, P.p, dtype=P.dtype, device=P.device) if "total" in self.q else None
        out_inf = (
            {t: torch.empty(m, nb * n, P.p, dtype=P.dtype, device=P.device) for t in self.steps}
            if "influence" in self.q
            else {}
        )
        mc = min(m, self.chunk or default_chunk(self.per_sample_bytes(), m))
        eps = est.eps
        for lo in range(0, m, mc):
            hi = min(m, lo + mc)
            k = hi - lo
            H = torch.zeros(k, r, nb, n, n, dtype=P.dtype, device=P.device)
            a = torch.zeros(k, r, nb, A, dtype=P.dtype, device=P.device)
            tot = torch.zeros(k, n, A, dtype=P.dtype, device=P.device) if out_tot is not None else None
            for t in range(1, self.last + 1):
                want_g = t in out_g
                if tot is not None or want_g:
                    # g̃_t = vec((δs H̃_{t-1})ᵀ ã_{t-1}ᵀ) + δθ, averaged over pairs, summed over the batch
                    u = torch.einsum("bi,mrbij->mrbj", self.delta_s[t - 1], H)
                    G = torch.einsum("mrbj,mrbk->mjk", u, a).div_(r)
                    if tot is not None:
                        tot.add_(G)
                    if want_g:
                        rows = out_g[t][lo:hi]
                        rows.zero_()
                        lay.write(G, rows)
                        rows.add_(self.delta_theta[t - 1])
                tau = taus[t - 1][lo:hi]  # (k, r)
                dphi, a_t = self.dphi[t - 1], self.a[t - 1]
                JH = torch.matmul(self.W, H).mul_(dphi.unsqueeze(-1))  # J^{s_t}_{s_{t-1}} H̃_{t-1}
                gamma = torch.sqrt(
                    torch.linalg.vector_norm(a.flatten(2), dim=-1) / (torch.linalg.vector_norm(JH.flatten(2), dim=-1) + eps)
                ) + eps
                ta = tau.abs()
                beta = torch.sqrt(ta * self.anorm[t - 1] / (ta * self.dnorm[t - 1] + eps)) + eps
                H = JH.mul_(gamma.view(k, r, 1, 1, 1))
                H.diagonal(dim1=-2, dim2=-1).add_((beta * tau).view(k, r, 1, 1) * dphi)  # + β τ J^{s_t}_{p_t}
                a = a.div_(gamma.view(k, r, 1, 1)).add_((tau / beta).view(k, r, 1, 1) * a_t)
                if t in out_inf:
                    X = torch.einsum("mrbij,mrbk->mbijk", H, a).div_(r).reshape(k, nb * n, n, A)
                    lay.write_rows(X, out_inf[t][lo:hi])
            if out_tot is not None and tot is not None:
                lay.write(tot, out_tot[lo:hi])
        if out_tot is not None:
            out_tot.add_(torch.stack(self.delta_theta).sum(0))
        out: list[torch.Tensor] = []
        out += [out_g[t] for t in self.steps] if out_g else []
        if out_tot is not None:
            out.append(out_tot)
        out += [out_inf[t].reshape(m, -1) for t in self.steps] if out_inf else []
        return out
