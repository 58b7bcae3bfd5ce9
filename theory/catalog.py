"""The claim catalog: one entry per claim the toolkit checks.

Every claim has a stable id ``family.claim`` (families: ``reference``, ``rtrl``,
``uoro``, ``fpp``, ``truncation``, ``device``, ...), the paper (a short key of
:mod:`theory.papers`, e.g. ``"Tallec & Ollivier 2017"``; the full citation is the
claim's ``citation``) and its equation/lemma/theorem, the statement in words and in
math, its assumptions and how the check tests them, the check that verifies it
(``verify.checks.<family>.<function>``), the profiles it runs in and errata where
the paper is wrong or loose. The CLI's ``list``, the runner and the report all
draw on this catalog; a test fails if a check exists without an entry or an entry
without a check.

Each family lives in :mod:`theory.claims.<family>` (and optionally further modules
``theory.claims.<family>_<topic>``) as a tuple ``CLAIMS``; the checks live in
``verify.checks.<family>`` or ``verify.checks.<family>_<topic>``.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from theory.papers import cite, cited_in
from theory.rates import Rate
from verify.errors import InvalidArgument

__all__ = ["FAMILIES", "GATE_ALPHA", "PROFILES", "Claim", "all_claims", "declared_rate", "gate_budget", "get_claim"]

#: the ci gate's family-wise false-FAIL budget: the chance that one ``rnn-verify run --profile ci`` FAILs a correct
#: implementation through the claims that state a rate, bounded by the sum of their ``alpha`` and ``control_beta``
#: (:func:`gate_budget`; a test keeps the sum at most this)
GATE_ALPHA = 1e-3

#: the run profiles: ``ci`` the quick gate, ``full`` larger sizes (:class:`verify.config.RunConfig`)
PROFILES = ("ci", "full")

#: families in report order; each is a module theory.claims.<family> with CLAIMS
FAMILIES = ("reference", "rtrl", "uoro", "fpp", "truncation", "device")

_ID = re.compile(r"^[a-z]+\.[a-z0-9]+(?:-[a-z0-9]+)*$")
_KINDS = ("deterministic", "statistical", "rate", "reproduction")
_REQUIREMENTS = ("cuda",)


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
    profiles: tuple[str, ...] = PROFILES
    errata: tuple[str, ...] = ()
    #: what a run of the check needs besides a CPU (``"cuda"``); the report's rerun command asks for it
    requires: tuple[str, ...] = ()
    #: the false-FAIL rate the check states for a correct implementation (its share of :data:`GATE_ALPHA`);
    #: ``None`` where the verdict does not rest on a test with a stated level (deterministic comparisons with a
    #: round-off budget; reproductions and rate claims judged by effect sizes, measured by the gate calibration)
    alpha: float | None = None
    #: the chance that the check's negative controls are *not* caught (a false FAIL too), where it is planned
    control_beta: float = 0.0
    #: a ``rate`` claim's declared rate: the fit's axes, the predicted slope, the relation (:mod:`theory.rates`)
    rate: Rate | None = None
    #: the full citation of ``paper`` (authors, year, title, venue, arXiv id; :mod:`theory.papers`)
    citation: str = field(init=False, default="")
    #: full citations of every paper the claim cites (``paper`` first, then those named in ``where``)
    references: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "citation", cite(self.paper))
        others = [k for k in cited_in(self.where, self.statement) if k != self.paper]
        object.__setattr__(self, "references", (self.citation, *(cite(k) for k in others)))
        unknown = [r for r in self.requires if r not in _REQUIREMENTS]
        if unknown:
            raise InvalidArgument(f"{self.id}: requires", unknown, f"unknown requirements; known: {_REQUIREMENTS}")
        if not _ID.match(self.id):
            raise InvalidArgument("Claim.id", self.id, "a claim id must look like 'family.claim-name'")
        if self.family not in FAMILIES:
            raise InvalidArgument(f"{self.id}: family", self.family, f"unknown family; known: {FAMILIES}")
        if self.kind not in _KINDS:
            raise InvalidArgument(f"{self.id}: kind", self.kind, f"kind must be one of {_KINDS}")
        module = self.check.rsplit(".", 1)[0]
        if not (module == f"verify.checks.{self.family}" or module.startswith(f"verify.checks.{self.family}_")):
            raise InvalidArgument(
                f"{self.id}: check", self.check, f"a check must live in verify.checks.{self.family}[_topic]"
            )

        if (self.kind == "rate") != (self.rate is not None):
            raise InvalidArgument(f"{self.id}: rate", self.rate, "a rate claim declares its Rate; no other kind does")
        if self.alpha is not None and not 0.0 < self.alpha < 1.0:
            raise InvalidArgument(f"{self.id}: alpha", self.alpha, "alpha must be in (0, 1)")
        if not 0.0 <= self.control_beta < 1.0:
            raise InvalidArgument(f"{self.id}: control_beta", self.control_beta, "control_beta must be in [0, 1)")

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]


#: where the claim modules live: theory/claims/<family>[_topic].py, imported by name (they import this module)
_CLAIMS_DIR = Path(__file__).resolve().parent / "claims"


def all_claims() -> dict[str, Claim]:
    """Every claim, in family order then definition order."""
    names = sorted(m.name for m in pkgutil.iter_modules([str(_CLAIMS_DIR)]))
    out: dict[str, Claim] = {}
    for fam in FAMILIES:
        for name in [n for n in names if n == fam or n.startswith(f"{fam}_")]:
            mod = importlib.import_module(f"theory.claims.{name}")
            for claim in mod.CLAIMS:
                if claim.id in out:
                    raise InvalidArgument("Claim.id", claim.id, "duplicate claim id")
                if claim.family != fam:
                    raise InvalidArgument(
                        f"{claim.id}: module",
                        f"theory.claims.{name}",
                        f"a {claim.family} claim is defined in theory.claims.{name}",
                    )
                out[claim.id] = claim
    unknown = [n for n in names if n.split("_", 1)[0] not in FAMILIES]
    if unknown:
        raise InvalidArgument("theory.claims", unknown, f"modules outside the known families {FAMILIES}")
    return out


def get_claim(claim_id: str) -> Claim:
    claims = all_claims()
    try:
        return claims[claim_id]
    except KeyError:
        raise KeyError(claim_id) from None


def declared_rate(claim_id: str) -> Rate:
    """The :class:`~theory.rates.Rate` the rate claim ``claim_id`` declares (InvalidArgument for another kind)."""
    rate = get_claim(claim_id).rate
    if rate is None:
        raise InvalidArgument("claim_id", claim_id, "is not a rate claim: it declares no Rate")
    return rate


def gate_budget(
    profile: str = "ci", ids: Collection[str] | None = None
) -> tuple[float, list[tuple[str, float, float]]]:
    """The stated family-wise false-FAIL rate of a run of ``profile``: (sum, rows of (claim id, alpha, control_beta)).

    Bonferroni: the chance that any claim FAILs a correct implementation is at most the sum of the claims'
    stated rates and their controls' miss probabilities. ``ids``: only these claims (a run's selection); default
    every claim of the profile that runs on a CPU.
    """
    rows = [
        (c.id, c.alpha or 0.0, c.control_beta)
        for c in all_claims().values()
        if (c.id in ids if ids is not None else profile in c.profiles and "cuda" not in c.requires)
        and (c.alpha or c.control_beta)
    ]
    return sum(a + b for _, a, b in rows), rows
