r"""The gallery: the field's published implementations of online recurrent learning, judged by the catalog.

One module per public repository (:data:`REPOSITORIES`), each declaring a :class:`Repository` -- where the code
lives, the commit its adapters were written for, its license -- and its :class:`Entry` rows: an algorithm of
that repository, the ``--impl`` target it fills (``uoro``, ``rtrl.snap``, ``uoro.kfrtrl`` ...) and the name of
the adapter in the module (a factory written against the repository's *public* API, a few lines; no code of
the repository is copied: the user names a checkout and the adapter imports from it).

Nothing here imports a repository: the gallery process (``rnn-verify gallery``) reads the declarations, finds
each checkout's commit with ``git`` and runs every entry as ``rnn-verify run --impl TARGET=SPEC --impl-only``
in a child process whose isolated workers import the code (the rule of :mod:`verify.run.pool`: the process that
decides an exit status never imports or calls code under test). An adapter finds its checkout with
:func:`checkout_path` from the environment variable :func:`env_var` names, which the gallery sets for the child
and a user sets by hand to reproduce one row::

    RNN_VERIFY_GALLERY_VANILLA_RTRL=~/src/vanilla-rtrl \
        rnn-verify run --impl uoro=verify.gallery.vanilla_rtrl:uoro --impl-only
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from verify.errors import InvalidArgument

__all__ = [
    "GLUE_TARGET",
    "REPOSITORIES",
    "Entry",
    "Repository",
    "checkout_path",
    "env_var",
    "glue_lines",
    "repositories",
    "repository",
]

#: the most lines of glue an adapter should take (issue 38); an entry over it states why (``Entry.glue_why``)
GLUE_TARGET = 30

#: the gallery's modules, in the order of the table (``verify.gallery.<module>``)
REPOSITORIES = ("vanilla_rtrl", "snapjax", "jax_rtrl", "fpp", "uoro_demo")


@dataclass(frozen=True)
class Entry:
    """One algorithm of a repository as the catalog runs it.

    ``algorithm``: the repository's name for it (``"UORO"``, ``"KF_RTRL"``); ``target``: the ``--impl``
    ``FAMILY[.field]`` it fills; ``adapter``: the name of the factory in the gallery module (the spec is
    ``verify.gallery.<module>:<adapter>``); ``claims``: the claims to run (empty: every claim that exercises
    ``target``, as ``--impl-only`` selects); ``requires``: the importable modules it needs beyond the toolkit's
    (``"jax"``, ``"equinox"``, ``"flax"``): a missing one makes the row SKIPPED with the reason; ``skip``: a
    reason the row cannot run at all (stated, never a traceback); ``note``: what the reader should know
    (a variant, a difference from the paper); ``truth``: how the verdicts were established independently of the
    claim that gave them (exact enumeration, the toolkit's float64 references, a check of one's own);
    ``findings``: what the claims found in the code -- each with its evidence -- in one sentence each;
    ``glue_why``: why the adapter takes more than :data:`GLUE_TARGET` lines of glue, where it does."""

    algorithm: str
    target: str
    adapter: str
    claims: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    skip: str = ""
    note: str = ""
    truth: str = ""
    findings: tuple[str, ...] = ()
    glue_why: str = ""


@dataclass(frozen=True)
class Repository:
    """A public repository: ``name`` (the checkout's short name: ``--checkout NAME=DIR``), ``url``
    (``owner/name`` on GitHub), ``commit`` the adapters were written for, ``license`` (as its repository states
    it; ``"none"`` where it has no license file), ``language`` (``numpy``, ``torch``, ``jax``), ``marker``
    (files a checkout must have) and its ``entries``. ``module`` is filled by :func:`repository`."""

    name: str
    url: str
    commit: str
    license: str
    language: str
    marker: tuple[str, ...]
    entries: tuple[Entry, ...]
    cite: str = ""
    module: str = field(default="", compare=False)


def env_var(name: str) -> str:
    """The environment variable that names the checkout of repository ``name``: ``RNN_VERIFY_GALLERY_<NAME>``."""
    return "RNN_VERIFY_GALLERY_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def checkout_path(repo: Repository, path: str | os.PathLike[str] | None = None) -> Path:
    """The root of ``repo``'s checkout: ``path``, else the environment variable :func:`env_var` names;
    :class:`InvalidArgument` naming which one and its value when it is unset, missing or lacks the marker files."""
    var = env_var(repo.name)
    argument = "path" if path is not None else var
    value = path if path is not None else os.environ.get(var)
    if value is None or str(value) == "":
        raise InvalidArgument(argument, "unset", f"the path of a checkout of github.com/{repo.url}")
    root = Path(value).expanduser()
    if not root.is_dir():
        raise InvalidArgument(argument, str(value), f"an existing directory (a checkout of {repo.url})")
    missing = [f for f in repo.marker if not (root / f).exists()]
    if missing:
        raise InvalidArgument(argument, str(value), f"a checkout of {repo.url} (it has no {', '.join(missing)})")
    return root.resolve()


def repository(module: str) -> Repository:
    """The :class:`Repository` declared by ``verify.gallery.<module>`` (importing the module imports no
    repository: adapters import their checkout when called)."""
    if module not in REPOSITORIES:
        raise InvalidArgument("repository", module, f"one of {', '.join(REPOSITORIES)}")
    mod = importlib.import_module(f"verify.gallery.{module}")
    repo: Repository = mod.REPO
    return Repository(**{**repo.__dict__, "module": module})


def repositories(names: Sequence[str] = ()) -> list[Repository]:
    """Every gallery repository (or those whose ``name`` or module is in ``names``), in table order."""
    out = [repository(m) for m in REPOSITORIES]
    if names:
        unknown = [n for n in names if n not in {r.name for r in out} | {r.module for r in out}]
        if unknown:
            known = ", ".join(r.name for r in out)
            raise InvalidArgument("--repo", ", ".join(unknown), f"a gallery repository: {known}")
        out = [r for r in out if r.name in names or r.module in names]
    return out


def _code_lines(source: str, node: ast.AST) -> set[int]:
    """The line numbers of ``node`` that hold code: no blank line, comment or docstring."""
    lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))  # type: ignore[attr-defined]
    text = source.splitlines()
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines -= set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return {i for i in lines if text[i - 1].strip() and not text[i - 1].strip().startswith("#")}


def glue_lines(repo: Repository, entry: Entry) -> int:
    """The glue an entry costs: the code lines (no blank line, comment or docstring) of its adapter and of the
    module's private helpers (``_name``) and module-level constants it shares with the others -- read with
    :mod:`ast` from the module's file, never imported. The ``REPO`` declaration is not glue."""
    spec = importlib.util.find_spec(f"verify.gallery.{repo.module}")
    if spec is None or spec.origin is None:
        raise InvalidArgument("repository", repo.module, "a module of verify.gallery")
    source = Path(spec.origin).read_text(encoding="utf-8")
    tree = ast.parse(source)
    own: set[int] = set()
    shared: set[int] = set()
    for node in tree.body:
        name = getattr(node, "name", None)
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            if name == entry.adapter:
                own |= _code_lines(source, node)
            elif name is not None and name.startswith("_"):
                shared |= _code_lines(source, node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {getattr(t, "id", "") for t in targets}
            if "REPO" in names or "__all__" in names:
                continue
            if entry.adapter in names:
                own |= _code_lines(source, node)
            elif any(n.startswith("_") for n in names):
                shared |= _code_lines(source, node)
    if not own:
        raise InvalidArgument(f"{repo.module}.{entry.algorithm}.adapter", entry.adapter, "a function in the module")
    return len(own | shared)
