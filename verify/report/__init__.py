"""Reports of a theory-check run: ``results.json``, ``report.md``, ``report.html``, ``junit.xml``, PNG figures.

* :mod:`verify.report.document` -- the results document (one record per claim);
* :mod:`verify.report.figures` -- the figure convention (how a check emits figures)
  and its matplotlib renderer;
* :mod:`verify.report.render` -- markdown, self-contained HTML and JUnit XML;
* :mod:`verify.files` -- report folders: the marker and its manifest, atomic
  replacement of only what rnn-verify wrote (see there for the rules).

:func:`write_report` validates a document, renders it and writes it into a folder
that is new, empty or an earlier report (one carrying the marker)::

    out/
      .rnn-verify-report  the marker: tool, version and the manifest of the files below
      results.json     the document (every figure's data included)
      report.md        summary + one section per claim, links figures/*.png
      report.html      the same, self-contained (PNG figures embedded as base64)
      junit.xml        one testcase per claim
      figures/*.png    one PNG per non-table figure
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verify.files import (
    MARKER,
    foreign_entries,
    is_report_folder,
    preflight_dir,
    preflight_file,
    staged_files,
    write_dir_atomic,
)
from verify.report.document import (
    SCHEMA,
    SCHEMA_VERSION,
    claim_record,
    load_document,
    parse_document,
    rerun_command,
    run_document,
    validate_document,
)
from verify.report.figures import figure_empty_reason, render_png
from verify.report.render import figure_key, render_html, render_junit, render_markdown
from verify.text import clean_tree

__all__ = [
    "MARKER",
    "SCHEMA",
    "SCHEMA_VERSION",
    "claim_png_jobs",
    "claim_record",
    "dumps_document",
    "foreign_entries",
    "is_report_folder",
    "load_document",
    "parse_document",
    "png_jobs",
    "preflight_dir",
    "preflight_file",
    "render_files",
    "render_html",
    "render_junit",
    "render_markdown",
    "render_png",
    "render_pngs",
    "rerun_command",
    "run_document",
    "validate_document",
    "write_report",
]


def dumps_document(doc: Mapping[str, Any]) -> str:
    """The document as JSON text (strict JSON: no NaN/Infinity literals); valid UTF-8 whatever it holds: every
    string is cleaned first (:func:`verify.text.clean_tree`: control characters and lone surrogates escaped)."""
    return json.dumps(clean_tree(doc), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def png_jobs(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every non-table figure of the document, keyed by its PNG path in the report."""
    jobs: dict[str, dict[str, Any]] = {}
    for j, f in enumerate(doc.get("figures") or []):
        if f["kind"] != "table" and figure_empty_reason(f) is None:
            jobs[figure_key(None, j)] = f
    for i, rec in enumerate(doc["claims"]):
        jobs.update(claim_png_jobs(rec, i))
    return jobs


def claim_png_jobs(rec: Mapping[str, Any], index: int = 0) -> dict[str, dict[str, Any]]:
    """The non-table figures of one claim record, keyed by their PNG paths."""
    return {
        figure_key(index, j, rec["id"]): f
        for j, f in enumerate(rec.get("figures") or [])
        if f["kind"] != "table" and figure_empty_reason(f) is None  # an empty plot is described, not drawn
    }


def render_pngs(doc: Mapping[str, Any], done: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
    """Every non-table figure drawn as PNG (reusing ``done``: PNGs already drawn, e.g. in the background)."""
    done = done or {}
    return {key: done[key] if key in done else render_png(f) for key, f in png_jobs(doc).items()}


def render_files(
    doc: Mapping[str, Any], fail_on: str = "fail", pngs_done: Mapping[str, bytes] | None = None
) -> dict[str, bytes]:
    """All files of a report folder (relative path -> bytes); ``doc`` is cleaned (:func:`verify.text.clean_tree`:
    text from code under test, a command line under ``LANG=C``) and validated first."""
    doc = validate_document(clean_tree(dict(doc)))
    pngs = render_pngs(doc, pngs_done)
    files: dict[str, bytes] = {
        "results.json": dumps_document(doc).encode("utf-8"),
        "report.md": render_markdown(doc).encode("utf-8"),
        "report.html": render_html(doc, pngs).encode("utf-8"),
        "junit.xml": render_junit(doc, fail_on),
    }
    files.update(pngs)
    return files


def write_report(
    out: Path | str,
    doc: Mapping[str, Any],
    *,
    fail_on: str = "fail",
    junit: Path | str | None = None,
    json_path: Path | str | None = None,
    pngs_done: Mapping[str, bytes] | None = None,
    removed: list[str] | None = None,
) -> Path:
    """Validate and render ``doc``, then write the report folder ``out`` (plus optional extra copies).

    Nothing is written unless ``doc`` validates and ``out`` is acceptable
    (:func:`verify.files.preflight_dir`); see :func:`verify.files.write_dir_atomic`. ``removed`` (a list)
    receives the previous report's files that were removed (the caller says which). An OS error (a full disk)
    raises :class:`verify.files.OutputWriteError` naming the path; the outputs are then as they were (see
    :func:`verify.files.write_dir_atomic` for the one exception, the marker's last rewrite).
    """
    files = render_files(doc, fail_on, pngs_done)
    extra = [(p, files[name]) for p, name in ((junit, "junit.xml"), (json_path, "results.json")) if p is not None]
    # the extra copies are staged first and moved into place after the folder: an OS error (a full disk) anywhere
    # leaves every output as it was (verify.files.staged_files)
    with staged_files(extra) as commit:
        path = write_dir_atomic(out, files, removed=removed)
        commit()
    return path
