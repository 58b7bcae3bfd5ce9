"""Atomic writes: a report folder appears complete or not at all.

* :func:`preflight_dir` -- before any compute: the output folder can be created
  and written, is not a file, and is either new, empty or an earlier report
  (a folder with ``results.json``); anything else is refused, so a typo in
  ``--out`` never replaces an unrelated folder.
* :func:`write_dir_atomic` -- every file is written into a temporary sibling
  folder, which then replaces the target by ``rename``; SIGINT is blocked during
  the two renames, so Ctrl-C leaves either the old or the new report, never a mix.
* :func:`write_file_atomic` -- one file through a temporary sibling and ``os.replace``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from verify.errors import InvalidArgument

__all__ = ["REPORT_MARKER", "preflight_dir", "preflight_file", "write_dir_atomic", "write_file_atomic"]

#: a folder holding this file is an rnn-verify report and may be replaced
REPORT_MARKER = "results.json"


def _probe_writable(parent: Path, argument: str, target: Path) -> None:
    try:
        probe = tempfile.mkdtemp(prefix=".rnn-verify-probe-", dir=parent)
    except OSError as exc:
        raise InvalidArgument(argument, str(target), f"cannot write into {parent}: {exc.strerror or exc}") from None
    os.rmdir(probe)


def preflight_dir(out: Path | str, argument: str = "--out") -> Path:
    """Check (and create the parents of) an output folder before any compute."""
    out = Path(out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise InvalidArgument(argument, str(out), "exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / REPORT_MARKER).is_file():
        raise InvalidArgument(
            argument,
            str(out),
            f"is a non-empty folder without {REPORT_MARKER}; refusing to replace something that is not an "
            "rnn-verify report (choose a new or empty folder)",
        )
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgument(argument, str(out), f"cannot create {parent}: {exc.strerror or exc}") from None
    _probe_writable(parent, argument, out)
    if out.is_dir():  # the swap renames it: it must be writable too
        _probe_writable(out, argument, out)
    return out


def preflight_file(path: Path | str, argument: str) -> Path:
    """Check that ``path`` can be written atomically (its folder exists or can be made, writable)."""
    path = Path(path).expanduser().absolute()
    if path.is_dir():
        raise InvalidArgument(argument, str(path), "is a folder; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgument(argument, str(path), f"cannot create {path.parent}: {exc.strerror or exc}") from None
    _probe_writable(path.parent, argument, path)
    return path


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """Defer SIGINT (Ctrl-C) for the duration (main thread, POSIX); a no-op elsewhere."""
    can = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if can:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if can:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_file_atomic(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and ``os.replace``."""
    path = Path(path).expanduser().absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        with _no_sigint():
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_dir_atomic(out: Path | str, files: Mapping[str, bytes]) -> Path:
    """Replace folder ``out`` by one holding exactly ``files`` (relative path -> bytes)."""
    out = preflight_dir(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        for rel, data in files.items():
            target = (tmp / rel).resolve()
            if tmp.resolve() not in target.parents:
                raise InvalidArgument("file name", rel, "must stay inside the report folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        os.chmod(tmp, 0o755)
        old: Path | None = None
        with _no_sigint():
            if out.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.rmdir(old)
                os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                if old is not None:
                    os.rename(old, out)
                raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
