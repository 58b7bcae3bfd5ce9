"""Claims of the ``uoro`` family (none yet)."""

from __future__ import annotations

from theory.catalog import Claim

CLAIMS: tuple[Claim, ...] = ()
