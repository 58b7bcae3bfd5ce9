"""Which claims a command acts on: ids and globs (``--claims``), a selection expression (``-k``) and the claims
that failed last (``--lf``).

Light on purpose: it imports the catalog (:mod:`theory.catalog`) and nothing of torch, so that ``rnn-verify list``
and ``explain`` start in a fraction of a second.

``-k EXPR`` works as pytest's: ``and``, ``or``, ``not`` and parentheses over bare words; a word matches a claim
when it is a case-insensitive substring of the claim's id (``family.name``, so the family too) or of its paper's
key (``"Tallec & Ollivier 2017"``: ``-k tallec``). The parser is a small recursive descent (no ``eval``); a
malformed expression is :class:`~verify.errors.InvalidArgument` naming it and the place.

``--lf`` reads a small state file, :func:`last_failed_path` (``$XDG_CACHE_HOME/rnn-verify/lastfailed.json``), that
every finished ``rnn-verify run`` updates as pytest's cache does: the claims that ran and did not fail are removed,
those that failed added, the others kept (a run of ``-k uoro`` does not forget an ``rtrl`` failure).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import fnmatch
import json
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from theory.catalog import Claim, all_claims
from verify.errors import InvalidArgument
from verify.files import write_file_atomic

__all__ = [
    "KeywordExpr",
    "LastFailed",
    "last_failed_path",
    "parse_keyword",
    "read_last_failed",
    "rerun_command",
    "select_claims",
    "unknown_claim",
    "update_last_failed",
]


# ---------------------------------------------------------------- ids and globs
def unknown_claim(argument: str, given: str, known: Iterable[str]) -> InvalidArgument:
    """The error for an id that names no claim: ``argument``, the value and up to three near matches."""
    near = difflib.get_close_matches(given, list(known), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(near)}?" if near else "; see `rnn-verify list`"
    return InvalidArgument(argument, given, f"matches no claim id{hint}")


def select_claims(
    patterns: Sequence[str] | None = None, profile: str | None = None, claims: Mapping[str, Claim] | None = None
) -> list[Claim]:
    """Claims matching any of ``patterns`` (ids or globs such as ``uoro.*``), catalog order.

    With ``profile`` only the claims that run in that profile are kept when no explicit pattern is given.
    Unknown ids raise :class:`InvalidArgument` with the nearest matches; a pattern starting with ``!`` is refused
    with the way to leave claims out (``-k 'not ID'``). ``claims``: the catalog (default :func:`all_claims`).
    """
    claims = all_claims() if claims is None else claims
    if not patterns:
        return [c for c in claims.values() if profile is None or profile in c.profiles]
    chosen: set[str] = set()
    split = [p.strip() for pat in patterns for p in pat.split(",") if p.strip()]
    if not split:
        raise InvalidArgument("--claims", list(patterns), "give at least one claim id or glob")
    for pat in split:
        if pat.startswith("!"):
            raise InvalidArgument(
                "--claims", pat, f"is not a claim id: to leave claims out, select with -k, e.g. -k 'not {pat[1:]}'"
            )
        hits = [cid for cid in claims if fnmatch.fnmatchcase(cid, pat)]
        if not hits:
            raise unknown_claim("--claims", pat, claims)
        chosen.update(hits)
    return [c for cid, c in claims.items() if cid in chosen]


# ---------------------------------------------------------------- rerun one
def rerun_command(
    claim_id: str,
    *,
    profile: str,
    seed: int | None,
    device: str,
    dtype: str,
    claim: Claim | None = None,
    impls: Sequence[str] = (),
) -> str:
    """The command that reruns one catalog claim alone with the same settings -- and what it needs to run.

    A claim that needs CUDA (``Claim.requires``) is rerun with ``--device cuda`` when the
    run's device was not CUDA, and a claim outside the run's profile with its own profile
    (``--profile full`` for a full-only claim): rerunning a SKIPPED claim with the settings
    that skipped it would only skip it again. ``claim`` defaults to the catalog entry.
    """
    if claim is None:
        claim = all_claims().get(claim_id)
    if claim is not None:
        if claim.profiles and profile not in claim.profiles:
            profile = claim.profiles[0]
        if "cuda" in claim.requires and not str(device).startswith("cuda"):
            device = "cuda"
    parts = ["rnn-verify", "run", "--profile", profile, "--claims", claim_id]
    if seed is not None:
        parts += ["--seed", str(seed)]
    parts += ["--device", device, "--dtype", dtype]
    for spec in impls:  # the implementations under test it ran on (``--impl FAMILY=SPEC``)
        parts += ["--impl", spec]
    return shlex.join(parts)


# ------------------------------------------------------------------------ -k
_TOKEN = re.compile(r"\s*(?:(?P<paren>[()])|(?P<word>[^\s()]+))")
_KEYWORDS = ("and", "or", "not")


@dataclasses.dataclass(frozen=True)
class KeywordExpr:
    """A parsed ``-k`` expression: ``matches(claim)`` says whether it selects the claim."""

    text: str
    test: Callable[[frozenset[str]], bool]

    def matches(self, claim: Claim) -> bool:
        """Whether the expression holds for ``claim`` (its id, family and paper key, lower-cased)."""
        return self.test(frozenset({claim.id.lower(), claim.family.lower(), claim.paper.lower()}))


class _Parser:
    """Recursive descent: ``expr := and ('or' and)*``, ``and := not ('and' not)*``, ``not := 'not' not | atom``,
    ``atom := '(' expr ')' | WORD``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, int]] = []  # (token, column)
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:  # only trailing blanks are left
                break
            tok = m.group("paren") or m.group("word")
            self.tokens.append((tok, m.start(m.lastgroup or 0) + 1))
            pos = m.end()
        self.i = 0

    def error(self, why: str) -> InvalidArgument:
        return InvalidArgument("-k", self.text, f"is not a selection expression: {why}")

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def where(self) -> str:
        return f"column {self.tokens[self.i][1]}" if self.i < len(self.tokens) else "the end"

    def take(self) -> str:
        tok = self.tokens[self.i][0]
        self.i += 1
        return tok

    def parse(self) -> Callable[[frozenset[str]], bool]:
        if not self.tokens:
            raise self.error("it is empty; give words joined by and/or/not, e.g. -k 'uoro and not variance'")
        test = self.expr()
        if self.i < len(self.tokens):
            raise self.error(f"unexpected {self.peek()!r} at {self.where()}")
        return test

    def expr(self) -> Callable[[frozenset[str]], bool]:
        parts = [self.conj()]
        while self.peek() == "or":
            self.take()
            parts.append(self.conj())
        return parts[0] if len(parts) == 1 else (lambda keys: any(p(keys) for p in parts))

    def conj(self) -> Callable[[frozenset[str]], bool]:
        parts = [self.neg()]
        while self.peek() == "and":
            self.take()
            parts.append(self.neg())
        return parts[0] if len(parts) == 1 else (lambda keys: all(p(keys) for p in parts))

    def neg(self) -> Callable[[frozenset[str]], bool]:
        if self.peek() == "not":
            self.take()
            inner = self.neg()
            return lambda keys: not inner(keys)
        return self.atom()

    def atom(self) -> Callable[[frozenset[str]], bool]:
        tok = self.peek()
        if tok is None:
            raise self.error("it ends where a word or '(' is expected")
        if tok == "(":
            self.take()
            inner = self.expr()
            if self.peek() != ")":
                raise self.error(f"'(' without its ')' (at {self.where()})")
            self.take()
            return inner
        if tok == ")" or tok in _KEYWORDS:
            raise self.error(f"{tok!r} at {self.where()} where a word or '(' is expected")
        self.take()
        word = tok.lower()
        return lambda keys: any(word in k for k in keys)


def parse_keyword(text: str) -> KeywordExpr:
    """Parse ``-k`` ``text``; :class:`InvalidArgument` (``-k``, the expression, what is wrong and where)."""
    return KeywordExpr(text, _Parser(text).parse())


# ----------------------------------------------------------------------- --lf
@dataclasses.dataclass(frozen=True)
class LastFailed:
    """What :func:`read_last_failed` found: the failed claim ids (catalog order of the run that wrote them), the
    ``results.json`` of the run that last updated the file (None: that run wrote no report), and when."""

    failed: tuple[str, ...]
    results: str | None
    finished: str


def last_failed_path() -> Path:
    """``$XDG_CACHE_HOME/rnn-verify/lastfailed.json`` (``~/.cache/rnn-verify/lastfailed.json`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rnn-verify" / "lastfailed.json"


def read_last_failed(path: Path | None = None) -> LastFailed | None:
    """The state file, validated field by field; None where there is none. A damaged file is an
    :class:`InvalidArgument` naming it (``--lf`` then says so and runs everything)."""
    path = last_failed_path() if path is None else path
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidArgument("--lf", str(path), f"cannot be read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgument("--lf", str(path), f"is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise InvalidArgument("--lf", str(path), "is not an rnn-verify lastfailed.json (version 1)")
    failed, results, finished = doc.get("failed"), doc.get("results"), doc.get("finished")
    if not isinstance(failed, list) or not all(isinstance(x, str) and len(x) <= 200 for x in failed):
        raise InvalidArgument("--lf", str(path), "field 'failed' must be a list of claim ids")
    if results is not None and not isinstance(results, str):
        raise InvalidArgument("--lf", str(path), "field 'results' must be a path or null")
    if not isinstance(finished, str):
        raise InvalidArgument("--lf", str(path), "field 'finished' must be a time stamp")
    return LastFailed(tuple(failed), results, finished)


def update_last_failed(
    ran: Iterable[str], failed: Iterable[str], results: Path | None, path: Path | None = None
) -> Path:
    """Record a finished run: ``failed`` added, the other ids of ``ran`` removed, every other id kept (a damaged
    or missing previous file counts as empty). Written with :func:`verify.files.write_file_atomic`."""
    path = last_failed_path() if path is None else path
    try:
        before = read_last_failed(path)
    except InvalidArgument:
        before = None
    ran_ids, failed_ids = set(ran), list(dict.fromkeys(failed))
    kept = [cid for cid in (before.failed if before is not None else ()) if cid not in ran_ids]
    doc = {
        "version": 1,
        "failed": list(dict.fromkeys([*kept, *failed_ids])),
        "results": str(results) if results is not None else None,
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return write_file_atomic(path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
