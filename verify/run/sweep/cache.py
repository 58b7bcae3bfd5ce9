"""The sweep cell cache: one JSON file per finished cell, keyed by content, in a folder rnn-verify owns.

A cell's **key** is the SHA-256 of the canonical JSON of ``{"task", "params",
"code"}``: the task's name (a claim's check, or a reproduction's unit of work),
its parameters (claim id, profile, seed, configuration, learning rate ...) and the
**code version**, a hash of every ``.py`` source of the ``verify`` and ``theory``
packages (:func:`code_version`). Any change to the toolkit's sources makes a new
key, so a cached value is never reused by different code; an unchanged cell is
never recomputed.

The cache folder follows the file-safety rules of :mod:`verify.files`: it
carries the marker ``.rnn-verify-cache`` and rnn-verify writes only into a folder
that does not exist yet (it creates it), an empty folder (it marks it) or a
folder with a valid marker. Entries live in ``cells/<k0k1>/<key>.json`` and are
written through a temporary sibling and ``os.replace`` (a crash leaves the old
entry or none, never half a file). Every entry read is validated (format, key,
task, parameters, code version); one that does not validate is treated as absent
and recomputed. Only the driver writes the cache: workers (perhaps on other
machines) return values and never touch the disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import theory
from verify.errors import InvalidArgument
from verify.files import bounded_int, write_file_atomic

__all__ = ["CACHE_MARKER", "CachedValue", "CellCache", "canonical_json", "cell_key", "code_version"]

#: the marker file of a cache folder
CACHE_MARKER = ".rnn-verify-cache"
_MARKER_FORMAT = "rnn-verify.cell-cache"
_ENTRY_FORMAT = "rnn-verify.cell"
_FORMAT_VERSION = 1
_MAX_ENTRY_BYTES = 256 * 2**20


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


#: the sources :func:`code_version` hashes: this package (three levels up from here) and :mod:`theory`
_VERIFY_ROOT = Path(__file__).resolve().parents[2]
_THEORY_ROOT = Path(next(iter(theory.__path__))).resolve()


@lru_cache(maxsize=1)
def code_version() -> str:
    """SHA-256 (first 16 hex digits) over the relative path and bytes of every ``.py`` file of verify/ and theory/."""
    h = hashlib.sha256()
    for name, root in (("verify", _VERIFY_ROOT), ("theory", _THEORY_ROOT)):
        for path in sorted(root.rglob("*.py")):
            rel = f"{name}/{path.relative_to(root).as_posix()}"
            h.update(rel.encode("utf-8") + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cell_key(task: str, params: Mapping[str, Any], code: str | None = None) -> str:
    """The content key of a cell: SHA-256 of ``{"task", "params", "code"}`` as canonical JSON."""
    doc = {"task": task, "params": dict(params), "code": code_version() if code is None else code}
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedValue:
    """A cache entry: the value a cell returned and how long it took."""

    key: str
    value: Any
    wall_time: float
    worker: str


def _refuse(path: Path, why: str) -> InvalidArgument:
    return InvalidArgument(
        "--cache",
        str(path),
        f"{why}; rnn-verify writes its cell cache only into a new or empty folder or one carrying its "
        f"{CACHE_MARKER} marker. Choose another folder",
    )


class CellCache:
    """A content-keyed store of finished cells in a folder rnn-verify created or marked (module docstring)."""

    def __init__(self, path: Path | str) -> None:
        raw = Path(path).expanduser().absolute()
        if raw.is_symlink():
            raise _refuse(raw, "is a symbolic link")
        if raw.exists() and not raw.is_dir():
            raise _refuse(raw, "exists and is not a folder")
        if raw.is_dir():
            marker = raw / CACHE_MARKER
            if marker.is_symlink() or not marker.is_file():
                try:
                    entries = sorted(p.name for p in raw.iterdir())
                except OSError as exc:
                    raise _refuse(raw, f"cannot be listed: {exc.strerror or exc}") from None
                if entries:
                    raise _refuse(raw, f"is a non-empty folder without the marker ({', '.join(entries[:5])})")
                self._write_marker(raw)
            else:
                self._read_marker(raw)
        else:
            try:
                raw.mkdir(parents=True)
            except OSError as exc:
                raise _refuse(raw, f"cannot be created: {exc.strerror or exc}") from None
            self._write_marker(raw)
        self.path = raw

    # ------------------------------------------------------------ marker
    @staticmethod
    def _write_marker(path: Path) -> None:
        doc = {"format": _MARKER_FORMAT, "format_version": _FORMAT_VERSION, "tool": "rnn-verify"}
        _atomic_write(path / CACHE_MARKER, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))

    @staticmethod
    def _read_marker(path: Path) -> None:
        try:
            size = (path / CACHE_MARKER).stat().st_size
            if size > 2**16:  # a marker is a few lines: bounded before it is read
                raise ValueError(f"{size} bytes, more than a marker holds")
            doc = json.loads((path / CACHE_MARKER).read_text("utf-8"), parse_int=bounded_int)
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise _refuse(path, f"its marker {CACHE_MARKER} is damaged ({str(exc)[:200]})") from None
        if not isinstance(doc, dict) or doc.get("format") != _MARKER_FORMAT:
            raise _refuse(path, f"its marker {CACHE_MARKER} is not an rnn-verify cache marker")
        if doc.get("format_version") != _FORMAT_VERSION:
            raise _refuse(path, f"its marker has format_version {doc.get('format_version')!r}, not {_FORMAT_VERSION}")

    # ------------------------------------------------------------ entries
    def entry_path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise InvalidArgument("key", key, "a cell key is 64 lower-case hex digits")
        return self.path / "cells" / key[:2] / f"{key}.json"

    def get(self, key: str, task: str, params: Mapping[str, Any], code: str | None = None) -> CachedValue | None:
        """The cached value of cell ``key`` or None (absent, or an entry that does not validate)."""
        path = self.entry_path(key)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY_BYTES:
                return None
            doc = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # huge integers, deep nesting: a miss
            return None
        code = code_version() if code is None else code
        if not isinstance(doc, dict):
            return None
        expect = {"format": _ENTRY_FORMAT, "format_version": _FORMAT_VERSION, "key": key, "task": task, "code": code}
        if any(doc.get(k) != v for k, v in expect.items()):
            return None
        if canonical_json(doc.get("params")) != canonical_json(dict(params)):
            return None
        wall, worker = doc.get("wall_time"), doc.get("worker")
        if not isinstance(wall, (int, float)) or isinstance(wall, bool) or not isinstance(worker, str):
            return None
        if "value" not in doc:
            return None
        return CachedValue(key, doc["value"], float(wall), worker)

    def put(
        self,
        key: str,
        task: str,
        params: Mapping[str, Any],
        value: Any,
        wall_time: float,
        worker: str,
        code: str | None = None,
    ) -> Path:
        """Store a finished cell (atomically); returns the entry's path."""
        doc = {
            "format": _ENTRY_FORMAT,
            "format_version": _FORMAT_VERSION,
            "key": key,
            "task": task,
            "params": dict(params),
            "code": code_version() if code is None else code,
            "wall_time": float(wall_time),
            "worker": worker,
            "value": value,
        }
        path = self.entry_path(key)
        return _atomic_write(path, canonical_json(doc).encode("utf-8"))

    def keys(self) -> list[str]:
        """Every key with an entry file (validated only when read)."""
        root = self.path / "cells"
        if not root.is_dir():
            return []
        return sorted(p.stem for p in root.glob("??/*.json") if p.is_file() and not p.is_symlink())


def _atomic_write(path: Path, data: bytes) -> Path:
    """``data`` into ``path`` through a temporary sibling and ``os.replace``; a link at ``path`` is refused."""
    if path.is_symlink():
        raise InvalidArgument("cache entry", str(path), "is a symbolic link; rnn-verify does not write through links")
    return write_file_atomic(path, data)
