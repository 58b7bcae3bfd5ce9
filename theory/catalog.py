"""The claim catalog: one entry per claim the toolkit checks.

Every claim has a stable id ``family.claim`` (families: ``reference``, ``rtrl``,
``uoro``, ``fpp``, ``truncation``, ``device``, ...), the paper (a seed in
``shared/seeds``) and its equation/lemma/theorem, the statement in words and in
math, its assumptions and how the check tests them, the check that verifies it
(``verify.checks.<family>.<function>``), the profiles it runs in and errata where
the paper is wrong or loose. The CLI's ``list``, the runner and the report all
draw on this catalog; a test fails if a check exists without an entry or an entry
without a check.

Each family lives in :mod:`theory.claims.<family>` as a tuple ``CLAIMS``.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

__all__ = ["FAMILIES", "Claim", "all_claims", "get_claim"]

#: families in report order; each is a module theory.claims.<family> with CLAIMS
FAMILIES = ("reference", "rtrl", "uoro", "fpp", "truncation", "device")

_ID = re.compile(r"^[a-z]+\.[a-z0-9]+(?:-[a-z0-9]+)*$")
_KINDS = ("deterministic", "statistical", "rate", "reproduction")


@dataclass(frozen=True)
class Claim:
    """One checkable claim of a paper.

    ``kind``: ``deterministic`` (equality to round-off within a predicted budget),
    ``statistical`` (stated error rates α, β and bias bound δ), ``rate`` (a fitted
    slope with a confidence interval against a derived rate) or ``reproduction``
    (report data with a stated, checked criterion).
    """

    id: str
    title: str
    paper: str
    where: str
    statement: str
    math: str
    assumptions: tuple[str, ...]
    check: str
    kind: str = "deterministic"
    profiles: tuple[str, ...] = ("ci", "full")
    errata: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise ValueError(f"claim id {self.id!r} must look like 'family.claim-name'")
        if self.family not in FAMILIES:
            raise ValueError(f"claim {self.id!r}: unknown family {self.family!r}")
        if self.kind not in _KINDS:
            raise ValueError(f"claim {self.id!r}: kind must be one of {_KINDS}")
        if not self.check.startswith(f"verify.checks.{self.family}."):
            raise ValueError(f"claim {self.id!r}: check must live in verify.checks.{self.family}")

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]


def all_claims() -> dict[str, Claim]:
    """Every claim, in family order then definition order."""
    out: dict[str, Claim] = {}
    for fam in FAMILIES:
        mod = importlib.import_module(f"theory.claims.{fam}")
        for claim in mod.CLAIMS:
            if claim.id in out:
                raise ValueError(f"duplicate claim id {claim.id!r}")
            if claim.family != fam:
                raise ValueError(f"claim {claim.id!r} is defined in theory.claims.{fam}")
            out[claim.id] = claim
    return out


def get_claim(claim_id: str) -> Claim:
    claims = all_claims()
    try:
        return claims[claim_id]
    except KeyError:
        raise KeyError(claim_id) from None
