"""The deprecation shims of the modules moved in the house rebuild (issue 41): code written against the API as
documented before it still imports, every public name is the new home's object, and the import warns with a
``DeprecationWarning`` that names the new home (``filterwarnings = error``: an unexpected one fails any test)."""

from __future__ import annotations

import importlib
import sys

import pytest

import verify
from verify._moved import REMOVED_IN

MOVED = {
    "verify.assertions": "verify.testing.assertions",
    "verify.strategies": "verify.testing.strategies",
    "verify.reference": "verify.oracles.bptt",
}

#: the names the README imported from each module before the rebuild (README.md of commit 55eec50^)
DOCUMENTED = {
    "verify.assertions": ["assert_unbiased", "unbiasedness_property"],
    "verify.strategies": ["random_problem", "problems", "contractive_problems"],
    "verify.reference": ["bptt_gradient", "per_step_gradients", "influence_matrices", "adjoint_gradient"],
}


def _fresh_import(old: str) -> object:
    sys.modules.pop(old, None)
    if hasattr(verify, old.rpartition(".")[2]):
        delattr(verify, old.rpartition(".")[2])
    return importlib.import_module(old)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_shim_warns_naming_the_new_home_and_reexports_it(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {MOVED[old]}\b.*removed in {REMOVED_IN}"):
        mod = _fresh_import(old)
    assert list(mod.__all__) == list(new.__all__)  # type: ignore[attr-defined]
    for name in new.__all__:
        assert getattr(mod, name) is getattr(new, name), name
    for name in DOCUMENTED[old]:
        assert name in mod.__all__, name  # type: ignore[attr-defined]
