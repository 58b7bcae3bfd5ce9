"""Report folders: rnn-verify writes only into folders it created or marked, and removes only what it wrote.

A report folder carries a **marker**, the file ``.rnn-verify-report`` (JSON)::

    {"format": "rnn-verify.report-folder", "format_version": 1,
     "tool": "rnn-verify", "version": "0.1.0",
     "files": ["junit.xml", "figures/x.a-1.png", "report.html", "report.md", "results.json"],
     "dirs": ["figures"]}

``files`` is the manifest: every relative path rnn-verify wrote there; ``dirs`` the
sub-folders it created. The rules:

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
  ``--junit FILE``, ``golden --out FILE.npz``).
* :func:`make_temp_dir` / :func:`remove_temp_dir`: a scratch folder of rnn-verify's own
  (Dask's worker scratch space) in the system's temporary folder, named
  ``rnn-verify-<purpose>-XXXXXXXX``. :func:`remove_temp_dir` is the one recursive removal in
  rnn-verify: it acts only on a real folder (not a link) whose name carries that prefix, made
  by :func:`make_temp_dir` in this process, and never follows a link inside it (a link is
  unlinked, what it points to is untouched).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from verify.errors import InvalidArgument

__all__ = [
    "MARKER",
    "REPORT_MARKER",
    "Marker",
    "foreign_entries",
    "is_report_folder",
    "make_temp_dir",
    "preflight_dir",
    "preflight_file",
    "read_marker",
    "remove_temp_dir",
    "write_dir_atomic",
    "write_file_atomic",
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

    def to_json(self) -> bytes:
        doc = {
            "format": MARKER_FORMAT,
            "format_version": MARKER_VERSION,
            "tool": self.tool,
            "version": self.version,
            "files": sorted(self.files),
            "dirs": sorted(self.dirs),
        }
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")


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
    return Marker(str(doc["tool"]), str(doc["version"]), lists["files"], lists["dirs"])


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


def write_file_atomic(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and ``os.replace``.

    For a file the user named explicitly (it is replaced as a whole) and for the
    marker; the temporary file is removed if anything fails.
    """
    path = Path(path).expanduser().absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    # the temporary name stays within NAME_MAX whatever the length of the name (255 bytes is a valid name)
    fd, tmp = tempfile.mkstemp(prefix=f".{_short_name(path.name)}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        with _held_signals():
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # our own temporary file, made above
        raise
    return path


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


def _cleanup_staging(staging: Path, files: Iterable[str], made: Iterable[str]) -> None:
    """Remove our own temporary folder: the files we staged, the folders we made, then the folder itself."""
    staged = list(files)
    for rel in staged:
        with contextlib.suppress(OSError, InvalidArgument):
            _guarded_change(staging, rel, staged)
    dirs = sorted(made, key=lambda d: d.count("/"), reverse=True)
    for d in dirs:
        with contextlib.suppress(OSError, InvalidArgument):
            _guarded_change(staging, d, dirs, folder=True)
    with contextlib.suppress(OSError):
        os.rmdir(staging)  # mkdtemp's folder: empty now unless someone put something in it


def write_dir_atomic(out: Path | str, files: Mapping[str, bytes], *, removed: list[str] | None = None) -> Path:
    """Write the report ``files`` (relative path -> bytes) into folder ``out``; see the module docstring.

    Files of the previous report (its manifest) that the new one does not have are removed; their relative paths
    are appended to ``removed`` where given, so that the caller says exactly what was removed.

    Returns the folder's absolute path. Raises InvalidArgument before changing anything when ``out`` is not acceptable
    (:func:`preflight_dir`), a file name would leave the folder, or a foreign entry
    occupies a path the report needs.
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
    staging = Path(tempfile.mkdtemp(prefix=f".{_short_name(out.name)}.tmp-", dir=stage_parent))
    staged_dirs: set[str] = set()
    staged: list[str] = []
    created_out = False
    try:
        for rel in names:
            _ensure_dirs(staging, rel, staged_dirs)
            with open(staging / rel, "xb") as fh:
                fh.write(files[rel])
            staged.append(rel)
            os.chmod(staging / rel, 0o644)
        version = tool_version()
        with _held_signals():
            if not out.exists():
                os.mkdir(out)
                created_out = True
            made: set[str] = set()
            # first the union: an unexpected crash below leaves every path we may have written listed
            pending = Marker("rnn-verify", version, old_files | set(names), old_dirs | new_dirs_needed)
            write_file_atomic(out / MARKER, pending.to_json())
            for rel in names:
                _ensure_dirs(out, rel, made)
                if not _guarded_change(out, rel, old_files, replace_with=staging / rel):
                    raise InvalidArgument("--out", str(out), f"{rel} changed while the report was written")
            for rel in sorted(old_files - set(names)):
                if _guarded_change(out, rel, old_files) and removed is not None:
                    removed.append(rel)
            ours = old_dirs | made
            for d in sorted(ours - new_dirs_needed, key=lambda d: d.count("/"), reverse=True):
                _guarded_change(out, d, ours, folder=True)
            dirs_now = {d for d in ours if _walk(out, d)[1] == "dir"}
            final = Marker("rnn-verify", version, frozenset(names), frozenset(dirs_now))
            write_file_atomic(out / MARKER, final.to_json())
    except BaseException:
        _cleanup_staging(staging, staged, staged_dirs)
        if created_out:
            with contextlib.suppress(OSError):
                os.rmdir(out)  # only if still empty
        raise
    _cleanup_staging(staging, [], staged_dirs)
    return out


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
