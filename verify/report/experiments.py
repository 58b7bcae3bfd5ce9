"""The table of every experiment of the papers (:mod:`theory.experiments`), rendered and checked.

:func:`markdown_table` renders it for the README, the documentation and every report (a report adds
the verdicts of this run's claims), followed by the list of checks that are not experiments;
:func:`derive_status` is the rules that give a row its status from the verdicts of the report it cites
(written out in ``docs/reference/reproductions.md``); :func:`evidence_problems` checks the table against
the committed reports: every claim exists, every row's status is the one the rules give, every check's
verdict is its report's, and every decimal number quoted in ``ours``, ``parts`` and ``rest`` occurs in that
report's ``results.json``. Run ``python -m verify.report.experiments`` to print the table, ``--check`` to
check it.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from theory.catalog import all_claims
from theory.experiments import CHECKS, EXPERIMENTS, STATUSES, Check, Experiment, status_name
from theory.papers import PAPERS

__all__ = [
    "CHECKS_TITLE",
    "NOTE",
    "TITLE",
    "NoStatus",
    "check_rows",
    "derive_status",
    "evidence_problems",
    "html_rows",
    "markdown_table",
    "papers_line",
    "record_scale",
    "status_counts",
]

TITLE = "Every experiment of the papers"
NOTE = (
    "Each figure or experiment of the papers, and what rnn-verify did with it: reproduced (the claims judging it "
    "PASS with their controls FAILing; the paper's result beside ours, and where ours is), partly reproduced (the "
    "parts that PASS named, the rest stated), not reproduced (a FAIL, with the evidence), not resolved at this power, "
    "each 'at reduced scale' where the run is below the paper's scale or 'on our instance' where the paper prints no "
    "setup; or not run (the command and its cost, or what running it would take). The status is the one the rules "
    "written in the documentation's Reproductions page give from the committed report's verdicts. Papers: "
)
CHECKS_TITLE = "Checks of the papers' statements that are not experiments of the papers (not counted above)"

#: the verdicts the rules read; any other (SKIPPED, ERROR) judged nothing
_JUDGED = ("PASS", "FAIL", "INCONCLUSIVE")


class NoStatus(ValueError):
    """The rules give the row no status (the message says why)."""


def record_scale(doc: Mapping[str, Any], record: Mapping[str, Any]) -> str | None:
    """``"paper"`` or ``"reduced"`` as the report records the scale of ``record``; None where it records none.

    Read from the record (``data.reduced`` true or ``REDUCED`` in its summary: reduced; ``data.scale``) or else
    from the sweep that wrote the report (``run.sweep.settings.scale``); any scale other than ``paper`` is reduced.
    """
    data = record.get("data")
    data = data if isinstance(data, Mapping) else {}
    if data.get("reduced") is True or "REDUCED" in str(record.get("summary", "")):
        return "reduced"
    scale = data.get("scale")
    if scale is None:
        run = doc.get("run")
        sweep = run.get("sweep") if isinstance(run, Mapping) else None
        settings = sweep.get("settings") if isinstance(sweep, Mapping) else None
        scale = settings.get("scale") if isinstance(settings, Mapping) else None
    if scale is None:
        return None
    return "paper" if scale == "paper" else "reduced"


def _unstated(record: Mapping[str, Any]) -> list[str]:
    """What a PASSing record leaves of the paper's result: its FINDINGs and the parts it says it does not judge."""
    data = record.get("data")
    not_judged = data.get("not_judged", []) if isinstance(data, Mapping) else []
    return [str(f) for f in record.get("findings") or []] + [f"not judged: {x}" for x in not_judged or []]


def derive_status(
    e: Experiment, doc: Mapping[str, Any] | None, others: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """The status the rules give ``e`` from ``doc``, the committed report it cites (``results.json``).

    ``others`` (report folder -> ``results.json``) are the other committed reports: one holding a FAIL at the
    paper's scale of a claim the row names makes the row *not reproduced*, and the row must cite it. The rules:

    1. nothing run (no claims, results or evidence): *not run*;
    2. the scale is the report's where it records one (:func:`record_scale`; the row's ``scale`` must agree),
       else the row's (``paper``, ``reduced``, or ``unstated`` where the paper prints no setup);
    3. a FAIL: *not reproduced*, whatever parts hold; else an INCONCLUSIVE: *not resolved*;
    4. all PASS, each with a control expected to FAIL that FAILed: *reproduced*, unless the report has a
       FINDING or names a part it does not judge, or the row states a rest -- then the row must name the parts
       that PASS and state the rest: *partly reproduced*;
    5. the scale names the status: "at reduced scale", "on our instance" (:func:`theory.experiments.status_name`).

    Raises :class:`NoStatus` where the rules give none (a verdict that judged nothing, a PASS without a FAILing
    control, an unstated FINDING, a scale the report contradicts, a paper-scale FAIL cited elsewhere).
    """
    name = f"{e.paper} {e.where}"
    ids = e.claims + e.results
    if not ids and not e.evidence:
        return "not run"
    if not ids or not e.evidence or doc is None:
        raise NoStatus(f"{name}: names evidence {e.evidence!r} without the claims it judges, or claims without it")
    records = {str(r["id"]): r for r in doc.get("claims", [])}
    missing = [c for c in ids if c not in records]
    if missing:
        raise NoStatus(f"{name}: {missing} not in {e.evidence}/results.json")
    for folder, other in (others or {}).items():
        for r in other.get("claims", []):
            if folder != e.evidence and r.get("id") in ids and r.get("verdict") == "FAIL":
                if record_scale(other, r) == "paper":
                    raise NoStatus(f"{name}: {folder} holds a FAIL of {r['id']!r} at the paper's scale; cite it")
    recs = [records[c] for c in ids]
    recorded = {s for s in (record_scale(doc, r) for r in recs) if s is not None}
    if len(recorded) > 1:
        raise NoStatus(f"{name}: the records of {e.evidence} are at different scales {sorted(recorded)}")
    scale = recorded.pop() if recorded else e.scale
    if scale != e.scale:
        raise NoStatus(f"{name}: {e.evidence} records the {scale} scale, the row says {e.scale!r}")
    verdicts = [str(r.get("verdict")) for r in recs]
    odd = [f"{c} {v}" for c, v in zip(ids, verdicts, strict=True) if v not in _JUDGED]
    if odd:
        raise NoStatus(f"{name}: {odd} judged nothing")
    if "FAIL" in verdicts:
        return status_name("not reproduced", scale)
    if "INCONCLUSIVE" in verdicts:
        return status_name("not resolved", scale)
    for c, r in zip(ids, recs, strict=True):
        controls = r.get("controls") or []
        if any(k.get("observed") != k.get("expected") for k in controls):
            raise NoStatus(f"{name}: a control of {c} did not come out as expected")
        if not any(k.get("expected") == "FAIL" and k.get("observed") == "FAIL" for k in controls):
            raise NoStatus(f"{name}: {c} PASSes without a control that FAILs: nothing shows it could fail")
    unstated = [u for r in recs for u in _unstated(r)]
    if unstated and not e.rest:
        raise NoStatus(f"{name}: the report leaves {unstated}; state the rest (partly reproduced)")
    if not e.rest:
        return status_name("reproduced", scale)
    if not e.parts:
        raise NoStatus(f"{name}: partly reproduced needs the parts that PASS named")
    return status_name("partly reproduced", scale)


_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[+-]?\d+)?")
_ANY_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _ours(e: Experiment) -> str:
    """Our outcome, with the parts that PASS and the rest of a partly reproduced row."""
    text = e.ours or "--"
    if e.parts:
        text += ". Reproduced: " + "; ".join(e.parts)
    if e.rest:
        text += ". Not reproduced or not judged: " + e.rest
    return text


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
    verdicts: Mapping[str, str] | None = None,
    experiments: Sequence[Experiment] = EXPERIMENTS,
    checks: Sequence[Check] = CHECKS,
) -> list[str]:
    """The table in Markdown, then the checks that are not experiments; with ``verdicts`` (claim id -> verdict of a
    run) a column "this run"."""
    cols = ["paper", "experiment", "status", "the paper", "rnn-verify", "claims, evidence, how to run"]
    if verdicts is not None:
        cols.append("this run")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for e in experiments:
        row = [e.paper, f"{e.where}: {e.what}", e.status, e.paper_result, _ours(e), _how(e)]
        if verdicts is not None:
            row.append(_this_run(e, verdicts))
        cells = [_cell(x) for x in row]
        cells[2] = f"**{cells[2]}**"
        lines.append("| " + " | ".join(cells) + " |")
    counts = status_counts(experiments)
    lines += ["", "In all: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + f" ({len(experiments)})."]
    if checks:
        cols, rows = check_rows(verdicts, checks)
        lines += ["", f"{CHECKS_TITLE}:", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rows]
    return lines


def check_rows(
    verdicts: Mapping[str, str] | None = None, checks: Sequence[Check] = CHECKS
) -> tuple[list[str], list[list[str]]]:
    """Columns and rows (Markdown code spans kept) of the list of checks that are not experiments."""
    cols = ["paper", "statement checked", "why a check, not an experiment", "verdict", "rnn-verify",
            "claims, evidence"]  # fmt: skip
    if verdicts is not None:
        cols.append("this run")
    rows = []
    for c in checks:
        how = ", ".join(f"`{x}`" for x in c.claims) + f"; in `{c.evidence}/`"
        row = [c.paper, f"{c.where}: {c.statement}", c.why, c.verdict, c.ours, how]
        if verdicts is not None:
            got = [f"{verdicts[x]} `{x}`" for x in c.claims if x in verdicts]
            row.append(", ".join(got) if got else "not in this run")
        rows.append(row)
    return cols, rows


def html_rows(verdicts: Mapping[str, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Columns and rows (plain text) for an HTML rendering of the table."""
    cols = ["paper", "experiment", "status", "the paper", "rnn-verify", "claims, evidence, how to run"]
    if verdicts is not None:
        cols.append("this run")
    rows = []
    for e in EXPERIMENTS:
        row = [e.paper, f"{e.where}: {e.what}", e.status, e.paper_result, _ours(e), _how(e).replace("`", "")]
        if verdicts is not None:
            row.append(_this_run(e, verdicts).replace("`", ""))
        rows.append(row)
    return cols, rows


def papers_line() -> str:
    """The full citations of the papers in the table (what users read cites the papers themselves)."""
    keys = dict.fromkeys([e.paper for e in EXPERIMENTS] + [c.paper for c in CHECKS])
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


def _load(
    root: Path, folder: str, cache: dict[str, tuple[dict[str, Any], set[float]] | None]
) -> tuple[dict[str, Any], set[float]] | None:
    if folder not in cache:
        path = root / folder / "results.json"
        if not path.is_file():
            cache[folder] = None
        else:
            text = path.read_text(encoding="utf-8")
            cache[folder] = (json.loads(text), set(_numbers(text)))
    return cache[folder]


def _committed(root: Path) -> dict[str, dict[str, Any]]:
    """Every committed report folder ``reports/<name>/`` with a ``results.json`` (scratch ``runs``, ``sweeps`` left
    out), as folder relative to ``root`` -> its results."""
    out: dict[str, dict[str, Any]] = {}
    base = root / "reports"
    if not base.is_dir():
        return out
    for path in sorted(base.glob("*/results.json")):
        if path.parent.name in ("runs", "sweeps"):
            continue
        out[f"reports/{path.parent.name}"] = json.loads(path.read_text(encoding="utf-8"))
    return out


def evidence_problems(
    root: Path | str, experiments: Sequence[Experiment] = EXPERIMENTS, checks: Sequence[Check] = CHECKS
) -> list[str]:
    """What in the table the repository under ``root`` does not back up (empty: everything is backed)."""
    root = Path(root)
    catalog = all_claims()
    problems: list[str] = []
    loaded: dict[str, tuple[dict[str, Any], set[float]] | None] = {}
    others = _committed(root)
    for e in experiments:
        name = f"{e.paper} {e.where}"
        if e.paper not in PAPERS:
            problems.append(f"{name}: unknown paper {e.paper!r}")
        for c in e.claims:
            if c not in catalog:
                problems.append(f"{name}: claim {c!r} is not in the catalog")
        got = _load(root, e.evidence, loaded) if e.evidence else None
        if e.evidence and got is None:
            problems.append(f"{name}: {root / e.evidence / 'results.json'} does not exist")
            continue
        try:
            derived = derive_status(e, got[0] if got else None, others)
        except NoStatus as exc:
            problems.append(f"the rules give no status: {exc}")
        else:
            if derived != e.status:
                problems.append(f"{name}: status {e.status!r} but the rules give {derived!r}")
        if got is None:
            continue
        found = got[1]
        for text in (e.ours, *e.parts, e.rest):
            for m in _NUMBER.finditer(text):
                if not _quoted_in(m.group(), found):
                    problems.append(f"{name}: {m.group()} (in 'ours') is not a number of {e.evidence}/results.json")
    for k in checks:
        name = f"{k.paper} {k.where}"
        got = _load(root, k.evidence, loaded)
        if got is None:
            problems.append(f"{name}: {root / k.evidence / 'results.json'} does not exist")
            continue
        verdicts = {str(r["id"]): str(r["verdict"]) for r in got[0].get("claims", [])}
        for x in k.claims:
            if x not in catalog:
                problems.append(f"{name}: claim {x!r} is not in the catalog")
            if verdicts.get(x) != k.verdict:
                problems.append(f"{name}: verdict {k.verdict!r} but {k.evidence} has {verdicts.get(x)!r} for {x!r}")
        for m in _NUMBER.finditer(k.ours):
            if not _quoted_in(m.group(), got[1]):
                problems.append(f"{name}: {m.group()} (in 'ours') is not a number of {k.evidence}/results.json")
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
