r"""Broken OK estimators (Benzing et al. 2019, arXiv:1902.03993): a reduction that is not eq. (2)'s.

* :class:`OKTruncatedSVD` -- the plain truncated SVD (keep the r leading singular triplets, drop the
  rest): the best rank-r approximation in Frobenius norm (Eckart-Young) but **biased**, the error the
  paper's unbiased reduction exists to avoid;
* :class:`OKUnscaled` -- the random part chosen with the right probabilities but not reweighted by
  :math:`1/p_i` (each chosen triplet keeps its own σ_i): biased towards the leading terms.

Not yet registered in the kill table (``MUTANTS`` is empty until a catalog claim on OK exists to catch them;
the Impl field ``uoro.ok`` they would replace exists); tests/estimators/test_ok.py requires the exact
expectation, the declared-guarantee check and (for the random one) the statistical test to tell them
from exact RTRL.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.ok import OK, optimal_reduction, spectrum

__all__ = ["MUTANTS", "OKTruncatedSVD", "OKUnscaled"]


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


#: empty until a catalog claim on OK exists (see the module docstring)
MUTANTS: tuple[()] = ()
