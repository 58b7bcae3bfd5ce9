r"""Gallery adapters for github.com/kevinlopezandrade/snapjax @ 2958e096aa6c (to be written: issue 38)."""

from __future__ import annotations

from verify.gallery import Repository

REPO = Repository(
    name="snapjax",
    url="kevinlopezandrade/snapjax",
    commit="2958e096aa6cbab21556590d7009f5c83cc7bc67",
    license="none stated (no license file)",
    language="jax",
    marker=("snapjax/rtrl/base.py",),
    entries=(),
    cite=(
        'Menick et al. 2021, "Practical Real Time Recurrent Learning with a Sparse Approximation", '
        "ICLR, arXiv:2006.07232 (SnAp)"
    ),
)
