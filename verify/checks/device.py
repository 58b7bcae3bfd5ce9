"""Checks of the ``device`` family (none yet; see theory/claims/device.py)."""

from __future__ import annotations
