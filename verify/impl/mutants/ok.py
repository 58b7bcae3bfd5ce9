r"""Broken OK estimators (Benzing et al. 2019, arXiv:1902.03993): a reduction that is not eq. (2)'s.

* :class:`OKTruncatedSVD` -- the plain truncated SVD (keep the r leading singular triplets, drop the
  rest): the best rank-r approximation in Frobenius norm (Eckart-Young) but **biased**, the error the
  paper's unbiased reduction exists to avoid;
* :class:`OKUnscaled` -- the random part chosen with the right probabilities but not reweighted by
  :math:`1/p_i` (each chosen triplet keeps its own σ_i): biased towards the leading terms;
* :class:`OKUniform` -- a noisier but **unbiased** reduction: every one of the k = r + 1 singular triplets is
  chosen with the same probability r/k (systematic sampling, no triplet kept exactly) and given
  its weight σ_i/p_i = σ_i·k/r. Its step variance :math:`\sum_i\sigma_i^2(k/r - 1)` is above eq. (2)'s
  minimum (equal only when all σ_i are).

They replace ``uoro.ok`` (``--impl uoro.ok=...``) in the kill table (tests/test_impl_kill_table.py). The first
two must FAIL ``uoro.ok-unbiased`` (tests/estimators/test_ok.py also requires the exact expectation, the
declared-guarantee check and, for the random one, the statistical test to tell them from exact RTRL); the third
must FAIL ``uoro.ok-variance`` and must not FAIL ``uoro.ok-unbiased`` (its exact mean is a positive control
there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.ok import OK, optimal_reduction, plan_breakpoints, sampled_reduction, spectrum
from verify.impl.mutants import Mutant

__all__ = ["MUST_NOT_FAIL", "MUTANTS", "OKTruncatedSVD", "OKUniform", "OKUnscaled"]

UNBIASED = "uoro.ok-unbiased"
VARIANCE = "uoro.ok-variance"


@dataclass(frozen=True)
class OKTruncatedSVD(OK):
    """OK reducing by the truncated SVD: the r leading triplets, deterministic and biased."""

    label: str = "ok[truncated-svd]"

    def reduce(self, us: torch.Tensor, Bs: torch.Tensor, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        S, L, R = spectrum(us, Bs)
        r = min(self.rank, S.shape[-1])
        root = torch.sqrt(S[..., :r])
        u = torch.zeros(*us.shape[:-2], self.rank, us.shape[-1], dtype=us.dtype, device=us.device)
        B = torch.zeros(*Bs.shape[:-3], self.rank, Bs.shape[-2] * Bs.shape[-1], dtype=Bs.dtype, device=Bs.device)
        u[..., :r, :] = (R[..., :r] * root[..., None, :]).transpose(-1, -2)
        B[..., :r, :] = (L[..., :r] * root[..., None, :]).transpose(-1, -2)
        return u, B.reshape(*Bs.shape[:-3], self.rank, *Bs.shape[-2:])


@dataclass(frozen=True)
class OKUnscaled(OK):
    """OK whose randomly chosen triplets keep their own σ_i instead of the weight s_1/(r − m) = σ_i/p_i."""

    label: str = "ok[unscaled]"

    def reduce(self, us: torch.Tensor, Bs: torch.Tensor, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u, B = optimal_reduction(us, Bs, self.rank, U)
        S, _, R = spectrum(us, Bs)
        # each output term's weight |u||B| replaced by the σ of the input triplet it came from (its right factor)
        src = torch.einsum("nra,nak->nrk", u, R).abs().argmax(-1)
        sig = torch.gather(S, -1, src)
        w = torch.linalg.vector_norm(u, dim=-1) * torch.linalg.vector_norm(B.flatten(-2), dim=-1)
        f = torch.sqrt(torch.where(w > 0, sig / torch.where(w > 0, w, 1.0), 0.0))
        return u * f[..., None], B * f[..., None, None]


def _uniform_plan(sigma: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every triplet (σ padded to rank + 1 entries) with probability r/K, none kept, weights σ_i/p_i."""
    K = sigma.shape[-1]
    if K < rank + 1:
        sigma = torch.nn.functional.pad(sigma, (0, rank + 1 - K))
    p = torch.full_like(sigma, rank / sigma.shape[-1])
    m = torch.zeros(sigma.shape[:-1], dtype=torch.int64, device=sigma.device)
    return sigma, m, p, sigma / p


@dataclass(frozen=True)
class OKUniform(OK):
    """OK sampling the triplets uniformly (probability r/k each, weight σ_i/p_i): unbiased, noisier than eq. (2)."""

    label: str = "ok[uniform]"

    def reduce(self, us: torch.Tensor, Bs: torch.Tensor, U: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return sampled_reduction(us, Bs, self.rank, U, _uniform_plan)

    def breakpoints(self, us: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
        return plan_breakpoints(_uniform_plan(spectrum(us, Bs)[0], self.rank)[2])


MUTANTS: tuple[Mutant, ...] = (
    Mutant("ok.truncated-svd", OKTruncatedSVD.__doc__ or "", "uoro", "ok", OKTruncatedSVD, (UNBIASED,)),
    Mutant("ok.unscaled", OKUnscaled.__doc__ or "", "uoro", "ok", OKUnscaled, (UNBIASED,)),
    Mutant("ok.uniform", OKUniform.__doc__ or "", "uoro", "ok", OKUniform, (VARIANCE,)),
)

#: unbiased mutants the unbiasedness claim must not FAIL
MUST_NOT_FAIL: dict[str, tuple[str, ...]] = {"ok.uniform": (UNBIASED,)}
