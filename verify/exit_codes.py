"""The exit codes of ``rnn-verify``, per command: the one source of the ``--help`` tables and of the CLI's codes.

A CI gate trusts exit 0 only when every selected claim ran and none FAILed. Code under test never decides
the exit status: it runs only in isolated worker processes (:mod:`verify.run.pool`), never in the process that
decides. Whatever an ``--impl`` module does -- raises (``sys.exit()``, ``KeyboardInterrupt``, any
``BaseException``), calls ``os._exit(n)``, kills itself with a signal, hangs past its time limit -- is exit 2 at
import or load naming it, or a FAIL of the claim it ran in, worded as what it did (:mod:`verify.stop`). A signal
delivered to rnn-verify is 128 + its number. ``tests/cli/test_exit_codes.py`` drives every command
into every code listed here.
"""

from __future__ import annotations

import textwrap

__all__ = [
    "COMMANDS",
    "EXIT_FAIL",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "epilog",
    "overview",
    "table",
]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HANGUP = 128 + 2, 128 + 15, 128 + 1  # the shell's 128 + signal number
#: the output pipe was closed by its reader (``rnn-verify list | head -1``): quiet, as if ended by SIGPIPE
EXIT_PIPE = 128 + 13

_USAGE = "usage or input error: a bad argument (named, with its value)"
_STOPS: tuple[tuple[int, str], ...] = (
    (EXIT_INTERRUPTED, "interrupted: SIGINT (Ctrl-C) delivered to rnn-verify; one line, no traceback"),
    (EXIT_TERMINATED, "terminated: SIGTERM delivered to rnn-verify"),
    (EXIT_HANGUP, "hung up: SIGHUP delivered to rnn-verify"),
)

#: command -> (code, meaning), in the order ``--help`` prints them
COMMANDS: dict[str, tuple[tuple[int, str], ...]] = {
    "list": (
        (EXIT_OK, "the catalog (or the selected claims) printed"),
        (EXIT_USAGE, f"{_USAGE}, e.g. an unknown claim id or glob"),
        *_STOPS,
    ),
    "explain": (
        (EXIT_OK, "the claim explained"),
        (EXIT_USAGE, f"{_USAGE}, e.g. an unknown claim id (the near matches named)"),
        *_STOPS,
    ),
    "run": (
        (
            EXIT_OK,
            "every selected claim ran and none FAILed (SKIPPED claims are listed with the reason; INCONCLUSIVE "
            "passes unless --fail-on inconclusive); --plan: the plan printed",
        ),
        (
            EXIT_FAIL,
            "a claim FAILed -- a check that crashed, and code under test that raised inside a claim (sys.exit(), "
            "KeyboardInterrupt, any exception), ended its worker process (os._exit(n) with any n, a signal, a "
            "crash) or ran past the claim's time limit (--timeout), are FAILs --, or was INCONCLUSIVE under "
            "--fail-on inconclusive, or with --impl nothing of the implementation under test was checked",
        ),
        (
            EXIT_USAGE,
            f"{_USAGE}; an unknown claim; --seed out of range; an output folder that is not rnn-verify's or "
            "cannot be written or is in use by another run (the holder named); --device cuda --strict-device "
            "without CUDA; an --impl that does not load or fails its load check -- whatever it does at import or "
            "in the probe (raises, sys.exit(), os._exit(n), a signal, a hang past --timeout) is its error, named "
            "in one line",
        ),
        *_STOPS,
    ),
    "sweep": (
        (EXIT_OK, "every cell ran and no claim FAILed (--list: the sweeps printed)"),
        (EXIT_FAIL, "a claim FAILed, or was INCONCLUSIVE under --fail-on inconclusive"),
        (EXIT_USAGE, f"{_USAGE}; an unknown sweep; an output or cache folder that is not rnn-verify's"),
        *_STOPS,
    ),
    "report": (
        (EXIT_OK, "re-rendered; the saved run has no FAIL (nor INCONCLUSIVE under --fail-on inconclusive)"),
        (
            EXIT_FAIL,
            "re-rendered; the saved run has a FAIL (or an INCONCLUSIVE under --fail-on inconclusive): the code "
            "`run` gave those verdicts, so a CI step that re-renders a failed run stays red",
        ),
        (
            EXIT_USAGE,
            f"{_USAGE}; a malformed or mismatched results.json (the message names the file and the field); a "
            "results.json that contradicts itself -- a verdict its stored statistic, threshold, comparison or "
            "controls do not give, counts or run.exit_code that its claims do not give (named: claims[3].verdict, "
            "run.exit_code) --, or whose SHA-256 differs from the one its report folder recorded (an accidental "
            "edit; the digest is no signature; --no-digest-check for an edit on purpose); an output folder that is "
            "not rnn-verify's, or in use by another rnn-verify run (the holder's pid, host and command named); an "
            "OS error while writing, e.g. a full disk (the path named; the outputs are left as they were)",
        ),
        *_STOPS,
    ),
    "golden": (
        (EXIT_OK, "golden vectors written, or --check: every quantity verifies"),
        (EXIT_FAIL, "--check found a quantity that does not verify"),
        (EXIT_USAGE, f"{_USAGE}; a missing or malformed golden file (named)"),
        *_STOPS,
    ),
    "gallery": (
        (
            EXIT_OK,
            "the gallery was written (a FAIL of published code is a finding in its table, not an error of this "
            "command; a row that could not run says why: SKIPPED or REFUSED)",
        ),
        (
            EXIT_USAGE,
            f"{_USAGE}; no checkout given; an unknown repository; a checkout that is missing or lacks the "
            "repository's files; an output folder that is not rnn-verify's or in use by another run",
        ),
        *_STOPS,
    ),
}

_NOTE = (
    "A signal leaves the previous report as it was and stops worker and figure processes (also kill -9: they "
    "die with rnn-verify). Code under test runs only in worker processes and never sets the exit status. "
    f"A closed output pipe (rnn-verify list | head -1) ends the command quietly with {EXIT_PIPE} (128 + SIGPIPE), "
    "as other Unix tools end."
)


def table(command: str, width: int = 100, *, signals: bool = True) -> str:
    """``command``'s codes, one per paragraph: ``  0    meaning`` (wrapped with a hanging indent); ``signals=False``
    leaves out the rows every command shares (a signal delivered to rnn-verify)."""
    shared = {code for code, _ in _STOPS}
    return _rows([(c, m) for c, m in COMMANDS[command] if signals or c not in shared], width)


def _rows(rows: list[tuple[int, str]], width: int = 100) -> str:
    lines = []
    for code, meaning in rows:
        lines.append(
            textwrap.fill(
                meaning, width, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7, break_on_hyphens=False
            )
        )
    return "\n".join(lines)


def epilog(command: str) -> str:
    """The ``--help`` epilog of ``rnn-verify command``: its exit codes (self-contained)."""
    return (
        f"exit codes of rnn-verify {command}:\n{table(command)}\n\n{textwrap.fill(_NOTE, 100, break_on_hyphens=False)}"
    )


def overview() -> str:
    """The top-level ``--help`` epilog: every command's own codes, then once the codes all commands share."""
    parts = [f"rnn-verify {cmd}:\n{table(cmd, signals=False)}" for cmd in COMMANDS]
    return (
        "exit codes, per command (rnn-verify COMMAND --help: that command's table):\n\n"
        + "\n\n".join(parts)
        + f"\n\nevery command:\n{_rows(list(_STOPS))}\n\n{textwrap.fill(_NOTE, 100, break_on_hyphens=False)}"
    )
