"""The table of every experiment of the papers (:mod:`theory.experiments`), rendered and checked.

:func:`markdown_table` renders it for the README, the documentation and every report (a report adds
the verdicts of this run's claims); :func:`evidence_problems` checks the table against the committed
reports it cites: every claim exists, every report holds its claims with the verdicts the status
implies, and every decimal number quoted in ``ours`` occurs in that report's ``results.json``. Run
``python -m verify.report.experiments`` to print the table, ``--check`` to check it.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from theory.catalog import all_claims
from theory.experiments import EXPERIMENTS, STATUSES, Experiment
from theory.papers import PAPERS

__all__ = ["NOTE", "TITLE", "evidence_problems", "html_rows", "markdown_table", "papers_line", "status_counts"]

TITLE = "Every experiment of the papers"
NOTE = (
    "Each figure or experiment of the papers, and what rnn-verify did with it: reproduced (the paper's result "
    "beside ours, and where ours is), not reproduced (with the evidence), not resolved at this power, or not run "
    "(the command and its cost, or what running it would take). Papers: "
)

_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[+-]?\d+)?")
_ANY_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _how(e: Experiment) -> str:
    parts = []
    if e.claims or e.results:
        parts.append(", ".join(f"`{c}`" for c in e.claims + e.results))
    if e.evidence:
        parts.append(f"in `{e.evidence}/`")
    if e.command:
        parts.append(f"`{e.command}`" + (f" ({e.cost})" if e.cost else ""))
    if e.needs:
        parts.append(("needs: " if e.status == "not run" else "") + e.needs)
    return "; ".join(parts)


def _cell(text: str) -> str:
    """Markdown-escape ``text`` outside its `code spans` (``|``, ``*``, ``_``, ``<``, ``>``, backslash)."""
    parts = text.replace("\n", " ").split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = re.sub(r"([\\*_<>])", r"\\\1", parts[i])
    return "`".join(parts).replace("|", "\\|")


def status_counts(experiments: Sequence[Experiment] = EXPERIMENTS) -> dict[str, int]:
    """How many experiments have each status."""
    return {s: sum(e.status == s for e in experiments) for s in STATUSES}


def _this_run(e: Experiment, verdicts: Mapping[str, str]) -> str:
    got = [f"{verdicts[c]} `{c}`" for c in e.claims + e.results if c in verdicts]
    return ", ".join(got) if got else "not in this run"


def markdown_table(
    verdicts: Mapping[str, str] | None = None, experiments: Sequence[Experiment] = EXPERIMENTS
) -> list[str]:
    """The table in Markdown; with ``verdicts`` (claim id -> verdict of a run) a column "this run"."""
    cols = ["paper", "experiment", "status", "the paper", "rnn-verify", "claims, evidence, how to run"]
    if verdicts is not None:
        cols.append("this run")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for e in experiments:
        row = [e.paper, f"{e.where}: {e.what}", e.status, e.paper_result, e.ours or "--", _how(e)]
        if verdicts is not None:
            row.append(_this_run(e, verdicts))
        cells = [_cell(x) for x in row]
        cells[2] = f"**{cells[2]}**"
        lines.append("| " + " | ".join(cells) + " |")
    counts = status_counts(experiments)
    lines += ["", "In all: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + f" ({len(experiments)})."]
    return lines


def html_rows(verdicts: Mapping[str, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Columns and rows (plain text) for an HTML rendering of the table."""
    cols = ["paper", "experiment", "status", "the paper", "rnn-verify", "claims, evidence, how to run"]
    if verdicts is not None:
        cols.append("this run")
    rows = []
    for e in EXPERIMENTS:
        row = [e.paper, f"{e.where}: {e.what}", e.status, e.paper_result, e.ours or "--", _how(e).replace("`", "")]
        if verdicts is not None:
            row.append(_this_run(e, verdicts).replace("`", ""))
        rows.append(row)
    return cols, rows


def papers_line() -> str:
    """The full citations of the papers in the table (what users read cites the papers themselves)."""
    keys = dict.fromkeys(e.paper for e in EXPERIMENTS)
    return "; ".join(PAPERS[k].citation() for k in keys)


def _numbers(text: str) -> Iterable[float]:
    for m in _ANY_NUMBER.finditer(text):
        try:
            yield float(m.group())
        except ValueError:  # pragma: no cover - the regex only matches numbers
            continue


def _quoted_in(token: str, found: set[float]) -> bool:
    """Whether the decimal ``token`` (e.g. ``0.608``) is a rounding of one of the numbers ``found``."""
    decimals = len(token.split(".")[1].split("e")[0])
    x = float(token)
    if "e" in token:  # the same mantissa to the quoted digits
        want = f"{x:.{decimals}e}"
        return any(f"{y:.{decimals}e}" == want for y in found)
    return any(round(y, decimals) == x or abs(y - x) < 1e-12 for y in found)


def evidence_problems(root: Path | str, experiments: Sequence[Experiment] = EXPERIMENTS) -> list[str]:
    """What in the table the repository under ``root`` does not back up (empty: everything is backed)."""
    root = Path(root)
    catalog = all_claims()
    problems: list[str] = []
    loaded: dict[str, tuple[dict[str, str], set[float]]] = {}
    for e in experiments:
        name = f"{e.paper} {e.where}"
        if e.paper not in PAPERS:
            problems.append(f"{name}: unknown paper {e.paper!r}")
        for c in e.claims:
            if c not in catalog:
                problems.append(f"{name}: claim {c!r} is not in the catalog")
        if not e.evidence:
            continue
        if e.evidence not in loaded:
            path = root / e.evidence / "results.json"
            if not path.is_file():
                problems.append(f"{name}: {path} does not exist")
                continue
            text = path.read_text(encoding="utf-8")
            doc: dict[str, Any] = json.loads(text)
            verdicts = {str(r["id"]): str(r["verdict"]) for r in doc.get("claims", [])}
            loaded[e.evidence] = (verdicts, set(_numbers(text)))
        verdicts, found = loaded[e.evidence]
        ids = e.claims + e.results
        got = [verdicts.get(c) for c in ids]
        for c, v in zip(ids, got, strict=True):
            if v is None:
                problems.append(f"{name}: claim {c!r} is not in {e.evidence}/results.json")
        if e.status == "reproduced" and any(v not in (None, "PASS") for v in got):
            problems.append(f"{name}: status 'reproduced' but the evidence has {got}")
        if e.status == "not resolved at this power" and ("INCONCLUSIVE" not in got or "FAIL" in got):
            problems.append(f"{name}: status 'not resolved at this power' needs an INCONCLUSIVE and no FAIL ({got})")
        if e.status == "not reproduced" and "FAIL" not in got:
            problems.append(f"{name}: status 'not reproduced' but the evidence has no FAIL ({got})")
        for m in _NUMBER.finditer(e.ours):
            if not _quoted_in(m.group(), found):
                problems.append(f"{name}: {m.group()} (in 'ours') is not a number of {e.evidence}/results.json")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.report.experiments", description=__doc__)
    parser.add_argument("--check", metavar="ROOT", help="check the table against the reports under ROOT")
    args = parser.parse_args(argv)
    if args.check:
        problems = evidence_problems(args.check)
        for p in problems:
            print(p)
        return 1 if problems else 0
    print("\n".join(markdown_table()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
