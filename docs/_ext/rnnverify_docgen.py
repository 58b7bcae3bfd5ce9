"""Pages generated from the code before every docs build (called by ``docs/conf.py``).

* ``reference/generated/catalog.md`` -- the claim catalog, exactly ``rnn-verify list --markdown``
  (rendered by the CLI itself, so the page cannot drift from ``theory/``);
* ``reference/generated/cli.md`` -- the ``--help`` of ``rnn-verify`` and of every subcommand,
  epilogs included, verbatim;
* ``reference/generated/experiments.md`` -- the table of every experiment of the papers
  (:mod:`verify.report.experiments`, the same table as the README's and every report's).

The generated folder is git-ignored; nothing else is written.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

GENERATED = Path("reference") / "generated"
#: a fixed terminal width, so that argparse wraps the help the same on every machine
HELP_COLUMNS = "100"


def catalog_markdown() -> str:
    """The catalog table as ``rnn-verify list --markdown`` prints it."""
    from verify.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        rc = main(["list", "--markdown"])
    if rc != 0:
        raise RuntimeError(f"rnn-verify list --markdown exited {rc}")
    return out.getvalue()


def subcommand_helps() -> dict[str, str]:
    """``rnn-verify --help`` and ``rnn-verify CMD --help`` for every subcommand, in the parser's order."""
    from verify.cli import _parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = _parser()
        helps = {"rnn-verify": parser.format_help()}
        for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
            for name, sub in action.choices.items():
                helps[f"rnn-verify {name}"] = sub.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return helps


def _fence(text: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}text\n{text.rstrip()}\n{ticks}\n"


def write_pages(srcdir: Path) -> list[Path]:
    """Write the generated pages under ``srcdir``; returns their paths."""
    out = srcdir / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    catalog = out / "catalog.md"
    catalog.write_text(
        "# Claim catalog\n\n"
        "Every claim rnn-verify checks, generated from `theory/claims/` at build time: this table is the\n"
        "output of `rnn-verify list --markdown`. The paper column is the short citation (full citations:\n"
        "[Papers](../papers.md)); `rnn-verify list --json` gives each claim's statement, math, assumptions,\n"
        "errata, stated false-FAIL rate and full `citation` and `references`, and the report prints them in\n"
        "each claim's section.\n\n" + catalog_markdown(),
        encoding="utf-8",
    )
    cli = out / "cli.md"
    parts = [
        "# Command line: `rnn-verify`\n\n"
        "Generated at build time from the argparse parser of `verify/cli.py`: the `--help` of the\n"
        "command and of every subcommand, verbatim (epilogs, with their exit codes, included).\n"
    ]
    for cmd, text in subcommand_helps().items():
        parts.append(f"\n## `{cmd}`\n\n" + _fence(text))
    cli.write_text("".join(parts), encoding="utf-8")
    experiments = out / "experiments.md"
    experiments.write_text(experiments_markdown(), encoding="utf-8")
    return [catalog, cli, experiments]


def experiments_markdown() -> str:
    """The table of every experiment of the papers (``python -m verify.report.experiments``)."""
    from verify.report import experiments

    return "\n".join(experiments.markdown_table()) + "\n"
