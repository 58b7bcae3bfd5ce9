"""Report folders: rnn-verify writes only into folders it created or marked, and removes only what it wrote.

A report folder carries a **marker**, the file ``.rnn-verify-report`` (JSON)::

    {"format": "rnn-verify.report-folder", "format_version": 1,
     "tool": "rnn-verify", "version": "0.1.0",
     "files": ["junit.xml", "figures/x.a-1.png", "report.html", "report.md", "results.json"],
     "dirs": ["figures"],
     "sha256": {"junit.xml": "9f86d0...", "results.json": "2c26b4...", ...}}

``files`` is the manifest: every relative path rnn-verify wrote there; ``dirs`` the
sub-folders it created; ``sha256`` the SHA-256 of the bytes it wrote into each file
(markers of earlier versions have none). ``rnn-verify report`` compares ``results.json``
with its digest (:func:`recorded_digest`): a mismatch means the file was changed after
rnn-verify wrote it. The digest detects accidental edits; it is **not a signature**
(anyone can recompute it). A user who edits ``results.json`` on purpose passes
``report --no-digest-check`` (or reads a copy outside the folder, which has no digest:
a note). The rules:

* :func:`preflight_dir` (before any compute) accepts a folder that does not exist
  yet, an empty folder, or a folder with a valid marker. Anything else is refused
  with :class:`~verify.errors.InvalidArgument` (the CLI exits 2): a folder holding
  a ``results.json`` but no marker (a project folder, a git checkout, a report of
  an older rnn-verify) is never taken for a report. ``--out`` given as a symbolic
  link means the folder it points to; the rules apply to that folder.
* :func:`write_dir_atomic` renders nothing itself: it writes the given files into a
  temporary sibling folder, then, with SIGINT, SIGTERM and SIGHUP held back, moves
  each into place with ``os.replace``, removes the previous report's files that the
  new one does not have (those in the old manifest only), removes a sub-folder it
  had created once it is empty, and writes the new marker. Those removals are never
  silent: each removed path is handed back (``removed=``) and the CLI names them all
  ("removed N files of the previous report ... that this report does not have"). A file
  the old manifest lists is removed only if it is a regular file reached without a link
  (a manifest cannot make rnn-verify delete a link, a folder or anything outside). An interruption before
  that step leaves the previous report as it was; the step itself is a handful of
  renames, during which the signals wait.
* A **foreign** entry -- anything in the folder that is not in the manifest (a
  user's notes, a symbolic link, a file where the manifest lists one but that is
  now a link or a folder) -- is never deleted, replaced or followed. It is kept,
  and the CLI says so (:func:`foreign_entries` lists them).
  If the new report needs the path a foreign entry occupies, the write is refused
  before anything is changed.
* Every removal or replacement of report content goes through one function,
  :func:`_guarded_change`, which acts only on a path listed as written by
  rnn-verify, reached without following a symbolic link, and holding a regular
  file (or, for a folder, only ``rmdir`` of an empty folder it created). Other
  removals in this module are of a probe folder it just made (``os.rmdir``) and of
  its own temporary file in :func:`write_file_atomic`.
* :func:`write_file_atomic` writes one file through a temporary sibling and
  ``os.replace``; it is for a path the user named explicitly (``--json FILE``,
  ``--junit FILE``, ``golden --out FILE.npz``). :func:`staged_files` stages several such
  files before a report folder is written and moves them into place after it.
* **OS errors** (a full disk ``ENOSPC``, a quota, a read-only file system) raise
  :class:`OutputWriteError` -- an ``OSError`` and a ``VerifyError`` (the CLI prints one
  line, exit 2) -- naming the output path that failed (never a temporary name) and what
  became of the output. Every file's bytes go through one low-level write (``_write_fd``),
  the marker included, and all of them happen while staging: the staging folder
  ``.<name>.tmp-*`` (beside the folder) is removed on every path out -- an OS error, an
  exception, Ctrl-C, with a partly written file in it -- so none accumulates over retries,
  and the previous report, ``--json`` and ``--junit`` stay as they were. The one write after
  the renames is the marker's rewrite when the previous report had files the new one does
  not (it drops their names); should that fail, the new report is complete and its marker
  lists a few names too many (said so; harmless).
* **The output lock** (:func:`output_lock`): a run holds an exclusive lock on its report
  folder from before its first write to after its last. The lock is the file
  ``.<name>.rnn-verify-lock`` beside the folder (in the folder that also holds the staging
  folders; it works for a folder that does not exist yet and leaves nothing inside it),
  created with ``O_CREAT | O_EXCL | O_NOFOLLOW``, held with ``flock(LOCK_EX)`` on it, and
  holding the holder as JSON ``{"format": "rnn-verify.output-lock", "pid", "host",
  "started", "command", "folder"}``. A second run into a folder in use raises
  :class:`~verify.errors.InvalidArgument` naming the holder (``pid N on HOST, started T:
  COMMAND``; exit 2). The lock file is removed on every path out (signals held while it is
  unlinked, before its descriptor is closed: a run that opened it meanwhile sees it is gone
  and starts again). A kill -9 leaves the file, but the kernel drops the ``flock`` with the
  process (and the processes it forked): a lock file whose ``flock`` is free is stale and is
  taken over with a note naming the run that left it. A lock recorded by another host is
  never taken over (``flock`` need not reach across a network file system): the message
  says which file to delete. Anything at the lock's path that is not rnn-verify's lock (a
  link, a folder, a file of other content) is refused, never removed.
* :func:`make_temp_dir` / :func:`remove_temp_dir`: a scratch folder of rnn-verify's own
  (Dask's worker scratch space) in the system's temporary folder, named
  ``rnn-verify-<purpose>-XXXXXXXX``. :func:`remove_temp_dir` is the one recursive removal in
  rnn-verify: it acts only on a real folder (not a link) whose name carries that prefix, made
  by :func:`make_temp_dir` in this process, and never follows a link inside it (a link is
  unlinked, what it points to is untouched).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import posixpath
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.errors import InvalidArgument, VerifyError

__all__ = [
    "MARKER",
    "REPORT_MARKER",
    "Marker",
    "OutputWriteError",
    "foreign_entries",
    "is_report_folder",
    "lock_path",
    "make_temp_dir",
    "output_lock",
    "preflight_dir",
    "preflight_file",
    "read_marker",
    "recorded_digest",
    "remove_temp_dir",
    "sha256_hex",
    "staged_files",
    "write_dir_atomic",
    "write_file_atomic",
    "write_files_atomic",
]

#: the marker file of a report folder (holds the manifest of what rnn-verify wrote there)
MARKER = ".rnn-verify-report"
#: kept for callers of earlier versions: the name of the marker
REPORT_MARKER = MARKER
MARKER_FORMAT = "rnn-verify.report-folder"
MARKER_VERSION = 1
_MAX_MARKER_BYTES = 4 * 2**20
_MAX_ENTRIES = 100_000
#: the files (and folder) every report has: checked by :func:`preflight_dir` before any compute
REPORT_NAMES = ("results.json", "report.md", "report.html", "junit.xml", "figures/")
#: signals held back while a report folder is being changed
_HELD = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@dataclass(frozen=True)
class Marker:
    """The content of a report folder's marker: what rnn-verify wrote there."""

    tool: str
    version: str
    files: frozenset[str]
    dirs: frozenset[str]
    #: relative path -> SHA-256 (hex) of the bytes rnn-verify wrote there (empty in markers of earlier versions)
    sha256: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        doc = {
            "format": MARKER_FORMAT,
            "format_version": MARKER_VERSION,
            "tool": self.tool,
            "version": self.version,
            "files": sorted(self.files),
            "dirs": sorted(self.dirs),
            "sha256": {k: self.sha256[k] for k in sorted(self.sha256)},
        }
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 lower-case hex digits (what the marker records, what ``sha256sum`` prints)."""
    return hashlib.sha256(data).hexdigest()


def tool_version() -> str:
    """rnn-verify's installed version (written into markers and reports)."""
    try:
        from importlib.metadata import version

        return version("rnn-verify")
    except Exception:
        return "0.1.0 (not installed)"


def safe_relpath(rel: object, what: str = "file name") -> str:
    """``rel`` as a normalised relative POSIX path inside a folder; raises for anything else.

    Refused: non-strings, empty names, absolute paths, ``..`` or ``.`` components,
    backslashes, NUL, and the marker's own name.
    """
    if not isinstance(rel, str) or not rel or len(rel) > 1024:
        raise InvalidArgument(what, rel, "must be a non-empty relative path")
    parts = rel.split("/")
    if (
        rel.startswith("/")
        or "\\" in rel
        or "\x00" in rel
        or any(p in ("", ".", "..") for p in parts)
        or posixpath.normpath(rel) != rel
    ):
        raise InvalidArgument(what, rel, "must stay inside the report folder (a plain relative path)")
    if parts[0] == MARKER:
        raise InvalidArgument(what, rel, f"{MARKER} is the report folder's marker")
    return rel


def _marker_error(out: Path, why: str) -> InvalidArgument:
    return InvalidArgument(
        "--out",
        str(out),
        f"its report marker {MARKER} is damaged ({why}); refusing to touch the folder. If it is an rnn-verify "
        f"report you want replaced, move it aside or delete it yourself, or choose another folder",
    )


def read_marker(out: Path | str) -> Marker | None:
    """The marker of folder ``out`` (``None`` where there is none); a damaged marker raises InvalidArgument."""
    out = Path(out)
    path = out / MARKER
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _marker_error(out, f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _marker_error(out, "it is not a regular file")
    if st.st_size > _MAX_MARKER_BYTES:
        raise _marker_error(out, f"{st.st_size} bytes, more than a marker holds")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant, parse_int=bounded_int)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _marker_error(out, f"not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise _marker_error(out, "not a JSON object")
    if doc.get("format") != MARKER_FORMAT:
        raise _marker_error(out, f"field 'format' must be {MARKER_FORMAT!r}")
    if doc.get("format_version") != MARKER_VERSION:
        raise _marker_error(out, f"field 'format_version' must be {MARKER_VERSION}")
    for key in ("tool", "version"):
        if not isinstance(doc.get(key), str):
            raise _marker_error(out, f"field {key!r} must be a string")
    lists: dict[str, frozenset[str]] = {}
    for key in ("files", "dirs"):
        items = doc.get(key)
        if not isinstance(items, list) or len(items) > _MAX_ENTRIES:
            raise _marker_error(out, f"field {key!r} must be a list of relative paths")
        try:
            lists[key] = frozenset(safe_relpath(x, f"{MARKER}: {key}") for x in items)
        except InvalidArgument as exc:
            raise _marker_error(out, f"field {key!r}: {exc}") from None
    digests = _marker_digests(out, doc.get("sha256", {}), lists["files"])
    return Marker(str(doc["tool"]), str(doc["version"]), lists["files"], lists["dirs"], digests)


def _marker_digests(out: Path, items: object, files: frozenset[str]) -> dict[str, str]:
    """The marker's optional ``sha256`` field: an object mapping files of the manifest to 64 lower-case hex digits."""
    if not isinstance(items, dict) or len(items) > _MAX_ENTRIES:
        raise _marker_error(out, "field 'sha256' must be an object mapping file names to SHA-256 digests")
    digests: dict[str, str] = {}
    for rel, hexd in items.items():
        if rel not in files:
            raise _marker_error(out, f"field 'sha256' names {str(rel)[:80]!r}, which its 'files' do not list")
        if not isinstance(hexd, str) or len(hexd) != 64 or any(c not in "0123456789abcdef" for c in hexd):
            raise _marker_error(out, f"field 'sha256': the digest of {rel!r} is not 64 lower-case hex digits")
        digests[rel] = hexd
    return digests


def recorded_digest(path: Path | str) -> tuple[str | None, str]:
    """The SHA-256 that rnn-verify recorded for file ``path`` when it wrote it into a report folder, and why not.

    Returns ``(digest, "")`` when the marker of the folder holding ``path`` (links resolved) records one for it,
    else ``(None, why)``: the folder is no report folder, its marker (an earlier version's) records no digest for
    the file, or the marker is damaged. Nothing is raised: a missing digest is a note, not an error.
    """
    real = Path(os.path.realpath(Path(path).expanduser()))
    folder = real.parent
    try:
        marker = read_marker(folder)
    except InvalidArgument:
        return None, f"the marker {MARKER} of {folder} is damaged"
    if marker is None:
        return None, f"{folder} is not a report folder (no {MARKER} marker)"
    if real.name not in marker.files or real.name not in marker.sha256:
        return None, f"the marker {MARKER} of {folder} records no digest of {real.name} (an earlier rnn-verify?)"
    return marker.sha256[real.name], ""


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


#: most digits of an integer in a marker rnn-verify reads (what Python would refuse beyond 4300 is refused here, in
#: words; a marker holds small integers only)
MAX_MARKER_INT_DIGITS = 309


def bounded_int(literal: str) -> int:
    """``json.loads``' ``parse_int`` for rnn-verify's own small files: an integer of more than
    :data:`MAX_MARKER_INT_DIGITS` digits raises ValueError saying so (not Python's int-from-string message)."""
    digits = len(literal.lstrip("-"))
    if digits > MAX_MARKER_INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits, more than the {MAX_MARKER_INT_DIGITS} allowed")
    return int(literal)


def is_report_folder(path: Path | str) -> bool:
    """True if ``path`` is a folder (not a link) holding a valid report marker."""
    p = Path(path)
    try:
        return p.is_dir() and not p.is_symlink() and read_marker(p) is not None
    except InvalidArgument:
        return False


def _probe_writable(parent: Path, argument: str, target: Path) -> None:
    try:
        probe = tempfile.mkdtemp(prefix=".rnn-verify-probe-", dir=parent)
    except OSError as exc:
        raise InvalidArgument(argument, str(target), f"cannot write into {parent}: {exc.strerror or exc}") from None
    os.rmdir(probe)  # the empty folder made on the line above, nothing else


def _resolve_out(out: Path | str, argument: str) -> Path:
    raw = Path(out).expanduser().absolute()
    if raw.is_symlink():
        try:
            return raw.resolve(strict=True)
        except (OSError, RuntimeError):
            raise InvalidArgument(
                argument, str(raw), "is a symbolic link to nothing (or a loop); give a real folder"
            ) from None
    return raw


def preflight_dir(out: Path | str, argument: str = "--out", *, needs: Iterable[str] = REPORT_NAMES) -> Path:
    """Check (and create the parents of) an output folder before any compute; return its absolute path.

    Accepted: a folder that does not exist yet, an empty folder, a folder with a valid
    marker (an earlier report). A symbolic link is followed to its folder (the rules
    apply there). Refused (InvalidArgument naming ``argument`` and the folder): a file,
    a non-empty folder without a marker (in particular one holding ``results.json``), a
    damaged marker, a marked folder where a path in ``needs`` (default
    :data:`REPORT_NAMES`, the names every report writes) is held by an entry
    rnn-verify did not write, an unwritable location.
    """
    out = _resolve_out(out, argument)
    if out.exists() and not out.is_dir():
        raise InvalidArgument(argument, str(out), "exists and is not a folder")
    if out.is_dir():
        marker = read_marker(out)
        if marker is None:
            try:
                entries = sorted(p.name for p in out.iterdir())
            except OSError as exc:
                raise InvalidArgument(argument, str(out), f"cannot be listed: {exc.strerror or exc}") from None
            if entries:
                shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
                if "results.json" in entries:
                    why = (
                        f"holds results.json but no {MARKER} marker, so rnn-verify did not make it a report "
                        "folder (a project folder, or a report of an earlier version); refusing to write into it"
                    )
                else:
                    why = f"is a non-empty folder without the {MARKER} marker ({shown}); refusing to write into it"
                raise InvalidArgument(
                    argument,
                    str(out),
                    f"{why}: it is not an rnn-verify report folder, and writing there could replace files rnn-verify "
                    "did not write. Choose a new or empty folder",
                )
        else:  # the report's own names must not be held by foreign entries: refused now, not after the compute
            _refuse_conflicts(out, marker.files, needs, argument)
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgument(argument, str(out), f"cannot create {parent}: {exc.strerror or exc}") from None
    _probe_writable(parent, argument, out)
    if out.is_dir():  # files are moved into it: it must be writable too
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
def _held_signals() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP for the duration (main thread, POSIX); a no-op elsewhere."""
    can = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if can:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, set(_HELD))
    try:
        yield
    finally:
        if can:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


#: kept for callers of earlier versions
_no_sigint = _held_signals


class OutputWriteError(VerifyError, OSError):
    """The OS refused a write of rnn-verify's output (a full disk, a read-only file system, a quota, ...).

    An :class:`OSError` (``errno``, ``strerror``; ``filename`` is the output path that failed, never a temporary
    name) and a :class:`~verify.errors.VerifyError`, so that the CLI prints its one line and exits 2. The message
    names the path and says what became of the output: ``cannot write /x/o/results.json: No space left on device
    (ENOSPC); the previous report in /x/o is unchanged``.
    """

    def __init__(self, path: Path | str, exc: OSError, state: str, action: str = "cannot write") -> None:
        code = exc.errno if exc.errno is not None else 0
        OSError.__init__(self, code, exc.strerror or str(exc), str(path))
        name = errno.errorcode.get(code, "")
        why = f"{exc.strerror or exc}" + (f" ({name})" if name else "")
        hint = "; free some space and rerun" if code in (errno.ENOSPC, errno.EDQUOT) else ""
        self.message = f"{action} {path}: {why}; {state}{hint}"

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (a worker process may send it back)
        return (_output_write_error, (self.errno, self.strerror, self.filename, self.message))


def _output_write_error(code: int, strerror: str, filename: str, message: str) -> OutputWriteError:
    err = OutputWriteError(filename, OSError(code, strerror), "")
    err.message = message
    return err


def _write_fd(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the open file ``fd``: the one low-level write of every output file (tests make it
    fail, e.g. with ``ENOSPC``, at the k-th file)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_new(path: Path, data: bytes, *, sync: bool = False) -> None:
    """Create ``path`` (which must not exist; a link is not followed) holding ``data``, mode 0644."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        _write_fd(fd, data)
        os.fchmod(fd, 0o644)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and ``os.replace``.

    For a file the user named explicitly (it is replaced as a whole) and for the
    marker; the temporary file is removed if anything fails. An OS error (a full
    disk, ...) raises :class:`OutputWriteError` naming ``path``; what was at ``path``
    is then as it was.
    """
    return write_files_atomic([(path, data)])[0]


def write_files_atomic(items: Iterable[tuple[Path | str, bytes]]) -> list[Path]:
    """Write several files the user named (``--junit``, ``--json``) all or none: :func:`staged_files`, committed."""
    with staged_files(items) as commit:
        return commit()


@contextlib.contextmanager
def staged_files(items: Iterable[tuple[Path | str, bytes]]) -> Iterator[Callable[[], list[Path]]]:
    """Write each ``(path, data)`` into a temporary sibling of ``path`` now; yield ``commit``, which moves them all
    into place (renames only, signals held) and returns the paths.

    Nothing is replaced before ``commit``: a caller stages these files, writes a report folder, then commits, so
    that a full disk anywhere leaves every output as it was. An OS error raises :class:`OutputWriteError` naming
    the path. The temporary files are removed on every path out (an exception, Ctrl-C, no commit).
    """
    staged: list[tuple[Path, str]] = []
    pending: list[str] = []

    def commit() -> list[Path]:
        done: list[Path] = []
        with _held_signals():
            for path, tmp in staged:
                try:
                    os.replace(tmp, path)
                except OSError as exc:
                    state = f"{path} is as it was" + (f"; {', '.join(map(str, done))} written" if done else "")
                    raise OutputWriteError(path, exc, state) from None
                pending.remove(tmp)
                done.append(path)
        return done

    try:
        for path_in, data in items:
            path = Path(path_in).expanduser().absolute()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = _write_temp(path, data, pending)
            except OSError as exc:
                was = "is as it was" if os.path.lexists(path) else "was not written"
                raise OutputWriteError(path, exc, f"{path} {was}, and so is every other output") from None
            staged.append((path, tmp))
        yield commit
    finally:
        with _held_signals():
            for tmp in pending:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)  # our own temporary file, made above


def _write_temp(path: Path, data: bytes, made: list[str]) -> str:
    """``data`` in a new temporary sibling of ``path`` (synced, mode 0644); its name is appended to ``made`` as soon
    as it exists (the caller removes what ``made`` lists on every path out) and returned. Raises the OS's error as
    it came."""
    # the temporary name stays within NAME_MAX whatever the length of the name (255 bytes is valid)
    fd, tmp = tempfile.mkstemp(prefix=f".{_short_name(path.name)}.tmp-", dir=path.parent)
    made.append(tmp)
    try:
        _write_fd(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o644)
    return tmp


def _replace_file(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary sibling and ``os.replace``; raises the OS's error as it came."""
    made: list[str] = []
    try:
        tmp = _write_temp(path, data, made)
        with _held_signals():
            os.replace(tmp, path)
    except BaseException:
        with _held_signals():
            for tmp in made:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)  # our own temporary file, made above
        raise


def _short_name(name: str) -> str:
    """At most 64 characters of ``name``, for the name of a temporary sibling (which adds a prefix and a suffix)."""
    return name if len(name) <= 64 else name[:64]


# ------------------------------------------------------------------ the guard
def _walk(root: Path, rel: str) -> tuple[Path, str]:
    """The path of ``rel`` under ``root`` and what is there: 'missing', 'file', 'dir' or 'foreign'.

    'foreign' = a symbolic link (at the end or on the way), a special file, or a
    parent component that is not a real folder. Nothing is followed.
    """
    cur = root
    parts = rel.split("/")
    for i, part in enumerate(parts):
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return root / rel, "missing"
        except NotADirectoryError:
            return root / rel, "foreign"
        last = i == len(parts) - 1
        if stat.S_ISLNK(st.st_mode):
            return root / rel, "foreign"
        if not last and not stat.S_ISDIR(st.st_mode):
            return root / rel, "foreign"
        if last:
            if stat.S_ISREG(st.st_mode):
                return cur, "file"
            if stat.S_ISDIR(st.st_mode):
                return cur, "dir"
            return cur, "foreign"
    return root / rel, "missing"  # pragma: no cover - rel is never empty


def _guarded_change(
    root: Path,
    rel: str,
    written: Iterable[str],
    *,
    replace_with: Path | None = None,
    folder: bool = False,
) -> bool:
    """The one place that removes or replaces report content; True if it acted.

    * ``folder=False, replace_with=None``: unlink ``root/rel`` if ``rel`` is in
      ``written`` and is a regular file reached without following a link.
    * ``replace_with=src``: move ``src`` onto ``root/rel`` (``os.replace``) if the
      path is free, or holds a regular file listed in ``written``.
    * ``folder=True``: ``rmdir`` the folder ``root/rel`` if listed in ``written``,
      a real folder and empty (``rmtree`` is never used).

    Anything else (not listed, a link anywhere on the way, a special file, a
    non-empty folder) is left alone and the function returns False.
    """
    rel = safe_relpath(rel)
    path, what = _walk(root, rel)
    listed = rel in set(written)
    if folder:
        if not (listed and what == "dir"):
            return False
        try:
            os.rmdir(path)
        except OSError as exc:  # not empty: something else lives there now
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise
        return True
    if replace_with is not None:
        if what == "missing" or (what == "file" and listed):
            os.replace(replace_with, path)
            return True
        return False
    if what == "file" and listed:
        os.unlink(path)
        return True
    return False


def _refuse_conflicts(out: Path, written: frozenset[str], names: Iterable[str], argument: str) -> None:
    """Raise if a path the report needs (a file, or a folder for names ending in '/') is held by a foreign entry."""
    for name in sorted(names):
        rel = name.rstrip("/")
        dirs = _parent_dirs(rel) + ([rel] if name.endswith("/") else [])
        for d in dirs:
            _, what = _walk(out, d)
            if what not in ("missing", "dir"):
                raise InvalidArgument(argument, str(out), f"{d} there is not a plain folder; refusing to write into it")
        if name.endswith("/"):
            continue
        _, what = _walk(out, rel)
        if what == "missing" or (what == "file" and rel in written):
            continue
        raise InvalidArgument(
            argument,
            str(out),
            f"{rel} there was not written by rnn-verify (it is not in the {MARKER} manifest, or it is a link "
            "or a folder); refusing to replace it. Move it away or choose another folder",
        )


def _parent_dirs(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _ensure_dirs(root: Path, rel: str, made: set[str]) -> None:
    """Create the parent folders of ``rel`` inside ``root`` (real folders only), recording those it made."""
    for d in _parent_dirs(rel):
        path, what = _walk(root, d)
        if what == "missing":
            os.mkdir(path)
            made.add(d)
        elif what != "dir":
            raise InvalidArgument("report folder", str(root / d), "is not a plain folder (a link or a file)")


def _cleanup_staging(staging: Path, files: Iterable[str], made: Iterable[str]) -> bool:
    """Remove our own temporary folder: the files we staged (a partly written one included), the staged marker,
    the folders we made, then the folder itself; True if it is gone. Signals wait meanwhile (a second Ctrl-C
    does not leave it half removed)."""
    staged = list(files)
    with _held_signals():
        for rel in staged:
            with contextlib.suppress(OSError, InvalidArgument):
                _guarded_change(staging, rel, staged)
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(staging / MARKER).st_mode):
                os.unlink(staging / MARKER)  # the marker we staged (not a report file: the guard refuses its name)
        dirs = sorted(made, key=lambda d: d.count("/"), reverse=True)
        for d in dirs:
            with contextlib.suppress(OSError, InvalidArgument):
                _guarded_change(staging, d, dirs, folder=True)
        with contextlib.suppress(OSError):
            os.rmdir(staging)  # mkdtemp's folder: empty now unless someone put something in it
    return not os.path.lexists(staging)


def write_dir_atomic(out: Path | str, files: Mapping[str, bytes], *, removed: list[str] | None = None) -> Path:
    """Write the report ``files`` (relative path -> bytes) into folder ``out``; see the module docstring.

    Files of the previous report (its manifest) that the new one does not have are removed; their relative paths
    are appended to ``removed`` where given, so that the caller says exactly what was removed.

    Returns the folder's absolute path. Raises InvalidArgument before changing anything when ``out`` is not acceptable
    (:func:`preflight_dir`), a file name would leave the folder, or a foreign entry
    occupies a path the report needs. An OS error (a full disk, ...) raises :class:`OutputWriteError` naming the
    path that failed; the staging folder is removed on every path out, and an error while staging (the writes)
    leaves ``out`` as it was.
    """
    out = preflight_dir(out, needs=())
    names = [safe_relpath(rel) for rel in files]
    old = read_marker(out) if out.is_dir() else None
    old_files = old.files if old else frozenset()
    old_dirs = old.dirs if old else frozenset()
    new_dirs_needed = {d for rel in names for d in _parent_dirs(rel)}
    # refuse before anything changes: a needed path held by something rnn-verify did not write
    if out.is_dir():
        _refuse_conflicts(out, old_files, names, argument="--out")
    stage_parent = out.parent
    if out.is_dir() and os.stat(out).st_dev != os.stat(stage_parent).st_dev:
        stage_parent = out  # a mount point: stage on its own file system so that os.replace works
    if old is not None:
        unchanged = f"the previous report in {out} is unchanged"
    elif out.is_dir():
        unchanged = f"{out} is unchanged"
    else:
        unchanged = f"nothing was written ({out} was not created)"
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{_short_name(out.name)}.tmp-", dir=stage_parent))
    except OSError as exc:
        raise OutputWriteError(
            stage_parent, exc, unchanged, "cannot create a staging folder for the report in"
        ) from None
    staged_dirs: set[str] = set()
    staged: list[str] = []
    created_out = False
    phase = "staging"  # then "moving" once the first entry of out changed, "final" for the last marker write
    current = out
    try:
        for rel in names:
            current = out / rel
            _ensure_dirs(staging, rel, staged_dirs)
            staged.append(rel)  # listed before it is written: a partly written file is removed too
            _write_new(staging / rel, files[rel])
        version = tool_version()
        digests = {rel: sha256_hex(files[rel]) for rel in names}
        # first the union: an unexpected stop below leaves every path we may have written listed
        pending = Marker("rnn-verify", version, old_files | set(names), old_dirs | new_dirs_needed, digests)
        current = out / MARKER
        _write_new(staging / MARKER, pending.to_json(), sync=True)  # staged too: no write is left for the moves
        with _held_signals():
            current = out
            if not out.exists():
                os.mkdir(out)
                created_out = True
            current = out / MARKER
            os.replace(staging / MARKER, out / MARKER)
            phase = "moving"
            made: set[str] = set()
            for rel in names:
                current = out / rel
                _ensure_dirs(out, rel, made)
                if not _guarded_change(out, rel, old_files, replace_with=staging / rel):
                    raise InvalidArgument("--out", str(out), f"{rel} changed while the report was written")
            for rel in sorted(old_files - set(names)):
                current = out / rel
                if _guarded_change(out, rel, old_files) and removed is not None:
                    removed.append(rel)
            ours = old_dirs | made
            for d in sorted(ours - new_dirs_needed, key=lambda d: d.count("/"), reverse=True):
                current = out / d
                _guarded_change(out, d, ours, folder=True)
            dirs_now = {d for d in ours if _walk(out, d)[1] == "dir"}
            final = Marker("rnn-verify", version, frozenset(names), frozenset(dirs_now), digests)
            if final != pending:  # only where the previous report had files or folders this one does not
                phase, current = "final", out / MARKER
                _replace_file(out / MARKER, final.to_json())
    except BaseException as exc:
        gone = _cleanup_staging(staging, staged, staged_dirs)
        if created_out:
            with contextlib.suppress(OSError):
                os.rmdir(out)  # only if still empty
        if not isinstance(exc, OSError) or isinstance(exc, OutputWriteError):
            raise
        left = "" if gone else f"; the staging folder {staging} could not be removed (not empty?)"
        if phase == "staging":
            state = unchanged
        elif phase == "final":
            state = (
                f"the new report is complete in {out}; its marker still lists files of the previous report that are "
                "gone (harmless: the next run rewrites it)"
            )
        else:
            state = (
                f"{out} may hold part of the new report (its marker lists every file rnn-verify wrote there, so a "
                "rerun replaces them)"
            )
        raise OutputWriteError(current, exc, state + left) from None
    _cleanup_staging(staging, [], staged_dirs)
    return out


# ------------------------------------------------------------ the output lock
#: the name of the lock file beside a folder ``NAME``: ``.NAME.rnn-verify-lock``
LOCK_SUFFIX = ".rnn-verify-lock"
LOCK_FORMAT = "rnn-verify.output-lock"
_MAX_LOCK_BYTES = 64 * 1024
#: how long a lock file with no holder recorded yet is given to its creator (between its O_EXCL and its flock)
_LOCK_SETTLE_S = 1.0
#: locks this process holds: lock path -> [fd, depth] (a nested output_lock of the same folder is re-entrant)
_HELD_LOCKS: dict[str, list[int]] = {}
_HELD_LOCKS_GUARD = threading.Lock()


def lock_path(out: Path | str, argument: str = "--out") -> Path:
    """The lock file of output folder ``out``: ``.<name>.rnn-verify-lock`` beside it (``out`` a link: beside the
    folder it points to), in the folder that also holds its staging folders ``.<name>.tmp-*``."""
    return _lock_of(_resolve_out(out, argument))


def _lock_of(out: Path) -> Path:
    name = out.name or "root"
    short = _short_name(name)
    if short != name:  # two long names sharing their first 64 characters get different locks
        short += "-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return out.parent / f".{short}{LOCK_SUFFIX}"


def _printable(text: object, limit: int = 300) -> str:
    """``text`` for a one-line message: control characters and lone surrogates escaped, at most ``limit`` chars."""
    s = str(text)
    out = "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else ascii(c)[1:-1] for c in s)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _lock_info(fd: int) -> dict[str, object] | None:
    """The holder recorded in an open lock file: its JSON object, ``{}`` when the file is empty (its creator has
    not written it yet), None when it holds something that is not an rnn-verify lock."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, _MAX_LOCK_BYTES + 1)
    except OSError:
        return None
    if not data.strip():
        return {}
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant, parse_int=bounded_int)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != LOCK_FORMAT:
        return None
    return doc


def _holder(info: Mapping[str, object]) -> str:
    """``pid N on HOST, started T: COMMAND`` from a lock file's JSON."""
    return (
        f"pid {_printable(info.get('pid', '?'), 20)} on {_printable(info.get('host', '?'), 80)}, started "
        f"{_printable(info.get('started', '?'), 40)}: {_printable(info.get('command') or '(command not recorded)')}"
    )


def _pid_alive(pid: object) -> bool:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def _same_file(fd: int, path: Path) -> bool:
    """True if ``path`` (not followed) is still the file open as ``fd`` (not unlinked or replaced meanwhile)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _record_holder(fd: int, info: bytes) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    _write_fd(fd, info)


def _acquire_lock(lock: Path, out: Path, argument: str, info: bytes) -> int:
    """Create (or take over, if stale) ``lock`` and hold ``flock`` on it; the open fd. Raises InvalidArgument
    naming ``argument`` when a live run holds it, or when something that is not rnn-verify's lock is in the way."""
    in_use = f"is in use by another rnn-verify run ({{holder}}); wait for it or choose another {argument}"
    deadline = time.monotonic() + _LOCK_SETTLE_S
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        fd = -1
        try:
            with _held_signals():  # no interruption between creating the file and recording it as ours
                try:
                    fd = os.open(lock, flags | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    fd = -1
                if fd >= 0:
                    while not _try_flock(fd):  # a run probing it right now holds it for a moment
                        if time.monotonic() > deadline + _LOCK_SETTLE_S:  # it took the file over: it is the holder
                            held = _lock_info(fd)
                            os.close(fd)
                            fd = -1  # the file is the other run's now: not ours to remove
                            holder = _holder(held) if held else "its holder has not recorded itself yet"
                            raise InvalidArgument(argument, str(out), in_use.format(holder=holder))
                        time.sleep(0.001)
                    _record_holder(fd, info)
                    return fd
        except BaseException as exc:
            if fd >= 0:  # created above but not ours yet (a full disk while recording the holder, ...): removed
                with contextlib.suppress(OSError):
                    os.unlink(lock)
                os.close(fd)
            if isinstance(exc, OSError):
                raise InvalidArgument(
                    argument, str(out), f"its lock file {lock} cannot be created: {exc.strerror or exc}"
                ) from None
            raise
        try:
            fd = os.open(lock, flags)
        except FileNotFoundError:
            continue  # released meanwhile: create it
        except OSError as exc:
            raise InvalidArgument(
                argument,
                str(out),
                f"{lock} is in the way of its lock file and is not a lock rnn-verify wrote (a link, a folder, or "
                f"unreadable: {exc.strerror or exc}); move it away if no rnn-verify run writes into {out}",
            ) from None
        keep = False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InvalidArgument(argument, str(out), f"{lock} is in the way of its lock file and is not a file")
            if not _try_flock(fd):  # held: a live run (flock ends with the process that holds it, even on kill -9)
                held = _lock_info(fd)
                holder = _holder(held) if held else "its holder has not recorded itself yet"
                if held and held.get("host") == socket.gethostname() and not _pid_alive(held.get("pid")):
                    holder += "; that pid has exited, but a process it started still holds the lock"
                raise InvalidArgument(argument, str(out), in_use.format(holder=holder))
            if not _same_file(fd, lock):
                continue  # released (unlinked) between our open and our flock: start again
            held = _lock_info(fd)
            if held is None:
                raise InvalidArgument(
                    argument,
                    str(out),
                    f"{lock} is in the way of its lock file and does not hold an rnn-verify lock; move it away if "
                    f"no rnn-verify run writes into {out}",
                )
            if not held and time.monotonic() < deadline:  # its creator may be between O_EXCL and flock
                time.sleep(0.01)
                continue
            here = socket.gethostname()
            if held and held.get("host") != here:  # flock may not reach another host on a network file system
                raise InvalidArgument(
                    argument,
                    str(out),
                    in_use.format(holder=_holder(held))
                    + f" (recorded in {lock}; if no rnn-verify run on {_printable(held.get('host'), 80)} writes "
                    "there, delete that file)",
                )
            with _held_signals():
                _record_holder(fd, info)
            keep = True
            was = _holder(held) if held else "no holder recorded"
            alive = " (that pid now belongs to another process)" if held and _pid_alive(held.get("pid")) else ""
            print(
                f"rnn-verify: note: took over the stale lock {lock} of a run that ended without releasing it "
                f"({was}{alive})",
                file=sys.stderr,
            )
            return fd
        except OSError as exc:  # no flock on this file system (ENOLCK), a full disk while recording the holder, ...
            raise InvalidArgument(
                argument, str(out), f"its lock file {lock} cannot be locked or written: {exc.strerror or exc}"
            ) from None
        finally:
            if not keep:
                os.close(fd)  # closing also drops a flock taken above


def _release_lock(lock: Path, fd: int) -> None:
    """Remove ``lock`` if it is still our file, then close ``fd`` (which drops the flock); signals wait."""
    with _held_signals():
        try:
            if _same_file(fd, lock):
                with contextlib.suppress(OSError):
                    os.unlink(lock)  # unlinked while still held: a run that opened it meanwhile sees it is gone
        finally:
            os.close(fd)


@contextlib.contextmanager
def output_lock(out: Path | str, argument: str = "--out", *, command: str = "") -> Iterator[Path]:
    """Hold an exclusive lock on output folder ``out`` for the duration; yields the lock file's path.

    Take it before anything is written into ``out`` (it works for a folder that does not exist yet) and keep it
    until the last write: a second rnn-verify run into the same folder -- in this process through another path to
    it, or in any other process -- raises :class:`~verify.errors.InvalidArgument` naming ``argument``, the folder
    and the holder (``pid N on HOST, started T: COMMAND``; the CLI exits 2). ``command`` is what the holder is
    recorded as running. The lock file (:func:`lock_path`) is removed on every path out (an exception, Ctrl-C);
    one left by a run killed with SIGKILL is taken over, with a note on stderr. Re-entrant within one process.
    See the module docstring for the design.
    """
    target = _resolve_out(out, argument)
    lock = _lock_of(target)
    with _HELD_LOCKS_GUARD:
        held = _HELD_LOCKS.get(str(lock))
        if held is not None:
            held[1] += 1
    if held is not None:
        try:
            yield lock
        finally:
            with _HELD_LOCKS_GUARD:
                held[1] -= 1
        return
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgument(argument, str(target), f"cannot create {lock.parent}: {exc.strerror or exc}") from None
    info = {
        "format": LOCK_FORMAT,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "folder": str(target),
    }
    data = (json.dumps(info, ensure_ascii=True) + "\n").encode("ascii")
    fd = _acquire_lock(lock, target, argument, data)
    owner = os.getpid()
    with _HELD_LOCKS_GUARD:
        _HELD_LOCKS[str(lock)] = [fd, 1]
    try:
        yield lock
    finally:
        with _HELD_LOCKS_GUARD:
            _HELD_LOCKS.pop(str(lock), None)
        if os.getpid() == owner:  # a forked child leaving the block does not release its parent's lock
            _release_lock(lock, fd)


def foreign_entries(out: Path) -> list[str]:
    """Entries of report folder ``out`` (relative paths, sorted) that are not in its manifest."""
    marker = read_marker(out)
    if marker is None:
        return []
    known = set(marker.files) | set(marker.dirs) | {MARKER}
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(out, followlinks=False):
        base = Path(dirpath).relative_to(out).as_posix()
        for name in sorted(dirnames + filenames):
            rel = name if base == "." else f"{base}/{name}"
            if rel not in known:
                found.append(rel)
        dirnames[:] = [d for d in dirnames if (d if base == "." else f"{base}/{d}") in known]
    return sorted(found)


# ------------------------------------------------------------- scratch folders
#: the name prefix of every temporary folder rnn-verify makes (:func:`make_temp_dir`)
TEMP_PREFIX = "rnn-verify-"
_MADE_TEMP: set[str] = set()


def make_temp_dir(purpose: str) -> Path:
    """A new, empty scratch folder ``$TMPDIR/rnn-verify-<purpose>-XXXXXXXX`` (removed by :func:`remove_temp_dir`)."""
    path = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{purpose}-")).absolute()
    _MADE_TEMP.add(str(path))
    return path


def remove_temp_dir(path: Path | str) -> bool:
    """Remove a folder :func:`make_temp_dir` made in this process, with its content; True if it is gone.

    Anything else (another folder, a link, a folder without the prefix) is left alone (False). Inside, links
    are unlinked without being followed; an entry that cannot be removed (still in use) is left, and so is the
    folder then (False).
    """
    p = Path(path).absolute()
    if str(p) not in _MADE_TEMP or not p.name.startswith(TEMP_PREFIX) or p.is_symlink() or not p.is_dir():
        return False
    for dirpath, dirnames, filenames in os.walk(p, topdown=False, followlinks=False):
        for name in filenames:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            sub = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                if os.path.islink(sub):
                    os.unlink(sub)  # a link: removed, never followed
                else:
                    os.rmdir(sub)
    try:
        os.rmdir(p)
    except OSError:
        return False
    _MADE_TEMP.discard(str(p))
    return True
