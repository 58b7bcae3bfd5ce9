"""Checks of the ``uoro`` family (none yet; see theory/claims/uoro.py)."""

from __future__ import annotations
