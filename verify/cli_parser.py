"""The argument parser of ``rnn-verify`` (:mod:`verify.cli`), built without importing torch.

``rnn-verify --help``, ``list`` and ``explain`` start in a fraction of a second because nothing here imports the
numerical code: the few numbers a subcommand's ``--help`` quotes (``MAX_SEED``, the ``--impl`` families, the
bounds of ``--workers``) are placeholders ``{NAME}`` filled in when that help is printed, from the mapping
``help_values()`` the caller gives (:func:`verify.cli.help_values`, which reads them from their modules).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from theory.catalog import PROFILES
from verify import exit_codes
from verify.files import tool_version
from verify.text import clean

__all__ = ["DEFAULT_RUNS", "DEFAULT_SWEEPS", "NAME_MAX", "PATH_MAX", "build_parser", "path_arg"]

DEFAULT_RUNS = Path("reports") / "runs"
DEFAULT_SWEEPS = Path("reports") / "sweeps"
#: the longest name (one path component) and path the file systems rnn-verify runs on take, in bytes (Linux's
#: NAME_MAX and PATH_MAX): a longer one is refused naming the argument, not left to the OS's "[Errno 36]"
NAME_MAX, PATH_MAX = 255, 4096


def path_arg(text: str) -> str:
    """argparse ``type`` of every path argument: refuses (exit 2, naming the argument) a NUL byte, a name longer
    than :data:`NAME_MAX` bytes or a path longer than :data:`PATH_MAX` bytes."""
    if "\x00" in text:
        raise argparse.ArgumentTypeError("the path holds a NUL byte, which no file name can")
    raw = os.fsencode(text)
    if len(raw) > PATH_MAX:
        raise argparse.ArgumentTypeError(
            f"the path is {len(raw)} bytes long; the file system allows at most {PATH_MAX} (PATH_MAX)"
        )
    for part in raw.split(b"/"):
        if len(part) > NAME_MAX:
            shown = os.fsdecode(part[:40]) + "..."
            raise argparse.ArgumentTypeError(
                f"the name {shown!r} is {len(part)} bytes long; the file system allows at most {NAME_MAX} bytes "
                "per file or folder name (NAME_MAX)"
            )
    return text


_MARKER_NOTE = "Report folders carry a .rnn-verify-report marker; rnn-verify replaces only the files it lists."


def _epilog(command: str | None = None) -> str:
    """A ``--help`` epilog: the exit codes of ``command`` (all commands at the top level), from
    :mod:`verify.exit_codes`."""
    return (exit_codes.overview() if command is None else exit_codes.epilog(command)) + "\n\n" + _MARKER_NOTE


class _HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped as usual; an epilog's lines (the exit-code tables) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


#: the numbers and names a subcommand's ``--help`` quotes, filled in when it is printed (module docstring)
HelpValues = Callable[[], Mapping[str, object]]


class _Parser(argparse.ArgumentParser):
    """argparse, whose messages echo the arguments as given (``unrecognized arguments: ...``): cleaned
    (:func:`verify.text.clean`), so that no control character of an argument reaches the terminal raw; a help
    text's ``{NAME}`` placeholders are filled from ``help_values`` when the help is printed."""

    help_values: HelpValues | None = None

    def _print_message(self, message: str, file: Any = None) -> None:
        super()._print_message(clean(message) if message else message, file)

    def format_help(self) -> str:
        pending = [a for a in self._actions if a.help and "{" in a.help]
        if pending and self.help_values is not None:
            values = self.help_values()
            for action in pending:
                action.help = str(action.help).format_map(values)
        return super().format_help()


def build_parser(help_values: HelpValues | None = None) -> argparse.ArgumentParser:
    """The parser of every command; ``help_values``: the mapping a subcommand's ``--help`` quotes (called only when
    such a help is printed)."""
    p: argparse.ArgumentParser = _Parser(  # its subcommands are _Parser too (argparse: parser_class)
        prog="rnn-verify",
        description="Check online recurrent learning algorithms against exact references and the papers' claims.",
        epilog=_epilog(),
        formatter_class=_HelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {tool_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{" + ",".join(exit_codes.COMMANDS) + "}")
    _add_list_parser(sub)
    _add_explain_parser(sub)
    _add_run_parser(sub)
    _add_sweep_parser(sub)
    _add_report_parser(sub)
    _add_golden_parser(sub)
    _add_gallery_parser(sub)
    for parser in sub.choices.values():
        if isinstance(parser, _Parser):
            parser.help_values = help_values
    return p


def _subparser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, **kw: Any
) -> argparse.ArgumentParser:
    """A subcommand's parser; its ``--help`` ends with the command's exit codes (:mod:`verify.exit_codes`)."""
    return sub.add_parser(name, epilog=_epilog(name), formatter_class=_HelpFormatter, **kw)


def _add_list_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify list``: the claim catalog."""
    ls = _subparser(
        sub,
        "list",
        help="list the claim catalog",
        description="List the claim catalog.",
    )
    ls.add_argument("--profile", choices=PROFILES, help="only claims that run in this profile")
    ls.add_argument("--claims", nargs="+", metavar="ID", help="claim ids or globs (e.g. 'uoro.*')")
    _add_keyword_arg(ls)
    fmt = ls.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the catalog as JSON")
    fmt.add_argument("--markdown", action="store_true", help="print the catalog as a markdown table (for the README)")


KEYWORD_HELP = (
    "select claims by an expression, as pytest's -k: words joined by and/or/not and parentheses; a word matches a "
    "claim when it is a case-insensitive substring of its id (family.name) or its paper (e.g. -k 'uoro and not "
    "variance', -k tallec); with --claims, of those claims"
)


def _add_keyword_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help=KEYWORD_HELP)


def _add_explain_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify explain``: one claim in full."""
    ex = _subparser(
        sub,
        "explain",
        help="explain one claim: statement, paper and equation, assumptions, threshold, controls, how to rerun it",
        description="Print one claim of the catalog in full: what it states and where (the paper, its authors, year, "
        "title and arXiv id, the equation), its assumptions, how the check decides (kind, stated false-FAIL rate, "
        "declared rate), its negative controls, the profiles it runs in and the command that reruns it.",
    )
    ex.add_argument("claim", metavar="CLAIM", help="a claim id, e.g. uoro.unbiased (see rnn-verify list)")


def _add_run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify run``: what to run, where, and the report it writes."""
    run = _subparser(
        sub,
        "run",
        help="run claims and write a report",
        description="Run claims of the catalog, print one verdict per claim and write a report folder.",
    )
    run.add_argument(
        "--profile", choices=PROFILES, default="ci", help="ci: the quick CI gate (default); full: larger sizes"
    )
    run.add_argument("--claims", nargs="+", metavar="ID", help="claim ids or globs, e.g. 'uoro.*' (default: all)")
    _add_keyword_arg(run)
    run.add_argument(
        "--lf",
        "--last-failed",
        dest="last_failed",
        action="store_true",
        help="rerun only the claims that failed last (recorded by every run in "
        "$XDG_CACHE_HOME/rnn-verify/lastfailed.json); none recorded: run all, with a note",
    )
    run.add_argument(
        "-x", "--exitfirst", dest="maxfail", action="store_const", const=1, help="stop after the first FAIL"
    )
    run.add_argument(
        "--maxfail",
        type=int,
        metavar="N",
        help="stop starting claims after N FAILs; the claims not run are SKIPPED 'not run: --maxfail reached'",
    )
    run.add_argument("--seed", type=int, default=0, help="base seed, 0 .. {MAX_SEED} (default 0)")
    run.add_argument(
        "--device", default="cpu", help="cpu (default), cuda[:N] or auto; without CUDA the device claims are SKIPPED"
    )
    run.add_argument("--strict-device", action="store_true", help="make --device cuda without CUDA an error (exit 2)")
    run.add_argument(
        "--dtype",
        choices=("float64", "float32"),
        default="float64",
        help="the precision the implementation under test computes in: float32 judges it against predicted float32 "
        "round-off budgets (as a part's dtype='float32' declaration does; verify.impl.precision)",
    )
    _add_run_output_args(run)
    _add_run_execution_args(run)


def _add_run_output_args(run: argparse.ArgumentParser) -> None:
    """``rnn-verify run``: the report folder, the extra outputs and what fails the run."""
    out = run.add_mutually_exclusive_group()
    out.add_argument(
        "--out", metavar="DIR", type=path_arg, help=f"report folder (default {DEFAULT_RUNS}/<timestamp>-<profile>)"
    )
    out.add_argument("--no-report", action="store_true", help="write no report folder")
    run.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        type=path_arg,
        help="also write results.json to FILE ('-' or no FILE: print it on stdout, verdicts go to stderr)",
    )
    run.add_argument("--junit", metavar="FILE", type=path_arg, help="also write JUnit XML to FILE")
    run.add_argument(
        "--fail-on",
        choices=("fail", "inconclusive"),
        default="fail",
        help="exit 1 on FAIL (default) or also on INCONCLUSIVE",
    )


def _add_run_execution_args(run: argparse.ArgumentParser) -> None:
    """``rnn-verify run``: workers, executor, output level and the implementations under test."""
    run.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="run checks in N processes, one torch thread each (default: the CPUs available; at most those and "
        "the claims to run; with --impl each loads it again). Verdicts do not depend on N",
    )
    run.add_argument(
        "--executor",
        metavar="KIND",
        default=None,
        help="where the claims run: process (a local pool, what --workers uses), dask (a loopback LocalCluster of "
        "--workers processes) or dask=ADDRESS (an existing scheduler, e.g. dask=tcp://10.0.0.5:8786)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="each verdict line with the check's whole summary, the final summary uncut (default: lines of at most "
        "100 characters)",
    )
    run.add_argument(
        "--color",
        choices=("auto", "yes", "no"),
        default="auto",
        help="colour the verdict words (auto: on a terminal, unless NO_COLOR is set)",
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit of each claim run in a worker process: past it the claim FAILs 'did not finish within N s' "
        "(default: {TIMEOUT_FACTOR:g} x its recorded time, at least {TIMEOUT_FLOOR_S:g} s; 0: no limit)",
    )
    run.add_argument(
        "--plan",
        action="store_true",
        help="run nothing: print per claim what it would do (draws, estimated seconds, and whether measured by a "
        "short pilot of the implementation under test or recorded) and a total; writes nothing (--json - for JSON)",
    )
    run.add_argument(
        "--impl",
        action="append",
        default=[],
        metavar="FAMILY=SPEC",
        help="run the claims against your implementation: FAMILY is one of {IMPL_FAMILIES} or family.field; SPEC "
        "is module.path:Name or path/to/file.py:name (repeatable)",
    )
    run.add_argument(
        "--impl-only",
        action="store_true",
        help="with --impl: leave out the claims that exercise none of the given implementations (default: they run "
        "on the toolkit's own)",
    )


def _add_sweep_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify sweep``: a named sweep on an executor, cached."""
    sw = _subparser(
        sub,
        "sweep",
        help="run a named sweep (reproductions at the papers' settings, calibration) on an executor, cached",
        description="Run a named sweep: its cells go to an executor (Dask LocalCluster on loopback by default, an "
        "existing Dask scheduler with --executor dask=ADDRESS, or a process pool); every finished cell is cached by "
        "content (claim, configuration, seed, code version), so an interrupted sweep resumes and a rerun computes "
        "nothing it has; the merged results go to one results.json and report.",
    )
    sw.add_argument("name", nargs="?", metavar="NAME", help="the sweep (see --list)")
    sw.add_argument("--list", action="store_true", help="list the sweeps and exit")
    sw.add_argument("--scale", choices=("paper", "full", "ci"), default="paper", help="reproduction sizes")
    sw.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    sw.add_argument(
        "--seeds", type=int, default=None, metavar="N", help="number of seeds (calibration: 1000; at most 100000)"
    )
    sw.add_argument("--claims", nargs="+", metavar="ID", help="claim ids or globs (calibration, claims)")
    sw.add_argument("--profile", choices=PROFILES, default="ci", help="profile of claim cells (default ci)")
    sw.add_argument(
        "--executor",
        metavar="KIND",
        default="auto",
        help="auto (dask if installed, else process; serial with one worker), serial, process, dask, dask=ADDRESS",
    )
    sw.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="cells at once (default: the CPUs; at most {MAX_WORKERS})",
    )
    sw.add_argument(
        "--threads", type=int, default=None, metavar="N", help="torch threads per cell (at most {MAX_THREADS})"
    )
    sw.add_argument("--split-lrs", action="store_true", help="one cell per learning rate (for a large cluster)")
    cache = sw.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache", metavar="DIR", type=path_arg, help="cell cache folder (default $XDG_CACHE_HOME/rnn-verify/cells)"
    )
    cache.add_argument("--no-cache", action="store_true", help="cache nothing (every cell is computed)")
    sout = sw.add_mutually_exclusive_group()
    sout.add_argument(
        "--out", metavar="DIR", type=path_arg, help="report folder (default reports/sweeps/<timestamp>-<name>)"
    )
    sout.add_argument("--no-report", action="store_true", help="write no report folder")
    sw.add_argument("--json", metavar="FILE", type=path_arg, help="also write results.json to FILE")
    sw.add_argument("--fail-on", choices=("fail", "inconclusive"), default="fail", help="exit 1 on FAIL (default)")
    sw.add_argument("-q", "--quiet", action="store_true", help="print only the summary")


def _add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify report``: re-render a saved run."""
    rep = _subparser(
        sub,
        "report",
        help="re-render a report from a saved results.json",
        description="Re-render report.md, report.html, junit.xml and figures from a saved run, without recomputing.",
    )
    rep.add_argument("results", metavar="RESULTS", type=path_arg, help="a results.json or a report folder holding one")
    rep.add_argument(
        "--out",
        metavar="DIR",
        type=path_arg,
        help="report folder (default: the folder of RESULTS, if it is an rnn-verify report folder)",
    )
    rep.add_argument("--junit", metavar="FILE", type=path_arg, help="also write JUnit XML to FILE")
    rep.add_argument(
        "--fail-on",
        choices=("fail", "inconclusive"),
        default=None,
        help="INCONCLUSIVE as failure (JUnit and exit code); default: as the saved run had it",
    )
    rep.add_argument(
        "--no-digest-check",
        action="store_true",
        help="RESULTS was edited on purpose: do not compare it with the SHA-256 its report folder's marker recorded "
        "when rnn-verify wrote it (that digest detects accidental edits; it is not a signature). The verdicts, "
        "counts and exit code are still checked against the stored numbers",
    )


def _add_golden_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify golden``: export or check golden vectors."""
    gold = _subparser(
        sub,
        "golden",
        help="export or check portable golden vectors",
        description="Export golden vectors (.npz + JSON header) with exact float64 reference quantities, "
        "or re-verify a golden file with --check.",
    )
    gold.add_argument(
        "--check",
        metavar="FILE",
        type=path_arg,
        help="re-verify a golden pair instead of exporting: FILE is its .npz or its .json; both must be there",
    )
    gold.add_argument(
        "--reference",
        metavar="GOLDEN",
        type=path_arg,
        help="with --check: FILE holds YOUR results -- a plain .npz with only the arrays you computed, named "
        "<case>__<quantity> as in GOLDEN (any subset of cases and quantities; no header, no hashes); each is "
        "compared with GOLDEN's (.npz or .json of the published pair, itself validated and hash-checked) by the "
        "header's norm, max|a - r| <= check_rtol * max|r|; what was not supplied is listed, an unknown name "
        "refused (exit 2), and failures get a diagnosis of the likely mistake. Exit 0 all supplied arrays "
        "verify, 1 a mismatch, 2 input error",
    )
    gold.add_argument(
        "--out", metavar="FILE", type=path_arg, default="golden.npz", help="output .npz (default golden.npz)"
    )
    gold.add_argument("--seed", type=int, default=0, help="seed of the problems, 0 .. {MAX_SEED} (default 0)")
    gold.add_argument("--k", type=int, nargs="+", default=None, metavar="K", help="truncation lengths (default 1 2 3)")


def _add_gallery_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``rnn-verify gallery``: the field's published implementations through the claims that apply."""
    gal = _subparser(
        sub,
        "gallery",
        help="judge published implementations (checkouts you name) through every claim that applies",
        description="Run every algorithm of every gallery repository whose checkout is given through every claim "
        "that applies, each in its own `rnn-verify run --impl ... --impl-only` (the repository's code is imported "
        "only in isolated worker processes), and write the verdict tables (README.md), gallery.json and each "
        "row's report folder. Repositories: vanilla-rtrl, snapjax, jax_rtrl, fpp, uoro-demo.",
    )
    gal.add_argument(
        "--checkout",
        action="append",
        metavar="NAME=DIR",
        help="a checkout of a gallery repository (repeatable); default: those named by the environment variables "
        "RNN_VERIFY_GALLERY_<NAME> (e.g. RNN_VERIFY_GALLERY_VANILLA_RTRL)",
    )
    gal.add_argument("--repo", action="append", metavar="NAME", help="only these repositories (repeatable)")
    gal.add_argument(
        "--out", metavar="DIR", type=path_arg, default=None, help="output folder (default reports/gallery); "
        "repositories not run this time keep their rows from the gallery already there"
    )  # fmt: skip
    gal.add_argument("--seed", type=int, default=0, help="base seed of every row's run, 0 .. {MAX_SEED} (default 0)")
    gal.add_argument("--workers", type=int, default=1, help="worker processes of each row's run (default 1)")
    gal.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS", help="each claim's time limit (run's --timeout)"
    )
    gal.add_argument("-q", "--quiet", action="store_true", help="no line per row (warnings are still printed)")
