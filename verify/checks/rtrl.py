"""Checks of the ``rtrl`` family (none yet; see theory/claims/rtrl.py)."""

from __future__ import annotations
