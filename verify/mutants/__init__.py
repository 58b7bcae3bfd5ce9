"""The mutant catalog: deliberately broken implementations the checks must catch.

Each family module (``verify.mutants.reference``, ``verify.mutants.estimators``,
...) exposes ``MUTANTS``: a tuple of :class:`Mutant` records. Tests run every check
against its mutants and require FAIL; the report shows the mutant-kill table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Mutant"]


@dataclass(frozen=True)
class Mutant:
    """A plausible bug: ``name`` (stable id), what it breaks, and the broken implementation.

    ``target`` names the implementation the mutant replaces (e.g. ``"adjoint"``,
    ``"uoro"``); ``impl`` has the same signature as that implementation.
    ``visible_to`` names the claim ids whose checks are expected to catch it.
    """

    name: str
    description: str
    target: str
    impl: Callable[..., Any]
    visible_to: tuple[str, ...] = ()
