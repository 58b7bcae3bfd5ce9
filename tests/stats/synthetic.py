"""Synthetic estimators with known means for the soundness tests of :mod:`verify.stats`.

Every draw is ``truth + bias + A z`` with z i.i.d. of a chosen law, standardised to
mean 0 and unit variance per coordinate:

* ``gauss``   -- N(0, 1);
* ``t3``      -- multivariate Student t with 3 degrees of freedom (one χ² per draw:
  finite variance, infinite fourth moment: heavy tails in every coordinate at once);
* ``exp``     -- centred exponential (skewed, light right tail);
* ``bounded`` -- centred Bernoulli(0.1) (bounded, skewed);
* ``cauchy``  -- standard Cauchy (no mean: must never be certified).
"""

from __future__ import annotations

import math

import torch

LAWS = ("gauss", "t3", "exp", "bounded")


def noise(law: str, m: int, p: int, gen: torch.Generator) -> torch.Tensor:
    if law == "gauss":
        return torch.randn(m, p, generator=gen, dtype=torch.float64)
    if law == "t3":
        z = torch.randn(m, p, generator=gen, dtype=torch.float64)
        u = torch.randn(m, 3, generator=gen, dtype=torch.float64)
        return z / torch.sqrt((u * u).sum(1, keepdim=True) / 3) / math.sqrt(3.0)
    if law == "exp":
        return -torch.log(torch.rand(m, p, generator=gen, dtype=torch.float64)) - 1.0
    if law == "bounded":
        u = torch.rand(m, p, generator=gen, dtype=torch.float64)
        return ((u < 0.1).to(torch.float64) - 0.1) / 0.3
    if law == "cauchy":
        u = torch.rand(m, p, generator=gen, dtype=torch.float64)
        return torch.tan(math.pi * (u - 0.5))
    raise ValueError(law)


class Synthetic:
    """A fixed anisotropic problem in dimension p: truth g, mixing matrix A (‖A‖_F² / ‖g‖² ≈ kappa)."""

    def __init__(self, p: int = 8, kappa: float = 2.0, seed: int = 5) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.p = p
        self.g = torch.randn(p, generator=gen, dtype=torch.float64)
        A = torch.randn(p, p, generator=gen, dtype=torch.float64)
        A[:, :2] *= 3.0  # two dominant directions
        A *= math.sqrt(kappa) * float(self.g.norm()) / float(A.norm())
        self.A = A
        cov = A @ A.T
        _evals, evecs = torch.linalg.eigh(cov)
        self.top = evecs[:, -1]

    def sampler(self, law: str, bias: torch.Tensor | None = None):  # type: ignore[no-untyped-def]
        b = torch.zeros(self.p, dtype=torch.float64) if bias is None else bias

        def draw(m: int, gen: torch.Generator) -> torch.Tensor:
            return self.g + b + noise(law, m, self.p, gen) @ self.A.T

        return draw
