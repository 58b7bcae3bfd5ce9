"""Stand-in for vanilla-rtrl's ``core`` (see ../README.md)."""

from .RNN import RNN

__all__ = ["RNN"]
