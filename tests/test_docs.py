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
import hashlib
import importlib.metadata
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
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


def _build(tmp_path: Path) -> tuple[Path, Path, str]:
    """Build the site from a copy of ``docs/`` into ``tmp_path``: (html folder, the gallery's images, failure text)."""
    src = tmp_path / "docs"
    skip = {Path(g).name for g in GENERATED}
    shutil.copytree(DOCS, src, ignore=lambda d, names: [n for n in names if n in skip or n == "__pycache__"])
    out = tmp_path / "html"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(_build_cmd(src, out), cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)  # fmt: skip
    failed = "" if proc.returncode == 0 else (
        f"sphinx-build failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")  # fmt: skip
    return out, src / "auto_examples" / "images", failed


def _build_cmd(src: Path, out: Path) -> list[str]:
    """The build's command line (part of the cache key)."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q", str(src), str(out)]


#: what the build reads besides ``docs/``: the package, the catalog, the committed reports it quotes, the
#: top-level files (``pyproject.toml``). Everything under the repository root is hashed but these: the tests
#: (the build does not read them), what the build and the tools write (git-ignored), caches and virtual
#: environments (their packages are in the key by version)
NOT_INPUTS = {"tests", "build", "dist", ".git", ".tox", ".venv", "docs/_build", "docs/auto_examples",
              "docs/reference/generated", "reports/runs"}  # fmt: skip
NOT_INPUT_NAMES = {"__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache"}


def _input_files(folder: Path, seen: set[Path]) -> Iterator[Path]:
    for p in sorted(folder.iterdir()):
        rel = p.relative_to(ROOT).as_posix()
        if rel in NOT_INPUTS or p.name in NOT_INPUT_NAMES or p.name.endswith(".egg-info"):
            continue
        if p.is_dir():  # a link to a folder is followed (once: a loop of links ends)
            if (p / "pyvenv.cfg").exists() or p.resolve() in seen:
                continue
            seen.add(p.resolve())
            yield from _input_files(p, seen)
        else:
            yield p


def docs_build_key() -> str:
    """A content hash of every input of the docs build: the path and bytes of every file under the repository
    root but the tests, generated folders and caches (so ``docs/`` and what the generated pages are made of:
    ``verify/``, ``theory/``, ``reports/``, ``pyproject.toml``), the interpreter, every installed distribution's
    version, the environment variables it reads and the build's command line. A change to any of them is a new
    key, hence a rebuild: the cache never passes a stale build."""
    h = hashlib.sha256()
    for p in _input_files(ROOT, {ROOT.resolve()}):
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0")
        h.update((p.read_bytes() if p.is_file() else b"link to " + os.readlink(p).encode()) + b"\0")
    h.update(f"{sys.executable}\0{sys.version}\0".encode())
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    h.update("\n".join(dists).encode() + b"\0")
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(("RNN_VERIFY", "PYTHON", "SPHINX", "MPL")))
    h.update(repr(env).encode() + b"\0")  # what the build's process reads from its environment
    h.update(" ".join(_build_cmd(Path("SRC"), Path("OUT"))).encode())
    return h.hexdigest()


def _cached_build(tmp_path: Path, folder: Path | None) -> tuple[Path, Path, str | None]:
    """(html folder, gallery images, the key to store them under or None): from pytest's cache when a build of
    the very same inputs passed every check of ``test_docs_build`` before (``.pytest_cache/d/rnn-verify-docs/``),
    else built now. Without the cache plugin (``-p no:cacheprovider``) or after ``--cache-clear`` it is built."""
    if folder is None:
        out, images, failed = _build(tmp_path)
        assert not failed, failed
        return out, images, None
    key = docs_build_key()
    if (folder / key / "passed").is_file():
        return folder / key / "html", folder / key / "images", None
    out, images, failed = _build(tmp_path)
    assert not failed, failed
    # an input edited while the build ran: this build is checked but not kept (its key would not be its inputs')
    return out, images, (key if docs_build_key() == key else None)


def _store(folder: Path, key: str, out: Path, images: Path) -> None:
    """Keep a build that passed every check under its key (the only one kept): written aside, then renamed in."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder))
    shutil.copytree(out, tmp / "html")
    shutil.copytree(images, tmp / "images")
    (tmp / "passed").write_text(key + "\n")
    for old in folder.iterdir():  # only builds this test stored (each holds its "passed" marker)
        if old.name != key and not old.name.startswith(".") and (old / "passed").is_file():
            shutil.rmtree(old, ignore_errors=True)
    try:
        tmp.rename(folder / key)
    except OSError:  # another run stored the same key meanwhile
        shutil.rmtree(tmp, ignore_errors=True)


def test_docs_build(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """The site builds without a warning and holds what it must; a build of unchanged inputs that passed this test
    before is taken from pytest's cache (``--cache-clear`` rebuilds it)."""
    cache = getattr(pytestconfig, "cache", None)
    folder = cache.mkdir("rnn-verify-docs") if cache is not None else None
    out, images, key = _cached_build(tmp_path, folder)
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
        assert list(images.glob(f"sphx_glr_{ex.stem}_*.png")), f"{ex.name} drew no figure"
    _offline(out)
    _navigation(out)
    _generated_numbers(out)
    if folder is not None and key is not None:  # built now and every check passed: keep it
        _store(folder, key, out, images)


def test_docs_build_key_changes_with_every_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache of ``test_docs_build`` is never stale: a change to a page, the package, a committed report, a
    top-level file or a file added is a new key; the tests, the build's outputs and caches are not inputs."""
    root = tmp_path / "repo"
    files = ["docs/index.md", "verify/cli.py", "theory/catalog.py", "reports/gate-calibration/bench-gate.json",
             "pyproject.toml", "tests/test_docs.py", "docs/_build/html/index.html",
             "docs/reference/generated/cli.md", "verify/__pycache__/cli.cpython-311.pyc", "reports/runs/x/results.json",
             ".venv/pyvenv.cfg", ".venv/lib/site.py"]  # fmt: skip
    for i, name in enumerate(files):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"content {i}")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", root)
    keys = {docs_build_key()}
    for name in files[:5]:
        (root / name).write_text("edited")
        keys.add(docs_build_key())
    (root / "docs" / "howto").mkdir()
    (root / "docs" / "howto" / "new.md").write_text("")
    keys.add(docs_build_key())
    (root / "docs" / "howto" / "new.md").rename(root / "docs" / "howto" / "renamed.md")
    keys.add(docs_build_key())
    assert len(keys) == 8, "an input changed and the key did not"
    for name in files[5:]:
        (root / name).write_text("edited")
    assert docs_build_key() in keys, "the key depends on a file that is not an input of the build"
    monkeypatch.setenv("RNN_VERIFY_SOMETHING", "1")
    assert docs_build_key() not in keys


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
