r"""Gallery adapters for github.com/petered/uoro-demo @ 47817432f10d (to be written: issue 38)."""

from __future__ import annotations

from verify.gallery import Repository

REPO = Repository(
    name="uoro-demo",
    url="petered/uoro-demo",
    commit="47817432f10d21350b4cbb30a31589d10a2936e6",
    license="none stated (no license file)",
    language="torch",
    marker=("uoro_demo/uoro.py",),
    entries=(),
    cite='Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043',
)
