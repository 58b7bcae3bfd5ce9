"""The front of ``rnn-verify``: parse, answer ``--help``, ``list`` and ``explain`` here, hand the rest on.

Nothing here imports torch: ``rnn-verify --help``, ``list`` and ``explain`` take a fraction of a second. The
commands that compute (``run``, ``sweep``, ``report``, ``golden``) live in :mod:`verify.cli`, loaded only when one
of them is asked for, through the ``load`` callable :func:`main` is given (:mod:`verify.__main__` gives one
that imports :mod:`verify.cli`; :func:`verify.cli.main` gives its own commands).

Every command ends the same way: a :class:`~verify.errors.VerifyError` is one line and exit 2; Ctrl-C or a stop
signal one line and 128 + its number; a closed output pipe (``rnn-verify list | head -1``) nothing at all and
:data:`~verify.exit_codes.EXIT_PIPE`, as other Unix tools end.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import select
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, TextIO

from theory.catalog import GATE_ALPHA, Claim, all_claims
from theory.papers import PAPERS
from verify import stop
from verify.cli_parser import NAME_MAX, PATH_MAX, build_parser
from verify.errors import InvalidArgument, VerifyError
from verify.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_PIPE, EXIT_USAGE
from verify.selection import parse_keyword, rerun_command, select_claims, unknown_claim
from verify.stop import Stop
from verify.text import clean, safe_str

__all__ = ["Backend", "explain_text", "main"]

#: a command of :mod:`verify.cli`: (parsed arguments, the command line as given) -> exit code
Command = Callable[[argparse.Namespace, Sequence[str]], int]

#: what stops a command: a signal delivered to rnn-verify (:class:`verify.stop.Stop`), or a KeyboardInterrupt that
#: reached the toolkit's own code (code under test never lets one through: :func:`verify.stop.reraise_if_stopped`)
STOPS = (KeyboardInterrupt, Stop)


class Backend(NamedTuple):
    """The commands that compute and the values their ``--help`` quotes (:func:`verify.cli.help_values`)."""

    commands: Mapping[str, Command]
    help_values: Callable[[], Mapping[str, object]]


def stopped(exc: BaseException) -> tuple[str, int]:
    """What to say, and the exit code, for Ctrl-C or a stop signal; from now on further signals are ignored."""
    stop.stopping()
    if isinstance(exc, Stop):
        return exc.what, exc.exit_code
    return "interrupted", EXIT_INTERRUPTED


def main(argv: Sequence[str] | None, load: Callable[[], Backend]) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); ``load`` gives the computing commands, called only
    when one of them (or its ``--help``) is asked for. SIGTERM and SIGHUP are handled like Ctrl-C while it runs."""
    with stop.handling():
        try:
            return _main(argv, load)
        except STOPS as exc:
            what, code = stopped(exc)
            print(f"\nrnn-verify: {what}", file=sys.stderr)
            return code


def _main(argv: Sequence[str] | None, load: Callable[[], Backend]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(lambda: load().help_values())
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
            sys.stdout.flush()
            return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
        try:
            if args.command == "list":
                code = cmd_list(args)
            elif args.command == "explain":
                code = cmd_explain(args)
            else:
                code = load().commands[args.command](args, argv)
            sys.stdout.flush()  # a closed pipe is found here, not by the interpreter's last flush
            return code
        except VerifyError as exc:
            print(f"rnn-verify: error: {safe_str(exc)}", file=sys.stderr)  # it may quote code under test: cleaned
            return EXIT_USAGE
    except OSError as exc:  # e.g. the disk filled up while writing; what was there before is intact
        if exc.errno == errno.EPIPE and _output_closed():
            return EXIT_PIPE
        print(f"rnn-verify: error: {clean(os_error_text(exc))}", file=sys.stderr)
        return EXIT_USAGE


def _output_closed() -> bool:
    """Whether stdout is a pipe whose reader went away; if so it is pointed at /dev/null from here on, so that
    neither the rest of the command nor the interpreter's last flush says "Broken pipe"."""
    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        closed = any(ev & select.POLLERR for _, ev in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # not a real descriptor (captured), or no poll here
        return False
    if closed:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    return closed


def os_error_text(exc: OSError) -> str:
    """An OS error in words (the OS's limits named, not a bare "[Errno 36]")."""
    where = f" ({str(exc.filename)[:80]}{'...' if len(str(exc.filename)) > 80 else ''})" if exc.filename else ""
    if exc.errno == errno.ENAMETOOLONG:
        return (
            f"a file or folder name is too long for the file system{where}: at most {NAME_MAX} bytes per name "
            f"(NAME_MAX), {PATH_MAX} per path (PATH_MAX)"
        )
    if exc.errno == errno.EISDIR:
        return f"is a folder, where a file is expected{where}"
    return f"{exc.strerror or exc}{where}"


# ---------------------------------------------------------------------- list
def selected(
    patterns: Sequence[str] | None,
    keyword: str | None,
    profile: str | None = None,
    select: Callable[..., list[Claim]] | None = None,
) -> list[Claim]:
    """The claims ``--claims`` (ids, globs) and ``-k`` select, catalog order; ``-k`` selecting none is exit 2.
    ``select``: the id and glob selection (:func:`verify.selection.select_claims`)."""
    expr = parse_keyword(keyword) if keyword is not None else None  # a malformed -k is named before anything
    claims = (select or select_claims)(patterns, profile=profile)
    if expr is None:
        return claims
    kept = [c for c in claims if expr.matches(c)]
    if not kept:
        of = f" of the {len(claims)} claims --claims selects" if patterns else ""
        raise InvalidArgument("-k", keyword, f"selects no claim{of}; try expressions with `rnn-verify list -k`")
    return kept


def cmd_list(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``rnn-verify list``: the catalog, or the claims ``--claims``, ``-k`` and ``--profile`` select."""
    out = sys.stdout if out is None else out
    claims = selected(args.claims, args.keyword, profile=args.profile)
    if args.claims and args.profile:
        claims = [c for c in claims if args.profile in c.profiles]
    if args.json:
        print(json.dumps([{**dataclasses.asdict(c), "family": c.family} for c in claims], indent=2), file=out)
        return EXIT_OK
    if args.markdown:
        print("| claim | what it checks | paper | where | profiles |", file=out)
        print("|---|---|---|---|---|", file=out)
        for c in claims:
            cells = [f"`{c.id}`", c.title, f"`{c.paper}`", c.where, ", ".join(c.profiles)]
            print("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |", file=out)
        return EXIT_OK
    for c in claims:
        print(f"{c.id:<34} {c.paper:<34} [{','.join(c.profiles)}]", file=out)
        print(f"    {c.title}", file=out)
        print(f"    {c.where}", file=out)
    print(f"{len(claims)} claims", file=out)
    return EXIT_OK


# ------------------------------------------------------------------- explain
def cmd_explain(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``rnn-verify explain CLAIM``: the claim in full (:func:`explain_text`); an unknown id is exit 2."""
    claims = all_claims()
    claim = claims.get(args.claim.strip())
    if claim is None:
        raise unknown_claim("CLAIM", args.claim, claims)
    text = explain_text(claim)
    if out is None:  # UTF-8 whatever the locale says (θ, ∂, ν as they are, never escaped)
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8")) if hasattr(sys.stdout, "buffer") else sys.stdout.write(text)
    else:
        out.write(text)
    return EXIT_OK


def _section(title: str, body: str | Sequence[str], width: int = 100) -> str:
    """A titled block: a paragraph wrapped at ``width`` or a list of bullets, indented by four."""
    if isinstance(body, str):
        text = textwrap.fill(body, width, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False)
    else:
        text = "\n".join(
            textwrap.fill(b, width, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False)
            for b in body
        )
    return f"{title}\n{text}\n"


def _is_control(text: str) -> bool:
    return "control" in text.lower()


def _is_threshold(text: str) -> bool:
    """An assumption that states the pass criterion (a budget, a threshold, what PASS needs): shown as the
    decision."""
    return text.lower().startswith(("budget", "threshold", "tolerance", "pass needs", "pass if", "fail if"))


def _decision(claim: Claim) -> list[str]:
    """How the check decides: the kind, the stated false-FAIL rate, the declared rate, the round-off budget."""
    kinds = {
        "deterministic": "deterministic: equal to round-off within a predicted budget (no false-FAIL rate: a "
        "correct implementation passes every time)",
        "statistical": "statistical: a test with stated error rates",
        "rate": "rate: a fitted slope with a confidence interval, against the declared rate",
        "reproduction": "reproduction: report data with a stated, checked criterion",
    }
    rows = [f"kind: {kinds.get(claim.kind, claim.kind)}"]
    if claim.alpha is not None:
        rows.append(f"alpha (false-FAIL rate on a correct implementation): {claim.alpha:g}")
    if claim.control_beta:
        rows.append(f"control beta (chance a negative control is not caught, a false FAIL too): {claim.control_beta:g}")
    if claim.alpha is not None or claim.control_beta:
        rows.append(f"share of the ci gate's false-FAIL budget {GATE_ALPHA:g} (sum over the claims of a run)")
    if claim.rate is not None:
        rows.append(f"declared rate: {claim.rate.describe()}")
    rows += [a for a in claim.assumptions if _is_threshold(a) and not _is_control(a)]
    return rows


def explain_text(claim: Claim) -> str:
    """``claim`` in full, as plain UTF-8 text: the statement, the paper (authors, year, title, arXiv id) and the
    equation, the assumptions, how it is decided (threshold, alpha, declared rate), the controls, the profiles, the
    errata and the command that reruns it."""
    paper = PAPERS.get(claim.paper)
    cited = [f"{claim.paper} -- {claim.where}"]
    if paper is not None:
        cited.append(
            f"{paper.authors} ({paper.year or 'no year'}). {paper.title}. {paper.venue}."
            + (f" arXiv:{paper.arxiv} (https://arxiv.org/abs/{paper.arxiv})" if paper.arxiv else " (no arXiv id)")
        )
    cited += [f"also cited: {ref}" for ref in claim.references[1:]]
    controls = [a for a in claim.assumptions if _is_control(a)]
    assumptions = [a for a in claim.assumptions if not _is_control(a) and not _is_threshold(a)]
    profile = "ci" if "ci" in claim.profiles else claim.profiles[0]
    device = "cuda" if "cuda" in claim.requires else "cpu"
    rerun = rerun_command(claim.id, profile=profile, seed=0, device=device, dtype="float64", claim=claim)
    parts = [
        f"{claim.id}: {claim.title}\n",
        _section("statement", claim.statement),
        _section("math", claim.math),
        _section("paper", cited),
        _section("assumptions", assumptions or ["(none stated)"]),
        _section("decision", _decision(claim)),
        _section("controls", controls or ["(none stated in the catalog)"]),
        _section(
            "profiles",
            ", ".join(claim.profiles) + (f"; needs {', '.join(claim.requires)}" if claim.requires else ""),
        ),
    ]
    if claim.errata:
        parts.append(_section("errata (where the paper is wrong or loose)", list(claim.errata)))
    parts.append(_section("check", claim.check))
    parts.append(f"rerun\n    {rerun}\n")
    return "\n".join(parts)
