"""The documentation site (``docs/``) builds without a warning, and every code block of it runs (issue 23).

* ``test_docs_build``: ``sphinx-build -W --keep-going -b html`` (warnings are errors) on a copy of ``docs/``
  in a temporary folder, in a subprocess so that a failure shows sphinx's own output. The build runs the
  sphinx-gallery examples (``docs/examples/plot_*.py``) and generates the claim catalog, the CLI reference
  and the API reference from the code.
* the built site needs no network (issue 41): MathJax is served from ``_static`` (every formula renders
  offline), no page loads a script or stylesheet from another host; the header lists the sections and a
  page of a section has the section's pages in its sidebar; the numbers the pages quote are the ones the
  code computes at build time.
* ``test_docs_code_blocks``: every ``docs/**/*.md`` page through the README harness of
  ``tests/test_readme.py`` (python blocks run in order per page, bash/yaml commands run, parsed or
  allowlisted, text blocks not run).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import GENERATED, ROOT, docs_pages, run_page
from theory.catalog import gate_budget
from verify.cli import _parser
from verify.cli import main as cli_main

DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import rnnverify_docgen  # noqa: E402

#: the build (gallery included) took ~20 s on a quiet 2-core machine; a loaded one may take several times that
BUILD_TIMEOUT_S = 600


def test_docs_build(tmp_path: Path) -> None:
    src = tmp_path / "docs"
    skip = {Path(g).name for g in GENERATED}
    shutil.copytree(DOCS, src, ignore=lambda d, names: [n for n in names if n in skip or n == "__pycache__"])
    out = tmp_path / "html"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q", str(src), str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert proc.returncode == 0, (
        f"sphinx-build failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    )
    for page in (
        "index.html",
        "reference/generated/catalog.html",
        "reference/generated/cli.html",
        "reference/api.html",
    ):
        assert (out / page).is_file(), page
    for page in docs_pages():
        html = out / Path(page).relative_to("docs").with_suffix(".html")
        assert html.is_file(), f"{page} was not built"
    # the gallery ran: every example has its page and at least one figure
    examples = sorted((DOCS / "examples").glob("plot_*.py"))
    assert examples, "the gallery has no example"
    for ex in examples:
        assert (out / "auto_examples" / f"{ex.stem}.html").is_file(), ex.name
        assert list((src / "auto_examples" / "images").glob(f"sphx_glr_{ex.stem}_*.png")), f"{ex.name} drew no figure"
    _offline(out)
    _navigation(out)
    _generated_numbers(out)


#: a script or stylesheet loaded from another host (a plain hyperlink to one is fine)
REMOTE_ASSET = re.compile(r"<script[^>]*\ssrc=\"(?:https?:)?//[^\"]*\"|<link[^>]*\shref=\"(?:https?:)?//[^\"]*\"")


def _offline(out: Path) -> None:
    mathjax = out / "_static" / "mathjax" / "tex-svg-full.js"
    assert mathjax.is_file() and mathjax.stat().st_size > 1_000_000, mathjax
    remote = {}
    for page in out.rglob("*.html"):
        found = REMOTE_ASSET.findall(page.read_text(encoding="utf-8"))
        if found:
            remote[str(page.relative_to(out))] = found
    assert not remote, remote
    # a page with formulas (the BPTT docstrings' .. math::) loads the site's own MathJax
    html = (out / "reference" / "generated" / "verify.oracles.bptt.html").read_text(encoding="utf-8")
    assert 'class="math' in html and 'src="../../_static/mathjax/tex-svg-full.js' in html


def _links(html: str, start: str, stop: str) -> list[str]:
    part = html[html.index(start) :]
    return re.findall(r'href="([^"#]+)"', part[: part.index(stop)] if stop in part else part)


def _navigation(out: Path) -> None:
    """The header lists the sections, and a tutorial, how-to or explanation page has its section in the sidebar."""
    html = (out / "tutorial" / "check-your-implementation.html").read_text(encoding="utf-8")
    header = _links(html, "bd-header", "bd-sidebar-primary")
    for section in ("index.html", "../howto/index.html", "../explanation/index.html", "../reference/index.html"):
        assert section in header, (section, header)
    assert "installation.html" in _links(html, "bd-sidebar-primary", "bd-main")
    for page, sibling in (("howto/ci-gate.html", "sweeps.html"), ("explanation/uoro.html", "fpp.html")):
        sidebar = _links((out / page).read_text(encoding="utf-8"), "bd-sidebar-primary", "bd-main")
        assert sibling in sidebar, (page, sidebar)


def _generated_numbers(out: Path) -> None:
    text = re.sub(r"<[^>]+>", "", (out / "howto" / "ci-gate.html").read_text(encoding="utf-8"))
    assert f"{gate_budget('ci')[0]:.2g} for the whole ci profile" in text  # what `rnn-verify run` prints
    assert "{{" not in text and "6.2e-4" not in text
    text = re.sub(r"<[^>]+>", "", (out / "explanation" / "reading-the-report.html").read_text(encoding="utf-8"))
    assert "uoro.ok-unbiased: an exact expectation" in text and "uoro.mutants-caught: a kill table" not in text


@pytest.mark.parametrize("path", docs_pages())
def test_docs_code_blocks(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    run_page(path, tmp_path, monkeypatch, pytestconfig)


def test_catalog_page_is_the_cli_table() -> None:
    """The catalog page is generated from ``rnn-verify list --markdown``: it cannot go stale."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli_main(["list", "--markdown"]) == 0
    table = out.getvalue().strip().splitlines()
    page = rnnverify_docgen.catalog_markdown().strip().splitlines()
    assert page == table and len(table) > 30


def test_cli_page_has_every_subcommand_help_verbatim(tmp_path: Path) -> None:
    catalog, cli, experiments, gallery = rnnverify_docgen.write_pages(tmp_path)
    text = cli.read_text(encoding="utf-8")
    parser = _parser()
    names = list(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert names == ["list", "explain", "run", "sweep", "report", "golden", "gallery"]
    helps = rnnverify_docgen.subcommand_helps()
    for name in names:
        assert f"## `rnn-verify {name}`" in text
        assert helps[f"rnn-verify {name}"].rstrip() in text  # verbatim, epilog included
        epilog = parser._subparsers._group_actions[0].choices[name].epilog  # type: ignore[union-attr]
        if epilog:
            assert epilog.split()[0] in helps[f"rnn-verify {name}"]
    assert "## `rnn-verify`" in text and catalog.read_text(encoding="utf-8").startswith("# Claim catalog")
    assert experiments.read_text(encoding="utf-8").strip() == rnnverify_docgen.experiments_markdown().strip()
    assert "| paper | experiment | status |" in experiments.read_text(encoding="utf-8")
    assert gallery.read_text(encoding="utf-8") == rnnverify_docgen.gallery_markdown(rnnverify_docgen.repository_root())
