"""STAND-IN (see snapjax/__init__.py): the public names of snapjax.algos."""

from snapjax.rtrl.base import RTRLApprox, RTRLExact

__all__ = ["RTRLApprox", "RTRLExact"]
