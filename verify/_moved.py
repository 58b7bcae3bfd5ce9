"""Deprecation shims for public modules that moved in the house rebuild (issue 20; issue 41: a deprecation path).

Every public module the rebuild moved keeps importing, with a :class:`DeprecationWarning` that names its new home:
``verify.assertions``, ``verify.strategies``, ``verify.reference``, ``verify.assumptions``, ``verify.budget``,
``verify.cells``, ``verify.device``, ``verify.finite_diff``, ``verify.float32_sampling``, ``verify.golden``,
``verify.impl_loader``, ``verify.losses``, ``verify.mutants`` (and its submodules), ``verify.params``,
``verify.parity``, ``verify.problem``, ``verify.results``, ``verify.runner``, ``verify.selfcheck`` and
``verify.sweep`` (and its submodules). The shims are kept for one minor release (removed in 0.2).
Not shimmed: ``verify.pytest_plugin`` (now ``verify.testing.pytest_plugin``; a second module with the plugin's
hooks would register them twice), the private modules, ``verify.report.atomic`` (internal file writing, now
:mod:`verify.files`) and ``verify.stats.regression`` (removed, no successor).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterable

__all__ = ["REMOVED_IN", "alias_submodules", "warn_moved"]

#: the release that removes the shims
REMOVED_IN = "0.2"


def warn_moved(old: str, new: str) -> None:
    """Warn once per import of the shim ``old`` that its public names live in ``new``."""
    warnings.warn(
        f"{old} moved to {new} (rnn-verify 0.1 house rebuild): import from {new}; {old} is removed in {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,
    )


def alias_submodules(old: str, new: str, names: Iterable[str]) -> None:
    """Register the submodules ``new.<name>`` as ``old.<name>`` too (the same module objects, imported once).

    ``import old.<name>`` then finds the module in :data:`sys.modules` after importing the shim package ``old``,
    so a moved package's submodules keep importing under their old names without a second copy of their
    state (a mutant catalog, a registry). As in the new package, a function the package exports under a
    submodule's name (``definitions``, ``tasks``) stays the package's attribute.
    """
    parent = sys.modules[old]
    for name in names:
        module = importlib.import_module(f"{new}.{name}")
        sys.modules[f"{old}.{name}"] = module
        if not hasattr(parent, name):  # a name the package exports (``verify.sweep.definitions``, a function) wins
            setattr(parent, name, module)
