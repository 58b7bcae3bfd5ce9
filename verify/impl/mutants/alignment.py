r"""A false declaration: SnAp-n (Menick et al. 2021, arXiv:2006.07232, §3) that declares itself *unbiased*.

It replaces ``rtrl.snap`` (``--impl snap=...``). It computes exactly SnAp-n -- deterministic and biased wherever
its n-step pattern is not closed -- but its :class:`~verify.estimators.guarantee.Guarantee` says ``unbiased``, so
the claim ``rtrl.bias-alignment`` judges it as an unbiased estimator: its draws (identical, the estimator has no
noise) differ from exact RTRL by far more than round-off along deterministic coordinates, and the unbiasedness
test must detect the bias (FAIL). ``rtrl.snap-exactness`` does not read the declaration and still PASSes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.estimators.guarantee import Guarantee
from verify.estimators.snap import SnAp
from verify.impl.mutants import Mutant

__all__ = ["MUTANTS", "SnApDeclaredUnbiased"]

CLAIM = "rtrl.bias-alignment"


@dataclass(frozen=True)
class SnApDeclaredUnbiased(SnAp):
    """Mutant: SnAp-n declared unbiased (a biased approximation passed off as an unbiased one)."""

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("unbiased", source="false declaration (mutant): SnAp-n is biased off its closed patterns")


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "alignment.snap-declared-unbiased",
        SnApDeclaredUnbiased.__doc__ or "",
        "rtrl",
        "snap",
        SnApDeclaredUnbiased,
        (CLAIM,),
    ),
)
