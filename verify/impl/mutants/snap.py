r"""Broken SnAp-n estimators (Menick et al. 2021, arXiv:2006.07232, §3): a wrong or missing sparsity pattern.

They replace ``rtrl.snap`` (``--impl snap=...``); the claim ``rtrl.snap-exactness`` must FAIL each, and
``tests/estimators/test_snap.py`` runs the exactness and bias tests on them, both sides:

* :class:`SnApTransposedPattern` -- the pattern grown along ``W``ᵀ (edges read j → i instead of i → j,
  the direction bug of a graph library's adjacency convention): the exactness tests on a directed
  (non-symmetric) ``W`` must fail;
* :class:`SnApShortPattern` -- the pattern of n − 1 steps (off by one; SnAp-1 keeps nothing): the
  exactness tests at the first n steps and on a dense ``W`` with n = 2 must fail;
* :class:`SnApNoMask` -- no mask at all, i.e. RTRL: every exactness test passes (it *is* exact), so
  only the bias test (SnAp-n differs from RTRL where the pattern is not closed) can see it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.snap import SnAp, connectivity_of, snap_pattern
from verify.impl.mutants import Mutant
from verify.model.problem import Problem

__all__ = ["MUTANTS", "SnApNoMask", "SnApShortPattern", "SnApTransposedPattern"]

CLAIM = "rtrl.snap-exactness"


@dataclass(frozen=True)
class SnApTransposedPattern(SnAp):
    """Mutant: :math:`M_n` grown along the transposed connectivity."""

    def pattern(self, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
        C = connectivity_of(problem, theta)
        H = C.shape[1]
        CT = C.reshape(-1, H, H).transpose(-1, -2).reshape(C.shape)
        return snap_pattern(problem, CT, self.order)


@dataclass(frozen=True)
class SnApShortPattern(SnAp):
    """Mutant: the pattern of n − 1 steps (empty for n = 1)."""

    def pattern(self, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
        if self.order == 1:
            return torch.zeros(problem.n, problem.p, dtype=torch.bool)
        return snap_pattern(problem, connectivity_of(problem, theta), self.order - 1)


@dataclass(frozen=True)
class SnApNoMask(SnAp):
    """Mutant: no sparsity mask (the full RTRL influence)."""

    def pattern(self, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
        return torch.ones(problem.n, problem.p, dtype=torch.bool)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "snap.transposed-pattern", SnApTransposedPattern.__doc__ or "", "rtrl", "snap", SnApTransposedPattern, (CLAIM,)
    ),
    Mutant("snap.short-pattern", SnApShortPattern.__doc__ or "", "rtrl", "snap", SnApShortPattern, (CLAIM,)),
    Mutant("snap.no-mask", SnApNoMask.__doc__ or "", "rtrl", "snap", SnApNoMask, (CLAIM,)),
)
