r"""Gallery adapters for github.com/VincentLiu3/fpp @ c8df3b4825da (to be written: issue 38)."""

from __future__ import annotations

from verify.gallery import Repository

REPO = Repository(
    name="fpp",
    url="VincentLiu3/fpp",
    commit="c8df3b4825dadcf0629ceecfb4f6dfc903b81e92",
    license="none stated (no license file)",
    language="torch",
    marker=("model/torch_fpp.py",),
    entries=(),
    cite=(
        "the FPP paper's official code: Anonymous authors, 'Training Recurrent Neural Networks Online by "
        "Learning Explicit State Variables' (paper under double-blind review)"
    ),
)
