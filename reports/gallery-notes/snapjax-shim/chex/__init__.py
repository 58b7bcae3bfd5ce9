"""SHIM (not chex): the two type aliases snapjax imports; chex is not installed here."""

from typing import Any

ArrayTree = Any
Scalar = Any
