"""Deprecation shims for public modules that moved in the house rebuild (issue 20; issue 41: a deprecation path).

``verify.assertions``, ``verify.strategies`` and ``verify.reference`` were public modules before the rebuild; code
written against them keeps importing, with a :class:`DeprecationWarning` that names the new home. The shims are
kept for one minor release (removed in 0.2).
"""

from __future__ import annotations

import warnings

__all__ = ["REMOVED_IN", "warn_moved"]

#: the release that removes the shims
REMOVED_IN = "0.2"


def warn_moved(old: str, new: str) -> None:
    """Warn once per import of the shim ``old`` that its public names live in ``new``."""
    warnings.warn(
        f"{old} moved to {new} (rnn-verify 0.1 house rebuild): import from {new}; {old} is removed in {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,
    )
