"""MathJax served by the site itself: formulas render offline, no CDN (issue 41).

Sphinx's ``sphinx.ext.mathjax`` loads MathJax from a CDN by default, so without a network every formula of these
pages showed as raw LaTeX. This extension takes MathJax 3 from an installed package (``sphinx-mathjax-offline``, in
the ``docs`` and ``test`` extras: MathJax's own ``es5`` build, Apache-2.0) and copies one file of it into the built
site: ``tex-svg-full.js``, the TeX input with every TeX package and the SVG output in one file (about 2 MB), which
needs no web fonts and loads nothing else. ``conf.py`` points ``mathjax_path`` at it (:data:`TARGET`).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util.fileutil import copy_asset_file

#: the distribution that ships MathJax, and the file of it the site serves
DIST = "sphinx-mathjax-offline"
SOURCE = "sphinx-mathjax-offline/static/mathjax/tex-svg-full.js"
#: where the site serves it, relative to ``_static`` (Sphinx's ``mathjax_path`` convention)
TARGET = "mathjax/tex-svg-full.js"


def mathjax_file() -> Path:
    """The installed MathJax file; an error naming the package to install if it is not there."""
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ExtensionError(
            f"the documentation serves MathJax itself (no CDN) from the package {DIST}, which is not installed: "
            f"pip install {DIST} (it is in the docs and test extras: pip install -e '.[docs]')"
        ) from None
    path = Path(str(dist.locate_file(SOURCE)))
    if not path.is_file():
        raise ExtensionError(f"{DIST} {dist.version} has no {SOURCE} (looked at {path})")
    return path


def _copy(app, exc):
    if exc is None and app.builder.format == "html":
        dest = Path(app.outdir) / "_static" / TARGET
        dest.parent.mkdir(parents=True, exist_ok=True)
        copy_asset_file(mathjax_file(), dest, force=True)


def setup(app):
    mathjax_file()  # fail at the start of a build, not after it
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
