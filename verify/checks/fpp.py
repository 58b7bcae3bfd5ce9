"""Checks of the ``fpp`` family (none yet; see theory/claims/fpp.py)."""

from __future__ import annotations
