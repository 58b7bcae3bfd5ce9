r"""Fused multi-step samplers: M independent runs of UORO (and its family) at the memory-bandwidth limit.

The statistical checks need many independent draws of an estimator's outputs at a few time
steps (:func:`verify.testing.assertions.estimator_sampler` drives ``init``/``step`` for that). For the
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
  and F, never from the p-vector ("dense" mode);
* when the run adds fewer rank-1 terms than Θ has columns (J ≤ A = H + d + 1: T small against n),
  Θ is not even formed ("factored" mode, :class:`_Factored`): Θ = Σ_j f_j g_j ⊗ F_j is kept as its
  per-sample cotangents g_j (J×G per sample instead of G×A), ‖Θ‖² is updated from the Grams of the
  g_j and of the shared F_j, and the estimates Σ_r κ_r Θ_r and the total Σ_t κ_t Θ_{t-1} (with
  suffix sums of κ) are single GEMMs formed only for an output -- or projected straight onto K
  directions (``project=``) without ever forming a p-vector;
* the M samples are processed in chunks sized to the cache, **chunk-outer, time-inner**: a
  chunk's θ̃ stays in cache for all T steps, so throughput does not fall as M grows. The ν of
  all steps are drawn first, in the estimator's order (one ``noise.draw`` of shape (M, r, *B, n)
  per reduction, as ``step`` does), so chunking does not change the draws. When the pre-drawn
  ν would exceed :data:`PREDRAW_BYTES` the loop runs time-outer instead (same draws, same
  results, less cache reuse);
* all buffers are allocated once per sampler and reused across calls.

Internally Θ has the row layout (G, A) = (gate rows, [h | x | 1]); outputs are written in θ's
documented layout (:mod:`verify.model.params`), readout entries from δθ only (F_state does not depend
on the readout). Normalizer rules other than Algorithm 1's get their
:class:`~verify.estimators.uoro.NormalizerInputs` materialized exactly as ``step`` builds them
(and the whole sample runs as one chunk, so a rule sees the same M rows as in ``step``).

Tests (``tests/estimators/test_fast_paths.py``): every output of the fused samplers equals
:func:`~verify.testing.assertions.estimator_sampler` on the generic (autograd) path to round-off, on every
standard cell, with and without batch, ranks, blocks, mutant fields, float64 and float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from verify.errors import InvalidArgument
from verify.estimators import kernels
from verify.estimators.kernels import Linearization
from verify.estimators.online import batch_numel
from verify.estimators.sampling import estimator_sampler
from verify.estimators.uoro import (
    UORO,
    NormalizerInputs,
    PreactivationUORO,
    _check_rho,
    paper_rho0,
    paper_rho1,
)
from verify.model.problem import Problem

__all__ = ["PREDRAW_BYTES", "QUANTITIES", "Sampler", "default_chunk", "fused_sampler", "sampler_for", "supports"]

#: ``sampler(m, rng) -> one (m, ·) tensor per name``: the interface of :mod:`verify.stats.unbiased`
Sampler = Callable[[int, torch.Generator], list[torch.Tensor]]
QUANTITIES = ("gradient", "total", "influence")
#: largest pre-drawn noise table (bytes) before the sampler switches to the time-outer loop
PREDRAW_BYTES = 256 * 2**20
#: target working set of one chunk (bytes): a few chunks fit the last-level cache of a small CPU
CHUNK_BYTES = 3 * 2**20
#: the same on a CUDA device: a chunk's state in device memory (the card's parallelism wants wide chunks)
CUDA_CHUNK_BYTES = 2 * 2**30
_RESCALE = 1e100  # renormalize Θ when the lazy scale c leaves [1/_RESCALE, _RESCALE] (capped at max^(1/4))
_CHECK_EVERY = 0  # check the scale every k reductions (0: derived from the dtype's range)


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


def default_chunk(per_sample_bytes: int, samples: int, device: torch.device | None = None) -> int:
    """Samples per chunk: :data:`CHUNK_BYTES` of working set (CPU caches; on CUDA :data:`CUDA_CHUNK_BYTES`
    of device memory: wide enough to fill the card), at least 16 (per-call overhead), at most M."""
    budget = CUDA_CHUNK_BYTES if device is not None and device.type == "cuda" else CHUNK_BYTES
    return max(1, min(samples, max(16, budget // max(per_sample_bytes, 1))))


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
    mode: str = "auto",
    project: torch.Tensor | None = None,
) -> tuple[Sampler, list[str]]:
    """A sampler of M independent runs with the interface (and draws) of
    :func:`~verify.estimators.sampling.estimator_sampler`.

    ``sampler(m, rng)`` returns one (m, ·) tensor per name, in the order of ``names``: the
    gradient estimates at ``steps``, the total Σ_t g̃_t, the influence estimates at ``steps``
    (flattened (*B, n, p)). ``chunk`` overrides the samples per chunk; ``mode`` ("auto",
    "dense", "factored") how θ̃ is held; ``project`` (p, K): return Qᵀ g̃ (m, K) instead of the
    p-vectors (UORO's gradients and total; the (m, p) rows are never formed beyond a chunk).
    Raises :class:`InvalidArgument` where :func:`supports` says no.
    """
    why = supports(estimator, problem)
    if why is not None:
        raise InvalidArgument("estimator", getattr(estimator, "name", type(estimator).__name__), why)
    theta = problem.check_theta(theta).detach()
    ts, qs = _check(steps, quantities, problem.T)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise InvalidArgument("chunk", chunk, "must be an integer >= 1")
    if project is not None:
        if not isinstance(estimator, UORO) or "influence" in qs:
            raise InvalidArgument("project", "a projection", "projects UORO's gradients and total only")
        if project.dim() != 2 or project.shape[0] != problem.p:
            raise InvalidArgument("project", f"tensor of shape {tuple(project.shape)}", f"expected (p={problem.p}, K)")
        project = project.to(dtype=problem.dtype, device=problem.device)
    if isinstance(estimator, UORO):
        return _UOROSampler(estimator, problem, theta, ts, qs, chunk, mode, project), _names(ts, qs)
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

    def write_estimate(self, X: torch.Tensor | None, delta_theta: torch.Tensor | None, out: torch.Tensor) -> None:
        """``out`` (K, p) = layout(X) + δθ, every entry written once (X None: zero cell part; δθ None: no δθ)."""
        cell = self.b.stop  # the cell blocks come first in θ's layout, the readout after them
        if X is None:
            out[:, :cell].zero_()
        else:
            self.write(X, out)
        if delta_theta is None:
            out[:, cell:].zero_()
        else:
            out[:, cell:].copy_(delta_theta[cell:].expand(out.shape[0], -1))
            out[:, :cell].add_(delta_theta[:cell])

    def write_rows(self, X: torch.Tensor, out: torch.Tensor) -> None:
        """Internal (K, N, G, A) -> (K, N, p) in θ's layout (readout columns zero)."""
        K, N, G, H, d = X.shape[0], X.shape[1], self.G, self.H, self.d
        out[..., self.b.stop :].zero_()  # the readout columns; the cell blocks (first in θ's layout) are written below
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
    """What the reduction at the end of a block needs: the block's linearizations and feature rows."""

    lins: list[Linearization]
    FW: torch.Tensor  #: (L, H)
    FU: torch.Tensor  #: (L, d+1)
    F: torch.Tensor  #: (L, A) = [FW | FU]
    gram_W: torch.Tensor  #: FW FWᵀ (L, L)
    gram_U: torch.Tensor  #: FU FUᵀ
    gram_F: torch.Tensor  #: F Fᵀ
    first: int  #: index of its first rank-1 term in the run's list of terms


@dataclass
class _Terms:
    """Every rank-1 term g_j ⊗ F_j that the run's reductions add to Θ: shared feature rows and their Grams."""

    FW: torch.Tensor  #: (J, H)
    FU: torch.Tensor  #: (J, d+1)
    F: torch.Tensor  #: (J, A)
    gram_W: torch.Tensor  #: (J, J)
    gram_U: torch.Tensor
    gram_F: torch.Tensor
    step: list[int]  #: the step t whose reduction adds term j


class _Dense:
    r"""θ̃ = c Θ with Θ (k, r, G, A) materialized; the total Σ_t κ_t Θ_{t-1} accumulated as it goes."""

    def __init__(self, smp: _UOROSampler, kmax: int) -> None:
        lay, r = smp.lay, smp.est.rank
        self.smp, self.G, self.A, self.H = smp, lay.G, lay.A, lay.H
        self.Th = torch.zeros(kmax, r, lay.G, lay.A, dtype=smp.P.dtype, device=smp.P.device)
        self.tot = torch.zeros(kmax, lay.G * lay.A, dtype=smp.P.dtype, device=smp.P.device)

    def start(self, k: int) -> None:
        self.k = k
        self.Th[:k].zero_()
        self.tot[:k].zero_()

    def kappa(self, t: int, kap: torch.Tensor) -> None:
        """tot += Σ_r κ_r Θ_r (before the reduction of step t)."""
        k, Th2 = self.k, self.Th[: self.k].view(self.k, kap.shape[1], -1)
        tot = self.tot[:k]
        if kap.shape[1] == 1:
            tot.addcmul_(Th2[:, 0], kap)
        else:
            tot.unsqueeze(1).baddbmm_(kap.unsqueeze(1), Th2)

    def estimate(self, kap: torch.Tensor) -> torch.Tensor:
        """Σ_r κ_r Θ_r, (k, G, A)."""
        k = self.k
        Th2 = self.Th[:k].view(k, kap.shape[1], -1)
        return torch.bmm(kap.unsqueeze(1), Th2).view(k, self.G, self.A)

    def norm(self) -> torch.Tensor:
        k = self.k
        out: torch.Tensor = torch.linalg.vector_norm(self.Th[:k].view(k, self.Th.shape[1], -1), dim=-1)
        return out

    def add(self, red: _Reduction, gW: torch.Tensor, gU: torch.Tensor, f: torch.Tensor, gru: bool) -> None:
        """Θ += f Σ_l g_l ⊗ F_l: one in-place GEMM (two for the GRU) over the chunk."""
        K = gW.shape[0]
        Th2 = self.Th[: self.k].view(K * self.G, self.A)
        gWt = (gW * f.view(K, 1, 1)).transpose(1, 2).reshape(K * self.G, -1)
        if gru:
            gUt = (gU * f.view(K, 1, 1)).transpose(1, 2).reshape(K * self.G, -1)
            Th2[:, : self.H].addmm_(gWt, red.FW)
            Th2[:, self.H :].addmm_(gUt, red.FU)
        else:
            Th2.addmm_(gWt, red.F)

    def rescale(self, mult: torch.Tensor) -> None:
        self.Th[: self.k].mul_(mult.view(self.k, -1, 1, 1))

    def theta(self) -> torch.Tensor:
        return self.Th[: self.k]

    def total(self) -> torch.Tensor:
        return self.tot[: self.k].view(self.k, self.G, self.A)


class _Factored:
    r"""θ̃ = c Θ with Θ = Σ_j f_j g_j ⊗ F_j kept as its rank-1 terms (per sample: J×G, not G×A).

    The terms' feature rows F_j are shared by the samples (:class:`_Terms`), so
    ‖Θ‖² = Σ_{j,l} f_j f_l (g_j·g_l)(F_j·F_l) is updated in O(J·G) per new term, the
    per-step estimate Σ_r κ_r Θ_r and the total Σ_t κ_t Θ_{t-1} = Σ_j (Σ_{t > t_j} κ_t) f_j g_j ⊗ F_j
    are single GEMMs, formed only when an output needs them: no pass over a p-vector per step.
    """

    def __init__(self, smp: _UOROSampler, kmax: int) -> None:
        lay, r, terms = smp.lay, smp.est.rank, smp.terms
        assert terms is not None
        self.smp, self.G, self.A, self.H, self.r, self.terms = smp, lay.G, lay.A, lay.H, r, terms
        J = terms.F.shape[0]
        dt, dev = smp.P.dtype, smp.P.device
        self.gW = torch.zeros(kmax, r, J, lay.G, dtype=dt, device=dev)
        self.gU = torch.zeros(kmax, r, J, lay.G, dtype=dt, device=dev) if smp.gru else self.gW
        self.f = torch.zeros(kmax, r, J, dtype=dt, device=dev)
        self.nrm2 = torch.zeros(kmax, r, dtype=dt, device=dev)
        self.kap = torch.zeros(kmax, r, smp.last + 1, dtype=dt, device=dev)
        self.tau = torch.tensor(terms.step, device=dev, dtype=torch.long)  # term j is in Θ_{t-1} for t > tau_j
        self.kmax = kmax
        self._buf: torch.Tensor | None = None  # (kmax, G, A): outputs in the internal layout, allocated on demand
        self.QF: tuple[torch.Tensor, torch.Tensor] | None = None
        if smp._q_int is not None:  # projected outputs: QF_j = Σ_a F_j[a] Q_int[:, a, :], (J, G, K) per part
            qi = smp._q_int.view(lay.G, lay.A, -1)
            self.QF = (
                torch.einsum("ja,gak->jgk", terms.FW, qi[:, : lay.H]),
                torch.einsum("ja,gak->jgk", terms.FU, qi[:, lay.H :]),
            )

    @property
    def buf(self) -> torch.Tensor:
        if self._buf is None:
            self._buf = torch.zeros(self.kmax, self.G, self.A, dtype=self.f.dtype, device=self.f.device)
        return self._buf

    def combine_projected(self, w: torch.Tensor) -> torch.Tensor:
        """Qᵀ layout(Σ_r Σ_j w_{r,j} g_{r,j} ⊗ F_j) for weights w (k, r, J): (k, K), without the (k, G, A) array."""
        assert self.QF is not None
        k, J = self.k, self.J
        out = torch.einsum("krjg,jgq->kq", self.gW[:k, :, :J] * w.unsqueeze(-1), self.QF[0][:J])
        return out.add_(torch.einsum("krjg,jgq->kq", self.gU[:k, :, :J] * w.unsqueeze(-1), self.QF[1][:J]))

    def total_weights(self) -> torch.Tensor:
        """w_j = f_j Σ_{t > t_j} κ_t (k, r, J): the total Σ_t κ_t Θ_{t-1} = Σ_j w_j g_j ⊗ F_j."""
        k, J = self.k, self.J
        sfx = self.kap[:k].flip(-1).cumsum(-1).flip(-1)  # sfx[..., i] = Σ_{t > i} κ_t (κ_t stored at t-1; last slot 0)
        return sfx[:, :, self.tau[:J]] * self.f[:k, :, :J]

    def start(self, k: int) -> None:
        self.k, self.J = k, 0
        self.f[:k].zero_()
        self.nrm2[:k].zero_()
        self.kap[:k].zero_()

    def kappa(self, t: int, kap: torch.Tensor) -> None:
        self.kap[: self.k, :, t - 1] = kap

    def _combine(self, w: torch.Tensor) -> torch.Tensor:
        """Σ_r Σ_{j<J} w_{r,j} g_{r,j} ⊗ F_j for weights w (k, r, J): (k, G, A)."""
        k, J, G, r = self.k, self.J, self.G, self.r
        terms = self.terms
        FWr = terms.FW[:J].repeat(r, 1)
        out = self.buf[:k]

        def part(g: torch.Tensor, F: torch.Tensor, dst: torch.Tensor) -> None:
            y = (g[:k, :, :J] * w.unsqueeze(-1)).permute(0, 3, 1, 2).reshape(k * G, r * J)
            if dst.is_contiguous():
                torch.mm(y, F, out=dst.view(k * G, -1))
            else:
                dst.copy_((y @ F).view(k, G, -1))

        if self.smp.gru:
            part(self.gW, FWr, out[..., : self.H])
            part(self.gU, terms.FU[:J].repeat(r, 1), out[..., self.H :])
        else:
            part(self.gW, terms.F[:J].repeat(r, 1), out)
        return out

    def estimate(self, kap: torch.Tensor) -> torch.Tensor:
        return self._combine(self.f[: self.k, :, : self.J] * kap.unsqueeze(-1))

    def norm(self) -> torch.Tensor:
        return self.nrm2[: self.k].clamp(min=0).sqrt()

    def add(self, red: _Reduction, gW: torch.Tensor, gU: torch.Tensor, f: torch.Tensor, gru: bool) -> None:
        """Append the reduction's L terms (scaled by f) and update ‖Θ‖² from the Grams."""
        k, r, J0 = self.k, self.r, self.J
        L = gW.shape[1]
        K = k * r
        terms = self.terms
        f2 = f.view(k, r)
        parts = [(self.gW, gW, terms.gram_W if gru else terms.gram_F)]
        if gru:
            parts.append((self.gU, gU, terms.gram_U))
        cross = torch.zeros(k, r, dtype=gW.dtype, device=gW.device)
        own = torch.zeros(k, r, dtype=gW.dtype, device=gW.device)
        for hist, new, gram in parts:
            new3 = new.view(K, L, -1)
            if J0:
                D = torch.bmm(hist[:k, :, :J0].reshape(K, J0, -1), new3.transpose(1, 2))  # (K, J0, L): g_j · g_l
                cross += ((D * gram[:J0, J0 : J0 + L]).sum(-1).view(k, r, J0) * self.f[:k, :, :J0]).sum(-1)
            E = torch.bmm(new3, new3.transpose(1, 2))  # (K, L, L)
            own += (E * gram[J0 : J0 + L, J0 : J0 + L]).sum((-1, -2)).view(k, r)
            hist[:k, :, J0 : J0 + L] = new3.view(k, r, L, -1)
        self.nrm2[:k] += 2 * f2 * cross + f2 * f2 * own
        self.f[:k, :, J0 : J0 + L] = f2.unsqueeze(-1)
        self.J = J0 + L

    def rescale(self, mult: torch.Tensor) -> None:
        """Θ *= mult (c /= mult): the recorded κ, which multiplied the old Θ, are divided by it."""
        k = self.k
        self.f[:k].mul_(mult.unsqueeze(-1))
        self.nrm2[:k].mul_(mult * mult)
        self.kap[:k].div_(mult.unsqueeze(-1))

    def theta(self) -> torch.Tensor:
        k, r, J, G = self.k, self.r, self.J, self.G
        out = torch.empty(k, r, G, self.A, dtype=self.f.dtype, device=self.f.device)
        terms = self.terms

        def part(g: torch.Tensor, F: torch.Tensor, dst: torch.Tensor) -> None:
            y = (g[:k, :, :J] * self.f[:k, :, :J].unsqueeze(-1)).transpose(2, 3)  # (k, r, G, J)
            dst.copy_(y @ F)

        if self.smp.gru:
            part(self.gW, terms.FW[:J], out[..., : self.H])
            part(self.gU, terms.FU[:J], out[..., self.H :])
        else:
            part(self.gW, terms.F[:J], out)
        return out

    def total(self) -> torch.Tensor:
        if self.J == 0:
            return self.buf[: self.k].zero_()
        return self._combine(self.total_weights())


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
        mode: str = "auto",
        project: torch.Tensor | None = None,
    ) -> None:
        self.est, self.P, self.steps, self.q, self.chunk = est, problem, steps, quantities, chunk
        self.project = project
        self.last = problem.T if "total" in quantities else max(steps)
        self.nb, self.n = batch_numel(problem), problem.n
        self.N = self.nb * self.n
        self._shared(problem, theta, est.block)
        self.gru = type(problem.cell).__name__ == "GRUCell"
        self.paper = est.rho0 is paper_rho0 and est.rho1 is paper_rho1
        # lazy-scale range: R = min(_RESCALE, max^(1/4)); checked every k reductions with 1e7^k · R < max^(1/2)
        fmax = torch.finfo(problem.dtype).max
        self.rescale = min(_RESCALE, fmax**0.25)
        self.check_every = _CHECK_EVERY or max(1, int((math.log(fmax) / 2 - math.log(self.rescale)) // math.log(1e7)))
        J = 0 if self.terms is None else self.terms.F.shape[0]
        if mode == "auto":  # the factored form when its per-sample history is smaller than Θ
            mode = "factored" if 0 < J * (2 if self.gru else 1) <= self.lay.A else "dense"
        if mode not in ("dense", "factored") or (mode == "factored" and J == 0):
            raise InvalidArgument("mode", mode, "must be 'auto', 'dense' or 'factored' (factored needs a reduction)")
        self.mode = mode
        self._reps: dict[int, _Dense | _Factored] = {}
        self._q_int: torch.Tensor | None = None
        if project is not None:  # Q's cell rows in the internal (G, A) layout
            self._q_int = self._internal_projection(project)

    def _shared(self, problem: Problem, theta: torch.Tensor, Tb: int) -> None:
        """What every run shares: the trajectory, its linearizations, δs and δθ, the reductions' feature Grams."""
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
            self.delta_theta_sum = torch.stack(self.delta_theta).sum(0)
            self.lay = _Layout.of(problem, self.lins[0])
            self.reductions: dict[int, _Reduction] = {}
            rows: list[tuple[torch.Tensor, torch.Tensor, int]] = []
            for t in range(Tb, self.last + 1, Tb):
                block = self.lins[t - Tb : t]
                FW, FU = _features(block)
                F = torch.cat([FW, FU], dim=-1)
                self.reductions[t] = _Reduction(block, FW, FU, F, FW @ FW.T, FU @ FU.T, F @ F.T, len(rows))
                rows += [(FW[i], FU[i], t) for i in range(FW.shape[0])]
            self.terms: _Terms | None = None
            if rows:
                FWa = torch.stack([r_[0] for r_ in rows])
                FUa = torch.stack([r_[1] for r_ in rows])
                Fa = torch.cat([FWa, FUa], dim=-1)
                self.terms = _Terms(FWa, FUa, Fa, FWa @ FWa.T, FUa @ FUa.T, Fa @ Fa.T, [r_[2] for r_ in rows])

    def _internal_projection(self, project: torch.Tensor) -> torch.Tensor:
        """Q's cell rows in the internal (G·A, K) layout."""
        lay, K = self.lay, project.shape[1]
        qi = torch.empty(lay.G, lay.A, K, dtype=project.dtype, device=project.device)
        qi[:, : lay.H] = project[lay.W].view(lay.G, lay.H, K)
        qi[:, lay.H : lay.H + lay.d] = project[lay.U].view(lay.G, lay.d, K)
        qi[:, lay.H + lay.d] = project[lay.b]
        return qi.view(lay.G * lay.A, K)

    # ------------------------------------------------------------------ buffers
    def per_sample_bytes(self) -> int:
        lay, r = self.lay, self.est.rank
        item = torch.empty((), dtype=self.P.dtype).element_size()
        small = 6 * r * self.N + 4 * r
        if self.mode == "dense":
            return item * (r * lay.G * lay.A + lay.G * lay.A + small)
        assert self.terms is not None
        J = self.terms.F.shape[0]
        return item * ((2 if self.gru else 1) * r * J * lay.G + r * (J + self.last) + small)

    def _state(self, kmax: int) -> tuple[dict[str, torch.Tensor], _Dense | _Factored]:
        rep = self._reps.get(kmax)
        if rep is None:
            rep = _Dense(self, kmax) if self.mode == "dense" else _Factored(self, kmax)
            self._reps = {kmax: rep}  # one set of buffers, reused from call to call
        return self._small(kmax), rep

    def _small(self, kmax: int) -> dict[str, torch.Tensor]:
        r, dt, dev = self.est.rank, self.P.dtype, self.P.device
        return {
            "S": torch.zeros(kmax, r, self.N, dtype=dt, device=dev),
            "c": torch.ones(kmax, r, dtype=dt, device=dev),
            "p0": torch.ones(kmax, r, dtype=dt, device=dev),
            "p1": torch.ones(kmax, r, dtype=dt, device=dev),
        }

    # ------------------------------------------------------------------ driver
    def __call__(self, m: int, rng: torch.Generator) -> list[torch.Tensor]:
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidArgument("m", m, "need at least one draw")
        return self._run(m, rng, None)

    def predraws(self, m: int) -> bool:
        """Whether a call of ``m`` draws its whole noise table first (else it draws in the time-outer loop)."""
        item = torch.empty((), dtype=self.P.dtype).element_size()
        return (self.last // self.est.block) * m * self.est.rank * self.N * item <= PREDRAW_BYTES

    def noise_tables(self, m: int, rng: torch.Generator) -> list[torch.Tensor]:
        """The noise a call ``self(m, rng)`` that :meth:`predraws` draws first, drawn now the same way."""
        return _draw_all(self.est, self.P, rng, m, self.last // self.est.block)

    def run_drawn(self, tables: Sequence[list[torch.Tensor]]) -> list[torch.Tensor]:
        """The draws of the calls whose noise tables are ``tables`` (:meth:`noise_tables`), stepped in one pass; rows
        in call order. A call's runs are independent given their noise, so this equals the calls one by one."""
        rows, nus = _joined(tables)
        return self._run(rows, None, nus)

    def draw_calls(self, sizes: Sequence[int], rng: torch.Generator) -> list[torch.Tensor]:
        """The draws of the calls ``self(m, rng)`` for ``m`` in ``sizes``, one after the other, stepped together.

        Each call's noise is drawn as that call draws it (the same generator, in the same order, ``noise.draw``
        called once per call and reduction), so a noise that shares randomness within a call shares it here within
        that call's rows only; the runs are then independent given their noise and are stepped in one pass (issue
        42: the engine's split into calls costs one pass, not one per call). Rows in call order.
        """
        return _calls_together(self, sizes, rng)

    def _run(self, m: int, rng: torch.Generator | None, nus: list[torch.Tensor] | None) -> list[torch.Tensor]:
        P, est = self.P, self.est
        draws = self.last // est.block
        width = P.p if self.project is None else self.project.shape[1]
        out_g = (
            {t: torch.empty(m, width, dtype=P.dtype, device=P.device) for t in self.steps}
            if "gradient" in self.q
            else {}
        )
        out_tot = torch.empty(m, width, dtype=P.dtype, device=P.device) if "total" in self.q else None
        out_inf = (
            {t: torch.empty(m, self.N, P.p, dtype=P.dtype, device=P.device) for t in self.steps}
            if "influence" in self.q
            else {}
        )
        mc = m if not self.paper else (self.chunk or default_chunk(self.per_sample_bytes(), m, P.device))
        mc = min(mc, m)
        if nus is not None or self.predraws(m):
            if nus is None:
                assert rng is not None
                nus = _draw_all(est, P, rng, m, draws)
            small, rep = self._state(mc)
            for lo in range(0, m, mc):
                hi = min(m, lo + mc)
                self._start(small, rep, hi - lo)
                for t in range(1, self.last + 1):
                    nu = nus[t // est.block - 1][lo:hi] if t % est.block == 0 else None
                    self._step(small, rep, lo, t, nu, out_g, out_inf)
                self._finish(rep, lo, out_tot)
        else:  # time-outer: one noise draw per reduction for all m, as step() does
            states = []
            for lo in range(0, m, mc):
                hi = min(m, lo + mc)
                rep_i = _Dense(self, hi - lo) if self.mode == "dense" else _Factored(self, hi - lo)
                small_i = self._small(hi - lo)
                self._start(small_i, rep_i, hi - lo)
                states.append((lo, small_i, rep_i))
            prev = torch.zeros((m, *est.noise_shape(P)), dtype=P.dtype, device=P.device)
            assert rng is not None  # run_drawn passes the noise: only a call draws here
            for t in range(1, self.last + 1):
                nu_all = None
                if t % est.block == 0:
                    nu_all = est.noise.draw(rng, tuple(prev.shape), P.dtype, P.device, t // est.block - 1, prev)
                    if tuple(nu_all.shape) != tuple(prev.shape):
                        raise InvalidArgument(
                            "noise.draw(...)", f"shape {tuple(nu_all.shape)}", f"expected {tuple(prev.shape)}"
                        )
                    prev = nu_all
                for lo, small_i, rep_i in states:
                    nu = None if nu_all is None else nu_all[lo : lo + rep_i.k]
                    self._step(small_i, rep_i, lo, t, nu, out_g, out_inf)
            for lo, _, rep_i in states:
                self._finish(rep_i, lo, out_tot)
        out: list[torch.Tensor] = []
        out += [out_g[t] for t in self.steps] if out_g else []
        if out_tot is not None:
            out.append(out_tot)
        out += [out_inf[t].reshape(m, -1) for t in self.steps] if out_inf else []
        return out

    def _start(self, small: dict[str, torch.Tensor], rep: _Dense | _Factored, k: int) -> None:
        small["S"][:k].zero_()
        for key in ("c", "p0", "p1"):
            small[key][:k].fill_(1.0)
        rep.start(k)

    def _emit(self, X: torch.Tensor | None, dth: torch.Tensor | None, out: torch.Tensor, lo: int, k: int) -> None:
        """Write an estimate (internal X + δθ) into rows lo..lo+k of ``out``: in θ's layout, or projected on Q.

        Projected: Qᵀ(layout(X) + δθ) = X·Q_int + Qᵀδθ with Q's cell rows laid out as (G·A, K): the
        (k, p) rows are never formed.
        """
        if self.project is None:
            self.lay.write_estimate(X, dth, out[lo : lo + k])
            return
        assert self._q_int is not None
        dst = out[lo : lo + k]
        if X is None:
            dst.zero_()
        else:
            torch.mm(X.reshape(k, -1), self._q_int, out=dst)
        if dth is not None:
            dst.add_(dth @ self.project)

    def _finish(self, rep: _Dense | _Factored, lo: int, out_tot: torch.Tensor | None) -> None:
        if out_tot is None:
            return
        dth = self.delta_theta_sum if self.est.include_delta_theta else None
        if isinstance(rep, _Factored) and rep.QF is not None:
            self._emit_projected(rep.combine_projected(rep.total_weights()), dth, out_tot, lo, rep.k)
        else:
            self._emit(rep.total(), dth, out_tot, lo, rep.k)

    def _emit_projected(self, y: torch.Tensor, dth: torch.Tensor | None, out: torch.Tensor, lo: int, k: int) -> None:
        dst = out[lo : lo + k]
        dst.copy_(y)
        if dth is not None:
            assert self.project is not None
            dst.add_(dth @ self.project)

    # ------------------------------------------------------------------ one step
    def _step(
        self,
        small: dict[str, torch.Tensor],
        rep: _Dense | _Factored,
        lo: int,
        t: int,
        nu: torch.Tensor | None,
        out_g: dict[int, torch.Tensor],
        out_inf: dict[int, torch.Tensor],
    ) -> None:
        est, lay, k = self.est, self.lay, rep.k
        want_g = t in out_g
        # g̃_t = (1/r) Σ_pairs (δs_t · s̃) θ̃ + δθ_t,   θ̃ = c Θ   (Algorithm 1, eq. (7)); θ̃ = 0 before the first reduction
        if t > est.block and ("total" in self.q or want_g):
            kap = (small["S"][:k] @ self.delta_s[t - 1]).mul_(small["c"][:k]).div_(est.rank)  # (k, r)
            if "total" in self.q:
                rep.kappa(t, kap)
            if want_g:
                dth = self.delta_theta[t - 1] if est.include_delta_theta else None
                if isinstance(rep, _Factored) and rep.QF is not None:
                    w = rep.f[:k, :, : rep.J] * kap.unsqueeze(-1)
                    self._emit_projected(rep.combine_projected(w), dth, out_g[t], lo, k)
                else:
                    self._emit(rep.estimate(kap), dth, out_g[t], lo, k)
        elif want_g:
            dth = self.delta_theta[t - 1] if est.include_delta_theta else None
            self._emit(None, dth, out_g[t], lo, k)
        if nu is not None:
            self._reduce(small, rep, t, nu)
        if t in out_inf:
            X = torch.einsum("mri,mrga->miga", small["S"][:k] * (small["c"][:k] / est.rank).unsqueeze(-1), rep.theta())
            lay.write_rows(X, out_inf[t][lo : lo + k])

    def _reduce(self, small: dict[str, torch.Tensor], rep: _Dense | _Factored, t: int, nu: torch.Tensor) -> None:
        est = self.est
        r, nb, n, eps, k = est.rank, self.nb, self.n, est.eps, rep.k
        red = self.reductions[t]
        S, c = small["S"][:k], small["c"][:k]
        K = k * r
        # (_, δθ_g) <- F_state.backprop(νᵀ): preactivation cotangents of every step of the block
        gWs, gUs = [], []
        U: torch.Tensor | None = nu.reshape(K, nb, n)
        for j, lin in enumerate(reversed(red.lins)):
            assert U is not None
            U, gW_j, gU_j = lin.vjp(U, state=j < len(red.lins) - 1)
            gWs.append(gW_j)
            gUs.append(gU_j)
        gW = gWs[0] if len(gWs) == 1 else torch.cat(gWs[::-1], dim=1)  # (K, L, G), rows in the order of red.F
        gU = gW if not self.gru else (gUs[0] if len(gUs) == 1 else torch.cat(gUs[::-1], dim=1))
        # s̃ <- F_state.forwarddiff(s̃)   (eq. (1))
        V = S.reshape(K, nb, n)
        for lin in red.lins:
            V = lin.jvp_state(V)
        s_fwd = V.reshape(k, r, self.N)
        # norms of Algorithm 1: ‖θ̃‖ = |c| ‖Θ‖, ‖νᵀ∂F/∂θ‖ from the L×L Grams (never the p-vector)
        n_theta = rep.norm().mul_(c.abs())
        n_fwd = torch.linalg.vector_norm(s_fwd, dim=-1)
        n_nu = torch.linalg.vector_norm(nu.reshape(k, r, -1), dim=-1)
        n_g = self._theta_cotangent_norm(red, gW, gU).view(k, r)
        paper0 = torch.sqrt(n_theta / (n_fwd + eps)) + eps  # Algorithm 1, ρ0
        paper1 = torch.sqrt(n_g / (n_nu + eps)) + eps  # Algorithm 1, ρ1
        if self.paper:
            rho0, rho1 = paper0, paper1
        else:
            rho0, rho1 = self._rules(small, rep, t, nu, s_fwd, gW, gU, red)
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
        rep.add(red, gW, gU, est.theta_tilde_scale / (r1_t * c_new), self.gru)
        c.copy_(c_new)
        small["p0"][:k].copy_(paper0)
        small["p1"][:k].copy_(paper1)
        # fold the scale back into Θ when c leaves [1/R, R] (rare). 1/ρ0 ≤ 1/ε = 1e7 per reduction, so
        # checking every few reductions keeps c far inside the dtype's range (and saves a host sync)
        if (t // est.block) % self.check_every:
            return
        self._fold_scale(rep, c)

    def _theta_cotangent_norm(self, red: _Reduction, gW: torch.Tensor, gU: torch.Tensor) -> torch.Tensor:
        """‖νᵀ∂F/∂θ‖ per run from the L×L feature Grams (the p-vector is never formed)."""
        if gW.shape[1] == 1:  # one rank-1 term: ‖g ⊗ F‖² = ‖g‖² ‖F‖²
            sq = (gW * gW).sum((1, 2)).mul_(red.gram_W[0, 0] if self.gru else red.gram_F[0, 0])
            if self.gru:
                sq.add_((gU * gU).sum((1, 2)).mul_(red.gram_U[0, 0]))
        elif self.gru:
            sq = ((red.gram_W @ gW) * gW).sum((1, 2)) + ((red.gram_U @ gU) * gU).sum((1, 2))
        else:
            sq = ((red.gram_F @ gW) * gW).sum((1, 2))
        return sq.clamp_(min=0).sqrt_()

    def _fold_scale(self, rep: _Dense | _Factored, c: torch.Tensor) -> None:
        """Fold c into Θ for the runs whose c left [1/R, R]."""
        a = c.abs()
        big = (a > self.rescale) | (a < 1 / self.rescale)
        if bool(big.any()):
            rep.rescale(torch.where(big, c, torch.ones_like(c)))
            c.copy_(torch.where(big, torch.ones_like(c), c))

    def _rules(
        self,
        small: dict[str, torch.Tensor],
        rep: _Dense | _Factored,
        t: int,
        nu: torch.Tensor,
        s_fwd: torch.Tensor,
        gW: torch.Tensor,
        gU: torch.Tensor,
        red: _Reduction,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A non-paper normalizer rule: :class:`NormalizerInputs` materialized as ``step`` builds them."""
        est, lay, P, k = self.est, self.lay, self.P, rep.k
        r, K = est.rank, k * est.rank
        B = P.batch_shape
        theta_tilde = torch.zeros(K, P.p, dtype=P.dtype, device=P.device)
        lay.write((rep.theta() * small["c"][:k].view(k, r, 1, 1)).reshape(K, lay.G, lay.A), theta_tilde)
        if self.gru:
            D = torch.cat([gW.transpose(1, 2) @ red.FW, gU.transpose(1, 2) @ red.FU], dim=-1)
        else:
            D = gW.transpose(1, 2) @ red.F
        dthg = torch.zeros(K, P.p, dtype=P.dtype, device=P.device)
        lay.write(D, dthg)
        z = NormalizerInputs(
            theta_tilde=theta_tilde.view(k, r, P.p),
            s_forward=s_fwd.reshape(k, r, *B, self.n),
            nu=nu.reshape(k, r, *B, self.n),
            delta_theta_g=dthg.view(k, r, P.p),
            prev_rho0=small["p0"][:k].clone(),
            prev_rho1=small["p1"][:k].clone(),
            eps=est.eps,
            reduction=t // est.block - 1,
        )
        rho0 = _check_rho("rho0", est.rho0(z), (k, r))
        rho1 = _check_rho("rho1", est.rho1(z), (k, r))
        return rho0, rho1


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
        return self._run(m, self.noise_tables(m, rng))  # one τ (m, r) per step, as step() draws them

    def predraws(self, m: int) -> bool:
        """Always: a call draws its τ table first."""
        return True

    def noise_tables(self, m: int, rng: torch.Generator) -> list[torch.Tensor]:
        """The τ a call ``self(m, rng)`` draws first, drawn now the same way."""
        return _draw_all(self.est, self.P, rng, m, self.last)

    def run_drawn(self, tables: Sequence[list[torch.Tensor]]) -> list[torch.Tensor]:
        """As :meth:`_UOROSampler.run_drawn`."""
        return self._run(*_joined(tables))

    def draw_calls(self, sizes: Sequence[int], rng: torch.Generator) -> list[torch.Tensor]:
        """As :meth:`_UOROSampler.draw_calls`."""
        return _calls_together(self, sizes, rng)

    def _run(self, m: int, taus: list[torch.Tensor]) -> list[torch.Tensor]:
        P, est, lay = self.P, self.est, self.lay
        r, nb, n, A = est.rank, self.nb, self.n, lay.A
        out_g = (
            {t: torch.empty(m, P.p, dtype=P.dtype, device=P.device) for t in self.steps} if "gradient" in self.q else {}
        )
        out_tot = torch.zeros(m, P.p, dtype=P.dtype, device=P.device) if "total" in self.q else None
        out_inf = (
            {t: torch.empty(m, nb * n, P.p, dtype=P.dtype, device=P.device) for t in self.steps}
            if "influence" in self.q
            else {}
        )
        mc = min(m, self.chunk or default_chunk(self.per_sample_bytes(), m, P.device))
        for lo in range(0, m, mc):
            hi = min(m, lo + mc)
            k = hi - lo
            H = torch.zeros(k, r, nb, n, n, dtype=P.dtype, device=P.device)
            a = torch.zeros(k, r, nb, A, dtype=P.dtype, device=P.device)
            tot = torch.zeros(k, n, A, dtype=P.dtype, device=P.device) if out_tot is not None else None
            for t in range(1, self.last + 1):
                if tot is not None or t in out_g:
                    self._estimate(t, H, a, tot, out_g[t][lo:hi] if t in out_g else None)
                H, a = self._advance(t, H, a, taus[t - 1][lo:hi])
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

    def _estimate(
        self, t: int, H: torch.Tensor, a: torch.Tensor, tot: torch.Tensor | None, rows: torch.Tensor | None
    ) -> None:
        """Add g̃_t - δθ_t into ``tot`` (internal layout) and write g̃_t into ``rows`` (θ's layout)."""
        r = self.est.rank
        # g̃_t = vec((δs H̃_{t-1})ᵀ ã_{t-1}ᵀ) + δθ, averaged over pairs, summed over the batch
        u = torch.einsum("bi,mrbij->mrbj", self.delta_s[t - 1], H)
        G = torch.einsum("mrbj,mrbk->mjk", u, a).div_(r)
        if tot is not None:
            tot.add_(G)
        if rows is not None:
            rows.zero_()
            self.lay.write(G, rows)
            rows.add_(self.delta_theta[t - 1])

    def _advance(
        self, t: int, H: torch.Tensor, a: torch.Tensor, tau: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of the recursion with noise τ (k, r): H̃ <- γ J H̃ + β τ J^{s_t}_{p_t}, ã <- ã / γ + τ a_t / β."""
        eps = self.est.eps
        k, r = tau.shape[0], self.est.rank
        dphi, a_t = self.dphi[t - 1], self.a[t - 1]
        JH = torch.matmul(self.W, H).mul_(dphi.unsqueeze(-1))  # J^{s_t}_{s_{t-1}} H̃_{t-1}
        gamma = (
            torch.sqrt(
                torch.linalg.vector_norm(a.flatten(2), dim=-1) / (torch.linalg.vector_norm(JH.flatten(2), dim=-1) + eps)
            )
            + eps
        )
        ta = tau.abs()
        beta = torch.sqrt(ta * self.anorm[t - 1] / (ta * self.dnorm[t - 1] + eps)) + eps
        H = JH.mul_(gamma.view(k, r, 1, 1, 1))
        H.diagonal(dim1=-2, dim2=-1).add_((beta * tau).view(k, r, 1, 1) * dphi)  # + β τ J^{s_t}_{p_t}
        a = a.div_(gamma.view(k, r, 1, 1)).add_((tau / beta).view(k, r, 1, 1) * a_t)
        return H, a


def _joined(tables: Sequence[list[torch.Tensor]]) -> tuple[int, list[torch.Tensor]]:
    """Several calls' noise tables as one: (rows, the tables concatenated in call order)."""
    if not tables:
        raise InvalidArgument("tables", "[]", "need the noise tables of at least one call")
    rows = sum(int(t[0].shape[0]) for t in tables)
    return rows, [torch.cat([t[i] for t in tables]) for i in range(len(tables[0]))]


def _calls_together(
    smp: _UOROSampler | _PreactSampler, sizes: Sequence[int], rng: torch.Generator
) -> list[torch.Tensor]:
    """``draw_calls`` of either sampler: the calls that draw their noise first (:meth:`predraws`) are drawn call by
    call and stepped together, in passes of at most :data:`PREDRAW_BYTES` of noise; any other call runs alone."""
    sizes = [int(m) for m in sizes]
    if not sizes or any(isinstance(m, bool) or m < 1 for m in sizes):
        raise InvalidArgument("sizes", sizes, "need at least one call of at least one draw")
    parts: list[list[torch.Tensor]] = []
    group: list[list[torch.Tensor]] = []  # the noise tables of the calls stepped in the next pass
    rows = 0
    for m in sizes:
        if group and not smp.predraws(rows + m):
            parts.append(smp.run_drawn(group))
            group, rows = [], 0
        if not smp.predraws(m):
            parts.append(smp(m, rng))
            continue
        group.append(smp.noise_tables(m, rng))
        rows += m
    if group:
        parts.append(smp.run_drawn(group))
    return parts[0] if len(parts) == 1 else [torch.cat([p[j] for p in parts]) for j in range(len(parts[0]))]


def sampler_for(
    estimator: object,
    problem: Problem,
    theta: torch.Tensor,
    *,
    steps: Sequence[int],
    quantities: Sequence[str] = ("gradient", "total"),
) -> tuple[Sampler, list[str], str]:
    """The fastest sampler with the draws of :func:`~verify.estimators.sampling.estimator_sampler`.

    Returns ``(sampler, names, how)``.

    ``how`` is ``"fused"`` where :func:`supports` says yes, else ``"step"`` (the estimator's own
    ``init``/``step``, whatever its path) -- a user's estimator, a subclass, another cell.
    """
    if supports(estimator, problem) is None:
        assert isinstance(estimator, (UORO, PreactivationUORO))
        smp, names = fused_sampler(estimator, problem, theta, steps=steps, quantities=quantities)
        return smp, names, "fused"
    smp_step, names = estimator_sampler(estimator, problem, theta, steps=steps, quantities=quantities)  # type: ignore[arg-type]
    return smp_step, names, "step"
