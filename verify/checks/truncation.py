"""Checks of the ``truncation`` family (none yet; see theory/claims/truncation.py)."""

from __future__ import annotations
