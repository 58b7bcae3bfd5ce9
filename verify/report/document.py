"""The results document (``results.json``): one record per claim plus the run's metadata.

``results.json`` is the single source of a report: ``report.md``, ``report.html``,
``junit.xml`` and the PNG figures are all rendered from it, so ``rnn-verify
report`` re-renders a saved run without recomputing anything.

Layout (``schema = "rnn-verify.results"``, ``schema_version = 1``)::

    {
      "schema": "rnn-verify.results", "schema_version": 1,
      "tool": {"name": "rnn-verify", "version": "0.1.0"},
      "run": {"command": "rnn-verify run --profile ci", "profile": "ci", "seed": 0,
              "device_requested": "cpu", "device": "cpu", "dtype": "float64",
              "workers": 1, "fail_on": "fail", "started": ISO-8601, "wall_time": s,
              "torch_version", "python_version", "platform", "cuda_available", "source"},
      "summary": {"PASS": n, "FAIL": n, "INCONCLUSIVE": n, "SKIPPED": n, "total": n},
      "claims": [ RECORD, ... ],          # catalog order
      "figures": [ FIGURE, ... ],         # run-level (mutant-kill table)
    }

A RECORD holds: ``id``, ``title``, ``family``, ``paper`` (short citation),
``citation`` and ``references`` (full citations, :mod:`theory.papers`), ``equation`` (where in
the paper), ``statement``, ``math``, ``kind``, ``assumptions``, ``errata``,
``verdict``, ``summary``, ``reason``, ``statistic``, ``threshold``,
``comparison``, ``alpha``, ``beta``, ``delta``, ``samples_planned``,
``samples_used``, ``seed``, ``dtype``, ``device``, ``torch_version``,
``python_version``, ``wall_time``, ``rerun`` (the exact command that reruns this
claim alone), ``controls``, ``data`` (the check's own data), ``figures`` (every
figure drawn for the claim, with its data; see :mod:`verify.report.figures`),
``figure_problems`` and ``source`` (``"catalog"`` or ``"pytest"``).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from theory.catalog import Claim
from verify.errors import InvalidFile
from verify.files import tool_version
from verify.report.figures import claim_figures, controls_table, normalize_figure
from verify.schema import ResultsDocument, parse_json_bytes, parse_results, read_file_bytes, verify_results
from verify.selection import rerun_command
from verify.verdict import CheckResult, Verdict, to_jsonable

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "claim_record",
    "load_document",
    "parse_document",
    "read_document",
    "rerun_command",
    "results_file",
    "run_document",
    "summary_counts",
    "validate_document",
]

SCHEMA = "rnn-verify.results"
SCHEMA_VERSION = 1
VERDICTS = tuple(v.value for v in Verdict)


def claim_record(
    result: CheckResult,
    claim: Claim | None = None,
    *,
    rerun: str = "",
    source: str = "catalog",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON record of one claim's result (claim metadata from the catalog when given)."""
    r = result.to_dict()
    rec: dict[str, Any] = {
        "id": result.claim_id,
        "title": claim.title if claim else "",
        "family": result.claim_id.split(".", 1)[0],
        "paper": claim.paper if claim else "",
        "citation": claim.citation if claim else "",
        "references": list(claim.references) if claim else [],
        "equation": claim.where if claim else "",
        "statement": claim.statement if claim else "",
        "math": claim.math if claim else "",
        "kind": claim.kind if claim else "",
        "profiles": list(claim.profiles) if claim else [],
        "assumptions": list(claim.assumptions) if claim else [],
        "errata": list(claim.errata) if claim else [],
        "check": claim.check if claim else "",
    }
    for key in (
        "verdict",
        "summary",
        "reason",
        "statistic",
        "threshold",
        "comparison",
        "alpha",
        "beta",
        "delta",
        "samples_planned",
        "samples_used",
        "seed",
        "dtype",
        "device",
        "torch_version",
        "python_version",
        "wall_time",
        "controls",
        "data",
        "findings",
        "implementation",
    ):
        rec[key] = r.get(key)
    if extra:
        rec.update(to_jsonable(dict(extra)))
    rec["rerun"] = rerun
    rec["source"] = source
    figs, problems = claim_figures(result.claim_id, rec["data"] or {})
    rec["figures"] = figs
    rec["figure_problems"] = problems
    return rec


def summary_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for rec in records:
        counts[str(rec["verdict"])] = counts.get(str(rec["verdict"]), 0) + 1
    counts["total"] = len(records)
    return counts


def run_document(records: Sequence[Mapping[str, Any]], run: Mapping[str, Any]) -> dict[str, Any]:
    """The whole results document from claim records and run metadata."""
    meta: dict[str, Any] = {
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "cuda_available": bool(torch.cuda.is_available()),
    }
    meta.update(to_jsonable(dict(run)))
    figs = []
    table = controls_table(records)
    if table is not None:
        figs.append(normalize_figure(table))
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rnn-verify", "version": tool_version()},
        "run": meta,
        "summary": summary_counts(records),
        "claims": [dict(r) for r in records],
        "figures": figs,
    }


def validate_document(doc: Any, origin: str = "results.json") -> dict[str, Any]:
    """Check ``doc`` field by field (:func:`verify.schema.parse_results`); return the dict to render.

    Raises :class:`~verify.errors.InvalidFile` (an InvalidArgument) naming ``origin``,
    the field and what was expected. The returned dict is ``doc`` with every figure
    replaced by its normalised form.
    """
    return parse_results(doc, origin).document


def results_file(path: Path | str) -> Path:
    """The ``results.json`` that ``path`` names: the file itself, or the one in the folder ``path``."""
    p = Path(path)
    if p.is_dir():
        if not (p / "results.json").exists() and not (p / "results.json").is_symlink():
            raise InvalidFile(
                str(p), "", None, "is a folder without a results.json; give a results.json or a report folder"
            )
        p = p / "results.json"
    return p


def read_document(path: Path | str) -> tuple[ResultsDocument, bytes]:
    """:func:`parse_document`, and the bytes it parsed (for a digest)."""
    p = results_file(path)
    data = read_file_bytes(p)
    parsed = parse_results(parse_json_bytes(data, str(p)), str(p))
    verify_results(parsed)
    return parsed, data


def parse_document(path: Path | str) -> ResultsDocument:
    """Read and parse a ``results.json`` (a folder is taken to hold one) into typed values, and check that it
    agrees with itself (:func:`verify.schema.verify_results`: verdicts recomputed where they can be, counts, exit
    code).

    Every failure -- no such file, unreadable, not UTF-8 JSON, any malformed field, a verdict its own numbers
    contradict -- raises :class:`~verify.errors.InvalidFile` naming the file (and the field).
    """
    return read_document(path)[0]


def load_document(path: Path | str) -> dict[str, Any]:
    """Read and validate a ``results.json`` (a report folder is accepted too); the dict to render."""
    return parse_document(path).document
