"""Flat parameter vectors with a documented, inspectable layout.

A problem's parameters live in ONE flat vector ``theta`` (1-D tensor of length p).
:class:`ParamLayout` says which slice of ``theta`` is which named tensor, in order,
so every algorithm can treat θ as a vector (influence matrices are n × p) while
cells read named, shaped views.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from verify.errors import InvalidArgument


@dataclass(frozen=True)
class ParamEntry:
    """One named block of θ: ``theta[slice]`` reshaped to ``shape``."""

    name: str
    shape: tuple[int, ...]
    offset: int

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)


@dataclass(frozen=True)
class ParamLayout:
    """Ordered layout of a flat parameter vector.

    >>> lay = ParamLayout.from_shapes([("cell.W", (2, 2)), ("cell.b", (2,))])
    >>> lay.size, lay["cell.b"].slice
    (6, slice(4, 6, None))
    """

    entries: tuple[ParamEntry, ...]

    @staticmethod
    def from_shapes(shapes: Sequence[tuple[str, tuple[int, ...]]]) -> ParamLayout:
        entries: list[ParamEntry] = []
        offset = 0
        seen: set[str] = set()
        for name, shape in shapes:
            if name in seen:
                raise InvalidArgument("shapes", name, "duplicate parameter name")
            seen.add(name)
            entry = ParamEntry(name, tuple(int(s) for s in shape), offset)
            entries.append(entry)
            offset += entry.size
        return ParamLayout(tuple(entries))

    @cached_property
    def size(self) -> int:  # cached: read per sample and step by the adapters (entries are immutable)
        return sum(e.size for e in self.entries)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries)

    def __getitem__(self, name: str) -> ParamEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise InvalidArgument("name", name, f"no such parameter; known: {', '.join(self.names)}")

    def __iter__(self) -> Iterator[ParamEntry]:
        return iter(self.entries)

    def unflatten(self, theta: torch.Tensor, prefix: str = "") -> dict[str, torch.Tensor]:
        """Named views of ``theta`` (last dim = p; leading dims are kept).

        With ``prefix`` only the entries whose name starts with it are returned,
        with the prefix stripped.
        """
        if theta.shape[-1] != self.size:
            raise InvalidArgument(
                "theta", f"tensor of shape {tuple(theta.shape)}", f"last dimension must be p={self.size}"
            )
        lead = theta.shape[:-1]
        out: dict[str, torch.Tensor] = {}
        for e in self.entries:
            if e.name.startswith(prefix):
                out[e.name[len(prefix) :]] = theta[..., e.slice].reshape(*lead, *e.shape)
        return out

    def flatten(self, tensors: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`unflatten` (all names required)."""
        missing = [n for n in self.names if n not in tensors]
        if missing:
            raise InvalidArgument("tensors", sorted(tensors), f"missing parameters {missing}")
        return torch.cat([tensors[e.name].reshape(-1) for e in self.entries])

    def describe(self) -> str:
        """A table of name, shape and slice, one line per block."""
        rows = [f"{'name':<16} {'shape':<12} slice"]
        for e in self.entries:
            rows.append(f"{e.name:<16} {e.shape!s:<12} [{e.offset}:{e.offset + e.size}]")
        rows.append(f"{'(total)':<16} {'':<12} p = {self.size}")
        return "\n".join(rows)
