"""The mutant catalog: deliberately broken implementations the checks must catch.

Each family module (``verify.impl.mutants.reference``, ``verify.impl.mutants.estimators``,
...) exposes ``MUTANTS``: a tuple of :class:`Mutant` records. A mutant is one broken
*part* of an implementation under test (:mod:`verify.impl`): its ``impl`` is the
family's default with that field replaced, ``replace(default, field=broken)``
(:meth:`verify.impl.FamilyImpl.with_part`), and it reaches a check the way a
user's code does -- ``RunConfig(implementations=mutant.implementations)`` in code,
``rnn-verify run --impl FAMILY.FIELD=module:object`` on the command line. Tests run
every check against its mutants and require FAIL; the report shows the kill table.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any

from verify.errors import InvalidArgument
from verify.impl import DEFAULT, Implementations, family_class

__all__ = ["Mutant", "all_mutants", "get"]


@dataclass(frozen=True)
class Mutant:
    """A plausible bug: ``name`` (stable id), what it breaks, and the broken part.

    ``family`` and ``field`` name the part of the implementation under test it
    replaces (``"uoro"``, ``"uoro"``: the UORO estimator factory); ``part`` is the
    broken object, exactly what a user would pass as ``--impl family.field=...``.
    ``visible_to`` names the claim ids whose checks are expected to catch it.
    """

    name: str
    description: str
    family: str
    field: str
    part: Any
    visible_to: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """``family.field``: the part it replaces."""
        return f"{self.family}.{self.field}"

    @property
    def impl(self) -> Any:
        """The family's default with this mutant's part: ``replace(default, field=part)`` (+ derived fields).

        A :class:`~verify.impl.FamilyImpl` of the mutant's family (typed ``Any``: which
        subclass depends on ``family``).
        """
        return family_class(self.family)().with_part(self.field, self.part)

    @property
    def implementations(self) -> Implementations:
        """Every family at its default except this one (for ``RunConfig(implementations=...)``)."""
        return DEFAULT.with_family(self.impl, label=f"mutant {self.name}")


def all_mutants() -> dict[str, Mutant]:
    """Every mutant of every family module, by name."""
    out: dict[str, Mutant] = {}
    for mod in pkgutil.iter_modules(__path__):
        m = importlib.import_module(f"{__name__}.{mod.name}")
        for mutant in getattr(m, "MUTANTS", ()):
            out[mutant.name] = mutant
    return out


def get(name: str) -> Mutant:
    """The mutant called ``name``; :class:`~verify.errors.InvalidArgument` naming the known ones otherwise."""
    mutants = all_mutants()
    if name not in mutants:
        near = difflib.get_close_matches(name, list(mutants), n=3, cutoff=0.4)
        raise InvalidArgument("mutant", name, f"did you mean {', '.join(near)}?" if near else "not in the catalog")
    return mutants[name]
