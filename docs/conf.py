"""Sphinx configuration of the rnn-verify documentation (``tox -e docs``; built in ``tests/test_docs.py``).

Scientific-Python conventions: pydata-sphinx-theme, MyST markdown pages, autodoc/autosummary for the API
reference, sphinx-gallery for the worked examples (``docs/examples/plot_*.py``, run at build time). No
network at build or reading time: no intersphinx, and MathJax is served from the site itself
(``_ext/rnnverify_mathjax.py``). Before the build, ``_ext/rnnverify_docgen.py`` writes the claim catalog,
the CLI reference and the numbers the pages quote (counts, rates, timings: from the code or a committed
report, as MyST substitutions) into ``reference/generated/`` (git-ignored) and ``myst_substitutions``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import rnnverify_docgen  # noqa: E402
import rnnverify_mathjax  # noqa: E402

os.environ.setdefault("MPLBACKEND", "Agg")
rnnverify_docgen.write_pages(HERE)

project = "rnn-verify"
author = "rnn-verify developers"
copyright = "rnn-verify developers"  # noqa: A001

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "rnnverify_mathjax",  # sphinx.ext.mathjax with MathJax from a package: formulas render offline
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "examples/README.rst", "auto_examples/*.ipynb", "auto_examples/*.py"]
myst_enable_extensions = ["dollarmath", "colon_fence", "substitution"]
#: every number a page quotes that the code or a committed report knows: ``{{ name }}`` in the pages
myst_substitutions = rnnverify_docgen.substitutions(HERE)
mathjax_path = rnnverify_mathjax.TARGET
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autoclass_content = "class"

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "plot_gallery": "True",
    # no sg_execution_times pages: they load DataTables from a CDN (the site needs no network)
    "write_computation_times": False,
}

html_theme = "pydata_sphinx_theme"
html_title = "rnn-verify"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # the header lists the sections (index.md's toctree), each section's pages are in the left sidebar
    "header_links_before_dropdown": 7,
    "show_nav_level": 1,
    "navigation_depth": 2,
    # the catalog's table is wide: no page outline beside it
    "secondary_sidebar_items": {"**": ["page-toc", "sourcelink"], "reference/generated/catalog": []},
}
html_sidebars = {"index": []}
html_static_path: list[str] = []


# -- docstrings: shape notation --------------------------------------------------------------------------
# The docstrings write array shapes and norms as plain text, e.g. (T, *B, n, p), n·|B|×p or
# |implementation − closed form|. In reStructuredText a bare "*B" opens emphasis and "|...|" a substitution;
# escape exactly these (outside literals and roles; bars only outside grid tables) so that autodoc renders
# them as written. In a simple table each added backslash is taken back from the next column gap, so that
# the columns stay aligned. Nothing else in a docstring is changed.
_LITERAL = re.compile(r"(``.+?``|:\w+:`[^`]*`|`[^`]*`)")
_STAR = re.compile(r"(?<![\\*\w])\*(?=[A-Za-z_]\w*\b(?![*]))")
_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _escape(text: str, grid: bool) -> str:
    parts = _LITERAL.split(text)
    for i in range(0, len(parts), 2):  # even parts lie outside literals and roles
        s = _STAR.sub(r"\\*", parts[i])
        parts[i] = s if grid else s.replace("|", "\\|")
    return "".join(parts)


def _escape_shapes(line: str, in_table: bool = False) -> str:
    stripped = line.strip()
    grid = stripped.startswith("+") or (stripped.startswith("|") and stripped.endswith("|") and line.count("|") >= 3)
    if not in_table:
        return _escape(line, grid)
    pieces = re.split(r"(  +)", line)  # simple-table cells and the gaps between them
    for j in range(0, len(pieces), 2):
        new = _escape(pieces[j], grid)
        grow = len(new) - len(pieces[j])
        pieces[j] = new
        if grow and j + 1 < len(pieces):  # give the added backslashes back from the next column gap
            pieces[j + 1] = pieces[j + 1][: max(1, len(pieces[j + 1]) - grow)]
    return "".join(pieces)


def _process_docstring(app, what, name, obj, options, lines):  # noqa: ANN001, ARG001
    in_table, out = False, []
    for line in lines:
        if _BORDER.match(line):
            in_table = True
        elif not line.strip():
            in_table = False
        out.append(line if _BORDER.match(line) else _escape_shapes(line, in_table))
    lines[:] = out


def setup(app):  # noqa: ANN001
    app.connect("autodoc-process-docstring", _process_docstring)
