"""Checks: one function per catalog claim, ``check(config) -> CheckResult``.

A family module ``verify.checks.<family>`` (or ``verify.checks.<family>_<topic>``)
registers its checks with :func:`register`; :func:`registry` imports every module
of this package and returns
``{claim_id: function}``. The catalog (:mod:`theory.catalog`) and this registry
must match exactly (tested).

``register(claim_id, uses=("uoro.uoro",))`` also declares which parts of the
implementation under test (:mod:`verify.impl`, ``family.field``) the check
exercises: the runner names them in the result, the CLI decides from them which
claims a ``--impl`` concerns (:func:`uses`). A check with ``uses=()`` tests the
toolkit itself (a reproduction, a kill table) whatever implementation is given.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.verdict import CheckResult

__all__ = ["CheckFn", "register", "registry", "uses"]

CheckFn = Callable[[RunConfig], CheckResult]
_REGISTRY: dict[str, CheckFn] = {}
_USES: dict[str, tuple[str, ...]] = {}


def register(claim_id: str, uses: tuple[str, ...] = ()) -> Callable[[CheckFn], CheckFn]:
    """Decorator: register ``fn`` as the check of catalog claim ``claim_id``, exercising ``uses`` (``family.field``)."""

    def deco(fn: CheckFn) -> CheckFn:
        old = _REGISTRY.get(claim_id)
        # the same definition executed again (a module re-imported, e.g. by pytester's
        # in-process runs) replaces itself; a different function claiming the id is an error
        if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
            raise InvalidArgument(
                "claim_id",
                claim_id,
                f"{claim_id} already has a check ({old.__module__}.{old.__qualname__}); "
                f"{fn.__module__}.{fn.__qualname__} cannot register it too",
            )
        _REGISTRY[claim_id] = fn
        _USES[claim_id] = tuple(uses)
        return fn

    return deco


def registry() -> dict[str, CheckFn]:
    """Every registered check (imports all families)."""
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return dict(_REGISTRY)


def uses(claim_id: str) -> tuple[str, ...]:
    """The parts of the implementation under test (``family.field``) the check of ``claim_id`` exercises."""
    registry()
    return _USES.get(claim_id, ())
